"""The prompt contract of seeds/000: memory rendered as context with provenance, never as user text.

    <assistant_memory as_of="2026-04-26T13:15:00Z">
      <section kind="atlas" usage="...">...</section>
      <section kind="open_commitments" usage="...">...</section>
      <section kind="evidence" usage="...">...</section>
    </assistant_memory>

One renderer for REST and MCP. Every stored text is escaped (`&`, `<`, `>`), so nothing a memory says can
close a section, open a new one or forge the wrapper, whatever got past write-time screening.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from html import escape
from typing import Any

from django.utils import timezone

USAGE = {
    "atlas": "Stable personal context. Prefer current user statements if they conflict.",
    "open_commitments": "Pending or in-progress only. Use this as the only source of pending work; do not "
    "reintroduce completed work as pending or infer pending work from semantic search.",
    "evidence": "Relevant sourced memories for this turn. Use cautiously and mention uncertainty on conflict.",
}


@dataclass(frozen=True)
class CommitmentLine:
    task_id: str
    label: str
    status: str
    owner: str | None = None
    due_on: str | None = None
    source_id: str | None = None


def text(value: Any) -> str:
    """Stored text made inert for the prompt: one line, entities escaped."""
    return escape(" ".join(str(value).split()), quote=False)


def _day(value: datetime | date | None) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat()
    return value.isoformat()


def evidence_line(result: Any) -> str:
    """One search result (memory.recall.search.SearchResult) as a line with its provenance."""
    facts = [result.type]
    if result.kind:
        facts.append(result.kind)
    if result.status != "active":
        facts.append(result.status)
    if result.pinned:
        facts.append("pinned")
    if when := _day(result.time):
        facts.append(when)
    refs = []
    for ref in result.evidence[:2]:
        message = f" message {ref['messageId']}" if ref.get("messageId") else ""
        refs.append(f"source {ref['sourceId']}{message}")
    about = result.node["label"] if result.node and result.type == "claim" and result.node["type"] != "Self" else ""
    provenance = "; ".join([", ".join(facts), *refs])
    return f"- {text(result.text)}{f' (about {text(about)})' if about else ''} [{text(provenance)}]"


def commitment_line(item: CommitmentLine) -> str:
    """`<commitment task_id=… status=… owner=… due_on=… source_id=…>label</commitment>` (seeds/000)."""
    attributes = {
        "task_id": item.task_id, "status": item.status, "owner": item.owner, "due_on": item.due_on,
        "source_id": item.source_id,
    }  # fmt: skip
    shown = " ".join(f'{name}="{escape(str(value), quote=True)}"' for name, value in attributes.items() if value)
    return f"<commitment {shown}>{text(item.label)}</commitment>"


def _section(kind: str, lines: list[str]) -> str:
    body = "\n".join(f"    {line}" for line in lines) if lines else "    (nothing)"
    return f'  <section kind="{kind}" usage="{USAGE[kind]}">\n{body}\n  </section>'


def render_memory(
    *,
    as_of: datetime | None = None,
    atlas: str | None = None,
    commitments: Iterable[CommitmentLine] | None = None,
    evidence: Iterable[Any] | None = None,
) -> str:
    """The `<assistant_memory>` block with the sections given (a section left as None is left out)."""
    moment = (as_of or timezone.now()).astimezone(UTC)
    sections = []
    if atlas is not None:
        sections.append(_section("atlas", [text(line) for line in atlas.splitlines() if line.strip()]))
    if commitments is not None:
        sections.append(_section("open_commitments", [commitment_line(item) for item in commitments]))
    if evidence is not None:
        sections.append(_section("evidence", [evidence_line(result) for result in evidence]))
    stamp = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return f'<assistant_memory as_of="{stamp}">\n' + "\n".join(sections) + "\n</assistant_memory>"
