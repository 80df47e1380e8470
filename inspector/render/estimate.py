"""Renderers for ``inspect estimate``: the fit table (verdict first), the estimate's figures with their formulas, the
JSON document and its markdown; ``estimate_line``, the one-line estimate ``inspect MODEL`` shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from inspector.analysis.engines import ENGINES
from inspector.analysis.report import Report
from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it; the result
    # types of the other commands are not imported by a plain `inspect MODEL` either
    from rich.console import RenderableType

    from inspector.analysis.architecture import Architecture, Stack
    from inspector.analysis.estimate import Estimate
    from inspector.analysis.fit import CommonFit, Fit
    from inspector.analysis.knobs import Knob

from inspector.render.output import SCHEMA_VERSION, md_table, model_json, n, short, size

# --- estimate -------------------------------------------------------------------------------------

#: each estimate figure's label in tables and pages (its JSON ``name`` is the key a script reads)
FIGURE_LABELS: Final = {
    "weights_bytes": "weights, as stored", "kv_bytes_per_token": "KV cache per token", "kv_bytes": "KV cache",
    "total_parameters": "parameters, total", "main_parameters": "parameters, main model",
    "active_parameters": "parameters, active per token", "flops_per_token_weights": "FLOPs per token, weights",
    "flops_per_token_attention": "FLOPs per token, attention", "flops_decode_step": "FLOPs, one decode step",
    "flops_prefill": "FLOPs, prefill", "attention_to_gemm_ratio": "attention / weight FLOPs",
    "attention_to_gemm_ratio_closed_form": "… closed form t / (2D + 1.5I)",
    "kv_bytes_full_reservation": "KV cache, whole-context reservation",
    "kv_bytes_per_input_token": "cross-attention K/V per input token",
    "state_bytes_per_sequence": "recurrent state per sequence", "flops_per_input_token": "FLOPs per input token",
}


def figure_label(name: str) -> str:
    """A figure's label; a component's figure (``weights_bytes.unet``) is its kind's label and the
    component (``weights, as stored: unet``)."""
    kind, _, part = name.partition(".")
    return f"{FIGURE_LABELS[kind]}: {part}" if part else FIGURE_LABELS[kind]


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


def fit_json(f: Fit) -> dict[str, object]:
    """The ``fit`` object: bytes per device; total = weights + KV + overhead; fits ⇔ total ≤ budget."""
    return {
        "budget_bytes": f.budget_bytes, "devices": f.devices, "batch": f.batch, "context": f.context,
        "weights_bytes": f.weights.per_device, "weights_bytes_all_devices": f.weights.all,
        "replicated_bytes": f.weights.replicated_bytes, "replicated": list(f.weights.replicated),
        "kv_bytes_per_token": f.kv.per_token, "kv_bytes": f.kv.bytes, "kv_share": f.kv.share,
        "kv_formula": f.kv.formula, "overhead_bytes": f.runtime.overhead_bytes, "overhead_formula": f.runtime.formula,
        "total_bytes": f.total_bytes,
        "fits": f.fits, "max_context": f.limits.max_context, "max_context_capped": f.limits.capped,
        "max_batch": f.limits.max_batch, "model_limit": f.limits.model_limit, "unknown": f.unknown,
        "engine": f.engine, "gpu": f.gpu, "utilization": f.runtime.utilization, "usable_bytes": f.runtime.usable_bytes,
        "terms": [{"name": t.name, "bytes": t.bytes, "formula": t.formula, "source": t.source}
                  for t in f.runtime.terms],
        "kv_pool_bytes": f.kv.pool_bytes, "kv_pool_tokens": f.kv.pool_tokens,
        "pipeline": f.stages.count, "stages": list(f.stages.described), "stage": f.stages.tightest,
        "weights_note": f.weights.note,
        "curve": [{"context": x, "total_bytes": y} for x, y in f.limits.curve], "state_bytes": f.kv.state_bytes,
    }


def gb_gib(value: int) -> str:
    return f"{value:,} B ({value / 10**9:.2f} GB, {value / 2**30:.2f} GiB)"


#: the line a table without ``--explain`` ends with
EXPLAIN_HINT = "--explain: each figure's formula, source and assumptions (--json has them always)"


def fit_table(f: Fit, *, explain: bool = False) -> RenderableType:
    # deferred: 38 ms at import (rich.console, rich.table, rich.text)
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


def estimate_json(report: Report, est: Estimate, fitted: Fit | None = None,
                  suggestions: Sequence[Knob] = ()) -> dict[str, object]:
    q = est.quant
    c = report.checkpoint
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model_json(c),
        "context": est.context, "batch": est.batch, "kv_dtype": est.kv_dtype, "no_tokens": est.no_tokens,
        "figures": [{"name": f.name, "label": figure_label(f.name), "value": f.value, "unit": f.unit,
                     "formula": f.formula, "source": f.source,
                     "assumptions": list(f.assumptions)} for f in est.figures],
        "quantization": {
            "method": q.method, "bits": q.bits, "source": q.source, "logical_parameters": q.logical_parameters,
            "stored_elements": q.stored_elements, "overhead_elements": q.overhead_elements, "notes": list(q.notes),
            "by_role": [{"role": r.role, "logical": r.logical, "stored": r.stored, "weight_bytes": r.weight_bytes,
                         "overhead_bytes": r.overhead_bytes, "bits_per_weight": r.bits_per_weight} for r in q.rows],
        },
        "what_if": [{"dtype": w.dtype, "bytes": w.bytes, "formula": w.formula} for w in est.what_if],
        "architecture": architecture_json(est.architecture),
        "fit": None if fitted is None else fit_json(fitted),
        "fits": None if fitted is None else fitted.fits,
        "warnings": list(est.warnings) + ([] if fitted is None else list(fitted.warnings)),
        "suggestions": [{"change": k.change, "total": k.total, "budget_bytes": k.budget} for k in suggestions],
    }


def architecture_json(arch: Architecture) -> dict[str, object]:
    """The stacks, each with when it runs and its layers in runs of one kind; the parameters outside."""
    return {
        "decodes": arch.decodes, "tied": arch.tied, "kv_check": arch.kv_check,
        "embedding": arch.embedding, "lookups": arch.lookups, "head": arch.head, "other": arch.other,
        "stacks": [{"kind": s.kind, "name": s.name, "runs": s.runs, "parameters": s.parameters,
                    "active_parameters": s.active, "layers": len(s.layers),
                    "layer_kinds": [{"kind": kind, "first": first, "last": last, "count": count}
                                    for kind, first, last, count in layer_runs(s)]} for s in arch.stacks],
    }


def layer_runs(stack: Stack) -> list[tuple[str, int, int, int]]:
    """A stack's layers as runs of one kind: (kind, first index, last index, count)."""
    runs: list[tuple[str, int, int, int]] = []
    for layer in stack.layers:
        kind = layer.kind
        if runs and runs[-1][0] == kind and runs[-1][2] == layer.index - 1:
            k, first, _, count = runs[-1]
            runs[-1] = (k, first, layer.index, count + 1)
        else:
            runs.append((kind, layer.index, layer.index, 1))
    return runs


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
        # deferred: 23 ms at import (inspector.analysis.fit)
        from inspector.analysis.fit import COMMON_BUDGETS_GIB

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
