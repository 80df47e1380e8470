"""The bundled header snapshots against reality: ../shared/REFERENCE.md figures, the real indexes
and Hub counts in ../shared/realdata, and the generator script that made them."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.aliases import all_aliases, bundled_path
from inspector.source import open_checkpoint
from inspector.stats import summarize

ROOT = Path(__file__).resolve().parent.parent


def test_every_alias_has_a_bundled_snapshot() -> None:
    for alias in all_aliases():
        assert (bundled_path(alias) / "inspector-snapshot.json").is_file(), alias.name


# Figures from ../shared/REFERENCE.md (published Hub counts and index totals).
@pytest.mark.parametrize(("alias", "params", "buffers", "hub_total", "nbytes"), [
    ("llama2-7b", 6_738_415_616, 2_048, 6_738_417_664, 13_476_839_424),
    ("llama3-8b", 8_030_261_248, 0, 8_030_261_248, 16_060_522_496),
    ("mixtral-8x7b", 46_702_792_704, 0, 46_702_792_704, 93_405_585_408),
    ("gpt2", 124_439_808, 12_582_912, 137_022_720, None),
])
def test_reference_figures(alias: str, params: int, buffers: int, hub_total: int, nbytes: int | None) -> None:
    s = summarize(open_checkpoint(alias))
    assert s.parameters == params
    assert s.buffer_elements == buffers
    assert s.hub_total == hub_total
    if nbytes is not None:
        assert s.bytes == nbytes


def test_reference_md_states_the_figures_we_assert(shared: Path) -> None:
    text = (shared / "REFERENCE.md").read_text()
    for figure in ("6,738,415,616", "6,738,417,664", "13,476,839,424", "8,030,261,248", "16,060,522,496",
                   "46,702,792,704", "93,405,585,408", "124,439,808", "12,582,912", "137,022,720"):
        assert figure in text


@pytest.mark.parametrize(("alias", "realdir"), [
    ("llama2-7b", "meta-llama__Llama-2-7b-hf"),
    ("llama3-8b", "meta-llama__Meta-Llama-3-8B"),
    ("qwen2.5-7b", "Qwen__Qwen2.5-7B-Instruct"),
    ("gpt2", "openai-community__gpt2"),
])
def test_hub_published_counts(shared: Path, alias: str, realdir: str) -> None:
    api = json.loads((shared / "realdata" / realdir / "hf_api_model.json").read_text())
    c = open_checkpoint(alias)
    s = summarize(c)
    assert s.hub_total == api["safetensors"]["total"]
    assert {d.dtype: d.elements for d in s.by_dtype} == api["safetensors"]["parameters"]
    assert c.revision == api["sha"]
    listed = {sib["rfilename"] for sib in api["siblings"] if sib["rfilename"].endswith(".safetensors")}
    assert {h.file for h in c.headers} == listed


@pytest.mark.parametrize(("alias", "realdir"), [
    ("mistral-7b", "mistralai__Mistral-7B-Instruct-v0.2"),
    ("mixtral-8x7b", "mistralai__Mixtral-8x7B-v0.1"),
    ("phi-2", "microsoft__phi-2"),
])
def test_real_indexes_key_sets_and_total_size(shared: Path, alias: str, realdir: str) -> None:
    real = json.loads((shared / "realdata" / realdir / "model.safetensors.index.json").read_text())
    c = open_checkpoint(alias)
    names = {t.name for t in c.tensors()}
    assert names == set(real["weight_map"])
    assert sum(t.nbytes for t in c.tensors()) == real["metadata"]["total_size"]
    assert c.index is not None and c.index["metadata"]["total_size"] == real["metadata"]["total_size"]
    assert len(c.headers) == len(set(real["weight_map"].values()))


@pytest.mark.parametrize(("alias", "realdir"), [
    ("mistral-7b", "mistralai__Mistral-7B-Instruct-v0.2"),
    ("mixtral-8x7b", "mistralai__Mixtral-8x7B-v0.1"),
    ("phi-2", "microsoft__phi-2"),
    ("qwen2.5-7b", "Qwen__Qwen2.5-7B-Instruct"),
    ("gpt2", "openai-community__gpt2"),
    ("llama2-13b-gptq", "TheBloke__Llama-2-13B-chat-GPTQ"),
])
def test_configs_match_the_real_ones(shared: Path, alias: str, realdir: str) -> None:
    real = json.loads((shared / "realdata" / realdir / "config.json").read_text())
    ours = open_checkpoint(alias).config
    assert ours is not None
    for key in ("hidden_size", "n_embd", "intermediate_size", "num_hidden_layers", "n_layer",
                "num_attention_heads", "num_key_value_heads", "vocab_size", "tie_word_embeddings",
                "torch_dtype", "quantization_config", "num_local_experts", "num_experts_per_tok"):
        assert ours.get(key) == real.get(key), key


def test_deepseek_v3_is_the_large_case() -> None:
    """Public facts of the released checkpoint: 163 shards named model-0000N-of-000163, 91,991
    tensors holding 684,531,386,000 elements (FP8 weights with F32 block scales, an MTP layer)."""
    c = open_checkpoint("deepseek-v3")
    s = summarize(c)
    assert len(c.headers) == 163
    assert c.headers[0].file == "model-00001-of-000163.safetensors"
    assert s.tensors == 91_991
    assert s.hub_total == 684_531_386_000
    dtypes = {d.dtype for d in s.by_dtype}
    assert {"F8_E4M3", "BF16", "F32"} <= dtypes
    assert [(g.first, g.last) for g in s.layer_groups] == [(0, 2), (3, 60), (61, 61)]
    names = {t.name for t in c.tensors()}
    assert "model.layers.61.eh_proj.weight" in names
    assert "model.layers.3.mlp.experts.255.down_proj.weight_scale_inv" in names


def test_gemma_ties_its_embeddings() -> None:
    c = open_checkpoint("gemma-2b")
    assert "lm_head.weight" not in {t.name for t in c.tensors()}
    # tied: V·D + 18 layers × 110,104,576 + the final norm D (derived here, no real index to compare)
    assert summarize(c).parameters == 256_000 * 2048 + 18 * 110_104_576 + 2048


def test_generator_reproduces_the_committed_snapshots(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_snapshots.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    committed = ROOT / "inspector" / "snapshots"
    for folder in sorted(committed.iterdir()):
        fresh = tmp_path / folder.name
        cmp = filecmp.dircmp(folder, fresh)
        assert not cmp.left_only and not cmp.right_only and not cmp.diff_files, folder.name
        for sub in ("headers",):
            inner = filecmp.dircmp(folder / sub, fresh / sub)
            mismatch, errors = filecmp.cmpfiles(folder / sub, fresh / sub, inner.common_files, shallow=False)[1:]
            assert not mismatch and not errors and not inner.left_only and not inner.right_only, folder.name
