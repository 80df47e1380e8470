"""Safetensors header: bytes in, frozen records out.

A safetensors file is an 8-byte little-endian header length ``n``, ``n`` bytes of JSON, then the
data. The JSON maps tensor names to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets
relative to the start of the data) plus an optional ``"__metadata__"`` of string → string.

This module knows nothing of paths or HTTP: local and remote readers hand it bytes, so one set of
parser tests covers both. Every rule of the format has its own error class (see ``errors``),
following the Rust reference's ``validate``.
"""

from __future__ import annotations

import json
import math
import operator
import re
import struct
from collections.abc import Iterable, Mapping
from itertools import accumulate, chain, islice, repeat
from typing import Any, Final

from inspector.errors import (
    DataBeyondFile,
    DuplicateTensor,
    HeaderBeyondFile,
    HeaderNotJSON,
    HeaderNotObject,
    HeaderTooLarge,
    HeaderTooSmall,
    InvalidEntry,
    InvalidMetadata,
    OverlappingSpans,
    ShapeOverflow,
    SpanGap,
    SpanMismatch,
    UnknownDtype,
)
from inspector.formats.dtypes import DTYPE_BITS
from inspector.model import TensorInfo, WeightFile

#: The Rust reference rejects headers over 100,000,000 bytes (huggingface_hub uses 25,000,000).
MAX_HEADER_BYTES: Final = 100_000_000
PREFIX_BYTES: Final = 8
METADATA_KEY: Final = "__metadata__"
_U64_MAX: Final = 2**64 - 1


def read_header_length(prefix: bytes | bytearray, *, file: str | None = None, file_size: int | None = None) -> int:
    """Decode and check the 8-byte length prefix. ``prefix`` may be longer than 8 bytes."""
    if len(prefix) < PREFIX_BYTES:
        raise HeaderTooSmall(
            f"file is {len(prefix)} bytes, too short for the 8-byte header length of a safetensors file",
            file,
        )
    (n,) = struct.unpack_from("<Q", prefix)
    if n > MAX_HEADER_BYTES:
        raise HeaderTooLarge(
            f"header length {n:,} bytes is over the {MAX_HEADER_BYTES:,}-byte limit "
            "(not a safetensors file, or a hostile one)",
            file,
        )
    if file_size is not None and PREFIX_BYTES + n > file_size:
        raise HeaderBeyondFile(
            f"header claims {n:,} bytes but the file has only {file_size - PREFIX_BYTES:,} after the "
            "length prefix (truncated file, or not safetensors)",
            file,
        )
    return int(n)


def parse_header(blob: bytes | bytearray, *, file: str = "<bytes>", file_size: int | None = None) -> WeightFile:
    """Parse and validate a header from the first bytes of a safetensors file.

    ``blob`` must hold at least the 8-byte prefix and the whole JSON; extra bytes are ignored.
    ``file_size``, when known, enables the checks against the end of the file.
    """
    n = read_header_length(blob, file=file, file_size=file_size)
    if len(blob) < PREFIX_BYTES + n:
        raise HeaderBeyondFile(
            f"header claims {n:,} bytes but only {len(blob) - PREFIX_BYTES:,} follow the length prefix",
            file,
        )
    view = memoryview(blob)  # no copies of a header that may be 100 MB
    lead = bytes(view[PREFIX_BYTES : PREFIX_BYTES + min(n, 4096)]).lstrip(b" \t\r\n")
    if n > 1 << 20 and lead and lead[:1] != b"{":  # large garbage is refused before it is decoded
        raise HeaderNotJSON("header is not a JSON object: it does not start with '{' (not safetensors?)", file)
    tensors, metadata = _decode_entries(view[PREFIX_BYTES : PREFIX_BYTES + n], file)
    data_length = _check_spans(tensors, file)
    whole = blob if type(blob) is bytes and len(blob) == PREFIX_BYTES + n else bytes(view[: PREFIX_BYTES + n])
    header = WeightFile(file=file, format="safetensors", tensors=tuple(tensors), metadata=metadata,
                        file_size=file_size, data_start=PREFIX_BYTES + n, data_length=data_length, head=whole)
    expected = PREFIX_BYTES + n + data_length
    if file_size is not None and expected > file_size:
        missing = expected - file_size
        raise DataBeyondFile(
            f"tensor data ends at byte {expected:,} but the file has {file_size:,} "
            f"({missing:,} bytes missing: truncated?)",
            file,
        )
    return header


def _decode_entries(raw: memoryview, file: str) -> tuple[list[TensorInfo], dict[str, str]]:
    try:
        text = str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise HeaderNotJSON(f"header is not valid UTF-8 JSON ({_short(exc)})", file) from None
    canonical = _decode_canonical(text, file)
    if canonical is not None:
        return canonical
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_int=_integer, parse_float=_finite)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise HeaderNotJSON(f"header is not valid UTF-8 JSON ({_short(exc)})", file) from None
    if not isinstance(obj, dict):
        raise HeaderNotObject(f"header JSON is a {type(obj).__name__}, not an object", file)
    # json.loads keeps the last of duplicate keys silently. Each key of each entry occurs once per
    # entry, so when the counts in the text match the parsed entries, no key is escaped (a
    # backslash anywhere) and __metadata__ appears at most once, there was no duplicate; otherwise
    # parse again keeping every pair, which names the duplicate and refuses lone surrogates.
    entries = len(obj) - (METADATA_KEY in obj)
    if "\\" in text or text.count(f'"{METADATA_KEY}"') > 1 or any(
            text.count(key) != entries for key in ('"dtype"', '"shape"', '"data_offsets"')):
        _find_duplicates(text, file)
    metadata = _metadata(obj.pop(METADATA_KEY), file) if METADATA_KEY in obj else {}
    # Fast path for well-formed entries; anything unusual goes through _entry, which names the rule.
    tensors: list[TensorInfo] = []
    append = tensors.append
    bits_of = DTYPE_BITS.get
    for name, entry in obj.items():
        try:
            dtype = entry["dtype"]
            shape = entry["shape"]
            begin, end = entry["data_offsets"]
            bits = bits_of(dtype)
            numel = 1
            for dim in shape:
                if type(dim) is not int or not 0 <= dim <= _U64_MAX:
                    raise TypeError
                numel *= dim
                if numel > _U64_MAX:  # the reference multiplies in order with overflow checks
                    raise TypeError
            if (
                bits is None or type(shape) is not list or type(begin) is not int or type(end) is not int
                or not 0 <= begin <= end <= _U64_MAX or numel * bits != (end - begin) * 8
            ):
                raise TypeError
        except (TypeError, KeyError, ValueError):
            append(_entry(name, entry, file))  # raises the precise error
            continue
        append(TensorInfo(name, dtype, tuple(shape), begin, end, file, numel))
    return tensors, metadata


# The fast path reads entries as the reference writer lays them out, compact and in the data's
# order: '"NAME":{"dtype":"DT","shape":[D,...],"data_offsets":[BEGIN,END]}', comma-separated.
_KEY_TO_DTYPE: Final = '":{"dtype":"'
_OFFSETS_KEY: Final = '"data_offsets":['
# what follows _KEY_TO_DTYPE up to _OFFSETS_KEY: the dtype and the shape, checked once per distinct text
_NUMBER = r"(?:0|[1-9][0-9]{0,19})"
_DTYPE_AND_SHAPE: Final = re.compile(
    r'([A-Za-z0-9_]{1,16})","shape":\[(' + _NUMBER + "(?:," + _NUMBER + r')*)?\],')
_JSON_SPACE: Final = " \t\r\n"
_CHUNK: Final = 1 << 20  # characters split at a time: the pieces of a slice are transient


def _canonical_metadata(text: str, pos: int, end: int) -> tuple[dict[str, str], int] | None:
    """A leading ``__metadata__`` of string values, compact and unescaped, and where the entries start ({} and
    ``pos`` without one); None for anything else (the general path names it)."""
    if not text.startswith('"__metadata__":', pos):
        return {}, pos
    try:
        value, after = json.JSONDecoder(parse_constant=_no_constant, parse_int=_integer,
                                         parse_float=_finite).raw_decode(text, pos + 15)
    except (ValueError, RecursionError):
        return None
    if ("\\" in text[pos:after] or not isinstance(value, dict) or text[after:after + 1] not in (",", "}")
            or not all(isinstance(v, str) for v in value.values())):
        return None  # the general path decides which error comes first
    start = after + 1 if text[after] == "," else after
    if start == end and after != end:  # a comma after the metadata and no entry: not JSON
        return None
    return value, start


def _decode_canonical(text: str, file: str) -> tuple[list[TensorInfo], dict[str, str]] | None:
    """The fast path: a header exactly as the reference writer lays it out (``__metadata__``
    first, entries compact, in the order of their data). Anything else (whitespace between
    tokens, escapes, another key order or entry order, an entry that fails a check, a duplicate)
    returns None, and the general path parses the header again and names the problem.

    Entries are cut apart with string splits (C loops, a few objects an entry, no match object
    or dict per entry), each distinct dtype-and-shape text is checked once, and every offset
    follows from the sizes. What was read is then proved: the entries are written back in the
    writer's layout with those offsets and must give the very text that was read, character for
    character; names are checked for what that does not cover (quotes, escapes, control
    characters). On a 1M-tensor header 1.1–1.4 s against 1.8–2.8 s for an anchored regex per entry."""
    tail = text[-64:]  # the writer pads with up to 7 spaces: strip a copy of the tail, not of it all
    end = len(text) - len(tail) + len(tail.rstrip(_JSON_SPACE)) if tail.strip(_JSON_SPACE) else 0
    pos = len(text) - len(text.lstrip(_JSON_SPACE))
    if end - pos < 2 or text[pos] != "{" or text[end - 1] != "}":
        return None
    pos += 1
    end -= 1
    leading = _canonical_metadata(text, pos, end)
    if leading is None:
        return None
    metadata, pos = leading
    if text.find("\\", pos, end) >= 0:
        return None
    tensors: list[TensorInfo] = []
    # dtype-and-shape text → (dtype, shape, elements, bytes): one shape tuple and dtype string for
    # all the tensors that share them (a 1M-tensor header has a few dozen; ~110 bytes a tensor less)
    kinds: dict[str, tuple[str, tuple[int, ...], int, int] | None] = {}
    offset = 0
    names: list[str] = []
    while pos < end:
        # a slice of about _CHUNK characters ending after an entry's comma (a name may end in
        # ']},' before its closing quote: then the slice is cut wrongly and does not rebuild)
        cut = text.find(']},"', pos + _CHUNK, end)
        stop = end if cut < 0 else cut + 3
        chunk = text[pos:stop]
        pieces = chunk.split(_KEY_TO_DTYPE)
        if len(pieces) < 2:
            return None
        # pieces: '"NAME0', then 'DT","shape":[..],"data_offsets":[B,E]},"NAMEi' …, the last without a name
        tails = list(map(str.rpartition, pieces[1:-1], repeat('},"')))
        batch = [pieces[0][1:]]
        batch += map(_THIRD, tails)
        heads = list(map(_FIRST, tails))
        heads.append(pieces[-1])
        shapes = list(map(_FIRST, map(str.rpartition, heads, repeat(_OFFSETS_KEY))))
        del tails, heads, pieces
        for piece in set(shapes).difference(kinds):
            kinds[piece] = _dtype_and_shape(piece)
        found = list(map(kinds.__getitem__, shapes))
        joined = "".join(batch)  # no quote and no control character in any name
        if None in found or '"' in joined or (not joined.isprintable() and not _printable(batch)):
            return None
        del joined
        ends = list(accumulate(map(_FOURTH, found), initial=offset))  # type: ignore[arg-type]
        offset = ends[-1]
        texts = list(map(str, ends))
        rebuilt = "".join(chain.from_iterable(zip(
            repeat('"'), batch, repeat(_KEY_TO_DTYPE), shapes, repeat(_OFFSETS_KEY), texts, repeat(","),
            texts[1:], repeat("]},"))))
        if rebuilt != (chunk if stop < end else chunk + ","):
            return None
        del rebuilt, texts
        names += batch
        tensors.extend(map(tuple.__new__, repeat(TensorInfo), zip(
            batch, map(_FIRST, found), map(_SECOND, found), ends, ends[1:], repeat(file),  # type: ignore[arg-type]
            map(_THIRD, found))))  # type: ignore[arg-type]
        pos = stop
    if offset > _U64_MAX or METADATA_KEY in names or not distinct(names):
        return None
    return tensors, metadata


#: at most this many runs of ascending names are merged by sorting (``distinct``); more take a set
SORTED_RUNS: Final = 64


def distinct(names: list[str]) -> bool:
    """Whether no name occurs twice: ``len(set(names)) == len(names)`` (the plain twin, which a test
    holds this to), cheaper on a writer's header. The safetensors writer lists names ascending within
    each dtype, so a header is a few ascending runs: with none out of order the names are distinct
    already; with a few, sorting merges the runs in about one comparison a name and equal names end
    up side by side. Hashing a million names into a set took 0.25 s; counting the runs, 0.04 s. A
    header whose first 4,096 names already break order more often goes to the set at once."""
    probe = sum(map(operator.ge, islice(names, 4096), islice(names, 1, 4097)))
    if probe <= SORTED_RUNS:
        runs = sum(map(operator.ge, names, islice(names, 1, None)))
        if runs == 0:
            return True
        if runs <= SORTED_RUNS:
            ordered = sorted(names)
            return not any(map(operator.eq, ordered, islice(ordered, 1, None)))
    return len(set(names)) == len(names)


def _dtype_and_shape(piece: str) -> tuple[str, tuple[int, ...], int, int] | None:
    """(dtype, shape, elements, bytes) of a 'DT","shape":[…],' text, or None for anything the
    general path must judge: an unknown dtype, a shape that overflows, a 0 in a shape of several
    dimensions, a size that is not whole bytes."""
    m = _DTYPE_AND_SHAPE.fullmatch(piece)
    if m is None or m[1] not in DTYPE_BITS:
        return None
    shape = tuple(map(int, m[2].split(","))) if m[2] else ()
    numel = 1
    for dim in shape:  # checked as it grows: the product of 40,000 huge dimensions is never formed
        numel *= dim
        if numel > _U64_MAX:
            return None
    bits = numel * DTYPE_BITS[m[1]]
    if (numel == 0 and len(shape) > 1) or bits % 8:
        return None
    return _DTYPE_NAMES[m[1]], shape, numel, bits // 8


def _printable(names: list[str]) -> bool:
    """No JSON control character (U+0000–U+001F) in any name; for names that str.isprintable
    turned away (it also refuses other characters, such as U+00A0)."""
    return not any(ch < " " for name in names if not name.isprintable() for ch in name)


_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
_THIRD = operator.itemgetter(2)
_FOURTH = operator.itemgetter(3)


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


class _NegativeZero(int):
    """``-0`` as the header wrote it: not an ``int`` to the entry checks, so never an offset or a
    dimension (the Rust reference refuses it there; elsewhere it is ignored, as there)."""


def _integer(text: str) -> int:
    return _NegativeZero(0) if text == "-0" else int(text)


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent: refused when it does not fit a double (``1e400``),
    as serde_json refuses it anywhere in the header."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _find_duplicates(text: str, file: str) -> None:
    """Parse keeping every pair: a key twice in a tensor entry, ``__metadata__`` twice, or a lone
    surrogate in any string is an error, as in the reference. (Two tensors of one name are too,
    though the reference keeps the last: silently dropping a tensor is worse than refusing it.
    Repeated keys inside ``__metadata__`` keep the last, as the reference does.)"""
    def pairs(items: list[tuple[str, Any]], unique: bool = True) -> None:
        # inside __metadata__ repeated keys are allowed (unique=False: the reference reads a map)
        seen: set[str] = set()
        for key, value in items:
            if unique and key in seen:
                raise DuplicateTensor(f"key {_quote(key)} appears twice in one object of the header", file)
            seen.add(key)
            _no_surrogate(key, file)
            if isinstance(value, str):
                _no_surrogate(value, file)

    try:
        top = json.loads(text, object_pairs_hook=lambda items: items, parse_constant=_no_constant,
                         parse_int=_integer, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        raise HeaderNotJSON(f"header is not valid UTF-8 JSON ({_short(exc)})", file) from None
    if not isinstance(top, list):
        return
    pairs(top)
    for key, value in top:
        if isinstance(value, list) and all(isinstance(kv, tuple) for kv in value):
            pairs(value, unique=key != METADATA_KEY)


def _no_surrogate(text: str, file: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise HeaderNotJSON("header holds a lone surrogate escape (not valid UTF-8 text)", file) from None


def _quote(key: str) -> str:
    return repr(key.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace"))


def _metadata(entry: Any, file: str) -> dict[str, str]:
    if entry is None:  # the reference reads an optional map: null is no metadata
        return {}
    if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
        raise InvalidMetadata("__metadata__ must be an object of string values", file)
    return entry


def _entry(name: str, entry: Any, file: str) -> TensorInfo:
    if type(entry) is not dict:
        raise InvalidEntry(f"tensor {name!r}: entry is not an object", file)
    dtype = entry.get("dtype")
    shape = entry.get("shape")
    offsets = entry.get("data_offsets")
    if type(dtype) is not str:
        raise InvalidEntry(f"tensor {name!r}: dtype missing or not a string", file)
    if type(shape) is not list:
        raise InvalidEntry(f"tensor {name!r}: shape is not a list of non-negative integers", file)
    numel = 1
    for i, dim in enumerate(shape):
        if type(dim) is not int or dim < 0 or dim > _U64_MAX:
            raise InvalidEntry(f"tensor {name!r}: shape is not a list of non-negative integers", file)
        numel *= dim
        if numel > _U64_MAX:
            raise ShapeOverflow(
                f"tensor {name!r}: the product of its first {i + 1} dimensions overflows 64 bits", file)
    if type(offsets) is not list or len(offsets) != 2:
        raise InvalidEntry(f"tensor {name!r}: data_offsets is not two ordered non-negative integers", file)
    begin, end = offsets
    if type(begin) is not int or type(end) is not int or not 0 <= begin <= end <= _U64_MAX:
        raise InvalidEntry(f"tensor {name!r}: data_offsets is not two ordered non-negative integers", file)
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        raise UnknownDtype(
            f"tensor {name!r}: unknown dtype {dtype!r}", file,
            hint="known dtypes: " + ", ".join(DTYPE_BITS),
        )
    total_bits = numel * bits
    if total_bits > _U64_MAX:
        raise ShapeOverflow(f"tensor {name!r}: its size in bits overflows 64 bits", file)
    if total_bits % 8 or total_bits // 8 != end - begin:
        raise SpanMismatch(
            f"tensor {name!r}: data_offsets span {end - begin:,} bytes but {dtype} {_shape_text(shape)} "
            f"needs {total_bits // 8:,}" + (f" and {total_bits % 8} bits" if total_bits % 8 else ""),
            file,
        )
    return TensorInfo(name, dtype, tuple(shape), begin, end, file, numel)


def _shape_text(shape: list[int]) -> str:
    text = str(shape)
    return text if len(text) < 80 else text[:77] + "...]"


def _check_spans(tensors: list[TensorInfo], file: str) -> int:
    """Spans must tile the data from byte 0 with no hole and no overlap (the reference's rule).
    Returns the length of the data they cover."""
    if not tensors:
        return 0
    # the writer lays the entries out in the data's order: then each begins where the one before ends
    # (compared as two columns, in C) and no sort is needed
    begins: list[int] = list(map(_BEGIN, tensors))
    ends: list[int] = list(map(_END, tensors))
    if begins[0] == 0 and begins[1:] == ends[:-1]:
        return ends[-1]
    del begins, ends
    position = 0
    previous: TensorInfo | None = None
    for t in sorted(tensors, key=_SPAN):
        if t.begin != position:
            after = f"tensor {previous.name!r}" if previous else "the start of the data"
            if t.begin < position:
                raise OverlappingSpans(
                    f"tensor {t.name!r} starts at byte {t.begin:,}, inside {after} (ends at {position:,})", file)
            raise SpanGap(
                f"tensor {t.name!r} starts at byte {t.begin:,}, leaving a {t.begin - position:,}-byte "
                f"hole after {after}", file)
        position = t.end
        previous = t
    return position


_DTYPE_NAMES: Final = {name: name for name in DTYPE_BITS}  # the table's own strings, shared
_SPAN = operator.itemgetter(3, 4)  # (begin, end) of a TensorInfo
_BEGIN = operator.itemgetter(3)
_END = operator.itemgetter(4)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."


# --- writing ------------------------------------------------------------------------------


def encode_header(
    entries: Iterable[tuple[str, str, tuple[int, ...]]],
    metadata: Mapping[str, str] | None = None,
) -> tuple[bytes, int]:
    """Lay out tensors as the reference writer does and return (prefix + JSON, data length).

    Order: dtype from widest to narrowest, then name (``safetensors`` ``prepare``); the JSON is
    compact, ``__metadata__`` first, padded with spaces to a multiple of 8 bytes.
    Used to write header snapshots and test checkpoints without allocating any tensor data.
    """
    items = sorted(entries, key=lambda e: (-_ORDER[e[1]], e[0]))
    body: dict[str, Any] = {}
    if metadata:
        body[METADATA_KEY] = dict(metadata)
    offset = 0
    for name, dtype, shape in items:
        size = math.prod(shape) * DTYPE_BITS[dtype] // 8
        body[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(body, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, offset


# The reference sorts by the ``Dtype`` enum's declaration order, descending: the order of DTYPE_BITS.
_ORDER: Final[dict[str, int]] = {name: i for i, name in enumerate(DTYPE_BITS)}
