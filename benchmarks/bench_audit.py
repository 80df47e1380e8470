"""Audit speed and memory.

    python benchmarks/bench_audit.py [--gib 1.0] [--repeat 3]

* structure checks on the bundled DeepSeek-V3 snapshot (163 headers, 91,991 tensors): the whole
  `inspect audit deepseek-v3` process, best of --repeat (target: under 2 s);
* `inspect audit --deep` on a local checkpoint of --gib GiB of real data (F32 and F16 tensors of
  random values written by the safetensors library), beside a plain sequential read of the same
  file in 64 MB chunks (the disk-speed baseline), with the audit process's peak resident memory
  (target: disk speed, memory well under the file size). Both read a warm page cache. Peak
  memory comes from GNU time (/usr/bin/time, Debian package `time`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def run(args: list[str]) -> tuple[float, int]:
    """Wall time of the whole command, and its own peak RSS (KiB) from /usr/bin/time's report."""
    t = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "inspector", *args],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    return elapsed, int(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from safetensors.numpy import save_file

    structure = min(run(["audit", "deepseek-v3"])[0] for _ in range(args.repeat))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        folder.mkdir()
        rng = np.random.default_rng(0)
        tensor_bytes = 16 * 1024 * 1024
        count = int(args.gib * 1024**3 // tensor_bytes)
        tensors = {}
        for i in range(count):
            if i % 2:
                values = rng.standard_normal(tensor_bytes // 2, dtype=np.float32)
                tensors[f"layers.{i}.weight"] = values.astype(np.float16)
            else:
                tensors[f"layers.{i}.weight"] = rng.standard_normal(tensor_bytes // 4, dtype=np.float32)
        save_file(tensors, str(folder / "model.safetensors"))
        del tensors
        path = folder / "model.safetensors"
        size = path.stat().st_size
        baseline = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            with path.open("rb") as fh:
                while fh.read(64 * 1024 * 1024):
                    pass
            baseline = min(baseline, time.perf_counter() - t)
        deep, peak_kb = min(run(["audit", str(folder), "--deep"]) for _ in range(args.repeat))
    print(f"structure audit, DeepSeek-V3 snapshot (whole process): {structure:.3f} s   (target < 2 s)")
    print(f"--deep on {size / 1e9:.2f} GB ({count} tensors, F32 + F16):")
    print(f"  plain sequential read, 64 MB chunks: {baseline:.3f} s  ({size / baseline / 1e9:.2f} GB/s)")
    print(f"  inspect audit --deep (whole process): {deep:.3f} s  ({size / deep / 1e9:.2f} GB/s)")
    print(f"  peak resident memory of the audit process: {peak_kb / 1024:.0f} MB (file {size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
