"""GGUF files written by the ``gguf`` package's GGUFWriter, read by us and by its GGUFReader: the same
tensors, elements and data bytes; llama.cpp names get roles; the config comes from the metadata."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from helpers import finish_gguf, llama3_8b_gguf

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
    finish_gguf(w)
    return path


def test_elements_and_bytes_equal_the_gguf_reader(tmp_path: Path) -> None:
    from inspector.analysis.facts.stats import summarize
    from inspector.sources.resolve import open_checkpoint

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
    listed = cli(str(path), "--json", "--tensors").json()["tensors"]
    down = next(t for t in listed if t["name"] == "blk.0.ffn_down.weight")
    assert down["shape"] == [256, 512] and down["shape_in_file"] == [512, 256]  # HF order; llama.cpp's order


def test_a_vocab_only_gguf_is_read(cli, tmp_path: Path) -> None:
    w = gguf.GGUFWriter(str(tmp_path / "vocab.gguf"), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(1000)])
    finish_gguf(w)
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


def llama3_8b_q4_k_m(path: Path) -> Path:
    """Llama-3-8B's tensors in a Q4_K_M-style mix (Q6_K for attn_v, ffn_down and output, Q4_K
    elsewhere, F32 norms), header written by GGUFWriter, data a hole: a sparse 4.9 GB file."""
    return llama3_8b_gguf(path, "Q4_K", "Q6_K")


def test_a_llama3_8b_q4_k_m_layout(tmp_path: Path, cli) -> None:
    from helpers import ref

    path = llama3_8b_q4_k_m(tmp_path / "llama3-8b.Q4_K_M.gguf")
    head = path.read_bytes()
    from inspector.formats.gguf import parse_gguf

    header, _, _ = parse_gguf(head, file=path.name)
    with path.open("r+b") as fh:
        fh.truncate(header.data_start + header.data_length)  # the weights: a hole
    assert path.stat().st_size > 4_000_000_000
    doc = cli(str(path), "--json").json()
    assert doc["totals"]["parameters"] == ref("llama3-8b.parameters")  # the same model, quantised
    bits = {d["dtype"]: d["bytes"] * 8 / d["elements"] for d in doc["by_dtype"]}
    assert bits["Q4_K"] == 4.5 and bits["Q6_K"] == 6.5625 and bits["F32"] == 32  # llama.cpp's block sizes
    table = cli(str(path)).out
    assert "bits/el." in table and "4.500" in table and "6.562" in table
    roles = {r["role"]: r["bytes"] * 8 / r["parameters"] for r in doc["by_role"] if r["parameters"]}
    assert roles["mlp.down"] == roles["attn.v"] == 6.5625 and roles["mlp.gate"] == 4.5 and roles["norm"] == 32


def test_a_4_9_gb_gguf_through_the_hub_reads_only_its_header(tmp_path: Path, online: None) -> None:
    from helpers import ref
    from hubserver import HubServer, VFile

    from inspector.analysis.facts.stats import summarize
    from inspector.formats.gguf import parse_gguf
    from inspector.sources.hub import HubOptions, open_hub

    path = llama3_8b_q4_k_m(tmp_path / "m.gguf")
    head = path.read_bytes()
    header, _, _ = parse_gguf(head, file="m.gguf")
    size = header.data_start + header.data_length
    with HubServer() as server:
        server.add_files("acme/llama3-gguf", {"llama3-8b.Q4_K_M.gguf": VFile(size, head, True)})
        c = open_hub("acme/llama3-gguf", options=HubOptions(endpoint=server.url, timeout=5))
        assert summarize(c).parameters == ref("llama3-8b.parameters")
        gets = server.requests("GET")
        assert len(gets) <= 8
        assert server.bytes_sent() <= 200_000
    assert size > 4_000_000_000


@pytest.fixture(scope="session")
def llama_cpp_vocabs() -> list[Path]:
    """llama.cpp's own vocab-only GGUFs, from llama-cpp-python 0.3.36's source distribution on PyPI
    (vendor/llama.cpp/models/ggml-vocab-*.gguf): real files nobody here wrote, unpacked by the README's
    test command (scripts/test_inputs.py), never downloaded by a test."""
    folder = Path(__file__).resolve().parent.parent / ".test-inputs" / "llama-cpp-vocab"
    found = sorted(folder.glob("*.gguf"))
    if not found:
        pytest.fail(f"{folder} is empty: run `python scripts/test_inputs.py` (the README's test command does)")
    return found


def _gguf_py_reading(path: Path) -> tuple[int, int, str]:
    """(tensors, tokens, tokenizer model) as gguf-py's GGUFReader reads the file."""
    reference = gguf.GGUFReader(str(path))
    model = bytes(reference.fields["tokenizer.ggml.model"].parts[-1]).decode()
    return len(reference.tensors), len(reference.fields["tokenizer.ggml.tokens"].data), model


def test_llama_cpps_vocab_ggufs_are_all_read(llama_cpp_vocabs: list[Path], cli) -> None:
    from concurrent.futures import ProcessPoolExecutor

    assert len(llama_cpp_vocabs) >= 15
    with ProcessPoolExecutor(max_workers=2) as pool:  # GGUFReader takes 0.5-18 s a file
        references = list(pool.map(_gguf_py_reading, llama_cpp_vocabs))
    for path, (tensors, tokens, model) in zip(llama_cpp_vocabs, references, strict=True):
        doc = cli(str(path), "--json").json()
        assert doc["totals"]["tensors"] == tensors == 0, path.name
        assert doc["config"]["vocab_size"] == tokens, path.name
        assert any("vocab-only GGUF" in n and f"{tokens:,} tokens" in n and model in n for n in doc["notes"]), path


def test_a_gguf_gets_the_fit_answer_from_its_own_metadata(tmp_path: Path, cli) -> None:
    from helpers import ref

    from inspector.formats.gguf import parse_gguf

    path = llama3_8b_q4_k_m(tmp_path / "m.gguf")
    header, _, _ = parse_gguf(path.read_bytes(), file=path.name)
    with path.open("r+b") as fh:
        fh.truncate(header.data_start + header.data_length)
    doc = cli("estimate", str(path), "--gpu", "8GiB", "--context", "8k", "--json").json()
    assert doc["kv_dtype"] == "fp16"  # llama.cpp's default cache type
    # Llama-3-8B's KV shape (8 KV heads × 128 × 32 layers) at 2 bytes, from the GGUF metadata alone
    assert doc["fit"]["kv_bytes_per_token"] == ref("llama3-8b.kv_bytes_per_token")
    # on the GPU: every tensor but the input embedding, which llama.cpp keeps in host memory (it has
    # its own output.weight); gguf-py's reader gives that tensor's bytes
    from gguf import GGUFReader

    embd = next(t for t in GGUFReader(str(path)).tensors if t.name == "token_embd.weight")
    assert doc["fit"]["fits"] and doc["fit"]["weights_bytes"] == header.data_length - int(embd.n_bytes)
    assert doc["fit"]["engine"] == "llama.cpp" and "host memory" in doc["fit"]["weights_note"]


def test_the_same_model_as_safetensors_and_gguf_diffs_to_zero(tmp_path: Path, cli) -> None:
    """Llama-3-8B (bundled, BF16 safetensors) against its Q4_K_M layout: llama.cpp's names are
    aligned through gguf-py's TensorNameMap; every tensor pairs, the parameters are equal, and the
    bytes change is the types'."""
    from inspector.formats.gguf import parse_gguf

    path = llama3_8b_q4_k_m(tmp_path / "m.gguf")
    header, _, _ = parse_gguf(path.read_bytes(), file=path.name)
    with path.open("r+b") as fh:
        fh.truncate(header.data_start + header.data_length)
    doc = cli("diff", "llama3-8b", str(path), "--json").json()
    assert doc["delta"]["parameters"] == 0 and doc["residual"] == 0 and doc["causes"] == []
    assert {c["kind"] for c in doc["changes"]} == {"retyped"}  # nothing added or removed
    assert sum(x["bytes"] for x in doc["bytes_by_dtype"]) == doc["delta"]["bytes"]
    assert {x["dtype"] for x in doc["bytes_by_dtype"]} == {"BF16", "Q4_K", "Q6_K", "F32"}


def test_several_ggufs_are_listed_and_one_is_named(tmp_path: Path, cli, online: None, monkeypatch) -> None:
    from hubserver import HubServer

    folder = tmp_path / "repo"
    folder.mkdir()
    write_tiny(folder / "tiny.Q8_0.gguf", types={"attn_q": "Q8_0", "ffn_gate": "Q8_0"})
    write_tiny(folder / "tiny.F16.gguf", types={"attn_q": "F16", "ffn_gate": "F16"})
    doc = cli(str(folder), "--json").json()
    assert [f["file"] for f in doc["files"]] == ["tiny.F16.gguf", "tiny.Q8_0.gguf"]
    assert len({f["parameters"] for f in doc["files"]}) == 1  # one model, two quantisations
    one = cli(str(folder / "tiny.Q8_0.gguf"), "--json").json()
    assert one["totals"]["parameters"] == doc["files"][0]["parameters"]
    with HubServer() as server:
        server.add_files("acme/ggufs", {p.name: p.read_bytes() for p in folder.iterdir()})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        listed = cli("acme/ggufs", "--json").json()
        assert [f["file"] for f in listed["files"]] == [f["file"] for f in doc["files"]]
        assert [f["bytes"] for f in listed["files"]] == [f["bytes"] for f in doc["files"]]
        single = cli("acme/ggufs/tiny.Q8_0.gguf", "--json").json()
        assert single["totals"]["bytes"] == one["totals"]["bytes"]
        assert "Q8_0" in cli("acme/ggufs").out


def test_a_500_file_gguf_repo_is_listed_once(tmp_path: Path, cli, online: None, monkeypatch) -> None:
    """500 quantisations of one model on the test Hub (issue 40: the listing fetched again for every
    file, 1,006 requests): one listing, then each file's header at the listed commit, ≤ 510 requests;
    every file listed with the count the local files give."""
    from hubserver import HubServer

    folder = tmp_path / "repo"
    folder.mkdir()
    write_tiny(folder / "tiny.Q8_0.gguf", types={"attn_q": "Q8_0", "ffn_gate": "Q8_0"})
    blob = (folder / "tiny.Q8_0.gguf").read_bytes()
    local = cli(str(folder / "tiny.Q8_0.gguf"), "--json").json()["totals"]["parameters"]
    with HubServer() as server:
        server.add_files("acme/many-ggufs", {f"tiny.{i:03d}.Q8_0.gguf": blob for i in range(500)})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        listed = cli("acme/many-ggufs", "--json").json()
        requests = len(server.requests("GET")) + len(server.requests("HEAD"))
    assert len(listed["files"]) == 500 and {f["parameters"] for f in listed["files"]} == {local}
    assert requests <= 510, requests


def test_a_gguf_set_is_cached_and_then_read_offline(tmp_path: Path, cli, online: None, monkeypatch) -> None:
    """Once every file of a several-GGUF repo has been read, the repo is one cached snapshot (issue 40:
    never cached, so `--offline` exited 3 after a good read): offline it lists the same files with the
    same counts, and names one file as online, making no request."""
    from hubserver import HubServer

    folder = tmp_path / "repo"
    folder.mkdir()
    write_tiny(folder / "tiny.Q8_0.gguf", types={"attn_q": "Q8_0", "ffn_gate": "Q8_0"})
    write_tiny(folder / "tiny.F16.gguf", types={"attn_q": "F16", "ffn_gate": "F16"})
    with HubServer() as server:
        server.add_files("acme/ggufs", {p.name: p.read_bytes() for p in folder.iterdir()})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        online_doc = cli("acme/ggufs", "--json").json()
        server.clear_log()
        offline = cli("acme/ggufs", "--offline", "--json")
        assert server.log == []
    assert offline.code == 0, offline.err
    assert offline.json()["files"] == online_doc["files"]
    assert [f["parameters"] for f in offline.json()["files"]] == \
        [cli(str(folder / f["file"]), "--json").json()["totals"]["parameters"] for f in online_doc["files"]]
    table = cli("acme/ggufs", "--offline").out
    assert "tiny.F16.gguf" in table and "tiny.Q8_0.gguf" in table


def test_files_of_a_gguf_set_lists_every_file(tmp_path: Path, cli, online: None, monkeypatch) -> None:
    """`--files` on a folder or repo of several GGUF files (issue 40: ignored there) lists every file
    with the size the folder holds, each GGUF counted (each is read on its own), the config as config."""
    from hubserver import HubServer

    folder = tmp_path / "repo"
    folder.mkdir()
    write_tiny(folder / "tiny.Q8_0.gguf", types={"attn_q": "Q8_0", "ffn_gate": "Q8_0"})
    write_tiny(folder / "tiny.F16.gguf", types={"attn_q": "F16", "ffn_gate": "F16"})
    (folder / "README.md").write_text("# tiny\n")
    sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
    local = cli(str(folder), "--files", "--json").json()
    assert {f["path"]: f["size"] for f in local["files"]} == sizes
    assert {f["path"] for f in local["files"] if f["counted"]} == {"tiny.Q8_0.gguf", "tiny.F16.gguf"}
    assert local["total_bytes"] == sum(sizes.values())
    with HubServer() as server:
        server.add_files("acme/ggufs", {p.name: p.read_bytes() for p in folder.iterdir()})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        remote = cli("acme/ggufs", "--files", "--json").json()
        assert {f["path"]: f["size"] for f in remote["files"]} == sizes
        assert remote["model"]["repo_id"] == "acme/ggufs"
        assert "tiny.F16.gguf" in cli("acme/ggufs", "--files").out
