"""The serving engines, one module each behind ``base.Engine``, found by the name ``--engine`` takes (``ENGINES``).

Adding an engine is a module here (its terms, default fraction, pool rounding, stage split and start-up rules, each
with its source) and its line in ``ENGINES``; the CLI's choices, the JSON Schema and ``plan`` read them from here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from inspector.analysis.engines.base import GIB, GPUS, MIB, Engine, Gpu, ModelShape, Term, named_gpu
from inspector.analysis.engines.llama_cpp import LLAMA_CPP
from inspector.analysis.engines.sglang import SGLANG
from inspector.analysis.engines.vllm import VLLM, VLLM_NON_TORCH, VLLM_NON_TORCH_SOURCE

_BUILT_IN: Final = (VLLM, LLAMA_CPP, SGLANG)
_REGISTERED: dict[str, Engine] = {e.name: e for e in _BUILT_IN}
#: the engines by the name ``--engine`` takes
ENGINES: Final[Mapping[str, Engine]] = _REGISTERED


def register(engine: Engine) -> None:
    """Add an engine (a module of its own outside the package, say); registering a name twice replaces it. The
    CLI's help lists the engines registered when it is imported."""
    _REGISTERED[engine.name] = engine


def unregister(name: str) -> None:
    """Remove an engine registered with ``register``; the built-in ones stay."""
    if name not in {e.name for e in _BUILT_IN}:
        _REGISTERED.pop(name, None)

__all__ = ["ENGINES", "GIB", "GPUS", "LLAMA_CPP", "MIB", "SGLANG", "VLLM", "VLLM_NON_TORCH", "VLLM_NON_TORCH_SOURCE",
           "Engine", "Gpu", "ModelShape", "Term", "named_gpu", "register", "unregister"]
