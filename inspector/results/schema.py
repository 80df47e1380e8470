"""A document type is its JSON Schema: each ``--json`` document is a ``TypedDict`` (mypy holds every
builder and every reader of it to its keys and types), and ``schema_of`` writes the JSON Schema
(2020-12) from that type — every key required, no other key, ``null`` only where the type says so.

The words a field may take come from the type where they are a ``Literal`` and, where a registry
lists them (engines, optimizers, repo kinds, ...), from ``Choices``: the registry is read when the
schema is written, so a strategy registered from outside is in the schema without a word changed here.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

#: every schema's ``$id`` starts here
BASE = "https://github.com/hf-inspector/inspector/schemas/"

_SCALARS: dict[object, str] = {int: "integer", float: "number", str: "string", bool: "boolean"}


@dataclass(frozen=True, slots=True)
class Choices:
    """A field whose words are a registry's names (``None`` among them where the field may be null),
    read when the schema is written."""

    names: Callable[[], Sequence[str | None]]


def schema_of(tp: object) -> dict[str, object]:
    """The JSON Schema of one annotation."""
    origin = get_origin(tp)
    if origin is Annotated:
        choices = next(m for m in tp.__metadata__ if isinstance(m, Choices))  # type: ignore[attr-defined]
        return {"enum": list(choices.names())}
    if is_typeddict(tp):
        hints = get_type_hints(tp, include_extras=True)
        return {"type": "object", "properties": {k: schema_of(v) for k, v in hints.items()},
                "required": list(hints), "additionalProperties": False}
    if origin is Literal:
        words = list(get_args(tp))
        return {"const": words[0]} if len(words) == 1 else {"enum": words}
    if origin in (Union, types.UnionType):
        return _union(get_args(tp))
    if origin is list:
        return {"type": "array", "items": schema_of(get_args(tp)[0])}
    if origin is dict:
        value = get_args(tp)[1]
        # a value of any JSON type (a quantization block, a generation config, as the model gives them)
        return {"type": "object"} if value is object else {"type": "object", "additionalProperties": schema_of(value)}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"{tp!r}: no JSON Schema for this annotation")


def _union(members: tuple[object, ...]) -> dict[str, object]:
    rest = [m for m in members if m is not type(None)]
    null = len(rest) < len(members)
    if all(m in _SCALARS for m in rest):  # int | str | None: one list of types
        names = [_SCALARS[m] for m in rest] + (["null"] if null else [])
        return {"type": names[0] if len(names) == 1 else names}
    if len(rest) != 1:
        raise TypeError(f"{members!r}: a union of objects has no one schema here")
    inner = schema_of(rest[0])
    if not null:
        return inner
    if set(inner) == {"type"} and isinstance(inner["type"], str):  # dict[str, object] | None
        return {"type": [inner["type"], "null"]}
    words = inner.get("enum")
    if set(inner) == {"enum"} and isinstance(words, list):  # Literal["a", "b"] | None: null is one more word
        return {"enum": [*words, None]}
    return {"anyOf": [inner, {"type": "null"}]}


def document_schema(name: str, title: str, tp: object) -> dict[str, object]:
    """A whole ``--json`` document's schema: its ``$id`` and title, then the type's object."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE + f"{name}.schema.json",
            "title": title, **schema_of(tp)}
