"""``inspector.lineage``'s reading: the card, each candidate opened and aligned, the file hashes, and the sampled
bytes of every side, read at once (each side its own bounded pool of range requests). The library layer, as
``api`` is (``api.lineage`` calls ``find``, passing its one way of opening a model); what the bytes mean is
``analysis.comparison.samples``, ``analysis.comparison.lineage`` and ``analysis.comparison.ancestry``'s."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from inspector.analysis.comparison.align import align_formats
from inspector.analysis.comparison.ancestry import Lineage, Seen, assess, needs_values
from inspector.analysis.comparison.lineage import CARD_BYTES, aligned, declared_bases
from inspector.analysis.comparison.samples import Pick, Source, permuted_rows, plan, source, source_ranges, values_of
from inspector.analysis.comparison.values import spans
from inspector.analysis.facts.report import Report, build_report
from inspector.errors import InspectorError, UsageError
from inspector.model import Checkpoint, TensorInfo
from inspector.sources.data import DataReader, data_reader
from inspector.sources.transport import HubOptions, deadline_of

if TYPE_CHECKING:
    from inspector.analysis.comparison.samples import Values

#: the most candidates one lineage compares (each is opened, and sampled where values decide); a card may declare
#: more bases than that: those past it are named as not read
MAX_CANDIDATES: Final = 10
#: the header bytes one lineage run may read, every side together (the model, then each candidate in turn, the
#: declared bases as the given ones): four DeepSeek-V3s (11.5 MB of headers each). A candidate read over the Hub is
#: read within what is left; one opened locally or from a cache is counted once read, and those after the budget
#: is spent are not opened. One 300,000-tensor header is 27 MB of it (~400 MB of memory read)
RUN_HEADER_BUDGET: Final = 48 * 1024 * 1024

Opener = Callable[[str, HubOptions], Checkpoint]
#: what one side reads: (the pick's number, its source: the tensors and byte ranges, and how they decode)
Jobs = list[tuple[int, Source]]


def find(model: str | Checkpoint, candidates: Sequence[str | Checkpoint], *, exact: bool, hub: HubOptions | None,
         opener: Opener) -> Lineage:
    """The lineage of ``model`` (``api.lineage``'s work): ``opener`` opens a model as every command does."""
    if len(candidates) > MAX_CANDIDATES:
        raise UsageError(f"{len(candidates)} candidates: at most {MAX_CANDIDATES}", hint="name the likeliest bases")
    run = Run(hub)
    opened = model if isinstance(model, Checkpoint) else opener(model, run.options())
    run.spent(opened)
    declared = declared_bases(opened, card(opened, run.options()))
    wanted: list[tuple[str | Checkpoint, str | None]] = [(x, None) for x in candidates] or [
        (b, where) for b, where in declared.bases]
    if not wanted:
        raise UsageError(f"{opened.label}: no candidate given, and it declares no base (no base_model in its card, "
                         "adapter_config.json or GGUF metadata)", hint="inspect lineage MODEL BASE [OTHER ...]")
    report = build_report(opened)
    seen: list[tuple[Seen, Checkpoint | None]] = []
    hashed = [0, 0]  # the bytes --exact hashed: the model's (once a candidate), the candidates'
    for n, (name, where) in enumerate(wanted):
        label = name if isinstance(name, str) else name.label
        why_not = run.refusal(n, [s.label for s, c in seen if c is not None])
        if why_not is not None:
            seen.append((Seen(label, None, where, why_not), None))
            continue
        try:  # a declared base is a Hub repo id from the model's files: opened as one, never as a local path
            other = name if isinstance(name, Checkpoint) else opener(
                f"hf://{name}" if where is not None else name, run.options())
            run.spent(other)
            seen.append(_seen(report, other, label, where, exact, run.options(), hashed))
        except InspectorError as e:
            if where is None:
                raise _naming(e, f"candidate {label}") from None
            seen.append((Seen(label, None, where, f"the declared base could not be read: {e.message}"), None))
    picks, values, bounds, samples, counts = _values(report, seen, run.options())
    final = [replace(s, samples=samples.get(i, {})) for i, (s, _) in enumerate(seen)]
    read = (counts[0] + hashed[0], counts[1] + hashed[1])
    return assess(report, picks, values, final, declared, bounds=bounds, read=read, requests=counts[2])


class Run:
    """One lineage run's budget, every side together: ``RUN_HEADER_BUDGET`` bytes of headers and one deadline (the
    Hub phase's, from the run's start), where each candidate had its own of both."""

    def __init__(self, hub: HubOptions | None) -> None:
        self.hub = hub or HubOptions()
        self.seconds = deadline_of(hub)
        self.end = time.monotonic() + self.seconds
        self.left = RUN_HEADER_BUDGET

    def options(self) -> HubOptions:
        """The Hub options for the next read: what is left of the run's time and header bytes."""
        return replace(self.hub, deadline=max(0.0, self.end - time.monotonic()), header_budget=max(0, self.left))

    def spent(self, checkpoint: Checkpoint) -> None:
        """A side read: its header bytes taken from the budget."""
        self.left -= sum(h.data_start or 0 for h in checkpoint.headers)

    def refusal(self, n: int, read: list[str]) -> str | None:
        """Why the ``n``-th candidate is not opened (past MAX_CANDIDATES, the budget or the deadline spent, with
        what was read), or None."""
        done = f"the model{''.join(f', {x}' for x in read[:3])}{' …' if len(read) > 3 else ''} read"
        if n >= MAX_CANDIDATES:
            return f"not read: a run compares at most {MAX_CANDIDATES} candidates (the first {MAX_CANDIDATES} declared)"
        if self.left <= 0:
            return f"not read: the run's {RUN_HEADER_BUDGET:,} bytes of headers were spent ({done})"
        if time.monotonic() >= self.end:
            return f"not read: the run's {self.seconds:g} s deadline passed ({done})"
        return None


def _naming(e: InspectorError, who: str) -> InspectorError:
    """The same error, its message led by which input it is about (its exit code kept)."""
    e.template, e.message = f"{who}: {e.template}", f"{who}: {e.message}"
    e.args = (e.message,)
    return e


def card(checkpoint: Checkpoint, hub: HubOptions | None) -> bytes | None:
    """The first ``CARD_BYTES`` of the model card (README.md) where the folder or repo has one, read by range;
    None without one, or where the source keeps no files (a header snapshot)."""
    entry = next((f for f in checkpoint.files if f.path == "README.md"), None)
    if entry is None or not entry.size:
        return None
    try:
        bodies = data_reader(checkpoint, hub).read([("README.md", 0, min(entry.size, CARD_BYTES))])
        try:
            return next(bodies)
        finally:
            bodies.close()
    except InspectorError:
        return None


def _is_gguf(c: Checkpoint) -> bool:
    return bool(c.headers) and all(h.format == "gguf" for h in c.headers)


def _has_data(c: Checkpoint, hub: HubOptions | None) -> str | None:
    """Why a side's tensor data cannot be read (a header snapshot, offline), or None where it can."""
    try:
        data_reader(c, hub)
    except InspectorError as e:
        return e.message
    return None


def _seen(mine: Report, other: Checkpoint, label: str, where: str | None, exact: bool,
          hub: HubOptions | None, tally: list[int]) -> tuple[Seen, Checkpoint | None]:
    """A candidate opened: its report named as the model's tensors are (GGUF names for a GGUF model), and
    how many of the model's weight files it holds by hash; where only its values could decide and a side's
    tensor data cannot be read (a header snapshot, offline), why."""
    model = mine.checkpoint
    if _is_gguf(other) and not _is_gguf(model):
        return Seen(label, None, where, "it is a GGUF and the model is not: lineage asks where the model came "
                    "from (swap them: inspect lineage GGUF MODEL)"), None
    _, renamed = align_formats(model, other)
    listed = _listed_hashes(model, other)
    files, claim = (listed, None) if not exact else (_hashed(model, other, hub, tally), listed)
    if exact and files is not None:
        claim = None  # both sides hashed whole: the bytes decide
    report = build_report(renamed)
    if (files is None or files[0] != files[1]) and needs_values(mine, report, files):
        why = _has_data(model, hub) or _has_data(other, hub)
        if why is not None:
            return Seen(label, None, where, f"its values cannot be compared: {why}"), None
    return Seen(label, report, where, files=files, listed=claim), renamed


def _listed_hashes(model: Checkpoint, other: Checkpoint) -> tuple[int, int] | None:
    """(the model's weight files whose sha256 one of the candidate's files has, the model's weight files), from
    the listings (the Hub's LFS sha256, the HF cache's blob names); None where a side's hashes are not known."""
    weights = sorted({h.file for h in model.headers})
    mine = {f.path: f.sha256 for f in model.files}
    theirs = {f.sha256 for f in other.files if f.sha256}
    if weights and all(mine.get(w) for w in weights) and theirs:
        return sum(1 for w in weights if mine[w] in theirs), len(weights)
    return None


def _hashed(model: Checkpoint, other: Checkpoint, hub: HubOptions | None, tally: list[int]) -> tuple[int, int] | None:
    """``--exact``: both sides' weight files streamed whole and hashed (local files only: over the Hub that would
    download the weights), the same count as ``_listed_hashes``; None where a side cannot be hashed so (its
    values then decide, whatever its listing says). ``tally``: the bytes hashed, (the model's, the candidate's),
    added to."""
    hashed = []
    for side, c in enumerate((model, other)):
        size_of = {f.path: f.size for f in c.files}
        files = sorted({h.file for h in c.headers})
        if not files or not all(size_of.get(f) for f in files):
            return None
        reader = data_reader(c, hub)
        digests = [reader.sha256(f, 0, size_of[f] or 0) for f in files]
        if None in digests:
            return None
        tally[side] += sum(size_of[f] or 0 for f in files)
        hashed.append(digests)
    theirs_hashed = set(hashed[1])
    return sum(1 for h in hashed[0] if h in theirs_hashed), len(hashed[0])


def _values(report: Report, seen: list[tuple[Seen, Checkpoint | None]], hub: HubOptions | None
            ) -> tuple[list[Pick], dict[int, Values], dict[int, Values], dict[int, dict[int, tuple[Values, ...]]],
                       tuple[int, int, int]]:
    """The sampled values: the model's once, each candidate's that the values decide, at the same elements
    (a permuted GGUF q or k: both row orders), every side read at once. (picks, the model's values by pick,
    their own quantisation bounds where the source gives them, each candidate's by pick, (the model's bytes
    read, the candidates', requests))."""
    asking = [i for i, (s, c) in enumerate(seen) if s.report is not None and c is not None and
              needs_values(report, s.report, s.files)]
    if not asking:
        return [], {}, {}, {}, (0, 0, 0)
    wanted = sorted({i for k in asking for i, _ in aligned(report, _report(seen[k][0]))})
    mine_by_name = {t.info.name: t.info for t in report.tensors}
    picks = plan(report, wanted)
    mine: Jobs = [(k, src) for k, p in enumerate(picks)
                  if (src := source(mine_by_name, report.tensors[p.index].info, p.ranges)) is not None]
    sides: list[tuple[Checkpoint, Jobs, list[Pick]]] = [(report.checkpoint, mine, picks)]
    for i in asking:
        s, checkpoint = seen[i]
        assert checkpoint is not None
        sides.append((checkpoint, _candidate_jobs(report, picks, _report(s), checkpoint), picks))
    readers = [data_reader(checkpoint, hub) for checkpoint, _, _ in sides]
    # the decoders' modules imported here, on the calling thread, never first on a worker's
    # deferred: 91 ms at import (gguf.quants, numpy)
    import gguf.quants  # noqa: F401
    import numpy  # noqa: F401

    def read(side: int) -> dict[int, list[tuple[Values, Values | None]]]:
        checkpoint, jobs, _ = sides[side]
        return _decoded(checkpoint, jobs, picks, readers[side], first=side == 0)

    with ThreadPoolExecutor(max_workers=len(sides)) as pool:
        got = list(pool.map(read, range(len(sides))))
    values = {k: v[0][0] for k, v in got[0].items()}
    bounds = {k: b for k, v in got[0].items() if (b := v[0][1]) is not None}
    out = {i: {k: tuple(x for x, _ in v) for k, v in got[n + 1].items()} for n, i in enumerate(asking)}
    return picks, values, bounds, out, (readers[0].bytes_read, sum(r.bytes_read for r in readers[1:]),
                                        sum(r.requests for r in readers))


def _report(s: Seen) -> Report:
    assert s.report is not None
    return s.report


def _candidate_jobs(report: Report, picks: list[Pick], theirs: Report, checkpoint: Checkpoint) -> Jobs:
    """A candidate's reads of the picks: the same elements of its tensor of the same name (a GGUF model's q or k
    against another format: also as llama.cpp's converter reordered their rows)."""
    by_name = {t.info.name: t.info for t in theirs.tensors}
    pairs = dict(aligned(report, theirs))
    reorders = _is_gguf(report.checkpoint) and not _is_gguf(checkpoint)
    config = report.checkpoint.config or {}
    heads = {"q": config.get("num_attention_heads"),
             "k": config.get("num_key_value_heads") or config.get("num_attention_heads")}
    jobs: Jobs = []
    for k, p in enumerate(picks):
        other = pairs.get(p.index)
        if other is None:
            continue
        info = report.tensors[p.index].info
        alternatives = [list(p.ranges)]
        n = heads["q" if ".attn_q." in info.name else "k"]
        if reorders and isinstance(n, int) and permuted_rows(info, n):
            alternatives.append(source_ranges(info, p.ranges, n))
        jobs += [(k, src) for alt in alternatives if (src := source(by_name, other, alt)) is not None]
    return jobs


def _decoded(checkpoint: Checkpoint, jobs: Jobs, picks: list[Pick], reader: DataReader, *, first: bool
             ) -> dict[int, list[tuple[Values, Values | None]]]:
    """One side's jobs read (``read_parts``) and decoded, by pick (several where row orders were tried)."""
    bodies = read_parts(reader, [[_pieces(checkpoint, info, ranges) for info, ranges in src.parts]
                                 for _, src in jobs])
    got: dict[int, list[tuple[Values, Values | None]]] = {}
    for (k, src), parts in zip(jobs, bodies, strict=True):
        decoded = values_of(src, parts, picks[k].ranges if src.how == "bnb4" else ())
        if decoded is not None:
            got.setdefault(k, []).append(decoded)
    return got


def _pieces(checkpoint: Checkpoint, info: TensorInfo, ranges: Sequence[tuple[int, int]]) -> list[tuple[str, int, int]]:
    """A tensor's byte ranges (offsets in its data) as (file, start in the file, length)."""
    start = next(h.data_start for h in checkpoint.headers if h.file == info.file)
    assert start is not None
    return [(info.file, start + info.begin + offset, length) for offset, length in ranges]


def read_parts(reader: DataReader, groups: list[list[list[tuple[str, int, int]]]]) -> list[list[bytes]]:
    """Each group's parts, each part's pieces read and joined in order: the pieces of one file sorted and
    joined into bounded spans (``values.spans``), one request a span."""
    by_file: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    owner: list[tuple[int, int]] = []
    for g, parts in enumerate(groups):
        for p, pieces in enumerate(parts):
            for file, start, length in pieces:
                by_file[file].append((start, length, len(owner)))
                owner.append((g, p))
    joined = [span for file, slots in by_file.items() for span in spans(file, sorted(slots))]
    got = [b""] * len(owner)
    bodies = reader.read((span.file, span.start, span.length) for span in joined)
    try:
        for span, body in zip(joined, bodies, strict=False):
            for at, length, number in span.slots:
                got[number] = bytes(body[at - span.start:at - span.start + length])
    finally:
        bodies.close()
    out = [[bytearray() for _ in parts] for parts in groups]
    for number, piece in enumerate(got):
        g, p = owner[number]
        out[g][p] += piece
    return [[bytes(b) for b in parts] for parts in out]
