"""Right or silent: a figure the config does not give is unknown, and nothing is derived from it; a
budget without a unit is a usage error; the over-limit context warning is said once, naming its source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import save_real

EXIT_USAGE = 2  # README "Exit codes"


def _no_kv_heads(folder: Path) -> Path:
    """A config transformers does not know (so read raw) that gives heads but no KV heads."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "mystery-decoder", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 128, "vocab_size": 32, "max_position_embeddings": 2048}))
    save_real(folder / "model.safetensors", {"model.embed_tokens.weight": ("F16", (32, 64)),
                                             "model.layers.0.self_attn.q_proj.weight": ("F16", (64, 64)),
                                             "model.layers.1.self_attn.q_proj.weight": ("F16", (64, 64))})
    return folder


def _check_unknown(text: str, doc: dict) -> None:
    assert "num_key_value_heads" in text and "unknown" in text
    assert "fits:" not in text and "largest context" not in text
    fit = doc["fit"]
    assert fit["fits"] is None and fit["max_context"] is None and "num_key_value_heads" in fit["unknown"]
    figures = {f["name"]: f for f in doc["figures"]}
    assert figures["kv_bytes_per_token"]["value"] is None and figures["kv_bytes"]["value"] is None


def test_no_kv_heads_known_gives_no_fit_locally_and_from_the_hub(cli, tmp_path: Path, online, monkeypatch) -> None:
    from hubserver import HubServer

    folder = _no_kv_heads(tmp_path / "m")
    text = cli("estimate", str(folder), "--gpu", "24GiB")
    assert text.code == 0, text.err
    _check_unknown(text.out + text.err, cli("estimate", str(folder), "--gpu", "24GiB", "--json").json())
    assert "fits" not in cli(str(folder)).out  # show's one-line answer stays silent too
    with HubServer() as server:
        server.add_files("acme/mystery", {p.name: p.read_bytes() for p in folder.iterdir()})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        text = cli("estimate", "acme/mystery", "--gpu", "24GiB")
        assert text.code == 0, text.err
        _check_unknown(text.out + text.err, cli("estimate", "acme/mystery", "--gpu", "24GiB", "--json").json())


def test_a_budget_without_a_unit_is_a_usage_error(cli) -> None:
    for args in (["estimate", "llama3-8b", "--gpu", "24"], ["estimate", "llama3-8b", "--gpu", "24GiB",
                                                              "--overhead", "2"]):
        result = cli(*args)
        assert result.code == EXIT_USAGE and "has no unit" in result.err and "GiB" in result.err, result.err
        assert result.err.count("Error:") == 1 and result.out == ""


def test_a_context_over_the_limit_is_warned_once_with_or_without_a_budget(cli) -> None:
    # Meta-Llama-3-8B's config.json as published (fixtures/snapshot-configs/SOURCE.txt)
    config = json.loads((Path(__file__).parent.parent / "fixtures" / "snapshot-configs" /
                         "meta-llama__Meta-Llama-3-8B.json").read_text())
    limit = config["max_position_embeddings"]
    for extra in ([], ["--gpu", "80GiB"]):
        result = cli("estimate", "llama3-8b", "--context", "128k", *extra)
        assert result.code == 0, result.err
        said = (result.out + result.err).count("over the model's limit")
        assert said == 1, (extra, result.out, result.err)
        assert f"limit of {limit:,} tokens (config.json max_position_embeddings)" in result.err
        doc = cli("estimate", "llama3-8b", "--context", "128k", *extra, "--json").json()
        assert sum("over the model's limit" in w for w in doc["warnings"]) == 1


#: config.json values as published on the Hub (mistralai/Mistral-7B-v0.1, google/gemma-2-9b): the keys
#: that shape attention
MISTRAL_7B_V01 = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
                  "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                  "num_key_value_heads": 8, "max_position_embeddings": 32768, "sliding_window": 4096,
                  "vocab_size": 32000, "torch_dtype": "bfloat16", "tie_word_embeddings": False}
GEMMA_2_9B = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 3584,
              "intermediate_size": 14336, "num_hidden_layers": 42, "num_attention_heads": 16,
              "num_key_value_heads": 8, "head_dim": 256, "max_position_embeddings": 8192, "sliding_window": 4096,
              "vocab_size": 256000, "torch_dtype": "float32"}


def test_attention_and_prefill_flops_honour_sliding_windows(cli, tmp_path: Path) -> None:
    """At 8k, the windowed figures of issue 29 (worked from the configs above: Mistral-7B-v0.1's 32
    layers all slide at 4,096; Gemma 2's 42 alternate, 21 sliding)."""
    def figures(name: str, config: dict) -> dict:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
        save_real(folder / "model.safetensors", {"model.embed_tokens.weight": ("F16", (8, 8))})
        doc = cli("estimate", str(folder), "--context", "8192", "--json").json()
        return {f["name"]: f["value"] for f in doc["figures"]}

    mistral = figures("mistral", MISTRAL_7B_V01)
    assert mistral["flops_per_token_attention"] == 2_147_483_648
    unwindowed = figures("mistral-no-window", {**MISTRAL_7B_V01, "sliding_window": None})
    assert unwindowed["flops_per_token_attention"] == 4_294_967_296
    # the prefill figures, 134,095,388,540,928 without the window and 129,696,268,288,000 with it,
    # differ only in attention: the same difference here
    assert unwindowed["flops_prefill"] - mistral["flops_prefill"] == 134_095_388_540_928 - 129_696_268_288_000
    gemma = figures("gemma2", GEMMA_2_9B)
    assert gemma["flops_per_token_attention"] == 4_227_858_432  # 5,637,144,576 if no layer slid
    # the KV cache both ways: Mistral's 32 layers keep 4,096 of 8,192 tokens windowed, all 8,192 when an
    # engine reserves the whole context (2 × 8 KV heads × 128 × 2 B = 4,096 B per layer and token)
    assert mistral["kv_bytes"] == 32 * 4096 * 4096 and mistral["kv_bytes_full_reservation"] == 32 * 4096 * 8192
    assert "kv_bytes_full_reservation" not in unwindowed  # no window: one figure


def test_a_moe_header_names_the_expert_width(cli, tmp_path: Path) -> None:
    """Qwen3-30B-A3B's config.json as published: intermediate_size 6,144 (a dense MLP no layer has),
    moe_intermediate_size 768 for each of 128 experts, 8 active."""
    folder = tmp_path / "qwen3-moe"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
        "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "vocab_size": 151936, "max_position_embeddings": 40960, "torch_dtype": "bfloat16",
        "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": False}))
    save_real(folder / "model.safetensors", {"model.embed_tokens.weight": ("F16", (8, 8))})
    header = cli(str(folder)).out.splitlines()[1]
    assert "experts 128 × MLP 768 (top-8)" in header and "6,144" not in header, header


def test_parameters_are_logical_in_every_output(cli) -> None:
    """A GPTQ checkpoint (4-bit weights packed eight to an int32 word): show, --json, compare and the
    library give the same parameter count, the unquantised model's (fixtures/reference.json), with the
    stored elements a separately named figure."""
    from helpers import ref

    import inspector

    logical = ref("llama2-13b-gptq.logical")
    doc = cli("llama2-13b-gptq", "--json").json()
    assert doc["totals"]["parameters"] == logical and doc["totals"]["stored_elements"] < logical
    assert sum(r["parameters"] for r in doc["by_role"]) == logical
    assert f"{logical:,}" in cli("llama2-13b-gptq").out
    compared = cli("compare", "llama2-13b-gptq", "llama3-8b", "--json").json()
    assert compared["models"][0]["totals"]["parameters"] == logical
    assert inspector.inspect("llama2-13b-gptq").to_dict()["totals"]["parameters"] == logical
    estimate = cli("estimate", "llama2-13b-gptq", "--json").json()
    assert estimate["quantization"]["logical_parameters"] == logical


def test_mlx_quantisation_is_counted_as_mlx_lm_wrote_it(cli) -> None:
    """Checkpoints mlx-lm quantised (fixtures/mlx/SOURCE.txt): uint32 words of 32/bits weights beside
    per-group scales and biases, bits from config.json's "quantization" block including per-module
    overrides. The logical count is the source model's, and bits per weight are mlx-lm's own figure."""
    fixtures = Path(__file__).parent.parent / "fixtures" / "mlx"
    for name, bits, bits_per_weight in (("tiny-llama-4bit", 4, 4.520), ("tiny-llama-8bit", 8, 8.513),
                                        ("tiny-llama-4bit-down8", 4, 5.246), ("tiny-llama-2bit-g32", 2, 3.023),
                                        ("tiny-llama-3bit", 3, 3.522), ("tiny-llama-5bit", 5, 5.519),
                                        ("tiny-llama-6bit-g128", 6, 6.267)):
        doc = cli(str(fixtures / name), "--json").json()
        totals = doc["totals"]
        assert totals["parameters"] == 361_088, name  # the source model's count
        assert totals["stored_elements"] < totals["parameters"]
        assert round(totals["bytes"] * 8 / totals["parameters"], 3) == bits_per_weight, name
        estimate = cli("estimate", str(fixtures / name), "--json").json()["quantization"]
        assert estimate["method"] == "mlx affine" and estimate["bits"] == bits
        assert estimate["logical_parameters"] == 361_088
        assert not any("no packed tensors" in note for note in estimate["notes"]), name


@pytest.mark.parametrize("bits", [-1, 7, 0, "4"])
def test_mlx_bits_mlx_lm_does_not_write_are_refused_by_name(cli, tmp_path: Path, bits: object) -> None:
    """mlx-lm writes 2, 3, 4, 5, 6 or 8 bits (mlx.core.quantize's affine mode) and the same block under both
    "quantization" and "quantization_config" (mlx_lm/utils.py, save_config); its loader reads "quantization"
    first. A config that claims other bits there was read as "not quantised" and counted silently (issue 66):
    refused by name, exit 4, as mlx-lm's own load refuses it."""
    import shutil

    source = Path(__file__).parent.parent / "fixtures" / "mlx" / "tiny-llama-4bit"
    folder = tmp_path / "m"
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    config["quantization"]["bits"] = config["quantization_config"]["bits"] = bits
    (folder / "config.json").write_text(json.dumps(config))
    for args in ([str(folder)], ["estimate", str(folder), "--json"]):
        result = cli(*args)
        assert result.code == 4 and "quantization.bits" in result.err, result.err
        assert f"{bits}-bit" not in result.out


def test_an_mlx_override_of_bits_mlx_does_not_pack_is_refused(cli, tmp_path: Path) -> None:
    """A per-module override (mlx-lm's ``"model.layers.0.mlp.down_proj": {"bits": 8, ...}``) of 0 bits fell back
    to the block's default silently."""
    import shutil

    source = Path(__file__).parent.parent / "fixtures" / "mlx" / "tiny-llama-4bit-down8"
    folder = tmp_path / "m"
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    module = next(k for k, v in config["quantization"].items() if isinstance(v, dict))
    config["quantization"][module]["bits"] = 0
    (folder / "config.json").write_text(json.dumps(config))
    result = cli(str(folder))
    assert result.code == 4 and f"quantization.{module}.bits" in result.err, result.err
