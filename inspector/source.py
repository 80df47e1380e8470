"""Resolve what the user typed (a path, an alias, a Hub repo id) to a Checkpoint.

Order, documented in ``inspect --help`` and the README:

1. an existing path: a ``.safetensors`` file, a folder (one file, sharded with or without an index,
   a Hugging Face cache snapshot or repo folder) or a header snapshot folder;
2. an alias (``inspect aliases``): the bundled header snapshot, no network;
3. a Hub repo id, optionally ``repo@revision``: header-only reads from the Hub.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .aliases import ALIASES, bundled_path
from .checkpoint import WEIGHT_SUFFIXES, Checkpoint, FileEntry, index_shards, json_object
from .errors import InvalidCheckpointError, NotFoundError, UsageError
from .header import PREFIX_BYTES, Header, parse_header, read_header_length
from .safeio import read_regular, regular_size
from .snapshot import JSON_BUDGET, is_snapshot, load_snapshot
from .text import natural_key

_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")
_SKIP_DIRS = {".git", ".cache", "__pycache__", ".huggingface"}

#: A hook the Hub layer installs: (repo_id, revision) -> Checkpoint. Kept as a seam so this module
#: stays transport-free.
HubOpener = Callable[[str, "str | None"], Checkpoint]


_HUB_URL = re.compile(r"^(?:https?://(?:www\.)?huggingface\.co/|hf://)(?:models/)?"
                      r"(?P<repo>[^/@?#]+/[^/@?#]+)(?:/(?:tree|blob|resolve)/(?P<rev>[^/?#]+))?/?(?:[?#].*)?$")


def hub_url(spec: str) -> str | None:
    """``https://huggingface.co/org/name[/tree/rev]`` or ``hf://org/name`` → ``org/name[@rev]``."""
    m = _HUB_URL.match(spec)
    if m is None:
        return None
    from urllib.parse import unquote

    return m.group("repo") + (f"@{unquote(m.group('rev'))}" if m.group("rev") else "")


def split_revision(spec: str) -> tuple[str, str | None]:
    """``org/name@rev`` → (``org/name``, ``rev``)."""
    spec = hub_url(spec) or spec
    if "@" in spec:
        name, _, rev = spec.partition("@")
        if not rev:
            raise UsageError(f"{spec!r}: empty revision after '@'")
        return name, rev
    return spec, None


def looks_like_repo_id(name: str) -> bool:
    return bool(_REPO_ID.match(name)) and ".." not in name and not name.endswith((".safetensors", ".json"))


def open_checkpoint(spec: str, *, hub: HubOpener | None = None, revision: str | None = None) -> Checkpoint:
    """Open whatever ``spec`` names. Raises NotFoundError with a hint when nothing matches."""
    if not spec:
        raise UsageError("no model given", hint="inspect PATH | ALIAS | ORG/NAME")
    path = Path(spec).expanduser()
    if hub_url(spec) is None and path.exists():
        if revision:
            raise UsageError(f"{spec}: --revision applies to Hub repos, not to a local path")
        return open_local(path)
    name, rev = split_revision(spec)
    rev = rev or revision
    alias = ALIASES.get(name.lower())
    if alias is not None and rev is None:
        return load_snapshot(bundled_path(alias), origin="bundled", label=alias.repo_id)
    if alias is not None:
        name = alias.repo_id
    if looks_like_repo_id(name) and "/" in name and hub is not None:
        return hub(name, rev)
    if looks_like_repo_id(name) and "/" in name:
        raise NotFoundError(f"{spec}: not a local path, and Hub access is not available here")
    close = did_you_mean(name.lower(), ALIASES)
    raise NotFoundError(
        f"{spec}: no such file or folder, and not an alias or a Hub repo id (org/name)",
        hint=f"did you mean {close}? (`inspect aliases` lists the bundled models)" if close else
        "`inspect aliases` lists the bundled models; a Hub repo looks like org/name",
    )


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest choice, when one is close enough to be a typo."""
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return found[0] if found else None


def open_local(path: Path) -> Checkpoint:
    """Open a local file or folder, reading only headers."""
    if path.is_file():
        return _open_file(path)
    if not path.is_dir():
        raise NotFoundError(f"{path}: not a file or folder")
    if is_snapshot(path):
        return load_snapshot(path)
    cache = _hf_cache_snapshot(path)
    if cache is not None:
        folder, repo_id, revision = cache
        return _open_folder(folder, origin="hf-cache", repo_id=repo_id, revision=revision)
    return _open_folder(path, origin="folder")


def _open_file(path: Path) -> Checkpoint:
    if path.suffix in WEIGHT_SUFFIXES and path.suffix != ".safetensors":
        raise InvalidCheckpointError(
            f"{path}: a {path.suffix} file; the inspector reads safetensors files only",
            hint="convert it to safetensors, or inspect the repo's .safetensors files",
        )
    header = read_local_header(path, path.name)
    config = _load_json(path.parent / "config.json")
    return Checkpoint(
        label=path.name, origin="file", location=str(path), headers=(header,), config=config,
        files=(FileEntry(path.name, header.file_size),),
    )


def _open_folder(folder: Path, *, origin: str, repo_id: str | None = None,
                 revision: str | None = None) -> Checkpoint:
    files = _list_files(folder)
    names = {f.path for f in files}
    index_name = _pick_index(names)
    index = _load_json(folder / index_name) if index_name else None
    notes: list[str] = []
    if index is not None:
        shard_names = index_shards(index, names, str(folder), index_name)
    else:
        shard_names = sorted((n for n in names if n.endswith(".safetensors") and "/" not in n), key=natural_key)
    if not shard_names:
        weights = sorted(n for n in names if n.endswith(WEIGHT_SUFFIXES))
        if weights:
            raise InvalidCheckpointError(
                f"{folder}: no safetensors files; it holds {', '.join(weights[:3])}"
                + (" …" if len(weights) > 3 else ""),
                hint="the inspector reads safetensors; convert the checkpoint or use its safetensors revision",
            )
        raise NotFoundError(f"{folder}: no safetensors files in this folder")
    headers = tuple(read_local_header(folder / name, name) for name in shard_names)
    return Checkpoint(
        label=repo_id or folder.name,
        origin=origin,
        location=str(folder),
        headers=headers,
        config=_load_json(folder / "config.json") if "config.json" in names else None,
        index=index,
        repo_id=repo_id,
        revision=revision,
        files=tuple(files),
        notes=tuple(notes),
    )


def read_local_header(path: Path, name: str, *, lenient: bool = False) -> Header:
    """Read and validate one file's header: two small reads, never the data. Only a regular file
    is opened (a FIFO named like a shard would block forever). ``lenient`` (the audit) leaves the
    end-of-file checks to the caller."""
    size = regular_size(path)
    prefix = read_regular(path, PREFIX_BYTES)
    n = read_header_length(prefix, file=name, file_size=None if lenient else size)
    body = read_regular(path, n, PREFIX_BYTES)
    return parse_header(prefix + body, file=name, file_size=None if lenient else size)


def _list_files(folder: Path) -> list[FileEntry]:
    entries: list[FileEntry] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in names:
            full = Path(root) / name
            try:
                size: int | None = full.stat().st_size  # follows HF cache symlinks into blobs/
            except OSError:
                size = None
            entries.append(FileEntry(full.relative_to(folder).as_posix(), size))
    entries.sort(key=lambda f: natural_key(f.path))
    return entries


def _pick_index(names: set[str]) -> str | None:
    if "model.safetensors.index.json" in names:
        return "model.safetensors.index.json"
    candidates = sorted(n for n in names if n.endswith(".safetensors.index.json") and "/" not in n)
    return candidates[0] if candidates else None


def _load_json(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    raw = read_regular(path, JSON_BUDGET + 1)
    if len(raw) > JSON_BUDGET:
        raise InvalidCheckpointError(f"{path}: over {JSON_BUDGET:,} bytes; not a config or index this tool reads")
    return json_object(raw, str(path))


def _hf_cache_snapshot(path: Path) -> tuple[Path, str, str | None] | None:
    """Recognise a Hugging Face cache folder: ``models--org--name`` or one of its snapshots."""
    resolved = path.resolve()
    parts = resolved.parts
    for i, part in enumerate(parts):
        if part.startswith("models--"):
            repo_id = part.removeprefix("models--").replace("--", "/")
            repo_dir = Path(*parts[: i + 1])
            rest = parts[i + 1 :]
            if len(rest) >= 2 and rest[0] == "snapshots":
                return repo_dir / "snapshots" / rest[1], repo_id, rest[1]
            if not rest:
                return _newest_snapshot(repo_dir, repo_id)
    return None


def _newest_snapshot(repo_dir: Path, repo_id: str) -> tuple[Path, str, str | None] | None:
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        sha = ref.read_text().strip()
        if (repo_dir / "snapshots" / sha).is_dir():
            return repo_dir / "snapshots" / sha, repo_id, sha
    snaps = sorted((p for p in (repo_dir / "snapshots").glob("*") if p.is_dir()),
                   key=lambda p: p.stat().st_mtime)
    if not snaps:
        raise NotFoundError(f"{repo_dir}: a Hugging Face cache folder with no snapshots")
    return snaps[-1], repo_id, snaps[-1].name
