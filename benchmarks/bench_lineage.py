"""`inspect lineage` of a 7B-shaped fine-tune against three candidates on the test Hub at 50 ms a request, beside
what a user does today: download both checkpoints and compare every tensor (safetensors + numpy).

    python benchmarks/bench_lineage.py [--latency 0.05] [--no-baseline]

Four repos serve the bundled Mistral-7B-Instruct-v0.2 header snapshot as full-size files whose tensor data is made on
the fly (``hubserver.Tiled``): the base tiles 1 MiB of BF16 values drawn N(0, 0.02); the fine-tune tiles the same
values plus N(0, 0.002) in layers 28–31 and the base's elsewhere; a sibling fine-tune does so in layers 0–3; an
unrelated model tiles an independent draw. ``inspect lineage acme/tuned acme/base acme/sibling acme/other`` runs cold
(fresh HF_HOME: listings, headers, samples) and warm (headers cached). The baseline downloads acme/tuned and acme/base
with huggingface_hub's ``snapshot_download`` (the weights only) and compares every tensor's bytes with
``safetensors.safe_open`` and ``numpy.array_equal``. Results go to benchmarks/results/lineage.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(Path(__file__).parent)]
SNAPSHOT = ROOT / "inspector" / "snapshots" / "mistralai__Mistral-7B-Instruct-v0.2"
LAYER = re.compile(r"\.layers\.(\d+)\.")


def _blocks() -> list[bytes]:
    """BF16 values (1 MiB each): the base's draw, it plus a fine-tune's change, an independent draw."""
    import numpy as np

    rng = np.random.default_rng(0)
    base = rng.normal(0, 0.02, 1 << 19).astype(np.float32)
    tuned = base + rng.normal(0, 0.002, 1 << 19).astype(np.float32)
    other = rng.normal(0, 0.02, 1 << 19).astype(np.float32)
    return [(x.view(np.uint32) >> 16).astype(np.uint16).tobytes() for x in (base, tuned, other)]


def _serve(server: Any, repo: str, block_of: Any) -> None:
    from hubserver import Tiled, VFile

    import inspector
    from inspector.sources.snapshot import StoredHeaders, read_manifest, snapshot_files

    checkpoint = inspector.open_model(str(SNAPSHOT))
    placed = {h.file: h for h in checkpoint.headers}
    stored = StoredHeaders(SNAPSHOT)
    files: dict[str, Any] = {}
    for f in snapshot_files(read_manifest(SNAPSHOT), SNAPSHOT):
        if f.header:
            h = placed[f.path]
            assert h.data_start is not None
            regions = sorted((h.data_start + t.begin, h.data_start + t.end, block_of(t.name)) for t in h.tensors)
            files[f.path] = VFile(f.size or 0, stored.read(f), True, Tiled(regions, BLOCKS), salt=repo)
        elif f.stored:
            files[f.path] = (SNAPSHOT / f.path).read_bytes()
    server.add_files(repo, files)


def _layers(lo: int, hi: int) -> Any:
    def block_of(name: str) -> int:
        m = LAYER.search(name)
        return 1 if m and lo <= int(m.group(1)) <= hi else 0

    return block_of


def _baseline(url: str, home: str) -> dict[str, Any]:
    """Download acme/tuned and acme/base (weights only) and compare every tensor's bytes."""
    import numpy as np
    import torch
    from huggingface_hub import snapshot_download
    from safetensors import safe_open

    os.environ["HF_ENDPOINT"], os.environ["HF_HOME"] = url, home
    start = time.perf_counter()
    folders = [Path(snapshot_download(repo, endpoint=url, cache_dir=home, allow_patterns=["*.safetensors"]))
               for repo in ("acme/tuned", "acme/base")]
    downloaded = time.perf_counter() - start
    size = sum(p.stat().st_size for folder in folders for p in folder.glob("*.safetensors"))
    changed = same = 0
    handles = [{} for _ in folders]
    for i, folder in enumerate(folders):
        for p in sorted(folder.glob("*.safetensors")):
            f = safe_open(str(p), framework="pt")
            handles[i].update({k: f for k in f.keys()})  # noqa: SIM118 (safe_open is not iterable)
    for name, f in handles[0].items():
        a = f.get_tensor(name).view(dtype=torch.int16).numpy()  # BF16's bytes as int16: numpy has no bfloat16
        b = handles[1][name].get_tensor(name).view(dtype=torch.int16).numpy()
        if np.array_equal(a, b):
            same += 1
        else:
            changed += 1
    return {"seconds": time.perf_counter() - start, "download_seconds": downloaded, "bytes": size,
            "tensors_changed": changed, "tensors_same": same}


BLOCKS = _blocks()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    from hubserver import HubServer

    results: dict[str, Any] = {"latency": args.latency}
    with HubServer() as server, tempfile.TemporaryDirectory() as home:
        _serve(server, "acme/base", lambda name: 0)
        _serve(server, "acme/tuned", _layers(28, 31))
        _serve(server, "acme/sibling", _layers(0, 3))
        _serve(server, "acme/other", lambda name: 2)
        server.state.latency = args.latency
        env = {"HF_HOME": home, "HF_ENDPOINT": server.url, "PATH": "/usr/bin:/bin", "HF_HUB_DISABLE_TELEMETRY": "1"}
        command = [sys.executable, "-m", "inspector", "lineage", "acme/tuned", "acme/base", "acme/sibling",
                   "acme/other", "--json"]
        for run in ("cold", "warm"):
            start = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            seconds = time.perf_counter() - start
            doc = json.loads(done.stdout)
            results[run] = {"seconds": seconds, "bytes_read": doc["bytes_read"], "requests": doc["requests"],
                            "model_bytes_read": doc["model_bytes_read"], "weights_bytes": doc["weights_bytes"],
                            "verdict": doc["verdict"], "base": doc["base"],
                            "relations": {c["model"]: c["relation"] for c in doc["candidates"]},
                            "changed_layers": doc["candidates"][0]["changed_layers"]}
        if not args.no_baseline:
            with tempfile.TemporaryDirectory() as cache:
                results["baseline"] = _baseline(server.url, cache)
    cold = results["cold"]
    print(f"inspect lineage, Mistral-7B shape, 3 candidates, {args.latency * 1000:.0f} ms a request")
    for run in ("cold", "warm"):
        r = results[run]
        print(f"  {run}: {r['seconds']:.2f} s; {r['bytes_read']:,} B of tensor data read in {r['requests']:,} requests "
              f"({r['model_bytes_read'] / r['weights_bytes']:.4%} of the model's {r['weights_bytes']:,} B); "
              f"verdict {r['verdict']} of {r['base']}, changed layers {r['changed_layers']}")
    print(f"  relations: {cold['relations']}")
    if "baseline" in results:
        b = results["baseline"]
        print(f"  download both and compare (snapshot_download + safetensors + numpy): {b['seconds']:.1f} s "
              f"({b['download_seconds']:.1f} s downloading {b['bytes']:,} B); {b['tensors_changed']} tensors "
              f"changed, {b['tensors_same']} the same")
        print(f"  lineage (cold) is {b['seconds'] / cold['seconds']:.0f}x faster and reads "
              f"{b['bytes'] / max(1, cold['bytes_read']):,.0f}x fewer bytes")
    from benchmarks_results import save

    save("lineage", results)


if __name__ == "__main__":
    main()
