"""GGUF header reads, side by side with gguf-py's GGUFReader, and what a hostile header costs.

    python benchmarks/bench_gguf.py [--repeat 3]

Inputs (written here, sparse: the data is a hole):
  * the real Gemma 3 270M Q4_K_M (``.test-inputs/gemma3``, from the README's test command);
  * 1,000,000 tensor infos (``blk.N.ffn_up.weight``, F16 [8, 32]) written by gguf-py's GGUFWriter;
  * a 140 MB file of zeros after a header declaring 9,999,999 metadata entries, and a 200 MB one
    declaring 9,000,000 (whose entries would all be the empty key);
  * through the local test Hub: the 28 real bytes of the second, then zeros.

Each reader runs in a fresh process: the best wall time of --repeat runs and the peak resident memory
above the interpreter's after imports. "bytes read" is what our reader asked its source for (the
header's length read once is the floor).
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

CHILD = r"""
import json, resource, sys, time
what, path = sys.argv[1], sys.argv[2]
read = [0]
if what == "ours":
    import os
    from pathlib import Path
    from inspector.formats.registry import reader_named
    from inspector.sources.resolve import LocalFile
    source = LocalFile(os.open(path, os.O_RDONLY), Path(path))
    real = source.read
    def counted(start, length):
        data = real(start, length); read[0] += len(data); return data
    source.read = counted
    real_into = source.read_into
    def counted_into(buffer, start, length):
        before = len(buffer); real_into(buffer, start, length); read[0] += len(buffer) - before
    source.read_into = counted_into
    def run():
        try:
            return len(reader_named("gguf").read(source, file=path).tensors)
        except Exception as exc:
            return type(exc).__name__ + ": " + str(exc)[:60]
else:
    import gguf
    def run():
        try:
            return len(gguf.GGUFReader(path).tensors)
        except Exception as exc:
            return type(exc).__name__ + ": " + str(exc)[:60]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter(); result = run(); elapsed = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "result": result, "peak_kb": peak - base, "read": read[0]}))
"""


def child(what: str, path: Path, repeat: int, timeout: float) -> dict:
    runs = []
    for _ in range(repeat):
        try:
            out = subprocess.run([sys.executable, "-c", CHILD, what, str(path)], capture_output=True, text=True,
                                 timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"seconds": timeout, "result": f"over {timeout:g} s", "peak_kb": 0, "read": 0}
        if out.returncode:
            return {"seconds": 0.0, "result": f"exit {out.returncode}: {out.stderr.strip()[-80:]}", "peak_kb": 0,
                    "read": 0}
        runs.append(json.loads(out.stdout))
    return min(runs, key=lambda r: r["seconds"])


def million(path: Path, count: int = 1_000_000) -> tuple[Path, int]:
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    for i in range(count):
        w.add_tensor_info(f"blk.{i}.ffn_up.weight", (8, 32), np.dtype(np.float16), 512,
                          raw_dtype=gguf.GGMLQuantizationType.F16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header = path.stat().st_size
    with path.open("r+b") as fh:
        fh.truncate(header + count * 512 + 64)
    return path, header


def zeros(path: Path, entries: int, size: int) -> Path:
    with path.open("wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, entries))
        fh.truncate(size)
    return path


def hub_case(entries: int, size: int) -> tuple[int, int, int, float]:
    """(exit code, GET requests, bytes sent, seconds) of `inspect REPO` on the zero file over the test Hub."""
    import os

    from hubserver import HubServer, VFile

    head = b"GGUF" + struct.pack("<IQQ", 3, 0, entries) + b"\0" * 4
    with HubServer() as server, tempfile.TemporaryDirectory() as home:
        server.add_files("acme/zeros", {"m.gguf": VFile(size, head, True)})
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": home}
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "inspector", "acme/zeros"], capture_output=True, env=env,
                              check=False)
        took = time.perf_counter() - t
        gets = [r for r in server.requests("GET") if r.path.endswith(".gguf")]
        return done.returncode, len(gets), server.bytes_sent(), took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as where:
        tmp = Path(where)
        cases: list[tuple[str, Path, int | None]] = []
        gemma = ROOT / ".test-inputs" / "gemma3" / "gemma-3-270m-q4_k_m.gguf"
        if gemma.is_file():
            cases.append(("Gemma 3 270M Q4_K_M (real)", gemma, None))
        path, header = million(tmp / "hundred-thousand.gguf", 100_000)
        cases.append(("100,000 tensor infos", path, header))  # issue 54: >= 10x gguf-py's GGUFReader
        path, header = million(tmp / "million.gguf")
        cases.append(("1,000,000 tensor infos (over MAX_TENSORS)", path, header))
        cases.append(("zeros, 9,999,999 entries, 140 MB", zeros(tmp / "z1.gguf", 9_999_999, 140_000_000), None))
        cases.append(("zeros, 9,000,000 entries, 200 MB", zeros(tmp / "z2.gguf", 9_000_000, 200_000_000), None))
        print(f"{'input':36} {'reader':10} {'seconds':>8} {'peak MB':>8} {'bytes read':>12}  result")
        rows = []
        for label, path, header in cases:
            for what in ("ours", "gguf-py"):
                r = child(what, path, args.repeat, args.timeout)
                rows.append({"input": label, "reader": what, **r})
                read = f"{r['read']:,}" if what == "ours" else "(mmap)"
                print(f"{label:36} {what:10} {r['seconds']:8.3f} {r['peak_kb'] / 1024:8.1f} {read:>12}  "
                      f"{str(r['result'])[:60]}")
            if header:
                print(f"{'':36} {'floor':10} {'':8} {'':8} {header:>12,}  the header's bytes, read once")
        by = {(r["input"], r["reader"]): r["seconds"] for r in rows}
        ratio = by[("100,000 tensor infos", "gguf-py")] / max(by[("100,000 tensor infos", "ours")], 1e-9)
        print(f"100,000 tensor infos: gguf-py / ours = {ratio:.1f}x (issue 54's target: >= 10x)")
        code, gets, sent, took = hub_case(9_000_000, 200_000_000)
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from benchmarks_results import save

        print(f"saved {save('gguf', {'repeat': args.repeat, 'rows': rows, 'ratio_100k': ratio}).relative_to(ROOT)}")
        print(f"\nthrough the test Hub, 28 real bytes then zeros (200 MB): exit {code}, {gets} GET request(s) for the "
              f"file, {sent:,} bytes sent in all, {took:.2f} s (a whole process)")


if __name__ == "__main__":
    main()
