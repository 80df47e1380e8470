"""`inspect MODEL --files`: every file of a folder or repo with its size and kind, and what a download
would fetch, from the listing alone (nothing the report does not read is fetched)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import save_real

ROOT = Path(__file__).resolve().parent.parent


def _repo(folder: Path) -> dict[str, int]:
    folder.mkdir()
    save_real(folder / "model.safetensors", {"model.embed_tokens.weight": ("F16", (64, 32))})
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 32}))
    (folder / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"a": 0}}}))
    (folder / "tokenizer_config.json").write_text("{}")
    (folder / "README.md").write_text("# a model\n")
    (folder / "pytorch_model.bin").write_bytes(b"\0" * 100)  # another format: listed, never counted
    return {p.name: p.stat().st_size for p in folder.iterdir()}  # the file system's own sizes


def _check(doc: dict, sizes: dict[str, int]) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "inspector" / "schemas" / "repo-files.schema.json").read_text())
    assert list(Draft202012Validator(schema).iter_errors(doc)) == []
    rows = {r["path"]: r for r in doc["files"]}
    assert {p: r["size"] for p, r in rows.items()} == sizes
    assert {p: r["kind"] for p, r in rows.items()} == {
        "model.safetensors": "weights", "pytorch_model.bin": "weights", "config.json": "config",
        "tokenizer.json": "tokenizer", "tokenizer_config.json": "tokenizer", "README.md": "other"}
    assert rows["model.safetensors"]["counted"] and not rows["pytorch_model.bin"]["counted"]
    assert doc["total_bytes"] == sum(sizes.values())
    assert doc["weights_bytes"] == sizes["model.safetensors"] + sizes["pytorch_model.bin"]
    assert sum(doc["bytes_by_kind"].values()) == doc["total_bytes"] and doc["unknown_sizes"] == 0


def test_files_of_a_folder_and_of_a_hub_repo(cli, tmp_path: Path, online, monkeypatch) -> None:
    from hubserver import HubServer

    sizes = _repo(tmp_path / "m")
    _check(cli(str(tmp_path / "m"), "--files", "--json").json(), sizes)
    text = cli(str(tmp_path / "m"), "--files")
    assert text.code == 0 and f"{sum(sizes.values()):,} B" in text.out and "not counted" in text.out
    with HubServer() as server:
        server.add_files("acme/m", {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        _check(cli("acme/m", "--files", "--json").json(), sizes)
        fetched = [r.path for r in server.requests("GET") if r.path.endswith((".bin", ".md", "tokenizer.json"))]
    assert fetched == []  # the listing answers: no file the report does not read is fetched


def test_files_goes_alone(cli) -> None:
    result = cli("llama3-8b", "--files", "--tensors")
    assert result.code == 2 and "--files" in result.err
