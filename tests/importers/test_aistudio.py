"""`manage.py import_aistudio`: a Google AI Studio chat as a speaker-attributed transcript, incremental by
watermark (seeds/000)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.models import Node, Source, SourceKind, User
from tests.conftest import Api, Persona
from tests.factories import PartitionFactory
from tests.importers.helpers import SAMPLES, found, process_queued, refused, run, stored, summary, write

pytestmark = pytest.mark.django_db

SAMPLE = SAMPLES / "aistudio_chat.json"
TURNS = [
    {"speaker": "user", "text": "I'm rewriting the onboarding guide for the Brontë team and I'll send the draft to "
     "Mireille by Friday."},
    {"speaker": "model", "text": "A good onboarding guide starts with the first day's checklist, then the people to "
     "meet, then the tools."},
    {"speaker": "user", "text": "The whiteboard photo shows the seating plan for the new hires on the fourth floor."},
    {"speaker": "model", "text": "Seating new hires beside their buddy speeds up their first week."},
]  # fmt: skip


def transcripts() -> list[Source]:
    return list(Source.objects.filter(kind=SourceKind.TRANSCRIPT).order_by("created_at", "id"))


def grown(tmp_path: Path, *texts: tuple[str, str]) -> Path:
    """The same chat (same file name) after more turns."""
    chat = json.loads(SAMPLE.read_text())
    chat["chunkedPrompt"]["chunks"] += [{"role": role, "text": text, "tokenCount": 9} for role, text in texts]
    return write(tmp_path / SAMPLE.name, chat)


def test_the_chat_is_imported_as_a_transcript_processed_and_searchable(api: Api, owner: Persona) -> None:
    output = run("import_aistudio", str(SAMPLE), "--user", "alice")
    assert summary(output) == (
        "imported: 1 transcript, 4 turns; already there: nothing; "
        "skipped: 5 (2 model reasoning, 2 pasted attachment, 1 empty turn)"
    )
    (transcript,) = transcripts()
    assert (transcript.external_id, transcript.title) == ("aistudio:aistudio_chat:2-8", "aistudio_chat")
    assert transcript.segments == [{**turn, "start": None, "timestamp": None} for turn in TURNS]
    assert transcript.source_context["watermark"]["position"] == 8
    assert process_queued() == 1
    assert "Brontë" in found(api, owner, "onboarding guide for the Brontë team")
    assert not Node.objects.filter(type="Person", label__iexact="model").exists()  # the model is no person


def test_reasoning_and_attachments_are_not_stored(owner: Persona) -> None:
    run("import_aistudio", str(SAMPLE), "--user", "alice")
    text = transcripts()[0].content
    assert "Structuring the guide" not in text and "Reading the plan" not in text
    assert "1SyntheticDriveDocumentId" not in text and "iVBORw0KGgo" not in text


def test_a_second_run_imports_nothing_new(owner: Persona) -> None:
    run("import_aistudio", str(SAMPLE), "--user", "alice")
    before = stored()
    output = run("import_aistudio", str(SAMPLE), "--user", "alice")
    assert summary(output).startswith("imported: nothing; already there: nothing; skipped: 9 (4 already imported")
    assert stored() == before


def test_a_grown_chat_sends_only_the_turns_after_the_watermark(owner: Persona, tmp_path: Path) -> None:
    run("import_aistudio", str(SAMPLE), "--user", "alice")
    path = grown(tmp_path, ("user", "I moved the guide review to Monday."), ("model", "Monday works well."))
    output = run("import_aistudio", str(path), "--user", "alice")
    assert summary(output).startswith("imported: 1 transcript, 2 turns; already there: nothing;")
    first, second = transcripts()
    assert second.external_id == "aistudio:aistudio_chat:9-10"
    assert second.segments == [
        {"speaker": "user", "text": "I moved the guide review to Monday.", "start": None, "timestamp": None},
        {"speaker": "model", "text": "Monday works well.", "start": None, "timestamp": None},
    ]
    assert first.segments[-1]["text"] == TURNS[-1]["text"]  # the first import is untouched
    assert process_queued() == 2
    assert summary(run("import_aistudio", str(path), "--user", "alice")).startswith("imported: nothing;")


def test_a_dry_run_stores_nothing_and_prints_the_counts(owner: Persona, tmp_path: Path) -> None:
    run("import_aistudio", str(SAMPLE), "--user", "alice")
    path = grown(tmp_path, ("user", "One more question about desks."))
    before = stored()
    output = run("import_aistudio", str(path), "--user", "alice", "--dry-run")
    assert stored() == before
    lines = output.strip().splitlines()
    assert lines[0] == "aistudio:aistudio_chat:9-9\t1\taistudio_chat"
    assert lines[-1].startswith("would import: 1 transcript, 1 turn; already there: nothing;")
    assert lines[-1].endswith("; dates: unknown; dry run, nothing stored")


def test_a_chat_edited_before_the_watermark_is_refused(owner: Persona, tmp_path: Path) -> None:
    run("import_aistudio", str(SAMPLE), "--user", "alice")
    chat = json.loads(SAMPLE.read_text())
    chat["chunkedPrompt"]["chunks"][7]["parts"][1]["text"] = "An edited answer."
    error = refused("import_aistudio", str(write(tmp_path / SAMPLE.name, chat)), "--user", "alice")
    assert str(error).endswith(
        "The chat changed at or before turn 8, the last one imported. Import the edited chat under another "
        "--chat-id to keep both versions. Nothing was imported."
    )
    other = run("import_aistudio", str(tmp_path / SAMPLE.name), "--user", "alice", "--chat-id", "guide-v2")
    assert summary(other).startswith("imported: 1 transcript, 4 turns;")


def test_partition_puts_everything_there_and_keeps_its_own_watermark(alice: User) -> None:
    PartitionFactory.create(owner=alice, key="import:aistudio")
    run("import_aistudio", str(SAMPLE), "--user", "alice", "--partition", "import:aistudio")
    assert [t.partition.key for t in transcripts()] == ["import:aistudio"]
    run("import_aistudio", str(SAMPLE), "--user", "alice")  # another partition: its own watermark
    assert sorted(t.partition.key for t in transcripts()) == ["import:aistudio", "memory:personal"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("", "is not JSON"),
        ([], "An AI Studio chat file: expected an object, found a list."),
        ({"runSettings": {}}, "chunkedPrompt: expected an object, found null."),
        ({"chunkedPrompt": {"chunks": {}}}, "chunkedPrompt.chunks: expected a list, found an object."),
        ({"chunkedPrompt": {"chunks": [{"role": "user", "text": "hi"}, {"text": "no role"}]}},
         "chunk 2: role must be 'user' or 'model', found None."),
        ({"chunkedPrompt": {"chunks": [{"role": "model", "parts": [{"text": 3}]}]}},
         "chunk 1: part text: expected a string, found a number."),
    ],
)  # fmt: skip
def test_a_malformed_file_is_refused_whole_with_a_clear_message(
    alice: User, tmp_path: Path, data: Any, message: str
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(data) if isinstance(data, str) else write(path, data)
    error = refused("import_aistudio", str(path), "--user", "alice")
    assert message in str(error)
    assert error.returncode == 2
