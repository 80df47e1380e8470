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
