"""Untrusted names, the one path guard, bounded reads.

Everything that turns an outside string into a path comes through here:

* ``commit_id`` and ``relative_name`` validate a commit id (40 hex characters) and a file name from a
  listing, an index or a snapshot manifest (relative, normalised, no ``..``, no absolute part, no
  backslash, NUL or control character) before it is used. Anything else is an
  ``InvalidCheckpointError`` (exit 4) naming the field it came from.
* ``inside`` resolves a relative name below a root and refuses any result outside it; every write
  of the package goes through ``write_files`` (``write_inside`` for one file), which checks every
  folder it writes into the same way and refuses to write through a symlink.
* ``read_regular`` opens only regular files (a FIFO named like a shard would block forever; a
  device could be read without end), and reads at most the bytes asked for.
* ``gunzip_bounded`` decompresses with a cap on the output, checked while decompressing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final, NamedTuple

from inspector.errors import InvalidCheckpointError, NotFoundError, NotRegularFile

COMMIT: Final = re.compile(r"^[0-9a-f]{40}$")
#: a file's content hash as a Hub listing (LFS ``sha256``) and the HF cache's blob names write it
SHA256: Final = re.compile(r"[0-9a-f]{64}")
#: THE repo-id syntax: ``name`` or ``org/name``, each part ASCII letters, digits, ``.``, ``_``, ``-`` (starting
#: with a letter or digit, ending with a letter, digit or ``_``, at most 96 characters), never ``..`` or ``--``,
#: never ending ``.git``: the Hub's own rule (huggingface_hub's ``validate_repo_id``). Matched whole
#: (``fullmatch``: ``$`` would also match before a final newline)
_REPO_PART: Final = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?"
REPO_ID: Final = re.compile(rf"(?:{_REPO_PART}/)?{_REPO_PART}")
_BAD_CHARS: Final = re.compile(r"[\x00-\x1f\x7f\\]")


def commit_id(value: object, field: str) -> str:
    """A commit id from outside (a listing's ``sha``, a manifest's ``revision``): 40 lowercase hex."""
    if not isinstance(value, str) or not COMMIT.match(value):
        raise InvalidCheckpointError(
            f"{field}: {_show(value)} is not a commit id (40 hexadecimal characters); refusing to use it",
            hint="the server or file is broken or hostile",
        )
    return value


def is_repo_id(value: str) -> bool:
    """Whether ``value`` is a repo id by ``REPO_ID`` (the one syntax check)."""
    return (REPO_ID.fullmatch(value) is not None and ".." not in value and "--" not in value
            and not value.endswith(".git"))


def repo_id(value: str, field: str = "repo id") -> str:
    """``value`` if it is a repo id (``is_repo_id``), else an invalid-checkpoint error."""
    if not is_repo_id(value):
        raise InvalidCheckpointError(f"{field}: {_show(value)} is not a repo id (org/name)")
    return value


#: a ref file holds a 40-hex commit and perhaps a newline: anything longer is not one
REF_BUDGET: Final = 64


def read_ref(path: Path, field: str) -> str:
    """The commit a branch ref file names (an HF cache's ``refs/main``, the header cache's refs): at
    most ``REF_BUDGET`` bytes of a regular file, a 40-hex commit, never a path to follow."""
    raw = read_regular(path, REF_BUDGET + 1)
    if len(raw) > REF_BUDGET:
        raise InvalidCheckpointError(f"{field}: {path} is over {REF_BUDGET} bytes, not a commit id; refusing it")
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise InvalidCheckpointError(f"{field}: {path} is not a commit id; refusing it") from None
    return commit_id(text, f"{field}: {path}")


def relative_name(value: object, field: str) -> str:
    """A file name from outside, to be used below a root: relative, normalised, POSIX."""
    if not isinstance(value, str) or not value or len(value) > 4096:
        raise InvalidCheckpointError(f"{field}: {_show(value)} is not a file name")
    if _BAD_CHARS.search(value):
        raise InvalidCheckpointError(
            f"{field}: file name {_show(value)} holds a backslash, NUL or control character; refusing it")
    pure = PurePosixPath(value)
    if pure.is_absolute() or value.startswith("/"):
        raise InvalidCheckpointError(f"{field}: file name {_show(value)} is absolute; refusing it")
    parts = value.split("/")
    if any(p in ("", ".", "..") for p in parts) or ":" in parts[0]:
        raise InvalidCheckpointError(
            f"{field}: file name {_show(value)} is not a plain relative path (empty, '.' or '..' part); "
            "refusing it")
    if any(len(p.encode("utf-8", "surrogatepass")) > NAME_MAX for p in parts):
        raise InvalidCheckpointError(f"{field}: file name {_show(value)} has a part longer than {NAME_MAX} bytes "
                                     "(no file system holds it); refusing it")
    return value


#: the most bytes one component of a path may have (NAME_MAX: Linux, macOS, Windows' NTFS), and a whole path
#: (PATH_MAX on Linux); past them the operating system answers "File name too long"
NAME_MAX: Final = 255
PATH_MAX: Final = 4096


def local_path(text: str) -> Path | None:
    """What the user typed as a local path (``~`` expanded) where something is there, else None: a name no file
    system could hold (a component over ``NAME_MAX`` bytes, the whole over ``PATH_MAX``, a NUL) is None before
    the file system sees it, and so is one the system refuses to look at (no permission, a loop). Every path
    the user types is first looked at here."""
    raw = text.encode("utf-8", "surrogatepass")
    if not text or b"\0" in raw or len(raw) > PATH_MAX or any(len(p) > NAME_MAX for p in raw.split(b"/")):
        return None
    try:
        path = Path(text).expanduser()
        path.stat()
    except (OSError, RuntimeError, ValueError):  # RuntimeError: ``~user`` of no such user
        return None
    return path


def inside(root: Path, relative: str, field: str = "path") -> Path:
    """``root / relative``, resolved, provided it stays inside ``root`` (symlinks included)."""
    relative_name(relative, field)
    base = root.resolve()
    path = (base / relative).resolve()
    if path != base and not path.is_relative_to(base):
        raise InvalidCheckpointError(f"{field}: {_show(relative)} points outside {base}; refusing it")
    return path


def write_inside(root: Path, relative: str, data: bytes, field: str = "path") -> Path:
    """One file written through ``write_files``."""
    return write_files(root, {relative: data}, field)[0]


def write_files(root: Path, files: Mapping[str, bytes], field: str = "path") -> list[Path]:
    """The one function that writes files: every name is validated, every folder it needs is
    created and then resolved, and must stay in ``root`` (so a symlinked folder cannot lead out),
    and each file is opened with O_NOFOLLOW (a symlink planted at its name is refused, not
    followed). A folder is checked once however many files go into it: a snapshot of 1,000
    headers costs 1,000 opens, not 4,000 path resolutions."""
    base = root.resolve()
    folders: dict[str, Path] = {}
    written: list[Path] = []
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for relative, data in files.items():
        relative_name(relative, field)
        folder_name, _, name = relative.rpartition("/")
        folder = folders.get(folder_name)
        if folder is None:
            if folder_name:
                inside(base, folder_name, field).mkdir(parents=True, exist_ok=True)
                # resolved again once it exists: a symlinked parent created meanwhile cannot lead out
                folder = inside(base, folder_name, field)
            else:
                base.mkdir(parents=True, exist_ok=True)
                folder = base
            folders[folder_name] = folder
        path = folder / name
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InvalidCheckpointError(f"{field}: {_show(relative)} is a symlink; refusing to write through it"
                                             ) from None
            raise
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        written.append(path)
    return written


def write_atomic(root: Path, relative: str, data: bytes, field: str = "path") -> Path:
    """One small file replaced whole: written under a temporary name beside it (``write_files``),
    then renamed over it, so a reader never sees half of it."""
    relative_name(relative, field)
    folder, _, name = relative.rpartition("/")
    tmp = f"{folder + '/' if folder else ''}.{name}.tmp-{os.getpid()}-{threading.get_ident()}"
    written = write_inside(root, tmp, data, field)
    try:
        os.replace(written, inside(root, relative, field))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(written)
        raise
    return inside(root, relative, field)


#: a temporary folder older than this is a killed run's leftover even if its process id is taken
STALE_SECONDS: Final = 3600


def drop_link(root: Path, relative: str, field: str = "path") -> None:
    """Remove the symbolic link at ``root / relative`` where one is there (the link itself, never what it points
    to): a cache entry planted, or damaged, as a link out of its root, before it is written again."""
    relative_name(relative, field)
    path = root.resolve() / relative
    if path.is_symlink() and path.parent.resolve().is_relative_to(root.resolve()):
        os.unlink(path)


def write_folder(folder: Path, files: Mapping[str, bytes], field: str, *,
                 replaceable: Callable[[Path], bool], written_by_another: Callable[[Path], bool]) -> Path:
    """A whole folder of files put in place at once: written into a temporary folder beside
    ``folder`` (``write_files``), then renamed onto it, so a crash never leaves half a folder.
    ``folder`` may already exist only where ``replaceable`` says so (the old one is moved aside, then
    removed); when a concurrent writer renamed its copy in first and ``written_by_another`` accepts
    it, ours is dropped. Leftovers of killed runs beside it are removed first (``clean_stale``)."""
    # deferred: 4 ms at import (shutil, tempfile)
    import shutil  # (with tempfile: imported by the runs that write, not by every read)
    import tempfile

    folder = folder.resolve()
    if folder.exists() and not (folder.is_dir() and (replaceable(folder) or not any(folder.iterdir()))):
        raise InvalidCheckpointError(f"{folder} exists and is not replaceable here; refusing to overwrite it")
    folder.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(folder.parent)
    work = Path(tempfile.mkdtemp(prefix=_tmp_prefix(folder.name), dir=folder.parent))
    work.chmod(0o755)
    old: Path | None = None
    try:
        write_files(work, files, field)
        try:
            if folder.exists():
                old = Path(tempfile.mkdtemp(prefix=_tmp_prefix(folder.name), dir=folder.parent))
                os.replace(folder, old / folder.name)
            os.replace(work, folder)
        except OSError:
            if not written_by_another(folder):
                raise
    finally:
        for leftover in (work, old):
            if leftover is not None and leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)
    return folder


def _tmp_prefix(name: str) -> str:
    return f".{name}.tmp-{os.getpid()}-"


def clean_stale(parent: Path) -> None:
    """Remove temporary folders that killed runs left in ``parent``: those of a process that no
    longer exists, or older than an hour (another machine sharing the folder)."""
    # deferred: 2 ms at import (shutil)
    import shutil

    try:
        candidates = [p for p in parent.iterdir() if p.name.startswith(".") and ".tmp-" in p.name]
    except OSError:
        return
    now = time.time()
    for p in candidates:
        pid_text = p.name.rpartition(".tmp-")[2].partition("-")[0]
        try:
            old = now - p.lstat().st_mtime > STALE_SECONDS
        except OSError:
            continue
        gone = pid_text.isdigit() and not _alive(int(pid_text))
        if (gone or old) and p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def open_regular(path: Path) -> int:
    """A read-only descriptor of a regular file; FIFOs, devices, sockets and folders are refused
    without blocking (O_NONBLOCK, then fstat)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except PermissionError:
        raise NotFoundError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise NotRegularFile("a folder where a file was expected", str(path)) from None
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot open ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a file")
        raise NotRegularFile(f"{kind}, not a regular file; refusing to read it", str(path))
    return fd


def read_regular(path: Path, limit: int, offset: int = 0) -> bytes:
    """At most ``limit`` bytes of a regular file from ``offset``."""
    fd = open_regular(path)
    try:
        return pread_all(fd, limit, offset, path)
    finally:
        os.close(fd)


def pread_all(fd: int, limit: int, offset: int, path: Path) -> bytes:
    """At most ``limit`` bytes from ``offset`` of an open file (fewer at its end)."""
    try:
        # usually all of it in one call and no copy; asking no more than the file holds (os.pread
        # allocates what it is asked for: a 16 MB budget for a 2 kB config.json)
        first = os.pread(fd, max(0, min(limit, os.fstat(fd).st_size - offset, 1 << 30)), offset)
        if len(first) == limit or not first:
            return first
        out = bytearray(first)
        while len(out) < limit:
            chunk = os.pread(fd, min(limit - len(out), 1 << 24), offset + len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)
    except OSError as exc:
        raise NotFoundError(f"{path}: cannot read ({exc.strerror})") from None


def regular_size(path: Path) -> int:
    fd = open_regular(path)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


#: the most a JSON file from outside may take, local or remote: config, index, tokenizer config
#: (DeepSeek-V3's index is 8 MB); a header snapshot's manifest has its own (snapshot.MANIFEST_BUDGET)
JSON_BUDGET: Final = 64 * 1024 * 1024


def read_json_file(path: Path, what: str | None = None, limit: int = JSON_BUDGET) -> bytes:
    """A local JSON file's bytes within ``limit`` (``JSON_BUDGET``, or its name's ``document_budget``): refused by
    its size before any byte is read."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise InvalidCheckpointError(f"{what or path}: {size:,} bytes, over the {limit:,}-byte budget of "
                                         f"a {_show(path.name)} this tool reads; refusing it")
        return pread_all(fd, limit, 0, path)
    finally:
        os.close(fd)


class DocumentBudget(NamedTuple):
    """What one small JSON document from outside may hold: its bytes, and its values (commas, objects and lists,
    counted before it is parsed: parsed, a document of ``[]`` costs ~30 bytes of memory a byte, so the bytes
    alone did not bound it: a 63 MiB ``config.json`` of ``[]`` cost 2 GB)."""

    bytes: int
    values: int


#: the budget of each small JSON document a checkpoint holds, by its file name; real files sit far inside (the
#: largest seen: a config with 21,843 ImageNet labels ~1 MB and ~45,000 values; Gemma 3's tokenizer_config.json
#: 1.2 MB; DeepSeek-V3's index 8.9 MB and ~92,000 values; Gemma 3's tokenizer.json 33 MB). docs/security.md
#: lists each with what the worst document inside it costs
DOCUMENT_BUDGETS: Final[Mapping[str, DocumentBudget]] = {
    "config.json": DocumentBudget(4 << 20, 250_000),
    "generation_config.json": DocumentBudget(1 << 20, 50_000),
    "adapter_config.json": DocumentBudget(4 << 20, 250_000),
    "tokenizer_config.json": DocumentBudget(16 << 20, 2_000_000),
    "special_tokens_map.json": DocumentBudget(4 << 20, 250_000),
    "chat_template.json": DocumentBudget(4 << 20, 250_000),
    "tokenizer.json": DocumentBudget(40 << 20, 4_000_000),
}
#: a weight index (``*.index.json``: the tensor → shard map, a value or two a tensor)
INDEX_DOCUMENT: Final = DocumentBudget(JSON_BUDGET, 2_500_000)
#: any other small JSON document of a checkpoint (a pipeline's model_index.json, modules.json)
OTHER_DOCUMENT: Final = DocumentBudget(4 << 20, 250_000)


def document_budget(name: str) -> DocumentBudget:
    """The budget of the JSON document at ``name`` (a path in its folder or repo), by its file name."""
    base = name.rsplit("/", 1)[-1]
    return INDEX_DOCUMENT if base.endswith(".index.json") else DOCUMENT_BUDGETS.get(base, OTHER_DOCUMENT)


def check_document(raw: bytes | bytearray | str, name: str, field: str) -> None:
    """Refuse the document at ``name`` where it is over its budget (``document_budget``) in bytes or values,
    before anything is parsed, kept or cached."""
    budget = document_budget(name)
    if len(raw) > budget.bytes:
        raise InvalidCheckpointError(f"{field}: {len(raw):,} bytes, over the {budget.bytes:,}-byte budget of a "
                                     f"{_show(name.rsplit('/', 1)[-1])} this tool reads; refusing it",
                                     hint="the file is damaged or hostile")
    _count_values(raw, field, budget.values)


def parse_document(raw: bytes | bytearray | str, name: str, field: str) -> dict[str, Any]:
    """A checkpoint's small JSON document that must be an object (config, index, adapter config, tokenizer
    config …), within its budget (``check_document``) and ``parse_json_object``'s rules."""
    check_document(raw, name, field)
    return parse_json_object(raw, field)


#: how deep a JSON document from outside may nest (configs nest 3–5 levels; 100,000 levels once
#: exhausted the parser's recursion)
MAX_JSON_DEPTH: Final = 64


def parse_json_object(raw: bytes | bytearray | str, field: str, *, max_depth: int = MAX_JSON_DEPTH,
                      max_values: int | None = None) -> dict[str, Any]:
    """A small JSON document from outside that must be an object (config, index, adapter config,
    listing, snapshot manifest), through ``parse_json``."""
    value = parse_json(raw, field, max_depth=max_depth, max_values=max_values)
    if not isinstance(value, dict):
        raise InvalidCheckpointError(f"{field}: not a JSON object")
    return value


def parse_json(raw: bytes | bytearray | str, field: str, *, max_depth: int = MAX_JSON_DEPTH,
               max_values: int | None = None) -> Any:
    """THE loader of every small JSON document from outside: valid UTF-8 JSON, nested at most
    ``max_depth`` deep, finite numbers only (``1e400``, ``NaN`` and ``Infinity`` are refused, as the
    Rust safetensors reader refuses them). Anything else is an ``InvalidCheckpointError`` naming
    ``field``; the size budget is the reader's (``read_regular``'s limit). ``max_values``: the most
    commas, objects and lists, counted before parsing (parsed, a document of small values costs up to
    17 times its bytes: the count bounds what parsing builds, not only what was read).

    A document of ``COMPILED_JSON_BYTES`` or more is decoded by msgspec (compiled), which is stricter
    than the rule: whatever it refuses (a lone surrogate escape, a byte-order mark, ``1e400``) is read
    again by ``parse_json_plain``, the rule itself, which accepts it or names the error. A test holds
    the two equal on every input it generates."""
    if max_values is not None:
        _count_values(raw, field, max_values)
    if len(raw) < COMPILED_JSON_BYTES:
        return parse_json_plain(raw, field, max_depth=max_depth)
    try:
        value = _msgspec_decode(raw)
    except Exception:  # stricter than the rule, never looser: the rule decides
        return parse_json_plain(raw, field, max_depth=max_depth)
    _depth_within(value, _containers(raw), field, max_depth)
    return value


#: from this size on a JSON document is decoded by msgspec. Measured (whole processes, medians of 9-15):
#: importing msgspec costs ~10 ms of CPU in our process and decoding saves ~1.6 ms a MB (DeepSeek-V3's
#: 8.9 MB index: 39 -> 25 ms), so a small document (config.json, Llama 3 8B's 24 kB index) is cheaper
#: through the standard library: inspect llama3-8b --json 0.087 s without msgspec, 0.098 s with it
COMPILED_JSON_BYTES: Final = 4 << 20


def parse_json_plain(raw: bytes | bytearray | str, field: str, *, max_depth: int = MAX_JSON_DEPTH,
                     max_values: int | None = None) -> Any:
    """``parse_json``'s specification, in the standard library alone."""
    if max_values is not None:
        _count_values(raw, field, max_values)

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"number {text[:20]} is out of range")
        return value

    def constant(text: str) -> float:
        raise ValueError(f"{text} is not JSON")

    try:
        value = json.loads(raw, parse_float=finite, parse_constant=constant)
    except RecursionError:
        raise InvalidCheckpointError(f"{field}: JSON nested too deep to read; refusing it") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidCheckpointError(f"{field}: not valid JSON ({str(exc)[:120]})") from None
    _depth_within(value, None, field, max_depth)
    return value


#: the deepest a YAML document from outside (a model card's front matter) may nest; PyYAML's composer recurses a
#: level a node, so ~500 levels of ``[`` in a 1 KB card overran the interpreter's stack (RecursionError)
MAX_YAML_DEPTH: Final = 64


def parse_yaml(text: str, field: str, *, max_depth: int = MAX_YAML_DEPTH) -> object:
    """THE loader of YAML from outside: ``yaml.safe_load``'s rules (no object built from a tag), nested at most
    ``max_depth`` deep, counted as the document is composed, before anything deeper is built. Anything else
    is an ``InvalidCheckpointError`` naming ``field``; the size budget is the caller's (the card's first
    ``CARD_BYTES``)."""
    # deferred: 13 ms at import (yaml)
    import yaml

    class Capped(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > max_depth:
                    raise yaml.YAMLError(f"nested more than {max_depth} deep")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    loader: Capped | None = None
    try:
        loader = Capped(text)  # its reader refuses characters YAML does not allow here, at once
        return loader.get_single_data()
    except RecursionError:  # a belt beside the depth count: never past this function
        raise InvalidCheckpointError(f"{field}: YAML nested too deep to read; refusing it") from None
    except yaml.YAMLError as exc:
        raise InvalidCheckpointError(f"{field}: not valid YAML ({str(exc)[:120]})") from None
    finally:
        if loader is not None:
            loader.dispose()


def _msgspec_decode(raw: bytes | bytearray | str) -> Any:
    # deferred: 18 ms at import (msgspec)
    import msgspec  # ~2 ms, only where a document is read

    return msgspec.json.decode(raw)


def _count_values(raw: bytes | bytearray | str, field: str, max_values: int) -> None:
    blob = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    count = blob.count(b",") + blob.count(b"{") + blob.count(b"[")
    if count > max_values:
        raise InvalidCheckpointError(f"{field}: more than {max_values:,} JSON values (commas, objects and "
                                     "lists counted before parsing); refusing it")


def _containers(raw: bytes | bytearray | str) -> int:
    """An upper bound on the objects and lists a document holds (brackets inside strings count too)."""
    if isinstance(raw, str):
        return raw.count("{") + raw.count("[")
    return raw.count(b"{") + raw.count(b"[")


def _depth_within(value: Any, containers: int | None, field: str, max_depth: int) -> None:
    """Refuse a document nested deeper than ``max_depth``. A document of no more containers than that
    cannot be (the index, a config: a handful), and is not walked."""
    if containers is not None and containers <= max_depth:
        return
    # level by level, iterative (no recursion for a hostile depth to exhaust later): the containers at each
    # depth, each level's children gathered by one comprehension per container (json.loads makes exact
    # dicts and lists; a 155 kB answer of 191 headers: 0.9 ms, against 2.2-4.3 ms popping one at a time)
    level: list[Any] = [value] if type(value) is dict or type(value) is list else []
    depth = 1
    while level:
        if depth > max_depth:
            raise InvalidCheckpointError(f"{field}: JSON nested deeper than {max_depth} levels; refusing it")
        below: list[Any] = []
        gather = below.extend
        for node in level:
            gather([v for v in (node.values() if type(node) is dict else node) if type(v) is dict or type(v) is list])
        level, depth = below, depth + 1


def gunzip_bounded(data: bytes, limit: int, what: str) -> bytes:
    """gzip-decompress ``data``, refusing output over ``limit`` bytes as soon as it is exceeded."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise InvalidCheckpointError(f"{what}: corrupt compressed data ({exc})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise InvalidCheckpointError(
            f"{what}: decompresses to more than {limit:,} bytes; refusing it (a compression bomb?)")
    if not inflater.eof:
        raise InvalidCheckpointError(f"{what}: truncated compressed data")
    return out


def _show(value: object) -> str:
    # repr escapes control characters; the renderer sanitises the whole message once more
    return repr(value if len(value) <= 120 else value[:119] + "…") if isinstance(value, str) else type(value).__name__
