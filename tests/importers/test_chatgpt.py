"""`manage.py import_chatgpt`: a ChatGPT data export through the normal ingestion service and pipeline."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError

from memory.models import Source, SourceKind, User
from tests.conftest import Api, Persona
from tests.factories import PartitionFactory
from tests.importers.helpers import SAMPLES, found, process_queued, refused, run, stored, summary, write

pytestmark = pytest.mark.django_db

SAMPLE = str(SAMPLES / "chatgpt_conversations.json")


def messages() -> list[tuple[str, str]]:
    rows = Source.objects.filter(kind=SourceKind.MESSAGE).order_by("parent__occurred_at", "ordinal")
    return [(row.role, row.content) for row in rows]


def test_the_export_is_imported_processed_and_searchable(api: Api, owner: Persona) -> None:
    output = run("import_chatgpt", SAMPLE, "--user", "alice")
    assert summary(output).startswith("imported: 2 conversations, 6 messages; already there: nothing; skipped: ")
    assert process_queued() == 2
    assert "kohlrabi" in found(api, owner, "kohlrabi at the allotment")
    assert "bandoneón" in found(api, owner, "which instrument do I play on Sunday")


def test_only_the_active_branch_and_what_the_two_said_is_imported(owner: Persona) -> None:
    output = run("import_chatgpt", SAMPLE, "--user", "alice")
    assert messages() == [
        ("user", "I planted three rows of kohlrabi at the allotment by the river."),
        ("assistant", "Kohlrabi likes steady watering; mulch the rows to keep the soil moist."),
        ("user", "My favourite instrument is the bandoneón; I play it every Sunday in Zürich."),
        ("assistant", "The bandoneón carries the tango; Sunday practice sounds wonderful."),
        ("user", "This photo shows my electricity bill from the Stadtwerke; it went up to 94 euros a month."),
        ("assistant", "That is 1128 euros a year for electricity."),
    ]
    conversation = Source.objects.get(external_id="chatgpt:6a1f0c2e-1111-4c3b-9a77-0000000000a1")
    assert conversation.title == "Allotment planning"
    assert conversation.children.get(message_id="u-1").authored_at == datetime(2024, 3, 1, 9, tzinfo=UTC)
    for reason in (
        "2 off the active branch (edited or regenerated)",
        "2 system message",
        "1 tool call",
        "1 tool message",
        "1 empty message",
        "1 image, audio or file part",
        "1 conversation with nothing to import",
    ):
        assert reason in summary(output), reason  # fmt: skip


def test_a_second_run_imports_nothing_new(owner: Persona) -> None:
    run("import_chatgpt", SAMPLE, "--user", "alice")
    before = stored()
    output = run("import_chatgpt", SAMPLE, "--user", "alice")
    assert summary(output).startswith("imported: nothing; already there: 2 conversations, 6 messages; skipped:")
    assert stored() == before


def test_a_grown_export_imports_only_the_new_messages(owner: Persona, tmp_path: Path) -> None:
    run("import_chatgpt", SAMPLE, "--user", "alice")
    export = json.loads(Path(SAMPLE).read_text())
    mapping = export[0]["mapping"]
    mapping["a-2"]["children"] = ["u-3"]
    mapping["u-3"] = {"id": "u-3", "parent": "a-2", "children": [], "message": {
        "id": "u-3", "author": {"role": "user"}, "create_time": 1709290000.0,
        "content": {"content_type": "text", "parts": ["The allotment committee meets on Thursday."]}}}  # fmt: skip
    export[0]["current_node"] = "u-3"
    output = run("import_chatgpt", str(write(tmp_path / "conversations.json", export)), "--user", "alice")
    assert summary(output).startswith("imported: 1 conversation, 1 message; already there: 1 conversation, 6 messages")
    added = Source.objects.get(message_id="u-3")
    assert added.parent is not None
    assert (added.parent.external_id, added.ordinal, added.content) == (
        "chatgpt:6a1f0c2e-1111-4c3b-9a77-0000000000a1", 4, "The allotment committee meets on Thursday.")  # fmt: skip


def test_a_dry_run_stores_nothing_and_prints_the_counts(owner: Persona) -> None:
    before = stored()
    output = run("import_chatgpt", SAMPLE, "--user", "alice", "--dry-run")
    assert stored() == before
    lines = output.strip().splitlines()
    assert lines[:2] == [
        "chatgpt:6a1f0c2e-1111-4c3b-9a77-0000000000a1\t4\tAllotment planning",
        "chatgpt:6a1f0c2e-2222-4c3b-9a77-0000000000b2\t2\tElectricity bill",
    ]
    assert lines[-1].startswith("would import: 2 conversations, 6 messages; already there: nothing; skipped: 9 (")
    assert lines[-1].endswith("; dates: 2024-03-01 to 2024-06-15; dry run, nothing stored")
    run("import_chatgpt", SAMPLE, "--user", "alice")  # the dry run left nothing that would stop the real one
    assert Source.objects.filter(kind=SourceKind.MESSAGE).count() == 6


def test_partition_puts_everything_there(alice: User) -> None:
    PartitionFactory.create(owner=alice, key="import:chatgpt")
    run("import_chatgpt", SAMPLE, "--user", "alice", "--partition", "import:chatgpt")
    assert set(Source.objects.values_list("partition__key", flat=True)) == {"import:chatgpt"}
    error = refused("import_chatgpt", SAMPLE, "--user", "alice", "--partition", "nowhere")
    assert "alice has no partition 'nowhere'" in str(error)


def test_an_unknown_user_is_refused(alice: User) -> None:
    assert "No user named 'carol'" in str(refused("import_chatgpt", SAMPLE, "--user", "carol"))


def conversation(**overrides: Any) -> dict[str, Any]:
    content = {"content_type": "text", "parts": ["Hello there."]}
    node: dict[str, Any] = {
        "id": "n1",
        "parent": None,
        "children": [],
        "message": {"id": "n1", "author": {"role": "user"}, "content": content},
    }
    return {"id": "c1", "title": "t", "mapping": {"n1": node}, "current_node": "n1", **overrides}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "is not JSON: Expecting property name"),
        ({"conversations": []}, "A ChatGPT export (conversations.json): expected a list, found an object."),
        ([conversation(), "oops"], "conversation 2: expected an object, found a string."),
        ([conversation(), conversation(id=None)], "conversation 2: conversation_id: a non-empty id is required."),
        ([conversation(mapping=None)], "conversation c1: mapping: expected an object, found null."),
        ([conversation(current_node="gone")], "conversation c1: current_node must name a node of mapping."),
        ([conversation(mapping={"n1": {"parent": "n1", "message": None}})], "the parents of node n1 form a loop"),
        ([conversation(mapping={"n1": {"parent": None, "message": {"id": "n1", "author": {"role": "user"}}}})],
         "conversation c1: message n1: content: expected an object, found null."),
    ],
)  # fmt: skip
def test_a_malformed_file_is_refused_whole_with_a_clear_message(
    alice: User, tmp_path: Path, data: Any, message: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(data) if isinstance(data, str) else write(path, data)
    error = refused("import_chatgpt", str(path), "--user", "alice")
    assert message in str(error)
    assert error.returncode == 2


def test_a_missing_file_is_refused(alice: User, tmp_path: Path) -> None:
    error = refused("import_chatgpt", str(tmp_path / "absent.json"), "--user", "alice")
    assert "Cannot read" in str(error) and error.returncode == 2


def test_a_conversation_refused_by_ingestion_keeps_its_whole_batch_out(owner: Persona, tmp_path: Path) -> None:
    run("import_chatgpt", SAMPLE, "--user", "alice")
    export = json.loads(Path(SAMPLE).read_text())
    export[0]["mapping"]["a-2"]["children"] = ["u-3"]
    said = {"content_type": "text", "parts": ["A new message that must not be kept alone."]}
    export[0]["mapping"]["u-3"] = {
        "parent": "a-2",
        "message": {"id": "u-3", "author": {"role": "user"}, "content": said},
    }
    export[0]["current_node"] = "u-3"
    export[1]["mapping"]["m4"]["message"]["content"]["parts"] = ["An answer rewritten after the fact."]
    error = refused("import_chatgpt", str(write(tmp_path / "conversations.json", export)), "--user", "alice")
    assert "CONFLICT: Some messages were already stored with other text" in str(error)
    assert "Stopped at chatgpt:6a1f0c2e-2222-4c3b-9a77-0000000000b2; nothing was imported." in str(error)
    assert error.returncode == 1
    assert not Source.objects.filter(message_id="u-3").exists()  # same batch as the refusal: rolled back


def test_a_refusal_keeps_the_batches_before_it_and_a_rerun_continues(
    owner: Persona, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memory.services.history_import.IMPORT_BATCH", 1)  # one conversation per transaction
    run("import_chatgpt", SAMPLE, "--user", "alice")
    export = json.loads(Path(SAMPLE).read_text())
    export[0]["mapping"]["a-2"]["children"] = ["u-3"]
    said = {"content_type": "text", "parts": ["Kept before the refusal."]}
    export[0]["mapping"]["u-3"] = {
        "parent": "a-2",
        "message": {"id": "u-3", "author": {"role": "user"}, "content": said},
    }
    export[0]["current_node"] = "u-3"
    export[1]["mapping"]["m4"]["message"]["content"]["parts"] = ["An answer rewritten after the fact."]
    path = write(tmp_path / "conversations.json", export)
    with pytest.raises(CommandError) as caught:
        run("import_chatgpt", str(path), "--user", "alice")
    assert str(caught.value).startswith("CONFLICT: Some messages were already stored with other text")
    assert str(caught.value).endswith(
        "Stopped at chatgpt:6a1f0c2e-2222-4c3b-9a77-0000000000b2; imported before it: 1 conversation, 1 message "
        "(running the import again continues after them)."
    )
    assert Source.objects.filter(message_id="u-3").exists()


def test_what_voice_mode_transcribed_is_kept_and_the_audio_is_not(owner: Persona, tmp_path: Path) -> None:
    parts = [
        {"content_type": "audio_transcription", "text": "Remind me that the piano tuner comes on Tuesday."},
        {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file_synthetic", "size_bytes": 9},
    ]
    node = {"parent": None, "message": {"id": "v1", "author": {"role": "user"}, "create_time": 1718476200.0,
            "content": {"content_type": "multimodal_text", "parts": parts}}}  # fmt: skip
    path = write(tmp_path / "conversations.json", [conversation(mapping={"v1": node}, current_node="v1")])
    output = run("import_chatgpt", str(path), "--user", "alice")
    assert summary(output) == (
        "imported: 1 conversation, 1 message; already there: nothing; skipped: 1 (1 image, audio or file part)"
    )
    assert messages() == [("user", "Remind me that the piano tuner comes on Tuesday.")]


def test_a_conversation_erased_for_good_stays_out_and_the_rest_imports(api: Api, owner: Persona) -> None:
    run("import_chatgpt", SAMPLE, "--user", "alice")
    bill = Source.objects.get(external_id="chatgpt:6a1f0c2e-2222-4c3b-9a77-0000000000b2")
    erased = api.post("/source/delete", owner, {"sourceId": bill.pk, "retireIdentity": True})
    assert erased.status_code == 200, erased.json()
    output = run("import_chatgpt", SAMPLE, "--user", "alice")
    assert summary(output).startswith("imported: nothing; already there: 1 conversation, 4 messages; skipped: ")
    assert "1 erased earlier (identity retired)" in summary(output)
    assert not Source.objects.live().filter(external_id=bill.external_id).exists()
