"""SGLang as an engine (``--engine sglang``, issue 49): its memory rules held to its own start-up logs
(fixtures/sglang: SGLang's documentation on an 80 GB GPU, and a published RTX 3090 run) and to its source's
default-fraction formula, written out here from ``ServerArgs._handle_gpu_memory_settings``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES
from test_engines import SNAPSHOTS, llama31

from inspector.analysis.serving.engines import GPUS
from inspector.analysis.serving.engines.sglang import defaults
from inspector.analysis.serving.fit import GIB

RUNS = {r["id"]: r for r in json.loads((FIXTURES / "sglang" / "receipts.json").read_text())["runs"]}


def r1_distill_qwen_7b(tmp_path: Path) -> Path:
    """DeepSeek-R1-Distill-Qwen-7B: Qwen2.5-7B's tensors with its 131,072-token context (fixtures/sglang/SOURCE.txt)."""
    folder = tmp_path / "deepseek-r1-distill-qwen-7b"
    shutil.copytree(SNAPSHOTS / "Qwen__Qwen2.5-7B-Instruct", folder)
    config = json.loads((folder / "config.json").read_text())
    config["max_position_embeddings"] = 131072
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _model(tmp_path: Path, run: str) -> str:
    return str(llama31(tmp_path) if run == "llama-3.1-8b-tp1" else r1_distill_qwen_7b(tmp_path))


def _fit(cli, model: str, gpu: str, fraction: float) -> dict:
    r = cli("estimate", model, "--engine", "sglang", "--gpu", gpu, "--utilization", str(fraction), "--context", "4k",
            "--json")
    assert r.code == 0, r.err
    return r.json()["fit"]


@pytest.mark.parametrize("run", sorted(RUNS))
def test_sglangs_pool_rule_on_our_cache_bytes_reproduces_its_logged_tokens(cli, tmp_path: Path, run: str) -> None:
    """profile_max_num_token over the log's own free memory (before and after loading) and our KV bytes a token:
    SGLang's #tokens within the rounding of the two printed figures (±0.005 GiB each), and its K size to the
    printed 0.01 GiB."""
    r = RUNS[run]
    cell = _fit(cli, _model(tmp_path, run), "H100", r["mem_fraction_static"])["kv_bytes_per_token"]
    rest = r["free_after_load_gib"] - r["free_before_load_gib"] * (1 - r["mem_fraction_static"])
    tokens = int(rest * 2**30) // cell
    slack = int(0.01 * 2**30) // cell + 1  # two figures printed to 0.01: ±0.005 GiB each
    assert abs(tokens - r["max_total_num_tokens"]) <= slack, (tokens, r["max_total_num_tokens"])
    assert abs(r["max_total_num_tokens"] * cell / 2 / GIB - r["k_size_gib"]) <= 0.005


@pytest.mark.parametrize(("run", "gpu"), [("llama-3.1-8b-tp1", "H100"), ("llama-3.1-8b-tp1", "A100-80GB"),
                                          ("deepseek-r1-distill-qwen-7b-rtx3090", None)])
def test_the_pool_from_the_config_and_the_gpu_is_within_two_percent(cli, tmp_path: Path, run: str,
                                                                    gpu: str | None) -> None:
    """From the config and the GPU alone: our weights, SGLang's rotary cache, the measured memory outside torch before
    loading and what loading holds beyond the weights, at the log's fraction. The 80 GB run's card is not named: both
    80 GB cards of the catalogue. The RTX 3090 is not in the catalogue: its capacity is given as the log's free memory
    before loading plus our before-loading constant (so that run checks the rest of the arithmetic)."""
    r = RUNS[run]
    budget = gpu or f"{r['free_before_load_gib'] + 0.38:.2f}GiB"
    f = _fit(cli, _model(tmp_path, run), budget, r["mem_fraction_static"])
    error = f["kv_pool_tokens"] / r["max_total_num_tokens"] - 1
    print(f"\n{run} on {budget}: ours {f['kv_pool_tokens']:,} tokens, SGLang's {r['max_total_num_tokens']:,}: "
          f"{100 * error:+.2f} %")
    assert abs(error) <= 0.02


def _their_default(gpu_mib: float, tp: int) -> float:
    """ServerArgs._handle_gpu_memory_settings on a CUDA GPU, written out: the chunk and graph sizes by memory, then
    reserved = 512 + max(chunk, 2048) × 1.5 + graphs × 2 + tp × pp / 8 × 1024 MiB (at least 10 GiB above 60 GiB),
    fraction = round((memory − reserved) / memory, 3)."""
    if gpu_mib < 20 * 1024:
        chunk, graphs = 2048, 8
    elif gpu_mib < 35 * 1024:
        chunk, graphs = 2048, 24 if tp < 4 else 80
    elif gpu_mib < 60 * 1024:
        chunk, graphs = 4096, 32 if tp < 4 else 160
    elif gpu_mib < 160 * 1024:
        chunk, graphs = 8192, 256 if tp < 4 else 512
    else:
        chunk, graphs = 16384, 512
    reserved = 512 + max(chunk, 2048) * 1.5 + graphs * 2 + tp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved) / gpu_mib, 3)


@pytest.mark.parametrize("name", sorted(GPUS))
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_the_default_fraction_is_sglangs(name: str, tp: int) -> None:
    gpu = GPUS[name]
    assert defaults(gpu.bytes, tp)[2] == _their_default(gpu.bytes / 2**20, tp)


def test_plan_refuses_what_sglangs_layers_refuse(cli) -> None:
    """Llama 3 8B (32 heads, 8 KV heads): TP 3, 5, 6 and 7 break the head rule as SGLang's QKVParallelLinear states it;
    TP 2, 4 and 8 pass; the rules cite SGLang's files, not vLLM's."""
    r = cli("plan", "llama3-8b", "--engine", "sglang", "--gpu", "H100", "--max-gpus", "8", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["engine"] == "sglang"
    refused = {row["tp"] for row in doc["layouts"] if not row["valid"] and any(
        why.startswith("heads:") for why in row["reasons"])}
    assert refused == {3, 5, 6, 7}
    assert all("SGLang" in rule["source"] for rule in doc["rules"]) and doc["rules"]
    out = cli("estimate", "llama3-8b", "--gpu", "H100", "--engine", "sglang", "--explain").out
    for words in ("mem_fraction_static 0.834", "profile_max_num_token", "_handle_gpu_memory_settings"):
        assert words in out, words


def test_a_fraction_for_llama_cpp_is_refused(cli) -> None:
    r = cli("estimate", "llama3-8b", "--gpu", "H100", "--engine", "llama.cpp", "--utilization", "0.9")
    assert r.code != 0 and "takes the whole device" in r.err
