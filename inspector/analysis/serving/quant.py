"""Quantisation-aware counts: logical parameters against stored elements, scales as overhead, and the
weights' size at another width (``--dtype``), as the engines that apply that width keep them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from inspector.analysis.facts.packing import MLX_BITS, PACKING_DTYPES, quant_bits
from inspector.analysis.facts.report import Report
from inspector.analysis.facts.stats import stored_elements
from inspector.formats.dtypes import USER_DTYPE_BITS


@dataclass(frozen=True, slots=True)
class QuantRow:
    role: str
    logical: int  # parameters the packed tensors stand for
    stored: int  # elements as stored
    weight_bytes: int
    overhead_bytes: int  # scales, zero points, group indices

    @property
    def bits_per_weight(self) -> float | None:
        return (self.weight_bytes + self.overhead_bytes) * 8 / self.logical if self.logical else None


@dataclass(frozen=True, slots=True)
class Quant:
    method: str | None
    bits: int | None
    source: str  # where the method was read: quantization_config, quantize_config.json, tensors
    logical_parameters: int
    stored_elements: int
    overhead_elements: int
    rows: tuple[QuantRow, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The weights at another width: bytes, and the rule that gave them."""

    dtype: str
    bytes: int
    formula: str


def quantization(report: Report) -> Quant:
    """Logical parameters vs stored elements for packed checkpoints; scales are overhead."""
    c = report.config
    qc: dict[str, object] = dict(c.storage.quantization or {})
    source = "quantization_config" if qc else "none"
    named = qc.get("quant_method")
    method = named if isinstance(named, str) else None
    if method is None and isinstance(c.raw.get("quantization"), Mapping):  # mlx-lm writes it (and a copy)
        mode = qc.get("mode")
        method, source = f"mlx {mode}" if isinstance(mode, str) else "mlx", "config.json quantization (mlx-lm)"
    bits = quant_bits(qc)
    looks = _looks_like(report)
    notes: list[str] = []
    if method is not None and method.startswith("mlx") and bits is not None and bits not in MLX_BITS:
        notes.append(f"config.json quantization says {bits} bits, which mlx-lm does not write "
                     f"({', '.join(map(str, MLX_BITS))}): the bits are unknown")
        bits = None
    if method is None and looks:
        method, source = looks, "tensors"
        notes.append(f"no quantization_config; the tensors look like {looks}")
    elif method and looks and looks != _family(method):
        notes.append(f"config says {method}, but the tensors look like {looks}")
    elif method and not looks and method not in ("fp8",):
        notes.append(f"config says {method}, but no packed tensors were found")
    packed = _has_packed(report)
    if not packed:  # nothing packs several weights per element: the summary has every figure
        s = report.summary
        return Quant(
            method=method, bits=int(bits) if isinstance(bits, int) else None, source=source,
            logical_parameters=s.parameters, stored_elements=s.parameters, overhead_elements=s.quant_elements,
            rows=tuple(QuantRow(r.role, r.parameters, r.parameters, r.bytes - r.quant_bytes, r.quant_bytes)
                       for r in s.by_role if r.parameters or r.quant_elements),
            notes=tuple(notes),
        )
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    logical_total = stored_total = overhead_total = 0
    for info, place in report.tensors:
        kind = place.kind
        if kind == "buffer":
            continue
        row = rows[place.role]
        if kind == "quant":
            row[3] += info.end - info.begin
            overhead_total += info.numel
            continue
        logical = info.numel  # logical already (``report.logical``)
        stored = stored_elements(info)
        row[0] += logical
        row[1] += stored
        row[2] += info.end - info.begin
        logical_total += logical
        stored_total += stored
    return Quant(
        method=method, bits=int(bits) if isinstance(bits, int) else None, source=source,
        logical_parameters=logical_total, stored_elements=stored_total, overhead_elements=overhead_total,
        rows=tuple(QuantRow(role, *v) for role, v in rows.items() if v[0] or v[3]),
        notes=tuple(notes),
    )


def _has_packed(report: Report) -> bool:
    """Whether any parameter is stored in a dtype that may pack several weights an element
    (``packing.PACKING_DTYPES``): its logical count is then taken tensor by tensor."""
    return any(d.dtype in PACKING_DTYPES for d in report.summary.by_dtype if d.parameters)


def _looks_like(report: Report) -> str | None:
    names = [t.info.name for t in report.tensors if t.place.kind != "parameter" or t.info.dtype in ("I32", "U8")]
    tail = {n.rsplit(".", 1)[-1] for n in names}
    if "qweight" in tail:
        return "gptq/awq"
    if "weight_packed" in tail:
        return "compressed-tensors"
    if "weight_scale_inv" in tail or "weight_scale" in tail:
        return "fp8"
    if any(n.endswith("_blocks") for n in names):
        return "mxfp4"
    if "absmax" in tail or any(".quant_state." in n for n in names) or "SCB" in tail:
        return "bitsandbytes"
    if "biases" in tail and "scales" in tail:
        return "mlx"  # mlx-lm's affine quantisation: uint32 words beside per-group scales and biases
    return None


def _family(method: str) -> str:
    return {"gptq": "gptq/awq", "awq": "gptq/awq"}.get(method, method.split(" ", 1)[0])


#: what vLLM's runtime fp8 (``--quantization fp8``, Fp8LinearMethod and Fp8MoEMethod in
#: model_executor/layers/quantization/fp8.py) turns to one byte a weight: the linear layers'
#: matrices and the experts'. The embedding, the output head (a ParallelLMHead, no linear method),
#: norms, biases and the MoE router (built with quant_config=None) keep the model's 16-bit dtype;
#: each quantised matrix gains one float32 scale (per tensor, dynamic activations).
FP8_ROLES_KEPT: Final = ("embedding", "lm_head", "position_embedding", "token_type_embedding", "moe.router")
FP8_SOURCE: Final = "vLLM runtime fp8 (model_executor/layers/quantization/fp8.py)"


#: matrices vLLM loads as one merged layer (QKVParallelLinear, MergedColumnParallelLinear; the
#: experts' w13): one scale for the group
_MERGED: Final = {"attn.q": "qkv", "attn.k": "qkv", "attn.v": "qkv", "attn.qkv": "qkv", "mlp.gate": "gate_up",
                  "mlp.up": "gate_up", "mlp.gate_up": "gate_up", "moe.expert.gate": "w13", "moe.expert.up": "w13",
                  "moe.expert.gate_up": "w13"}


def weights_at(report: Report, quant: Quant, dtype: str) -> WhatIf:
    """The weights at ``dtype`` (one of ``USER_DTYPE_BITS``). fp8 as vLLM's runtime fp8 keeps them
    (``FP8_ROLES_KEPT`` and every vector stay 16-bit, one float32 scale per merged matrix); any other
    width is the logical parameters × its bits, no scales."""
    bits = USER_DTYPE_BITS[dtype]
    if dtype != "fp8":
        return WhatIf(dtype, int(quant.logical_parameters * bits // 8),
                      f"{quant.logical_parameters:,} logical parameters × {bits:g} bits (no scales)")
    quantised = 0
    groups: set[tuple[str | None, int | None, int | None, str]] = set()
    for info, place in report.tensors:
        if place.kind == "parameter" and len(info.shape) >= 2 and place.role not in FP8_ROLES_KEPT:
            quantised += info.numel
            merged = _MERGED.get(place.role)
            groups.add((place.stack, place.layer, place.expert, merged or info.name))
    kept = quant.logical_parameters - quantised
    scales = len(groups)
    return WhatIf(dtype, quantised + 2 * kept + 4 * scales,
                  f"{quantised:,} weights of the linear layers × 1 B + {kept:,} kept in 16-bit (embedding, head, "
                  f"norms, biases, router) × 2 B + {scales:,} float32 scales, one per merged matrix ({FP8_SOURCE})")
