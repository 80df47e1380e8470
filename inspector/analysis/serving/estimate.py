"""Estimates from the architecture (``architecture.py``): weights, KV cache, FLOPs, MoE active parameters.

Every figure carries the formula it came from, its source and its assumptions, so a reader can
check it. Exact where the inputs are exact (bytes, counts); where a figure models runtime behaviour
(FLOPs, KV cache), the assumptions say which behaviour. The parts are typed (``Weights``, ``Kv``,
``Flops``, ``Moe``, ``quant.Quant``): a renderer reads ``estimate.kv.per_token.value``, never a figure
by its name; ``Estimate.figures`` lists them all, in order, for the table and the JSON document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from inspector import repos
from inspector.analysis.facts.config import ModelConfig, config_int
from inspector.analysis.facts.report import Report
from inspector.analysis.serving.engines import LLAMA_CPP, VLLM, Engine
from inspector.analysis.serving.quant import Quant, WhatIf, quantization, weights_at
from inspector.analysis.structure.architecture import Architecture, Layer, Mixer, architecture
from inspector.analysis.structure.mixers import MIXERS
from inspector.errors import UsageError
from inspector.formats.dtypes import DTYPE_BITS, USER_DTYPE_BITS, USER_DTYPE_BYTES

FLOPS_SOURCE: Final = ("Kaplan et al. 2020, 2N FLOPs per token for the weights; Hoffmann et al. 2022, appendix F, "
                       "for the attention logits and reduction (4·L·h·d·t)")
KV_SOURCE: Final = "standard decoder KV cache: K and V of every KV head, per layer and token"
GGUF_KV_SOURCE: Final = ("llama.cpp's KV cache (llama-kv-cache.cpp): K and V rows of n_embd_k_gqa and n_embd_v_gqa "
                         "per layer and cell")
MLA_SOURCE: Final = ("DeepSeek-V2 paper §2.1 (multi-head latent attention caches the compressed latent and the "
                     "decoupled rope key)")
STATE_SOURCE: Final = ("vLLM's MambaStateShapeCalculator (model_executor/layers/mamba/mamba_utils.py): the "
                       "convolution's last kernel − 1 inputs and the scan's state, per layer and sequence")


@dataclass(frozen=True, slots=True)
class Figure:
    name: str
    value: int | float | None
    unit: str
    formula: str
    source: str
    assumptions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Weights:
    bytes: Figure  # as stored
    components: tuple[Figure, ...] = ()  # a diffusion pipeline's, one a component


@dataclass(frozen=True, slots=True)
class Moe:
    total: Figure
    main: Figure  # multi-token-prediction layers left out
    active: Figure


@dataclass(frozen=True, slots=True)
class Kv:
    """The KV cache of what runs per generated token, and the state apart from it."""

    per_token: Figure  # value None: unknown (the formula says what is missing) or none (``none`` says why)
    bytes: Figure  # at the estimate's context and batch, cells counted as the default engine allocates them
    #: why there is no per-token cache (an encoder, a state-space model); None when there is one
    none: str | None = None
    #: the whole-context reservation beside a windowed cache
    full_reservation: Figure | None = None
    #: cross-attention: K and V of the encoder's output, per input token
    cross_per_input_token: Figure | None = None
    #: state-space and linear-attention layers: a fixed state per sequence
    state_per_sequence: Figure | None = None
    #: the per-token layers that cache, in order: (bytes a token costs, the window it is capped at)
    layers: tuple[tuple[int, int | None], ...] = ()

    @property
    def known(self) -> bool:
        return self.per_token.value is not None

    def total(self, context: int, cells: Callable[[int, int | None], int], layers: range | None = None) -> int:
        """KV bytes of one sequence at ``context`` (``cache_bytes``); ``layers``: a pipeline stage's
        share (indexes into ``layers``)."""
        return cache_bytes(self.layers if layers is None else self.layers[layers.start:layers.stop], context, cells)

    def by_window(self, layers: range | None = None) -> tuple[tuple[int | None, int], ...]:
        """The caching layers' bytes a token costs, summed per window (``window_sums``): what ``total`` sums
        at any context, for a search that asks at many."""
        return window_sums(self.layers if layers is None else self.layers[layers.start:layers.stop])


def window_sums(rows: tuple[tuple[int, int | None], ...]) -> tuple[tuple[int | None, int], ...]:
    """(window, the bytes a token costs in all layers of that window), per window, in first-seen order."""
    by_window: dict[int | None, int] = {}
    for per_token, window in rows:
        by_window[window] = by_window.get(window, 0) + per_token
    return tuple(by_window.items())


def cache_bytes(rows: tuple[tuple[int, int | None], ...], context: int,
                cells: Callable[[int, int | None], int]) -> int:
    """Σ over caching layers of the bytes a token costs × the cells the engine keeps for the layer at
    ``context`` (``Engine.cells``: the context, or a window's share of it, padded as the engine pads):
    per window, the layers' bytes summed first (the cells depend on the window alone)."""
    return sum(b * cells(context, w) for w, b in window_sums(rows))


@dataclass(frozen=True, slots=True)
class Flops:
    weights_per_token: Figure
    attention_per_token: Figure
    decode_step: Figure
    prefill: Figure
    ratio: Figure
    ratio_closed_form: Figure
    #: the stacks that run once per input (an encoder, a vision or audio tower), per input token
    per_input_token: Figure | None = None


@dataclass(frozen=True, slots=True)
class Estimate:
    context: int
    batch: int
    kv_dtype: str
    architecture: Architecture
    weights: Weights
    quant: Quant
    what_if: tuple[WhatIf, ...]
    #: None with ``no_tokens``: a model that decodes no tokens (a diffusion pipeline or one of its models)
    kv: Kv | None = None
    flops: Flops | None = None
    moe: Moe | None = None
    warnings: tuple[str, ...] = ()
    no_tokens: str | None = None

    @property
    def figures(self) -> tuple[Figure, ...]:
        """Every figure, in the order the table and ``--json``'s ``figures`` list them."""
        out = [self.weights.bytes, *self.weights.components]
        kv = self.kv
        if kv is not None:
            out += [kv.per_token, kv.bytes]
            out += [f for f in (kv.full_reservation, kv.cross_per_input_token, kv.state_per_sequence) if f]
        if self.moe is not None:
            out += [self.moe.total, self.moe.main, self.moe.active]
        f = self.flops
        if f is not None:
            out += [f.weights_per_token, f.attention_per_token, f.decode_step, f.prefill, f.ratio, f.ratio_closed_form]
            out += [f.per_input_token] if f.per_input_token is not None else []
        return tuple(out)


def no_tokens(report: Report) -> str | None:
    """Why a checkpoint has no per-token figures (KV cache, FLOPs per token, context), or None: a
    diffusers pipeline, or one of its models on its own (a UNet, VAE or DiT transformer, whose
    config diffusers wrote: ``_class_name`` and ``_diffusers_version``). Their work depends on the
    image size, frames and steps, which no file gives."""
    c = report.checkpoint
    repo = repos.kind_of(c)
    if repo is not None and (why := repo.no_tokens()) is not None:
        return why
    raw = c.config or {}
    if "_diffusers_version" in raw and isinstance(cls := raw.get("_class_name"), str):
        return f"a diffusers {cls[:80]} decodes no tokens"
    return None


def is_gguf(report: Report) -> bool:
    return bool(report.checkpoint.headers) and all(h.format == "gguf" for h in report.checkpoint.headers)


def default_engine(report: Report) -> Engine:
    """llama.cpp for a GGUF, vLLM for everything else (as the issue tracker's users serve them)."""
    return LLAMA_CPP if is_gguf(report) else VLLM


def estimate(report: Report, *, context: int | None = None, batch: int = 1, kv_dtype: str | None = None,
             what_if: tuple[str, ...] = ("bf16", "fp8", "int4"), arch: Architecture | None = None) -> Estimate:
    """The estimate at ``context`` (the model's limit by default) and ``batch``; ``arch``: the
    architecture when the caller has it already (one is built from the report otherwise)."""
    c = report.config
    ctx = context or c.max_position or 4096
    kvd = (kv_dtype or _default_kv_dtype(c, report)).lower()
    if kvd not in USER_DTYPE_BYTES:
        raise UsageError(f"⟨kv_dtype⟩: unknown {kvd!r}", hint="use " + ", ".join(USER_DTYPE_BYTES))
    unknown = [d for d in what_if if d.lower() not in USER_DTYPE_BITS]
    if unknown:
        raise UsageError(f"⟨dtypes⟩: unknown {unknown[0]!r}", hint="use " + ", ".join(USER_DTYPE_BITS))
    q = quantization(report)
    arch = arch or architecture(report.tensors, c)
    s = report.summary
    weights = Weights(Figure("weights_bytes", s.bytes, "B", "Σ tensor bytes from the headers' data_offsets",
                             "safetensors headers", ("as stored: every tensor, scales and buffers included",)))
    shares = tuple(weights_at(report, q, d.lower()) for d in what_if)
    why = no_tokens(report)
    if why is not None:  # a diffusion pipeline or one of its models: weights only
        weights = Weights(weights.bytes, tuple(
            Figure(f"weights_bytes.{r.name}", r.bytes, "B", f"Σ tensor bytes of {r.name}/", "safetensors headers",
                   (f"{r.class_name or r.model_type or 'component'}: {r.parameters:,} parameters",))
            for r in report.components if r.tensors))
        return Estimate(ctx, batch, kvd, arch, weights, q, shares, no_tokens=why)
    moe = _moe(arch, report)
    warnings = []
    limit = model_limit(c)
    if limit and ctx > limit:
        warnings.append(f"context {ctx:,} is over the model's limit of {limit:,} tokens ({limit_source(report)})")
    return Estimate(ctx, batch, kvd, arch, weights, q, shares, kv=kv_cache(report, arch, ctx, batch, kvd),
                    flops=_flops(report, arch, ctx, moe is not None), moe=moe, warnings=tuple(warnings))


def _default_kv_dtype(c: ModelConfig, report: Report | None = None) -> str:
    """The model's own dtype: config.json's, else that of most parameters; bf16 only when neither
    is a float dtype (a packed integer checkpoint without torch_dtype)."""
    names = {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}
    if c.storage.dtype in names:
        return names[c.storage.dtype]
    if report is not None and is_gguf(report):
        return "fp16"  # llama.cpp's default cache type (--cache-type-k/-v f16)
    if report is not None:
        floats = [d for d in report.summary.by_dtype if d.dtype in names and d.parameters]
        if floats:
            return names[max(floats, key=lambda d: d.parameters).dtype]
    return "bf16"


# --- KV cache ------------------------------------------------------------------------------------


def kv_cache(report: Report, arch: Architecture, ctx: int, batch: int, kvd: str) -> Kv:
    """The cache of the layers that run per generated token: K and V (or MLA's latent) of each
    layer that attends, windowed layers capped at their window; cross-attention and recurrent state
    said apart, since they grow with the input and the sequence count, not the context."""
    c = report.config
    nbytes = USER_DTYPE_BYTES[kvd]
    layers = arch.per_token_layers
    cross, state = _cross(arch, report, nbytes), _state(arch, report)
    if not arch.decodes:
        why = ("an encoder reads its whole input at once; there is no autoregressive decoding"
               if arch.stacks else "no layers in the headers")
        none = Figure("kv_bytes_per_token", None, "B", "none: " + why, "the architecture's stacks", (why,))
        return Kv(none, Figure("kv_bytes", None, "B", "none: " + why, "the architecture's stacks"), none=why,
                  state_per_sequence=state)
    attending = [(layer, m) for layer in layers for m in layer.mixers if MIXERS[m.kind].caches]
    recurrent = sum(1 for layer in layers if any(MIXERS[m.kind].recurrent for m in layer.mixers))
    if not attending and recurrent:
        why = f"every one of the {len(layers)} decoder layers keeps a fixed state per sequence, none per token"
        return Kv(Figure("kv_bytes_per_token", 0, "B", "none: " + why, "the architecture's stacks", (why,)),
                  Figure("kv_bytes", 0, "B", "none: " + why, "the architecture's stacks"), none=why,
                  state_per_sequence=state)
    unknown = [layer.index for layer, m in attending if m.attention is None or m.attention.cache_width is None]
    if unknown or not attending:
        keys = [name for name, value in (("num_key_value_heads", c.num_kv_heads), ("head_dim", c.head_dim))
                if not value] or ["layer kinds"]
        why = "unknown: the config gives no " + " and no ".join(keys)
        return Kv(Figure("kv_bytes_per_token", None, "B", why, "config.json", (why,)),
                  Figure("kv_bytes", None, "B", why, "config.json", (why,)), cross_per_input_token=cross,
                  state_per_sequence=state)
    shared = config_int(c.raw.get("num_kv_shared_layers"), 0)
    if shared >= len(attending):  # Gemma 3n's first shared layer is num_hidden_layers − this: it must be a layer
        why = (f"unknown: num_kv_shared_layers {shared:,} is not below the {len(attending):,} attention layers, so no "
               "layer would keep the KV the others reuse; the config is inconsistent")
        return Kv(Figure("kv_bytes_per_token", None, "B", why, "config.json", (why,)),
                  Figure("kv_bytes", None, "B", why, "config.json", (why,)), cross_per_input_token=cross,
                  state_per_sequence=state)
    storing = attending[: len(attending) - shared] if shared else attending
    rows = tuple((int((m.attention.cache_width or 0) * nbytes) if m.attention else 0,
                  m.attention.window if m.attention and MIXERS[m.kind].windowed else None)
                 for _, m in storing)
    per_token = sum(b for b, _ in rows)
    engine = default_engine(report)
    full_cells, window_cells = engine.cells(ctx, None), None
    windowed = [w for _, w in rows if w]
    if windowed:
        window_cells = engine.cells(ctx, min(windowed))
    total = cache_bytes(rows, ctx, engine.cells)
    mla = any(MIXERS[m.kind].latent for _, m in storing)
    source = MLA_SOURCE if mla else GGUF_KV_SOURCE if is_gguf(report) else KV_SOURCE
    assumptions = _kv_assumptions(arch, c, storing, recurrent, shared, engine, ctx)
    per_token_formula = _kv_formula(storing, nbytes, c)
    sliding = len(windowed)
    bytes_formula = (f"Σ over layers of per-layer bytes × ({full_cells:,} cells, or a windowed layer's "
                     f"{window_cells:,}) × batch {batch}" if sliding else
                     f"Σ over layers of per-layer bytes × {full_cells:,} cells × batch {batch}") if not mla else \
        f"per token × context {ctx:,} × batch {batch}"
    reservation = None
    if sliding and window_cells is not None and window_cells < full_cells:
        reservation = Figure(
            "kv_bytes_full_reservation", per_token * full_cells * batch, "B",
            f"per token × {full_cells:,} cells × batch {batch}: every layer, windowed ones included, holds the whole "
            "context", "what an engine reserves when it does not page windowed layers apart",
            ("windowed (the figure above): vLLM's hybrid KV cache manager (its default in the V1 engine) and "
             "llama.cpp with --swa-full off (its default)",
             "whole context: llama.cpp with --swa-full, vLLM with --disable-hybrid-kv-cache-manager, "
             "and a transformers DynamicCache"))
    return Kv(
        per_token=Figure("kv_bytes_per_token", per_token, "B", per_token_formula, source, assumptions),
        bytes=Figure("kv_bytes", total * batch, "B", bytes_formula, source, assumptions if not mla else ()),
        full_reservation=reservation, cross_per_input_token=cross, state_per_sequence=state, layers=rows)


def _kv_formula(storing: list[tuple[Layer, Mixer]], nbytes: float, c: ModelConfig) -> str:
    mixers = [m for _, m in storing]
    n = len(mixers)
    first = mixers[0].attention
    assert first is not None
    if MIXERS[mixers[0].kind].latent:
        return (f"(kv_lora_rank {c.mla.kv_lora_rank} + qk_rope_head_dim {c.mla.qk_rope_head_dim}) × {n} layers × "
                f"{nbytes:g} B")
    kv_heads = {m.attention.kv_heads for m in mixers if m.attention}
    heads_text = f"{first.kv_heads} KV heads" if len(kv_heads) <= 1 else "the layer's KV heads"
    if first.key_dim != first.value_dim:
        return f"(key {first.key_dim} + value {first.value_dim}) × {n} layers × {heads_text} × {nbytes:g} B"
    return f"2 (K and V) × {n} layers × {heads_text} × head_dim {first.key_dim} × {nbytes:g} B"


def _kv_assumptions(arch: Architecture, c: ModelConfig, storing: list[tuple[Layer, Mixer]], recurrent: int,
                    shared: int, engine: Engine, ctx: int) -> tuple[str, ...]:
    mixers = [m for _, m in storing]
    if mixers and MIXERS[mixers[0].kind].latent:
        return ("MLA: one latent per token per layer, shared by all heads", arch.kv_check,
                "multi-token-prediction layers are not counted (not used for plain decoding)")
    first = mixers[0].attention if mixers else None
    heads, kv = (first.heads, first.kv_heads) if first else (None, None)
    out = [f"grouped-query attention: {kv} KV heads for {heads} query heads" if kv and heads and kv < heads
           else "multi-head attention: one KV head per query head", arch.kv_check]
    windows = sorted({m.attention.window for m in mixers if m.attention and m.attention.window})
    for window in windows:
        count = sum(1 for m in mixers if m.attention and m.attention.window == window)
        word = next(MIXERS[m.kind].keeps_words for m in mixers if m.attention and m.attention.window == window)
        out.append(f"{count} {word} {window:,} tokens" + engine.window_rule(ctx, window))
    unused = config_int(c.raw.get("sliding_window_unused"), 0)
    if unused:
        out.append(f"the GGUF gives a sliding window of {unused:,} tokens that llama.cpp's loader for "
                   f"{c.model_type} does not apply: every layer keeps the whole context")
    if recurrent:
        out.append(f"{recurrent} linear-attention or state-space layers keep a constant state "
                   "(not per token; counted apart, per sequence)")
    if shared:
        out.append(f"{shared} layers reuse another layer's KV (num_kv_shared_layers)")
    kv_of = [m.attention.kv_heads for m in mixers if m.attention]
    if len(set(kv_of)) > 1:
        out.append("KV heads per layer as the file gives them: " + ", ".join(f"{k}" for k in kv_of))
    decoders = [s for s in arch.stacks if s.kind == "decoder"]
    if len(arch.stacks) > len(decoders) and decoders:
        others = ", ".join(f"{s.kind} ({len(s.layers)} layers)" if s.layers else s.kind
                           for s in arch.stacks if s.kind != "decoder")
        out.append(f"only the decoder ({sum(len(s.layers) for s in decoders)} layers) caches per generated token; "
                   f"not {others}")
    return tuple(out)


def _cross(arch: Architecture, report: Report, nbytes: float) -> Figure | None:
    """Cross-attention's K and V: the encoder's output projected once per input token, per decoder
    layer (the k and v projections' output rows, from the headers)."""
    decoder = {s.name for s in arch.running("per_token")}
    rows = 0
    layers: set[int | None] = set()
    for info, place in report.tensors:
        if place.role == "attn.cross" and place.stack in decoder and len(info.shape) == 2 \
                and info.name.endswith(".weight") and info.name.rsplit(".", 2)[-2] in _CROSS_KV:
            rows += info.shape[0]
            layers.add(place.layer)
    if not rows:
        return None
    return Figure("kv_bytes_per_input_token", int(rows * nbytes), "B",
                  f"Σ over {len(layers)} decoder layers of the cross-attention k and v projections' output rows "
                  f"({rows:,}) × {nbytes:g} B",
                  "encoder-decoder attention (Vaswani et al. 2017): K and V of the encoder's output, computed once "
                  "per input and kept for every decoding step",
                  ("per input token (a prompt for the encoder, an audio's frames), not per generated token",))


_CROSS_KV: Final = frozenset({"k", "v", "k_proj", "v_proj", "key", "value"})


def _state(arch: Architecture, report: Report) -> Figure | None:
    """The fixed state a sequence keeps in the state-space and linear-attention layers of the decoder,
    in the model's dtype (vLLM's mamba_cache_dtype ``auto``)."""
    mixers = [m for layer in arch.per_token_layers for m in layer.mixers if MIXERS[m.kind].recurrent]
    if not mixers:
        return None
    dtype = report.config.storage.dtype or "BF16"
    nbytes = DTYPE_BITS.get(dtype, 16) / 8
    unknown = next((m.state_formula for m in mixers if m.state is None), None)
    if unknown is not None:
        return Figure("state_bytes_per_sequence", None, "B", unknown, STATE_SOURCE)
    total = sum(m.state or 0 for m in mixers)
    return Figure("state_bytes_per_sequence", int(total * nbytes), "B",
                  f"{len(mixers)} layers × ({mixers[0].state_formula}) × {nbytes:g} B ({dtype}) = "
                  f"{total:,} elements", STATE_SOURCE,
                  ("one state per sequence, whatever its length: the cache of a recurrent layer does not grow "
                   "with the context",))


# --- mixture of experts --------------------------------------------------------------------------


def _moe(arch: Architecture, report: Report) -> Moe | None:
    """Active parameters per token: routed experts a token does not visit are left out. Counts are
    logical (a packed int4 word counts its eight weights: ``report.logical``)."""
    c = report.config
    k = c.moe.experts_per_token
    moe_layers = [layer for s in arch.stacks if s.kind != "mtp" for layer in s.layers if layer.mlp.kind == "moe"]
    if not moe_layers or not k:
        return None
    total = arch.parameters
    mtp = sum(s.parameters for s in arch.stacks if s.kind == "mtp")
    main = total - mtp
    active = main - sum(s.parameters - s.active for s in arch.stacks if s.kind != "mtp")
    shared = sum(r.parameters for r in report.summary.by_role if r.role.startswith("moe.shared"))
    router = sum(r.parameters for r in report.summary.by_role if r.role == "moe.router")
    routed = [layer for layer in moe_layers if layer.mlp.experts > k]
    assumptions = [f"{k} of {c.moe.num_experts} routed experts per token, in {len(routed)} MoE layers"]
    if shared:
        assumptions.append(f"shared experts always active ({shared:,} parameters)")
    if c.moe.first_k_dense:
        assumptions.append(f"the first {c.moe.first_k_dense} layers are dense and always active")
    assumptions.append(f"router always active ({router:,} parameters)")
    if mtp:
        assumptions.append(f"multi-token-prediction layers ({mtp:,} parameters) are left out: plain decoding "
                           "does not run them")
    return Moe(
        Figure("total_parameters", total, "", "Σ parameter elements in the headers", "safetensors headers"),
        Figure("main_parameters", main, "", "total − multi-token-prediction layers", "config num_nextn_predict_layers")
        if mtp else Figure("main_parameters", main, "", "total", "safetensors headers"),
        Figure("active_parameters", active, "",
               "main − Σ over MoE layers of (experts − experts per token) / experts × expert parameters",
               "mixture-of-experts routing (Shazeer et al. 2017; Mixtral, DeepSeek-V3 reports)", tuple(assumptions)))


def active_parameters(report: Report) -> int | None:
    """Parameters a token uses in a mixture of experts (see ``_moe``); None for a dense model."""
    moe = _moe(architecture(report.tensors, report.config), report)
    return None if moe is None else int(moe.active.value or 0)


# --- FLOPs ---------------------------------------------------------------------------------------


def _weights_formula(arch: Architecture, runs: int, lookups: int, head_text: str, per_token: bool) -> str:
    """The weights' FLOPs a generated token costs, in words."""
    if per_token and all(s.kind in ("decoder", "mtp") for s in arch.stacks):
        return (f"2 × (parameters used per token {runs + arch.other + arch.head + lookups:,} − input "
                f"embedding {arch.embedding:,}"
                + (f" − position lookups {arch.lookups:,}" if arch.lookups else "") + f"{head_text})")
    if per_token:
        return f"2 × (decoder {runs:,} + outside the stacks {arch.other:,} + output head {arch.head:,}{head_text})"
    return "none: nothing runs per generated token (no decoder)"


def _per_input_flops(arch: Architecture, per_token: bool) -> Figure | None:
    """FLOPs once per input token of the stacks that run on the input (an encoder, an image's or audio's tower)."""
    inputs = arch.running("per_input")
    if not inputs:
        return None
    input_params = sum(s.active for s in inputs)
    names = ", ".join(f"{s.kind} {s.parameters:,}" for s in inputs)
    if not per_token:
        input_params += arch.other
        names += f", outside the stacks {arch.other:,}"
    return Figure("flops_per_input_token", 2 * input_params, "FLOP", f"2 × ({names})", FLOPS_SOURCE,
                  ("once per input token (a prompt for an encoder, an image's patches, an audio's frames), "
                   "not per generated token", "embeddings and position tables are lookups"))


def _flops(report: Report, arch: Architecture, ctx: int, moe: bool) -> Flops:
    c = report.config
    per_token = arch.running("per_token")
    runs = sum(s.active for s in per_token)
    gemm_params = runs + arch.other + arch.head + (arch.embedding if arch.tied else 0) if per_token else 0
    gemm = 2 * gemm_params
    attending = [(m.kind, m.attention) for layer in arch.per_token_layers for m in layer.mixers
                 if MIXERS[m.kind].caches and m.attention is not None]
    widths = [(kind, a.window, 2 * (a.heads or 0) * ((a.key_dim or 0) + (a.value_dim or 0))) for kind, a in attending]
    attention = sum(w * MIXERS[kind].attended(window, ctx) for kind, window, w in widths)
    prefill_attention = sum(w * MIXERS[kind].attended_prefix(window, ctx) for kind, window, w in widths)
    first = attending[0][1] if attending else None
    heads = first.heads if first else 0
    d_qk, d_v = (first.key_dim or 0, first.value_dim or 0) if first else (0, 0)
    windowed = [(kind, window) for kind, window, _ in widths if window]
    full = len(widths) - len(windowed)
    window = windowed[0][1] if windowed else None
    recurrent = sum(1 for layer in arch.per_token_layers if any(MIXERS[m.kind].recurrent for m in layer.mixers))
    lookups = arch.embedding + arch.lookups
    head_text = "" if not arch.tied else f" + tied head {arch.embedding:,}"
    assumptions = ("each weight is one multiply and one add per token (2 FLOPs)",
                   "the input embedding (and learned position embedding) is a lookup and costs nothing"
                   + ("; the tied output head multiplies by it, so it counts once" if arch.tied else ""),
                   "norms and biases stay in the count (a negligible share); buffers are not parameters",
                   "mixture of experts: only active parameters" if moe else "dense model: every parameter is used",
                   "softmax and other element-wise work ignored",
                   *_not_per_token(arch))
    weights_formula = _weights_formula(arch, runs, lookups, head_text, bool(per_token))
    if not per_token:
        attention_formula = "none: nothing runs per generated token (no decoder)"
    elif not widths:
        attention_formula = "none: no layer attends over the context (state-space or linear-attention layers only)"
    elif windowed and len({w for _, w in windowed}) == 1:
        kind = MIXERS[windowed[0][0]]
        attention_formula = (f"2 × {heads} heads × (d_qk {d_qk} + d_v {d_v}) × ({full} layers × context {ctx:,} + "
                             f"{len(windowed)} {kind.name} layers × {kind.reach_words}{window:,}))")
    elif windowed:
        attention_formula = "Σ over layers of 2 × heads × (d_qk + d_v) × the tokens the layer attends to"
    else:
        attention_formula = (f"2 × {full} layers × {heads} heads × (d_qk {d_qk} + d_v {d_v}) × context {ctx:,}"
                             f" (= 4·L·h·d·t when d_qk = d_v)")
    attention_assumptions = ["score and value products at context t"]
    if windowed:
        bound = MIXERS[windowed[0][0]].attends_words
        attention_assumptions.append(f"{len(windowed)} {bound} {window:,} tokens"
                                     if bound and len({w for _, w in windowed}) == 1 else
                                     f"{len(windowed)} windowed layers attend to at most their window")
    if recurrent:
        attention_assumptions.append(f"{recurrent} linear-attention or state-space layers: a constant work per "
                                     "token, in the weights' count; no attention over the context")
    if any(MIXERS[m.kind].over_input for layer in arch.per_token_layers for m in layer.mixers):
        attention_assumptions.append("cross-attention over the encoder's output is not counted: its length is "
                                     "the input's")
    d, inter = c.hidden_size or 0, c.intermediate_size or 0
    closed_ratio = ctx / (2 * d + 1.5 * inter) if d and inter and per_token else None
    closed_formula = (f"t / (2D + 1.5I) = {ctx:,} / (2 × {d:,} + 1.5 × {inter:,})" if d and inter else
                      "unknown: the config gives no " + " and no ".join(
                          k for k, v in (("hidden_size", d), ("intermediate_size", inter)) if not v))
    per_input = _per_input_flops(arch, bool(per_token))
    return Flops(
        Figure("flops_per_token_weights", gemm if per_token else None, "FLOP", weights_formula, FLOPS_SOURCE,
               assumptions),
        Figure("flops_per_token_attention", attention if per_token else None, "FLOP", attention_formula,
               FLOPS_SOURCE, tuple(attention_assumptions)),
        Figure("flops_decode_step", gemm + attention if per_token else None, "FLOP",
               "weights + attention at context t", FLOPS_SOURCE),
        Figure("flops_prefill", gemm * ctx + prefill_attention if per_token else None, "FLOP",
               ("t × weights + attention summed over positions 1…t, a windowed layer's capped at its window"
                if windowed else "t × weights + attention summed over positions 1…t = 2N′t + a·t(t+1)/2"),
               FLOPS_SOURCE, ("causal attention: token i attends to i tokens"
                              + (f" (at most {window:,} in a windowed layer)" if windowed else ""),)),
        Figure("attention_to_gemm_ratio", attention / gemm if gemm else None, "",
               "attention FLOPs / weight FLOPs at context t", FLOPS_SOURCE),
        Figure("attention_to_gemm_ratio_closed_form", closed_ratio, "", closed_formula, FLOPS_SOURCE,
               ("4·L·D·t ÷ 2·L·(4D² + 3·D·I): dense models with full multi-head attention and a gated MLP, "
                "embeddings left out",)),
        per_input)


def _not_per_token(arch: Architecture) -> tuple[str, ...]:
    """What the per-token figures leave out: stacks that run once per input, or never."""
    out = []
    for s in arch.stacks:
        if s.runs == "per_input" and arch.decodes:
            out.append(f"the {s.kind} ({s.parameters:,} parameters) runs once per input, not per generated token")
        elif s.runs == "never":
            out.append(f"the {s.kind} layers ({s.parameters:,} parameters) do not run in plain decoding")
    return tuple(out)


# --- the model's limit ---------------------------------------------------------------------------


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
    if c.reading.source == "gguf":
        return "the GGUF's context_length"
    scaling = c.raw.get("rope_scaling")
    if isinstance(scaling, dict) and isinstance(scaling.get("original_max_position_embeddings"), int):
        return "config.json rope_scaling: factor × original_max_position_embeddings, or max_position_embeddings"
    return "config.json max_position_embeddings"
