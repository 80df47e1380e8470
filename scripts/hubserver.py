"""A local HTTP server that behaves like the Hugging Face Hub, for tests and benchmarks.

It speaks what the huggingface_hub client needs (../shared/HUB_PROTOCOL.md):

* ``GET /api/models/{repo}[/revision/{rev}][?blobs=true]``: ``sha`` and ``siblings`` (with sizes);
* ``HEAD``/``GET /{repo}/resolve/{rev}/{path}``: ``X-Repo-Commit``, ``ETag``, ``X-Linked-Size`` and
  ``X-Linked-Etag`` for LFS files, ``Range`` answered with 206 and ``Content-Range``;
* ``GET /api/models/{repo}/safetensors-metadata/{index}``: the index and every shard's parsed header
  in one answer (``get_sharded_safetensors_metadata``, default branch only);
* errors with ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``, ``GatedRepo``).

Safetensors files are virtual and full size: the real header bytes, then zeros, generated on the fly,
so a 5 GB shard costs nothing. Options: 302 redirects of LFS files to a second origin (a "CDN"),
latency per request, a request log, and faults (5xx then success, 429 with Retry-After, a
connection reset mid-body, a stall, Range ignored) that fire a set number of times.

Hostile modes, for the tests of hostile servers: a listing patched with any JSON (a commit id or
file names with traversal), a gzip bomb as the listing body, a reset of every API call, a redirect
loop, bodies trickled a few bytes a second, and 206 answers shorter than the range asked for.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

CHUNK = 1 << 16


@dataclass
class Tiled:
    """Tensor data made on the fly, for full-size files whose values matter (a benchmark's fine-tune): each
    region ``[start, end)`` of the file repeats one of ``blocks`` (valid values, made once), placed by the
    absolute offset, so two files tiling the same block hold the same bytes there."""

    regions: list[tuple[int, int, int]]  # (start, end, block index), sorted, not overlapping
    blocks: list[bytes]

    def read(self, start: int, end: int) -> bytes:
        out = bytearray()
        for lo, hi, which in self.regions:
            if hi <= start or lo >= end:
                continue
            a, b = max(lo, start), min(hi, end)
            if a > start + len(out):
                out += b"\0" * (a - start - len(out))
            block = self.blocks[which]
            at = a % len(block)
            out += (block * ((b - a + at) // len(block) + 1))[at:at + b - a]
        out += b"\0" * (end - start - len(out))
        return bytes(out)


@dataclass
class VFile:
    size: int
    head: bytes  # the first bytes; the rest are zeros (or ``tail``'s)
    lfs: bool
    tail: Tiled | None = None  # the bytes after ``head``, made on the fly
    salt: str = ""  # tells apart the digest of virtual files whose heads and sizes agree (their tails differ)

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the virtual file."""
        out = bytearray()
        if start < len(self.head):
            out += self.head[start:min(end, len(self.head))]
        if self.tail is not None and start + len(out) < end:
            out += self.tail.read(start + len(out), end)
        out += b"\0" * (end - start - len(out))
        return bytes(out)

    @property
    def etag(self) -> str:
        """The file's sha256 where its bytes are all given (as the Hub's LFS ``sha256`` is); a virtual file's
        stands in with a digest of its head and size (hashing gigabytes of zeros would cost seconds)."""
        if len(self.head) >= self.size:
            return hashlib.sha256(self.head[:self.size]).hexdigest()
        return hashlib.sha256(self.head + str(self.size).encode() + self.salt.encode()).hexdigest()


@dataclass
class Revision:
    sha: str
    files: dict[str, VFile]


@dataclass
class Repo:
    revisions: dict[str, Revision] = field(default_factory=dict)  # by sha
    refs: dict[str, str] = field(default_factory=dict)  # branch/tag → sha
    gated: bool = False

    def resolve(self, rev: str) -> Revision | None:
        sha = self.refs.get(rev, rev)
        return self.revisions.get(sha)


@dataclass
class Fault:
    kind: str  # "5xx", "429", "reset", "stall", "ignore_range", "reset_api", "redirect_loop", "trickle",
    # "short206" (value: bytes per answer), "gzip_bomb" (value: MB of whitespace)
    path: str = ""  # regex searched in the request path
    times: int = 1  # how many requests it hits; -1 for all
    value: float = 0  # Retry-After seconds, stall seconds, status for 5xx


@dataclass
class Logged:
    method: str
    path: str
    range: str | None
    status: int
    sent: int
    origin: str
    authorized: bool = False  # the request carried an Authorization header (a token)


class HubState:
    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.faults: list[Fault] = []
        self.log: list[Logged] = []
        self.latency = 0.0
        self.redirect = False
        self.lock = threading.Lock()
        # requests being answered: the log is read or cleared once they are logged, as a client may
        # have its whole answer a moment before the server thread appends the entry
        self.inflight = 0
        self.settled = threading.Condition(self.lock)
        self.cdn_url = ""
        self.hub_url = ""
        # the CDN answers each file by redirecting back to the Hub's origin, at an address it picks
        # (``/bounced/…``, which the Hub serves): a chain that leaves the Hub's origin and re-enters it
        self.cdn_bounce = False
        self.listing_patch: dict[str, dict[str, Any]] = {}  # repo → keys replaced in its listing
        # repo → keys replaced in its one-request answer (safetensors-metadata), and the commit it names
        # (X-Repo-Commit; the real Hub's answer is not known to carry one, so by default none is sent)
        self.metadata_patch: dict[str, dict[str, Any]] = {}
        self.metadata_body: dict[str, bytes] = {}  # repo → the whole answer's bytes, as a hostile endpoint sends
        self.metadata_commit: dict[str, str] = {}

    def settle(self) -> None:
        """Wait (briefly: a stalled answer is not waited for) until every answered request is logged."""
        with self.settled:
            self.settled.wait_for(lambda: self.inflight == 0, timeout=0.5)

    def take_fault(self, kind: str, path: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.kind == kind and f.times != 0 and re.search(f.path, path):
                    if f.times > 0:
                        f.times -= 1
                    return f
        return None


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default 5 drops concurrent connects, which then retry after 1 s
    daemon_threads = True


class HubServer:
    """``with HubServer() as hub: hub.add_snapshot(...); hub.url``"""

    def __init__(self) -> None:
        self.state = HubState()
        self._servers: list[ThreadingHTTPServer] = []

    # -- content -------------------------------------------------------------------------------

    def add_files(self, repo_id: str, files: dict[str, VFile | bytes], *, sha: str | None = None,
                  branch: str | None = "main", gated: bool = False) -> str:
        vfiles = {p: f if isinstance(f, VFile) else VFile(len(f), f, False) for p, f in files.items()}
        if sha is None:
            digest = hashlib.sha1(repr(sorted((p, v.size, v.etag) for p, v in vfiles.items())).encode())
            sha = digest.hexdigest()
        repo = self.state.repos.setdefault(repo_id, Repo())
        repo.revisions[sha] = Revision(sha, vfiles)
        repo.gated = repo.gated or gated
        if branch:
            repo.refs[branch] = sha
        return sha

    def add_snapshot(self, repo_id: str, folder: Path, *, sha: str | None = None, branch: str | None = "main",
                     gated: bool = False, sizes: dict[str, int] | None = None) -> str:
        """Serve a header snapshot as the repo's files (virtual full-size safetensors)."""
        from inspector.sources.snapshot import StoredHeaders, read_manifest, snapshot_files

        manifest = read_manifest(folder)
        files: dict[str, VFile | bytes] = {}
        listed = snapshot_files(manifest, folder)
        stored_headers = StoredHeaders(folder)
        for f in listed:
            size = (sizes or {}).get(f.path, f.size)
            if f.header:
                files[f.path] = VFile(size or 0, stored_headers.read(f), lfs=True)
            elif f.stored:
                files[f.path] = (folder / f.path).read_bytes()
            else:
                files[f.path] = VFile(size or 0, b"", lfs=True)
        rev = sha or manifest.get("revision")
        return self.add_files(repo_id, files, sha=rev, branch=branch, gated=gated)

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> HubServer:
        handler = _make_handler(self.state)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        for _ in range(2):  # the Hub, and a second origin standing for the CDN
            server = _Server(("127.0.0.1", 0), handler)
            thread = threading.Thread(target=self._serve, args=(server,), daemon=True)
            thread.start()
            self._servers.append(server)
            self._threads.append(thread)
        self.state.cdn_url = f"http://127.0.0.1:{self._servers[1].server_address[1]}"
        self.state.hub_url = self.url
        return self

    def _serve(self, server: ThreadingHTTPServer) -> None:
        # handle_request blocks until a connection arrives (no timeout, so no polling); __exit__
        # wakes it with a connection of its own once the stop is set
        while not self._stop.is_set():
            server.handle_request()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for server, thread in zip(self._servers, self._threads, strict=True):
            with contextlib.suppress(OSError):
                socket.create_connection(server.server_address[:2], timeout=1).close()
            thread.join(timeout=5)
            server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    # -- observations --------------------------------------------------------------------------

    @property
    def log(self) -> list[Logged]:
        self.state.settle()
        return self.state.log

    def clear_log(self) -> None:
        self.state.settle()
        self.state.log.clear()

    def requests(self, method: str | None = None) -> list[Logged]:
        return [r for r in self.log if method is None or r.method == method]

    def bytes_sent(self) -> int:
        return sum(r.sent for r in self.log)


def _make_handler(state: HubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in separate writes: without TCP_NODELAY the body waits for the
        # client's delayed ACK (40 ms on Linux), a delay no real Hub server adds
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            self._serve(head=False)

        # -- routing ---------------------------------------------------------------------------

        def _serve(self, head: bool) -> None:
            url = urlparse(self.path)
            path = unquote(url.path)
            logged = not path.startswith("/_control/")
            if logged:
                with state.lock:
                    state.inflight += 1
            origin = "cdn" if str(self.server.server_address[1]) in state.cdn_url else "hub"
            self._sent = 0
            self._status = 0
            try:
                if state.latency:
                    time.sleep(state.latency)
                stall = state.take_fault("stall", path)
                if stall:
                    time.sleep(stall.value)
                f5 = state.take_fault("5xx", path)
                if f5:
                    return self._error(int(f5.value or 503), "ServerError", "injected")
                f429 = state.take_fault("429", path)
                if f429:
                    return self._error(429, "RateLimited", "injected", {"Retry-After": str(int(f429.value))})
                if path.startswith("/_control/"):
                    return self._control(path[len("/_control/"):], parse_qs(url.query))
                if state.take_fault("reset_api", path):
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.connection.close()
                    return None
                if state.take_fault("redirect_loop", path):
                    return self._send(302, b"", {"Location": self.path}, head)
                bomb = state.take_fault("gzip_bomb", path)
                if bomb:
                    return self._send(200, _gzip_bomb(int(bomb.value)), {"Content-Type": "application/json",
                                                                        "Content-Encoding": "gzip"}, head)
                if path.startswith("/api/models/"):
                    return self._api(path[len("/api/models/"):], parse_qs(url.query), head)
                if path.startswith("/cdn/"):
                    if state.cdn_bounce:
                        return self._send(302, b"", {"Location": f"{state.hub_url}/bounced/{path[5:]}"}, head)
                    return self._cdn(path[len("/cdn/"):], head)
                if path.startswith("/bounced/"):
                    return self._cdn(path[len("/bounced/"):], head)
                if "/resolve/" in path:
                    return self._resolve(path.lstrip("/"), head)
                return self._error(404, "NotFound", "no such endpoint")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            finally:
                if logged:
                    with state.lock:
                        state.log.append(Logged(self.command, path, self.headers.get("Range"), self._status,
                                                self._sent, origin, self.headers.get("Authorization") is not None))
                        state.inflight -= 1
                        state.settled.notify_all()

        def _control(self, what: str, query: dict[str, list[str]]) -> None:
            """For a server in another process: read the log, clear it, set the latency."""
            if what == "log":
                state.settle()
                body = json.dumps([vars(entry) for entry in state.log]).encode()
            elif what == "clear":
                state.settle()
                state.log.clear()
                body = b"[]"
            elif what == "latency":
                state.latency = float(query.get("seconds", ["0"])[0])
                body = b"[]"
            else:
                return self._error(404, "NotFound", "no such control")
            self._send(200, body, {"Content-Type": "application/json"}, False)

        def _api(self, rest: str, query: dict[str, list[str]], head: bool) -> None:
            if "/safetensors-metadata/" in rest:
                return self._sharded_metadata(*rest.split("/safetensors-metadata/", 1), head)
            if "/revision/" in rest:
                repo_id, _, rev = rest.partition("/revision/")
            elif "/tree/" in rest:
                repo_id, _, rev = rest.partition("/tree/")
            else:
                repo_id, rev = rest, "main"
            repo = state.repos.get(repo_id)
            if repo is None:
                return self._error(401, "RepoNotFound", f"Repository Not Found for url: {repo_id}")
            revision = repo.resolve(rev)
            if revision is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            if "/tree/" in rest:  # list_repo_tree, as snapshot_download asks (one page)
                tree = [{"type": "file", "path": p, "size": f.size, "oid": f.etag[:40],
                         **({"lfs": {"oid": f.etag, "size": f.size, "pointerSize": 134}} if f.lfs else {})}
                        for p, f in sorted(revision.files.items())]
                return self._send(200, json.dumps(tree).encode(), {"Content-Type": "application/json"}, head)
            blobs = query.get("blobs", ["false"])[0] == "true"
            siblings = []
            for p, f in sorted(revision.files.items()):
                entry: dict[str, Any] = {"rfilename": p}
                if blobs:
                    entry["size"] = f.size
                    entry["blobId"] = f.etag[:40]
                    if f.lfs:
                        entry["lfs"] = {"sha256": f.etag, "size": f.size, "pointerSize": 134}
                siblings.append(entry)
            doc = {"id": repo_id, "modelId": repo_id, "sha": revision.sha, "private": False,
                   "gated": "manual" if repo.gated else False, "siblings": siblings}
            doc.update(state.listing_patch.get(repo_id, {}))
            body = json.dumps(doc).encode()
            trickle = state.take_fault("trickle", self.path)
            if trickle:
                return self._trickle(200, body, {"Content-Type": "application/json"}, trickle.value)
            self._send(200, body, {"Content-Type": "application/json"}, head)

        def _sharded_metadata(self, repo_id: str, index_name: str, head: bool) -> None:
            """``get_sharded_safetensors_metadata``: the index (without its weight map) and every
            shard's parsed header, on the default branch, in one answer."""
            repo = state.repos.get(repo_id)
            revision = repo.resolve("main") if repo else None
            if repo is None or revision is None:
                return self._error(401, "RepoNotFound", f"Repository Not Found for url: {repo_id}")
            if repo.gated:
                return self._error(403, "GatedRepo", f"Access to model {repo_id} is restricted.")
            index_file = revision.files.get(index_name)
            if index_file is None:
                return self._error(404, "EntryNotFound", f"{index_name} does not exist")
            index = json.loads(index_file.read(0, index_file.size))
            if not isinstance(index, dict) or not isinstance(index.get("weight_map", {}), dict):
                # the Hub answers an index it cannot read with an error, not a dropped connection
                return self._error(400, "BadRequest", f"{index_name} is not a safetensors index")
            headers = {}
            for shard in sorted(set(index.get("weight_map", {}).values())):
                f = revision.files[shard]
                n = int.from_bytes(f.read(0, 8), "little")
                headers[shard] = json.loads(f.read(8, 8 + n))
            doc = {"index": {k: v for k, v in index.items() if k != "weight_map"}, "headers": headers}
            doc.update(state.metadata_patch.get(repo_id, {}))
            extra = {"X-Repo-Commit": state.metadata_commit[repo_id]} if repo_id in state.metadata_commit else {}
            body = state.metadata_body.get(repo_id) or json.dumps(doc).encode()
            self._send(200, body, {"Content-Type": "application/json", **extra}, head)

        def _lookup(self, rest: str) -> tuple[Repo, Revision, str, VFile] | None:
            repo_part, _, tail = rest.partition("/resolve/")
            rev, _, file_path = tail.partition("/")
            repo = state.repos.get(repo_part)
            if repo is None:
                self._error(401, "RepoNotFound", "Repository Not Found")
                return None
            revision = repo.resolve(rev)
            if revision is None:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                return None
            if repo.gated:
                self._error(403, "GatedRepo", f"Access to model {repo_part} is restricted.")
                return None
            f = revision.files.get(file_path)
            if f is None:
                self._error(404, "EntryNotFound", f"{file_path} does not exist")
                return None
            return repo, revision, file_path, f

        def _resolve(self, rest: str, head: bool) -> None:
            found = self._lookup(rest)
            if found is None:
                return
            _, revision, file_path, f = found
            meta = {"X-Repo-Commit": revision.sha, "ETag": f'"{f.etag}"'}
            if f.lfs:
                meta["X-Linked-Size"] = str(f.size)
                meta["X-Linked-Etag"] = f'"{f.etag}"'
            if state.redirect and f.lfs:
                repo_part = rest.partition("/resolve/")[0]
                location = f"{state.cdn_url}/cdn/{repo_part}/resolve/{revision.sha}/{file_path}"
                return self._send(302, b"", {**meta, "Location": location}, head)
            self._file(f, meta, head)

        def _cdn(self, rest: str, head: bool) -> None:
            found = self._lookup(rest)
            if found is not None:
                self._file(found[3], {"ETag": f'"{found[3].etag}"'}, head)

        def _file(self, f: VFile, meta: dict[str, str], head: bool) -> None:
            rng = self.headers.get("Range")
            ignore = state.take_fault("ignore_range", self.path) is not None
            start, end = 0, f.size
            status = 200
            if rng and not ignore:
                m = re.match(r"bytes=(\d+)-(\d*)$", rng)
                if not m or int(m.group(1)) >= f.size:
                    return self._error(416, "RangeNotSatisfiable", "bad range",
                                       {"Content-Range": f"bytes */{f.size}"})
                start = int(m.group(1))
                end = min(f.size, int(m.group(2)) + 1) if m.group(2) else f.size
                short = state.take_fault("short206", self.path)
                if short:
                    end = min(end, start + int(short.value))
                status = 206
                meta["Content-Range"] = f"bytes {start}-{end - 1}/{f.size}"
            reset = None if head else state.take_fault("reset", self.path)
            trickle = None if head else state.take_fault("trickle", self.path)
            if trickle:
                return self._trickle(status, f.read(start, end), meta, trickle.value)
            self._status = status
            self.send_response(status)
            for k, v in {**meta, "Content-Length": str(end - start), "Accept-Ranges": "bytes",
                         "Content-Type": "application/octet-stream"}.items():
                self.send_header(k, v)
            self.end_headers()
            if head:
                return
            limit = (end - start) // 2 if reset else end - start
            position = start
            while position < start + limit:
                chunk = f.read(position, min(start + limit, position + CHUNK))
                self.wfile.write(chunk)
                self._sent += len(chunk)
                position += len(chunk)
            if reset:
                self.wfile.flush()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.connection.close()
                self.close_connection = True

        # -- responses ---------------------------------------------------------------------------

        def _trickle(self, status: int, body: bytes, headers: dict[str, str], per_second: float) -> None:
            """The body a few bytes at a time, each piece soon enough to keep an idle timeout happy."""
            self._status = status
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            step = max(1, int(per_second / 10))
            for i in range(0, len(body), step):
                self.wfile.write(body[i:i + step])
                self.wfile.flush()
                self._sent += step
                time.sleep(0.1)

        def _error(self, status: int, code: str, message: str, extra: dict[str, str] | None = None) -> None:
            body = json.dumps({"error": message}).encode()
            self._send(status, body, {"X-Error-Code": code, "X-Error-Message": message,
                                      "Content-Type": "application/json", **(extra or {})},
                       self.command == "HEAD")

        def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
            self._status = status
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
                self._sent += len(body)

    return Handler


_BOMBS: dict[int, bytes] = {}


def _gzip_bomb(megabytes: int) -> bytes:
    """A gzip body that inflates to ``megabytes`` MB of JSON whitespace (about 1 kB per MB)."""
    if megabytes not in _BOMBS:
        import zlib

        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        block = b" " * (1 << 20)
        parts = [packer.compress(b"{")]
        parts += [packer.compress(block) for _ in range(megabytes)]
        parts.append(packer.compress(b"}") + packer.flush())
        _BOMBS[megabytes] = b"".join(parts)
    return _BOMBS[megabytes]


def main() -> None:
    """Serve snapshots from another process: ``python tests/hubserver.py REPO=FOLDER …``; prints the
    URL on the first line of stdout, then serves until killed."""
    import sys

    server = HubServer().__enter__()
    for arg in sys.argv[1:]:
        repo, _, folder = arg.partition("=")
        server.add_snapshot(repo, Path(folder))
    sys.stdout.write(server.url + "\n")
    sys.stdout.flush()
    threading.Event().wait()


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
