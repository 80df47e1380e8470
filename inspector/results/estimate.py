"""``inspect estimate MODEL --json``: the figures, the architecture and (with a budget) the fit, its builder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Final, TypedDict

from inspector.analysis.serving import engines
from inspector.analysis.structure.architecture import Runs, StackKind
from inspector.results import common
from inspector.results.common import ModelDoc, SchemaVersion, SuggestionDoc
from inspector.results.schema import Choices

if TYPE_CHECKING:
    from inspector.analysis.facts.report import Report
    from inspector.analysis.knobs import Knob
    from inspector.analysis.serving.estimate import Estimate
    from inspector.analysis.serving.fit import Fit
    from inspector.analysis.structure.architecture import Architecture, Stack


class FitTerm(TypedDict):
    name: str
    bytes: int
    formula: str
    source: str


class CurvePoint(TypedDict):
    context: int
    total_bytes: int


class FitDoc(TypedDict):
    """A fit to a budget (analysis/serving/fit.py), under an engine's rules."""

    budget_bytes: int
    devices: int
    batch: int
    context: int
    weights_bytes: int
    weights_bytes_all_devices: int
    replicated_bytes: int
    replicated: list[str]
    kv_bytes_per_token: int
    kv_bytes: int
    kv_share: str
    kv_formula: str
    overhead_bytes: int
    overhead_formula: str
    total_bytes: int
    fits: bool | None
    max_context: int | None
    max_context_capped: bool
    max_batch: int | None
    model_limit: int | None
    unknown: str | None
    engine: Annotated[str, Choices(lambda: [*engines.ENGINES, "diffusers"])]
    gpu: str | None
    utilization: float | None
    usable_bytes: int
    terms: list[FitTerm]
    kv_pool_bytes: int | None
    kv_pool_tokens: int | None
    pipeline: int
    stages: list[str]
    stage: str | None
    weights_note: str | None
    curve: list[CurvePoint]
    state_bytes: int


class FigureRow(TypedDict):
    name: str
    label: str
    value: float | None
    unit: str
    formula: str
    source: str
    assumptions: list[str]


class QuantRoleRow(TypedDict):
    role: str
    logical: int
    stored: int
    weight_bytes: int
    overhead_bytes: int
    bits_per_weight: float | None


class QuantizationDoc(TypedDict):
    method: str | None
    bits: int | None
    source: str
    logical_parameters: int
    stored_elements: int
    overhead_elements: int
    notes: list[str]
    by_role: list[QuantRoleRow]


class WhatIfRow(TypedDict):
    dtype: str
    bytes: int
    formula: str


class LayerKindRun(TypedDict):
    kind: str
    first: int
    last: int
    count: int


class StackDoc(TypedDict):
    kind: StackKind
    name: str
    runs: Runs
    parameters: int
    active_parameters: int
    layers: int
    layer_kinds: list[LayerKindRun]


class ArchitectureDoc(TypedDict):
    decodes: bool
    tied: bool
    kv_check: str
    embedding: int
    lookups: int
    head: int
    other: int
    stacks: list[StackDoc]


class EstimateDoc(TypedDict):
    schema_version: SchemaVersion
    model: ModelDoc
    context: int
    batch: int
    kv_dtype: str
    no_tokens: str | None
    figures: list[FigureRow]
    quantization: QuantizationDoc
    what_if: list[WhatIfRow]
    architecture: ArchitectureDoc
    fit: FitDoc | None
    #: the one answer a script gates on: fit.fits, null without a budget
    fits: bool | None
    warnings: list[str]
    #: where it does not fit: each change that makes it fit (analysis/knobs.py)
    suggestions: list[SuggestionDoc]


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


def fit_json(f: Fit) -> FitDoc:
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


def estimate_json(report: Report, est: Estimate, fitted: Fit | None = None,
                  suggestions: Sequence[Knob] = ()) -> EstimateDoc:
    q = est.quant
    c = report.checkpoint
    return {
        "schema_version": common.SCHEMA_VERSION,
        "model": common.model_json(c),
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
        "suggestions": common.suggestions_json(suggestions),
    }


def architecture_json(arch: Architecture) -> ArchitectureDoc:
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
