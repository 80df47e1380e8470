"""Issue 52: one GGUF of a repo or folder named as llama.cpp and ollama name it, ``REPO:QUANT`` (and
``REPO/QUANT``, which showed the whole repo's listing before), beside ``REPO/FILE.gguf``. The GGUF files
are written by gguf-py's own writer; the Hub is the tests' local server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hubserver import HubServer
from test_quick import fresh_home, tiny_gguf

FILES = ("tiny-Q4_K_M.gguf", "tiny-Q4_K_S.gguf", "tiny-Q8_0.gguf")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    blob = tiny_gguf(tmp_path / "scratch.gguf")
    out = tmp_path / "quants"
    out.mkdir()
    for name in FILES:
        (out / name).write_bytes(blob)
    return out


@pytest.mark.parametrize(("quant", "file"), [("Q4_K_M", "tiny-Q4_K_M.gguf"), ("q8_0", "tiny-Q8_0.gguf"),
                                             ("Q4_K_S", "tiny-Q4_K_S.gguf")])
def test_a_folder_colon_quant_is_that_file(cli, folder: Path, quant: str, file: str) -> None:
    named = cli(f"{folder}:{quant}", "--json")
    direct = cli(str(folder / file), "--json")
    assert named.code == direct.code == 0, named.err
    assert named.json() == direct.json()
    assert named.json()["model"]["path"] == str(folder / file)


@pytest.mark.parametrize(("quant", "code", "says"), [
    ("Q4_K", 3, "no file of quantisation Q4_K"),  # a prefix of Q4_K_M and Q4_K_S names neither
    ("Q5_K_M", 3, "no file of quantisation Q5_K_M"),
    ("Q4_K_M/x", 2, "is not a quantisation's name"),
])
def test_a_quant_no_file_carries_is_named_with_the_files(cli, folder: Path, quant: str, code: int, says: str) -> None:
    done = cli(f"{folder}:{quant}")
    assert done.code == code
    assert says in done.err
    if code == 3:
        assert all(name in done.err for name in FILES)  # the hint lists what there is


def test_one_file_must_be_the_quant_named(cli, folder: Path) -> None:
    assert cli(f"{folder / 'tiny-Q8_0.gguf'}:Q8_0", "--json").code == 0
    wrong = cli(f"{folder / 'tiny-Q8_0.gguf'}:Q4_K_M")
    assert wrong.code == 3 and "no file of quantisation Q4_K_M" in wrong.err


@pytest.fixture
def hub(online: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    blob = tiny_gguf(tmp_path / "tiny.gguf")
    with HubServer() as server:
        server.add_files("acme/quants", {name: blob for name in FILES})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


@pytest.mark.parametrize("spec", ["acme/quants:Q8_0", "acme/quants/Q8_0", "acme/quants/tiny-Q8_0.gguf"])
def test_a_hub_repo_quant_reads_one_file(cli, hub: HubServer, spec: str, monkeypatch, tmp_path: Path) -> None:
    """``REPO:QUANT`` and ``REPO/QUANT`` read the file ``REPO/FILE.gguf`` reads: its header and nothing of
    the other files (the server's log names every path asked for)."""
    fresh_home(monkeypatch, tmp_path, spec.replace("/", "_").replace(":", "_"))
    done = cli(spec, "--json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["model"]["label"].endswith("tiny-Q8_0.gguf")
    asked = {entry.path for entry in hub.log if entry.path.endswith(".gguf")}
    assert asked and all(path.endswith("tiny-Q8_0.gguf") for path in asked), asked
