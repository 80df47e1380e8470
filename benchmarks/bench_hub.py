"""Cold Hub reads side by side, each reader a fresh process with an empty HF_HOME.

    python benchmarks/bench_hub.py [--latency 0,0.05,0.15] [--repeat 5] [--shards 1,2,4,15,191,1000]

Runs the local Hub server of the tests (scripts/hubserver.py) in a process of its own, with a set delay
before every answer (standing for the round trip), serving full-size virtual files:

=======  ===========================================================================================
shards   repo
=======  ===========================================================================================
1        Qwen/Qwen3-0.6B, the bundled snapshot (the real repo is one model.safetensors)
2        microsoft/phi-2, the bundled snapshot (2 shards)
4        meta-llama/Meta-Llama-3-8B, the bundled snapshot (4 shards)
15       Llama-3-70B re-sharded into 15 files (greedy sharding at the size that gives 15)
191      a Llama-3.1-405B-shaped repo at transformers' 5 GB shards (191, as the real repo)
1000     DeepSeek-V3 re-sharded into 1,000 files (MB-sized headers in total, MoE experts)
=======  ===========================================================================================

Readers, each timed from process start to exit (median of --repeat), with its CPU time (user + sys of
the child, median) and the requests and bytes the server answered:

* inspector: ``inspect REPO --json`` (the console script; it also parses config.json and counts)
* huggingface_hub ``get_safetensors_metadata`` (``HfApi(endpoint=…)``)
* huggingface_hub ``get_sharded_safetensors_metadata``: one request for every header, default branch
  only; it answers parsed headers, not their bytes (sharded repos only)
* hf-mem 0.5.6 (``pip install -e '.[bench]'``): it builds every URL on https://huggingface.co, so its
  httpx client's ``send`` is patched in its process to send them to the local server instead
* ours again on the header cache a first run filled: online (a branch: the listing, one request) and
  with ``HF_HUB_OFFLINE=1`` (no request); what the first costs above the second is the HTTP client's
  start (its imports and TLS set-up) and the round trip

and two reference lines: ``python -c pass`` (interpreter start) and the floor: the round trips any
reader must wait for one after another (one: a single file's header, or a sharded repo's one answer on
its default branch) × the delay, plus interpreter start.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

GET = """import sys
from huggingface_hub import HfApi
HfApi(endpoint=sys.argv[1]).get_safetensors_metadata(sys.argv[2])
"""
SHARDED = """import sys
from huggingface_hub import HfApi
HfApi(endpoint=sys.argv[1]).get_sharded_safetensors_metadata(sys.argv[2])
"""
HF_MEM = """import sys
from urllib.parse import urlsplit
import httpx2
local = urlsplit(sys.argv[1])
send = httpx2.AsyncClient.send
async def to_local(self, request, **kw):
    if request.url.host == "huggingface.co":
        request.url = request.url.copy_with(scheme=local.scheme, host=local.hostname, port=local.port)
        request.headers["Host"] = local.netloc
    return await send(self, request, **kw)
httpx2.AsyncClient.send = to_local
from hf_mem.run import run
run(sys.argv[2])
"""


def resharded(config: dict, tensors, repo_id: str, n: int, out: Path) -> Path:
    """``config``'s checkpoint under greedy sharding at the smallest size that gives ``n`` files."""
    import make_snapshots as ms

    entries = list(tensors(config))
    size = sum(ms.nbytes(e) for e in entries) // n
    while len(ms.shard(entries, size, (5, 5))) > n:
        size = int(size * 1.002) + 1
    ms.build(ms.Model(repo_id, config, tensors, size), out)
    return out / repo_id.replace("/", "__")


def repos(work: Path, wanted: set[int]) -> list[tuple[int, str, Path]]:
    import make_snapshots as ms

    from inspector.sources.bundled import ALIASES, bundled_path

    found = []
    if 1 in wanted:
        found.append((1, "Qwen/Qwen3-0.6B", bundled_path(ALIASES["qwen3-0.6b"])))
    if 2 in wanted:
        found.append((2, "microsoft/phi-2", bundled_path(ALIASES["phi-2"])))
    if 4 in wanted:
        found.append((4, "meta-llama/Meta-Llama-3-8B", bundled_path(ALIASES["llama3-8b"])))
    if 15 in wanted:
        found.append((15, "bench/Llama-3-70B-15-shards",
                      resharded(ms.LLAMA3_70B, ms.llama_like, "bench/Llama-3-70B-15-shards", 15, work)))
    if 191 in wanted:
        config = {**ms.LLAMA3_8B, "hidden_size": 16384, "intermediate_size": 53248, "num_attention_heads": 128,
                  "num_hidden_layers": 126, "max_position_embeddings": 131072}
        ms.build(ms.Model("bench/Llama-405B-shaped", config, ms.llama_like, 5 * ms.GB), work)
        found.append((191, "bench/Llama-405B-shaped", work / "bench__Llama-405B-shaped"))
    if 1000 in wanted:
        found.append((1000, "bench/DeepSeek-V3-1000-shards",
                      resharded(ms.DEEPSEEK_V3, ms.deepseek_v3, "bench/DeepSeek-V3-1000-shards", 1000, work)))
    return found


WARM = "inspector, cached: inspect REPO --json again"
OFFLINE = "inspector, cached, HF_HUB_OFFLINE=1"


class RemoteHub:
    """scripts/hubserver.py in a subprocess, driven through its /_control/ endpoints."""

    def __init__(self, served: list[tuple[str, Path]]) -> None:
        args = [f"{repo}={folder}" for repo, folder in served]
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "hubserver.py"), *args],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def control(self, what: str) -> object:
        with urllib.request.urlopen(f"{self.url}/_control/{what}") as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child: user + sys, the last line of its error or "")."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu, "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["failed"])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", default="0,0.05,0.15", help="seconds before every answer, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="runs per cell; the median is printed")
    parser.add_argument("--shards", default="1,2,4,15,191,1000", help="which repos, by shard count")
    args = parser.parse_args()
    latencies = [float(x) for x in args.latency.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    inspect = shutil.which("inspect", path=str(Path(sys.executable).parent)) or "inspect"
    try:
        import hf_mem  # noqa: F401

        has_hf_mem = True
    except ImportError:
        has_hf_mem = False
    served = repos(work, {int(x) for x in args.shards.split(",")})
    server = RemoteHub([(repo, folder) for _, repo, folder in served])
    # an installed package has its bytecode compiled (pip does it); a checkout may not have it yet
    compileall.compile_dir(ROOT / "inspector", quiet=1)
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("HF_", "HUGGINGFACE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    base_env.update(HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", HF_ENDPOINT=server.url)
    start_times = [timed([sys.executable, "-c", "pass"], base_env)[0] for _ in range(args.repeat)]
    python_start = statistics.median(start_times)
    rows: list[tuple[float, int, str, str, float | None, float | None, int, int, str]] = []
    try:
        for latency in latencies:
            server.control(f"latency?seconds={latency}")
            for shards, repo, _ in served:
                readers = [("inspector: inspect REPO --json", [inspect, repo, "--json"]),
                           ("huggingface_hub get_safetensors_metadata", [sys.executable, "-c", GET, server.url, repo])]
                if shards > 1:
                    readers.append(("huggingface_hub get_sharded_safetensors_metadata",
                                    [sys.executable, "-c", SHARDED, server.url, repo]))
                if has_hf_mem:
                    readers.append(("hf-mem 0.5.6 (host rewritten)", [sys.executable, "-c", HF_MEM, server.url, repo]))
                # ours again with the header cache a first run filled: online (the listing, one request)
                # and offline (none); the same HF_HOME every run
                warm_home = work / f"warm-{shards}-{latency}"
                subprocess.run([inspect, repo, "--json"], env={**base_env, "HF_HOME": str(warm_home)},
                               stdout=subprocess.DEVNULL, check=True)
                readers += [(WARM, [inspect, repo, "--json"]), (OFFLINE, [inspect, repo, "--json"])]
                # one run of every reader in turn, --repeat times: a slow spell of the machine
                # falls on all of them rather than on one
                times: dict[str, list[float]] = {label: [] for label, _ in readers}
                cpus: dict[str, list[float]] = {label: [] for label, _ in readers}
                errors: dict[str, str] = {}
                logs: dict[str, list[dict[str, Any]]] = {}
                # a first round untimed: the first run of a cell was up to a fifth slower than the rest
                # (files and the server warming), whichever reader ran first
                for round_ in range(args.repeat + 1):
                    for label, command in readers:
                        if label in errors:
                            continue
                        home = warm_home if label in (WARM, OFFLINE) else work / f"home-{time.perf_counter_ns()}"
                        server.control("clear")
                        elapsed, cpu, error = timed(command, {**base_env, "HF_HOME": str(home),
                                                              **({"HF_HUB_OFFLINE": "1"} if label == OFFLINE else {})})
                        log = server.control("log")
                        if home != warm_home:
                            shutil.rmtree(home, ignore_errors=True)
                        assert isinstance(log, list)
                        logs[label] = log
                        if error:
                            errors[label] = error
                        elif round_:
                            times[label].append(elapsed)
                            cpus[label].append(cpu)
                for label, _ in readers:
                    log = logs[label]
                    rows.append((latency, shards, repo, label,
                                 statistics.median(times[label]) if times[label] else None,
                                 statistics.median(cpus[label]) if cpus[label] else None, len(log),
                                 sum(e["sent"] for e in log), errors.get(label, "")))
                rows.append((latency, shards, repo, "floor: 1 round trip + python start",
                             latency + python_start, None, 0, 0, ""))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)

    from benchmarks_results import save

    saved = save("hub", {"repeat": args.repeat, "python_start_seconds": python_start, "rows": [
        {"delay_seconds": latency, "shards": shards, "reader": label, "seconds": seconds, "cpu_seconds": cpu,
         "requests": requests, "bytes": nbytes, "error": error}
        for latency, shards, _repo, label, seconds, cpu, requests, nbytes, error in rows]})
    print(f"saved {saved.relative_to(ROOT)}")
    print(f"cold reads, a fresh process and HF_HOME each; median of {args.repeat}; python -c pass "
          f"{python_start:.3f} s; hf-mem {'0.5.6' if has_hf_mem else 'not installed'}")
    print(f"{'delay':>6} {'shards':>6}  {'reader':52} {'seconds':>8} {'vs us':>6} {'cpu s':>6} {'requests':>8} "
          f"{'bytes':>13}")
    ours: dict[tuple[float, int], float] = {}
    for latency, shards, _repo, label, seconds, cpu, requests, nbytes, error in rows:
        if label.startswith("inspector:") and seconds:
            ours[(latency, shards)] = seconds
        us = ours.get((latency, shards))
        ratio = f"{seconds / us:5.2f}x" if seconds and us else ""
        shown = f"{seconds:8.3f}" if seconds is not None else f"  failed: {error[:60]}"
        cpu_shown = f"{cpu:6.3f}" if cpu is not None else ""
        print(f"{latency * 1000:4.0f}ms {shards:6d}  {label:52} {shown} {ratio:>6} {cpu_shown:>6} {requests:8d} "
              f"{nbytes:13,d}")


if __name__ == "__main__":
    main()
