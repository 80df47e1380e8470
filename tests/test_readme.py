"""The README's examples are real output of the real CLI on the bundled snapshots.

Each example is a fenced block after ``<!-- example: inspect ARGS [| grep 'PATTERN'] [| head -n N] -->``.
Run with ``INSPECTOR_UPDATE_README=1`` to rewrite the blocks from the current output (then read the diff).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"<!-- example: (?P<cmd>.+?) -->\n```text\n(?P<body>.*?)```\n<!-- end example -->", re.S)


def render(cli, cmd: str) -> str:
    command, _, head = cmd.partition(" | head -n ")
    command, _, grep = command.partition(" | grep ")
    args = shlex.split(command)
    assert args[0] == "inspect"
    result = cli(*args[1:])
    assert result.code == 0, result.err
    lines = [line.rstrip() for line in result.out.splitlines()]
    if grep:
        pattern = shlex.split(grep)[0]
        lines = [line for line in lines if pattern in line]
    if head:
        lines = lines[: int(head)]
    return "\n".join(lines).rstrip() + "\n"


def test_readme_examples_are_real_output(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    text = README.read_text()
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) >= 3
    updated = text
    for m in blocks:
        actual = render(cli, m.group("cmd"))
        if os.environ.get("INSPECTOR_UPDATE_README"):
            block = f"<!-- example: {m.group('cmd')} -->\n```text\n{actual}```\n<!-- end example -->"
            updated = updated.replace(m.group(0), block)
        else:
            assert m.group("body") == actual, f"README example is stale: {m.group('cmd')}"
    if updated != text:
        README.write_text(updated)


def test_readme_first_screen_has_the_two_setup_commands() -> None:
    head = README.read_text().split("## ", 1)[0]
    commands = [line for line in head.splitlines() if line.startswith("pip install")]
    assert len(commands) == 2
    assert "inspect " in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (README.parent / ".ci" / "run").read_text()
    readme = README.read_text().split("## ", 1)[0]
    test_line = next(line for line in readme.splitlines() if "pytest" in line)
    for step in test_line.split("#")[0].split("&&"):
        words = step.split()
        assert " ".join([*words[:2], "-q", *words[2:]]) in ci or " ".join(words) in ci, step
