"""llama.cpp as a strategy (``--engine llama.cpp``, the default for GGUF): the whole device; beside the weights
and the KV cache, the output buffer (one sequence's logits) and the compute buffer its graph
allocator reserves for one micro-batch (``n_ubatch`` 512), dominated by that micro-batch's logits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from inspector.analysis.serving.engines.base import ModelShape, Term, even_stages

LLAMA_CPP_UBATCH: Final = 512  # llama.cpp's default n_ubatch
LLAMA_CPP_PAD: Final = 256  # llama.cpp pads its KV cache to whole multiples of this many cells
#: its start-up rules, by the check ``plan.CHECKS`` runs
LLAMA_CPP_RULES: Final[Mapping[str, tuple[str, str]]] = {
    "layer_split": ("at most one device per layer (--split-mode layer)",
                    "llama.cpp src/llama-model.cpp (layers assigned to devices by --tensor-split)"),
}
LLAMA_CPP_RECEIPT: Final = "fixtures/llama.cpp/compute-buffers.log (llama.cpp as vendored by llama-cpp-python 0.3.36)"


def llama_cpp_terms(*, hidden: int, inter: int, vocab: int | None, samples: bool = True) -> tuple[Term, ...]:
    """The output and compute buffers llama.cpp reserves (flash attention on, its ``auto`` on GPUs);
    ``samples``: this device computes the logits (the last of a layer split)."""
    ub = LLAMA_CPP_UBATCH
    if samples and not vocab:
        return (Term("output buffer", 0, "unknown: the model gives no vocabulary size", LLAMA_CPP_RECEIPT),)
    ffn = ub * 3 * inter * 4
    if not samples:
        return (Term("compute buffer", ffn, f"{ub} × 3 × n_ff {inter:,} × 4 B: one micro-batch's feed-forward "
                                            "activations (a lower bound; the logits are the last device's)",
                     LLAMA_CPP_RECEIPT),)
    assert vocab
    logits = ub * (vocab + 2 * hidden) * 4
    compute, formula = (logits, f"{ub} × (vocab {vocab:,} + 2 × n_embd {hidden:,}) × 4 B: one micro-batch's "
                                f"float32 logits") if logits >= ffn else \
        (ffn, f"{ub} × 3 × n_ff {inter:,} × 4 B: one micro-batch's feed-forward activations (a lower bound: "
              "the graph allocator may hold more)")
    return (Term("output buffer", vocab * 4, f"one sequence's logits: vocab {vocab:,} × 4 B", LLAMA_CPP_RECEIPT),
            Term("compute buffer", compute, formula + f"; n_ubatch {ub} (llama.cpp's default)", LLAMA_CPP_RECEIPT))


@dataclass(frozen=True, slots=True)
class LlamaCpp:
    """llama.cpp's defaults: the KV cache padded to ``LLAMA_CPP_PAD`` cells; with ``--swa-full`` off, a
    sliding layer keeps the window for each sequence plus one micro-batch (``-ub``,
    ``LLAMA_CPP_UBATCH``) of cells, padded (llama-kv-cache-iswa.cpp; fixtures/llama.cpp/ holds the
    sizes llama.cpp printed)."""

    name: str = "llama.cpp"
    pool: bool = False
    host_input: bool = True
    layer_split: bool = True
    fraction: str | None = None
    page: int = LLAMA_CPP_PAD

    @property
    def rules(self) -> Mapping[str, tuple[str, str]]:
        return LLAMA_CPP_RULES

    def fraction_words(self, fraction: float) -> tuple[str, str]:
        return "", "the whole device"

    def pool_tokens(self, pool: int, per_token: int) -> int:
        """None sized: llama.cpp allocates the cache for the asked context (``pool`` is False)."""
        return 0

    def stage_layers(self, layers: int, stages: int) -> list[int]:
        """Layers per device as the fit has split them for every engine (vLLM's even split, the remainder before
        the last); llama.cpp's own assignment by ``--tensor-split`` proportions is not modelled apart."""
        return even_stages(layers, stages)

    def cells(self, context: int, window: int | None) -> int:
        full = -(-context // LLAMA_CPP_PAD) * LLAMA_CPP_PAD
        if not window:
            return full
        return min(full, -(-(window + LLAMA_CPP_UBATCH) // LLAMA_CPP_PAD) * LLAMA_CPP_PAD)

    def window_rule(self, context: int, window: int) -> str:
        return (f"; as llama.cpp allocates them (--swa-full off, its default): window + one "
                f"{LLAMA_CPP_UBATCH}-token micro-batch, padded to {LLAMA_CPP_PAD}: {self.cells(context, window):,} "
                "cells")

    def usable(self, budget: int, utilization: float | None, *, devices: int = 1,
               pipeline: int = 1) -> tuple[int, float | None]:
        return budget, None

    def terms(self, shape: ModelShape, *, gpu_bytes: int, gpu_name: str | None, devices: int, samples: bool,
              pipeline: int) -> tuple[Term, ...]:
        inter = shape.inter * max(shape.experts_per_token, 1)
        return llama_cpp_terms(hidden=shape.hidden, inter=inter, vocab=shape.vocab, samples=samples)


LLAMA_CPP: Final = LlamaCpp()
