"""Hostile inputs, round five (issue 53): numbers past every bound, options that mean nothing for the
method, strict JSON, long GPU lists, configs whose fields index past their layers. Each case: its
documented exit code and one line; bounds in CPU seconds, never wall time."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from helpers import tiny_llama, write_layout

from inspector.errors import EXIT_INVALID, EXIT_USAGE

HUGE = "9" * 309  # past a float's range (1.8e308): float() of it is inf, int(inf) an OverflowError


def _one_line(err: str) -> bool:
    lines = [line for line in err.splitlines() if line.strip()]
    return len(lines) <= 2 and lines[0].startswith("Error:") and "Traceback" not in err


@pytest.mark.parametrize("args", [
    ["estimate", "llama3-8b", "--context", HUGE],
    ["estimate", "llama3-8b", "--batch", HUGE],
    ["estimate", "llama3-8b", "--gpu", f"{HUGE}GiB"],
    ["estimate", "llama3-8b", "--gpu", f"80GiBx{HUGE}"],
    ["estimate", "llama3-8b", "--gpu", "H100", "--overhead", f"{HUGE}.5MiB"],
    ["train", "llama3-8b", "--seq", HUGE],
    ["train", "llama3-8b", "--batch", "1" + "0" * 5000],  # past CPython's 4,300-digit int() limit too
    ["plan", "llama3-8b", "--context", HUGE],
    ["diff", "llama3-8b", "llama3-8b", "--values", "--sample-bytes", HUGE],
])
def test_numbers_past_every_bound_are_usage_errors(cli, args: list[str]) -> None:
    """Was exit 70 (OverflowError: cannot convert float infinity to integer) for each."""
    result = cli(*args)
    assert result.code == EXIT_USAGE, result.err
    assert _one_line(result.err) and "more than 18 digits" in result.err, result.err
    assert len(result.err) < 300  # the 309 digits are not echoed back whole


@pytest.mark.parametrize(("args", "option"), [
    (["train", "llama3-8b", "--rank", "\u0663"], "--rank"),  # ARABIC-INDIC DIGIT THREE: int() reads it as 3
    (["train", "llama3-8b", "--rank", "1_6"], "--rank"),  # int() reads 16
    (["train", "llama3-8b", "--rank", "+8"], "--rank"),
    (["train", "llama3-8b", "--zero", "\u0660"], "--zero"),
    (["plan", "llama3-8b", "--max-gpus", "\u0668"], "--max-gpus"),
    (["plan", "llama3-8b", "--nodes", "1" * 5000], "--nodes"),
    (["estimate", "llama3-8b", "--context", "\u0668k"], "--context"),
    (["estimate", "llama3-8b", "--gpu", "H100", "--utilization", "\u0660.\u0669"], "--utilization"),
])
def test_number_options_are_ascii_digits(cli, args: list[str], option: str) -> None:
    """Each number option is ASCII digits (and a point where a fraction is meant): Python's int() and
    float() also read other scripts' digits, underscores and signs, all accepted before."""
    result = cli(*args)
    assert result.code == EXIT_USAGE and result.err.startswith(f"Error: {option}"), result.err
    assert _one_line(result.err)


def test_decimal_options_are_read_exactly() -> None:
    """``1.5k`` is 1,536 and ``0.1GiB`` is 107,374,182 bytes (2^30 / 10, rounded down): exact decimals,
    no float rounding."""
    from inspector.analysis.serving.budget import parse_budget, parse_count

    assert parse_count("1.5k", "x") == 1536
    assert parse_count("999999999999999999", "x") == 999_999_999_999_999_999  # 18 digits: read, exactly
    assert parse_budget("0.1GiB").per_device == 2**30 // 10
    assert parse_budget("1.1GB").per_device == 11 * 2**30 // 10  # GB read as GiB (issue 67), exactly


@pytest.mark.parametrize(("args", "words"), [
    (["train", "llama3-8b", "--alpha", "nan", "--json"], "--alpha: cannot read 'nan' as a decimal"),
    (["train", "llama3-8b", "--alpha", "inf", "--json"], "--alpha: cannot read 'inf' as a decimal"),
    (["train", "llama3-8b", "--alpha", "1e400", "--json"], "--alpha: cannot read '1e400' as a decimal"),
    (["train", "llama3-8b", "--alpha", "-1"], "--alpha: cannot read '-1' as a decimal"),
    (["train", "llama3-8b", "--alpha", "0"], "not a positive finite number"),
    (["train", "llama3-8b", "--method", "full", "--rank", "8"], "--method full trains every weight"),
    (["train", "llama3-8b", "--method", "full", "--alpha", "16"], "--method full trains every weight"),
    (["train", "llama3-8b", "--method", "full", "--targets", "q_proj"], "--method full trains every weight"),
])
def test_train_options_that_mean_nothing_are_refused(cli, args: list[str], words: str) -> None:
    """``--alpha nan`` wrote NaN into --json (not JSON); ``-1`` and ``--method full --rank 8`` were
    accepted silently."""
    result = cli(*args)
    assert result.code == EXIT_USAGE and words in result.err and _one_line(result.err), result.err
    assert "NaN" not in result.out and "Infinity" not in result.out


def test_lora_defaults_and_a_real_alpha_still_answer(cli) -> None:
    doc = cli("train", "llama3-8b", "--alpha", "32", "--json").json()
    assert doc["alpha"] == 32.0 and doc["rank"] == 16 and doc["targets"] == ["all-linear"]
    assert cli("train", "llama3-8b", "--method", "full", "--json").code == 0


def test_json_out_is_strict(cli) -> None:
    """A NaN reaching the renderer is a bug, refused there: the JSON text never holds NaN or Infinity."""
    from inspector.render.output import json_text

    with pytest.raises(ValueError):
        json_text({"x": float("nan")})
    with pytest.raises(ValueError):
        json_text({"rows": [{"x": float("inf")}]})
    json.loads(cli("train", "llama3-8b", "--alpha", "1" + "0" * 17, "--json").out, parse_constant=pytest.fail)
    import inspector

    with pytest.raises(Exception, match="positive finite"):
        inspector.train("llama3-8b", alpha=float("nan"))


def test_a_long_gpu_list_is_bounded_and_repeats_count_once(cli) -> None:
    """10,000 repeated names ran past 90 s at 836 MB; the same GPU named twice is one GPU."""
    start = time.process_time()
    result = cli("plan", "llama3-8b", "--gpu", ",".join(["H100"] * 10_000))
    assert result.code == EXIT_USAGE and "more than 64 names" in result.err and _one_line(result.err)
    assert time.process_time() - start < 2
    once = cli("plan", "llama3-8b", "--gpu", "H100", "--json").json()
    twice = cli("plan", "llama3-8b", "--gpu", "H100,h100,H100", "--json").json()
    assert once["layouts"] == twice["layouts"]
    import inspector

    assert inspector.plan("llama3-8b", gpus=["H100", "H100"]).to_dict()["layouts"] == once["layouts"]


def _model(folder: Path, **config: object) -> Path:
    base, entries = tiny_llama(layers=2, hidden=64, heads=4, kv=4)
    write_layout(folder / "model.safetensors", entries)
    (folder / "config.json").write_text(json.dumps({**base, **config}))
    return folder


@pytest.mark.parametrize("shared", [2, 3, 1000])
@pytest.mark.parametrize("command", [["estimate"], ["plan"], ["estimate", "--gpu", "H100", "--json"], []])
def test_kv_shared_layers_not_below_the_layers_is_unknown_not_a_crash(cli, tmp_path: Path, shared: int,
                                                                         command: list[str]) -> None:
    """Gemma 3n's config names how many of its last layers reuse an earlier layer's KV
    (``first_kv_shared_layer_idx = num_hidden_layers - num_kv_shared_layers``, transformers'
    modeling_gemma3n.py): at or past the layer count no layer keeps KV. Was exit 70 (IndexError)."""
    folder = _model(tmp_path / "m", num_kv_shared_layers=shared)
    args = [*command[:1], str(folder), *command[1:]]
    result = cli(*args)
    assert result.code == 0, result.err
    if "--json" in command:
        fit = result.json()["fit"]
        assert fit["fits"] is None and "num_kv_shared_layers" in fit["unknown"]


def test_kv_shared_layers_below_the_layers_still_counts_the_storing_ones(cli, tmp_path: Path) -> None:
    """One of two layers shares: the KV per token is the one storing layer's, 2 (K and V) × 4 KV heads ×
    head_dim 16 × 4 B (the config's float32) = 512 B, the standard decoder cache written out."""
    doc = cli("estimate", str(_model(tmp_path / "m", num_kv_shared_layers=1)), "--json").json()
    per_token = next(f for f in doc["figures"] if f["name"] == "kv_bytes_per_token")
    assert per_token["value"] == 2 * 4 * 16 * 4


@pytest.mark.parametrize("bits", [-1, 0, 1, 7, 16, "4", True, None])
def test_mlx_bits_outside_what_mlx_packs_are_refused(cli, tmp_path: Path, bits: object) -> None:
    """mlx's ``mx.quantize`` packs 2, 3, 4, 5, 6 or 8 bits (mlx.core docs); mlx-lm's loader passes the
    config's bits to it. 0 and -1 were read as a quantised checkpoint (exit 0)."""
    folder = tmp_path / "mlx"
    config, _ = tiny_llama(layers=1, hidden=64, heads=4, kv=4)
    write_layout(folder / "model.safetensors", [("model.layers.0.self_attn.q_proj.weight", "U32", (64, 8)),
                                                ("model.layers.0.self_attn.q_proj.scales", "F16", (64, 1)),
                                                ("model.layers.0.self_attn.q_proj.biases", "F16", (64, 1))])
    (folder / "config.json").write_text(json.dumps({**config, "quantization": {"group_size": 64, "bits": bits}}))
    result = cli(str(folder))
    assert result.code == EXIT_INVALID and "quantization.bits" in result.err and _one_line(result.err), result.err


def test_mlx_bits_mlx_packs_are_read(cli, tmp_path: Path) -> None:
    """4-bit: each uint32 word holds 32 / 4 = 8 weights (mlx-lm's packing): 64 × 8 words are 4,096 weights."""
    folder = tmp_path / "mlx"
    config, _ = tiny_llama(layers=1, hidden=64, heads=4, kv=4)
    write_layout(folder / "model.safetensors", [("model.layers.0.self_attn.q_proj.weight", "U32", (64, 8))])
    (folder / "config.json").write_text(json.dumps({**config, "quantization": {"group_size": 64, "bits": 4}}))
    assert cli(str(folder), "--json").json()["totals"]["parameters"] == 64 * 8 * 8


# --- diff --values: spans bounded by what was sampled --------------------------------------------------------


def test_spans_are_capped_and_walked_once() -> None:
    """100,000 contiguous 256-byte ranges (a file of small tensors side by side) are joined into spans of
    at most MAX_SPAN bytes, each range in exactly one span, taken from a generator in one pass (it was one
    span as long as the file, matched to the ranges in O(spans × ranges))."""
    from inspector.analysis.comparison.values import MAX_SPAN, spans

    taken = 0

    def slots():  # a generator: spans() may walk it once, never index or sort it
        nonlocal taken
        for i in range(100_000):
            taken += 1
            yield (1000 + i * 256, 256, i)

    out = list(spans("f", slots()))
    assert taken == 100_000
    assert all(s.length <= MAX_SPAN for s in out)
    assert [slot[2] for s in out for slot in s.slots] == list(range(100_000))
    assert all(s.start <= slot[0] and slot[0] + slot[1] <= s.start + s.length for s in out for slot in s.slots)
    assert len(out) == -(-100_000 * 256 // MAX_SPAN)
    # a range longer than the cap is read alone; ranges out of order are read apart, never lost
    big = list(spans("f", iter([(0, 10, 0), (100, MAX_SPAN * 3, 1), (50, 10, 2)])))
    assert [(s.start, s.length) for s in big] == [(0, 10), (100, MAX_SPAN * 3), (50, 10)]


def _small_tensors(folder: Path, count: int, shape: tuple[int, ...]) -> Path:
    return write_layout(folder / "model.safetensors", [(f"t.{i}", "F32", shape) for i in range(count)])


def test_a_value_diff_of_100000_small_tensors_holds_no_file_whole(tmp_path: Path) -> None:
    """100,000 tensors of 2 KiB side by side (200 MB a side): measured before at 932 MB peak (the file read
    as one span and copied per range); now 281 MB, against 128 MB for the plain diff of the same pair."""
    from helpers import measured

    a, b = (_small_tensors(tmp_path / side, 100_000, (512,)).parent for side in "ab")
    got = measured("diff", str(a), str(b), "--values", "--json")
    assert got["code"] == 0, got["stderr"]
    assert got["peak_mb"] < 350, got
    values = json.loads(got["stdout"])["values"]
    assert values["bytes_read"][0] <= 200 * 1024 * 1024 + 8 * 1024 * 1024  # the file's data, at most, in spans


def test_6600_one_mib_tensors_cost_a_second_not_a_minute(tmp_path: Path) -> None:
    """Each span was matched against every range: 48 s of CPU for 6,600 one-MiB tensors (the plain diff:
    0.9 s). Now the spans and ranges are walked once, in order: measured 0.9 s as a whole process."""
    from helpers import measured

    a, b = (_small_tensors(tmp_path / side, 6_600, (512, 512)).parent for side in "ab")
    got = measured("diff", str(a), str(b), "--values", "--json")
    assert got["code"] == 0, got["stderr"]
    assert got["cpu"] < 8, got
    values = json.loads(got["stdout"])["values"]
    assert values["requests"][0] <= 6_600 * 4  # at most one request a sampled range


def test_values_over_the_hub_read_a_window_of_spans(tmp_path: Path, online: None) -> None:
    """100,000 tensors of 64 bytes over the test Hub: each read whole (6.4 MB a side), in spans of at most
    MAX_SPAN bytes, so requests a side are the data over the cap (+1), not one per tensor; the process stays
    bounded (it was 1.2 GB)."""
    from helpers import measured
    from hubserver import HubServer, VFile

    from inspector.analysis.comparison.values import MAX_SPAN
    from inspector.formats.safetensors import encode_header

    blob, data = encode_header([(f"t.{i}", "F32", (16,)) for i in range(100_000)])
    with HubServer() as server:
        for repo in ("acme/a", "acme/b"):
            server.add_files(repo, {"model.safetensors": VFile(len(blob) + data, blob, lfs=True),
                                    "config.json": b"{}"})
        got = measured("diff", "acme/a", "acme/b", "--values", "--json", "--endpoint", server.url)
    assert got["code"] == 0, got["stderr"]
    values = json.loads(got["stdout"])["values"]
    assert values["requests"][0] <= data // MAX_SPAN + 2, values["requests"]
    assert got["peak_mb"] < 300, got


def test_a_side_that_fails_mid_read_is_one_line_and_the_process_exits(tmp_path: Path, online: None) -> None:
    """Every range request of one side answered 500: the other side stops, the worker's failure is the
    one-line network error (exit 5), and the process ends (a failed worker once left it running)."""
    import subprocess
    import sys

    from hubserver import Fault, HubServer

    a, b = (_small_tensors(tmp_path / side, 2_000, (4096,)).parent for side in "ab")
    with HubServer() as server:
        for repo, folder in (("acme/a", a), ("acme/b", b)):
            server.add_files(repo, {f.name: f.read_bytes() for f in folder.iterdir()})
        warm = subprocess.run([sys.executable, "-m", "inspector", "diff", "acme/a", "acme/b", "--endpoint",
                               server.url], capture_output=True, text=True, timeout=120, check=False)
        assert warm.returncode == 0, warm.stderr  # the headers cached: the run below reads only tensor data
        server.state.faults.append(Fault("5xx", path=r"acme/b/resolve/[0-9a-f]{40}/model", times=-1, value=500))
        server.clear_log()
        done = subprocess.run([sys.executable, "-m", "inspector", "diff", "acme/a", "acme/b", "--values",
                               "--endpoint", server.url], capture_output=True, text=True, timeout=120, check=False)
        failed = [r for r in server.requests("GET") if r.status == 500]
    assert failed and all(r.range for r in failed)  # tensor data ranges failed, not a header read
    assert done.returncode == 5, done.stderr
    assert _one_line(done.stderr), done.stderr


# --- a remembered redirect ----------------------------------------------------------------------------------


def _big_header_repo(server) -> None:
    from helpers import raw_header
    from hubserver import VFile

    obj, offset = {}, 0
    for i in range(1600):  # ~400 kB of header: past the first read (256 KiB), so a second range is asked for
        obj[f"t{i:05d}." + "x" * 200] = {"dtype": "F32", "shape": [1], "data_offsets": [offset, offset + 4]}
        offset += 4
    head = raw_header(obj)
    server.add_files("acme/big-header", {"model.safetensors": VFile(len(head) + offset, head, True)})


def test_a_redirect_that_leaves_and_reenters_the_hub_is_not_remembered(online: None) -> None:
    """The Hub redirects to its CDN, and the CDN back to the Hub's origin at an address it picked
    (``/bounced/…``). That address was remembered, and the next range sent straight to it with the token
    (the same origin as the Hub's). Now a move is remembered only where every hop after the file's own address
    stayed on one origin, and no request sent directly to a remembered address carries the token: across the
    chain, no request to the CDN or to the address the CDN chose carries it."""
    from hubserver import HubServer

    from inspector.sources.hub import HubOptions, open_hub

    with HubServer() as server:
        _big_header_repo(server)
        server.state.redirect = server.state.cdn_bounce = True
        c = open_hub("acme/big-header", options=HubOptions(endpoint=server.url, token="hf_only_for_the_hub"))
        assert c.tensor_count == 1600
        reads = [r for r in server.requests("GET") if r.path.endswith("model.safetensors") and r.status != 404]
    bounced = [r for r in reads if r.path.startswith("/bounced/")]
    assert len(bounced) == 2 and all(r.status == 206 for r in bounced)
    assert not any(r.authorized for r in reads if r.origin == "cdn" or r.path.startswith("/bounced/")), reads
    # each range went through the file's own address (not remembered): the Hub's 302 twice, with the token
    assert [r.authorized for r in reads if r.path.startswith("/acme/")] == [True, True]


def test_a_remembered_cdn_address_never_gets_the_token(online: None) -> None:
    """The plain chain (the Hub → its CDN) is still remembered: the second range goes to the CDN directly,
    once, without the token."""
    from hubserver import HubServer

    from inspector.sources.hub import HubOptions, open_hub

    with HubServer() as server:
        _big_header_repo(server)
        server.state.redirect = True
        open_hub("acme/big-header", options=HubOptions(endpoint=server.url, token="hf_only_for_the_hub"))
        reads = [r for r in server.requests("GET") if r.path.endswith("model.safetensors") and r.status != 404]
    assert sorted((r.origin, r.status, r.authorized) for r in reads) == [
        ("cdn", 206, False), ("cdn", 206, False), ("hub", 302, True)]


# --- the one-request answer checked before it is built --------------------------------------------------------


@pytest.fixture
def llama3_hub(online: None):
    from hubserver import HubServer

    from inspector.sources.bundled import ALIASES, bundled_path

    with HubServer() as server:
        a = ALIASES["llama3-8b"]
        server.add_snapshot(a.repo_id, bundled_path(a))
        yield server, a.repo_id


def _served_headers(server, repo: str) -> dict[str, dict]:
    """Each shard's header as the test Hub serves the file (the bundled snapshot's real headers)."""
    files = server.state.repos[repo].resolve("main").files
    out = {}
    for name, f in files.items():
        if name.endswith(".safetensors"):
            n = int.from_bytes(f.read(0, 8), "little")
            out[name] = json.loads(f.read(8, 8 + n))
    return out


def _published(c) -> None:
    from helpers import ref

    from inspector.analysis.facts.stats import summarize

    s = summarize(c)
    assert s.parameters == ref("llama3-8b.parameters") and s.bytes == ref("llama3-8b.bytes")


@pytest.mark.parametrize("body", [
    b'{"index":{},"headers":{"a":[' + b"{}," * 40_000_000 + b"{}]}}",  # 120 MB of small objects (was 3.5 GB)
    b"0" * 100_000_000,  # 100 MB of zeros
    b'{"index":{},"headers":{"a":[' + b"{}," * 9_000_000 + b"{}]}}",  # 27 MB: under the byte cap, over the count
    b'{"index":{},"headers":{"a":[' + b'"",' * 9_000_000 + b'""]}}',  # 27 MB of empty strings
])
def test_a_huge_answer_is_set_aside_before_it_is_parsed(llama3_hub, body: bytes) -> None:
    """The answer is read at most ONE_REQUEST_BUDGET bytes, its values counted before parsing; past either,
    the range reads answer with the published figures, in bounded memory (tracemalloc's peak)."""
    import tracemalloc

    from inspector.sources.hub import HubOptions, open_hub

    server, repo = llama3_hub
    server.state.metadata_body[repo] = body
    tracemalloc.start()
    try:
        c = open_hub(repo, options=HubOptions(endpoint=server.url, use_cache=False))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _published(c)
    assert peak < 150 * 1024 * 1024, peak  # the answer's 32 MiB, held twice at most while it streams
    assert sum(1 for r in server.requests("GET") if r.range and r.status == 206) >= 4  # every shard by range


def test_a_stalled_answer_costs_its_own_deadline_then_range_reads(llama3_hub, monkeypatch) -> None:
    """An answer that never comes is waited for ONE_REQUEST_SECONDS (here 1 s), not the run's Hub deadline:
    the range reads answer (it was exit 5 for a readable repo)."""
    from hubserver import Fault

    import inspector.sources.early as hub_module
    from inspector.sources.hub import HubOptions, open_hub

    server, repo = llama3_hub
    monkeypatch.setattr(hub_module, "ONE_REQUEST_SECONDS", 1.0)
    server.state.faults.append(Fault("stall", "/safetensors-metadata/", times=1, value=8))
    c = open_hub(repo, options=HubOptions(endpoint=server.url, use_cache=False))
    _published(c)


def _lie(headers: dict[str, dict], how: str) -> dict[str, dict]:
    """Every shard's header with one lie that keeps the JSON's length (so the listed size still proves it)."""
    out = json.loads(json.dumps(headers))
    for header in out.values():
        names = [n for n, e in header.items() if n != "__metadata__" and len(e["shape"]) == 2
                 and e["shape"][0] != e["shape"][1]]
        first = header[names[0]]
        if how == "transposed":
            first["shape"] = first["shape"][::-1]
        elif how == "dtype":  # BF16 read as F16 (one byte shorter, given back in the metadata's text)
            assert first["dtype"] == "BF16" and header["__metadata__"] == {"format": "pt"}
            first["dtype"] = "F16"
            header["__metadata__"]["format"] = "ptx"
        elif how == "swapped":  # two tensors of different sizes trade places: their spans no longer tile
            entries = [e for n, e in header.items() if n != "__metadata__"]
            one, other = next((x, y) for x in entries for y in entries
                              if len(str(x["data_offsets"])) == len(str(y["data_offsets"]))
                              and math.prod(x["shape"]) != math.prod(y["shape"]))
            one["data_offsets"], other["data_offsets"] = other["data_offsets"], one["data_offsets"]
    return out


@pytest.mark.parametrize("how", ["transposed", "dtype", "swapped"])
def test_an_answer_that_lies_is_never_shown_or_cached(llama3_hub, tmp_path: Path, how: str) -> None:
    """A lie that keeps the JSON's length passes the listing's size proof. It was shown and cached (and the
    swapped offsets made the repo exit 4). Now one shard's header is read from the file before the answer is
    used: the records shown and cached are the file's, read by range, equal to a pinned read's."""
    from inspector.sources.hub import HeaderCache, HubOptions, open_hub

    server, repo = llama3_hub
    truth = open_hub(repo, "8cde5ca8380496c9a6cc7ef3a8b46a0372a1d920",
                     options=HubOptions(endpoint=server.url, use_cache=False))
    server.state.metadata_patch[repo] = {"headers": _lie(_served_headers(server, repo), how)}
    server.clear_log()
    c = open_hub(repo, options=HubOptions(endpoint=server.url))
    _published(c)

    def records(checkpoint) -> list[tuple]:
        return sorted((t.name, t.dtype, t.shape, t.begin, t.end) for h in checkpoint.headers for t in h.tensors)

    assert records(c) == records(truth)
    assert sum("/safetensors-metadata/" in r.path for r in server.requests("GET")) == 1
    assert not any("one request" in n for n in c.provenance.notes), c.provenance.notes
    offline = open_hub(repo, options=HubOptions(endpoint=server.url, offline=True))  # the cached snapshot
    assert records(offline) == records(truth)
    assert HeaderCache(endpoint=server.url).newest(repo) is not None


# --- header snapshots and the header cache: one budget, each span once ----------------------------------------


def _hostile_snapshot(folder: Path, entries: int, *, distinct: bool, repo: str = "acme/hostile",
                      sha: str = "a" * 40) -> Path:
    """A version-3 snapshot whose pack holds gzip members of one 100,000-tensor header (7.2 MB inflated, 0.85 MB
    packed), named by ``entries`` files: all the same span (``distinct`` False) or each its own member."""
    import gzip

    from inspector.formats.safetensors import encode_header

    folder.mkdir(parents=True, exist_ok=True)
    blob, data = encode_header([(f"t.{i}", "F32", (16,)) for i in range(100_000)])
    member = gzip.compress(blob, 6)
    (folder / "headers.pack.gz").write_bytes(member * (entries if distinct else 1))
    files = [{"path": f"model-{i:05d}.safetensors", "size": len(blob) + data, "header": "headers.pack.gz",
              "format": "safetensors", "span": [i * len(member) if distinct else 0, len(member)]}
             for i in range(entries)]
    (folder / "inspector-snapshot.json").write_text(json.dumps({
        "format": "inspector-header-snapshot", "version": 3, "repo_id": repo, "revision": sha,
        "provenance": "hostile", "files": files}))
    return folder


@pytest.mark.parametrize(("entries", "distinct", "words"), [
    (300, False, "names the header bytes of"),  # a 772 kB snapshot: was exit 70 at 3.7 GB
    (12, True, "a repo's budget"),  # 12 distinct 7.2 MB headers: 86 MB, over the 64 MiB budget
])
def test_a_snapshot_folder_yields_each_header_once_and_within_the_repo_budget(tmp_path: Path, entries: int,
                                                                              distinct: bool, words: str) -> None:
    """Measured after: the span named twice refused at the second file (0.3 s, 67 MB); the distinct headers
    refused once their inflated bytes pass REPO_HEADER_BUDGET (1.7 s, 295 MB)."""
    from helpers import measured

    folder = _hostile_snapshot(tmp_path / "snap", entries, distinct=distinct)
    got = measured(str(folder), "--json")
    assert got["code"] == EXIT_INVALID and words in got["stderr"], got
    assert _one_line(got["stderr"]) and got["peak_mb"] < 320 and got["cpu"] < 4, got


def test_a_huge_manifest_is_refused_by_its_size_and_a_dense_one_by_its_count(tmp_path: Path) -> None:
    """A 300 MB manifest cost 1.2 GB before a refusal that said "not valid JSON"; now its size is refused
    before a byte is read, naming the budget. Under the size budget, 30 MB of empty objects is refused by
    its count before it is parsed."""
    from helpers import measured

    from inspector.sources.snapshot import MANIFEST_BUDGET

    big = tmp_path / "big"
    big.mkdir()
    with (big / "inspector-snapshot.json").open("wb") as f:
        f.truncate(300_000_000)  # sparse: the size alone is refused
    got = measured(str(big))
    assert got["code"] == EXIT_INVALID and f"{MANIFEST_BUDGET:,}-byte budget" in got["stderr"], got
    assert got["peak_mb"] < 100, got
    dense = tmp_path / "dense"
    dense.mkdir()
    (dense / "inspector-snapshot.json").write_bytes(
        b'{"format":"inspector-header-snapshot","version":3,"files":[' + b"{}," * 10_000_000 + b"{}]}")
    got = measured(str(dense))
    assert got["code"] == EXIT_INVALID and "JSON values" in got["stderr"] and got["peak_mb"] < 200, got


@pytest.fixture
def gpt2_hub(online: None):
    from hubserver import HubServer

    from inspector.sources.bundled import ALIASES, bundled_path

    with HubServer() as server:
        a = ALIASES["gpt2"]
        sha = server.add_snapshot(a.repo_id, bundled_path(a))
        yield server, a.repo_id, sha


def test_a_damaged_cache_entry_is_read_again_online_and_named_offline(gpt2_hub, cli, monkeypatch) -> None:
    """A cache entry whose snapshot is refused (one span named for 300 files) was trusted online and offline
    alike, and the error did not say which folder to delete. Offline it is one line naming the folder; online
    the repo is read from the Hub again (published figures) and its snapshot replaces the damaged one."""
    from helpers import ref

    from inspector.sources.hub import HeaderCache

    server, repo, sha = gpt2_hub
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    folder = HeaderCache(endpoint=server.url).path(repo, sha)
    _hostile_snapshot(folder, 300, distinct=False, repo=repo, sha=sha)
    HeaderCache(endpoint=server.url).set_ref(repo, "main", sha)
    offline = cli(repo, "--offline", "--json")
    assert offline.code == EXIT_INVALID and f"delete {folder}" in offline.err, offline.err
    online = cli(repo, "--json")
    assert online.code == 0, online.err
    assert online.json()["totals"]["parameters"] == ref("gpt2.parameters")
    again = cli(repo, "--offline", "--json")  # the fresh snapshot replaced the damaged one
    assert again.code == 0 and again.json()["totals"]["parameters"] == ref("gpt2.parameters"), again.err


def test_a_tensor_in_two_shards_is_refused_by_the_diff_by_name(cli, tmp_path: Path) -> None:
    """Found by the fuzz stage's pack kind: two files holding the same tensor names (a folder of shards
    without an index) made ``diff`` exit 70 (its causes counted the name twice on one side). Refused by name,
    exit 4, as ``audit`` reports it (tensor.duplicate)."""
    config, entries = tiny_llama()
    for i in (1, 2):
        write_layout(tmp_path / "dup" / f"model-0000{i}-of-00002.safetensors", entries)
    (tmp_path / "dup" / "config.json").write_text(json.dumps(config))
    result = cli("diff", str(tmp_path / "dup"), "gpt2")
    assert result.code == EXIT_INVALID and "is in two files" in result.err and _one_line(result.err), result.err
    assert "tensor.duplicate" in cli("audit", str(tmp_path / "dup")).out


def test_a_hub_repo_whose_headers_pass_the_repo_budget_is_refused_in_bounded_memory(tmp_path: Path,
                                                                                    online: None) -> None:
    """Ten shards of 7.2 MB headers (100,000 tensors each, 72 MB in all) over the test Hub: the budget
    (64 MiB, reserved before each header is asked for) refuses the repo by name at the tenth; measured 1.8 s
    of CPU and 343 MB, the budget's worst case as docs/security.md states it (it was 256 MiB a repo: some
    3.5 million tensors parsed before a refusal)."""
    import os

    from helpers import measured
    from hubserver import HubServer, VFile

    from inspector.formats.registry import REPO_HEADER_BUDGET
    from inspector.formats.safetensors import encode_header

    files: dict[str, object] = {}
    weight_map = {}
    for shard in range(10):
        name = f"model-{shard + 1:05d}-of-00010.safetensors"
        blob, data = encode_header([(f"s{shard}.t.{i}", "F32", (16,)) for i in range(100_000)])
        files[name] = VFile(len(blob) + data, blob, lfs=True)
        weight_map[f"s{shard}.t.0"] = name
    files["model.safetensors.index.json"] = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    files["config.json"] = b"{}"
    with HubServer() as server:
        server.add_files("acme/wide", files)  # type: ignore[arg-type]
        got = measured("acme/wide", "--json", env={**os.environ, "HF_ENDPOINT": server.url})
    assert got["code"] == EXIT_INVALID and f"{REPO_HEADER_BUDGET:,} bytes" in got["stderr"], got
    assert _one_line(got["stderr"]) and got["peak_mb"] < 400 and got["cpu"] < 5, got


def test_an_empty_tensor_alone_in_its_file_asks_for_no_range(tmp_path: Path, online: None, cli) -> None:
    """A shard holding only an empty tensor is a span of 0 bytes: nothing is asked for (a range request of
    0 bytes, ``bytes=n-(n-1)``, is not a valid range); the tensor is identical, read whole."""
    from hubserver import HubServer

    from inspector.formats.safetensors import encode_header

    full, data = encode_header([("model.layers.0.mlp.up_proj.weight", "F32", (64, 64))])
    empty, _ = encode_header([("model.layers.0.mlp.extra", "F32", (0,))])
    index = json.dumps({"metadata": {}, "weight_map": {"model.layers.0.mlp.up_proj.weight": "a.safetensors",
                                                       "model.layers.0.mlp.extra": "b.safetensors"}}).encode()
    files = {"a.safetensors": full + b"\1" * data, "b.safetensors": empty, "model.safetensors.index.json": index,
             "config.json": b"{}"}
    with HubServer() as server:
        for repo in ("acme/a", "acme/b"):
            server.add_files(repo, dict(files))
        server.clear_log()
        result = cli("diff", "acme/a", "acme/b", "--values", "--json", "--endpoint", server.url)
        ranges = [r.range for r in server.requests("GET") if r.range and r.path.endswith("b.safetensors")]
    assert result.code == 0, result.err
    verdicts = {t["name"]: t["verdict"] for t in result.json()["values"]["tensors"]}
    assert verdicts["model.layers.0.mlp.extra"] == "identical"
    assert all(not r.endswith(str(int(r.split("=")[1].split("-")[0]) - 1)) for r in ranges), ranges
