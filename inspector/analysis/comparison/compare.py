"""``inspect compare M1 … Mn``: models side by side, one column each. Pure: reports in, rows out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from inspector.analysis.facts.config import ModelConfig
from inspector.analysis.facts.report import Report

if TYPE_CHECKING:
    from inspector.analysis.serving.estimate import Estimate


#: one model's figure in a row: None where the model has nothing to say
Cell = int | float | str | bool | None
#: the part of the comparison a row belongs to
Section = Literal["totals", "config", "roles"]


@dataclass(frozen=True, slots=True)
class Row:
    section: Section
    label: str
    values: tuple[Cell, ...]  # one per model


@dataclass(frozen=True, slots=True)
class Comparison:
    reports: tuple[Report, ...]
    kv_bytes_per_token: tuple[int | None, ...]
    rows: tuple[Row, ...]


def _architecture(c: ModelConfig) -> str | None:
    return ", ".join(c.architectures) or c.model_type


_CONFIG: tuple[tuple[str, Callable[[ModelConfig], Cell]], ...] = (
    ("architecture", _architecture), ("hidden size", lambda c: c.hidden_size), ("layers", lambda c: c.num_layers),
    ("heads", lambda c: c.num_heads), ("KV heads", lambda c: c.num_kv_heads), ("head dim", lambda c: c.head_dim),
    ("MLP width", lambda c: c.intermediate_size), ("vocabulary", lambda c: c.vocab_size),
    ("context", lambda c: c.max_position), ("tied embeddings", lambda c: c.storage.tie_word_embeddings),
    ("dtype", lambda c: c.storage.dtype), ("experts", lambda c: c.moe.num_experts),
    ("experts per token", lambda c: c.moe.experts_per_token))


def _estimate(report: Report) -> Estimate | None:
    """The estimate a comparison reads its KV and active figures from (None: the estimate refused)."""
    # deferred: 19 ms at import (inspector.analysis.serving.estimate, inspector.errors)
    from inspector.analysis.serving.estimate import estimate
    from inspector.errors import InspectorError

    try:
        return estimate(report, what_if=())
    except InspectorError:
        return None


def kv_bytes_per_token(est: Estimate | None) -> int | None:
    """The KV cache a token costs, where the estimate knows it (None: unknown, or no KV cache)."""
    kv = est.kv if est is not None else None
    return int(kv.per_token.value) if kv is not None and kv.per_token.value is not None else None


def active_parameters(est: Estimate | None) -> int | None:
    """Parameters a token uses, for a mixture of experts (None for a dense model, or where unknown)."""
    moe = est.moe if est is not None else None
    return int(moe.active.value) if moe is not None and moe.active.value is not None else None


def compare(reports: list[Report]) -> Comparison:
    estimates = [_estimate(r) for r in reports]  # once per model: the KV and active figures both come from it
    kv = [kv_bytes_per_token(e) for e in estimates]
    rows: list[Row] = []
    sums = [r.summary for r in reports]
    for label, get in (("parameters", lambda s: s.parameters), ("buffers", lambda s: s.buffer_elements),
                       ("quant data", lambda s: s.quant_elements), ("Hub total", lambda s: s.hub_total),
                       ("bytes", lambda s: s.bytes), ("tensors", lambda s: s.tensors),
                       ("files", lambda s: len(s.shards))):
        rows.append(Row("totals", label, tuple(get(s) for s in sums)))
    rows.append(Row("totals", "KV cache bytes per token", tuple(kv)))
    active = [active_parameters(e) for e in estimates]
    if any(a is not None for a in active):  # a mixture of experts: what a token uses (— for a dense model)
        rows.insert(1, Row("totals", "active parameters per token", tuple(active)))
    for label, attr in _CONFIG:
        rows.append(Row("config", label, tuple(
            (attr(r.config) or r.checkpoint.composite_class) if attr is _architecture else  # a pipeline's class
            attr(r.config) for r in reports)))
    order: list[str] = []
    for s in sums:
        order += [x.role for x in s.by_role if x.role not in order]
    for role in order:
        rows.append(Row("roles", role, tuple(
            next(((x.parameters or x.buffer_elements or x.quant_elements) for x in s.by_role if x.role == role), None)
            for s in sums)))
    return Comparison(tuple(reports), tuple(kv), tuple(rows))
