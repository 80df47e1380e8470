"""Issue 66's hostile inputs, each run as a whole process against this tree: exit code, CPU seconds and peak
memory (VmHWM) of the child. The bar: no exit 70, no run over 500 MB or 30 s of CPU.

    python benchmarks/bench_hostile.py [--tensors 300000]

Over the Hub the inputs are served by the test Hub (scripts/hubserver.py) on this machine. Results go to
benchmarks/results/hostile.json; docs/security.md's budget table quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "scripts"), str(ROOT / "benchmarks"), str(ROOT)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tensors", type=int, default=300_000, help="tensors of each declared base's header")
    options = parser.parse_args()
    from benchmarks_results import save
    from helpers import measured, tiny_llama, write_layout
    from hubserver import HubServer

    from inspector.formats.safetensors import encode_header

    rows: dict[str, dict[str, object]] = {}

    def record(name: str, *args: str, env: dict[str, str] | None = None) -> None:
        got = measured(*args, env=env)
        rows[name] = {k: got[k] for k in ("code", "cpu", "peak_mb", "seconds")}
        print(f"  {name:58} exit {got['code']}  {got['cpu']:6.2f} s CPU  {got['peak_mb']:7.1f} MB  "
              f"{got['seconds']:6.2f} s", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base_env = {**os.environ, "HF_HOME": str(root / "home"), "HF_HUB_OFFLINE": "1"}

        def model(name: str) -> Path:
            folder = root / name
            config, entries = tiny_llama()
            write_layout(folder / "model.safetensors", entries)
            (folder / "config.json").write_text(json.dumps(config))
            return folder

        deep = model("deep-card")
        (deep / "README.md").write_bytes(b"---\nbase_model: " + b"[" * 600 + b"]" * 600 + b"\n---\n")
        record("card nested 600 deep: lineage", "lineage", str(deep), env=base_env)
        lists = b"[" + b"[]," * (21 << 20) + b"[]]"  # 63 MiB
        for name in ("config.json", "model.safetensors.index.json", "tokenizer_config.json",
                     "generation_config.json", "adapter_config.json"):
            folder = model(f"lists-{name}")
            (folder / name).write_bytes(lists)
            record(f"63 MiB of [] in {name}", str(folder), "--json", env=base_env)
        record("a path component of 300 bytes", "A" * 300, env=base_env)
        record("org/g: and 100,000 characters", "org/g:" + "x" * 100_000, env=base_env)
        for n in (110_000, 350_000):
            blob, data = encode_header([(f"model.layers.{i}.mlp.w{i}.weight", "F32", (1,)) for i in range(n)])
            for side in ("a", "b"):
                (root / f"own-{n}-{side}").mkdir()
                (root / f"own-{n}-{side}" / "model.safetensors").write_bytes(blob + b"\0" * data)
            record(f"{n:,} tensors each in its own layer: inspect --json", str(root / f"own-{n}-a"), "--json",
                   env=base_env)
            record(f"{n:,} tensors each in its own layer: diff", "diff", str(root / f"own-{n}-a"),
                   str(root / f"own-{n}-b"), env=base_env)

        with HubServer() as server:
            online = {**base_env, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": server.url}
            llama = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
                     "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"]
            big, data = encode_header([(f"model.layers.{i // 9}.{llama[i % 9]}.weight", "F32", (2,))
                                       for i in range(options.tensors)])
            for i in range(10):
                server.add_files(f"acme/base{i}", {"model.safetensors": big + b"\0" * data,
                                                   "config.json": b'{"model_type": "llama"}'})
            for n in (1, 3, 10):
                folder = model(f"declares-{n}")
                (folder / "README.md").write_text("---\nbase_model:\n" + "".join(
                    f"- acme/base{i}\n" for i in range(n)) + "---\n")
                record(f"{n} declared base(s) of {options.tensors:,} tensors: lineage", "lineage", str(folder),
                       env={**online, "HF_HOME": str(root / f"home-{n}")})
            server.add_files("acme/listed", {"config.json": b"{}"})
            server.state.listing_patch["acme/listed"] = {"siblings": [[]] * (10 << 20)}
            record("a 32 MiB listing of []", "acme/listed", env=online)
            server.state.listing_patch["acme/listed"] = {"siblings": [{"rfilename": f"f{i}"} for i in range(860_342)]}
            record("a listing of 860,342 files", "acme/listed", env=online)

    worst = {"cpu": max(float(r["cpu"]) for r in rows.values()),  # type: ignore[arg-type]
             "peak_mb": max(float(r["peak_mb"]) for r in rows.values())}  # type: ignore[arg-type]
    saved = save("hostile", {"rows": rows, "worst": worst, "tensors": options.tensors})
    print(f"saved {saved.relative_to(ROOT)}; worst: {worst['cpu']:.2f} s CPU, {worst['peak_mb']:.0f} MB; "
          f"exit 70: {sum(r['code'] == 70 for r in rows.values())}")


if __name__ == "__main__":
    main()
