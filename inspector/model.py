"""The checkpoint model every command works on: config, index and headers, wherever they came from."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final, Literal, NamedTuple

from inspector.errors import HeaderError

_DIGITS: Final = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts ``layers.2`` before ``layers.10``."""
    return tuple((1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(text) if part)


class Phase(StrEnum):
    """What a long read is doing, as a progress bar names it."""

    LISTING = "listing"
    HEADERS = "headers"
    COMPONENTS = "components"
    DATA = "tensor data"


#: told (phase, done, total) as a read goes on: a Hub repo's listing, its headers, a pipeline's
#: components, the audit's scan of tensor data (in bytes)
Progress = Callable[[Phase, int, int], None]


class TensorInfo(NamedTuple):
    """One tensor as its file describes it. ``dtype`` is the format's own type name (a safetensors
    dtype, a GGML type); ``begin``/``end`` are byte offsets of its data, relative to the file's
    ``data_start`` (a pickle: to its storage's place in the archive).

    A NamedTuple rather than a dataclass: immutable all the same, and DeepSeek-V3 has 91,991 of
    them, which a tuple builds several times faster.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    file: str
    numel: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


class Import(NamedTuple):
    """A global a pickle names (``GLOBAL``/``STACK_GLOBAL``/``INST``/``OBJ``), found by reading its
    opcodes, never by running it: where (``pickle``: ``data.pkl``, ``legacy pickle 4``), what, and
    whether the reader allows it."""

    pickle: str
    module: str
    name: str
    allowed: bool


@dataclass(frozen=True, slots=True)
class WeightFile:
    """The records of one weight file, whatever its format.

    ``format`` names the reader that made them (``formats.registry``). ``data_start`` is where the
    tensor data begins in formats that keep it in one block after a header (safetensors, GGUF), None
    where it is scattered (a torch zip archive, a legacy pickle). ``head`` is the leading bytes the
    reader parses back into these records (what a header snapshot keeps); empty when the records
    cannot be rebuilt from a prefix of the file (a pickle needs its end too).
    """

    file: str
    format: str
    tensors: tuple[TensorInfo, ...]
    metadata: Mapping[str, str] = field(default_factory=dict)
    file_size: int | None = None
    data_start: int | None = None
    data_length: int = 0  # bytes of tensor data the records account for
    head: bytes = field(default=b"", repr=False)
    #: the code the file would import when loaded (a pickle's globals), each with its verdict
    imports: tuple[Import, ...] = ()

    @property
    def expected_file_size(self) -> int | None:
        """The file's size as its header implies it, where the data is one block after it."""
        return None if self.data_start is None else self.data_start + self.data_length

#: where a checkpoint came from (see ``Checkpoint``)
Origin = Literal["file", "folder", "hf-cache", "snapshot", "bundled", "hub"]
#: each origin in words (the one table: titles, errors)
ORIGIN_WORDS: Final[Mapping[str, str]] = {
    "file": "file", "folder": "folder", "hf-cache": "Hugging Face cache", "snapshot": "header snapshot",
    "bundled": "bundled header snapshot", "hub": "Hub repo",
}
#: what a tensor is: a parameter, saved state that is not one, or quantisation side data
Kind = Literal["parameter", "buffer", "quant"]
#: what a tensor does, as the role table names it ("other" when no pattern matches)
Role = Literal[
    "attn.cross",
    "attn.k",
    "attn.kv",
    "attn.o",
    "attn.other",
    "attn.q",
    "attn.qkv",
    "attn.v",
    "audio",
    "buffer",
    "cls_token",
    "conv_stem",
    "diffusion.time",
    "dit.block",
    "embedding",
    "head",
    "linear_attn.conv",
    "linear_attn.in",
    "linear_attn.out",
    "linear_attn.state",
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
    "patch_embedding",
    "pooler",
    "position_embedding",
    "projector",
    "ssm.conv",
    "ssm.in",
    "ssm.out",
    "ssm.state",
    "token_type_embedding",
    "unet.down.attn",
    "unet.down.resnet",
    "unet.mid.attn",
    "unet.mid.resnet",
    "unet.sampler",
    "unet.up.attn",
    "unet.up.resnet",
    "vae.decoder",
    "vae.encoder",
    "vae.quant",
    "vision",
]
#: how bad an audit finding is
Severity = Literal["error", "warning", "info"]



@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file of the checkpoint's folder or repo, with its size when known, and its content's sha256 where
    the source names it without reading the file (a Hub listing's LFS ``sha256``; an HF cache's blob, which
    is named by it): what ``inspect lineage`` proves a re-upload by."""

    path: str
    size: int | None
    sha256: str | None = None


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a multi-component repo: its folder, the library and class its index names, and
    its own checkpoint (None for a part without weights: a scheduler, a tokenizer, a pooling module)."""

    name: str
    library: str | None
    class_name: str | None
    checkpoint: Checkpoint | None


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a checkpoint came from: ``origin`` (``file``, ``folder``, ``hf-cache``, ``snapshot`` (a
    header snapshot folder), ``bundled`` (one shipped with the package) or ``hub``), its location, the
    repo and commit where known, the local folder holding the files (for reading tensor data), and
    notes on how it was read."""

    origin: Origin
    location: str
    repo_id: str | None = None
    revision: str | None = None
    root: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Problems:
    """What a lenient read (the audit) found and collected instead of raising."""

    header_errors: tuple[HeaderError, ...] = ()
    index_error: str | None = None


@dataclass(frozen=True, slots=True)
class SideFiles:
    """The small files read beside the weights: the index's name, side JSON documents
    (``pytorch_model.bin.index.json``, ``adapter_config.json``) parsed, and tokenizer, chat-template
    and generation files as read (``analysis.facts.tokenizer`` reads them), by path."""

    index_name: str | None = None
    json: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    raw: Mapping[str, bytes] = field(default_factory=dict)
    #: files made from another answer rather than read: the index whose weight_map the Hub's one-request
    #: answer leaves out, rebuilt from the shard headers (it cannot disagree with them: the audit reads
    #: the real one)
    rebuilt: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Composition:
    """A multi-component repo's index: its kind's name (``repos.KINDS``, which knows the index file) and the
    class the index names (``StableDiffusionPipeline``)."""

    kind: str
    class_name: str | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Everything the inspector reads of a model, never the weights themselves: what it is (label,
    headers, config, index, files), where it came from (``provenance``), its parts (``components``,
    with the ``composition`` that names them), the small files beside it (``side``) and what a lenient
    read found (``problems``)."""

    label: str
    provenance: Provenance
    headers: tuple[WeightFile, ...]
    config: Mapping[str, Any] | None = None
    index: Mapping[str, Any] | None = None
    files: tuple[FileEntry, ...] = ()
    side: SideFiles = field(default_factory=SideFiles)
    #: the parts of a multi-component repo (a diffusers pipeline's unet, vae, text_encoder …; a
    #: sentence-transformers model's modules), each with its own config; ``headers`` then hold every
    #: component's tensors, named ``component.tensor``
    components: tuple[Component, ...] = ()
    composition: Composition | None = None
    problems: Problems = field(default_factory=Problems)

    @property
    def composite_class(self) -> str | None:
        return self.composition.class_name if self.composition is not None else None

    @property
    def kind(self) -> str:
        """What the checkpoint is, decided once from the index it was read from: a repo kind's name
        (``repos.KINDS``: a diffusers ``pipeline``, sentence-transformers ``modules``), or one ``model``.
        Analysis asks the kind (``repos.kind_of``), never file names."""
        return self.composition.kind if self.composition is not None else "model"

    def with_notes(self, *notes: str, keep: bool = True) -> Checkpoint:
        """The same checkpoint with ``notes`` after its own (``keep=False``: instead of them)."""
        return replace(self, provenance=replace(self.provenance,
                                                notes=(*(self.provenance.notes if keep else ()), *notes)))

    def component(self, name: str) -> Checkpoint | None:
        """The checkpoint of one component with weights, by its folder name."""
        return next((c.checkpoint for c in self.components if c.name == name), None)

    def tensors(self) -> Iterator[TensorInfo]:
        for header in self.headers:
            yield from header.tensors

    @property
    def tensor_count(self) -> int:
        return sum(len(h.tensors) for h in self.headers)


#: the side file whose key list the audit compares with the safetensors
BIN_INDEX = "pytorch_model.bin.index.json"
#: a PEFT adapter's description (rank, target modules, base model), beside adapter_model.safetensors
ADAPTER_CONFIG = "adapter_config.json"
#: small JSON files read alongside the headers and kept in ``Checkpoint.side_json``
SIDE_FILES = (BIN_INDEX, ADAPTER_CONFIG)


@dataclass(frozen=True, slots=True)
class Alternatives:
    """A folder or repo holding one model in several files that must not be added up (GGUF quantisations): what
    opening it answers instead of a ``Checkpoint``. Each file is a model of its own; ``opener`` reads one with what
    the source already read (a Hub repo's listing at its commit), where it can."""

    where: str  # the folder or repo as named
    files: tuple[str, ...]  # the model files, each a model
    listing: Mapping[str, int | None]  # every file of the folder or repo with its size, as listed
    message: str  # in words, for a command that needs one model
    hint: str | None
    opener: Callable[[str], Checkpoint] | None = None
