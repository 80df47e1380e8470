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
backward pass (activations, logits and the output layer's gradient) or at its end (every gradient),
whichever is larger (``Train.peak_rule``).
"""

from __future__ import annotations

import difflib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from inspector.analysis.architecture import CACHING, Architecture, architecture
from inspector.analysis.engines import VLLM_NON_TORCH, VLLM_NON_TORCH_SOURCE
from inspector.analysis.experts import (
    LAYOUTS,
    PATTERN,
    PEFT_CONVERTS,
    TARGETS,
    VERSIONS,
    Layout,
    Wrapped,
    fused,
    moe_layers,
    unpaired,
    wrapped,
)
from inspector.analysis.fit import Budget, largest
from inspector.analysis.report import Report
from inspector.analysis.stages import (
    TRL,
    StageOptions,
    check_batch,
    check_stage,
    fused_head_bytes,
    has_reference,
    rows,
    rows_words,
    sp_refusal,
    sp_tokens,
)
from inspector.analysis.stats import Tensor
from inspector.errors import UsageError

#: one tensor the optimizer updates: its shape, elements and role
Trained = tuple[tuple[int, ...], int, str]
METHODS: Final = ("full", "lora", "qlora")
#: the methods that train an adapter, the only ones its rank, alpha and target modules shape
ADAPTER_METHODS: Final = ("lora", "qlora")
PRECISIONS: Final = ("bf16-mixed", "fp16-mixed", "bf16", "fp32", "amp-bf16", "amp-fp16")
OFFLOADS: Final = ("none", "optimizer", "all")
GIB: Final = 1024**3


@dataclass(frozen=True, slots=True)
class Optimizer:
    """One optimizer's states, as its own code allocates them for a parameter."""

    name: str
    states: str  # what it keeps, in words
    source: str


#: THE optimizer table: what each keeps per trainable parameter (``state_bytes`` does the arithmetic)
OPTIMIZERS: Final[Mapping[str, Optimizer]] = {
    "adamw": Optimizer("adamw", "exp_avg and exp_avg_sq, each like the parameter it updates",
                       "torch.optim.AdamW (_init_group: torch.zeros_like(p) twice)"),
    "adamw-8bit": Optimizer("adamw-8bit", "state1 and state2 in uint8 with one float32 absmax per block of 256 "
                                          "each; tensors under 4,096 elements keep float32 states",
                            "bitsandbytes.optim.AdamW8bit (Optimizer8bit.init_state: blocksize 256, min_8bit_size "
                            "4096)"),
    "paged-adamw-8bit": Optimizer("paged-adamw-8bit", "as adamw-8bit, in paged memory (moved to the CPU under "
                                                      "pressure)", "bitsandbytes.optim.PagedAdamW8bit"),
    "adafactor": Optimizer("adafactor", "a factored second moment: float32 row and column means of a matrix, the "
                                        "whole of a vector; no first moment (beta1 None, its default)",
                           "transformers.optimization.Adafactor (_get_options, exp_avg_sq_row/_col)"),
    "sgd": Optimizer("sgd", "nothing", "torch.optim.SGD without momentum (no momentum_buffer)"),
    "sgd-momentum": Optimizer("sgd-momentum", "momentum_buffer, like the parameter", "torch.optim.SGD (momentum > 0)"),
}


def state_bytes(optimizer: str, shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
    """Bytes one optimizer keeps for one trainable tensor (``param_bytes``: the bytes of an element of
    the tensor it updates: 4 for an fp32 master copy, 2 for a pure bf16 parameter)."""
    if optimizer == "adamw":
        return 2 * numel * param_bytes
    if optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        if numel < 4096:
            return 2 * numel * 4
        blocks = -(-numel // 256)
        return 2 * (numel + 4 * blocks)
    if optimizer == "adafactor":
        if len(shape) >= 2:
            rows = math.prod(shape[:-1])
            cols = math.prod(shape[:-2]) * shape[-1]
            return 4 * (rows + cols)
        return 4 * numel
    if optimizer == "sgd-momentum":
        return numel * param_bytes
    return 0


# --- what LoRA adapts ------------------------------------------------------------------------------

#: roles whose 2-D weights are not nn.Linear (embeddings are nn.Embedding; convolutions are not 2-D)
_NOT_LINEAR: Final = frozenset({"embedding", "position_embedding", "token_type_embedding", "cls_token",
                                "patch_embedding", "conv_stem", "norm", "buffer"})
_EMBEDDINGS: Final = frozenset({"embedding", "position_embedding", "token_type_embedding"})
#: modules that are nn.Embedding though their role is another's (T5's relative position table, attention's)
_EMBEDDING_MODULES: Final = ("relative_attention_bias",)


@dataclass(frozen=True, slots=True)
class Adapted:
    """One module LoRA adapts: its name, role and shape (Linear [out, in]; Embedding [vocab, hidden])."""

    module: str
    role: str
    shape: tuple[int, int]
    embedding: bool

    def parameters(self, rank: int) -> int:
        """r × (in + out) for a linear layer (A [r, in], B [out, r]); r × (vocab + hidden) for an
        embedding (lora_embedding_A [r, vocab], _B [hidden, r]): the same sum of the two dimensions."""
        return rank * (self.shape[0] + self.shape[1])

    def factors(self, rank: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The two tensors the optimizer updates: lora_A [r, in], lora_B [out, r] of a linear layer [out, in];
        lora_embedding_A [r, vocabulary], _B [hidden, r] of an embedding."""
        if self.embedding:
            return (rank, self.shape[0]), (self.shape[1], rank)
        return (rank, self.shape[1]), (self.shape[0], rank)


def linear_modules(tensors: Iterable[Tensor]) -> list[tuple[str, Tensor]]:
    """The linear layers of a checkpoint: 2-D ``.weight`` parameters of a role that is no embedding,
    norm or convolution (fused 3-D experts are parameters, not linear layers: peft cannot target them), and
    no embedding inside a tower either (a vision tower's ``position_embedding`` is an ``nn.Embedding``)."""
    return [(t.info.name[: -len(".weight")], t) for t in tensors
            if t.place.kind == "parameter" and t.info.name.endswith(".weight") and len(t.info.shape) == 2
            and t.place.role not in _NOT_LINEAR and not t.info.name[: -len(".weight")].endswith(_EMBEDDING_MODULES)
            and "embed" not in t.info.name[: -len(".weight")].rsplit(".", 1)[-1]]


def in_memory_linears(tensors: list[Tensor], model_type: str | None, layout: Layout) -> list[tuple[str, Tensor]]:
    """The ``nn.Linear`` layers once transformers has loaded the model: the files' linear layers, less the experts
    and routers transformers 5 fuses (``experts.fused``): what bitsandbytes quantises and peft's modules reach."""
    if not fused(model_type, layout):
        return linear_modules(tensors)
    hidden = {name for m in moe_layers(tensors) for name in m.names}
    return [(m, t) for m, t in linear_modules(tensors) if t.info.name not in hidden]


def adapted_modules(tensors: list[Tensor], targets: tuple[str, ...], model_type: str | None = None,
                    layout: Layout = "fused") -> list[Adapted | Wrapped]:
    """The modules peft's ``target_modules`` selects: ``all-linear`` (every linear layer but the output
    layer, peft's ``_maybe_include_all_linear_layers``), or names matched as peft matches them (the
    module's name equals the key or ends with ``.`` + key), over the model as transformers loads it: a fused
    MoE's experts and router are no linear layers, and for the families peft converts its expert and router
    names become wrapped parameters (``experts.wrapped``). A target that matches nothing is a usage error
    naming the nearest module names."""
    linears = in_memory_linears(tensors, model_type, layout)
    if fused(model_type, layout) and model_type in PEFT_CONVERTS:
        assert model_type is not None
        return _converted(tensors, linears, targets, model_type)
    if targets == ("all-linear",):
        return [Adapted(m, t.place.role, _pair(t.info.shape), False) for m, t in linears if t.place.role != "lm_head"]
    embeddings = [(t.info.name[: -len(".weight")], t) for t in tensors if t.place.kind == "parameter"
                  and t.place.role in _EMBEDDINGS and t.info.name.endswith(".weight") and len(t.info.shape) == 2]
    out: list[Adapted] = []
    for key in targets:
        found = [Adapted(m, t.place.role, _pair(t.info.shape), False) for m, t in linears if _matches(m, key)]
        found += [Adapted(m, t.place.role, _pair(t.info.shape), True) for m, t in embeddings if _matches(m, key)]
        if not found:
            leaves = sorted({m.rsplit(".", 1)[-1] for m, _ in linears + embeddings})
            near = difflib.get_close_matches(key, leaves, n=5, cutoff=0.4) or leaves[:8]
            raise UsageError(f"⟨targets⟩: {key!r} matches no linear layer or embedding of this model",
                             hint="its modules include " + ", ".join(near))
        out += found
    unique = {a.module: a for a in out}
    return list(unique.values())


#: the parts ``--freeze`` names by role: a VLM's towers and projector
FREEZABLE: Final = ("vision", "audio", "projector")


def frozen(tensors: Iterable[Tensor], names: Sequence[str]) -> frozenset[str]:
    """The parameters ``--freeze`` keeps from training: those of a role it names (``FREEZABLE``), or under a module
    it names (a name equal to the tensor's module path, or a prefix of it ending at a dot). A name that matches no
    parameter is a usage error naming the roles there are."""
    params = [t for t in tensors if t.place.kind == "parameter"]
    out: set[str] = set()
    for name in names:
        hit = {t.info.name for t in params if t.place.role == name or t.info.name.startswith(name + ".")}
        if not hit:
            roles = sorted({t.place.role for t in params if t.place.role in FREEZABLE})
            raise UsageError(f"⟨freeze⟩: {name!r} names no part of this model",
                             hint=("its towers: " + ", ".join(roles)) if roles else
                             "a module path, as the tensor names start (model.embed_tokens)")
        out |= hit
    return frozenset(out)


def _converted(tensors: list[Tensor], linears: list[tuple[str, Tensor]], targets: tuple[str, ...],
               model_type: str) -> list[Adapted | Wrapped]:
    """peft's conversion of the LoRA config for a fused MoE (``experts``): ``all-linear`` is every linear leaf
    name (the output layer's aside) and every name its mapping knows; a name the mapping knows targets the fused
    parameter and no module of that name; the others target modules as usual."""
    mapping = TARGETS[PATTERN[model_type]]
    if targets == ("all-linear",):
        leaves = {m.rsplit(".", 1)[-1] for m, t in linears if t.place.role != "lm_head"} | set(mapping)
    else:
        leaves = set(targets)
        refused = unpaired(model_type, leaves)
        if refused is not None:
            raise UsageError(f"⟨targets⟩: {refused}", hint="name both, or neither")
    modules = leaves - set(mapping)
    out: list[Adapted | Wrapped] = [Adapted(m, t.place.role, _pair(t.info.shape), False) for m, t in linears
                                    if any(_matches(m, key) for key in modules)]
    out += wrapped(model_type, moe_layers(tensors), leaves & set(mapping))
    if targets != ("all-linear",):
        for key in modules:
            if not any(_matches(m, key) for m, _ in linears):
                leaves_here = sorted({m.rsplit(".", 1)[-1] for m, _ in linears} | set(mapping))
                near = difflib.get_close_matches(key, leaves_here, n=5, cutoff=0.4) or leaves_here[:8]
                raise UsageError(f"⟨targets⟩: {key!r} matches no linear layer of this model as transformers loads "
                                 "it", hint="its modules include " + ", ".join(near))
    return out


def _matches(module: str, key: str) -> bool:
    return module == key or module.endswith("." + key)


def _pair(shape: tuple[int, ...]) -> tuple[int, int]:
    return shape[0], shape[1]


# --- QLoRA's frozen weights --------------------------------------------------------------------------

NF4_BLOCK: Final = 64
NF4_BLOCK2: Final = 256
NF4_SOURCE: Final = ("bitsandbytes functional.quantize_4bit (quant_type nf4, blocksize 64, compress_statistics: "
                     "absmax − its mean quantised blockwise in blocks of 256), as transformers' "
                     "BitsAndBytesConfig(load_in_4bit, bnb_4bit_use_double_quant) stores every linear layer but "
                     "the output layer")


def nf4_bytes(numel: int) -> int:
    """Bytes of one linear weight in bitsandbytes' NF4 with double quantisation: two 4-bit values a
    byte; a uint8 scale per block of 64; a float32 absmax per 256 of those blocks; the float32 offset
    of the scales, the 16-entry float32 NF4 code, and the nested quantisation's own 256-entry float32 map
    (``quantize_blockwise``'s dynamic code, one a layer: measured after loading with bitsandbytes 0.50)."""
    blocks = -(-numel // NF4_BLOCK)
    return -(-numel // 2) + blocks + 4 * -(-blocks // NF4_BLOCK2) + 4 + 16 * 4 + 256 * 4


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
class TrainOptions:
    """What ``inspect train`` is asked (``check_options`` holds each in its range: ``METHODS``,
    ``PRECISIONS``, ``OPTIMIZERS``, ``OFFLOADS``)."""

    method: str = "lora"
    rank: int = 16
    alpha: float | None = None
    targets: tuple[str, ...] = ("all-linear",)
    optimizer: str = "adamw"
    precision: str = "bf16-mixed"
    batch: int = 1
    seq: int = 2048
    checkpointing: bool = False
    budget: Budget | None = None
    zero: int = 0
    fsdp: bool = False
    offload: str = "none"
    #: how the experts of a MoE are held in memory (``experts.LAYOUTS``): fused as transformers 5 loads them, or
    #: one ``nn.Linear`` each as transformers 4 did
    experts: Layout = "fused"
    #: the trainer's stage and loss kernel (``stages``): sft, dpo, grpo as TRL runs them
    stage: StageOptions = field(default_factory=StageOptions)
    #: sequence-parallel group size (DeepSpeed Ulysses): each GPU holds 1/sp of every sequence
    sp: int = 1
    #: parts kept from training (``frozen``): roles (vision, audio, projector) or module paths
    freeze: tuple[str, ...] = ()
    #: the optimizer step fused into the backward pass (torchtune's optimizer_in_bwd): no full set of gradients
    optimizer_in_backward: bool = False
    #: activations moved to CPU memory in the forward and back in the backward (torchtune's OffloadActivations)
    offload_activations: bool = False


@dataclass(frozen=True, slots=True)
class Train:
    options: TrainOptions
    devices: int
    trainable: int
    frozen: int
    by_role: tuple[tuple[str, int], ...]  # trainable parameters by role
    adapted: int  # modules LoRA adapts (0 for full)
    weights: Term
    reference: Term  # DPO's and GRPO's frozen reference model
    gradients: Term
    optimizer_states: Term
    master_weights: Term
    activations: Term
    logits: Term
    overhead: Term
    total: int | None  # per GPU, at the peak; None when a term is unknown
    peak_rule: str
    cpu_bytes: int  # offloaded to the CPU, per GPU's share
    fits: bool | None
    largest_batch: int | None  # at ``seq``
    largest_seq: int | None  # at ``batch``
    bits_per_weight: float | None  # QLoRA's frozen linear weights
    thumbs: tuple[Thumb, ...]
    assumptions: tuple[str, ...]

    @property
    def terms(self) -> tuple[Term, ...]:
        """The memory's parts, in the table's order (the reference model's only where the stage has one)."""
        reference = (self.reference,) if self.options.stage.stage != "sft" else ()
        return (self.weights, *reference, self.gradients, self.optimizer_states, self.master_weights,
                self.activations, self.logits, self.overhead)


# --- the arithmetic --------------------------------------------------------------------------------


def check_adapter_options(method: str, given: Sequence[str]) -> None:
    """``given``: the adapter's options the user set (``⟨rank⟩`` …); refused for a method that trains no
    adapter, where they would be accepted and mean nothing."""
    if given and method in METHODS and method not in ADAPTER_METHODS:
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
    if o.offload not in OFFLOADS:
        raise UsageError(f"⟨offload⟩: unknown {o.offload!r}", hint="use " + ", ".join(OFFLOADS))
    if o.experts not in LAYOUTS:
        raise UsageError(f"⟨experts⟩: unknown {o.experts!r}", hint="use " + ", ".join(LAYOUTS))
    if not 1 <= o.rank <= 65536:
        raise UsageError(f"⟨rank⟩ {o.rank} is not 1 to 65,536")
    if not 1 <= o.batch <= 1 << 20 or not 1 <= o.seq <= 1 << 24:
        raise UsageError("⟨batch⟩ and ⟨seq⟩ are positive (at most 1,048,576 and 16,777,216)")
    if o.zero not in (0, 1, 2, 3):
        raise UsageError(f"⟨zero⟩ {o.zero}: DeepSpeed's stages are 0, 1, 2 and 3")
    devices = o.budget.devices if o.budget else 1
    if (o.zero or o.fsdp) and devices < 2:
        raise UsageError(f"{'⟨fsdp⟩' if o.fsdp else f'⟨zero={o.zero}⟩'} shards the training state over several GPUs; "
                         "with one GPU it shards nothing", hint="give the GPUs: ⟨gpu=H100x8⟩")
    if o.fsdp and o.zero:
        raise UsageError("⟨fsdp⟩ and ⟨zero⟩ are two ways to shard: give one", hint="⟨fsdp⟩ is ZeRO stage 3's layout")
    if o.offload != "none" and not (o.zero or o.fsdp):
        raise UsageError("⟨offload⟩ moves sharded state to the CPU: it goes with ⟨zero⟩ or ⟨fsdp⟩",
                         hint="⟨gpu=RTX4090x2⟩ ⟨zero=2⟩ ⟨offload=optimizer⟩")
    check_stage(o.stage)
    check_batch(o.stage, o.batch, devices)
    if not 1 <= o.sp <= 1024:
        raise UsageError(f"⟨sp⟩ {o.sp} is not 1 to 1,024")
    if o.method == "qlora" and (o.precision == "fp32" or o.precision.startswith("amp-")):
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
    stage = 3 if o.fsdp else o.zero
    mixed = o.precision in ("bf16-mixed", "fp16-mixed")
    amp = o.precision.startswith("amp-")  # torch autocast over float32 weights
    half = 4 if o.precision == "fp32" else 2  # bytes of an activation element (16-bit, or fp32)
    wbytes = 4 if o.precision == "fp32" or amp else 2  # bytes of a weight as held
    assumptions: list[str] = []

    frozen_names = frozen(report.tensors, o.freeze)
    if o.method == "full":
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
        if o.method == "qlora":
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
                               + ("; bitsandbytes keeps them in 16-bit" if o.method == "qlora" else "")
                               + " (--experts separate: transformers 4.x, one nn.Linear an expert)")
        param_bytes = 4
        grad_bytes = 4
    if amp:  # autocast's cache: one 16-bit copy of each linear weight per forward, saved for the backward
        linears = sum(t.info.numel for _, t in in_memory_linears(report.tensors, report.config.model_type, o.experts))
        weights += (linears + (n_trainable if o.method != "full" else 0)) * 2
        weights_formula += f" + autocast's 16-bit copies of the linear weights ({linears:,} × 2 B)"
    widths, _ = _widths(arch, report)
    adapters = (adapter_activation_bytes(adapted, o.rank, len(widths), 2 if amp else 4)
                if o.method != "full" and half == 2 and widths else -1)  # peft's adapters on a frozen base
    opt = OPTIMIZERS[o.optimizer]
    states = sum(state_bytes(o.optimizer, shape, n, param_bytes)
                 for shape, n, _ in trainable)  # the parameters (full), or each adapter's two factors
    master = n_trainable * 4 if (mixed and o.method == "full") else 0
    gradients = n_trainable * grad_bytes
    largest_grad = max((n for _, n, _ in trainable), default=0) * grad_bytes
    if o.optimizer_in_backward:  # each gradient applied and freed as it is accumulated: the largest alive at once
        gradients = largest_grad

    # ZeRO stages shard (1) optimizer states and master, (2) gradients, (3) weights over the GPUs
    def shard(value: int, from_stage: int) -> int:
        return -(-value // devices) if stage >= from_stage and devices > 1 else value

    g_weights, g_grads = shard(weights, 3), shard(gradients, 2)
    g_states, g_master = shard(states, 1), shard(master, 1)
    cpu = 0
    if o.offload in ("optimizer", "all"):
        cpu += g_states + g_master
        g_states = g_master = 0
    if o.offload == "all":
        layer = max((sum(t.info.numel for t in members) for members in _layers(params)), default=0)
        cpu += g_weights
        g_weights = min(g_weights, layer * wbytes)
        assumptions.append("offload all: the weights live on the CPU; the GPU holds the layer being computed (the "
                           "largest layer's weights counted)")
    sharding = ("" if stage == 0 or devices == 1 else
                f"; ZeRO stage {stage} over {devices} GPUs" if not o.fsdp else f"; FSDP full shard over {devices} GPUs")
    act, act_formula, act_unknown = _activations(arch, report, o, half, adapters)
    if o.offload_activations and not act_unknown:  # what the CPU holds: the activations as they would be on the GPU
        n0, l0 = rows(o.stage, o.batch, o.seq)
        cpu += _activation_bytes(arch, report, replace(o, offload_activations=False), half, n0,
                                 sp_tokens(l0, o.sp), adapters) or 0
        act_formula = "one layer's (the rest on the CPU, brought back in the backward); " + act_formula
    logits_bytes, logits_formula = _logits(report, o)
    reference = total_params * wbytes if has_reference(o.stage, o.method) else 0
    g_reference = shard(reference, 3)
    overhead = VLLM_NON_TORCH[devices > 1]
    terms = dict(
        weights=Term("weights", g_weights, weights_formula + (" ÷ GPUs" if g_weights != weights else ""),
                     "the headers' shapes" + (f"; {NF4_SOURCE}" if o.method == "qlora" else ""), True),
        gradients=Term("gradients", g_grads, (f"{n_trainable:,} trainable × {grad_bytes} B" if not
                                              o.optimizer_in_backward else
                                              f"the largest trainable tensor's {largest_grad // grad_bytes:,} × "
                                              f"{grad_bytes} B (the optimizer steps in the backward)") +
                       (" ÷ GPUs" if g_grads != gradients else ""),
                       "one gradient per trainable parameter" if not o.optimizer_in_backward else
                       "torch's register_post_accumulate_grad_hook, as torchtune's optimizer_in_bwd uses it: each "
                       "parameter stepped and its gradient freed once accumulated", True),
        optimizer_states=Term("optimizer_states", g_states, f"{opt.states}: {states:,} B" +
                              (" ÷ GPUs" if g_states != states and g_states else "") +
                              (" (on the CPU)" if o.offload != "none" else ""), opt.source, True),
        master_weights=Term("master_weights", g_master,
                            (f"{n_trainable:,} × 4 B (fp32 copy the optimizer updates)" if master else
                             "none: " + ("the adapters are float32 already" if o.method != "full" else
                                         f"{o.precision} keeps no separate copy")),
                            "mixed-precision training (Micikevicius et al. 2018; ZeRO §3's 2Ψ + 2Ψ + KΨ)", True),
        activations=Term("activations", None if act_unknown else act, act_formula if not act_unknown else
                         f"unknown: {act_unknown}", "Korthikanti et al. 2022 §4, per layer (see below)", False),
        logits=Term("logits", logits_bytes, logits_formula, "transformers ForCausalLMLoss (logits.float(), "
                    "cross_entropy's log_softmax)", False),
        overhead=Term("overhead", overhead, "memory outside PyTorch's allocator, constant per GPU",
                      VLLM_NON_TORCH_SOURCE, False),
    )
    out_grad = shard(sum(n for _, n, role in trainable if role in ("lm_head", "embedding")) * grad_bytes, 2)
    if o.optimizer_in_backward:
        out_grad = g_grads  # the one gradient alive, whichever it is
    fixed = g_weights + g_reference + g_states + g_master + overhead

    refused = sp_refusal(o.sp, report.config.num_heads, report.config.num_kv_heads, devices)
    if refused is not None:
        raise UsageError(f"⟨sp={o.sp}⟩: {refused}", hint="a size that divides the heads and the GPUs")

    def peak(batch: int, seq: int) -> int | None:
        n, length = rows(o.stage, batch, seq)
        length = sp_tokens(length, o.sp)
        a = _activation_bytes(arch, report, o, half, n, length, adapters)
        if a is None:
            return None
        return fixed + max(a + _head_bytes(report, o, n, length, half) + out_grad, g_grads)

    total = peak(o.batch, o.seq)
    usable = None if o.budget is None else int(o.budget.per_device * (1 - o.stage.rollout_memory))
    fits = None if total is None or usable is None else total <= usable
    largest_batch = largest_seq = None
    if usable is not None and total is not None:
        budget = usable
        largest_batch = largest(lambda b: (peak(b, o.seq) or 0) <= budget, 1 << 20)
        largest_seq = largest(lambda s: (peak(o.batch, s) or 0) <= budget, 1 << 24)
    rule = ("weights + master + optimizer states + overhead + the larger of (activations + logits + the output "
            f"layer's gradient) and (every gradient){sharding}")
    assumptions += _assumptions(o, arch)
    return Train(
        options=o, devices=devices, trainable=n_trainable, frozen=total_params - (n_trainable if o.method == "full"
                                                                                 else 0),
        by_role=tuple(sorted(_by_role(trainable).items())), adapted=len(adapted),
        weights=terms["weights"], gradients=terms["gradients"], optimizer_states=terms["optimizer_states"],
        master_weights=terms["master_weights"], activations=terms["activations"], logits=terms["logits"],
        overhead=terms["overhead"], total=total, peak_rule=rule, cpu_bytes=cpu, fits=fits,
        largest_batch=largest_batch, largest_seq=largest_seq, bits_per_weight=bits,
        thumbs=_thumbs(total_params, o), assumptions=tuple(assumptions),
        reference=Term("reference", g_reference,
                       (f"{total_params:,} parameters × {wbytes} B, frozen" + (" ÷ GPUs" if g_reference != reference
                                                                             else "")) if reference else
                       ("none: " + ("SFT has no reference model" if o.stage.stage == "sft" else
                                    "peft's base with the adapter disabled is the reference" if o.method != "full"
                                    else "beta 0: GRPO keeps no reference model")),
                       f"{TRL} {o.stage.stage.upper()}Trainer: a second copy of the model as loaded"
                       if reference else f"{TRL}", True))




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


# --- activations and logits --------------------------------------------------------------------------

ACTIVATION_SOURCE: Final = ("Korthikanti et al. 2022 §4 (the tensors each layer keeps for its backward pass), for "
                            "transformers' Llama-family layers with a flash/SDPA attention kernel")


@dataclass(frozen=True, slots=True)
class _Widths:
    """A layer's widths the activation formula reads."""

    hidden: int
    q: int  # heads × key width
    k: int  # KV heads × key width
    v: int  # KV heads × value width
    o: int  # heads × value width
    heads: int
    mlp: int  # elements the MLP keeps per token (gate, activation, up, product; × experts a token visits)
    down: int = 0  # the down projection's input width of a dense MLP (0 for a mixture of experts)
    qk_norm: bool = False  # RMSNorms on the queries and keys (Qwen3, OLMo2, Gemma 3)


def _mlp_elements(report: Report, moe: bool) -> int | None:
    """Elements a token's MLP keeps for the backward pass: a gated MLP its gate and up projections'
    outputs, the activation's and their product (4 × width); a plain MLP the first projection's output
    and the activation's (2 × width); a mixture of experts that × experts a token visits, plus each
    visited expert's copy of the token and its output (kept to weigh it by the router: 2 × hidden), and a
    shared expert (measured on transformers 5's fused experts: Mixtral, Qwen3-MoE)."""
    c = report.config
    roles = {r.role for r in report.summary.by_role}
    gated = bool(roles & {"mlp.gate", "mlp.gate_up", "moe.expert.gate", "moe.expert.gate_up"})
    per = 4 if gated else 2
    if not moe:
        return per * c.intermediate_size if c.intermediate_size else None
    width, k = c.moe_intermediate_size or c.intermediate_size, c.experts_per_token
    if not width or not k or not c.hidden_size:
        return None
    shared = _shared_width(report)
    return k * (per * width + 2 * c.hidden_size) + per * shared + (c.num_experts or 0)


def _shared_width(report: Report) -> int:
    raw = report.config.raw
    for key in ("shared_expert_intermediate_size",):
        value = raw.get(key)
        if type(value) is int and value > 0:
            return value
    n = report.config.shared_experts or 0
    return n * (report.config.moe_intermediate_size or 0)


def _layer_bytes(w: _Widths, a: int, adapters: int = -1) -> int:
    """Bytes one layer keeps per token (``a``: bytes of an activation element): two RMSNorms (the fp32
    input, the normalised and the output), attention (q, k and v for the kernel, its output and the
    output projection's contiguous copy, a float32 log-sum-exp per head) and the MLP.

    ``adapters`` ≥ 0: a frozen base under peft's LoRA, and the bytes a token its adapters keep in the layer. A
    frozen weight needs no copy of its input, so the norms' normalised inputs (their weights' gradients), the
    linear layers' inputs (the norms' outputs, the output projection's copy, a dense MLP's down-projection input)
    are not kept (measured: torch's saved tensors, tests/test_activations.py)."""
    norms = 2 * (4 * w.hidden + 2 * a * w.hidden)
    attention = a * (w.q + w.k + w.v) + 2 * a * w.o + 4 * w.heads
    full = norms + attention + a * w.mlp + _qk_norm_bytes(w, a)
    if adapters < 0:
        return full
    return full - a * (4 * w.hidden + w.o + w.down) + adapters


def _qk_norm_bytes(w: _Widths, a: int) -> int:
    """RMSNorms on the queries and keys keep their float32 input and the normalised input (their weights'
    gradients) over every query and key element: (4 + a) × (q + k) bytes a token (measured, Qwen3-MoE)."""
    return (4 + a) * (w.q + w.k) if w.qk_norm else 0


def _amp_layer_bytes(w: _Widths, a: int, adapters: int = -1) -> int:
    """Bytes one layer keeps per token under torch autocast over float32 weights (measured structure, torch's saved
    tensors: tests/test_activations.py): the residual stream and both RMSNorms in float32 (their input and the
    normalised input, 8·h each), autocast's 16-bit cast of the norm's output for each linear that reads it (q, k, v
    and a gated MLP's gate and up: 5·a·h), attention's query twice and key and value, the log-sum-exp, and the MLP.
    A frozen base (``adapters`` ≥ 0) keeps neither the normalised inputs nor those casts nor the down input; the
    adapters keep their own 16-bit casts."""
    reads = 5 if w.down else 4
    full = (2 * 8 * w.hidden + reads * a * w.hidden + a * (2 * w.q + w.k + w.v) + 4 * w.heads + a * w.mlp
            + _qk_norm_bytes(w, 4))
    if adapters < 0:
        return full
    return full - 8 * w.hidden - reads * a * w.hidden - a * w.down + adapters


def adapter_activation_bytes(adapted: Sequence[Adapted | Wrapped], rank: int, layers: int, element: int = 4) -> int:
    """Bytes a token the adapters of one layer keep, on average over ``layers``: peft runs a float32 adapter on a
    16-bit base by casting the layer's input to float32 (``_cast_input_dtype``: lora_A saves that copy for its
    weight's gradient) and lora_B saves lora_A's float32 output: 4 × (in + r) a linear layer adapted. (Fused
    experts' wrapped parameters see only their routed tokens: not counted.) Under autocast (``element`` 2) the
    copies are the 16-bit casts autocast makes for the adapters' matmuls."""
    linear = [x for x in adapted if isinstance(x, Adapted) and not x.embedding and x.role != "lm_head"]
    return element * sum(x.shape[1] + rank for x in linear) // max(1, layers)


def _widths(arch: Architecture, report: Report) -> tuple[list[_Widths], str | None]:
    """The widths of every layer that runs on the training tokens (decoder and encoder stacks; a vision
    or audio tower runs on images and sounds this estimate has no size for); why not, when a layer's
    kind or a width is unknown."""
    c = report.config
    qk = {t.place.layer for t in report.tensors if t.info.name.endswith((".q_norm.weight", ".k_norm.weight"))}
    out = []
    for stack in arch.stacks:
        if stack.kind not in ("decoder", "encoder"):
            continue
        for layer in stack.layers:
            kinds = {m.kind for m in layer.mixers}
            if kinds - CACHING - {"cross"}:
                return [], (f"layer {layer.index} of the {stack.kind} is {'+'.join(sorted(kinds))}: the formula covers "
                            "attention and MLP layers, not state-space or linear-attention ones")
            mixer = next(m for m in layer.mixers if m.kind in CACHING)
            att = mixer.attention
            if att is None or att.heads is None or att.key_dim is None or att.value_dim is None or not c.hidden_size:
                return [], "the config gives no heads or head width"
            kv = att.kv_heads if att.kv_heads is not None else att.heads
            mlp = _mlp_elements(report, layer.mlp.kind == "moe")
            if mlp is None:
                return [], "the config gives no MLP width (intermediate_size)"
            if mixer.kind == "mla":  # MLA keeps its up-projected keys and values per head
                kv = att.heads
            out.append(_Widths(c.hidden_size, att.heads * att.key_dim, kv * att.key_dim, kv * att.value_dim,
                               att.heads * att.value_dim, att.heads, mlp,
                               0 if layer.mlp.kind == "moe" else c.intermediate_size or 0, layer.index in qk))
    if not out:
        return [], "no attention layers in the headers to size"
    return out, None


def _activation_bytes(arch: Architecture, report: Report, o: TrainOptions, half: int, batch: int,
                      seq: int, adapters: int = -1) -> int | None:
    """``adapters``: a token's bytes of the adapters in a layer, where a frozen base runs them (else -1)."""
    widths, why = _widths(arch, report)
    if why is not None:
        return None
    tokens = batch * seq
    amp = o.precision.startswith("amp-")
    per_layer = [(_amp_layer_bytes if amp else _layer_bytes)(w, half, adapters) for w in widths]
    final_norm = 4 * widths[0].hidden + 2 * half * widths[0].hidden
    if o.offload_activations:  # every saved tensor on the CPU; the backward brings back one layer's at a time
        return tokens * (max(per_layer) + final_norm)
    if o.checkpointing:  # each layer's input kept (float32 under autocast), one layer recomputed at a time
        return tokens * (len(widths) * (4 if amp else half) * widths[0].hidden + max(per_layer) + final_norm)
    return tokens * (sum(per_layer) + final_norm)


def _activations(arch: Architecture, report: Report, o: TrainOptions, half: int,
                 adapters: int = -1) -> tuple[int, str, str | None]:
    widths, why = _widths(arch, report)
    if why is not None:
        return 0, "", why
    n, length = rows(o.stage, o.batch, o.seq)
    value = _activation_bytes(arch, report, o, half, n, sp_tokens(length, o.sp), adapters) or 0
    w = widths[0]
    per = (_amp_layer_bytes if o.precision.startswith("amp-") else _layer_bytes)(w, half, adapters)
    frozen = (f" − a frozen base's inputs {half}·(4·h + o + down {w.down:,}) + the float32 adapters' "
              f"{adapters:,} B (their inputs' float32 copies and lora_A's outputs)") if adapters >= 0 else ""
    layer = (f"per layer and token: norms 2 × (4·h + {2 * half}·h) + attention {half}·(q {w.q:,} + k {w.k:,} + "
             f"v {w.v:,}) + {2 * half}·o {w.o:,} + 4·heads {w.heads} + MLP {half} × {w.mlp:,}{frozen} = {per:,} B")
    if o.precision.startswith("amp-"):
        layer = (f"per layer and token under autocast: float32 norms 2 × 8·h + 16-bit casts of their outputs "
                 f"{5 if w.down else 4} × {half}·h + attention {half}·(2·q {w.q:,} + k {w.k:,} + v {w.v:,}) + "
                 f"4·heads {w.heads} + MLP {half} × {w.mlp:,}"
                 + (" − the frozen base's saves + the adapters' 16-bit casts" if adapters >= 0 else "")
                 + f" = {per:,} B")
    tokens = rows_words(o.stage, o.batch, o.seq) + (f" ÷ SP {o.sp}" if o.sp > 1 else "")
    if o.checkpointing:
        return value, (f"{tokens} × ({len(widths)} layers × {half}·h {w.hidden:,} (each layer's input) + one layer "
                       f"recomputed + final norm); {layer}"), None
    return value, f"{tokens} × ({len(widths)} layers + final norm); {layer}", None


def _vocabulary(report: Report) -> int:
    """Rows of the output layer (its own, or the tied embedding's): the real, padded vocabulary."""
    for role in ("lm_head", "embedding"):
        rows = [t.info.shape[0] for t in report.tensors if t.place.role == role and t.place.kind == "parameter"
                and len(t.info.shape) == 2 and t.place.layer is None]
        if rows:
            return rows[0]
    return report.config.vocab_size or 0


def _logit_bytes(report: Report, batch: int, seq: int, half: int = 2) -> int:
    per = 8 if half == 4 else 10  # fp32 logits + log-probabilities; a 16-bit model's own logits beside them
    return batch * seq * _vocabulary(report) * per


def _head_bytes(report: Report, o: TrainOptions, n: int, length: int, half: int) -> int:
    """The output layer's loss at its peak for ``n`` sequences of ``length`` tokens, by the loss kernel."""
    if o.stage.kernel == "fused":
        vocab = _vocabulary(report)
        return fused_head_bytes(n * length, vocab, report.config.hidden_size or 0, half) if vocab else 0
    return _logit_bytes(report, n, length, half)


def _logits(report: Report, o: TrainOptions) -> tuple[int, str]:
    vocab = _vocabulary(report)
    if not vocab:
        return 0, "none: no output layer over a vocabulary"
    half = 4 if o.precision == "fp32" else 2
    n, length = rows(o.stage, o.batch, o.seq)
    length = sp_tokens(length, o.sp)
    tokens = rows_words(o.stage, o.batch, o.seq) + (f" ÷ SP {o.sp}" if o.sp > 1 else "")
    if o.stage.kernel == "fused":
        hidden = report.config.hidden_size or 0
        return _head_bytes(report, o, n, length, half), (
            f"{TRL}'s fused LM head: a tile of min({n * length:,}, 4,096) tokens × min({vocab:,}, 32,768) × {half} B + "
            f"the hidden states' fp32 gradient {n * length:,} × {hidden:,} × 4 B + 9 fp32 vectors a token")
    per = "4 B fp32 logits + 4 B log-probabilities" if half == 4 else \
        "2 B logits + 4 B their fp32 upcast + 4 B log-probabilities"
    return _logit_bytes(report, n, length, half), f"{tokens} × vocabulary {vocab:,} × ({per})"


# --- what the answer assumes, and what others would say ------------------------------------------------


def _assumptions(o: TrainOptions, arch: Architecture) -> list[str]:
    out = [
        f"activations of {o.precision}: a flash/SDPA attention kernel (no s × s score matrix kept); no dropout; "
        "eager PyTorch (torch.compile and fused kernels keep less)",
        ("the logits as transformers' loss holds them; chunked or fused cross-entropy (torchtune's, Liger, Unsloth) "
         "keeps a fraction" if o.stage.kernel == "standard" else f"the loss as {TRL}'s fused LM head computes it"),
        "allocator fragmentation (reserved − allocated) is not counted; neither are the optimizer step's temporaries",
    ]
    if o.checkpointing:
        out.append("activation checkpointing per decoder layer (transformers' gradient_checkpointing_enable)")
    if o.experts == "separate" and o.method != "full" and any(
            layer.mlp.kind == "moe" for s in arch.stacks for layer in s.layers):
        out.append("experts as transformers 4.x held them: one nn.Linear an expert, each adapted (and quantised) "
                   "on its own")
    st = o.stage
    if st.stage == "dpo":
        out.append(f"{TRL} DPOTrainer: chosen and rejected concatenated into one batch of twice the rows; the "
                   "reference forward under no_grad keeps only log-probabilities")
    elif st.stage == "grpo":
        out.append(f"{TRL} GRPOTrainer: {st.generations} completions a prompt, up to {st.completion:,} tokens each, "
                   f"one gradient-accumulation step; beta {st.beta:g}"
                   + (f"; a colocated vLLM holds {st.rollout_memory:.0%} of each GPU" if st.rollout_memory else
                      "; generation's own peak (the KV cache of the completions) is not counted"))
    if st.kernel == "fused":
        out.append("the loss through TRL's fused LM head (no batch × sequence × vocabulary logits)")
    if o.sp > 1:
        out.append(f"sequence parallel {o.sp} (DeepSpeed Ulysses): each GPU holds 1/{o.sp} of every sequence's "
                   "activations and logits; attention's all-to-all buffers and KV heads replicated where the SP size "
                   "exceeds them are not counted")
    if o.freeze:
        out.append(f"frozen ({', '.join(o.freeze)}): no gradient, optimizer state or master copy; its weights "
                   "stay in memory")
    if o.offload_activations:
        out.append("activations offloaded as torchtune's OffloadActivations does: every saved tensor of 1 KiB or more "
                   "to (pinned) CPU memory in the forward, back one layer at a time in the backward; its stash of "
                   "up to 5 tensors in flight is not counted")
    if o.precision.startswith("amp-"):
        out.append("torch autocast over float32 weights: float32 weights and gradients, no separate master copy; "
                   "autocast's cache holds a 16-bit copy of every linear weight until the forward ends (with "
                   "checkpointing too); the residual stream and norms in float32")
    towers = [s.kind for s in arch.stacks if s.kind in ("vision", "audio")]
    if towers:
        out.append(f"text-only batches: the {', '.join(towers)} tower does not run (its activations depend on the "
                   "inputs' sizes)")
    if o.method == "qlora":
        out.append("peft's prepare_model_for_kbit_training upcasts the unquantised weights (embeddings, norms, "
                   "head) to float32: twice their bytes here when called")
    return out


def _thumbs(parameters: int, o: TrainOptions) -> tuple[Thumb, ...]:
    """The rules of thumb users quote, as their authors state them (GB = 10⁹ B)."""
    x = parameters / 1e9
    factory = {"full": (18 if o.precision in ("bf16-mixed", "fp16-mixed", "fp32") else 8),
               "lora": 2, "qlora": 0.5}[o.method]
    label = {"full": "Full (bf16 or fp16): 18x GB" if factory == 18 else "Full (pure_bf16): 8x GB",
             "lora": "Freeze/LoRA: 2x GB", "qlora": "QLoRA 4-bit: x/2 GB"}[o.method]
    fp32 = parameters * 4
    accelerate = 4 * fp32 if o.precision == "fp32" else 2 * fp32
    return (Thumb("LLaMA-Factory README, Hardware Requirement (estimated)", int(factory * x * 1e9),
                  f"{label}, x = {x:.2f} billion parameters"),
            Thumb("accelerate estimate-memory, 'Training using Adam' (commands/estimate.py)", accelerate,
                  "the largest of its terms for full training at batch 1, no activations: " +
                  ("4 × the fp32 size" if o.precision == "fp32" else "2 × the fp32 size (Adam's two states)")))
