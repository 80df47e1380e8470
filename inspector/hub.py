"""The Hub fetch plan and the offline policy: header-only reads of a repo, assembled into a Checkpoint.

Transport (requests, retries, deadlines, budgets, errors) is ``transport``; the header cache is
``hubcache``. The plan:

1. one API call lists the repo's files with their sizes at the revision and resolves it to a commit
   SHA (a pinned SHA already in the header cache makes no request at all);
2. config.json and the index, concurrently;
3. every shard's header, concurrently: one range request sized from the index (the shard's tensor
   names), and an exact second request for the remainder only when the header is larger.

A server that ignores ``Range`` and answers 200 with the whole body is read only up to the bytes
asked for, then the connection is dropped: weights are never downloaded by accident. Each header is
parsed as soon as it arrives, and the header bytes of one repo have a total budget, reserved before
they are asked for. Every name from the listing and the index is validated before it becomes a
path. Results go to the header cache as header snapshots, written atomically.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from .checkpoint import WEIGHT_SUFFIXES, Checkpoint, FileEntry, index_shards, json_object
from .errors import HubUnreachable, InvalidCheckpointError, NetworkError, NotFoundError
from .header import MAX_HEADER_BYTES, PREFIX_BYTES, Header, parse_header, read_header_length
from .hubcache import HeaderCache
from .safeio import COMMIT, commit_id, relative_name
from .snapshot import load_snapshot
from .text import natural_key
from .transport import FetchStats, Hub, HubOptions

__all__ = ["FetchStats", "HeaderCache", "Hub", "HubOptions", "fetch_checkpoint", "open_hub", "read_header",
           "repo_sizes"]

STORED: Final[tuple[str, ...]] = ("config.json", "generation_config.json", "quantize_config.json")
#: bytes of header JSON per tensor, beyond its name: `{"dtype":"BF16","shape":[14336,4096],
#: "data_offsets":[…,…]},` is 60–90 bytes; a little over keeps the first read whole
ENTRY_OVERHEAD: Final = 96
FIRST_READ_UNINDEXED: Final = 64 * 1024
#: header bytes one repo may hold in all (DeepSeek-V3's 163 headers are 11.5 MB)
REPO_HEADER_BUDGET: Final = 256 * 1024 * 1024

Progress = Callable[[int, int], None]


# --- the fetch plan -----------------------------------------------------------------------------


def open_hub(repo_id: str, revision: str | None = None, *, options: HubOptions | None = None,
             progress: Progress | None = None, hub: Hub | None = None,
             cache: HeaderCache | None = None) -> Checkpoint:
    """Read a Hub repo's config, index and safetensors headers. See the module docstring.

    ``revision`` None means the default branch; offline, it may then be served by the newest
    cached snapshot. A revision the user named is served only by its own snapshot (exit 3 if none).
    """
    hub = hub or Hub(options)
    cache = cache or HeaderCache(endpoint=hub.endpoint)
    rev = revision or "main"
    use_cache = hub.options.use_cache
    if use_cache and COMMIT.match(rev) and cache.get(repo_id, rev):
        return _from_cache(cache, repo_id, rev, hub, [])
    if hub.offline:
        return _offline(repo_id, revision, cache, hub, "offline mode is on (HF_HUB_OFFLINE)", unreachable=False)
    from .aliases import BY_REPO

    # when a cached or bundled snapshot can stand in, an unresponsive Hub costs seconds, not a minute
    cached = (use_cache and _cached_sha(cache, repo_id, revision) is not None) or (
        revision is None and repo_id.lower() in BY_REPO)
    try:
        info = hub.repo_info(repo_id, rev, quick=cached)
    except HubUnreachable as exc:
        return _offline(repo_id, revision, cache, hub, f"the Hub is unreachable ({exc.message})", unreachable=True)
    sha = commit_id(info["sha"], f"{hub.public}: the listing of {repo_id}: sha")
    if use_cache and cache.get(repo_id, sha):
        cache.set_ref(repo_id, rev, sha)
        return _from_cache(cache, repo_id, sha, hub, [])
    checkpoint, snapshot = fetch_checkpoint(hub, repo_id, sha, info, progress)
    if use_cache:
        cache.put(snapshot)
        cache.set_ref(repo_id, rev, sha)
    return checkpoint


def _from_cache(cache: HeaderCache, repo_id: str, sha: str, hub: Hub, notes: list[str]) -> Checkpoint:
    folder = cache.get(repo_id, sha)
    assert folder is not None
    c = load_snapshot(folder, origin="hub", label=repo_id)
    return replace(c, notes=(*notes, f"headers from the cache ({sha[:12]}), {hub.stats.requests} request(s)"))


def _cached_sha(cache: HeaderCache, repo_id: str, revision: str | None) -> str | None:
    """The cached commit that may stand for ``revision``: its own snapshot, or for the default
    branch (``None``) the newest one."""
    rev = revision or "main"
    if COMMIT.match(rev):
        return rev if cache.get(repo_id, rev) else None
    return cache.ref(repo_id, rev) or (cache.newest(repo_id) if revision is None else None)


def _offline(repo_id: str, revision: str | None, cache: HeaderCache, hub: Hub, why: str, *,
             unreachable: bool) -> Checkpoint:
    sha = _cached_sha(cache, repo_id, revision)
    if sha:
        return _from_cache(cache, repo_id, sha, hub,
                           [f"{why}: serving the cached snapshot at commit {sha} (offline)"])
    from .aliases import BY_REPO, bundled_path

    alias = BY_REPO.get(repo_id.lower())
    if alias is not None and revision is None:
        c = load_snapshot(bundled_path(alias), origin="bundled", label=alias.repo_id)
        return replace(c, notes=(*c.notes, f"{why}: serving the bundled snapshot at commit "
                                           f"{c.revision or 'unknown'} (offline)"))
    where = f"{repo_id}@{revision}" if revision else repo_id
    message = f"{where}: {why}, and no cached or bundled snapshot of {'that revision' if revision else 'it'} exists"
    hint = "run once online, or `inspect save REPO -o DIR` on a machine that is"
    if unreachable:
        raise NetworkError(message, hint=hint)
    raise NotFoundError(message, hint=hint)


def repo_sizes(hub: Hub, info: Mapping[str, Any], repo_id: str) -> dict[str, int | None]:
    """Every file of a listing with its size, each name validated before it can become a path."""
    siblings = info.get("siblings") or []
    if not isinstance(siblings, list):
        raise InvalidCheckpointError(f"{hub.public}: the listing of {repo_id} has no list of files")
    sizes: dict[str, int | None] = {}
    for i, s in enumerate(siblings):
        if not isinstance(s, dict) or "rfilename" not in s:
            continue
        name = relative_name(s["rfilename"], f"{hub.public}: the listing of {repo_id}: siblings[{i}].rfilename")
        size = s.get("size")
        lfs = s.get("lfs")
        if size is None and isinstance(lfs, dict):
            size = lfs.get("size")
        sizes[name] = size if type(size) is int and size >= 0 else None
    return sizes


class _Budget:
    """Header bytes of one repo, reserved before they are asked for."""

    def __init__(self, total: int) -> None:
        self.left = total
        self.total = total
        self.lock = threading.Lock()

    def take(self, n: int, name: str) -> None:
        with self.lock:
            if n > self.left:
                raise InvalidCheckpointError(
                    f"{name}: its header would take the repo's headers over {self.total:,} bytes; refusing "
                    "to read more (a hostile repo?)")
            self.left -= n


def fetch_checkpoint(hub: Hub, repo_id: str, sha: str, info: Mapping[str, Any],
                     progress: Progress | None = None) -> tuple[Checkpoint, dict[str, Any]]:
    """The cold path: config and index, then every header, concurrently, each parsed on arrival."""
    sizes = repo_sizes(hub, info, repo_id)
    top = {p for p in sizes if "/" not in p}
    index_name = "model.safetensors.index.json" if "model.safetensors.index.json" in top else next(
        (p for p in sorted(top) if p.endswith(".safetensors.index.json")), None)
    budget = _Budget(REPO_HEADER_BUDGET)

    with ThreadPoolExecutor(max_workers=max(1, min(hub.options.workers, len(sizes) or 1))) as pool:
        config_f = pool.submit(hub.read_json, repo_id, sha, "config.json") if "config.json" in sizes else None
        extra_f = {p: pool.submit(hub.read_json, repo_id, sha, p) for p in STORED[1:] if p in sizes}
        index_raw = hub.read_json(repo_id, sha, index_name) if index_name else None
        index = json_object(index_raw, index_name or 'index') if index_raw is not None else None
        shards = _shards(repo_id, sizes, top, index, index_name)
        first_reads = _first_reads(index)
        if progress:
            progress(0, len(shards))
        done = 0
        lock = threading.Lock()

        def fetch(name: str) -> Header:
            nonlocal done
            first = first_reads.get(name, FIRST_READ_UNINDEXED)
            header = read_header(hub, repo_id, sha, name, sizes.get(name), first, budget)
            with lock:
                done += 1
                if progress:
                    progress(done, len(shards))
            return header

        headers = tuple(pool.map(fetch, shards))
        config_raw = config_f.result() if config_f else None
        stored = {p: f.result() for p, f in extra_f.items()}
    config = json_object(config_raw, "config.json") if config_raw is not None else None
    stored_all: dict[str, bytes] = dict(stored)
    if config_raw is not None:
        stored_all["config.json"] = config_raw
    if index_raw is not None and index_name:
        stored_all[index_name] = index_raw
    notes = [f"read {hub.stats.requests} request(s), {hub.stats.bytes:,} bytes from {hub.public} "
             f"at commit {sha}"]
    if hub.stats.range_ignored:
        notes.append("the server ignored Range requests; only the header bytes were read")
    checkpoint = Checkpoint(
        label=repo_id, origin="hub", location=f"{hub.public}/{repo_id}", headers=headers,
        config=config, index=index, repo_id=repo_id, revision=sha,
        files=tuple(FileEntry(p, s) for p, s in sorted(sizes.items(), key=lambda kv: natural_key(kv[0]))),
        notes=tuple(notes),
    )
    snapshot = {
        "repo_id": repo_id, "revision": sha,
        "files": sorted(sizes.items()),
        "headers": {h.file: h.raw for h in headers}, "stored": stored_all,
        "provenance": f"read from {hub.public} by inspector (headers only)",
    }
    return checkpoint, snapshot


def _shards(repo_id: str, sizes: Mapping[str, int | None], top: set[str], index: Mapping[str, Any] | None,
            index_name: str | None) -> list[str]:
    if index is not None:
        return index_shards(index, sizes, repo_id, index_name)
    names = sorted((p for p in top if p.endswith(".safetensors")), key=natural_key)
    if names:
        return names
    weights = sorted(p for p in sizes if p.endswith(WEIGHT_SUFFIXES))
    if weights:
        kinds = sorted({Path(p).suffix for p in weights})
        raise InvalidCheckpointError(
            f"{repo_id}: no safetensors weights; the repo holds {', '.join(kinds)} files "
            f"({', '.join(weights[:3])}{' …' if len(weights) > 3 else ''})",
            hint="the inspector reads safetensors headers only; look for a safetensors revision or conversion",
        )
    raise NotFoundError(f"{repo_id}: the repo has no weight files at this revision")


def _first_reads(index: Mapping[str, Any] | None) -> dict[str, int]:
    """Bytes to ask for first, per shard: the header's likely size from the tensor names the index
    places there (64 KiB for a shard no index describes)."""
    estimates: dict[str, int] = {}
    for tensor, shard in ((index or {}).get("weight_map") or {}).items():
        estimates[shard] = estimates.get(shard, PREFIX_BYTES + 64) + len(tensor) + ENTRY_OVERHEAD
    return estimates


def read_header(hub: Hub, repo_id: str, sha: str, name: str, size: int | None, first: int,
                budget: _Budget | None = None, *, lenient: bool = False) -> Header:
    """One shard's header: a first range read, an exact second one only when the header is
    larger, the bytes reserved from the repo's budget before they are asked for, then parsed.
    ``lenient`` (the audit) leaves the end-of-file checks to the caller."""
    budget = budget or _Budget(REPO_HEADER_BUDGET)
    if size is not None:
        if size < PREFIX_BYTES:
            read_header_length(b"", file=name, file_size=size)  # raises HeaderTooSmall
        first = min(first, size)
    first = min(max(first, PREFIX_BYTES), PREFIX_BYTES + MAX_HEADER_BYTES)
    budget.take(first, name)
    blob = hub.read_range(repo_id, sha, name, 0, first)
    n = read_header_length(blob, file=name, file_size=None if lenient else size)
    total = PREFIX_BYTES + n
    if len(blob) < total:
        if len(blob) < first and (size is None or len(blob) < size):
            raise NetworkError(f"{name}: the server sent {len(blob):,} of the {first:,} bytes asked for")
        budget.take(total - len(blob), name)
        hub.read_range(repo_id, sha, name, len(blob), total - len(blob), into=blob)
    return parse_header(blob, file=name, file_size=None if lenient else size)
