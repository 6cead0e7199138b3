"""Names as memory matches them: case, accents and spacing do not make another name."""

from __future__ import annotations

import unicodedata


def normalize_name(name: str) -> str:
    """'José  Álvarez' and 'jose alvarez' are the same name."""
    decomposed = unicodedata.normalize("NFKD", name)
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    return " ".join(plain.casefold().split())
