"""Renderers: results → rich tables for people, fixed-schema dicts for JSON.

Nothing here reads files or the network; everything printed of a tensor name or metadata goes
through ``sanitize`` first, since those strings come from untrusted headers.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it; the result
    # types of the other commands are not imported by a plain `inspect MODEL` either
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.table import Table



#: the width when stdout is not a terminal (a file, a pipe) or with --wide: tables at full width
UNLIMITED = 1_000_000


# --- the console ------------------------------------------------------------------------------

_CONSOLES: dict[tuple[bool, bool], Console] = {}


def console(*, stderr: bool = False, wide: bool = False) -> Console:
    """The one console of the run for stdout (or stderr). Markup and emoji codes are off, so no
    string is ever interpreted; our styles come as Text objects. Not a terminal, or ``wide``: no
    width limit, so nothing is cut."""
    # deferred: 29 ms at import (rich.console)
    from rich.console import Console

    key = (stderr, wide)
    if key not in _CONSOLES:
        stream = sys.stderr if stderr else sys.stdout
        tty = stream.isatty()
        _CONSOLES[key] = Console(stderr=stderr, soft_wrap=True, highlight=False, markup=False, emoji=False,
                                 width=None if tty and not wide else UNLIMITED)
    return _CONSOLES[key]


def emit(renderable: RenderableType, *, stderr: bool = False, wide: bool = False) -> None:
    """Print a renderable so that no number or label is cut: right-aligned (numeric) columns never
    wrap and keep the width of their widest cell (their header folds at its words), text columns fold
    (never below their longest word, up to ``LABEL_MIN_CAP``), lines of text wrap at the terminal's
    width, and a table that cannot fit the terminal even folded is printed at its natural width (the
    terminal then wraps its lines), each part of a group on its own. Piped (no width limit), lines
    carry no trailing spaces and nothing is wrapped."""
    # deferred: 25 ms at import (rich.measure, rich.table)
    from rich.measure import Measurement
    from rich.table import Table

    out = console(stderr=stderr, wide=wide)
    unlimited = out.options.update(max_width=UNLIMITED)
    _harden(renderable, out, unlimited)
    parts = _leaves(renderable) if out.is_terminal and out.width < UNLIMITED else [renderable]
    for part in parts:
        need = Measurement.get(out, unlimited, part)
        if need.minimum > out.width:  # the figures' headers fold at their words before the table is widened
            _harden(part, out, unlimited, fold=True)
            need = Measurement.get(out, unlimited, part)
        # squeezed below its minimum, rich would share the shortfall out over every column, labels included;
        # a table whose labels can fold below their longest word (a tensor name) within the width is drawn
        # at it all the same: only its label columns give way (_label_room)
        if need.minimum <= out.width:
            _print(out, part)
            continue
        if isinstance(part, Table) and _label_room(part, out, unlimited):
            for column in part.columns:
                if not column.no_wrap:
                    column.min_width = None  # rich measures a column back up to its min_width after narrowing it
            _print(out, part)
            continue
        terminal = out.size  # rich caps a print's width at the console's: widen the console for this print
        out.size = (max(terminal.width, need.maximum), terminal.height)
        try:
            _print(out, part)
        finally:
            out.size = terminal


def _label_room(part: Table, out: Console, options: ConsoleOptions) -> bool:
    """Whether a table fits the terminal with its figures whole and only its label columns narrowed:
    rich narrows the widest label column to the next widest, and so on (``Table._collapse_widths``),
    before its last resort of narrowing every column (figures included, which would cut them); so the
    figures' widths, every label column at the narrowest label's natural width and at least
    ``LABEL_FLOOR``, and the borders and padding must fit (the labels then fold below their longest word:
    ``emit`` lifts the floor ``_harden`` set them)."""
    # deferred: 2 ms at import (rich.measure)
    from rich.measure import Measurement

    if not part.columns:
        return False
    padding = [part._get_padding_width(i) for i in range(len(part.columns))]
    figures = labels = 0
    narrowest: int | None = None
    for column, pad in zip(part.columns, padding, strict=True):
        if column.no_wrap:
            figures += (column.min_width or 0) + pad
            continue
        labels += 1
        natural = max((Measurement.get(out, options, cell).maximum for cell in [column.header, *column.cells]),
                      default=1)
        narrowest = natural + pad if narrowest is None else min(narrowest, natural + pad)
    if not labels or narrowest is None:
        return False
    floor = max(narrowest, LABEL_FLOOR)
    return figures + labels * floor + part._extra_width <= out.width


#: the narrowest a label column is folded to when a table must fit the terminal
LABEL_FLOOR: Final = 8


def _leaves(renderable: RenderableType) -> list[RenderableType]:
    # deferred: 28 ms at import (rich.console)
    from rich.console import Group

    if isinstance(renderable, Group):
        return [leaf for part in renderable.renderables for leaf in _leaves(part)]
    return [renderable]


def _print(out: Console, renderable: RenderableType) -> None:
    """Print; on a terminal, text wraps at its width; not on a terminal (a pipe, a file), without the
    spaces rich pads lines with and without wrapping."""
    if out.is_terminal:
        out.print(renderable, soft_wrap=False)
        return
    with out.capture() as captured:
        out.print(renderable)
    out.file.write("\n".join(line.rstrip() for line in captured.get().split("\n")))


def _harden(renderable: RenderableType, out: Console, options: ConsoleOptions, *, fold: bool = False) -> None:
    # deferred: 34 ms at import (rich.console, rich.measure, rich.table)
    from rich.console import Group
    from rich.measure import Measurement
    from rich.table import Table

    if isinstance(renderable, Group):
        for part in renderable.renderables:
            _harden(part, out, options, fold=fold)
    elif isinstance(renderable, Table):
        for column in renderable.columns:
            if column.justify == "right":  # the figures whole; a header wider than them folds at its words
                column.no_wrap = True
                widest = max((Measurement.get(out, options, cell).maximum for cell in column.cells), default=1)
                if fold:
                    column.header = _folded(column.header, widest)
                column.min_width = max(widest, *(len(line) for line in _plain(column.header).split("\n")))
            else:  # a label folds rather than being cut, but never below its longest word (capped)
                column.overflow = "fold"
                cells = [column.header, *column.cells]
                words = max((len(w) for cell in cells for w in _plain(cell).split()), default=1)
                column.min_width = max(column.min_width or 0, min(words, LABEL_MIN_CAP))


def _folded(header: RenderableType, width: int) -> RenderableType:
    """A numeric column's header broken into lines at its words, each at most ``width`` wide where a
    word allows (the column never wraps: its figures must stay whole); a header of one word (a repo id:
    ``meta-llama/Meta-Llama-3-8B``) breaks after its ``/``, ``-``, ``_``, ``.`` or ``@``, each piece whole."""
    # deferred: 15 ms at import (re, textwrap, rich.text)
    import re
    import textwrap

    from rich.text import Text

    plain = _plain(header)
    if len(plain) <= width:
        return header
    if " " in plain:
        lines = textwrap.wrap(plain, width=width, break_long_words=False)
    else:
        lines = [""]
        for piece in re.findall(r"[^/\-_.@]+[/\-_.@]?|[/\-_.@]", plain):
            if lines[-1] and len(lines[-1]) + len(piece) > width:
                lines.append("")
            lines[-1] += piece
    joined = "\n".join(lines)
    return Text(joined, style=header.style) if isinstance(header, Text) else joined


#: the most rows one table draws (a table costs about half a millisecond a row to lay out); the rest
#: are summed in one line naming what lists every one (``--json``, ``--tensors``) (issue 40: a
#: 4.5 MB header drew 25 s of layer-block rows)
MAX_TABLE_ROWS: Final = 200


def titled_table(title: str, first: str, *numbers: str) -> Table:
    """A report's table: its title on the left, no edges; the first column text, the others figures (right)."""
    # deferred: 26 ms at import (rich.table)
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column(first)
    for name in numbers:
        table.add_column(name, justify="right")
    return table


def capped(count: int, what: str, everything: str) -> list[RenderableType]:
    """The line under a table of ``count`` rows that drew only ``MAX_TABLE_ROWS`` (none when all fit)."""
    # deferred: 15 ms at import (rich.text)
    from rich.text import Text

    if count <= MAX_TABLE_ROWS:
        return []
    return [Text(f"… {count - MAX_TABLE_ROWS:,} more {what} not drawn ({everything} lists every one)", style="dim")]


#: the narrowest a label column may be made: its longest word, up to this many characters
LABEL_MIN_CAP = 32


def _plain(cell: object) -> str:
    # deferred: 15 ms at import (rich.text)
    from rich.text import Text

    return cell.plain if isinstance(cell, Text) else str(cell)


# --- JSON text ----------------------------------------------------------------------------------


#: a \\uD800–\\uDFFF escape in ASCII JSON text: a lone surrogate (a valid pair never reaches the
#: encoder as two code units from our strings), which strict JSON parsers reject
_SURROGATE_ESCAPE: Final = re.compile(r"\\ud[89a-f][0-9a-f]{2}")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def json_document(doc: object) -> tuple[str, int]:
    """``json_text`` that is always strict JSON (RFC 8259): strings from outside that are not valid
    Unicode (lone surrogates, from pickle keys, configs, snapshots) have each such code unit replaced
    by U+FFFD. Returns the text and how many strings were changed (the caller says so)."""
    text = json_text(doc)
    if _SURROGATE_ESCAPE.search(text) is None:
        return text, 0
    changed = [0]

    def clean(value: object) -> object:
        if isinstance(value, str):
            fixed, n = _SURROGATE.subn("\ufffd", value)
            changed[0] += bool(n)
            return fixed
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return json_text(clean(doc)), changed[0]


def json_text(doc: object) -> str:
    """A JSON document as text: objects indented two spaces, a list of objects one object a line
    (so ``grep`` finds a tensor's whole record), everything else on one line. ASCII only, so
    control characters, bidi marks and lone surrogates from untrusted names arrive escaped
    (``\\u001b``), never raw. Strict JSON: a NaN or an infinity is a bug (``ValueError``), never a
    ``NaN`` written for a script's parser to choke on. Built from C-encoded pieces: ``json.dumps(indent=2)`` runs the
    pure-Python encoder, 1.0 s of the 2.6 s of ``inspect deepseek-v3 --json --tensors``."""
    return _json(doc, "") + "\n"


def _json(value: object, pad: str) -> str:
    inner = pad + "  "
    if isinstance(value, dict) and value:
        return "{\n" + ",\n".join(f"{inner}{json.dumps(str(k), ensure_ascii=True)}: {_json(v, inner)}"
                                   for k, v in value.items()) + f"\n{pad}}}"
    if isinstance(value, list | tuple) and value and all(isinstance(x, dict) for x in value):
        return "[\n" + ",\n".join(inner + json.dumps(x, ensure_ascii=True, allow_nan=False) for x in value) \
            + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=True, allow_nan=False)


# --- number formats ---------------------------------------------------------------------------


def n(value: float | None) -> str:
    return "—" if value is None else f"{value:,}"


def short(value: int) -> str:
    """8,030,261,248 → 8.03 B (always shown beside the exact figure, never instead of it)."""
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return str(value)


def size(value: int | None) -> str:
    if value is None:
        return "size unknown"
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if abs(value) >= factor:
            return f"{value / factor:.2f} {unit}"
    return f"{value} B"


def shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# --- the model, named the same way in every document --------------------------------------------


# --- markdown for show, estimate and audit (pull-request comments) -----------------------------------


def md_table(title: str | None, head: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    rule = "|" + "|".join("--:" if i in right else "---" for i in range(len(head))) + "|"
    lead = [f"**{title}**", ""] if title else []
    return [*lead, "| " + " | ".join(head) + " |", rule, *("| " + " | ".join(r) + " |" for r in rows), ""]


def table_markdown(renderable: RenderableType) -> str:
    """A listing's rich table(s) as markdown: each table's title in bold, its columns and cells (already
    sanitised, escaped for markdown here), right-aligned columns kept right; a line of text as a line."""
    # deferred: 36 ms at import (rich.console, rich.table, inspector.render.text)
    from rich.console import Group
    from rich.table import Table

    from inspector.render.text import markdown

    lines: list[str] = []
    for part in _leaves(renderable) if isinstance(renderable, Group) else [renderable]:
        if isinstance(part, Table):
            head = [markdown(_plain(c.header)) for c in part.columns]
            cells = [[markdown(_plain(cell)) for cell in c.cells] for c in part.columns]
            rows = [list(row) for row in zip(*cells, strict=True)] if cells else []
            right = {i for i, c in enumerate(part.columns) if c.justify == "right"}
            lines += md_table(_plain(part.title) if part.title else None, head, rows, right)
        else:
            lines += [markdown(_plain(part)), ""]
    return "\n".join(lines)
