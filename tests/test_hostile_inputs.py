"""Bounded work on hostile inputs (issue 26): dimensions that overflow, JSON nested without end, and
the numbers the Rust safetensors reader refuses. Each case: the documented exit code, one line."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest
from helpers import measured
from hubserver import HubServer, VFile
from safetensors import SafetensorError, deserialize

from inspector.errors import EXIT_INVALID
from inspector.formats.safetensors import encode_header


def _raw(path: Path, header: bytes, data: int = 0) -> Path:
    header += b" " * (-len(header) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * data)
    return path


@pytest.mark.parametrize("count", [40_000, 1_000_000])
def test_overflowing_dimensions_are_refused_without_multiplying_them_all(cli, tmp_path: Path, count: int) -> None:
    """2^64−1 repeated, then 0: the product overflows at the second dimension. Multiplying all of
    them first took 5.46 s for 40,000; the check now stops where it overflows."""
    shape = ",".join(["18446744073709551615"] * count + ["0"])
    path = _raw(tmp_path / "m.safetensors",
                f'{{"t":{{"dtype":"F32","shape":[{shape}],"data_offsets":[0,0]}}}}'.encode())
    start = time.process_time()
    result = cli(str(path))
    elapsed = time.process_time() - start
    assert result.code == EXIT_INVALID and result.err.count("Error:") == 1 and "overflows 64 bits" in result.err
    assert elapsed < 5, elapsed  # a guard against the quadratic product (benchmarks time it; see README)


def _reference_refuses(blob: bytes) -> bool:
    try:
        deserialize(blob)
    except SafetensorError:
        return True
    return False


@pytest.mark.parametrize(("header", "what"), [
    (b'{"t":{"dtype":"F32","shape":[1],"data_offsets":[-0,4]}}', "data_offsets"),
    (b'{"t":{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}}', "shape"),
    (b'{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1e400}}', "out of range"),
    (b'{"__metadata__":{"a":"b"},"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"z":-1e999}}',
     "out of range"),
])
def test_numbers_the_rust_reference_refuses_are_refused(cli, tmp_path: Path, header: bytes, what: str) -> None:
    path = _raw(tmp_path / "m.safetensors", header, 4)
    assert _reference_refuses(path.read_bytes())  # the safetensors library's Rust reader, nobody here wrote it
    result = cli(str(path))
    assert result.code == EXIT_INVALID and what in result.err, result.err


def test_a_negative_number_in_an_unknown_field_is_read_as_the_reference_reads_it(cli, tmp_path: Path) -> None:
    path = _raw(tmp_path / "m.safetensors", b'{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":-5}}', 4)
    assert not _reference_refuses(path.read_bytes())
    assert cli(str(path)).code == 0


DEEP = ("[" * 100_000 + "]" * 100_000).encode()


def _nested(doc: str) -> bytes:
    return ('{"model_type":"llama","deep":' + doc + "}").encode() if doc else DEEP


def _tiny_model(folder: Path) -> None:
    blob, data = encode_header([("model.embed_tokens.weight", "F16", (8, 4))], {"format": "pt"})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(blob + b"\0" * data)


@pytest.mark.parametrize("name", ["config.json", "model.safetensors.index.json", "adapter_config.json"])
def test_json_nested_100000_levels_is_one_clear_refusal(cli, tmp_path: Path, name: str) -> None:
    folder = tmp_path / "m"
    _tiny_model(folder)
    (folder / name).write_bytes(b'{"weight_map":' + DEEP + b"}" if name.endswith("index.json") else
                                b'{"peft_type":"LORA","x":' + DEEP + b"}")
    for args in ([str(folder)], ["audit", str(folder)], ["estimate", str(folder)], [str(folder), "--json"]):
        result = cli(*args)
        if args[0] == "audit" and name.endswith("index.json"):  # the audit reports a broken index as a finding
            assert result.code == 1 and "index.invalid" in result.out and "nested" in result.out, result.out
            continue
        assert result.code == EXIT_INVALID, (args, result.code, result.err)
        assert result.err.count("Error:") == 1 and "nested" in result.err and "Traceback" not in result.err


def test_a_nested_config_in_the_hf_cache_and_from_the_hub(cli, tmp_path: Path, online, monkeypatch) -> None:
    config = b'{"model_type":"llama","x":' + DEEP + b"}"
    blob, data = encode_header([("model.embed_tokens.weight", "F16", (8, 4))], {"format": "pt"})
    # the Hugging Face cache layout
    sha = "0123456789abcdef0123456789abcdef01234567"
    snap = tmp_path / "hub" / "models--acme--deep" / "snapshots" / sha
    snap.mkdir(parents=True)
    (snap / "config.json").write_bytes(config)
    (snap / "model.safetensors").write_bytes(blob + b"\0" * data)
    result = cli(str(snap))
    assert result.code == EXIT_INVALID and "nested" in result.err
    with HubServer() as server:
        server.add_files("acme/deep", {"config.json": config, "model.safetensors": VFile(len(blob) + data, blob, True)})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
        result = cli("acme/deep")
        assert result.code == EXIT_INVALID and "nested" in result.err and result.err.count("Error:") == 1
        reads = [r for r in server.requests("GET") if r.path.endswith("config.json")]
        assert len(reads) == 1  # read once


def test_a_listing_nested_without_end_is_refused_by_the_one_loader() -> None:
    from inspector.errors import InvalidCheckpointError
    from inspector.safeio import parse_json_object

    with pytest.raises(InvalidCheckpointError, match="nested"):
        parse_json_object(b'{"siblings":' + DEEP + b"}", "listing")
    with pytest.raises(InvalidCheckpointError, match="deeper than 64"):
        parse_json_object(json.dumps({"a": [[[[{"b": [1]}]]]] * 1} | {"c": json.loads("[" * 70 + "]" * 70)}),
                          "listing")


@pytest.mark.parametrize("ref", ["sparse-1GiB", "../../../../etc", "../snapshots/../../../../etc"])
def test_a_hostile_hf_cache_ref_is_refused_from_a_few_bytes(tmp_path: Path, ref: str) -> None:
    """refs/main is read as a 40-hex commit from at most 64 bytes, never followed as a path: a 1 GiB
    sparse ref once cost 3.17 GB, and '../../../../etc' opened /etc as the checkpoint."""
    import os
    import subprocess
    import sys

    repo = tmp_path / "hub" / "models--acme--tiny"
    (repo / "refs").mkdir(parents=True)
    snap = repo / "snapshots" / ("0" * 40)
    _tiny_model(snap)
    main = repo / "refs" / "main"
    if ref == "sparse-1GiB":
        with main.open("wb") as fh:
            fh.truncate(1 << 30)
    else:
        main.write_text(ref)
    # VmHWM: this process image's own peak (ru_maxrss would count the forked copy of pytest before exec)
    code = ("import re, sys; from inspector.cli.commands import run; code = run([sys.argv[1]]); "
            "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1], file=sys.stderr); "
            "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, str(repo)], capture_output=True, text=True,
                          env={**os.environ, "HF_HOME": str(tmp_path / "home")}, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == EXIT_INVALID, done.stderr
    assert lines[0].startswith("Error:") and "not a commit id" in lines[0] and "".join(lines).count("Error:") == 1
    assert int(lines[-1]) < 100 * 1024, lines[-1]  # peak resident memory, kB
    assert "/etc" not in done.stdout


def _strict(text: str) -> object:
    """Parse as a strict RFC 8259 parser would: every string valid Unicode (no lone surrogate)."""
    doc = json.loads(text)
    json.dumps(doc, ensure_ascii=False).encode("utf-8")  # UnicodeEncodeError on a lone surrogate
    return doc


def test_lone_surrogates_from_a_config_and_an_adapter_give_strict_json(cli, tmp_path: Path) -> None:
    base = tmp_path / "base"
    _tiny_model(base)
    (base / "config.json").write_text('{"model_type": "llama", "architectures": ["Llama\\ud83dForCausalLM"],'
                                      ' "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 1}')
    result = cli(str(base), "--json")
    assert result.code == 0, result.err
    doc = _strict(result.out)
    assert doc["config"]["architectures"] == ["Llama\ufffdForCausalLM"]
    assert "not valid Unicode" in result.err and "1 string" in result.err
    for args in (["estimate", str(base), "--json"], ["audit", str(base), "--json"],
                 ["compare", str(base), "gpt2", "--json"]):
        out = cli(*args)
        assert out.code in (0, 1), out.err
        _strict(out.out)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    blob, data = encode_header([("base_model.model.model.embed_tokens.lora_A.weight", "F16", (2, 4))], None)
    (adapter / "adapter_model.safetensors").write_bytes(blob + b"\0" * data)
    (adapter / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 2, "target_modules": ["q\\udc00"]}')
    out = cli("diff", str(base), str(adapter), "--json")
    assert out.code in (0, 1), out.err
    assert _strict(out.out)["target_modules"] == ["q\ufffd"]


def test_a_silent_server_is_a_network_error_within_the_documented_deadline(tmp_path: Path) -> None:
    """A Hub that accepts every connection and never answers: exit 5 with the default limits (the idle
    wait, HF_HUB_DOWNLOAD_TIMEOUT's 10 s, inside the whole read's 25 s deadline), the message naming both."""
    import os
    import socket
    import subprocess
    import sys
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "INSPECTOR_"))}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{server.getsockname()[1]}", HF_HOME=str(tmp_path))
    try:
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "inspector", "acme/silent"], capture_output=True, text=True,
                              env=env, timeout=60)
        took = time.monotonic() - start
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert done.returncode == 5, done.stderr
    assert "no answer within 10 s" in done.stderr and "25 s deadline" in done.stderr
    assert done.stderr.count("Error:") == 1
    assert took < 25, took


@pytest.mark.parametrize("patch", ["method", "version", "truncated"])
def test_a_zip_python_cannot_read_is_a_named_pickle_error_not_exit_70(cli, tmp_path: Path, patch: str) -> None:
    """Found by the fuzz stage (scripts/fuzz.py, torch-zip seed 1): compression method 99, a 'zip file
    version' zipfile does not implement and a cut archive raised NotImplementedError or EOFError (exit 70,
    or 130 through click's Abort)."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        z.writestr("archive/byteorder", "little")
    blob = bytearray(out.getvalue())
    central = blob.rfind(b"PK\x01\x02", 0, blob.rfind(b"PK\x01\x02"))  # the data.pkl entry's directory record
    if patch == "method":
        struct.pack_into("<H", blob, 8, 99)  # local header
        struct.pack_into("<H", blob, central + 10, 99)
    elif patch == "version":
        struct.pack_into("<H", blob, central + 6, 110)  # version needed to extract: 11.0
    else:
        del blob[40:60]
    path = tmp_path / "model.pt"
    path.write_bytes(bytes(blob))
    for args in ([str(path)], ["audit", str(path)]):
        result = cli(*args)
        assert result.code in (EXIT_INVALID, 1), (args, result.code, result.err)
        assert "internal error" not in result.err and "Aborted" not in result.err


def test_a_260_mb_local_config_is_refused_by_its_size_at_once(tmp_path: Path) -> None:
    """Local config and index files are held to the budget a Hub read has (issue 40: a 260 MB config.json ran
    past 120 s and 1.5 GB; since issue 66 a config.json's own, 4 MiB, safeio.DOCUMENT_BUDGETS): refused from
    its size, before a byte is parsed. Timed and measured in a child process (its peak resident set from the
    kernel)."""
    folder = tmp_path / "m"
    folder.mkdir()
    with (folder / "config.json").open("wb") as fh:  # sparse: 260 MB long, a few bytes on disk
        fh.write(b'{"model_type": "llama", "pad": "')
        fh.truncate(260_000_000)
    from helpers import write_raw

    write_raw(folder / "model.safetensors", {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, data=8)
    got = measured(str(folder), "--json")
    assert got["code"] == EXIT_INVALID, got
    assert "260,000,000 bytes, over the 4,194,304-byte budget" in got["stderr"]
    assert got["cpu"] < 5 and got["peak_mb"] < 300, got


def test_a_table_of_thousands_of_distinct_layer_blocks_draws_in_json_time(tmp_path: Path) -> None:
    """A 4.5 MB header whose 20,000 layers are all shaped differently (so none collapse): the table
    draws ``MAX_TABLE_ROWS`` blocks and one row summing the rest, so it still adds up, in at most 2× the
    time of the JSON document (issue 40: 25 s against 2.8 s). Timed in child processes."""
    import subprocess
    import sys

    from helpers import write_raw

    from inspector.render.output import MAX_TABLE_ROWS

    header, offset = {}, 0
    for i in range(20_000):
        for part in ("self_attn.q_proj", "mlp.up_proj"):
            shape = [i % 997 + 1, 2]
            header[f"model.layers.{i}.{part}.weight"] = {"dtype": "BF16", "shape": shape,
                                                          "data_offsets": [offset, offset + 4 * shape[0]]}
            offset += 4 * shape[0]
    folder = tmp_path / "m"
    folder.mkdir()
    write_raw(folder / "model.safetensors", header, data=offset)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert len(json.dumps(header)) > 4_500_000

    def timed(*args: str) -> tuple[float, str]:  # the child's CPU seconds, not wall time
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run = subprocess.run([sys.executable, "-m", "inspector", str(folder), *args], capture_output=True, text=True,
                             timeout=120, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, run.stdout

    as_json, doc = timed("--json")
    as_table, table = timed()
    blocks = json.loads(doc)["layer_groups"]
    assert len(blocks) > 10_000
    rest = sum(g["parameters_each"] * g["count"] for g in blocks[MAX_TABLE_ROWS:])
    assert f"… {len(blocks) - MAX_TABLE_ROWS:,} more blocks" in table and f"{rest:,}" in table
    assert len(table.splitlines()) < MAX_TABLE_ROWS + 100
    assert as_table <= 2 * as_json + 0.5, (as_table, as_json)


def test_json_depth_is_counted_to_the_level() -> None:
    """``safeio.parse_json``'s depth bound, at its edge: a document nested exactly ``max_depth`` levels
    (objects and lists alternating, beside shallow siblings) is read; one level more is refused by name."""
    import json

    from inspector.errors import InvalidCheckpointError
    from inspector.safeio import parse_json

    def nested(levels: int) -> object:
        doc: object = 1
        for i in range(levels):
            # a shallow container sibling from the third level up (it is never the deepest)
            doc = {"k": doc, "flat": [1, 2] if i >= 2 else 2} if i % 2 else [doc, "x", {} if i >= 2 else 0]
        return doc

    for limit in (1, 2, 5, 64):
        assert parse_json(json.dumps(nested(limit)), "doc", max_depth=limit) == nested(limit)
        with pytest.raises(InvalidCheckpointError, match=f"nested deeper than {limit} levels"):
            parse_json(json.dumps(nested(limit + 1)), "doc", max_depth=limit)
    assert parse_json("7", "doc", max_depth=1) == 7
