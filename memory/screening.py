"""Write-time screening and read-time wrapping (seeds/004's trust boundary; SPEC §9).

Layers, not proofs: deterministic screens can be bypassed by an adaptive attacker.
- Forged delimiters are escaped one-way on write, so stored text can never close or forge a section of the
  prompt contract or an untrusted-data wrapper.
- Instruction-shaped writes from assistant or imported origin are quarantined: stored, visible in the write
  acknowledgement, hidden from reads unless asked for.
- Reads wrap stored values in UNTRUSTED_DATA markers.
"""

from __future__ import annotations

import re
from typing import Any

OPEN_MARKER = "<<<UNTRUSTED_DATA>>>"
CLOSE_MARKER = "<<<END_UNTRUSTED_DATA>>>"

_FORGERIES = [
    (re.compile(r"<<<\s*(END_)?UNTRUSTED_DATA\s*>>>", re.IGNORECASE),
     lambda m: f"[[{m.group(1) or ''}UNTRUSTED_DATA]]"),
    (re.compile(r"<(\s*/?\s*)(assistant_memory|section|commitment|evidence|atlas)\b", re.IGNORECASE),
     lambda m: f"&lt;{m.group(1)}{m.group(2)}"),
]  # fmt: skip
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|"
    r"system|your)\s+(?:instructions|prompts?|rules|messages)\b"
    r"|\byou\s+are\s+now\b|\bnew\s+(?:system\s+)?instructions\s*:|\bsystem\s+prompt\b"
    r"|\b(?:reveal|print|show)\s+(?:your|the)\s+(?:system\s+prompt|instructions|hidden\s+rules)\b"
    r"|\bdo\s+not\s+(?:tell|inform)\s+the\s+user\b|\bfrom\s+now\s+on,?\s+you\s+(?:must|will|should|are)\b"
    r"|<\s*/?\s*system\s*>|^\s*(?:system|assistant)\s*:",
    re.IGNORECASE | re.MULTILINE,
)


def sanitize_text(text: str) -> str:
    """Escape forged delimiters one-way and drop control characters (newlines and tabs stay)."""
    text = _CONTROL.sub("", text)
    for pattern, replacement in _FORGERIES:
        text = pattern.sub(replacement, text)
    return text


def sanitize_value(value: Any) -> Any:
    """`sanitize_text` applied to every string inside a JSON value (keys included)."""
    if isinstance(value, str):
        return sanitize_text(value)
    if isinstance(value, list):
        return [sanitize_value(item) for item in value]
    if isinstance(value, dict):
        return {sanitize_text(str(key)): sanitize_value(item) for key, item in value.items()}
    return value


def looks_like_instructions(text: str) -> bool:
    return bool(_INSTRUCTION.search(text))


# Origins whose words are screened: the owner's own statements and manual edits are not (a rule such as
# "from now on answer in Dutch" is theirs to give).
SCREENED_ORIGINS = ("assistant_inferred", "imported")


def quarantines(origin: str, text: str) -> bool:
    """Whether a write of `text` from `origin` is held in quarantine."""
    return origin in SCREENED_ORIGINS and looks_like_instructions(text)


_SAID_BY = {"assistant_inferred": "an assistant's inference", "imported": "an import"}


def quarantine_reason(origin: str, text: str) -> str:
    """Why a held write was quarantined, in words a person reviewing it can judge (the screen's own test)."""
    match = _INSTRUCTION.search(text)
    said = _SAID_BY.get(origin, f"a write of origin {origin}")
    if match is None:
        return f"Held back from {said}."
    return f"It reads like an instruction to an assistant (\u201c{match.group(0).strip()}\u201d) and came from {said}."


def wrap_untrusted(text: str) -> str:
    return f"{OPEN_MARKER}\n{text}\n{CLOSE_MARKER}"
