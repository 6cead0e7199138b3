"""The erasure endpoints (partition, session, artifact, metric observations, metric) with every persona and bad
input, and the admin's account erasure (the action with its confirmation page, and the plain delete)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.files.storage import default_storage

from memory.models import AgentSession, ArtifactPlacement, Blob, Claim, Partition, SessionEvent, Source, User
from memory.pipeline.runner import run_operation
from metrics.models import MetricDefinition, Observation
from tests.conftest import Api, Persona, error_code, issue

pytestmark = pytest.mark.django_db

ERASERS = [
    ("/partitions/erase", {"key": "memory:personal"}),
    ("/session/erase", {"sessionId": "ses_missing"}),
    ("/artifact/erase", {"sha256": "a" * 64}),
    ("/metrics/observations/erase", {"slug": "body_weight"}),
    ("/metrics/definitions/erase", {"slug": "body_weight"}),
]


def put_artifact(api: Api, persona: Persona, content: bytes, key: str = "memory:personal") -> str:
    response = api.client.generic(
        "PUT", f"/artifact?partitionKey={key}", content, content_type="text/plain", headers=persona.headers
    )
    assert response.status_code in (200, 201), response.content
    return str(response.json()["sha256"])


def observe(api: Api, persona: Persona, value: float, when: str, note: str = "") -> str:
    body = {"slug": "body_weight", "value": value, "occurredAt": when, "note": note}
    response = api.post("/metrics/observations", persona, body)
    assert response.status_code in (200, 201), response.content
    return str(response.json()["observationId"])


@pytest.mark.parametrize(("path", "body"), ERASERS)
def test_erasers_refuse_the_outsider_the_revoked_and_a_token_without_edit(
    api: Api, path: str, body: dict[str, Any], outsider: Persona, revoked: Persona, alice: User
) -> None:
    assert api.post(path, outsider, body).status_code == 401
    assert error_code(api.post(path, revoked, body)) == "TOKEN_REVOKED"
    writer = issue(alice, "writer", scopes=["read", "write"])
    assert error_code(api.post(path, writer, body)) == "SCOPE_REQUIRED"


@pytest.mark.parametrize(("path", "body"), ERASERS)
def test_erasers_answer_bad_input_in_the_error_shape(api: Api, owner: Persona, path: str, body: dict) -> None:
    assert error_code(api.post(path, owner, raw="{not json")) == "MALFORMED_JSON"
    assert error_code(api.post(path, owner, {**body, "surprise": 1})) == "VALIDATION_ERROR"
    assert error_code(api.post(path, owner, [1, 2])) == "VALIDATION_ERROR"
    assert error_code(api.post(path, owner, {})) == "VALIDATION_ERROR"


def test_partition_erasure_needs_the_key_typed_again(api: Api, owner: Persona, other: Persona, alice: User) -> None:
    api.post("/partitions/create", owner, {"key": "project:apollo"})
    api.post("/scratchpad/write", owner, {"content": "apollo notes", "partitionKey": "project:apollo"})
    for confirm in (None, "project:other", "PROJECT:APOLLO"):
        body = {"key": "project:apollo", "dryRun": False, **({"confirm": confirm} if confirm else {})}
        assert error_code(api.post("/partitions/erase", owner, body)) == "VALIDATION_ERROR"
    assert Partition.objects.filter(owner=alice, key="project:apollo").exists()
    body = {"key": "project:apollo", "dryRun": False, "confirm": "project:apollo"}
    assert error_code(api.post("/partitions/erase", other, body)) == "NOT_FOUND"  # bob has no such partition
    assert error_code(api.post("/partitions/erase", owner, {**body, "key": "x:y", "confirm": "x:y"})) == "NOT_FOUND"
    narrow = issue(alice, "narrow", scopes=["read", "write", "edit"], partition_keys=["memory:personal"])
    assert error_code(api.post("/partitions/erase", narrow, body)) == "NOT_FOUND"
    answer = api.post("/partitions/erase", owner, body).json()
    assert answer["counts"]["scratchpad"] == 1 and answer["keptEmpty"] is False
    assert not Partition.objects.filter(owner=alice, key="project:apollo").exists()
    assert error_code(api.post("/partitions/erase", owner, body)) == "NOT_FOUND"  # gone


def test_session_erasure_takes_its_events_and_what_curating_it_made(
    api: Api, owner: Persona, other: Persona, alice: User
) -> None:
    session = api.post("/session/create", owner, {"title": "run"}).json()["session"]["sessionId"]
    said = {"sessionId": session, "kind": "user_message", "payload": {"text": "I prefer jasmine tea."}}
    api.post("/session/append-event", owner, said)
    api.post("/coord/curate", owner, {"sessionId": session, "dryRun": False})
    kept = api.post("/session/create", owner, {"title": "other"}).json()["session"]["sessionId"]
    api.post("/session/append-event", owner, {**said, "sessionId": kept, "payload": {"text": "unrelated"}})
    assert Claim.objects.filter(owner=alice, statement__icontains="jasmine").exists()
    assert error_code(api.post("/session/erase", other, {"sessionId": session})) == "NOT_FOUND"
    answer = api.post("/session/erase", owner, {"sessionId": session}).json()
    assert (answer["erasedEvents"], answer["erasedSources"]) == (1, 2)  # the session's source and its event's
    assert answer["erasedClaims"] >= 1
    assert not AgentSession.objects.filter(pk=session).exists()
    assert not Claim.objects.filter(owner=alice, statement__icontains="jasmine").exists()
    assert not Source.objects.filter(owner=alice, external_id=session).exists()
    assert SessionEvent.objects.filter(session_id=kept).count() == 1  # the other session is untouched
    assert error_code(api.post("/session/erase", owner, {"sessionId": session})) == "NOT_FOUND"


def test_artifact_erasure_removes_the_bytes_and_refuses_while_a_file_keeps_them(
    api: Api, owner: Persona, other: Persona, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    sha = put_artifact(api, owner, b"artifact bytes")
    bobs = put_artifact(api, other, b"artifact bytes")  # the same bytes: bob's own copy
    assert sha == bobs
    name = Blob.objects.get(owner=alice).storage_name
    assert error_code(api.post("/artifact/erase", other, {"sha256": "b" * 64})) == "NOT_FOUND"
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post("/artifact/erase", owner, {"sha256": sha.upper()})
    assert answer.status_code == 200 and answer.json()["erasedPlacements"] == 1
    assert not Blob.objects.filter(owner=alice).exists() and not default_storage.exists(name)
    assert Blob.objects.filter(owner__username="bob", sha256=sha).exists()

    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("a.txt", b"kept by a file", content_type="text/plain")
    filed = api.client.post("/ingest/file", data={"file": upload, "document": '{"id": "a"}'}, headers=owner.headers)
    shared = put_artifact(api, owner, b"kept by a file")
    refused = api.post("/artifact/erase", owner, {"sha256": shared})
    assert error_code(refused) == "CONFLICT"
    assert refused.json()["error"]["details"]["sourceIds"] == [filed.json()["sourceId"]]
    assert ArtifactPlacement.objects.filter(blob__sha256=shared).exists()


def test_observations_erase_by_id_and_by_range_with_a_preview(api: Api, owner: Persona, other: Persona) -> None:
    first = observe(api, owner, 78.0, "2026-01-05T07:00:00Z", note="secret note")
    observe(api, owner, 77.5, "2026-02-05T07:00:00Z")
    observe(api, owner, 77.0, "2026-03-05T07:00:00Z")
    assert error_code(api.post("/metrics/observations/erase", other, {"observationIds": [first]})) == "NOT_FOUND"
    both = {"observationIds": [first], "slug": "body_weight"}
    assert error_code(api.post("/metrics/observations/erase", owner, both)) == "VALIDATION_ERROR"
    backwards = {"slug": "body_weight", "since": "2026-03-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}
    assert error_code(api.post("/metrics/observations/erase", owner, backwards)) == "VALIDATION_ERROR"
    assert api.post("/metrics/observations/erase", owner, {"observationIds": [first]}).json()["observations"] == 1
    assert Observation.objects.count() == 3  # a preview by default
    erased = api.post("/metrics/observations/erase", owner, {"observationIds": [first], "dryRun": False}).json()
    assert erased == {"dryRun": False, "observations": 1, "erasedClaims": 0}
    ranged = {"slug": "body_weight", "since": "2026-02-01T00:00:00Z", "until": "2026-03-01T00:00:00Z"}
    assert api.post("/metrics/observations/erase", owner, {**ranged, "dryRun": False}).json()["observations"] == 1
    assert list(Observation.objects.values_list("value", flat=True)) == [77.0]


def test_a_metric_is_erased_with_its_observations_and_reading_claims(api: Api, owner: Persona, alice: User) -> None:
    said = {"id": "m1", "role": "user", "content": "I weighed 81.4 kg this morning."}
    receipt = api.post("/ingest/conversation", owner, {"conversation": {"id": "c", "messages": [said]}}).json()
    run_operation(receipt["operationId"])
    observe(api, owner, 80.0, "2026-01-05T07:00:00Z")
    definition = MetricDefinition.objects.get(owner=alice)
    readings = list(
        Observation.objects.filter(definition=definition).exclude(claim=None).values_list("claim", flat=True)
    )
    assert readings, "the pipeline stored no reading"
    preview = api.post("/metrics/definitions/erase", owner, {"metricId": definition.pk}).json()
    assert preview["dryRun"] is True and preview["observations"] == 2
    erased = api.post("/metrics/definitions/erase", owner, {"metricId": definition.pk, "dryRun": False}).json()
    assert erased["observations"] == 2 and erased["erasedClaims"] >= 1
    assert not MetricDefinition.objects.exists() and not Observation.objects.exists()
    assert not Claim.objects.filter(pk__in=readings).exists()
    assert Source.objects.filter(pk=receipt["sourceId"]).exists()  # the message stays (erase it for that)
    gone = api.post("/metrics/definitions/erase", owner, {"metricId": definition.pk, "dryRun": False})
    assert error_code(gone) == "NOT_FOUND"


def test_no_endpoint_erases_an_account(api: Api, owner: Persona) -> None:
    for path in ("/user/erase", "/account/erase", "/users/erase"):
        assert api.post(path, owner, {}).status_code == 404


@pytest.fixture
def staff(client: Any, db: None) -> Any:
    admin = User.objects.create_superuser("root", "root@example.test", "pw")
    client.force_login(admin)
    return client


def test_the_admin_action_confirms_then_erases_the_account_and_its_files(
    staff: Any, api: Api, owner: Persona, alice: User, blob_dir: Path, django_capture_on_commit_callbacks: Any
) -> None:
    put_artifact(api, owner, b"alice's bytes")
    assert any(blob_dir.rglob("*"))
    form = {"action": "erase_with_memory", ACTION_CHECKBOX_NAME: [alice.pk]}
    page = staff.post("/admin/memory/user/", form)
    assert page.status_code == 200 and b"Erase the user and all their memory?" in page.content
    assert b"alice" in page.content and User.objects.filter(pk=alice.pk).exists()  # only asked so far
    with django_capture_on_commit_callbacks(execute=True):
        done = staff.post("/admin/memory/user/", {**form, "erase": "yes"})
    assert done.status_code == 302
    assert not User.objects.filter(pk=alice.pk).exists()
    assert not [path for path in blob_dir.rglob("*") if path.is_file()]


def test_the_admins_plain_delete_also_removes_the_users_files(
    staff: Any, api: Api, owner: Persona, alice: User, blob_dir: Path, django_capture_on_commit_callbacks: Any
) -> None:
    put_artifact(api, owner, b"alice's other bytes")
    with django_capture_on_commit_callbacks(execute=True):
        done = staff.post(f"/admin/memory/user/{alice.pk}/delete/", {"post": "yes"})
    assert done.status_code == 302
    assert not User.objects.filter(pk=alice.pk).exists() and not Blob.objects.exists()
    assert not [path for path in blob_dir.rglob("*") if path.is_file()]


def test_a_chain_crossing_into_an_erased_partition_is_mended(api: Api, owner: Persona, alice: User) -> None:
    """An older value elsewhere superseded by a claim in the erased partition is current again; a claim
    elsewhere known only from the erased partition's sources goes too."""
    from memory.models import Evidence
    from tests.factories import ClaimFactory, PartitionFactory

    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    newer = ClaimFactory.create(owner=alice, partition=apollo, statement="Lives in Utrecht.")
    older = ClaimFactory.create(owner=alice, statement="Lives in Leiden.", status="superseded", superseded_by=newer)
    receipt = api.post("/ingest/document", owner, {"document": {"id": "d", "content": "x"}, "partitionKey": apollo.key})
    leaning = ClaimFactory.create(owner=alice, statement="Known only from apollo.")
    Evidence.objects.create(owner=alice, claim=leaning, source_id=receipt.json()["sourceId"], excerpt="x")
    body = {"key": apollo.key, "dryRun": False, "confirm": apollo.key}
    assert api.post("/partitions/erase", owner, body).status_code == 200
    older.refresh_from_db()
    assert (older.status, older.superseded_by_id) == ("active", None)
    assert not Claim.objects.filter(pk__in=[newer.pk, leaning.pk]).exists()


def test_erase_user_finds_by_username_or_external_id_and_refuses_an_unknown_one(alice: User, bob: User) -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="No user 'nobody'"):
        call_command("erase_user", "nobody", "--confirm")
    User.objects.filter(pk=bob.pk).update(external_id="bob-external")
    printed = StringIO()
    call_command("erase_user", "bob-external", stdout=printed)
    assert "Nothing erased" in printed.getvalue() and User.objects.filter(pk=bob.pk).exists()
    call_command("erase_user", "bob-external", "--confirm", stdout=printed)
    assert not User.objects.filter(pk=bob.pk).exists() and User.objects.filter(pk=alice.pk).exists()


def test_the_admin_action_does_not_erase_the_signed_in_admin(staff: Any, alice: User) -> None:
    admin = User.objects.get(username="root")
    form = {"action": "erase_with_memory", ACTION_CHECKBOX_NAME: [admin.pk, alice.pk], "erase": "yes"}
    done = staff.post("/admin/memory/user/", form, follow=True)
    assert b"Your own account is erased with manage.py erase_user." in done.content
    assert User.objects.filter(pk__in=[admin.pk, alice.pk]).count() == 2


def test_the_admins_plain_delete_of_a_partition_erases_it_with_its_files_and_an_audit_row(
    staff: Any, api: Api, owner: Persona, alice: User, blob_dir: Path, django_capture_on_commit_callbacks: Any
) -> None:
    from memory.models import MemoryEvent
    from tests.factories import PartitionFactory

    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    put_artifact(api, owner, b"apollo's bytes", key=apollo.key)
    asked = staff.get(f"/admin/memory/partition/{apollo.pk}/delete/")
    assert asked.status_code == 200 and b"Are you sure" in asked.content  # not "permission denied"
    with django_capture_on_commit_callbacks(execute=True):
        done = staff.post(f"/admin/memory/partition/{apollo.pk}/delete/", {"post": "yes"})
    assert done.status_code == 302
    assert not Partition.objects.filter(pk=apollo.pk).exists() and not Blob.objects.exists()
    assert not [path for path in blob_dir.rglob("*") if path.is_file()]
    erased = MemoryEvent.objects.get(action="partition.erase", target_id=apollo.pk)
    assert erased.surface == "admin" and erased.actor_user is not None and erased.actor_user.username == "root"


def test_the_admins_delete_action_empties_a_personal_partition_and_keeps_it(
    staff: Any, api: Api, owner: Persona, alice: User, blob_dir: Path, django_capture_on_commit_callbacks: Any
) -> None:
    from tests.factories import PartitionFactory

    personal = Partition.objects.get(owner=alice, key="memory:personal")
    apollo = PartitionFactory.create(owner=alice, key="project:apollo")
    put_artifact(api, owner, b"personal bytes")
    form = {"action": "delete_selected", ACTION_CHECKBOX_NAME: [personal.pk, apollo.pk], "post": "yes"}
    with django_capture_on_commit_callbacks(execute=True):
        done = staff.post("/admin/memory/partition/", form)
    assert done.status_code == 302
    assert Partition.objects.filter(pk=personal.pk, is_active=True).exists()  # every user keeps one
    assert not Partition.objects.filter(pk=apollo.pk).exists()
    assert not Blob.objects.exists() and not [path for path in blob_dir.rglob("*") if path.is_file()]
