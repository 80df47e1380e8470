"""Small text helpers shared by the library and the renderers."""

from __future__ import annotations

import re
from typing import Final

_DIGITS: Final = re.compile(r"(\d+)")
_UNSAFE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts ``layers.2`` before ``layers.10``."""
    return tuple((1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(text) if part)


def sanitize(text: str, limit: int = 300) -> str:
    """Make untrusted text (tensor names, metadata) safe for a terminal: control and bidi
    characters become ``\\xNN`` / ``\\uNNNN`` escapes, and very long text is cut."""
    safe = _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"
