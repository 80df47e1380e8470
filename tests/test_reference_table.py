"""The reference table itself (fixtures/reference.json): every figure says what it counts and where it
comes from; a figure read from a real file equals that file; a derived figure equals its arithmetic."""

from __future__ import annotations

import ast
import json
import operator

from helpers import FIXTURES

TABLE = json.loads((FIXTURES / "reference.json").read_text())["figures"]
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _integer_arithmetic(text: str) -> int:
    """Evaluate + − × // over integer literals and parentheses: nothing else is allowed."""
    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return int(_OPS[type(node.op)](ev(node.left), ev(node.right)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(f"not integer arithmetic: {ast.dump(node)}")

    return ev(ast.parse(text, mode="eval"))


def test_every_figure_says_what_it_counts_and_its_source() -> None:
    ids = [f["id"] for f in TABLE]
    assert len(ids) == len(set(ids))
    for f in TABLE:
        assert f["counts"] and f["source"], f["id"]


def test_figures_from_real_files_equal_those_files() -> None:
    checked = 0
    for f in TABLE:
        if "file" not in f:
            continue
        path = FIXTURES / f["file"]
        assert (path.parent / "SOURCE.txt").is_file(), f"{f['file']} has no SOURCE.txt beside it"
        value = json.loads(path.read_text())
        for key in f["path"]:
            value = value[key]
        assert value == f["value"], f["id"]
        checked += 1
    assert checked >= 12


def test_derived_figures_equal_their_arithmetic() -> None:
    derived = [f for f in TABLE if "arithmetic" in f]
    assert len(derived) >= 15
    for f in derived:
        assert _integer_arithmetic(f["arithmetic"]) == f["value"], f["id"]


def test_real_indexes_agree_with_their_own_shards_and_sizes() -> None:
    """Each copied index names the shards its SOURCE.txt repo has, and its total_size is positive."""
    for index in sorted(FIXTURES.glob("realdata/*/model.safetensors.index.json")):
        doc = json.loads(index.read_text())
        assert doc["metadata"]["total_size"] > 0 and doc["weight_map"], index
        assert "SOURCE.txt" in {p.name for p in index.parent.iterdir()}
