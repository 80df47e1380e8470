"""Every --json document validates against its JSON Schema (inspector/schemas/, written by
scripts/make_schemas.py); a document with a required field removed is rejected."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Literal, TypedDict

import pytest
from helpers import FIXTURES
from jsonschema import Draft202012Validator

from inspector.results.schema import Choices, schema_of

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "inspector" / "schemas"


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


CASES = [
    ("show", ["llama3-8b", "--json"]),
    ("show", ["deepseek-v3", "--json"]),
    ("show", ["gpt2", "--json", "--tensors", "--formula"]),
    # a model type with no closed formula: its family is null (the typed document showed the schema said string)
    ("show", ["deepseek-v3", "--json", "--formula"]),
    ("show", ["llama2-13b-gptq", "--json", "--tensors", "--collapse"]),
    ("show", [str(FIXTURES / "checkpoints" / "lpips-0.1.4" / "v0.1" / "alex.pth"), "--json"]),
    ("diff", ["diff", "llama2-7b", "llama3-8b", "--json"]),
    ("diff", ["diff", "mixtral-8x7b", "deepseek-v3", "--json"]),
    ("compare", ["compare", "llama3-8b", "gpt2", "deepseek-v3", "llama2-13b-gptq", "--json"]),
    ("estimate", ["estimate", "llama3-8b", "--json"]),
    ("estimate", ["estimate", "mixtral-8x7b", "--gpu", "80GiBx2", "--context", "32k", "--json"]),
    ("estimate", ["estimate", "llama2-13b-gptq", "--json"]),
    ("audit", ["audit", "llama3-8b", "--json"]),
    ("train", ["train", "llama3-8b", "--method", "qlora", "--gpu", "RTX4090", "--json"]),
    ("plan", ["plan", "mixtral-8x7b", "--gpu", "H100,L40S", "--json"]),
    ("train", ["train", "mixtral-8x7b", "--method", "full", "--gpu", "H100x8", "--zero", "3", "--offload", "optimizer",
               "--checkpointing", "--json"]),
    ("audit", ["audit", str(FIXTURES / "checkpoints" / "lpips-0.1.4" / "v0.0"), "--json"]),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[" ".join(a[:3]) for _, a in CASES])
def test_real_output_validates(cli, name: str, args: list[str]) -> None:
    result = cli(*args)
    assert result.code in (0, 1), result.err
    errors = sorted(validator(name).iter_errors(result.json()), key=str)
    assert errors == [], errors[0].message if errors else ""


def test_an_adapter_diff_validates(cli, tmp_path: Path) -> None:
    from helpers import save_real

    base = tmp_path / "base"
    save_real(base / "model.safetensors", {"model.layers.0.self_attn.q_proj.weight": ("F16", (16, 16))})
    adapter = tmp_path / "adapter"
    save_real(adapter / "adapter_model.safetensors", {
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": ("F16", (4, 16)),
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": ("F16", (16, 4))})
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj"]}))
    result = cli("diff", str(base), str(adapter), "--json")
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["kind"] == "adapter"
    assert list(validator("adapter-diff").iter_errors(doc)) == []


@pytest.mark.parametrize("name", ["show", "diff", "compare", "estimate", "audit", "train", "plan"])
def test_a_missing_required_field_is_rejected(cli, name: str) -> None:
    args = next(a for n, a in CASES if n == name)
    doc = cli(*args).json()
    check = validator(name)
    assert check.is_valid(doc)
    for key in doc:  # every top-level key is required
        broken = copy.deepcopy(doc)
        del broken[key]
        assert not check.is_valid(broken), key
    broken = copy.deepcopy(doc)
    side = broken["a"]["model"] if name == "diff" else (broken["models"][0]["model"] if name == "compare"
                                                         else broken["model"])
    del side["revision"]  # a nested required field
    assert not check.is_valid(broken)
    broken = copy.deepcopy(doc)
    broken["extra"] = 1  # no key the schema does not name
    assert not check.is_valid(broken)


def test_the_schemas_are_what_the_script_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_schemas.py"), "--out", str(tmp_path)], check=True)
    written = {p.name: p.read_text() for p in tmp_path.glob("*.json")}
    committed = {p.name: p.read_text() for p in SCHEMAS.glob("*.json")}
    assert written == committed


#: a registry's words, read when the schema is written (test_a_document_type_is_its_schema appends one)
_WORDS = ["a"]


class _Part(TypedDict):
    n: int


class _Toy(TypedDict):
    count: int
    share: float | None
    name: str
    flag: bool | None
    kind: Literal["x", "y"]
    version: Literal[2]
    maybe: Literal["p", "q"] | None
    cell: int | str | None
    sizes: list[int] | None
    by_name: dict[str, int]
    raw: dict[str, object] | None
    part: _Part | None
    parts: list[_Part]
    chosen: Annotated[str, Choices(lambda: _WORDS)]


def test_a_document_type_is_its_schema() -> None:
    """results/schema.py writes a TypedDict as JSON Schema 2020-12 says an object of exactly these keys is
    written (``required`` every key, ``additionalProperties`` false), each annotation as its JSON type; a
    registry's words are read when the schema is written, not when the type is declared."""
    _WORDS.append("b")  # registered after the type was declared
    part = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
            "additionalProperties": False}
    assert schema_of(_Toy) == {"type": "object", "properties": {
        "count": {"type": "integer"}, "share": {"type": ["number", "null"]}, "name": {"type": "string"},
        "flag": {"type": ["boolean", "null"]}, "kind": {"enum": ["x", "y"]}, "version": {"const": 2},
        "maybe": {"enum": ["p", "q", None]}, "cell": {"type": ["integer", "string", "null"]},
        "sizes": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        "by_name": {"type": "object", "additionalProperties": {"type": "integer"}},
        "raw": {"type": ["object", "null"]}, "part": {"anyOf": [part, {"type": "null"}]},
        "parts": {"type": "array", "items": part}, "chosen": {"enum": ["a", "b"]}},
        "required": ["count", "share", "name", "flag", "kind", "version", "maybe", "cell", "sizes", "by_name", "raw",
                     "part", "parts", "chosen"],
        "additionalProperties": False}
    with pytest.raises(TypeError):
        schema_of(set[int])  # no JSON shape: refused, not guessed
