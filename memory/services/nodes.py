"""Nodes and aliases: rename, describe, delete, merge (preview, then apply), and names to match by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from memory.access import Access
from memory.errors import Conflict, ValidationFailed
from memory.models import Alias, Claim, ClaimStatus, Evidence, Node, Scope
from memory.names import normalize_name
from memory.selectors import node_for_access
from memory.services.audit import audit_erase_target, audit_record
from memory.services.claim_erasure import claim_lineage, claims_erase
from memory.services.embeddings import vectors_follow


def _write_access(access: Access, node_id: str, scope: str = Scope.WRITE) -> Node:
    access.require_scope(scope)
    node = node_for_access(access, node_id, for_update=True)
    access.check_write(node.partition)
    return node


@transaction.atomic
def node_update(
    *, access: Access, node_id: str, label: str | None = None, summary: str | None = None,
    attributes: dict[str, Any] | None = None,
) -> Node:  # fmt: skip
    """Rename or describe a node; an old label stays findable as an alias."""
    node = _write_access(access, node_id)
    changes = {"label": label, "summary": summary, "attributes": attributes}
    changed = {name: value for name, value in changes.items() if value is not None and getattr(node, name) != value}
    if "label" in changed and not str(changed["label"]).strip():
        raise ValidationFailed("A label cannot be empty.", details={"label": ["Required."]})
    if not changed:
        return node
    before = {name: getattr(node, name) for name in changed}
    if "label" in changed:
        _alias_add(access, node, node.label)
    for name, value in changed.items():
        setattr(node, name, value)
    stale = ["embedding", "embedding_model"] if {"label", "summary"} & set(changed) else []
    node.embedding, node.embedding_model = (None, "") if stale else (node.embedding, node.embedding_model)
    node.save(update_fields=[*changed, *stale, "updated_at"])
    if stale:
        vectors_follow(access.user.pk)
    audit_record(
        actor=access.actor, owner=access.user, action="node.update", target=node, partition=node.partition,
        before=before, after=changed,
    )  # fmt: skip
    return node


def _claims_touching(node: Node) -> list[Claim]:
    return list(Claim.objects.filter(Q(subject=node) | Q(object_node=node)))


@transaction.atomic
def node_delete(*, access: Access, node_id: str) -> int:
    """Erase a node with the claims about it (every revision) and their audit content; claims about other
    nodes that superseded them stay (`claims_erase`). Returns claims erased.
    The user's self node cannot be deleted."""
    node = _write_access(access, node_id, Scope.EDIT)
    return node_erase(access=access, node=node)


@dataclass(frozen=True)
class NodeDeletion:
    """What `node_delete` would remove: every revision of the claims about the node, its names, the evidence
    links of those claims."""

    node: Node
    claims: list[Claim]
    aliases: int
    evidence: int


def node_delete_preview(*, access: Access, node_id: str) -> NodeDeletion:
    """The web UI's delete confirmation: the same set `node_erase` removes, without removing it."""
    access.require_scope(Scope.EDIT)
    node = node_for_access(access, node_id)
    if node.is_self:
        raise Conflict("The self node cannot be deleted.", details={"nodeId": node.pk})
    doomed = claim_lineage({claim.pk for claim in _claims_touching(node)})
    claims = list(Claim.objects.filter(pk__in=doomed, owner=access.user).order_by("recorded_at", "id"))
    evidence = Evidence.objects.filter(claim__in=claims).count()
    return NodeDeletion(node=node, claims=claims, aliases=node.aliases.count(), evidence=evidence)


@transaction.atomic
def node_erase(*, access: Access, node: Node, action: str = "node.delete", why: dict[str, Any] | None = None) -> int:
    """The one deletion path of a node (node_delete, and the prunes of maintenance/pruning.py, which check
    their own scope): its claims, aliases, evidence links and vectors go, and so does the content of its audit
    rows; one audit row (`action`, with `why`) records the deletion. The caller has locked the node and
    checked the write. Returns claims erased."""
    if node.is_self:
        raise Conflict("The self node cannot be deleted.", details={"nodeId": node.pk})
    touching = {claim.pk for claim in _claims_touching(node)}
    erased = claims_erase(owner=access.user, claim_ids=claim_lineage(touching))
    node_id = node.pk  # delete() clears the instance's pk; the audit row must still name the node
    # Nodes merged into this one are only pointers to it: they go with it, or they would come back to life.
    pointers, reached = [], [node_id]
    while reached:
        reached = list(Node.objects.filter(merged_into_id__in=reached).values_list("pk", flat=True))
        pointers += reached
    for pointer_id in [node_id, *pointers]:
        audit_erase_target(owner=access.user, target_type="node", target_id=pointer_id)
    Node.objects.filter(pk__in=pointers).delete()
    node.delete()
    audit_record(
        actor=access.actor, owner=access.user, action=action, target_type="node", target_id=node_id,
        partition=node.partition, after={"claims": erased, **(why or {})},
    )  # fmt: skip
    return erased


@dataclass(frozen=True)
class MergePlan:
    """What a merge moves: the same numbers whether previewed or applied."""

    source: Node
    target: Node
    claims: int
    aliases: int
    evidence: int
    superseded: int  # the source's current single-valued facts the target already has a value for

    def as_dict(self) -> dict[str, Any]:
        return {
            "sourceNodeId": self.source.pk,
            "targetNodeId": self.target.pk,
            "claims": self.claims,
            "aliases": self.aliases,
            "evidence": self.evidence,
            "superseded": self.superseded,
        }


# A node has one current value of each of these; on a merge the target's value stays current.
ONE_VALUE_PREDICATES = ("HAS_TASK_STATUS", "DUE_ON", "OWNED_BY", "WORKS_AT", "LIVES_IN")


def _displaced(source: Node, target: Node) -> QuerySet[Claim]:
    taken = Claim.objects.filter(subject=target, predicate__in=ONE_VALUE_PREDICATES, status=ClaimStatus.ACTIVE)
    return Claim.objects.filter(subject=source, status=ClaimStatus.ACTIVE, predicate__in=taken.values("predicate"))


def _merge_plan(source: Node, target: Node) -> MergePlan:
    claims = _claims_touching(source)
    return MergePlan(
        source=source,
        target=target,
        claims=len(claims),
        aliases=source.aliases.count() + 1,  # its own label becomes an alias of the target
        evidence=Evidence.objects.filter(claim__in=claims).count(),
        superseded=_displaced(source, target).count(),
    )


@transaction.atomic
def node_merge(*, access: Access, source_id: str, target_id: str, apply: bool = False) -> MergePlan:
    """Merge `source` into `target`: claims, aliases and evidence move; the source stays as a pointer
    (`merged_into`) so old references resolve. Without `apply` nothing changes (preview)."""
    scope = Scope.EDIT if apply else Scope.READ
    source, target = _write_access(access, source_id, scope), _write_access(access, target_id, scope)
    return node_merge_into(access=access, source=source, target=target, apply=apply)


@transaction.atomic
def node_merge_into(*, access: Access, source: Node, target: Node, apply: bool = False) -> MergePlan:
    """The merge itself, for a caller that has checked its scope, locked both nodes and checked the write
    (node_merge, and the dedup sweep of maintenance/pruning.py)."""
    if source.pk == target.pk:
        raise ValidationFailed("A node cannot be merged into itself.", details={"targetNodeId": [target.pk]})
    if source.partition_id != target.partition_id:
        raise Conflict("Nodes of different partitions cannot be merged.", details={"sourceNodeId": source.pk})
    if source.is_self:
        raise Conflict("The self node can only be a merge target.", details={"sourceNodeId": source.pk})
    if source.merged_into_id:
        raise Conflict("This node was already merged.", details={"mergedInto": source.merged_into_id})
    plan = _merge_plan(source, target)
    if not apply:
        return plan
    # First the displaced facts step down (a task keeps one active status at every moment), then all move.
    _displaced(source, target).update(status=ClaimStatus.SUPERSEDED, valid_until=timezone.now())
    Claim.objects.filter(subject=source).update(subject=target)
    Claim.objects.filter(object_node=source).update(object_node=target)
    for alias in list(source.aliases.all()):
        _alias_add(access, target, alias.name)
    source.aliases.all().delete()
    _alias_add(access, target, source.label)
    source.merged_into = target
    source.save(update_fields=["merged_into", "updated_at"])
    audit_record(
        actor=access.actor, owner=access.user, action="node.merge", target=target, partition=target.partition,
        before={"sourceNodeId": source.pk, "label": source.label}, after=plan.as_dict(),
    )  # fmt: skip
    return plan


def _alias_add(access: Access, node: Node, name: str) -> Alias | None:
    normalized = normalize_name(name)
    if not normalized:
        return None
    try:
        with transaction.atomic():
            return Alias.objects.create(
                owner=access.user, partition=node.partition, node=node, name=name.strip(), normalized=normalized
            )
    except IntegrityError:  # the node already answers to that name
        return Alias.objects.filter(node=node, normalized=normalized).first()


@transaction.atomic
def alias_add(*, access: Access, node_id: str, name: str) -> Alias:
    """Teach a node another name (idempotent: an equivalent name is reused)."""
    node = _write_access(access, node_id)
    if not normalize_name(name):
        raise ValidationFailed("An alias cannot be empty.", details={"name": ["Required."]})
    known = Alias.objects.filter(node=node, normalized=normalize_name(name)).first()
    if known is not None:
        return known
    alias = _alias_add(access, node, name)
    assert alias is not None  # the name normalises to something (checked above)
    audit_record(
        actor=access.actor, owner=access.user, action="alias.add", target=node, partition=node.partition,
        after={"alias": alias.name},
    )  # fmt: skip
    return alias


@transaction.atomic
def alias_remove(*, access: Access, node_id: str, name: str) -> int:
    """Forget a name of a node. Returns how many aliases were removed (0 if it had none by that name)."""
    node = _write_access(access, node_id)
    removed, _ = Alias.objects.filter(node=node, normalized=normalize_name(name)).delete()
    if removed:
        audit_record(
            actor=access.actor, owner=access.user, action="alias.remove", target=node, partition=node.partition,
            before={"alias": name},
        )  # fmt: skip
    return removed
