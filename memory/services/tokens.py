"""Access tokens: issue (secret shown once), authenticate, rotate, revoke."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory.access import Actor
from memory.credentials import Gate, token_checked, token_use_written
from memory.errors import AuthenticationError, ValidationFailed
from memory.models import AccessToken, Partition, Scope, Surface, ToolProfile, User
from memory.services.audit import audit_record
from memory.services.partitions import validate_partition_key

SECRET_PREFIX = "mem_"  # noqa: S105 (a marker that makes leaked secrets easy to scan for)
DISPLAY_PREFIX_LENGTH = 12


@dataclass(frozen=True)
class IssuedToken:
    """A token and its secret. The secret exists only here: it is never stored or shown again."""

    token: AccessToken
    secret: str


def hash_secret(secret: str) -> str:
    # Secrets carry 240 bits of randomness, so a plain SHA-256 is enough; no per-token salt to look up.
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(30)


def _token_summary(token: AccessToken) -> dict[str, object]:
    return {
        "label": token.label,
        "prefix": token.prefix,
        "surface": token.surface,
        "scopes": list(token.scopes),
        "partitionKeys": list(token.partition_keys),
        "profile": token.profile,
    }


def token_settings_validate(
    *,
    scopes: list[str],
    surface: str,
    profile: str,
    partition_keys: list[str],
    default_partition_key: str,
    acts_for_count: int,
    expires_at: datetime | None = None,
) -> None:
    """Raise ValidationFailed (details per field) unless these settings make a usable token."""
    errors: dict[str, list[str]] = {}
    if expires_at is not None and expires_at <= timezone.now():
        errors["expiresAt"] = ["The expiry must be in the future (leave it empty for a token that does not expire)."]
    unknown = sorted(set(scopes) - set(Scope.values))
    if unknown or not scopes:
        errors["scopes"] = [f"Scopes must be a non-empty subset of {', '.join(Scope.values)}; got {scopes}."]
    if surface not in Surface.values:
        errors["surface"] = [f"Surface must be one of {', '.join(Surface.values)}."]
    if profile not in ToolProfile.values:
        errors["profile"] = [f"Profile must be one of {', '.join(ToolProfile.values)}."]
    for key in [*partition_keys, *([default_partition_key] if default_partition_key else [])]:
        try:
            validate_partition_key(key)
        except ValidationFailed:
            errors.setdefault("partitionKeys", []).append(f"Invalid partition key: {key!r}.")
    if default_partition_key and partition_keys and default_partition_key not in partition_keys:
        errors["defaultPartitionKey"] = ["The default partition must be one of the allowed partitions."]
    if surface == Surface.HOST and not acts_for_count:
        errors["actsFor"] = ["A chat host token needs the users it may act for."]
    if errors:
        raise ValidationFailed("The token settings are invalid.", details=errors)


@transaction.atomic
def token_issue(
    *,
    actor: Actor,
    owner: User,
    label: str,
    scopes: Iterable[str] = (Scope.READ, Scope.WRITE),
    surface: str = Surface.REST,
    profile: str = ToolProfile.ASSISTANT,
    partition_keys: Iterable[str] = (),
    default_partition_key: str = "",
    allow_query_token: bool = False,
    acts_for: Iterable[User] = (),
    expires_at: datetime | None = None,
    rate_limit_per_minute: int | None = None,
) -> IssuedToken:
    """Mint a token for `owner`. A host token (surface `host`) acts only for the users in `acts_for`."""
    scopes, partition_keys, acts_for = list(dict.fromkeys(scopes)), list(partition_keys), list(acts_for)
    token_settings_validate(
        scopes=scopes,
        surface=surface,
        profile=profile,
        partition_keys=partition_keys,
        default_partition_key=default_partition_key,
        acts_for_count=len(acts_for),
        expires_at=expires_at,
    )
    secret = _new_secret()
    token = AccessToken.objects.create(
        owner=owner,
        label=label,
        surface=surface,
        secret_hash=hash_secret(secret),
        prefix=secret[:DISPLAY_PREFIX_LENGTH],
        scopes=scopes,
        partition_keys=partition_keys,
        default_partition_key=default_partition_key,
        profile=profile,
        allow_query_token=allow_query_token,
        expires_at=expires_at,
        rate_limit_per_minute=rate_limit_per_minute,
    )
    if acts_for:
        token.acts_for.set(acts_for)
    audit_record(actor=actor, owner=owner, action="token.issue", target=token, after=_token_summary(token))
    return IssuedToken(token=token, secret=secret)


@transaction.atomic
def token_issue_own(
    *,
    actor: Actor,
    owner: User,
    label: str,
    scopes: Iterable[str],
    profile: str,
    partition_keys: Iterable[str] = (),
    allow_query_token: bool = False,
    expires_at: datetime | None = None,
) -> IssuedToken:
    """A person mints an MCP token for themself (web UI): only their own partitions, never a host token."""
    partition_keys = list(partition_keys)
    owned = set(Partition.objects.filter(owner=owner, key__in=partition_keys).values_list("key", flat=True))
    strangers = [key for key in partition_keys if key not in owned]
    if strangers:
        raise ValidationFailed(
            "A token can only reach your own partitions.",
            details={"partitionKeys": [f"Not one of your partitions: {', '.join(strangers)}."]},
        )
    if not label.strip():
        raise ValidationFailed("The token needs a label.", details={"label": ["Name the client, e.g. 'Laptop'."]})
    return token_issue(
        actor=actor,
        owner=owner,
        label=label.strip(),
        scopes=scopes,
        surface=Surface.MCP,
        profile=profile,
        partition_keys=partition_keys,
        # A token narrowed to some partitions starts in the first of them (memory:personal may be out of reach).
        default_partition_key=partition_keys[0] if partition_keys else "",
        allow_query_token=allow_query_token,
        expires_at=expires_at,
    )


@transaction.atomic
def token_revoke(*, actor: Actor, token: AccessToken) -> AccessToken:
    """Revoke a token; the next request made with it is refused. Idempotent."""
    token = AccessToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor, owner=token.owner, action="token.revoke", target=token, after={"prefix": token.prefix}
        )
    return token


@transaction.atomic
def token_rotate(*, actor: Actor, token: AccessToken) -> IssuedToken:
    """Issue a new secret with the same settings and revoke the old token at once."""
    old = AccessToken.objects.select_for_update().get(pk=token.pk)
    if old.revoked_at is not None:
        raise ValidationFailed("A revoked token cannot be rotated; issue a new one.", details={"tokenId": old.pk})
    issued = token_issue(
        actor=actor,
        owner=old.owner,
        label=old.label,
        scopes=old.scopes,
        surface=old.surface,
        profile=old.profile,
        partition_keys=old.partition_keys,
        default_partition_key=old.default_partition_key,
        allow_query_token=old.allow_query_token,
        acts_for=old.acts_for.all(),
        expires_at=old.expires_at,
        rate_limit_per_minute=old.rate_limit_per_minute,
    )
    issued.token.rotated_from = old
    issued.token.save(update_fields=["rotated_from"])
    token_revoke(actor=actor, token=old)
    return issued


def token_for_secret(secret: str, *, via_query: bool = False) -> AccessToken:
    """The usable token for a presented secret, or AuthenticationError with the precise reason."""
    return token_call_for_secret(secret, via_query=via_query, count_call=False)[0]


def token_call_for_secret(secret: str, *, via_query: bool, count_call: bool) -> tuple[AccessToken, Gate | None]:
    """The usable token for a presented secret and, with `count_call`, the verdict of its rate window when it
    could be had in the same round trip (memory.credentials); AuthenticationError with the precise reason."""
    checked = token_checked(digest=hash_secret(secret), count_call=count_call) if secret else None
    return token_usable(checked.token if checked else None, via_query=via_query), checked.verdict if checked else None


def token_call_for_id(token_id: str, *, count_call: bool) -> tuple[AccessToken, Gate | None]:
    """The same for a token already resolved by id (an MCP call in a session): as it is now, revoked or not."""
    checked = token_checked(token_id=token_id, count_call=count_call)
    return token_usable(checked.token), checked.verdict


def token_usable(token: AccessToken | None, *, via_query: bool = False) -> AccessToken:
    """The token if it may be used now (a long-lived MCP session asks again on every call)."""
    if token is None:
        raise AuthenticationError("The access token is not valid.", code="TOKEN_INVALID")
    if token.revoked_at is not None:
        raise AuthenticationError("The access token was revoked.", code="TOKEN_REVOKED")
    if token.is_expired:
        raise AuthenticationError("The access token has expired.", code="TOKEN_EXPIRED")
    if via_query and not token.allow_query_token:
        raise AuthenticationError("This token may not be sent as a query parameter.", code="QUERY_TOKEN_NOT_ALLOWED")
    if not token.owner.is_active:
        raise AuthenticationError("The owner of this token is deactivated.", code="TOKEN_INVALID")
    return token


def token_touch(token: AccessToken) -> None:
    """Record use, at most once per TOKEN_LAST_USED_RESOLUTION_S, with one conditional UPDATE."""
    now = timezone.now()
    threshold = now - timedelta(seconds=settings.TOKEN_LAST_USED_RESOLUTION_S)
    if token.last_used_at is not None and token.last_used_at > threshold:
        return
    updated = AccessToken.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=threshold), pk=token.pk
    ).update(last_used_at=now)
    if updated:
        token.last_used_at = now
    token_use_written(token, now)  # written now, or by another process within the minute
