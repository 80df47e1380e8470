"""The library's ``train``: fine-tuning memory per GPU (``inspect train``), its options checked before any model is
opened. A module of the api layer beside ``inspector.api`` (which opens models)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from inspector.api import open_model
from inspector.model import Checkpoint
from inspector.pause import paused
from inspector.results import TrainResult

if TYPE_CHECKING:
    from inspector.analysis.training.options import TrainOptions
    from inspector.analysis.training.stages import StageOptions
    from inspector.sources.transport import HubOptions


def train_options(*, method: str = "lora", rank: int | str | None = None, alpha: float | str | None = None,
                  targets: str | Sequence[str] | None = None, optimizer: str = "adamw",
                  precision: str = "bf16-mixed", batch: int | str | None = None, seq: int | str = 2048,
                  checkpointing: bool = False, gpu: str | None = None, zero: int | str = 0, fsdp: bool = False,
                  offload: str = "none", experts: str = "fused", stage: str = "sft", loss: str | None = None,
                  generations: int | str | None = None, completion_len: int | str | None = None,
                  beta: float | str | None = None, rollout_memory: float | str | None = None,
                  sp: int | str = 1, freeze: str | Sequence[str] | None = None,
                  optimizer_in_backward: bool = False, offload_activations: bool = False,
                  compile: bool = False) -> TrainOptions:
    """``train``'s options, checked before any model is opened: ``method`` full, lora or qlora;
    ``rank`` (default 16), ``alpha`` (positive, finite) and ``targets`` (``all-linear``, the default, or
    module names: a comma-separated string or a list) only for LoRA and QLoRA; ``gpu`` a budget
    or a GPU's name, ``xN`` for N GPUs; ``zero`` a DeepSpeed stage; ``offload`` none, optimizer or all;
    ``experts`` fused (a MoE as transformers 5 loads it, the default) or separate (transformers 4.x); ``stage``
    sft, dpo or grpo as TRL runs them, ``loss`` standard or fused (TRL's fused LM head; DPO's and GRPO's own), and
    for GRPO ``generations`` (8), ``completion_len`` (512), ``beta`` (0.0) and ``rollout_memory`` (a colocated
    vLLM's share of each GPU, 0); ``sp`` a sequence-parallel group size (DeepSpeed Ulysses); ``freeze`` parts
    kept from training (vision, audio, projector, or module paths); ``optimizer_in_backward`` each gradient applied
    and freed as it is accumulated (torchtune's optimizer_in_bwd); ``offload_activations`` the activations held in
    CPU memory (torchtune's OffloadActivations); ``compile`` each decoder layer compiled (torch.compile)."""
    # deferred: 66 ms at import (math, inspector.analysis.serving.budget, inspector.analysis.training.options, …)
    import math

    from inspector.analysis.serving.budget import parse_budget, parse_count, parse_fraction, parse_whole, parse_word
    from inspector.analysis.training.experts import LAYOUTS
    from inspector.analysis.training.options import OFFLOADS, Sharding, StepOptions, TrainOptions
    from inspector.analysis.training.stages import default_batch
    from inspector.analysis.training.train import check_adapter_options, check_options
    from inspector.errors import UsageError

    check_adapter_options(method.lower(), [name for name, value in (("⟨rank⟩", rank), ("⟨alpha⟩", alpha),
                                                                     ("⟨targets⟩", targets)) if value is not None])
    targets = "all-linear" if targets is None else targets
    names = tuple(t.strip() for t in (targets.split(",") if isinstance(targets, str) else targets) if t.strip())
    if not names:
        raise UsageError("⟨targets⟩ names no module", hint="all-linear, or q_proj,v_proj")
    rank_value = parse_whole(16 if rank is None else rank, "⟨rank⟩")
    zero_value = parse_whole(zero, "⟨zero⟩")
    alpha_value = None if alpha is None else parse_fraction(alpha, "⟨alpha⟩")
    if alpha_value is not None and not (math.isfinite(alpha_value) and alpha_value > 0):
        raise UsageError(f"⟨alpha⟩ {str(alpha)[:24]!r} is not a positive finite number", hint="for example 32")
    stage_options = _stage_options(stage, loss, generations, completion_len, beta, rollout_memory)
    options = TrainOptions(
        method=method.lower(), rank=rank_value, alpha=alpha_value, targets=names, optimizer=optimizer.lower(),
        precision=precision.lower(), batch=default_batch(stage_options) if batch is None else parse_count(
            str(batch), "⟨batch⟩"), seq=parse_count(str(seq), "⟨seq⟩"),
        budget=parse_budget(gpu) if gpu else None, experts=parse_word(experts, LAYOUTS, "⟨experts⟩"),
        shard=Sharding(zero=zero_value, fsdp=fsdp, offload=parse_word(offload, OFFLOADS, "⟨offload⟩"),
                       sp=parse_whole(sp, "⟨sp⟩")),
        step=StepOptions(checkpointing=checkpointing, optimizer_in_backward=optimizer_in_backward,
                         offload_activations=offload_activations, compile=compile),
        stage=stage_options,
        freeze=tuple(f.strip() for f in ((freeze or "").split(",") if isinstance(freeze, str) or freeze is None
                                         else freeze) if f.strip()))
    check_options(options)
    return options


def _stage_options(stage: str, loss: str | None, generations: int | str | None, completion_len: int | str | None,
                   beta: float | str | None, rollout_memory: float | str | None) -> StageOptions:
    # deferred: 11 ms at import (math, inspector.analysis.serving.budget, inspector.analysis.training.stages, …)
    import math

    from inspector.analysis.serving.budget import parse_count, parse_fraction, parse_whole, parse_word
    from inspector.analysis.training.stages import COMPLETION, GENERATIONS, STAGES, StageOptions, check_stage
    from inspector.errors import UsageError

    given = [name for name, value in (("⟨generations⟩", generations), ("⟨completion_len⟩", completion_len),
                                      ("⟨beta⟩", beta), ("⟨rollout_memory⟩", rollout_memory)) if value is not None]
    chosen = StageOptions(
        stage=parse_word(stage, STAGES, "⟨stage⟩"), loss=loss.lower() if loss is not None else None,
        generations=GENERATIONS if generations is None else parse_whole(generations, "⟨generations⟩"),
        completion=COMPLETION if completion_len is None else parse_count(str(completion_len), "⟨completion_len⟩"),
        beta=0.0 if beta is None else parse_fraction(beta, "⟨beta⟩"),
        rollout_memory=0.0 if rollout_memory is None else parse_fraction(rollout_memory, "⟨rollout_memory⟩"))
    if not (math.isfinite(chosen.beta) and math.isfinite(chosen.rollout_memory)):
        raise UsageError("⟨beta⟩ and ⟨rollout_memory⟩ are finite numbers")
    check_stage(chosen, given)
    return chosen


@paused()
def train(model: str | Checkpoint, *, method: str = "lora", rank: int | str | None = None,
          alpha: float | str | None = None, targets: str | Sequence[str] | None = None, optimizer: str = "adamw",
          precision: str = "bf16-mixed", batch: int | str | None = None, seq: int | str = 2048,
          checkpointing: bool = False, gpu: str | None = None, zero: int | str = 0, fsdp: bool = False,
          offload: str = "none",
          experts: str = "fused", stage: str = "sft", loss: str | None = None, generations: int | str | None = None,
          completion_len: int | str | None = None, beta: float | str | None = None,
          rollout_memory: float | str | None = None, sp: int | str = 1, freeze: str | Sequence[str] | None = None,
          optimizer_in_backward: bool = False, offload_activations: bool = False, compile: bool = False,
          revision: str | None = None,
          hub: HubOptions | None = None) -> TrainResult:
    """``inspect train``: the memory to fine-tune ``model`` (options as ``train_options`` takes them)."""
    checked = train_options(method=method, rank=rank, alpha=alpha, targets=targets, optimizer=optimizer,
                            precision=precision, batch=batch, seq=seq, checkpointing=checkpointing, gpu=gpu,
                            zero=zero, fsdp=fsdp, offload=offload, experts=experts, stage=stage, loss=loss,
                            generations=generations, completion_len=completion_len, beta=beta,
                            rollout_memory=rollout_memory, sp=sp, freeze=freeze,
                            optimizer_in_backward=optimizer_in_backward, offload_activations=offload_activations,
                            compile=compile)
    return train_with(open_model(model, revision=revision, hub=hub), checked)


@paused()
def train_with(checkpoint: Checkpoint, options: TrainOptions) -> TrainResult:
    """The training memory of an open checkpoint with checked options."""
    # deferred: 120 ms at import (inspector.analysis.facts.report, inspector.analysis.knobs, …)
    from inspector.analysis.facts.report import build_report
    from inspector.analysis.knobs import train_knobs
    from inspector.analysis.training.train import train as train_report

    report = build_report(checkpoint)
    done = train_report(report, options)
    return TrainResult(report, done, train_knobs(done, lambda changed: train_report(report, changed)))
