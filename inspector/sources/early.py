"""The reads a cold Hub open sends beside the listing, before the commit is known (``EarlyReads``), and the Hub's
one answer for every shard's header checked against the listing (``rebuilt_from_metadata``). ``hub`` plans the
fetch and calls these."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

from inspector.errors import InvalidCheckpointError
from inspector.formats.registry import SAFETENSORS, reader_for
from inspector.formats.safetensors import MAX_HEADER_BYTES
from inspector.safeio import is_repo_id, parse_json_object
from inspector.sources.bundled import BY_REPO
from inspector.sources.header_cache import HeaderCache, hf_cache_repo
from inspector.sources.transport import Hub, HubOptions

#: the first read of a lone model.safetensors sent beside the listing (its size unknown then): a header
#: past it costs a second round trip through the CDN redirect (a 13B GPTQ file's is 135 kB, a VLM's in one
#: file about 100 kB), and 256 KiB more on the wire is milliseconds against a round trip's 50-150
LONE_FILE_FIRST_READ: Final = 256 * 1024

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


class EarlyReads:
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


@dataclass(frozen=True, slots=True)
class Begun:
    """A read of a repo's default branch begun before the rest of the program is imported (``begin``), on a
    ``Hub`` whose HTTP session is ready: the listing, and the early reads where nothing of the repo is
    cached (``early``; None: a cached snapshot may stand in, and a cached repo asks for the listing alone)."""

    repo_id: str
    hub: Hub
    listing: Future[dict[str, Any]]
    early: EarlyReads | None

    def close(self) -> None:
        if self.early is not None:
            self.early.close()


#: the thread a begun listing is read on (one a process: one command line's)
_LISTING: Final = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inspector-listing")
_begun: list[Begun | None] = [None]  # the command line's read (``begin``), until ``take`` or ``begin`` again
_begun_lock = threading.Lock()


def begin(repo_id: str, options: HubOptions) -> None:
    """Send a plain ``inspect ORG/NAME``'s first round trip before anything else is imported: the HTTP
    session is made here (its imports and TLS context), then the listing goes out, with the early reads
    beside it where neither the header cache nor the Hugging Face cache holds anything of the repo, and the
    rest of the program is imported while they travel (about a round trip of CPU that went before the
    requests). ``open_hub`` takes it over (``take``) when it opens this repo at its default branch with
    these options and decides as ``begin`` guessed (a repo it serves from a cached snapshot asks for the
    listing alone; one it reads cold, for the early reads too): the same requests as a read begun there.
    A read not taken over costs its requests and nothing else. Never raises: a failure here is the
    ordinary read's to meet, and to word."""
    with _begun_lock:
        stale, _begun[0] = _begun[0], None
    if stale is not None:
        stale.close()
    if not is_repo_id(repo_id):  # never a request for a name the Hub's syntax refuses (the read words it)
        return
    try:
        hub = Hub(options)
        if hub.offline:
            return
        cached = HeaderCache(endpoint=hub.endpoint).holds(repo_id) or hf_cache_repo(repo_id).exists()
        hub.prepare()
        # a listing gives up sooner where a snapshot can stand in (a cached or bundled one), as ``open_hub``'s does
        listing = _LISTING.submit(hub.repo_info, repo_id, "main", quick=cached or repo_id.lower() in BY_REPO)
        early = None if cached else EarlyReads(hub, repo_id, "main", one_request=True)
    except Exception:  # the ordinary read meets it, and says what it is
        return
    with _begun_lock:
        _begun[0] = Begun(repo_id, hub, listing, early)


def take(repo_id: str, options: HubOptions) -> Begun | None:
    """The read ``begin`` sent for ``repo_id`` with these options, once; None if there is none."""
    with _begun_lock:
        found = _begun[0]
        if found is None or found.repo_id != repo_id or found.hub.options != options:
            return None
        _begun[0] = None
        return found
