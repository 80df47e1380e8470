"""One --format for every command: table, json (``--json`` its short form) and markdown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ref, save_real

from inspector.errors import EXIT_USAGE

COMMANDS = [
    ["llama3-8b"],
    ["diff", "llama2-7b", "llama3-8b"],
    ["compare", "llama3-8b", "gpt2"],
    ["estimate", "llama3-8b", "--gpu", "24GiB"],
    ["audit", "llama3-8b"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[a[0] for a in COMMANDS])
def test_every_command_takes_every_format(cli, args: list[str]) -> None:
    short = cli(*args, "--json")
    long = cli(*args, "--format", "json")
    assert short.code == long.code == 0, short.err + long.err
    assert short.out == long.out and short.json()["schema_version"] == 2
    md = cli(*args, "--format", "markdown")
    assert md.code == 0, md.err
    assert (md.out.lstrip().startswith(("###", "**")) and "|---" in md.out) or "no findings" in md.out
    table = cli(*args, "--format", "table")
    assert table.code == 0 and table.out and not table.out.lstrip().startswith("{")
    assert cli(*args, "--format", "yaml").code == EXIT_USAGE
    assert cli(*args, "--json", "--format", "markdown").code == EXIT_USAGE


def test_show_markdown_gives_the_published_count(cli) -> None:
    md = cli("llama3-8b", "--format", "markdown").out
    assert f"| Parameters | {ref('llama3-8b.parameters'):,} |" in md  # the Hub's count, 8,030,261,248


def test_markdown_escapes_untrusted_names(cli, tmp_path: Path) -> None:
    """A file name and a tensor name from the checkpoint, carrying a link, an image with a handler, a
    table cell and a code span: inert in the markdown of show and audit."""
    hostile = "[click](javascript:alert(1))<img src=x onerror=alert(1)>|`x`"
    folder = tmp_path / "m"
    for shard in (f"a{hostile}.safetensors", "b.safetensors"):  # the same tensor in two shards: a finding
        save_real(folder / shard, {f"model.{hostile}.weight": ("F16", (4, 4))})
    for args in ([str(folder)], ["audit", str(folder)]):
        md = cli(*args, "--format", "markdown").out
        assert "javascript" in md, md  # the names are there …
        # … and inert: every metacharacter backslash-escaped (CommonMark renders "\\<" as a plain "<")
        for live in (r"(?<!\\)<img", r"(?<!\\)\]\(javascript", r"(?<!\\)`x(?<!\\)`"):
            assert re.search(live, md) is None, (live, md)


def test_every_help_shows_examples() -> None:
    """``inspect --help`` and every subcommand's: an Examples block with at least one command line."""
    import subprocess
    import sys

    from inspector.cli.commands import app

    names = [c.name for c in app.registered_commands]
    assert {"show", "diff", "compare", "estimate", "audit", "save", "aliases"} <= set(names)
    for args in ([], *([n] for n in names)):
        done = subprocess.run([sys.executable, "-m", "inspector", *args, "--help"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        examples = done.stdout.split("Examples:", 1)
        assert len(examples) == 2 and "inspect " in examples[1], args


def test_completion_names_the_program_it_was_installed_under() -> None:
    """The console script hf-inspect registers completion for hf-inspect, not for inspect."""
    import shutil
    import subprocess

    script = shutil.which("hf-inspect")
    assert script is not None, "the package's console scripts are installed by the README's test command"
    done = subprocess.run([script, "--show-completion", "bash"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "_hf_inspect_completion" in done.stdout and "hf-inspect" in done.stdout
    assert "\n_inspect_completion()" not in "\n" + done.stdout and "complete -o default -F _inspect_" not in done.stdout


def _on_a_terminal(args: list[str], columns: int, *, colour: bool = False) -> str:
    """``inspect ARGS`` on a pseudo-terminal of ``columns`` columns: what the person sees (NO_COLOR set
    unless ``colour``)."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 500, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"COLUMNS": str(columns), "TERM": "xterm"}
    if not colour:
        env["NO_COLOR"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "inspector", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    out = b""
    while select.select([master], [], [], 60)[0]:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(master)
    return out.decode().replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [60, 80, 120, 160])
def test_compare_of_four_models_keeps_every_label_and_number_on_a_terminal(columns: int) -> None:
    import inspector

    models = ["llama3-8b", "mistral-7b", "gpt2", "deepseek-v3"]
    screen = _on_a_terminal(["compare", *models], columns)
    cmp = inspector.compare(*models).comparison
    for row in cmp.rows:  # a label may fold at its words (issue 52: tables within the terminal); a number never
        assert all(word in screen for word in row.label.split()), (columns, row.label)
        for value in row.values:
            if isinstance(value, int) and not isinstance(value, bool):
                assert f"{value:,}" in screen, (columns, row.label, value)
    for r in cmp.reports:  # each column's full id, in the legend above the tables
        assert r.checkpoint.label in screen, (columns, r.checkpoint.label)


@pytest.mark.parametrize("columns", [60, 80, 120, 160])
def test_show_of_deepseek_v3_keeps_every_row_and_column_on_a_terminal(columns: int) -> None:
    import inspector

    screen = _on_a_terminal(["deepseek-v3"], columns)
    s = inspector.inspect("deepseek-v3").report.summary
    for header in ("role", "tensors", "parameters", "share", "bytes", "block", "tensors each", "parameters each",
                   "dtype", "elements", "of which parameters"):
        # a header wider than its figures folds at its words when the table would not fit otherwise
        assert header in screen or (columns < 100 and all(w in screen for w in header.split())), (columns, header)
    if columns >= 80:  # narrower, a table whose labels and figures cannot fit whole is printed at its width
        assert not [line for line in _lines(screen) if len(line) > columns], columns
    for r in s.by_role:
        assert r.role in screen and f"{r.bytes:,}" in screen, (columns, r.role)
    for d in s.by_dtype:
        assert d.dtype in screen and f"{d.elements:,}" in screen and f"{d.bytes:,}" in screen, (columns, d.dtype)
    for g in s.layer_groups:
        assert f"{g.parameters_each:,}" in screen and f"{g.bytes_each:,}" in screen, (columns, g)


def test_piped_output_has_no_trailing_spaces(cli) -> None:
    for args in (["deepseek-v3"], ["compare", "llama3-8b", "gpt2"], ["diff", "llama2-7b", "llama3-8b"],
                 ["estimate", "llama3-8b", "--gpu", "24GiB"], ["audit", "llama3-8b"], ["aliases"],
                 ["llama3-8b", "--format", "markdown"]):
        out = cli(*args).out
        assert out and [line for line in out.splitlines() if line != line.rstrip()] == [], args


def _lines(screen: str) -> list[str]:
    """The screen's lines as a person sees them: without the terminal's style codes and trailing spaces."""
    import re

    return [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in screen.splitlines()]


def _bundled_aliases() -> list[str]:
    from inspector.sources.bundled import ALIASES  # the bundled snapshots, as `inspect aliases` lists them

    return sorted(ALIASES)


@pytest.mark.parametrize("command", ["show", "estimate"])
def test_show_and_estimate_of_every_bundled_model_fit_100_columns(command: str) -> None:
    """Issue 41: `estimate` reached 852 characters a line, and 55 of its 79 lines wrapped at 100 columns.
    On a 100-column terminal no line is longer than 100, and nothing is cut: every figure of the model's
    totals (and, for estimate, of its KV cache and fit) is on the screen whole."""
    import inspector

    for alias in _bundled_aliases():
        args = [alias] if command == "show" else ["estimate", alias, "--gpu", "24GiB"]
        screen = _on_a_terminal(args, 100)
        long = [line for line in _lines(screen) if len(line) > 100]
        assert not long, (alias, long[:3])
        r = inspector.inspect(alias)
        assert f"{r.parameters:,}" in screen and f"{r.bytes:,}" in screen, alias
        if command == "estimate":
            figures = {f["name"]: f["value"] for f in inspector.estimate(alias, gpu="24GiB").to_dict()["figures"]}
            assert f"{figures['kv_bytes_per_token']:,}" in screen, alias


# the commands issue 52 tried on a real terminal, and the line the answer must be within the first 5 of
NARROW_COMMANDS = {
    "plan": (["plan", "llama3-70b", "--gpu", "H100,L40S", "--max-gpus", "4"], "× H100-80GB"),
    "estimate": (["estimate", "llama3-8b", "--gpu", "RTX4090"], "fits: "),
    "compare": (["compare", "llama3-8b", "mistral-7b", "qwen2.5-7b"], "Meta-Llama-3-8B"),
    "diff": (["diff", "llama2-7b", "llama3-8b"], "parameters 6,738,415,616 → 8,030,261,248"),
    "audit": (["audit", "llama3-8b"], "checked"),
    "train": (["train", "llama3-8b", "--gpu", "RTX4090"], "does not fit: "),
}


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize("command", sorted(NARROW_COMMANDS))
def test_no_line_is_wider_than_the_terminal_and_the_answer_comes_first(command: str, columns: int) -> None:
    """Issue 52: on a pseudo-terminal of 80, 100 and 120 columns no line of these commands is wider than
    the terminal (plan wrapped every row at 80, compare was 117 wide, diff 116), every figure of the
    piped output is on the screen whole, and the answer is within the first five lines."""
    import re

    args, answer = NARROW_COMMANDS[command]
    screen = re.sub(r"\x1b\[[0-9;]*m", "", _on_a_terminal(args, columns))  # NO_COLOR keeps bold and dim
    lines = screen.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= columns, max(lines, key=len)
    assert any(answer in line for line in lines[:5]), lines[:5]
    piped = subprocess_output(args)
    for figure in set(re.findall(r"\d{1,3}(?:,\d{3})+", piped)):  # every grouped figure, whole
        assert figure in screen, (command, columns, figure)


def subprocess_output(args: list[str]) -> str:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True).stdout


def test_no_color_on_a_terminal() -> None:
    """Issue 52: ``--no-color`` (anywhere on the line) draws no colour on a terminal, as NO_COLOR does;
    without either, the verdict is coloured."""
    import re

    colour = re.compile(r"\x1b\[[0-9;]*3[0-7]m|\x1b\[[0-9;]*9[0-7]m|\x1b\[[0-9;]*38;")
    args = ["estimate", "llama3-8b", "--gpu", "RTX4090"]
    coloured = _on_a_terminal(args, 100, colour=True)
    assert colour.search(coloured)
    assert not colour.search(_on_a_terminal([*args, "--no-color"], 100, colour=True))
    assert not colour.search(_on_a_terminal(["--no-color", *args], 100, colour=True))


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_gguf_fit_table_fits_the_terminal(columns: int, tmp_path: Path) -> None:
    """Issue 52: the "which file fits" table of a folder of GGUF files (written by gguf-py, named as
    llama.cpp's releases name them) within the terminal, every figure whole."""
    import re

    from test_quick import tiny_gguf

    blob = tiny_gguf(tmp_path / "scratch.gguf")
    folder = tmp_path / "gguf"
    folder.mkdir()
    for quant in ("Q4_K_M", "Q5_K_M", "Q8_0", "IQ4_XS"):
        (folder / f"Meta-Llama-3.1-8B-Instruct-{quant}.gguf").write_bytes(blob)
    args = [str(folder), "--gpu", "8GiB"]
    screen = re.sub(r"\x1b\[[0-9;]*m", "", _on_a_terminal(args, columns))
    assert max(len(line.rstrip()) for line in screen.splitlines()) <= columns
    piped = subprocess_output(args)
    for figure in set(re.findall(r"\b\d+(?:\.\d+)?\b", piped.split("\n", 2)[-1])):
        assert figure in screen, figure
