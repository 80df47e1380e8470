"""The checkpoint model every command works on: config, index and headers, wherever they came from."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from inspector.errors import HeaderError
from inspector.formats.safetensors import Header, TensorInfo

#: where a checkpoint came from (see ``Checkpoint``)
Origin = Literal["file", "folder", "hf-cache", "snapshot", "bundled", "hub"]
#: what a tensor is: a parameter, saved state that is not one, or quantisation side data
Kind = Literal["parameter", "buffer", "quant"]
#: what a tensor does, as the role table names it ("other" when no pattern matches)
Role = Literal[
    "attn.k",
    "attn.kv",
    "attn.o",
    "attn.other",
    "attn.q",
    "attn.qkv",
    "attn.v",
    "audio",
    "buffer",
    "embedding",
    "head",
    "lm_head",
    "mlp.down",
    "mlp.gate",
    "mlp.gate_up",
    "mlp.up",
    "moe.expert",
    "moe.expert.down",
    "moe.expert.gate",
    "moe.expert.gate_up",
    "moe.expert.up",
    "moe.router",
    "moe.shared",
    "moe.shared.down",
    "moe.shared.gate",
    "moe.shared.up",
    "mtp",
    "norm",
    "other",
    "pooler",
    "position_embedding",
    "projector",
    "token_type_embedding",
    "vision",
]
#: how bad an audit finding is
Severity = Literal["error", "warning", "info"]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pth", ".pt", ".gguf", ".ckpt", ".h5", ".msgpack", ".ot", ".onnx",
                   ".tflite")


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file of the checkpoint's folder or repo, with its size when known."""

    path: str
    size: int | None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Everything the inspector reads of a model: never the weights themselves.

    ``origin`` says where it came from: ``file``, ``folder``, ``hf-cache``, ``snapshot`` (a header
    snapshot folder), ``bundled`` (a snapshot shipped with the package) or ``hub``.
    """

    label: str
    origin: Origin
    location: str
    headers: tuple[Header, ...]
    config: Mapping[str, Any] | None = None
    index: Mapping[str, Any] | None = None
    repo_id: str | None = None
    revision: str | None = None
    files: tuple[FileEntry, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    # lenient opens (the audit): what could not be read, collected instead of raised
    header_errors: tuple[HeaderError, ...] = ()
    index_name: str | None = None
    index_error: str | None = None
    #: small side files read alongside (``pytorch_model.bin.index.json``), by path
    side_json: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    root: str | None = None  # the local folder holding the files (for reading tensor data)

    def tensors(self) -> Iterator[TensorInfo]:
        for header in self.headers:
            yield from header.tensors

    @property
    def tensor_count(self) -> int:
        return sum(len(h.tensors) for h in self.headers)

    def other_weight_files(self) -> tuple[FileEntry, ...]:
        """Weight files present that are not the safetensors being counted (``original/*.pth``,
        ``pytorch_model*.bin``, ``*.gguf``): reported as present, never counted."""
        counted = {h.file for h in self.headers}
        return tuple(
            f for f in self.files
            if f.path not in counted and f.path.endswith(WEIGHT_SUFFIXES)
        )


def json_object(raw: bytes | str, name: str) -> dict[str, Any]:
    """Parse a small JSON file of a checkpoint (config, index) that must be an object."""
    import json

    from inspector.errors import InvalidCheckpointError

    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise InvalidCheckpointError(f"{name}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidCheckpointError(f"{name}: not a JSON object")
    return value


#: PyTorch pickle files, read by ``torchread`` (local files)
PICKLE_SUFFIXES = (".bin", ".pth", ".pt", ".ckpt")
#: pickles that Trainer saves beside the weights: not model weights
NOT_WEIGHTS = ("training_args", "optimizer", "scheduler", "rng_state", "trainer_state")

#: the side file whose key list the audit compares with the safetensors
BIN_INDEX = "pytorch_model.bin.index.json"
#: a PEFT adapter's description (rank, target modules, base model), beside adapter_model.safetensors
ADAPTER_CONFIG = "adapter_config.json"
#: small JSON files read alongside the headers and kept in ``Checkpoint.side_json``
SIDE_FILES = (BIN_INDEX, ADAPTER_CONFIG)


def pick_index(names: Iterable[str]) -> str | None:
    """The safetensors index of a folder or repo: ``model.safetensors.index.json``, else the first
    other top-level ``*.safetensors.index.json`` (one rule for every source)."""
    top = sorted(n for n in names if "/" not in n and n.endswith(".safetensors.index.json"))
    return "model.safetensors.index.json" if "model.safetensors.index.json" in top else (top[0] if top else None)


def weight_files(names: Iterable[str], where: str) -> list[str]:
    """The top-level weight files to count, without an index: the safetensors files if there are
    any; else the one GGUF file. Several GGUF files are usually one model in several quantisations,
    never to be added up: the caller is asked to name one."""
    from inspector.errors import SeveralFiles
    from inspector.formats.registry import GGUF, SAFETENSORS
    from inspector.render.text import natural_key

    top = sorted((n for n in names if "/" not in n), key=natural_key)
    safetensors = [n for n in top if n.endswith(SAFETENSORS.suffixes)]
    if safetensors:
        return safetensors
    ggufs = [n for n in top if n.endswith(GGUF.suffixes)]
    if len(ggufs) > 1:
        shown = ", ".join(ggufs[:6]) + (" …" if len(ggufs) > 6 else "")
        raise SeveralFiles(f"{where}: {len(ggufs)} GGUF files ({shown}), usually one model in several "
                           "quantisations: name one", ggufs, where, hint=f"inspect {where}/{ggufs[0]}")
    if ggufs:
        return ggufs
    # PyTorch pickles last; trainer state saved beside the weights is not a state dict of the model
    return [n for n in top if n.endswith(PICKLE_SUFFIXES) and not n.startswith(NOT_WEIGHTS)]


def index_shards(index: Mapping[str, Any], available: Iterable[str], where: str, index_name: str | None,
                 *, lenient: bool = False) -> list[str]:
    """The shards an index names, in natural order; an invalid weight_map or a named shard that
    is not available is an invalid checkpoint (``inspect audit`` lists every such problem, and
    asks with ``lenient`` for the names whether present or not)."""
    from inspector.errors import InvalidCheckpointError
    from inspector.render.text import natural_key

    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise InvalidCheckpointError(f"{where}: {index_name or 'the index'} has no valid weight_map")
    from inspector.safeio import relative_name

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
