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
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from inspector.analysis.report import Report
from inspector.formats.dtypes import DTYPE_BITS
from inspector.model import natural_key

Verdict = Literal["changed", "same-sampled", "identical", "incomparable"]

#: bytes a sampled range holds, and the default bytes read of each tensor (4 ranges)
CHUNK: Final = 256
SAMPLE_BYTES: Final = 1024
#: ranges of one file closer than this are read in one request (the gap read and dropped)
MERGE_GAP: Final = 1024


@dataclass(frozen=True, slots=True)
class Range:
    """``length`` bytes at ``start`` (absolute in the file) of one tensor."""

    start: int
    length: int


@dataclass(frozen=True, slots=True)
class Sampled:
    """One tensor of both sides, and the ranges read of it on each (the same offsets in the tensor)."""

    name: str
    role: str
    stack: str | None
    layer: int | None
    file_a: str
    file_b: str
    ranges_a: tuple[Range, ...]
    ranges_b: tuple[Range, ...]
    nbytes: int
    whole: bool  # the ranges cover the whole tensor
    row_bytes: int | None  # bytes of a row of a 2-D tensor (None otherwise), to name the rows that changed


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


@dataclass(frozen=True, slots=True)
class Plan:
    """What a value diff reads: each comparable tensor's ranges, and those it cannot compare."""

    sampled: tuple[Sampled, ...]
    incomparable: tuple[TensorValues, ...]
    weights_bytes: int  # bytes of the compared tensors, on one side

    @property
    def bytes_to_read(self) -> int:
        return sum(r.length for s in self.sampled for r in s.ranges_a)


@dataclass(frozen=True, slots=True)
class ValueDiff:
    tensors: tuple[TensorValues, ...]
    weights_bytes: int
    bytes_read: tuple[int, int]  # per side, the merged reads' bytes
    requests: tuple[int, int]
    sample_bytes: int
    exact: bool
    summary: tuple[str, ...]

    def count(self, verdict: Verdict) -> int:
        return sum(1 for t in self.tensors if t.verdict == verdict)


def _offsets(nbytes: int, name: str, sample: int, align: int) -> list[tuple[int, int]]:
    """(offset in the tensor, length): the whole tensor when it is no larger than the sample; else its
    start, middle and end, and pseudo-random ranges seeded by the name, aligned to elements."""
    chunk = max(align, CHUNK - CHUNK % align)
    if nbytes <= max(sample, chunk):
        return [(0, nbytes)]
    last = (nbytes - chunk) // align * align
    picks = {0, last, (nbytes // 2) // align * align}
    rng = random.Random(hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest())
    count = min(max(sample // chunk, 3), last // align + 1)  # never more ranges than there are places
    while len(picks) < count:
        picks.add(rng.randrange(0, last + 1) // align * align)
    return [(o, min(chunk, nbytes - o)) for o in sorted(picks)]


def sample_plan(a: Report, b: Report, sample_bytes: int = SAMPLE_BYTES) -> Plan:
    """The ranges to read of every tensor both checkpoints hold with the same shape and dtype."""
    starts_a = {h.file: h.data_start for h in a.checkpoint.headers}
    starts_b = {h.file: h.data_start for h in b.checkpoint.headers}
    by_name_b = {t.info.name: t for t in b.tensors}
    sampled: list[Sampled] = []
    incomparable: list[TensorValues] = []
    weights = 0
    for t in a.tensors:
        other = by_name_b.get(t.info.name)
        if other is None or other.info.shape != t.info.shape:
            continue  # added, removed or reshaped: the diff of names and shapes says so
        info, place = t
        base = TensorValues(info.name, place.role, place.stack, place.layer, "incomparable", 0, info.nbytes, "")
        if other.info.dtype != info.dtype:
            incomparable.append(_with(base, f"dtypes differ ({info.dtype} and {other.info.dtype}): other bytes for "
                                            "the same values"))
            continue
        start_a, start_b = starts_a.get(info.file), starts_b.get(other.info.file)
        if start_a is None or start_b is None:
            incomparable.append(_with(base, "tensor data not read by offset on one side (a pickle)"))
            continue
        if other.info.nbytes != info.nbytes:
            incomparable.append(_with(base, f"{info.nbytes:,} and {other.info.nbytes:,} bytes as stored"))
            continue
        bits = DTYPE_BITS.get(info.dtype, 8)
        align = max(1, bits // 8)
        offsets = _offsets(info.nbytes, info.name, sample_bytes, align)
        row = info.nbytes // info.shape[0] if len(info.shape) == 2 and info.shape[0] else None
        sampled.append(Sampled(
            info.name, place.role, place.stack, place.layer, info.file, other.info.file,
            tuple(Range(start_a + info.begin + o, n) for o, n in offsets),
            tuple(Range(start_b + other.info.begin + o, n) for o, n in offsets),
            info.nbytes, len(offsets) == 1 and offsets[0][1] == info.nbytes, row))
        weights += info.nbytes
    return Plan(tuple(sampled), tuple(incomparable), weights)


def _with(t: TensorValues, why: str) -> TensorValues:
    return TensorValues(t.name, t.role, t.stack, t.layer, t.verdict, t.sampled_bytes, t.nbytes, why)


def merged(ranges: Sequence[Range], gap: int = MERGE_GAP) -> list[Range]:
    """Ranges of one file sorted and joined where they lie within ``gap`` bytes of each other: one
    request each."""
    out: list[Range] = []
    for r in sorted(ranges, key=lambda r: r.start):
        if out and r.start <= out[-1].start + out[-1].length + gap:
            last = out[-1]
            out[-1] = Range(last.start, max(last.start + last.length, r.start + r.length) - last.start)
        else:
            out.append(r)
    return out


def verdicts(plan: Plan, read_a: Mapping[tuple[str, Range], bytes], read_b: Mapping[tuple[str, Range], bytes],
             hashes: Mapping[str, tuple[str, str]] | None = None) -> list[TensorValues]:
    """Each sampled tensor's verdict from the bytes read (keyed by file and range); ``hashes``: both
    sides' content hashes by tensor name, where ``--exact`` streamed them."""
    out = list(plan.incomparable)
    for s in plan.sampled:
        differs = [ra for ra, rb in zip(s.ranges_a, s.ranges_b, strict=True)
                   if read_a[(s.file_a, ra)] != read_b[(s.file_b, rb)]]
        sampled = sum(r.length for r in s.ranges_a)
        if hashes is not None and s.name in hashes:
            ha, hb = hashes[s.name]
            verdict: Verdict = "identical" if ha == hb else "changed"
            why = "sha256 of the whole tensor" + ("" if ha == hb else (" differs" + _rows(s, differs)))
        elif differs:
            verdict, why = "changed", "a sampled range differs" + _rows(s, differs)
        elif s.whole:
            verdict, why = "identical", "read whole"
        else:
            verdict, why = "same-sampled", f"{len(s.ranges_a)} ranges, {sampled:,} of {s.nbytes:,} bytes"
        out.append(TensorValues(s.name, s.role, s.stack, s.layer, verdict, sampled, s.nbytes, why))
    out.sort(key=lambda t: natural_key(t.name))
    return out


def _rows(s: Sampled, differs: list[Range]) -> str:
    """Which rows of a 2-D tensor the differing ranges fall in, and whether some sampled rows did not
    change (a tensor changed in part: new rows of an embedding)."""
    if s.row_bytes is None or len(differs) == len(s.ranges_a):
        return ""
    base = s.ranges_a[0].start
    rows = sorted({(r.start - base) // s.row_bytes for r in differs})
    same = sorted({(r.start - base) // s.row_bytes for r in s.ranges_a if r not in differs})
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
