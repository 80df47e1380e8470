"""A diffusers pipeline read cold from a Hub, side by side with hf-mem: time, requests, bytes, and the
per-component parameters each reports.

    pip install -e '.[bench]' torch==2.13.0 diffusers==0.42.1   # torch and diffusers build the repo
    python benchmarks/bench_pipeline.py [--latency 0,0.05] [--repeat 5]

The repo is stable-diffusion-v1-5 as its listing has it: model_index.json, unet/, vae/, text_encoder/ with
their real configs (fixtures/diffusers, from the public mirror named in SOURCE.txt), each component's
safetensors header built by diffusers and transformers from that config on the meta device, served as a
full-size file (header, then zeros), beside the single-file checkpoints v1-5-pruned.safetensors and
v1-5-pruned-emaonly.safetensors (7.7 GB and 4.3 GB on the real repo) and an fp16 copy of the unet. The server
is scripts/hubserver.py in a process of its own, with a set delay before every answer; each reader is
a fresh process with an empty HF_HOME (hf-mem's requests to huggingface.co are sent to the local server,
as in bench_hub.py). Published breakdown (hf-mem on the real repo, in the issue): unet 859.52 M,
text_encoder 123.06 M, vae 83.65 M.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_hub import HF_MEM, ROOT, RemoteHub

from inspector.formats.safetensors import encode_header
from inspector.sources.snapshot import write_snapshot

REPO = "stable-diffusion-v1-5/stable-diffusion-v1-5"
FIXTURE = ROOT / "fixtures" / "diffusers" / "stable-diffusion-v1-5"
WEIGHTS = {"unet": "diffusion_pytorch_model.safetensors", "vae": "diffusion_pytorch_model.safetensors",
           "text_encoder": "model.safetensors"}
HF_MEM_JSON = HF_MEM.replace("run(sys.argv[2])", "import json\n"
                             "print(json.dumps(run(sys.argv[2], details=True).to_json()))")


def build(folder: Path) -> Path:
    """The repo as a header snapshot the server serves: real configs, headers from the meta-device models."""
    import diffusers
    import torch
    from transformers import CLIPTextConfig, CLIPTextModel

    configs = {name: json.loads((FIXTURE / name / "config.json").read_text()) for name in WEIGHTS}
    with torch.device("meta"):
        models = {"unet": diffusers.UNet2DConditionModel.from_config(configs["unet"]),
                  "vae": diffusers.AutoencoderKL.from_config(configs["vae"]),
                  "text_encoder": CLIPTextModel(CLIPTextConfig(**configs["text_encoder"]))}
    stored = {"model_index.json": (FIXTURE / "model_index.json").read_bytes()}
    headers: dict[str, bytes] = {}
    sizes: dict[str, int] = {}
    for name, model in models.items():
        blob, data = encode_header([(k, "F32", tuple(v.shape)) for k, v in model.state_dict().items()],
                                   {"format": "pt"})
        stored[f"{name}/config.json"] = (FIXTURE / name / "config.json").read_bytes()
        headers[f"{name}/{WEIGHTS[name]}"] = blob
        sizes[f"{name}/{WEIGHTS[name]}"] = len(blob) + data
    headers["unet/diffusion_pytorch_model.fp16.safetensors"] = headers["unet/" + WEIGHTS["unet"]]
    sizes["unet/diffusion_pytorch_model.fp16.safetensors"] = sizes["unet/" + WEIGHTS["unet"]]
    for single in ("v1-5-pruned.safetensors", "v1-5-pruned-emaonly.safetensors"):
        headers[single], sizes[single] = headers["unet/" + WEIGHTS["unet"]], sizes["unet/" + WEIGHTS["unet"]]
    sizes |= {name: len(raw) for name, raw in stored.items()}
    write_snapshot(folder, repo_id=REPO, revision=None, files=sorted(sizes.items()), headers=headers,
                   stored=stored, provenance="bench_pipeline.py: SD-1.5's real configs, meta-device headers")
    return folder


def run(command: list[str], env: dict[str, str]) -> tuple[float, str, str]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout, "" if done.returncode == 0 else done.stderr.strip()[-300:]


def counts(label: str, out: str) -> dict[str, int]:
    doc = json.loads(out)
    if label.startswith("inspector"):
        return {c["name"]: c["parameters"] for c in doc["components"] if c["tensors"]}
    return {k.lower(): v["param_count"] for k, v in doc["memory"]["components"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", default="0,0.05", help="seconds before every answer, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="runs per cell; the median is printed")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    inspect = shutil.which("inspect", path=str(Path(sys.executable).parent)) or "inspect"
    server = RemoteHub([(REPO, build(work / "repo"))])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", HF_ENDPOINT=server.url)
    readers = [("inspector: inspect REPO --json", [inspect, REPO, "--json"]),
               ("hf-mem 0.5.6 (host rewritten)", [sys.executable, "-c", HF_MEM_JSON, server.url, REPO])]
    print(f"{REPO} (shape of the real listing), cold, a fresh process and HF_HOME each; median of {args.repeat}")
    print(f"{'delay':>6}  {'reader':34} {'seconds':>8} {'requests':>8} {'bytes':>10}  per-component parameters")
    rows: list[dict[str, object]] = []
    try:
        for latency in (float(x) for x in args.latency.split(",")):
            server.control(f"latency?seconds={latency}")
            times: dict[str, list[float]] = {label: [] for label, _ in readers}
            seen: dict[str, tuple[str, int, int]] = {}
            for _ in range(args.repeat):
                for label, command in readers:
                    home = work / f"home-{time.perf_counter_ns()}"
                    server.control("clear")
                    elapsed, out, error = run(command, {**env, "HF_HOME": str(home)})
                    log = server.control("log")
                    shutil.rmtree(home, ignore_errors=True)
                    assert isinstance(log, list)
                    if error:
                        seen[label] = (f"failed: {error}", len(log), sum(e["sent"] for e in log))
                        continue
                    times[label].append(elapsed)
                    shown = ", ".join(f"{k} {v:,}" for k, v in sorted(counts(label, out).items()))
                    seen[label] = (shown, len(log), sum(e["sent"] for e in log))
            for label, _ in readers:
                shown, requests, sent = seen[label]
                seconds = f"{statistics.median(times[label]):.3f}" if times[label] else "—"
                print(f"{latency:>6.2f}  {label:34} {seconds:>8} {requests:>8} {sent:>10,}  {shown}")
                rows.append({"delay_seconds": latency, "reader": label,
                             "seconds": statistics.median(times[label]) if times[label] else None,
                             "requests": requests, "bytes": sent, "components": shown})
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    from benchmarks_results import save

    print(f"saved {save('pipeline', {'repo': REPO, 'repeat': args.repeat, 'rows': rows}).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
