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
from typing import Any, Final, TypeVar
from urllib.parse import unquote

from inspector import repos
from inspector.errors import (
    COLLECT,
    RAISE,
    ConfigOnly,
    InspectorError,
    InvalidCheckpointError,
    NotFoundError,
    NotRegularFile,
    ProblemSink,
    SeveralFiles,
    UsageError,
)
from inspector.formats.gguf import split_parts
from inspector.formats.registry import SAFETENSORS, reader_by_magic, reader_for, weight_suffixes
from inspector.model import Checkpoint, FileEntry, Origin, Problems, Provenance, WeightFile, natural_key
from inspector.safeio import (
    COMMIT,
    SHA256,
    document_budget,
    inside,
    is_repo_id,
    local_path,
    open_regular,
    pread_all,
    read_json_file,
    read_ref,
    regular_size,
)
from inspector.sources.assemble import assemble, checkpoint_of, index_shards, json_object, pick_index
from inspector.sources.bundled import ALIASES, bundled_path
from inspector.sources.header_cache import hf_cache_repo
from inspector.sources.snapshot import is_snapshot, load_snapshot

T = TypeVar("T")
_SKIP_DIRS = {".git", ".cache", "__pycache__", ".huggingface"}

#: A hook the Hub layer installs: (repo_id, revision, problems, only) -> Checkpoint. Kept as a seam so this
#: module stays transport-free.
HubOpener = Callable[[str, "str | None", ProblemSink, "str | None"], Checkpoint]


_HUB_URL = re.compile(r"^(?:https?://(?:www\.)?huggingface\.co/|hf://)(?:models/)?"
                      r"(?P<repo>[^/@?#]+/[^/@?#]+)(?:/(?P<how>tree|blob|resolve)/(?P<rev>[^/?#]+)"
                      r"(?P<path>/[^?#]*)?)?/?(?:[?#].*)?$")
#: a file a ``/blob/`` or ``/resolve/`` URL may name that is a model of its own (one GGUF of several, a
#: weight file); any other file (``config.json``, a README) stands for its repo
_WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth")


def hub_url(spec: str) -> str | None:
    """A Hub address as the resolver's spec: ``https://huggingface.co/org/name[/tree/rev]`` or
    ``hf://org/name`` → ``org/name[@rev]``; a page of a file (``/blob/rev/FILE``, ``/resolve/rev/FILE``)
    → the repo, or ``org/name/FILE[@rev]`` for a weight file; a folder (``/tree/rev/unet``) → that
    component, ``org/name/unet[@rev]``."""
    m = _HUB_URL.match(spec)
    if m is None:
        return None

    repo = m.group("repo")
    path = unquote(m.group("path") or "").strip("/")
    if path and (m.group("how") == "tree" or path.endswith(_WEIGHT_SUFFIXES)):
        repo = f"{repo}/{path}"
    return repo + (f"@{unquote(m.group('rev'))}" if m.group("rev") else "")


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
    return is_repo_id(name) and not name.endswith((".safetensors", ".json"))


def open_checkpoint(spec: str, *, hub: HubOpener | None = None, revision: str | None = None,
                    lenient: bool = False) -> Checkpoint:
    """The one place that turns what the user typed into a checkpoint, and the one place a run's
    problem sink is decided (``errors.ProblemSink``, carried by every source from here). ``lenient``
    (the audit): per-file header errors, a broken index and missing shards are collected on the
    checkpoint instead of raised, and no end-of-file check is applied to the headers (the audit makes
    its own). Raises NotFoundError with a hint when nothing matches."""
    return _open(spec, hub, revision, COLLECT if lenient else RAISE)


def _open(spec: str, hub: HubOpener | None, revision: str | None, problems: ProblemSink) -> Checkpoint:
    if not spec:
        raise UsageError("no model given", hint="inspect PATH | ALIAS | ORG/NAME")
    path = local_path(spec) if hub_url(spec) is None else None
    if path is not None:
        if revision:
            raise UsageError(f"{spec}: ⟨revision⟩ applies to Hub repos, not to a local path")
        return open_local(path, problems=problems)
    name, rev = split_revision(spec)
    rev = rev or revision
    if ":" in name:  # REPO:QUANT, llama.cpp's and ollama's way of naming one GGUF of a repo
        name, _, quant = name.rpartition(":")
        return one_quantisation(lambda: _open(name, hub, rev, problems), quant, spec,
                                lambda where, file: _open(f"{where}/{file}", hub, rev, problems))
    only = component = None
    parts = name.split("/")
    if len(parts) > 2 and reader_for(name):  # org/name/FILE.gguf: one file of a repo
        name, only = "/".join(parts[:2]), "/".join(parts[2:])
    elif len(parts) == 3 and looks_like_repo_id("/".join(parts[:2])) and is_repo_id(f"x/{parts[2]}"):
        # org/name/COMPONENT: one component of a pipeline
        name, component = "/".join(parts[:2]), parts[2]
    if component is not None:
        try:
            whole = _open(name, hub, rev, problems)
        except SeveralFiles as several:  # org/name/Q4_K_M of a repo of GGUF files: that quantisation
            return _file_of(several, quant_file(several.files, parts[2], several.where),
                            lambda where, file: _open(f"{where}/{file}", hub, rev, problems))
        return pick_component(whole, component)
    alias = ALIASES.get(name.lower())
    if alias is not None and rev is None and only is None:
        return load_snapshot(bundled_path(alias), origin="bundled", label=alias.repo_id, problems=problems)
    if alias is not None:
        name = alias.repo_id
    if looks_like_repo_id(name) and "/" in name and hub is not None:
        return hub(name, rev, problems, only)
    if looks_like_repo_id(name) and "/" in name:
        raise NotFoundError(f"{spec}: not a local path, and Hub access is not available here")
    if name.count("/") == 1 and not name.startswith((".", "/", "~")) and reader_for(name) is None \
            and not name.endswith(".json"):
        raise UsageError(f"{spec}: no such path, and not a Hub repo id: a repo id is org/name, each part ASCII "
                         "letters, digits, '.', '_' or '-'", hint="check the spelling, or give a path that exists")
    close = did_you_mean(name.lower(), ALIASES)
    raise NotFoundError(
        f"{spec}: no such file or folder, and not an alias or a Hub repo id (org/name)",
        hint=f"did you mean {close}? (`inspect aliases` lists the bundled models)" if close else
        "`inspect aliases` lists the bundled models; a Hub repo looks like org/name",
    )


#: a quantisation's name as llama.cpp's files carry it (Q4_K_M, IQ4_XS, F16, BF16, Q8_0)
_QUANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{0,31}")


def quant_file(files: Iterable[str], quant: str, where: str) -> str:
    """The one file of ``files`` whose name carries the quantisation ``quant`` (any case), between the
    name's separators: ``Q4_K`` names neither ``…-Q4_K_M.gguf`` nor ``…-Q4_K_S.gguf``. None or several
    such files is an error naming the files there are."""
    if _QUANT_NAME.fullmatch(quant) is None:
        raise UsageError(f"{where}: {quant[:40]!r} is not a quantisation's name", hint="for example Q4_K_M or Q8_0")
    files = list(files)
    tag = re.compile(rf"(?:^|[.\-_/]){re.escape(quant)}(?=$|[.\-])", re.IGNORECASE)
    found = [f for f in files if tag.search(f.rsplit("/", 1)[-1].removesuffix(".gguf"))]
    shown = ", ".join(files[:8]) + (" …" if len(files) > 8 else "")
    if not found:
        raise NotFoundError(f"{where}: no file of quantisation {quant}", hint=f"its files: {shown}")
    if len(found) > 1:
        raise UsageError(f"{where}: {len(found)} files of quantisation {quant} ({', '.join(found[:4])})",
                         hint=f"name one file: inspect {where}/{found[0]}")
    return found[0]


def one_quantisation(open_whole: Callable[[], Checkpoint], quant: str, spec: str,
                     open_file: Callable[[str, str], Checkpoint]) -> Checkpoint:
    """``REPO:QUANT`` (or ``FOLDER:QUANT``): the file of that quantisation of a repo of several GGUF
    files; a repo of one model file answers when that file carries the name, else names the file it has."""
    try:
        whole = open_whole()
    except SeveralFiles as several:
        return _file_of(several, quant_file(several.files, quant, several.where), open_file)
    files = [h.file for h in whole.headers]
    quant_file(files, quant, spec.rpartition(":")[0])  # the one model file must be that quantisation
    return whole


def _file_of(several: SeveralFiles, file: str, open_file: Callable[[str, str], Checkpoint]) -> Checkpoint:
    """One file of several, with what the source already read where it can (a Hub repo's listing)."""
    if several.opener is not None:
        opened = several.opener(file)
        assert isinstance(opened, Checkpoint)
        return opened
    return open_file(several.where, file)


def pick_component(checkpoint: Checkpoint, name: str) -> Checkpoint:
    """One component of a multi-component repo (``org/name/unet``), or a usage error listing them."""
    found = checkpoint.component(name)
    if found is not None:
        return found
    with_weights = [c.name for c in checkpoint.components if c.checkpoint is not None]
    if not checkpoint.components:
        raise NotFoundError(f"{checkpoint.label}/{name}: {checkpoint.label} is not a multi-component repo "
                            f"(no {' or '.join(repos.index_files())})", hint=f"inspect {checkpoint.label}")
    close = did_you_mean(name, with_weights)
    raise NotFoundError(f"{checkpoint.label}: no component {name!r} with weights",
                        hint=(f"did you mean {close}? " if close else "") + "components with weights: " +
                        ", ".join(with_weights))


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest choice, when one is close enough to be a typo."""
    # deferred: 1 ms at import (difflib)
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return found[0] if found else None


def open_local(path: Path, *, problems: ProblemSink = RAISE) -> Checkpoint:
    """Open a local file or folder, reading only headers."""
    if path.is_file():
        return _open_file(path, problems)
    if not path.is_dir():
        raise NotFoundError(f"{path}: not a file or folder")
    if is_snapshot(path):
        return load_snapshot(path, problems=problems)
    cache = _hf_cache_snapshot(path)
    if cache is not None:
        folder, repo_id, revision = cache
        return open_folder(folder, origin="hf-cache", repo_id=repo_id, revision=revision, problems=problems)
    return open_folder(path, origin="folder", problems=problems)


#: the files beside the weights (config, index, tokenizer, card, chat template): a path to one of them
#: stands for the folder it belongs to (a config.json was read as a safetensors header: "7e18 bytes")
SIDE_FILE_SUFFIXES: Final = (".json", ".md", ".txt", ".jinja", ".model", ".py", ".yaml", ".yml", ".tiktoken")


def _open_file(path: Path, problems: ProblemSink) -> Checkpoint:
    if reader_for(path.name) is None and path.name.lower().endswith(SIDE_FILE_SUFFIXES):
        return open_local(path.parent, problems=problems)
    if reader_for(path.name) is None and path.name.endswith(weight_suffixes()):
        raise InvalidCheckpointError(
            f"{path}: a {path.suffix} file; the inspector reads safetensors, GGUF and torch files",
            hint="convert it to safetensors, or inspect the repo's .safetensors files",
        )
    size = regular_size(path)
    listing: dict[str, int | None] = {path.name: size}
    for part in split_parts(path.name) or ():  # a split GGUF's part: every part beside it, read as one model
        if part != path.name and (path.parent / part).is_file():
            listing[part] = regular_size(path.parent / part)
    if (path.parent / "config.json").exists():
        listing["config.json"] = None
    parts = assemble(LocalFolder(path.parent, problems), listing, only=path.name)
    return Checkpoint(
        label=path.name, provenance=Provenance("file", str(path), root=str(path.parent)), headers=parts.headers,
        config=parts.config, files=tuple(FileEntry(h.file, listing.get(h.file)) for h in parts.headers) or (
            FileEntry(path.name, size),), problems=Problems(parts.errors),
    )


def open_folder(folder: Path, *, origin: Origin, repo_id: str | None = None, revision: str | None = None,
                problems: ProblemSink = RAISE) -> Checkpoint:
    """A local folder (or an HF cache snapshot) through the one assembly (``assemble.assemble``)."""
    files = _list_files(folder)
    listing = {f.path: f.size for f in files}
    try:
        parts = assemble(LocalFolder(folder, problems), listing)
    except NotFoundError:
        if "config.json" in listing and repo_id:
            raise ConfigOnly(
                f"{folder}: only config files are cached for {repo_id} (a config-only download)",
                hint=f"`inspect {repo_id}` reads the weight headers from the Hub") from None
        raise
    return checkpoint_of(parts, label=repo_id or folder.name, files=tuple(files),
                         provenance=Provenance(origin, str(folder), repo_id, revision, root=str(folder)))


class LocalFolder:
    """A local folder as the assembly's source: small files read whole within the JSON budget,
    weight files through ``read_local_header``, one after another (a local read costs no round trip)."""

    remote = False

    def __init__(self, folder: Path, problems: ProblemSink = RAISE) -> None:
        self.folder, self.problems = folder, problems
        self.where = str(folder)

    def small(self, name: str) -> bytes:
        return read_json_file(self.folder / name, limit=document_budget(name).bytes)

    def prefetch(self, names: list[str]) -> None:
        return None

    def read_file(self, name: str, *, first: int | None) -> WeightFile:
        return read_local_header(self.folder / name, name, problems=self.problems)

    def each(self, read: Callable[[str], T], names: list[str]) -> list[T]:
        return [read(n) for n in names]


def read_local_header(path: Path, name: str, *, problems: ProblemSink = RAISE) -> WeightFile:
    """Read and validate one file's records through its format's reader (``Reader.read``: as many
    leading bytes as it needs, never the data). Only a regular file is opened (a FIFO named like a
    shard would block forever). ``problems``: the run's sink (the audit's leaves the end-of-file checks
    to the audit)."""
    try:
        fd = open_regular(path)
    except NotRegularFile as exc:
        raise NotRegularFile(exc.message.removeprefix(f"{path}: "), name) from None
    try:
        reader = reader_for(name) or reader_by_magic(os.pread(fd, 8, 0)) or SAFETENSORS
        return reader.read(LocalFile(fd, path), file=name, problems=problems)
    finally:
        os.close(fd)


class LocalFile:
    """An open local file as a byte source: ``pread`` at any offset, no copies."""

    rereads_cheaply = True

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path
        self.size: int | None = os.fstat(fd).st_size

    def read(self, start: int, length: int) -> bytes:
        return pread_all(self.fd, length, start, self.path)

    def read_into(self, buffer: bytearray, start: int, length: int) -> None:
        buffer += pread_all(self.fd, length, start, self.path)


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
            entries.append(FileEntry(full.relative_to(folder).as_posix(), size, _blob_sha256(full)))
    entries.sort(key=lambda f: natural_key(f.path))
    return entries


def _blob_sha256(path: Path) -> str | None:
    """An HF cache file's sha256 without reading it: its link's target in ``blobs/`` is named by the
    content's sha256 for an LFS file (a git blob id, 40 digits, for others: None)."""
    if not path.is_symlink():
        return None
    try:
        target = Path(os.readlink(path))
    except OSError:
        return None
    return target.name if target.parent.name == "blobs" and SHA256.fullmatch(target.name) else None


def _load_json(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    return json_object(read_json_file(path), path.name, str(path))


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
    if ref.exists():  # a commit id read from a few bytes, never a path to follow (exit 4 otherwise)
        sha = read_ref(ref, "the Hugging Face cache's main branch")
        if (repo_dir / "snapshots" / sha).is_dir():
            return repo_dir / "snapshots" / sha, repo_id, sha
    snaps = sorted((p for p in (repo_dir / "snapshots").glob("*") if p.is_dir()),
                   key=lambda p: p.stat().st_mtime)
    if not snaps:
        raise NotFoundError(f"{repo_dir}: a Hugging Face cache folder with no snapshots")
    return snaps[-1], repo_id, snaps[-1].name


# --- the Hugging Face cache, by repo id ----------------------------------------------------------


def hf_cache_folder(repo_id: str, revision: str | None) -> tuple[Path, str] | None:
    """The complete snapshot of ``repo_id`` at ``revision`` in the Hugging Face cache, laid out as
    huggingface_hub and transformers keep it (``models--org--name/refs/<branch>`` holding a commit,
    ``snapshots/<commit>/`` of links into ``blobs/``): (folder, commit), or None when it is not
    there or not whole (a config-only download, a shard missing)."""
    repo_dir = hf_cache_repo(repo_id)
    rev = revision or "main"
    if COMMIT.match(rev):
        sha: str | None = rev
    else:
        try:
            sha = read_ref(inside(repo_dir / "refs", rev, "branch name"), "the Hugging Face cache's branch")
        except (OSError, InspectorError):
            return None
    if not sha or not COMMIT.match(sha):
        return None
    folder = repo_dir / "snapshots" / sha
    return (folder, sha) if _complete(folder) else None


#: snapshot folders found complete in this process: a snapshot at a commit does not change, so
#: the scan (a listing and the index) is done once, not at each step of a Hub read
_COMPLETE: set[Path] = set()


def _complete(folder: Path) -> bool:
    if folder in _COMPLETE and folder.is_dir():
        return True
    if _scan_complete(folder):
        _COMPLETE.add(folder)
        return True
    return False


def _scan_complete(folder: Path) -> bool:
    if not folder.is_dir():
        return False
    names = {f.path for f in _list_files(folder) if f.size is not None}  # a dangling link has no size
    index_name = pick_index(names)
    if index_name:
        try:
            index = _load_json(folder / index_name) or {}
            index_shards(index, names, str(folder), index_name)
        except InvalidCheckpointError:
            return False
        return True
    return any(reader_for(n) and "/" not in n for n in names)


def is_hf_cache_root(path: Path) -> bool:
    """A folder of ``models--org--name`` repos (``HF_HUB_CACHE``), not a checkpoint itself."""
    if not path.is_dir() or _hf_cache_snapshot(path) is not None:
        return False
    return any(p.name.startswith("models--") and p.is_dir() for p in path.iterdir())


def cached_models(root: Path) -> list[tuple[str, str, Path]]:
    """(repo id, commit, snapshot folder) of every model snapshot in a Hugging Face cache root."""
    out: list[tuple[str, str, Path]] = []
    for repo_dir in sorted(p for p in root.iterdir() if p.name.startswith("models--") and p.is_dir()):
        repo_id = repo_dir.name.removeprefix("models--").replace("--", "/")
        for snap in sorted((repo_dir / "snapshots").glob("*"), key=lambda p: p.name):
            if snap.is_dir():
                out.append((repo_id, snap.name, snap))
    return out
