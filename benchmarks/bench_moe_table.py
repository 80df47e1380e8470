"""`inspect` (the table) against `inspect --json` on a 74k-tensor mixture-of-experts folder.

    python benchmarks/bench_moe_table.py [--repeat 5]

The folder has Qwen3-Next-80B-A3B's shape (config.json figures: hidden 2,048, 48 layers of which every
fourth attends in full and the rest are gated delta nets, 512 experts of width 512 with 10 a token and a
shared expert, 16 heads and 2 KV heads of 256, vocabulary 151,936), written as 40 full-size sparse
safetensors files (header, then a hole): 74k tensors. Whole processes, interleaved (json, table, json,
table …), medians; the table goes to a pipe (its full width, as a script would read it). The results
are written to benchmarks/results/moe_table.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIG = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
          "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
          "intermediate_size": 5120, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
          "num_experts": 512, "num_experts_per_tok": 10, "vocab_size": 151936, "max_position_embeddings": 262144,
          "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
          "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
          "tie_word_embeddings": False, "torch_dtype": "bfloat16", "decoder_sparse_step": 1, "mlp_only_layers": []}


def tensors() -> list[tuple[str, str, tuple[int, ...]]]:
    c = CONFIG
    d, e, w = c["hidden_size"], c["num_experts"], c["moe_intermediate_size"]
    out = [("model.embed_tokens.weight", "BF16", (c["vocab_size"], d)), ("model.norm.weight", "BF16", (d,)),
           ("lm_head.weight", "BF16", (c["vocab_size"], d))]
    kd, vd, kh, vh = 128, 128, 16, 32
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", "BF16", (d,)), (p + "post_attention_layernorm.weight", "BF16", (d,))]
        if i % 4 == 3:
            out += [(p + "self_attn.q_proj.weight", "BF16", (2 * 16 * 256, d)),
                    (p + "self_attn.k_proj.weight", "BF16", (2 * 256, d)),
                    (p + "self_attn.v_proj.weight", "BF16", (2 * 256, d)),
                    (p + "self_attn.o_proj.weight", "BF16", (d, 16 * 256)),
                    (p + "self_attn.q_norm.weight", "BF16", (256,)), (p + "self_attn.k_norm.weight", "BF16", (256,))]
        else:
            conv = 2 * kh * kd + vh * vd
            out += [(p + "linear_attn.in_proj_qkvz.weight", "BF16", (2 * kh * kd + 2 * vh * vd, d)),
                    (p + "linear_attn.in_proj_ba.weight", "BF16", (2 * vh, d)),
                    (p + "linear_attn.conv1d.weight", "BF16", (conv, 1, 4)),
                    (p + "linear_attn.A_log", "F32", (vh,)), (p + "linear_attn.dt_bias", "F32", (vh,)),
                    (p + "linear_attn.norm.weight", "F32", (vd,)),
                    (p + "linear_attn.out_proj.weight", "BF16", (d, vh * vd))]
        out += [(p + "mlp.gate.weight", "BF16", (e, d)), (p + "mlp.shared_expert_gate.weight", "BF16", (1, d))]
        out += [(p + f"mlp.shared_expert.{n}.weight", "BF16", s)
                for n, s in (("gate_proj", (w, d)), ("up_proj", (w, d)), ("down_proj", (d, w)))]
        for j in range(e):
            out += [(p + f"mlp.experts.{j}.{n}.weight", "BF16", s)
                    for n, s in (("gate_proj", (w, d)), ("up_proj", (w, d)), ("down_proj", (d, w)))]
    return out


def materialise(out: Path, shards: int = 40) -> Path:
    from inspector.formats.safetensors import encode_header

    entries = tensors()
    out.mkdir(parents=True, exist_ok=True)
    per = -(-len(entries) // shards)
    weight_map = {}
    for k in range(shards):
        part = entries[k * per:(k + 1) * per]
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        blob, data = encode_header(part, {"format": "pt"})
        with (out / name).open("wb") as fh:
            fh.write(blob)
            fh.truncate(len(blob) + data)
        weight_map |= {n: name for n, _, _ in part}
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (out / "config.json").write_text(json.dumps(CONFIG))
    return out


def seconds(args: list[str], home: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "inspector", *args], check=True, stdout=subprocess.DEVNULL,
                   env={"HF_HOME": home, "PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = materialise(Path(tmp) / "qwen3-next-80b-a3b-shape")
        home = str(Path(tmp) / "home")
        seconds([str(folder), "--json"], home)  # the config figures cached, as any second run finds them
        runs: dict[str, list[float]] = {"json": [], "table": []}
        for _ in range(args.repeat):
            runs["json"].append(seconds([str(folder), "--json"], home))
            runs["table"].append(seconds([str(folder)], home))
        count = len(tensors())
    json_s, table_s = statistics.median(runs["json"]), statistics.median(runs["table"])
    print(f"{count:,} tensors (Qwen3-Next-80B-A3B shape, 40 files); medians of {args.repeat} interleaved runs")
    print(f"  inspect --json  {json_s:6.3f} s")
    print(f"  inspect (table) {table_s:6.3f} s   {table_s / json_s:.2f}× the JSON (target ≤ 1.3×)")
    from benchmarks_results import save

    save("moe_table", {"tensors": count, "json_seconds": json_s, "table_seconds": table_s,
                       "ratio": table_s / json_s, "runs": runs})


if __name__ == "__main__":
    main()
