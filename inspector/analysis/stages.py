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

Loss kernels: ``standard`` is transformers' (``ForCausalLMLoss``: the logits, their float32 upcast and
log-softmax); ``chunked`` is torchtune's ``CEWithChunkedOutputLoss`` (the 16-bit logits whole, as the model returns
them in 8 chunks, each chunk upcast and log-softmaxed in turn): uncompiled, every chunk's float32 log-softmax is kept
for the backward, one chunk's upcast at a time; with ``--compile`` (torchtune's ``compile_loss`` compiles the chunk's
upcast and cross-entropy) inductor's partitioner keeps each chunk's 16-bit logits and two float32 numbers a token
(the row's maximum and the log of its sum of exponents), and the backward makes one chunk's 16-bit gradient at a
time; ``fused`` is TRL 1.16's fused LM head (``add_fused_lm_head``, ``kernels/chunked_logprob.py``), which DPO
and GRPO always use: the head projected in tiles of at most 4,096 tokens × 32,768 vocabulary entries in the compute
dtype, online log-sum-exp statistics per token, and in the backward a float32 gradient of the hidden states.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from inspector.errors import UsageError

Stage = Literal["sft", "dpo", "grpo"]
STAGES: Final[tuple[Stage, ...]] = ("sft", "dpo", "grpo")
Loss = Literal["standard", "chunked", "fused"]
LOSSES: Final[tuple[Loss, ...]] = ("standard", "chunked", "fused")
#: torchtune's CEWithChunkedOutputLoss default (modules/loss/ce_chunked_output_loss.py, torchtune 0.6.1)
CHUNKS: Final = 8
TRL: Final = "TRL 1.16"
#: GRPOConfig's defaults
GENERATIONS: Final = 8
COMPLETION: Final = 512
#: the fused head's tile (trl/kernels/chunked_logprob.py TOKEN_CHUNK_SIZE; trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE)
TILE_TOKENS: Final = 4096
TILE_VOCAB: Final = 32768
#: float32 per-token vectors the fused head keeps or builds (running max, sum of exponents and the other statistics,
#: the target logit, log-sum-exp, the log-probabilities)
TOKEN_VECTORS: Final = 9


@dataclass(frozen=True, slots=True)
class StageOptions:
    stage: Stage = "sft"
    loss: Loss | None = None  # None: the stage's own (fused for dpo and grpo, standard for sft)
    generations: int = GENERATIONS
    completion: int = COMPLETION
    beta: float = 0.0  # grpo's KL weight: above 0, a reference model
    rollout_memory: float = 0.0  # grpo: a colocated vLLM's share of each GPU

    @property
    def kernel(self) -> Loss:
        return self.loss if self.loss is not None else ("standard" if self.stage == "sft" else "fused")

    @property
    def preference(self) -> bool:
        """A stage that may hold a reference model beside the policy (DPO, GRPO): its term is shown."""
        return self.stage != "sft"

    @property
    def grpo(self) -> bool:
        """GRPO's own options (generations, completion length, beta, rollout memory) apply."""
        return self.stage == "grpo"


def head_bytes(s: StageOptions, tokens: int, vocab: int, hidden: int, half: int, compiled: bool = False) -> int:
    """The loss over the vocabulary at its peak, by the kernel: transformers' (the 16-bit logits, their float32
    upcast and log-softmax: 10 B a logit; 8 in float32), torchtune's chunked (``compiled``: as its compile_loss
    compiles it) or TRL's fused."""
    if s.kernel == "fused":
        return fused_head_bytes(tokens, vocab, hidden, half)
    if s.kernel == "chunked":
        return chunked_head_bytes(tokens, vocab, half, compiled)
    return tokens * vocab * (8 if half == 4 else 10)


def head_formula(s: StageOptions, words: str, tokens: int, vocab: int, hidden: int, half: int,
                 compiled: bool = False) -> str:
    """``head_bytes`` in words, for ``words`` (the rows as the stage counts them)."""
    if s.kernel == "fused":
        return (f"{TRL}'s fused LM head: a tile of min({tokens:,}, 4,096) tokens × min({vocab:,}, 32,768) × {half} B "
                f"+ the hidden states' fp32 gradient {tokens:,} × {hidden:,} × 4 B + 9 fp32 vectors a token")
    if s.kernel == "chunked" and compiled:
        return (f"torchtune's chunked cross-entropy, compiled (its compile_loss): {words} × vocabulary {vocab:,} × "
                f"{half} B logits (kept: inductor's partitioner saves the 16-bit chunks, not their float32 "
                f"log-softmax) + 8 B a token (two float32 row statistics: maximum, log of the sum of exponents) + "
                f"one chunk of {CHUNKS}'s {half} B gradient in the backward")
    if s.kernel == "chunked":
        return (f"torchtune's chunked cross-entropy: {words} × vocabulary {vocab:,} × ({half} B logits + 4 B "
                f"log-probabilities) + one chunk of {CHUNKS}'s fp32 upcast")
    per = "4 B fp32 logits + 4 B log-probabilities" if half == 4 else \
        "2 B logits + 4 B their fp32 upcast + 4 B log-probabilities"
    return (f"{words} × vocabulary {vocab:,} × ({per}), the peak inside the loss; kept for the backward: the "
            f"log-probabilities, {tokens * vocab * 4 / 2**30:.2f} GiB (4 B a logit: cross-entropy saves its "
            "log-softmax output; the logits and their upcast are freed)")


def headline(s: StageOptions) -> tuple[str, str]:
    """(the stage before the method, the loss kernel after the rows) in the train table's first line."""
    stage = {"sft": "", "dpo": "DPO, ",
             "grpo": f"GRPO ({s.generations} completions of {s.completion:,} tokens a prompt), "}[s.stage]
    return stage, {"standard": "", "chunked": ", chunked cross-entropy", "fused": ", fused LM head"}[s.kernel]


def reference_words(s: StageOptions, method: str, bytes_: int) -> tuple[str, str]:
    """(why there is no reference model, or where the one there is comes from) and its source."""
    if bytes_:
        return "", f"{TRL} {s.stage.upper()}Trainer: a second copy of the model as loaded"
    why = ("SFT has no reference model" if s.stage == "sft" else
           "peft's base with the adapter disabled is the reference" if method != "full" else
           "beta 0: GRPO keeps no reference model")
    return f"none: {why}", TRL


def assumptions(s: StageOptions) -> list[str]:
    """What the stage and the loss kernel assume, in words."""
    out = [{"standard": "the logits as transformers' loss holds them; chunked or fused cross-entropy (torchtune's, "
                        "Liger, Unsloth) keeps a fraction",
            "chunked": "the loss as torchtune's chunked cross-entropy computes it, uncompiled",
            "fused": f"the loss through {TRL}'s fused LM head (no batch × sequence × vocabulary logits)"}[s.kernel]]
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
    if s.loss is not None and s.loss not in LOSSES:
        raise UsageError(f"⟨loss⟩: unknown {s.loss!r}", hint="use " + ", ".join(LOSSES))
    if s.stage != "grpo" and given:
        raise UsageError(f"{', '.join(given)}: {'options' if len(given) > 1 else 'an option'} of GRPO's only",
                         hint="add ⟨stage=grpo⟩")
    if s.stage in ("dpo", "grpo") and s.loss == "standard":
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


def has_reference(s: StageOptions, method: str) -> bool:
    """A frozen reference model beside the policy: DPO, and GRPO with beta above 0, on a full fine-tune (with LoRA the
    base with its adapter disabled is the reference)."""
    return method == "full" and (s.stage == "dpo" or (s.stage == "grpo" and s.beta > 0))


def fused_head_bytes(tokens: int, vocab: int, hidden: int, half: int) -> int:
    """TRL 1.16's fused LM head at its peak (the backward): one tile of the projection in the compute dtype, the
    float32 gradient of the hidden states it accumulates, and its per-token float32 vectors."""
    return min(tokens, TILE_TOKENS) * min(vocab, TILE_VOCAB) * half + tokens * hidden * 4 + tokens * TOKEN_VECTORS * 4


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


def chunked_head_bytes(tokens: int, vocab: int, half: int, compiled: bool = False) -> int:
    """torchtune's chunked cross-entropy. Uncompiled: the 16-bit logits whole, every chunk's float32 log-softmax
    (kept for the backward: the whole vocabulary's in the end), and one chunk's float32 upcast at a time. Compiled
    (torchtune's compile_loss compiles each chunk's upcast and cross-entropy): what inductor's partitioner saves,
    measured (tests/test_compile.py) — the chunk's 16-bit logits and two float32 numbers a token (the decomposed
    log-softmax's row maximum and log of the sum of exponents); the backward
    makes one chunk's 16-bit gradient at a time."""
    chunk = -(-tokens // CHUNKS) * vocab
    if compiled:
        return tokens * vocab * half + tokens * 8 + chunk * half
    return tokens * vocab * (half + 4) + chunk * 4
