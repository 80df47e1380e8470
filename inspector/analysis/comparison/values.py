"""What did a fine-tune change? A per-tensor change map from a few hundred bytes of each tensor.

For every tensor present in both checkpoints with the same shape and dtype, ``sample_plan`` chooses a
few ranges of its bytes: its start, middle and end, and more spread pseudo-randomly over it, seeded by
the tensor's name so both sides read the same offsets. ``verdicts`` compares what the two sides read:

* **changed**: a sampled range differs, a proof;
* **same in the sampled bytes**: no sampled byte differs, not a proof (a tensor read whole is
  **identical**, a proof);
* with a streamed content hash of both tensors (``--exact``, local files): **identical** or changed;
* **incomparable**: the dtypes differ (a BF16 and an F16 copy hold other bytes for the same values), or
  one side's tensor data cannot be read by offset (a pickle).

Pure functions: the ranges to read go out, the bytes come back in (``api.diff`` reads them through the
sources layer); no I/O, no printing.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Final, Literal

from inspector.analysis.facts.report import Report
from inspector.analysis.facts.stats import Tensor
from inspector.errors import InvalidCheckpointError
from inspector.formats.dtypes import DTYPE_BITS
from inspector.model import natural_key

Verdict = Literal["changed", "same-sampled", "identical", "incomparable"]

#: bytes a sampled range holds (a multiple of 64: whole elements of every dtype), and the default bytes read of each
#: tensor: three ranges (its start, middle and end; the end and the next tensor's start read in one request)
CHUNK: Final = 320
SAMPLE_BYTES: Final = 1024
#: ranges of one file closer than this are read in one request (the gap read and dropped)
MERGE_GAP: Final = 1024
#: the most bytes one merged request spans (``spans``): never a whole file of small tensors in one piece
MAX_SPAN: Final = 256 * 1024


#: one sampled range as a side reads it: (start in the file, length, its number in the plan)
Slot = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Sampled:
    """One tensor of both sides, and the ranges read of it on each: the same ``offsets`` in the tensor,
    from its first byte in each file (``start_a``, ``start_b``). Its ranges are numbered ``first``,
    ``first + 1`` … in the plan (``Plan.ranges``): where each side's digest of the range is kept."""

    name: str
    role: str
    stack: str | None
    layer: int | None
    file_a: str
    file_b: str
    start_a: int
    start_b: int
    offsets: tuple[tuple[int, int], ...]  # (offset in the tensor, length)
    first: int
    nbytes: int
    whole: bool  # the ranges cover the whole tensor
    row_bytes: int | None  # bytes of a row of a 2-D tensor (None otherwise), to name the rows that changed
    dtype: str = ""  # both sides' (a tensor of two dtypes is incomparable)


@dataclass(frozen=True, slots=True)
class Change:
    """How much a changed tensor changed, over the sampled ranges that differ: the largest absolute
    difference of one value, and that over the largest magnitude A holds there (None where A's are 0)."""

    max_abs: float
    relative: float | None


@dataclass(frozen=True, slots=True)
class TensorValues:
    name: str
    role: str
    stack: str | None
    layer: int | None
    verdict: Verdict
    sampled_bytes: int
    nbytes: int
    why: str  # for incomparable; the rows where a change was seen; or how identity was proven
    change: Change | None = None  # a changed float tensor's size of change (``measure``)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a value diff reads: each comparable tensor's ranges, and those it cannot compare."""

    sampled: tuple[Sampled, ...]
    incomparable: tuple[TensorValues, ...]
    weights_bytes: int  # bytes of the compared tensors, on one side
    ranges: int  # sampled ranges on one side, numbered 0 … ranges − 1 across the tensors

    def slots(self, side: int) -> Iterator[tuple[str, Iterator[Slot]]]:
        """One side's ranges file by file, each file's in the order its tensors lie (so ``spans`` joins
        them in one pass without holding them all): (start in the file, length, the range's number)."""
        def where(s: Sampled) -> tuple[str, int]:
            return (s.file_a, s.start_a) if side == 0 else (s.file_b, s.start_b)

        for file, group in groupby(sorted(self.sampled, key=where), key=lambda s: where(s)[0]):
            yield file, (slot for s in group for slot in _slots(s, where(s)[1]))


def _slots(s: Sampled, start: int) -> Iterator[Slot]:
    for k, (o, n) in enumerate(s.offsets):
        yield start + o, n, s.first + k


@dataclass(frozen=True, slots=True)
class ValueDiff:
    tensors: tuple[TensorValues, ...]
    weights_bytes: int
    bytes_read: tuple[int, int]  # per side, the merged reads' bytes
    requests: tuple[int, int]
    sample_bytes: int
    exact: bool
    summary: tuple[str, ...]
    #: with ``--exact``: the bytes each side hashed whole (sha256, streamed)
    bytes_hashed: tuple[int, int] = (0, 0)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for t in self.tensors if t.verdict == verdict)


def _offsets(nbytes: int, name: str, sample: int, align: int) -> tuple[tuple[int, int], ...]:
    """(offset in the tensor, length): the whole tensor when it is no larger than the sample; else its
    start, middle and end, and pseudo-random ranges drawn from a SHAKE-256 stream of the name (the same
    on both sides, one hash a tensor: seeding ``random.Random`` a tensor was two thirds of a plan's
    CPU), aligned to elements; where the stream runs short (nearly every place taken), the first free
    places in order."""
    chunk = max(align, CHUNK - CHUNK % align)
    if nbytes <= sample or nbytes <= chunk:
        return ((0, nbytes),)
    last = (nbytes - chunk) // align * align
    places = last // align + 1
    picks = {0, last, (nbytes // 2) // align * align}
    count = min(max(sample // chunk, 3), places)  # never more ranges than there are places
    if len(picks) < count:
        wanted = count - len(picks)
        stream = hashlib.shake_256(name.encode("utf-8", "surrogatepass")).digest(8 * (2 * wanted + 8))
        for i in range(0, len(stream), 8):
            picks.add(int.from_bytes(stream[i:i + 8], "little") % places * align)
            if len(picks) == count:
                break
        place = 0
        while len(picks) < count:
            picks.add(place)
            place += align
    return tuple([(o, chunk if o + chunk <= nbytes else nbytes - o) for o in sorted(picks)])


def sample_plan(a: Report, b: Report, sample_bytes: int = SAMPLE_BYTES) -> Plan:
    """The ranges to read of every tensor both checkpoints hold with the same shape and dtype."""
    starts_a = {h.file: h.data_start for h in a.checkpoint.headers}
    starts_b = {h.file: h.data_start for h in b.checkpoint.headers}
    by_name_b = {t.info.name: t for t in b.tensors}
    sampled: list[Sampled] = []
    incomparable: list[TensorValues] = []
    weights = numbered = 0
    for t in a.tensors:
        info, place = t
        other = by_name_b.get(info.name)
        if other is None or other.info.shape != info.shape:
            continue  # added, removed or reshaped: the diff of names and shapes says so
        o_info, nbytes = other.info, info.nbytes
        start_a, start_b = starts_a.get(info.file), starts_b.get(o_info.file)
        if o_info.dtype != info.dtype:
            incomparable.append(_apart(t, f"dtypes differ ({info.dtype} and {o_info.dtype}): other bytes for the "
                                          "same values"))
            continue
        if start_a is None or start_b is None:
            incomparable.append(_apart(t, "tensor data not read by offset on one side (a pickle)"))
            continue
        if o_info.nbytes != nbytes:
            incomparable.append(_apart(t, f"{nbytes:,} and {o_info.nbytes:,} bytes as stored"))
            continue
        offsets = _offsets(nbytes, info.name, sample_bytes, max(1, DTYPE_BITS.get(info.dtype, 8) // 8))
        shape = info.shape
        sampled.append(Sampled(
            info.name, place.role, place.stack, place.layer, info.file, o_info.file,
            start_a + info.begin, start_b + o_info.begin, offsets, numbered, nbytes,
            len(offsets) == 1 and offsets[0][1] == nbytes,
            nbytes // shape[0] if len(shape) == 2 and shape[0] else None, info.dtype))
        weights += nbytes
        numbered += len(offsets)
    return Plan(tuple(sampled), tuple(incomparable), weights, numbered)


def _apart(t: Tensor, why: str) -> TensorValues:
    """A tensor both sides hold whose bytes cannot be compared, and why."""
    info, place = t
    return TensorValues(info.name, place.role, place.stack, place.layer, "incomparable", 0, info.nbytes, why)


@dataclass(frozen=True, slots=True)
class Span:
    """One request: ``length`` bytes at ``start`` of ``file``, and the sampled ranges inside it (sorted)."""

    file: str
    start: int
    length: int
    slots: tuple[Slot, ...]


def spans(file: str, slots: Iterable[Slot], gap: int = MERGE_GAP, cap: int = MAX_SPAN) -> Iterator[Span]:
    """Ranges of one file joined, in one pass and as they come, where each lies after the span's start,
    within ``gap`` bytes of its end, and the join stays within ``cap`` bytes: one request each (ranges in
    file order join best; out of order they are simply read apart). Small tensors side by side would
    otherwise join into one span as long as the file (100,000 tensors of 2 KiB: 200 MB read in one piece
    to keep 100 MB of samples); a range longer than ``cap`` (a small tensor read whole) is its own span."""
    start = end = 0
    members: list[Slot] = []
    for slot in slots:
        at, length, _ = slot
        stop = at + length
        if members and start <= at <= end + gap and max(end, stop) - start <= cap:
            members.append(slot)
            end = max(end, stop)
            continue
        if members:
            yield Span(file, start, end - start, tuple(members))
        start, end, members = at, stop, [slot]
    if members:
        yield Span(file, start, end - start, tuple(members))


#: bytes of a range's digest (``digest_into``)
DIGEST: Final = 16


def digest_into(table: bytearray, span: Span, body: bytes | bytearray) -> None:
    """Each sampled range of ``span`` as a 16-byte BLAKE2b digest of its bytes, written at its number
    in ``table`` (``DIGEST`` bytes a range): what ``verdicts`` compares, so a side keeps 16 bytes a
    range, never the samples (different digests are different bytes, a proof; equal ones equal bytes but
    for a 2^-128 chance). A body that ends before a range does is a truncated file."""
    view = memoryview(body)
    for at, length, number in span.slots:
        offset = at - span.start
        piece = view[offset:offset + length]
        if len(piece) != length:
            raise InvalidCheckpointError(f"{span.file}: the file ends before the tensor data its header places "
                                         f"at byte {at:,}", hint="the file is truncated")
        table[number * DIGEST:(number + 1) * DIGEST] = hashlib.blake2b(piece, digest_size=DIGEST).digest()


def digest_table(plan: Plan, side: int) -> bytearray:
    """Room for one side's digests, filled differently on each side: a range never read (a bug) can only
    read as changed, never as the same."""
    return bytearray((b"\0" if side == 0 else b"\xff") * (plan.ranges * DIGEST))


def verdicts(plan: Plan, digests_a: bytes | bytearray, digests_b: bytes | bytearray,
             hashes: Mapping[str, tuple[str, str]] | None = None) -> list[TensorValues]:
    """Each sampled tensor's verdict from both sides' digest tables (``digest_into``); ``hashes``: both
    sides' content hashes by tensor name, where ``--exact`` streamed them."""
    out = list(plan.incomparable)
    a, b = memoryview(digests_a), memoryview(digests_b)
    for s in plan.sampled:
        lo, hi = s.first * DIGEST, (s.first + len(s.offsets)) * DIGEST
        differs = [] if a[lo:hi] == b[lo:hi] else [
            k for k in range(len(s.offsets)) if a[lo + k * DIGEST:lo + (k + 1) * DIGEST] !=
            b[lo + k * DIGEST:lo + (k + 1) * DIGEST]]
        sampled = sum(n for _, n in s.offsets)
        if hashes is not None and s.name in hashes:
            ha, hb = hashes[s.name]
            verdict: Verdict = "identical" if ha == hb else "changed"
            why = "sha256 of the whole tensor" + ("" if ha == hb else (" differs" + _rows(s, differs)))
        elif differs:
            verdict, why = "changed", "a sampled range differs" + _rows(s, differs)
        elif s.whole:
            verdict, why = "identical", "read whole"
        else:
            verdict, why = "same-sampled", f"{len(s.offsets)} ranges, {sampled:,} of {s.nbytes:,} bytes"
        out.append(TensorValues(s.name, s.role, s.stack, s.layer, verdict, sampled, s.nbytes, why))
    out.sort(key=lambda t: natural_key(t.name))
    return out


def _rows(s: Sampled, differs: list[int]) -> str:
    """Which rows of a 2-D tensor the differing ranges (by their place in ``s.offsets``) fall in, and
    whether some sampled rows did not change (a tensor changed in part: new rows of an embedding)."""
    if s.row_bytes is None or len(differs) == len(s.offsets):
        return ""
    changed = set(differs)
    rows = sorted({s.offsets[k][0] // s.row_bytes for k in changed})
    same = sorted({o // s.row_bytes for k, (o, _) in enumerate(s.offsets) if k not in changed})
    return (f"; in part: rows {', '.join(f'{x:,}' for x in rows[:6])} changed, rows "
            f"{', '.join(f'{x:,}' for x in same[:6])} did not")


def summarise(tensors: Sequence[TensorValues]) -> tuple[str, ...]:
    """A person's reading: which roles changed in which layers, and what that looks like."""
    changed = [t for t in tensors if t.verdict == "changed"]
    compared = [t for t in tensors if t.verdict != "incomparable"]
    if not compared:
        return ("no tensor could be compared",)
    if not changed:
        return (f"no sampled byte differs in {len(compared):,} tensors: the same weights as far as the samples "
                "show",)
    roles: dict[str, list[int]] = defaultdict(list)
    outside: list[str] = []
    for t in changed:
        if t.layer is not None:
            roles[t.role].append(t.layer)
        else:
            outside.append(t.role)
    lines = []
    for role, layers in sorted(roles.items()):
        lines.append(f"{role} changed in layers {_spans(sorted(set(layers)))}")
    for role in sorted(set(outside)):
        lines.append(f"{role} changed")
    changed_roles = {t.role for t in changed}
    all_roles = {t.role for t in compared}
    same = len(compared) - len(changed)
    if same:
        lines.append(f"everything else ({same:,} tensors) the same in the sampled bytes")
    if changed_roles <= {"attn.q", "attn.k", "attn.v", "attn.o"} and same:
        lines.append("what a LoRA merged into " + ", ".join(sorted(r.removeprefix("attn.") for r in changed_roles))
                     + " looks like")
    elif changed_roles <= {"embedding", "lm_head"}:
        lines.append("only the embedding and output layer changed: what new tokens look like")
    elif changed_roles == all_roles and not same:
        lines.append("every tensor changed: a full fine-tune")
    return tuple(lines)


def _spans(values: list[int]) -> str:
    """``0, 1, 2, 5`` → ``0–2, 5``."""
    spans: list[tuple[int, int]] = []
    for v in values:
        if spans and v == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], v)
        else:
            spans.append((v, v))
    return ", ".join(f"{a}–{b}" if b > a else f"{a}" for a, b in spans)


#: the changed tensors whose size of change is measured (their differing sampled ranges read once more, a side)
MAX_MEASURED: Final = 64
#: the dtypes whose values are read as numbers (numpy's little-endian type; BF16: the top half of an F32)
FLOAT_DTYPES: Final = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def differing(plan: Plan, digests_a: bytes | bytearray,
              digests_b: bytes | bytearray) -> list[tuple[Sampled, tuple[int, ...]]]:
    """The changed float tensors (at most ``MAX_MEASURED``, in name order) and which of their sampled ranges
    differ: what ``measure`` reads again."""
    found = []
    a, b = memoryview(digests_a), memoryview(digests_b)
    for s in sorted(plan.sampled, key=lambda s: natural_key(s.name)):
        if s.dtype not in FLOAT_DTYPES:
            continue
        ks = tuple(k for k in range(len(s.offsets)) if a[(s.first + k) * DIGEST:(s.first + k + 1) * DIGEST] !=
                   b[(s.first + k) * DIGEST:(s.first + k + 1) * DIGEST])
        if ks:
            found.append((s, ks))
            if len(found) == MAX_MEASURED:
                break
    return found


def measure(dtype: str, a: bytes, b: bytes) -> Change | None:
    """The size of a change from the same elements' bytes on each side: the largest |B − A| of one value
    (in float64, non-finite values left out) and that over the largest |A| among them."""
    # deferred: 50 ms at import (numpy)
    import numpy as np

    kind = FLOAT_DTYPES[dtype]
    xa, xb = np.frombuffer(a, dtype=kind), np.frombuffer(b, dtype=kind)
    if dtype == "BF16":  # bfloat16: the top 16 bits of a float32
        xa, xb = (x.astype(np.uint32) << 16 for x in (xa, xb))
        xa, xb = xa.view(np.float32), xb.view(np.float32)
    with np.errstate(all="ignore"):
        fa, fb = xa.astype(np.float64), xb.astype(np.float64)
        delta = np.abs(fb - fa)
    finite = np.isfinite(delta)
    if not finite.any():
        return None
    largest = float(delta[finite].max())
    scale = float(np.abs(fa[np.isfinite(fa)]).max()) if np.isfinite(fa).any() else 0.0
    return Change(largest, largest / scale if scale else None)
