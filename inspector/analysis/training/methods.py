"""The fine-tuning methods ``train`` counts (``--method``): one ``Method`` a kind — whether it trains every weight or
a LoRA adapter on a frozen base (peft), whether that base's linear weights are held in bitsandbytes' NF4 (QLoRA),
what the train table calls it, the rule of thumb LLaMA-Factory's README gives for it and the lighter methods a
step that does not fit may try — found by name in ``METHODS``; ``register`` adds one from a module of its own, and
``--method``, its help, its shell completion and the train JSON Schema then take it. ``train`` asks the record, never
the name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inspector.strategies import Registry


@dataclass(frozen=True, slots=True)
class Method:
    """One fine-tuning method: its name (``--method``); ``adapter``: a LoRA adapter on a frozen base (peft), else
    every weight trained; ``nf4``: the frozen base's linear weights in bitsandbytes' NF4 with double quantisation;
    ``title``: the train table's words (``{rank}`` the adapter's rank); ``thumb``: LLaMA-Factory's README figure (GB a
    billion parameters, its words), None where it depends on the precision (full training); ``lighter``: the methods
    a step that does not fit tries instead, in order."""

    name: str
    adapter: bool
    nf4: bool
    title: str
    thumb: tuple[float, str] | None = None
    lighter: tuple[str, ...] = ()


_BUILT_IN: Final = (
    Method("full", adapter=False, nf4=False, title="full fine-tuning", lighter=("lora", "qlora")),
    Method("lora", adapter=True, nf4=False, title="LoRA rank {rank}", thumb=(2, "Freeze/LoRA: 2x GB"),
           lighter=("qlora",)),
    Method("qlora", adapter=True, nf4=True, title="QLoRA rank {rank}", thumb=(0.5, "QLoRA 4-bit: x/2 GB")),
)
#: THE method table, by the name ``--method`` takes
METHODS: Final[Registry[Method]] = Registry(_BUILT_IN)
register = METHODS.register
unregister = METHODS.unregister
names = METHODS.names

