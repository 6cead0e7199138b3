"""The access context: who is asking, for whom, and which partitions a request may touch (SPEC §4).

`access_for_token` / `access_for_user` are the only places an `Access` is built. Every selector and
service takes one and asks it, never the request, what is in reach.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memory.credentials import partitions_keep, partitions_of, token_generation
from memory.errors import AuthenticationError, NotFound, PartitionInactive, ScopeRequired, ValidationFailed
from memory.models import AccessToken, ActorKind, ChangeSurface, Partition, Scope, User
from memory.models.accounts import PERSONAL_PARTITION_KEY

WORKSPACE_HEADER = "x-memory-access-scope"


def workspace_requested(header: str | None) -> bool:
    """Whether the access-scope header asks for workspace reads; anything but strict/workspace is an error
    (REST and MCP alike)."""
    scope = (header or "strict").strip().lower()
    if scope not in ("strict", "workspace"):
        raise ValidationFailed(
            f"The {WORKSPACE_HEADER} header must be 'strict' or 'workspace'.",
            details={WORKSPACE_HEADER: [f"Unknown access scope {scope!r}."]},
        )
    return scope == "workspace"


@dataclass(frozen=True)
class Actor:
    """Who performs a change, and through which surface (ChangeSurface), as recorded in the audit trail."""

    kind: str
    user: User | None = None
    token: AccessToken | None = None
    surface: str = ChangeSurface.UNKNOWN

    @classmethod
    def system(cls) -> Actor:
        return cls(kind=ActorKind.SYSTEM, surface=ChangeSurface.PIPELINE)

    @classmethod
    def person(cls, user: User, surface: str = ChangeSurface.UNKNOWN) -> Actor:
        return cls(kind=ActorKind.USER, user=user, surface=surface)

    @classmethod
    def admin(cls, user: User) -> Actor:
        """A staff member acting from the Django admin."""
        return cls(kind=ActorKind.USER, user=user, surface=ChangeSurface.ADMIN)


@dataclass(frozen=True)
class Access:
    """What one request may reach.

    `partition` is the strict partition: the only one a strict request touches and the target of every
    write. `read_partitions` is what reads span: the strict partition, or in workspace mode every active
    partition in reach. `partition` is None only for a workspace read whose default partition is missing.
    """

    user: User
    token: AccessToken | None
    scopes: frozenset[str]
    partition: Partition | None
    read_partitions: tuple[Partition, ...]
    workspace: bool
    reachable_keys: frozenset[str] | None = field(default=None)  # None: every partition of the user
    acting: Actor | None = None  # who acts, when not the user or token itself (an admin)
    surface: str = ChangeSurface.UNKNOWN  # the entry point that built this access (REST, MCP, web UI)

    @property
    def actor(self) -> Actor:
        if self.acting is not None:
            return self.acting
        if self.token is not None:
            return Actor(kind=ActorKind.TOKEN, user=self.token.owner, token=self.token, surface=self.surface)
        return Actor.person(self.user, surface=self.surface)

    @property
    def read_partition_ids(self) -> list[str]:
        return [partition.id for partition in self.read_partitions]

    def require_scope(self, scope: str) -> None:
        if scope not in self.scopes:
            raise ScopeRequired(scope)

    def can_reach(self, partition: Partition) -> bool:
        return partition.owner_id == self.user.pk and (
            self.reachable_keys is None or partition.key in self.reachable_keys
        )

    def write_partition(self) -> Partition:
        """The partition new content goes to: always the strict one, and it must be active."""
        if self.partition is None:
            raise NotFound("The default partition of this token does not exist.")
        self.check_write(self.partition)
        return self.partition

    def check_write(self, partition: Partition) -> None:
        """Strict write check for an object's real partition (resolved by the caller)."""
        if not self.can_reach(partition):
            raise NotFound("Not found.")
        if not partition.is_active:
            raise PartitionInactive(
                f"Partition '{partition.key}' is inactive.", details={"partitionKey": partition.key}
            )


def access_for_token(
    *,
    token: AccessToken,
    user_id: str | None,
    partition_key: str | None,
    workspace: bool,
    surface: str = ChangeSurface.UNKNOWN,
) -> Access:
    """Resolve the user a token acts for and the partitions it may touch for this request (`surface`: the
    entry point, recorded with every change made through it)."""
    user = _user_for_token(token, user_id)
    keys = frozenset(token.partition_keys) if token.partition_keys else None
    default_key = token.default_partition_key or PERSONAL_PARTITION_KEY
    access = _build(
        user=user,
        token=token,
        generation=token_generation(token),
        scopes=frozenset(token.scopes),
        reachable_keys=keys,
        partition_key=partition_key,
        default_key=default_key,
        workspace=workspace,
    )
    return replace(access, surface=surface)


def access_for_user(
    *,
    user: User,
    partition_key: str | None = None,
    workspace: bool = False,
    acting: Actor | None = None,
    surface: str = ChangeSurface.UNKNOWN,
) -> Access:
    """Access for a signed-in person in the web UI (every scope, every partition they own), or for an admin
    acting on that person's memory (`acting` is then recorded as the actor)."""
    access = _build(
        user=user,
        token=None,
        scopes=frozenset(Scope.values),
        reachable_keys=None,
        partition_key=partition_key,
        default_key=PERSONAL_PARTITION_KEY,
        workspace=workspace,
    )
    return replace(access, acting=acting, surface=acting.surface if acting else surface)


def _user_for_token(token: AccessToken, user_id: str | None) -> User:
    if token.is_host:
        if not user_id:
            raise ValidationFailed(
                "A chat host token must name the user it acts for.", details={"userId": ["This field is required."]}
            )
        user = token.acts_for.filter(external_id=user_id, is_active=True).first()
        if user is None:
            raise NotFound("No such user for this token.", details={"userId": user_id})
        return user
    owner = token.owner
    if not owner.is_active:
        raise AuthenticationError("The owner of this token is deactivated.", code="TOKEN_INVALID")
    if user_id and user_id != owner.external_id:
        raise NotFound("No such user for this token.", details={"userId": user_id})
    return owner


def _partitions(user: User) -> list[Partition]:
    partitions = list(Partition.objects.filter(owner=user))
    if not any(partition.key == PERSONAL_PARTITION_KEY for partition in partitions):
        # users created before partitions existed
        partitions.append(
            Partition.objects.get_or_create(owner=user, key=PERSONAL_PARTITION_KEY, defaults={"label": "Personal"})[0]
        )
    return partitions


def _build(
    *,
    user: User,
    token: AccessToken | None,
    scopes: frozenset[str],
    reachable_keys: frozenset[str] | None,
    partition_key: str | None,
    default_key: str,
    workspace: bool,
    generation: str | None = None,
) -> Access:
    # Kept in this process under the generation the token was checked under (memory.credentials).
    known = partitions_of(user, generation)
    partitions = {partition.key: partition for partition in (known if known is not None else _partitions(user))}
    if known is None:
        partitions_keep(user, generation, list(partitions.values()))
    in_reach = {
        key: partition for key, partition in partitions.items() if reachable_keys is None or key in reachable_keys
    }
    strict_key = partition_key or default_key
    strict = in_reach.get(strict_key)
    if partition_key and strict is None:
        raise NotFound("No such partition.", details={"partitionKey": partition_key})
    if workspace and not partition_key:
        reads = tuple(p for key, p in sorted(in_reach.items()) if p.is_active)
    else:
        if strict is None:
            raise NotFound("The default partition of this token does not exist.", details={"partitionKey": strict_key})
        reads = (strict,)
    return Access(
        user=user,
        token=token,
        scopes=scopes,
        partition=strict,
        read_partitions=reads,
        workspace=workspace and not partition_key,
        reachable_keys=reachable_keys,
    )
