"""Wording shared by the offline rules: how a name looks, words that look like names but are not, and how a
phrase becomes a label or a statement."""

from __future__ import annotations

NAME = r"(?P<name>[A-Z][a-zà-ÿ]+(?:\s+(?:de|van|der|den|von|da)?\s*[A-Z][a-zà-ÿ]+)?)"

NOT_NAMES = {"I", "The", "A", "An", "My", "We", "You", "It", "This", "That", "Monday", "Tuesday", "Wednesday",
             "Thursday", "Friday", "Saturday", "Sunday", "Today", "Tomorrow"}  # fmt: skip


def clean(text: str) -> str:
    return text.strip().rstrip(".!?,;: ").strip()


def sentence_case(text: str) -> str:
    text = " ".join(clean(text).split())
    return text[:1].upper() + text[1:] if text else text
