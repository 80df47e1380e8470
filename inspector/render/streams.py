"""The process's two streams: data on stdout; errors, warnings, hints and progress on stderr.

Every byte the CLI writes to the terminal passes through here (ruff's banned-api rule keeps
``sys.stdout`` and ``sys.stderr`` out of every other layer). Diagnostics are sanitised text, never
interpreted as markup.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback

from inspector.render.text import sanitize


def out(text: str) -> None:
    """Data (a document, a listing) on stdout, as given: the renderers made it safe."""
    sys.stdout.write(text)


#: ``--quiet``: no diagnostics (warnings, notes, a gate's verdict line, progress); errors are still said
_quiet = False


def be_quiet() -> None:
    """From now on ``say`` says nothing (``--quiet``); ``error`` still does."""
    global _quiet
    _quiet = True


def is_quiet() -> bool:
    return _quiet


def say(message: str) -> None:
    """One line of diagnostics on stderr, sanitised (nothing under ``--quiet``)."""
    if _quiet:
        return
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(sanitize(message) + "\n")


def error(message: str, hint: str | None = None) -> None:
    """``Error: …`` and ``hint: …`` on stderr as plain, sanitised text."""
    lines = f"Error: {sanitize(message)}\n" + (f"hint: {sanitize(hint)}\n" if hint else "")
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(lines)


#: the word for each exit code in a ``--json`` error document
ERROR_CODES = {1: "result", 2: "usage", 3: "not_found", 4: "invalid", 5: "network", 70: "internal", 130: "interrupted"}


def error_json(message: str, hint: str | None, exit_code: int) -> None:
    """With ``--json``, an error is a JSON document on stdout too, so a script reading stdout gets one:
    ``{"error": {"code", "exit", "message", "hint"}}`` (json.dumps escapes every control character)."""
    doc = {"error": {"code": ERROR_CODES.get(exit_code, "error"), "exit": exit_code, "message": message,
                     "hint": hint}}
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.write(json.dumps(doc, ensure_ascii=True) + "\n")


def debug_traceback() -> None:
    """The current exception's traceback on stderr (INSPECTOR_DEBUG / HF_DEBUG)."""
    traceback.print_exc()


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def flush() -> None:
    """Flush both streams before the process ends without tearing down the interpreter."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
