"""What a serving engine sets aside beside the weights and the KV cache: one table per engine.

Pure arithmetic over a config and the headers' bytes; no I/O, no printing. Each term carries the
formula and the source it came from, so ``estimate --gpu`` can print them beside an engine's own log.

* **vLLM** (``--engine vllm``, the default for safetensors): the budget is the device's capacity ×
  ``gpu_memory_utilization``; the KV pool is what is left after the weights (with the rotary cos/sin
  cache vLLM builds beside them), the activation peak of its profiling run and the memory outside
  torch's allocator. The profile run is one forward pass over ``max_num_batched_tokens`` tokens and
  a sampler pass over ``max_num_seqs`` rows of logits; both defaults depend on the GPU as vLLM's
  ``EngineArgs.get_batch_defaults`` sets them for ``vllm serve``. CUDA graphs are captured after the
  pool is sized and are not subtracted (vLLM 0.19's default; its log says so).
* **llama.cpp** (``--engine llama.cpp``, the default for GGUF): the whole device; beside the weights
  and the KV cache, the output buffer (one sequence's logits) and the compute buffer its graph
  allocator reserves for one micro-batch (``n_ubatch`` 512), dominated by that micro-batch's logits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol

MIB: Final = 1024**2
GIB: Final = 1024**3


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    bytes: int  # the capacity CUDA reports as the device's total (what vLLM multiplies by its utilization)
    source: str


def _mib(value: float) -> int:
    return int(value * MIB)


_TORCH = "torch.cuda.get_device_properties(...).total_memory as printed in a published log"
#: named GPUs by the total CUDA reports (a driver or ECC setting moves it by ~0.1 %); the sticker
#: size (80 GB) is not what an engine can use.
GPUS: Final[Mapping[str, Gpu]] = {
    "H100": Gpu("H100-80GB", _mib(81_090), "79.19 GiB: vLLM 0.19's log on an H100-80GB (llm-d planner accuracy "
                                           "report, v0.19.0) and " + _TORCH + " (81,090 MiB)"),
    "H200": Gpu("H200", _mib(143_156), _TORCH + " (143,156 MiB)"),
    "H800": Gpu("H800", 84_943_110_144, "totalGlobalMem in DeepSeek's published profile-data device list"),
    "A100-80GB": Gpu("A100-80GB", _mib(81_251), "totalGlobalMem of an A100 80GB (108 SMs) in a published "
                                                "deviceQuery (81,251 MiB)"),
    "A100-40GB": Gpu("A100-40GB", _mib(40_536), "device properties of an A100-SXM4-40GB (40,536 MiB)"),
    "L40S": Gpu("L40S", _mib(45_589), _TORCH + " (45,589 MiB)"),
    "A10G": Gpu("A10G", _mib(22_587), _TORCH + " (22,587 MiB)"),
    "L4": Gpu("L4", int(22.034 * GIB), "22.034 GiB reported by torch on an L4 in published calibration logs"),
    "RTX4090": Gpu("RTX4090", _mib(24_563), _TORCH + " (24,563 MiB)"),
    "T4": Gpu("T4", _mib(15_102), _TORCH + " (15,095-15,109 MiB by driver; 15,102 MiB)"),
}
_ALIASES: Final = {"H100-80GB": "H100", "H100-SXM": "H100", "H100-PCIE": "H100", "H100-SXM5": "H100",
                   "A100": "A100-80GB", "A100-80G": "A100-80GB", "A100-40G": "A100-40GB",
                   "A100-SXM4-80GB": "A100-80GB", "A100-SXM4-40GB": "A100-40GB",
                   "4090": "RTX4090", "RTX-4090": "RTX4090", "GEFORCE-RTX-4090": "RTX4090"}
#: the longest text read as a GPU (the catalogue's names with a count fit in a few dozen characters)
_NAME_TEXT: Final = 48
_COUNT_FIRST: Final = re.compile(r"(\d{1,4})\s*[xX×*]\s*(.+)")
_COUNT_LAST: Final = re.compile(r"(.+?)\s*[xX×*]\s*(\d{1,4})")


def named_gpu(text: str) -> tuple[Gpu, int] | None:
    """A GPU by name, and how many: ``H100``, ``a100-40gb``, ``RTX 4090``, ``4090``, ``H100x2``, ``A100x8``,
    ``8xA100``, ``8 × H100`` → (the GPU, devices); None when the text names none (a size, say). The
    name alone is tried before a trailing count, so ``rtx4090`` is one RTX 4090, not 4,090 of an "rt"."""
    if len(text) > _NAME_TEXT:
        return None
    text = text.strip()
    gpu = _gpu_called(text)
    if gpu is not None:
        return gpu, 1
    for pattern, name_at, count_at in ((_COUNT_FIRST, 2, 1), (_COUNT_LAST, 1, 2)):
        m = pattern.fullmatch(text)
        if m is not None and (gpu := _gpu_called(m.group(name_at))) is not None:
            return gpu, int(m.group(count_at))
    return None


def _gpu_called(name: str) -> Gpu | None:
    """The catalogue's GPU of that name: any case, spaces or underscores for hyphens, or none at all
    (``RTX 4090``, ``rtx_4090``, ``RTX4090``), the aliases people write (``A100``, ``4090``, ``H100 SXM``)."""
    key = re.sub(r"[\s_]+", "-", name.strip().upper())
    for candidate in (key, key.replace("-", "")):
        found = GPUS.get(_ALIASES.get(candidate, candidate))
        if found is not None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class Term:
    """One figure an engine holds per device beside the KV cache, with how it was reached."""

    name: str
    bytes: int
    formula: str
    source: str


# --- vLLM ------------------------------------------------------------------------------------------

VLLM_VERSION: Final = "0.19"
VLLM_UTILIZATION: Final = 0.9  # vLLM's default gpu_memory_utilization
VLLM_BLOCK: Final = 16  # tokens per KV block (the default block size of its CUDA attention backends)
#: memory outside torch's allocator per device (CUDA context, cuBLAS/NCCL workspaces): vLLM 0.19 on
#: H100-80GB measured it at 0.24-0.27 GiB alone and 2.06-2.17 GiB per device at TP 2 and 4 (NCCL and
#: custom all-reduce buffers), llm-d planner accuracy report v0.19.0, "Non-torch constants" table
VLLM_NON_TORCH: Final = (int(0.27 * GIB), int(2.1 * GIB))
VLLM_NON_TORCH_SOURCE: Final = ("vLLM 0.19 on H100-80GB, measured by the llm-d planner accuracy report (v0.19.0): "
                                "mean 0.27 GiB at TP 1, 2.06-2.17 GiB per device at TP >= 2 (NCCL buffers)")
_SCHED: Final = "vLLM EngineArgs.get_batch_defaults (vllm serve): 8,192 tokens and 1,024 sequences on a GPU " \
                "of >= 70 GiB that is not an A100, else 2,048 and 256"


def vllm_batch_defaults(gpu_bytes: int, gpu_name: str | None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) as ``vllm serve`` picks them for this GPU."""
    big = gpu_bytes >= 70 * GIB and "a100" not in (gpu_name or "").lower()
    return (8192, 1024) if big else (2048, 256)


def vllm_terms(*, gpu_bytes: int, gpu_name: str | None, devices: int, hidden: int, inter: int, vocab: int | None,
               dtype_bytes: float, max_position: int | None, rotary_dim: int | None, samples: bool = True,
               pipeline: int = 1, experts_per_token: int = 0) -> tuple[Term, ...]:
    """The per-device terms vLLM's memory profile subtracts before its KV pool (weights apart);
    ``devices``: tensor-parallel ways; ``samples``: whether this pipeline stage runs the sampler
    (the last one does)."""
    tokens, seqs = vllm_batch_defaults(gpu_bytes, gpu_name)
    rows = min(seqs, tokens)
    terms = []
    if max_position and rotary_dim:
        terms.append(Term("rotary cache", int(max_position * rotary_dim * dtype_bytes),
                          f"max_position {max_position:,} × rotary dim {rotary_dim} × {dtype_bytes:g} B (cos and sin)",
                          "vLLM RotaryEmbedding.cos_sin_cache, held beside the weights (its 'weights' figure)"))
    width = math.ceil(inter / devices)
    if experts_per_token:  # fused_moe's caches: [tokens, k, 2 × width], [tokens · k, width], [tokens, k, hidden]
        forward = int(tokens * (experts_per_token * (3 * width + hidden) + 4 * hidden) * dtype_bytes)
        forward_formula = (f"{tokens:,} tokens × ({experts_per_token} experts × (3 × expert width {width:,} + "
                           f"hidden) + 4 × hidden {hidden:,}) × {dtype_bytes:g} B (fused_moe's intermediate caches)")
    else:
        forward = int(tokens * (3 * width + 4 * hidden) * dtype_bytes)
        forward_formula = (f"{tokens:,} tokens × (3 × MLP width {width:,} + 4 × hidden {hidden:,})"
                           f" × {dtype_bytes:g} B")
    if not samples:
        sampler, sampler_formula = 0, "not on this pipeline stage (the last stage samples)"
    elif vocab:
        sampler = int(rows * vocab * (dtype_bytes + 12) + tokens * hidden * dtype_bytes)
        sampler_formula = (f"{rows:,} rows × vocab {vocab:,} × ({dtype_bytes:g} B logits + 3 × 4 B float32 "
                           f"logits, probabilities, sampling noise) + {tokens:,} × hidden {hidden:,} × "
                           f"{dtype_bytes:g} B kept hidden states")
    else:
        sampler, sampler_formula = 0, "no vocabulary size in the config: sampler pass not counted"
    peak, formula = (sampler, "sampler pass: " + sampler_formula) if sampler >= forward else \
        (forward, "forward pass: " + forward_formula)
    terms.append(Term("activation peak", peak,
                      formula + f" (the larger of the forward pass, {forward / GIB:.2f} GiB, and the sampler pass, "
                                f"{sampler / GIB:.2f} GiB)",
                      f"vLLM's profile run (gpu_model_runner.profile_run) with max_num_batched_tokens {tokens:,} "
                      f"and max_num_seqs {seqs:,}: {_SCHED}"))
    if devices == 1 and pipeline > 1:
        terms.append(Term("non-torch memory", VLLM_NON_TORCH_PP, "constant per device at pipeline parallel >= 2",
                          "vLLM 0.19 on H100-80GB, llm-d planner accuracy report (v0.19.0): 0.07 GiB at PP 2 and 4"))
    else:
        terms.append(Term("non-torch memory", VLLM_NON_TORCH[devices > 1],
                          "constant per device" + (" (NCCL and all-reduce buffers at TP >= 2)" if devices > 1 else ""),
                          VLLM_NON_TORCH_SOURCE))
    terms.append(Term("CUDA graphs", 0, "captured after the KV pool is sized: not subtracted from it",
                      "vLLM 0.19 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS off); they take 0.5-1.9 GiB beyond "
                      "the utilization budget, inside the 1 - utilization headroom"))
    return tuple(terms)


def vllm_stage_layers(layers: int, stages: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (``get_pp_indices``): evenly, the remainder to
    the stages before the last (which holds the output layer)."""
    sizes = [layers // stages] * stages
    for i in range(2, layers % stages + 2):
        sizes[-i] += 1
    return sizes


#: non-torch memory per device at pipeline parallel >= 2 (TP 1): 0.07 GiB, llm-d's PP 2 and PP 4 rows
VLLM_NON_TORCH_PP: Final = int(0.07 * GIB)


def vllm_tokens(pool: int, per_token: int) -> int:
    """Tokens a KV pool holds, whole blocks of ``VLLM_BLOCK`` tokens (vLLM's num_gpu_blocks × block size)."""
    return (pool // (per_token * VLLM_BLOCK)) * VLLM_BLOCK if per_token > 0 and pool > 0 else 0


# --- llama.cpp -------------------------------------------------------------------------------------

LLAMA_CPP_UBATCH: Final = 512  # llama.cpp's default n_ubatch
LLAMA_CPP_PAD: Final = 256  # llama.cpp pads its KV cache to whole multiples of this many cells
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


# --- the engines as strategies ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelShape:
    """The figures of a model an engine's terms read (``fit.model_shape`` takes them from the config)."""

    hidden: int
    inter: int  # the MLP's width: a dense layer's, or one expert's
    vocab: int | None
    dtype_bytes: float
    max_position: int | None
    rotary_dim: int | None
    experts_per_token: int = 0  # a mixture of experts: the experts a token visits (0: dense)


class Engine(Protocol):
    """What the fit asks of a serving engine (``fit.fit``); one instance per engine in ``ENGINES``."""

    @property
    def name(self) -> str: ...

    @property
    def pool(self) -> bool:
        """Whether it sizes a KV pool from what is left of its usable memory (vLLM), rather than the
        cache for the asked context (llama.cpp)."""
        ...

    @property
    def host_input(self) -> bool:
        """Whether the input embedding stays in host memory."""
        ...

    @property
    def layer_split(self) -> bool:
        """Whether several devices split the layers between them (llama.cpp's ``--split-mode layer``)."""
        ...

    def cells(self, context: int, window: int | None) -> int:
        """Cache cells a layer keeps at ``context`` (``window``: a sliding layer's)."""
        ...

    def window_rule(self, context: int, window: int) -> str:
        """How a sliding layer's cells are counted, said beside the figure ("" when plainly the window)."""
        ...

    def usable(self, budget: int, utilization: float | None) -> tuple[int, float | None]:
        """The bytes of a device it may take, and the utilization that gave them (None: the whole device)."""
        ...

    def terms(self, shape: ModelShape, *, gpu_bytes: int, gpu_name: str | None, devices: int, samples: bool,
              pipeline: int) -> tuple[Term, ...]:
        """Its per-device terms beside the weights and the KV cache."""
        ...


@dataclass(frozen=True, slots=True)
class Vllm:
    name: str = "vllm"
    pool: bool = True
    host_input: bool = False
    layer_split: bool = False

    def cells(self, context: int, window: int | None) -> int:
        return min(context, window) if window else context

    def window_rule(self, context: int, window: int) -> str:
        return ""

    def usable(self, budget: int, utilization: float | None) -> tuple[int, float | None]:
        u = utilization or VLLM_UTILIZATION
        return int(budget * u), u

    def terms(self, shape: ModelShape, *, gpu_bytes: int, gpu_name: str | None, devices: int, samples: bool,
              pipeline: int) -> tuple[Term, ...]:
        return vllm_terms(gpu_bytes=gpu_bytes, gpu_name=gpu_name, devices=devices, hidden=shape.hidden,
                          inter=shape.inter, vocab=shape.vocab, dtype_bytes=shape.dtype_bytes,
                          max_position=shape.max_position, rotary_dim=shape.rotary_dim, samples=samples,
                          pipeline=pipeline, experts_per_token=shape.experts_per_token)


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

    def cells(self, context: int, window: int | None) -> int:
        full = -(-context // LLAMA_CPP_PAD) * LLAMA_CPP_PAD
        if not window:
            return full
        return min(full, -(-(window + LLAMA_CPP_UBATCH) // LLAMA_CPP_PAD) * LLAMA_CPP_PAD)

    def window_rule(self, context: int, window: int) -> str:
        return (f"; as llama.cpp allocates them (--swa-full off, its default): window + one "
                f"{LLAMA_CPP_UBATCH}-token micro-batch, padded to {LLAMA_CPP_PAD}: {self.cells(context, window):,} "
                "cells")

    def usable(self, budget: int, utilization: float | None) -> tuple[int, float | None]:
        return budget, None

    def terms(self, shape: ModelShape, *, gpu_bytes: int, gpu_name: str | None, devices: int, samples: bool,
              pipeline: int) -> tuple[Term, ...]:
        inter = shape.inter * max(shape.experts_per_token, 1)
        return llama_cpp_terms(hidden=shape.hidden, inter=inter, vocab=shape.vocab, samples=samples)


VLLM: Final = Vllm()
LLAMA_CPP: Final = LlamaCpp()
#: the engines by the name ``--engine`` takes
ENGINES: Final[Mapping[str, Engine]] = {"vllm": VLLM, "llama.cpp": LLAMA_CPP}
