"""Renderers for ``inspect plan``: the answer in one line, then every layout, valid or not."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.analysis.facts.report import Report
from inspector.analysis.serving.plan import Plan
from inspector.render.output import n
from inspector.render.text import markdown, sanitize
from inspector.results.plan import gib, headline, layout_text

if TYPE_CHECKING:
    pass

#: invalid layouts the table lists (the JSON has them all)
SHOWN_INVALID = 12


def plan_table(report: Report, p: Plan, suggestions: Sequence[str] = (), *, explain: bool = False) -> RenderableType:
    """The answer, then (``suggestions``) what makes it fit, the layouts accepted and refused."""
    parts: list[RenderableType] = [
        Text(f"{sanitize(report.checkpoint.label)}: {p.engine}, {p.context:,} tokens a sequence, ranked by "
             f"{p.objective}", style="bold"),
        Text(headline(p), style="bold green" if p.best else "bold red")]
    if suggestions:
        parts.append(Text("what makes it fit: " + sanitize("; ".join(suggestions))))
    t = Table(title="Layouts the engine accepts (memory per GPU)", title_justify="left", show_edge=False,
              pad_edge=False)
    # headers of short words: at 80 columns they fold, and the figures keep their width
    for col, just in (("GPU", "left"), ("GPUs", "right"), ("TP", "right"), ("PP", "right"), ("EP", "right"),
                      ("fits", "left"), ("weights GiB", "right"), ("KV pool GiB", "right"),
                      ("max context", "right"), (f"seqs at {p.context:,}", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in p.rows:
        f = r.fit
        if not r.valid or f is None:
            continue
        verdict = "unknown" if f.fits is None else ("yes" if f.fits else "no")
        t.add_row(r.layout.gpu.name, str(r.layout.gpus), str(r.layout.tp), str(r.layout.pp), str(r.layout.ep),
                  verdict, gib(f.weights.per_device), gib(f.kv.pool_bytes), n(f.limits.max_context),
                  n(r.sequences) if r.sequences is not None else "—")
    parts.append(t)
    invalid = [r for r in p.rows if not r.valid]
    if invalid:
        parts.append(Text(f"{len(invalid):,} layouts the engine refuses at start-up"
                          + (f" (the first {SHOWN_INVALID}; --json lists all)" if len(invalid) > SHOWN_INVALID else "")
                          + ":", style="bold"))
        for r in invalid[:SHOWN_INVALID]:
            parts.append(Text(f"  {layout_text(r)}: " + "; ".join(why for _, why in r.broken), style="red"))
        keys = {rule.key: rule for r in invalid for rule, _ in r.broken}
        if explain:  # each broken rule as the engine's source states it
            parts += [Text(f"  {rule.key}: {rule.demands} ({rule.source})", style="dim") for rule in keys.values()]
    parts.append(Text("cheapest = fewest GPUs (price is not modelled); each fit is `inspect estimate`'s for that "
                      "layout", style="dim"))
    return Group(*parts)


def plan_markdown(report: Report, p: Plan) -> str:
    lines = [f"### {markdown(report.checkpoint.label)}: {markdown(headline(p))}", "",
             "| GPU | GPUs | TP | PP | EP | fits | weights/GPU GiB | KV pool GiB | sequences |",
             "|---|--:|--:|--:|--:|---|--:|--:|--:|"]
    for r in p.rows:
        f = r.fit
        if f is None:
            continue
        lines.append(f"| {r.layout.gpu.name} | {r.layout.gpus} | {r.layout.tp} | {r.layout.pp} | {r.layout.ep} | "
                     f"{'yes' if f.fits else 'no'} | {gib(f.weights.per_device)} | {gib(f.kv.pool_bytes)} | "
                     f"{n(r.sequences) if r.sequences is not None else '—'} |")
    return "\n".join(lines) + "\n"
