"""``inspect plan MODEL --json``: the layouts an engine accepts, ranked; the answer in one line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, TypedDict

from inspector.analysis.facts.report import Report
from inspector.analysis.knobs import Knob
from inspector.analysis.serving import engines
from inspector.analysis.serving.plan import OBJECTIVES, Plan, Row
from inspector.results import common
from inspector.results.common import ModelDoc, SchemaVersion, SuggestionDoc
from inspector.results.schema import Choices


class RuleRow(TypedDict):
    key: str
    demands: str
    source: str


class TermBytes(TypedDict):
    name: str
    bytes: int


class LayoutRow(TypedDict):
    gpu: str
    gpu_bytes: int
    gpus: int
    tp: int
    pp: int
    ep: int
    valid: bool
    fits: bool | None
    reasons: list[str]
    weights_bytes: int | None
    replicated_bytes: int | None
    kv_pool_bytes: int | None
    kv_pool_tokens: int | None
    kv_bytes_per_token: int | None
    total_bytes: int | None
    usable_bytes: int | None
    max_context: int | None
    max_sequences: int | None
    terms: list[TermBytes]


class PlanDoc(TypedDict):
    schema_version: SchemaVersion
    model: ModelDoc
    engine: Annotated[str, Choices(lambda: [*engines.ENGINES])]
    context: int
    objective: Annotated[str, Choices(lambda: OBJECTIVES)]
    utilization: float | None
    answer: str
    #: some layout fits; null where no valid layout's fit is known
    fits: bool | None
    rules: list[RuleRow]
    #: where no layout fits: the GPU count that would (analysis/knobs.py)
    suggestions: list[SuggestionDoc]
    layouts: list[LayoutRow]


GIB = 2**30


def gib(value: int | None) -> str:
    return "—" if value is None else f"{value / GIB:.2f}"


def layout_text(r: Row) -> str:
    lay = r.layout
    return f"{lay.gpus} × {lay.gpu.name}, TP {lay.tp}" + (f", PP {lay.pp}" if lay.pp > 1 else "") + (
        f", EP {lay.ep}" if lay.ep > 1 else "")


def headline(p: Plan) -> str:
    """The answer in one line: "2 × H100-80GB, TP 2: 61.2 GiB KV pool, 8 sequences at 32,768 tokens"."""
    best, fewest = p.best, p.fewest
    beside = f"; the fewest that fit: {layout_text(fewest)}" if fewest is not None and fewest is not best else ""
    if best is None or best.fit is None:
        asked = " or ".join(f"{n} × {name}" for name, n in p.asked)
        if asked and fewest is not None:
            return f"no layout of {asked} fits (the engine's rules or memory){beside}"
        valid = sum(1 for r in p.rows if r.valid)
        return (f"no layout of the GPUs considered fits ({valid} valid of {len(p.rows)}): more GPUs "
                "(--max-gpus, --nodes) or larger ones (--gpu)")
    f = best.fit
    pool = f"{gib(f.kv.pool_bytes)} GiB KV pool" if f.kv.pool_bytes is not None else "KV cache by context"
    seqs = (f", {best.sequences:,} sequences at {p.context:,} tokens" if best.sequences is not None else
            f", largest context {f.limits.max_context:,} tokens" if f.limits.max_context else "")
    return f"{layout_text(best)}: {pool}{seqs}{beside}"


def plan_json(report: Report, p: Plan, suggestions: Sequence[Knob] = ()) -> PlanDoc:
    """One row per layout, in ranking order: the GPU, counts as integers, validity with every broken rule,
    and the per-GPU figures in bytes (null for an invalid layout)."""
    rows: list[LayoutRow] = []
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
        "schema_version": common.SCHEMA_VERSION, "model": common.model_json(report.checkpoint), "engine": p.engine,
        "context": p.context, "objective": p.objective, "utilization": p.utilization, "answer": headline(p),
        "fits": p.fits,
        "rules": [{"key": rule.key, "demands": rule.demands, "source": rule.source}
                  for rule in {rule.key: rule for r in p.rows for rule, _ in r.broken}.values()],
        "layouts": rows,
        "suggestions": common.suggestions_json(suggestions),
    }
