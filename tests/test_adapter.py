"""A PEFT adapter against its base: rank, target modules, parameters and their share of the base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import save_real, tiny_llama


def _base(folder: Path) -> dict:
    config, entries = tiny_llama(layers=2, hidden=8, inter=16, vocab=32, heads=2, kv=1)
    save_real(folder / "model.safetensors", {n: (dt, s) for n, dt, s in entries})
    (folder / "config.json").write_text(json.dumps(config))
    return config


def _adapter(folder: Path, tensors: dict[str, tuple[str, tuple[int, ...]]], **config: object) -> None:
    save_real(folder / "adapter_model.safetensors", tensors)
    doc = {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"],
           "base_model_name_or_path": "acme/tiny-llama", **config}
    (folder / "adapter_config.json").write_text(json.dumps(doc))


def test_a_lora_adapter_against_its_base(cli, tmp_path: Path) -> None:
    """LoRA (Hu et al. 2021): A is [r, in], B is [out, r], so r × (in + out) per adapted matrix.
    The tiny base: hidden 8, 2 heads of 4, 1 KV head (v_proj is [4, 8]), 2 layers."""
    _base(tmp_path / "base")
    p = "base_model.model.model.layers.{}.self_attn.{}.{}.weight"
    tensors = {}
    for i in range(2):
        tensors[p.format(i, "q_proj", "lora_A")] = ("F32", (2, 8))
        tensors[p.format(i, "q_proj", "lora_B")] = ("F32", (8, 2))
        tensors[p.format(i, "v_proj", "lora_A")] = ("F32", (2, 8))
        tensors[p.format(i, "v_proj", "lora_B")] = ("F32", (4, 2))
    _adapter(tmp_path / "adapter", tensors)
    doc = cli("diff", str(tmp_path / "base"), str(tmp_path / "adapter"), "--json").json()
    assert doc["kind"] == "adapter" and doc["rank"] == 2 and doc["target_modules"] == ["q_proj", "v_proj"]
    assert doc["base_model_name_or_path"] == "acme/tiny-llama"
    modules = {m["module"]: m for m in doc["modules"]}
    assert modules["self_attn.q_proj"]["parameters"] == 2 * 2 * (8 + 8)
    assert modules["self_attn.v_proj"]["parameters"] == 2 * 2 * (8 + 4)
    assert modules["self_attn.v_proj"]["base_shape"] == [4, 8]
    assert doc["parameters"] == 2 * 2 * (8 + 8) + 2 * 2 * (8 + 4)
    assert doc["share_of_base"] == doc["parameters"] / doc["base"]["parameters"]
    assert doc["problems"] == []
    # either order; the table names rank and targets; an adapter that matches its base trips no gate
    table = cli("diff", str(tmp_path / "adapter"), str(tmp_path / "base"))
    assert table.code == 0 and "LoRA rank 2, alpha 4, on q_proj, v_proj" in table.out
    for gate in ("any", "params", "shapes", "dtypes"):
        assert cli("diff", str(tmp_path / "base"), str(tmp_path / "adapter"), "--fail-if", gate).code == 0, gate
    md = cli("diff", str(tmp_path / "base"), str(tmp_path / "adapter"), "--format", "markdown").out
    assert r"| self\_attn.q\_proj | 2 | [2, 8] | [8, 2] | [8, 8] | 2 × (8 + 8) | 64 |" in md
    page = cli("diff", str(tmp_path / "base"), str(tmp_path / "adapter"), "--format", "html").out
    assert 'id="headline-parameters" data-value="112"' in page and "2 × (8 + 8)" in page
    assert 'id="headline-problems" data-value="0"' in page


def test_an_adapter_for_another_base_is_a_problem(cli, tmp_path: Path) -> None:
    _base(tmp_path / "base")
    p = "base_model.model.model.layers.0.{}.{}.weight"
    _adapter(tmp_path / "adapter", {
        p.format("self_attn.q_proj", "lora_A"): ("F32", (2, 16)),  # made for a base with hidden 16
        p.format("self_attn.q_proj", "lora_B"): ("F32", (16, 2)),
        p.format("mlp.w9", "lora_A"): ("F32", (2, 8)),  # a module the base has not
        p.format("mlp.w9", "lora_B"): ("F32", (8, 2)),
    })
    doc = cli("diff", str(tmp_path / "base"), str(tmp_path / "adapter"), "--json").json()
    assert any("self_attn.q_proj: the adapter is [16 × 16], the base weight [8, 8]" in p for p in doc["problems"])
    assert any(p.startswith("mlp.w9: the base has no such weight") for p in doc["problems"])
    # an adapter that peft could not load onto this base exits 1 on its own (as an audit with an error
    # finding does), with the reason on stderr; --fail-if's gates name which kind of mismatch it is
    base, adapter = str(tmp_path / "base"), str(tmp_path / "adapter")
    run = cli("diff", base, adapter)
    assert run.code == 1 and "does not match this base" in run.err and "2 problems" in run.err
    import inspector

    d = inspector.diff(base, adapter)
    assert {g: d.gates_hit([g]) for g in ("any", "shapes", "params", "dtypes")} == {
        "any": ["any"], "shapes": ["shapes"], "params": [], "dtypes": []}


def test_an_adapter_written_by_peft(cli, tmp_path: Path) -> None:
    """The adapter and its count come from the peft library (CI installs it after torch)."""
    pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")
    peft = pytest.importorskip("peft", reason="peft is not installed (CI installs it after torch)")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=256, max_position_embeddings=128)
    model = LlamaForCausalLM(config)
    model.save_pretrained(tmp_path / "base")
    base_count = sum(p.numel() for p in model.parameters())
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=8, lora_alpha=16,
                                                         target_modules=["q_proj", "v_proj", "down_proj"]))
    trainable, _ = wrapped.get_nb_trainable_parameters()
    wrapped.save_pretrained(tmp_path / "adapter")
    doc = cli("diff", str(tmp_path / "base"), str(tmp_path / "adapter"), "--json").json()
    assert doc["parameters"] == trainable  # peft's own count of the LoRA parameters
    assert doc["base"]["parameters"] == base_count  # torch's count of the base
    assert doc["rank"] == 8 and doc["target_modules"] == ["down_proj", "q_proj", "v_proj"]
    assert {m["module"] for m in doc["modules"]} == {"self_attn.q_proj", "self_attn.v_proj", "mlp.down_proj"}
    assert all(m["layers"] == 2 and m["rank"] == 8 for m in doc["modules"])
    assert doc["problems"] == []
    assert doc["share_of_base"] == pytest.approx(trainable / base_count)


def test_a_lora_on_the_embedding_with_its_frozen_copy(cli, tmp_path: Path) -> None:
    """peft 0.21 with the embedding among the targets and save_embedding_layers=True writes the LoRA
    embedding factors (lora_embedding_A [r, vocab], _B [hidden, r]) and a frozen copy of the embedding
    (embed_tokens.base_layer.weight): the trainable count is peft's own, the copy is named apart."""
    pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")
    peft = pytest.importorskip("peft", reason="peft is not installed (CI installs it after torch)")
    from families import write

    model = write("llama", tmp_path / "base")
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=2, lora_alpha=4,
                                                         target_modules=["q_proj", "v_proj", "embed_tokens"]))
    trainable, _ = wrapped.get_nb_trainable_parameters()
    wrapped.save_pretrained(tmp_path / "adapter", save_embedding_layers=True)
    doc = cli("diff", str(tmp_path / "base"), str(tmp_path / "adapter"), "--json").json()
    assert doc["trainable_parameters"] == trainable
    embedding = model.model.embed_tokens.weight.numel()
    assert doc["frozen_copies"] == [{"tensor": "model.embed_tokens.base_layer.weight", "parameters": embedding}]
    assert doc["parameters"] == trainable + embedding
    assert "model.embed_tokens" in {m["module"] for m in doc["modules"]} and doc["problems"] == []
    shown = cli(str(tmp_path / "adapter"), "--json").json()
    assert not [r for r in shown["by_role"] if r["role"] == "other"]  # lora_embedding and base_layer: embedding
    assert f"trainable {trainable:,} of the {trainable + embedding:,}" in cli(str(tmp_path / "adapter")).out
