"""Will it fit? Weights + KV cache + runtime overhead against a GPU budget: every fit of the package,
behind one entry, ``fit(report, estimate, budget, engine)``.

Pure arithmetic over an ``Estimate`` and the engine's strategy (``engines.ENGINES``): no I/O, no
printing.

* **weights**: the bytes the headers hold (every tensor, scales included), or with a what-if dtype
  the logical parameters at that width. Every expert of a mixture of experts is resident.
* **KV cache** at a context and batch: the estimate's exact per-layer rule (GQA, MLA, sliding
  windows, linear-attention layers), in the KV dtype.
* **overhead**, per device, stated and settable (``--overhead``): the engine's own terms
  (``engines/``: vLLM's activation peak, non-torch memory and rotary cache; llama.cpp's compute
  and output buffers), each with its formula and source. vLLM also takes only
  ``gpu_memory_utilization`` of the device: the fit is against that usable share.
* **tensor parallel over N devices** (as vLLM and TGI shard a model): linear weights, embeddings and
  the output layer are split N ways; norms, biases of replicated layers and the MoE router are
  replicated on every device and named; the KV cache is split by KV heads (a device holds at least
  one: with fewer KV heads than devices they are replicated), and an MLA latent cache, which has no
  heads to split, is replicated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from inspector.analysis.serving.budget import Budget
from inspector.analysis.serving.engines import ModelShape, Term
from inspector.analysis.structure.mixers import MIXERS
from inspector.errors import UsageError
from inspector.formats.dtypes import DTYPE_BITS
from inspector.model import Role

if TYPE_CHECKING:
    from inspector.analysis.facts.report import Report
    from inspector.analysis.serving.engines import Engine
    from inspector.analysis.serving.estimate import Estimate

GIB: Final = 1024**3
#: budgets the one-line summary of ``inspect MODEL`` tries, in GiB (common GPU memory sizes)
COMMON_BUDGETS_GIB: Final = (16, 24, 48, 80, 141)
SUMMARY_CONTEXT: Final = 8192

@dataclass(frozen=True, slots=True)
class FitWeights:
    """The weights a device holds: on the fullest device, in all, what every device replicates (by role), and how
    they were counted where not simply as the headers hold them."""

    per_device: int
    all: int  # every device's together (the stage's, in a pipeline)
    replicated_bytes: int  # of per_device: on every device
    replicated: tuple[str, ...] = ()  # what is replicated, by role
    note: str | None = None


@dataclass(frozen=True, slots=True)
class FitKv:
    """The KV cache on a device: a token's bytes, the cache at the fit's context and batch, how it is divided and how
    its figure is reached; the engine's pool where it keeps one; a recurrent state's bytes."""

    per_token: int
    bytes: int  # at context and batch
    share: str  # how the KV cache is divided
    #: how ``bytes`` is reached, in figures: the bytes a token costs × the cells the engine keeps, layers of one
    #: window together, × batch (÷ the devices that split it); "" when unknown
    formula: str = ""
    #: vLLM and SGLang: usable − weights − overhead per device, and the tokens it holds (whole pages); None when the
    #: engine sizes its cache by the context (llama.cpp) or the layout is not uniform
    pool_bytes: int | None = None
    pool_tokens: int | None = None
    #: state-space and linear-attention layers: their fixed state at the batch, per device
    state_bytes: int = 0


@dataclass(frozen=True, slots=True)
class FitLimits:
    """How far the budget reaches: the largest context at the batch (0: not even one token), whether the model's own
    limit capped it, the largest batch at the context, and memory against context (the HTML report's curve)."""

    max_context: int | None
    max_batch: int | None
    model_limit: int | None = None
    capped: bool = False
    #: (context, total bytes per device) at the batch from 0 to the larger of the asked and the largest context
    curve: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class FitRuntime:
    """The engine at run time: its per-device terms beside weights and KV cache (each with formula and source), their
    sum and how it was given, and the share of a device it may take (vLLM: budget × gpu_memory_utilization)."""

    overhead_bytes: int
    formula: str
    terms: tuple[Term, ...] = ()
    usable_bytes: int = 0
    utilization: float | None = None  # the engine's fraction; None where it takes the whole device (llama.cpp)


@dataclass(frozen=True, slots=True)
class FitStages:
    """Pipeline stages (layers split between them; devices = tensor-parallel × stages): each stage's layers and
    weights per device, and the one a fit's figures are for (the tightest)."""

    count: int = 1
    described: tuple[str, ...] = ()
    tightest: str | None = None


@dataclass(frozen=True, slots=True)
class Fit:
    """Weights + KV cache + the engine's terms against a budget, per device: the answer, and its parts."""

    budget_bytes: int  # per device
    devices: int
    batch: int
    context: int
    total_bytes: int  # per device: weights + KV + overhead
    fits: bool | None  # None: unknown (``unknown`` says which figure is missing)
    weights: FitWeights
    kv: FitKv
    limits: FitLimits
    runtime: FitRuntime
    warnings: tuple[str, ...] = ()
    #: why there is no answer (a figure the fit needs is unknown); None when there is one
    unknown: str | None = None
    engine: str = "vllm"
    gpu: str | None = None
    stages: FitStages = FitStages()


#: segments of the memory-against-context curve (``Fit.curve``)
CURVE_POINTS: Final = 64

#: roles replicated on every device under tensor parallelism (everything else is split)
REPLICATED_ROLES: Final = ("norm", "moe.router", "buffer")


@dataclass(frozen=True, slots=True)
class Settings:
    """What the user set beside the budget: the weights' width (``--dtype``), an overhead replacing
    the engine's terms, vLLM's utilization, and weights loaded beside the model (a projector)."""

    weights_dtype: str | None = None
    overhead: int | None = None
    utilization: float | None = None
    extra_weights: int = 0
    #: a mixture of experts with vLLM's --enable-expert-parallel: whole experts split over the GPUs (as
    #: evenly as they divide) rather than every expert split by TP
    expert_parallel: bool = False
    #: points of the memory-against-context curve (``Fit.curve``, drawn by estimate's page); 0: none, as
    #: plan's thousands of layouts show none (64 points a layout were two thirds of plan's CPU)
    curve_points: int = CURVE_POINTS


@dataclass(frozen=True, slots=True)
class _Stage:
    """One pipeline stage: its index, the count, its weight bytes and its decoder layers."""

    index: int
    count: int
    bytes: int
    first: int
    layers: int


def fit(report: Report, est: Estimate, budget: Budget, engine: Engine | None = None, *,
        settings: Settings = Settings(), pipeline: int = 1) -> Fit:
    """Weights + KV cache at the estimate's context and batch + the engine's terms (``engines/``),
    per device, against ``budget``. ``engine``: the model's default (``estimate.default_engine``:
    llama.cpp for GGUF, vLLM otherwise) when None; ``pipeline``: stages the layers are split between
    (the budget's devices are tensor-parallel ways × stages); llama.cpp on several devices splits by
    layers (its default ``--split-mode layer``)."""
    # deferred: 28 ms at import (inspector.analysis.serving.estimate)
    from inspector.analysis.serving.estimate import default_engine

    eng = engine or default_engine(report)
    if est.kv is None:
        return _weights_only(report, est, budget, settings)
    if eng.layer_split and budget.devices > 1:
        pipeline = budget.devices
    shared = _shared(report, est)
    if pipeline > 1:
        return _staged(report, est, budget, eng, settings, pipeline, shared)
    return _group(report, est, budget, eng, settings, None, shared)


@dataclass(frozen=True, slots=True)
class _Shared:
    """What every device group of one fit reads alike, read once a fit (plan fits ~28,000 groups)."""

    layers: int  # the layers that run per generated token
    mla: bool  # an MLA latent cache: replicated on every device
    windowless: bool  # every caching layer keeps the whole context
    shape: ModelShape


def _shared(report: Report, est: Estimate) -> _Shared:
    layers = est.architecture.per_token_layers
    kv = est.kv
    return _Shared(len(layers), any(MIXERS[m.kind].latent for layer in layers for m in layer.mixers),
                   kv is not None and all(w is None for _, w in kv.layers), model_shape(report))


def model_shape(report: Report) -> ModelShape:
    """The figures the engines' terms read, from the config."""
    c = report.config
    moe = c.moe.num_experts and c.moe.experts_per_token
    inter = (c.moe.moe_intermediate_size or c.intermediate_size or 0) if moe else (c.intermediate_size or 0)
    rotary = c.mla.qk_rope_head_dim if c.mla.kv_lora_rank else c.head_dim
    factor = c.raw.get("partial_rotary_factor")
    if rotary and isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 < factor <= 1:
        rotary = int(rotary * factor)
    return ModelShape(hidden=c.hidden_size or 0, inter=inter, vocab=c.vocab_size,
                      dtype_bytes=DTYPE_BITS.get(c.storage.dtype or "", 16) / 8, max_position=c.max_position,
                      rotary_dim=rotary, experts_per_token=(c.moe.experts_per_token or 0) if moe else 0)


@dataclass(frozen=True, slots=True)
class _Weights:
    """A device group's weights: on its fullest device, in all, replicated on every device, and the share of the
    KV cache its layers hold (``rows``: those layers exactly, where every layer caches)."""

    per_device: int
    total: int
    replicated: dict[Role, int]
    note: str | None
    share: float
    rows: range | None


def _weights(report: Report, est: Estimate, budget: Budget, eng: Engine, settings: Settings, stage: _Stage | None,
             shared: _Shared) -> _Weights:
    # deferred: 18 ms at import (inspector.analysis.serving.quant)
    from inspector.analysis.serving.quant import weights_at

    kv = est.kv
    assert kv is not None
    s = report.summary
    weights_all = s.bytes
    scale = 1.0
    if settings.weights_dtype:
        weights_all = weights_at(report, est.quant, settings.weights_dtype.lower()).bytes
        scale = weights_all / s.bytes if s.bytes else 1.0
    weights_all += settings.extra_weights
    replicated: dict[Role, int] = {r.role: int(r.bytes * scale) for r in s.by_role if r.role in REPLICATED_ROLES}
    note = None
    if eng.host_input and stage is None:
        host = _host_input(report)
        if host:
            weights_all -= int(host * scale)
            note = (f"less the input embedding, {int(host * scale):,} B, which llama.cpp keeps in host memory "
                    "(llama-model.cpp: the input layer is always on the CPU)")
    decoder_layers = shared.layers or 1
    share, rows = 1.0, None
    if stage is not None:  # this stage's layers' share of the weights, the KV cache and what is replicated
        share = stage.layers / decoder_layers
        weights_all = int(stage.bytes * scale) + (settings.extra_weights if stage.index == 0 else 0)
        replicated = {role: int(b * share) for role, b in replicated.items()}
        if len(kv.layers) == decoder_layers:  # every layer caches: the stage's own layers, exactly
            rows, share = range(stage.first, stage.first + stage.layers), 1.0
    n = budget.devices
    rep = sum(replicated.values())
    weights = rep + math.ceil((weights_all - rep) / n)
    count = report.config.moe.num_experts or 0
    if settings.expert_parallel and n > 1 and count:  # the GPU with the most experts: ceil(E / n) of each layer's
        part = 1.0 if stage is None else stage.layers / decoder_layers
        experts = int(sum(r.bytes for r in s.by_role if r.role.startswith("moe.expert")) * scale * part)
        weights = rep + math.ceil((weights_all - rep - experts) / n) + math.ceil(experts * -(-count // n) / count)
    return _Weights(weights, weights_all, replicated, note, share, rows)


def _kv_split(n: int, mla: bool, kv_heads: int | None) -> tuple[str, int]:
    """How ``n`` devices hold the KV cache, in words, and what its bytes are divided by."""
    if n == 1 or mla:
        return ("whole on one device" if n == 1 else "MLA latent cache: replicated on every device"), 1
    if kv_heads and kv_heads < n:
        return f"{kv_heads} KV heads for {n} devices: one head per device, replicated", kv_heads
    return f"split by KV heads over {n} devices", n


def _group(report: Report, est: Estimate, budget: Budget, eng: Engine, settings: Settings,
           stage: _Stage | None, shared: _Shared) -> Fit:
    """One device group's fit: the whole model, or a pipeline stage's layers."""
    # deferred: 28 ms at import (inspector.analysis.serving.estimate)
    from inspector.analysis.serving.estimate import model_limit

    kv = est.kv
    assert kv is not None
    c = report.config
    w = _weights(report, est, budget, eng, settings, stage, shared)
    weights, weights_all, replicated, share, rows = w.per_device, w.total, w.replicated, w.share, w.rows
    decoder_layers = shared.layers or 1
    terms = eng.terms(shared.shape, gpu_bytes=budget.per_device, gpu_name=budget.gpu, devices=budget.devices,
                      samples=stage is None or stage.index == stage.count - 1,
                      pipeline=1 if stage is None else stage.count)
    if settings.overhead is not None:
        terms = (Term("overhead", settings.overhead, "given with --overhead", "--overhead"),)
        formula = "given with --overhead"
    else:
        formula = " + ".join(t.name for t in terms if t.bytes) + f" ({eng.name})"
    overhead = sum(t.bytes for t in terms)
    usable, util = eng.usable(budget.per_device, settings.utilization, devices=budget.devices,
                              pipeline=1 if stage is None else stage.count)
    n = budget.devices
    rep = sum(replicated.values())
    kv_share, divisor = _kv_split(n, shared.mla, c.num_kv_heads)
    limit = model_limit(c)
    state_figure = kv.state_per_sequence
    missing = None if kv.known else \
        f"the KV cache per token is unknown ({kv.per_token.formula.removeprefix('unknown: ')})"
    if missing is None and state_figure is not None and state_figure.value is None:
        missing = f"the recurrent state per sequence is unknown ({state_figure.formula.removeprefix('unknown: ')})"
    state = int(state_figure.value or 0) if state_figure is not None and missing is None else 0

    windows = kv.by_window(rows) if missing is None else ()  # summed once: the searches below ask ~50 contexts
    cells = eng.cells

    def kv_one(ctx: int) -> int:
        whole = sum(b * cells(ctx, w) for w, b in windows)
        return math.ceil(whole * share) if share != 1.0 else whole

    def total(ctx: int, b: int) -> int:
        return weights + math.ceil(kv_one(ctx) * b / divisor) + math.ceil(state * share * b / n) + overhead

    known = missing is None  # no answer from a guess: with a figure unknown, the fit is unknown and says why
    per_token = math.ceil(math.ceil((kv.per_token.value or 0) * share if rows is None else
                                    sum(b for b, _ in kv.layers[rows.start:rows.stop])) / divisor) if known else 0
    room = usable - weights - overhead
    per_sequence = math.ceil(kv_one(est.context) / divisor) + math.ceil(state * share / n)
    max_context, max_batch = _limits(total, usable, room, per_token, per_sequence, est, limit or 10 * 1024**2) \
        if known else (None, None)
    top = max(est.context, max_context or 0, 1)
    steps = settings.curve_points
    points = sorted({top * i // steps for i in range(steps + 1)} | {est.context, max_context or 0}) if steps else []
    pool = max(0, room) if eng.pool and known else None  # nothing left: an empty pool
    uniform = shared.windowless and state == 0 and len(kv.layers) == decoder_layers
    grand = total(est.context, est.batch)
    return Fit(
        budget_bytes=budget.per_device, devices=n, batch=est.batch, context=est.context, total_bytes=grand,
        fits=grand <= usable if known else None, unknown=missing, engine=eng.name, gpu=budget.gpu,
        weights=FitWeights(weights, weights_all, rep,
                           tuple(f"{role} {b:,} B" for role, b in sorted(replicated.items()) if b), w.note),
        kv=FitKv(per_token, math.ceil(kv_one(est.context) * est.batch / divisor), kv_share,
                 kv_formula(kv.layers if rows is None else kv.layers[rows.start:rows.stop], est.context, est.batch,
                            eng, share, divisor) if known else "",
                 pool, eng.pool_tokens(pool, per_token) if pool is not None and uniform else None,
                 math.ceil(state * share * est.batch / n)),
        limits=FitLimits(max_context, max_batch, limit, bool(limit) and max_context == limit,
                         tuple((x, total(x, est.batch)) for x in points) if known else ()),
        runtime=FitRuntime(overhead, formula, terms, usable, util))


def kv_formula(rows: tuple[tuple[int, int | None], ...], context: int, batch: int, eng: Engine, share: float,
               divisor: int) -> str:
    """The KV cache's figure as the sum it is (``cache_bytes``): per window, the bytes a token costs
    in those layers × the cells the engine keeps for them at ``context`` (llama.cpp pads them), then
    × batch, × a pipeline stage's share of the layers, ÷ the devices that split the heads."""
    by_window: dict[int | None, int] = {}
    for per_token, window in rows:
        by_window[window] = by_window.get(window, 0) + per_token
    parts = []
    for window, per_token in sorted(by_window.items(), key=lambda item: item[0] or 0):
        cells = eng.cells(context, window)
        if window is None:
            parts.append(f"{per_token:,} B/token × {cells:,} cells")
        else:
            rule = eng.window_rule(context, window)
            parts.append(f"{per_token:,} B/token × {cells:,} cells (window {window:,}{'; ' + rule if rule else ''})")
    text = " + ".join(parts) if len(parts) == 1 else "(" + " + ".join(parts) + ")"
    text += f" × batch {batch}"
    if share != 1.0:
        text += f" × {share:.4g} of the layers (rounded up)"
    return text + (f" ÷ {divisor} (rounded up)" if divisor > 1 else "")


def _limits(total: Callable[[int, int], int], usable: int, room: int, per_token: int, per_sequence: int,
            est: Estimate, cap: int) -> tuple[int, int]:
    """The largest context at the estimate's batch (at most ``cap``) and the largest batch at its context
    whose ``total`` fits in ``usable``. Each search starts where the bytes, linear in tokens and in
    sequences, put it (the ``room`` left over what a token or a sequence costs), then walks to it exactly
    (``largest``'s galloping): a few evaluations instead of ~20, for each of plan's thousands of layouts."""
    context = largest(lambda ctx: total(ctx, est.batch) <= usable, cap,
                      guess=room // (per_token * est.batch) if per_token else None)
    batch = largest(lambda b: total(est.context, b) <= usable, 1 << 20,
                    guess=room // per_sequence if per_sequence else None)
    return context, batch


def _weights_only(report: Report, est: Estimate, budget: Budget, settings: Settings) -> Fit:
    """A diffusion pipeline: every component with weights on the GPU together (diffusers'
    ``pipe.to("cuda")``); the weights are answered, the activations are not (they depend on the image
    size, the frame count and the batch), and the fit says so."""
    # deferred: 18 ms at import (inspector.analysis.serving.quant)
    from inspector.analysis.serving.quant import weights_at

    s = report.summary
    weights = s.bytes if not settings.weights_dtype else weights_at(report, est.quant,
                                                                    settings.weights_dtype.lower()).bytes
    per = -(-weights // budget.devices)  # components split over devices, as device_map="balanced" does
    parts = ", ".join(f"{r.name} {r.bytes:,} B" for r in report.components if r.tensors)
    note = (f"{parts}: all resident together, as pipe.to('cuda') places them" if parts else
            "the model's weights, resident as model.to('cuda') places them") + \
        (f"; spread over {budget.devices} devices" if budget.devices > 1 else "")
    over = per > budget.per_device  # known without the activations: the weights alone are too many
    return Fit(budget_bytes=budget.per_device, devices=budget.devices, batch=est.batch, context=0, total_bytes=per,
               fits=False if over else None, weights=FitWeights(per, weights, 0, (), note),
               kv=FitKv(0, 0, f"no KV cache: {est.no_tokens}"), limits=FitLimits(None, None),
               runtime=FitRuntime(0, "activations not counted", usable_bytes=budget.per_device),
               unknown=None if over else (
                   "activation memory of a diffusion model depends on the image size, frames and batch; "
                   f"the weights alone take {per / 2**30:.2f} GiB of {budget.per_device / 2**30:.2f} GiB per device"),
               engine="diffusers", gpu=budget.gpu)


def _staged(report: Report, est: Estimate, budget: Budget, eng: Engine, settings: Settings, stages: int,
            shared: _Shared) -> Fit:
    """A pipeline: the decoder's layers split between ``stages`` groups of devices (vLLM's split;
    llama.cpp's layer split evenly), each stage fitted on its own; the answer is the tightest
    stage's, with the layout's figures (all devices, every stage's weights) set on it once."""
    layers = shared.layers
    if budget.devices % stages or not 1 < stages <= max(layers, 1):
        raise UsageError(f"⟨pipeline⟩ {stages} does not divide {budget.devices} devices into stages of a model "
                         f"of {layers} layers", hint="for example ⟨gpu=H100x4⟩ ⟨pipeline=2⟩ (TP 2 × PP 2)")
    tp = budget.devices // stages
    per_stage = eng.stage_layers(layers, stages)
    stage_bytes = _stage_bytes(report, est, per_stage, host_input=eng.host_input)
    group = Budget(budget.per_device, tp, budget.gpu)
    fits = []
    first = 0
    # stages alike (the same bytes and layers, neither the first nor the last, the same caches) fit alike: each
    # kind fitted once (plan fits ~2,800 layouts of up to 64 stages)
    kv = est.kv
    assert kv is not None
    per_layer = len(kv.layers) == shared.layers
    alike: dict[tuple[object, ...], Fit] = {}
    for index, count in enumerate(per_stage):
        key = (stage_bytes[index], count, index == 0, index == stages - 1,
               kv.layers[first:first + count] if per_layer else None)
        f = alike.get(key)
        if f is None:
            f = alike[key] = _group(report, est, group, eng, settings,
                                    _Stage(index, stages, stage_bytes[index], first, count), shared)
        fits.append((f, f"stage {index + 1} of {stages}: layers {first}-{first + count - 1}"))
        first += count
    described = tuple(f"{name}, weights {f.weights.per_device:,} B per device" for f, name in fits)
    tightest, name = min(fits, key=lambda pair: (pair[0].fits is not False, pair[0].limits.max_context or 0,
                                                 pair[0].limits.max_batch or 0,
                                                 pair[0].runtime.usable_bytes - pair[0].total_bytes))
    tokens = [f.kv.pool_tokens for f, _ in fits]
    known = [t for t in tokens if t is not None]
    return replace(tightest, devices=budget.devices, stages=FitStages(stages, described, name),
                   kv=replace(tightest.kv, pool_tokens=min(known) if known and len(known) == len(tokens) else None))


def _host_input(report: Report) -> int:
    """Bytes of the input embedding llama.cpp leaves in host memory: all of it when the model has its
    own output layer (a tied one is copied to the output device, so the device holds the same bytes)."""
    roles = {r.role: r.bytes for r in report.summary.by_role}
    return roles.get("embedding", 0) if "lm_head" in roles else 0


def _stage_bytes(report: Report, est: Estimate, per_stage: list[int], host_input: bool = False) -> list[int]:
    """Weight bytes each pipeline stage holds: its layers of the decoder; the embedding (and anything
    outside the decoder) on the first stage; the output layer and final norms on the last, with a tied
    embedding copied there (vLLM; llama.cpp's output device). ``host_input``: llama.cpp keeps the
    input embedding in host memory. From the architecture's byte accounts, in time linear in the layers."""
    arch = est.architecture
    decoders = [s for s in arch.stacks if s.kind == "decoder"]
    main = max(decoders, key=lambda s: len(s.layers)) if decoders else None
    layers = [arch.layer_bytes.get((main.name, layer.index), 0) for layer in main.layers] if main else []
    out, first = [], 0
    for count in per_stage:
        out.append(sum(layers[first:first + count]))
        first += count
    out[0] += arch.total_bytes - sum(layers) - arch.tail_bytes - (arch.embedding_bytes if host_input else 0)
    out[-1] += arch.tail_bytes + (arch.embedding_bytes if arch.tied else 0)
    return out


@dataclass(frozen=True, slots=True)
class CommonFit:
    """The one-line answer of ``inspect MODEL``: the smallest common budget the model fits at
    ``context`` tokens (``devices`` × ``gib``), or None for both when 8 of the largest are too few."""

    context: int
    devices: int | None
    gib: int | None


def common_fit(report: Report, est: Estimate) -> CommonFit | None:
    """The smallest of ``COMMON_BUDGETS_GIB`` on 1, 2, 4 or 8 devices the model fits at 8k context
    (its own limit when shorter); None when there is no answer (an encoder, an unknown KV cache)."""
    # deferred: 28 ms at import (inspector.analysis.serving.estimate)
    from inspector.analysis.serving.estimate import estimate, model_limit

    if est.kv is None or est.kv.none is not None or not est.kv.known:
        return None
    limit = model_limit(report.config)
    ctx = min(SUMMARY_CONTEXT, limit) if limit else SUMMARY_CONTEXT
    at = estimate(report, context=ctx, what_if=(), arch=est.architecture)
    for devices in (1, 2, 4, 8):
        for gib in COMMON_BUDGETS_GIB:
            if fit(report, at, Budget(gib * GIB, devices)).fits:
                return CommonFit(ctx, devices, gib)
    return CommonFit(ctx, None, None)


def largest(ok: Callable[[int], bool], cap: int, guess: int | None = None) -> int:
    """The largest x in [1, cap] with ok(x), for ok monotone (true, then false); 0 if none. ``guess``:
    where to start, galloping from it (steps doubling) to a bracket, then halving: exact for any guess,
    a few calls of ``ok`` for a good one (bisection alone takes log2(cap), 20 to 24)."""
    if not ok(1):
        return 0
    lo, hi = 1, cap
    if guess is not None and guess > 1:
        guess, step = min(guess, cap), 1
        if ok(guess):  # the answer is at or above the guess: up until a step fails or passes the cap
            lo = guess
            while lo + step <= cap and ok(lo + step):
                lo, step = lo + step, step * 2
            hi = min(lo + step - 1, cap)
        else:  # below it: down until a step holds (ok(1) does)
            hi = guess - 1
            while hi - step >= 1 and not ok(hi - step + 1):
                hi, step = hi - step, step * 2
            lo = hi - step + 1 if hi - step >= 1 else 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


#: what ``--fail-if`` takes on ``estimate``, ``train`` and ``plan``: ``nofit`` trips where the answer is not
#: "fits" (does not fit, or a figure the fit needs is unknown: a gate fails closed)
FIT_GATES: Final[tuple[str, ...]] = ("nofit",)


def parse_fit_gates(text: str | None, *, budget: bool) -> tuple[str, ...]:
    """``--fail-if``'s comma-separated conditions for a fit-bearing command, each one of ``FIT_GATES``;
    ``budget``: whether the command has one to judge against (``plan`` always has its GPUs)."""
    gates = tuple(dict.fromkeys(g.strip() for g in (text or "").split(",") if g.strip()))
    unknown = [g for g in gates if g not in FIT_GATES]
    if unknown:
        raise UsageError(f"⟨fail_if⟩: unknown condition {unknown[0]!r}", hint="use " + ", ".join(FIT_GATES))
    if gates and not budget:
        raise UsageError("⟨fail_if⟩ nofit needs ⟨gpu⟩: the budget the fit is judged against",
                         hint="for example --gpu H100 --fail-if nofit")
    return gates
