"""``inspect diff A B --json`` (two models, with ``--values`` their bytes) and a PEFT adapter against its base."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypedDict

from inspector.analysis.comparison.diff import ChangeKind
from inspector.analysis.comparison.values import Verdict
from inspector.results import common
from inspector.results.common import ModelDoc, SchemaVersion

if TYPE_CHECKING:
    from inspector.analysis.comparison.adapter import AdapterDiff
    from inspector.analysis.comparison.diff import Diff
    from inspector.analysis.comparison.values import ValueDiff
    from inspector.analysis.facts.report import Report


class SideDoc(TypedDict):
    model: ModelDoc
    parameters: int
    buffer_elements: int
    bytes: int
    active_parameters: int | None
    model_type: str | None


class DeltaDoc(TypedDict):
    parameters: int
    buffer_elements: int
    bytes: int


class CauseItem(TypedDict):
    tensor: str
    count: int
    formula: str
    delta: int


class CauseRow(TypedDict):
    cause: str
    label: str
    delta: int
    items: list[CauseItem]


class RoleDelta(TypedDict):
    role: str
    a: int
    b: int
    delta: int


class DtypePair(TypedDict):
    dtype: str
    a: int
    b: int


class DtypeBytes(TypedDict):
    dtype: str
    elements: int
    bytes: int


class ChangeRow(TypedDict):
    kind: ChangeKind
    role: str
    name: str
    count: int
    shape_a: list[int] | None
    shape_b: list[int] | None
    dtype_a: str | None
    dtype_b: str | None


ValueCounts = TypedDict("ValueCounts", {"changed": int, "same-sampled": int, "identical": int, "incomparable": int})


class ValueRow(TypedDict):
    name: str
    role: str
    layer: int | None
    verdict: Verdict
    sampled_bytes: int
    bytes: int
    why: str
    #: a changed float tensor's size of change, over its differing sampled ranges
    max_abs_delta: float | None
    relative_delta: float | None


class ValuesDoc(TypedDict):
    """``--values``: which tensors' bytes differ, from a few ranges of each (analysis/comparison/values.py)."""

    sample_bytes: int
    exact: bool
    weights_bytes: int
    bytes_hashed: list[int]
    bytes_read: list[int]
    requests: list[int]
    summary: list[str]
    counts: ValueCounts
    tensors: list[ValueRow]


class DiffDoc(TypedDict):
    schema_version: SchemaVersion
    a: SideDoc
    b: SideDoc
    identical: bool
    same_layout: bool
    delta: DeltaDoc
    causes: list[CauseRow]
    residual: int
    residual_items: list[CauseItem]
    roles: list[RoleDelta]
    dtypes: list[DtypePair]
    bytes_by_dtype: list[DtypeBytes]
    changes: list[ChangeRow]
    notes: list[str]
    values: ValuesDoc | None


class AdapterSide(TypedDict):
    model: ModelDoc
    parameters: int
    bytes: int
    model_type: str | None


class TensorCount(TypedDict):
    tensor: str
    parameters: int


class AdaptedModule(TypedDict):
    module: str
    layers: int
    rank: int
    lora_a: list[int]
    lora_b: list[int]
    formula: str
    parameters: int
    base_shape: list[int] | None


class AdapterDiffDoc(TypedDict):
    schema_version: SchemaVersion
    kind: Literal["adapter"]
    base: AdapterSide
    adapter: AdapterSide
    peft_type: str | None
    rank: int | None
    alpha: float | None
    target_modules: list[str]
    base_model_name_or_path: str | None
    parameters: int
    trainable_parameters: int
    frozen_copies: list[TensorCount]
    share_of_base: float | None
    modules: list[AdaptedModule]
    other: list[TensorCount]
    problems: list[str]


def diff_json(d: Diff, values: ValueDiff | None = None) -> DiffDoc:
    """The ``inspect diff --json`` document (schema_version 2; every key always present; ``values``
    null unless ``--values`` asked for them)."""

    def side(r: Report, active: int | None) -> SideDoc:
        c = r.checkpoint
        return {"model": common.model_json(c),
                "parameters": r.summary.parameters, "buffer_elements": r.summary.buffer_elements,
                "bytes": r.summary.bytes, "active_parameters": active, "model_type": r.config.model_type}

    residual = next((c.delta for c in d.causes if c.key == "residual"), 0)
    return {
        "schema_version": common.SCHEMA_VERSION,
        "a": side(d.a, d.active[0]),
        "b": side(d.b, d.active[1]),
        "identical": d.identical,
        "same_layout": d.same_layout,
        "delta": {"parameters": d.delta, "buffer_elements": d.buffers[1] - d.buffers[0],
                  "bytes": d.bytes[1] - d.bytes[0]},
        # named causes only; the residual once, beside them: sum(causes) + residual == delta.parameters
        "causes": [
            {"cause": c.key, "label": c.label, "delta": c.delta,
             "items": [{"tensor": i.tensor, "count": i.count, "formula": i.formula, "delta": i.delta}
                       for i in c.items]}
            for c in d.causes if c.key != "residual"
        ],
        "residual": residual,
        "residual_items": [{"tensor": i.tensor, "count": i.count, "formula": i.formula, "delta": i.delta}
                           for c in d.causes if c.key == "residual" for i in c.items],
        "roles": [{"role": r.role, "a": r.a, "b": r.b, "delta": r.b - r.a} for r in d.roles],
        "dtypes": [{"dtype": dt, "a": x, "b": y} for dt, x, y in d.dtypes],
        "bytes_by_dtype": [{"dtype": dt, "elements": de, "bytes": db} for dt, de, db in d.bytes_by_dtype()],
        "changes": [
            {"kind": c.kind, "role": c.role, "name": c.name, "count": c.count,
             "shape_a": list(c.shape_a) if c.shape_a is not None else None,
             "shape_b": list(c.shape_b) if c.shape_b is not None else None,
             "dtype_a": c.dtype_a, "dtype_b": c.dtype_b}
            for c in d.changes
        ],
        "notes": list(d.notes),
        "values": None if values is None else values_json(values),
    }


def values_json(v: ValueDiff) -> ValuesDoc:
    """Per tensor its verdict; the bytes and requests each side spent; the summary a person reads."""
    return {
        "sample_bytes": v.sample_bytes, "exact": v.exact, "weights_bytes": v.weights_bytes,
        "bytes_hashed": list(v.bytes_hashed),
        "bytes_read": list(v.bytes_read), "requests": list(v.requests), "summary": list(v.summary),
        "counts": {"changed": v.count("changed"), "same-sampled": v.count("same-sampled"),
                   "identical": v.count("identical"), "incomparable": v.count("incomparable")},
        "tensors": [{"name": t.name, "role": t.role, "layer": t.layer, "verdict": t.verdict,
                     "sampled_bytes": t.sampled_bytes, "bytes": t.nbytes, "why": t.why,
                     "max_abs_delta": t.change.max_abs if t.change else None,
                     "relative_delta": t.change.relative if t.change else None} for t in v.tensors],
    }


def adapter_json(a: AdapterDiff) -> AdapterDiffDoc:
    """``inspect diff BASE ADAPTER --json`` (schema_version 2): ``kind`` is ``adapter``."""

    def side(r: Report) -> AdapterSide:
        c = r.checkpoint
        return {"model": common.model_json(c),
                "parameters": r.summary.parameters, "bytes": r.summary.bytes, "model_type": r.config.model_type}

    return {
        "schema_version": common.SCHEMA_VERSION,
        "kind": "adapter",
        "base": side(a.base),
        "adapter": side(a.adapter),
        "peft_type": a.peft_type,
        "rank": a.rank,
        "alpha": a.alpha,
        "target_modules": list(a.targets),
        "base_model_name_or_path": a.base_model,
        "parameters": a.parameters,  # the adapter's own; merged into the base, the base's count is unchanged
        "trainable_parameters": a.trainable,
        "frozen_copies": [{"tensor": name, "parameters": count} for name, count in a.frozen],
        "share_of_base": a.share,
        "modules": [{"module": m.module, "layers": m.layers, "rank": m.rank, "lora_a": list(m.shape_a),
                     "lora_b": list(m.shape_b), "formula": m.formula, "parameters": m.parameters,
                     "base_shape": list(m.base_shape) if m.base_shape is not None else None} for m in a.modules],
        "other": [{"tensor": name, "parameters": count} for name, count in a.other],
        "problems": [p.text for p in a.problems],
    }
