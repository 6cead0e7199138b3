"""The atlas: stable personal context for the start of a session (seeds/000 `/query/atlas`), within a size
budget. Pinned claims first, then what the user said about themselves (most important, then newest), then
current working context. Cached per owner and partitions under the owner's memory version, which every
committed change to what it reads moves on (memory.services.audit), so a stale atlas is never served."""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q, QuerySet
from django.utils import timezone
from redis.exceptions import RedisError

from memory.access import Access
from memory.models import Claim, ClaimKind, ClaimStatus, Scope, SourceScope, vector_fields
from memory.services.audit import memory_version

logger = logging.getLogger("memory.recall")
ABOUT_KINDS = (
    ClaimKind.PREFERENCE, ClaimKind.FACT, ClaimKind.RULE, ClaimKind.DECISION, ClaimKind.AGREEMENT,
    ClaimKind.PROJECT_CONTEXT,
)  # fmt: skip
CACHE_SECONDS = 24 * 3600


def current_claims(access: Access) -> QuerySet[Claim]:
    """Active personal claims in the partitions this request reads, unexpired or pinned."""
    now = timezone.now()
    return (
        Claim.objects.filter(
            owner=access.user, partition__in=access.read_partitions, status=ClaimStatus.ACTIVE,
            scope=SourceScope.PERSONAL,
        )
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now) | Q(pinned=True))  # pinned never expire
        .defer(*vector_fields())
    )  # fmt: skip


def atlas_sections(access: Access) -> list[tuple[str, list[Claim]]]:
    claims = current_claims(access).select_related("subject").defer(*vector_fields("subject"))
    pinned = list(claims.filter(pinned=True).order_by("-importance", "-recorded_at")[:50])
    about = list(
        claims.filter(pinned=False, subject__is_self=True, kind__in=ABOUT_KINDS, key="").order_by(
            "-importance", "-stated_at", "-recorded_at"
        )[:200]
    )
    now = list(claims.filter(pinned=False, kind=ClaimKind.WORKING_CONTEXT).order_by("-stated_at", "-recorded_at")[:20])
    return [("Pinned", pinned), ("About the user", about), ("Current context", now)]


def build_atlas(access: Access) -> str:
    budget = settings.ATLAS_MAX_CHARS
    lines: list[str] = []
    used = 0
    for title, claims in atlas_sections(access):
        if not claims:
            continue
        heading = f"{title}:"
        for claim in claims:
            line = f"- {claim.statement}"
            cost = len(line) + 1 + (len(heading) + 1 if heading else 0)
            if used + cost > budget:
                break
            if heading:
                lines.append(heading)
                heading = ""
            lines.append(line)
            used += cost
    return "\n".join(lines)


def _cache_key(access: Access) -> str:
    version = memory_version(access.user.pk)
    partitions = ",".join(sorted(partition.pk for partition in access.read_partitions))
    digest = hashlib.sha256(f"{partitions}|{settings.ATLAS_MAX_CHARS}".encode()).hexdigest()[:16]
    return f"atlas:{access.user.pk}:{digest}:{version}"


def atlas(access: Access) -> str:
    access.require_scope(Scope.READ)
    try:
        key = _cache_key(access)
        cached = cache.get(key)
    except RedisError:
        logger.warning("recall.cache_unavailable")
        return build_atlas(access)
    if cached is not None:
        return str(cached)
    text = build_atlas(access)
    try:
        cache.set(key, text, CACHE_SECONDS)
    except RedisError:
        logger.warning("recall.cache_unavailable")
    return text
