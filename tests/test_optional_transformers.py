"""Issue 52's lighter install: transformers is an extra (``hf-inspector[transformers]``; 134 MB of the 257 MB
install, measured with importlib.metadata over the installed files). Without it every bundled family reads as
before (the config table), a model type outside the table is read from its raw JSON with a note naming
the extra, and ``audit --modeling`` says what to install. "Without it" is a child process in which
``import transformers`` fails, as it does where the package is absent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BLOCKED = "import sys; sys.modules['transformers'] = None; import importlib.util as u; " \
          "real = u.find_spec; u.find_spec = lambda n, *a: None if n == 'transformers' else real(n, *a); "


def without_transformers(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    code = BLOCKED + "from inspector.cli.commands import run; sys.exit(run(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={"HF_HOME": str(home), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})


def test_the_tabled_families_read_the_same_without_it(tmp_path: Path) -> None:
    for alias in ("llama3-8b", "deepseek-v3", "mixtral-8x7b", "gpt2"):
        done = without_transformers([alias, "--json"], tmp_path)
        assert done.returncode == 0, done.stderr
        with_it = subprocess.run([sys.executable, "-m", "inspector", alias, "--json"], capture_output=True, text=True,
                                 env={"HF_HOME": str(tmp_path / "with"), "PATH": "/usr/bin:/bin"})
        assert json.loads(done.stdout) == json.loads(with_it.stdout)


def test_a_type_outside_the_table_is_read_raw_and_names_the_extra(tmp_path: Path) -> None:
    from helpers import save_real

    model = tmp_path / "m"
    save_real(model / "model.safetensors", {"transformer.word_embeddings.weight": ("F16", (100, 64))})
    (model / "config.json").write_text(json.dumps({"model_type": "falcon", "hidden_size": 64, "vocab_size": 100,
                                                   "num_attention_heads": 4, "num_hidden_layers": 2}))
    done = without_transformers([str(model), "--json"], tmp_path / "home")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["config"]["source"] == "raw"
    assert any("hf-inspector[transformers]" in note for note in doc["notes"])
    assert doc["totals"]["parameters"] == 100 * 64  # the one tensor, as written


def test_audit_modeling_names_what_to_install(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    done = without_transformers(["audit", "llama3-8b", "--modeling"], tmp_path)
    assert done.returncode == 2
    assert "hf-inspector[torch]" in done.stderr
