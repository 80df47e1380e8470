"""The one assembly of a checkpoint's parts, for every source: which index, which weight files,
which shards an index names, small JSON documents.

The local folder, the HF cache and the Hub list their files and call these; none has a rule of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from inspector.errors import InvalidCheckpointError, SeveralFiles
from inspector.formats.registry import NOT_WEIGHTS, readers
from inspector.model import natural_key
from inspector.safeio import relative_name


def json_object(raw: bytes | str, name: str) -> dict[str, Any]:
    """Parse a small JSON file of a checkpoint (config, index) that must be an object."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InvalidCheckpointError(f"{name}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidCheckpointError(f"{name}: not a JSON object")
    return value


def pick_index(names: Iterable[str]) -> str | None:
    """The safetensors index of a folder or repo: ``model.safetensors.index.json``, else the first
    other top-level ``*.safetensors.index.json`` (one rule for every source)."""
    top = sorted(n for n in names if "/" not in n and n.endswith(".safetensors.index.json"))
    return "model.safetensors.index.json" if "model.safetensors.index.json" in top else (top[0] if top else None)


def weight_files(names: Iterable[str], where: str) -> list[str]:
    """The top-level weight files to count, without an index: those of the first format in the
    registry's order that the folder has (safetensors, then GGUF, then torch pickles; trainer state
    saved beside the weights is not a state dict of the model). Several files of a format whose
    files are alternatives (GGUF: one model in several quantisations) are never added up: the
    caller is asked to name one."""
    top = sorted((n for n in names if "/" not in n and not n.startswith(NOT_WEIGHTS)), key=natural_key)
    for reader in readers():  # in the registry's order of preference
        found = [n for n in top if n.endswith(reader.suffixes)]
        if len(found) > 1 and reader.alternatives:
            shown = ", ".join(found[:6]) + (" …" if len(found) > 6 else "")
            raise SeveralFiles(f"{where}: {len(found)} {reader.name.upper()} files ({shown}), usually one model in "
                               "several quantisations: name one", found, where, hint=f"inspect {where}/{found[0]}")
        if found:
            return found
    return []


def index_shards(index: Mapping[str, Any], available: Iterable[str], where: str, index_name: str | None,
                 *, lenient: bool = False) -> list[str]:
    """The shards an index names, in natural order; an invalid weight_map or a named shard that
    is not available is an invalid checkpoint (``inspect audit`` lists every such problem, and
    asks with ``lenient`` for the names whether present or not)."""

    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise InvalidCheckpointError(f"{where}: {index_name or 'the index'} has no valid weight_map")
    names = sorted((relative_name(v, f"{where}: {index_name or 'the index'}: weight_map")
                    for v in set(weight_map.values())), key=natural_key)  # 163 names, not 91,991 entries
    have = set(available)
    missing = [n for n in names if n not in have]
    if missing and not lenient:
        raise InvalidCheckpointError(
            f"{where}: the index names {len(missing)} shard(s) it does not have, first {missing[0]!r}",
            hint="`inspect audit` lists every inconsistency",
        )
    return names
