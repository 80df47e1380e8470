"""The next knob: when a training step does not fit, the changes of one option (or two) that make it fit,
each with the memory per GPU it then needs, computed by the same arithmetic as the answer itself.

Tried in the order of what they cost the user, least first: activation checkpointing (about a third more
compute, no change to what is learnt), moving the optimizer states to the CPU, sharding over the GPUs
already there (ZeRO 3), a smaller step (the largest batch and sequence that fit, as the answer reports
them), then another method (LoRA for full fine-tuning, QLoRA: what is trained changes), then checkpointing
with QLoRA together. Only changes that fit are listed; none is applied for the user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from inspector.analysis.serving.fit import Fit
from inspector.analysis.serving.plan import Plan
from inspector.analysis.training.experts import LAYOUTS, separate
from inspector.analysis.training.options import TrainOptions
from inspector.analysis.training.train import Train
from inspector.errors import UsageError
from inspector.formats.dtypes import USER_DTYPE_BYTES

#: at most this many changes are listed (the cheapest first)
MAX_KNOBS = 5


@dataclass(frozen=True, slots=True)
class Knob:
    """One change of the command line, and the memory per GPU the step then needs."""

    change: str  # as typed: "--checkpointing", "--method qlora", "--batch 2"
    total: int  # bytes per GPU at the peak, with the change
    budget: int  # bytes per GPU it is held to (0: another GPU count, whose layout plan checked)


def train_knobs(t: Train, again: Callable[[TrainOptions], Train]) -> tuple[Knob, ...]:
    """The changes that make ``t``'s step fit, cheapest first (``again``: the same training arithmetic
    over other options); where none does, the one that comes closest; () where it fits, has no budget, or its
    fit is unknown."""
    o = t.options
    if t.fits is not False or o.budget is None:
        return ()
    found: list[Knob] = []
    closest: Knob | None = None
    for change, options in _changes(t, again):
        try:
            done = again(options)
        except UsageError:  # a combination the options refuse (their rules decide, not this list)
            continue
        if done.fits is True and done.total is not None:
            found.append(Knob(change, done.total, o.budget.per_device))
        elif done.total is not None and t.total is not None and done.total < t.total and (
                closest is None or done.total < closest.total):
            closest = Knob(change, done.total, o.budget.per_device)
        if len(found) == MAX_KNOBS:
            break
    # where no one change fits, the one that comes closest, with what it then needs (over the budget: said so)
    return tuple(found) if found or closest is None else (closest,)


def _changes(t: Train, again: Callable[[TrainOptions], Train]) -> list[tuple[str, TrainOptions]]:
    """The changes to try, as typed, cheapest first."""
    o = t.options
    tried: list[tuple[str, TrainOptions]] = []
    # a mixture of experts loaded with its experts fused (transformers 5): bitsandbytes quantises nn.Linear alone,
    # so under an NF4 method the experts stay 16-bit; held as transformers 4.x held them, one nn.Linear an expert,
    # they are NF4 too (--experts separate). Tried first where it lowers the step at all
    for layout in (x for x in LAYOUTS if separate(x) and x != o.experts and o.method_kind.nf4):
        if _lowers(t, again, replace(o, experts=layout)):
            tried.append((f"--experts {layout}", replace(o, experts=layout)))
            if not o.step.checkpointing:
                tried.append((f"--experts {layout} --checkpointing",
                              replace(o, experts=layout, step=replace(o.step, checkpointing=True))))
    if not o.step.checkpointing:
        tried.append(("--checkpointing", replace(o, step=replace(o.step, checkpointing=True))))
    if not o.shard.offloading.optimizer:
        tried.append(("--offload optimizer", replace(o, shard=replace(o.shard, offload="optimizer"))))
    if t.devices > 1 and o.shard.zero < 3 and not o.shard.fsdp:
        tried.append(("--zero 3", replace(o, shard=replace(o.shard, zero=3))))
    if t.largest_batch and t.largest_batch < o.batch:
        tried.append((f"--batch {t.largest_batch}", replace(o, batch=t.largest_batch)))
    if t.largest_seq and t.largest_seq < o.seq:
        tried.append((f"--seq {t.largest_seq}", replace(o, seq=t.largest_seq)))
    lighter = o.method_kind.lighter
    for name in lighter:  # the lighter methods, in order; the lightest with checkpointing too
        tried.append((f"--method {name}", replace(o, method=name)))
    if lighter and not o.step.checkpointing:
        tried.append((f"--method {lighter[-1]} --checkpointing",
                      replace(o, method=lighter[-1], step=replace(o.step, checkpointing=True))))
    return tried


def _lowers(t: Train, again: Callable[[TrainOptions], Train], options: TrainOptions) -> bool:
    """Whether ``options`` lower the step's peak (a change that leaves it as it is is no knob)."""
    try:
        done = again(options)
    except UsageError:
        return False
    return done.total is not None and t.total is not None and done.total < t.total


def estimate_knobs(fitted: Fit, *, context: int, kv_dtype: str, again: Callable[[int, str], Fit],
                   layout: Callable[[], tuple[str, int] | None],
                   smaller_file: Callable[[], tuple[str, int] | None] = lambda: None) -> tuple[Knob, ...]:
    """Where a model does not fit its budget for serving: a shorter context (the largest that fits, as the
    fit reports it), an 8-bit KV cache where the cache is 16-bit, a smaller quantisation of the same GGUF
    folder (``smaller_file``: the file to use and what it needs, or None), and more of the same GPU in the
    layout ``plan`` ranks first (``layout``: its command-line change and memory per GPU, or None) — each
    with the memory per device it then needs (``again(context, kv_dtype)``: the same fit with those two
    changed)."""
    if fitted.fits is not False:
        return ()
    tried: list[tuple[str, Callable[[], tuple[bool | None, int]]]] = []
    if fitted.limits.max_context and fitted.limits.max_context < context:
        shorter = fitted.limits.max_context
        tried.append((f"--context {shorter}", lambda: _answer(again(shorter, kv_dtype))))
    if USER_DTYPE_BYTES.get(kv_dtype.lower()) == 2:  # a 16-bit cache (the dtype table's width)
        tried.append(("--kv-dtype fp8", lambda: _answer(again(context, "fp8"))))
    found = []
    for change, run in tried:
        try:
            fits, total = run()
        except UsageError:
            continue
        if fits is True:
            found.append(Knob(change, total, fitted.runtime.usable_bytes or fitted.budget_bytes))
    quantised = smaller_file()  # another quantisation of the same folder, the largest that fits
    if quantised is not None:
        found.append(Knob(quantised[0], quantised[1], fitted.runtime.usable_bytes or fitted.budget_bytes))
    more = layout()
    if more is not None:
        found.append(Knob(more[0], more[1], 0))
    return tuple(found[:MAX_KNOBS])


def _answer(f: Fit) -> tuple[bool | None, int]:
    return f.fits, f.total_bytes


#: the most GPUs a plan's next knob looks to (8 nodes of 8)
PLAN_REACH = 64
#: GPUs per node the suggestion counts in (``--max-gpus`` past it takes ``--nodes``)
NODE_GPUS = 8


def plan_knobs(done: Plan, max_gpus: int, again: Callable[[int], Plan]) -> tuple[Knob, ...]:
    """Where no layout of the GPUs considered fits: the GPU count that would, as ``plan`` itself ranks the
    layouts up to ``PLAN_REACH`` GPUs (``again(max_gpus)``), and the memory per GPU of its first layout."""
    if done.fits is not False or max_gpus >= PLAN_REACH:
        return ()
    best = again(PLAN_REACH).best
    if best is None or best.fit is None:
        return ()
    n = best.layout.gpus
    change = f"--max-gpus {n}" if n <= NODE_GPUS else f"--max-gpus {NODE_GPUS} --nodes {-(-n // NODE_GPUS)}"
    return (Knob(change, best.fit.total_bytes, 0),)
