"""safeio.parse_json (msgspec, compiled) held equal to parse_json_plain (the standard library: the
rule itself) on every document generated here: the same value, or the same refusal word for word."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import safeio
from inspector.errors import InvalidCheckpointError
from inspector.safeio import parse_json, parse_json_plain


@pytest.fixture(autouse=True)
def _every_document_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """msgspec takes documents of COMPILED_JSON_BYTES and more: here every size, so that it is the one tested."""
    monkeypatch.setattr(safeio, "COMPILED_JSON_BYTES", 0)

_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=30)


def outcome(parse, raw, **kw):  # type: ignore[no-untyped-def]
    try:
        return "value", repr(parse(raw, "doc", **kw))  # repr: -0.0 and 0, 1 and 1.0, True and 1 told apart
    except InvalidCheckpointError as exc:
        return "refused", str(exc)


def same(raw: bytes | str, **kw: int) -> None:
    assert outcome(parse_json, raw, **kw) == outcome(parse_json_plain, raw, **kw)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(VALUES, st.booleans(), st.booleans())
def test_documents_decode_alike(value: object, ascii_only: bool, as_bytes: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    same(text.encode() if as_bytes else text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(VALUES, st.data())
def test_damaged_documents_decode_or_refuse_alike(value: object, data: st.DataObject) -> None:
    """A byte of the document replaced, dropped or doubled: both accept it as the same value or
    both refuse it in the same words."""
    raw = bytearray(json.dumps(value).encode())
    at = data.draw(st.integers(0, max(0, len(raw) - 1)))
    how = data.draw(st.sampled_from(["replace", "drop", "double"]))
    if raw and how == "replace":
        raw[at] = data.draw(st.integers(0, 255))
    elif raw and how == "drop":
        del raw[at]
    elif raw:
        raw.insert(at, raw[at])
    same(bytes(raw))


def test_what_the_compiled_decoder_refuses_the_rule_decides() -> None:
    """Each of these msgspec refuses (measured: msgspec 0.22) and the standard library reads: a lone
    surrogate escape and a byte-order mark are accepted as the rule accepts them, out-of-range
    numbers and NaN refused in the rule's own words."""
    assert parse_json('{"a": "\\ud800"}', "doc") == {"a": "\ud800"}
    assert parse_json(b"\xef\xbb\xbf{}", "doc") == {}
    for raw in (b'{"a": 1e400}', b'{"a": NaN}', b'{"a": -Infinity}', b"[" * 70 + b"]" * 70, b'{"a": 1} x'):
        same(raw)
        assert outcome(parse_json, raw)[0] == "refused"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 80), st.integers(1, 80))
def test_depth_and_value_budgets_alike(depth: int, limit: int) -> None:
    raw = "[" * depth + "]" * depth
    same(raw, max_depth=limit)
    same(raw, max_depth=64, max_values=limit)


def test_large_documents_go_to_msgspec_and_small_ones_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """The size rule: a config-sized document never imports msgspec's decoder; a large one does."""
    calls: list[int] = []
    real = safeio._msgspec_decode
    monkeypatch.setattr(safeio, "_msgspec_decode", lambda raw: calls.append(len(raw)) or real(raw))
    monkeypatch.setattr(safeio, "COMPILED_JSON_BYTES", 1000)
    assert parse_json('{"a": 1}', "doc") == {"a": 1}
    big = json.dumps({"weight_map": {f"t{i}": "model.safetensors" for i in range(100)}})
    assert parse_json(big, "doc") == json.loads(big)
    assert calls == [len(big)]
