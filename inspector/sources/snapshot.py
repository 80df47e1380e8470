"""Header snapshots: a checkpoint's config, index and safetensors headers, without the weights.

A snapshot is a folder::

    inspector-snapshot.json      the manifest (below)
    config.json                  small files of the repo, stored whole
    model.safetensors.index.json
    headers/<file>.hdr           the first 8 + n bytes of each safetensors file, exactly
    headers/<file>.hdr.gz        ... or the same bytes gzip-compressed
    headers.pack                 ... or (version 3, the header cache) the headers back to back, each
                                 entry naming its ``span``: [offset, length] in the file
    headers.pack.gz              ... and there the large ones, each one gzip member

The manifest::

    {"format": "inspector-header-snapshot", "version": 2,
     "repo_id": "meta-llama/Meta-Llama-3-8B" | null, "revision": "<40-hex>" | null,
     "provenance": "free text: how the snapshot was made",
     "files": [{"path": "config.json", "size": 654, "stored": true},
               {"path": "model-00001-of-00004.safetensors", "size": 4976698672,
                "header": "headers/model-00001-of-00004.safetensors.hdr", "format": "safetensors"},
               {"path": "original/consolidated.00.pth", "size": 16060617592}]}

A version 3 entry of a packed snapshot reads ``"header": "headers.pack", "span": [0, 5437]``: two files at
most for a repo of 191 shards instead of 191 (creating a file is most of a cold read's cache write). A
header is read by its span alone, compressed or not as a header file is, under the same limit.

``files`` lists every file of the repo with its true size; a safetensors file's header bytes plus
that size are all the inspector, the diff and the audit need. The local Hub server of the tests
serves a snapshot as full-size virtual files: the header, then zeros.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from inspector import repos
from inspector.errors import (
    RAISE,
    HeaderError,
    InvalidCheckpointError,
    NotFoundError,
    ProblemSink,
    SeveralFiles,
    UsageError,
)
from inspector.formats.gguf import GGUF_CONFIG
from inspector.formats.registry import REPO_HEADER_BUDGET, max_header, reader_for, reader_named
from inspector.model import SIDE_FILES, Checkpoint, FileEntry, Origin, Problems, Provenance, SideFiles, WeightFile
from inspector.safeio import (
    commit_id,
    gunzip_bounded,
    inside,
    parse_document,
    parse_json_object,
    read_json_file,
    read_regular,
    regular_size,
    relative_name,
    write_folder,
)
from inspector.sources.assemble import (
    TOKENIZER_FILES,
    TOKENIZER_JSON,
    assemble,
    checkpoint_of,
    pick_index,
    weight_files,
)

MANIFEST: Final = "inspector-snapshot.json"
T = TypeVar("T")
FORMAT: Final = "inspector-header-snapshot"
VERSION: Final = 2  # 2 adds each header's "format"; version 1 (safetensors only) still reads
PACKED_VERSION: Final = 3  # 3 adds each header's "span" in a pack of them (``write_snapshot(pack=True)``)
READABLE: Final = (1, 2, 3)
PACK: Final = "headers.pack"  # and PACK + ".gz", whose spans are gzip members
#: the manifest: a line a file of the repo (DeepSeek-V3's 163 shards: 29 kB; a listing of 300,000 files
#: about 30 MB), refused by its size before a byte is read, and its values counted before it is parsed
#: (``MANIFEST_VALUES``: four to six a file); a stored config or index is held to safeio.JSON_BUDGET
MANIFEST_BUDGET: Final = 32 * 1024 * 1024
MANIFEST_VALUES: Final = 2_000_000
#: temporary folders older than this, or of a process that is gone, are removed on the next write


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    path: str
    size: int | None
    header: str | None = None  # relative path of the stored header bytes
    stored: bool = False  # the whole file is stored in the snapshot
    format: str | None = None  # the reader of the header bytes (version 2); None: by the file's suffix
    rebuilt: bool = False  # a stored file made from another answer, not read (``SideFiles.rebuilt``)
    span: tuple[int, int] | None = None  # (offset, length) of the header's bytes in a pack (version 3)


def is_snapshot(folder: Path) -> bool:
    return (folder / MANIFEST).is_file()


def read_manifest(folder: Path) -> dict[str, Any]:
    if not (folder / MANIFEST).exists():
        raise NotFoundError(f"{folder}: not a header snapshot (no {MANIFEST})")
    size = regular_size(folder / MANIFEST)
    if size > MANIFEST_BUDGET:
        raise InvalidCheckpointError(f"{folder / MANIFEST}: {size:,} bytes, over the {MANIFEST_BUDGET:,}-byte budget "
                                     "of a snapshot manifest; refusing to read it",
                                     hint="save the snapshot again, or delete the folder")
    manifest = parse_json_object(read_regular(folder / MANIFEST, MANIFEST_BUDGET), f"{folder / MANIFEST}",
                                 max_values=MANIFEST_VALUES)
    if manifest.get("format") != FORMAT:
        raise InvalidCheckpointError(f"{folder / MANIFEST}: not an {FORMAT} manifest")
    if manifest.get("version") not in READABLE:
        raise InvalidCheckpointError(
            f"{folder / MANIFEST}: snapshot version {manifest.get('version')!r} is not supported "
            f"(this inspector reads versions {', '.join(map(str, READABLE))})",
            hint="upgrade the inspector, or save the snapshot again",
        )
    return manifest


def snapshot_files(manifest: Mapping[str, Any], folder: Path) -> list[SnapshotFile]:
    files = []
    entries = manifest.get("files") or []
    if not isinstance(entries, list):
        raise InvalidCheckpointError(f"{folder / MANIFEST}: files is not a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvalidCheckpointError(f"{folder / MANIFEST}: files[{i}] is not an object")
        path = relative_name(entry.get("path"), f"{folder / MANIFEST}: files[{i}].path")
        size = entry.get("size")
        header = entry.get("header")
        if header is not None:
            header = relative_name(header, f"{folder / MANIFEST}: files[{i}].header")
        fmt = entry.get("format")
        span = entry.get("span")
        if span is not None and not (header is not None and isinstance(span, list) and len(span) == 2
                                     and all(type(n) is int and 0 <= n < 2**63 for n in span)):
            raise InvalidCheckpointError(f"{folder / MANIFEST}: files[{i}].span is not [offset, length] in a pack")
        files.append(SnapshotFile(
            path=path,
            size=size if type(size) is int and size >= 0 else None,
            header=header,
            stored=bool(entry.get("stored")),
            format=fmt if isinstance(fmt, str) else None,
            rebuilt=entry.get("rebuilt") is True,
            span=(span[0], span[1]) if span is not None else None,
        ))
    return files


def read_header_bytes(folder: Path, relative: str, limit: int | None = None) -> bytes:
    """A stored header's bytes, at most ``limit`` (default: the largest any format may take)."""
    limit = max_header() if limit is None else limit
    path = inside(folder, relative, f"{folder / MANIFEST}: header path")
    try:
        data = read_regular(path, limit + 1)
    except NotFoundError as exc:
        raise InvalidCheckpointError(f"{exc.message} (a header the snapshot lists)") from None
    if len(data) > limit:
        raise InvalidCheckpointError(f"{path}: over {limit:,} bytes, more than such a header may be")
    if relative.endswith(".gz"):
        data = gunzip_bounded(data, limit, str(path))
    return data


class StoredHeaders:
    """A snapshot's stored header bytes: a file each (versions 1 and 2), or a span of a pack (version 3),
    read by itself (``pread``), under the limit a header file is held to and gunzipped as one is. All
    the bytes one snapshot yields, after inflating, are held to ``REPO_HEADER_BUDGET`` (a Hub repo's),
    and a header file or span is read for one file only: a 772 kB manifest naming one gzip member of a
    100,000-tensor header for 300 files once cost 3.7 GB."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._paths: dict[str, Path] = {}  # a pack's name → its path, resolved and checked once
        self._named: dict[tuple[str, tuple[int, int] | None], str] = {}  # (header, span) → the file it is
        self.left = REPO_HEADER_BUDGET

    def read(self, f: SnapshotFile, limit: int | None = None) -> bytes:
        """``f``'s header bytes, at most ``limit`` (default: the largest any format may take)."""
        assert f.header is not None
        first = self._named.setdefault((f.header, f.span), f.path)
        if first != f.path:
            raise InvalidCheckpointError(f"{self.folder / MANIFEST}: {f.path} names the header bytes of {first} "
                                         f"({f.header}{'' if f.span is None else f' {list(f.span)}'}); each "
                                         "file's header is its own")
        data = self._read(f, limit)
        if len(data) > self.left:
            raise InvalidCheckpointError(f"{self.folder / MANIFEST}: its headers yield more than "
                                         f"{REPO_HEADER_BUDGET:,} bytes, a repo's budget; refusing to read more")
        self.left -= len(data)
        return data

    def _read(self, f: SnapshotFile, limit: int | None) -> bytes:
        assert f.header is not None
        if f.span is None:
            return read_header_bytes(self.folder, f.header, limit)
        limit = max_header() if limit is None else limit
        offset, length = f.span
        path = self._paths.get(f.header)
        if path is None:
            path = self._paths[f.header] = inside(self.folder, f.header, f"{self.folder / MANIFEST}: header path")
        if length > limit:
            raise InvalidCheckpointError(f"{self.folder / MANIFEST}: {f.path}: a span of {length:,} bytes, more than "
                                         f"such a header may be ({limit:,})")
        try:
            data = read_regular(path, length, offset)
        except NotFoundError as exc:
            raise InvalidCheckpointError(f"{exc.message} (a header pack the snapshot lists)") from None
        if len(data) < length:
            raise InvalidCheckpointError(f"{path}: ends before the span [{offset:,}, {length:,}] of {f.path}")
        if f.header.endswith(".gz"):
            data = gunzip_bounded(data, limit, f"{path} [{offset:,}, {length:,}]")
        return data


def load_snapshot(folder: Path, *, origin: Origin = "snapshot", label: str | None = None,
                  problems: ProblemSink = RAISE, only: str | None = None) -> Checkpoint:
    """Read a header snapshot folder into a Checkpoint. Headers are validated as usual; with the
    audit's collecting sink (``problems``) a header that claims more data than the file holds is kept,
    for the audit to report. A snapshot of several alternative files (one model in several GGUF
    quantisations) is read as a folder of them is: ``SeveralFiles``, whose opener reads one
    (``only``), labelled by its file."""
    manifest = read_manifest(folder)
    files = snapshot_files(manifest, folder)
    if any(f.stored and f.path in repos.index_files() for f in files):
        return _load_composite(folder, manifest, files, origin=origin, label=label, problems=problems)
    if only is None:
        try:
            weight_files([f.path for f in files if f.header is not None], label or folder.name)
        except SeveralFiles as several:
            several.opener = lambda name: load_snapshot(folder, origin=origin, label=label, problems=problems,
                                                          only=name)
            several.listing = {f.path: f.size for f in files}
            raise
    elif not any(f.path == only and f.header is not None for f in files):
        raise NotFoundError(f"{label or folder}: no file {only!r} in this snapshot")
    headers: list[WeightFile] = []
    errors: list[HeaderError] = []
    stored_headers = StoredHeaders(folder)
    for f in files:
        if f.header is None or (only is not None and f.path != only):
            continue
        reader = reader_named(f.format) if f.format else reader_for(f.path)
        if reader is None:
            raise InvalidCheckpointError(f"{folder / MANIFEST}: {f.path}: unknown format {f.format!r}",
                                         hint="upgrade the inspector")
        blob = stored_headers.read(f, reader.max_header)
        try:
            headers.append(reader.parse(blob, file=f.path, file_size=problems.checked_size(f.size)))
        except HeaderError as exc:
            errors.append(problems.header(exc))
    config = _read_json(folder, "config.json", files)
    if config is None and len(headers) == 1 and (reader := reader_named(headers[0].format)) is not None:
        config = reader.config(headers[0])  # a file that carries its own (GGUF metadata), as assemble reads it
    index_name = pick_index(f.path for f in files if f.stored)
    # DeepSeek-V3's index is 8 MB of JSON that `inspect` never looks at: read it when first used
    index = LazyJSON(lambda: _read_json(folder, index_name, files) or {}) if index_name else None
    repo_id, revision, notes = _identity(manifest, folder)
    side = {n: doc for n in SIDE_FILES if (doc := _read_json(folder, n, files)) is not None}
    smalls = {f.path: read_json_file(inside(folder, f.path, f"{folder / MANIFEST}: stored file"))
              for f in files if f.stored and (f.path in TOKENIZER_FILES or f.path == TOKENIZER_JSON)}
    named = label or repo_id or folder.name
    return Checkpoint(
        label=named if only is None else f"{named}/{only}",
        provenance=Provenance(origin, str(folder), repo_id, revision, notes=notes),
        headers=tuple(headers),
        config=config,
        index=index,
        files=tuple(FileEntry(f.path, f.size) for f in files),
        side=SideFiles(index_name, side, smalls, frozenset(f.path for f in files if f.stored and f.rebuilt)),
        problems=Problems(tuple(errors)),
    )


def _identity(manifest: Mapping[str, Any], folder: Path) -> tuple[str | None, str | None, tuple[str, ...]]:
    """The manifest's repo id, commit (checked) and provenance note."""
    repo_id = manifest.get("repo_id") if isinstance(manifest.get("repo_id"), str) else None
    revision = manifest.get("revision")
    if revision is not None:
        revision = commit_id(revision, f"{folder / MANIFEST}: revision")
    provenance = manifest.get("provenance")
    return repo_id, revision, (f"snapshot provenance: {provenance}",) if isinstance(provenance, str) and provenance \
        else ()


def _load_composite(folder: Path, manifest: Mapping[str, Any], files: list[SnapshotFile], *, origin: Origin,
                    label: str | None, problems: ProblemSink) -> Checkpoint:
    """A snapshot of a multi-component repo (a pipeline's model_index.json, a sentence-transformers
    modules.json stored): read again through the one assembly, over the stored files and headers
    as a folder would be, so its components are what a first read found."""
    source = SnapshotSource(folder, files, problems)
    readable = {f.path: f.size for f in files if f.stored or f.header is not None}
    parts = assemble(source, readable)
    repo_id, revision, notes = _identity(manifest, folder)
    return checkpoint_of(parts, label=label or repo_id or folder.name,
                         provenance=Provenance(origin, str(folder), repo_id, revision, notes=notes),
                         files=tuple(FileEntry(f.path, f.size) for f in files))


class SnapshotSource:
    """A snapshot as the assembly's source: stored files whole, weight files parsed from their
    stored header bytes; nothing else of the repo is there to read."""

    remote = False

    def __init__(self, folder: Path, files: list[SnapshotFile], problems: ProblemSink = RAISE) -> None:
        self.folder, self.problems = folder, problems
        self.where = str(folder)
        self.files = {f.path: f for f in files}
        self.headers = StoredHeaders(folder)

    def small(self, name: str) -> bytes:
        f = self.files.get(name)
        if f is None or not f.stored:
            raise NotFoundError(f"{self.folder}: the snapshot does not store {name}")
        return read_json_file(inside(self.folder, name, f"{self.folder / MANIFEST}: stored file"))

    def prefetch(self, names: list[str]) -> None:
        return None

    def read_file(self, name: str, *, first: int | None) -> WeightFile:
        f = self.files.get(name)
        reader = reader_named(f.format) if f is not None and f.format else reader_for(name)
        if f is None or f.header is None or reader is None:
            raise InvalidCheckpointError(f"{self.folder}: the snapshot holds no header of {name}")
        blob = self.headers.read(f, reader.max_header)
        return reader.parse(blob, file=name, file_size=self.problems.checked_size(f.size))

    def each(self, read: Callable[[str], T], names: list[str]) -> list[T]:
        return [read(n) for n in names]


class LazyJSON(Mapping[str, Any]):
    """A JSON object read from disk the first time it is looked into."""

    def __init__(self, load: Callable[[], dict[str, Any]]) -> None:
        self._load = load
        self._value: dict[str, Any] | None = None

    def _get(self) -> dict[str, Any]:
        if self._value is None:
            self._value = self._load()
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


def _read_json(folder: Path, name: str | None, files: list[SnapshotFile]) -> dict[str, Any] | None:
    if name is None or not any(f.path == name and f.stored for f in files):
        return None
    path = inside(folder, name, f"{folder / MANIFEST}: stored file")
    try:
        raw = read_json_file(path)
    except NotFoundError as exc:
        raise InvalidCheckpointError(f"{exc.message} (a file the snapshot lists)") from None
    return parse_document(raw, name, f"{path}")


# --- writing ------------------------------------------------------------------------------


def write_snapshot(
    folder: Path,
    *,
    repo_id: str | None,
    revision: str | None,
    files: list[tuple[str, int | None]],
    headers: Mapping[str, bytes],
    stored: Mapping[str, bytes],
    provenance: str,
    formats: Mapping[str, str] | None = None,
    rebuilt: Collection[str] = (),
    compress_over: int | None = 65536,
    compress_level: int = 1,
    pack: bool = False,
) -> None:
    """Write a snapshot folder. ``headers`` maps a weight file's path to its records' ``head``
    (the leading bytes its reader parses back), ``formats`` to its reader's name (default: by suffix);
    ``stored`` maps small files (config, index) to their bytes. Writes to a temporary folder
    beside the target and renames it into place, so a crash never leaves half a snapshot. ``pack``
    writes the headers into at most two files (version 3), as the header cache does: a file's creation
    is most of the cost of caching a many-shard repo (191 headers: 6.7–9.3 ms a file each, 2.3–2.4 ms
    packed)."""
    folder = folder.resolve()
    if folder.exists() and not (folder.is_dir() and (is_snapshot(folder) or not any(folder.iterdir()))):
        raise UsageError(
            f"{folder} exists and is not a header snapshot; refusing to overwrite it",
            hint="choose a new or empty folder",
        )
    if revision is not None:
        commit_id(revision, "snapshot revision")
    for path, _ in files:
        relative_name(path, "snapshot file")
    entries: list[dict[str, Any]] = []
    blobs: dict[str, bytes] = {}
    packs: dict[str, list[bytes]] = {PACK: [], PACK + ".gz": []}
    ends = dict.fromkeys(packs, 0)
    for path, size in files:
        entry: dict[str, Any] = {"path": path, "size": size}
        if path in headers:
            blob = headers[path]
            name = PACK if pack else f"headers/{path}.hdr"
            if compress_over is not None and len(blob) > compress_over:
                name += ".gz"
                # level 1 (the default): a tenth of level 9's time on header JSON, a little larger
                blob = gzip.compress(blob, compresslevel=compress_level, mtime=0)
            if pack:  # one gzip member a large header: a header is read by its span alone
                entry["span"] = [ends[name], len(blob)]
                packs[name].append(blob)
                ends[name] += len(blob)
            else:
                blobs[name] = blob
            entry["header"] = name
            reader = reader_for(path)
            entry["format"] = (formats or {}).get(path) or (reader.name if reader else "safetensors")
        elif path in stored:
            blobs[path] = stored[path]
            entry["stored"] = True
            if path in rebuilt:  # made from another answer, not read (``SideFiles.rebuilt``)
                entry["rebuilt"] = True
        entries.append(entry)
    blobs.update({name: b"".join(parts) for name, parts in packs.items() if parts})
    manifest = {"format": FORMAT, "version": PACKED_VERSION if pack else VERSION, "repo_id": repo_id,
                "revision": revision, "provenance": provenance, "files": entries}
    blobs[MANIFEST] = (json.dumps(manifest, indent=1) + "\n").encode()
    # a concurrent writer that put its copy in place first wrote the same bytes: ours is dropped
    write_folder(folder, blobs, "snapshot file", replaceable=is_snapshot, written_by_another=is_snapshot)


def save_checkpoint(checkpoint: Checkpoint, folder: Path, *, force: bool = False) -> Path:
    """Write any opened checkpoint as a header snapshot: its headers byte for byte, its config and
    index (as JSON), and the list of every file with its size. A snapshot of another model (repo
    or revision) already in ``folder`` is replaced only with ``force``."""
    if is_snapshot(folder) and not force:
        try:
            old = read_manifest(folder)
        except InvalidCheckpointError:
            old = {}
        if (old.get("repo_id"), old.get("revision")) != (checkpoint.provenance.repo_id, checkpoint.provenance.revision):
            what = f"{old.get('repo_id') or 'an unnamed model'}@{(old.get('revision') or 'unknown')[:12]}"
            raise UsageError(f"{folder} holds a snapshot of {what}; refusing to replace it",
                             hint="choose another folder, or pass ⟨force⟩")
    for h in checkpoint.headers:
        reader = reader_named(h.format)
        if reader is None or not reader.keeps_head:
            raise InvalidCheckpointError(
                f"{h.file}: a {h.format} file's records cannot be kept in a header snapshot (they need more of "
                "the file than its first bytes); nothing was written",
                hint="a snapshot holds safetensors and GGUF headers; keep the file itself, or convert it to "
                     "safetensors")
    headers = {h.file: h.head for h in checkpoint.headers}
    formats = {h.file: h.format for h in checkpoint.headers}
    stored: dict[str, bytes] = {}
    if checkpoint.config is not None and checkpoint.config.get(GGUF_CONFIG) is not True:
        # (a config made from a GGUF's metadata is made again from its header: no config.json the repo lacks)
        stored["config.json"] = (json.dumps(checkpoint.config, indent=2) + "\n").encode()
    index_name = checkpoint.side.index_name or pick_index(f.path for f in checkpoint.files) \
        or "model.safetensors.index.json"
    for path, doc in checkpoint.side.json.items():
        stored[path] = (json.dumps(dict(doc), indent=2) + "\n").encode()
    if checkpoint.index is not None:
        stored[index_name] = (json.dumps(dict(checkpoint.index), indent=2) + "\n").encode()
    stored.update(checkpoint.side.raw)  # tokenizer, chat template and generation files, as read
    stored.update(_component_files(checkpoint))
    sizes = {f.path: f.size for f in checkpoint.files}
    for h in checkpoint.headers:
        sizes.setdefault(h.file, h.file_size)
    for name, data in stored.items():
        sizes.setdefault(name, len(data))
    # where it came from, without the saver's machine: a Hub repo by its id, a local folder by its name alone
    p = checkpoint.provenance
    source = p.repo_id if p.origin in ("hub", "hf-cache") and p.repo_id else Path(p.location).name
    provenance = f"saved by inspector from {checkpoint.provenance.origin} {source}"
    write_snapshot(folder, repo_id=checkpoint.provenance.repo_id, revision=checkpoint.provenance.revision,
                   files=sorted(sizes.items()), headers=headers, stored=stored, provenance=provenance,
                   formats=formats, rebuilt=checkpoint.side.rebuilt)
    return folder.resolve()


def _component_files(checkpoint: Checkpoint) -> dict[str, bytes]:
    """A multi-component repo's index and each component's small files under its folder, so that
    the snapshot is assembled again as the repo was (``_load_composite``). The index is written from
    what was read of it: each component's folder, library and class (and the pipeline's class)."""
    if not checkpoint.components:
        return {}
    kind = repos.kind_of(checkpoint)
    if kind is None:
        return {}
    index = kind.index_of(checkpoint.composite_class,
                          [repos.Listed(c.name, c.library, c.class_name) for c in checkpoint.components])
    out = {kind.index_file: (json.dumps(index, indent=2) + "\n").encode()}
    for c in checkpoint.components:
        sub = c.checkpoint
        if sub is None:
            continue
        if sub.config is not None:
            out[f"{c.name}/config.json"] = (json.dumps(sub.config, indent=2) + "\n").encode()
        if sub.index is not None and sub.side.index_name:
            out[f"{c.name}/{sub.side.index_name}"] = (json.dumps(dict(sub.index), indent=2) + "\n").encode()
        for name, doc in sub.side.json.items():
            out[f"{c.name}/{name}"] = (json.dumps(dict(doc), indent=2) + "\n").encode()
        out.update({f"{c.name}/{name}": raw for name, raw in sub.side.raw.items()})
    return out
