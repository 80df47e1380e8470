"""Byte ranges of tensor data, for ``diff --values``: a few hundred bytes of each tensor, never the weights.

``data_reader(checkpoint, options)`` gives a local folder's reader (``os.pread`` on each file, named
inside its root) or a Hub repo's (range requests through the one transport, at the checkpoint's
commit, a bounded pool of them at once). Every read counts its bytes and requests against a budget
said before the first one; nothing read is cached (it is weight data). A server that answers a range
request with the whole file is refused, not followed: following it would download the weights.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import deque
from collections.abc import Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Final, Protocol

from inspector.errors import InvalidCheckpointError, NetworkError
from inspector.model import ORIGIN_WORDS, Checkpoint
from inspector.safeio import inside, open_regular, pread_all
from inspector.sources.transport import Hub, HubOptions

#: range requests to the Hub in flight at once, per checkpoint
WORKERS: Final = 16
#: spans read and not yet taken by the caller, at most: with ``values.MAX_SPAN`` (256 KiB) a side holds
#: at most 32 × 256 KiB = 8 MiB of span bytes at once (a sampled range longer than that, a small tensor
#: read whole up to ``--sample-bytes``' 1 MiB, is one span: 32 MiB)
WINDOW: Final = 2 * WORKERS
#: the most requests one side of a value diff makes, and the most bytes it reads
MAX_REQUESTS: Final = 20_000
MAX_BYTES: Final = 1 << 30
#: bytes a streamed hash reads at a time (``--exact``): never a tensor held whole
HASH_CHUNK: Final = 1 << 20

Span = tuple[str, int, int]  # file, start, length


class DataReader(Protocol):
    requests: int
    bytes_read: int

    def read(self, spans: Iterable[Span]) -> Generator[bytes, None, None]:
        """Each span's bytes (fewer only at a file's end), in order, as they are taken: at most
        ``WINDOW`` spans read ahead of the caller, so bytes held at once are bounded, not the sum of
        every span. Closing the iterator early stops the reads not yet begun."""
        ...

    def sha256(self, file: str, start: int, length: int) -> str | None:
        """The hash of a span, streamed; None where this source cannot (the Hub: that would read it all)."""
        ...


class _Counted:
    def __init__(self) -> None:
        self.requests = 0
        self.bytes_read = 0
        self._lock = threading.Lock()

    def count(self, requests: int, nbytes: int) -> None:
        with self._lock:
            self.requests += requests
            self.bytes_read += nbytes
            if self.requests > MAX_REQUESTS or self.bytes_read > MAX_BYTES:
                raise InvalidCheckpointError(f"the value diff went over its budget ({MAX_REQUESTS:,} requests, "
                                             f"{MAX_BYTES:,} bytes a side)", hint="ask for fewer ⟨sample_bytes⟩")


class LocalData(_Counted):
    """A local folder's files, each named inside the folder and opened as a regular file. ``prefix``: where the
    files lie below ``root`` (an HF cache snapshot's ``snapshots/<commit>/``, whose files link into the repo
    folder's ``blobs/``: the repo folder is the root they must stay inside)."""

    def __init__(self, root: Path, prefix: str = "") -> None:
        super().__init__()
        self.root, self.prefix = root, prefix

    def _path(self, file: str) -> Path:
        return inside(self.root, self.prefix + file, "weight file")

    def read(self, spans: Iterable[Span]) -> Generator[bytes, None, None]:
        fds: dict[str, int] = {}
        try:
            for file, start, length in spans:
                if file not in fds:
                    fds[file] = open_regular(self._path(file))
                self.count(1, length)
                yield pread_all(fds[file], length, start, self.root / (self.prefix + file))
        finally:
            for fd in fds.values():
                os.close(fd)

    def sha256(self, file: str, start: int, length: int) -> str | None:
        fd = open_regular(self._path(file))
        digest = hashlib.sha256()
        try:
            done = 0
            while done < length:
                block = pread_all(fd, min(HASH_CHUNK, length - done), start + done, self.root / (self.prefix + file))
                if not block:
                    break
                digest.update(block)
                done += len(block)
        finally:
            os.close(fd)
        return digest.hexdigest()


class HubData(_Counted):
    """A Hub repo's files at one commit, read by range through the transport, a few at a time."""

    def __init__(self, hub: Hub, repo_id: str, sha: str) -> None:
        super().__init__()
        self.hub, self.repo_id, self.sha = hub, repo_id, sha
        # the transport's modules imported here, on the calling thread, never first on a worker's
        # deferred: 48 ms at import (httpx2, huggingface_hub.utils)
        import httpx2  # noqa: F401
        import huggingface_hub.utils  # noqa: F401

    def read(self, spans: Iterable[Span]) -> Generator[bytes, None, None]:
        def one(span: Span) -> bytes | bytearray:
            file, start, length = span
            if not length:  # an empty tensor alone in its span: nothing to ask for (a range of 0 bytes is invalid)
                return b""
            self.count(1, length)
            return self.hub.read_range(self.repo_id, self.sha, file, start, length, range_only=True)

        pool = ThreadPoolExecutor(max_workers=WORKERS)
        pending: deque[Future[bytes | bytearray]] = deque()
        try:
            for span in spans:
                pending.append(pool.submit(one, span))
                if len(pending) >= WINDOW:
                    yield bytes(pending.popleft().result())
            while pending:
                yield bytes(pending.popleft().result())
        finally:  # a failed read, or the caller stopped: the reads not begun are dropped, not waited for
            pool.shutdown(wait=True, cancel_futures=True)

    def sha256(self, file: str, start: int, length: int) -> str | None:
        return None


def data_reader(checkpoint: Checkpoint, options: HubOptions | None = None) -> DataReader:
    """The reader of a checkpoint's tensor data: its folder's files, or its Hub repo at the commit read.
    A header snapshot, a bundled one or a config-only cache keeps no tensor data: an invalid-checkpoint
    error naming it."""
    if checkpoint.provenance.origin in ("folder", "file", "hf-cache") and checkpoint.provenance.root:
        root = Path(checkpoint.provenance.root)
        if root.parent.name == "snapshots" and (root.parent.parent / "blobs").is_dir():  # an HF cache snapshot
            return LocalData(root.parent.parent, f"snapshots/{root.name}/")
        return LocalData(root)
    if checkpoint.provenance.origin == "hub" and checkpoint.provenance.repo_id and checkpoint.provenance.revision:
        hub = Hub(options or HubOptions())
        if hub.offline:
            raise NetworkError(f"{checkpoint.label}: ⟨values⟩ reads tensor data from the Hub; offline mode is on",
                               hint="run online, or on local copies of both")
        return HubData(hub, checkpoint.provenance.repo_id, checkpoint.provenance.revision)
    origin = ORIGIN_WORDS[checkpoint.provenance.origin]
    raise InvalidCheckpointError(f"{checkpoint.label}: a {origin} holds headers only, no "
                                 "tensor data to compare", hint="give ⟨values⟩ a local folder or a Hub repo")
