"""Estimates: formulas checked by hand on tiny configs and against the reference figures
(fixtures/reference.json: each figure's source and arithmetic)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import realdata, ref, save_real, tiny_llama, write_layout

from inspector.analysis.facts.report import build_report
from inspector.analysis.serving.estimate import estimate
from inspector.sources.resolve import open_checkpoint


def est(model: str, **kw):
    return estimate(build_report(open_checkpoint(model)), **kw)


def value(e, name: str):
    """A figure's value, read from the estimate's typed parts (``estimate.kv.per_token`` …)."""
    parts = {"weights_bytes": e.weights.bytes, "kv_bytes_per_token": e.kv.per_token, "kv_bytes": e.kv.bytes,
             "flops_per_token_weights": e.flops.weights_per_token, "flops_per_token_attention":
             e.flops.attention_per_token, "flops_prefill": e.flops.prefill,
             "attention_to_gemm_ratio_closed_form": e.flops.ratio_closed_form}
    if e.moe is not None:
        parts |= {"total_parameters": e.moe.total, "main_parameters": e.moe.main, "active_parameters": e.moe.active}
    return parts[name].value


def test_llama3_8b_reference_figures() -> None:
    e = est("llama3-8b", context=8192)
    assert value(e, "weights_bytes") == ref("llama3-8b.bytes")
    assert value(e, "kv_bytes_per_token") == ref("llama3-8b.kv_bytes_per_token")
    assert value(e, "kv_bytes") == ref("llama3-8b.kv_bytes_per_token") * 8192 == 2**30  # 1 GiB at 8,192 tokens
    assert value(e, "flops_per_token_weights") == ref("llama3-8b.flops_per_token")
    assert "checked" in " ".join(e.kv.per_token.assumptions)


def test_llama2_7b_reference_figures() -> None:
    e = est("llama2-7b", context=4096)
    assert value(e, "kv_bytes_per_token") == ref("llama2-7b.kv_bytes_per_token")
    assert value(e, "flops_per_token_weights") == ref("llama2-7b.flops_per_token")
    assert value(e, "flops_per_token_attention") == ref("llama3-8b.attention_flops_4096")  # same L, h, d
    # the closed form t / (2D + 1.5I), with Llama-2-7B's D = 4,096 and I = 11,008
    assert value(e, "attention_to_gemm_ratio_closed_form") == pytest.approx(4096 / (2 * 4096 + 1.5 * 11008))


def test_mixtral_total_and_active() -> None:
    e = est("mixtral-8x7b")
    assert value(e, "total_parameters") == ref("mixtral-8x7b.parameters")
    assert value(e, "active_parameters") == ref("mixtral-8x7b.active")


def test_deepseek_v3_mla_moe_fp8() -> None:
    e = est("deepseek-v3", context=4096)
    assert value(e, "kv_bytes_per_token") == ref("deepseek-v3.kv_bytes_per_token")  # latent + rope key
    active = value(e, "active_parameters")
    # the model card: 671B main-model parameters, "37B activated for each token" (a 37.x figure)
    assert 37e9 <= active < 38e9
    assert round(value(e, "main_parameters") / 1e9) == ref("deepseek-v3.main_billions")
    assert e.quant.method == "fp8" and e.quant.logical_parameters == e.quant.stored_elements
    assert e.quant.overhead_elements == ref("deepseek-v3.weight_scale_inv")


def test_gptq_logical_parameters_match_the_unquantised_model() -> None:
    e = est("llama2-13b-gptq")
    q = e.quant
    real = realdata("TheBloke__Llama-2-13B-chat-GPTQ", "config.json")
    assert (q.method, q.bits) == (real["quantization_config"]["quant_method"], real["quantization_config"]["bits"])
    # the unquantised Llama-2-13B from the real config: embed + head + layers × (q/k/v/o, MLP, 2 norms) + final norm
    d, i, v, n_layers = (real[k] for k in ("hidden_size", "intermediate_size", "vocab_size", "num_hidden_layers"))
    dense = 2 * v * d + n_layers * (4 * d * d + 3 * d * i + 2 * d) + d
    assert q.logical_parameters == dense == ref("llama2-13b-gptq.logical")
    assert q.overhead_elements > 0 and q.stored_elements < q.logical_parameters / 4
    bits = {r.role: r.bits_per_weight for r in q.rows}
    assert 4.0 < bits["mlp.up"] < 4.3 and bits["embedding"] == 16.0


def test_tiny_gqa_kv_and_flops_by_hand(tmp_path: Path) -> None:
    config, entries = tiny_llama(layers=3, hidden=16, inter=32, vocab=50, heads=4, kv=2, dtype="F16")
    save_real(tmp_path / "m" / "model.safetensors", {n: (dt, s) for n, dt, s in entries})
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    e = est(str(tmp_path / "m"), context=10, kv_dtype="fp8")
    # 2 × 3 layers × 2 KV heads × head_dim 4 × 1 byte
    assert value(e, "kv_bytes_per_token") == 2 * 3 * 2 * 4 * 1
    params = sum(__import__("math").prod(s) for _, _, s in entries)
    assert value(e, "flops_per_token_weights") == 2 * (params - 50 * 16)
    assert value(e, "flops_per_token_attention") == 4 * 3 * 4 * 4 * 10
    assert value(e, "flops_prefill") == 2 * (params - 800) * 10 + 4 * 3 * 4 * 4 * (10 * 11 // 2)


def test_sliding_window_layers_cap_the_cache(tmp_path: Path) -> None:
    config, entries = tiny_llama(layers=4, hidden=16, heads=4, kv=4)
    config.update({"model_type": "gemma3_text", "sliding_window": 8, "head_dim": 4,
                   "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]})
    write_layout(tmp_path / "m" / "model.safetensors", entries)
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    e = est(str(tmp_path / "m"), context=100, kv_dtype="bf16")
    per_layer_token = 2 * 4 * 4 * 2
    assert value(e, "kv_bytes") == per_layer_token * (3 * 8 + 100)


def test_a_windowed_fit_row_states_the_sum_it_is(tmp_path: Path, cli) -> None:
    """The fit's KV row shows the arithmetic of its own figure (issue 41: it said per-token bytes ×
    context, which a windowed model does not keep): 3 sliding layers at their window of 8 cells and
    1 full layer at the context, each 2 (K, V) × 4 KV heads × head_dim 4 × 2 B a token; llama.cpp pads
    the full layer's cells to 256 and keeps window + one micro-batch (512) for a sliding one, padded
    (llama-kv-cache-iswa.cpp), so its formula names those cells."""
    config, entries = tiny_llama(layers=4, hidden=16, heads=4, kv=4)
    config.update({"model_type": "gemma3_text", "sliding_window": 8, "head_dim": 4,
                   "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]})
    write_layout(tmp_path / "m" / "model.safetensors", entries)
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    per_layer_token = 2 * 4 * 4 * 2
    fit = cli("estimate", str(tmp_path / "m"), "--context", "100", "--kv-dtype", "bf16", "--gpu", "1GiB",
              "--json").json()["fit"]
    assert fit["kv_bytes"] == per_layer_token * (3 * 8 + 100)
    assert fit["kv_formula"] == (f"({per_layer_token:,} B/token × 100 cells + {3 * per_layer_token:,} B/token "
                                 "× 8 cells (window 8)) × batch 1")
    table = cli("estimate", str(tmp_path / "m"), "--context", "100", "--kv-dtype", "bf16", "--gpu", "1GiB",
                "--explain").out
    assert fit["kv_formula"] in table
    cpp = cli("estimate", str(tmp_path / "m"), "--context", "100", "--kv-dtype", "bf16", "--gpu", "1GiB",
              "--engine", "llama.cpp", "--json").json()["fit"]
    assert cpp["kv_bytes"] == per_layer_token * (256 + 3 * 256)
    assert cpp["kv_formula"].startswith(f"({per_layer_token:,} B/token × 256 cells + {3 * per_layer_token:,} B/token "
                                        "× 256 cells (window 8")


def test_hybrid_layers_keep_constant_state(tmp_path: Path) -> None:
    config, entries = tiny_llama(layers=4, hidden=16, heads=4, kv=4)
    config.update({"model_type": "qwen3_next", "head_dim": 4,
                   "layer_types": ["linear_attention"] * 3 + ["full_attention"]})
    # Qwen3-Next's layout: the three linear-attention layers hold a gated delta net (linear_attn.*), not q/k/v/o
    for i in range(3):
        p = f"model.layers.{i}."
        entries = [e for e in entries if not e[0].startswith(p + "self_attn.")] + [
            (p + "linear_attn.in_proj_qkvz.weight", "F32", (48, 16)),
            (p + "linear_attn.in_proj_ba.weight", "F32", (8, 16)),
            (p + "linear_attn.conv1d.weight", "F32", (32, 1, 4)), (p + "linear_attn.A_log", "F32", (4,)),
            (p + "linear_attn.dt_bias", "F32", (4,)), (p + "linear_attn.out_proj.weight", "F32", (16, 16))]
    write_layout(tmp_path / "m" / "model.safetensors", entries)
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    e = est(str(tmp_path / "m"), context=10)
    assert value(e, "kv_bytes_per_token") == 2 * 1 * 4 * 4 * 4  # one attention layer, F32 config
    assert any("constant state" in a for a in e.kv.per_token.assumptions)


def test_cli_estimate_json_and_summary_line(cli) -> None:
    r = cli("estimate", "llama3-8b", "--context", "8192", "--json")
    doc = r.json()
    assert r.code == 0 and doc["schema_version"] == 2
    figures = {f["name"]: f for f in doc["figures"]}
    assert figures["kv_bytes"]["value"] == 1_073_741_824
    assert all(f["source"] and f["formula"] for f in doc["figures"])
    assert {w["dtype"]: w["bytes"] for w in doc["what_if"]}["int4"] == ref("llama3-8b.parameters") // 2
    assert "estimate: KV cache 131,072 B/token" in cli("llama3-8b").out
    assert cli("estimate", "llama3-8b", "--kv-dtype", "fp3").code == 2
