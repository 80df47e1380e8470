"""`inspect diff A B --values` of two 7B-shaped repos on the test Hub at 50 ms a request: time, bytes and
requests per side, and the weights' bytes they stand for.

    python benchmarks/bench_values.py [--latency 0.05] [--sample-bytes 1024]

Both repos serve the bundled Mistral-7B-Instruct-v0.2 header snapshot as full-size virtual files (their tensor data are
zeros, so every tensor is "the same in the sampled bytes": the reads are what is measured). One process,
one run after a warm-up; results go to benchmarks/results/values.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(Path(__file__).parent)]
SNAPSHOT = ROOT / "inspector" / "snapshots" / "mistralai__Mistral-7B-Instruct-v0.2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--sample-bytes", default="1024")
    args = parser.parse_args()
    from hubserver import HubServer

    with HubServer() as server, tempfile.TemporaryDirectory() as home:
        for repo in ("acme/mistral-7b", "acme/mistral-7b-tuned"):
            server.add_snapshot(repo, SNAPSHOT)
        server.state.latency = args.latency
        env = {"HF_HOME": home, "HF_ENDPOINT": server.url, "PATH": "/usr/bin:/bin", "HF_HUB_DISABLE_TELEMETRY": "1"}
        command = [sys.executable, "-m", "inspector", "diff", "acme/mistral-7b", "acme/mistral-7b-tuned", "--values",
                   "--sample-bytes", args.sample_bytes, "--json"]
        subprocess.run(command, env=env, capture_output=True, check=True)  # headers into the cache
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - start
    values = json.loads(done.stdout)["values"]
    weights = values["weights_bytes"]
    print(f"diff --values, Mistral-7B shape, {len(values['tensors'])} tensors, {args.latency * 1000:.0f} ms a "
          f"request, --sample-bytes {args.sample_bytes}")
    print(f"  {seconds:.2f} s; read {values['bytes_read'][0]:,} + {values['bytes_read'][1]:,} B in "
          f"{values['requests'][0]:,} + {values['requests'][1]:,} requests, of {weights:,} B a side "
          f"({values['bytes_read'][0] / weights:.5%})")
    from benchmarks_results import save

    save("values", {"latency": args.latency, "seconds": seconds, "tensors": len(values["tensors"]),
                    "bytes_read": values["bytes_read"], "requests": values["requests"], "weights_bytes": weights})


if __name__ == "__main__":
    main()
