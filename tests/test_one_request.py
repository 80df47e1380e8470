"""Issue 39: a cold read of a sharded repo on its default branch in one round trip, through the Hub's
one-request answer (``GET /api/models/{repo}/safetensors-metadata/{index}``, what huggingface_hub's
``get_sharded_safetensors_metadata`` asks for), sent beside the listing; range reads where it does not
apply or does not check out, with the same figures, cache and offline replay either way."""

from __future__ import annotations

import json

import pytest
from helpers import raw_header, ref
from hubserver import Fault, HubServer, VFile

from inspector.analysis.facts.stats import summarize
from inspector.sources.bundled import ALIASES, bundled_path
from inspector.sources.early import rebuilt_from_metadata
from inspector.sources.hub import HubOptions, open_hub

LLAMA3 = ALIASES["llama3-8b"].repo_id
DEEPSEEK = ALIASES["deepseek-v3"].repo_id


@pytest.fixture
def hub(online: None):
    with HubServer() as server:
        for alias in ("llama3-8b", "deepseek-v3", "gpt2"):
            a = ALIASES[alias]
            server.add_snapshot(a.repo_id, bundled_path(a))
        yield server


def options(server: HubServer, **kw) -> HubOptions:
    return HubOptions(endpoint=server.url, timeout=kw.pop("timeout", 5), **kw)


def tensors(c) -> list[tuple]:
    return sorted((t.name, t.dtype, t.shape, t.begin, t.end, t.file) for h in c.headers for t in h.tensors)


def test_a_cold_sharded_read_is_the_listing_and_one_answer(hub: HubServer) -> None:
    """Llama 3 8B's 4 shards: the listing, config.json, the one-request answer and the guess at a lone
    model.safetensors (a 404 here), all sent at once; then one shard's header read from its file to
    confirm the answer (issue 53), and no other range request. The figures are the published ones
    (``helpers.ref``: 8,030,261,248 parameters), and every tensor record equals what range reads of the
    same files give (the same repo at its pinned commit, fresh cache)."""
    c = open_hub(LLAMA3, options=options(hub, use_cache=False))
    s = summarize(c)
    assert s.parameters == ref("llama3-8b.parameters") and s.bytes == ref("llama3-8b.bytes")
    gets = hub.requests("GET")
    ranged = [r for r in gets if r.range and r.status == 206]
    assert len(ranged) == 1 and ranged[0].range.startswith("bytes=0-"), [r.path for r in ranged]
    assert sum("/safetensors-metadata/" in r.path for r in gets) == 1
    assert len(gets) <= 4 + 3 and len(gets) == 5, [r.path for r in gets]
    assert any("one request" in n for n in c.provenance.notes), c.provenance.notes
    hub.clear_log()
    ranged = open_hub(LLAMA3, c.provenance.revision, options=options(hub, use_cache=False))
    # a pinned commit: the answer is for the default branch only
    assert any(r.range and r.status == 206 for r in hub.requests("GET"))
    assert tensors(ranged) == tensors(c)
    assert [h.data_start for h in ranged.headers] == [h.data_start for h in c.headers]
    assert [h.metadata for h in ranged.headers] == [h.metadata for h in c.headers]
    assert c.index is not None and ranged.index is not None
    assert c.index["weight_map"] == ranged.index["weight_map"]  # rebuilt from the headers, as the real one reads


def test_deepseek_v3_in_one_answer_and_then_from_the_cache_offline(hub: HubServer) -> None:
    """163 shards, 91,991 tensors: five requests cold (four at once, then one shard's header confirming
    the answer); the snapshot it leaves answers a pinned commit with no request and --offline with none,
    with the same records."""
    c = open_hub(DEEPSEEK, options=options(hub))
    assert summarize(c).tensors == 91_991
    assert len(hub.requests("GET")) == 5
    hub.clear_log()
    pinned = open_hub(DEEPSEEK, c.provenance.revision, options=options(hub))
    offline = open_hub(DEEPSEEK, options=options(hub, offline=True))
    assert hub.log == []
    assert tensors(pinned) == tensors(offline) == tensors(c)


def test_without_the_endpoint_the_range_reads_give_the_same(hub: HubServer) -> None:
    """A Hub (or mirror) without the endpoint answers 404: the shards are read by range, as before, the
    index after the listing; one round trip more, the same records."""
    hub.state.faults.append(Fault("5xx", "/safetensors-metadata/", times=-1, value=404))
    c = open_hub(LLAMA3, options=options(hub, use_cache=False))
    gets = hub.requests("GET")
    assert sum(1 for r in gets if r.range and r.status == 206) == 4
    assert summarize(c).parameters == ref("llama3-8b.parameters")
    assert not any("one request" in n for n in c.provenance.notes)


def test_an_answer_at_another_commit_or_that_does_not_fit_the_listing_is_not_used(hub: HubServer) -> None:
    """What the answer says is checked against the listing before a byte of it is used: a commit the
    listing does not name, a shard the listing lacks, a header whose size disagrees with the file's listed
    size, a tensor in two shards. Each time the range reads answer, with the published figures."""
    sha = hub.state.repos[LLAMA3].refs["main"]
    good = json.loads(_answer(hub, LLAMA3))
    shard = sorted(good["headers"])[0]
    first = sorted(k for k in good["headers"][shard] if k != "__metadata__")[0]
    cases = {
        "another commit": (good, "0" * 40),
        "a shard not listed": ({**good, "headers": {**good["headers"], "model-9.safetensors": {}}}, None),
        "a size the listing contradicts": ({**good, "headers": {**good["headers"], shard: {
            **good["headers"][shard], first: {**good["headers"][shard][first], "data_offsets": [0, 8]}}}}, None),
        "a tensor in two shards": ({**good, "headers": {**good["headers"], sorted(good["headers"])[1]: {
            **good["headers"][sorted(good["headers"])[1]], first: good["headers"][shard][first]}}}, None),
    }
    sizes = {p: f.size for p, f in hub.state.repos[LLAMA3].revisions[sha].files.items()}
    assert rebuilt_from_metadata(json.dumps(good).encode(), None, sha, sizes, "model.safetensors.index.json")
    for why, (doc, commit) in cases.items():
        assert rebuilt_from_metadata(json.dumps(doc).encode(), commit, sha, sizes,
                                     "model.safetensors.index.json") is None, why
    hub.state.metadata_patch[LLAMA3] = cases["a size the listing contradicts"][0]
    c = open_hub(LLAMA3, options=options(hub, use_cache=False))
    assert summarize(c).parameters == ref("llama3-8b.parameters")
    assert sum(1 for r in hub.requests("GET") if r.range and r.status == 206) == 4


def test_a_header_another_writer_spaced_out_sets_the_answer_aside(hub: HubServer) -> None:
    """The answer holds parsed headers; the bytes are rebuilt only where the file's listed size proves
    their length (the safetensors writer's compact JSON, padded to 8 bytes). A header written with spaces
    (json.dumps' default) cannot be proved: the answer is set aside and the shards are read by range, each
    record its own (the spaced header's data starts where its own length says)."""
    def shard(name: str, spaced: bool) -> VFile:
        header = {"__metadata__": {"format": "pt"}, name: {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}
        # raw_header pads to 8 bytes as the safetensors writer does; json.dumps' default spaces ", " and ": "
        blob = raw_header(header if spaced else json.dumps(header, separators=(",", ":")).encode())
        return VFile(len(blob) + 64, blob, True)

    files = {"model-1.safetensors": shard("a.weight", False), "model-2.safetensors": shard("b.weight", True)}
    index = {"metadata": {"total_size": 128}, "weight_map": {"a.weight": "model-1.safetensors",
                                                             "b.weight": "model-2.safetensors"}}
    hub.add_files("acme/spaced", {**files, "model.safetensors.index.json": json.dumps(index).encode()})
    c = open_hub("acme/spaced", options=options(hub, use_cache=False))
    assert summarize(c).parameters == 32
    ranged = sorted(r.path.rsplit("/", 1)[1] for r in hub.requests("GET") if r.range and r.status == 206)
    assert ranged == ["model-1.safetensors", "model-2.safetensors"]
    assert not any("one request" in n for n in c.provenance.notes)
    assert {h.file: h.data_start for h in c.headers}["model-2.safetensors"] == files["model-2.safetensors"].size - 64


def test_the_audit_never_reads_a_rebuilt_index(hub: HubServer, cli, monkeypatch, tmp_path) -> None:
    """The answer leaves out the index's weight_map; the one an inspect rebuilds from the headers cannot
    disagree with them, so the audit (which checks the real one) reads the real index by range, even when
    an inspect has cached the repo; a saved snapshot of a rebuilt index says so to the audit."""
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    assert cli(LLAMA3, "--json").code == 0
    saved = tmp_path / "saved"
    assert cli("save", LLAMA3, "-o", str(saved)).code == 0  # from the cache: the rebuilt index, marked
    hub.clear_log()
    audit = cli("audit", LLAMA3, "--json")
    assert audit.code == 0, audit.err
    gets = hub.requests("GET")
    assert any(r.path.endswith("model.safetensors.index.json") for r in gets)
    assert not any("/safetensors-metadata/" in r.path for r in gets)
    # a snapshot saved from the one-request read keeps the mark: its audit says the index was not checked
    codes = {f["code"] for f in cli("audit", str(saved), "--json").json()["findings"]}
    assert "index.rebuilt" in codes
    assert "index.rebuilt" not in {f["code"] for f in audit.json()["findings"]}


def test_a_single_file_repo_asks_no_more_than_before(hub: HubServer) -> None:
    """gpt2 (one model.safetensors): the listing, config.json, the guess at the answer (a 404 here) and
    the lone file's first bytes, all at once: four requests, one file + 3."""
    c = open_hub(ALIASES["gpt2"].repo_id, options=options(hub, use_cache=False))
    assert summarize(c).parameters == ref("gpt2.parameters")
    assert len(hub.requests("GET")) <= 1 + 3


def _answer(hub: HubServer, repo: str) -> bytes:
    from urllib.request import urlopen

    with urlopen(f"{hub.url}/api/models/{repo}/safetensors-metadata/model.safetensors.index.json") as answer:
        return answer.read()


def test_the_one_request_answer_is_bounded(hub: HubServer, monkeypatch) -> None:
    """An answer over its budget (``ONE_REQUEST_BUDGET``, the repo's header budget: here 1 MB against 2 MB
    of padding) is cut there and not used: the range reads answer."""
    import inspector.sources.early as hub_module

    monkeypatch.setattr(hub_module, "ONE_REQUEST_BUDGET", 1_000_000)
    hub.state.metadata_patch[LLAMA3] = {"padding": "x" * 2_000_000}
    c = open_hub(LLAMA3, options=options(hub, use_cache=False))
    assert summarize(c).parameters == ref("llama3-8b.parameters")
    assert sum(1 for r in hub.requests("GET") if r.range and r.status == 206) == 4


def _served_whole(alias: str) -> bool:
    """Whether the test Hub can serve the bundled snapshot as the repo is: every side file the assembly
    reads is stored (Llama-2-7b-hf's lists a pytorch_model.bin.index.json it does not keep)."""
    from inspector.model import SIDE_FILES
    from inspector.sources.snapshot import read_manifest, snapshot_files

    folder = bundled_path(ALIASES[alias])
    return all(f.stored for f in snapshot_files(read_manifest(folder), folder) if f.path in SIDE_FILES)


@pytest.mark.parametrize("alias", sorted(n for n in {a.repo_id: name for name, a in ALIASES.items()}.values()
                                         if _served_whole(n)))
def test_every_bundled_repo_is_read_in_at_most_its_shards_plus_3_requests(online: None, alias: str) -> None:
    """Issue 39's count, on every bundled repo (real listings, indexes and headers) served on its default
    branch: a cold read makes at most shards + 3 requests (the listing, config.json, the one answer or
    the index, the guess at a lone model.safetensors), and counts what range reads count."""
    a = ALIASES[alias]
    with HubServer() as server:
        server.add_snapshot(a.repo_id, bundled_path(a))
        c = open_hub(a.repo_id, options=HubOptions(endpoint=server.url, timeout=5, use_cache=False))
        requests = len(server.requests())
        server.clear_log()
        ranged = open_hub(a.repo_id, c.provenance.revision,
                          options=HubOptions(endpoint=server.url, timeout=5, use_cache=False))
    assert requests <= len(c.headers) + 3, (requests, len(c.headers))
    assert tensors(c) == tensors(ranged)


def test_offline_the_audit_reads_the_rebuilt_snapshot_and_says_so(hub: HubServer, cli, monkeypatch) -> None:
    """Offline there is no real index to read: the audit is served the cached snapshot an inspect left
    (its index rebuilt from the headers), makes no request, and says the index was not checked."""
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    assert cli(LLAMA3, "--json").code == 0
    hub.clear_log()
    audit = cli("audit", LLAMA3, "--offline", "--json")
    assert audit.code == 0, audit.err
    assert "index.rebuilt" in {f["code"] for f in audit.json()["findings"]}
    assert hub.log == []
