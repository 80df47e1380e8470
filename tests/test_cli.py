"""The command line through its real entry point: output, JSON schema, exit codes, bad input."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import raw_header, ref, save_real, write_raw

from inspector.errors import EXIT_INVALID, EXIT_NOT_FOUND, EXIT_USAGE


def test_llama3_8b_counts_and_tensor_listing(cli) -> None:
    r = cli("llama3-8b")
    assert r.code == 0
    assert "8,030,261,248" in r.out and "16,060,522,496" in r.out
    r = cli("llama3-8b", "--tensors")
    assert "model.layers.0.mlp.gate_proj.weight [14336, 4096] BF16" in r.out.splitlines()
    lines = [line for line in r.out.splitlines() if line.startswith("model.layers.")]
    # natural order: layers.2 before layers.10
    firsts = [int(line.split(".")[2]) for line in lines]
    assert firsts == sorted(firsts)


def test_collapsed_listing(cli) -> None:
    r = cli("deepseek-v3", "--tensors", "--collapse")
    assert r.code == 0
    assert "model.layers.{3–60}.mlp.experts.{0–255}.down_proj.weight [7168, 2048] F8_E4M3 ×14848" in r.out
    assert "model.layers.61.eh_proj.weight [7168, 14336] BF16" in r.out


def test_a_name_that_reads_like_a_collapsed_row_keeps_its_own_row() -> None:
    from inspector.analysis.facts.stats import layer_groups, placed
    from inspector.analysis.serving.listing import collapsed_rows
    from inspector.model import TensorInfo

    names = [f"model.layers.{i}.mlp.experts.{j}.w1.weight" for i in range(2) for j in range(2)]
    names += ["model.layers.{0–1}.mlp.experts.{#}.w1.weight", "x.experts.{#}.experts.{#}.w"]
    tensors = placed(TensorInfo(n, "F32", (2,), 8 * k, 8 * k + 8, "f", 2) for k, n in enumerate(names))
    rows = {r.name: r.count for r in collapsed_rows(tensors, layer_groups(tensors))}
    # the four real tensors in one row; each look-alike alone (they once joined the row: ×5)
    assert rows == {"model.layers.{0–1}.mlp.experts.{0–1}.w1.weight": 4,
                    "model.layers.{0–1}.mlp.experts.{#}.w1.weight": 1, "x.experts.{#}.experts.{#}.w": 1}


def test_llama2_buffers_are_not_parameters(cli) -> None:
    doc = cli("llama2-7b", "--json").json()
    assert doc["totals"] == {
        "tensors": ref("llama2-7b.tensors"), "parameters": ref("llama2-7b.parameters"),
        "stored_elements": ref("llama2-7b.parameters"),  # nothing packed: as stored
        "buffer_elements": ref("llama2-7b.buffers"), "quant_elements": 0, "hub_total": ref("llama2-7b.hub_total"),
        "bytes": ref("llama2-7b.bytes"), "shards": 2}  # 2 shards: the Hub API listing (fixtures/realdata)
    roles = {r["role"]: r for r in doc["by_role"]}
    assert roles["buffer"]["buffer_elements"] == 2048 and roles["buffer"]["parameters"] == 0


JSON_KEYS = {"schema_version", "model", "config", "totals", "by_role", "by_dtype", "layer_groups", "shards",
             "other_weight_files", "components", "tokenizer", "notes", "formula", "tensors"}


def test_json_schema_is_fixed(cli) -> None:
    plain = cli("gpt2", "--json").json()
    listed = cli("gpt2", "--json", "--tensors").json()
    assert set(plain) == set(listed) == JSON_KEYS
    assert plain["schema_version"] == 2
    assert plain["tensors"] is None
    assert len(listed["tensors"]) == 160
    assert listed["tensors"][0].keys() == {"name", "dtype", "shape", "count", "role", "kind", "file", "shape_in_file"}
    assert plain["totals"]["parameters"] == ref("gpt2.parameters")
    assert plain["totals"]["buffer_elements"] == ref("gpt2.buffers")
    assert plain["config"]["hidden_size"] == 768  # GPT-2's n_embd, through transformers' aliases
    assert isinstance(plain["totals"]["bytes"], int)


def test_aliases_command(cli) -> None:
    r = cli("aliases", "--json")
    names = {a["alias"] for a in r.json()["aliases"]}
    assert {"llama2-7b", "llama3-8b", "deepseek-v3", "gpt2"} <= names
    assert all(a["bundled"] for a in r.json()["aliases"])


def test_a_folder_named_like_a_subcommand(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_real(tmp_path / "aliases" / "model.safetensors", {"w": ("F32", (3, 4))})
    monkeypatch.chdir(tmp_path)
    assert cli("aliases", "--json").json()["aliases"]  # the subcommand wins
    r = cli("./aliases", "--json")
    assert r.code == 0 and r.json()["totals"]["parameters"] == 12
    assert cli("show", "aliases", "--json").json()["totals"]["parameters"] == 12


def hostile(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"{kind}.safetensors"
    if kind == "not-safetensors":
        p.write_bytes(b"PK\x03\x04 this is a zip, not safetensors" * 10)
    elif kind == "truncated-header":
        p.write_bytes(raw_header({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})[:20])
    elif kind == "length-beyond-file":
        p.write_bytes(struct.pack("<Q", 5000) + b"{}")
    elif kind == "non-json":
        write_raw(p, b"{this is not json}")
    elif kind == "unknown-dtype":
        write_raw(p, {"a": {"dtype": "Q4_K", "shape": [1], "data_offsets": [0, 4]}}, data=4)
    elif kind == "inconsistent-offsets":
        write_raw(p, {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, data=4)
    elif kind == "tiny":
        p.write_bytes(b"\x01")
    elif kind == "data-truncated":
        write_raw(p, {"a": {"dtype": "F32", "shape": [100], "data_offsets": [0, 400]}}, data=100)
    return p


@pytest.mark.parametrize(("kind", "message"), [
    ("not-safetensors", "header length"),
    ("truncated-header", "header claims"),
    ("length-beyond-file", "header claims 5,000 bytes"),
    ("non-json", "not valid UTF-8 JSON"),
    ("unknown-dtype", "unknown dtype 'Q4_K'"),
    ("inconsistent-offsets", "span 4 bytes but F32 [2] needs 8"),
    ("tiny", "too short"),
    ("data-truncated", "300 bytes missing"),
])
def test_bad_files_get_one_clear_line(cli, tmp_path: Path, kind: str, message: str) -> None:
    r = cli(str(hostile(tmp_path, kind)))
    assert r.code == EXIT_INVALID
    assert r.out == ""
    first = r.err.splitlines()[0]
    assert first.startswith("Error: ") and message in first
    assert "Traceback" not in r.err


def test_missing_path_and_empty_folder(cli, tmp_path: Path) -> None:
    r = cli(str(tmp_path / "nope"))
    assert r.code == EXIT_NOT_FOUND and r.err.startswith("Error: ") and "Traceback" not in r.err
    (tmp_path / "empty").mkdir()
    r = cli(str(tmp_path / "empty"))
    assert r.code == EXIT_NOT_FOUND and "no weight files" in r.err


def test_usage_errors(cli) -> None:
    assert cli("llama3-8b", "--no-such-option").code == EXIT_USAGE
    assert cli("show").code == EXIT_USAGE


def test_hostile_names_are_sanitised(cli, tmp_path: Path) -> None:
    p = tmp_path / "evil.safetensors"
    write_raw(p, {"evil\x1b[2J\x07name": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, data=1)
    r = cli(str(p), "--tensors")
    assert r.code == 0
    assert "\x1b" not in r.out and "\x07" not in r.out
    assert "evil\\x1b[2J\\x07name [1] U8" in r.out


def test_console_script_and_module_exit_codes(tmp_path: Path) -> None:
    """Through a real process: the console script's exit code is the contract's."""
    exe = Path(sys.executable).with_name("inspect")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "inspector"]
    done = subprocess.run([*cmd, str(tmp_path / "missing")], capture_output=True, text=True)
    assert done.returncode == EXIT_NOT_FOUND and done.stderr.startswith("Error:")
    done = subprocess.run([sys.executable, "-m", "inspector", "gpt2", "--json"], capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["totals"]["parameters"] == ref("gpt2.parameters")
    assert "PyTorch was not found" not in done.stderr
    done = subprocess.run([*cmd, "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "Exit codes" in done.stdout


def test_the_read_ahead_starts_once_for_a_plain_repo_id_only(monkeypatch, tmp_path) -> None:
    """What starts before typer: a plain `inspect ORG/NAME` with output flags, once per command
    line; a revision, a token, another command or a path that exists start nothing."""
    import threading

    from inspector.cli import opening as launch

    calls: list[str] = []
    done = threading.Event()

    def fake_load(spec: str, *args, **kw) -> str:
        calls.append(spec)
        done.set()
        return f"read {spec}"

    monkeypatch.setattr(launch, "load_any", fake_load)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "model").mkdir()
    for args in (["org/name", "--revision", "v1"], ["diff", "a/b", "c/d"], ["org/name", "--token", "x"],
                 ["local/model", "--json"], ["not-a-repo-id"]):
        launch.ReadAhead.start(args)
        assert launch.ReadAhead.take_over(args[0]) is None, args
    launch.ReadAhead.start(["org/name", "--json"])
    launch.ReadAhead.start(["org/name", "--json"])  # the same command line again: no second read
    assert done.wait(5)
    assert launch.ReadAhead.take_over("other/repo") is None  # taken by another model: dropped
    launch.ReadAhead.start(["show", "org/name", "--tensors"])
    early = launch.ReadAhead.take_over("org/name")
    assert early is not None and early.result(None) == "read org/name"
    assert launch.ReadAhead.take_over("org/name") is None  # once
    assert calls == ["org/name", "org/name"]


@pytest.mark.parametrize("spec", ["org/naïve", "org/na me", "org/a\u202eb"])
def test_a_repo_id_outside_the_hubs_syntax_is_a_usage_error(cli, spec: str) -> None:
    """The Hub's repo ids are ASCII letters, digits, '.', '_' and '-' (huggingface_hub's
    validate_repo_id): anything else typed as org/name is a usage error, not an invalid checkpoint."""
    result = cli(spec)
    assert result.code == EXIT_USAGE, result.err
    assert result.err.count("Error:") == 1 and "repo id" in result.err


def test_kv_dtype_takes_every_name_dtype_takes(cli) -> None:
    from inspector.formats.dtypes import USER_DTYPE_BITS

    for name, bits in USER_DTYPE_BITS.items():
        what_if = cli("estimate", "llama3-8b", "--dtype", name, "--json")
        kv = cli("estimate", "llama3-8b", "--kv-dtype", name, "--json")
        assert what_if.code == kv.code == 0, (name, what_if.err, kv.err)
        # Llama-3-8B: 32 layers × 8 KV heads × 128 (config.json) × 2 (K and V) elements a token
        per_token = next(f for f in kv.json()["figures"] if f["name"] == "kv_bytes_per_token")["value"]
        assert per_token == 32 * 8 * 128 * 2 * bits // 8, name


def test_a_json_error_is_a_json_document_on_stdout(cli, tmp_path) -> None:
    """Issue 41: with --json, an error left stdout empty; now one JSON object with the documented exit code,
    and the line on stderr too."""
    for args, code in (((str(tmp_path / "missing"), "--json"), EXIT_NOT_FOUND),
                       (("estimate", "llama3-8b", "--gpu", "24", "--format", "json"), EXIT_USAGE),
                       (("train", "llama3-8b", "--optimizer", "lion", "--json"), EXIT_USAGE),
                       (("estimate", "llama3-8b", "--no-such-option", "--json"), EXIT_USAGE)):
        r = cli(*args)
        assert r.code == code, (args, r.err)
        doc = json.loads(r.out)
        assert doc["error"]["exit"] == code and doc["error"]["message"] and r.err.strip(), args
        assert set(doc["error"]) == {"code", "exit", "message", "hint"}
    assert cli(str(tmp_path / "missing")).out == ""  # without --json, stdout stays empty


def test_library_errors_name_parameters_and_the_cli_words_them_as_its_flags(cli) -> None:
    """One table (``boundary.FLAGS``) turns the library's parameter names into the CLI's flags: every
    parameter any library module marks in an error has a flag there, and every flag there is an
    option of some command (click's own list of options, not ours)."""
    import ast

    import typer

    import inspector
    from inspector.cli.boundary import FLAGS
    from inspector.cli.commands import app
    from inspector.errors import UsageError, parameters_named

    marked: set[str] = set()
    for path in (Path(inspector.__file__).parent).rglob("*.py"):
        if "cli" in path.parts or path.name == "errors.py":  # errors.py: the docstring's example
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                marked |= parameters_named(node.value)
    assert marked and marked <= set(FLAGS), marked - set(FLAGS)
    options = {opt for command in typer.main.get_command(app).commands.values()  # type: ignore[attr-defined]
               for param in command.params for opt in param.opts}
    assert set(FLAGS.values()) <= options, set(FLAGS.values()) - options

    with pytest.raises(UsageError) as caught:
        inspector.estimate("gpt2", gpu="8GiB", engine="nope")
    assert caught.value.message == "engine: unknown 'nope'" and "--" not in caught.value.message
    run = cli("estimate", "gpt2", "--gpu", "8GiB", "--engine", "nope")
    assert run.code == 2 and "Error: --engine: unknown 'nope'" in run.err
    with pytest.raises(UsageError) as caught:
        inspector.train("gpt2", method="qlora", precision="fp32")
    assert caught.value.message.startswith("method=qlora computes in 16-bit: precision=fp32")
    assert caught.value.hint == "precision=bf16-mixed"
    run = cli("train", "gpt2", "--method", "qlora", "--precision", "fp32")
    assert "--method qlora computes in 16-bit: --precision fp32" in run.err and "--precision bf16-mixed" in run.err


def test_a_marker_from_outside_in_an_error_is_left_as_written(cli, tmp_path: Path) -> None:
    """A name from outside that looks like a parameter marker (a folder named ``⟨zzz⟩``) reaches the
    error boundary as text: one clear line and its exit code, not an internal error."""
    from inspector.errors import NotFoundError

    assert NotFoundError("⟨zzz⟩/x: no such file").worded({"engine": "--engine"})[0] == "⟨zzz⟩/x: no such file"
    run = cli(str(tmp_path / "⟨zzz⟩"))
    assert run.code in (2, 3) and "internal error" not in run.err and "Error:" in run.err


@pytest.mark.parametrize(("words", "table"), [
    ("inspect train llama3-8b --method ", "methods"),
    ("inspect train llama3-8b --optimizer adamw", "optimizers"),
    ("inspect estimate llama3-8b --gpu ", "gpus"),
    ("inspect plan llama3-8b --engine ", "engines"),
    ("inspect estimate lla", "aliases"),
    ("inspect estimate llama3-8b --format ", "formats"),
])
def test_shell_completion_offers_the_codes_own_values(words: str, table: str) -> None:
    """Issue 52: option values complete from the tables the code checks them against (bash's protocol:
    the typed words and the cursor's word in the environment)."""
    import os
    import shutil
    import subprocess

    from inspector.analysis.serving.engines import ENGINES, GPUS
    from inspector.analysis.training.methods import METHODS
    from inspector.analysis.training.optimizers import OPTIMIZERS
    from inspector.sources.bundled import ALIASES

    typed = words.split(" ")
    prefix = typed[-1]
    values = {"methods": METHODS, "optimizers": OPTIMIZERS, "gpus": GPUS, "engines": ENGINES, "aliases": ALIASES,
              "formats": ("table", "json", "markdown", "html")}[table]
    env = {**os.environ, "_INSPECT_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(typed) - 1)}
    done = subprocess.run([shutil.which("inspect") or "inspect"], capture_output=True, text=True, env=env)
    assert done.stdout.split() == [v for v in values if v.startswith(prefix)]


@pytest.mark.parametrize(("command", "usage"), [
    ("estimate", "Usage: inspect estimate [OPTIONS] MODEL"), ("diff", "Usage: inspect diff [OPTIONS] A B"),
    ("compare", "Usage: inspect compare [OPTIONS] MODEL..."), ("audit", "Usage: inspect audit [OPTIONS] MODEL"),
])
def test_usage_lines_name_the_arguments(cli, command: str, usage: str) -> None:
    """Issue 52: usage lines say MODEL, A and B (typer drew {model})."""
    done = cli(command, "--help")
    assert done.code == 0
    assert done.out.splitlines()[0] == usage
