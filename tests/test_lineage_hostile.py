"""``inspect lineage``'s new surfaces from outside, hostile: a model card's front matter, a GGUF's declared base,
a Hub listing's hashes, candidate names. Each input is read bounded, a name that would become a path is never
one, and every string passes the sanitiser before a renderer."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import inspector
from inspector.analysis.comparison.lineage import CARD_BYTES, MAX_DECLARED, declared_bases, front_matter


def _model(folder: Path, seed: int = 0, card: bytes | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    save_file({"model.layers.0.mlp.up_proj.weight": rng.normal(0, 0.02, (64, 32)).astype(np.float32),
               "model.layers.0.input_layernorm.weight": np.ones(32, np.float32)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 32,
                                                     "num_hidden_layers": 1, "intermediate_size": 64}))
    if card is not None:
        (folder / "README.md").write_bytes(card)
    return folder


def _declared(card: bytes) -> list[str]:
    c = inspector.open_model(str(_model(Path(os.environ["LINEAGE_TMP"]) / str(time.perf_counter_ns()))))
    return [b for b, _ in declared_bases(c, card).bases]


@pytest.fixture(autouse=True)
def _tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEAGE_TMP", str(tmp_path))


def test_a_yaml_bomb_in_the_card_costs_little_and_declares_nothing() -> None:
    """Billion laughs: nine levels of aliases, each nine of the level below. safe_load builds references, not
    copies, and only base_model is read (a list of strings, else nothing)."""
    lines = ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefghi":
        prev = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [{', '.join(['*' + prev] * 9)}]")
    lines += ["base_model: *i", "---", "x"]
    start = time.process_time()
    assert _declared("\n".join(lines).encode()) == []
    assert time.process_time() - start < 2.0


def test_tags_that_build_objects_are_refused() -> None:
    card = b"---\nbase_model: !!python/object/apply:os.system ['echo pwned']\n---\n"
    assert front_matter(card) == {}
    assert _declared(card) == []


@pytest.mark.parametrize("name", ["../../etc/passwd", "./local", "/abs/path", "org/name\x1b[31m", "a/b/c", "org/..",
                                  "org/../x", "gpt2", "org/" + "x" * 300, "org/na me", "https://evil.example/a/b"])
def test_a_base_model_that_is_no_repo_id_is_not_taken(name: str) -> None:
    assert _declared(f"---\nbase_model: {json.dumps(name)}\n---\n".encode()) == []


def test_every_form_of_base_model_the_hub_accepts() -> None:
    """A string, a list (block or flow style), with base_model_relation; at most MAX_DECLARED taken."""
    assert _declared(b"---\nbase_model: org/a\n---\n") == ["org/a"]
    assert _declared(b"---\nbase_model:\n- org/a\n- org/b\n---\n") == ["org/a", "org/b"]
    assert _declared(b"---\nbase_model: [org/a, 'org/b']\nbase_model_relation: merge\n---\n") == ["org/a", "org/b"]
    many = "---\nbase_model:\n" + "".join(f"- org/m{i}\n" for i in range(100)) + "---\n"
    assert len(_declared(many.encode())) == MAX_DECLARED


def test_only_the_cards_first_bytes_are_read(tmp_path: Path) -> None:
    """A 10 MB README: its front matter from the first CARD_BYTES, no more (the declared base past them is not
    seen); bytes that are not UTF-8 read as replacement characters."""
    from inspector.api_lineage import card as _card

    card = b"---\nbase_model: org/a\nnote: \xff\xfe\n---\n" + b"x" * (10 << 20)
    c = inspector.open_model(str(_model(tmp_path / "m", card=card)))
    read = _card(c, None)
    assert read is not None and len(read) == CARD_BYTES
    assert [b for b, _ in declared_bases(c, read).bases] == ["org/a"]
    late = b"---\n" + b"# " + b"y" * CARD_BYTES + b"\nbase_model: org/late\n---\n"
    assert declared_bases(c, late).bases == ()


def test_a_declared_base_is_never_opened_as_a_local_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card declaring evil/base, run where ./evil/base exists (a copy of the model): the base is a Hub repo,
    offline here, so it is not decided; the local folder is never read as it."""
    model = _model(tmp_path / "m", card=b"---\nbase_model: evil/base\n---\n")
    _model(tmp_path / "evil" / "base")
    monkeypatch.chdir(tmp_path)
    doc = inspector.lineage(str(model)).to_dict()
    assert doc["declared_base"] == "evil/base" and doc["verdict"] == "unknown"
    assert doc["candidates"][0]["relation"] == "unknown" and doc["bytes_read"] == 0


def test_a_gguf_base_url_off_the_hub_is_not_a_repo(tmp_path: Path) -> None:
    import gguf
    from helpers import finish_gguf

    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for i, url in enumerate(("https://evil.example/org/name", "https://huggingface.co/../../etc",
                             "https://huggingface.co/org/name/../x", "https://huggingface.co/org/real")):
        w.add_string(f"general.base_model.{i}.repo_url", url)
    w.add_string("general.base_model.4.name", "Some \x1b[2J Model")
    w.add_tensor("token_embd.weight", np.zeros((4, 32), np.float32))
    finish_gguf(w)
    d = declared_bases(inspector.open_model(str(path)), None)
    assert [b for b, _ in d.bases] == ["org/real"]
    assert len(d.unnamed) == 1


def test_a_listing_hash_that_is_no_sha256_is_not_believed() -> None:
    from inspector.sources.hub import repo_files
    from inspector.sources.transport import Hub, HubOptions

    info = {"siblings": [{"rfilename": "a.safetensors", "lfs": {"sha256": "../../x", "size": 4}},
                         {"rfilename": "b.safetensors", "lfs": {"sha256": "A" * 64, "size": 4}},
                         {"rfilename": "c.safetensors", "lfs": {"sha256": "a" * 10**6, "size": 4}},
                         {"rfilename": "d.safetensors", "lfs": {"sha256": "ab" * 32, "size": 4}}]}
    files = repo_files(Hub(HubOptions(endpoint="http://127.0.0.1:9")), info, "org/x")
    assert {k: v[1] for k, v in files.items()} == {"a.safetensors": None, "b.safetensors": None,
                                                  "c.safetensors": None, "d.safetensors": "ab" * 32}


def test_a_candidate_name_with_escapes_is_sanitised_in_every_format(tmp_path: Path) -> None:
    from inspector.render.views import Format, to_text

    base = _model(tmp_path / "base")
    evil = _model(tmp_path / "evil\x1b[2Jname")
    result = inspector.lineage(str(evil), [str(base)])
    for fmt in (Format.TABLE, Format.MARKDOWN, Format.HTML, Format.JSON):
        text = to_text(result, fmt)
        assert "\x1b" not in text, fmt


def test_too_many_candidates_is_a_usage_error(tmp_path: Path) -> None:
    from inspector.errors import UsageError

    base = _model(tmp_path / "base")
    with pytest.raises(UsageError, match="at most 10"):
        inspector.lineage(str(base), [str(base)] * 11)


def _cached(root: Path, repo: str, source: Path) -> Path:
    """``source``'s files in the HF cache layout huggingface_hub writes: snapshots/<commit>/FILE → ../../blobs/<id>,
    an LFS file's blob named by its sha256, another's by its git blob id (40 hex digits)."""
    import hashlib

    folder = root / f"models--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / ("0" * 40)
    (folder / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for f in source.iterdir():
        data = f.read_bytes()
        blob = hashlib.sha256(data).hexdigest() if f.suffix == ".safetensors" else hashlib.sha1(data).hexdigest()
        (folder / "blobs" / blob).write_bytes(data)
        (snapshot / f.name).symlink_to(Path("..") / ".." / "blobs" / blob)
    return snapshot


def test_an_hf_cache_copy_is_proven_by_its_blob_names_with_no_tensor_byte_read(tmp_path: Path) -> None:
    """Two cached repos whose weight blob is the same sha256 (the cache names LFS blobs by it): identical, and no
    tensor byte read; a third whose weights differ is sampled."""
    base = _model(tmp_path / "base")
    a = _cached(tmp_path / "cache", "org/a", base)
    b = _cached(tmp_path / "cache", "org/b", base)
    c = _cached(tmp_path / "cache", "org/c", _model(tmp_path / "other", seed=1))
    doc = inspector.lineage(str(a), [str(b)]).to_dict()
    assert doc["verdict"] == "identical" and doc["bytes_read"] == 0
    assert doc["candidates"][0]["files_identical"] == doc["candidates"][0]["files_compared"] == 1
    other = inspector.lineage(str(c), [str(b)]).to_dict()
    assert other["candidates"][0]["files_identical"] == 0 and other["bytes_read"] > 0
    assert other["verdict"] == "unrelated"
