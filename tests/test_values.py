"""`inspect diff A B --values`: which tensors a fine-tune changed, from a few ranges of each tensor.

The pairs are written here with the safetensors library (and gguf-py for a GGUF pair): a base of random
weights and a copy with chosen tensors perturbed, everywhere or in a few rows, so every expected verdict
is known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import tiny_llama

from inspector import errors

LAYERS = 4


def write_pair(tmp_path: Path, change: dict[str, str], *, dtype_b: str | None = None,
               hidden: int = 64) -> tuple[Path, Path]:
    """A tiny Llama (4 layers, hidden 64, MLP 4 × hidden, vocabulary 8 × hidden) as A, and B with the
    tensors named in ``change`` perturbed: ``all`` (every element), ``rows`` (its last 8 rows: new tokens'
    embeddings)."""
    from safetensors.numpy import save_file

    config, entries = tiny_llama(layers=LAYERS, hidden=hidden, inter=4 * hidden, vocab=8 * hidden, heads=4, kv=2,
                                 dtype="F16")
    rng = np.random.default_rng(0)
    a = {name: rng.standard_normal(shape).astype(np.float16) for name, _, shape in entries}
    b = {name: t.copy() for name, t in a.items()}
    for name, how in change.items():
        if how == "all":
            b[name] = (b[name] + np.float16(0.01)).astype(np.float16)
        else:
            b[name][-8:] = np.float16(1.0)
    if dtype_b:
        b = {n: t.astype(np.float32) for n, t in b.items()}
        config = {**config, "torch_dtype": "float32"}
    for folder, tensors in ((tmp_path / "a", a), (tmp_path / "b", b)):
        folder.mkdir()
        save_file(tensors, str(folder / "model.safetensors"))
        (folder / "config.json").write_text(json.dumps(config))
    return tmp_path / "a", tmp_path / "b"


def verdicts(doc: dict) -> dict[str, str]:
    return {t["name"]: t["verdict"] for t in doc["values"]["tensors"]}


def test_perturbed_tensors_are_changed_and_untouched_ones_never(cli, tmp_path: Path) -> None:
    changed = {f"model.layers.{i}.self_attn.{p}.weight": "all" for i in range(LAYERS) for p in ("q_proj", "v_proj")}
    a, b = write_pair(tmp_path, changed)
    doc = cli("diff", str(a), str(b), "--values", "--json").json()
    got = verdicts(doc)
    assert {n for n, v in got.items() if v == "changed"} == set(changed)
    assert all(v in ("same-sampled", "identical") for n, v in got.items() if n not in changed)
    summary = " ".join(doc["values"]["summary"])
    assert "attn.q changed in layers 0–3" in summary and "LoRA merged into q, v" in summary
    assert doc["delta"]["parameters"] == 0  # names and shapes alike: the old answer was "0 parameters apart"


def test_a_tensor_changed_in_a_few_rows(cli, tmp_path: Path) -> None:
    """New tokens: the embedding's and the head's last 8 rows. Its end is always sampled, so "changed";
    with --exact, hashed whole, "changed" too; never "identical"."""
    a, b = write_pair(tmp_path, {"model.embed_tokens.weight": "rows", "lm_head.weight": "rows"})
    for extra in ((), ("--exact",)):
        doc = cli("diff", str(a), str(b), "--values", *extra, "--json").json()
        got = verdicts(doc)
        assert got["model.embed_tokens.weight"] == got["lm_head.weight"] == "changed", extra
        assert "only the embedding and output layer changed" in " ".join(doc["values"]["summary"])
    exact = cli("diff", str(a), str(b), "--values", "--exact", "--json").json()
    assert {v for n, v in verdicts(exact).items() if "embed" not in n and "lm_head" not in n} == {"identical"}
    row = next(t for t in exact["values"]["tensors"] if t["name"] == "model.embed_tokens.weight")
    assert "rows" in row["why"] or "sha256" in row["why"]


def test_a_change_the_samples_miss_is_never_called_identical(cli, tmp_path: Path) -> None:
    """One element in the middle of a large tensor, away from every sampled range: "same in the sampled
    bytes" (said as not proven), and --exact finds it."""
    from safetensors.numpy import save_file

    x = np.arange(1 << 16, dtype=np.float32).reshape(256, 256)
    y = x.copy()
    y[100, 77] += 1  # byte offset 100 × 1024 + 77 × 4, inside none of the 256-byte ranges the name seeds
    for name, t in (("a", x), ("b", y)):
        (tmp_path / name).mkdir()
        save_file({"w": t}, str(tmp_path / name / "model.safetensors"))
    doc = cli("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--values", "--sample-bytes", "256", "--json").json()
    assert verdicts(doc)["w"] in ("same-sampled", "changed")
    assert verdicts(doc)["w"] != "identical"
    exact = cli("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--values", "--exact", "--json").json()
    assert verdicts(exact)["w"] == "changed"


def test_other_dtypes_cannot_compare_bytes(cli, tmp_path: Path) -> None:
    a, b = write_pair(tmp_path, {}, dtype_b="F32")
    doc = cli("diff", str(a), str(b), "--values", "--json").json()
    assert set(verdicts(doc).values()) == {"incomparable"}
    assert all("dtypes differ (F16 and F32)" in t["why"] for t in doc["values"]["tensors"])


def test_a_gguf_pair(cli, tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    rng = np.random.default_rng(1)
    base = {"token_embd.weight": rng.standard_normal((64, 32)).astype(np.float32),
            "blk.0.attn_q.weight": rng.standard_normal((32, 32)).astype(np.float32),
            "blk.0.ffn_up.weight": rng.standard_normal((64, 32)).astype(np.float32)}
    for name, bump in (("a.gguf", 0.0), ("b.gguf", 0.5)):
        w = gguf.GGUFWriter(str(tmp_path / name), "llama")
        w.add_block_count(1)
        w.add_embedding_length(32)
        w.add_head_count(4)
        for tensor, data in base.items():
            w.add_tensor(tensor, data + (bump if tensor == "blk.0.attn_q.weight" else 0.0))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    doc = cli("diff", str(tmp_path / "a.gguf"), str(tmp_path / "b.gguf"), "--values", "--json").json()
    got = verdicts(doc)
    assert got["blk.0.attn_q.weight"] == "changed"
    assert got["token_embd.weight"] in ("identical", "same-sampled") and got["blk.0.ffn_up.weight"] != "changed"


def test_values_over_the_test_hub(cli, tmp_path: Path, online: None) -> None:
    """The same verdicts from the Hub's range requests; bytes read a side at most 2 % of the weights, and
    requests at most one per sampled range (the documented bound: merged ranges, never more). Without
    --values no tensor data is read: every range request starts at a file's header."""
    from hubserver import HubServer

    changed = {f"model.layers.{i}.mlp.up_proj.weight": "all" for i in range(LAYERS)}
    a, b = write_pair(tmp_path, changed, hidden=512)  # 34 MB a side: tensors of 0.5 to 2 MB
    local = verdicts(cli("diff", str(a), str(b), "--values", "--json").json())
    with HubServer() as server:
        for repo, folder in (("acme/base", a), ("acme/tuned", b)):
            server.add_files(repo, {f.name: f.read_bytes() for f in folder.iterdir()})
        env = ("--endpoint", server.url)
        server.clear_log()
        plain = cli("diff", "acme/base", "acme/tuned", *env, "--json")
        assert plain.code == 0, plain.err
        assert plain.json()["values"] is None
        header = (a / "model.safetensors").read_bytes()
        header_end = 8 + int.from_bytes(header[:8], "little")
        starts = [int(r.range.split("=")[1].split("-")[0]) for r in server.requests("GET") if r.range]
        assert starts and max(starts) < header_end
        r = cli("diff", "acme/base", "acme/tuned", *env, "--values", "--json")
        assert r.code == 0, r.err
        values = r.json()["values"]
    assert verdicts(r.json()) == local
    weights = values["weights_bytes"]
    ranges = sum(1 for t in values["tensors"] if t["verdict"] != "incomparable") * 4
    for side in (0, 1):
        assert values["bytes_read"][side] <= 0.02 * weights, values["bytes_read"]
        assert values["requests"][side] <= ranges


def test_values_need_tensor_data(cli, tmp_path: Path) -> None:
    """A header snapshot keeps no tensor data: one line naming the side, exit 4."""
    a, _ = write_pair(tmp_path, {})
    r = cli("diff", "llama3-8b", str(a), "--values")
    assert r.code == errors.EXIT_INVALID and "holds headers only" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) <= 2  # the line, and its hint
    assert cli("diff", str(a), str(a), "--exact").code == errors.EXIT_USAGE


def test_sampled_ranges_stay_inside_the_tensor() -> None:
    """Whatever the size, sample and element width, every range lies inside the tensor, starts on an
    element, and the same name gives the same ranges on both sides."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from inspector.analysis.comparison.values import _offsets

    @settings(max_examples=300, deadline=None)
    @given(st.integers(1, 10**9), st.integers(64, 1 << 20), st.sampled_from([1, 2, 4, 8]), st.text(max_size=20))
    def check(nbytes: int, sample: int, align: int, name: str) -> None:
        got = _offsets(nbytes, name, sample, align)
        assert got == _offsets(nbytes, name, sample, align)
        assert all(o >= 0 and o + n <= nbytes and o % align == 0 and n > 0 for o, n in got)

    check()


def test_a_truncated_file_is_said_so(cli, tmp_path: Path) -> None:
    """B's file cut short inside its tensor data: one line naming the file, exit 4, no traceback (the header
    reader refuses it first; value_diff's own check covers a file that shrinks between the two reads)."""
    a, b = write_pair(tmp_path, {})
    data = (b / "model.safetensors").read_bytes()
    (b / "model.safetensors").write_bytes(data[: len(data) - 4096])
    r = cli("diff", str(a), str(b), "--values")
    assert r.code == errors.EXIT_INVALID and "Traceback" not in r.err and "truncated" in r.err, r.err
