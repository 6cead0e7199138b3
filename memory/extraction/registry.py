"""Which extractor runs, and what text of a source it reads."""

from __future__ import annotations

from django.conf import settings

from memory.extraction.base import Extractor, TextUnit
from memory.models import Source, SourceKind, SourceScope

OWNER_SPEAKERS = {"me", "ik", "i", "user"}
# A transcript's assistant (an imported AI Studio chat's "model") is neither the owner nor a person to remember.
ASSISTANT_SPEAKERS = {"assistant", "model"}


ATTACHMENT_KINDS = (SourceKind.DOCUMENT, SourceKind.FILE)


def get_extractor() -> Extractor:
    """The configured extractor (`EXTRACTOR`): `rules` is offline and the default; `llm` calls LLM_URL."""
    if settings.EXTRACTOR == "rules":
        from memory.extraction.rules import RulesExtractor

        return RulesExtractor()
    if settings.EXTRACTOR == "llm":
        from memory.extraction.llm import LLMExtractor

        return LLMExtractor(
            settings.LLM_URL,
            settings.LLM_MODEL,
            api_key=settings.LLM_API_KEY,
            timeout_s=settings.LLM_TIMEOUT_S,
            max_tokens=settings.LLM_MAX_TOKENS,
        )
    raise ValueError(f"Unknown EXTRACTOR {settings.EXTRACTOR!r}; 'rules' and 'llm' are available.")


def text_units(source: Source, pending: list[Source]) -> list[TextUnit]:
    """What an extractor reads for these not-yet-extracted sources. Reference material never becomes claims
    about the user, so it yields nothing."""
    if source.scope == SourceScope.REFERENCE:
        return []
    owner_names = OWNER_SPEAKERS | {source.owner.username.lower(), source.owner.first_name.lower()} - {""}
    units = []
    for item in pending:
        if item.kind == SourceKind.TRANSCRIPT:
            for segment in item.segments:
                speaker = str(segment.get("speaker", ""))
                role = "user" if speaker.lower() in owner_names else "other"
                role = "assistant" if speaker.lower() in ASSISTANT_SPEAKERS else role
                units.append(TextUnit(source_id=item.pk, text=str(segment.get("text", "")), speaker=speaker,
                                      role=role, authored_at=item.occurred_at))  # fmt: skip
            continue
        if item.kind == SourceKind.MESSAGE and item.parent_id is None:
            # A person's message (e.g. an email) is the owner's own words only when the host says so.
            role = "user" if item.source_context.get("authoredByOwner") else "other"
        else:
            role = item.role or ""
        units.append(
            TextUnit(
                source_id=item.pk,
                text=item.text,
                speaker=item.speaker,
                role=role,
                message_id=item.message_id,
                authored_at=item.authored_at or item.occurred_at,
                attachment=item.kind in ATTACHMENT_KINDS,
            )
        )
    return units
