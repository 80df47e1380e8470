"""Renderers for ``inspect lineage``: the verdict first, then one row a candidate with its evidence counted,
then the tensors of the closest candidate that are not equal. JSON, table, markdown and HTML, every string
from outside through ``text.sanitize`` first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.analysis.comparison.ancestry import Candidate, Lineage, TensorEvidence
from inspector.model import natural_key
from inspector.render.text import markdown, sanitize
from inspector.results.lineage import lineage_json

if TYPE_CHECKING:
    pass

#: tensors listed under the table (the JSON has every sampled one)
SHOWN_TENSORS = 12
_STYLE = {"identical": "green", "finetune": "green", "merge": "green", "quantized": "green", "adapter": "green",
          "unrelated": "red", "different-architecture": "red", "unknown": "yellow"}


def headline(lin: Lineage) -> str:
    """The answer in one line: "org/x is a fine-tune of org/base" / "… is a merge of A and B"."""
    label = lin.model.checkpoint.label
    if lin.verdict == "merge":
        return f"{label} is a merge of " + " and ".join(lin.parents)
    if lin.base is not None:
        return f"{label} is {_WORDS[lin.verdict]} {lin.base}"
    return {"unrelated": f"{label} is unrelated to every candidate",
            "different-architecture": f"{label} has another architecture than every candidate"}.get(
        lin.verdict, f"{label}: not enough evidence to say where it came from")


_WORDS = {"identical": "identical to", "quantized": "quantised from", "adapter": "an adapter of",
          "finetune": "a fine-tune of", "merge": "a merge with"}
def _evidence_cell(c: Candidate) -> str:
    k = c.counts
    if not k.compared:
        return ""
    parts = [f"{k.equal:,} equal", f"{k.changed:,} changed"]
    if k.unrelated:
        parts.append(f"{k.unrelated:,} unrelated")
    if k.quantized:
        parts.append(f"{k.quantized:,} quantised")
    if k.blended:
        parts.append(f"{k.blended:,} blended")
    if k.constant:
        parts.append(f"{k.constant:,} constant")
    if k.packed:
        parts.append(f"{k.packed:,} packed")
    return f"{', '.join(parts)} of {k.compared:,}"


def _not_equal(lin: Lineage) -> list[TensorEvidence]:
    best = next((c for c in lin.candidates if c.label == lin.base), None)
    if best is None:
        return []
    return sorted((t for t in best.tensors if t.kind not in ("equal", "constant")), key=lambda t: natural_key(t.name))


def lineage_table(lin: Lineage) -> RenderableType:
    parts: list[RenderableType] = []
    parts.append(Text(sanitize(headline(lin)), style=f"bold {_STYLE[lin.verdict]}"))
    parts += [Text(sanitize(line)) for line in lin.evidence]
    t = Table(show_edge=False, pad_edge=False)
    for col in ("candidate", "relation", "tensors", "why"):
        t.add_column(col, overflow="fold")
    for c in lin.candidates:
        name = Text(sanitize(c.label))
        if c.declared:
            name.append(" (declared)", style="dim")
        t.add_row(name, Text(c.relation, style=_STYLE[c.relation]), _evidence_cell(c), sanitize(c.why))
    parts.append(t)
    rows = _not_equal(lin)
    if rows:
        listed = Table(show_edge=False, pad_edge=False, title=f"tensors not equal to {sanitize(lin.base or '')}")
        for col in ("tensor", "relation", "r", "largest change"):
            listed.add_column(col, overflow="fold", justify="right" if col in ("r", "largest change") else "left")
        for x in rows[:SHOWN_TENSORS]:
            listed.add_row(sanitize(x.name), x.kind, _num(x.correlation), _num(x.max_abs))
        parts.append(listed)
        if len(rows) > SHOWN_TENSORS:
            parts.append(Text(f"… and {len(rows) - SHOWN_TENSORS:,} more (--json lists them all)", style="dim"))
    parts.append(Text(_read_line(lin), style="dim"))
    return Group(*parts)


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _read_line(lin: Lineage) -> str:
    model, others = lin.tensor_bytes_read
    if not lin.sampled:
        return "no tensor data read"
    share = model / lin.model.summary.bytes * 100 if lin.model.summary.bytes else 0
    return (f"{lin.sampled:,} tensors sampled: {model:,} bytes of the model's tensor data read ({share:.2g} %), "
            f"{others:,} of the candidates', {lin.requests:,} requests; sampled evidence is not proof of equality")


def lineage_markdown(lin: Lineage) -> str:
    out = [f"## Lineage of {markdown(sanitize(lin.model.checkpoint.label))}\n",
           f"**{markdown(sanitize(headline(lin)))}**\n"]
    out += [f"- {markdown(sanitize(line))}" for line in lin.evidence]
    out.append("\n| candidate | relation | tensors | why |\n|---|---|---|---|")
    for c in lin.candidates:
        label = sanitize(c.label) + (" (declared)" if c.declared else "")
        out.append(f"| {markdown(label)} | {c.relation} | {_evidence_cell(c)} | {markdown(sanitize(c.why))} |")
    rows = _not_equal(lin)
    if rows:
        out.append(f"\nTensors not equal to {markdown(sanitize(lin.base or ''))}:\n\n| tensor | relation | r | "
                   "largest change |\n|---|---|---:|---:|")
        out += [f"| {markdown(sanitize(x.name))} | {x.kind} | {_num(x.correlation)} | {_num(x.max_abs)} |"
                for x in rows[:SHOWN_TENSORS]]
    out.append(f"\n{markdown(_read_line(lin))}\n")
    return "\n".join(out)


def lineage_html(lin: Lineage) -> str:
    """A self-contained page (``html.page``): the verdict, the candidates, the tensors not equal."""
    # deferred: 3 ms at import (inspector.render.html)
    from inspector.render.html import figure, page, table

    doc = lineage_json(lin)
    body = ["<div class=\"figures\">",
            figure("Verdict", sanitize(headline(lin)), "", "lineage-verdict"),
            figure("Tensors sampled", lin.sampled, f"{sum(lin.tensor_bytes_read):,} bytes read"),
            "</div>\n"]
    body += [f"<p>{_esc(line)}</p>\n" for line in lin.evidence]
    body.append("<h2>Candidates</h2>\n")
    body.append(table(("candidate", "relation", "tensors", "why"),
                      ((sanitize(c.label) + (" (declared)" if c.declared else ""), c.relation, _evidence_cell(c),
                        sanitize(c.why)) for c in lin.candidates), ident="lineage-candidates"))
    rows = _not_equal(lin)
    if rows:
        body.append(f"<h2>Tensors not equal to {_esc(lin.base or '')}</h2>\n")
        body.append(table(("tensor", "relation", "r", "largest change"),
                          ((sanitize(x.name), x.kind, _num(x.correlation), _num(x.max_abs)) for x in rows),
                          ident="lineage-tensors"))
    body.append(f"<p class=\"note\">{_esc(_read_line(lin))}</p>\n")
    return page(sanitize(f"lineage of {lin.model.checkpoint.label}"), _esc(headline(lin)), body, doc)


def _esc(text: str) -> str:
    # deferred: 2 ms at import (inspector.render.svg)
    from inspector.render.svg import esc

    return esc(sanitize(text))
