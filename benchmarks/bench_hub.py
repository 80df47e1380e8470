"""Hub reads side by side: our cold and warm fetch vs huggingface_hub's get_safetensors_metadata.

    python benchmarks/bench_hub.py [--latency 0.05] [--repeat 3]

Runs the local Hub server of the tests (tests/hubserver.py), in a process of its own so that it
does not share the readers' interpreter lock, with a set delay before every answer (standing for
the round trip), serving four repos as full-size virtual files:
Llama-3-8B (4 shards), Llama-3-70B (30), a Llama-3.1-405B-shaped repo (191, made here by the
snapshot generator) and DeepSeek-V3 (163 shards, MB-sized headers). For each reader it prints wall
time (best of --repeat), requests and bytes the server sent.

hf-mem is not run: it builds every URL on https://huggingface.co and has no endpoint setting, so
it cannot be pointed at a local server (checked in hf-mem 0.5.6).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "scripts")]


SHARD_GB = 5.0  # transformers' 5GB default gives the 191 shards of the real Llama-3.1-405B repo


def make_405b(out: Path) -> Path:
    import make_snapshots as ms

    config = {**ms.LLAMA3_8B, "hidden_size": 16384, "intermediate_size": 53248, "num_attention_heads": 128,
              "num_hidden_layers": 126, "max_position_embeddings": 131072}
    model = ms.Model("bench/Llama-405B-shaped", config, ms.llama_like, int(SHARD_GB * ms.GB))
    ms.build(model, out)
    return out / "bench__Llama-405B-shaped"


class RemoteHub:
    """tests/hubserver.py in a subprocess, driven through its /_control/ endpoints."""

    def __init__(self, repos: list[tuple[str, Path]]) -> None:
        import subprocess

        args = [f"{repo}={folder}" for repo, folder in repos]
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "hubserver.py"), *args],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def _get(self, what: str) -> object:
        import json
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/_control/{what}") as response:
            return json.loads(response.read())

    def set_latency(self, seconds: float) -> None:
        self._get(f"latency?seconds={seconds}")

    def clear_log(self) -> None:
        self._get("clear")

    def log(self) -> list[dict]:
        return self._get("log")  # type: ignore[return-value]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before every answer")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    os.environ["HF_HOME"] = str(work / "hf_home")
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ.pop("HF_HUB_OFFLINE", None)
    import huggingface_hub.constants as constants
    from huggingface_hub import HfApi
    from huggingface_hub.utils import close_session
    from huggingface_hub.utils import logging as hf_logging

    from inspector.aliases import ALIASES, bundled_path
    from inspector.hub import HeaderCache, HubOptions, open_hub

    hf_logging.set_verbosity_error()
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    constants.HF_HUB_DISABLE_PROGRESS_BARS = True
    constants.HF_HUB_OFFLINE = False
    repos = [
        ("meta-llama/Meta-Llama-3-8B", bundled_path(ALIASES["llama3-8b"])),
        ("meta-llama/Meta-Llama-3-70B", bundled_path(ALIASES["llama3-70b"])),
        ("bench/Llama-405B-shaped", make_405b(work / "snaps")),
        ("deepseek-ai/DeepSeek-V3", bundled_path(ALIASES["deepseek-v3"])),
    ]
    rows = []
    server = RemoteHub([(repo, folder) for repo, folder in repos])
    try:
        server.set_latency(args.latency)
        for repo, _ in repos:
            shards = None
            header_bytes = None
            sha = None

            def measure(label: str, fn) -> None:
                best = None
                for _ in range(args.repeat):
                    close_session()
                    server.clear_log()
                    t = time.perf_counter()
                    fn()
                    elapsed = time.perf_counter() - t
                    log = server.log()
                    got = (elapsed, len(log), sum(entry["sent"] for entry in log))
                    best = got if best is None or got[0] < best[0] else best
                assert best is not None
                rows.append((repo, label, *best, shards, header_bytes))

            def ours_cold() -> None:
                nonlocal shards, header_bytes, sha
                cache = HeaderCache(work / f"cache-{time.perf_counter_ns()}")
                c = open_hub(repo, options=HubOptions(endpoint=server.url), cache=cache)
                shards = len(c.headers)
                header_bytes = sum(h.data_start for h in c.headers)
                sha = c.revision

            measure("inspector, cold", ours_cold)
            warm = HeaderCache(work / "warm")
            open_hub(repo, options=HubOptions(endpoint=server.url), cache=warm)
            measure("inspector, warm (branch)", lambda: open_hub(repo, options=HubOptions(endpoint=server.url),
                                                                   cache=warm))
            measure("inspector, warm (pinned commit)",
                    lambda: open_hub(repo, sha, options=HubOptions(endpoint=server.url), cache=warm))
            api = HfApi(endpoint=server.url)
            measure("huggingface_hub get_safetensors_metadata",
                    lambda: api.get_safetensors_metadata(repo))
    finally:
        server.stop()

    print(f"round trip (injected): {args.latency * 1000:.0f} ms; best of {args.repeat}")
    print(f"{'repo':30} {'reader':42} {'seconds':>8} {'requests':>8} {'bytes':>12} {'shards':>6} "
          f"{'header bytes':>12}")
    for repo, label, seconds, requests, nbytes, shards, header_bytes in rows:
        print(f"{repo:30} {label:42} {seconds:8.3f} {requests:8d} {nbytes:12,d} {shards or 0:6d} "
              f"{header_bytes or 0:12,d}")
    print("\nhf-mem: not run (it hard-codes https://huggingface.co; no endpoint setting)")


if __name__ == "__main__":
    main()
