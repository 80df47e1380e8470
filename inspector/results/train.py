"""``inspect train MODEL --json``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, TypedDict

from inspector.analysis.training import losses, methods, optimizers, precisions
from inspector.analysis.training.experts import Layout
from inspector.analysis.training.options import Offload
from inspector.analysis.training.stages import Stage
from inspector.results import common
from inspector.results.common import ModelDoc, SchemaVersion, SuggestionDoc
from inspector.results.schema import Choices

if TYPE_CHECKING:
    from inspector.analysis.facts.report import Report
    from inspector.analysis.knobs import Knob
    from inspector.analysis.training.train import Term, Train


class PeakPart(TypedDict):
    name: str
    bytes: int


class PeakDoc(TypedDict):
    moment: str
    parts: list[PeakPart]


class TrainTerm(TypedDict):
    name: str
    bytes: int | None
    formula: str
    source: str
    exact: bool


class RuleOfThumb(TypedDict):
    who: str
    bytes: int
    formula: str


class TrainDoc(TypedDict):
    schema_version: SchemaVersion
    model: ModelDoc
    method: Annotated[str, Choices(methods.names)]
    rank: int | None
    alpha: float | None
    targets: list[str]
    optimizer: Annotated[str, Choices(lambda: [*optimizers.OPTIMIZERS])]
    precision: Annotated[str, Choices(precisions.names)]
    batch: int
    seq: int
    checkpointing: bool
    gpus: int
    gpu: str | None
    budget_bytes: int | None
    zero: int
    fsdp: bool
    offload: Offload
    experts: Layout
    stage: Stage
    loss: Annotated[str, Choices(losses.names)]
    generations: int | None
    completion_len: int | None
    beta: float | None
    rollout_memory: float | None
    reference: int
    sp: int
    freeze: list[str]
    optimizer_in_backward: bool
    offload_activations: bool
    compile: bool
    trainable_parameters: int
    frozen_parameters: int
    adapted_modules: int
    trainable_by_role: dict[str, int]
    weights: int
    gradients: int
    optimizer_states: int
    master_weights: int
    activations: int | None
    logits: int
    overhead: int
    total: int | None
    fits: bool | None
    cpu_bytes: int
    largest_batch: int | None
    largest_seq: int | None
    bits_per_weight: float | None
    peak_rule: str
    peak: PeakDoc | None
    terms: list[TrainTerm]
    rules_of_thumb: list[RuleOfThumb]
    assumptions: list[str]
    #: where it does not fit: each change that makes it fit, cheapest first (analysis/knobs.py)
    suggestions: list[SuggestionDoc]


def _exact(term: Term) -> int:
    """The bytes of a term the arithmetic always knows (every one but the activations)."""
    if term.bytes is None:
        raise ValueError(f"{term.name}: an arithmetic term without its bytes")
    return term.bytes


def train_json(report: Report, t: Train, suggestions: Sequence[Knob] = ()) -> TrainDoc:
    """The ``inspect train --json`` document: every term in bytes per GPU under its own name, the
    total at the peak, ``fits`` (null when unknown or no budget), the trainable count, and where it
    does not fit the ``suggestions`` that make it fit."""
    o, m = t.options, t.memory
    adapter = o.method_kind.adapter
    budget = o.budget
    return {
        "schema_version": common.SCHEMA_VERSION,
        "model": common.model_json(report.checkpoint),
        "method": o.method, "rank": o.rank if adapter else None, "alpha": o.alpha,
        "targets": list(o.targets) if adapter else [], "optimizer": o.optimizer,
        "precision": o.precision, "batch": o.batch, "seq": o.seq, "checkpointing": o.step.checkpointing,
        "gpus": t.devices, "gpu": budget.gpu if budget else None, "budget_bytes": budget.per_device if budget else None,
        "zero": o.shard.zero, "fsdp": o.shard.fsdp, "offload": o.shard.offload, "experts": o.experts,
        "stage": o.stage.stage, "loss": o.stage.kernel,
        "generations": o.stage.generations if o.stage.grpo else None,
        "completion_len": o.stage.completion if o.stage.grpo else None,
        "beta": o.stage.beta if o.stage.grpo else None,
        "rollout_memory": o.stage.rollout_memory if o.stage.grpo else None,
        "reference": _exact(m.reference), "sp": o.shard.sp, "freeze": list(o.freeze),
        "optimizer_in_backward": o.step.optimizer_in_backward, "offload_activations": o.step.offload_activations,
        "compile": o.step.compile,
        "trainable_parameters": t.trainable, "frozen_parameters": t.frozen, "adapted_modules": t.adapted,
        "trainable_by_role": dict(t.by_role),
        "weights": _exact(m.weights), "gradients": _exact(m.gradients),
        "optimizer_states": _exact(m.optimizer_states), "master_weights": _exact(m.master_weights),
        "activations": m.activations.bytes, "logits": _exact(m.logits), "overhead": _exact(m.overhead),
        "total": t.total, "fits": t.fits, "cpu_bytes": t.memory.cpu_bytes,
        "largest_batch": t.largest_batch, "largest_seq": t.largest_seq, "bits_per_weight": t.bits_per_weight,
        "peak_rule": t.peak_rule,
        "peak": None if t.peak is None else {"moment": t.peak.moment,
                                             "parts": [{"name": k, "bytes": v} for k, v in t.peak.parts]},
        "terms": [{"name": term.name, "bytes": term.bytes, "formula": term.formula, "source": term.source,
                   "exact": term.exact} for term in t.terms],
        "rules_of_thumb": [{"who": th.who, "bytes": th.bytes, "formula": th.formula} for th in t.thumbs],
        "assumptions": list(t.assumptions),
        "suggestions": common.suggestions_json(suggestions),
    }
