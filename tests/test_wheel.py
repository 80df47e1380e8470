"""The bundled snapshots work from an installed wheel, not only from a checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_carries_every_snapshot_and_inspects_from_site_packages(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(ROOT)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    committed = [p.relative_to(ROOT).as_posix() for p in (ROOT / "inspector" / "snapshots").rglob("*") if p.is_file()]
    assert committed and all(p in names for p in committed)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-m", "inspector", "deepseek-v3", "--json"], capture_output=True,
                          text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["totals"]["tensors"] == 91_991
    assert doc["model"]["origin"] == "bundled"
    code = "from inspector.sources import bundled; print(bundled.SNAPSHOT_ROOT)"
    where = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                           check=True)
    assert where.stdout.strip().startswith(str(target))  # the snapshots read are the wheel's
