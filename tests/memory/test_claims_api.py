"""Claims: listing with filters, evidence, history, and the lifecycle, each audited and kept in history."""

from __future__ import annotations

import pytest

from memory.models import Claim, Evidence, MemoryEvent
from tests.conftest import Api, Persona, error_code, issue
from tests.factories import ClaimFactory, NodeFactory, PartitionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def preference(alice) -> Claim:
    marcel = NodeFactory.create(owner=alice, label="Marcel")
    claim = ClaimFactory.create(owner=alice, statement="Prefers morning meetings.", subject=marcel, importance=4)
    from memory.access import access_for_user
    from memory.services.ingestion import DocumentIn, ingest_document  # a real source for the evidence

    receipt = ingest_document(
        access=access_for_user(user=alice), document=DocumentIn(id="d", content="I prefer mornings.")
    )
    Evidence.objects.create(
        owner=alice, claim=claim, source=receipt.source, excerpt="I prefer mornings.", message_id="m1"
    )
    return claim


def test_the_owner_reads_a_claim_with_its_evidence(api: Api, owner: Persona, preference: Claim) -> None:
    claim = api.post("/claim/get", owner, {"claimId": preference.pk}).json()["claim"]
    assert (claim["statement"], claim["status"], claim["subject"]["label"]) == (
        "Prefers morning meetings.",
        "active",
        "Marcel",
    )
    assert claim["evidence"] == [
        {
            "sourceId": preference.evidence.get().source_id,
            "excerpt": "I prefer mornings.",
            "messageId": "m1",
            "authoredAt": None,
        }
    ]


def test_listing_filters_by_status_kind_origin_pinned_subject_and_text(
    api: Api, owner: Persona, alice, preference: Claim
) -> None:
    ClaimFactory.create(
        owner=alice, statement="Decided to use PostgreSQL.", kind="decision", origin="assistant_inferred"
    )
    ClaimFactory.create(owner=alice, statement="Old view.", status="superseded")
    ClaimFactory.create(owner=alice, statement="Pinned rule.", kind="rule", pinned=True)

    def statements(body: dict) -> list[str]:
        response = api.post("/claim/list", owner, body)
        assert response.status_code == 200, response.content
        return [claim["statement"] for claim in response.json()["claims"]]

    assert "Old view." not in statements({})
    assert statements({"status": ["superseded"]}) == ["Old view."]
    assert statements({"kind": ["decision"]}) == ["Decided to use PostgreSQL."]
    assert statements({"origin": ["assistant_inferred"]}) == ["Decided to use PostgreSQL."]
    assert statements({"pinned": True}) == ["Pinned rule."]
    assert statements({"subjectId": preference.subject_id}) == ["Prefers morning meetings."]
    assert statements({"text": "postgresql"}) == ["Decided to use PostgreSQL."]


def test_listing_pages_with_a_cursor(api: Api, owner: Persona, alice) -> None:
    for n in range(5):
        ClaimFactory.create(owner=alice, statement=f"Fact {n}.")
    first = api.post("/claim/list", owner, {"limit": 3}).json()
    second = api.post("/claim/list", owner, {"limit": 3, "cursor": first["nextCursor"]}).json()
    seen = [c["claimId"] for c in first["claims"] + second["claims"]]
    assert len(seen) == len(set(seen)) == 5
    assert second["nextCursor"] is None


def test_pin_and_unpin_are_audited(api: Api, owner: Persona, preference: Claim) -> None:
    assert api.post("/claim/pin", owner, {"claimId": preference.pk}).json()["claim"]["pinned"] is True
    assert api.post("/claim/unpin", owner, {"claimId": preference.pk}).json()["claim"]["pinned"] is False
    actions = MemoryEvent.objects.filter(target_id=preference.pk).order_by("created_at")
    assert list(actions.values_list("action", flat=True)) == ["claim.pin", "claim.unpin"]


def test_a_correction_is_a_new_revision_and_history_keeps_the_old(api: Api, owner: Persona, preference: Claim) -> None:
    response = api.post(
        "/claim/correct", owner, {"claimId": preference.pk, "statement": "Prefers meetings before 10:00."}
    )
    assert response.status_code == 200
    new = response.json()["claim"]
    assert (new["origin"], new["derivedFrom"], new["status"]) == ("manual", preference.pk, "active")
    old = Claim.objects.get(pk=preference.pk)
    assert (old.status, old.superseded_by_id, old.statement) == (
        "superseded",
        new["claimId"],
        "Prefers morning meetings.",
    )
    history = api.post("/claim/history", owner, {"claimId": new["claimId"]}).json()["revisions"]
    assert [r["statement"] for r in history] == ["Prefers morning meetings.", "Prefers meetings before 10:00."]
    again = api.post("/claim/correct", owner, {"claimId": preference.pk, "statement": "x"})
    assert error_code(again) == "CONFLICT"


def test_expire_and_retract_keep_the_claim(api: Api, owner: Persona, alice) -> None:
    first, second = ClaimFactory.create(owner=alice), ClaimFactory.create(owner=alice)
    assert api.post("/claim/expire", owner, {"claimId": first.pk}).json()["claim"]["status"] == "expired"
    assert api.post("/claim/retract", owner, {"claimId": second.pk}).json()["claim"]["status"] == "retracted"
    assert Claim.objects.filter(pk__in=[first.pk, second.pk]).count() == 2


def test_a_pinned_claim_does_not_expire(api: Api, owner: Persona, alice) -> None:
    pinned = ClaimFactory.create(owner=alice, pinned=True)
    assert error_code(api.post("/claim/expire", owner, {"claimId": pinned.pk})) == "CONFLICT"


def test_erasure_removes_every_revision_and_its_audit_content(api: Api, owner: Persona, preference: Claim) -> None:
    new = api.post("/claim/correct", owner, {"claimId": preference.pk, "statement": "Prefers 9:00."}).json()["claim"]
    response = api.post("/claim/delete", owner, {"claimId": new["claimId"]})
    assert response.json() == {"claimId": new["claimId"], "erasedRevisions": 2}
    assert not Claim.objects.exists()
    assert not Evidence.objects.exists()
    assert not MemoryEvent.objects.filter(after__icontains="Prefers").exists()


def test_lifecycle_scopes(api: Api, alice) -> None:
    claim = ClaimFactory.create(owner=alice)
    reader = issue(alice, "reader", scopes=["read"])
    writer = issue(alice, "writer", scopes=["read", "write"])
    assert error_code(api.post("/claim/pin", reader, {"claimId": claim.pk})) == "SCOPE_REQUIRED"
    assert api.post("/claim/pin", writer, {"claimId": claim.pk}).status_code == 200
    for path in ["/claim/expire", "/claim/retract", "/claim/delete", "/claim/confirm"]:
        assert error_code(api.post(path, writer, {"claimId": claim.pk})) == "SCOPE_REQUIRED", path
    body = {"claimId": claim.pk, "statement": "x"}
    assert error_code(api.post("/claim/correct", writer, body)) == "SCOPE_REQUIRED"


def test_another_user_and_other_partitions_reach_nothing(api: Api, other: Persona, alice) -> None:
    apollo = PartitionFactory(owner=alice, key="project:apollo")
    claim = ClaimFactory.create(owner=alice, partition=apollo)
    paths = ["/claim/get", "/claim/history", "/claim/pin", "/claim/expire", "/claim/retract", "/claim/delete",
             "/claim/confirm"]  # fmt: skip
    for path in paths:
        assert error_code(api.post(path, other, {"claimId": claim.pk})) == "NOT_FOUND", path
    assert api.post("/claim/list", other).json()["claims"] == []
    limited = issue(alice, "limited", scopes=["read", "write", "edit"], partition_keys=["memory:personal"])
    assert error_code(api.post("/claim/get", limited, {"claimId": claim.pk})) == "NOT_FOUND"
    assert Claim.objects.get(pk=claim.pk).status == "active"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": ["gone"]}, "status"),
        ({"limit": 0}, "limit"),
        ({"pinned": "maybe"}, "pinned"),
        ({"kind": "fact"}, "kind"),
    ],
)
def test_malformed_list_requests(api: Api, owner: Persona, body: dict, field: str) -> None:
    response = api.post("/claim/list", owner, body)
    assert response.status_code == 400
    assert field in response.json()["error"]["details"]


def test_an_empty_correction_is_refused(api: Api, owner: Persona, alice) -> None:
    claim = ClaimFactory.create(owner=alice)
    assert (
        error_code(api.post("/claim/correct", owner, {"claimId": claim.pk, "statement": "   "})) == "VALIDATION_ERROR"
    )


@pytest.mark.parametrize("status", ["suggested", "quarantined"])
def test_confirming_a_claim_under_review_makes_it_active(api: Api, owner: Persona, alice, status: str) -> None:
    claim = ClaimFactory.create(owner=alice, status=status, needs_reverification=True)
    answer = api.post("/claim/confirm", owner, {"claimId": claim.pk}).json()["claim"]
    assert (answer["status"], answer["needsReverification"]) == ("active", False)
    event = MemoryEvent.objects.get(action="claim.confirm", target_id=claim.pk)
    assert event.before == {"status": status, "needs_reverification": "True"}


def test_a_superseded_claim_cannot_be_confirmed(api: Api, owner: Persona, alice) -> None:
    claim = ClaimFactory.create(owner=alice, status="superseded")
    assert error_code(api.post("/claim/confirm", owner, {"claimId": claim.pk})) == "CONFLICT"
    assert Claim.objects.get(pk=claim.pk).status == "superseded"


def test_listing_claims_that_need_reverification(api: Api, owner: Persona, alice) -> None:
    flagged = ClaimFactory.create(owner=alice, needs_reverification=True)
    ClaimFactory.create(owner=alice)
    listed = api.post("/claim/list", owner, {"needsReverification": True}).json()["claims"]
    assert [claim["claimId"] for claim in listed] == [flagged.pk]
