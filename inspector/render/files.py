"""Renderers for a folder or repo of several model files, a repo's file listing (``--files``) and an HF cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.model import Checkpoint
from inspector.render.text import sanitize

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it; the result
    # types of the other commands are not imported by a plain `inspect MODEL` either
    from rich.console import RenderableType

    from inspector.analysis.serving.budget import Budget
    from inspector.analysis.serving.listing import CachedModel, FileRow, RepoFiles

from inspector.render.output import MAX_TABLE_ROWS, capped, n, size

# --- several files of one model; a Hugging Face cache -----------------------------------------------


def files_table(where: str, name: str, rows: list[FileRow], budget: Budget | None = None,
                notes: list[str] | None = None) -> RenderableType:
    # deferred: 26 ms at import (rich.console, rich.table, rich.text)
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    # one model in several quantisations holds the same parameters in each file: said once in the title, and
    # a kind column only where a projector is among them (an 80-column terminal holds the rest whole)
    kinds = any(r.kind != "model" for r in rows)
    counts = {r.parameters for r in rows}
    title = f"{where}: {len(rows)} GGUF files (inspect {name}/FILE for one)"
    if len(counts) == 1:
        title += f"; {n(next(iter(counts)))} parameters each"
    if budget is not None:
        title += f"; fit in {budget.devices} × {budget.per_device / 2**30:.2f} GiB"
    t = Table(title=sanitize(title), title_justify="left", show_edge=False, pad_edge=False)
    columns = [("file", "left"), *([("kind", "left")] if kinds else []), ("type", "left"), ("bytes", "right"),
               *([("parameters", "right")] if len(counts) > 1 else []), ("bits/weight", "right")]
    if budget is not None:
        columns += [("needs GiB", "right"), ("fits", "left"), ("largest context", "right")]
    for col, just in columns:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    # a row's note (why a fit is unknown, what a projector is) under the table, once for the files that
    # share it: a column of prose made every row as wide as its sentence (188 columns on an 80-column terminal)
    said: dict[str, list[str]] = {}
    for r in rows[:MAX_TABLE_ROWS]:
        cells = [sanitize(r.file), *([r.kind] if kinds else []), sanitize(r.type or "—"), n(r.bytes),
                 *([n(r.parameters)] if len(counts) > 1 else []),
                 f"{r.bits_per_weight:.3f}" if r.bits_per_weight else "—"]
        if budget is not None:
            verdict = "—" if r.kind != "model" else ("unknown" if r.fits is None else ("yes" if r.fits else "no"))
            cells += [f"{r.needed_bytes / 2**30:.2f}" if r.needed_bytes is not None else "—", verdict,
                      n(r.max_context) if r.max_context is not None else "—"]
            note = r.note or ("loaded beside a model" if r.kind == "projector" else "")
            if note:
                said.setdefault(note, []).append(r.file)
        t.add_row(*cells)
    under = [Text(sanitize(f"{', '.join(files) if len(files) <= 3 else f'{len(files)} files'}: {note}"))
             for note, files in said.items()]
    answer = [] if budget is None else [_largest_line(rows, budget)]
    return Group(*answer, t, *capped(len(rows), "files", "--json"), *under,
                 *(Text(sanitize(note), style="dim") for note in notes or []))


def _largest_line(rows: list[FileRow], budget: Budget) -> RenderableType:
    """The answer first: "which quant fits 12 GB" is the largest file that fits, with what it needs."""
    # deferred: 26 ms at import (rich.text)
    from rich.text import Text

    from inspector.analysis.serving.listing import largest_fitting

    best = largest_fitting(rows)
    room = f"{budget.devices} × {budget.per_device / 2**30:.2f} GiB"
    if best is None:
        known = any(r.fits is not None for r in rows if r.kind == "model")
        return Text(f"no file fits {room}" if known else f"not known which file fits {room} (see the notes)",
                    style="bold red")
    needs = f"{best.needed_bytes / 2**30:.2f} GiB, " if best.needed_bytes is not None else ""
    context = f"{n(best.max_context)} tokens" if best.max_context is not None else "context unknown"
    return Text(sanitize(f"largest that fits: {best.file} ({best.type or '—'}, {needs}{context})"),
                style="bold green")


def repo_files_table(checkpoint: Checkpoint, files: RepoFiles) -> RenderableType:
    # deferred: 26 ms at import (rich.console, rich.table, rich.text)
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    t = Table(title=sanitize(f"{checkpoint.label}: {len(files.rows):,} files"), title_justify="left",
              show_edge=False, pad_edge=False)
    for col, just in (("file", "left"), ("kind", "left"), ("bytes", "right"), ("", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in files.rows[:MAX_TABLE_ROWS]:
        mark = "counted" if r.counted else ("another format or a copy: not counted" if r.kind == "weights" else "")
        t.add_row(sanitize(r.path), r.kind, n(r.size) if r.size is not None else "unknown", mark)
    share = f" ({files.weights_bytes / files.total_bytes:.1%})" if files.total_bytes else ""
    kinds = ", ".join(f"{kind} {size(files.bytes_of(kind))}" for kind in ("weights", "index", "config", "tokenizer",
                                                                            "other") if files.bytes_of(kind))
    lines = [Text(f"a download of every file fetches {files.total_bytes:,} B ({size(files.total_bytes)}); weights "
                  f"{files.weights_bytes:,} B{share}"), Text(kinds, style="dim")]
    if files.unknown_sizes:
        lines.append(Text(f"{files.unknown_sizes} file(s) of unknown size (not in the total)", style="yellow"))
    return Group(t, *capped(len(files.rows), "files", "--files --json"), *lines)


def cache_table(root: str, rows: list[CachedModel]) -> RenderableType:
    # deferred: 26 ms at import (rich.console, rich.table)
    from rich.console import Group
    from rich.table import Table

    t = Table(title=sanitize(f"Hugging Face cache {root}"), title_justify="left", show_edge=False, pad_edge=False)
    for col, just in (("repo", "left"), ("revision", "left"), ("parameters", "right"), ("bytes", "right"),
                      ("files", "right"), ("", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in rows[:MAX_TABLE_ROWS]:
        t.add_row(sanitize(r.repo_id), sanitize(r.revision[:12]), n(r.parameters), n(r.bytes),
                  n(r.files), "" if r.status == "ok" else sanitize(r.status))
    more = capped(len(rows), "cached models", "--json")
    return Group(t, *more) if more else t
