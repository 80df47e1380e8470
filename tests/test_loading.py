"""One loading layer: the Hugging Face cache by repo id, the audit through the one resolver and the
Hub cache, snapshot manifests of both versions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import tiny_llama
from hubserver import HubServer, VFile

from inspector import errors
from inspector.analysis.facts.stats import summarize
from inspector.formats.safetensors import encode_header
from inspector.sources.bundled import ALIASES, bundled_path
from inspector.sources.hub import HubOptions, open_hub

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import huggingface_hub.constants as constants

    cache = tmp_path / "hub-cache"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def tiny_repo(server: HubServer, repo: str) -> tuple[str, int]:
    """A small real checkpoint: tiny Llama shapes laid out by the reference writer, zeros for data.
    Returns the commit and the parameter count computed from its shapes."""
    config, entries = tiny_llama(layers=2, hidden=8, inter=16, vocab=32)
    blob, data = encode_header(entries, {"format": "pt"})
    sha = server.add_files(repo, {"config.json": json.dumps(config).encode(),
                                  "model.safetensors": VFile(len(blob) + data, blob + b"\0" * data, True)})
    params = sum(__import__("math").prod(shape) for _, _, shape in entries)
    return sha, params


def test_a_snapshot_download_is_read_from_the_hf_cache(online: None, hf_cache: Path, cli, monkeypatch) -> None:
    from huggingface_hub import snapshot_download

    with HubServer() as server:
        sha, params = tiny_repo(server, "acme/tiny")
        snapshot_download("acme/tiny", endpoint=server.url)  # the real client fills the real cache layout
        assert (hf_cache / "models--acme--tiny" / "refs" / "main").read_text() == sha
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        # offline (HF_HUB_OFFLINE, read by huggingface_hub when imported): no request at all
        import huggingface_hub.constants as constants

        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        server.clear_log()
        doc = cli("acme/tiny", "--json").json()
        assert server.log == []
        assert doc["model"]["origin"] == "hf-cache" and doc["totals"]["parameters"] == params
        assert doc["model"]["revision"] == sha
        # online: the listing call resolves main to the cached commit, and nothing more
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        server.clear_log()
        doc = cli("acme/tiny", "--json").json()
        assert len(server.log) <= 1 and doc["totals"]["parameters"] == params
        # pinned to the commit: not even the listing
        server.clear_log()
        assert cli(f"acme/tiny@{sha}", "--json").json()["totals"]["parameters"] == params
        assert server.log == []
    # the cache root lists what it holds
    listing = cli(str(hf_cache), "--json").json()
    assert [(m["repo_id"], m["revision"], m["parameters"]) for m in listing["models"]] == [("acme/tiny", sha, params)]
    table = cli(str(hf_cache)).out
    assert "acme/tiny" in table and f"{params:,}" in table


def test_a_config_only_download_says_so(online: None, hf_cache: Path, cli) -> None:
    from huggingface_hub import hf_hub_download

    with HubServer() as server:
        tiny_repo(server, "acme/cfg")
        hf_hub_download("acme/cfg", "config.json", endpoint=server.url)
    folder = next((hf_cache / "models--acme--cfg" / "snapshots").iterdir())
    r = cli(str(folder))
    assert r.code == errors.EXIT_NOT_FOUND and "config-only download" in r.err and "inspect acme/cfg" in r.err
    assert "config only" in cli(str(hf_cache)).out


def test_audit_offline_answers_from_the_cache(online: None, cli, monkeypatch) -> None:
    with HubServer() as server:
        tiny_repo(server, "acme/aud")
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        assert cli("audit", "acme/aud").code == 0  # online once: the headers are cached
    # the server is gone: unreachable
    r = cli("audit", "acme/aud", "--offline", "--json")
    assert r.code == 0, r.err
    assert r.json()["ok"] is True
    r = cli("audit", "acme/never", "--offline")
    assert r.code == errors.EXIT_NOT_FOUND


def test_a_second_remote_audit_of_191_shards_makes_at_most_one_request(online: None, cli, monkeypatch,
                                                                       tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import make_snapshots as ms

    config = {**ms.LLAMA3_8B, "hidden_size": 16384, "intermediate_size": 53248, "num_attention_heads": 128,
              "num_hidden_layers": 126, "max_position_embeddings": 131072}
    ms.build(ms.Model("bench/big", config, ms.llama_like, 5 * ms.GB), tmp_path)
    with HubServer() as server:
        server.add_snapshot("bench/big", tmp_path / "bench__big")
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        first = cli("audit", "bench/big", "--json")
        assert first.code == 0, first.err
        # the early guess at a lone model.safetensors is a 404 here, without a byte of weights
        shard_gets = [r for r in server.requests("GET") if r.path.endswith(".safetensors") and r.status != 404]
        assert len(shard_gets) == 191  # one range per shard, as inspect reads them
        server.clear_log()
        again = cli("audit", "bench/big", "--json")
        assert again.code == 0 and again.json()["checked"] == first.json()["checked"]
        assert len(server.log) <= 1


def test_version_1_snapshots_still_read(tmp_path: Path) -> None:
    from inspector.sources.snapshot import load_snapshot

    folder = tmp_path / "v1"
    shutil.copytree(bundled_path(ALIASES["gpt2"]), folder)
    manifest = json.loads((folder / "inspector-snapshot.json").read_text())
    assert manifest["version"] == 2 and all(f.get("format") == "safetensors" for f in manifest["files"]
                                            if "header" in f)
    manifest["version"] = 1
    for f in manifest["files"]:
        f.pop("format", None)
    (folder / "inspector-snapshot.json").write_text(json.dumps(manifest))
    assert summarize(load_snapshot(folder)).parameters == summarize(load_snapshot(bundled_path(ALIASES["gpt2"]))
                                                                    ).parameters


def test_audit_has_no_loader_of_its_own() -> None:
    text = (ROOT / "inspector" / "analysis" / "checks" / "audit.py").read_text()
    for needle in ("from .source", "from .hub", "from .snapshot", "open(", "read_bytes", "_list_files"):
        assert needle not in text.replace("mmap", "").replace("path.open(\"rb\")", ""), needle


def test_open_hub_lenient_collects_header_errors(online: None) -> None:
    from helpers import raw_header

    with HubServer() as server:
        server.add_files("acme/broken", {"a.safetensors": raw_header({"x": {"dtype": "F99", "shape": [1],
                                                                            "data_offsets": [0, 4]}}),
                                         "b.safetensors": raw_header({})})
        c = open_hub("acme/broken", options=HubOptions(endpoint=server.url, timeout=5), problems=errors.COLLECT)
        assert [e.rule for e in c.problems.header_errors] == ["unknown-dtype"] and len(c.headers) == 1
        with pytest.raises(errors.UnknownDtype):
            open_hub("acme/broken", options=HubOptions(endpoint=server.url, timeout=5, use_cache=False))
