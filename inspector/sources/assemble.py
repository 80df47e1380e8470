"""The one assembly of a checkpoint's parts, for every source: which index, which weight files,
which shards an index names, small JSON documents.

The local folder, the HF cache and the Hub list their files and call these; none has a rule of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from inspector.errors import HeaderError, InvalidCheckpointError, NotFoundError, SeveralFiles
from inspector.formats.registry import NOT_WEIGHTS, SAFETENSORS, reader_named, readers, weight_suffixes
from inspector.model import SIDE_FILES, WeightFile, natural_key
from inspector.safeio import parse_json_object, relative_name


def json_object(raw: bytes | str, name: str) -> dict[str, Any]:
    """A small JSON file of a checkpoint (config, index, side file) that must be an object: the one
    bounded loader (``safeio.parse_json_object``)."""
    return parse_json_object(raw, name)


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


# --- the one assembly --------------------------------------------------------------------------------

T = TypeVar("T")
Progress = Callable[[int, int], None]


class Source(Protocol):
    """A folder or a repo at one commit, as the assembly sees it: its listing, small files whole,
    weight files through their format's reader, and a way to run many reads."""

    @property
    def where(self) -> str:
        """The folder or repo id, for messages."""
        ...

    @property
    def remote(self) -> bool:
        """Whether every read is a round trip (the index's hints then size the first reads)."""
        ...

    def small(self, name: str) -> bytes:
        """A small file (config, index, side file) whole, within the JSON budget."""
        ...

    def prefetch(self, names: list[str]) -> None:
        """These small files will be asked for: a remote source starts them at once."""
        ...

    def read_file(self, name: str, *, first: int | None, lenient: bool) -> WeightFile:
        """One weight file's records, through ``Reader.read`` over a byte source of its own."""
        ...

    def each(self, read: Callable[[str], T], names: list[str]) -> list[T]:
        """``read`` over ``names``, results in order (concurrently where the source pays round trips)."""
        ...


@dataclass(frozen=True, slots=True)
class Parts:
    """What the assembly read of a folder or repo: everything a Checkpoint holds but where it came from."""

    index: dict[str, Any] | None
    index_name: str | None
    index_error: str | None
    headers: tuple[WeightFile, ...]
    errors: tuple[HeaderError, ...]
    config: dict[str, Any] | None
    side: dict[str, dict[str, Any]]
    #: the small files read, as read (a header snapshot keeps them)
    stored: dict[str, bytes]


def assemble(source: Source, files: Mapping[str, int | None], *, lenient: bool = False, only: str | None = None,
             extra: tuple[str, ...] = (), progress: Progress | None = None) -> Parts:
    """The one assembly of a checkpoint from a folder or repo listing (``files``: every file with its
    size): the index (``pick_index``) and the shards it names, else the weight files of the first
    format the listing has (``weight_files``); each shard's records; config.json and the side files.
    ``only``: one weight file (one GGUF of several). ``lenient`` (the audit): header errors, a broken
    index and missing shards are collected instead of raised, and top-level safetensors files the
    index does not name are read too. ``extra``: more small files to keep (generation_config …)."""
    top = {p for p in files if "/" not in p}
    index_name = pick_index(top)
    smalls = [n for n in ("config.json", *extra, *SIDE_FILES) if n in files]
    source.prefetch(smalls + ([index_name] if index_name else []))
    index_raw = source.small(index_name) if index_name else None
    index: dict[str, Any] | None = None
    index_error: str | None = None
    try:
        index = json_object(index_raw, index_name or "index") if index_raw is not None else None
        shards = _shards(source.where, files, top, index, index_name, lenient, only)
    except InvalidCheckpointError as exc:
        if not lenient or index_raw is None:
            raise
        index, index_error = None, exc.message
        shards = _shards(source.where, files, top, None, None, lenient, only)
    if lenient:  # the audit reports shards the index does not name, and does not read missing ones
        shards = sorted({*(s for s in shards if s in files), *(p for p in top if p.endswith(".safetensors"))},
                        key=natural_key)
    first_reads = first_read_hints(index) if source.remote else {}
    done = 0
    if progress:
        progress(0, len(shards))

    def read(name: str) -> WeightFile | HeaderError:
        nonlocal done
        try:
            result: WeightFile | HeaderError = source.read_file(name, first=first_reads.get(name), lenient=lenient)
        except HeaderError as exc:
            if not lenient:
                raise
            result = exc
        done += 1  # each's reads may run on threads: the count only feeds a progress bar
        if progress:
            progress(done, len(shards))
        return result

    results = source.each(read, shards)
    stored = {n: source.small(n) for n in smalls}
    if index_raw is not None and index_name:
        stored[index_name] = index_raw
    headers = tuple(r for r in results if isinstance(r, WeightFile))
    config = json_object(stored["config.json"], f"{source.where}: config.json") if "config.json" in stored else None
    if config is None and len(headers) == 1 and (reader := reader_named(headers[0].format)) is not None:
        config = reader.config(headers[0])  # a file that carries its own (GGUF metadata), wherever it is
    return Parts(
        index=index, index_name=index_name, index_error=index_error, headers=headers,
        errors=tuple(r for r in results if isinstance(r, HeaderError)), config=config,
        side={n: json_object(stored[n], f"{source.where}: {n}") for n in SIDE_FILES if n in stored},
        stored=stored,
    )


def _shards(where: str, files: Mapping[str, int | None], top: set[str], index: Mapping[str, Any] | None,
            index_name: str | None, lenient: bool, only: str | None) -> list[str]:
    if only is not None:
        if only not in files:
            raise NotFoundError(f"{where}: no file {only!r} at this revision")
        return [only]
    if index is not None:
        return index_shards(index, files, where, index_name, lenient=lenient)
    names = weight_files(top, where)
    if names or lenient:
        return names
    others = sorted(p for p in files if p.endswith(weight_suffixes()))
    if others:
        raise InvalidCheckpointError(
            f"{where}: no weight files this tool reads (safetensors, GGUF or torch); it holds "
            f"{', '.join(others[:3])}{' …' if len(others) > 3 else ''}",
            hint="convert the checkpoint to safetensors, or look for a safetensors revision of it")
    raise NotFoundError(f"{where}: no weight files (safetensors, GGUF or torch) here")


def first_read_hints(index: Mapping[str, Any] | None) -> dict[str, int]:
    """Bytes to ask for first, per shard: the header's likely size from the tensor names the index
    places there (the reader's default for a shard no index describes)."""
    names: dict[str, list[str]] = {}
    weight_map = (index or {}).get("weight_map")
    for tensor, shard in (weight_map.items() if isinstance(weight_map, dict) else ()):
        if isinstance(shard, str):
            names.setdefault(shard, []).append(tensor)
    return {shard: SAFETENSORS.estimate(tensors) for shard, tensors in names.items() if shard.endswith(
        SAFETENSORS.suffixes)}
