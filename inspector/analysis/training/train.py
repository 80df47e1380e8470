"""The memory to fine-tune a model, per GPU: full, LoRA or QLoRA, from the headers and the architecture.

What is arithmetic is exact, tensor by tensor from the headers' shapes:

* **trainable parameters**: every parameter (full), or r × (in + out) per targeted linear layer and
  r × (vocabulary + hidden) per targeted embedding (LoRA, peft's ``LoraConfig``; ``all-linear`` is
  peft's rule: every linear layer but the output layer);
* **weights** in the training precision (QLoRA: bitsandbytes' NF4 with double quantisation for every
  linear layer but the output layer, 16-bit for the rest), **gradients**, the fp32 **master** copy of
  mixed precision, and the **optimizer states** as each optimizer's own code allocates them;
* sharded over data-parallel GPUs as the ZeRO paper (Rajbhandari et al. 2020, §5.1: 2Ψ + 2Ψ + KΨ) and
  FSDP's full shard do, what is offloaded said in CPU bytes.

What is not is a formula with its source and the band measured against published runs
(``TRAIN_RECEIPTS`` in fixtures/train, ``benchmarks/bench_train.py``):

* **activations**: the tensors autograd keeps for the backward pass, layer by layer from the
  architecture (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models", §4, written out for RMSNorm, gated MLPs, grouped-query attention and a flash/SDPA kernel that
  keeps no s² score matrix); with ``checkpointing``, each layer's input and one layer recomputed;
* **logits**: batch × sequence × vocabulary, as transformers' causal-LM loss holds them (the model's
  16-bit logits, their fp32 upcast and cross-entropy's fp32 log-probabilities);
* **overhead**: memory outside PyTorch's allocator (CUDA context, cuBLAS; NCCL buffers on several GPUs).

The peak: the weights, master copy and optimizer states live throughout; the gradients grow during the
backward pass while the activations are freed layer by layer, so the step peaks at the start of the
backward pass (the activations alive at the loss, the logits and the output layer's gradient), in the top layer's
backward (with checkpointing: the layers' inputs and the one recomputed) or at its end (every gradient beside the
first layer's saved activations, the last the backward frees; with the optimizer in the backward, the largest
gradient), whichever is largest (``Train.peak_rule``; held to torch's MemTracker on CPU, tests/test_peak.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from inspector.analysis.facts.report import Report
from inspector.analysis.facts.stats import Tensor
from inspector.analysis.serving.engines import VLLM_NON_TORCH, VLLM_NON_TORCH_SOURCE
from inspector.analysis.serving.fit import largest
from inspector.analysis.structure.architecture import Architecture, architecture
from inspector.analysis.training.activations import (
    Alive,
    activation_bytes,
    activations_term,
    adapter_activation_bytes,
    alive,
    head_bytes,
    logits_term,
    widths_of,
)
from inspector.analysis.training.experts import (
    LAYOUTS,
    PEFT_CONVERTS,
    VERSIONS,
    Wrapped,
    fused,
    moe_layers,
    separate,
)
from inspector.analysis.training.lora import NF4_SOURCE, Adapted, adapted_modules, frozen, in_memory_linears, nf4_bytes
from inspector.analysis.training.methods import METHODS
from inspector.analysis.training.optimizers import OPTIMIZERS
from inspector.analysis.training.options import OFFLOADS, TrainOptions
from inspector.analysis.training.precisions import PRECISIONS
from inspector.analysis.training.stages import assumptions as stage_assumptions
from inspector.analysis.training.stages import (
    check_batch,
    check_stage,
    has_reference,
    reference_words,
    rows,
    sp_refusal,
    sp_tokens,
)
from inspector.errors import UsageError

#: where a step peaks (``Train.peak_rule``, before any sharding's words)
PEAK_RULE: Final = ("weights + master + optimizer states + overhead + the largest of: the activations alive at the "
                    "loss + logits + the output layer's gradient (the backward's start); the activations + that "
                    "gradient (the top layer's backward, recomputed with checkpointing); the gradients + the first "
                    "layer's saved activations (the backward's end)")
#: one tensor the optimizer updates: its shape, elements and role
Trained = tuple[tuple[int, ...], int, str]
GIB: Final = 1024**3


def state_bytes(optimizer: str, shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
    """Bytes one optimizer keeps for one trainable tensor (``optimizers.Optimizer.state_bytes``)."""
    return OPTIMIZERS[optimizer].state_bytes(shape, numel, param_bytes)


# --- the result ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Term:
    """One part of a GPU's memory: bytes per GPU, how they were reached, and whether exact."""

    name: str
    bytes: int | None  # None: unknown (``formula`` says what is missing)
    formula: str
    source: str
    exact: bool


@dataclass(frozen=True, slots=True)
class Thumb:
    """A figure other tools quote for the same question, labelled as theirs."""

    who: str
    bytes: int
    formula: str


@dataclass(frozen=True, slots=True)
class Peak:
    """The moment a step peaks and what it holds then, part by part (term names; they sum to the total)."""

    moment: str
    parts: tuple[tuple[str, int], ...]

    @property
    def total(self) -> int:
        return sum(b for _, b in self.parts)


def _peak(always: tuple[tuple[str, int], ...], a: Alive, head: int, out_grad: int, grads: int) -> Peak:
    """The largest of the three moments ``PEAK_RULE`` names (the first of equals); ``always``: what the step holds
    throughout."""
    moments = (
        Peak("the loss", (*always, ("activations", a.at_loss), ("logits", head), ("output_gradient", out_grad))),
        Peak("the top layer's backward", (*always, ("activations", a.in_layer), ("output_gradient", out_grad))),
        Peak("the backward's end", (*always, ("activations", a.at_end), ("gradients", grads))),
    )
    return max(moments, key=lambda p: p.total)


def _total(p: Peak | None) -> int:
    return 0 if p is None else p.total


@dataclass(frozen=True, slots=True)
class TrainMemory:
    """A step's memory per GPU, term by term (each with its formula and source), and what the CPU holds."""

    weights: Term
    reference: Term  # DPO's and GRPO's frozen reference model
    gradients: Term
    optimizer_states: Term
    master_weights: Term
    activations: Term
    logits: Term
    overhead: Term
    cpu_bytes: int  # offloaded to the CPU, per GPU's share


@dataclass(frozen=True, slots=True)
class Train:
    options: TrainOptions
    devices: int
    trainable: int
    frozen: int
    by_role: tuple[tuple[str, int], ...]  # trainable parameters by role
    adapted: int  # modules LoRA adapts (0 for full)
    memory: TrainMemory
    total: int | None  # per GPU, at the peak; None when a term is unknown
    peak_rule: str
    peak: Peak | None  # the moment the step peaks and its parts; None when a term is unknown
    fits: bool | None
    largest_batch: int | None  # at ``seq``
    largest_seq: int | None  # at ``batch``
    bits_per_weight: float | None  # QLoRA's frozen linear weights
    thumbs: tuple[Thumb, ...]
    assumptions: tuple[str, ...]

    @property
    def terms(self) -> tuple[Term, ...]:
        """The memory's parts, in the table's order (the reference model's only where the stage has one)."""
        m = self.memory
        reference = (m.reference,) if self.options.stage.preference else ()
        return (m.weights, *reference, m.gradients, m.optimizer_states, m.master_weights, m.activations, m.logits,
                m.overhead)


# --- the arithmetic --------------------------------------------------------------------------------


def check_adapter_options(method: str, given: Sequence[str]) -> None:
    """``given``: the adapter's options the user set (``⟨rank⟩`` …); refused for a method that trains no
    adapter, where they would be accepted and mean nothing."""
    if given and method in METHODS and not METHODS[method].adapter:
        raise UsageError(f"{', '.join(given)}: options of a LoRA adapter; ⟨method={method}⟩ trains every weight and "
                         "has none", hint="drop them, or use ⟨method=lora⟩")


def check_options(options: TrainOptions) -> None:
    """Every option in its range, and the combinations that mean something; a usage error otherwise."""
    o = options
    if o.method not in METHODS:
        raise UsageError(f"⟨method⟩: unknown {o.method!r}", hint="use " + ", ".join(METHODS))
    if o.optimizer not in OPTIMIZERS:
        raise UsageError(f"⟨optimizer⟩: unknown {o.optimizer!r}", hint="use " + ", ".join(OPTIMIZERS))
    if o.precision not in PRECISIONS:
        raise UsageError(f"⟨precision⟩: unknown {o.precision!r}", hint="use " + ", ".join(PRECISIONS))
    if o.shard.offload not in OFFLOADS:  # a record made by a library user, not read by offload_of
        raise UsageError(f"⟨offload⟩: unknown {o.shard.offload!r}", hint="use " + ", ".join(OFFLOADS))
    if o.experts not in LAYOUTS:
        raise UsageError(f"⟨experts⟩: unknown {o.experts!r}", hint="use " + ", ".join(LAYOUTS))
    if not 1 <= o.rank <= 65536:
        raise UsageError(f"⟨rank⟩ {o.rank} is not 1 to 65,536")
    if not 1 <= o.batch <= 1 << 20 or not 1 <= o.seq <= 1 << 24:
        raise UsageError("⟨batch⟩ and ⟨seq⟩ are positive (at most 1,048,576 and 16,777,216)")
    if o.shard.zero not in (0, 1, 2, 3):
        raise UsageError(f"⟨zero⟩ {o.shard.zero}: DeepSpeed's stages are 0, 1, 2 and 3")
    devices = o.budget.devices if o.budget else 1
    if (o.shard.zero or o.shard.fsdp) and devices < 2:
        raise UsageError(f"{'⟨fsdp⟩' if o.shard.fsdp else f'⟨zero={o.shard.zero}⟩'} shards the training state over "
                         "several GPUs; with one GPU it shards nothing", hint="give the GPUs: ⟨gpu=H100x8⟩")
    if o.shard.fsdp and o.shard.zero:
        raise UsageError("⟨fsdp⟩ and ⟨zero⟩ are two ways to shard: give one", hint="⟨fsdp⟩ is ZeRO stage 3's layout")
    if o.shard.offloading.optimizer and not (o.shard.zero or o.shard.fsdp):
        raise UsageError("⟨offload⟩ moves sharded state to the CPU: it goes with ⟨zero⟩ or ⟨fsdp⟩",
                         hint="⟨gpu=RTX4090x2⟩ ⟨zero=2⟩ ⟨offload=optimizer⟩")
    check_stage(o.stage)
    check_batch(o.stage, o.batch, devices)
    if not 1 <= o.shard.sp <= 1024:
        raise UsageError(f"⟨sp⟩ {o.shard.sp} is not 1 to 1,024")
    if o.step.compile and (o.method_kind.adapter or o.autocast):
        raise UsageError("⟨compile⟩ is modelled for full fine-tuning without autocast (what inductor's partitioner "
                         "keeps was measured there)",
                         hint="drop ⟨compile⟩ to see the eager figures")
    if o.method_kind.nf4 and o.precision_kind.weight_bytes == 4:
        raise UsageError("⟨method=qlora⟩ computes in 16-bit: ⟨precision=fp32⟩ does not apply",
                         hint="⟨precision=bf16-mixed⟩")


def train(report: Report, options: TrainOptions, arch: Architecture | None = None) -> Train:
    """The memory to fine-tune ``report``'s model as ``options`` say, per GPU."""
    check_options(options)
    o = options
    arch = arch or architecture(report.tensors, report.config)
    params = [t for t in report.tensors if t.place.kind == "parameter"]
    total_params = sum(t.info.numel for t in params)
    devices = o.budget.devices if o.budget else 1
    precision = o.precision_kind
    mixed = precision.master
    amp = precision.autocast  # torch autocast over float32 weights
    half = precision.activation_bytes  # bytes of an activation element (16-bit, or fp32)
    wbytes = precision.weight_bytes  # bytes of a weight as held
    held = _held(report, o, params, wbytes, mixed)
    widths, _ = widths_of(arch, report)
    adapters = (adapter_activation_bytes(held.adapted, o.rank, len(widths), 2 if amp else 4)
                if o.method_kind.adapter and half == 2 and widths else -1)  # peft's adapters on a frozen base
    st = _states(o, held, params, devices, wbytes, mixed)
    cpu = st.cpu
    act, act_formula, act_unknown = activations_term(arch, report, o, half, adapters)
    if o.step.offload_activations and not act_unknown:  # the CPU holds the activations as they would be on the GPU
        n0, l0 = rows(o.stage, o.batch, o.seq)
        cpu += activation_bytes(arch, report, replace(o, step=replace(o.step, offload_activations=False)), half, n0,
                                 sp_tokens(l0, o.shard.sp), adapters) or 0
        act_formula = "one layer's (the rest on the CPU, brought back in the backward); " + act_formula
    logits_bytes, logits_formula = logits_term(report, o)
    overhead = Term("overhead", VLLM_NON_TORCH[devices > 1], "memory outside PyTorch's allocator, constant per GPU",
                    VLLM_NON_TORCH_SOURCE, False)
    always = tuple((t.name, b) for t in (st.weights, st.reference, st.optimizer_states, st.master_weights, overhead)
                   if (b := t.bytes))
    grads = st.gradients.bytes or 0
    refused = sp_refusal(o.shard.sp, report.config.num_heads, report.config.num_kv_heads, devices)
    if refused is not None:
        raise UsageError(f"⟨sp={o.shard.sp}⟩: {refused}", hint="a size that divides the heads and the GPUs")

    def peak(batch: int, seq: int) -> Peak | None:
        n, length = rows(o.stage, batch, seq)
        length = sp_tokens(length, o.shard.sp)
        a = alive(arch, report, o, half, n, length, adapters)
        return None if a is None else _peak(always, a, head_bytes(report, o, n, length, half), st.output_gradient,
                                            grads)

    at_peak = peak(o.batch, o.seq)
    total = None if at_peak is None else at_peak.total
    usable = None if o.budget is None else int(o.budget.per_device * (1 - o.stage.rollout_memory))
    fits = None if total is None or usable is None else total <= usable
    largest_batch = largest_seq = None
    if usable is not None and total is not None:
        budget = usable
        largest_batch = largest(lambda b: _total(peak(b, o.seq)) <= budget, 1 << 20)
        largest_seq = largest(lambda s: _total(peak(o.batch, s)) <= budget, 1 << 24)
    n_trainable = held.trainable_count
    return Train(
        options=o, devices=devices, trainable=n_trainable,
        frozen=total_params - (0 if o.method_kind.adapter else n_trainable),
        by_role=tuple(sorted(_by_role(held.trainable).items())), adapted=len(held.adapted),
        memory=TrainMemory(
            weights=st.weights, gradients=st.gradients, optimizer_states=st.optimizer_states,
            master_weights=st.master_weights, reference=st.reference,
            activations=Term("activations", None if act_unknown else act, act_formula if not act_unknown else
                             f"unknown: {act_unknown}", "Korthikanti et al. 2022 §4, per layer (see below)", False),
            logits=Term("logits", logits_bytes, logits_formula, "transformers ForCausalLMLoss (logits.float(), "
                        "cross_entropy's log_softmax)", False),
            overhead=overhead, cpu_bytes=cpu),
        total=total, peak_rule=PEAK_RULE + st.sharding, peak=at_peak, fits=fits,
        largest_batch=largest_batch, largest_seq=largest_seq, bits_per_weight=held.bits,
        thumbs=_thumbs(total_params, o), assumptions=(*held.assumptions, *st.assumptions, *_assumptions(o, arch)))


@dataclass(frozen=True, slots=True)
class _States:
    """The model's states per GPU as ZeRO, FSDP and offloading place them, each a term; what the CPU holds of them;
    the output layer's gradient at the backward's start; the sharding in words, and what it assumes."""

    weights: Term
    reference: Term
    gradients: Term
    optimizer_states: Term
    master_weights: Term
    output_gradient: int
    cpu: int
    sharding: str
    assumptions: tuple[str, ...]


def _states(o: TrainOptions, held: _Held, params: list[Tensor], devices: int, wbytes: int, mixed: bool) -> _States:
    stage = 3 if o.shard.fsdp else o.shard.zero
    trainable, n_trainable, grad_bytes, weights = held.trainable, held.trainable_count, held.grad_bytes, held.weights
    opt = OPTIMIZERS[o.optimizer]
    states = sum(state_bytes(o.optimizer, shape, n, held.param_bytes)
                 for shape, n, _ in trainable)  # the parameters (full), or each adapter's two factors
    master = n_trainable * 4 if (mixed and not o.method_kind.adapter) else 0
    gradients = n_trainable * grad_bytes
    largest_grad = max((n for _, n, _ in trainable), default=0) * grad_bytes
    if o.step.optimizer_in_backward:  # each gradient applied and freed as it is accumulated: the largest alive at once
        gradients = largest_grad

    # ZeRO stages shard (1) optimizer states and master, (2) gradients, (3) weights over the GPUs
    def shard(value: int, from_stage: int) -> int:
        return -(-value // devices) if stage >= from_stage and devices > 1 else value

    g_weights, g_grads = shard(weights, 3), shard(gradients, 2)
    g_states, g_master = shard(states, 1), shard(master, 1)
    cpu = 0
    assumptions = []
    if o.shard.offloading.optimizer:
        cpu += g_states + g_master
        g_states = g_master = 0
    if o.shard.offloading.weights:
        layer = max((sum(t.info.numel for t in members) for members in _layers(params)), default=0)
        cpu += g_weights
        g_weights = min(g_weights, layer * wbytes)
        assumptions.append("offload all: the weights live on the CPU; the GPU holds the layer being computed (the "
                           "largest layer's weights counted)")
    sharding = ("" if stage == 0 or devices == 1 else
                f"; ZeRO stage {stage} over {devices} GPUs" if not o.shard.fsdp else
                f"; FSDP full shard over {devices} GPUs")
    total_params = sum(t.info.numel for t in params)
    reference = total_params * wbytes if has_reference(o.stage, o.method_kind.adapter) else 0
    none_why, reference_source = reference_words(o.stage, o.method_kind.adapter, reference)
    g_reference = shard(reference, 3)
    out_grad = shard(sum(n for _, n, role in trainable if role in ("lm_head", "embedding")) * grad_bytes, 2)
    if o.step.optimizer_in_backward:
        out_grad = g_grads  # the one gradient alive, whichever it is
    return _States(
        weights=Term("weights", g_weights, held.formula + (" ÷ GPUs" if g_weights != weights else ""),
                     "the headers' shapes" + (f"; {NF4_SOURCE}" if o.method_kind.nf4 else ""), True),
        reference=Term("reference", g_reference,
                       (f"{total_params:,} parameters × {wbytes} B, frozen" + (" ÷ GPUs" if g_reference != reference
                                                                             else "")) if reference else none_why,
                       reference_source, True),
        gradients=Term("gradients", g_grads, (f"{n_trainable:,} trainable × {grad_bytes} B" if not
                                              o.step.optimizer_in_backward else
                                              f"the largest trainable tensor's {largest_grad // grad_bytes:,} × "
                                              f"{grad_bytes} B (the optimizer steps in the backward)") +
                       (" ÷ GPUs" if g_grads != gradients else ""),
                       "one gradient per trainable parameter" if not o.step.optimizer_in_backward else
                       "torch's register_post_accumulate_grad_hook, as torchtune's optimizer_in_bwd uses it: each "
                       "parameter stepped and its gradient freed once accumulated", True),
        optimizer_states=Term("optimizer_states", g_states, f"{opt.states}: {states:,} B" +
                              (" ÷ GPUs" if g_states != states and g_states else "") +
                              (" (on the CPU)" if o.shard.offloading.optimizer else ""), opt.source, True),
        master_weights=Term("master_weights", g_master,
                            (f"{n_trainable:,} × 4 B (fp32 copy the optimizer updates)" if master else
                             "none: " + ("the adapters are float32 already" if o.method_kind.adapter else
                                         f"{o.precision} keeps no separate copy")),
                            "mixed-precision training (Micikevicius et al. 2018; ZeRO §3's 2Ψ + 2Ψ + KΨ)", True),
        output_gradient=out_grad, cpu=cpu, sharding=sharding, assumptions=tuple(assumptions))


@dataclass(frozen=True, slots=True)
class _Held:
    """What the step holds of the model: the trainable tensors (the parameters, or each adapter's two factors),
    the weights in memory and how, the bytes the optimizer updates and the gradients take, what that assumes."""

    adapted: list[Adapted | Wrapped]
    trainable: list[Trained]
    trainable_count: int
    weights: int
    formula: str
    bits: float | None
    param_bytes: int
    grad_bytes: int
    assumptions: tuple[str, ...]


def _held(report: Report, o: TrainOptions, params: list[Tensor], wbytes: int, mixed: bool) -> _Held:
    """Full fine-tuning, LoRA or QLoRA over the model as loaded (``lora``), and autocast's weight copies."""
    total_params = sum(t.info.numel for t in params)
    assumptions: list[str] = []

    frozen_names = frozen(report.tensors, o.freeze)
    if not o.method_kind.adapter:
        adapted: list[Adapted | Wrapped] = []
        trainable: list[Trained] = [(t.info.shape, t.info.numel, str(t.place.role)) for t in params
                                    if t.info.name not in frozen_names]
        n_trainable = sum(n for _, n, _ in trainable)
        weights = total_params * wbytes
        weights_formula = f"{total_params:,} parameters × {wbytes} B ({o.precision})"
        param_bytes = 4 if mixed or wbytes == 4 else 2  # what the optimizer updates
        grad_bytes = wbytes
        bits = None
    else:
        model_type = report.config.model_type
        adapted = [a for a in adapted_modules(report.tensors, o.targets, model_type, o.experts)
                   if f"{a.module}.weight" not in frozen_names]
        n_trainable = sum(a.parameters(o.rank) for a in adapted)
        trainable = [(f, math.prod(f), a.role) for a in adapted for f in a.factors(o.rank)]
        adapter = n_trainable * 4  # peft's autocast_adapter_dtype: adapters in float32 on a 16-bit base
        if o.method_kind.nf4:
            quantised = [t for _, t in in_memory_linears(report.tensors, model_type, o.experts)
                         if t.place.role != "lm_head"]
            nf4 = sum(nf4_bytes(t.info.numel) for t in quantised)
            q_params = sum(t.info.numel for t in quantised)
            rest = total_params - q_params
            weights = nf4 + rest * 2 + adapter
            bits = nf4 * 8 / q_params if q_params else None
            weights_formula = (f"{q_params:,} linear weights in NF4 ({nf4:,} B, {bits or 0:.3f} bits a weight) + "
                               f"{rest:,} others × 2 B + adapters {n_trainable:,} × 4 B")
        else:
            weights = total_params * wbytes + adapter
            bits = None
            weights_formula = f"{total_params:,} frozen × {wbytes} B + adapters {n_trainable:,} × 4 B"
        assumptions.append("peft's LoRA layers in float32 on a 16-bit base (LoraConfig autocast_adapter_dtype, its "
                           "default); the frozen base keeps no gradient or optimizer state")
        if fused(model_type, o.experts) and moe_layers(report.tensors):
            reach = ("peft adapts them through its parameter wrapper (gate_up_proj at rank 2r), and a dense layer's "
                     "or shared expert's linear of a converted name not at all" if model_type in PEFT_CONVERTS else
                     "peft adapts neither")
            assumptions.append(f"experts as {VERSIONS} hold them: fused gate_up_proj and down_proj, the router a "
                               f"module of its own, none an nn.Linear: {reach}"
                               + ("; bitsandbytes keeps them in 16-bit" if o.method_kind.nf4 else "")
                               + " (--experts separate: transformers 4.x, one nn.Linear an expert)")
        param_bytes = 4
        grad_bytes = 4
    if o.autocast:  # autocast's cache: one 16-bit copy of each linear weight per forward, saved for the backward
        linears = sum(t.info.numel for _, t in in_memory_linears(report.tensors, report.config.model_type, o.experts))
        weights += (linears + (n_trainable if o.method_kind.adapter else 0)) * 2
        weights_formula += f" + autocast's 16-bit copies of the linear weights ({linears:,} × 2 B)"
    return _Held(adapted, trainable, n_trainable, weights, weights_formula, bits, param_bytes, grad_bytes,
                 tuple(assumptions))


def _by_role(trainable: list[Trained]) -> dict[str, int]:
    roles: dict[str, int] = defaultdict(int)
    for _, n, role in trainable:
        roles[role] += n
    return roles


def _layers(params: list[Tensor]) -> list[list[Tensor]]:
    groups: dict[tuple[str | None, int | None], list[Tensor]] = defaultdict(list)
    for t in params:
        if t.place.layer is not None:
            groups[(t.place.stack, t.place.layer)].append(t)
    return list(groups.values())


# --- what the answer assumes, and what others would say ------------------------------------------------


def _assumptions(o: TrainOptions, arch: Architecture) -> list[str]:
    out = [
        f"activations of {o.precision}: a flash/SDPA attention kernel (no s × s score matrix kept); no dropout; "
        + ("the decoder layers compiled" if o.step.compile else "eager PyTorch (torch.compile (--compile) and fused "
                                                            "kernels keep less)"),
        *stage_assumptions(o.stage),
        "allocator fragmentation (reserved − allocated) is not counted; neither are the optimizer step's temporaries",
    ]
    if o.step.checkpointing:
        out.append("activation checkpointing per decoder layer (transformers' gradient_checkpointing_enable)")
    if separate(o.experts) and o.method_kind.adapter and any(
            layer.mlp.kind == "moe" for s in arch.stacks for layer in s.layers):
        out.append("experts as transformers 4.x held them: one nn.Linear an expert, each adapted (and quantised) "
                   "on its own")
    if o.shard.sp > 1:
        out.append(f"sequence parallel {o.shard.sp} (DeepSpeed Ulysses): each GPU holds 1/{o.shard.sp} of every "
                   "sequence's activations and logits; attention's all-to-all buffers and KV heads replicated where "
                   "the SP size exceeds them are not counted")
    if o.freeze:
        out.append(f"frozen ({', '.join(o.freeze)}): no gradient, optimizer state or master copy; its weights "
                   "stay in memory")
    if o.step.compile:
        out.append("each decoder layer compiled (torch.compile): the backward keeps what AOTAutograd's min-cut "
                   "partitioner (inductor's) saves, the rest recomputed; the embedding, final norm, head and loss "
                   "run eagerly" + ("; with checkpointing, each layer's input and one compiled layer recomputed at a "
                                    "time (the eager rule's structure over the compiled layer's set)"
                                    if o.step.checkpointing else "")
                   + ("; offloaded, one compiled layer's set back at a time" if o.step.offload_activations else ""))
    if o.step.offload_activations:
        out.append("activations offloaded as torchtune's OffloadActivations does: every saved tensor of 1 KiB or more "
                   "to (pinned) CPU memory in the forward, back one layer at a time in the backward; its stash of "
                   "up to 5 tensors in flight is not counted")
    if o.autocast:
        out.append("torch autocast over float32 weights: float32 weights and gradients, no separate master copy; "
                   "autocast's cache holds a 16-bit copy of every linear weight until the forward ends (with "
                   "checkpointing too); the residual stream and norms in float32")
    towers = [s.kind for s in arch.stacks if s.kind in ("vision", "audio")]
    frozen_towers = [k for k in towers if k in o.freeze]
    if frozen_towers:
        out.append(f"the frozen {', '.join(frozen_towers)} tower keeps nothing for the backward (no parameter of it "
                   "needs a gradient and its inputs need none): its image or audio tokens count in the sequence "
                   "length" + ("" if "projector" in o.freeze else "; the trained projector's activations over them "
                               "are not counted"))
    if rest := [k for k in towers if k not in o.freeze]:
        out.append(f"text-only batches: the {', '.join(rest)} tower does not run (its activations depend on the "
                   "inputs' sizes)")
    if o.method_kind.nf4:
        out.append("peft's prepare_model_for_kbit_training upcasts the unquantised weights (embeddings, norms, "
                   "head) to float32: twice their bytes here when called")
    return out


def _thumbs(parameters: int, o: TrainOptions) -> tuple[Thumb, ...]:
    """The rules of thumb users quote, as their authors state them (GB = 10⁹ B)."""
    x = parameters / 1e9
    precision = o.precision_kind
    full = 18 if precision.master or precision.pure_fp32 else 8
    factory, label = o.method_kind.thumb or (
        full, "Full (bf16 or fp16): 18x GB" if full == 18 else "Full (pure_bf16): 8x GB")
    fp32 = parameters * 4
    accelerate = 4 * fp32 if precision.pure_fp32 else 2 * fp32
    return (Thumb("LLaMA-Factory README, Hardware Requirement (estimated)", int(factory * x * 1e9),
                  f"{label}, x = {x:.2f} billion parameters"),
            Thumb("accelerate estimate-memory, 'Training using Adam' (commands/estimate.py)", accelerate,
                  "the largest of its terms for full training at batch 1, no activations: " +
                  ("4 × the fp32 size" if precision.pure_fp32 else "2 × the fp32 size (Adam's two states)")))
