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
from inspector.safeio import COMMIT, SHA256, commit_id, relative_name
from inspector.sources.assemble import Parts, assemble, checkpoint_of, stored_files
from inspector.sources.header_cache import HeaderCache
from inspector.sources.resolve import HubOpener
from inspector.sources.snapshot import load_snapshot
from inspector.sources.transport import FetchStats, Hub, HubOptions

__all__ = ["FetchStats", "HeaderCache", "Hub", "HubOptions", "fetch_checkpoint", "open_hub", "read_header",
           "repo_sizes"]

#: the first read of a lone model.safetensors sent beside the listing (its size unknown then): a header
#: past it costs a second round trip through the CDN redirect (a 13B GPTQ file's is 135 kB, a VLM's in one
#: file about 100 kB), and 256 KiB more on the wire is milliseconds against a round trip's 50-150
LONE_FILE_FIRST_READ: Final = 256 * 1024

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
    hub = hub or Hub(options)
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
    from inspector.sources.bundled import BY_REPO

    # when a cached or bundled snapshot can stand in, an unresponsive Hub costs seconds, not a minute
    warm = use_cache and _cached_sha(cache, repo_id, revision) is not None
    cached = warm or (revision is None and repo_id.lower() in BY_REPO)
    # nothing cached to stand in: the files most repos have are asked for at the branch beside the
    # listing, and kept when the server says they are at the commit the listing names
    early = None if warm or only is not None else \
        _Early(hub, repo_id, rev, one_request=rev == "main" and not problems.collects)
    try:
        if progress:
            progress(Phase.LISTING, 0, 1)
        try:
            info = hub.repo_info(repo_id, rev, quick=cached)
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
    if use_cache and keepable and not checkpoint.header_errors and checkpoint.index_error is None:
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
            if keepable and not checkpoint.header_errors:
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
    from inspector.sources.resolve import hf_cache_folder, open_folder

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
    from inspector.sources.resolve import hf_cache_folder

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
    from inspector.sources.bundled import BY_REPO, bundled_path

    alias = BY_REPO.get(repo_id.lower())
    if alias is not None and revision in (None, DEFAULT_BRANCH):  # the bundled snapshot is its default branch's
        c = load_snapshot(bundled_path(alias), origin="bundled", label=alias.repo_id, problems=problems)
        return c.with_notes(f"{why}: serving the bundled snapshot at commit {c.revision or 'unknown'} (offline)")
    where = f"{repo_id}@{revision}" if revision else repo_id
    message = f"{where}: {why}, and no cached or bundled snapshot of {'that revision' if revision else 'it'} exists"
    hint = "run once online, or `inspect save REPO -o DIR` on a machine that is"
    if unreachable:
        raise NetworkError(message, hint=hint)
    raise NotFoundError(message, hint=hint)


def repo_sizes(hub: Hub, info: Mapping[str, Any], repo_id: str) -> dict[str, int | None]:
    """Every file of a listing with its size, each name validated before it can become a path."""
    return {name: size for name, (size, _) in repo_files(hub, info, repo_id).items()}


def repo_files(hub: Hub, info: Mapping[str, Any], repo_id: str) -> dict[str, tuple[int | None, str | None]]:
    """Every file of a listing with its size and, for an LFS file, the sha256 the listing names (64 hex
    digits, or None), each name validated before it can become a path."""
    siblings = info.get("siblings") or []
    if not isinstance(siblings, list):
        raise InvalidCheckpointError(f"{hub.public}: the listing of {repo_id} has no list of files")
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


#: the index the one-request answer is asked for (``get_sharded_safetensors_metadata``'s default)
ONE_REQUEST_INDEX: Final = "model.safetensors.index.json"
#: the most bytes the one answer may take (DeepSeek-V3's 163 headers are 11.5 MB): a larger repo, or a
#: hostile answer, is read by range under ``REPO_HEADER_BUDGET``. Parsed, JSON costs several times its
#: bytes, so the answer's values (commas, objects, lists) are counted before it is parsed: at most
#: ``ONE_REQUEST_VALUES`` (DeepSeek-V3's answer: about 9 a tensor, 0.83 million)
ONE_REQUEST_BUDGET: Final = 32 * 1024 * 1024
ONE_REQUEST_VALUES: Final = 3_000_000
#: the most seconds the one answer is waited for (its request's own deadline): a stalled or trickling
#: answer then costs this, and the range reads answer, not the run's whole Hub deadline
ONE_REQUEST_SECONDS: Final = 10.0


class _Early:
    """Reads sent beside the listing, before the commit is known: config.json, the usual index and
    the first bytes of a lone model.safetensors, at the branch (a pipeline's model_index.json is asked
    for only once the listing has it: a guess at it cost every other repo a request, against the Hub's
    rate limits). The Hub names the commit it served in ``X-Repo-Commit``; an answer is used only when that
    is the listing's commit and the listing has the file, so a branch that moves between the two calls
    costs a read again, never a mix of commits. A failed early read (a 404 for a file the repo does
    not have) is simply not used.

    ``one_request`` (the default branch, read for its figures, not audited): the Hub's one answer for a
    sharded repo (``Hub.sharded_metadata``) is asked for in place of the index, so a cold sharded read is
    the listing's round trip and no other; it is used only as ``rebuilt_from_metadata`` checks it against
    the listing, and else the index and the shards are read as without it."""

    NAMES: Final = ("config.json", ONE_REQUEST_INDEX, "model.safetensors")

    def __init__(self, hub: Hub, repo_id: str, revision: str, *, one_request: bool = False) -> None:
        self.pool = ThreadPoolExecutor(max_workers=len(self.NAMES))
        self.hub, self.repo_id = hub, repo_id
        names = [n for n in self.NAMES if not (one_request and n == ONE_REQUEST_INDEX)]
        self.futures = {n: self.pool.submit(self._read, hub, repo_id, revision, n) for n in names}
        self.answer = self.pool.submit(self._read_answer, hub, repo_id) if one_request else None
        self.lock = threading.Lock()
        self.rebuilt: dict[str, bytes] | None = None
        self.decided = False
        self.check: Future[bool] | None = None  # one shard's header read from the file, against the answer's

    @staticmethod
    def _read(hub: Hub, repo_id: str, revision: str, name: str) -> tuple[bytes, str] | None:
        commit: list[str] = []
        try:
            if reader_for(name) is not None:
                first = SAFETENSORS.first_read(LONE_FILE_FIRST_READ)
                body = bytes(hub.read_range(repo_id, revision, name, 0, first, commit=commit))
            else:
                body = hub.read_json(repo_id, revision, name, commit=commit)
        except Exception:  # a guess that failed: the plan reads what the listing names
            return None
        return (body, commit[0]) if commit else None

    @staticmethod
    def _read_answer(hub: Hub, repo_id: str) -> tuple[bytes, str | None] | None:
        commit: list[str] = []
        try:
            body = hub.sharded_metadata(repo_id, ONE_REQUEST_INDEX, ONE_REQUEST_BUDGET, commit, ONE_REQUEST_SECONDS)
        except Exception:  # no such endpoint (a mirror), not sharded, gated, over its budget: read by range
            return None
        return body, (commit[0] if commit else None)

    def from_answer(self, sha: str, sizes: Mapping[str, int | None]) -> dict[str, bytes] | None:
        """The index and shard headers the one answer gives, once checked against the listing (decided
        once); None when there was no answer, it came too late or it did not check out. Once it does,
        one shard's header is read from the file to confirm it (``confirmed``)."""
        if self.answer is None:
            return None
        with self.lock:
            if not self.decided:
                self.decided = True
                try:
                    got = self.answer.result(timeout=ONE_REQUEST_SECONDS)
                except TimeoutError:
                    got = None
                self.rebuilt = None if got is None else rebuilt_from_metadata(got[0], got[1], sha, sizes,
                                                                              ONE_REQUEST_INDEX)
                if self.rebuilt is not None:
                    self.check = self.pool.submit(self._confirm, sha, self.rebuilt)
            return self.rebuilt

    def _confirm(self, sha: str, rebuilt: Mapping[str, bytes]) -> bool:
        """One shard read from its file at ``sha``: its header bytes must be the answer's to the byte, or
        the whole answer is set aside (never shown or cached). A lie that keeps the JSON's length (a
        transposed shape, F16 for BF16, two offsets swapped) is caught in that shard. Which shard: the
        commit's first 8 hex digits modulo the shards, so a run's output (its bytes read) is the same
        every time for one commit; an answer wrong in every shard, or in a whole file, is caught, and a
        server that lies in one shard of many and knows this rule is not (a read at a pinned commit
        reads every header by range, as the audit does)."""
        shards = sorted(n for n in rebuilt if n != ONE_REQUEST_INDEX)
        shard = shards[int(sha[:8], 16) % len(shards)]
        expected = rebuilt[shard]
        try:
            got = self.hub.read_range(self.repo_id, sha, shard, 0, len(expected))
        except Exception:  # the file cannot confirm it: the range reads decide, and say why they fail
            return False
        return bytes(got) == expected

    def confirmed(self) -> bool:
        """True unless the answer was used and its shard did not read back as the answer said."""
        with self.lock:
            check = self.check
        return check is None or check.result()

    def set_aside(self) -> None:
        """The answer is not used again: the index and headers are read by range."""
        with self.lock:
            self.decided, self.rebuilt, self.check = True, None, None

    def get(self, name: str, sha: str, sizes: Mapping[str, int | None]) -> bytes | None:
        rebuilt = self.from_answer(sha, sizes)
        if rebuilt is not None and name in rebuilt:
            return rebuilt[name]
        future = self.futures.get(name)
        if future is None or name not in sizes:
            return None
        got = future.result()
        return got[0] if got is not None and got[1] == sha else None

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def rebuilt_from_metadata(body: bytes, commit: str | None, sha: str, sizes: Mapping[str, int | None],
                          index_name: str) -> dict[str, bytes] | None:
    """The index and each shard's header bytes from the Hub's one answer (``{"index": …, "headers":
    {shard: header}}``), or None unless every part of it checks out against the listing at ``sha``:
    the commit it names (where it names one) is the listing's; the listing has the index and every
    shard; no tensor is in two shards; no shard is left out (every top-level safetensors file the
    listing has is in it, or the index's total_size is the data its headers hold); and each shard's
    header length is proved by the file's listed size (size − 8 − the end of its last tensor's data)
    to be the safetensors writer's compact JSON of that header, padded to 8 bytes or not. The bytes are
    that JSON, padded to the proved length, so the records, their offsets and where the data starts
    are the file's; a header another writer spaced
    out cannot be proved, and then the whole answer is set aside. The index's weight_map, which the
    answer leaves out, is rebuilt from the headers (the audit reads the real one)."""
    import json

    from inspector.formats.safetensors import MAX_HEADER_BYTES
    from inspector.safeio import parse_json_object

    if (commit is not None and commit != sha) or index_name not in sizes or len(body) > ONE_REQUEST_BUDGET:
        return None
    try:  # what parsing would build is counted first: a hostile answer of small objects costs 17 times its bytes
        doc = parse_json_object(body, "safetensors-metadata", max_values=ONE_REQUEST_VALUES)
    except InvalidCheckpointError:
        return None
    index, headers = doc.get("index"), doc.get("headers")
    if doc.keys() != {"index", "headers"} or not isinstance(index, dict) or not isinstance(headers, dict) \
            or not headers or len(headers) > len(sizes):
        return None
    out: dict[str, bytes] = {}
    weight_map: dict[str, str] = {}
    data = 0
    for shard, header in headers.items():
        size = sizes.get(shard)
        if not isinstance(header, dict) or size is None or reader_for(shard) is not SAFETENSORS:
            return None
        end = 0
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
            if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets) \
                    or name in weight_map:
                return None
            weight_map[name] = shard
            end = max(end, offsets[1])
            data += offsets[1] - offsets[0]
        try:
            compact = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        except (UnicodeEncodeError, ValueError):
            return None
        length = size - 8 - end
        if length not in (len(compact), -(-len(compact) // 8) * 8) or length > MAX_HEADER_BYTES:
            return None
        out[shard] = length.to_bytes(8, "little") + compact + b" " * (length - len(compact))
    # every shard the index names is in the answer: all the listing's top-level safetensors files are,
    # or (a stray consolidated.safetensors beside the shards) the index's total_size is the data they hold
    listed = {n for n in sizes if "/" not in n and reader_for(n) is SAFETENSORS}
    meta = index.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if not listed <= headers.keys() and not (type(total) is int and total == data):
        return None
    out[index_name] = json.dumps({**index, "weight_map": weight_map}, ensure_ascii=False).encode()
    return out


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
                     progress: Progress | None = None, *, problems: ProblemSink = RAISE,
                     only: str | None = None, early: _Early | None = None) -> tuple[Checkpoint, dict[str, Any]]:
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
    # the index the assembly read is the one the answer rebuilt (``_Early.get`` served it)
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
                 early: _Early | None, problems: ProblemSink = RAISE) -> None:
        self.hub, self.repo_id, self.sha, self.sizes, self.pool, self.early = hub, repo_id, sha, sizes, pool, early
        self.problems = problems
        self.where = repo_id
        self.remote = True
        self.budget = _Budget(REPO_HEADER_BUDGET)
        self.pending: dict[str, Future[bytes]] = {}

    def _ready(self, name: str) -> bytes | None:
        return self.early.get(name, self.sha, self.sizes) if self.early is not None else None

    def prefetch(self, names: list[str]) -> None:
        for name in names:
            if name not in self.pending and self._ready(name) is None:
                self.pending[name] = self.pool.submit(self.hub.read_json, self.repo_id, self.sha, name)

    def small(self, name: str) -> bytes:
        ready = self._ready(name)
        if ready is not None:
            return ready
        future = self.pending.get(name)
        return future.result() if future is not None else self.hub.read_json(self.repo_id, self.sha, name)

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
