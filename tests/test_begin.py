"""Issue 54: a plain ``inspect ORG/NAME`` sends its first round trip before the rest of the program is
imported (``early.begin``: the HTTP session made first, then the listing, and the early reads where nothing
of the repo is cached), and ``open_hub`` takes that read over (``early.take``): the same requests, records
and notes as a read that begins in ``open_hub``; nothing is sent offline, and a read begun for another repo
or other options is never used for this one."""

from __future__ import annotations

import pytest
from hubserver import HubServer

from inspector.sources.bundled import ALIASES, bundled_path
from inspector.sources.early import begin, take
from inspector.sources.header_cache import hf_cache_repo
from inspector.sources.hub import HubOptions, open_hub

LLAMA3 = ALIASES["llama3-8b"].repo_id  # 4 shards: the one-request answer applies
GPT2 = ALIASES["gpt2"].repo_id  # one model.safetensors


@pytest.fixture
def hub(online: None):
    with HubServer() as server:
        for alias in ("llama3-8b", "gpt2"):
            server.add_snapshot(ALIASES[alias].repo_id, bundled_path(ALIASES[alias]))
        yield server


def options(server: HubServer, **kw) -> HubOptions:
    return HubOptions(endpoint=server.url, timeout=5, **kw)


def records(c) -> list[tuple]:
    return sorted((t.name, t.dtype, t.shape, t.begin, t.end, t.file) for h in c.headers for t in h.tensors)


def listings(server: HubServer, repo: str) -> int:
    return sum(r.path.startswith(f"/api/models/{repo}/revision/") for r in server.requests("GET"))


@pytest.mark.parametrize("repo", [LLAMA3, GPT2])
def test_a_begun_read_is_taken_over_with_the_requests_of_one_read(hub: HubServer, repo: str) -> None:
    """Begun, then opened: one listing (the begun one), and the very requests, records and notes of the
    same read begun in ``open_hub`` (no cache either time: ``use_cache=False``)."""
    opts = options(hub, use_cache=False)
    begin(repo, opts)
    begun = open_hub(repo, options=opts)
    assert take(repo, opts) is None  # taken over, once
    sent = sorted((r.path, r.range) for r in hub.requests("GET"))
    assert listings(hub, repo) == 1, sent
    hub.clear_log()
    plain = open_hub(repo, options=opts)
    assert sorted((r.path, r.range) for r in hub.requests("GET")) == sent
    assert records(begun) == records(plain) and begun.provenance.notes == plain.provenance.notes


def test_offline_nothing_is_sent_and_a_cached_repo_begins_with_the_listing_alone(hub: HubServer) -> None:
    """Offline, or for a name outside the Hub's repo id syntax, ``begin`` sends nothing. For a repo the
    header cache holds (an earlier read left it) it sends the listing alone, which the read from the cache
    then takes over: one request in all, as that read asks for by itself (the same notes). Where the Hugging
    Face cache holds something of a repo but no whole snapshot, the read is cold after all: the begun
    listing is set aside and the read asks for its own."""
    begin(GPT2, options(hub, offline=True))
    assert hub.log == [] and take(GPT2, options(hub, offline=True)) is None
    for name in ("org/../x", "org/na me", "org/a\u202eb"):  # outside the Hub's syntax: no request at all
        begin(name, options(hub))
        assert hub.log == [] and take(name, options(hub)) is None, name
    open_hub(GPT2, options=options(hub))  # fills the header cache
    hub.clear_log()
    plain = open_hub(GPT2, options=options(hub))
    assert listings(hub, GPT2) == 1 and len(hub.log) == 1
    hub.clear_log()
    begin(GPT2, options(hub))
    begun = open_hub(GPT2, options=options(hub))
    assert take(GPT2, options(hub)) is None
    assert listings(hub, GPT2) == 1 and len(hub.log) == 1
    assert records(begun) == records(plain) and begun.provenance.notes == plain.provenance.notes
    hub.clear_log()
    hf_cache_repo(LLAMA3).mkdir(parents=True)  # something of the repo in the Hugging Face cache, no snapshot
    begin(LLAMA3, options(hub))
    open_hub(LLAMA3, options=options(hub))
    assert listings(hub, LLAMA3) == 2  # the begun one, set aside, and the cold read's own


def test_a_read_begun_for_another_repo_or_other_options_is_not_used(hub: HubServer) -> None:
    """A read begun for Llama 3 is not taken by a read of GPT-2, nor by a read of Llama 3 with other options
    (another timeout): each lists its own repo; the begun read cost its own requests and nothing else."""
    begin(LLAMA3, options(hub, use_cache=False))
    open_hub(GPT2, options=options(hub, use_cache=False))
    open_hub(LLAMA3, options=HubOptions(endpoint=hub.url, timeout=6, use_cache=False))
    assert listings(hub, GPT2) == 1 and listings(hub, LLAMA3) == 2  # the begun one and the read's own
    left = take(LLAMA3, options(hub, use_cache=False))
    assert left is not None
    left.early.close()
