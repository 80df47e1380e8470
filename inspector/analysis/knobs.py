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

from inspector.analysis.train import Train, TrainOptions
from inspector.errors import UsageError

#: at most this many changes are listed (the cheapest first)
MAX_KNOBS = 5


@dataclass(frozen=True, slots=True)
class Knob:
    """One change of the command line, and the memory per GPU the step then needs."""

    change: str  # as typed: "--checkpointing", "--method qlora", "--batch 2"
    total: int  # bytes per GPU at the peak, with the change
    budget: int  # bytes per GPU it is held to


def train_knobs(t: Train, again: Callable[[TrainOptions], Train]) -> tuple[Knob, ...]:
    """The changes that make ``t``'s step fit, cheapest first (``again``: the same training arithmetic
    over other options); () where it fits, has no budget, or its fit is unknown."""
    o = t.options
    if t.fits is not False or o.budget is None:
        return ()
    tried: list[tuple[str, TrainOptions]] = []
    if not o.checkpointing:
        tried.append(("--checkpointing", replace(o, checkpointing=True)))
    if o.offload == "none":
        tried.append(("--offload optimizer", replace(o, offload="optimizer")))
    if t.devices > 1 and o.zero < 3 and not o.fsdp:
        tried.append(("--zero 3", replace(o, zero=3)))
    if t.largest_batch and t.largest_batch < o.batch:
        tried.append((f"--batch {t.largest_batch}", replace(o, batch=t.largest_batch)))
    if t.largest_seq and t.largest_seq < o.seq:
        tried.append((f"--seq {t.largest_seq}", replace(o, seq=t.largest_seq)))
    if o.method == "full":
        tried.append(("--method lora", replace(o, method="lora")))
    if o.method != "qlora":
        tried.append(("--method qlora", replace(o, method="qlora")))
        if not o.checkpointing:
            tried.append(("--method qlora --checkpointing", replace(o, method="qlora", checkpointing=True)))
    found: list[Knob] = []
    for change, options in tried:
        try:
            done = again(options)
        except UsageError:  # a combination the options refuse (their rules decide, not this list)
            continue
        if done.fits is True and done.total is not None:
            found.append(Knob(change, done.total, o.budget.per_device))
        if len(found) == MAX_KNOBS:
            break
    return tuple(found)
