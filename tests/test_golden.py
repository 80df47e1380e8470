"""Every command × every output format on the bundled models, byte for byte (issue 49: "every output byte-identical
before and after the re-shape ... a golden test over every command × format").

This is a change detector, not a source of any figure: the figures themselves are held by the tests that name their
sources. A re-shape of the code (records split, modules moved) must leave every output as it was; a change that
means to alter an output regenerates the digests and says so in its commit:

    INSPECTOR_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py

fixtures/golden/outputs.json keeps, for each case, the exit code, the output's length and its SHA-256 (the HTML
reports run to hundreds of kB; a digest says which case changed, and running the case shows how)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "fixtures" / "golden" / "outputs.json"
FORMATS = ("table", "json", "markdown", "html")

#: each command on the bundled models that exercise it (dense, MoE, MLA, GQA, a pipeline of layouts, a fine-tune)
CASES: dict[str, tuple[str, ...]] = {
    "inspect llama3-8b": ("llama3-8b",),
    "inspect deepseek-v3": ("deepseek-v3",),
    "inspect gpt2 --tensors": ("gpt2", "--tensors"),
    "estimate llama3-8b H100": ("estimate", "llama3-8b", "--gpu", "H100"),
    "estimate mixtral-8x7b H100x2 llama.cpp": ("estimate", "mixtral-8x7b", "--gpu", "H100x2", "--engine", "llama.cpp"),
    "estimate deepseek-v3 H100x8 pipeline 2": ("estimate", "deepseek-v3", "--gpu", "H100x8", "--pipeline", "2"),
    "estimate gemma-2b L4 sglang": ("estimate", "gemma-2b", "--gpu", "L4", "--engine", "sglang"),
    "plan llama3-70b": ("plan", "llama3-70b", "--gpu", "H100,L40S", "--max-gpus", "4"),
    "train llama3-8b qlora RTX4090": ("train", "llama3-8b", "--method", "qlora", "--gpu", "RTX4090"),
    "train mixtral-8x7b lora zero 3": ("train", "mixtral-8x7b", "--method", "lora", "--gpu", "H100x8", "--zero", "3"),
    "train llama3-8b full dpo checkpointing": ("train", "llama3-8b", "--method", "full", "--stage", "dpo",
                                               "--gpu", "H100x8", "--zero", "3", "--checkpointing"),
    "diff llama2-7b llama3-8b": ("diff", "llama2-7b", "llama3-8b"),
    "compare": ("compare", "llama3-8b", "mistral-7b", "qwen2.5-7b"),
    "audit gpt2": ("audit", "gpt2"),
    "inspect tinyllama --files": ("tinyllama", "--files"),
}


def _run(cli, tmp_path: Path, args: tuple[str, ...], fmt: str) -> dict[str, object]:
    out = tmp_path / "out.html"
    extra = ("--format", fmt, *(("-o", str(out)) if fmt == "html" else ()))
    r = cli(*args, *extra)
    text = out.read_text() if fmt == "html" and r.code == 0 and out.exists() else r.out
    if out.exists():
        out.unlink()
    data = text.encode()
    return {"exit": r.code, "length": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_every_command_and_format_is_as_it_was(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    found = {f"{case} [{fmt}]": _run(cli, tmp_path, args, fmt) for case, args in CASES.items() for fmt in FORMATS}
    assert sum(1 for v in found.values() if v["exit"] == 0) >= 40  # most cases draw in every format
    if os.environ.get("INSPECTOR_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    changed = sorted(k for k in found.keys() | expected.keys() if found.get(k) != expected.get(k))
    assert not changed, f"outputs changed (run each to see how; INSPECTOR_UPDATE_GOLDEN=1 if meant): {changed}"
