"""Issue 54's local floors, whole processes taking turns, medians of --repeat rounds:

* ``inspect FOLDER --json`` on DeepSeek-V3 as 163 full-size sparse files (a first run: an empty HF_HOME; and
  warm: the HF_HOME of a run before) beside a process calling huggingface_hub's
  ``get_local_safetensors_metadata(FOLDER)`` (target: theirs / ours >= 1.5);
* ``inspect FOLDER --json`` on one header of 1,000,000 tensors: CPU of the whole process (target <= 1.5 s);
* ``inspect diff deepseek-v3 deepseek-v3 --json`` beside ``inspect deepseek-v3 --json`` (target: <= 1.5x),
  in this tree and in a baseline commit's;
* start-up: ``inspect llama3-8b`` (the table) beside ``hf-mem --help``, CPU of each (target: ours <= theirs).

    python benchmarks/bench_floors.py [--baseline 80f4853] [--repeat 7]

Each round runs every command once, in the same order; a ratio is the median of the rounds' ratios. Results
go to benchmarks/results/floors.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GET_LOCAL = "import sys; from huggingface_hub import get_local_safetensors_metadata as g; g(sys.argv[1])"
# hf-mem's console script (``pip install -e '.[bench]'``), as its entry point runs it
HF_MEM_HELP = "import sys; sys.argv = ['hf-mem', '--help']; from hf_mem.cli import main; sys.exit(main())"


def run(command: list[str], *, home: str, tree: Path = ROOT) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the child's own) of one process."""
    # bytecode as an installed package has it (pip compiles it): a PYTHONDONTWRITEBYTECODE inherited from the
    # shell left every module edited since its last .pyc compiled again in every timed process
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "HF_HOME": home,
           "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tree)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(command)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def inspect(*args: str) -> list[str]:
    return [sys.executable, "-m", "inspector", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="80f4853")
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT))
    from bench_inspect import materialise
    from bench_versions import baseline_tree
    from benchmarks_results import save

    from inspector.sources.bundled import ALIASES, bundled_path

    rounds: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, baseline_tree(options.baseline, "bench-floors-") as (base, _):
        folder = str(materialise(bundled_path(ALIASES["deepseek-v3"]), Path(tmp) / "deepseek-v3"))
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_inspect.py"), "--million",
                        str(Path(tmp) / "million")], check=True)
        warm_home = str(Path(tmp) / "warm")
        run(inspect(folder, "--json"), home=warm_home)
        rows = {
            "folder first run": lambda: run(inspect(folder, "--json"), home=tempfile.mkdtemp(dir=tmp)),
            "folder warm": lambda: run(inspect(folder, "--json"), home=warm_home),
            "get_local_safetensors_metadata": lambda: run([sys.executable, "-c", GET_LOCAL, folder], home=warm_home),
            "million": lambda: run(inspect(str(Path(tmp) / "million"), "--json"), home=warm_home),
            "read deepseek-v3": lambda: run(inspect("deepseek-v3", "--json"), home=warm_home),
            "diff deepseek-v3 deepseek-v3": lambda: run(inspect("diff", "deepseek-v3", "deepseek-v3", "--json"),
                                                        home=warm_home),
            f"diff deepseek-v3 deepseek-v3 at {options.baseline}": lambda: run(
                inspect("diff", "deepseek-v3", "deepseek-v3", "--json"), home=warm_home, tree=base),
            "table llama3-8b": lambda: run(inspect("llama3-8b"), home=warm_home),
            "hf-mem --help": lambda: run([sys.executable, "-c", HF_MEM_HELP], home=warm_home),
        }
        for name in rows:  # one untimed round: the .pyc files and the page cache
            rows[name]()
        for _ in range(options.repeat):
            for name, measure in rows.items():
                rounds.setdefault(name, []).append(measure())

    def ratio(theirs: str, ours: str) -> float:
        return statistics.median(t[0] / o[0] for t, o in zip(rounds[theirs], rounds[ours], strict=True))

    medians = {name: {"wall": statistics.median(w for w, _ in r), "cpu": statistics.median(c for _, c in r)}
               for name, r in rounds.items()}
    figures = {
        "repeat": options.repeat, "baseline": options.baseline, "medians": medians,
        "rounds": {name: [list(x) for x in r] for name, r in rounds.items()},
        "folder_first_run_ratio": ratio("get_local_safetensors_metadata", "folder first run"),
        "folder_warm_ratio": ratio("get_local_safetensors_metadata", "folder warm"),
        "diff_over_read": ratio("diff deepseek-v3 deepseek-v3", "read deepseek-v3"),
        "baseline_diff_over_read": ratio(f"diff deepseek-v3 deepseek-v3 at {options.baseline}", "read deepseek-v3"),
        "table_cpu_over_hf_mem_help": statistics.median(
            o[1] / t[1] for o, t in zip(rounds["table llama3-8b"], rounds["hf-mem --help"], strict=True)),
    }
    saved = save("floors", figures)
    print(f"saved {saved.relative_to(ROOT)}; medians of {options.repeat} rounds taking turns (wall, CPU):")
    for name, m in medians.items():
        print(f"  {name:48} {m['wall']:6.3f} s  {m['cpu']:6.3f} s CPU")
    print(f"DeepSeek-V3 folder, get_local_safetensors_metadata / inspect: first run "
          f"{figures['folder_first_run_ratio']:.2f}x, warm {figures['folder_warm_ratio']:.2f}x (target >= 1.5)")
    print(f"1,000,000 tensors: {medians['million']['cpu']:.2f} s CPU (target <= 1.5)")
    print(f"diff deepseek-v3 deepseek-v3 / inspect deepseek-v3: {figures['diff_over_read']:.2f}x "
          f"(at {options.baseline}: {figures['baseline_diff_over_read']:.2f}x; target <= 1.5)")
    print(f"inspect llama3-8b (the table) CPU / hf-mem --help CPU: {figures['table_cpu_over_hf_mem_help']:.2f} "
          "(target <= 1)")


if __name__ == "__main__":
    main()
