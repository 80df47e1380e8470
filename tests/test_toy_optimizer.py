"""Adding an optimizer is one module: an ``optimizers.Optimizer`` registered with ``optimizers.register``, nothing
else (issue 49). The toy below keeps one float32 buffer a parameter, in a temporary module the test writes; it is
seen in the library's figures, every output format of ``train``, the generated JSON Schema and ``--help``."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generated_schemas, help_with_strategy, toy_strategy
from jsonschema import Draft202012Validator

from inspector.analysis.training import optimizers

ROOT = Path(__file__).resolve().parent.parent

TOY_MODULE = '''
from inspector.analysis.training.optimizers import Optimizer


def _one_fp32_buffer(shape, numel, param_bytes):
    return 4 * numel


OPTIMIZER = Optimizer("toy-opt", "one float32 buffer a parameter", "toy/optim.py ToyOpt", _one_fp32_buffer)
'''


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toyoptimizer", TOY_MODULE, optimizers, "OPTIMIZER") as folder:
        yield folder


def test_an_optimizer_registered_from_outside_shows_everywhere(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    t = inspector.train("llama3-8b", method="full", optimizer="toy-opt", precision="bf16").train
    assert t.memory.optimizer_states.bytes == 4 * 8_030_261_248  # Llama 3 8B's parameters (its index), 4 B each

    for fmt in ("table", "markdown", "html", "json"):
        out = tmp_path / f"train.{fmt}"
        args = ["train", "llama3-8b", "--method", "full", "--optimizer", "toy-opt", "--explain", "--format", fmt]
        r = cli(*(a for a in args if not (fmt != "table" and a == "--explain")),
                *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        assert "toy-opt" in (out.read_text() if fmt == "html" else r.out), fmt

    Draft202012Validator(generated_schemas()["train"]).validate(
        cli("train", "llama3-8b", "--optimizer", "toy-opt", "--json").json())

    shown = help_with_strategy(toy, "toyoptimizer", "from inspector.analysis.training import optimizers; "
                               "optimizers.register(toyoptimizer.OPTIMIZER)", "train", tmp_path)
    assert "toy-opt" in shown, shown
