"""`inspect plan` of a 70B model over three GPU types: whole processes, from the bundled header snapshot (what
the header cache serves a second run), medians of 5.

    python benchmarks/bench_plan.py

Prints the time and the number of layouts checked and fitted; results go to benchmarks/results/plan.json.
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


def main() -> None:
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

    save("plan", {"args": ARGS, "layouts": layouts, "median_seconds": median, "runs": times})


if __name__ == "__main__":
    main()
