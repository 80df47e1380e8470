"""Header-only reads from the Hugging Face Hub, through huggingface_hub.

huggingface_hub supplies the endpoint, the token, the HTTP session, URL building, retries for API
calls and the mapping of Hub error codes to exceptions; this module adds the fetch plan:

1. one API call lists the repo's files with their sizes at the revision and resolves it to a commit
   SHA (a pinned SHA already in the header cache makes no request at all);
2. config.json and the index, concurrently;
3. every shard's header, concurrently: one range request sized from the index (the shard's tensor
   names), and an exact second request for the remainder only when the header is larger.

A server that ignores ``Range`` and answers 200 with the whole body is read only up to the bytes
asked for, then the connection is dropped: weights are never downloaded by accident. Results go to
the header cache (``$HF_HOME/inspector/hub``) as header snapshots, written atomically.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from .checkpoint import WEIGHT_SUFFIXES, Checkpoint, FileEntry, index_shards, json_object
from .errors import AccessError, HubUnreachable, InvalidCheckpointError, NetworkError, NotFoundError
from .header import MAX_HEADER_BYTES, PREFIX_BYTES, parse_header, read_header_length
from .snapshot import is_snapshot, load_snapshot, write_snapshot
from .text import natural_key

SHA: Final = re.compile(r"^[0-9a-f]{40}$")
STORED: Final[tuple[str, ...]] = ("config.json", "generation_config.json", "quantize_config.json")
#: bytes of header JSON per tensor, beyond its name: `{"dtype":"BF16","shape":[14336,4096],
#: "data_offsets":[…,…]},` is 60–90 bytes; a little over keeps the first read whole
ENTRY_OVERHEAD: Final = 96
FIRST_READ_UNINDEXED: Final = 64 * 1024
RETRY_STATUS: Final = frozenset({408, 429, 500, 502, 503, 504})

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class HubOptions:
    endpoint: str | None = None
    token: str | None = None
    offline: bool | None = None  # None: huggingface_hub's HF_HUB_OFFLINE
    timeout: float | None = None  # seconds per request; None: huggingface_hub's HF_HUB_DOWNLOAD_TIMEOUT
    max_retries: int = 4
    workers: int = 96  # all shards of most repos at once; httpx's pool allows 100 connections
    use_cache: bool = True


@dataclass(slots=True)
class FetchStats:
    """What a fetch cost: reported in results and asserted by tests and benchmarks."""

    requests: int = 0
    bytes: int = 0
    range_ignored: bool = False
    retries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, requests: int = 0, nbytes: int = 0, retries: int = 0) -> None:
        with self.lock:
            self.requests += requests
            self.bytes += nbytes
            self.retries += retries


class Hub:
    """The narrow seam to the Hub: list files, read JSON, read a byte range."""

    def __init__(self, options: HubOptions | None = None) -> None:
        from huggingface_hub import constants

        self.options = options or HubOptions()
        self.endpoint = (self.options.endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self.timeout = self.options.timeout or float(constants.HF_HUB_DOWNLOAD_TIMEOUT)
        self.stats = FetchStats()

    # -- token -------------------------------------------------------------------------------

    def token(self) -> str | None:
        from huggingface_hub import get_token

        return self.options.token or get_token()

    def token_source(self) -> str:
        """Which token is in use, in words, never the token itself."""
        from huggingface_hub import get_token

        if self.options.token:
            return "the token given with --token"
        if os.environ.get("HF_TOKEN"):
            return "the token in HF_TOKEN"
        if get_token():
            return "the token saved by `hf auth login`"
        return "no token"

    def headers(self) -> dict[str, str]:
        from huggingface_hub.utils import build_hf_headers

        return dict(build_hf_headers(token=self.token() or False, library_name="inspector"))

    @property
    def offline(self) -> bool:
        from huggingface_hub import constants

        return self.options.offline if self.options.offline is not None else constants.is_offline_mode()

    # -- calls -------------------------------------------------------------------------------

    def repo_info(self, repo_id: str, revision: str, *, files: bool = True) -> dict[str, Any]:
        """``GET /api/models/{repo}/revision/{rev}?blobs=true``: commit SHA and files with sizes."""
        import httpx2
        from huggingface_hub.utils import hf_raise_for_status, http_backoff

        url = f"{self.endpoint}/api/models/{repo_id}/revision/{quote(revision, safe='')}"
        with self._translated(repo_id, revision, None):
            # connection refused and DNS failures are not retried: an unreachable Hub should fall
            # back to the cache at once, not after half a minute of backoff
            response = http_backoff(
                "GET", url, params={"blobs": "true"} if files else None, headers=self.headers(),
                timeout=self.timeout, max_retries=self.options.max_retries, base_wait_time=0.25,
                retry_on_status_codes=tuple(RETRY_STATUS),
                retry_on_exceptions=(httpx2.ReadTimeout, httpx2.RemoteProtocolError, httpx2.ReadError),
            )
            self.stats.add(requests=1, nbytes=len(response.content))
            hf_raise_for_status(response)
        try:
            info = response.json()
        except ValueError:
            raise NetworkError(f"{self.endpoint}: the repo listing for {repo_id} is not JSON") from None
        if not isinstance(info, dict) or not isinstance(info.get("sha"), str):
            raise NetworkError(f"{self.endpoint}: the repo listing for {repo_id} has no commit SHA")
        return info

    def file_url(self, repo_id: str, sha: str, path: str) -> str:
        from huggingface_hub import hf_hub_url

        return str(hf_hub_url(repo_id, path, revision=sha, endpoint=self.endpoint))

    def read_json(self, repo_id: str, sha: str, path: str, limit: int = 64 * 1024 * 1024) -> bytes:
        return self.read_range(repo_id, sha, path, 0, limit, whole=True)

    def read_range(self, repo_id: str, sha: str, path: str, start: int, length: int, *,
                   whole: bool = False) -> bytes:
        """Bytes ``[start, start + length)`` of a file (fewer at its end). Retries dropped
        connections and 408/429/5xx with backoff, honouring ``Retry-After``."""
        from huggingface_hub.utils import get_session

        url = self.file_url(repo_id, sha, path)
        headers = self.headers()
        if not whole:
            headers["Range"] = f"bytes={start}-{start + length - 1}"
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._translated(repo_id, sha, path), \
                        get_session().stream("GET", url, headers=headers, timeout=self.timeout) as response:
                        self.stats.add(requests=1)
                        if response.status_code in RETRY_STATUS and attempt <= self.options.max_retries:
                            self._sleep(attempt, response.headers.get("Retry-After"))
                            self.stats.add(retries=1)
                            continue
                        if response.status_code >= 400:
                            response.read()
                            from huggingface_hub.utils import hf_raise_for_status

                            hf_raise_for_status(response)
                        return self._body(response, start, length, whole, path)
            except _Retryable as exc:
                if attempt > self.options.max_retries:
                    raise NetworkError(
                        f"{path}: the connection kept failing ({exc.reason}) after {attempt} attempts",
                        hint="check the network, or run again later",
                    ) from None
                self.stats.add(retries=1)
                self._sleep(attempt, None)

    def _body(self, response: Any, start: int, length: int, whole: bool, path: str) -> bytes:
        import httpx2

        skip = 0
        if not whole and response.status_code == 200:
            # the server ignored Range: read only what was asked for, then drop the connection
            self.stats.range_ignored = True
            skip = start
        elif not whole and response.status_code == 206:
            content_range = response.headers.get("Content-Range", "")
            if not content_range.startswith(f"bytes {start}-"):
                raise NetworkError(f"{path}: the server answered a different range ({content_range or 'none'})")
        want = skip + length
        buf = bytearray()
        try:
            for chunk in response.iter_bytes():
                buf += chunk
                if len(buf) >= want:
                    break
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            self.stats.add(nbytes=len(buf))
            raise _Retryable(type(exc).__name__) from None
        self.stats.add(nbytes=len(buf))
        return bytes(buf[skip:want])

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = min(8.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
        if retry_after and retry_after.strip().isdigit():
            delay = float(retry_after.strip())
        time.sleep(delay)

    def _translated(self, repo_id: str, revision: str, path: str | None) -> _Translate:
        return _Translate(self, repo_id, revision, path)


class _Retryable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Translate:
    """Hub library errors → our errors, in one place, with what to do about them."""

    def __init__(self, hub: Hub, repo_id: str, revision: str, path: str | None) -> None:
        self.hub, self.repo_id, self.revision, self.path = hub, repo_id, revision, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, (_Retryable, NetworkError, NotFoundError)):
            return
        import httpx2
        from huggingface_hub import errors as hf

        repo, where = self.repo_id, f"{self.repo_id}@{self.revision}"
        if isinstance(exc, hf.GatedRepoError):
            raise AccessError(
                f"{repo} is gated: you need to accept its terms on the Hub before reading it "
                f"(used {self.hub.token_source()})",
                hint="request access on the model page, then log in with `hf auth login` or set HF_TOKEN",
            ) from None
        if isinstance(exc, hf.RevisionNotFoundError):
            raise NotFoundError(f"{where}: no such revision (branch, tag or commit)") from None
        if isinstance(exc, hf.RepositoryNotFoundError):
            raise NotFoundError(
                f"{repo}: no such repo on {self.hub.endpoint}, or it is private and "
                f"{self.hub.token_source()} cannot see it",
                hint="check the name; for a private repo, log in with `hf auth login` or set HF_TOKEN",
            ) from None
        if isinstance(exc, hf.EntryNotFoundError):
            raise NotFoundError(f"{where}: the repo lists {self.path} but the Hub does not serve it") from None
        if isinstance(exc, hf.OfflineModeIsEnabled):
            raise NetworkError(f"{repo}: offline mode is on (HF_HUB_OFFLINE) and this revision is not cached",
                               hint="run once online, or `inspect save` it somewhere") from None
        if isinstance(exc, hf.HfHubHTTPError):
            status = exc.response.status_code if exc.response is not None else None
            if status == 429:
                raise NetworkError(f"{repo}: rate limited by the Hub (HTTP 429), retries exhausted",
                                   hint="wait a while; a token raises the limit") from None
            if status in (401, 403):
                raise AccessError(f"{repo}: access denied (HTTP {status}) with {self.hub.token_source()}",
                                  hint="log in with `hf auth login` or set HF_TOKEN") from None
            if status == 404:
                raise NotFoundError(f"{where}: not found (HTTP 404)") from None
            raise NetworkError(f"{repo}: the Hub answered HTTP {status} after retries") from None
        if isinstance(exc, httpx2.TimeoutException):
            raise HubUnreachable(f"{self.hub.endpoint}: timed out after {self.hub.timeout:g} s",
                               hint="check the network; HF_HUB_DOWNLOAD_TIMEOUT sets the limit") from None
        if isinstance(exc, httpx2.ConnectError):
            reason = "DNS lookup failed" if "name" in str(exc).lower() or "resolution" in str(exc).lower() \
                else "connection refused or unreachable"
            raise HubUnreachable(f"{self.hub.endpoint}: {reason}",
                               hint="check the network or HF_ENDPOINT; HF_HUB_OFFLINE=1 uses the cache") from None
        if isinstance(exc, (httpx2.TransportError, httpx2.StreamError)):
            raise _Retryable(type(exc).__name__) from None


# --- the header cache ---------------------------------------------------------------------------


class HeaderCache:
    """Header snapshots keyed by repo and commit SHA, beside huggingface_hub's own cache."""

    def __init__(self, root: Path | None = None) -> None:
        if root is None:
            from huggingface_hub import constants

            root = Path(constants.HF_HOME) / "inspector" / "hub"
        self.root = root

    def _repo(self, repo_id: str) -> Path:
        return self.root / ("models--" + repo_id.replace("/", "--"))

    def path(self, repo_id: str, sha: str) -> Path:
        return self._repo(repo_id) / "snapshots" / sha

    def get(self, repo_id: str, sha: str) -> Path | None:
        p = self.path(repo_id, sha)
        return p if is_snapshot(p) else None

    def set_ref(self, repo_id: str, ref: str, sha: str) -> None:
        target = self._repo(repo_id) / "refs" / quote(ref, safe="")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(sha)
            os.replace(tmp, target)
        except OSError:
            pass

    def ref(self, repo_id: str, ref: str) -> str | None:
        try:
            sha = (self._repo(repo_id) / "refs" / quote(ref, safe="")).read_text().strip()
        except OSError:
            return None
        return sha if SHA.match(sha) and self.get(repo_id, sha) else None

    def newest(self, repo_id: str) -> str | None:
        snaps = [p for p in (self._repo(repo_id) / "snapshots").glob("*") if is_snapshot(p)]
        return max(snaps, key=lambda p: p.stat().st_mtime).name if snaps else None

    def put(self, snapshot: dict[str, Any]) -> None:
        """Atomic: write_snapshot builds a temporary folder and renames it into place. When two
        runs race, one rename wins and the other's copy is dropped; both were the same bytes."""
        with contextlib.suppress(OSError, Exception):
            write_snapshot(self.path(snapshot["repo_id"], snapshot["revision"]), **snapshot)


# --- the fetch plan -----------------------------------------------------------------------------


def open_hub(repo_id: str, revision: str | None = None, *, options: HubOptions | None = None,
             progress: Progress | None = None, hub: Hub | None = None,
             cache: HeaderCache | None = None) -> Checkpoint:
    """Read a Hub repo's config, index and safetensors headers. See the module docstring."""
    hub = hub or Hub(options)
    cache = cache or HeaderCache()
    rev = revision or "main"
    use_cache = hub.options.use_cache
    if use_cache and SHA.match(rev) and cache.get(repo_id, rev):
        return _from_cache(cache, repo_id, rev, hub, [])
    if hub.offline:
        return _offline(repo_id, rev, cache, hub, "offline mode is on (HF_HUB_OFFLINE)")
    try:
        info = hub.repo_info(repo_id, rev)
    except HubUnreachable as exc:
        return _offline(repo_id, rev, cache, hub, f"the Hub is unreachable ({exc.message})")
    sha = info["sha"]
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
    return _with(c, notes=(*notes, f"headers from the cache ({sha[:12]}), {hub.stats.requests} request(s)"))


def _offline(repo_id: str, rev: str, cache: HeaderCache, hub: Hub, why: str) -> Checkpoint:
    sha = cache.ref(repo_id, rev) if not SHA.match(rev) else (rev if cache.get(repo_id, rev) else None)
    sha = sha or (cache.newest(repo_id) if not SHA.match(rev) else None)
    if sha:
        return _from_cache(cache, repo_id, sha, hub,
                           [f"{why}: serving the cached snapshot at commit {sha} (offline)"])
    from .aliases import BY_REPO, bundled_path

    alias = BY_REPO.get(repo_id.lower())
    if alias is not None and not SHA.match(rev):
        c = load_snapshot(bundled_path(alias), origin="bundled", label=alias.repo_id)
        return _with(c, notes=(*c.notes, f"{why}: serving the bundled snapshot at commit "
                                          f"{c.revision or 'unknown'} (offline)"))
    raise NetworkError(f"{repo_id}@{rev}: {why}, and no cached or bundled snapshot exists",
                       hint="run once online, or `inspect save REPO -o DIR` on a machine that is")


def _with(c: Checkpoint, **changes: Any) -> Checkpoint:
    from dataclasses import replace

    return replace(c, **changes)


def fetch_checkpoint(hub: Hub, repo_id: str, sha: str, info: Mapping[str, Any],
                     progress: Progress | None = None) -> tuple[Checkpoint, dict[str, Any]]:
    """The cold path: config and index, then every header, concurrently."""
    siblings = info.get("siblings") or []
    sizes: dict[str, int | None] = {}
    for s in siblings:
        if isinstance(s, dict) and isinstance(s.get("rfilename"), str):
            size = s.get("size")
            lfs = s.get("lfs")
            if size is None and isinstance(lfs, dict):
                size = lfs.get("size")
            sizes[s["rfilename"]] = size if type(size) is int else None
    top = {p for p in sizes if "/" not in p}
    index_name = "model.safetensors.index.json" if "model.safetensors.index.json" in top else next(
        (p for p in sorted(top) if p.endswith(".safetensors.index.json")), None)

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

        def fetch(name: str) -> tuple[str, bytes]:
            nonlocal done
            first = first_reads.get(name, FIRST_READ_UNINDEXED)
            blob = _read_header(hub, repo_id, sha, name, sizes.get(name), first)
            with lock:
                done += 1
                if progress:
                    progress(done, len(shards))
            return name, blob

        blobs = dict(pool.map(fetch, shards))
        config_raw = config_f.result() if config_f else None
        stored = {p: f.result() for p, f in extra_f.items()}
    headers = tuple(parse_header(blobs[n], file=n, file_size=sizes.get(n)) for n in shards)
    config = json_object(config_raw, "config.json") if config_raw is not None else None
    stored_all: dict[str, bytes] = dict(stored)
    if config_raw is not None:
        stored_all["config.json"] = config_raw
    if index_raw is not None and index_name:
        stored_all[index_name] = index_raw
    notes = [f"read {hub.stats.requests} request(s), {hub.stats.bytes:,} bytes from {hub.endpoint} "
             f"at commit {sha}"]
    if hub.stats.range_ignored:
        notes.append("the server ignored Range requests; only the header bytes were read")
    checkpoint = Checkpoint(
        label=repo_id, origin="hub", location=f"{hub.endpoint}/{repo_id}", headers=headers,
        config=config, index=index, repo_id=repo_id, revision=sha,
        files=tuple(FileEntry(p, s) for p, s in sorted(sizes.items(), key=lambda kv: natural_key(kv[0]))),
        notes=tuple(notes),
    )
    snapshot = {
        "repo_id": repo_id, "revision": sha,
        "files": sorted(sizes.items()),
        "headers": blobs, "stored": stored_all,
        "provenance": f"read from {hub.endpoint} by inspector (headers only)",
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


def _read_header(hub: Hub, repo_id: str, sha: str, name: str, size: int | None, first: int) -> bytes:
    if size is not None:
        if size < PREFIX_BYTES:
            read_header_length(b"", file=name, file_size=size)  # raises HeaderTooSmall
        first = min(first, size)
    first = max(first, PREFIX_BYTES)
    blob = hub.read_range(repo_id, sha, name, 0, first)
    n = read_header_length(blob, file=name, file_size=size)
    total = PREFIX_BYTES + n
    if len(blob) < total:
        if total > PREFIX_BYTES + MAX_HEADER_BYTES:  # read_header_length already refused this
            raise InvalidCheckpointError(f"{name}: header too large")
        blob += hub.read_range(repo_id, sha, name, len(blob), total - len(blob))
    return blob[:total]
