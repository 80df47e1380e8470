"""Hostile inputs, round five (issue 53): numbers past every bound, options that mean nothing for the
method, strict JSON, long GPU lists, configs whose fields index past their layers. Each case: its
documented exit code and one line; bounds in CPU seconds, never wall time."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers import tiny_llama, write_layout

from inspector.errors import EXIT_INVALID, EXIT_USAGE

HUGE = "9" * 309  # past a float's range (1.8e308): float() of it is inf, int(inf) an OverflowError


def _one_line(err: str) -> bool:
    lines = [line for line in err.splitlines() if line.strip()]
    return len(lines) <= 2 and lines[0].startswith("Error:") and "Traceback" not in err


@pytest.mark.parametrize("args", [
    ["estimate", "llama3-8b", "--context", HUGE],
    ["estimate", "llama3-8b", "--batch", HUGE],
    ["estimate", "llama3-8b", "--gpu", f"{HUGE}GiB"],
    ["estimate", "llama3-8b", "--gpu", f"80GiBx{HUGE}"],
    ["estimate", "llama3-8b", "--gpu", "H100", "--overhead", f"{HUGE}.5MiB"],
    ["train", "llama3-8b", "--seq", HUGE],
    ["train", "llama3-8b", "--batch", "1" + "0" * 5000],  # past CPython's 4,300-digit int() limit too
    ["plan", "llama3-8b", "--context", HUGE],
    ["diff", "llama3-8b", "llama3-8b", "--values", "--sample-bytes", HUGE],
])
def test_numbers_past_every_bound_are_usage_errors(cli, args: list[str]) -> None:
    """Was exit 70 (OverflowError: cannot convert float infinity to integer) for each."""
    result = cli(*args)
    assert result.code == EXIT_USAGE, result.err
    assert _one_line(result.err) and "more than 18 digits" in result.err, result.err
    assert len(result.err) < 300  # the 309 digits are not echoed back whole


def test_decimal_options_are_read_exactly() -> None:
    """``1.5k`` is 1,536 and ``0.1GiB`` is 107,374,182 bytes (2^30 / 10, rounded down): exact decimals,
    no float rounding."""
    from inspector.analysis.fit import parse_budget, parse_count

    assert parse_count("1.5k", "x") == 1536
    assert parse_count("999999999999999999", "x") == 999_999_999_999_999_999  # 18 digits: read, exactly
    assert parse_budget("0.1GiB").per_device == 2**30 // 10
    assert parse_budget("1.1GB").per_device == 1_100_000_000


@pytest.mark.parametrize(("args", "words"), [
    (["train", "llama3-8b", "--alpha", "nan", "--json"], "not a positive finite number"),
    (["train", "llama3-8b", "--alpha", "inf", "--json"], "not a positive finite number"),
    (["train", "llama3-8b", "--alpha", "1e400", "--json"], "not a positive finite number"),
    (["train", "llama3-8b", "--alpha", "-1"], "not a positive finite number"),
    (["train", "llama3-8b", "--alpha", "0"], "not a positive finite number"),
    (["train", "llama3-8b", "--method", "full", "--rank", "8"], "--method full trains every weight"),
    (["train", "llama3-8b", "--method", "full", "--alpha", "16"], "--method full trains every weight"),
    (["train", "llama3-8b", "--method", "full", "--targets", "q_proj"], "--method full trains every weight"),
])
def test_train_options_that_mean_nothing_are_refused(cli, args: list[str], words: str) -> None:
    """``--alpha nan`` wrote NaN into --json (not JSON); ``-1`` and ``--method full --rank 8`` were
    accepted silently."""
    result = cli(*args)
    assert result.code == EXIT_USAGE and words in result.err and _one_line(result.err), result.err
    assert "NaN" not in result.out and "Infinity" not in result.out


def test_lora_defaults_and_a_real_alpha_still_answer(cli) -> None:
    doc = cli("train", "llama3-8b", "--alpha", "32", "--json").json()
    assert doc["alpha"] == 32.0 and doc["rank"] == 16 and doc["targets"] == ["all-linear"]
    assert cli("train", "llama3-8b", "--method", "full", "--json").code == 0


def test_json_out_is_strict(cli) -> None:
    """A NaN reaching the renderer is a bug, refused there: the JSON text never holds NaN or Infinity."""
    from inspector.render.output import json_text

    with pytest.raises(ValueError):
        json_text({"x": float("nan")})
    with pytest.raises(ValueError):
        json_text({"rows": [{"x": float("inf")}]})
    json.loads(cli("train", "llama3-8b", "--alpha", "1e300", "--json").out, parse_constant=pytest.fail)


def test_a_long_gpu_list_is_bounded_and_repeats_count_once(cli) -> None:
    """10,000 repeated names ran past 90 s at 836 MB; the same GPU named twice is one GPU."""
    start = time.process_time()
    result = cli("plan", "llama3-8b", "--gpu", ",".join(["H100"] * 10_000))
    assert result.code == EXIT_USAGE and "more than 64 names" in result.err and _one_line(result.err)
    assert time.process_time() - start < 2
    once = cli("plan", "llama3-8b", "--gpu", "H100", "--json").json()
    twice = cli("plan", "llama3-8b", "--gpu", "H100,h100,H100", "--json").json()
    assert once["layouts"] == twice["layouts"]
    import inspector

    assert inspector.plan("llama3-8b", gpus=["H100", "H100"]).to_dict()["layouts"] == once["layouts"]


def _model(folder: Path, **config: object) -> Path:
    base, entries = tiny_llama(layers=2, hidden=64, heads=4, kv=4)
    write_layout(folder / "model.safetensors", entries)
    (folder / "config.json").write_text(json.dumps({**base, **config}))
    return folder


@pytest.mark.parametrize("shared", [2, 3, 1000])
@pytest.mark.parametrize("command", [["estimate"], ["plan"], ["estimate", "--gpu", "H100", "--json"], []])
def test_kv_shared_layers_not_below_the_layers_is_unknown_not_a_crash(cli, tmp_path: Path, shared: int,
                                                                         command: list[str]) -> None:
    """Gemma 3n's config names how many of its last layers reuse an earlier layer's KV
    (``first_kv_shared_layer_idx = num_hidden_layers - num_kv_shared_layers``, transformers'
    modeling_gemma3n.py): at or past the layer count no layer keeps KV. Was exit 70 (IndexError)."""
    folder = _model(tmp_path / "m", num_kv_shared_layers=shared)
    args = [*command[:1], str(folder), *command[1:]]
    result = cli(*args)
    assert result.code == 0, result.err
    if "--json" in command:
        fit = result.json()["fit"]
        assert fit["fits"] is None and "num_kv_shared_layers" in fit["unknown"]


def test_kv_shared_layers_below_the_layers_still_counts_the_storing_ones(cli, tmp_path: Path) -> None:
    """One of two layers shares: the KV per token is the one storing layer's, 2 (K and V) × 4 KV heads ×
    head_dim 16 × 4 B (the config's float32) = 512 B, the standard decoder cache written out."""
    doc = cli("estimate", str(_model(tmp_path / "m", num_kv_shared_layers=1)), "--json").json()
    per_token = next(f for f in doc["figures"] if f["name"] == "kv_bytes_per_token")
    assert per_token["value"] == 2 * 4 * 16 * 4


@pytest.mark.parametrize("bits", [-1, 0, 1, 7, 16, "4", True, None])
def test_mlx_bits_outside_what_mlx_packs_are_refused(cli, tmp_path: Path, bits: object) -> None:
    """mlx's ``mx.quantize`` packs 2, 3, 4, 5, 6 or 8 bits (mlx.core docs); mlx-lm's loader passes the
    config's bits to it. 0 and -1 were read as a quantised checkpoint (exit 0)."""
    folder = tmp_path / "mlx"
    config, _ = tiny_llama(layers=1, hidden=64, heads=4, kv=4)
    write_layout(folder / "model.safetensors", [("model.layers.0.self_attn.q_proj.weight", "U32", (64, 8)),
                                                ("model.layers.0.self_attn.q_proj.scales", "F16", (64, 1)),
                                                ("model.layers.0.self_attn.q_proj.biases", "F16", (64, 1))])
    (folder / "config.json").write_text(json.dumps({**config, "quantization": {"group_size": 64, "bits": bits}}))
    result = cli(str(folder))
    assert result.code == EXIT_INVALID and "quantization.bits" in result.err and _one_line(result.err), result.err


def test_mlx_bits_mlx_packs_are_read(cli, tmp_path: Path) -> None:
    """4-bit: each uint32 word holds 32 / 4 = 8 weights (mlx-lm's packing): 64 × 8 words are 4,096 weights."""
    folder = tmp_path / "mlx"
    config, _ = tiny_llama(layers=1, hidden=64, heads=4, kv=4)
    write_layout(folder / "model.safetensors", [("model.layers.0.self_attn.q_proj.weight", "U32", (64, 8))])
    (folder / "config.json").write_text(json.dumps({**config, "quantization": {"group_size": 64, "bits": 4}}))
    assert cli(str(folder), "--json").json()["totals"]["parameters"] == 64 * 8 * 8
