"""The serving engines, one module each behind ``base.Engine``, found by the name ``--engine`` takes (``ENGINES``).

Adding an engine is a module here (its terms, default fraction, pool rounding, stage split and start-up rules, each
with its source) and its line in ``ENGINES``; the CLI's choices, the JSON Schema and ``plan`` read them from here."""

from __future__ import annotations

from typing import Final

from inspector.analysis.serving.engines.base import (
           GIB,
           GPUS,
           MIB,
           Engine,
           Gpu,
           ModelShape,
           Term,
           closest_gpus,
           gpu_called,
           named_gpu,
)
from inspector.analysis.serving.engines.llama_cpp import LLAMA_CPP
from inspector.analysis.serving.engines.sglang import SGLANG
from inspector.analysis.serving.engines.vllm import VLLM, VLLM_NON_TORCH, VLLM_NON_TORCH_SOURCE
from inspector.strategies import Registry

_BUILT_IN: Final = (VLLM, LLAMA_CPP, SGLANG)
#: the engines by the name ``--engine`` takes
ENGINES: Final[Registry[Engine]] = Registry(_BUILT_IN)
register = ENGINES.register
unregister = ENGINES.unregister

__all__ = ["ENGINES", "GIB", "GPUS", "LLAMA_CPP", "MIB", "SGLANG", "VLLM", "VLLM_NON_TORCH", "VLLM_NON_TORCH_SOURCE",
           "Engine", "Gpu", "ModelShape", "Term", "closest_gpus", "gpu_called", "named_gpu", "register", "unregister"]
