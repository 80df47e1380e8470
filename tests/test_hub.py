"""The real huggingface_hub client against the local Hub server: results, request counts, bytes,
cache behaviour and every fault the issue lists."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from helpers import raw_header, ref
from hubserver import Fault, HubServer, VFile

from inspector import errors
from inspector.analysis.facts.stats import summarize
from inspector.sources.bundled import ALIASES, bundled_path
from inspector.sources.hub import HeaderCache, Hub, HubOptions, open_hub

LLAMA3 = "meta-llama/Meta-Llama-3-8B"


@pytest.fixture
def hub(online: None):
    """The range-read path: a Hub without the one-request answer (a mirror; any revision but the default
    branch), which is what these tests hold to the byte. tests/test_one_request.py has the answer."""
    with HubServer() as server:
        for alias in ("llama3-8b", "deepseek-v3", "gpt2", "llama2-7b"):
            a = ALIASES[alias]
            server.add_snapshot(a.repo_id, bundled_path(a))
        server.state.faults.append(Fault("5xx", "/safetensors-metadata/", times=-1, value=404))
        yield server


def options(server: HubServer, **kw) -> HubOptions:
    return HubOptions(endpoint=server.url, timeout=kw.pop("timeout", 5), **kw)


def test_cold_fetch_reads_headers_only(hub: HubServer) -> None:
    c = open_hub(LLAMA3, options=options(hub))
    s = summarize(c)
    assert s.parameters == ref("llama3-8b.parameters") and s.bytes == ref("llama3-8b.bytes")
    assert c.provenance.revision == "8cde5ca8380496c9a6cc7ef3a8b46a0372a1d920"
    gets = hub.requests("GET")
    # info, config, index, one per shard, and a guess at a lone model.safetensors (a 404 here: sent
    # beside the listing, it costs no round trip and saves one on a one-file repo); no model_index.json;
    # and here, a Hub without the one-request answer, the 404 for it (the index then read after the listing)
    assert len(gets) <= len(c.headers) + 5
    assert not any(r.path.endswith("model_index.json") for r in gets)
    header_bytes = sum(h.data_start for h in c.headers)
    shard_bytes = sum(r.sent for r in gets if r.path.endswith(".safetensors"))
    assert header_bytes <= shard_bytes <= 1.25 * header_bytes
    assert all(r.range for r in gets if r.path.endswith(".safetensors"))


def test_warm_pinned_run_makes_no_request_and_branch_one(hub: HubServer) -> None:
    first = open_hub(LLAMA3, options=options(hub))
    hub.clear_log()
    again = open_hub(LLAMA3, first.provenance.revision, options=options(hub))
    assert hub.log == []
    assert summarize(again).parameters == summarize(first).parameters
    open_hub(LLAMA3, "main", options=options(hub))
    assert len(hub.log) == 1 and "/api/models/" in hub.log[0].path


def test_deepseek_large_headers_need_no_second_read(hub: HubServer) -> None:
    c = open_hub("deepseek-ai/DeepSeek-V3", options=options(hub))
    assert summarize(c).tensors == 91_991
    gets = hub.requests("GET")
    # the shards, the listing, config, index, a guess at a lone model.safetensors and the one answer's 404
    assert len(gets) <= 163 + 5
    header_bytes = sum(h.data_start for h in c.headers)
    shard_bytes = sum(r.sent for r in gets if r.path.endswith(".safetensors"))
    assert header_bytes <= shard_bytes <= 1.25 * header_bytes
    assert sum(1 for r in gets if r.path.endswith(".safetensors") and r.status == 206) == 163  # no second reads


def test_unindexed_repo_and_a_header_larger_than_the_first_read(hub: HubServer) -> None:
    big = {f"t{i:05d}." + "x" * 200: ("F32", [1]) for i in range(1600)}  # ~400 kB of header
    obj = {}
    offset = 0
    for name in sorted(big):
        obj[name] = {"dtype": "F32", "shape": [1], "data_offsets": [offset, offset + 4]}
        offset += 4
    head = raw_header(obj)
    hub.add_files("acme/big-header", {"model.safetensors": VFile(len(head) + offset, head, True)})
    c = open_hub("acme/big-header", options=options(hub))
    assert c.tensor_count == 1600
    # the server logs a request when it has answered it, so two quick ones may be logged out of order
    ranges = sorted((r.range for r in hub.requests("GET") if r.path.endswith("model.safetensors")),
                    key=lambda r: int(r.split("=")[1].split("-")[0]))
    # the first read sent beside the listing is LONE_FILE_FIRST_READ (256 KiB); the rest of the header is appended
    assert len(ranges) == 2 and ranges[0] == "bytes=0-262143" and ranges[1].startswith("bytes=262144-")


def test_a_second_range_goes_straight_to_the_cdn_without_the_token(hub: HubServer) -> None:
    """Issue 39: the second read of a header larger than the first goes to the address the first read was
    redirected to (the real Hub's CDN), one round trip instead of two, and without the token, which a
    redirect to another origin drops (httpx's rule; the token is the Hub's, not the CDN's)."""
    obj, offset = {}, 0
    for i in range(1600):  # ~400 kB of header: past the 256 KiB first read
        obj[f"t{i:05d}." + "x" * 200] = {"dtype": "F32", "shape": [1], "data_offsets": [offset, offset + 4]}
        offset += 4
    head = raw_header(obj)
    hub.add_files("acme/big-header", {"model.safetensors": VFile(len(head) + offset, head, True)})
    hub.state.redirect = True
    c = open_hub("acme/big-header", options=options(hub, token="hf_not_for_the_cdn"))
    assert c.tensor_count == 1600
    reads = [r for r in hub.requests("GET") if r.path.endswith("model.safetensors") and r.status != 404]
    # the first range: the Hub (302, with the token), then the CDN; the second: the CDN alone
    assert sorted((r.origin, r.status) for r in reads) == [("cdn", 206), ("cdn", 206), ("hub", 302)], reads
    assert [r.authorized for r in reads if r.origin == "hub"] == [True]
    assert not any(r.authorized for r in reads if r.origin == "cdn")


def test_an_expired_cdn_address_falls_back_to_the_file_s_own(hub: HubServer) -> None:
    """Where the remembered CDN address no longer answers (a signed URL expires), the file's own address
    is asked again, as at first: the header is still read whole."""
    obj, offset = {}, 0
    for i in range(1600):
        obj[f"t{i:05d}." + "x" * 200] = {"dtype": "F32", "shape": [1], "data_offsets": [offset, offset + 4]}
        offset += 4
    head = raw_header(obj)
    hub.add_files("acme/big-header", {"model.safetensors": VFile(len(head) + offset, head, True)})
    hub.state.redirect = True
    state = hub.state
    original = state.take_fault

    def expire_second(kind: str, path: str):  # the CDN's second answer for the file: 403, as an expired signature
        if kind == "5xx" and path.startswith("/cdn/") and path.endswith("model.safetensors"):
            expire_second.seen += 1
            if expire_second.seen == 2:
                return Fault("5xx", value=403)
        return original(kind, path)
    expire_second.seen = 0  # type: ignore[attr-defined]
    state.take_fault = expire_second  # type: ignore[method-assign]
    c = open_hub("acme/big-header", options=options(hub))
    assert c.tensor_count == 1600
    reads = [(r.origin, r.status) for r in hub.requests("GET") if r.path.endswith("model.safetensors")
             and r.status != 404]
    assert sorted(reads) == [("cdn", 206), ("cdn", 206), ("cdn", 403), ("hub", 302), ("hub", 302)], reads


def test_redirects_to_a_cdn_keep_the_range(hub: HubServer) -> None:
    hub.state.redirect = True
    c = open_hub(LLAMA3, options=options(hub))
    assert summarize(c).parameters == ref("llama3-8b.parameters")
    cdn = [r for r in hub.log if r.origin == "cdn"]
    assert len(cdn) == 4 and all(r.status == 206 and r.range for r in cdn)


def test_server_ignoring_range_is_cut_off(hub: HubServer) -> None:
    hub.state.faults.append(Fault("ignore_range", path=r"\.safetensors$", times=-1))
    c = open_hub(LLAMA3, options=options(hub, use_cache=False))
    assert summarize(c).parameters == ref("llama3-8b.parameters")
    assert any("ignored Range" in n for n in c.provenance.notes)
    # the shards are ~5 GB each: only about the header was read (the socket buffers hold a little more)
    assert hub.bytes_sent() < 50_000_000


@pytest.mark.parametrize("fault", [Fault("5xx", r"resolve.*00002", times=2, value=503),
                                   Fault("429", r"resolve.*00003", times=1, value=1),
                                   Fault("reset", r"resolve.*00001", times=1),
                                   Fault("5xx", r"/api/models/", times=2, value=502)])
def test_transient_faults_are_retried(hub: HubServer, fault: Fault) -> None:
    hub.state.faults.append(fault)
    c = open_hub(LLAMA3, options=options(hub))
    assert summarize(c).parameters == ref("llama3-8b.parameters")
    assert fault.times == 0  # it fired


def test_a_stall_times_out(hub: HubServer) -> None:
    hub.add_files("acme/slow", {"model.safetensors": raw_header({})})
    hub.state.faults.append(Fault("stall", r"/api/models/", times=-1, value=2))
    with pytest.raises(errors.NetworkError, match="timed out"):
        open_hub("acme/slow", options=options(hub, timeout=0.5, max_retries=0))
    # a model with a bundled snapshot is served from it, with a notice
    c = open_hub("openai-community/gpt2", options=options(hub, timeout=0.5, max_retries=0))
    assert c.provenance.origin == "bundled" and any("unreachable" in n and "timed out" in n for n in c.provenance.notes)
    hub.state.faults[:] = [Fault("stall", r"resolve", times=-1, value=2)]
    with pytest.raises(errors.NetworkError):
        open_hub("acme/slow", options=options(hub, timeout=0.5, max_retries=1, use_cache=False))


def test_gated_missing_repo_and_revision(hub: HubServer) -> None:
    hub.add_files("acme/gated", {"config.json": b"{}", "model.safetensors": raw_header({})}, gated=True)
    with pytest.raises(errors.AccessError, match="gated") as info:
        open_hub("acme/gated", options=options(hub, token="hf_secret_value"))
    assert "hf_secret_value" not in info.value.message and "the token passed as token" in info.value.message
    # a token was given: the hint says its account lacks access, not to set HF_TOKEN
    assert "request it on the model page with that account" in (info.value.hint or "")
    assert "HF_TOKEN" not in (info.value.hint or "")
    assert "--token" in info.value.worded({"token": "--token"})[0]
    with pytest.raises(errors.AccessError) as info:  # no token at all: then logging in is the answer
        open_hub("acme/gated", options=options(hub))
    assert "log in with `hf auth login` or set HF_TOKEN" in (info.value.hint or "")
    with pytest.raises(errors.NotFoundError, match="no such repo"):
        open_hub("acme/nothing-here", options=options(hub))
    with pytest.raises(errors.NotFoundError, match="no such revision"):
        open_hub(LLAMA3, "v999", options=options(hub))


def test_repo_with_only_other_weight_formats(hub: HubServer) -> None:
    hub.add_files("acme/other", {"config.json": b"{}", "tf_model.h5": VFile(10**9, b"", True),
                                 "flax_model.msgpack": VFile(10**9, b"", True)})
    with pytest.raises(errors.InvalidCheckpointError, match=r"it holds flax_model\.msgpack, tf_model\.h5"):
        open_hub("acme/other", options=options(hub))
    assert hub.bytes_sent() < 10_000
    # a pickle is read from its end (zip) or start (legacy): zeros are neither
    hub.add_files("acme/pickles", {"pytorch_model.bin": VFile(10**9, b"", True)})
    with pytest.raises(errors.InvalidCheckpointError, match="neither a torch zip"):
        open_hub("acme/pickles", options=options(hub))
    assert hub.bytes_sent() < 600_000
    # a GGUF is read (header only); zeros are not a GGUF
    hub.add_files("acme/zeros", {"model.gguf": VFile(10**9, b"", True)})
    with pytest.raises(errors.InvalidCheckpointError, match="no GGUF magic"):
        open_hub("acme/zeros", options=options(hub))
    assert hub.bytes_sent() < 400_000  # a 64 KiB read or two per file, not a GB


def test_index_naming_a_missing_shard(hub: HubServer) -> None:
    a = ALIASES["llama3-8b"]
    folder = bundled_path(a)
    files = {"config.json": (folder / "config.json").read_bytes(),
             "model.safetensors.index.json": (folder / "model.safetensors.index.json").read_bytes()}
    hub.add_files("acme/broken", files)
    with pytest.raises(errors.InvalidCheckpointError, match=r"the index names 4 shard\(s\) it does not have"):
        open_hub("acme/broken", options=options(hub))


def test_the_cache_keeps_every_header_of_a_repo_in_one_pack(hub: HubServer) -> None:
    """163 shards cached as one file of headers (snapshot version 3), not 163: creating a file is most of
    the cost of caching a many-shard repo. Read back at the pinned commit without a request, every header
    is the byte string the server's files begin with (the bundled snapshot it serves)."""
    from inspector.sources.snapshot import StoredHeaders, read_manifest, snapshot_files

    repo = "deepseek-ai/DeepSeek-V3"
    first = open_hub(repo, options=options(hub))
    folder = HeaderCache(endpoint=hub.url).get(repo, first.provenance.revision)
    assert folder is not None
    kept = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert "headers.pack.gz" in kept and not any(k.startswith("headers/") for k in kept)
    assert len(kept) <= 5, kept  # the manifest, the pack, and the stored config and index (and generation file)
    assert read_manifest(folder)["version"] == 3
    hub.clear_log()
    again = open_hub(repo, first.provenance.revision, options=options(hub))
    assert hub.log == []
    served = bundled_path(ALIASES["deepseek-v3"])
    listed = snapshot_files(read_manifest(served), served)
    stored = StoredHeaders(served)
    truth = {f.path: stored.read(f) for f in listed if f.header is not None}
    assert len(again.headers) == len(truth) == 163
    assert {h.file: h.head for h in again.headers} == truth
    assert [h.tensors for h in again.headers] == [h.tensors for h in first.headers]


def test_offline_serves_the_cache_then_the_bundle(hub: HubServer, monkeypatch) -> None:
    first = open_hub(LLAMA3, options=options(hub))
    hub.clear_log()
    c = open_hub(LLAMA3, options=options(hub, offline=True))
    assert hub.log == [] and c.provenance.revision == first.provenance.revision
    assert any("offline" in n and first.provenance.revision in n for n in c.provenance.notes)
    # never fetched: the bundled snapshot, said so
    c = open_hub("mistralai/Mixtral-8x7B-v0.1", options=options(hub, offline=True))
    assert c.provenance.origin == "bundled" and any("bundled snapshot" in n for n in c.provenance.notes)
    # an offline miss is "not found" (exit 3), not a network fault
    with pytest.raises(errors.NotFoundError, match="no cached or bundled snapshot"):
        open_hub("acme/never-seen", options=options(hub, offline=True))


def test_unreachable_hub_falls_back_to_the_cache(hub: HubServer) -> None:
    open_hub(LLAMA3, options=options(hub))
    dead = HubOptions(endpoint="http://127.0.0.1:9", timeout=2)
    c = open_hub(LLAMA3, options=dead)
    assert any("unreachable" in n for n in c.provenance.notes)
    with pytest.raises(errors.NetworkError, match="unreachable"):
        open_hub("acme/unknown", options=dead)


def test_concurrent_runs_share_one_cache_safely(hub: HubServer) -> None:
    results: list[int] = []
    errors_seen: list[BaseException] = []

    def run() -> None:
        try:
            results.append(summarize(open_hub("deepseek-ai/DeepSeek-V3", options=options(hub))).tensors)
        except BaseException as exc:  # pragma: no cover - reported below
            errors_seen.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors_seen and results == [91_991] * 3
    cache = HeaderCache(endpoint=hub.url)
    sha = cache.ref("deepseek-ai/DeepSeek-V3", "main")
    assert sha and cache.get("deepseek-ai/DeepSeek-V3", sha)
    leftovers = [p for p in cache.path("deepseek-ai/DeepSeek-V3", sha).parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_cli_from_the_hub_and_save(hub: HubServer, cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    r = cli("openai-community/gpt2", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["model"]["origin"] == "hub" and doc["totals"]["hub_total"] == ref("gpt2.hub_total")
    r = cli("save", "openai-community/gpt2", "-o", str(tmp_path / "snap"))
    assert r.code == 0, r.err
    hub.clear_log()
    assert cli(str(tmp_path / "snap"), "--json").json()["totals"]["parameters"] == ref("gpt2.parameters")
    assert hub.log == []
    r = cli("acme/missing", "--json")
    assert r.code == errors.EXIT_NOT_FOUND and r.err.startswith("Error:")
    r = cli("openai-community/gpt2@nope")
    assert r.code == errors.EXIT_NOT_FOUND and "no such revision" in r.err


def test_hub_reports_the_token_source_without_the_token(monkeypatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_abc")
    assert Hub(HubOptions()).token_source() == "the token in HF_TOKEN"
    assert Hub(HubOptions(token="x")).token_source() == "the token passed as ⟨token⟩"  # the CLI: --token
    json.dumps(HubOptions().__class__.__name__)


def test_diff_two_revisions_of_one_repo(hub: HubServer, cli, monkeypatch) -> None:
    from helpers import tiny_llama

    from inspector.formats.safetensors import encode_header

    shas = []
    for rev, inter in (("v1", 16), ("v2", 24)):
        config, entries = tiny_llama(inter=inter)
        blob, data = encode_header(entries, {"format": "pt"})
        shas.append(hub.add_files("acme/tiny", {"config.json": json.dumps(config).encode(),
                                                "model.safetensors": VFile(len(blob) + data, blob, True)},
                                  branch=rev))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    r = cli("diff", "acme/tiny@v1", "acme/tiny@v2", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["a"]["model"]["revision"] == shas[0] and doc["b"]["model"]["revision"] == shas[1]
    assert [c["cause"] for c in doc["causes"]] == ["MLP width"] and doc["residual"] == 0
    assert doc["causes"][0]["delta"] == 2 * 3 * 8 * (24 - 16)
    r = cli("diff", "acme/tiny@v1", "acme/tiny@v404")
    assert r.code == errors.EXIT_NOT_FOUND and "no such revision" in r.err


def test_remote_audit_catches_a_short_shard_from_listed_sizes(hub: HubServer, cli, monkeypatch) -> None:
    a = ALIASES["llama3-8b"]
    real = {f.path: f.size for f in __import__("inspector.sources.snapshot", fromlist=["x"]).snapshot_files(
        json.loads((bundled_path(a) / "inspector-snapshot.json").read_text()), bundled_path(a))}
    short = "model-00002-of-00004.safetensors"
    hub.add_snapshot("acme/short", bundled_path(a), sizes={short: real[short] - 300_000_000})
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    r = cli("audit", "acme/short", "--json")
    assert r.code == 1, r.err
    findings = [f for f in r.json()["findings"] if f["severity"] == "error"]
    assert [(f["code"], f["file"]) for f in findings] == [("file.truncated", short)]
    assert "300,000,000 bytes missing" in findings[0]["message"]
    # only header bytes were asked for: every range ends inside the header
    for entry in hub.requests("GET"):
        if entry.path.endswith(".safetensors") and entry.status != 404:  # the 404: a guess at model.safetensors
            end = int(entry.range.split("-")[1])
            assert end < 20_000, entry
    assert cli("audit", LLAMA3, "--json").json()["ok"] is True


def test_offline_env_through_the_console_script(tmp_path: Path) -> None:
    """HF_HUB_OFFLINE=1 in a fresh process: no request, the bundled snapshot, a notice naming it."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path), "HF_ENDPOINT": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-m", "inspector", LLAMA3, "--json"], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["model"]["origin"] == "bundled"
    assert any("offline mode is on" in n and "8cde5ca8380496c9a6cc7ef3a8b46a0372a1d920" in n for n in doc["notes"])
    done = subprocess.run([sys.executable, "-m", "inspector", "acme/never-seen"], capture_output=True, text=True,
                          env=env)
    assert done.returncode == errors.EXIT_NOT_FOUND and done.stderr.startswith("Error:")


def test_a_one_file_repo_is_read_in_one_round_trip(hub: HubServer) -> None:
    """Nothing cached: config.json, the index (absent here) and model.safetensors's first bytes are
    asked for at the branch beside the listing, and used because the server's X-Repo-Commit is the
    listing's commit; no guess at a pipeline's model_index.json (issue 39: a request every repo paid).
    Figures: Qwen/Qwen3-0.6B's published count (fixtures/reference.json)."""
    hub.add_snapshot("acme/one-file", bundled_path(ALIASES["qwen3-0.6b"]))
    c = open_hub("acme/one-file", options=options(hub))
    assert summarize(c).parameters == ref("qwen3-0.6b.parameters")
    paths = sorted(r.path for r in hub.requests("GET"))
    assert len(paths) == 4 and all("/resolve/main/" in p or p.startswith("/api/") for p in paths), paths
    assert not any(p.endswith("model_index.json") for p in paths)
    assert c.config is not None and c.config["model_type"] == "qwen3"


def test_a_branch_that_moves_during_the_read_is_read_at_the_listed_commit(hub: HubServer) -> None:
    """The early reads at the branch come back from a newer commit than the listing names: they are
    dropped and everything is read at the listed commit, never a mix of the two."""
    folder = bundled_path(ALIASES["qwen3-0.6b"])
    old = hub.add_snapshot("acme/moving", folder, sha="1" * 40, branch=None)
    new = hub.add_snapshot("acme/moving", folder, sha="2" * 40)
    config = json.loads((folder / "config.json").read_text())
    moved = VFile(0, json.dumps({**config, "num_hidden_layers": 99}).encode(), False)
    moved.size = len(moved.head)
    hub.state.repos["acme/moving"].revisions[new].files["config.json"] = moved
    hub.state.listing_patch["acme/moving"] = {"sha": old}  # the listing was answered before the push
    c = open_hub("acme/moving", options=options(hub))
    assert c.provenance.revision == old and c.config is not None and c.config["num_hidden_layers"] == 28
    at_old = {r.path.rsplit("/", 1)[-1] for r in hub.requests("GET") if f"/resolve/{old}/" in r.path}
    assert at_old == {"config.json", "model.safetensors"}


def test_file_urls_are_huggingface_hubs_own() -> None:
    """Hub.file_url builds what huggingface_hub.hf_hub_url builds (without importing file_download)."""
    from huggingface_hub import hf_hub_url

    hub = Hub(HubOptions(endpoint="http://mirror.example:8080/hf"))
    for repo, path, rev in [("a/b", "model-00001-of-00002.safetensors", "main"), ("a/b", "sub dir/x#?.json",
                                                                                  "refs/pr/1"),
                            ("org/name", "config.json", "1" * 40)]:
        assert hub.file_url(repo, rev, path) == hf_hub_url(repo, path, revision=rev,
                                                           endpoint="http://mirror.example:8080/hf")


def test_a_diff_of_two_hub_repos_reads_both_at_once(hub: HubServer, cli, monkeypatch) -> None:
    """Two sharded repos (a listing round trip, then a header round trip each). Read one after the
    other, one repo's headers would be answered before the other's listing; read at once, both
    listings are answered before either repo's headers (each answer waits 0.2 s)."""
    hub.add_snapshot("acme/side-a", bundled_path(ALIASES["llama3-8b"]))
    hub.add_snapshot("acme/side-b", bundled_path(ALIASES["phi-3-mini"]))
    hub.state.latency = 0.2
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    r = cli("diff", "acme/side-a", "acme/side-b", "--json")
    assert r.code == 0, r.err
    order = [(("a" if "side-a" in e.path else "b"),
              "listing" if e.path.startswith("/api/") and "/safetensors-metadata/" not in e.path else
              "header" if e.status == 206 and "-of-" in e.path else "other") for e in hub.log]
    listings = [i for i, x in enumerate(order) if x[1] == "listing"]
    headers = [i for i, x in enumerate(order) if x[1] == "header"]
    assert len(listings) == 2 and len(headers) == 4 + 2  # Llama-3-8B's 4 shards, Phi-3-mini's 2
    assert max(listings) < min(headers), order


# Qwen3-30B-A3B's config.json (qwen3_moe) and llava-1.5-7b-hf's (a VLM: the language model's figures in a
# nested text_config that leaves most of them to transformers' LlamaConfig defaults), as published
QWEN3_MOE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
             "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 48,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128,
             "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 40960,
             "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rope_theta": 1000000.0}
LLAVA = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "ignore_index": -100,
         "image_token_index": 32000, "projector_hidden_act": "gelu", "vision_feature_layer": -2,
         "vision_feature_select_strategy": "default", "pad_token_id": 32001,
         "text_config": {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096,
                         "model_type": "llama", "rms_norm_eps": 1e-05, "torch_dtype": "float16",
                         "vocab_size": 32064},
         "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                           "model_type": "clip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 24,
                           "patch_size": 14, "projection_dim": 768, "vocab_size": 32000},
         "torch_dtype": "float16"}


def test_cold_hub_reads_of_configs_transformers_must_read_are_whole_every_time(tmp_path: Path, online: None) -> None:
    """Five cold runs each (fresh process, empty caches) of a qwen3_moe repo and a llava-style VLM: the
    figures every time, as transformers' own AutoConfig reads the same config (a warm-up import on a
    thread once raced the main thread's and lost these figures now and then)."""
    import os
    import subprocess
    import sys

    from transformers import AutoConfig

    from inspector.formats.safetensors import encode_header

    with HubServer() as server:
        for repo, config in (("acme/moe", QWEN3_MOE), ("acme/vlm", LLAVA)):
            blob, data = encode_header([("model.embed_tokens.weight", "BF16", (8, 4))], {"format": "pt"})
            server.add_files(repo, {"config.json": json.dumps(config).encode(),
                                    "model.safetensors": VFile(len(blob) + data, blob, True)})
        for repo, config in (("acme/moe", QWEN3_MOE), ("acme/vlm", LLAVA)):
            kwargs = {k: v for k, v in config.items() if k != "model_type"}
            text = AutoConfig.for_model(config["model_type"], **kwargs).get_text_config()
            want = (text.hidden_size, text.num_hidden_layers, text.num_attention_heads, text.num_key_value_heads,
                    getattr(text, "num_experts", None))
            for run in range(5):
                env = {**os.environ, "HF_HOME": str(tmp_path / f"{repo[5:]}{run}"), "HF_ENDPOINT": server.url}
                done = subprocess.run([sys.executable, "-m", "inspector", repo, "--json"], capture_output=True,
                                      text=True, env=env, timeout=120)
                assert done.returncode == 0, done.stderr
                doc = json.loads(done.stdout)
                c = doc["config"]
                assert (c["hidden_size"], c["num_layers"], c["num_heads"], c["num_kv_heads"],
                        c["num_experts"]) == want, (repo, run)
                assert not any("does not know" in n for n in doc["notes"]), (repo, run, doc["notes"])
            est = subprocess.run([sys.executable, "-m", "inspector", "estimate", repo, "--json"],
                                 capture_output=True, text=True, env={**env, "HF_HOME": str(tmp_path / "est")},
                                 timeout=120)
            kv = next(f for f in json.loads(est.stdout)["figures"] if f["name"] == "kv_bytes_per_token")
            # 2 (K, V) × layers × KV heads × head dim × 2 bytes (bf16/fp16)
            head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
            assert kv["value"] == 2 * want[1] * want[3] * head_dim * 2, repo


def test_progress_names_each_phase(hub: HubServer) -> None:
    """The progress callback hears the phase with its count: the listing (one request), then the
    headers 0…N of the 4 shards the real Llama 3 index names; nothing after the last header."""
    heard: list[tuple[str, int, int]] = []
    open_hub(LLAMA3, options=options(hub), progress=lambda phase, done, total: heard.append((phase, done, total)))
    index = json.loads((bundled_path(ALIASES["llama3-8b"]) / "model.safetensors.index.json").read_text())
    shards = len(set(index["weight_map"].values()))
    assert heard[0] == ("listing", 0, 1)
    headers = [h for h in heard if h[0] == "headers"]
    assert headers[0] == ("headers", 0, shards) and headers[-1] == ("headers", shards, shards)
    assert [d for _, d, _ in headers] == sorted(d for _, d, _ in headers) and len(headers) == shards + 1
    assert {p for p, _, _ in heard} == {"listing", "headers"}
