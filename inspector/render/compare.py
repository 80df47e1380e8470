"""Renderers for ``inspect compare``: one column a model, headed by its short name, a legend above."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from inspector.analysis.facts.report import Report
from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it; the result
    # types of the other commands are not imported by a plain `inspect MODEL` either
    from rich.console import RenderableType

    from inspector.analysis.comparison.compare import Comparison

from inspector.render.output import n

# --- compare --------------------------------------------------------------------------------------


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return n(value)
    return sanitize(str(value))


def _column_label(report: Report) -> str:
    c, p = report.checkpoint, report.checkpoint.provenance
    return sanitize(c.label + (f"@{p.revision[:12]}" if p.revision and p.origin in ("hub", "hf-cache") else ""))


def compare_table(cmp: Comparison) -> RenderableType:
    # deferred: 38 ms at import (rich.console, rich.table, rich.text)
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    # each column headed by the model's own name, the full id (and revision) in a legend above: a header
    # of org/name@revision made the table 117 columns wide
    heads = _short_labels(cmp.reports)
    parts: list[RenderableType] = [Text(sanitize(f"{head}: {_column_label(r)}"), style="dim")
                                   for head, r in zip(heads, cmp.reports, strict=True) if head != _column_label(r)]
    for section, title in (("totals", "Totals"), ("config", "Config"), ("roles", "Parameters by role")):
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        t.add_column("")
        for head in heads:
            t.add_column(head, justify="right")
        for row in cmp.rows:
            if row.section == section:
                t.add_row(row.label, *(_cell(v) for v in row.values))
        parts += [t, Text("")]
    return Group(*parts)


def _short_labels(reports: Sequence[Report]) -> list[str]:
    """A column's header: the model's last name part (``Meta-Llama-3-8B``), with its revision where two
    columns would read alike, or its whole label where even that repeats."""
    labels = [_column_label(r) for r in reports]
    short = [sanitize(r.checkpoint.label.rstrip("/").rsplit("/", 1)[-1]) for r in reports]
    for i, r in enumerate(reports):
        if short.count(short[i]) > 1 and r.checkpoint.provenance.revision:
            short[i] = f"{short[i]}@{r.checkpoint.provenance.revision[:7]}"
    return [s if short.count(s) == 1 else labels[i] for i, s in enumerate(short)]


def compare_markdown(cmp: Comparison) -> str:
    head = "| | " + " | ".join(markdown(_column_label(r)) for r in cmp.reports) + " |"
    rule = "|---|" + "--:|" * len(cmp.reports)
    lines: list[str] = []
    for section, title in (("totals", "Totals"), ("config", "Config"), ("roles", "Parameters by role")):
        lines += [f"**{title}**", "", head, rule]
        for row in cmp.rows:
            if row.section == section:
                lines.append(f"| {markdown(row.label)} | " + " | ".join(markdown(_cell(v)) for v in row.values) + " |")
        lines.append("")
    return "\n".join(lines)
