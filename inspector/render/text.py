"""Small text helpers shared by the library and the renderers."""

from __future__ import annotations

import re
from typing import Final

_DIGITS: Final = re.compile(r"(\d+)")
#: C0 and C1 controls, DEL, zero-width and bidi formatting characters, BOM, lone surrogates
_UNSAFE: Final = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    r"\ud800-\udfff]")
#: what could start code, emphasis, a link, an image, HTML, strikethrough or a new table cell
_MARKDOWN: Final = re.compile(r"([\\`*_\[\]<>!|~])")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts ``layers.2`` before ``layers.10``."""
    return tuple((1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(text) if part)


def sanitize(text: str, limit: int = 2000) -> str:
    """The one sanitiser for untrusted text (tensor names, paths, config values, metadata, revisions,
    notes, error messages) before any renderer: control, bidi and zero-width characters and lone
    surrogates become visible escapes (``\\x1b``, ``\\u202e``, ``\\ud800``). Rich markup is never
    interpreted (the console has markup off), so brackets stay as they are. Text longer than
    ``limit`` (only a hostile name is) is cut with a visible mark."""
    safe = _UNSAFE.sub(_escape, text)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def markdown(text: str) -> str:
    """Sanitised text made inert in markdown (pull-request comments): every metacharacter that
    could start a link, an image, code, emphasis, HTML or a table cell is backslash-escaped."""
    return _MARKDOWN.sub(r"\\\1", sanitize(text)).replace("\n", " ")
