"""Will it fit? Weights + KV cache + runtime overhead against a GPU budget, from the headers.

Pure arithmetic over an ``Estimate``'s ingredients: no I/O, no printing.

* **weights**: the bytes the headers hold (every tensor, scales included), or with a what-if dtype
  the logical parameters at that width. Every expert of a mixture of experts is resident.
* **KV cache** at a context and batch: the estimate's exact per-layer rule (GQA, MLA, sliding
  windows, linear-attention layers), in the KV dtype.
* **overhead**, per device, stated and settable (``--overhead``): the engine's own terms
  (``engines.py``: vLLM's activation peak, non-torch memory and rotary cache; llama.cpp's compute
  and output buffers), each with its formula and source. vLLM also takes only
  ``gpu_memory_utilization`` of the device: the fit is against that usable share.
* **tensor parallel over N devices** (as vLLM and TGI shard a model): linear weights, embeddings and
  the output layer are split N ways; norms, biases of replicated layers and the MoE router are
  replicated on every device and named; the KV cache is split by KV heads (a device holds at least
  one: with fewer KV heads than devices they are replicated), and an MLA latent cache, which has no
  heads to split, is replicated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from inspector.analysis.engines import GPUS, Term, named_gpu
from inspector.errors import UsageError
from inspector.model import Role

GIB: Final = 1024**3
#: budgets the one-line summary of ``inspect MODEL`` tries, in GiB (common GPU memory sizes)
COMMON_BUDGETS_GIB: Final = (16, 24, 48, 80, 141)
SUMMARY_CONTEXT: Final = 8192

_UNITS: Final = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
                 "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30,
                 "t": 2**40}
_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*(?:[x×*]\s*(\d+))?\s*$")
_COUNT: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


@dataclass(frozen=True, slots=True)
class Budget:
    per_device: int
    devices: int
    #: the named GPU (``--gpu H100``), whose capacity is ``per_device``
    gpu: str | None = None


def parse_budget(text: str, option: str = "--gpu") -> Budget:
    """``24GiB``, ``80GiBx2``, ``141GiBx8``, ``16GB`` (GB decimal, GiB binary; a bare ``G`` is GiB), or
    a named GPU: ``H100``, ``A100-40GB``, ``L4x2`` (its capacity as CUDA reports it, ``engines.GPUS``)."""
    named = named_gpu(text) if option == "--gpu" else None
    if named is not None:
        gpu, devices = named
        if not 1 <= devices <= 4096:
            raise UsageError(f"{option}: {text!r} is not 1 to 4,096 devices")
        return Budget(gpu.bytes, devices, gpu.name)
    m = _SIZE.match(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise UsageError(f"{option}: cannot read {text!r} as a memory size or a GPU name",
                         hint="for example 24GiB, 80GiBx2, 16GB, or a GPU: " + ", ".join(GPUS))
    if not unit:  # "24" is 24 GiB to one reader and 24 bytes to another: say which
        raise UsageError(f"{option}: {text!r} has no unit",
                         hint=f"write it with one: {m.group(1)}GiB (binary), {m.group(1)}GB (decimal) or "
                              f"{m.group(1)}B (bytes)")
    devices = int(m.group(3) or 1)
    per_device = int(float(m.group(1)) * _UNITS[unit])
    if per_device <= 0 or not 1 <= devices <= 4096:
        raise UsageError(f"{option}: {text!r} is not a positive size on 1 to 4,096 devices")
    return Budget(per_device, devices)


def parse_count(text: str, option: str) -> int:
    """``8192``, ``8k`` (8,192), ``128k`` (131,072), ``1M`` (1,048,576): k and M are binary, as
    context lengths are quoted."""
    m = _COUNT.match(text)
    if m is None:
        raise UsageError(f"{option}: cannot read {text!r} as a number", hint="for example 8192, 8k, 128k, 1M")
    value = int(float(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2}[m.group(2).lower()])
    if value < 1:
        raise UsageError(f"{option} must be positive")
    return value


@dataclass(frozen=True, slots=True)
class Fit:
    budget_bytes: int  # per device
    devices: int
    batch: int
    context: int
    weights_bytes: int  # per device
    weights_bytes_all: int
    replicated_bytes: int  # of weights_bytes: on every device
    replicated: tuple[str, ...]  # what is replicated, by role
    kv_bytes_per_token: int  # per device
    kv_bytes: int  # per device, at context and batch
    kv_share: str  # how the KV cache is divided
    overhead_bytes: int  # per device: the sum of ``terms``
    overhead_formula: str
    total_bytes: int  # per device: weights + KV + overhead
    fits: bool | None  # None: unknown (``unknown`` says which figure is missing)
    max_context: int | None  # the largest context that fits at this batch (0: not even one token)
    max_context_capped: bool  # the model's own limit is the cap
    max_batch: int | None  # the largest batch that fits at this context
    model_limit: int | None
    warnings: tuple[str, ...]
    #: why there is no answer (a figure the fit needs is unknown); None when there is one
    unknown: str | None = None
    engine: str = "vllm"
    #: the engine's per-device terms beside weights and KV cache, each with formula and source
    terms: tuple[Term, ...] = ()
    usable_bytes: int = 0  # per device: what the engine may take (vLLM: budget × utilization)
    utilization: float | None = None  # vLLM's gpu_memory_utilization; None for llama.cpp
    #: vLLM: usable − weights − overhead per device, and the tokens it holds (whole blocks); None
    #: when the engine sizes its cache by the context (llama.cpp) or the layout is not uniform
    kv_pool_bytes: int | None = None
    kv_pool_tokens: int | None = None
    gpu: str | None = None
    pipeline: int = 1  # pipeline stages (layers split between them); devices = tensor-parallel × stages
    #: with pipeline stages: each stage's layers and weights per device; ``stage`` is the one the
    #: figures above are for (the tightest)
    stages: tuple[str, ...] = ()
    stage: str | None = None
    #: how the weights were counted, when not simply as the headers hold them
    weights_note: str | None = None
    #: (context, total bytes per device) at batch ``batch`` from 0 to the larger of the asked and the
    #: largest context: memory against context, the points the HTML report draws
    curve: tuple[tuple[int, int], ...] = ()


#: segments of the memory-against-context curve (``Fit.curve``)
CURVE_POINTS: Final = 64

#: roles replicated on every device under tensor parallelism (everything else is split)
REPLICATED_ROLES: Final = ("norm", "moe.router", "buffer")


def fit(*, budget: Budget, batch: int, context: int, weights_all: int, replicated: Mapping[Role, int],
        kv_at: Callable[[int], tuple[int, int]], kv_heads: int | None, mla: bool, terms: tuple[Term, ...],
        overhead: int | None, model_limit: int | None, engine: str = "vllm",
        utilization: float | None = None) -> Fit:
    """``kv_at(context)`` → (KV bytes per token, KV bytes at that context for batch 1), whole model.
    ``replicated``: bytes by role of the weights every device holds; ``terms``: the engine's
    (replaced by ``overhead`` when given)."""
    n = budget.devices
    rep = sum(replicated.values())
    weights = rep + math.ceil((weights_all - rep) / n)
    if n == 1 or mla:
        share, divisor = ("whole on one device" if n == 1 else "MLA latent cache: replicated on every device"), 1
    elif kv_heads and kv_heads < n:
        share, divisor = f"{kv_heads} KV heads for {n} devices: one head per device, replicated", kv_heads
    else:
        share, divisor = f"split by KV heads over {n} devices", n
    if overhead is None:
        overhead = sum(t.bytes for t in terms)
        formula = " + ".join(t.name for t in terms if t.bytes) + f" ({engine})"
    else:
        terms = (Term("overhead", overhead, "given with --overhead", "--overhead"),)
        formula = "given with --overhead"
    usable = int(budget.per_device * utilization) if utilization else budget.per_device

    def kv(ctx: int, b: int) -> int:
        return math.ceil(kv_at(ctx)[1] * b / divisor)

    def total(ctx: int, b: int) -> int:
        return weights + kv(ctx, b) + overhead

    per_token = math.ceil(kv_at(1)[0] / divisor)
    kv_bytes = kv(context, batch)
    warnings: list[str] = []  # (a context over the model's limit is the estimate's warning, said once)
    cap = model_limit or 10 * 1024**2
    max_context = _largest(lambda ctx: total(ctx, batch) <= usable, cap)
    max_batch = _largest(lambda b: total(context, b) <= usable, 1 << 20)
    top = max(context, max_context, 1)
    points = sorted({top * i // CURVE_POINTS for i in range(CURVE_POINTS + 1)} | {context, max_context})
    return Fit(
        budget_bytes=budget.per_device, devices=n, batch=batch, context=context, weights_bytes=weights,
        weights_bytes_all=weights_all, replicated_bytes=rep,
        replicated=tuple(f"{role} {nbytes:,} B" for role, nbytes in sorted(replicated.items()) if nbytes),
        kv_bytes_per_token=per_token, kv_bytes=kv_bytes, kv_share=share, overhead_bytes=overhead,
        overhead_formula=formula, total_bytes=weights + kv_bytes + overhead,
        fits=weights + kv_bytes + overhead <= usable, max_context=max_context,
        max_context_capped=bool(model_limit) and max_context == model_limit, max_batch=max_batch,
        model_limit=model_limit, warnings=tuple(warnings), engine=engine, terms=terms, usable_bytes=usable,
        utilization=utilization, kv_pool_bytes=usable - weights - overhead if engine == "vllm" else None,
        gpu=budget.gpu, curve=tuple((x, total(x, batch)) for x in points))


def _largest(ok: Callable[[int], bool], cap: int) -> int:
    """The largest x in [1, cap] with ok(x), for ok monotone (true, then false); 0 if none."""
    if not ok(1):
        return 0
    lo, hi = 1, cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
