"""``inspect diff --values``' reading: the sampled ranges of both sides, a window of bounded spans at a time through
the sources layer, their digests compared, and the changed float tensors' size of change read once more. The library
layer, as ``api`` is (``api.diff`` calls ``value_diff``); what the digests mean is ``analysis.comparison.values``'."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inspector.analysis.comparison.values import Change, Sampled, TensorValues, ValueDiff
    from inspector.analysis.facts.report import Report
    from inspector.sources.data import DataReader
    from inspector.sources.transport import HubOptions


def value_diff(a: Report, b: Report, sample_bytes: int, exact: bool, options: HubOptions | None) -> ValueDiff:
    """Read the sampled ranges of both sides (joined into bounded spans per file, through the sources
    layer, a window of spans at a time) and compare their digests."""
    # deferred: 59 ms at import (threading, collections, collections.abc, concurrent.futures, …)
    import threading
    from collections import deque
    from collections.abc import Iterator
    from concurrent.futures import ThreadPoolExecutor

    from inspector.analysis.comparison.values import (
        Span,
        ValueDiff,
        differing,
        digest_into,
        digest_table,
        sample_plan,
        spans,
        summarise,
        verdicts,
    )
    from inspector.errors import UsageError
    from inspector.sources.data import data_reader

    plan = sample_plan(a, b, sample_bytes)
    readers = (data_reader(a.checkpoint, options), data_reader(b.checkpoint, options))
    stop = threading.Event()  # one side failed: the other stops at its next span

    def read(side: int) -> bytearray:
        table = digest_table(plan, side)
        asked: deque[Span] = deque()  # the spans asked for and not yet back: the reader's window, no more

        def requests() -> Iterator[tuple[str, int, int]]:
            for file, slots in plan.slots(side):
                for span in spans(file, slots):
                    asked.append(span)
                    yield span.file, span.start, span.length

        bodies = readers[side].read(requests())
        try:
            for body in bodies:
                if stop.is_set():
                    break
                digest_into(table, asked.popleft(), body)
        except BaseException:
            stop.set()
            raise
        finally:
            bodies.close()
        return table

    with ThreadPoolExecutor(max_workers=2) as pool:  # both sides at once, each its own bounded pool
        reads = list(pool.map(read, (0, 1)))
    hashes = None
    if exact:
        hashes = {}
        for s in plan.sampled:
            ha = readers[0].sha256(s.file_a, s.start_a, s.nbytes)
            hb = readers[1].sha256(s.file_b, s.start_b, s.nbytes)
            if ha is None or hb is None:
                raise UsageError("⟨exact⟩ hashes local files whole; one side is on the Hub",
                                 hint="compare local copies, or drop ⟨exact⟩")
            hashes[s.name] = (ha, hb)
    tensors = _with_changes(verdicts(plan, reads[0], reads[1], hashes), differing(plan, reads[0], reads[1]),
                            readers)
    hashed = sum(s.nbytes for s in plan.sampled) if hashes is not None else 0
    return ValueDiff(tuple(tensors), plan.weights_bytes, (readers[0].bytes_read, readers[1].bytes_read),
                     (readers[0].requests, readers[1].requests), sample_bytes, exact, summarise(tensors),
                     (hashed, hashed))



def _with_changes(tensors: list[TensorValues], targets: list[tuple[Sampled, tuple[int, ...]]],
                  readers: tuple[DataReader, DataReader]) -> list[TensorValues]:
    """The changed float tensors' size of change (``values.measure``): their differing sampled ranges read
    once more on each side (the same reader, its counts included), in order."""
    # deferred: 46 ms at import (collections, dataclasses, inspector.analysis.comparison.values)
    from collections import defaultdict
    from dataclasses import replace

    from inspector.analysis.comparison.values import measure, spans

    if not targets:
        return tensors
    ranges = [(s, k) for s, ks in targets for k in ks]  # numbered in this order
    sides: list[list[bytes]] = []
    for side, reader in enumerate(readers):
        by_file: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
        for number, (s, k) in enumerate(ranges):
            file, start = (s.file_a, s.start_a) if side == 0 else (s.file_b, s.start_b)
            by_file[file].append((start + s.offsets[k][0], s.offsets[k][1], number))
        joined = [span for file, slots in by_file.items() for span in spans(file, sorted(slots))]
        pieces = [b""] * len(ranges)
        bodies = reader.read((span.file, span.start, span.length) for span in joined)
        try:  # the ranges joined into spans as the first read joined them: no request a range
            for span, body in zip(joined, bodies, strict=False):
                for at, length, number in span.slots:
                    pieces[number] = bytes(body[at - span.start:at - span.start + length])
        finally:
            bodies.close()
        sides.append(pieces)
    changes: dict[str, Change | None] = {}
    at = 0
    for s, ks in targets:
        a = b"".join(sides[0][at:at + len(ks)])
        b = b"".join(sides[1][at:at + len(ks)])
        at += len(ks)
        changes[s.name] = measure(s.dtype, a, b) if len(a) == len(b) else None
    return [replace(t, change=changes[t.name]) if t.name in changes and t.verdict == "changed" else t
            for t in tensors]
