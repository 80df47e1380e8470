"""The standing fuzz stage's small seeded run (scripts/fuzz.py; the long run's figures are in the README):
every input kind, structured mutations, through every command, under a time and a memory cap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_small_seeded_fuzz_run_has_no_internal_error_and_stays_under_the_caps(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz.py"), "--cases", "6", "--seed", "7",
                           "--time-cap", "10", "--memory-cap", "3072"], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.stdout.rstrip().endswith("0 failed")
    kinds = [line.split()[0] for line in done.stdout.splitlines()[2:-1] if not line.startswith("FAIL")]
    assert kinds == ["safetensors", "gguf", "torch-legacy", "torch-zip", "config", "index", "adapter", "ref",
                     "snapshot", "pipeline", "modules", "gguf-set", "pack", "values", "card", "tokenizer", "listing",
                     "answer"]


def test_the_fuzz_stage_reports_an_internal_error(tmp_path: Path) -> None:
    """A planted crash (a reader that raises a plain exception) is reported as exit 70, and fails the run."""
    plant = tmp_path / "sitecustomize.py"
    plant.write_text("import inspector.formats.registry as r\n"
                     "def boom(*a, **k):\n    raise ZeroDivisionError('planted')\n"
                     "r.Safetensors.parse = boom\n")
    import os

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz.py"), "--cases", "1", "--kinds", "config",
                           "--commands", "show"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
    assert done.returncode == 1
    assert "exit 70" in done.stdout and "planted" in done.stdout
