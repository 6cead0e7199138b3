"""Claims over REST: list, read, history, and the lifecycle (pin, unpin, expire, retract, correct, erase)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from memory import selectors
from memory.access import Access
from memory.api.base import Endpoint, RequestSerializer
from memory.api.openapi import ClaimOut, count, many, maybe_text, one, shape, text
from memory.api.presenters import claim_json
from memory.models import ClaimKind, ClaimOrigin, ClaimStatus
from memory.services import claims

EXAMPLE = {"claimId": "claim_01kq54zhdye4a94mjmw0wev9jx"}
ClaimPageOut = shape("ClaimPageOut", claims=many(ClaimOut), nextCursor=maybe_text())
OneClaimOut = shape("OneClaimOut", claim=one(ClaimOut))


class ClaimIdIn(RequestSerializer):
    claimId = serializers.CharField(max_length=40)


class ClaimCorrectIn(ClaimIdIn):
    statement = serializers.CharField(max_length=10000)
    value = serializers.JSONField(required=False, allow_null=True, default=None)


class ClaimListIn(RequestSerializer):
    status = serializers.ListField(
        child=serializers.ChoiceField(choices=ClaimStatus.values), required=False, max_length=10
    )
    kind = serializers.ListField(child=serializers.ChoiceField(choices=ClaimKind.values), required=False, max_length=20)
    origin = serializers.ListField(
        child=serializers.ChoiceField(choices=ClaimOrigin.values), required=False, max_length=10
    )
    pinned = serializers.BooleanField(required=False, allow_null=True, default=None)
    needsReverification = serializers.BooleanField(required=False, allow_null=True, default=None)
    subjectId = serializers.CharField(max_length=40, required=False)
    text = serializers.CharField(max_length=500, required=False)
    cursor = serializers.CharField(max_length=500, required=False)
    limit = serializers.IntegerField(default=50, min_value=1, max_value=200)


class ClaimList(Endpoint):
    """Claims newest first; filters: status (default active), kind, origin, pinned, needsReverification,
    subjectId, text."""

    tool = "claim.list"
    response_schema = ClaimPageOut
    request_serializer = ClaimListIn

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        page = selectors.claims_for_access(
            access,
            statuses=data.get("status"),
            kinds=data.get("kind"),
            origins=data.get("origin"),
            pinned=data.get("pinned"),
            needs_reverification=data.get("needsReverification"),
            subject_id=data.get("subjectId"),
            text=data.get("text"),
            cursor=data.get("cursor"),
            limit=data["limit"],
        )
        return {"claims": [claim_json(claim) for claim in page.claims], "nextCursor": page.next_cursor}


class ClaimGet(Endpoint):
    """One claim with its evidence (source, excerpt, message id, authored time)."""

    tool = "claim.get"
    response_schema = OneClaimOut
    request_serializer = ClaimIdIn
    example_request = EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"claim": claim_json(selectors.claim_for_access(access, data["claimId"]))}


class ClaimHistory(Endpoint):
    """Every revision of a claim, oldest first."""

    tool = "claim.history"
    response_schema = shape("ClaimHistoryOut", revisions=many(ClaimOut))
    request_serializer = ClaimIdIn
    example_request = EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        claim = selectors.claim_for_access(access, data["claimId"])
        return {"revisions": [claim_json(revision) for revision in selectors.claim_revisions(claim)]}


class ClaimLifecycle(Endpoint):
    """Base of the one-claim lifecycle calls: claimId in, the claim as it is now out."""

    request_serializer = ClaimIdIn
    response_schema = OneClaimOut
    example_request = EXAMPLE

    def change(self, access: Access, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        return {"claim": claim_json(self.change(access, data))}


class ClaimPin(ClaimLifecycle):
    """Pin a claim (needs `write`): never reaped, ranked higher."""

    tool = "claim.pin"

    def change(self, access: Access, data: dict[str, Any]) -> Any:
        return claims.claim_pin(access=access, claim_id=data["claimId"])


class ClaimUnpin(ClaimLifecycle):
    """Unpin a claim (needs `write`)."""

    tool = "claim.unpin"

    def change(self, access: Access, data: dict[str, Any]) -> Any:
        return claims.claim_unpin(access=access, claim_id=data["claimId"])


class ClaimExpire(ClaimLifecycle):
    """No longer current (needs `edit`); kept in history."""

    tool = "claim.expire"

    def change(self, access: Access, data: dict[str, Any]) -> Any:
        return claims.claim_expire(access=access, claim_id=data["claimId"])


class ClaimRetract(ClaimLifecycle):
    """Never true (needs `edit`); kept in history."""

    tool = "claim.retract"

    def change(self, access: Access, data: dict[str, Any]) -> Any:
        return claims.claim_retract(access=access, claim_id=data["claimId"])


class ClaimConfirm(ClaimLifecycle):
    """Vouch for a claim (needs `edit`): a suggested or quarantined claim becomes active, and
    `needsReverification` is lifted."""

    tool = "claim.confirm"

    def change(self, access: Access, data: dict[str, Any]) -> Any:
        return claims.claim_confirm(access=access, claim_id=data["claimId"])


class ClaimCorrect(ClaimLifecycle):
    """A corrected revision (needs `edit`); the old one is superseded and stays in history."""

    tool = "claim.correct"
    request_serializer = ClaimCorrectIn
    example_request = {**EXAMPLE, "statement": "Prefers morning meetings before 10:00."}

    def change(self, access: Access, data: dict[str, Any]) -> Any:
        return claims.claim_correct(
            access=access, claim_id=data["claimId"], statement=data["statement"], value=data["value"]
        )


class ClaimDelete(Endpoint):
    """Erase a claim with all its revisions (needs `edit`)."""

    tool = "claim.delete"
    response_schema = shape("ClaimErasedOut", claimId=text(), erasedRevisions=count())
    request_serializer = ClaimIdIn
    example_request = EXAMPLE

    def handle(self, access: Access, data: dict[str, Any]) -> dict[str, Any]:
        erased = claims.claim_erase(access=access, claim_id=data["claimId"])
        return {"claimId": data["claimId"], "erasedRevisions": erased}
