"""Hub transport: requests, retries, deadlines, byte budgets and error translation, in one place.

huggingface_hub supplies the endpoint, the token, the HTTP session (its client follows redirects
and carries the token only to the same host), URL building and the mapping of Hub error codes to
exceptions. This module adds what a hostile or broken server must not be able to defeat:

* every response body is read as it streams, up to a byte budget, with compressed bodies
  (``Content-Encoding: gzip``/``deflate``) inflated under the same cap: a small gzip bomb stops at
  the budget, not at 2 GB;
* every request has an idle timeout (``HF_HUB_DOWNLOAD_TIMEOUT``) and a total deadline, and the
  whole Hub phase one overall deadline: a server trickling 50 bytes/s is cut off;
* ``Retry-After`` is honoured only up to ``max_retry_after`` seconds, said through ``on_wait``;
  longer asks end the read with a network error at once;
* connection resets, redirect loops and other transport faults are network errors (exit 5) once
  the retries are spent; a 206 with fewer bytes than asked is continued where it stopped.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlsplit, urlunsplit

from inspector.errors import (
    AccessError,
    HubUnreachable,
    InspectorError,
    InvalidCheckpointError,
    NetworkError,
    NotFoundError,
)
from inspector.safeio import COMMIT, JSON_BUDGET, parse_json_object

RETRY_STATUS: Final = frozenset({408, 429, 500, 502, 503, 504})
LISTING_BUDGET: Final = 32 * 1024 * 1024  # a listing of 100,000 files is about 20 MB
#: the most JSON values a listing may hold (commas, objects and lists, counted before parsing: a file is 6 to 9 of
#: them, so ~170,000 files): 32 MiB of ``[]`` cost 1.0 GB parsed, 860,342 one-name files 17 s
LISTING_VALUES: Final = 1_500_000
ERROR_BODY_BUDGET: Final = 64 * 1024
DEFAULT_DEADLINE: Final = 25.0  # seconds for the whole Hub phase of one command (INSPECTOR_HUB_DEADLINE)
DEFAULT_REQUEST_DEADLINE: Final = 20.0  # seconds for one request, however its bytes trickle
DEFAULT_MAX_RETRY_AFTER: Final = 20.0
CACHED_CONNECT_WAIT: Final = 3.0  # the listing's limit when a cached snapshot can stand in
MAX_CONTINUATIONS: Final = 1024  # further range requests after a short 206 (the deadline bounds them too)

Waiting = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class HubOptions:
    """How to reach the Hub: the one record every library function takes (``hub=``) and the CLI builds
    once from ``--endpoint``, ``--token`` and ``--offline``. None: huggingface_hub's own setting
    (``HF_ENDPOINT``, the saved token or ``HF_TOKEN``, ``HF_HUB_OFFLINE``)."""

    endpoint: str | None = None
    token: str | None = None
    offline: bool | None = None  # None: huggingface_hub's HF_HUB_OFFLINE
    timeout: float | None = None  # idle seconds per read; None: huggingface_hub's HF_HUB_DOWNLOAD_TIMEOUT
    max_retries: int = 4
    workers: int = 96  # all shards of most repos at once; httpx's pool allows 100 connections
    use_cache: bool = True
    deadline: float | None = None  # the whole Hub phase; None: INSPECTOR_HUB_DEADLINE or 25 s
    header_budget: int | None = None  # header bytes one repo may yield; None: a repo's (REPO_HEADER_BUDGET)
    request_deadline: float = DEFAULT_REQUEST_DEADLINE
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER
    on_wait: Waiting | None = None  # told, in words, when a read waits (Retry-After)


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


def public_endpoint(url: str) -> str:
    """The endpoint without credentials (``http://user:pass@mirror`` → ``http://mirror``): the form
    that may be printed, stored or used as a cache key."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class _Retryable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def deadline_of(options: HubOptions | None) -> float:
    """The seconds a Hub phase may take: the options' own, else ``INSPECTOR_HUB_DEADLINE``, else 25 s."""
    if options is not None and options.deadline is not None:
        return options.deadline
    try:
        return float(os.environ.get("INSPECTOR_HUB_DEADLINE", DEFAULT_DEADLINE))
    except ValueError:
        return DEFAULT_DEADLINE


class Hub:
    """The narrow seam to the Hub: list files, read JSON, read a byte range."""

    def __init__(self, options: HubOptions | None = None) -> None:
        # deferred: 1 ms at import (huggingface_hub)
        from huggingface_hub import constants

        self.options = options or HubOptions()
        self.endpoint = (self.options.endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self.public = public_endpoint(self.endpoint)
        self.timeout = self.options.timeout or float(constants.HF_HUB_DOWNLOAD_TIMEOUT)
        self.deadline_seconds = deadline_of(self.options)
        self.started = time.monotonic()
        self.stats = FetchStats()
        self._headers: dict[str, str] | None = None
        self._headers_lock = threading.Lock()
        # a file's address → where the server redirected its first range read (the real Hub: its CDN);
        # the file's next ranges go there directly (``_get``), one round trip each instead of two
        self._moved: dict[str, str] = {}

    # -- token -------------------------------------------------------------------------------

    def token(self) -> str | None:
        # deferred: 90 ms at import (huggingface_hub)
        from huggingface_hub import get_token

        return self.options.token or get_token()

    def token_source(self) -> str:
        """Which token is in use, in words, never the token itself."""
        # deferred: 90 ms at import (huggingface_hub)
        from huggingface_hub import get_token

        if self.options.token:
            return "the token passed as ⟨token⟩"
        if os.environ.get("HF_TOKEN"):
            return "the token in HF_TOKEN"
        if get_token():
            return "the token saved by `hf auth login`"
        return "no token"

    def access_hint(self, no_token: str, with_token: str) -> str:
        """What to do when the Hub refuses a read. With no token: log in. With a token, the account it
        belongs to is the one without access: logging in again or setting HF_TOKEN would not help."""
        # deferred: 91 ms at import (huggingface_hub)
        from huggingface_hub import get_token

        if self.options.token or get_token():
            return f"{with_token} ({self.token_source()} is that account's)"
        return f"{no_token}; log in with `hf auth login` or set HF_TOKEN"

    def headers(self) -> dict[str, str]:
        """huggingface_hub's request headers (user agent, token), built once per Hub: the token
        lookup reads the environment and files (0.2 s of CPU over a 195-request read, under yappi)."""
        if self._headers is None:
            with self._headers_lock:
                if self._headers is None:
                    # deferred: 92 ms at import (huggingface_hub.utils)
                    from huggingface_hub.utils import build_hf_headers

                    self._headers = dict(build_hf_headers(token=self.token() or False, library_name="inspector"))
        return dict(self._headers)

    def prepare(self) -> None:
        """Build the request headers and huggingface_hub's HTTP session now: their imports and TLS
        context are most of a cold read's CPU before its first request, and a read begun before the rest
        of the program is imported (``early.begin``) spends it first, so its requests go out at once."""
        # deferred: 64 ms at import (huggingface_hub.utils)
        from huggingface_hub.utils import get_session

        self.headers()
        get_session()

    @property
    def offline(self) -> bool:
        # deferred: 1 ms at import (huggingface_hub)
        from huggingface_hub import constants

        return self.options.offline if self.options.offline is not None else constants.is_offline_mode()

    def remaining(self) -> float:
        return self.deadline_seconds - (time.monotonic() - self.started)

    # -- calls -------------------------------------------------------------------------------

    def repo_info(self, repo_id: str, revision: str, *, quick: bool = False) -> dict[str, Any]:
        """``GET /api/models/{repo}/revision/{rev}?blobs=true``: commit SHA and files with sizes.
        ``quick``: a cached snapshot can stand in, so give up after a few seconds."""

        url = f"{self.endpoint}/api/models/{repo_id}/revision/{quote(revision, safe='')}"
        body = bytearray()
        self._get(url, repo_id, revision, None, params={"blobs": "true"}, limit=LISTING_BUDGET, into=body,
                  whole=True, unreachable_after=CACHED_CONNECT_WAIT if quick else None)
        try:
            info = parse_json_object(body, f"{self.public}: the repo listing for {repo_id}", max_values=LISTING_VALUES)
        except InvalidCheckpointError as exc:
            raise NetworkError(exc.message) from None
        if not isinstance(info.get("sha"), str):
            raise NetworkError(f"{self.public}: the repo listing for {repo_id} has no commit SHA")
        return info

    def sharded_metadata(self, repo_id: str, index_name: str, limit: int, commit: list[str], seconds: float) -> bytes:
        """``GET /api/models/{repo}/safetensors-metadata/{index}``: the Hub's one answer for a sharded repo
        on its default branch (what huggingface_hub's ``get_sharded_safetensors_metadata`` asks for): the
        index without its weight map and every shard's parsed header, as JSON, at most ``limit`` bytes and
        ``seconds`` (a slow answer costs that, then the range reads, never the run's whole deadline).
        ``commit`` gets the answer's ``X-Repo-Commit``, where it has one."""
        url = f"{self.endpoint}/api/models/{repo_id}/safetensors-metadata/{quote(index_name, safe='/')}"
        body = bytearray()
        self._get(url, repo_id, "main", f"{index_name} (safetensors-metadata)", limit=limit, into=body, whole=True,
                  commit=commit, seconds=seconds)
        return bytes(body)

    def file_url(self, repo_id: str, sha: str, path: str) -> str:
        # huggingface_hub's own template and quoting (hf_hub_url's), without importing its
        # file_download module: 60 ms of a cold run that reads no file through it
        # deferred: 1 ms at import (huggingface_hub)
        from huggingface_hub import constants

        url = constants.HUGGINGFACE_CO_URL_TEMPLATE.format(repo_id=repo_id, revision=quote(sha, safe=""),
                                                           filename=quote(path))
        return self.endpoint + url[len(constants.ENDPOINT):] if url.startswith(constants.ENDPOINT) else url

    def read_json(self, repo_id: str, sha: str, path: str, limit: int = JSON_BUDGET, *,
                  commit: list[str] | None = None) -> bytes:
        """A small file whole. ``commit``: gets the ``X-Repo-Commit`` the server answered with, for
        a read at a branch whose commit is not known yet."""
        body = bytearray()
        self._get(self.file_url(repo_id, sha, path), repo_id, sha, path, limit=limit, into=body, whole=True,
                  commit=commit)
        return bytes(body)

    def read_range(self, repo_id: str, sha: str, path: str, start: int, length: int,
                   into: bytearray | None = None, *, commit: list[str] | None = None,
                   range_only: bool = False) -> bytearray:
        """Bytes ``[start, start + length)`` of a file (fewer at its end), appended to ``into`` (a
        new buffer if None) without an intermediate copy. A 206 that brings fewer bytes than asked
        (legal) is continued from where it stopped. ``commit``: as for ``read_json``. ``range_only``: a
        server that ignores the range (200, the whole file) is refused rather than read up to the
        range (tensor data lies deep in a file: reading up to it would download the weights)."""
        url = self.file_url(repo_id, sha, path)
        buf = bytearray() if into is None else into
        base = len(buf)
        for _ in range(MAX_CONTINUATIONS + 1):
            got = len(buf) - base
            size = self._get(url, repo_id, sha, path, start=start + got, limit=length - got, into=buf,
                             commit=commit, range_only=range_only)
            now = len(buf) - base
            if now >= length or now == got or (size is not None and start + now >= size):
                return buf
        raise NetworkError(f"{path}: the server kept answering short ranges ({len(buf):,} of {length:,} bytes "
                           f"after {MAX_CONTINUATIONS + 1} requests)")

    # -- one request, retried ------------------------------------------------------------------

    def _get(self, url: str, repo_id: str, revision: str, path: str | None, *, start: int = 0, limit: int,
             into: bytearray, whole: bool = False, params: dict[str, str] | None = None,
             unreachable_after: float | None = None, commit: list[str] | None = None,
             range_only: bool = False, seconds: float | None = None) -> int | None:
        """GET ``url`` (a byte range unless ``whole``), append the body to ``into``, return the
        file's size when the answer tells it; ``commit`` gets the answer's ``X-Repo-Commit`` (the
        Hub sets it on the first answer, before any redirect to a CDN); ``seconds``: this request's own
        deadline, shorter than the options' one."""
        # deferred: 64 ms at import (httpx2, huggingface_hub.utils)
        import httpx2
        from huggingface_hub.utils import get_session

        headers = self.headers()
        if whole:
            headers["Accept-Encoding"] = "gzip, deflate"
        else:
            headers["Range"] = f"bytes={start}-{start + limit - 1}"
            headers["Accept-Encoding"] = "identity"
        what = path or "the repo listing"
        base = len(into)
        # a later range of a file whose first one was redirected goes straight to where it moved, never
        # with the token: the address was chosen by a redirect, and the token is for the file's own address
        target = self._moved.get(url, url) if not whole and commit is None else url
        sent = headers if target == url else _without_token(headers)
        attempt = 0
        while True:
            attempt += 1
            del into[base:]  # what a failed attempt appended
            budget = self.remaining()
            if budget <= 0:
                raise NetworkError(f"{what}: the Hub phase went over its {self.deadline_seconds:g} s deadline",
                                   hint="INSPECTOR_HUB_DEADLINE sets it; check the network or the endpoint")
            deadline = time.monotonic() + min(budget, self.options.request_deadline, seconds or budget)
            idle = min(self.timeout, unreachable_after or self.timeout, budget)
            timeout = httpx2.Timeout(idle, connect=min(idle, unreachable_after or idle))
            try:
                with self._translated(repo_id, revision, path), \
                        get_session().stream("GET", target, headers=sent, params=params,
                                             timeout=timeout) as response:
                    self.stats.add(requests=1)
                    status = response.status_code
                    if target != url and status >= 400:  # the moved address no longer answers (a signed
                        target, sent = url, headers     # CDN address expires): the file's own, as at first
                        self._moved.pop(url, None)
                        continue
                    if status in RETRY_STATUS and attempt <= self.options.max_retries:
                        self._wait(attempt, response.headers.get("Retry-After"), what, status)
                        self.stats.add(retries=1)
                        continue
                    if status >= 400:
                        self._raise_for_status(response, deadline)
                    if commit is not None:
                        commit += [v for r in (*response.history, response)
                                   if (v := r.headers.get("X-Repo-Commit"))][:1]
                    if range_only and not whole and status == 200 and start > 0:
                        raise NetworkError(f"{what}: the server ignored the range request and sent the whole file; "
                                           "not reading it (that would download the weights)")
                    if response.history and not whole and target == url and path is not None:
                        self._remember_move(repo_id, revision, path, response)
                    return self._body(response, start, limit, whole, what, deadline, into)
            except _Retryable as exc:
                if attempt > self.options.max_retries:
                    raise NetworkError(
                        f"{what}: the connection kept failing ({exc.reason}) after {attempt} attempts",
                        hint="check the network, or run again later",
                    ) from None
                self.stats.add(retries=1)
                self._wait(attempt, None, what, None)

    def _remember_move(self, repo_id: str, revision: str, path: str, response: Any) -> None:
        """Where a file's range read was redirected, kept under the file's address at its commit: the
        commit asked for, or (a read at a branch) the one the Hub's answer names, never a guess; and only
        where every hop the redirect took after the file's own address stayed on one origin."""
        # every hop after the first on one origin: the Hub's own redirect to its CDN (or within itself), never
        # a chain that leaves and re-enters, where a host other than the Hub chose the final address
        if len({_origin(str(r.url)) for r in (*response.history[1:], response)}) != 1:
            return
        named = next((v for r in (*response.history, response) if (v := r.headers.get("X-Repo-Commit"))), None)
        at = revision if COMMIT.match(revision) else named
        if at is not None and COMMIT.match(at) and named in (None, at):
            self._moved[self.file_url(repo_id, at, path)] = str(response.url)

    def _raise_for_status(self, response: Any, deadline: float) -> None:
        # deferred: 63 ms at import (httpx2, huggingface_hub.utils)
        import httpx2
        from huggingface_hub.utils import hf_raise_for_status

        body = b"".join(_decoded(response, ERROR_BODY_BUDGET, deadline, "error body", best_effort=True))
        headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-encoding",
                                                                                   "content-length")}
        copy = httpx2.Response(response.status_code, headers=headers, content=body[:ERROR_BODY_BUDGET],
                               request=response.request)
        hf_raise_for_status(copy)
        raise NetworkError(f"HTTP {response.status_code}")  # pragma: no cover - hf_raise_for_status raised

    def _body(self, response: Any, start: int, limit: int, whole: bool, what: str, deadline: float,
              into: bytearray) -> int | None:
        skip = 0
        size: int | None = None
        if not whole and response.status_code == 200:
            # the server ignored Range: read only what was asked for, then drop the connection
            self.stats.range_ignored = True
            skip = start
        elif not whole and response.status_code == 206:
            content_range = response.headers.get("Content-Range", "")
            m = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)$", content_range.strip())
            if not m or int(m.group(1)) != start:
                raise NetworkError(f"{what}: the server answered a different range ({content_range or 'none'})")
            size = int(m.group(3)) if m.group(3) != "*" else None
        base = len(into)
        cap = skip + limit + (1 if whole else 0)  # one byte over tells a whole body went over its budget
        seen = 0
        try:
            for chunk in _decoded(response, cap, deadline, what):
                if seen + len(chunk) > skip:
                    into += chunk[max(0, skip - seen):] if seen < skip else chunk
                seen += len(chunk)
                if seen >= cap:
                    break
        finally:
            self.stats.add(nbytes=seen)
        if whole and len(into) - base > limit:
            raise NetworkError(f"{what}: over {limit:,} bytes; refusing to read more (a hostile server?)")
        del into[base + limit:]
        return size

    def _wait(self, attempt: int, retry_after: str | None, what: str, status: int | None) -> None:
        delay = min(8.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
        asked = retry_after.strip() if retry_after else ""
        if asked.isdigit():
            delay = float(asked)
            if delay > self.options.max_retry_after:
                raise NetworkError(
                    f"{what}: the Hub answered HTTP {status} and asks to wait {int(delay):,} s, more than the "
                    f"{self.options.max_retry_after:g} s this tool waits",
                    hint="run again later; a token raises the Hub's rate limits")
        if delay >= self.remaining():
            raise NetworkError(f"{what}: no time left to retry (HTTP {status or 'fault'}) within the "
                               f"{self.deadline_seconds:g} s deadline", hint="run again later")
        if asked.isdigit() and self.options.on_wait is not None:
            self.options.on_wait(f"{what}: the Hub asked to wait {delay:g} s (HTTP {status}); waiting")
        time.sleep(delay)

    def _translated(self, repo_id: str, revision: str, path: str | None) -> _Translate:
        return _Translate(self, repo_id, revision, path)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    """Scheme, host and port: what decides whether a redirect keeps the token."""
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower() or None, parts.port


def _without_token(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in ("authorization", "cookie")}


def _decoded(response: Any, cap: int, deadline: float, what: str, *, best_effort: bool = False) -> Iterator[bytes]:
    """The body as it streams, inflated when the server compressed it, never more than ``cap``
    bytes of output, and never past ``deadline``. ``best_effort`` (an error body, read only for its
    words): what arrives before an unknown encoding, a corrupt stream or a dropped connection, silently."""
    # deferred: 53 ms at import (httpx2)
    import httpx2

    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("gzip", "x-gzip"):
        inflater: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        inflater = zlib.decompressobj()
    elif encoding in ("identity", ""):
        inflater = None
    elif best_effort:
        return
    else:
        raise NetworkError(f"{what}: the server used an unsupported content encoding {encoding[:40]!r}")
    out = 0
    try:
        for raw in response.iter_raw():
            if time.monotonic() > deadline:
                raise NetworkError(f"{what}: the server is too slow (the read went past its deadline)",
                                   hint="check the network or the endpoint; INSPECTOR_HUB_DEADLINE sets the limit")
            if inflater is None:
                chunk = raw
            else:
                try:
                    chunk = inflater.decompress(raw, cap - out + 1)
                except zlib.error:
                    if best_effort:
                        return
                    raise NetworkError(f"{what}: corrupt compressed body") from None
            out += len(chunk)
            yield chunk
            if out >= cap:
                return
    except (httpx2.TransportError, httpx2.StreamError) as exc:
        if best_effort:
            return
        raise _Retryable(type(exc).__name__) from None


class _Translate:
    """Hub library and HTTP client errors → our errors, in one place, with what to do about them."""

    def __init__(self, hub: Hub, repo_id: str, revision: str, path: str | None) -> None:
        self.hub, self.repo_id, self.revision, self.path = hub, repo_id, revision, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:  # noqa: C901 (over the limit before it was set; to be split)
        if exc is None or isinstance(exc, (_Retryable, InspectorError)):
            return
        # deferred: 56 ms at import (httpx2, huggingface_hub)
        import httpx2
        from huggingface_hub import errors as hf

        hub = self.hub
        repo, where = self.repo_id, f"{self.repo_id}@{self.revision}"
        if isinstance(exc, hf.GatedRepoError):
            raise AccessError(
                f"{repo} is gated: you need to accept its terms on the Hub before reading it "
                f"(used {hub.token_source()})",
                hint=hub.access_hint("request access on the model page",
                                     "the account has not been granted access yet: request it on the model page "
                                     "with that account (the authors may approve it by hand)"),
            ) from None
        if isinstance(exc, hf.RevisionNotFoundError):
            raise NotFoundError(f"{where}: no such revision (branch, tag or commit)") from None
        if isinstance(exc, hf.RepositoryNotFoundError):
            raise NotFoundError(
                f"{repo}: no such repo on {hub.public}, or it is private and cannot be read with "
                f"{hub.token_source()}",
                hint=hub.access_hint("check the name; a private repo needs a token",
                                     "check the name; if it is private, the account needs read access to it"),
            ) from None
        if isinstance(exc, hf.EntryNotFoundError):
            raise NotFoundError(f"{where}: the repo lists {self.path} but the Hub does not serve it") from None
        if isinstance(exc, hf.OfflineModeIsEnabled):
            raise NotFoundError(f"{repo}: offline mode is on (HF_HUB_OFFLINE) and this revision is not cached",
                                hint="run once online, or `inspect save` it somewhere") from None
        if isinstance(exc, hf.HfHubHTTPError):
            status = exc.response.status_code if exc.response is not None else None
            if status == 429:
                raise NetworkError(f"{repo}: rate limited by the Hub (HTTP 429), retries exhausted",
                                   hint="wait a while; a token raises the limit") from None
            if status in (401, 403):
                raise AccessError(f"{repo}: access denied (HTTP {status}) with {hub.token_source()}",
                                  hint=hub.access_hint("a private or gated repo needs a token",
                                                      "the account has no access to this repo")) from None
            if status == 404:
                raise NotFoundError(f"{where}: not found (HTTP 404)") from None
            raise NetworkError(f"{repo}: the Hub answered HTTP {status} after retries") from None
        if isinstance(exc, httpx2.TimeoutException):
            raise HubUnreachable(
                f"{hub.public}: timed out (no answer within {hub.timeout:g} s; the whole Hub read has a "
                f"{hub.deadline_seconds:g} s deadline)",
                hint="check the network; HF_HUB_DOWNLOAD_TIMEOUT sets the wait for an answer, INSPECTOR_HUB_DEADLINE "
                     "the whole read") from None
        if isinstance(exc, httpx2.ConnectError):
            text = str(exc).lower()
            reason = "DNS lookup failed" if "name" in text or "resolution" in text \
                else "connection refused or unreachable"
            raise HubUnreachable(f"{hub.public}: {reason}",
                                 hint="check the network or HF_ENDPOINT; HF_HUB_OFFLINE=1 uses the cache") from None
        if isinstance(exc, httpx2.TooManyRedirects):
            raise NetworkError(f"{hub.public}: too many redirects (a redirect loop) for "
                               f"{self.path or 'the repo listing'}", hint="check the endpoint") from None
        if isinstance(exc, (httpx2.TransportError, httpx2.StreamError)):
            raise _Retryable(type(exc).__name__) from None
        if isinstance(exc, httpx2.HTTPError):
            raise NetworkError(f"{hub.public}: {type(exc).__name__}") from None
