"""The header parser: every rule of the format, hostile bytes, and the reference writer's layout."""

from __future__ import annotations

import contextlib
import json
import struct

import numpy as np
import pytest
from helpers import raw_header
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector import errors
from inspector.formats.dtypes import DTYPE_BITS
from inspector.formats.safetensors import MAX_HEADER_BYTES, encode_header, parse_header


def entry(dtype: str, shape: list[int], begin: int, end: int) -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def test_parses_records_with_offsets_and_metadata() -> None:
    blob = raw_header({"__metadata__": {"format": "pt"},
                       "b": entry("F16", [2, 3], 16, 28), "a": entry("F32", [4], 0, 16)})
    h = parse_header(blob + b"\0" * 28, file="x.safetensors", file_size=len(blob) + 28)
    assert [(t.name, t.dtype, t.shape, t.begin, t.end, t.numel, t.nbytes) for t in h.tensors] == [
        ("b", "F16", (2, 3), 16, 28, 6, 12), ("a", "F32", (4,), 0, 16, 4, 16)]
    assert h.metadata == {"format": "pt"}
    assert h.data_start == len(blob)
    assert h.expected_file_size == len(blob) + 28


def test_the_22_dtypes_sized_in_bits() -> None:
    assert len(DTYPE_BITS) == 22
    assert DTYPE_BITS["F4"] == 4 and DTYPE_BITS["F6_E2M3"] == 6 and DTYPE_BITS["F8_E8M0"] == 8
    # F4: 6 elements are 3 bytes; F6: 4 elements are 3 bytes
    h = parse_header(raw_header({"a": entry("F4", [6], 0, 3), "b": entry("F6_E3M2", [4], 3, 6)}))
    assert [t.nbytes for t in h.tensors] == [3, 3]


def test_sub_byte_tensor_must_fill_whole_bytes() -> None:
    with pytest.raises(errors.SpanMismatch):
        parse_header(raw_header({"a": entry("F4", [3], 0, 2)}))


def test_zero_size_tensors_are_fine() -> None:
    h = parse_header(raw_header({"a": entry("F32", [0], 0, 0), "b": entry("F32", [1], 0, 4)}))
    assert {t.name: t.numel for t in h.tensors} == {"a": 0, "b": 1}


@pytest.mark.parametrize(
    ("blob", "error"),
    [
        (b"", errors.HeaderTooSmall),
        (b"\x01\x02\x03", errors.HeaderTooSmall),
        (struct.pack("<Q", MAX_HEADER_BYTES + 1), errors.HeaderTooLarge),
        (struct.pack("<Q", 2**63), errors.HeaderTooLarge),
        (struct.pack("<Q", 100) + b"{}", errors.HeaderBeyondFile),
        (raw_header(b"not json at all"), errors.HeaderNotJSON),
        (raw_header(b"\xff\xfe{}"), errors.HeaderNotJSON),
        (raw_header(b"[" * 100000 + b"]" * 100000), errors.HeaderNotJSON),
        (raw_header([1, 2, 3]), errors.HeaderNotObject),
        (raw_header("a string"), errors.HeaderNotObject),
        (raw_header({"a": [1, 2]}), errors.InvalidEntry),
        (raw_header({"a": {"shape": [1], "data_offsets": [0, 4]}}), errors.InvalidEntry),
        (raw_header({"a": entry("F32", [-1], 0, 4)}), errors.InvalidEntry),
        (raw_header({"a": entry("F32", [1.0], 0, 4)}), errors.InvalidEntry),
        (raw_header({"a": entry("F32", [True], 0, 4)}), errors.InvalidEntry),
        (raw_header({"a": entry("F32", [2**64], 0, 0)}), errors.InvalidEntry),
        (raw_header({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}), errors.InvalidEntry),
        (raw_header({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}), errors.InvalidEntry),
        (raw_header({"a": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}}), errors.InvalidEntry),
        (raw_header({"a": entry("Q4_K", [1], 0, 4)}), errors.UnknownDtype),
        (raw_header({"a": entry("F32", [2], 0, 4)}), errors.SpanMismatch),
        (raw_header({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 2, 6)}), errors.OverlappingSpans),
        (raw_header({"a": entry("F32", [1], 4, 8)}), errors.SpanGap),
        (raw_header({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)}), errors.SpanGap),
        (raw_header({"__metadata__": {"a": 1}}), errors.InvalidMetadata),
        (raw_header({"__metadata__": [1]}), errors.InvalidMetadata),
        (raw_header(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                    b'"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'), errors.DuplicateTensor),
        (raw_header(b'{"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}}'),
         errors.DuplicateTensor),
    ],
)
def test_each_rule_has_its_own_error(blob: bytes, error: type[errors.HeaderError]) -> None:
    with pytest.raises(error) as info:
        parse_header(blob, file="f.safetensors")
    assert info.value.exit_code == errors.EXIT_INVALID
    assert info.value.message.startswith("f.safetensors: ")


def test_checks_against_the_file_size() -> None:
    blob = raw_header({"a": entry("F32", [4], 0, 16)})
    parse_header(blob, file_size=len(blob) + 16)
    with pytest.raises(errors.DataBeyondFile, match="6 bytes missing"):
        parse_header(blob, file_size=len(blob) + 10)
    with pytest.raises(errors.HeaderBeyondFile):
        parse_header(blob, file_size=len(blob) - 1)


def test_names_are_kept_verbatim_for_the_renderer_to_sanitise() -> None:
    name = "evil\x1b[31m\u202ename"
    h = parse_header(raw_header({name: entry("U8", [1], 0, 1)}))
    assert h.tensors[0].name == name


def test_metadata_containing_key_words_is_not_mistaken_for_duplicates() -> None:
    h = parse_header(raw_header({"__metadata__": {"note": '"dtype" "shape" "data_offsets"'},
                                 "a": entry("U8", [1], 0, 1)}))
    assert h.metadata["note"].startswith('"dtype"')


# --- the writer matches the reference byte for byte --------------------------------------------

NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "U8": np.uint8,
      "I8": np.int8, "F64": np.float64, "BOOL": np.bool_, "I16": np.int16, "U16": np.uint16,
      "U32": np.uint32, "U64": np.uint64}


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(
    st.text(alphabet="abcdefghij._0123456789", min_size=1, max_size=12).filter(lambda s: s != "__metadata__"),
    st.tuples(st.sampled_from(sorted(NP)), st.lists(st.integers(0, 4), max_size=3)),
    min_size=1, max_size=8,
))
def test_encode_header_is_byte_identical_to_the_safetensors_library(tensors: dict) -> None:
    from safetensors.numpy import save

    arrays = {k: np.zeros(tuple(shape), dtype=NP[dt]) for k, (dt, shape) in tensors.items()}
    reference = save(arrays, metadata={"format": "pt"})
    ours, data = encode_header([(k, dt, tuple(shape)) for k, (dt, shape) in tensors.items()], {"format": "pt"})
    assert reference[: len(ours)] == ours
    assert len(reference) == len(ours) + data
    parsed = parse_header(reference, file_size=len(reference))
    assert {t.name: (t.dtype, t.shape) for t in parsed.tensors} == {
        k: (dt, tuple(shape)) for k, (dt, shape) in tensors.items()}


# --- fuzzing: the parser only ever returns records or raises our own error ---------------------

def _check_total(blob: bytes, size: int | None) -> None:
    try:
        h = parse_header(blob, file_size=size)
    except errors.HeaderError:
        return
    for t in h.tensors:
        assert t.numel * DTYPE_BITS[t.dtype] == 8 * t.nbytes
        assert 0 <= t.begin <= t.end


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=256), st.one_of(st.none(), st.integers(0, 1000)))
def test_random_bytes_never_crash(blob: bytes, size: int | None) -> None:
    _check_total(blob, size)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
              st.text(max_size=8)),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_random_json_objects_never_crash(obj: dict) -> None:
    _check_total(raw_header(obj), None)


VALID = raw_header({"__metadata__": {"format": "pt"}, "w": entry("F16", [2, 2], 0, 8),
                    "b": entry("F32", [2], 8, 16)}) + b"\0" * 16


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=6),
       st.integers(0, len(VALID)))
def test_mutated_valid_files_never_crash(flips: list[tuple[int, int]], cut: int) -> None:
    blob = bytearray(VALID)
    for at, value in flips:
        blob[at] = value
    _check_total(bytes(blob[:cut] if cut else blob), len(VALID))


def test_entry_order_does_not_matter_for_span_checks() -> None:
    obj = {"z": entry("U8", [1], 2, 3), "y": entry("U8", [2], 0, 2)}
    h = parse_header(raw_header(obj))
    assert sorted(t.name for t in h.tensors) == ["y", "z"]
    assert json.loads(raw_header(obj)[8:])["z"]["data_offsets"] == [2, 3]


def test_the_writer_order_of_every_dtype_matches_the_safetensors_library() -> None:
    """Every dtype the library's own writer takes (all but the two F6 types, which it cannot
    write), in one header: our layout is byte-identical to ``safetensors.serialize``'s."""
    import ctypes

    from safetensors import TensorSpec, serialize

    from inspector.formats.dtypes import DTYPE_BITS

    library_names = {
        "BOOL": "bool", "U8": "uint8", "I8": "int8", "F8_E5M2": "float8_e5m2", "F8_E4M3": "float8_e4m3fn",
        "F8_E8M0": "float8_e8m0fnu", "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz",
        "I16": "int16", "U16": "uint16", "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32",
        "F32": "float32", "C64": "complex64", "F64": "float64", "I64": "int64", "U64": "uint64",
        "F4": "float4_e2m1fn_x2"}
    assert set(DTYPE_BITS) - set(library_names) == {"F6_E2M3", "F6_E3M2"}
    buffer = ctypes.create_string_buffer(4096)
    specs, ours = {}, []
    for i, (dtype, library) in enumerate(sorted(library_names.items())):
        name = f"t{(i * 7) % 20:02d}"  # names in another order than the dtypes
        logical = (3, 8)
        storage = [3, 4] if dtype == "F4" else list(logical)  # two F4 values a byte: the library doubles
        specs[name] = TensorSpec(dtype=library, shape=storage, data_ptr=ctypes.addressof(buffer),
                                 data_len=3 * 8 * DTYPE_BITS[dtype] // 8)
        ours.append((name, dtype, logical))
    reference = bytes(serialize(specs, None))
    blob, data = encode_header(ours)
    assert reference[: len(blob)] == blob
    assert len(reference) == len(blob) + data


# --- the fast path for the reference writer's layout ------------------------------------------------


def _outcome(blob: bytes, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    from inspector.formats import safetensors as header

    with monkeypatch.context() as m:
        if not fast:
            m.setattr(header, "_decode_canonical", lambda text, file: None)
        try:
            h = parse_header(blob, file_size=len(blob))
        except errors.HeaderError as exc:
            return exc.rule, exc.message
        return [tuple(t) for t in h.tensors], dict(h.metadata), h.data_length


@pytest.mark.parametrize("chunk", [None, 1, 90])
def test_the_fast_path_answers_as_the_general_path_on_fuzzed_headers(
        chunk: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzzer of the reference comparison (valid headers in the writer's layout, then one
    mutation each: flipped bytes, duplicates, escapes, bad numbers …): the same records or the
    same error, whichever path reads the header; also with the fast path's slices made tiny, so
    that headers are cut into many (the default slice is a megabyte)."""
    import random

    from test_reference_fuzz import SEED, _case

    from inspector.formats import safetensors as header

    if chunk is not None:
        monkeypatch.setattr(header, "_CHUNK", chunk)
    rng = random.Random(SEED + 1)
    fast_taken = 0
    for _ in range(3000 if chunk is None else 1000):
        blob = _case(rng)
        n = struct.unpack_from("<Q", blob)[0]
        if n < len(blob) and blob[8:8 + n].strip().startswith(b"{"):
            with contextlib.suppress(UnicodeDecodeError, errors.HeaderError):
                fast_taken += header._decode_canonical(blob[8:8 + n].decode(), "x") is not None
        assert _outcome(blob, fast=True, monkeypatch=monkeypatch) == _outcome(
            blob, fast=False, monkeypatch=monkeypatch), blob[:300]
    assert fast_taken > (300 if chunk is None else 100), fast_taken  # taken often enough to be tested


@pytest.mark.parametrize("text", [
    '{"__metadata__":{"a":"b"},}',  # a comma after the metadata and nothing else
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},}',  # a trailing comma
    '{"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}}',  # a leading zero
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"x":"y"}}',  # metadata last: fine
    '{"__metadata__":{"x":"\\ud800"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',  # a lone surrogate
    '{"__metadata__":{"x":NaN}}',
    '{"__metadata__":{"x":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},,}',  # two errors: JSON first
    '{"a":{"dtype":"F32","shape":[100000000000000000000],"data_offsets":[0,4]}}',  # 21 digits
    '{"a":{"dtype":"F32","shape":[0,18446744073709551615,18446744073709551615],"data_offsets":[0,0]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[00,4]}}',  # a leading zero in an offset
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,04]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,+4]}}',
    '{"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}',
    '{"a"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',  # a quote inside a name
    '{"a\\u0001":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',  # an escaped control character
    '{"a\x01":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',  # a raw one
    '{"a\u00a0b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',  # not isprintable, yet allowed
    '{"a]},":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
    '{"__metadata__":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
    '{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}',  # 12 bits: not whole bytes
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} ',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[],"data_offsets":[4,8]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}',
])
def test_near_canonical_headers_get_the_general_paths_answer(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = struct.pack("<Q", len(text.encode())) + text.encode() + b"\0" * 8
    blob = blob[: 8 + len(text.encode()) + 8]
    assert _outcome(blob, fast=True, monkeypatch=monkeypatch) == _outcome(blob, fast=False, monkeypatch=monkeypatch)


@pytest.mark.parametrize("text", [
    '{"a\u00a0b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',  # str.isprintable says no; JSON allows it
    '{"":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}',
    '{"__metadata__":{"format":"pt"},"a]}":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
    '"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[4,16]}}',
])
@pytest.mark.parametrize("chunk", [1, 1 << 20])
def test_the_fast_path_takes_the_writers_layout(text: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers as the writer lays them out are read by the fast path (json.loads is the reference
    for what they hold), whatever the slice size."""
    import json

    from inspector.formats import safetensors as header

    monkeypatch.setattr(header, "_CHUNK", chunk)
    got = header._decode_canonical(text, "x")
    assert got is not None
    tensors, metadata = got
    expected = json.loads(text)
    assert metadata == expected.pop("__metadata__", {})
    assert [(t.name, t.dtype, list(t.shape), [t.begin, t.end]) for t in tensors] == [
        (k, v["dtype"], v["shape"], v["data_offsets"]) for k, v in expected.items()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.text(alphabet="ab.0123", min_size=0, max_size=4), max_size=40), max_size=6),
       st.booleans())
def test_the_distinct_names_check_answers_as_a_set(runs: list[list[str]], ascending: bool) -> None:
    """``safetensors.distinct`` (issue 39: a writer's header is a few ascending runs of names, merged by
    sorting instead of hashed) against its plain twin, ``len(set(names)) == len(names)``: runs sorted or
    as drawn, with and without repeats, across the 64-run line where it turns to the set."""
    from inspector.formats.safetensors import distinct

    names = [n for run in runs for n in (sorted(run) if ascending else run)]
    assert distinct(names) == (len(set(names)) == len(names))
    many = [n for i in range(70) for n in (f"b{i}", f"a{i}")]  # 70 runs of two: past the line
    assert distinct(many) and not distinct([*many, "a3"])
