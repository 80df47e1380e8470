"""Adding an optimizer is one module: an ``optimizers.Optimizer`` registered with ``optimizers.register``, nothing
else (issue 49). The toy below keeps one float32 buffer a parameter, in a temporary module the test writes; it is
seen in the library's figures, every output format of ``train``, the generated JSON Schema and ``--help``."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from inspector.analysis import optimizers

ROOT = Path(__file__).resolve().parent.parent

TOY_MODULE = '''
from inspector.analysis.optimizers import Optimizer


def _one_fp32_buffer(shape, numel, param_bytes):
    return 4 * numel


OPTIMIZER = Optimizer("toy-opt", "one float32 buffer a parameter", "toy/optim.py ToyOpt", _one_fp32_buffer)
'''


@pytest.fixture
def toy(tmp_path: Path):
    (tmp_path / "toymod").mkdir()
    (tmp_path / "toymod" / "toyoptimizer.py").write_text(TOY_MODULE)
    sys.path.insert(0, str(tmp_path / "toymod"))
    try:
        optimizers.register(importlib.import_module("toyoptimizer").OPTIMIZER)
        yield tmp_path / "toymod"
    finally:
        optimizers.unregister("toy-opt")
        sys.path.remove(str(tmp_path / "toymod"))
        sys.modules.pop("toyoptimizer", None)


def test_an_optimizer_registered_from_outside_shows_everywhere(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    t = inspector.train("llama3-8b", method="full", optimizer="toy-opt", precision="bf16").train
    assert t.optimizer_states.bytes == 4 * 8_030_261_248  # Llama 3 8B's parameters (its index), 4 B each

    for fmt in ("table", "markdown", "html", "json"):
        out = tmp_path / f"train.{fmt}"
        args = ["train", "llama3-8b", "--method", "full", "--optimizer", "toy-opt", "--explain", "--format", fmt]
        r = cli(*(a for a in args if not (fmt != "table" and a == "--explain")),
                *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        assert "toy-opt" in (out.read_text() if fmt == "html" else r.out), fmt

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        make_schemas = importlib.reload(importlib.import_module("make_schemas"))
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    Draft202012Validator(make_schemas.TRAIN).validate(
        cli("train", "llama3-8b", "--optimizer", "toy-opt", "--json").json())

    code = (f"import sys; sys.path.insert(0, {str(toy)!r}); import toyoptimizer; "
            "from inspector.analysis import optimizers; optimizers.register(toyoptimizer.OPTIMIZER); "
            "from inspector.cli.commands import main; main(['train', '--help'])")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={"COLUMNS": "200", "PATH": "", "HOME": str(tmp_path)})
    assert "toy-opt" in shown.stdout, shown.stdout + shown.stderr
