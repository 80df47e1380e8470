"""Training stages as TRL 1.16's trainers run them (``--stage``, LLaMA-Factory's word), and the loss kernel whose
memory ``train``'s logits term counts (``--loss``).

* **sft**: one sequence of ``--seq`` tokens a batch row (transformers' Trainer, TRL's ``SFTTrainer``).
* **dpo** (``DPOTrainer``): each row is a chosen and a rejected sequence, concatenated into one batch of twice the
  rows; a frozen **reference model**, a second copy of the weights as loaded (``create_model_from_path``), with a full
  fine-tune, and none with LoRA (peft's adapter is disabled for the reference pass: ``use_adapter``). Its forward
  runs under ``no_grad`` and keeps only per-token log-probabilities.
* **grpo** (``GRPOTrainer``): ``--generations`` completions of up to ``--completion-len`` tokens a prompt; a batch
  row is one completion after its prompt (``--seq`` tokens); ``beta`` 0.0 by default, so no reference model (one as
  DPO's with ``--beta`` above 0 and a full fine-tune); a colocated vLLM takes ``--rollout-memory`` of each GPU
  (``vllm_gpu_memory_utilization``, 0.3 by default when vLLM is used), which training cannot use. TRL's own check:
  the generation batch (rows × GPUs, with one gradient-accumulation step) must hold whole groups of
  ``--generations``, at least 2.

The loss kernels (``--loss``) are a registry of their own: ``analysis/training/losses.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from inspector.analysis.training import losses
from inspector.analysis.training.losses import TRL, Head, LossKernel
from inspector.errors import UsageError

Stage = Literal["sft", "dpo", "grpo"]
STAGES: Final[tuple[Stage, ...]] = ("sft", "dpo", "grpo")
#: GRPOConfig's defaults
GENERATIONS: Final = 8
COMPLETION: Final = 512


@dataclass(frozen=True, slots=True)
class StageOptions:
    stage: Stage = "sft"
    loss: str | None = None  # a kernel of ``losses.KERNELS``; None: the stage's own (fused for dpo and grpo)
    generations: int = GENERATIONS
    completion: int = COMPLETION
    beta: float = 0.0  # grpo's KL weight: above 0, a reference model
    rollout_memory: float = 0.0  # grpo: a colocated vLLM's share of each GPU

    @property
    def kernel(self) -> str:
        """The loss kernel's name: the one given, else the stage's own."""
        return self.loss if self.loss is not None else (losses.SFT_DEFAULT if self.stage == "sft" else
                                                        losses.TRL_DEFAULT)

    @property
    def loss_kernel(self) -> LossKernel:
        return losses.KERNELS[self.kernel]

    @property
    def preference(self) -> bool:
        """A stage that may hold a reference model beside the policy (DPO, GRPO): its term is shown."""
        return self.stage != "sft"

    @property
    def grpo(self) -> bool:
        """GRPO's own options (generations, completion length, beta, rollout memory) apply."""
        return self.stage == "grpo"


def head_bytes(s: StageOptions, head: Head) -> int:
    """The loss over the vocabulary at its peak, by the stage's loss kernel."""
    return s.loss_kernel.peak_bytes(head)


def head_formula(s: StageOptions, head: Head) -> str:
    """``head_bytes`` in words."""
    return s.loss_kernel.formula(head)


def headline(s: StageOptions) -> tuple[str, str]:
    """(the stage before the method, the loss kernel after the rows) in the train table's first line."""
    stage = {"sft": "", "dpo": "DPO, ",
             "grpo": f"GRPO ({s.generations} completions of {s.completion:,} tokens a prompt), "}[s.stage]
    return stage, s.loss_kernel.headline


def reference_words(s: StageOptions, adapter: bool, bytes_: int) -> tuple[str, str]:
    """(why there is no reference model, or where the one there is comes from) and its source."""
    if bytes_:
        return "", f"{TRL} {s.stage.upper()}Trainer: a second copy of the model as loaded"
    why = ("SFT has no reference model" if s.stage == "sft" else
           "peft's base with the adapter disabled is the reference" if adapter else
           "beta 0: GRPO keeps no reference model")
    return f"none: {why}", TRL


def assumptions(s: StageOptions) -> list[str]:
    """What the stage and the loss kernel assume, in words."""
    out = [s.loss_kernel.assumption]
    if s.stage == "dpo":
        out.append(f"{TRL} DPOTrainer: chosen and rejected concatenated into one batch of twice the rows; the "
                   "reference forward under no_grad keeps only log-probabilities")
    elif s.stage == "grpo":
        out.append(f"{TRL} GRPOTrainer: {s.generations} completions a prompt, up to {s.completion:,} tokens each, "
                   f"one gradient-accumulation step; beta {s.beta:g}"
                   + (f"; a colocated vLLM holds {s.rollout_memory:.0%} of each GPU" if s.rollout_memory else
                      "; generation's own peak (the KV cache of the completions) is not counted"))
    return out


def check_stage(s: StageOptions, given: Sequence[str] = ()) -> None:
    """Each option with the stage it belongs to (``given``: the GRPO options named), in its range; TRL's own
    refusals where TRL refuses."""
    if s.stage not in STAGES:
        raise UsageError(f"⟨stage⟩: unknown {s.stage!r}", hint="use " + ", ".join(STAGES))
    if s.loss is not None and s.loss not in losses.KERNELS:
        raise UsageError(f"⟨loss⟩: unknown {s.loss!r}", hint="use " + ", ".join(losses.KERNELS))
    if s.stage != "grpo" and given:
        raise UsageError(f"{', '.join(given)}: {'options' if len(given) > 1 else 'an option'} of GRPO's only",
                         hint="add ⟨stage=grpo⟩")
    if s.stage in ("dpo", "grpo") and s.loss is not None and not s.loss_kernel.with_trl:
        raise UsageError(f"⟨stage={s.stage}⟩: {TRL}'s trainer always uses its fused LM head",
                         hint="drop ⟨loss⟩")
    if s.stage != "grpo":
        return
    if s.generations < 2:
        raise UsageError(f"⟨generations⟩ {s.generations}: GRPO needs at least 2 completions a prompt to compute the "
                         "advantages (TRL's GRPOConfig)")
    if not 1 <= s.completion <= 1 << 20:
        raise UsageError("⟨completion_len⟩ is 1 to 1,048,576 tokens")
    if not (0.0 <= s.beta < 1e6):
        raise UsageError(f"⟨beta⟩ {s.beta}: a KL weight of 0 or more")
    if not 0.0 <= s.rollout_memory < 1.0:
        raise UsageError(f"⟨rollout_memory⟩ {s.rollout_memory}: a share of each GPU, 0 to below 1")


#: the batch a GRPO step takes when none is given: TRL's GRPOConfig's own default per_device_train_batch_size (8),
#: which holds one group of its default num_generations (8); the rest of the stages take 1
GRPO_BATCH: Final = 8


def default_batch(s: StageOptions) -> int:
    """The rows a GPU takes a step where ``--batch`` is not given: the stage's trainer's own default (GRPO's agrees
    with its generations: the default 1 was refused against the default 8 generations)."""
    return GRPO_BATCH if s.stage == "grpo" else 1


def check_batch(s: StageOptions, batch: int, devices: int) -> None:
    """GRPO: TRL's GRPOConfig refuses a generation batch that does not hold whole groups of completions."""
    if s.stage == "grpo" and (batch * devices) % s.generations:
        raise UsageError(f"the generation batch ({batch} × {devices} GPU{'s' if devices > 1 else ''}) must be "
                         f"divisible by ⟨generations={s.generations}⟩ (TRL's GRPOConfig, one gradient-accumulation "
                         "step)", hint=f"⟨batch={s.generations}⟩, or fewer generations")


def rows(s: StageOptions, batch: int, seq: int) -> tuple[int, int]:
    """(sequences in the step, tokens each) for ``batch`` rows of ``seq`` tokens."""
    if s.stage == "dpo":
        return 2 * batch, seq
    if s.stage == "grpo":
        return batch, seq + s.completion
    return batch, seq


def rows_words(s: StageOptions, batch: int, seq: int) -> str:
    n, length = rows(s, batch, seq)
    if s.stage == "dpo":
        return f"{n} sequences (chosen and rejected of {batch}) × {length:,} tokens"
    if s.stage == "grpo":
        return f"{n} completions × ({seq:,} prompt + {s.completion:,} completion) tokens"
    return f"{n} × {length:,} tokens"


def has_reference(s: StageOptions, adapter: bool) -> bool:
    """A frozen reference model beside the policy: DPO, and GRPO with beta above 0, on a full fine-tune (with LoRA the
    base with its adapter disabled is the reference)."""
    return not adapter and (s.stage == "dpo" or (s.stage == "grpo" and s.beta > 0))


# --- sequence parallelism ----------------------------------------------------------------------------

#: where the sequence-parallel rules are read: DeepSpeed's ALST Ulysses (runtime/sequence_parallel/ulysses_sp.py,
#: UlyssesSPAttentionHF), which transformers and accelerate use for ``sp_backend="deepspeed"``
SP_SOURCE: Final = "DeepSpeed Ulysses (ALST UlyssesSPAttentionHF)"


def sp_refusal(sp: int, heads: int | None, kv_heads: int | None, devices: int) -> str | None:
    """Why DeepSpeed Ulysses refuses ``--sp``, in its words, or None: the attention heads must divide by the SP size,
    and the KV heads by it or it by them (they are replicated then); the SP groups tile the GPUs."""
    if sp == 1:
        return None
    if devices % sp:
        return (f"{devices} GPU{'s do' if devices > 1 else ' does'} not split into sequence-parallel groups of {sp}: "
                "give ⟨gpu⟩ a multiple of it")
    if heads is None:
        return "the config gives no attention head count, which Ulysses splits"
    if heads % sp:
        return f"Attention head count {heads} is not divisible by SP size {sp} ({SP_SOURCE})"
    kv = kv_heads if kv_heads is not None else heads
    if not (kv % sp == 0 or sp % kv == 0):
        return f"KV attention head count {kv} is not divisible by SP size {sp} or vice versa ({SP_SOURCE})"
    return None


def sp_tokens(length: int, sp: int) -> int:
    """Tokens of a sequence each GPU of an SP group holds outside attention (inside, its heads' share of all of
    them: the same elements); Ulysses shards the sequence evenly."""
    return -(-length // sp)


