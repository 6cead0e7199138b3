"""`manage.py import_claude`: a Claude.ai data export through the normal ingestion service and pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory.models import Source, SourceKind, User
from tests.conftest import Api, Persona
from tests.factories import PartitionFactory
from tests.importers.helpers import SAMPLES, found, process_queued, refused, run, stored, summary, write

pytestmark = pytest.mark.django_db

SAMPLE = str(SAMPLES / "claude_conversations.json")


def test_the_export_is_imported_processed_and_searchable(api: Api, owner: Persona) -> None:
    output = run("import_claude", SAMPLE, "--user", "alice")
    assert summary(output).startswith("imported: 3 conversations, 7 messages; already there: nothing; skipped: ")
    assert process_queued() == 3
    assert "Inês" in found(api, owner, "flying to Lisbon to visit my sister")
    assert "grünen Tee" in found(api, owner, "grünen Tee morgens")


def test_words_are_kept_and_thinking_attachments_and_other_branches_are_not(owner: Persona) -> None:
    output = run("import_claude", SAMPLE, "--user", "alice")
    trip = Source.objects.get(external_id="claude:0b8e5c1a-aaaa-4f00-8000-00000000c001")
    assert trip.title == "Trip to Lisbon"
    assert [(m.role, m.content) for m in trip.children.order_by("ordinal")] == [
        ("user", "I'm flying to Lisbon on the 12th of May to visit my sister Inês."),
        ("assistant", "Lovely! Tram 28 through Alfama is worth a ride while you are there."),
        ("user", "Here is my booking, can you check the return date?"),
    ]
    bike = Source.objects.get(external_id="claude:0b8e5c1a-cccc-4f00-8000-00000000c003")
    assert [m.content for m in bike.children.order_by("ordinal")] == [
        "The rear derailleur on my gravel bike keeps skipping gears.",
        "Check the cable tension with the barrel adjuster before anything else.",
    ]
    everything = " ".join(Source.objects.values_list("content", flat=True))
    assert "QX7YZ9" not in everything and "suggest the tram line" not in everything
    line = summary(output)
    for reason in ("2 attachment or file", "1 empty message", "1 thinking block", "1 off the active branch"):
        assert reason in line, reason


def test_a_second_run_imports_nothing_new(owner: Persona) -> None:
    run("import_claude", SAMPLE, "--user", "alice")
    before = stored()
    output = run("import_claude", SAMPLE, "--user", "alice")
    assert summary(output).startswith("imported: nothing; already there: 3 conversations, 7 messages;")
    assert stored() == before


def test_a_dry_run_stores_nothing_and_prints_the_counts(owner: Persona) -> None:
    before = stored()
    output = run("import_claude", SAMPLE, "--user", "alice", "--dry-run")
    assert stored() == before
    lines = output.strip().splitlines()
    assert lines[0] == "claude:0b8e5c1a-aaaa-4f00-8000-00000000c001\t3\tTrip to Lisbon"
    assert lines[-1].startswith("would import: 3 conversations, 7 messages; already there: nothing;")
    assert lines[-1].endswith("; dates: 2024-11-20 to 2025-06-01; dry run, nothing stored")


def test_partition_puts_everything_there(alice: User) -> None:
    PartitionFactory.create(owner=alice, key="import:claude")
    run("import_claude", SAMPLE, "--user", "alice", "--partition", "import:claude")
    assert set(Source.objects.values_list("partition__key", flat=True)) == {"import:claude"}
    assert Source.objects.filter(kind=SourceKind.MESSAGE).count() == 7


def conversation(**overrides: Any) -> dict[str, Any]:
    message = {"uuid": "m1", "sender": "human", "text": "Hello there.", "created_at": "2025-01-01T10:00:00Z"}
    return {"uuid": "c1", "name": "t", "created_at": "2025-01-01T10:00:00Z", "chat_messages": [message], **overrides}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[{]", "is not JSON"),
        ({"uuid": "c1"}, "A Claude export (conversations.json): expected a list, found an object."),
        ([conversation(), conversation(uuid="")], "conversation 2: uuid: a non-empty id is required."),
        ([conversation(chat_messages=None)], "conversation c1: chat_messages: expected a list, found null."),
        ([conversation(created_at="last tuesday")], "conversation c1: created_at: 'last tuesday' is not an ISO 8601"),
        ([conversation(chat_messages=[{"sender": "human", "text": "hi"}])], "conversation c1: message uuid: a non"),
        ([conversation(chat_messages=[{"uuid": "m", "sender": "human", "content": "hi"}])],
         "conversation c1: message m: content: expected a list, found a string."),
    ],
)  # fmt: skip
def test_a_malformed_file_is_refused_whole_with_a_clear_message(
    alice: User, tmp_path: Path, data: Any, message: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(data) if isinstance(data, str) else write(path, data)
    error = refused("import_claude", str(path), "--user", "alice")
    assert message in str(error)
    assert error.returncode == 2


@pytest.mark.parametrize(
    ("command", "sample", "message"),
    [
        ("import_claude", "chatgpt_conversations.json", "ChatGPT export; import it with manage.py import_chatgpt."),
        ("import_chatgpt", "claude_conversations.json", "Claude export; import it with manage.py import_claude."),
        ("import_chatgpt", "aistudio_chat.json", "Google AI Studio chat; import it with manage.py import_aistudio."),
        ("import_aistudio", "claude_conversations.json", "Claude export; import it with manage.py import_claude."),
    ],
)  # fmt: skip
def test_another_importers_export_is_refused_with_the_right_command(
    alice: User, command: str, sample: str, message: str
) -> None:
    error = refused(command, str(SAMPLES / sample), "--user", "alice")
    assert message in str(error) and error.returncode == 2


def test_the_zipped_export_is_refused_with_a_hint(alice: User, tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(SAMPLE, "conversations.json")
    error = refused("import_claude", str(archive), "--user", "alice")
    assert "is a zip archive; unzip the export and give the JSON file inside it." in str(error)
