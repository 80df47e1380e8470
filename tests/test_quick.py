"""Issue 39: ``inspect ORG/NAME --json`` answered without typer (``launch.quick``), the fast twin of the
typer command (``commands.run``): the same exit code, stdout and stderr on every command line it takes,
and None (the typer commands answer) on every other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import raw_header, ref
from hubserver import HubServer

import inspector
from inspector.cli import commands, launch
from inspector.cli.opening import ReadAhead
from inspector.sources.bundled import ALIASES, bundled_path

LLAMA3 = ALIASES["llama3-8b"].repo_id


def fresh_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    """A cold cache for each run, so that both read from the Hub (their notes name the requests)."""
    import huggingface_hub.constants as constants

    home = tmp_path / name
    home.mkdir()
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HOME", str(home))


def tiny_gguf(path: Path) -> bytes:
    """A small GGUF written by gguf-py (one F32 tensor of 32 values)."""
    import gguf
    import numpy as np
    from helpers import finish_gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    finish_gguf(w)
    return path.read_bytes()


@pytest.fixture
def hub(online: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    with HubServer() as server:
        server.add_snapshot(LLAMA3, bundled_path(ALIASES["llama3-8b"]))
        server.add_files("acme/gated", {"model.safetensors": raw_header({})}, gated=True)
        blob = tiny_gguf(tmp_path / "tiny.gguf")
        server.add_files("acme/two-gguf", {"tiny.Q4_0.gguf": blob, "tiny.Q8_0.gguf": blob})
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


@pytest.mark.parametrize("args", [
    [LLAMA3, "--json"],
    ["show", LLAMA3, "--json"],
    [LLAMA3],  # the table (issue 54: without typer, 0.19 -> 0.14 s of CPU for a bundled model)
    ["acme/gated"],
    ["acme/no-such-repo", "--json"],
    ["acme/gated", "--json"],
    ["acme/two-gguf", "--json"],
])
def test_the_quick_path_answers_as_the_typer_command(hub: HubServer, args: list[str], capsys, monkeypatch,
                                                     tmp_path: Path) -> None:
    fresh_home(monkeypatch, tmp_path, "quick")
    ReadAhead.start(args)
    quick = launch.quick(args)
    q = capsys.readouterr()
    fresh_home(monkeypatch, tmp_path, "typer")
    typed = commands.run(args)
    t = capsys.readouterr()
    assert quick is not None
    assert (quick, q.out, q.err) == (typed, t.out, t.err)
    if "--json" not in args:
        assert quick == (0 if args[-1] == LLAMA3 else 3)
        return
    doc = json.loads(q.out)
    if args[-2] == LLAMA3:
        assert quick == 0 and doc["totals"]["parameters"] == ref("llama3-8b.parameters")
    elif args[-2] == "acme/two-gguf":
        assert quick == 0 and [f["parameters"] for f in doc["files"]] == [32, 32]  # 4 x 8, as written
    else:
        assert quick == 3 and doc["error"]["exit"] == 3


@pytest.mark.parametrize("pair", [("llama3-8b", "llama3-8b"), ("llama2-7b", "llama3-8b"), ("llama3-8b", "folder"),
                                  ("folder", "broken"), ("deepseek-v3", "deepseek-v3")])
def test_diff_json_answers_as_the_typer_command(pair: tuple[str, str], capsys, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 54: ``diff A B --json`` for two paths or aliases, without typer: the same exit code, stdout and
    stderr as the typer command (the same model twice, two models, a folder, a broken header: exit 4)."""
    from helpers import save_real

    monkeypatch.chdir(tmp_path)
    save_real(tmp_path / "folder" / "model.safetensors", {"model.embed_tokens.weight": ("F16", (128, 8))})
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.safetensors").write_bytes(raw_header({"w": {"dtype": "F99", "shape": [1],
                                                                                "data_offsets": [0, 4]}}))
    args = ["diff", *pair, "--json"]
    quick = launch.quick(args)
    q = capsys.readouterr()
    typed = commands.run(args)
    t = capsys.readouterr()
    assert quick is not None and (quick, q.out, q.err) == (typed, t.out, t.err)
    assert quick == (4 if "broken" in pair else 0), q.err
    if pair == ("llama2-7b", "llama3-8b"):  # the gap the reference figures give
        doc = json.loads(q.out)
        assert doc["delta"]["parameters"] == ref("llama3-8b.parameters") - ref("llama2-7b.parameters")


@pytest.mark.parametrize("case", ["folder", "alias", "broken", "missing-shard", "typo", "table", "folder-table"])
def test_local_paths_and_aliases_answer_as_the_typer_command(case: str, capsys, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder, a bundled alias, a broken header (exit 4), a missing shard (exit 4): the same exit code,
    stdout and stderr both ways; a typo of a command (``dif``) is left to typer, which names ``diff``."""
    from helpers import save_real

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "m"
    save_real(folder / "model.safetensors", {"w": ("F32", (4, 8))})
    if case == "broken":
        (folder / "model.safetensors").write_bytes(raw_header({"w": {"dtype": "F99", "shape": [1],
                                                                     "data_offsets": [0, 4]}}))
    if case == "missing-shard":
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "gone.safetensors"}}))
    args = {"alias": ["llama3-8b", "--json"], "typo": ["dif", "--json"], "table": ["llama3-8b"],
            "folder-table": [str(folder)]}.get(case, [str(folder), "--json"])
    quick = launch.quick(args)
    q = capsys.readouterr()
    if case == "typo":
        assert quick is None
        return
    typed = commands.run(args)
    t = capsys.readouterr()
    assert quick is not None and (quick, q.out, q.err) == (typed, t.out, t.err)
    expected = {"folder": 0, "alias": 0, "broken": 4, "missing-shard": 4, "table": 0, "folder-table": 0}[case]
    assert quick == expected, q.err
    if case == "folder":
        assert json.loads(q.out)["totals"]["parameters"] == 32  # 4 x 8, as written
    if case == "table":
        assert f"{ref('llama3-8b.parameters'):,}" in q.out


def test_the_command_names_are_the_typer_apps() -> None:
    """``launch.COMMANDS`` (a word the quick path never reads as a model) is the typer app's command list."""
    names = {c.name for c in commands.app.registered_commands if c.name}
    assert names == launch.COMMANDS


@pytest.mark.parametrize("args", [
    [LLAMA3, "--tensors"], [LLAMA3, "--json", "--tensors"], [LLAMA3, "--wide", "--json"],
    ["diff", "a/b", "c/d", "--json"],
    ["diff", "llama3-8b", "llama3-8b", "--json", "--values"], ["diff", "llama3-8b", "llama3-8b"],
    ["llama3", "--json"], [LLAMA3, "--json", "--revision", "main"], ["diff", "--json"], ["--json", "--json"],
])
def test_any_other_command_line_is_left_to_typer(args: list[str], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "diff").mkdir()  # a folder named like a command is the command (write ./diff for the folder)
    ReadAhead.start(args)
    assert launch.quick(args) is None
    ReadAhead.take_over(args[0] if "/" in args[0] else "")


def test_the_console_script_imports_no_typer_for_it(hub: HubServer, tmp_path: Path) -> None:
    """The point of the twin: a cold ``inspect ORG/NAME --json`` process never imports typer or click
    (nor rich, nor the tensor listing's module, which only ``--tensors`` draws: issue 39's start-up CPU)."""
    import os

    child = ("import sys; sys.argv = ['inspect', sys.argv[1], '--json']\n"
             "import atexit, os\n"
             "from inspector.cli import launch\n"
             "real_exit = os._exit\n"
             "def done(code):\n"
             "    print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')"
             " or m == 'inspector.analysis.serving.listing'),"
             " file=sys.stderr); sys.stderr.flush(); real_exit(code)\n"
             "os._exit = done\n"
             "launch.entry()\n")
    env = {**os.environ, "HF_HOME": str(tmp_path), "HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0"}
    run = subprocess.run([sys.executable, "-c", child, LLAMA3], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["totals"]["parameters"] == ref("llama3-8b.parameters")
    assert run.stderr.strip().splitlines()[-1] == "[]", run.stderr


def test_a_local_read_imports_no_hub_reader(tmp_path: Path) -> None:
    """Issue 39: ``inspect ALIAS --json`` (and a folder) reads nothing remote, so a cold process imports
    neither the Hub's reader (its cache, thread pool and hashing), nor the thread pool's module and
    logging, nor the temporary-file machinery only writes need."""
    import os

    child = ("import sys; sys.argv = ['inspect', sys.argv[1], '--json']\n"
             "import os\n"
             "from inspector.cli import launch\n"
             "real_exit = os._exit\n"
             "def done(code):\n"
             "    print(sorted(m for m in sys.modules if m in ('inspector.sources.hub', 'concurrent.futures',"
             " 'logging', 'tempfile', 'shutil')), file=sys.stderr); sys.stderr.flush(); real_exit(code)\n"
             "os._exit = done\n"
             "launch.entry()\n")
    env = {**os.environ, "HF_HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", child, "llama3-8b"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["totals"]["parameters"] == ref("llama3-8b.parameters")
    assert run.stderr.strip().splitlines()[-1] == "[]", run.stderr


def test_version_answers_as_the_typer_option_and_imports_no_typer(capsys) -> None:
    """``inspect --version``: the quick path prints what typer's eager root option prints, same exit code
    and streams, and a console-script process for it imports neither typer, click nor rich (issue 39's
    start-up: they were most of its imports; benchmarks/bench_startup.py lists what each command imports)."""
    import os

    quick = launch.quick(["--version"])
    q = capsys.readouterr()
    typed = commands.run(["--version"])
    t = capsys.readouterr()
    assert (quick, q.out, q.err) == (typed, t.out, t.err) == (0, f"inspect {inspector.__version__}\n", "")
    child = ("import sys; sys.argv = ['inspect', '--version']\n"
             "import os\n"
             "from inspector.cli import launch\n"
             "real_exit = os._exit\n"
             "def done(code):\n"
             "    print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')),"
             " file=sys.stderr); sys.stderr.flush(); real_exit(code)\n"
             "os._exit = done\n"
             "launch.entry()\n")
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=dict(os.environ),
                         timeout=60)
    assert run.returncode == 0 and run.stdout == f"inspect {inspector.__version__}\n", run
    assert run.stderr.strip().splitlines()[-1] == "[]", run.stderr
