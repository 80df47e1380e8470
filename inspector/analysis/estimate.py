"""Estimates from config + headers: memory, KV cache, FLOPs, MoE active parameters, quantisation.

Every figure carries the formula it came from, its source and its assumptions, so a reader can
check it. Exact where the inputs are exact (bytes, counts); where a figure models runtime behaviour
(FLOPs, KV cache), the assumptions say which behaviour.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from inspector.analysis.config import ModelConfig, config_int
from inspector.analysis.engines import (
    LLAMA_CPP_PAD,
    LLAMA_CPP_UBATCH,
    VLLM_UTILIZATION,
    Term,
    llama_cpp_terms,
    vllm_stage_layers,
    vllm_terms,
    vllm_tokens,
)
from inspector.analysis.fit import Budget, Fit
from inspector.analysis.report import Report
from inspector.analysis.roles import PACKING_DTYPES, quant_bits
from inspector.analysis.stats import Tensor, stored_elements
from inspector.formats.dtypes import DTYPE_BITS, USER_DTYPE_BITS, USER_DTYPE_BYTES
from inspector.model import Role

FLOPS_SOURCE: Final = ("Kaplan et al. 2020, 2N FLOPs per token for the weights; Hoffmann et al. 2022, appendix F, "
                       "for the attention logits and reduction (4·L·h·d·t)")
LINEAR_STATE: Final = ("linear_attention", "mamba", "ssm", "recurrent", "conv")


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    value: int | float | None
    unit: str
    formula: str
    source: str
    assumptions: tuple[str, ...] = ()


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
class Estimate:
    context: int
    batch: int
    kv_dtype: str
    figures: tuple[Figure, ...]
    quant: Quant
    what_if: tuple[tuple[str, int], ...]  # dtype → bytes for the logical parameters
    warnings: tuple[str, ...] = ()

    def get(self, name: str) -> Figure:
        """The figure named ``name``; a KeyError naming it when this estimate has none (a diffusion
        pipeline's has no KV-cache or per-token figures)."""
        found = self.find(name)
        if found is None:
            raise KeyError(name)
        return found

    def find(self, name: str) -> Figure | None:
        return next((f for f in self.figures if f.name == name), None)


def no_tokens(report: Report) -> str | None:
    """Why a checkpoint has no per-token figures (KV cache, FLOPs per token, context), or None: a
    diffusers pipeline, or one of its models on its own (a UNet, VAE or DiT transformer, whose
    config diffusers wrote: ``_class_name`` and ``_diffusers_version``). Their work depends on the
    image size, frames and steps, which no file gives."""
    c = report.checkpoint
    if c.composite == "model_index.json":
        return "a diffusion pipeline decodes no tokens"
    raw = c.config or {}
    if "_diffusers_version" in raw and isinstance(cls := raw.get("_class_name"), str):
        return f"a diffusers {cls[:80]} decodes no tokens"
    return None


def estimate(report: Report, *, context: int | None = None, batch: int = 1, kv_dtype: str | None = None,
             what_if: tuple[str, ...] = ("bf16", "fp8", "int4")) -> Estimate:
    c = report.config
    ctx = context or c.max_position or 4096
    kvd = (kv_dtype or _default_kv_dtype(c, report)).lower()
    if kvd not in USER_DTYPE_BYTES:
        from inspector.errors import UsageError

        raise UsageError(f"--kv-dtype: unknown {kvd!r}", hint="use " + ", ".join(USER_DTYPE_BYTES))
    q = quantization(report)
    figures: list[Figure] = []
    s = report.summary
    figures.append(Figure(
        "weights_bytes", s.bytes, "B", "Σ tensor bytes from the headers' data_offsets",
        "safetensors headers", ("as stored: every tensor, scales and buffers included",)))
    if no_tokens(report) is not None:  # a diffusion pipeline or one of its models: weights only
        figures += [Figure(f"weights_bytes.{r.name}", r.bytes, "B", f"Σ tensor bytes of {r.name}/",
                           "safetensors headers", (f"{r.class_name or r.model_type or 'component'}: "
                                                   f"{r.parameters:,} parameters",))
                    for r in report.components if r.tensors]
        shares = tuple((d.lower(), int(q.logical_parameters * USER_DTYPE_BITS[d.lower()] // 8)) for d in what_if
                       if d.lower() in USER_DTYPE_BITS)
        return Estimate(ctx, batch, kvd, tuple(figures), q, shares)  # no KV cache, no per-token FLOPs
    figures += _kv(report, ctx, batch, kvd)
    active, moe_figs = _moe(report)
    figures += moe_figs
    figures += _flops(report, active, ctx, moe=bool(moe_figs))
    bits = USER_DTYPE_BITS
    rows = []
    for name in what_if:
        key = name.lower()
        if key not in bits:
            from inspector.errors import UsageError

            raise UsageError(f"--dtype: unknown {name!r}", hint="use " + ", ".join(USER_DTYPE_BITS))
        rows.append((key, int(q.logical_parameters * bits[key] // 8)))
    warnings = []
    limit = model_limit(c)
    if limit and ctx > limit:
        warnings.append(f"context {ctx:,} is over the model's limit of {limit:,} tokens ({limit_source(report)})")
    return Estimate(ctx, batch, kvd, tuple(figures), q, tuple(rows), tuple(warnings))


def _default_kv_dtype(c: ModelConfig, report: Report | None = None) -> str:
    """The model's own dtype: config.json's, else that of most parameters; bf16 only when neither
    is a float dtype (a packed integer checkpoint without torch_dtype)."""
    names = {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}
    if c.dtype in names:
        return names[c.dtype]
    if report is not None and _is_gguf(report):
        return "fp16"  # llama.cpp's default cache type (--cache-type-k/-v f16)
    if report is not None:
        floats = [d for d in report.summary.by_dtype if d.dtype in names and d.parameters]
        if floats:
            return names[max(floats, key=lambda d: d.parameters).dtype]
    return "bf16"


# --- KV cache ------------------------------------------------------------------------------------


def _kv(report: Report, ctx: int, batch: int, kvd: str) -> list[Figure]:
    c = report.config
    nbytes = USER_DTYPE_BYTES[kvd]
    layers = c.num_layers or 0
    if c.encoder_only:
        why = "an encoder reads its whole input at once; there is no autoregressive decoding"
        return [Figure("kv_bytes_per_token", None, "B", "none: " + why, "config.json model_type", (why,))]
    if not layers:
        return [Figure("kv_bytes_per_token", None, "B", "no layer count in config", "config.json")]
    if c.kv_lora_rank and c.qk_rope_head_dim is not None:
        per_layer = c.kv_lora_rank + c.qk_rope_head_dim
        checked = _kv_check_mla(report, per_layer)
        per_token = per_layer * layers * nbytes
        return [
            Figure("kv_bytes_per_token", int(per_token), "B",
                   f"(kv_lora_rank {c.kv_lora_rank} + qk_rope_head_dim {c.qk_rope_head_dim}) × {layers} layers × "
                   f"{nbytes:g} B", "DeepSeek-V2 paper §2.1 (multi-head latent attention caches the compressed "
                   "latent and the decoupled rope key)",
                   ("MLA: one latent per token per layer, shared by all heads", checked,
                    "multi-token-prediction layers are not counted (not used for plain decoding)")),
            Figure("kv_bytes", int(per_token * ctx * batch), "B", f"per token × context {ctx:,} × batch {batch}",
                   "DeepSeek-V2 paper §2.1 (multi-head latent attention caches the compressed "
                   "latent and the decoupled rope key)"),
        ]
    heads, kv, hd = c.num_heads or 0, c.num_kv_heads or 0, c.head_dim or 0
    missing = [name for name, value in (("num_key_value_heads", kv), ("head_dim", hd)) if not value]
    if missing:
        why = "unknown: the config gives no " + " and no ".join(missing)
        return [Figure("kv_bytes_per_token", None, "B", why, "config.json", (why,)),
                Figure("kv_bytes", None, "B", why, "config.json", (why,))]
    vd = c.v_head_dim if c.v_head_dim else hd  # V rows of their own width (a GGUF's value_length)
    kinds = _layer_kinds(c, layers)
    kv_of = list(c.kv_heads_per_layer) if len(c.kv_heads_per_layer) == layers else [kv] * layers
    attention_layers = [i for i, k in enumerate(kinds) if not any(w in k for w in LINEAR_STATE) and kv_of[i]]
    state_layers = layers - len(attention_layers)
    shared = config_int(c.raw.get("num_kv_shared_layers"), 0)
    storing = attention_layers[: max(0, len(attention_layers) - shared)] if shared else attention_layers
    per_token = sum(kv_of[i] * (hd + vd) for i in storing) * nbytes
    window = c.sliding_window
    full, cells, rule = _cells(report, window, ctx)
    total = 0.0
    sliding = 0
    for i in storing:
        if window and "sliding" in kinds[i]:
            total += kv_of[i] * (hd + vd) * cells * nbytes
            sliding += 1
        else:
            total += kv_of[i] * (hd + vd) * full * nbytes
    assumptions = [f"grouped-query attention: {kv} KV heads for {heads} query heads" if kv < heads
                   else "multi-head attention: one KV head per query head",
                   _kv_check(report, kv * hd)]
    if sliding:
        assumptions.append(f"{sliding} sliding-window layers keep at most {window:,} tokens" + rule)
    unused = config_int(c.raw.get("sliding_window_unused"), 0)
    if unused:
        assumptions.append(f"the GGUF gives a sliding window of {unused:,} tokens that llama.cpp's loader for "
                           f"{c.model_type} does not apply: every layer keeps the whole context")
    if state_layers:
        assumptions.append(f"{state_layers} linear-attention or state-space layers keep a constant state "
                           "(not per token; not counted here)")
    if shared:
        assumptions.append(f"{shared} layers reuse another layer's KV (num_kv_shared_layers)")
    if len(set(kv_of)) > 1:
        assumptions.append("KV heads per layer as the file gives them: " + ", ".join(f"{k}" for k in kv_of))
    width = f"(key {hd} + value {vd})" if vd != hd else f"2 (K and V) × head_dim {hd}"
    heads_text = f"{kv} KV heads" if len(set(kv_of)) <= 1 else "the layer's KV heads"
    per_token_formula = (f"{width} × {len(storing)} layers × {heads_text} × {nbytes:g} B" if vd != hd else
                         f"2 (K and V) × {len(storing)} layers × {heads_text} × head_dim {hd} × {nbytes:g} B")
    source = ("llama.cpp's KV cache (llama-kv-cache.cpp): K and V rows of n_embd_k_gqa and n_embd_v_gqa per "
              "layer and cell" if _is_gguf(report) else
              "standard decoder KV cache: K and V of every KV head, per layer and token")
    figures = [
        Figure("kv_bytes_per_token", int(per_token), "B", per_token_formula, source, tuple(assumptions)),
        Figure("kv_bytes", int(total * batch), "B",
               f"Σ over layers of per-layer bytes × ({full:,} cells, or a sliding layer's {cells:,}) × "
               f"batch {batch}" if sliding else
               f"Σ over layers of per-layer bytes × {full:,} cells × batch {batch}", source, tuple(assumptions)),
    ]
    if sliding and cells < full:  # the windowed cache and a whole-context reservation differ: say both
        figures.append(Figure(
            "kv_bytes_full_reservation", int(per_token * full * batch), "B",
            f"per token × {full:,} cells × batch {batch}: every layer, sliding ones included, holds the whole context",
            "what an engine reserves when it does not page sliding layers apart",
            ("windowed (the figure above): vLLM's hybrid KV cache manager (its default in the V1 engine) and "
             "llama.cpp with --swa-full off (its default)",
             "whole context: llama.cpp with --swa-full, vLLM with --disable-hybrid-kv-cache-manager, "
             "and a transformers DynamicCache")))
    return figures


#: llama.cpp's defaults for its KV cache: the context padded to ``LLAMA_CPP_PAD`` cells; with
#: ``--swa-full`` off, a sliding layer keeps the window for each sequence plus one micro-batch
#: (``-ub``, ``engines.LLAMA_CPP_UBATCH``) of cells, padded (llama-kv-cache-iswa.cpp;
#: fixtures/llama.cpp/ holds the sizes llama.cpp printed)


def _is_gguf(report: Report) -> bool:
    return bool(report.checkpoint.headers) and all(h.format == "gguf" for h in report.checkpoint.headers)


def _cells(report: Report, window: int | None, ctx: int) -> tuple[int, int, str]:
    """Cells a full-attention layer and a sliding-window layer keep at context ``ctx``, and the
    rule said beside them. llama.cpp pads the context to 256 cells and gives a sliding layer the
    window plus one micro-batch, padded; a 1,000-token context holds 1,024 cells."""
    if not _is_gguf(report):
        return ctx, min(ctx, window) if window else ctx, ""
    full = -(-ctx // LLAMA_CPP_PAD) * LLAMA_CPP_PAD
    if not window:
        return full, full, ""
    cells = min(full, -(-(window + LLAMA_CPP_UBATCH) // LLAMA_CPP_PAD) * LLAMA_CPP_PAD)
    return full, cells, (f"; as llama.cpp allocates them (--swa-full off, its default): window + one "
                         f"{LLAMA_CPP_UBATCH}-token micro-batch, padded to {LLAMA_CPP_PAD}: {cells:,} cells")


def _layer_kinds(c: ModelConfig, layers: int) -> list[str]:
    if c.layer_types and len(c.layer_types) >= layers:
        return [t.lower() for t in c.layer_types[:layers]]
    if c.sliding_window and c.model_type == "mistral":
        return ["sliding_attention"] * layers
    if c.sliding_window and c.model_type == "gemma2":
        return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    return ["full_attention"] * layers


def _kv_check(report: Report, width: int) -> str:
    """Check the config's KV width against the k/v projections in the headers."""
    kv = [t for t in report.tensors if t.place.role in ("attn.k", "attn.v") and t.place.kind == "parameter"]
    outs = {t.info.shape[0] for t in kv if len(t.info.shape) == 2 and t.info.name.endswith(".weight")}
    if not outs and kv:
        return "k/v projections are packed (quantised): their shapes were not checked"
    if not outs:
        return "no separate k/v projections in the headers to check against"
    if outs == {width}:
        return f"checked: k_proj and v_proj have {width:,} output rows, as the config implies"
    return f"MISMATCH: config implies {width:,} k/v rows, headers have {sorted(outs)}"


def _kv_check_mla(report: Report, width: int) -> str:
    outs = {t.info.shape[0] for t in report.tensors
            if t.place.role == "attn.kv" and t.info.name.endswith("kv_a_proj_with_mqa.weight")
            and len(t.info.shape) == 2}
    if outs == {width}:
        return f"checked: kv_a_proj_with_mqa has {width} output rows (latent + rope key)"
    return f"MISMATCH: config implies {width}, headers have {sorted(outs)}" if outs else "no kv_a_proj to check"


# --- mixture of experts --------------------------------------------------------------------------


def _moe(report: Report) -> tuple[int, list[Figure]]:
    """Active parameters per token: routed experts a token does not visit are left out. Counts are
    logical (a packed int4 word counts its eight weights: ``report.logical``)."""
    c = report.config
    params = [t for t in report.tensors if t.place.kind == "parameter"]
    experts = [t for t in params if t.place.role.startswith("moe.expert")]
    k = c.experts_per_token
    if not experts or not k:
        return report.summary.parameters, []
    total = report.summary.parameters
    mtp = _mtp_layers(report)
    mtp_params = sum(t.info.numel for t in params if (t.place.stack, t.place.layer) in mtp) if mtp else 0
    per_layer: dict[tuple[str | None, int | None], list[Tensor]] = defaultdict(list)
    for t in experts:
        per_layer[(t.place.stack, t.place.layer)].append(t)
    inactive = 0
    moe_layers = 0
    for key, ts in per_layer.items():
        if key in mtp:
            continue
        ids = {t.place.expert for t in ts if t.place.expert is not None}
        n = len(ids) or (c.num_experts or 0)
        elems = sum(t.info.numel for t in ts)
        if n > k:
            inactive += elems * (n - k) // n
            moe_layers += 1
    main = total - mtp_params
    active = main - inactive
    shared = sum(t.info.numel for t in params if t.place.role.startswith("moe.shared"))
    router = sum(t.info.numel for t in params if t.place.role == "moe.router")
    dense_first = c.first_k_dense or 0
    assumptions = [f"{k} of {c.num_experts} routed experts per token, in {moe_layers} MoE layers"]
    if shared:
        assumptions.append(f"shared experts always active ({shared:,} parameters)")
    if dense_first:
        assumptions.append(f"the first {dense_first} layers are dense and always active")
    assumptions.append(f"router always active ({router:,} parameters)")
    if mtp_params:
        assumptions.append(f"multi-token-prediction layers ({mtp_params:,} parameters) are left out: plain decoding "
                           "does not run them")
    return active, [
        Figure("total_parameters", total, "", "Σ parameter elements in the headers", "safetensors headers"),
        Figure("main_parameters", main, "", "total − multi-token-prediction layers", "config num_nextn_predict_layers")
        if mtp_params else Figure("main_parameters", main, "", "total", "safetensors headers"),
        Figure("active_parameters", active, "",
               "main − Σ over MoE layers of (experts − experts per token) / experts × expert parameters",
               "mixture-of-experts routing (Shazeer et al. 2017; Mixtral, DeepSeek-V3 reports)", tuple(assumptions)),
    ]


def active_parameters(report: Report) -> int | None:
    """Parameters a token uses in a mixture of experts (see ``_moe``); None for a dense model."""
    active, figures = _moe(report)
    return active if figures else None


def _mtp_layers(report: Report) -> set[tuple[str | None, int | None]]:
    c = report.config
    if not c.mtp_layers or not c.num_layers:
        return set()
    return {(g.stack, i) for g in report.summary.layer_groups for i in range(g.first, g.last + 1)
            if i >= c.num_layers}


# --- FLOPs ---------------------------------------------------------------------------------------


def _flops(report: Report, active: int, ctx: int, moe: bool) -> list[Figure]:
    c = report.config
    s = report.summary
    embedding = next((r.parameters for r in s.by_role if r.role == "embedding"), 0)
    lookups = sum(r.parameters for r in s.by_role if r.role in ("position_embedding", "token_type_embedding"))
    has_head = any(r.role == "lm_head" for r in s.by_role)
    mtp = _mtp_layers(report)
    mtp_embed = sum(t.info.numel for t in report.tensors if t.place.role == "embedding"
                    and (t.place.stack, t.place.layer) in mtp)
    input_embedding = embedding - mtp_embed
    gemm_params = active - input_embedding - lookups + (0 if has_head else input_embedding)
    gemm = 2 * gemm_params
    layers, heads = c.num_layers or 0, c.num_heads or 0
    if c.kv_lora_rank and c.qk_nope_head_dim is not None and c.qk_rope_head_dim is not None:
        d_qk, d_v = c.qk_nope_head_dim + c.qk_rope_head_dim, c.v_head_dim or 0
    else:
        d_qk = d_v = c.head_dim or 0
    per_layer = 2 * heads * (d_qk + d_v)  # score and value products per layer and attended token
    window = c.sliding_window
    kinds = _layer_kinds(c, layers) if layers <= 100_000 else []
    sliding = sum(1 for k in kinds if window and "sliding" in k) if window else 0
    full = layers - sliding

    def attended(t: int) -> int:
        """Σ over layers of the tokens a query at position t attends to."""
        return full * t + sliding * min(t, window or t)

    def attended_prefix(t: int) -> int:
        """Σ over positions 1…t of ``attended``: causal attention, windows capping the sliding layers."""
        w = min(t, window or t)
        return full * t * (t + 1) // 2 + sliding * (w * (w + 1) // 2 + (t - w) * w)

    attention = per_layer * attended(ctx)
    assumptions = ("each weight is one multiply and one add per token (2 FLOPs)",
                   "the input embedding (and learned position embedding) is a lookup and costs nothing"
                   + ("" if has_head else "; the tied output head multiplies by it, so it counts once"),
                   "norms and biases stay in the count (a negligible share); buffers are not parameters",
                   "mixture of experts: only active parameters" if moe else "dense model: every parameter is used",
                   "softmax and other element-wise work ignored")
    d, inter = c.hidden_size or 0, c.intermediate_size or 0
    closed_ratio = ctx / (2 * d + 1.5 * inter) if d and inter else None
    return [
        Figure("flops_per_token_weights", gemm, "FLOP",
               f"2 × (parameters used per token {active:,} − input embedding {input_embedding:,}"
               + (f" − position lookups {lookups:,}" if lookups else "")
               + ("" if has_head else f" + tied head {input_embedding:,}") + ")", FLOPS_SOURCE, assumptions),
        Figure("flops_per_token_attention", attention, "FLOP",
               (f"2 × {heads} heads × (d_qk {d_qk} + d_v {d_v}) × ({full} layers × context {ctx:,} + {sliding} "
                f"sliding layers × min(context, window {window:,}))" if sliding else
                f"2 × {layers} layers × {heads} heads × (d_qk {d_qk} + d_v {d_v}) × context {ctx:,}"
                f" (= 4·L·h·d·t when d_qk = d_v)"), FLOPS_SOURCE,
               ("score and value products at context t",
                *((f"{sliding} sliding-window layers attend to at most {window:,} tokens",) if sliding else ()))),
        Figure("flops_decode_step", gemm + attention, "FLOP", "weights + attention at context t", FLOPS_SOURCE),
        Figure("flops_prefill", gemm * ctx + per_layer * attended_prefix(ctx), "FLOP",
               ("t × weights + attention summed over positions 1…t, a sliding layer's capped at its window"
                if sliding else "t × weights + attention summed over positions 1…t = 2N′t + a·t(t+1)/2"),
               FLOPS_SOURCE, ("causal attention: token i attends to i tokens"
                              + (f" (at most {window:,} in a sliding-window layer)" if sliding else ""),)),
        Figure("attention_to_gemm_ratio", attention / gemm if gemm else None, "",
               "attention FLOPs / weight FLOPs at context t", FLOPS_SOURCE),
        Figure("attention_to_gemm_ratio_closed_form", closed_ratio, "",
               f"t / (2D + 1.5I) = {ctx:,} / (2 × {d:,} + 1.5 × {inter:,})", FLOPS_SOURCE,
               ("4·L·D·t ÷ 2·L·(4D² + 3·D·I): dense models with full multi-head attention and a gated MLP, "
                "embeddings left out",)),
    ]


# --- quantisation --------------------------------------------------------------------------------



def quantization(report: Report) -> Quant:
    """Logical parameters vs stored elements for packed checkpoints; scales are overhead."""
    c = report.config
    qc: dict[str, object] = dict(c.quantization or {})
    source = "quantization_config" if qc else "none"
    named = qc.get("quant_method")
    method = named if isinstance(named, str) else None
    if method is None and isinstance(c.raw.get("quantization"), Mapping):  # mlx-lm writes it (and a copy)
        mode = qc.get("mode")
        method, source = f"mlx {mode}" if isinstance(mode, str) else "mlx", "config.json quantization (mlx-lm)"
    bits = quant_bits(qc)
    looks = _looks_like(report)
    notes: list[str] = []
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
    (``roles.PACKING_DTYPES``): its logical count is then taken tensor by tensor."""
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
    return None


def _family(method: str) -> str:
    return {"gptq": "gptq/awq", "awq": "gptq/awq"}.get(method, method)


# --- will it fit? ----------------------------------------------------------------------------------


def model_limit(c: ModelConfig) -> int | None:
    """The model's context limit: max_position_embeddings, or with YaRN/linear/dynamic rope scaling
    that leaves it at the original length, factor × original_max_position_embeddings."""
    limit = c.max_position
    scaling = c.raw.get("rope_scaling")
    if isinstance(scaling, dict):
        factor, original = scaling.get("factor"), scaling.get("original_max_position_embeddings")
        if isinstance(factor, (int, float)) and isinstance(original, int) and factor > 1:
            limit = max(limit or 0, int(factor * original))
    return limit


def limit_source(report: Report) -> str:
    """Where ``model_limit`` comes from, said beside a warning."""
    c = report.config
    if c.source == "gguf":
        return "the GGUF's context_length"
    scaling = c.raw.get("rope_scaling")
    if isinstance(scaling, dict) and isinstance(scaling.get("original_max_position_embeddings"), int):
        return "config.json rope_scaling: factor × original_max_position_embeddings, or max_position_embeddings"
    return "config.json max_position_embeddings"


def fit_estimate(report: Report, est: Estimate, budget: Budget, *, weights_dtype: str | None = None,
                 overhead: int | None = None, kv_one: tuple[int, int] | None = None, extra_weights: int = 0,
                 engine: str | None = None, utilization: float | None = None, pipeline: int = 1) -> Fit:
    """Weights (and ``extra_weights``: a projector loaded beside them) + KV cache at the estimate's
    context and batch + the engine's terms (``engines.py``), against ``budget``. ``engine``: vllm
    (the default for safetensors) or llama.cpp (the default for GGUF); ``utilization``: vLLM's
    gpu_memory_utilization (default 0.9); ``pipeline``: stages the layers are split between (the
    budget's devices are tensor-parallel ways × stages). llama.cpp on several devices splits by
    layers (its default ``--split-mode layer``)."""
    engine = engine or default_engine(report)
    if no_tokens(report) is not None:
        return _pipeline_fit(report, budget, weights_dtype, est)
    if engine == "llama.cpp" and budget.devices > 1:
        pipeline = budget.devices
    if pipeline > 1:
        return _staged_fit(report, est, budget, pipeline, weights_dtype=weights_dtype, overhead=overhead,
                           extra_weights=extra_weights, engine=engine, utilization=utilization)
    return _fit(report, est, budget, weights_dtype=weights_dtype, overhead=overhead, kv_one=kv_one,
                extra_weights=extra_weights, engine=engine, utilization=utilization)


def _fit(report: Report, est: Estimate, budget: Budget, *, weights_dtype: str | None, overhead: int | None,
         kv_one: tuple[int, int] | None, extra_weights: int, engine: str, utilization: float | None,
         stage: tuple[int, int, int, int] | None = None) -> Fit:
    """One device group's fit; ``stage``: (index, stages, its weight bytes, its layers) of a pipeline."""
    from inspector.analysis.fit import REPLICATED_ROLES, fit

    c = report.config
    s = report.summary
    weights_all = s.bytes
    scale = 1.0
    if weights_dtype:
        bits = USER_DTYPE_BITS[weights_dtype.lower()]
        weights_all = int(est.quant.logical_parameters * bits // 8)
        scale = weights_all / s.bytes if s.bytes else 1.0
    weights_all += extra_weights
    replicated: dict[Role, int] = {r.role: int(r.bytes * scale) for r in s.by_role if r.role in REPLICATED_ROLES}
    share = 1.0
    note = None
    if engine == "llama.cpp" and stage is None:
        host = _host_input(report)
        if host:
            weights_all -= int(host * scale)
            note = (f"less the input embedding, {int(host * scale):,} B, which llama.cpp keeps in host memory "
                    "(llama-model.cpp: the input layer is always on the CPU)")
    if stage is not None:  # this stage's layers' share of the weights, the KV cache and what is replicated
        index, _, stage_bytes, stage_layers = stage
        share = stage_layers / (c.num_layers or 1)
        weights_all = int(stage_bytes * scale) + (extra_weights if index == 0 else 0)
        replicated = {role: int(b * share) for role, b in replicated.items()}
    kvd = est.kv_dtype
    last = stage is None or stage[0] == stage[1] - 1
    terms = engine_terms(report, budget, engine, samples=last, pipeline=1 if stage is None else stage[1])
    util = (utilization or VLLM_UTILIZATION) if engine == "vllm" else None

    def figures_at(ctx: int) -> tuple[int, int]:
        figures = {f.name: f.value for f in _kv(report, ctx, 1, kvd)}
        per_token, total = int(figures.get("kv_bytes_per_token") or 0), int(figures.get("kv_bytes") or 0)
        return (math.ceil(per_token * share), math.ceil(total * share)) if share != 1.0 else (per_token, total)

    common = dict(budget=budget, batch=est.batch, context=est.context, weights_all=weights_all,
                  replicated=replicated, kv_heads=c.num_kv_heads, terms=terms, overhead=overhead,
                  model_limit=model_limit(c), engine=engine, utilization=util)
    if not c.encoder_only:
        kv_figure = next(f for f in _kv(report, 1, 1, kvd) if f.name == "kv_bytes_per_token")
        if kv_figure.value is None:  # no answer from a guess: the fit is unknown, and says why
            from dataclasses import replace

            zero = fit(kv_at=lambda ctx: (0, 0), mla=False, **common)  # type: ignore[arg-type]
            why = f"the KV cache per token is unknown ({kv_figure.formula.removeprefix('unknown: ')})"
            return replace(zero, fits=None, max_context=None, max_batch=None, unknown=why, kv_pool_bytes=None)
    one = (kv_one if stage is None else None) or figures_at(1)
    # without sliding windows the cache is linear in the context: no need to re-derive it (and
    # re-check it against the headers) for every context the search tries
    linear = not c.sliding_window and not any(k in t for t in c.layer_types for k in LINEAR_STATE) \
        and not _is_gguf(report)  # llama.cpp pads the context: not linear cell by cell

    def kv_at(ctx: int) -> tuple[int, int]:
        return (one[0], one[1] * ctx) if linear else figures_at(ctx)

    result = fit(kv_at=kv_at, mla=bool(c.kv_lora_rank), **common)  # type: ignore[arg-type]
    if note:
        from dataclasses import replace

        result = replace(result, weights_note=note)
    if result.kv_pool_bytes is not None:
        from dataclasses import replace

        # tokens only for a uniform layout: a windowed or recurrent layer is paged apart by vLLM's
        # hybrid allocator, whose split this estimate does not model
        tokens = vllm_tokens(result.kv_pool_bytes, result.kv_bytes_per_token) if linear else None
        result = replace(result, kv_pool_tokens=tokens)
    return result


def _pipeline_fit(report: Report, budget: Budget, weights_dtype: str | None, est: Estimate) -> Fit:
    """A diffusion pipeline: every component with weights on the GPU together (diffusers'
    ``pipe.to("cuda")``); the weights are answered, the activations are not (they depend on the image
    size, the frame count and the batch), and the fit says so."""
    from inspector.analysis.fit import Fit

    s = report.summary
    weights = s.bytes if not weights_dtype else int(est.quant.logical_parameters *
                                                    USER_DTYPE_BITS[weights_dtype.lower()] // 8)
    per = -(-weights // budget.devices)  # components split over devices, as device_map="balanced" does
    parts = ", ".join(f"{r.name} {r.bytes:,} B" for r in report.components if r.tensors)
    note = (f"{parts}: all resident together, as pipe.to('cuda') places them" if parts else
            "the model's weights, resident as model.to('cuda') places them") + \
        (f"; spread over {budget.devices} devices" if budget.devices > 1 else "")
    over = per > budget.per_device  # known without the activations: the weights alone are too many
    return Fit(budget_bytes=budget.per_device, devices=budget.devices, batch=est.batch, context=0, weights_bytes=per,
               weights_bytes_all=weights, replicated_bytes=0, replicated=(), kv_bytes_per_token=0, kv_bytes=0,
               kv_share=f"no KV cache: {no_tokens(report)}", overhead_bytes=0,
               overhead_formula="activations not counted", total_bytes=per, fits=False if over else None,
               max_context=None, max_context_capped=False, max_batch=None, model_limit=None, warnings=(),
               unknown=None if over else (
                   "activation memory of a diffusion model depends on the image size, frames and batch; "
                   f"the weights alone take {per / 2**30:.2f} GiB of {budget.per_device / 2**30:.2f} GiB per device"),
               engine="diffusers", usable_bytes=budget.per_device, gpu=budget.gpu, weights_note=note)


def _staged_fit(report: Report, est: Estimate, budget: Budget, stages: int, *, weights_dtype: str | None,
                overhead: int | None, extra_weights: int, engine: str, utilization: float | None) -> Fit:
    """A pipeline: the layers split between ``stages`` groups of devices (vLLM's split; llama.cpp's
    layer split evenly), each stage's fit on its own; the answer is the tightest stage's."""
    from dataclasses import replace

    from inspector.analysis.fit import Budget as _Budget
    from inspector.errors import UsageError

    layers = report.config.num_layers or 0
    if budget.devices % stages or not 1 < stages <= max(layers, 1):
        raise UsageError(f"--pipeline {stages} does not divide {budget.devices} devices into stages of a model "
                         f"of {layers} layers", hint="for example --gpu H100x4 --pipeline 2 (TP 2 × PP 2)")
    tp = budget.devices // stages
    per_stage = vllm_stage_layers(layers, stages)
    stage_bytes = _stage_bytes(report, per_stage, host_input=engine == "llama.cpp")
    group = _Budget(budget.per_device, tp, budget.gpu)
    fits = []
    first = 0
    for index, count in enumerate(per_stage):
        f = _fit(report, est, group, weights_dtype=weights_dtype, overhead=overhead, kv_one=None,
                 extra_weights=extra_weights, engine=engine, utilization=utilization,
                 stage=(index, stages, stage_bytes[index], count))
        fits.append((f, f"stage {index + 1} of {stages}: layers {first}-{first + count - 1}"))
        first += count
    described = tuple(f"{name}, weights {f.weights_bytes:,} B per device" for f, name in fits)
    tightest, name = min(fits, key=lambda pair: (pair[0].fits is not False, pair[0].max_context or 0,
                                                 pair[0].max_batch or 0, pair[0].usable_bytes - pair[0].total_bytes))
    tokens = [f.kv_pool_tokens for f, _ in fits]
    return replace(tightest, devices=budget.devices, pipeline=stages, stages=described, stage=name,
                   kv_pool_tokens=min(tokens) if all(t is not None for t in tokens) else None)  # type: ignore[type-var]


def _host_input(report: Report) -> int:
    """Bytes of the input embedding llama.cpp leaves in host memory: all of it when the model has its
    own output layer (a tied one is copied to the output device, so the device holds the same bytes)."""
    roles = {r.role: r.bytes for r in report.summary.by_role}
    return roles.get("embedding", 0) if "lm_head" in roles else 0


def _stage_bytes(report: Report, per_stage: list[int], host_input: bool = False) -> list[int]:
    """Weight bytes each pipeline stage holds: its layers of the main stack; the embedding (and
    anything outside the stack) on the first stage; the output layer and final norm on the last, with
    a tied embedding copied there (vLLM; llama.cpp's output device). ``host_input``: llama.cpp keeps
    the input embedding in host memory."""
    from collections import Counter

    tensors = report.tensors
    stacks = Counter(t.place.stack for t in tensors if t.place.layer is not None)
    main = stacks.most_common(1)[0][0] if stacks else None
    bounds = [sum(per_stage[:i + 1]) for i in range(len(per_stage))]
    out = [0] * len(per_stage)
    embedding = 0
    for info, place in tensors:
        if place.stack == main and place.layer is not None:
            out[next((i for i, b in enumerate(bounds) if place.layer < b), len(bounds) - 1)] += info.nbytes
        elif place.role in ("lm_head", "norm"):
            out[-1] += info.nbytes
        else:
            is_embedding = place.role == "embedding"
            embedding += info.nbytes if is_embedding else 0
            out[0] += 0 if is_embedding and host_input else info.nbytes
    if not any(r.role == "lm_head" for r in report.summary.by_role) and not report.config.encoder_only:
        out[-1] += embedding  # a tied output layer: the last stage holds its own copy
    return out


def default_engine(report: Report) -> str:
    """llama.cpp for a GGUF, vLLM for everything else (as the issue tracker's users serve them)."""
    return "llama.cpp" if _is_gguf(report) else "vllm"


def engine_terms(report: Report, budget: Budget, engine: str, *, samples: bool = True,
                 pipeline: int = 1) -> tuple[Term, ...]:
    """The engine's per-device terms for this model and budget (``engines.py``); ``samples``: the
    stage computes the logits (the last of a pipeline)."""
    c = report.config
    hidden = c.hidden_size or 0
    inter = max(c.intermediate_size or 0, (c.moe_intermediate_size or 0) * (c.experts_per_token or 1))
    if engine == "llama.cpp":
        return llama_cpp_terms(hidden=hidden, inter=inter, vocab=c.vocab_size, samples=samples)
    dtype_bytes = DTYPE_BITS.get(c.dtype or "", 16) / 8
    rotary = c.qk_rope_head_dim if c.kv_lora_rank else c.head_dim
    factor = c.raw.get("partial_rotary_factor")
    if rotary and isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 < factor <= 1:
        rotary = int(rotary * factor)
    return vllm_terms(gpu_bytes=budget.per_device, gpu_name=budget.gpu, devices=budget.devices, hidden=hidden,
                      inter=inter, vocab=c.vocab_size, dtype_bytes=dtype_bytes, max_position=c.max_position,
                      rotary_dim=rotary, samples=samples, pipeline=pipeline)


def common_fit(report: Report, est: Estimate) -> str | None:
    """The one-line answer of ``inspect MODEL``: the smallest common GPU budget it fits at 8k context."""
    from inspector.analysis.fit import COMMON_BUDGETS_GIB, GIB, SUMMARY_CONTEXT, Budget

    if report.config.encoder_only or not report.config.num_layers:
        return None
    limit = model_limit(report.config)
    ctx = min(SUMMARY_CONTEXT, limit) if limit else SUMMARY_CONTEXT
    at = estimate(report, context=ctx, what_if=())
    kv = {f.name: f.value for f in at.figures}
    if kv.get("kv_bytes_per_token") is None:  # unknown: no answer rather than one without a KV cache
        return None
    one = (int(kv.get("kv_bytes_per_token") or 0), int(kv.get("kv_bytes_per_token") or 0))
    for devices in (1, 2, 4, 8):
        for gib in COMMON_BUDGETS_GIB:
            f = fit_estimate(report, at, Budget(gib * GIB, devices), kv_one=one)
            if f.fits:
                where = f"one {gib} GiB GPU" if devices == 1 else f"{devices} × {gib} GiB GPUs"
                return f"fits {where} at {ctx:,} tokens of context"
    return f"does not fit 8 × {COMMON_BUDGETS_GIB[-1]} GiB GPUs at {ctx:,} tokens of context"
