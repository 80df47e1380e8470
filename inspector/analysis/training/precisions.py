"""The training precisions ``train`` counts (``--precision``): one ``Precision`` a kind (how a weight is held, the
bytes of an activation element, whether the optimizer updates a float32 master copy, whether torch autocast
computes in 16-bit over float32 weights), found by name in ``PRECISIONS``; ``register`` adds one from a module of its
own, and ``--precision``, its help, its shell completion and the train JSON Schema then take it.

* ``bf16-mixed``, ``fp16-mixed``: 16-bit weights and a float32 master copy the optimizer updates (mixed-precision
  training, Micikevicius et al. 2018; ZeRO §3's 2Ψ + 2Ψ + KΨ);
* ``bf16``: pure bf16, no master copy;
* ``fp32``: float32 weights and activations;
* ``amp-bf16``, ``amp-fp16``: torch autocast over float32 weights (16-bit activations; autocast's cache keeps one
  16-bit copy of each linear weight per forward).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inspector.strategies import Registry


@dataclass(frozen=True, slots=True)
class Precision:
    """One training precision: its name (``--precision``) and, where the help says more than the name, a few words;
    the bytes of a weight as held and of an activation element; whether the optimizer updates a float32 master copy
    of the trained weights (mixed precision); whether torch autocast computes over float32 weights."""

    name: str
    described: str
    weight_bytes: int
    activation_bytes: int
    master: bool = False
    autocast: bool = False

    @property
    def pure_fp32(self) -> bool:
        """Weights and activations in float32."""
        return self.weight_bytes == 4 and self.activation_bytes == 4


_BUILT_IN: Final = (
    Precision("bf16-mixed", "16-bit weights and an fp32 master copy", 2, 2, master=True),
    Precision("fp16-mixed", "", 2, 2, master=True),
    Precision("bf16", "pure", 2, 2),
    Precision("fp32", "", 4, 4),
    Precision("amp-bf16", "", 4, 2, autocast=True),
    Precision("amp-fp16", "torch autocast over fp32 weights", 4, 2, autocast=True),
)
#: THE precision table, by the name ``--precision`` takes
PRECISIONS: Final[Registry[Precision]] = Registry(_BUILT_IN)
register = PRECISIONS.register
unregister = PRECISIONS.unregister
names = PRECISIONS.names

