"""The extractor contract: what an extractor reads and the candidates it proposes. Extractors never write."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class TextUnit:
    """One piece of text to read: a message or a chunk, with who said it and when."""

    source_id: str
    text: str
    speaker: str = ""
    role: str = ""  # "user" for the memory's owner, "assistant", or another participant
    message_id: str = ""
    authored_at: datetime | None = None
    chunk_id: str | None = None
    attachment: bool = False  # a document or file (capped harder in an LLM prompt), not a conversation turn

    @property
    def by_owner(self) -> bool:
        return self.role in ("user", "")


@dataclass(frozen=True)
class NodeRef:
    type: str
    label: str
    is_self: bool = False


SELF = NodeRef(type="Self", label="me", is_self=True)


@dataclass(frozen=True)
class EvidenceRef:
    source_id: str
    excerpt: str
    message_id: str = ""
    authored_at: datetime | None = None
    chunk_id: str | None = None


@dataclass(frozen=True)
class ClaimCandidate:
    statement: str
    kind: str
    subject: NodeRef
    evidence: EvidenceRef
    predicate: str = ""
    object_node: NodeRef | None = None
    object_value: Any = None
    origin: str = "user_stated"
    confidence: float = 0.9
    importance: int = 3
    reason: str = ""
    expires_in_days: int | None = None


@dataclass(frozen=True)
class TaskCandidate:
    """A commitment: a new task, or a change to a matching open one (status, due date)."""

    label: str
    evidence: EvidenceRef
    owner: NodeRef | None = None
    due_on: date | None = None
    due_removed: bool = False
    status: str = "pending"
    origin: str = "user_stated"
    rescheduled: bool = False  # a new day for an open task named elsewhere; never a new task
    people: tuple[NodeRef, ...] = ()  # named in the commitment besides its owner ("send the spec to Marcel")


@dataclass(frozen=True)
class ReadingCandidate:
    """A numeric reading of the owner ("weighed 78.2 kg"), in the metric's canonical unit."""

    metric: str  # slug, e.g. body_weight
    value: float
    unit: str
    evidence: EvidenceRef
    occurred_at: datetime | None = None


@dataclass
class Extraction:
    claims: list[ClaimCandidate] = field(default_factory=list)
    tasks: list[TaskCandidate] = field(default_factory=list)
    people: list[NodeRef] = field(default_factory=list)
    readings: list[ReadingCandidate] = field(default_factory=list)
    # Why an extractor produced nothing it could vouch for (an LLM timeout, invalid output); empty when fine.
    failure: str = ""

    def extend(self, other: Extraction) -> None:
        self.claims.extend(other.claims)
        self.tasks.extend(other.tasks)
        self.people.extend(other.people)
        self.readings.extend(other.readings)

    @property
    def size(self) -> int:
        return len(self.claims) + len(self.tasks) + len(self.readings)


class Extractor(Protocol):
    name: str
    version: str

    def extract(self, units: list[TextUnit], *, timezone_name: str = "UTC") -> Extraction:
        """Candidates for these units. Must not raise on odd text: return fewer candidates instead."""
        ...
