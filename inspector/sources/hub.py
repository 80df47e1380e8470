"""The Hub fetch plan and the offline policy: header-only reads of a repo, assembled into a Checkpoint.

Transport (requests, retries, deadlines, budgets, errors) is ``transport``; the header cache is
``hubcache``. The plan:

1. one API call lists the repo's files with their sizes at the revision and resolves it to a commit
   SHA (a pinned SHA already in the header cache makes no request at all);
2. config.json and the index, concurrently; when nothing is cached, they and the first bytes of a
   lone ``model.safetensors`` are asked for at the branch beside the listing (step 1), and kept when
   the server's ``X-Repo-Commit`` is the listing's commit: a one-file repo is then read in one
   round trip, a sharded one in two;
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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Final, TypeVar

from inspector.errors import (
    RAISE,
    HubUnreachable,
    InvalidCheckpointError,
    NetworkError,
    NotFoundError,
    ProblemSink,
    SeveralFiles,
)
from inspector.formats.registry import REPO_HEADER_BUDGET, SAFETENSORS, reader_for, reader_named
from inspector.model import Checkpoint, FileEntry, Phase, Progress, Provenance, WeightFile, natural_key
from inspector.safeio import COMMIT, SHA256, commit_id, document_budget, relative_name
from inspector.sources.assemble import Parts, assemble, checkpoint_of, stored_files
from inspector.sources.bundled import BY_REPO, bundled_path
from inspector.sources.early import EarlyReads, take
from inspector.sources.header_cache import HeaderCache
from inspector.sources.resolve import HubOpener, hf_cache_folder, open_folder
from inspector.sources.snapshot import load_snapshot
from inspector.sources.transport import FetchStats, Hub, HubOptions

__all__ = ["FetchStats", "HeaderCache", "Hub", "HubOptions", "fetch_checkpoint", "open_hub", "read_header",
           "repo_sizes"]

T = TypeVar("T")


# --- the fetch plan -----------------------------------------------------------------------------


def open_hub(repo_id: str, revision: str | None = None, *, options: HubOptions | None = None,
             progress: Progress | None = None, hub: Hub | None = None,
             cache: HeaderCache | None = None, problems: ProblemSink = RAISE, only: str | None = None) -> Checkpoint:
    """Read a Hub repo's config, index and headers. See the module docstring.

    Before any range request, a complete snapshot in the Hugging Face cache (``HF_HUB_CACHE``,
    where ``snapshot_download`` and transformers put them) or in the header cache answers: a pinned
    commit makes no request, a branch only the listing call. ``revision`` None means the default
    branch; offline, it may then be served by the newest cached snapshot. A revision the user named
    is served only by its own snapshot (exit 3 if none). ``problems``: the run's sink (``errors.ProblemSink``).
    ``only``: one weight file of the repo (one GGUF of several); read afresh, never cached.
    """
    # the read the command line began before the program was imported (``early.begin``), when this is it
    begun = take(repo_id, options or HubOptions()) if (
        hub is None and cache is None and revision is None and only is None and not problems.collects) else None
    hub = begun.hub if begun is not None else hub or Hub(options)
    cache = cache or HeaderCache(endpoint=hub.endpoint)
    rev = revision or "main"
    use_cache = hub.options.use_cache and only is None
    if COMMIT.match(rev):
        local = _local(cache, repo_id, rev, hub, problems) if use_cache else None
        if local is not None:
            return local
    if hub.offline:
        return _offline(repo_id, revision, cache, hub, "offline mode is on (HF_HUB_OFFLINE)", unreachable=False,
                        problems=problems)

    # when a cached or bundled snapshot can stand in, an unresponsive Hub costs seconds, not a minute
    warm = use_cache and _cached_sha(cache, repo_id, revision) is not None
    cached = warm or (revision is None and repo_id.lower() in BY_REPO)
    # nothing cached to stand in: the files most repos have are asked for at the branch beside the
    # listing, and kept when the server says they are at the commit the listing names
    if begun is not None and warm != (begun.early is None):  # it guessed otherwise (a cache changed, or holds
        begun.close()  # no whole snapshot): this read's own rules; its requests stay counted on its Hub
        begun = None
    early = begun.early if begun is not None else None if warm or only is not None else \
        EarlyReads(hub, repo_id, rev, one_request=rev == "main" and not problems.collects)
    try:
        if progress:
            progress(Phase.LISTING, 0, 1)
        try:
            info = begun.listing.result() if begun is not None else hub.repo_info(repo_id, rev, quick=cached)
        except HubUnreachable as exc:
            return _offline(repo_id, revision, cache, hub, f"the Hub is unreachable ({exc.message})",
                            unreachable=True, problems=problems)
        sha = commit_id(info["sha"], f"{hub.public}: the listing of {repo_id}: sha")
        local = _local(cache, repo_id, sha, hub, problems) if use_cache else None
        if local is not None:
            cache.set_ref(repo_id, rev, sha)
            return local
        try:
            checkpoint, snapshot = fetch_checkpoint(hub, repo_id, sha, info, progress, problems=problems, only=only,
                                                    early=early)
        except SeveralFiles as several:  # each file is read at this commit with this listing: no listing again
            several.opener = _SetReader(hub, cache, repo_id, rev, sha, info, several.files, problems,
                                        use_cache=use_cache).read
            raise
    finally:
        if early is not None:
            early.close()
    # records a prefix cannot rebuild (a pickle's) are not kept in a snapshot: such repos are read again
    keepable = all(getattr(reader_named(h.format), "keeps_head", False) for h in checkpoint.headers)
    if use_cache and keepable and not checkpoint.problems.header_errors and checkpoint.problems.index_error is None:
        cache.put(snapshot)
        cache.set_ref(repo_id, rev, sha)
    return checkpoint


class _SetReader:
    """The files of a repo that holds one model in several files (GGUF quantisations), each read at
    the listed commit on its own; once all are read, the repo is cached as one snapshot of them all,
    which then answers offline and at a pinned commit as any repo's does (``load_snapshot`` raises
    ``SeveralFiles`` for it again, with an opener of its own)."""

    def __init__(self, hub: Hub, cache: HeaderCache, repo_id: str, rev: str, sha: str, info: Mapping[str, Any],
                 files: list[str], problems: ProblemSink, *, use_cache: bool) -> None:
        self.hub, self.cache, self.repo_id, self.rev, self.sha, self.info = hub, cache, repo_id, rev, sha, info
        self.files, self.problems, self.use_cache = set(files), problems, use_cache
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()

    def read(self, name: str) -> Checkpoint:
        checkpoint, snapshot = fetch_checkpoint(self.hub, self.repo_id, self.sha, self.info, problems=self.problems,
                                                only=name)
        keepable = all(getattr(reader_named(h.format), "keeps_head", False) for h in checkpoint.headers)
        with self.lock:
            if keepable and not checkpoint.problems.header_errors:
                self.snapshots[name] = snapshot
            whole = self.use_cache and set(self.snapshots) == self.files
        if whole:
            self._cache()
        return checkpoint

    def _cache(self) -> None:
        parts = list(self.snapshots.values())
        merged = {**parts[0], "headers": {}, "formats": {}, "stored": {}}
        for part in parts:
            merged["headers"].update(part["headers"])
            merged["formats"].update(part["formats"])
            merged["stored"].update(part["stored"])
        self.cache.put(merged)
        self.cache.set_ref(self.repo_id, self.rev, self.sha)


def hub_opener(options: HubOptions, progress: Progress | None = None) -> HubOpener:
    """The resolver's Hub hook (``resolve.open_checkpoint(hub=…)``) with these options: quiet
    huggingface_hub logging, ``progress`` told (done, total) as headers arrive."""

    def open_repo(repo_id: str, revision: str | None, problems: ProblemSink, only: str | None) -> Checkpoint:
        # deferred: 2 ms at import (huggingface_hub.utils)
        from huggingface_hub.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        return open_hub(repo_id, revision, options=options, progress=progress, problems=problems, only=only)

    return open_repo


def _local(cache: HeaderCache, repo_id: str, sha: str, hub: Hub, problems: ProblemSink,
           notes: tuple[str, ...] = (), *, online: bool = True) -> Checkpoint | None:
    """The snapshot at ``sha`` from the header cache, else from the Hugging Face cache. The audit reads
    the real index: online, a cached snapshot whose index was rebuilt (``SideFiles.rebuilt``) does not
    serve it; offline it does, and the audit says the index was not checked (``index.rebuilt``)."""
    if folder := cache.get(repo_id, sha):
        try:
            cached = _from_cache(cache, repo_id, sha, hub, list(notes), problems)
        except InvalidCheckpointError as exc:  # a cached entry is only ever a read that succeeded: it is damaged
            if not online:
                raise InvalidCheckpointError(f"the header cache's entry for {repo_id}@{sha[:12]} is damaged: "
                                             f"{exc.message}", hint=f"delete {folder}, then run online") from None
            # online: read from the Hub again, whose snapshot then replaces the damaged one
        else:
            if not (online and problems.collects and cached.side.rebuilt):
                return cached

    found = hf_cache_folder(repo_id, sha)
    if found is None:
        return None
    c = open_folder(found[0], origin="hf-cache", repo_id=repo_id, revision=sha, problems=problems)
    return c.with_notes(*notes, f"files from the Hugging Face cache ({sha[:12]}), {hub.stats.requests} request(s)")


def _from_cache(cache: HeaderCache, repo_id: str, sha: str, hub: Hub, notes: list[str],
                problems: ProblemSink = RAISE) -> Checkpoint:
    folder = cache.get(repo_id, sha)
    assert folder is not None
    c = load_snapshot(folder, origin="hub", label=repo_id, problems=problems)
    return c.with_notes(*notes, f"headers from the cache ({sha[:12]}), {hub.stats.requests} request(s)",
                        keep=False)


#: the branch a Hub repo is created with, which the bundled snapshots were taken from: ``@main`` (and an
#: address of a file ``/blob/main/…``) read offline as the bare repo id is
DEFAULT_BRANCH: Final = "main"


def _cached_sha(cache: HeaderCache, repo_id: str, revision: str | None) -> str | None:
    """The cached commit (header cache or Hugging Face cache) that may stand for ``revision``: its
    own snapshot, or for the default branch (``None``) the newest one."""
    rev = revision or DEFAULT_BRANCH
    if COMMIT.match(rev):
        return rev if cache.get(repo_id, rev) or hf_cache_folder(repo_id, rev) else None
    found = hf_cache_folder(repo_id, rev)
    return cache.ref(repo_id, rev) or (found[1] if found else None) or (
        cache.newest(repo_id) if revision is None else None)


def _offline(repo_id: str, revision: str | None, cache: HeaderCache, hub: Hub, why: str, *,
             unreachable: bool, problems: ProblemSink = RAISE) -> Checkpoint:
    sha = _cached_sha(cache, repo_id, revision)
    local = _local(cache, repo_id, sha, hub, problems, (f"{why}: serving the cached snapshot at commit {sha} "
                                                       "(offline)",), online=False) if sha else None
    if local is not None:
        return local

    alias = BY_REPO.get(repo_id.lower())
    if alias is not None and revision in (None, DEFAULT_BRANCH):  # the bundled snapshot is its default branch's
        c = load_snapshot(bundled_path(alias), origin="bundled", label=alias.repo_id, problems=problems)
        commit = c.provenance.revision or "unknown"
        return c.with_notes(f"{why}: serving the bundled snapshot at commit {commit} (offline)")
    where = f"{repo_id}@{revision}" if revision else repo_id
    message = f"{where}: {why}, and no cached or bundled snapshot of {'that revision' if revision else 'it'} exists"
    hint = "run once online, or `inspect save REPO -o DIR` on a machine that is"
    if unreachable:
        raise NetworkError(message, hint=hint)
    raise NotFoundError(message, hint=hint)


#: the most files a listing may name (the Hub's largest model repos hold a few tens of thousands; a listing of
#: 300,000 files is read, ``--files`` lists them: tests/test_repo_kinds.py)
MAX_LISTED_FILES: Final = 400_000


def repo_sizes(hub: Hub, info: Mapping[str, Any], repo_id: str) -> dict[str, int | None]:
    """Every file of a listing with its size, each name validated before it can become a path."""
    return {name: size for name, (size, _) in repo_files(hub, info, repo_id).items()}


def repo_files(hub: Hub, info: Mapping[str, Any], repo_id: str) -> dict[str, tuple[int | None, str | None]]:
    """Every file of a listing with its size and, for an LFS file, the sha256 the listing names (64 hex
    digits, or None), each name validated before it can become a path."""
    siblings = info.get("siblings") or []
    if not isinstance(siblings, list):
        raise InvalidCheckpointError(f"{hub.public}: the listing of {repo_id} has no list of files")
    if len(siblings) > MAX_LISTED_FILES:
        raise InvalidCheckpointError(f"{hub.public}: the listing of {repo_id} names {len(siblings):,} files, more "
                                     f"than the {MAX_LISTED_FILES:,} this tool reads; refusing it",
                                     hint="the repo is larger than any model repo, or the server is hostile")
    files: dict[str, tuple[int | None, str | None]] = {}
    for i, s in enumerate(siblings):
        if not isinstance(s, dict) or "rfilename" not in s:
            continue
        name = relative_name(s["rfilename"], f"{hub.public}: the listing of {repo_id}: siblings[{i}].rfilename")
        size = s.get("size")
        lfs = s.get("lfs")
        if size is None and isinstance(lfs, dict):
            size = lfs.get("size")
        digest = lfs.get("sha256") if isinstance(lfs, dict) else None
        files[name] = (size if type(size) is int and size >= 0 else None,
                       digest if isinstance(digest, str) and SHA256.fullmatch(digest) else None)
    return files


class _Budget:
    """Header bytes of one repo, reserved before they are asked for."""

    def __init__(self, total: int, what: str = "the repo's budget") -> None:
        self.left = total
        self.total = total
        self.what = what
        self.lock = threading.Lock()

    def take(self, n: int, name: str) -> None:
        with self.lock:
            if n > self.left:
                raise InvalidCheckpointError(
                    f"{name}: its header would take the repo's headers over {self.total:,} bytes, {self.what}; "
                    "refusing to read more (a hostile repo?)")
            self.left -= n


def fetch_checkpoint(hub: Hub, repo_id: str, sha: str, info: Mapping[str, Any],
                     progress: Progress | None = None, *, problems: ProblemSink = RAISE,
                     only: str | None = None, early: EarlyReads | None = None) -> tuple[Checkpoint, dict[str, Any]]:
    """The cold path, through the one assembly (``assemble.assemble``) over this repo at ``sha``:
    small files and every header concurrently, each header parsed on arrival. ``problems``: the run's
    sink (the audit's collects header errors, a broken index and missing shards). ``early``: reads already
    sent at the branch, used where they are at ``sha``."""
    listed = repo_files(hub, info, repo_id)
    sizes = {name: size for name, (size, _) in listed.items()}

    def attempt() -> Parts:
        with ThreadPoolExecutor(max_workers=max(1, min(hub.options.workers, len(sizes) or 1))) as pool:
            return assemble(HubRepo(hub, repo_id, sha, sizes, pool, early, problems), sizes, only=only,
                            progress=progress)

    try:
        parts = attempt()
        trusted = early is None or only is not None or early.confirmed()
    except InvalidCheckpointError:  # a header of the one answer that a range read would not give
        if early is None or only is not None or early.from_answer(sha, sizes) is None:
            raise
        trusted = False
    if not trusted and early is not None:  # the answer is set aside (never shown or cached): read by range
        early.set_aside()
        parts = attempt()
    notes = [f"read {hub.stats.requests} request(s), {hub.stats.bytes:,} bytes from {hub.public} "
             f"at commit {sha}"]
    answered = early.from_answer(sha, sizes) if early is not None and only is None else None
    # the index the assembly read is the one the answer rebuilt (``EarlyReads.get`` served it)
    rebuilt = frozenset({parts.index_name}) if answered and parts.index_name in answered else frozenset()
    if rebuilt:
        notes.append("the shard headers in one request (the Hub's safetensors-metadata answer); the index's "
                     "weight_map rebuilt from them")
    if hub.stats.range_ignored:
        notes.append("the server ignored Range requests; only the header bytes were read")
    checkpoint = checkpoint_of(
        # one file of several (a GGUF quantisation) is labelled by its file: two of one repo are told apart
        parts, label=repo_id if only is None else f"{repo_id}/{only}",
        provenance=Provenance("hub", f"{hub.public}/{repo_id}", repo_id, sha, notes=tuple(notes)),
        files=tuple(FileEntry(p, s, h) for p, (s, h) in sorted(listed.items(), key=lambda kv: natural_key(kv[0]))))
    if rebuilt:
        checkpoint = replace(checkpoint, side=replace(checkpoint.side, rebuilt=rebuilt))
    snapshot = {
        "repo_id": repo_id, "revision": sha,
        "files": sorted(sizes.items()),
        "headers": {h.file: h.head for h in parts.headers}, "formats": {h.file: h.format for h in parts.headers},
        "stored": stored_files(parts),  # a pipeline's component configs too: the snapshot is assembled again
        "provenance": f"read from {hub.public} by inspector (headers only)",
        "rebuilt": sorted(rebuilt),
    }
    return checkpoint, snapshot


class HubRepo:
    """A Hub repo at one commit as the assembly's source: small files read at once on a pool (or
    taken from the reads sent early at the branch), headers concurrently, all header bytes of the
    repo within one budget."""

    def __init__(self, hub: Hub, repo_id: str, sha: str, sizes: Mapping[str, int | None], pool: ThreadPoolExecutor,
                 early: EarlyReads | None, problems: ProblemSink = RAISE) -> None:
        self.hub, self.repo_id, self.sha, self.sizes, self.pool, self.early = hub, repo_id, sha, sizes, pool, early
        self.problems = problems
        self.where = repo_id
        self.remote = True
        given = hub.options.header_budget
        self.budget = _Budget(REPO_HEADER_BUDGET) if given is None else _Budget(
            min(given, REPO_HEADER_BUDGET), "what the run has left of its headers' budget")
        self.pending: dict[str, Future[bytes]] = {}

    def _ready(self, name: str) -> bytes | None:
        return self.early.get(name, self.sha, self.sizes) if self.early is not None else None

    def prefetch(self, names: list[str]) -> None:
        for name in names:
            if name not in self.pending and self._ready(name) is None:
                self.pending[name] = self.pool.submit(self.hub.read_json, self.repo_id, self.sha, name,
                                                      document_budget(name).bytes)

    def small(self, name: str) -> bytes:
        ready = self._ready(name)
        if ready is not None:
            return ready
        future = self.pending.get(name)
        return future.result() if future is not None else self.hub.read_json(self.repo_id, self.sha, name,
                                                                               document_budget(name).bytes)

    def read_file(self, name: str, *, first: int | None) -> WeightFile:
        return read_header(self.hub, self.repo_id, self.sha, name, self.sizes.get(name), first, self.budget,
                           problems=self.problems, prefix=self._ready(name))

    def each(self, read: Callable[[str], T], names: list[str]) -> list[T]:
        if all(self._ready(n) is not None for n in names):  # every byte at hand (the one answer): no thread
            return [read(n) for n in names]
        return list(self.pool.map(read, names))


def read_header(hub: Hub, repo_id: str, sha: str, name: str, size: int | None, first: int | None,
                budget: _Budget | None = None, *, problems: ProblemSink = RAISE,
                prefix: bytes | None = None) -> WeightFile:
    """One file's records through its format's reader (``Reader.read``, the one read loop): each
    range reserved from the repo's budget before it is asked for. ``problems``: the run's sink (the
    audit's leaves the end-of-file checks to the audit). ``prefix``: the file's first bytes, already read (an early
    read at the branch)."""
    budget = budget or _Budget(REPO_HEADER_BUDGET)
    reader = reader_for(name) or SAFETENSORS
    if prefix is not None:
        budget.take(len(prefix), name)
    return reader.read(RemoteFile(hub, repo_id, sha, name, size, budget), file=name, first=first, problems=problems,
                       prefix=prefix)


class RemoteFile:
    """A file of a Hub repo at a commit as a byte source: range requests, each reserved from the
    repo's header budget first; a server that sends less than asked is a network error."""

    rereads_cheaply = False

    def __init__(self, hub: Hub, repo_id: str, sha: str, name: str, size: int | None, budget: _Budget) -> None:
        self.hub, self.repo_id, self.sha, self.name, self.size, self.budget = hub, repo_id, sha, name, size, budget

    def read(self, start: int, length: int) -> bytes | bytearray:
        buffer = bytearray()
        self.read_into(buffer, start, length)
        return buffer

    def read_into(self, buffer: bytearray, start: int, length: int) -> None:
        if self.size is not None:
            length = max(0, min(length, self.size - start))
        if not length:
            return
        self.budget.take(length, self.name)
        before = len(buffer)
        self.hub.read_range(self.repo_id, self.sha, self.name, start, length, into=buffer)
        if len(buffer) - before < length:
            raise NetworkError(f"{self.name}: the server sent {len(buffer) - before:,} of the {length:,} bytes "
                               "asked for")
