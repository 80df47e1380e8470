"""A GGUF model split in parts (issue 67): llama.cpp's ``-0000k-of-0000n.gguf`` files, written here by gguf-py's own
GGUFWriter (``split_max_tensors``), read as one model however it is named: a part, the folder, a Hub repo. The
expected figures are gguf-py's: the unsplit file's, and its GGUFReader's tensors over every part."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from inspector.errors import EXIT_INVALID

SHAPES = [("token_embd.weight", (32, 8))] + [
    (f"blk.{i}.{name}.weight", shape) for i in range(2)
    for name, shape in (("attn_norm", (8,)), ("attn_q", (8, 8)), ("attn_k", (4, 8)), ("attn_v", (4, 8)),
                        ("attn_output", (8, 8)), ("ffn_norm", (8,)), ("ffn_gate", (16, 8)), ("ffn_up", (16, 8)),
                        ("ffn_down", (8, 16)))] + [("output_norm.weight", (8,)), ("output.weight", (32, 8))]


def _write(path: Path, split_max_tensors: int = 0) -> list[Path]:
    """A small Llama written by gguf-py, whole or split every ``split_max_tensors`` tensors; the files written."""
    import gguf

    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama", split_max_tensors=split_max_tensors)
    w.add_block_count(2)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_context_length(64)
    w.add_vocab_size(32)
    rng = np.random.default_rng(0)
    for name, shape in SHAPES:
        w.add_tensor(name, rng.normal(size=shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sorted(path.parent.glob(f"{path.stem}*.gguf"))


def _gguf_py_totals(files: list[Path]) -> tuple[int, int, int]:
    """(tensors, elements, bytes) over every part, as gguf-py's own reader reads them."""
    from gguf import GGUFReader

    tensors = [t for f in files for t in GGUFReader(str(f)).tensors]
    return len(tensors), sum(int(t.n_elements) for t in tensors), sum(int(t.n_bytes) for t in tensors)


@pytest.fixture
def made(tmp_path: Path) -> dict[str, list[Path]]:
    return {"whole": _write(tmp_path / "whole" / "tiny.gguf"),
            "two": _write(tmp_path / "two" / "tiny.gguf", 11),
            "three": _write(tmp_path / "three" / "tiny.gguf", 8)}


def test_gguf_py_writes_the_parts_llama_cpp_names(made: dict[str, list[Path]]) -> None:
    assert [f.name for f in made["two"]] == ["tiny-00001-of-00002.gguf", "tiny-00002-of-00002.gguf"]
    assert len(made["three"]) == 3


@pytest.mark.parametrize("split", ["two", "three"])
def test_every_part_and_the_folder_read_as_the_whole_model(cli, made: dict[str, list[Path]], split: str) -> None:
    """Part 1 of 2 read alone was half the model (half its parameters, "tied embeddings": output.weight is in
    part 2), and a folder of both parts two models. Now each part, and the folder, is the model gguf-py wrote:
    its tensors, elements and bytes over every part (GGUFReader), the unsplit file's totals, untied."""
    whole = cli(str(made["whole"][0]), "--json").json()["totals"]
    tensors, elements, nbytes = _gguf_py_totals(made[split])
    assert (tensors, elements, nbytes) == _gguf_py_totals(made["whole"]) == (21, 1704, 6816)
    for target in [*made[split], made[split][0].parent]:
        doc = cli(str(target), "--json").json()
        totals = doc["totals"]
        assert (totals["tensors"], totals["parameters"], totals["bytes"]) == (tensors, elements, nbytes), target
        assert totals["shards"] == len(made[split])
        assert {k: v for k, v in totals.items() if k != "shards"} == {k: v for k, v in whole.items() if k != "shards"}
        assert doc["config"]["tie_word_embeddings"] is False  # output.weight, in the last part
    assert "untied" in cli(str(made[split][-1])).out.splitlines()[1]


def test_a_missing_part_is_named(cli, made: dict[str, list[Path]], tmp_path: Path) -> None:
    folder = tmp_path / "gap"
    folder.mkdir()
    for f in (made["three"][0], made["three"][2]):
        shutil.copy(f, folder / f.name)
    for target in (folder, folder / made["three"][0].name, folder / made["three"][2].name):
        result = cli(str(target))
        assert result.code == EXIT_INVALID, result.err
        assert "tiny-00002-of-00003.gguf is not here" in result.err and "one of the 3 parts" in result.err
        assert result.err.count("\n") <= 2


def test_a_part_that_says_it_is_another_is_refused(cli, made: dict[str, list[Path]], tmp_path: Path) -> None:
    """Each part's split.no (from 0) and split.count are held to its name, as llama.cpp checks them when it loads
    the parts: parts 1 and 2 swapped by name are refused by rule."""
    folder = tmp_path / "swapped"
    folder.mkdir()
    first, second = made["two"]
    shutil.copy(first, folder / second.name)
    shutil.copy(second, folder / first.name)
    result = cli(str(folder))
    assert result.code == EXIT_INVALID and "says it is part 1 of 2" in result.err, result.err


def test_a_folder_of_a_split_model_and_another_lists_each_model_once(cli, made: dict[str, list[Path]],
                                                                    tmp_path: Path) -> None:
    folder = tmp_path / "both"
    folder.mkdir()
    for f in [*made["two"], *made["whole"]]:
        shutil.copy(f, folder / f.name)
    result = cli(str(folder), "--json")
    names = json.dumps(result.json())
    assert "tiny-00001-of-00002.gguf" in names and "tiny-00002-of-00002.gguf" not in names
    assert cli(str(folder / "tiny-00002-of-00002.gguf"), "--json").json()["totals"]["parameters"] == 1704


def test_a_split_model_over_the_hub_is_read_whole(cli, made: dict[str, list[Path]], online: None) -> None:
    """The test Hub serves the three parts: the repo, and a part named in it, read every part (one header each)."""
    from hubserver import HubServer

    with HubServer() as server:
        server.add_files("acme/split", {f.name: f.read_bytes() for f in made["three"]})
        for target in ("acme/split", "acme/split/tiny-00002-of-00003.gguf"):
            totals = cli(target, "--json", "--endpoint", server.url).json()["totals"]
            assert (totals["tensors"], totals["parameters"], totals["bytes"], totals["shards"]) == (21, 1704, 6816, 3)
