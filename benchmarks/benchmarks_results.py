"""Where the benchmarks keep their results: benchmarks/results/NAME.json, with the machine, the Python
and package versions and the commit they ran on, so a table can be drawn from them later."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGES = ("hf-inspector", "huggingface_hub", "safetensors", "transformers", "hf-mem", "gguf")


def environment() -> dict[str, object]:
    def v(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=RESULTS.parent.parent).stdout.strip() or None
    return {"machine": {"platform": sys.platform, "processor": os.uname().machine, "cpus": os.cpu_count()},
            "python": sys.version.split()[0], "packages": {p: v(p) for p in PACKAGES}, "commit": commit,
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def save(name: str, figures: dict[str, object]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"figures": figures, **environment()}, indent=1) + "\n")
    return path
