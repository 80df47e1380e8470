"""The one renderer table: (result type, format) → renderer, and the one step that writes a result.

Every command's output goes through ``emit``: the CLI names the result and the format, the table
picks the renderer (a rich table for people, the ``--json`` document, markdown, a self-contained HTML
page), and ``emit`` writes it to stdout (or an HTML page to ``-o FILE`` through the path guard). A
format a result has no renderer for is a usage error, asked before any model is read
(``check_format``). Adding an output is adding a row here, not an ``if`` in a command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from inspector import results
from inspector.errors import UsageError
from inspector.render import streams
from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:
    from rich.console import RenderableType


class Format(StrEnum):
    """The one ``--format`` option's values (``--json`` is short for ``--format json``)."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """A ``--format`` value added from outside (``register_format``): every result drawn from its JSON document
    (``to_dict()``) with every string already through the one sanitiser (``_sanitized``), which ``draw`` turns
    into the text written (quoting what its own syntax needs)."""

    name: str
    draw: Callable[[Mapping[str, object]], str]


_ADDED: dict[str, OutputFormat] = {}


def register_format(fmt: OutputFormat) -> None:
    """Add an output format (a module of its own outside the package, say); ``--format`` takes its name, its
    help lists it. A built-in name is refused."""
    if fmt.name in {f.value for f in Format}:
        raise ValueError(f"{fmt.name!r} is a built-in format")
    _ADDED[fmt.name] = fmt


def unregister_format(name: str) -> None:
    _ADDED.pop(name, None)


def format_names() -> tuple[str, ...]:
    """Every value ``--format`` takes: the built-in ones, then those registered."""
    return (*(f.value for f in Format), *_ADDED)


@dataclass(frozen=True, slots=True)
class View:
    """Options that pick what a table shows (never what a document holds)."""

    #: diff: list every changed tensor
    all_changes: bool = False
    #: show: list every file, however many
    all_shards: bool = False
    #: estimate, train, plan: each figure's formula, source and assumptions beside it (JSON keeps them always)
    explain: bool = False


@dataclass(frozen=True, slots=True)
class Verbatim:
    """Text written as it is (JSON, markdown, HTML, a tensor list): the renderer made it safe."""

    text: str
    #: JSON: strings from outside that were not valid Unicode, replaced (the writer says so)
    replaced: int = 0


class Result(Protocol):
    def to_dict(self) -> Mapping[str, object]: ...


R = TypeVar("R", bound=Result)



# --- the renderers ----------------------------------------------------------------------------------


def _json(result: Result, view: View) -> Verbatim:
    # deferred: 1 ms at import (inspector.render.output)
    from inspector.render.output import json_document

    text, replaced = json_document(result.to_dict())
    return Verbatim(text, replaced)


def _show_table(r: results.Inspection, view: View) -> Verbatim | RenderableType:
    # deferred: 62 ms at import (rich.console, rich.text, inspector.render.estimate, inspector.render.show)
    from rich.console import Group
    from rich.text import Text

    from inspector.render.estimate import estimate_line
    from inspector.render.show import formula_table, report_table, tensor_lines

    if r.rows is not None:  # the list only, one tensor a line, ready for grep
        return Verbatim("\n".join(tensor_lines(list(r.rows))) + "\n")
    est = r.estimate
    packed = (est.quant.method or "quantised", est.quant.logical_parameters) \
        if est is not None and est.quant.method and r.report.summary.quant_elements else None
    parts: list[RenderableType] = [report_table(r.report, all_shards=view.all_shards, logical=packed)]
    if est is not None:
        parts.append(Text(estimate_line(est, r.common), style="cyan"))
    if r.formula is not None:
        parts.append(formula_table(r.formula))
    return Group(*parts)


def _show_markdown(r: results.Inspection, view: View) -> Verbatim:
    # deferred: 27 ms at import (inspector.render.show)
    from inspector.render.show import report_markdown

    return Verbatim(report_markdown(r.report))


def _show_html(r: results.Inspection, view: View) -> Verbatim:
    """The page lists the tensors collapsed (one row per repeated layer or expert tensor)."""
    # deferred: 34 ms at import (inspector.render.html, inspector.render.show, inspector.results.show)
    from inspector.render.html import MAX_ROWS, show_html
    from inspector.render.show import listing
    from inspector.results.show import report_json

    rows = listing(r.report, True)
    doc = report_json(r.report, rows=rows[:MAX_ROWS], formula=r.formula)
    if len(rows) > MAX_ROWS:  # names that do not collapse (no repeated layers): the page stays small
        doc["notes"].append(f"the page lists the first {MAX_ROWS:,} of {len(rows):,} tensor rows; all of them: "
                     "inspect MODEL --json --tensors --collapse")
    return Verbatim(show_html(doc))


def _diff_table(r: results.Difference, view: View) -> RenderableType:
    # deferred: 65 ms at import (rich.console, inspector.render.diff)
    from rich.console import Group

    from inspector.render.diff import adapter_table, diff_table, values_table

    if r.adapter is not None:  # a PEFT adapter against its base
        return adapter_table(r.adapter)
    assert r.result is not None
    parts = [diff_table(r.result, all_changes=view.all_changes, values=r.values)]
    if r.values is not None:
        parts.append(values_table(r.values))
    return Group(*parts)


def _diff_markdown(r: results.Difference, view: View) -> Verbatim:
    # deferred: 64 ms at import (inspector.render.diff)
    from inspector.render.diff import adapter_markdown, diff_markdown

    if r.adapter is not None:
        return Verbatim(adapter_markdown(r.adapter))
    assert r.result is not None
    return Verbatim(diff_markdown(r.result, r.values))


def _diff_html(r: results.Difference, view: View) -> Verbatim:
    # deferred: 42 ms at import (inspector.render.html, inspector.results.diff)
    from inspector.render.html import adapter_html, diff_html
    from inspector.results.diff import adapter_json, diff_json

    if r.adapter is not None:
        return Verbatim(adapter_html(adapter_json(r.adapter)))
    assert r.result is not None
    return Verbatim(diff_html(diff_json(r.result, r.values)))


def _compare_table(r: results.ComparisonResult, view: View) -> RenderableType:
    # deferred: 26 ms at import (inspector.render.compare)
    from inspector.render.compare import compare_table

    return compare_table(r.comparison)


def _compare_markdown(r: results.ComparisonResult, view: View) -> Verbatim:
    # deferred: 33 ms at import (inspector.render.compare)
    from inspector.render.compare import compare_markdown

    return Verbatim(compare_markdown(r.comparison))


def _compare_html(r: results.ComparisonResult, view: View) -> Verbatim:
    # deferred: 10 ms at import (inspector.render.html)
    from inspector.render.html import compare_html

    return Verbatim(compare_html(r.to_dict()))


def _estimate_table(r: results.EstimateResult, view: View) -> RenderableType:
    # deferred: 144 ms at import (rich.console, rich.text, inspector.render.estimate, inspector.render.train)
    from rich.console import Group
    from rich.text import Text

    from inspector.render.estimate import estimate_table
    from inspector.render.train import knob_lines, knob_title

    drawn = estimate_table(r.report, r.estimate, r.fit, explain=view.explain)
    if r.fit is None:
        return drawn
    knobs = [Text(f"{knob_title(r.suggestions)}: " + sanitize("; ".join(knob_lines(r.suggestions))))
             ] if r.suggestions else []
    return Group(_verdict(r.fits, r.verdict), *knobs, drawn)  # the answer first


def _verdict(fits: bool | None, verdict: str) -> RenderableType:
    """A fit-bearing command's first line: its answer, coloured by it."""
    # deferred: 13 ms at import (rich.text)
    from rich.text import Text

    return Text(sanitize(verdict), style="bold yellow" if fits is None else "bold green" if fits else "bold red")


def _estimate_markdown(r: results.EstimateResult, view: View) -> Verbatim:
    # deferred: 103 ms at import (inspector.render.estimate, inspector.render.train)
    from inspector.render.estimate import estimate_markdown
    from inspector.render.train import knob_lines, knob_title

    knobs = "".join(f"- {markdown(line)}\n" for line in knob_lines(r.suggestions))
    title = knob_title(r.suggestions).capitalize()
    return Verbatim(estimate_markdown(r.report, r.estimate, r.fit) + (f"\n{title}:\n\n{knobs}" if knobs else ""))


def _estimate_html(r: results.EstimateResult, view: View) -> Verbatim:
    # deferred: 10 ms at import (inspector.render.html_fit)
    from inspector.render.html_fit import estimate_html

    return Verbatim(estimate_html(r.to_dict()))


def _train_table(r: results.TrainResult, view: View) -> RenderableType:
    # deferred: 104 ms at import (rich.console, rich.text, inspector.render.train)
    from rich.console import Group
    from rich.text import Text

    from inspector.render.train import knob_lines, knob_title, train_table

    drawn = train_table(r.report, r.train, explain=view.explain)
    if r.train.options.budget is None:
        return drawn
    knobs = [Text(f"{knob_title(r.suggestions)}: " + sanitize("; ".join(knob_lines(r.suggestions))))
             ] if r.suggestions else []
    return Group(_verdict(r.fits, r.verdict), *knobs, drawn)


def _train_markdown(r: results.TrainResult, view: View) -> Verbatim:
    # deferred: 103 ms at import (inspector.render.train)
    from inspector.render.train import train_markdown

    return Verbatim(train_markdown(r.report, r.train, r.suggestions))


def _train_html(r: results.TrainResult, view: View) -> Verbatim:
    # deferred: 10 ms at import (inspector.render.html_fit)
    from inspector.render.html_fit import train_html

    return Verbatim(train_html(r.to_dict()))


def _plan_table(r: results.PlanResult, view: View) -> RenderableType:
    # deferred: 104 ms at import (inspector.render.plan, inspector.render.train)
    from inspector.render.plan import plan_table
    from inspector.render.train import knob_lines

    return plan_table(r.report, r.plan, knob_lines(r.suggestions), explain=view.explain)


def _plan_markdown(r: results.PlanResult, view: View) -> Verbatim:
    # deferred: 106 ms at import (inspector.render.plan, inspector.render.train)
    from inspector.render.plan import plan_markdown
    from inspector.render.train import knob_lines

    knobs = "".join(f"- {markdown(line)}\n" for line in knob_lines(r.suggestions))
    return Verbatim(plan_markdown(r.report, r.plan) + (f"\nWhat makes it fit:\n\n{knobs}" if knobs else ""))


def _plan_html(r: results.PlanResult, view: View) -> Verbatim:
    # deferred: 10 ms at import (inspector.render.html_fit)
    from inspector.render.html_fit import plan_html

    return Verbatim(plan_html(r.to_dict()))


def _audit_table(r: results.Audit, view: View) -> RenderableType:
    # deferred: 1 ms at import (inspector.render.audit)
    from inspector.render.audit import audit_table

    return audit_table(r.result)


def _audit_markdown(r: results.Audit, view: View) -> Verbatim:
    # deferred: 1 ms at import (inspector.render.audit)
    from inspector.render.audit import audit_markdown

    return Verbatim(audit_markdown(r.result))


def _lineage_table(r: results.LineageResult, view: View) -> RenderableType:
    # deferred: 69 ms at import (inspector.render.lineage)
    from inspector.render.lineage import lineage_table

    return lineage_table(r.lineage)


def _lineage_markdown(r: results.LineageResult, view: View) -> Verbatim:
    # deferred: 69 ms at import (inspector.render.lineage)
    from inspector.render.lineage import lineage_markdown

    return Verbatim(lineage_markdown(r.lineage))


def _lineage_html(r: results.LineageResult, view: View) -> Verbatim:
    # deferred: 69 ms at import (inspector.render.lineage)
    from inspector.render.lineage import lineage_html

    return Verbatim(lineage_html(r.lineage))


def _listing_table(r: results.FileListing, view: View) -> RenderableType:
    # deferred: 1 ms at import (inspector.render.files)
    from inspector.render.files import files_table

    return files_table(r.where, r.name, list(r.rows), r.budget, list(r.notes))


def _files_table(r: results.FilesResult, view: View) -> RenderableType:
    # deferred: 1 ms at import (inspector.render.files)
    from inspector.render.files import repo_files_table

    return repo_files_table(r.checkpoint, r.files)


def _cache_table(r: results.CacheResult, view: View) -> RenderableType:
    # deferred: 1 ms at import (inspector.render.files)
    from inspector.render.files import cache_table

    return cache_table(r.root, list(r.rows))


def _aliases_table(r: results.Aliases, view: View) -> RenderableType:
    # deferred: 18 ms at import (rich.table)
    from rich.table import Table

    t = Table(show_edge=False, pad_edge=False)
    for col in ("alias", "repo", "what"):
        t.add_column(col)
    for a in r.rows:
        t.add_row(a.alias, a.repo_id, a.description)
    return t


def _as_markdown(draw: Callable[[R, View], RenderableType]) -> Callable[[R, View], Verbatim]:
    """A listing's markdown: its table's cells as a markdown table (every cell escaped)."""

    def markdown(r: R, view: View) -> Verbatim:
        # deferred: 1 ms at import (inspector.render.output)
        from inspector.render.output import table_markdown

        return Verbatim(table_markdown(draw(r, view)))

    return markdown


Renderer = Callable[[object, View], "Verbatim | RenderableType"]


def _row(kind: type[R], table: Callable[[R, View], Verbatim | RenderableType],
         markdown: Callable[[R, View], Verbatim | RenderableType],
         html: Callable[[R, View], Verbatim | RenderableType] | None = None) -> dict[str, Renderer]:
    """One result type's renderers (JSON is its ``to_dict()`` for every type), each checked to be
    given a result of that type."""

    def checked(draw: Callable[[R, View], Verbatim | RenderableType]) -> Renderer:
        def run(result: object, view: View) -> Verbatim | RenderableType:
            assert isinstance(result, kind)
            return draw(result, view)

        return run

    drawn = {Format.TABLE: table, Format.JSON: _json, Format.MARKDOWN: markdown, Format.HTML: html}
    return {fmt: checked(draw) for fmt, draw in drawn.items() if draw is not None}


#: the one table: for each result type, the formats it is drawn in and the renderer of each
RENDERERS: Final[Mapping[type, Mapping[str, Renderer]]] = {
    results.Inspection: _row(results.Inspection, _show_table, _show_markdown, _show_html),
    results.Difference: _row(results.Difference, _diff_table, _diff_markdown, _diff_html),
    results.ComparisonResult: _row(results.ComparisonResult, _compare_table, _compare_markdown, _compare_html),
    results.EstimateResult: _row(results.EstimateResult, _estimate_table, _estimate_markdown, _estimate_html),
    results.TrainResult: _row(results.TrainResult, _train_table, _train_markdown, _train_html),
    results.PlanResult: _row(results.PlanResult, _plan_table, _plan_markdown, _plan_html),
    results.Audit: _row(results.Audit, _audit_table, _audit_markdown),
    results.LineageResult: _row(results.LineageResult, _lineage_table, _lineage_markdown, _lineage_html),
    results.FileListing: _row(results.FileListing, _listing_table, _as_markdown(_listing_table)),
    results.FilesResult: _row(results.FilesResult, _files_table, _as_markdown(_files_table)),
    results.CacheResult: _row(results.CacheResult, _cache_table, _as_markdown(_cache_table)),
    results.Aliases: _row(results.Aliases, _aliases_table, _as_markdown(_aliases_table)),
}

#: what each result is, in the usage error for a format it is not drawn in
WHAT: Final[Mapping[type, str]] = {
    results.Inspection: "a model", results.Difference: "a diff", results.ComparisonResult: "a comparison",
    results.EstimateResult: "an estimate", results.TrainResult: "a training estimate", results.PlanResult: "a plan",
    results.Audit: "an audit (a list of findings)", results.LineageResult: "a lineage",
    results.FileListing: "a listing of several model files", results.FilesResult: "a repo's file listing",
    results.CacheResult: "a cache of many models", results.Aliases: "the alias list",
}


# --- choosing and writing -----------------------------------------------------------------------------


def output_format(fmt: str, as_json: bool = False) -> str:
    """The one output format of a command: ``--format`` (table, json, markdown, html, or one registered),
    ``--json`` its short form."""
    if fmt not in format_names():
        raise UsageError(f"--format: unknown format {fmt!r}", hint="use " + ", ".join(format_names()))
    chosen = fmt
    if as_json and chosen not in (Format.TABLE, Format.JSON):
        raise UsageError(f"--json and --format {fmt} ask for two formats", hint="give one of them")
    return Format.JSON if as_json else chosen


def check_format(kind: type, fmt: str, hint: str | None = None) -> None:
    """A usage error, before any model is read, when results of ``kind`` are not drawn in ``fmt``."""
    if fmt in RENDERERS[kind] or fmt in _ADDED:
        return
    drawn = ", ".join(WHAT[k] for k, formats in RENDERERS.items() if fmt in formats)
    raise UsageError(f"--format {fmt} draws {drawn}; not {WHAT[kind]}",
                     hint=hint or "use " + " or ".join(f for f in Format if f in RENDERERS[kind]))


def draw(result: Result, fmt: str, view: View = View()) -> Verbatim | RenderableType:
    """``result`` in ``fmt``: the renderer the table names for the pair (a registered format: its own, from
    the result's JSON document)."""
    kind = type(result)
    check_format(kind, fmt)
    added = _ADDED.get(fmt)
    if added is not None:
        return Verbatim(added.draw(_sanitized(result.to_dict())))
    return RENDERERS[kind][fmt](result, view)


def _sanitized(doc: Mapping[str, object]) -> dict[str, object]:
    """A JSON document with every key and string through ``text.sanitize`` (control, bidi and zero-width characters
    escaped): what a format added from outside is given, so none writes a checkpoint's string raw."""
    def clean(value: object) -> object:
        if isinstance(value, str):
            return sanitize(value)
        if isinstance(value, Mapping):
            return {sanitize(str(k)): clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return {sanitize(k): clean(v) for k, v in doc.items()}


def to_text(result: Result, fmt: str = Format.HTML, view: View = View(), width: int = 100) -> str:
    """``result`` in ``fmt`` as a string, as the CLI prints it piped (a table at ``width`` columns)."""
    drawn = draw(result, output_format(str(fmt)), view)
    if isinstance(drawn, Verbatim):
        return drawn.text
    # deferred: 22 ms at import (rich.console)
    from rich.console import Console

    out = Console(width=width, soft_wrap=False, highlight=False, markup=False, emoji=False, color_system=None)
    with out.capture() as captured:
        out.print(drawn)
    return "\n".join(line.rstrip() for line in captured.get().split("\n"))


#: the result ``emit`` wrote last (see there); one, so a long-lived process holds no more than that
_LAST: object = None


def emit(result: Result, fmt: str, *, view: View = View(), wide: bool = False, target: Path | None = None) -> None:
    """Write ``result`` in ``fmt``: to stdout, or (an HTML page) to ``target``, written whole through
    the path guard. A table fits the terminal's width (see ``output.emit``). The result written last
    is held until the next one (``_LAST``): the console script ends with ``os._exit`` right after, and
    a million tensor records freed one by one as the command returned took 0.15 s of its 3.2."""
    global _LAST
    _LAST = result
    drawn = draw(result, fmt, view)
    if not isinstance(drawn, Verbatim):
        # deferred: 1 ms at import (inspector.render.output)
        from inspector.render.output import emit as emit_table

        emit_table(drawn, wide=wide)
        return
    if drawn.replaced:
        streams.say(f"warning: {drawn.replaced} string(s) from the checkpoint were not valid Unicode (lone "
                    "surrogates); each such character is U+FFFD in the JSON")
    if target is None:
        streams.out(drawn.text)
        return
    # deferred: 2 ms at import (inspector.safeio)
    from inspector.safeio import write_atomic

    data = drawn.text.encode("utf-8")
    written = write_atomic(target.parent, target.name, data, "-o")
    streams.say(f"wrote {written} ({len(data):,} B)")


def output_target(fmt: str, output: str | None, *, model: str = "MODEL", conflicts: bool = False) -> Path | None:
    """``-o FILE`` goes with ``--format html``; FILE may be new or a report this tool wrote before
    (never another file of the user's). ``conflicts``: options that pick one part of a report
    (--tensors, --files …), which the HTML page, a whole report, does not take. Checked before any
    model is read."""
    if fmt == Format.HTML and conflicts:
        raise UsageError("--format html draws the whole report", hint=f"inspect {model} --format html -o report.html")
    if output is None:
        return None
    if fmt != Format.HTML:
        raise UsageError("-o/--output writes an HTML report", hint="add --format html, or redirect stdout")
    if output == "-":  # the usual spelling of stdout
        return None
    path = Path(output).expanduser()
    if path.exists() and not path.is_dir() and not path.is_file():
        raise UsageError(f"-o {output}: not a regular file (a device, a FIFO or a socket)",
                         hint="give a file name, or -o - for stdout")
    if path.is_dir():
        raise UsageError(f"-o {output}: is a folder", hint="give a file name, e.g. -o report.html")
    # deferred: 11 ms at import (inspector.render.html, inspector.safeio)
    from inspector.render.html import is_report
    from inspector.safeio import read_regular

    if path.is_symlink() or (path.exists() and not is_report(read_regular(path, 2048))):
        raise UsageError(f"-o {output}: the file exists and is not a report this tool wrote; refusing to replace it",
                         hint="give a new file name, or remove the file first")
    if not path.parent.is_dir():
        raise UsageError(f"-o {output}: no folder {path.parent}", hint="create the folder first")
    return path
