"""`inspect plan`: each validity rule on real configs, with the verdict vLLM's own code gives (the rule as its
source states it, written out below), and the per-GPU figures against `inspect estimate` and vLLM's receipts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, realdata
from test_engines import llama31  # Llama-3.1-8B-Instruct from the bundled Meta-Llama-3-8B snapshot

from inspector import errors

RECEIPTS = json.loads((FIXTURES / "vllm" / "receipts.json").read_text())


def plan(cli, *args: str) -> dict:
    r = cli("plan", *args, "--json")
    assert r.code == 0, r.err
    return r.json()


def layout(doc: dict, gpus: int, tp: int, pp: int = 1, ep: int = 1, gpu: str = "H100-80GB") -> dict:
    want = (gpu, gpus, tp, pp, ep)
    return next(x for x in doc["layouts"] if (x["gpu"], x["gpus"], x["tp"], x["pp"], x["ep"]) == want)


def test_heads_not_divisible_by_8(cli) -> None:
    """Qwen2.5-7B-Instruct has 28 attention heads (fixtures/realdata config). vLLM's
    ModelConfig.verify_with_parallel_config (vllm/config/model.py): total_num_attention_heads %
    tensor_parallel_size != 0 raises "Total number of attention heads (28) must be divisible by tensor parallel
    size (8)". 28 % 8 = 4: invalid; 28 % 4 = 0: valid."""
    heads = realdata("Qwen__Qwen2.5-7B-Instruct", "config.json")["num_attention_heads"]
    assert heads == 28 and heads % 8 and not heads % 4
    doc = plan(cli, "qwen2.5-7b", "--gpu", "H100")
    tp8 = layout(doc, 8, 8)
    assert not tp8["valid"] and tp8["reasons"][0] == "heads: 28 attention heads are not divisible by 8"
    assert layout(doc, 4, 4)["valid"]
    assert layout(doc, 8, 4, pp=2)["valid"]  # 8 GPUs still serve it: TP 4 × PP 2


def test_a_gptq_group_size_breaks_at_tp_8(cli) -> None:
    """TheBloke/Llama-2-13B-chat-GPTQ: group_size 128, intermediate_size 13,824 (its config). vLLM's
    GPTQLinearMethod.create_weights (quantization/gptq.py): input_size_per_partition % group_size != 0 raises "The
    input size is not aligned with the quantized weight shape". down_proj is row-parallel: 13,824 / 8 = 1,728,
    1,728 % 128 = 64: invalid at TP 8; 13,824 / 4 = 3,456 = 27 × 128: valid at TP 4."""
    real = realdata("TheBloke__Llama-2-13B-chat-GPTQ", "config.json")
    group, width = real["quantization_config"]["group_size"], real["intermediate_size"]
    assert (width // 8) % group and not (width // 4) % group
    doc = plan(cli, "llama2-13b-gptq", "--gpu", "H100")
    tp8 = layout(doc, 8, 8)
    assert not tp8["valid"]
    assert tp8["reasons"] == ["group_size: down_proj's input per GPU, 13,824 / 8 = 1,728, is not a multiple of the "
                              "gptq group size 128"]
    assert layout(doc, 4, 4)["valid"]
    # 40 heads divide by 5, but 13,824 does not: MergedColumnParallelLinear's divide(output_size, tp_size)
    assert "mlp: the MLP width 13,824 is not divisible by 5" in layout(doc, 5, 5)["reasons"]


def test_tp_beyond_the_kv_heads_replicates_them(cli) -> None:
    """Meta-Llama-3-8B: 32 heads, 8 KV heads. vLLM's QKVParallelLinear (layers/linear.py): tp_size >=
    total_num_kv_heads gives one KV head per GPU and num_kv_head_replicas = divide(tp_size, total_num_kv_heads):
    TP 16 is valid, each GPU holding one whole KV head (1/8 of the cache per token, not 1/16). TP 12: 8 % 12 and
    12 % 8 are both non-zero, and 32 % 12 too: invalid, the head rule first."""
    doc = plan(cli, "llama3-8b", "--gpu", "H100", "--max-gpus", "16")
    tp16 = layout(doc, 16, 16)
    assert tp16["valid"]
    one = layout(doc, 1, 1)
    assert tp16["kv_bytes_per_token"] == one["kv_bytes_per_token"] // 8
    tp12 = layout(doc, 12, 12)
    assert [r.split(":")[0] for r in tp12["reasons"]][:2] == ["heads", "kv_heads"]


def test_expert_parallel_sizes(cli) -> None:
    """Mixtral-8x7B: 8 experts. vLLM's determine_expert_map (fused_moe/layer.py) splits the experts over the EP
    ranks as evenly as they divide: 8 ranks hold one expert each, 16 ranks would leave eight with none."""
    doc = plan(cli, "mixtral-8x7b", "--gpu", "H100", "--max-gpus", "16")
    assert layout(doc, 8, 8, ep=8)["valid"]
    ep16 = layout(doc, 16, 16, ep=16)
    assert not ep16["valid"] and "experts: 8 experts for 16 expert-parallel ranks" in ep16["reasons"]
    # expert parallel holds whole experts: at EP 8 each GPU has one, the same bytes as TP 8's eighth of each
    assert layout(doc, 8, 8, ep=8)["weights_bytes"] == pytest.approx(layout(doc, 8, 8)["weights_bytes"], rel=0.01)


def test_tp_1_is_the_estimate_exactly(cli) -> None:
    doc = plan(cli, "llama3-8b", "--gpu", "H100", "--context", "8k")
    one = layout(doc, 1, 1)
    fit = cli("estimate", "llama3-8b", "--gpu", "H100", "--context", "8k", "--json").json()["fit"]
    assert (one["weights_bytes"], one["kv_pool_bytes"], one["kv_pool_tokens"], one["total_bytes"]) == \
        (fit["weights_bytes"], fit["kv_pool_bytes"], fit["kv_pool_tokens"], fit["total_bytes"])


def test_tensor_parallel_agrees_with_vllm_s_receipts(cli, tmp_path: Path) -> None:
    """vLLM 0.19.0 at TP 2 and 4 on H100s, utilization 0.95, max_model_len 8,192 (fixtures/vllm, receipts.json
    tensor_parallel): weights (with vLLM's rotary cache), KV pool and its tokens per GPU, each within ±2 %."""
    models = {"meta-llama/Llama-3.1-8B-Instruct": str(llama31(tmp_path)), "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
              "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b"}
    print()
    for row in RECEIPTS["tensor_parallel"]["rows"]:
        doc = plan(cli, models[row["model"]], "--gpu", "H100", "--max-gpus", str(row["tp"]), "--utilization", "0.95",
                   "--context", "8k")
        got = layout(doc, row["tp"], row["tp"])
        rotary = next(t["bytes"] for t in got["terms"] if t["name"] == "rotary cache")
        pairs = [((got["weights_bytes"] + rotary) / 2**30, row["weights_gib"]),
                 (got["kv_pool_bytes"] / 2**30, row["kv_pool_gib"]), (got["kv_pool_tokens"], row["kv_tokens"])]
        print(f"{row['model']} TP {row['tp']}: " + ", ".join(f"{ours:,.2f} vs {theirs:,.2f}" for ours, theirs in pairs))
        for ours, theirs in pairs:
            assert abs(ours / theirs - 1) <= 0.02, (row, ours, theirs)


def test_the_answer_line_and_the_ranking(cli) -> None:
    out = cli("plan", "llama3-70b", "--gpu", "H100,A100-80GB,L40S").out
    assert out.splitlines()[1].startswith("2 × ")  # two 80 GB GPUs hold Llama-3-70B's 131 GB in bf16
    doc = plan(cli, "llama3-70b", "--gpu", "H100,A100-80GB,L40S")
    fitting = [x for x in doc["layouts"] if x["fits"]]
    assert fitting == doc["layouts"][:len(fitting)]
    assert [x["gpus"] for x in fitting] == sorted(x["gpus"] for x in fitting)
    assert all(isinstance(x[k], int) for x in doc["layouts"] for k in ("gpus", "tp", "pp", "ep"))
    invalid = [x for x in doc["layouts"] if not x["valid"]]
    assert invalid and all(x["reasons"] and x["weights_bytes"] is None for x in invalid)
    throughput = plan(cli, "llama3-70b", "--gpu", "H100", "--objective", "throughput")
    assert throughput["layouts"][0]["max_sequences"] == max(x["max_sequences"] or 0 for x in throughput["layouts"])


@pytest.mark.parametrize(("args", "words"), [
    (("--gpu", "B300"), "H100"),
    (("--max-gpus", "0"), "1 to 1,024"),
    (("--max-gpus", "2000"), "1 to 1,024"),
    (("--max-gpus", "512", "--nodes", "4"), "1 to 1,024"),
    (("--objective", "price"), "gpus, throughput, context"),
    (("--engine", "tgi"), "vllm or llama.cpp"),
])
def test_bad_input_is_a_usage_error(cli, args: tuple[str, ...], words: str) -> None:
    r = cli("plan", "llama3-8b", *args)
    assert r.code == errors.EXIT_USAGE and words in r.err and "Traceback" not in r.err


def test_llama_cpp_splits_layers(cli) -> None:
    doc = plan(cli, "llama3-8b", "--engine", "llama.cpp", "--gpu", "RTX4090", "--max-gpus", "4")
    assert {(x["tp"], x["pp"]) for x in doc["layouts"]} == {(1, n) for n in range(1, 5)}
    assert doc["layouts"][0]["fits"] and doc["layouts"][0]["gpus"] == 1
