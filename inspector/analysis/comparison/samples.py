"""What ``inspect lineage`` reads of each tensor, and how the bytes become numbers.

``plan`` picks the elements (four ranges of ``RANGE`` elements a tensor, the same on every side); a ``Source``
says which bytes of which tensors hold them on one side and how they decode: ``plain`` (one tensor's dtype:
BF16, F16, F32 and the integer dtypes directly, GGML blocks by gguf-py's dequantisers) or ``bnb4``
(bitsandbytes' 4-bit weight, packed two codes a byte in the order of the weight's elements, beside its per-block
``absmax``, its ``quant_map`` of 16 levels and its ``quant_state`` JSON; double quantisation's nested absmax and
map too), whose decoding also gives each value's own quantisation bound. Pure: ``api_lineage`` reads.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from inspector.analysis.facts.report import Report
from inspector.errors import InvalidCheckpointError
from inspector.formats.dtypes import DTYPE_BITS
from inspector.model import TensorInfo
from inspector.safeio import parse_json

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Values = npt.NDArray[np.float64]

#: elements a sampled range holds: a multiple of every GGML block (32 and 256 elements)
RANGE: Final = 256
#: ranges a tensor (start, middle, end, one drawn from its name); a tensor of at most RANGE × RANGES
#: elements is read whole
RANGES: Final = 4
#: the most tensors sampled (evenly over the model's, in name order): 4,096 × 4 ranges a side at most
MAX_SAMPLED: Final = 4096
#: numpy's type for each dtype read as numbers (BF16: the top half of an F32)
NUMPY: Final[Mapping[str, str]] = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8",
                                   "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "U16": "<u2", "U32": "<u4",
                                   "U64": "<u8", "BOOL": "u1"}

#: the tensors llama.cpp's converter reorders (``convert_hf_to_gguf.py``, ``LlamaModel.permute``: the rows of
#: q and k interleaved for its rotary embedding), by their GGUF names
PERMUTED: Final = re.compile(r"^blk\.\d+\.attn_(q|k)\.weight$")


# --- what is read --------------------------------------------------------------------------------


def unit(dtype: str) -> tuple[int, int] | None:
    """(elements, bytes) of a dtype's smallest whole piece: one element of a plain dtype, one block of a
    GGML type (gguf-py's ``GGML_QUANT_SIZES``); None where a piece is not whole bytes or the type unknown."""
    bits = DTYPE_BITS.get(dtype)
    if bits is not None:
        return (1, bits // 8) if bits % 8 == 0 else None
    # deferred: 95 ms at import (gguf)
    import gguf

    qtype = gguf.GGMLQuantizationType.__members__.get(dtype)
    return None if qtype is None else gguf.GGML_QUANT_SIZES[qtype]


def decodable(dtype: str) -> bool:
    """Whether values of this dtype can be read as numbers here (a plain dtype numpy holds, or a GGML type
    gguf-py dequantises)."""
    if dtype in NUMPY:
        return True
    if dtype in DTYPE_BITS:
        return False
    # deferred: 94 ms at import (gguf)
    import gguf

    return dtype in gguf.GGMLQuantizationType.__members__ and dtype not in ("F16", "F32", "BF16", "F64")


@dataclass(frozen=True, slots=True)
class Pick:
    """Ranges of elements of one model tensor (in its stored order), read on every side."""

    index: int  # the model tensor's place in ``report.tensors``
    ranges: tuple[tuple[int, int], ...]  # (first element, count)

    @property
    def elements(self) -> int:
        return sum(n for _, n in self.ranges)


def plan(model: Report, indexes: Sequence[int]) -> list[Pick]:
    """The ranges of each tensor to read (at most ``MAX_SAMPLED`` tensors, evenly spread): whole where it is
    small, else ``RANGES`` ranges of ``RANGE`` elements at multiples of ``RANGE``."""
    chosen = list(indexes)
    if len(chosen) > MAX_SAMPLED:
        step = len(chosen) / MAX_SAMPLED
        chosen = [chosen[int(k * step)] for k in range(MAX_SAMPLED)]
    out = []
    for i in chosen:
        info = model.tensors[i].info
        n = info.numel  # logical elements (a bitsandbytes 4-bit weight: two a stored byte)
        if n <= RANGE * RANGES:
            out.append(Pick(i, ((0, n),) if n else ()))
            continue
        places = n // RANGE
        picks = {0, places - 1, places // 2}
        stream = hashlib.shake_256(info.name.encode("utf-8", "surrogatepass")).digest(64)
        for k in range(0, 64, 8):
            if len(picks) == RANGES:
                break
            picks.add(int.from_bytes(stream[k:k + 8], "little") % places)
        out.append(Pick(i, tuple((p * RANGE, RANGE) for p in sorted(picks))))
    return out


def byte_ranges(info: TensorInfo, ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The bytes (offset in the tensor's data, length) holding these element ranges, or None where they do
    not fall on whole pieces of its dtype (a block cut in two)."""
    u = unit(info.dtype)
    if u is None:
        return None
    per, size = u
    out = []
    for first, count in ranges:
        if first % per or (count % per and first + count != info.numel):
            return None
        blocks = -(-count // per)
        out.append((first // per * size, blocks * size))
    return out


def permuted_rows(info: TensorInfo, heads: int | None) -> bool:
    """Whether this GGUF tensor's rows are llama.cpp's reordering of the source's (``PERMUTED``) and can be
    mapped back (``heads`` divides its rows into pairs)."""
    rows = info.shape[0] if len(info.shape) == 2 else 0
    return bool(PERMUTED.match(info.name) and heads and rows and rows % (2 * heads) == 0)


def source_ranges(info: TensorInfo, ranges: Sequence[tuple[int, int]], heads: int) -> list[tuple[int, int]]:
    """The candidate's element ranges holding what a permuted GGUF tensor's ranges hold, row piece by row
    piece: ``convert_hf_to_gguf.py`` writes ``w.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2)``,
    so GGUF row g = h·d + 2i + j (d = rows / heads) holds source row h·d + j·d/2 + i."""
    rows, cols = info.shape
    d = rows // heads
    out = []
    for first, count in ranges:
        at, end = first, first + count
        while at < end:
            g, col = divmod(at, cols)
            take = min(end - at, cols - col)
            h, r = divmod(g, d)
            source = h * d + (r % 2) * (d // 2) + r // 2
            out.append((source * cols + col, take))
            at += take
    return out


def decode(dtype: str, data: bytes) -> Values | None:
    """Stored bytes as float64 values (GGML blocks by gguf-py's dequantiser), None where this dtype is not
    read as numbers."""
    # deferred: 50 ms at import (numpy)
    import numpy as np

    kind = NUMPY.get(dtype)
    if kind is not None:
        raw = np.frombuffer(data, dtype=kind)
        if dtype == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        return raw.astype(np.float64)
    if not decodable(dtype):
        return None
    # deferred: 93 ms at import (gguf)
    import gguf

    qtype = gguf.GGMLQuantizationType[dtype]
    size = gguf.GGML_QUANT_SIZES[qtype][1]
    blocks = np.frombuffer(data, dtype=np.uint8)
    if len(blocks) % size:
        return None
    return np.asarray(gguf.quants.dequantize(blocks.reshape(-1, size), qtype), dtype=np.float64).reshape(-1)




# --- what one side reads of a pick, and how it decodes ------------------------------------------------


#: bitsandbytes' companions of a 4-bit weight (``Params4bit``'s ``quant_state.as_dict(packed=True)`` as
#: transformers saves it)
BNB_PARTS: Final = ("absmax", "quant_map")
BNB_NESTED: Final = ("nested_absmax", "nested_quant_map")
#: block sizes bitsandbytes accepts (``quantize_4bit``'s ``blocksize``; 4,096 down to 32)
BNB_BLOCKS: Final = (32, 64, 128, 256, 512, 1024, 2048, 4096)
#: the most bytes of a quant_state JSON read (bitsandbytes writes about 80)
BNB_STATE_BYTES: Final = 4096

Part = tuple[TensorInfo, tuple[tuple[int, int], ...]]  # a tensor, and byte ranges of its data (offset, length)


@dataclass(frozen=True, slots=True)
class Source:
    """What one side reads for one pick and how it decodes: ``parts`` read in order (their ranges' bytes
    joined per part), decoded as ``how`` says."""

    how: Literal["plain", "bnb4"]
    parts: tuple[Part, ...]
    label: str  # the stored type, as the evidence names it (BF16, Q8_0, bnb-nf4)


def is_bnb4(by_name: Mapping[str, TensorInfo], info: TensorInfo) -> bool:
    """A bitsandbytes 4-bit weight: packed bytes beside its ``absmax`` and ``quant_map``."""
    return info.dtype in ("U8", "I8") and all(f"{info.name}.{p}" in by_name for p in BNB_PARTS)


def source(by_name: Mapping[str, TensorInfo], info: TensorInfo, ranges: Sequence[tuple[int, int]]) -> Source | None:
    """How one side reads these element ranges of ``info``; None where it cannot (a block cut in two)."""
    if is_bnb4(by_name, info):
        return _bnb_source(by_name, info, ranges)
    got = byte_ranges(info, ranges)
    return None if got is None else Source("plain", ((info, tuple(got)),), info.dtype)


def _bnb_source(by_name: Mapping[str, TensorInfo], info: TensorInfo, ranges: Sequence[tuple[int, int]]
                ) -> Source | None:
    absmax, qmap = (by_name[f"{info.name}.{p}"] for p in BNB_PARTS)
    state = next((by_name[n] for n in sorted(by_name) if n.startswith(f"{info.name}.quant_state.")), None)
    n = info.numel  # logical: two a stored byte
    block = next((b for b in BNB_BLOCKS if -(-n // b) == absmax.numel), None)
    if state is None or block is None or state.nbytes > BNB_STATE_BYTES or any(f % 2 or c % 2 for f, c in ranges):
        return None
    width = max(1, DTYPE_BITS.get(absmax.dtype, 8) // 8)
    blocks = [(f // block, (f + c - 1) // block + 1) for f, c in ranges]
    parts: list[Part] = [(info, tuple((f // 2, c // 2) for f, c in ranges)),
                         (absmax, tuple((a * width, (b - a) * width) for a, b in blocks)),
                         (qmap, ((0, qmap.nbytes),)), (state, ((0, state.nbytes),))]
    nested = [by_name.get(f"{info.name}.{p}") for p in BNB_NESTED]
    if nested[0] is not None and nested[1] is not None:
        outer = next((b for b in BNB_BLOCKS if -(-absmax.numel // b) == nested[0].numel), None)
        if outer is None:
            return None
        parts += [(nested[0], tuple((a // outer * 4, (b - 1) // outer * 4 - a // outer * 4 + 4) for a, b in blocks)),
                  (nested[1], ((0, nested[1].nbytes),))]
    kind = state.name.rsplit("__", 1)[-1]
    return Source("bnb4", tuple(parts), f"bnb-{kind}")


def values_of(src: Source, bodies: Sequence[bytes], ranges: Sequence[tuple[int, int]]
              ) -> tuple[Values, Values | None] | None:
    """The sampled elements as float64, and for a quantised source each one's own bound (None for a plain
    one: ``lineage.quantisation_bound`` derives it from the dtype); None where the bytes do not decode."""
    if src.how == "plain":
        got = decode(src.parts[0][0].dtype, bodies[0])
        return None if got is None else (got, None)
    return _bnb_values(src, bodies, ranges)


#: the most JSON values a bitsandbytes quant_state (a tensor of JSON bytes: a dozen keys) may hold
QUANT_STATE_VALUES: Final = 1_000


def _bnb_values(src: Source, bodies: Sequence[bytes], ranges: Sequence[tuple[int, int]]
                ) -> tuple[Values, Values] | None:
    """bitsandbytes 4-bit: value = quant_map[code] × absmax[element // blocksize] (codes two a byte, the first
    in the high nibble, as ``quantize_4bit`` packs them); double quantisation: absmax = nested_quant_map[u8] ×
    nested_absmax[block // 256] + offset. The bound: half the largest gap between adjacent levels of the map,
    times the block's absmax (the quantiser rounds to the nearest level), plus the nested absmax's own error."""
    # deferred: 52 ms at import (numpy)
    import numpy as np

    try:  # a tensor's bytes from outside: read by the one bounded loader (depth and values capped)
        state = parse_json(bodies[3], "quant_state", max_values=QUANT_STATE_VALUES)
    except InvalidCheckpointError:
        return None
    block = state.get("blocksize") if isinstance(state, dict) else None
    packed_info, absmax_info = src.parts[0][0], src.parts[1][0]
    if not isinstance(block, int) or block not in BNB_BLOCKS or -(-packed_info.numel // block) != absmax_info.numel:
        return None
    codes_bytes = np.frombuffer(bodies[0], dtype=np.uint8)
    codes = np.stack([codes_bytes >> 4, codes_bytes & 15], axis=1).reshape(-1)
    qmap = decode(src.parts[2][0].dtype, bodies[2])
    raw_absmax = decode(absmax_info.dtype, bodies[1])
    if qmap is None or raw_absmax is None or len(qmap) != 16:
        return None
    nest = _nested(src, bodies, state, absmax_info.numel) if len(src.parts) == 6 else None
    nested = len(src.parts) == 6
    if nested and nest is None:
        return None
    scales, at, at_outer = [], 0, 0
    for f, c in ranges:
        first, last = f // block, (f + c - 1) // block
        here = raw_absmax[at:at + last - first + 1]
        if nest is not None:
            outer_map, outer, outer_block, offset = nest
            idx = here.astype(np.int64)
            base = first // outer_block
            outer_here = outer[at_outer + (np.arange(first, last + 1) // outer_block - base)]
            here = outer_map[idx] * outer_here + float(offset)
            at_outer += last // outer_block - base + 1
        at += last - first + 1
        scales.append(np.repeat(here, block)[f - first * block:f - first * block + c])
    scale = np.concatenate(scales) if scales else np.zeros(0)
    if len(scale) != len(codes):
        return None
    gap = float(np.diff(np.sort(qmap)).max()) / 2
    bound = np.abs(scale) * (gap + (0.02 if nested else 0.0)) * (1 + 2.0**-10) + 2.0**-24
    return qmap[codes] * scale, bound


def _nested(src: Source, bodies: Sequence[bytes], state: Mapping[str, object], blocks: int
            ) -> tuple[Values, Values, int, float] | None:
    """Double quantisation's parts: the nested map, the nested absmax read, its block size, the offset."""
    outer_map = decode(src.parts[5][0].dtype, bodies[5])
    outer = decode(src.parts[4][0].dtype, bodies[4])
    offset = state.get("nested_offset", 0.0)
    outer_block = next((b for b in BNB_BLOCKS if -(-blocks // b) == src.parts[4][0].numel), None)
    if outer_map is None or outer is None or outer_block is None or not isinstance(offset, int | float):
        return None
    return outer_map, outer, outer_block, float(offset)
