"""Issue 66: classification whose cost does not grow with the distinct name patterns of a header.

Three headers of N tensors each: a regular model's names (nine a layer, the Llama names), a hostile one whose every
tensor sits in its own layer with its own run of digits inside a part (``model.layers.N.mlp.wN.weight``), and one
whose every tensor has its own letters (``model.layers.N.mlp.w<letters>.weight``, out of reach of the shared
answers: each such name is a table search). Two figures each, medians of --repeat rounds taking turns:

* ``classify_all`` of the N names in this process (CPU), its memos emptied first;
* ``inspect FILE --json`` on a header of the N tensors, a whole process (CPU).

    python benchmarks/bench_patterns.py [--tensors 120000] [--repeat 5]

Target: the own-layer header within 2x the regular one's per-tensor time. Results go to
benchmarks/results/patterns.json.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LLAMA = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
         "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"]


def letters(i: int) -> str:
    out = ""
    while True:
        out = chr(97 + i % 26) + out
        i //= 26
        if i == 0:
            return out


def headers(n: int) -> dict[str, list[str]]:
    return {
        "regular": [f"model.layers.{i // 9}.{p}.weight" for i, p in zip(range(n), itertools.cycle(LLAMA))],
        "own layer": [f"model.layers.{i}.mlp.w{i}.weight" for i in range(n)],
        "own letters": [f"model.layers.{i}.mlp.w{letters(i)}.weight" for i in range(n)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tensors", type=int, default=120_000, help="at most stats.MAX_LAYERS")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT))
    from bench_floors import inspect, run
    from benchmarks_results import save

    from inspector.analysis.facts import roles
    from inspector.formats.safetensors import encode_header

    names = headers(options.tensors)
    rounds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for kind, ns in names.items():
            blob, data = encode_header([(n, "F32", (1,)) for n in ns])
            path = Path(tmp) / kind.replace(" ", "-") / "model.safetensors"
            path.parent.mkdir()
            with path.open("wb") as fh:
                fh.write(blob)
                fh.truncate(len(blob) + data)
            files[kind] = str(path.parent)
        home = str(Path(tmp) / "home")
        for kind in names:  # one untimed round
            run(inspect(files[kind], "--json"), home=home)
        for _ in range(options.repeat):
            for kind, ns in names.items():
                for memo in (roles._FAST, roles._SHAPES, roles._NUMBERS):
                    memo.clear()
                start = time.process_time()
                roles.classify_all(ns)
                rounds.setdefault(f"classify_all {kind}", []).append(time.process_time() - start)
                rounds.setdefault(f"inspect --json {kind}", []).append(
                    run(inspect(files[kind], "--json"), home=home)[1])
    medians = {name: statistics.median(r) for name, r in rounds.items()}
    per_tensor = {name: m / options.tensors * 1e6 for name, m in medians.items()}
    figures = {"tensors": options.tensors, "repeat": options.repeat, "medians_cpu_s": medians,
               "per_tensor_us": per_tensor, "rounds": rounds,
               "own_layer_over_regular": {
                   what: medians[f"{what} own layer"] / medians[f"{what} regular"]
                   for what in ("classify_all", "inspect --json")},
               "own_letters_over_regular": {
                   what: medians[f"{what} own letters"] / medians[f"{what} regular"]
                   for what in ("classify_all", "inspect --json")}}
    saved = save("patterns", figures)
    print(f"saved {saved.relative_to(ROOT)}; {options.tensors:,} tensors, medians of {options.repeat} rounds (CPU):")
    for name, m in medians.items():
        print(f"  {name:32} {m:7.3f} s  {per_tensor[name]:6.2f} µs a tensor")
    for what in ("classify_all", "inspect --json"):
        print(f"{what}: own layer / regular {figures['own_layer_over_regular'][what]:.2f}x (target <= 2), "
              f"own letters / regular {figures['own_letters_over_regular'][what]:.2f}x")


if __name__ == "__main__":
    main()
