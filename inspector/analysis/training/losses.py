"""The loss kernels ``train`` sizes the output layer's loss by (``--loss``): one ``LossKernel`` a kernel (its bytes
at the loss's peak, that figure in words, and what counting it so assumes), found by name in ``KERNELS``;
``register`` adds one from a module of its own, and ``--loss``, its help, its shell completion and the JSON Schema
then take it.

* ``standard`` is transformers' (``ForCausalLMLoss``: the logits, their float32 upcast and log-softmax);
* ``chunked`` is torchtune's ``CEWithChunkedOutputLoss`` (the 16-bit logits whole, as the model returns them in 8
  chunks, each chunk upcast and log-softmaxed in turn): uncompiled, every chunk's float32 log-softmax is kept for the
  backward, one chunk's upcast at a time; with ``--compile`` (torchtune's ``compile_loss`` compiles the chunk's upcast
  and cross-entropy) inductor's partitioner keeps each chunk's 16-bit logits and two float32 numbers a token (the
  row's maximum and the log of its sum of exponents), and the backward makes one chunk's 16-bit gradient at a time;
* ``fused`` is TRL 1.16's fused LM head (``add_fused_lm_head``, ``kernels/chunked_logprob.py``), which DPO and GRPO
  always use: the head projected in tiles of at most 4,096 tokens × 32,768 vocabulary entries in the compute dtype,
  online log-sum-exp statistics per token, and in the backward a float32 gradient of the hidden states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from inspector.strategies import Registry

TRL: Final = "TRL 1.16"
#: torchtune's CEWithChunkedOutputLoss default (modules/loss/ce_chunked_output_loss.py, torchtune 0.6.1)
CHUNKS: Final = 8
#: the fused head's tile (trl/kernels/chunked_logprob.py TOKEN_CHUNK_SIZE; trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE)
TILE_TOKENS: Final = 4096
TILE_VOCAB: Final = 32768
#: float32 per-token vectors the fused head keeps or builds (running max, sum of exponents and the other statistics,
#: the target logit, log-sum-exp, the log-probabilities)
TOKEN_VECTORS: Final = 9


@dataclass(frozen=True, slots=True)
class Head:
    """The output layer's loss to size: the ``tokens`` of the step on one GPU, the vocabulary, the hidden width, the
    compute dtype's bytes (``half``: 2, or 4 in float32), whether the loss is compiled (``--compile``) and the rows
    in words (``rows``: "4 × 2,048 tokens")."""

    tokens: int
    vocab: int
    hidden: int
    half: int
    compiled: bool = False
    rows: str = ""


@dataclass(frozen=True, slots=True)
class LossKernel:
    """One loss kernel: its name (``--loss``) and what it is in a few words (``--help``), its bytes at the loss's
    peak and that figure in words, what the train table's first line adds after the rows, what counting it so
    assumes, and whether TRL's preference trainers (DPO, GRPO), which always run their own fused head, may be said to
    run it."""

    name: str
    described: str
    peak_bytes: Callable[[Head], int]
    formula: Callable[[Head], str]
    headline: str
    assumption: str
    with_trl: bool = True


def _standard_bytes(h: Head) -> int:
    return h.tokens * h.vocab * (8 if h.half == 4 else 10)


def _standard_formula(h: Head) -> str:
    per = "4 B fp32 logits + 4 B log-probabilities" if h.half == 4 else \
        "2 B logits + 4 B their fp32 upcast + 4 B log-probabilities"
    return (f"{h.rows} × vocabulary {h.vocab:,} × ({per}), the peak inside the loss; kept for the backward: the "
            f"log-probabilities, {h.tokens * h.vocab * 4 / 2**30:.2f} GiB (4 B a logit: cross-entropy saves its "
            "log-softmax output; the logits and their upcast are freed)")


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


def _chunked_formula(h: Head) -> str:
    if h.compiled:
        return (f"torchtune's chunked cross-entropy, compiled (its compile_loss): {h.rows} × vocabulary {h.vocab:,} × "
                f"{h.half} B logits (kept: inductor's partitioner saves the 16-bit chunks, not their float32 "
                f"log-softmax) + 8 B a token (two float32 row statistics: maximum, log of the sum of exponents) + "
                f"one chunk of {CHUNKS}'s {h.half} B gradient in the backward")
    return (f"torchtune's chunked cross-entropy: {h.rows} × vocabulary {h.vocab:,} × ({h.half} B logits + 4 B "
            f"log-probabilities) + one chunk of {CHUNKS}'s fp32 upcast")


def _fused_bytes(h: Head) -> int:
    """TRL 1.16's fused LM head at its peak (the backward): one tile of the projection in the compute dtype, the
    float32 gradient of the hidden states it accumulates, and its per-token float32 vectors."""
    return (min(h.tokens, TILE_TOKENS) * min(h.vocab, TILE_VOCAB) * h.half + h.tokens * h.hidden * 4
            + h.tokens * TOKEN_VECTORS * 4)


def _fused_formula(h: Head) -> str:
    return (f"{TRL}'s fused LM head: a tile of min({h.tokens:,}, {TILE_TOKENS:,}) tokens × min({h.vocab:,}, "
            f"{TILE_VOCAB:,}) × {h.half} B + the hidden states' fp32 gradient {h.tokens:,} × {h.hidden:,} × 4 B + "
            f"{TOKEN_VECTORS} fp32 vectors a token")


def _chunked_bytes(h: Head) -> int:
    return chunked_head_bytes(h.tokens, h.vocab, h.half, h.compiled)


_BUILT_IN: Final = (
    LossKernel("standard", "transformers' loss: the logits whole", _standard_bytes, _standard_formula, "",
               "the logits as transformers' loss holds them; chunked or fused cross-entropy (torchtune's, Liger, "
               "Unsloth) keeps a fraction", with_trl=False),
    LossKernel("chunked", "torchtune's chunked cross-entropy", _chunked_bytes, _chunked_formula,
               ", chunked cross-entropy", "the loss as torchtune's chunked cross-entropy computes it, uncompiled"),
    LossKernel("fused", "TRL's fused LM head; dpo and grpo use it", _fused_bytes, _fused_formula, ", fused LM head",
               f"the loss through {TRL}'s fused LM head (no batch × sequence × vocabulary logits)"),
)
#: THE loss-kernel table, by the name ``--loss`` takes
KERNELS: Final[Registry[LossKernel]] = Registry(_BUILT_IN)
register = KERNELS.register
unregister = KERNELS.unregister
names = KERNELS.names
#: the kernel a stage runs when ``--loss`` is not given: transformers' own for SFT, TRL's fused head for DPO and GRPO
SFT_DEFAULT: Final = "standard"
TRL_DEFAULT: Final = "fused"

