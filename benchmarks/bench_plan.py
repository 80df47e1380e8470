"""`inspect plan` of a 70B model over three GPU types: whole processes, from the bundled header snapshot (what
the header cache serves a second run), medians of 5; then the plan of the most layouts (every GPU, 8 nodes:
64 GPUs a type) in this tree and in a baseline commit's, taking turns, CPU seconds of each process.

    python benchmarks/bench_plan.py [--baseline d84fe2b] [--repeat 5]

Prints the time and the number of layouts checked and fitted, and the two trees' CPU with the ratio; results
go to benchmarks/results/plan.json.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARGS = ["plan", "llama3-70b", "--gpu", "H100,A100-80GB,L40S", "--json"]
#: every GPU of the catalogue × 1 to 64 of each (issue 54: 8.3 s of CPU, the KV bytes recomputed ~100 times a layout)
MANY = ["plan", "llama3-70b", "--nodes", "8", "--json"]


def cpu_of(tree: Path, args: list[str], home: str) -> tuple[float, bytes]:
    """The CPU seconds (user + system) of one ``inspect`` process run from ``tree``, and its stdout."""
    import os
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {"HF_HOME": home, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)}
    env.update({k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")})  # as this machine sets them
    done = subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, check=True, cwd=tree,
                          env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done.stdout


def against_baseline(commit: str, repeat: int) -> dict[str, object]:
    """``MANY`` in this tree and the baseline's, taking turns, ``repeat`` times each after one untimed run."""
    from bench_versions import ROOT, baseline_tree

    cpu: dict[str, list[float]] = {"this": [], "baseline": []}
    with baseline_tree(commit, "bench-plan-") as (base, _), tempfile.TemporaryDirectory() as home:
        trees = {"this": ROOT, "baseline": base}
        outputs = {name: cpu_of(tree, MANY, home)[1] for name, tree in trees.items()}  # untimed: the caches
        for _ in range(repeat):
            for name, tree in trees.items():
                cpu[name].append(cpu_of(tree, MANY, home)[0])
    this, baseline = statistics.median(cpu["this"]), statistics.median(cpu["baseline"])
    same = outputs["this"] == outputs["baseline"]
    # the document has gained keys since (the verdict's "fits", "suggestions"): the plan is its layouts
    docs = {name: json.loads(out) for name, out in outputs.items()}
    same_layouts = docs["this"]["layouts"] == docs["baseline"]["layouts"]
    print(f"inspect {' '.join(MANY)}: {len(docs['this']['layouts'])} layouts; CPU median of {repeat}: "
          f"this tree {this:.2f} s, {commit} {baseline:.2f} s ({baseline / this:.2f}x); output "
          f"{'byte-identical' if same else 'the same layouts' if same_layouts else 'DIFFERS'}")
    return {"args": MANY, "baseline": commit, "cpu_this": cpu["this"], "cpu_baseline": cpu["baseline"],
            "median_cpu_this": this, "median_cpu_baseline": baseline, "same_output": same,
            "same_layouts": same_layouts}


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="d84fe2b", help="the commit to compare the many-layout plan with")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    times, layouts = [], 0
    with tempfile.TemporaryDirectory() as home:
        for _ in range(6):
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "inspector", *ARGS], capture_output=True, text=True,
                                  env={"HF_HOME": home, "PATH": "/usr/bin:/bin"}, check=True)
            times.append(time.perf_counter() - t)
            layouts = len(json.loads(done.stdout)["layouts"])
    median = statistics.median(times[1:])  # the first run writes the config figure cache
    print(f"inspect {' '.join(ARGS)}: {layouts} layouts, median {median:.3f} s of 5 (target under 1 s)")
    sys.path.insert(0, str(Path(__file__).parent))
    from benchmarks_results import save

    many = against_baseline(options.baseline, options.repeat)
    save("plan", {"args": ARGS, "layouts": layouts, "median_seconds": median, "runs": times, "many_layouts": many})


if __name__ == "__main__":
    main()
