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


# --- a path to a side file, and the default branch named offline (issue 52) --------------------------------

@pytest.mark.parametrize("side", ["config.json", "model.safetensors.index.json", "README.md", "tokenizer.json"])
def test_a_path_to_a_side_file_is_its_folder(cli, tmp_path: Path, side: str) -> None:
    """A path to config.json (or the index, the card, the tokenizer) answers with the folder it belongs to;
    it was read as a safetensors header ("header length 7e18 bytes … hostile", exit 4)."""
    from helpers import save_real

    save_real(tmp_path / "model.safetensors", {"model.embed_tokens.weight": ("F16", (16, 8))})
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 16, "hidden_size": 8}))
    written = {"model.safetensors.index.json": json.dumps({"weight_map": {"model.embed_tokens.weight":
                                                                         "model.safetensors"}}),
               "README.md": "# card", "tokenizer.json": "{}"}
    if side in written:
        (tmp_path / side).write_text(written[side])
    via_file = cli(str(tmp_path / side), "--json")
    via_folder = cli(str(tmp_path), "--json")
    assert via_file.code == via_folder.code == 0, via_file.err
    assert via_file.json() == via_folder.json()
    assert via_file.json()["totals"]["parameters"] == 16 * 8  # the one tensor, as written


@pytest.mark.parametrize("spec", [
    "meta-llama/Meta-Llama-3-8B@main",
    "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
    "https://huggingface.co/meta-llama/Meta-Llama-3-8B/tree/main",
    "llama3-8b@main",
])
def test_the_default_branch_named_reads_offline_as_the_bare_id(cli, spec: str, monkeypatch, tmp_path: Path) -> None:
    """Offline, @main (and a page of the Hub at main) is read from the bundled snapshot as the bare repo id
    is (it was exit 3: "no cached or bundled snapshot of that revision")."""
    fresh_home(monkeypatch, tmp_path, "offline")
    bare = cli("meta-llama/Meta-Llama-3-8B", "--offline", "--json")
    named = cli(spec, "--offline", "--json")
    assert bare.code == named.code == 0, named.err
    assert named.json()["model"] == bare.json()["model"]
    assert named.json()["totals"] == bare.json()["totals"]
    other = cli("meta-llama/Meta-Llama-3-8B@some-branch", "--offline", "--json")
    assert other.code == 3  # another branch is not the snapshot's


def test_a_hub_repos_smaller_quantisation_is_suggested(cli, online, monkeypatch, tmp_path: Path) -> None:
    """estimate of one GGUF of a Hub repo that does not fit: the repo's largest smaller file that fits is
    named (its listing once, then one header), and estimating it gives the promised figure."""
    import numpy as np
    from helpers import model_gguf

    files = {"tiny-F32.gguf": model_gguf(tmp_path / "a.gguf", np.float32),
             "tiny-F16.gguf": model_gguf(tmp_path / "b.gguf", np.float16)}
    with HubServer() as server:
        server.add_files("acme/sizes", files)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        fresh_home(monkeypatch, tmp_path, "home")
        doc = cli("estimate", "acme/sizes:F32", "--gpu", "120MiB", "--json").json()
        assert doc["fits"] is False
        use = [s for s in doc["suggestions"] if s["change"].startswith("use ")]
        assert [s["change"] for s in use] == ["use acme/sizes/tiny-F16.gguf"]
        again = cli("estimate", "acme/sizes/tiny-F16.gguf", "--gpu", "120MiB", "--json").json()
        assert (again["fits"], again["fit"]["total_bytes"]) == (True, use[0]["total"])
