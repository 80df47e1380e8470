"""Which GPUs, how many, in which parallel layout: every layout the engine would accept, fitted, cheapest first.

``plan(report, estimate, …)`` enumerates GPU type × count × tensor parallel × pipeline parallel (× expert
parallel for a mixture of experts), checks each against the engine's own start-up rules (``CHECKS``, each
engine naming the ones it applies with the source file it comes from: ``Engine.rules``), and fits each valid
layout with the same code as ``inspect estimate`` (``fit.fit``): weights per GPU (sharded and replicated parts),
the KV pool, the largest context and the sequences that fit at the asked context. An invalid layout names every rule
it breaks with the numbers that fail, the attention-head rule first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from inspector.analysis.facts.report import Report
from inspector.analysis.serving.budget import Budget
from inspector.analysis.serving.engines import GPUS, Engine, Gpu, closest_gpus, gpu_called, named_gpu
from inspector.analysis.serving.estimate import Estimate
from inspector.analysis.serving.fit import Fit, Settings, fit
from inspector.errors import UsageError

OBJECTIVES: Final = ("gpus", "throughput", "context")
MAX_GPUS: Final = 1024


@dataclass(frozen=True, slots=True)
class Shape:
    """The figures the engines' rules read, from the config and the headers."""

    heads: int | None
    kv_heads: int | None
    layers: int
    vocab: int | None
    hidden: int | None
    attention_out: int | None  # heads × value width: o_proj's input, split by TP
    intermediate: int | None  # the dense MLP's width (None: no dense MLP)
    moe_intermediate: int | None
    experts: int | None
    quant_method: str | None
    group_size: int | None  # GPTQ/AWQ
    pack_factor: int | None  # weights a packed int32 word holds (32 / bits)
    block: tuple[int, int] | None  # FP8 block quantisation (block_n, block_k)


@dataclass(frozen=True, slots=True)
class Layout:
    gpu: Gpu
    gpus: int
    tp: int
    pp: int
    ep: int  # expert-parallel ranks (1: experts split by TP like every other weight)


@dataclass(frozen=True, slots=True)
class Rule:
    """One start-up check of an engine: what it demands, where its code says so, and the check, which
    returns the numbers that fail (None when the layout passes)."""

    key: str
    engine: str
    demands: str
    source: str
    check: Callable[[Shape, Layout], str | None]


def _pad64(vocab: int) -> int:
    return -(-vocab // 64) * 64


def _heads(s: Shape, lay: Layout) -> str | None:
    if s.heads and s.heads % lay.tp:
        return f"{s.heads} attention heads are not divisible by {lay.tp}"
    return None


def _kv_heads(s: Shape, lay: Layout) -> str | None:
    kv = s.kv_heads
    if kv and kv % lay.tp and lay.tp % kv:
        return f"{kv} KV heads and tensor parallel {lay.tp}: neither divides the other"
    return None


def _mlp(s: Shape, lay: Layout) -> str | None:
    if s.intermediate and s.intermediate % lay.tp:
        return f"the MLP width {s.intermediate:,} is not divisible by {lay.tp}"
    if s.moe_intermediate and lay.ep == 1 and s.moe_intermediate % lay.tp:
        return f"the experts' width {s.moe_intermediate:,} is not divisible by {lay.tp} (without expert parallel)"
    return None


def _vocab(s: Shape, lay: Layout) -> str | None:
    if s.vocab and _pad64(s.vocab) % lay.tp:
        return f"the vocabulary padded to 64, {_pad64(s.vocab):,}, is not divisible by {lay.tp}"
    return None


def _row_inputs(s: Shape, lay: Layout) -> list[tuple[str, int]]:
    """Row-parallel layers' inputs split by TP: o_proj's (heads × value width) and down_proj's (the MLP
    width, or an expert's without expert parallel)."""
    out = []
    if s.attention_out:
        out.append(("o_proj", s.attention_out))
    if s.intermediate:
        out.append(("down_proj", s.intermediate))
    if s.moe_intermediate and lay.ep == 1:
        out.append(("the experts' down_proj", s.moe_intermediate))
    return out


def _groups(s: Shape, lay: Layout) -> str | None:
    if s.group_size is None or s.group_size <= 0 or lay.tp == 1:
        return None
    for name, width in _row_inputs(s, lay):
        part = width // lay.tp
        if width % lay.tp == 0 and part % s.group_size:
            return (f"{name}'s input per GPU, {width:,} / {lay.tp} = {part:,}, is not a multiple of the "
                    f"{s.quant_method} group size {s.group_size}")
    return None


def _packing(s: Shape, lay: Layout) -> str | None:
    if s.pack_factor is None or lay.tp == 1:
        return None
    for label, out in (("the MLP's gate/up", s.intermediate), ("the experts' gate/up", s.moe_intermediate)):
        if out and out % lay.tp == 0 and (out // lay.tp) % s.pack_factor:
            return (f"{label} output per GPU, {out // lay.tp:,}, is not a multiple of the {s.quant_method} pack "
                    f"factor {s.pack_factor}")
    return None


def _fp8_blocks(s: Shape, lay: Layout) -> str | None:
    if s.block is None or lay.tp == 1:
        return None
    block_n, block_k = s.block
    for name, width in _row_inputs(s, lay):
        if width % lay.tp == 0 and (width // lay.tp) % block_k:
            return (f"{name}'s input per GPU, {width // lay.tp:,}, is not divisible by the FP8 block_k {block_k}")
    outputs = (("the MLP's gate/up", s.intermediate), ("the experts' gate/up",
                                                       s.moe_intermediate if lay.ep == 1 else None))
    for label, out in outputs:
        if out and out % lay.tp == 0 and (out // lay.tp) % block_n:
            return f"{label} output per GPU, {out // lay.tp:,}, is not divisible by the FP8 block_n {block_n}"
    return None


def _stages(s: Shape, lay: Layout) -> str | None:
    if lay.pp > max(s.layers, 1):
        return f"{lay.pp} pipeline stages for {s.layers} layers"
    return None


def _experts(s: Shape, lay: Layout) -> str | None:
    if lay.ep > 1 and (s.experts or 0) < lay.ep:
        return f"{s.experts or 0} experts for {lay.ep} expert-parallel ranks"
    return None


def _split_layers(s: Shape, lay: Layout) -> str | None:
    if lay.gpus > max(s.layers, 1):
        return f"{lay.gpus} devices for {s.layers} layers"
    return None


#: the checks the engines' rules run, by key, the attention-head check first; each engine's module says which it
#: applies, what each demands and where its source says so (``Engine.rules``)
CHECKS: Final[Mapping[str, Callable[[Shape, Layout], str | None]]] = {
    "heads": _heads, "kv_heads": _kv_heads, "mlp": _mlp, "vocab": _vocab, "group_size": _groups,
    "pack_factor": _packing, "fp8_block": _fp8_blocks, "stages": _stages, "experts": _experts,
    "layer_split": _split_layers,
}


def rules_for(engine: Engine) -> tuple[Rule, ...]:
    """The engine's start-up rules in ``CHECKS``' order."""
    return tuple(Rule(key, engine.name, *engine.rules[key], check) for key, check in CHECKS.items()
                 if key in engine.rules)


# --- the shape the rules read ----------------------------------------------------------------------


def shape_of(report: Report, est: Estimate) -> Shape:
    c = report.config
    q = c.storage.quantization or {}
    named_method = q.get("quant_method")
    method = named_method if isinstance(named_method, str) else None
    group = q.get("group_size")
    bits = q.get("bits") or q.get("w_bit")
    block = q.get("weight_block_size")
    fp8_block = (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 and all(
        type(b) is int and b > 0 for b in block) else None
    packed = method in ("gptq", "awq")
    head_dim = c.mla.v_head_dim if c.mla.kv_lora_rank else c.head_dim
    layers = len(est.architecture.per_token_layers) or (c.num_layers or 0)
    dense = c.intermediate_size if any(r.role.startswith("mlp.") for r in report.summary.by_role) else None
    moe = est.moe is not None
    return Shape(
        heads=c.num_heads, kv_heads=None if c.mla.kv_lora_rank else c.num_kv_heads, layers=layers, vocab=c.vocab_size,
        hidden=c.hidden_size, attention_out=(c.num_heads or 0) * (head_dim or 0) or None, intermediate=dense,
        moe_intermediate=(c.moe.moe_intermediate_size or c.intermediate_size) if moe else None,
        experts=c.moe.num_experts if moe else None, quant_method=method,
        group_size=group if packed and type(group) is int and group > 0 else None,
        pack_factor=32 // bits if packed and type(bits) is int and 0 < bits <= 32 else None, block=fp8_block)


# --- the plan --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    layout: Layout
    broken: tuple[tuple[Rule, str], ...]  # every rule the layout breaks, with the numbers that fail
    fit: Fit | None  # None: an invalid layout is not fitted
    sequences: int | None  # sequences of ``context`` tokens the KV pool holds (None: unknown or invalid)

    @property
    def valid(self) -> bool:
        return not self.broken


@dataclass(frozen=True, slots=True)
class Plan:
    engine: str
    context: int
    objective: str
    utilization: float | None
    rows: tuple[Row, ...]  # ranked: valid layouts that fit first
    #: the GPU counts asked for (``--gpu 8xA100``: (A100-80GB, 8)); the answer is the best layout on those
    asked: tuple[tuple[str, int], ...] = ()

    @property
    def best(self) -> Row | None:
        """The answer: the first layout that fits, of those on the counts asked where any was."""
        asked = set(self.asked)
        return next((r for r in self.rows if r.valid and r.fit is not None and r.fit.fits and (
            not asked or (r.layout.gpu.name, r.layout.gpus) in asked)), None)

    @property
    def fewest(self) -> Row | None:
        """The first layout that fits of every count (the answer where no count was asked)."""
        return next((r for r in self.rows if r.valid and r.fit is not None and r.fit.fits), None)

    @property
    def fits(self) -> bool | None:
        """Whether a layout of the GPUs considered fits: True with a best layout; None where no valid
        layout's fit is known (a figure missing); else False."""
        if self.best is not None:
            return True
        known = any(r.valid and r.fit is not None and r.fit.fits is not None for r in self.rows)
        return False if known else None


def layouts(gpus: Sequence[Gpu], max_gpus: int, engine: Engine, moe: bool) -> list[Layout]:
    """Every layout of 1 to ``max_gpus`` of each GPU: vLLM's TP × PP (every TP that divides the count,
    not only powers of two), with expert parallel over the TP ranks for a mixture of experts;
    llama.cpp's layer split over every count."""
    out = []
    for gpu in gpus:
        for count in range(1, max_gpus + 1):
            if engine.layer_split:
                out.append(Layout(gpu, count, 1, count, 1))
                continue
            for tp in range(1, count + 1):
                if count % tp:
                    continue
                out.append(Layout(gpu, count, tp, count // tp, 1))
                if moe and tp > 1:
                    out.append(Layout(gpu, count, tp, count // tp, tp))
    return out


def plan(report: Report, est: Estimate, engine: Engine, *, gpus: Sequence[str] | None = None, max_gpus: int = 8,
         objective: str = "gpus", utilization: float | None = None) -> Plan:
    """Every layout, checked and fitted, in ranking order (``objective``: fewest GPUs, then the most KV
    headroom; ``throughput``: the most sequences; ``context``: the longest context)."""
    if objective not in OBJECTIVES:
        raise UsageError(f"⟨objective⟩: unknown {objective!r}", hint="use " + ", ".join(OBJECTIVES))
    if not 1 <= max_gpus <= MAX_GPUS:
        raise UsageError(f"⟨max_gpus⟩ {max_gpus} is not 1 to {MAX_GPUS:,}")
    if est.kv is None:
        raise UsageError("plan lays out a model that decodes tokens; this one decodes none",
                         hint="inspect estimate MODEL --gpu H100 for its weights")
    given = [counted(g) for g in unique_gpus(gpus)] if gpus else [(g, None) for g in GPUS.values()]
    chosen = list({gpu.name: gpu for gpu, _ in given}.values())
    asked = tuple((gpu.name, n) for gpu, n in given if n is not None)
    max_gpus = max([max_gpus, *(n for _, n in asked)])
    sequences: int | None
    shape = shape_of(report, est)
    rules = rules_for(engine)
    rows = []
    for lay in layouts(chosen, max_gpus, engine, est.moe is not None):
        broken = tuple((rule, why) for rule in rules if (why := rule.check(shape, lay)) is not None)
        if broken:
            rows.append(Row(lay, broken, None, None))
            continue
        fitted = fit(report, est, Budget(lay.gpu.bytes, lay.gpus, lay.gpu.name), engine,
                     settings=Settings(utilization=utilization, expert_parallel=lay.ep > 1, curve_points=0),
                     pipeline=lay.pp)
        tokens = fitted.kv.pool_tokens
        per_seq = -(-est.context // engine.page) * engine.page
        sequences = tokens // per_seq if tokens is not None and fitted.fits is not None else None
        rows.append(Row(lay, (), fitted, sequences))
    rows.sort(key=lambda r: _rank(r, objective))
    return Plan(engine.name, est.context, objective, utilization, tuple(rows), asked)


def _rank(r: Row, objective: str) -> tuple[object, ...]:
    f = r.fit
    fits = f is not None and f.fits is True
    group = 0 if fits else (1 if r.valid else 2)
    pool = (f.kv.pool_bytes or 0) if f is not None else 0
    if objective == "throughput":
        key: tuple[object, ...] = (-(r.sequences or 0), r.layout.gpus)
    elif objective == "context":
        key = (-((f.limits.max_context or 0) if f is not None else 0), r.layout.gpus)
    else:
        key = (r.layout.gpus, -pool)
    return (group, *key, r.layout.pp, -r.layout.tp, r.layout.ep, r.layout.gpu.name)


def counted(text: str) -> tuple[Gpu, int | None]:
    """A GPU as every command reads it (``engines.named_gpu``: ``H100``, ``8xA100``, ``A100x8``, ``2x RTX 4090``),
    and the count written with it (None: every count up to ``--max-gpus``)."""
    found = named_gpu(text)
    if found is None:
        close = closest_gpus(text)
        raise UsageError(f"⟨gpus⟩: unknown GPU {text[:48]!r}", hint=f"did you mean {' or '.join(close)}?" if close
                         else "the known ones: " + ", ".join(GPUS))
    gpu, n = found
    if gpu_called(text) is not None:  # the name alone (``RTX4090`` is one RTX 4090): no count written
        return gpu, None
    if not 1 <= n <= MAX_GPUS:
        raise UsageError(f"⟨gpus⟩: {text[:40]!r} is not 1 to {MAX_GPUS:,} GPUs")
    return gpu, n


#: the most names ``--gpu`` may list (the catalogue has fewer GPUs; a longer list is not a plan)
MAX_GPU_NAMES: Final = 64


def gpu_list(text: str | None) -> tuple[str, ...] | None:
    """``H100,A100-80GB,L40S`` (each with a count or not: ``8xA100``) → the catalogue's names (``A100-80GBx8``),
    checked, each once in the order first given (``H100,h100`` is one GPU, ``unique_gpus``); None for the whole
    catalogue."""
    if not text:
        return None
    return unique_gpus([t.strip() for t in text.split(",") if t.strip()])


def unique_gpus(names: Sequence[str]) -> tuple[str, ...]:
    """Each GPU once, by the catalogue's name, in the order first given; more than ``MAX_GPU_NAMES``
    refused before any is looked up."""
    if len(names) > MAX_GPU_NAMES:
        raise UsageError(f"⟨gpus⟩ lists more than {MAX_GPU_NAMES} names; the catalogue has {len(GPUS)} GPUs",
                         hint="name each GPU once: H100,A100-80GB,L40S")
    out = []
    for name in names:
        gpu, n = counted(name)
        out.append(gpu.name if n is None else f"{gpu.name}x{n}")
    return tuple(dict.fromkeys(out))

