"""Renderers for ``inspect diff``: a table with a waterfall for people, JSON, markdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.analysis.comparison.adapter import AdapterDiff, adapter_config
from inspector.analysis.comparison.diff import Diff
from inspector.analysis.comparison.values import Change, ValueDiff
from inspector.analysis.facts.peft import describe
from inspector.analysis.facts.report import Report
from inspector.formats.dtypes import DTYPE_BITS
from inspector.render.output import n, shape_text, short
from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:
    pass


def side_label(r: Report) -> str:
    """``org/name@rev`` when the revision is known (two revisions of one repo differ only there)."""
    c, p = r.checkpoint, r.checkpoint.provenance
    return f"{c.label}@{p.revision[:12]}" if p.revision and p.origin in ("hub", "hf-cache") else c.label


def signed(value: int) -> str:
    return f"+{value:,}" if value > 0 else (f"−{-value:,}" if value < 0 else "0")


#: the changed and incomparable tensors every format names (the JSON lists every tensor)
VALUES_LISTED = 40
#: the verdicts a reader is shown by name
VALUES_NAMED = ("changed", "incomparable")


def values_title(v: ValueDiff) -> str:
    return "Values (sampled: " + ("hashed whole, " if v.exact else "") + f"{v.sample_bytes:,} B a tensor)"


def values_counts(v: ValueDiff) -> str:
    """The verdicts counted and what was read, one line."""
    counts = ", ".join(f"{v.count(k):,} {k}" for k in ("changed", "same-sampled", "identical", "incomparable")
                       if v.count(k))
    hashed = (f"; hashed whole (sha256) {v.bytes_hashed[0]:,} + {v.bytes_hashed[1]:,} B" if v.exact else "")
    return (f"{counts}; read {v.bytes_read[0]:,} + {v.bytes_read[1]:,} B in {v.requests[0]:,} + "
            f"{v.requests[1]:,} requests, of {v.weights_bytes:,} B of compared tensors a side{hashed}")


def change_text(change: Change | None) -> str:
    """A changed tensor's size of change: the largest |B − A| and, in brackets, that over the largest |A|:
    "0.0123 (1.9 %)" (the column's header says which is which)."""
    if change is None:
        return ""
    rel = f" ({change.relative * 100:.3g} %)" if change.relative is not None else ""
    return f"{change.max_abs:.3g}{rel}"


def identical_line(values: ValueDiff | None) -> str:
    """What a diff of the same structure says first: no difference, or the tensors whose values differ."""
    changed = values.count("changed") if values is not None else 0
    if changed:
        return (f"same tensors, shapes, dtypes and counts; the values of {changed:,} "
                f"tensor{'s' if changed != 1 else ''} differ (below)")
    return "no differences: same tensors, shapes, dtypes and counts"


def values_table(v: ValueDiff) -> RenderableType:
    """The values' verdicts: the summary, the counts, what was read, and the tensors that changed."""
    parts: list[RenderableType] = [Text(values_title(v), style="bold")]
    parts += [Text(sanitize(line)) for line in v.summary]
    parts.append(Text(values_counts(v), style="dim"))
    shown = [t for t in v.tensors if t.verdict in VALUES_NAMED][:VALUES_LISTED]
    if shown:
        t = Table(show_edge=False, pad_edge=False)
        for col in ("tensor", "verdict", "max |Δ| (of max |A|)", "why"):
            t.add_column(col, overflow="fold")  # a tensor's name whole, folded where it must be
        for x in shown:
            t.add_row(sanitize(x.name), x.verdict, change_text(x.change), sanitize(x.why))
        parts.append(t)
    return Group(*parts)


def waterfall(d: Diff, width: int = 40) -> list[tuple[str, str, str]]:
    """Rows of (label, bar, figure): A's total, each cause from the running total, B's total."""
    a, b = d.parameters
    steps = [c for c in d.causes if c.delta]
    running = a
    peak = max([a, b] + [running := running + c.delta for c in steps])
    scale = width / peak if peak else 0

    def bar(lo: int, hi: int, char: str) -> str:
        start, end = round(lo * scale), round(hi * scale)
        return " " * start + char * max(1, end - start)

    rows = [(d.a.checkpoint.label, bar(0, a, "█"), n(a))]
    running = a
    for c in steps:
        lo, hi = sorted((running, running + c.delta))
        sign = "+ " if c.delta > 0 else "− "
        rows.append((sign + c.key, bar(lo, hi, "▓" if c.delta > 0 else "░"), signed(c.delta)))
        running += c.delta
    rows.append((d.b.checkpoint.label, bar(0, b, "█"), n(b)))
    return rows


def _bytes_term(dtype: str, elements: int, nbytes: int) -> str:
    """``F16 −6,738,415,616 × 2 B``; a GGML block type has no fixed width: its bytes, said plainly."""
    if dtype in DTYPE_BITS:
        return f"{dtype} {signed(elements)} × {DTYPE_BITS[dtype] / 8:g} B"
    return f"{sanitize(dtype)} {signed(nbytes)} B"


def diff_table(d: Diff, *, all_changes: bool = False, values: ValueDiff | None = None) -> RenderableType:
    a, b = d.parameters
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{sanitize(side_label(d.a))} → {sanitize(side_label(d.b))}", style="bold")
    parts.append(head)
    if d.identical:
        line = identical_line(values)
        parts.append(Text(line, style="green" if line.startswith("no differences") else "bold yellow"))
        return Group(*parts)
    parts.append(Text(f"parameters {n(a)} → {n(b)} ({signed(b - a)}, {short(a)} → {short(b)})"))
    parts.append(Text(""))

    why = Table(title="Why: each cause with its arithmetic; they add up to the difference", title_justify="left",
                show_edge=False, pad_edge=False, show_header=True)
    why.add_column("cause / tensor")
    why.add_column("×", justify="right")
    why.add_column("arithmetic (per tensor)")
    why.add_column("parameters", justify="right")
    for c in d.causes:
        why.add_row(Text(sanitize(c.label), style="bold"), "", "", Text(signed(c.delta), style="bold"))
        listed = c.items if len(c.items) <= 13 else c.items[:12]
        for i in listed:
            why.add_row("  " + sanitize(i.tensor), str(i.count), sanitize(i.formula), signed(i.delta))
        if len(listed) < len(c.items):
            rest = sum(i.delta for i in c.items[len(listed):])
            why.add_row(f"  … {len(c.items) - len(listed)} more lines (--json lists them)", "", "", signed(rest),
                        style="dim")
    why.add_row(Text("total", style="bold"), "", f"{n(a)} → {n(b)}", Text(signed(b - a), style="bold"))
    parts += [why, Text("")]

    chart = Table.grid(padding=(0, 1))
    chart.add_column()
    chart.add_column()
    chart.add_column(justify="right")
    for label, bar, figure in waterfall(d):
        chart.add_row(sanitize(label), bar, figure)
    parts += [chart, Text("")]

    extra = Table.grid(padding=(0, 2))
    extra.add_column(style="bold")
    extra.add_column()
    extra.add_row("buffers", f"{n(d.buffers[0])} → {n(d.buffers[1])} ({signed(d.buffers[1] - d.buffers[0])}), "
                             "not parameters")
    extra.add_row("bytes", f"{n(d.bytes[0])} → {n(d.bytes[1])} ({signed(d.bytes[1] - d.bytes[0])}) = "
                           + ", ".join(_bytes_term(dt, de, db) for dt, de, db in d.bytes_by_dtype()))
    dtypes = ", ".join(f"{dt} {n(x)} → {n(y)}" for dt, x, y in d.dtypes)
    extra.add_row("dtypes", dtypes)
    if d.active[0] is not None or d.active[1] is not None:
        extra.add_row("active per token", f"{n(d.active[0] or a)} → {n(d.active[1] or b)}")
    parts += [extra, Text("")]

    if d.changes:
        ch = Table(title="Tensor changes", title_justify="left", show_edge=False, pad_edge=False)
        for col in ("change", "role", "tensor", "A", "B"):
            ch.add_column(col)
        shown = d.changes if all_changes else d.changes[:30]
        for change in shown:
            ch.add_row(change.kind, change.role, sanitize(change.name),
                       f"{shape_text(change.shape_a)} {change.dtype_a}" if change.shape_a is not None else "—",
                       f"{shape_text(change.shape_b)} {change.dtype_b}" if change.shape_b is not None else "—")
        parts.append(ch)
        if len(d.changes) > len(shown):
            parts.append(Text(f"… {len(d.changes) - len(shown)} more (--all-changes)", style="dim"))
        parts.append(Text(""))
    for note in d.notes:
        parts.append(Text("note: " + sanitize(note), style="yellow"))
    return Group(*parts)


def diff_markdown(d: Diff, values: ValueDiff | None = None) -> str:
    """For pull-request comments: every untrusted string is escaped for markdown (no code spans,
    which a backtick in a name would end), so nothing in a tensor name becomes a link or an image.
    With ``values``, their section follows (``values_markdown``)."""
    after = values_markdown(values) if values is not None else ""
    a, b = d.parameters
    la, lb = markdown(side_label(d.a)), markdown(side_label(d.b))
    lines = [f"### {la} → {lb}", ""]
    if d.identical:
        line = identical_line(values)
        return "\n".join([*lines, line[0].upper() + line[1:] + ".", ""]) + ("\n" + after if after else "")
    lines += [f"Parameters **{n(a)} → {n(b)}** ({signed(b - a)})", "",
              "| cause | tensor | × | arithmetic (per tensor) | parameters |", "|---|---|--:|---|--:|"]
    for c in d.causes:
        lines.append(f"| **{markdown(c.label)}** | | | | **{signed(c.delta)}** |")
        for i in c.items:
            lines.append(f"| | {markdown(i.tensor)} | {i.count} | {markdown(i.formula)} | {signed(i.delta)} |")
    lines.append(f"| **total** | | | | **{signed(b - a)}** |")
    lines += ["", f"Buffers {n(d.buffers[0])} → {n(d.buffers[1])} (not parameters); "
                  f"bytes {n(d.bytes[0])} → {n(d.bytes[1])}.", ""]
    if d.changes:
        lines += ["| change | role | tensor | A | B |", "|---|---|---|---|---|"]
        for change in d.changes:
            sa = f"{shape_text(change.shape_a)} {change.dtype_a}" if change.shape_a is not None else "—"
            sb = f"{shape_text(change.shape_b)} {change.dtype_b}" if change.shape_b is not None else "—"
            lines.append(f"| {change.kind} | {markdown(change.role)} | {markdown(change.name)} | "
                         f"{markdown(sa)} | {markdown(sb)} |")
        lines.append("")
    lines += [f"_{markdown(note)}_" for note in d.notes]
    return "\n".join(lines) + "\n" + ("\n" + after if after else "")


def values_markdown(v: ValueDiff) -> str:
    """The values' section: the summary, the counts, and the tensors the table names."""
    lines = [f"#### {markdown(values_title(v))}", ""]
    lines += [f"- {markdown(line)}" for line in v.summary]
    lines += ["", f"_{markdown(values_counts(v))}_", ""]
    shown = [t for t in v.tensors if t.verdict in VALUES_NAMED][:VALUES_LISTED]
    if shown:
        lines += ["| tensor | verdict | max \\|Δ\\| (of max \\|A\\|) | why |", "|---|---|---|---|"]
        lines += [f"| {markdown(t.name)} | {t.verdict} | {markdown(change_text(t.change))} | {markdown(t.why)} |"
                  for t in shown]
        lines.append("")
    return "\n".join(lines) + "\n"


# --- a PEFT adapter against its base ---------------------------------------------------------


def _share(a: AdapterDiff) -> str:
    return f"{a.share * 100:.4g}%"


def adapter_table(a: AdapterDiff) -> RenderableType:
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{sanitize(side_label(a.base))} ← adapter {sanitize(side_label(a.adapter))}", style="bold")
    parts.append(head)
    parts.append(Text(sanitize(describe(adapter_config(a.adapter) or {}))
                      + f"; base model named in adapter_config.json: {sanitize(a.base_model or 'none')}"))
    parts.append(Text(f"adapter parameters {n(a.parameters)} = {_share(a)} of the base's "
                      f"{n(a.base.summary.parameters)} (merged into the base, its count is unchanged)"))
    if a.frozen:
        parts.append(Text(f"trainable {n(a.trainable)}; the other {n(a.parameters - a.trainable)} are frozen copies of "
                          "base layers saved beside the factors (peft's save_embedding_layers)"))
    parts.append(Text(""))
    t = Table(title="What the adapter adds, module by module", title_justify="left", show_edge=False,
              pad_edge=False)
    for col, justify in (("module", "left"), ("×", "right"), ("lora_A", "left"), ("lora_B", "left"),
                         ("base weight", "left"), ("arithmetic (per module)", "left"), ("parameters", "right")):
        t.add_column(col, justify=justify)  # type: ignore[arg-type]
    for m in a.modules:
        base = shape_text(m.base_shape) if m.base_shape is not None else "missing"
        t.add_row(sanitize(m.module), str(m.layers), shape_text(m.shape_a), shape_text(m.shape_b), base,
                  m.formula, n(m.parameters))
    for name, count in a.other:
        t.add_row(sanitize(name), "1", "", "", "", "a whole copy (modules_to_save)", n(count))
    for name, count in a.frozen:
        t.add_row(sanitize(name), "1", "", "", "", "a frozen copy of the base layer (not trained)", n(count))
    t.add_row(Text("total", style="bold"), "", "", "", "", "", Text(n(a.parameters), style="bold"))
    parts += [t, Text("")]
    for problem in (p.text for p in a.problems):
        parts.append(Text("problem: " + sanitize(problem), style="red"))
    return Group(*parts)


def adapter_markdown(a: AdapterDiff) -> str:
    lines = [f"### {markdown(side_label(a.base))} ← adapter {markdown(side_label(a.adapter))}", "",
             f"{markdown(describe(adapter_config(a.adapter) or {}))}; adapter parameters **{n(a.parameters)}** "
             f"({_share(a)} of the base's {n(a.base.summary.parameters)})", "",
             "| module | × | lora_A | lora_B | base weight | arithmetic (per module) | parameters |",
             "|---|--:|---|---|---|---|--:|"]
    for m in a.modules:
        base = shape_text(m.base_shape) if m.base_shape is not None else "missing"
        lines.append(f"| {markdown(m.module)} | {m.layers} | {shape_text(m.shape_a)} | {shape_text(m.shape_b)} | "
                     f"{base} | {markdown(m.formula)} | {n(m.parameters)} |")
    for name, count in a.other:
        lines.append(f"| {markdown(name)} | 1 | | | | a whole copy (modules_to_save) | {n(count)} |")
    lines += [f"| **total** | | | | | | **{n(a.parameters)}** |", ""]
    lines += [f"_problem: {markdown(p.text)}_" for p in a.problems]
    return "\n".join(lines) + "\n"
