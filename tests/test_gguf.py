"""GGUF files written by the ``gguf`` package's GGUFWriter, read by us and by its GGUFReader: the same
tensors, elements and data bytes; llama.cpp names get roles; the config comes from the metadata."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from inspector import errors

gguf = pytest.importorskip("gguf")  # a core dependency: installed with the package


def write_tiny(path: Path, *, types: dict[str, str] | None = None, layers: int = 2) -> Path:
    """A tiny Llama-shaped GGUF: hidden 256 (one K-quant block a row), MLP 512, vocab 320."""
    hidden, inter, vocab = 256, 512, 320
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(inter)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(2048)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"t{i}" for i in range(vocab)])
    chosen = types or {}

    def tensor(name: str, rows: int, cols: int) -> None:
        kind = chosen.get(name.split(".")[-2] if name.count(".") > 1 else name, "F32")
        qtype = gguf.GGMLQuantizationType[kind]
        if kind == "F32":
            w.add_tensor(name, np.zeros((rows, cols), dtype=np.float32))
        elif kind == "F16":
            w.add_tensor(name, np.zeros((rows, cols), dtype=np.float16))
        else:
            block, size = gguf.GGML_QUANT_SIZES[qtype]
            w.add_tensor(name, np.zeros((rows, cols // block * size), dtype=np.uint8), raw_dtype=qtype)

    tensor("token_embd.weight", vocab, hidden)
    for i in range(layers):
        for part, rows, cols in (("attn_q", hidden, hidden), ("attn_k", hidden // 2, hidden),
                                 ("attn_v", hidden // 2, hidden), ("attn_output", hidden, hidden),
                                 ("ffn_gate", inter, hidden), ("ffn_up", inter, hidden), ("ffn_down", hidden, inter)):
            tensor(f"blk.{i}.{part}.weight", rows, cols)
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros(hidden, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.zeros(hidden, dtype=np.float32))
    w.add_tensor("output_norm.weight", np.zeros(hidden, dtype=np.float32))
    tensor("output.weight", vocab, hidden)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_elements_and_bytes_equal_the_gguf_reader(tmp_path: Path) -> None:
    from inspector.source import open_checkpoint
    from inspector.stats import summarize

    types = {"attn_q": "Q8_0", "attn_k": "Q4_K", "attn_v": "Q6_K", "ffn_down": "Q6_K", "ffn_gate": "Q4_K",
             "ffn_up": "F16", "token_embd.weight": "Q8_0"}
    path = write_tiny(tmp_path / "tiny.gguf", types=types)
    reference = gguf.GGUFReader(str(path))
    ours = open_checkpoint(str(path))
    got = {t.name: (t.numel, t.end - t.begin, t.dtype, t.shape) for t in ours.tensors()}
    want = {t.name: (int(t.n_elements), int(t.n_bytes), t.tensor_type.name, tuple(int(d) for d in reversed(t.shape)))
            for t in reference.tensors}
    assert got == want
    assert {"Q8_0", "Q4_K", "Q6_K", "F16", "F32"} <= {v[2] for v in got.values()}
    s = summarize(ours)
    assert s.parameters == sum(int(t.n_elements) for t in reference.tensors)
    assert s.bytes == sum(int(t.n_bytes) for t in reference.tensors)
    roles = {r.role for r in s.by_role}
    assert {"embedding", "attn.q", "attn.k", "attn.v", "attn.o", "mlp.gate", "mlp.up", "mlp.down", "norm",
            "lm_head"} == roles
    assert [(g.first, g.last) for g in s.layer_groups] == [(0, 1)]
    assert ours.config is not None and ours.config["num_hidden_layers"] == 2 and ours.config["vocab_size"] == 320


def test_the_cli_reads_a_gguf_with_its_config(cli, tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "tiny.gguf")
    doc = cli(str(path), "--json").json()
    assert doc["config"]["hidden_size"] == 256 and doc["config"]["num_kv_heads"] == 2
    assert doc["totals"]["tensors"] == 1 + 2 * 9 + 2
    assert any(s["metadata"].get("general.architecture") == "llama" for s in doc["shards"])
    tokens = doc["shards"][0]["metadata"]["tokenizer.ggml.tokens"]
    assert tokens.startswith("[320 string:")  # summarised, not 320 strings


def test_a_vocab_only_gguf_is_read(cli, tmp_path: Path) -> None:
    w = gguf.GGUFWriter(str(tmp_path / "vocab.gguf"), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(1000)])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    doc = cli(str(tmp_path / "vocab.gguf"), "--json").json()
    assert doc["totals"]["tensors"] == 0 and doc["config"]["vocab_size"] == 1000


@pytest.mark.parametrize(("blob", "rule"), [
    (b"GGUF" + struct.pack("<I", 7) + b"\0" * 16, "gguf-version"),
    (b"GGUF" + struct.pack(">I", 3) + b"\0" * 16, "gguf-big-endian"),
    (b"GGUX" + b"\0" * 20, "gguf-bad-magic"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 3) + b"key" + struct.pack("<I", 99),
     "gguf-value-type"),
])
def test_broken_ggufs_name_their_rule(cli, tmp_path: Path, blob: bytes, rule: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(blob)
    r = cli(str(path))
    assert r.code == errors.EXIT_INVALID and "Traceback" not in r.err
    r = cli("audit", str(path), "--json")
    assert r.code == 1 and r.json()["findings"][0]["code"] == f"header.{rule}"


def test_a_truncated_gguf_header_is_an_error_not_a_hang(cli, tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "t.gguf")
    data = path.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[:200])
    r = cli(str(tmp_path / "cut.gguf"))
    assert r.code == errors.EXIT_INVALID and "gguf" in r.err.lower()
