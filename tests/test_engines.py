"""Engine-aware fits against the engines' own receipts.

vLLM: fixtures/vllm (vLLM 0.19.0's log and the llm-d planner study's table, H100-80GB, utilization 0.95,
TP 1). llama.cpp: fixtures/llama.cpp/compute-buffers.log (the buffers llama.cpp printed for the real Gemma 3
270M GGUF). Each predicted term is printed beside the receipt's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES

from inspector import errors
from inspector.analysis.serving.budget import parse_budget
from inspector.analysis.serving.engines import GPUS
from inspector.analysis.serving.fit import GIB

SNAPSHOTS = Path(__file__).resolve().parent.parent / "inspector" / "snapshots"
RECEIPTS = json.loads((FIXTURES / "vllm" / "receipts.json").read_text())
GEMMA = Path(__file__).resolve().parent.parent / ".test-inputs" / "gemma3" / "gemma-3-270m-q4_k_m.gguf"


def llama31(tmp_path: Path) -> Path:
    """Llama-3.1-8B-Instruct: Meta-Llama-3-8B's tensors with Llama 3.1's context keys (fixtures/vllm/SOURCE.txt)."""
    folder = tmp_path / "llama-3.1-8b-instruct"
    shutil.copytree(SNAPSHOTS / "meta-llama__Meta-Llama-3-8B", folder)
    config = json.loads((folder / "config.json").read_text())
    config["max_position_embeddings"] = 131072
    config["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 8192}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def gib(value: int) -> float:
    return value / GIB


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct"])
def test_vllm_prediction_beside_its_receipt(cli, tmp_path: Path, name: str) -> None:
    receipt = RECEIPTS["models"][name]
    model = str(llama31(tmp_path)) if "Llama" in name else "qwen2.5-7b"
    r = cli("estimate", model, "--engine", "vllm", "--gpu", "H100", "--utilization", "0.95", "--context", "16k",
            "--json")
    assert r.code == 0, r.err
    f = r.json()["fit"]
    terms = {t["name"]: t["bytes"] for t in f["terms"]}
    weights = f["weights_bytes"] + terms["rotary cache"]  # vLLM counts its rotary cache in "weights"
    rows = [("GPU total", gib(f["budget_bytes"]), RECEIPTS["gpu_total_gib"]),
            ("requested (× 0.95)", gib(f["usable_bytes"]), RECEIPTS["requested_gib"]),
            ("weights", gib(weights), receipt["weights_gib"]),
            ("activation peak", gib(terms["activation peak"]), receipt["activation_gib"]),
            ("non-torch", gib(terms["non-torch memory"]), receipt["non_torch_gib"]),
            ("KV pool", gib(f["kv_pool_bytes"]), receipt["kv_pool_gib"]),
            ("KV tokens", f["kv_pool_tokens"], receipt["kv_tokens"])]
    assert abs(gib(f["budget_bytes"]) - RECEIPTS["gpu_total_gib"]) < 0.005
    assert abs(gib(f["usable_bytes"]) - RECEIPTS["requested_gib"]) < 0.005
    assert abs(gib(weights) - receipt["weights_gib"]) < 0.1
    assert abs(f["kv_pool_bytes"] / (receipt["kv_pool_gib"] * GIB) - 1) < 0.02
    assert abs(f["kv_pool_tokens"] / receipt["kv_tokens"] - 1) < 0.02
    assert f["kv_pool_tokens"] % 16 == 0  # whole blocks, as num_gpu_blocks × 16
    out = cli("estimate", model, "--engine", "vllm", "--gpu", "H100", "--utilization", "0.95", "--context", "16k",
              "--explain").out  # each term's formula and source: the table shows them with --explain
    for term in ("rotary cache", "activation peak", "non-torch memory", "CUDA graphs", "usable", "KV pool",
                 "llm-d planner accuracy report", "get_batch_defaults"):
        assert term in out
    print(f"\n{name}: inspect estimate --engine vllm --gpu H100 --utilization 0.95 vs vLLM 0.19.0")
    for label, ours, theirs in rows:
        print(f"  {label:<20} ours {ours:>14,.2f}   vLLM {theirs:>14,.2f}   {100 * (ours - theirs) / theirs:+.2f} %")


@pytest.mark.parametrize("stages", ["2", "4"])
def test_pipeline_stages_split_the_layers_as_vllm(cli, tmp_path: Path, stages: str) -> None:
    """llm-d's pipeline rows: the heaviest stage's weights (embedding or output layer + its layers)."""
    receipt = RECEIPTS["models"]["meta-llama/Llama-3.1-8B-Instruct"]["pipeline"][stages]
    r = cli("estimate", str(llama31(tmp_path)), "--gpu", f"H100x{stages}", "--pipeline", stages,
            "--utilization", "0.95", "--context", "8k", "--json")
    assert r.code == 0, r.err
    f = r.json()["fit"]
    terms = {t["name"]: t["bytes"] for t in f["terms"]}
    assert abs(gib(f["weights_bytes"] + terms["rotary cache"]) - receipt["weights_gib"]) < 0.1
    assert round(gib(terms["non-torch memory"]), 2) == receipt["non_torch_gib"]
    assert f["pipeline"] == int(stages) and len(f["stages"]) == int(stages) and f["devices"] == int(stages)
    # 32 layers split evenly; the first stage holds the embedding, the last the output layer and norm
    assert all(f"layers {i * 32 // int(stages)}-" in line for i, line in enumerate(f["stages"]))
    bad = cli("estimate", "llama3-8b", "--gpu", "H100x3", "--pipeline", "2")
    assert bad.code == errors.EXIT_USAGE and "Traceback" not in bad.err


def test_the_llama_receipt_is_the_log_we_keep() -> None:
    """The receipt figures are those of vLLM's own log lines (so the table cannot drift from them)."""
    log = (FIXTURES / "vllm" / "llama-3.1-8b-instruct.h100.tp1.log").read_text()
    receipt = RECEIPTS["models"]["meta-llama/Llama-3.1-8B-Instruct"]
    usage = re.search(r"Actual usage is ([\d.]+) GiB for weight, ([\d.]+) GiB for peak activation, ([\d.]+) GiB "
                      r"for non-torch memory.*kv cache memory in use is ([\d.]+) GiB", log)
    assert usage is not None
    assert [float(x) for x in usage.groups()] == [receipt["weights_gib"], receipt["activation_gib"],
                                                   receipt["non_torch_gib"], receipt["kv_pool_gib"]]
    blocks = int(re.search(r"num_gpu_blocks is: (\d+)", log).group(1))  # type: ignore[union-attr]
    assert blocks * 16 == receipt["kv_tokens"] == 476_016


def test_named_gpus_and_their_batch_defaults(cli) -> None:
    assert parse_budget("H100").per_device == GPUS["H100"].bytes
    assert parse_budget("h100x2").devices == 2 and parse_budget("A100-40GBx4").devices == 4
    assert parse_budget("A100-40GB").per_device == 40_536 * 2**20  # CUDA's total, not the sticker's 40 GB
    # vLLM's defaults: 8,192 batched tokens on >= 70 GiB except A100s (get_batch_defaults)
    h100 = cli("estimate", "llama3-8b", "--gpu", "H100", "--json").json()["fit"]
    a100 = cli("estimate", "llama3-8b", "--gpu", "A100-80GB", "--json").json()["fit"]
    source = {t["name"]: t["source"] for t in h100["terms"]}["activation peak"]
    assert "max_num_batched_tokens 8,192" in source
    source = {t["name"]: t["source"] for t in a100["terms"]}["activation peak"]
    assert "max_num_batched_tokens 2,048" in source
    assert h100["utilization"] == 0.9 and h100["engine"] == "vllm" and h100["gpu"] == "H100-80GB"
    for bad in (("--gpu", "B300"), ("--gpu", "24GiB", "--engine", "tgi"), ("--gpu", "24GiB", "--utilization", "1.5"),
                ("--gpu", "24GiB", "--engine", "llama.cpp", "--utilization", "0.9"), ("--engine", "vllm")):
        r = cli("estimate", "llama3-8b", *bad)
        assert r.code == errors.EXIT_USAGE, bad
        assert "Traceback" not in r.err


def test_tensor_parallel_adds_the_nccl_buffers(cli) -> None:
    """llm-d's table: non-torch memory 0.24-0.27 GiB at TP 1, 2.06-2.17 GiB per device at TP 2 and 4."""
    def terms(gpu: str) -> dict[str, int]:
        fitted = cli("estimate", "qwen2.5-7b", "--gpu", gpu, "--json").json()["fit"]
        return {t["name"]: t["bytes"] for t in fitted["terms"]}

    one, two = terms("H100"), terms("H100x2")
    assert 0.24 <= gib(one["non-torch memory"]) <= 0.27 and 2.06 <= gib(two["non-torch memory"]) <= 2.17


def compute_buffers() -> list[tuple[int, int, float, float]]:
    """(n_ctx, n_ubatch, compute MiB, output MiB) from llama.cpp's own lines."""
    rows = []
    for block in (FIXTURES / "llama.cpp" / "compute-buffers.log").read_text().split("=== ")[1:]:
        head = re.match(r"n_ctx (\d+) flash_attn \w+ n_ubatch (\d+)", block)
        compute = re.search(r"compute buffer size =\s+([\d.]+) MiB", block)
        output = re.search(r"output buffer size =\s+([\d.]+) MiB", block)
        assert head and compute and output
        rows.append((int(head.group(1)), int(head.group(2)), float(compute.group(1)), float(output.group(1))))
    return rows


@pytest.mark.skipif(not GEMMA.exists(), reason="run scripts/test_inputs.py (the README's test command does)")
def test_llama_cpp_buffers_are_the_ones_it_printed(cli) -> None:
    doc = cli("estimate", str(GEMMA), "--gpu", "L4", "--context", "4096", "--json").json()
    f = doc["fit"]
    assert f["engine"] == "llama.cpp" and f["utilization"] is None and f["usable_bytes"] == f["budget_bytes"]
    terms = {t["name"]: t["bytes"] for t in f["terms"]}
    receipts = compute_buffers()
    at_512 = [r for r in receipts if r[1] == 512]
    assert at_512 and all(r[2] == at_512[0][2] for r in at_512)  # the same at every context and attention
    assert round(terms["compute buffer"] / 2**20, 2) == at_512[0][2]  # 514.50 MiB
    assert round(terms["output buffer"] / 2**20, 2) == at_512[0][3]  # 1.00 MiB
    assert f["kv_pool_bytes"] is None  # llama.cpp sizes its cache by the context, not by what is left


def test_runtime_fp8_keeps_the_embedding_and_head_in_16_bit(cli, tmp_path: Path) -> None:
    """vLLM 0.19's runtime fp8 (--quantization fp8) loads Llama-3.1-8B-Instruct in 8.49 GiB (fixtures/vllm,
    runtime_fp8): its linear layers at one byte a weight, its embedding and lm_head in bf16 (fp8.py quantises
    LinearBase layers only). `--dtype fp8` sizes the weights so, within 1 % of the receipt (its rotary cache
    counted in vLLM's "weights", as above); one byte for every parameter would be 12 % under it."""
    receipt = RECEIPTS["models"]["meta-llama/Llama-3.1-8B-Instruct"]["runtime_fp8"]
    r = cli("estimate", str(llama31(tmp_path)), "--gpu", "H100", "--utilization", "0.95", "--dtype", "fp8",
            "--context", "8k", "--json")
    assert r.code == 0, r.err
    f = r.json()["fit"]
    terms = {t["name"]: t["bytes"] for t in f["terms"]}
    ours = gib(f["weights_bytes"] + terms["rotary cache"])
    assert abs(ours / receipt["weights_gib"] - 1) < 0.01, ours
    assert abs(gib(f["kv_pool_bytes"]) / receipt["kv_pool_gib"] - 1) < 0.02
    parameters = cli("llama3-8b", "--json").json()["totals"]["parameters"]
    assert abs(gib(parameters) / receipt["weights_gib"] - 1) > 0.1  # the old one-byte-a-parameter answer
    print(f"\nruntime fp8: weights ours {ours:.3f} GiB, vLLM {receipt['weights_gib']} GiB, "
          f"KV pool ours {gib(f['kv_pool_bytes']):.2f}, vLLM {receipt['kv_pool_gib']}")
