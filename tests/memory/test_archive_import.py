"""manage.py import_memory / archive_import: an export restored into an empty account answers alike."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.access import Actor
from memory.errors import Conflict, ValidationFailed
from memory.models import Blob, Chunk, Claim, Evidence, Feedback, MemoryEvent, Node, Partition, Scope, Source, User
from memory.services.archive_import import archive_import
from metrics.models import MetricDefinition, Observation
from tests.conftest import Api, Persona, issue
from tests.factories import UserFactory
from tests.memory.archive_samples import (
    ARTIFACT_BYTES,
    FILE_BYTES,
    archive_members,
    build_memory,
    open_commitments,
    rows,
    say,
    searched,
)

pytestmark = pytest.mark.django_db


def exported(api: Api, persona: Persona, **body: Any) -> bytes:
    response = api.post("/maintenance/export", persona, body)
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def restore(data: bytes, user: User, **options: Any) -> Any:
    return archive_import(archive=io.BytesIO(data), owner=user, actor=Actor.system(), **options)


def held(user: User) -> dict[str, int]:
    models = {"sources": Source, "chunks": Chunk, "nodes": Node, "claims": Claim, "blobs": Blob}
    counts = {name: model._default_manager.filter(owner=user).count() for name, model in models.items()}
    counts["metrics"] = MetricDefinition.objects.filter(owner=user).count()
    counts["events"] = MemoryEvent.objects.filter(owner=user).exclude(action__startswith="token.").count()
    return counts


def rebuilt(members: dict[str, bytes], **changes: bytes) -> bytes:
    """The archive again, with some members' bytes replaced (the manifest left as it was)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members.items():
            data = changes.get(name, data)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def resigned(members: dict[str, bytes], **changes: bytes) -> bytes:
    """The archive with some members replaced and the manifest's counts and checksums made to match them."""
    manifest = json.loads(members["manifest.json"])
    for entry in manifest["files"]:
        if entry["name"] in changes:
            data = changes[entry["name"]]
            entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), rows=len(data.splitlines()))
    return rebuilt(members, **changes, **{"manifest.json": json.dumps(manifest).encode()})


def full_persona(user: User) -> Persona:
    return issue(user, "restored", scopes=Scope.values)


def test_an_import_with_new_ids_answers_the_same_searches_and_commitments(
    api: Api, owner: Persona, alice: User
) -> None:
    build_memory(api, owner)
    before = (searched(api, owner), open_commitments(api, owner))
    assert before[1] and all(before[0].values())  # the sample memory answers every query
    carol = UserFactory.create(username="carol")
    result = restore(exported(api, owner), carol, new_ids=True)
    assert result.rows["claims"] == Claim.objects.filter(owner=alice).count() and result.blobs == 2
    assert result.vectors is not None and result.vectors["claims"] > 0 and result.vectors["chunks"] > 0
    restored = full_persona(carol)
    assert (searched(api, restored), open_commitments(api, restored)) == before
    # New ids everywhere, every reference among them intact, nothing pointing back at alice's rows.
    theirs = set(Claim.objects.filter(owner=alice).values_list("id", flat=True))
    mine = set(Claim.objects.filter(owner=carol).values_list("id", flat=True))
    assert mine and not mine & theirs
    for evidence in Evidence.objects.filter(owner=carol).select_related("claim", "source"):
        assert evidence.claim.owner_id == evidence.source.owner_id == carol.pk
    for observation in Observation.objects.filter(owner=carol).select_related("definition", "source"):
        assert observation.definition.owner_id == carol.pk
    alice_ids = {*theirs, *Node.objects.filter(owner=alice).values_list("id", flat=True)}
    assert not {event.target_id for event in MemoryEvent.objects.filter(owner=carol)} & alice_ids
    # Vectors were computed: every current claim has one.
    assert not Claim.objects.filter(owner=carol, status="active", embedding__isnull=True).exists()


def test_new_ids_are_deterministic_per_account(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    data = exported(api, owner)
    first = UserFactory.create(username="first")
    ids = restore(data, first, new_ids=True).id_map
    Claim.objects.filter(owner=first).delete()
    Node.objects.filter(owner=first).delete()
    Source.objects.filter(owner=first).delete()
    MemoryEvent.objects.filter(owner=first).delete()
    assert restore(data, first, new_ids=True).id_map == ids  # same account, same archive: same ids
    assert restore(data, UserFactory.create(username="second"), new_ids=True).id_map != ids


def test_an_import_after_the_original_is_deleted_keeps_every_id(api: Api, owner: Persona, alice: User) -> None:
    build_memory(api, owner)
    before = (searched(api, owner), open_commitments(api, owner))
    kinds = (Source, Node, Claim, Chunk, Blob)
    ids = {model: set(model.objects.filter(owner=alice).values_list("id", flat=True)) for model in kinds}
    times = dict(Claim.objects.filter(owner=alice).values_list("id", "updated_at"))
    data = exported(api, owner)
    # Sources first: a file's source protects its blob (whole-account erasure is issue 15's erase_user).
    Source.objects.filter(owner=alice).delete()
    alice.delete()
    newcomer = UserFactory.create(username="alice")
    result = restore(data, newcomer)
    assert result.new_ids is False
    for model, kept in ids.items():
        assert set(model.objects.filter(owner=newcomer).values_list("id", flat=True)) == kept, model
    assert dict(Claim.objects.filter(owner=newcomer).values_list("id", "updated_at")) == times  # not "now"
    restored = full_persona(newcomer)
    assert (searched(api, restored), open_commitments(api, restored)) == before
    # The originals are back in the blob store and served.
    for data_ in (FILE_BYTES, ARTIFACT_BYTES):
        served = api.get(f"/artifact/{hashlib.sha256(data_).hexdigest()}", restored)
        assert served.status_code == 200 and b"".join(served.streaming_content) == data_
    personal = Partition.objects.get(owner=newcomer, key="memory:personal")
    assert personal.pk in {p["id"] for p in json.loads(archive_members(data)["manifest.json"])["partitions"]}


def test_ids_that_exist_already_are_refused_naming_new_ids(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    carol = UserFactory.create(username="carol")
    with pytest.raises(Conflict, match="--new-ids"):
        restore(exported(api, owner), carol)
    assert not any(held(carol).values())


def test_a_tampered_archive_is_refused_with_nothing_written(api: Api, owner: Persona, blob_dir: Path) -> None:
    build_memory(api, owner)
    members = archive_members(exported(api, owner))
    claims = members["claims.jsonl"].replace(b"morning", b"evening")
    carol = UserFactory.create(username="carol")
    files_before = sorted(blob_dir.rglob("*"))
    with pytest.raises(ValidationFailed, match=r"claims\.jsonl does not match its checksum"):
        restore(rebuilt(members, **{"claims.jsonl": claims}), carol, new_ids=True)
    blob = next(name for name in members if name.startswith("blobs/"))
    with pytest.raises(ValidationFailed, match="does not match its checksum"):
        restore(rebuilt(members, **{blob: members[blob] + b"!"}), carol, new_ids=True)
    assert not any(held(carol).values())
    assert sorted(blob_dir.rglob("*")) == files_before


def test_an_inconsistent_archive_fails_inside_the_transaction_with_nothing_written(
    api: Api, owner: Persona, blob_dir: Path
) -> None:
    """Checksums right, but evidence cites a claim the archive does not hold: found only while writing (after
    partitions, blobs, sources, chunks and nodes went in), and all of it is rolled back."""
    build_memory(api, owner)
    members = archive_members(exported(api, owner))
    cited = {json.loads(line)["claim_id"] for line in members["evidence.jsonl"].splitlines()}
    kept = [line for line in members["claims.jsonl"].splitlines() if json.loads(line)["id"] not in cited]
    carol = UserFactory.create(username="carol")
    partitions = list(Partition.objects.filter(owner=carol).values_list("id", "key"))
    files_before = sorted(blob_dir.rglob("*"))
    with pytest.raises(ValidationFailed, match=r"evidence\.jsonl refers to claim_"):
        restore(resigned(members, **{"claims.jsonl": b"".join(line + b"\n" for line in kept)}), carol, new_ids=True)
    assert not any(held(carol).values())
    assert list(Partition.objects.filter(owner=carol).values_list("id", "key")) == partitions
    assert sorted(blob_dir.rglob("*")) == files_before


def test_an_archive_made_before_chunks_kept_their_sources_scope_and_time_is_restored(
    api: Api, owner: Persona, alice: User
) -> None:
    """Chunk rows without `scope` and `occurred_at` (archives of migration 0026 and before) take their source's."""
    build_memory(api, owner)
    before = searched(api, owner)
    members = archive_members(exported(api, owner))
    old = [{k: v for k, v in row.items() if k not in ("scope", "occurred_at")} for row in rows(members, "chunks")]
    assert old and all(len(row) < len(new) for row, new in zip(old, rows(members, "chunks"), strict=True))
    carol = UserFactory.create(username="carol")
    restore(
        resigned(members, **{"chunks.jsonl": "".join(json.dumps(row) + "\n" for row in old).encode()}),
        carol,
        new_ids=True,
    )
    chunks = list(Chunk.objects.filter(owner=carol).select_related("source"))
    assert len(chunks) == Chunk.objects.filter(owner=alice).count()
    for chunk in chunks:
        assert (chunk.scope, chunk.occurred_at) == (chunk.source.scope, chunk.authored_at or chunk.source.occurred_at)
    assert searched(api, full_persona(carol)) == before


def test_a_chunk_whose_source_the_archive_does_not_hold_is_refused_with_nothing_written(
    api: Api, owner: Persona
) -> None:
    """A chunk takes its scope and time from its source in the archive: without that source there is none to take."""
    build_memory(api, owner)
    members = archive_members(exported(api, owner))
    cited = {row["source_id"] for row in rows(members, "chunks")}
    kept = [line for line in members["sources.jsonl"].splitlines() if json.loads(line)["id"] not in cited]
    carol = UserFactory.create(username="carol")
    with pytest.raises(ValidationFailed, match=r"chunks\.jsonl refers to src_"):
        restore(resigned(members, **{"sources.jsonl": b"".join(line + b"\n" for line in kept)}), carol, new_ids=True)
    assert not any(held(carol).values())


def test_another_format_version_is_refused(api: Api, owner: Persona) -> None:
    say(api, owner, "I prefer morning meetings.")
    members = archive_members(exported(api, owner))
    manifest = json.loads(members["manifest.json"])
    carol = UserFactory.create(username="carol")
    for version in (2, None, "1"):
        changed = json.dumps({**manifest, "format_version": version}).encode()
        with pytest.raises(ValidationFailed, match="format version"):
            restore(rebuilt(members, **{"manifest.json": changed}), carol, new_ids=True)
    other = json.dumps({**manifest, "format": "something-else"}).encode()
    with pytest.raises(ValidationFailed, match="not a memory-archive"):
        restore(rebuilt(members, **{"manifest.json": other}), carol, new_ids=True)
    with pytest.raises(ValidationFailed, match="not a tar"):
        restore(b"not a tar at all" * 100, carol, new_ids=True)
    without = {name: data for name, data in members.items() if name != "manifest.json"}
    with pytest.raises(ValidationFailed, match="no manifest"):
        restore(rebuilt(without), carol, new_ids=True)
    extra = {**members, "stray.txt": b"x"}
    with pytest.raises(ValidationFailed, match="does not match its manifest"):
        restore(rebuilt(extra), carol, new_ids=True)
    assert not any(held(carol).values())


def test_an_account_that_holds_memory_is_refused(api: Api, owner: Persona, other: Persona, bob: User) -> None:
    say(api, owner, "I prefer morning meetings.")
    say(api, other, "I prefer tea.")
    before = held(bob)
    with pytest.raises(Conflict, match="already holds memory"):
        restore(exported(api, owner), bob, new_ids=True)
    assert held(bob) == before
    # Anything the partitions hold counts, or replacing them would lose it: feedback alone is enough.
    dave = UserFactory.create(username="dave")
    Feedback.objects.create(owner=dave, partition=dave.partitions.get(), kind="bug", note="Search missed it.")
    with pytest.raises(Conflict, match="1 feedback"):
        restore(exported(api, owner), dave, new_ids=True)
    assert Feedback.objects.filter(owner=dave).count() == 1


def test_a_partition_archive_restores_into_that_partition_beside_the_personal_one(api: Api, owner: Persona,
                                                                                 alice: User) -> None:  # fmt: skip
    Partition.objects.create(owner=alice, key="work")
    body = {"key": "stack", "value": "Django on PostgreSQL.", "partitionKey": "work"}
    assert api.post("/memory/save", owner, body).status_code == 200
    carol = UserFactory.create(username="carol")
    result = restore(exported(api, owner, partition="work"), carol, new_ids=True)
    assert result.rows["partitions"] == 1
    assert sorted(Partition.objects.filter(owner=carol).values_list("key", flat=True)) == ["memory:personal", "work"]
    assert Claim.objects.get(owner=carol, key="stack").partition.key == "work"


def test_the_import_command(api: Api, owner: Persona, tmp_path: Path) -> None:
    say(api, owner, "I prefer morning meetings.")
    path = tmp_path / "alice.tar"
    path.write_bytes(exported(api, owner))
    UserFactory.create(username="carol")
    with pytest.raises(CommandError, match="--new-ids"):
        call_command("import_memory", str(path), "--user", "carol")
    out = io.StringIO()
    call_command("import_memory", str(path), "--user", "carol", "--new-ids", stdout=out)
    answer = json.loads(out.getvalue())
    assert answer["newIds"] is True and answer["rows"]["claims"] >= 1 and answer["vectors"]["claims"] >= 1
    with pytest.raises(CommandError, match="already holds memory"):
        call_command("import_memory", str(path), "--user", "carol", "--new-ids")
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_memory", str(tmp_path / "missing.tar"), "--user", "carol")
    with pytest.raises(CommandError, match="No user named"):
        call_command("import_memory", str(path), "--user", "nobody")
