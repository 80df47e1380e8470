"""Renderers for ``inspect plan``: the answer in one line, then every layout, valid or not."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.analysis.knobs import Knob
from inspector.analysis.plan import Plan, Row
from inspector.analysis.report import Report
from inspector.render.output import SCHEMA_VERSION, model_json, n
from inspector.render.text import markdown, sanitize

GIB = 2**30
#: invalid layouts the table lists (the JSON has them all)
SHOWN_INVALID = 12


def _gib(value: int | None) -> str:
    return "—" if value is None else f"{value / GIB:.2f}"


def _layout(r: Row) -> str:
    lay = r.layout
    return f"{lay.gpus} × {lay.gpu.name}, TP {lay.tp}" + (f", PP {lay.pp}" if lay.pp > 1 else "") + (
        f", EP {lay.ep}" if lay.ep > 1 else "")


def headline(p: Plan) -> str:
    """The answer in one line: "2 × H100-80GB, TP 2: 61.2 GiB KV pool, 8 sequences at 32,768 tokens"."""
    best = p.best
    if best is None or best.fit is None:
        valid = sum(1 for r in p.rows if r.valid)
        return (f"no layout of the GPUs considered fits ({valid} valid of {len(p.rows)}): more GPUs "
                "(--max-gpus, --nodes) or larger ones (--gpu)")
    f = best.fit
    pool = f"{_gib(f.kv.pool_bytes)} GiB KV pool" if f.kv.pool_bytes is not None else "KV cache by context"
    seqs = (f", {best.sequences:,} sequences at {p.context:,} tokens" if best.sequences is not None else
            f", largest context {f.limits.max_context:,} tokens" if f.limits.max_context else "")
    return f"{_layout(best)}: {pool}{seqs}"


def plan_json(report: Report, p: Plan, suggestions: Sequence[Knob] = ()) -> dict[str, object]:
    """One row per layout, in ranking order: the GPU, counts as integers, validity with every broken rule,
    and the per-GPU figures in bytes (null for an invalid layout)."""
    rows = []
    for r in p.rows:
        f = r.fit
        lay = r.layout
        rows.append({
            "gpu": lay.gpu.name, "gpu_bytes": lay.gpu.bytes, "gpus": lay.gpus, "tp": lay.tp, "pp": lay.pp, "ep": lay.ep,
            "valid": r.valid, "fits": f.fits if f is not None else None,
            "reasons": [f"{rule.key}: {why}" for rule, why in r.broken],
            "weights_bytes": f.weights.per_device if f else None,
            "replicated_bytes": f.weights.replicated_bytes if f else None,
            "kv_pool_bytes": f.kv.pool_bytes if f else None, "kv_pool_tokens": f.kv.pool_tokens if f else None,
            "kv_bytes_per_token": f.kv.per_token if f else None,
            "total_bytes": f.total_bytes if f else None, "usable_bytes": f.runtime.usable_bytes if f else None,
            "max_context": f.limits.max_context if f else None, "max_sequences": r.sequences,
            "terms": [{"name": t.name, "bytes": t.bytes} for t in f.runtime.terms] if f else [],
        })
    return {
        "schema_version": SCHEMA_VERSION, "model": model_json(report.checkpoint), "engine": p.engine,
        "context": p.context, "objective": p.objective, "utilization": p.utilization, "answer": headline(p),
        "fits": p.fits,
        "rules": [{"key": rule.key, "demands": rule.demands, "source": rule.source}
                  for rule in {rule.key: rule for r in p.rows for rule, _ in r.broken}.values()],
        "layouts": rows,
        "suggestions": [{"change": k.change, "total": k.total, "budget_bytes": k.budget} for k in suggestions],
    }


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
                  verdict, _gib(f.weights.per_device), _gib(f.kv.pool_bytes), n(f.limits.max_context),
                  n(r.sequences) if r.sequences is not None else "—")
    parts.append(t)
    invalid = [r for r in p.rows if not r.valid]
    if invalid:
        parts.append(Text(f"{len(invalid):,} layouts the engine refuses at start-up"
                          + (f" (the first {SHOWN_INVALID}; --json lists all)" if len(invalid) > SHOWN_INVALID else "")
                          + ":", style="bold"))
        for r in invalid[:SHOWN_INVALID]:
            parts.append(Text(f"  {_layout(r)}: " + "; ".join(why for _, why in r.broken), style="red"))
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
                     f"{'yes' if f.fits else 'no'} | {_gib(f.weights.per_device)} | {_gib(f.kv.pool_bytes)} | "
                     f"{n(r.sequences) if r.sequences is not None else '—'} |")
    return "\n".join(lines) + "\n"
