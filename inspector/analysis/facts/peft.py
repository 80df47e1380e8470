"""A PEFT adapter's own description (adapter_config.json), as one line and as its target modules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

#: a frozen copy of a base layer peft saves beside its LoRA factors (``save_embedding_layers``: the
#: embedding's ``base_layer``): file elements, not trainable parameters
FROZEN_COPY: Final = re.compile(r"\.base_layer\.weight$")


def is_frozen_copy(name: str) -> bool:
    return FROZEN_COPY.search(name) is not None


def describe(config: Mapping[str, object]) -> str:
    """One line for an adapter: "LoRA rank 8, alpha 16, on q_proj, v_proj"."""
    kind = str(config.get("peft_type") or "PEFT")
    kind = {"LORA": "LoRA"}.get(kind, kind)
    rank, alpha = config.get("r"), config.get("lora_alpha")
    parts = [kind + (f" rank {rank}" if isinstance(rank, int) else "")]
    if isinstance(alpha, int | float):
        parts.append(f"alpha {alpha:g}")
    named = targets(config)
    if named:
        parts.append("on " + ", ".join(named))
    if config.get("use_dora") is True:
        parts.append("DoRA")
    return ", ".join(parts)


def targets(config: Mapping[str, object]) -> tuple[str, ...]:
    """The adapter's ``target_modules``: names, or one regular expression."""
    named = config.get("target_modules")
    if isinstance(named, str):
        return (named,)  # a regular expression
    if isinstance(named, list | tuple):
        return tuple(sorted(str(t) for t in named))
    return ()
