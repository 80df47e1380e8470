"""The bundled header snapshots against reality: the reference figures (fixtures/reference.json), the
real indexes, configs and Hub counts in fixtures/realdata, and the generator script that made them."""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import realdata, ref

from inspector.analysis.facts.stats import summarize
from inspector.sources.bundled import all_aliases, bundled_path
from inspector.sources.resolve import open_checkpoint

ROOT = Path(__file__).resolve().parent.parent


def test_every_alias_has_a_bundled_snapshot() -> None:
    for alias in all_aliases():
        assert (bundled_path(alias) / "inspector-snapshot.json").is_file(), alias.name


# (alias, parameters, buffers, Hub total, bytes): reference figure ids, or a literal 0 with its reason
@pytest.mark.parametrize(("alias", "params", "buffers", "hub_total", "nbytes"), [
    ("llama2-7b", "llama2-7b.parameters", "llama2-7b.buffers", "llama2-7b.hub_total", "llama2-7b.bytes"),
    ("llama3-8b", "llama3-8b.parameters", None, "llama3-8b.parameters", "llama3-8b.bytes"),
    ("mixtral-8x7b", "mixtral-8x7b.parameters", None, "mixtral-8x7b.parameters", "mixtral-8x7b.bytes"),
    ("gpt2", "gpt2.parameters", "gpt2.buffers", "gpt2.hub_total", None),
    ("mistral-7b", None, None, None, "mistral-7b.bytes"),
    ("phi-2", None, None, None, "phi-2.bytes"),
    ("qwen2.5-7b", "qwen2.5-7b.parameters", None, "qwen2.5-7b.parameters", None),
    # the real repo stores lm_head.weight beside the tied embedding: the snapshot stores what it stores
    ("qwen3-0.6b", "qwen3-0.6b.parameters", None, "qwen3-0.6b.parameters", None),
    ("tinyllama", "tinyllama.parameters", None, "tinyllama.parameters", None),
    ("phi-3-mini", "phi-3-mini.parameters", None, None, None),
    ("llama3-70b", "llama3-70b.parameters", None, None, None),
])
def test_reference_figures(alias: str, params: str | None, buffers: str | None, hub_total: str | None,
                           nbytes: str | None) -> None:
    s = summarize(open_checkpoint(alias))
    if params:
        assert s.parameters == ref(params)
    if hub_total:
        assert s.hub_total == ref(hub_total)
        # no buffers where the published total equals the parameters (all of one dtype, no masks)
        assert s.buffer_elements == (ref(buffers) if buffers else 0)
    if nbytes:
        assert s.bytes == ref(nbytes)


@pytest.mark.parametrize(("alias", "realdir"), [
    ("llama2-7b", "meta-llama__Llama-2-7b-hf"),
    ("llama3-8b", "meta-llama__Meta-Llama-3-8B"),
    ("qwen2.5-7b", "Qwen__Qwen2.5-7B-Instruct"),
    ("gpt2", "openai-community__gpt2"),
])
def test_hub_published_counts(alias: str, realdir: str) -> None:
    api = realdata(realdir, "hf_api_model.json")
    c = open_checkpoint(alias)
    s = summarize(c)
    assert s.hub_total == api["safetensors"]["total"]
    assert {d.dtype: d.elements for d in s.by_dtype} == api["safetensors"]["parameters"]
    assert c.provenance.revision == api["sha"]
    listed = {sib["rfilename"] for sib in api["siblings"] if sib["rfilename"].endswith(".safetensors")}
    assert {h.file for h in c.headers} == listed


@pytest.mark.parametrize(("alias", "realdir"), [
    ("mistral-7b", "mistralai__Mistral-7B-Instruct-v0.2"),
    ("mixtral-8x7b", "mistralai__Mixtral-8x7B-v0.1"),
    ("phi-2", "microsoft__phi-2"),
])
def test_real_indexes_key_sets_and_total_size(alias: str, realdir: str) -> None:
    real = realdata(realdir, "model.safetensors.index.json")
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
def test_configs_match_the_real_ones(alias: str, realdir: str) -> None:
    real = realdata(realdir, "config.json")
    ours = open_checkpoint(alias).config
    assert ours is not None
    for key in ("hidden_size", "n_embd", "intermediate_size", "num_hidden_layers", "n_layer",
                "num_attention_heads", "num_key_value_heads", "vocab_size", "tie_word_embeddings",
                "torch_dtype", "quantization_config", "num_local_experts", "num_experts_per_tok"):
        assert ours.get(key) == real.get(key), key


def test_deepseek_v3_is_the_large_case() -> None:
    """Public facts of the released checkpoint: 163 shards named model-0000N-of-000163, FP8 weights
    with F32 block scales, an MTP layer, 685B elements in all (the model card)."""
    c = open_checkpoint("deepseek-v3")
    s = summarize(c)
    assert len(c.headers) == 163
    assert c.headers[0].file == "model-00001-of-000163.safetensors"
    assert s.tensors == ref("deepseek-v3.tensors")  # a regression figure: see its source in the table
    assert round(s.hub_total / 1e9) == ref("deepseek-v3.hub_total_billions")
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


def test_a_saved_snapshot_records_no_machine_path(cli, tmp_path: Path) -> None:
    """The manifest says where a snapshot came from without the saver's folders: a local folder by its
    name alone (issue 40: it recorded the saver's absolute path)."""
    from helpers import save_real

    folder = tmp_path / "private" / "home" / "my-model"
    save_real(folder / "model.safetensors", {"w": ("F32", (4, 4))})
    out = tmp_path / "snap"
    assert cli("save", str(folder), "-o", str(out)).code == 0
    manifest = json.loads((out / "inspector-snapshot.json").read_text())
    assert manifest["provenance"] == "saved by inspector from folder my-model"
    assert str(tmp_path) not in (out / "inspector-snapshot.json").read_text()
