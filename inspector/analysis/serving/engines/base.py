"""What every serving engine is measured against: the GPUs by the capacity CUDA reports, one term an engine
holds beside the weights and the KV cache, the model's figures its terms read, and the protocol an engine
implements (``Engine``). No engine's rules here: each lives in its own module."""

from __future__ import annotations

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
    gpu = gpu_called(text)
    if gpu is not None:
        return gpu, 1
    for pattern, name_at, count_at in ((_COUNT_FIRST, 2, 1), (_COUNT_LAST, 1, 2)):
        m = pattern.fullmatch(text)
        if m is not None and (gpu := gpu_called(m.group(name_at))) is not None:
            return gpu, int(m.group(count_at))
    return None


def closest_gpus(text: str, most: int = 3) -> list[str]:
    """The catalogue's names (and the aliases people write) nearest ``text``, for "unknown GPU: did you mean"."""
    # deferred: 2 ms at import (difflib)
    import difflib

    key = re.sub(r"[\s_]+", "-", text.strip().upper())[:_NAME_TEXT]
    names = {**{n: n for n in GPUS}, **_ALIASES}
    found = difflib.get_close_matches(key, list(names), n=most * 2, cutoff=0.5)
    return list(dict.fromkeys(names[f] for f in found))[:most]


def gpu_called(name: str) -> Gpu | None:
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


def even_stages(layers: int, stages: int) -> list[int]:
    """Layers per pipeline stage, evenly, the remainder to the stages before the last (which holds the output
    layer): vLLM's ``get_pp_indices``, which SGLang's ``get_pp_indices`` copies."""
    sizes = [layers // stages] * stages
    for i in range(2, layers % stages + 2):
        sizes[-i] += 1
    return sizes


def rotary_term(max_position: int | None, rotary_dim: int | None, dtype_bytes: float, source: str) -> list[Term]:
    """The rotary cos/sin cache an engine builds beside the weights (none without a rotary embedding)."""
    if not (max_position and rotary_dim):
        return []
    return [Term("rotary cache", int(max_position * rotary_dim * dtype_bytes),
                 f"max_position {max_position:,} × rotary dim {rotary_dim} × {dtype_bytes:g} B (cos and sin)", source)]


@dataclass(frozen=True, slots=True)
class PagedByWindow:
    """For an engine that keeps the KV cache in a pool on the device, paging sliding layers apart: a sliding layer
    keeps its window, the rest the context; the inputs stay on the device and the layers split between pipeline
    stages evenly (vLLM's and SGLang's ``get_pp_indices``), never between devices by layer. Made once with its
    name, the flag its memory fraction is set by, its page in tokens and its start-up rules."""

    name: str
    fraction: str | None
    page: int
    rules: Mapping[str, tuple[str, str]]

    @property
    def pool(self) -> bool:
        return True

    @property
    def host_input(self) -> bool:
        return False

    @property
    def layer_split(self) -> bool:
        return False

    def cells(self, context: int, window: int | None) -> int:
        return min(context, window) if window else context

    def window_rule(self, context: int, window: int) -> str:
        return ""

    def stage_layers(self, layers: int, stages: int) -> list[int]:
        return even_stages(layers, stages)


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

    @property
    def fraction(self) -> str | None:
        """The name of its setting for the share of a device it takes (vLLM's ``gpu_memory_utilization``), None
        where it takes the whole device."""
        ...

    @property
    def page(self) -> int:
        """Tokens a sequence's cache is allocated in (vLLM's block, SGLang's page, llama.cpp's padding)."""
        ...

    @property
    def rules(self) -> Mapping[str, tuple[str, str]]:
        """Its start-up checks, by the key of the check ``plan.CHECKS`` runs: (what it demands, where its source
        says so)."""
        ...

    def usable(self, budget: int, utilization: float | None, *, devices: int = 1,
               pipeline: int = 1) -> tuple[int, float | None]:
        """The bytes of a device it may take, and the fraction that gave them (None: the whole device);
        ``devices``: tensor-parallel ways, ``pipeline``: stages (where its default fraction depends on them)."""
        ...

    def fraction_words(self, fraction: float) -> tuple[str, str]:
        """Its share of a device in words: (beside the budget in a title, how the usable bytes are reached)."""
        ...

    def pool_tokens(self, pool: int, per_token: int) -> int:
        """Tokens a KV pool of ``pool`` bytes holds, rounded as the engine allocates them."""
        ...

    def stage_layers(self, layers: int, stages: int) -> list[int]:
        """Layers per pipeline stage as it splits them."""
        ...

    def terms(self, shape: ModelShape, *, gpu_bytes: int, gpu_name: str | None, devices: int, samples: bool,
              pipeline: int) -> tuple[Term, ...]:
        """Its per-device terms beside the weights and the KV cache."""
        ...


