"""The checkpoint model every command works on: config, index and headers, wherever they came from."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .header import Header, TensorInfo

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
    origin: str
    location: str
    headers: tuple[Header, ...]
    config: Mapping[str, Any] | None = None
    index: Mapping[str, Any] | None = None
    repo_id: str | None = None
    revision: str | None = None
    files: tuple[FileEntry, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

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
