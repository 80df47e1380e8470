"""What ``inspect train`` is asked, as one record (``train.check_options`` holds each option in its range)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from inspector.analysis.serving.budget import Budget
from inspector.analysis.training.experts import Layout
from inspector.analysis.training.methods import METHODS, Method
from inspector.analysis.training.precisions import PRECISIONS, Precision
from inspector.analysis.training.stages import StageOptions


@dataclass(frozen=True, slots=True)
class Offloading:
    """What one ``--offload`` moves to CPU memory (DeepSpeed's offload_optimizer and offload_param; FSDP's
    CPUOffload)."""

    optimizer: bool  # the optimizer's states and float32 master copy
    weights: bool  # the weights too, the GPU holding the layer being computed


Offload = Literal["none", "optimizer", "all"]
OFFLOADS: Final[tuple[Offload, ...]] = get_args(Offload)
OFFLOADING: Final[Mapping[Offload, Offloading]] = {
    "none": Offloading(optimizer=False, weights=False),
    "optimizer": Offloading(optimizer=True, weights=False),
    "all": Offloading(optimizer=True, weights=True),
}


@dataclass(frozen=True, slots=True)
class Sharding:
    """How the training state is spread over the GPUs and the host (``--zero``, ``--fsdp``, ``--offload``,
    ``--sp``; ``check_options`` holds each in its range)."""

    zero: int = 0  # DeepSpeed's ZeRO stage
    fsdp: bool = False  # FSDP full shard (ZeRO 3's layout)
    offload: Offload = "none"  # ``OFFLOADS``: the optimizer's states and master copy, or all, in CPU memory
    #: sequence-parallel group size (DeepSpeed Ulysses): each GPU holds 1/sp of every sequence
    sp: int = 1

    @property
    def offloading(self) -> Offloading:
        """What ``offload`` moves to CPU memory."""
        return OFFLOADING[self.offload]


@dataclass(frozen=True, slots=True)
class StepOptions:
    """How the step trades compute or host memory for GPU memory (``--checkpointing`` and torchtune's knobs)."""

    checkpointing: bool = False  # each layer's activations recomputed in the backward
    #: the optimizer step fused into the backward pass (torchtune's optimizer_in_bwd): no full set of gradients
    optimizer_in_backward: bool = False
    #: activations moved to CPU memory in the forward and back in the backward (torchtune's OffloadActivations)
    offload_activations: bool = False
    #: each decoder layer compiled (torch.compile, as torchtune compiles them): inductor's partitioner keeps fewer
    #: tensors for the backward than eager mode does
    compile: bool = False


@dataclass(frozen=True, slots=True)
class TrainOptions:
    """What ``inspect train`` is asked (``check_options`` holds each in its range: ``methods.METHODS``,
    ``precisions.PRECISIONS``, ``OPTIMIZERS``, ``OFFLOADS``)."""

    method: str = "lora"
    rank: int = 16
    alpha: float | None = None
    targets: tuple[str, ...] = ("all-linear",)
    optimizer: str = "adamw"
    precision: str = "bf16-mixed"
    batch: int = 1
    seq: int = 2048
    budget: Budget | None = None
    #: how the training state is spread over the GPUs and the host
    shard: Sharding = field(default_factory=Sharding)
    #: how the step trades compute or host memory for GPU memory
    step: StepOptions = field(default_factory=StepOptions)
    #: how the experts of a MoE are held in memory (``experts.LAYOUTS``): fused as transformers 5 loads them, or
    #: one ``nn.Linear`` each as transformers 4 did
    experts: Layout = "fused"
    #: the trainer's stage and loss kernel (``stages``): sft, dpo, grpo as TRL runs them
    stage: StageOptions = field(default_factory=StageOptions)
    #: parts kept from training (``frozen``): roles (vision, audio, projector) or module paths
    freeze: tuple[str, ...] = ()

    @property
    def method_kind(self) -> Method:
        """The method's record (``methods.METHODS``; the name is checked first, by ``check_options``)."""
        return METHODS[self.method]

    @property
    def precision_kind(self) -> Precision:
        """The precision's record (``precisions.PRECISIONS``; the name is checked first, by ``check_options``)."""
        return PRECISIONS[self.precision]

    @property
    def autocast(self) -> bool:
        """torch autocast over float32 weights (``--precision amp-bf16|amp-fp16``)."""
        return self.precision in PRECISIONS and self.precision_kind.autocast
