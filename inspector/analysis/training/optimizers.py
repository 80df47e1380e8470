"""The optimizers ``train`` models, one strategy each: what it keeps for a trainable tensor, in words, with its
source, and the bytes (``Optimizer.state_bytes``). ``OPTIMIZERS`` is the registry the CLI's choices, its help and
the JSON Schema read; ``register`` adds one from outside (a module of its own)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from inspector.strategies import Registry

#: bytes one optimizer keeps for one trainable tensor: (its shape, its elements, the bytes of an element of the
#: tensor it updates: 4 for an fp32 master copy, 2 for a pure bf16 parameter)
Bytes = Callable[[tuple[int, ...], int, int], int]


@dataclass(frozen=True, slots=True)
class Optimizer:
    """One optimizer's states, as its own code allocates them for a parameter."""

    name: str
    states: str  # what it keeps, in words
    source: str
    bytes: Bytes

    def state_bytes(self, shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
        return self.bytes(shape, numel, param_bytes)


def _adamw(shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
    return 2 * numel * param_bytes


def _adamw_8bit(shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
    if numel < 4096:
        return 2 * numel * 4
    return 2 * (numel + 4 * -(-numel // 256))


def _adafactor(shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
    if len(shape) >= 2:
        return 4 * (math.prod(shape[:-1]) + math.prod(shape[:-2]) * shape[-1])
    return 4 * numel


def _nothing(shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
    return 0


def _momentum(shape: tuple[int, ...], numel: int, param_bytes: int) -> int:
    return numel * param_bytes


_BUILT_IN: Final = (
    Optimizer("adamw", "exp_avg and exp_avg_sq, each like the parameter it updates",
              "torch.optim.AdamW (_init_group: torch.zeros_like(p) twice)", _adamw),
    Optimizer("adamw-8bit", "state1 and state2 in uint8 with one float32 absmax per block of 256 each; tensors "
                            "under 4,096 elements keep float32 states",
              "bitsandbytes.optim.AdamW8bit (Optimizer8bit.init_state: blocksize 256, min_8bit_size 4096)",
              _adamw_8bit),
    Optimizer("paged-adamw-8bit", "as adamw-8bit, in paged memory (moved to the CPU under pressure)",
              "bitsandbytes.optim.PagedAdamW8bit", _adamw_8bit),
    Optimizer("adafactor", "a factored second moment: float32 row and column means of a matrix, the whole of a "
                           "vector; no first moment (beta1 None, its default)",
              "transformers.optimization.Adafactor (_get_options, exp_avg_sq_row/_col)", _adafactor),
    Optimizer("sgd", "nothing", "torch.optim.SGD without momentum (no momentum_buffer)", _nothing),
    Optimizer("sgd-momentum", "momentum_buffer, like the parameter", "torch.optim.SGD (momentum > 0)", _momentum),
)
#: THE optimizer table, by the name ``--optimizer`` takes
OPTIMIZERS: Final[Registry[Optimizer]] = Registry(_BUILT_IN)
register = OPTIMIZERS.register
unregister = OPTIMIZERS.unregister
