"""Hostile inputs, round six (issue 66): a model card's YAML nested without end, the declared bases read under
one budget, big JSON under its element count, names no file system or Hub holds, listings whose hashes lie,
a header of a distinct pattern a tensor. Each case: its documented exit code and one line; bounds as counts,
bytes and requests, and (in a child process) memory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from inspector.errors import EXIT_INVALID, EXIT_NOT_FOUND, EXIT_USAGE


def _one_line(err: str) -> bool:
    lines = [line for line in err.splitlines() if line.strip()]
    return 1 <= len(lines) <= 2 and lines[0].startswith("Error:") and "Traceback" not in err


def _model(folder: Path, seed: int = 0, card: bytes | None = None) -> Path:
    """A small model written by the safetensors library, with a config and (optionally) a model card."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    save_file({"model.layers.0.mlp.up_proj.weight": rng.normal(0, 0.02, (64, 32)).astype(np.float32),
               "model.layers.0.input_layernorm.weight": np.ones(32, np.float32)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 32,
                                                     "num_hidden_layers": 1, "intermediate_size": 64}))
    if card is not None:
        (folder / "README.md").write_bytes(card)
    return folder


# --- a card's YAML nested without end -------------------------------------------------------------------------

DEEP_CARDS = {
    "flow": b"---\nbase_model: " + b"[" * 600 + b"]" * 600 + b"\n---\n",  # 1.2 KB
    "mapping": b"---\nbase_model: " + b"{a: " * 600 + b"1" + b"}" * 600 + b"\n---\n",
    "block": b"---\n" + b"".join(b" " * i + b"- \n" for i in range(0, 1200, 2)) + b"---\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP_CARDS))
def test_a_card_nested_without_end_declares_nothing(shape: str) -> None:
    """PyYAML's composer recurses a level a node: 600 levels of ``[`` in a 1 KB card raised RecursionError out of
    ``lineage`` (exit 70). The loader counts the depth as it composes and stops at MAX_YAML_DEPTH."""
    from inspector.analysis.comparison.lineage import front_matter
    from inspector.safeio import MAX_YAML_DEPTH, parse_yaml

    assert front_matter(DEEP_CARDS[shape]) == {}
    nested = "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)  # within the cap: read as it is
    assert json.dumps(parse_yaml(f"a: {nested}", "x")) == f'{{"a": {nested}}}'


@pytest.mark.parametrize("shape", sorted(DEEP_CARDS))
def test_lineage_of_a_model_whose_card_nests_without_end(cli, tmp_path: Path, shape: str) -> None:
    """Locally: no base declared (the card is unreadable), so the usage error that says so, one line."""
    folder = _model(tmp_path / "m", card=DEEP_CARDS[shape])
    result = cli("lineage", str(folder))
    assert result.code == EXIT_USAGE and "declares no base" in result.err and _one_line(result.err), result.err


def test_lineage_over_the_hub_of_a_card_that_nests_without_end(cli, tmp_path: Path, online: None) -> None:
    """The same card served by the test Hub: the card is read by range and declares nothing."""
    from hubserver import HubServer

    folder = _model(tmp_path / "m", card=DEEP_CARDS["flow"])
    with HubServer() as server:
        server.add_files("acme/deep", {f.name: f.read_bytes() for f in folder.iterdir()})
        result = cli("lineage", "acme/deep", "--endpoint", server.url)
    assert result.code == EXIT_USAGE and "declares no base" in result.err and _one_line(result.err), result.err


def test_a_recursion_error_is_never_an_internal_error(tmp_path: Path) -> None:
    """The boundary's belt: a RecursionError raised anywhere in a command is exit 4 with one line, not 70."""
    import subprocess
    import sys

    plant = tmp_path / "sitecustomize.py"
    plant.write_text("import inspector.api as a\n"
                     "def deep(*args, **kwargs):\n    return deep(*args, **kwargs)\n"
                     "a.inspect = deep\n")
    import os

    done = subprocess.run([sys.executable, "-m", "inspector", "llama3-8b"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=False)
    assert done.returncode == EXIT_INVALID, done.stderr[-500:]
    assert _one_line(done.stderr) and "nested too deep" in done.stderr


# --- names no file system or Hub holds ------------------------------------------------------------------------

LONG = "A" * 300


@pytest.mark.parametrize("args", [
    [LONG], ["estimate", LONG], ["audit", LONG], ["lineage", LONG, "llama3-8b"], ["compare", LONG, "llama3-8b"],
    ["diff", "llama3-8b", LONG], [f"some/dir/{LONG}/x"], [f"org/g:{'x' * 100_000}"],
])
def test_a_path_component_past_name_max_is_not_found_not_a_crash(cli, args: list[str]) -> None:
    """A component over 255 bytes (NAME_MAX) made the operating system answer "File name too long": exit 70
    in show, estimate, audit, lineage and compare. Now the name is looked at before the file system sees it."""
    result = cli(*args)
    assert result.code in (EXIT_NOT_FOUND, EXIT_USAGE, 5), result.err  # 5: offline, the Hub unreachable
    assert _one_line(result.err) and "internal error" not in result.err, result.err
    assert len(result.err) < 3000


@pytest.mark.parametrize("name", ["org/tiny\n", "org/x.", "org/x-", "org/a--b", "org/a..b", "org/x.git",
                                  ".org/x", "org/" + "x" * 97])
def test_a_name_the_hubs_syntax_refuses_sends_nothing(cli, online: None, name: str) -> None:
    """huggingface_hub's validate_repo_id: parts start and end with a letter, digit or ``_``, no ``--`` or ``..``,
    no ``.git`` at the end, at most 96 characters; matched whole (``org/tiny\\n`` passed ``$``, then raised
    InvalidURL with --revision: exit 70). The early read sent 5 requests for ``org/x.``."""
    from hubserver import HubServer

    with HubServer() as server:
        for extra in ([], ["--revision", "main"]):
            result = cli(name, "--endpoint", server.url, *extra)
            # 3 where the name reads as a path (a leading "."): not found, and no request either
            assert result.code in (EXIT_USAGE, EXIT_NOT_FOUND) and _one_line(result.err), result.err
        assert server.requests() == []


def test_the_repo_id_rule_matches_huggingface_hubs() -> None:
    """The one syntax check against huggingface_hub's own validator, on the edges of the rule."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    from inspector.safeio import is_repo_id

    for name in ["org/x", "org/x.y", "o/x_", "org/x-1", "org/tiny\n", "org/x.", "org/x-", "org/a--b", "org/a..b",
                 "org/x.git", "org/" + "x" * 96, "org/" + "x" * 97, "a/b/c", "org/x y"]:
        try:
            validate_repo_id(name)
            theirs = True
        except HFValidationError:
            theirs = False
        assert is_repo_id(name) == theirs, name


def test_a_listed_file_name_past_name_max_is_refused() -> None:
    from inspector.errors import InvalidCheckpointError
    from inspector.safeio import relative_name

    with pytest.raises(InvalidCheckpointError, match="longer than 255 bytes"):
        relative_name("dir/" + "x" * 256 + ".safetensors", "listing")
    assert relative_name("dir/" + "x" * 243 + ".safetensors", "listing")  # 255 bytes: held
