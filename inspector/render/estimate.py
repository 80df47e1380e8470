"""Renderers for ``inspect estimate``: the fit table (verdict first), the estimate's figures with their formulas, the
JSON document and its markdown; ``estimate_line``, the one-line estimate ``inspect MODEL`` shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.analysis.facts.report import Report
from inspector.analysis.serving.engines import ENGINES
from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it; the result
    # types of the other commands are not imported by a plain `inspect MODEL` either
    from rich.console import RenderableType

    from inspector.analysis.serving.estimate import Estimate
    from inspector.analysis.serving.fit import CommonFit, Fit
    from inspector.analysis.structure.architecture import Architecture

from inspector.render.output import md_table, n, short, size
from inspector.results.estimate import figure_label, layer_runs

# --- estimate -------------------------------------------------------------------------------------


def _value(v: int | float | None, unit: str) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4f}"
    if unit == "B":
        return f"{v:,} B ({size(v)})"
    if unit == "FLOP":
        return f"{v:,} ({short(v)})"
    return n(v)


def gb_gib(value: int) -> str:
    return f"{value:,} B ({value / 10**9:.2f} GB, {value / 2**30:.2f} GiB)"


#: the line a table without ``--explain`` ends with
EXPLAIN_HINT = "--explain: each figure's formula, source and assumptions (--json has them always)"


def fit_table(f: Fit, *, explain: bool = False) -> RenderableType:
    # deferred: 25 ms at import (rich.console, rich.table, rich.text)
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    per = " per device" if f.devices > 1 else ""
    gpu = f" {f.gpu}" if f.gpu else ""
    util = f" × {ENGINES[f.engine].fraction_words(f.runtime.utilization)[0]}" if f.runtime.utilization else ""
    at = f", context {f.context:,}, batch {f.batch}" if f.engine != "diffusers" else ""
    # the question as a line of its own: as the table's title it wrapped at the table's width
    title = Text(f"Will it fit? {f.devices} ×{gpu} {f.budget_bytes / 2**30:.2f} GiB{util}, {f.engine}{at}",
                 style="italic")
    t = Table(show_edge=False, pad_edge=False)
    t.add_column("memory" + per)
    t.add_column("bytes", justify="right")
    t.add_column("GB", justify="right")
    t.add_column("GiB", justify="right")
    if explain:
        t.add_column("how")
    tp = f.devices // f.stages.count
    rows = [("weights", f.weights.per_device, (f"1/{tp} of {f.weights.all:,} B, replicated pieces whole"
                                          if tp > 1 else "as the headers hold them") +
             (f"; {f.weights.note}" if f.weights.note else "")),
            ("KV cache", f.kv.bytes, f.kv.share if f.engine == "diffusers" else "unknown (not counted)"
             if f.fits is None else
             f"{f.kv.formula}; {f.kv.share}")]
    if f.kv.state_bytes:
        rows.append(("recurrent state", f.kv.state_bytes, f"state per sequence × batch {f.batch}"))
    rows += [(term.name, term.bytes, term.formula) for term in f.runtime.terms]
    rows += [("total", f.total_bytes, "weights + KV cache + " + ("recurrent state + " if f.kv.state_bytes else "")
              + f.runtime.formula),
             ("budget", f.budget_bytes, f"--gpu{gpu}")]
    if f.runtime.utilization:
        rows.append(("usable", f.runtime.usable_bytes, ENGINES[f.engine].fraction_words(f.runtime.utilization)[1]))
    if f.kv.pool_bytes is not None and f.fits is not None:
        tokens = f"; {f.kv.pool_tokens:,} tokens in blocks of 16" if f.kv.pool_tokens is not None else \
            "; tokens not given: windowed or recurrent layers are paged apart by vLLM's hybrid allocator"
        rows.append(("KV pool", f.kv.pool_bytes,
                     "usable − weights − terms above (vLLM sizes its cache to it)" + tokens))
    for label, value, how in rows:
        t.add_row(sanitize(label), n(value), f"{value / 10**9:.2f}", f"{value / 2**30:.2f}",
                  *([sanitize(how)] if explain else []))
    if f.fits is None:
        parts: list[RenderableType] = [title, t, Text("fit unknown: " + sanitize(f.unknown or "a figure is missing"),
                                                      style="bold yellow")]
    else:
        verdict = Text("fits" if f.fits else "does not fit", style="bold green" if f.fits else "bold red")
        verdict.append(f": {f.total_bytes / 2**30:.2f} GiB of {f.runtime.usable_bytes / 2**30:.2f} GiB{per}", style="")
        limit = (f"the model's own limit of {f.limits.model_limit:,}" if f.limits.capped else "the budget")
        most = (f"largest context that fits at batch {f.batch}: {f.limits.max_context:,} tokens (capped by {limit}); "
                f"largest batch at {f.context:,} tokens: {f.limits.max_batch:,}") if f.limits.max_context else \
            "the weights alone are more than the budget, before any activation" if f.engine == "diffusers" else \
            "not even one token of context fits beside the weights and overhead"
        parts = [title, t, verdict, Text(most)]
    sources = [f"{term.name}: {term.source}" for term in f.runtime.terms] if explain else []
    if sources:
        parts.append(Text("sources: " + sanitize("; ".join(sources)), style="dim"))
    if f.weights.replicated and f.devices > 1:
        parts.append(Text("replicated on every device: " + ", ".join(f.weights.replicated), style="dim"))
    if f.stages.described:
        parts.append(Text(f"{f.stages.count} pipeline stages of {f.devices // f.stages.count} device(s); the figures "
                          f"above are the tightest, {f.stages.tightest}: " + "; ".join(f.stages.described),
                          style="dim"))
    return Group(*parts)  # (its warnings are said once, on stderr)


def stacks_line(arch: Architecture) -> str:
    """The stacks in one line: ``decoder 32 layers (full ×32, per token) · vision 27 layers (per input)``."""
    parts = []
    for s in arch.stacks:
        runs = layer_runs(s)
        kinds = ", ".join(f"{k} ×{count}" if count > 1 else k for k, _, _, count in runs[:6])
        kinds += " …" if len(runs) > 6 else ""
        when = {"per_token": "per token", "per_input": "once per input", "never": "not in plain decoding"}[s.runs]
        layers = f"{len(s.layers)} layers ({kinds}), " if s.layers else ""
        parts.append(f"{s.kind} {layers}{s.parameters:,} parameters, {when}")
    return "stacks: " + " · ".join(parts)


def estimate_scope(est: Estimate) -> str:
    """What an estimate is of: context, batch and KV dtype, or a pipeline's weights alone."""
    if est.kv is None:
        return "weights (a diffusion model decodes no tokens: no KV cache, no per-token FLOPs)"
    return f"estimates at context {est.context:,}, batch {est.batch}, KV cache in {est.kv_dtype}"


def estimate_table(report: Report, est: Estimate, fitted: Fit | None = None, *,
                   explain: bool = False) -> RenderableType:
    # deferred: 25 ms at import (rich.console, rich.table, rich.text)
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    c = report.checkpoint
    parts: list[RenderableType] = [] if fitted is None else [fit_table(fitted, explain=explain), Text("")]
    parts += [
        Text(f"{sanitize(c.label)}: {estimate_scope(est)}", style="bold")]
    if est.architecture.stacks and est.kv is not None:
        parts.append(Text(sanitize(stacks_line(est.architecture)), style="dim"))
    t = Table(show_edge=False, pad_edge=False)
    t.add_column("figure")
    t.add_column("value", justify="right")
    if explain:
        t.add_column("formula")
        t.add_column("notes", justify="right")
    notes: list[str] = []
    for f in est.figures:
        marks = []
        for text in (f.source, *f.assumptions):
            if text not in notes:
                notes.append(text)
            marks.append(str(notes.index(text) + 1))
        t.add_row(sanitize(figure_label(f.name)), _value(f.value, f.unit),
                  *([sanitize(f.formula), ",".join(marks)] if explain else []))
    parts += [t, Text("")]
    q = est.quant
    if q.method or q.overhead_elements:
        heading = f"Quantisation: {q.method} {q.bits or ''}-bit (from {q.source})".replace(" -bit", "")
        qt = Table(title=sanitize(heading),
                   title_justify="left", show_edge=False, pad_edge=False)
        for col, just in (("role", "left"), ("logical parameters", "right"), ("stored elements", "right"),
                          ("weight bytes", "right"), ("overhead bytes", "right"), ("bits/weight", "right")):
            qt.add_column(col, justify=just)  # type: ignore[arg-type]
        for r in q.rows:
            bpw = f"{r.bits_per_weight:.3f}" if r.bits_per_weight is not None else "—"
            qt.add_row(r.role, n(r.logical), n(r.stored), n(r.weight_bytes), n(r.overhead_bytes), bpw)
        qt.add_row("total", n(q.logical_parameters), n(q.stored_elements), "", n(q.overhead_elements) + " el.",
                   "", style="bold")
        parts += [qt, Text("scales, zero points and group indices are overhead, not parameters", style="dim"),
                  Text("")]
        notes += list(q.notes)
    w = Table(title="Weights at other dtypes", title_justify="left", show_edge=False, pad_edge=False)
    w.add_column("dtype")
    w.add_column("bytes", justify="right")
    w.add_column("how")
    for what in est.what_if:
        w.add_row(what.dtype, f"{what.bytes:,} ({size(what.bytes)})", sanitize(what.formula))
    parts += [w, Text("")]
    if not explain:
        return Group(*parts, Text(EXPLAIN_HINT, style="dim"))
    for i, note in enumerate(notes, 1):
        parts.append(Text(f"{i}. {sanitize(note)}", style="dim"))
    return Group(*parts)


def estimate_line(est: Estimate, common: CommonFit | None = None) -> str:
    """The one-line summary ``inspect MODEL`` prints; ``common``: the smallest common budget it fits."""
    kv = est.kv
    if kv is None:  # a diffusion pipeline or model: weights (per component) only
        parts = [f"{sanitize(f.name.removeprefix('weights_bytes.'))} {n(f.value)} B" for f in est.weights.components] \
            or [f"{n(est.weights.bytes.value)} B"]
        return ("estimate: no KV cache or per-token FLOPs (a diffusion model decodes no tokens); weights " +
                " · ".join(parts))
    flops = est.flops.weights_per_token.value if est.flops is not None else None
    per_input = est.flops.per_input_token if est.flops is not None else None
    value = kv.per_token.value
    if kv.none is not None:
        kv_text = f"no KV cache ({kv.none})"
    else:
        kv_text = f"KV cache {n(value)} B/token ({est.kv_dtype})" if value is not None else "KV cache unknown"
    parts = [kv_text, f"{n(flops)} FLOPs/token (weights)" if flops else
             f"{n(per_input.value)} FLOPs/input token (weights)" if per_input is not None and per_input.value else ""]
    if kv.state_per_sequence is not None and kv.state_per_sequence.value is not None:
        parts.append(f"recurrent state {n(kv.state_per_sequence.value)} B/sequence")
    if est.moe is not None:
        parts.append(f"active {n(est.moe.active.value)} parameters/token")
    if est.quant.method:
        parts.append(f"{sanitize(est.quant.method)}: {n(est.quant.logical_parameters)} logical parameters")
    if common is not None:
        # deferred: 12 ms at import (inspector.analysis.serving.fit)
        from inspector.analysis.serving.fit import COMMON_BUDGETS_GIB

        parts.append(f"fits {'one' if common.devices == 1 else f'{common.devices} ×'} {common.gib} GiB GPU"
                     f"{'' if common.devices == 1 else 's'} at {common.context:,} tokens of context"
                     if common.devices is not None else
                     f"does not fit 8 × {COMMON_BUDGETS_GIB[-1]} GiB GPUs at {common.context:,} tokens of context")
    return "estimate: " + " · ".join(p for p in parts if p) + " (inspect estimate for formulas)"


def estimate_markdown(report: Report, est: Estimate, fitted: Fit | None = None) -> str:
    """``inspect estimate --format markdown``: every figure with its formula and source; the fit."""
    lines = [f"### {markdown(report.checkpoint.label)}: {markdown(estimate_scope(est))}", ""]
    lines += md_table(None, ["figure", "value", "formula", "source"], [
        [markdown(f.name), "unknown" if f.value is None else n(f.value) + (f" {markdown(f.unit)}" if f.unit else ""),
         markdown(f.formula), markdown(f.source)] for f in est.figures], {1})
    if est.what_if:
        lines += md_table("Weights in other dtypes",
            ["dtype", "bytes"], [[markdown(w.dtype), n(w.bytes)] for w in est.what_if], {1})
    if fitted is not None:
        lines += md_table("Fit", ["term", "bytes per device"], [
            ["weights", n(fitted.weights.per_device)], ["KV cache", n(fitted.kv.bytes)],
            *[[markdown(t.name), n(t.bytes)] for t in fitted.runtime.terms], ["total", n(fitted.total_bytes)],
            ["budget", n(fitted.budget_bytes)], ["usable", n(fitted.runtime.usable_bytes)],
            *([["KV pool", n(fitted.kv.pool_bytes)]] if fitted.kv.pool_bytes is not None else [])], {1})
        if fitted.fits is False and fitted.engine == "diffusers":
            lines.append("does not fit: the weights alone are more than the budget, before any activation")
        elif fitted.fits is None or fitted.limits.max_context is None or fitted.limits.max_batch is None:
            lines.append("fit unknown: " + markdown(fitted.unknown or "a figure is missing"))
        else:
            lines.append(("fits" if fitted.fits else "does not fit") + f"; largest context "
                         f"{n(fitted.limits.max_context)}, largest batch {n(fitted.limits.max_batch)}")
    lines += [f"_warning: {markdown(w)}_" for w in (*est.warnings, *(fitted.warnings if fitted else ()))]
    return "\n".join(lines) + "\n"
