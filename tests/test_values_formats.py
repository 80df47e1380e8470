"""Issue 52: ``diff --values`` says the same in every format: the table, markdown and the HTML page name
the same changed tensors (the JSON, which lists every tensor, decides which changed), and none of them
says "no differences" when values differ. The checkpoints are written by safetensors' own writer, with
chosen tensors' values changed, so which changed is known before the diff runs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import inspector


def write_pair(tmp_path: Path, layers: int, changed: set[int]) -> tuple[str, str]:
    tensors = {f"model.layers.{i}.mlp.up_proj.weight": np.arange(64, dtype=np.float32).reshape(8, 8) + i
               for i in range(layers)}
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    save_file(tensors, str(a / "model.safetensors"))
    for i in changed:
        name = f"model.layers.{i}.mlp.up_proj.weight"
        tensors[name] = tensors[name] * 2 + 1
    save_file(tensors, str(b / "model.safetensors"))
    return str(a), str(b)


NAME = re.compile(r"model\.layers\.\d+\.mlp\.up(?:\\_|_)proj\.weight")


def named(text: str) -> list[str]:
    return [m.replace("\\_", "_") for m in NAME.findall(text)]


@pytest.mark.parametrize(("layers", "changed"), [(6, {1, 4}), (50, set(range(0, 50, 1)) - {7}), (4, set())])
def test_every_format_names_the_changed_tensors(tmp_path: Path, layers: int, changed: set[int]) -> None:
    a, b = write_pair(tmp_path, layers, changed)
    result = inspector.diff(a, b, values=True)
    doc = result.to_dict()
    expected = [f"model.layers.{i}.mlp.up_proj.weight" for i in sorted(changed)]
    from_json = [t["name"] for t in doc["values"]["tensors"] if t["verdict"] == "changed"]
    assert sorted(from_json) == sorted(expected)  # what was written decides
    table = inspector.to_text(result, "table")
    md = inspector.to_text(result, "markdown")
    html = inspector.to_text(result, "html")
    section = html.split('<table id="value-changes">', 1)[1].split("</table>", 1)[0] if changed else ""
    listed_table = named(table.split("Values (sampled", 1)[1])
    assert listed_table == named(md.split("#### Values", 1)[1]) == named(section)
    assert len(listed_table) == min(len(changed), 40)  # each names as many as the table names
    assert set(listed_table) <= set(expected)
    says_none = "no differences"
    if changed:
        assert says_none not in table.lower() and says_none not in md.lower()
        assert "The two models hold the same tensors.</p>" not in html
        assert f"the values of {len(changed):,} tensor" in md
    else:
        assert says_none in table.lower() and says_none in md.lower()
    # the heat map marks a changed layer's cell red and no other
    reds = re.findall(r'class="heat-changed" title="mlp\.up layer (\d+)', html)
    assert sorted(map(int, reds)) == sorted(changed)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_size_of_a_change_is_numpys(tmp_path: Path, dtype: str) -> None:
    """Issue 52: each changed tensor says how much it changed over the sampled ranges that differ: the largest
    |B − A| and that over the largest |A| there, held to numpy's own arithmetic on the arrays written
    (every tensor here is read whole: no larger than the sample)."""
    rng = np.random.default_rng(0)
    a_arrays = {f"model.layers.{i}.mlp.up_proj.weight": rng.standard_normal((8, 16)).astype(dtype) for i in range(3)}
    b_arrays = dict(a_arrays)
    b_arrays["model.layers.1.mlp.up_proj.weight"] = (a_arrays["model.layers.1.mlp.up_proj.weight"] * 1.5).astype(dtype)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    save_file(a_arrays, str(a / "model.safetensors"))
    save_file(b_arrays, str(b / "model.safetensors"))
    doc = inspector.diff(str(a), str(b), values=True).to_dict()
    rows = {t["name"]: t for t in doc["values"]["tensors"]}
    name = "model.layers.1.mlp.up_proj.weight"
    xa, xb = a_arrays[name].astype(np.float64), b_arrays[name].astype(np.float64)
    expected = float(np.abs(xb - xa).max())
    assert rows[name]["verdict"] == "changed"
    assert rows[name]["max_abs_delta"] == pytest.approx(expected, rel=1e-12)
    assert rows[name]["relative_delta"] == pytest.approx(expected / float(np.abs(xa).max()), rel=1e-12)
    assert rows["model.layers.0.mlp.up_proj.weight"]["max_abs_delta"] is None  # unchanged: nothing measured


def test_the_size_of_a_bf16_change(tmp_path: Path) -> None:
    """BF16 (the top half of a float32) as torch writes it."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch

    base = torch.linspace(-2, 2, 128, dtype=torch.float32).reshape(8, 16).to(torch.bfloat16)
    changed = base.clone()
    changed[3, 4] = 7.0
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    save_torch({"w.weight": base}, str(a / "model.safetensors"))
    save_torch({"w.weight": changed}, str(b / "model.safetensors"))
    row = inspector.diff(str(a), str(b), values=True).to_dict()["values"]["tensors"][0]
    expected = float((changed.float() - base.float()).abs().max())
    assert row["max_abs_delta"] == expected
    assert row["relative_delta"] == pytest.approx(expected / float(base.float().abs().max()))


def test_exact_says_the_bytes_it_hashed_and_what_it_proved(tmp_path: Path) -> None:
    """``--exact``: the bytes each side hashed whole are reported (here every compared tensor's bytes, as
    the files' headers place them), and a tensor equal by sha256 is called identical, one that is not changed."""
    a, b = write_pair(tmp_path, 4, {2})
    doc = inspector.diff(a, b, values=True, exact=True).to_dict()["values"]
    from safetensors import safe_open

    with safe_open(str(Path(a) / "model.safetensors"), "np") as f:  # the reference reader's own sizes
        total = sum(f.get_tensor(k).nbytes for k in f.keys())  # noqa: SIM118 (safe_open has no __iter__)
    assert doc["bytes_hashed"] == [total, total]
    verdicts = {t["name"]: t["verdict"] for t in doc["tensors"]}
    assert verdicts["model.layers.2.mlp.up_proj.weight"] == "changed"
    assert {v for k, v in verdicts.items() if k != "model.layers.2.mlp.up_proj.weight"} == {"identical"}
    assert "hashed whole (sha256)" in inspector.to_text(inspector.diff(a, b, values=True, exact=True), "table")
