"""Adding a training precision is one module: a ``precisions.Precision`` registered with ``precisions.register``,
nothing else (issue 49). The toy below holds a weight in one byte with a float32 master copy, in a temporary module
the test writes; it is seen in the library's figures, every output format of ``train``, the generated JSON Schema
and ``--help``."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import help_with_strategy, toy_strategy, train_schema_takes

from inspector.analysis.training import precisions

TOY_MODULE = '''
from inspector.analysis.training.precisions import Precision

PRECISION = Precision("toy-fp8", "one byte a weight, an fp32 master copy", weight_bytes=1, activation_bytes=2,
                      master=True)
'''

#: meta-llama/Meta-Llama-3-8B: the parameters its model.safetensors.index.json's tensors hold (published 8.03 B)
LLAMA3_PARAMETERS = 8_030_261_248


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toyprecision", TOY_MODULE, precisions, "PRECISION") as folder:
        yield folder


def test_a_precision_registered_from_outside_shows_everywhere(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    t = inspector.train("llama3-8b", method="full", precision="toy-fp8").train
    assert t.memory.weights.bytes == LLAMA3_PARAMETERS * 1  # one byte a weight, the toy's rule
    assert t.memory.master_weights.bytes == LLAMA3_PARAMETERS * 4  # its master copy: float32
    assert "toy-fp8" in t.memory.weights.formula

    for fmt in ("table", "markdown", "html", "json"):
        out = tmp_path / f"train.{fmt}"
        r = cli("train", "llama3-8b", "--method", "full", "--precision", "toy-fp8", "--format", fmt,
                *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        assert "toy-fp8" in (out.read_text() if fmt == "html" else r.out), fmt

    doc = cli("train", "llama3-8b", "--method", "full", "--precision", "toy-fp8", "--json").json()
    assert doc["precision"] == "toy-fp8" and doc["weights"] == LLAMA3_PARAMETERS
    train_schema_takes(doc, "precision", "toy-fp8")

    shown = help_with_strategy(toy, "toyprecision", "from inspector.analysis.training import precisions; "
                               "precisions.register(toyprecision.PRECISION)", "train", tmp_path)
    assert "toy-fp8 (one byte a weight, an fp32 master copy)" in " ".join(shown.split()), shown


def test_the_built_in_precisions_stay_and_the_toy_is_gone_after(cli) -> None:
    precisions.unregister("bf16-mixed")
    assert "bf16-mixed" in precisions.PRECISIONS
    r = cli("train", "llama3-8b", "--precision", "toy-fp8")
    assert r.code == 2 and "bf16-mixed, fp16-mixed, bf16, fp32, amp-bf16, amp-fp16" in r.err, r.err
