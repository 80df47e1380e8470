"""The README and the docs site: their examples are real output, their generated pages current, the site
builds strictly, the README fits a few screens with the two set-up commands on its first.

Each example is a fenced block after ``<!-- example: inspect ARGS [| grep 'PATTERN'] [| head -n N] -->``,
rendered as a person sees it on a 100-column terminal (no colours). Run with ``INSPECTOR_UPDATE_DOCS=1`` to
rewrite the blocks from the current output (then read the diff).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"<!-- example: (?P<cmd>.+?) -->\n```text\n(?P<body>.*?)```\n<!-- end example -->", re.S)
#: the README's budget in lines (issue 41: it was 1,165; the anchors keep theirs at 147–407)
README_LINES = 250


@pytest.fixture
def terminal(monkeypatch):
    """The stdout console as a 100-column terminal without colours: what the docs show."""
    from rich.console import Console

    from inspector.render import output

    screen = Console(force_terminal=True, width=100, color_system=None, soft_wrap=True, highlight=False,
                     markup=False, emoji=False)
    monkeypatch.setitem(output._CONSOLES, (False, False), screen)
    monkeypatch.setenv("COLUMNS", "100")


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


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_are_real_output(cli, terminal, page: Path) -> None:
    text = page.read_text()
    updated = text
    for m in BLOCK.finditer(text):
        actual = render(cli, m.group("cmd"))
        if os.environ.get("INSPECTOR_UPDATE_DOCS"):
            block = f"<!-- example: {m.group('cmd')} -->\n```text\n{actual}```\n<!-- end example -->"
            updated = updated.replace(m.group(0), block)
        else:
            assert m.group("body") == actual, f"{page.name}: example is stale: {m.group('cmd')}"
    if updated != text:
        page.write_text(updated)


def test_examples_fit_100_columns() -> None:
    for page in PAGES:
        for m in BLOCK.finditer(page.read_text()):
            long = [line for line in m.group("body").splitlines() if len(line) > 100]
            assert not long, (page.name, m.group("cmd"), long[:2])


def test_readme_fits_a_few_screens_and_has_an_example_of_each_command() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_LINES
    commands = {shlex.split(m.group("cmd"))[1] for m in BLOCK.finditer(text)}
    assert {"diff", "estimate", "train", "plan", "audit"} <= commands


def test_readme_first_screen_has_the_two_setup_commands() -> None:
    head = README.read_text().split("## ", 1)[0]
    commands = [line for line in head.splitlines() if line.startswith("pip install")]
    assert len(commands) == 2
    assert "inspect " in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_and_builds_the_docs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    readme = README.read_text().split("## ", 1)[0]
    test_line = next(line for line in readme.splitlines() if "pytest" in line)
    for step in test_line.split("#")[0].split("&&"):
        words = step.split()
        assert " ".join([*words[:2], "-q", *words[2:]]) in ci or " ".join(words) in ci, step
    assert "mkdocs build --strict" in ci


def test_generated_pages_are_current() -> None:
    """docs/schema-reference.md and docs/benchmark-results.md are what scripts/make_docs.py writes from
    inspector/schemas/ and benchmarks/results/."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_docs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for name, page in make_docs.PAGES.items():
        assert (ROOT / "docs" / name).read_text() == page(), f"docs/{name} is stale: python scripts/make_docs.py"


def test_every_schema_key_is_in_the_reference() -> None:
    import json

    reference = (ROOT / "docs" / "schema-reference.md").read_text()
    for path in (ROOT / "inspector" / "schemas").glob("*.schema.json"):
        for key in json.loads(path.read_text())["properties"]:
            assert f"| `{key}` |" in reference, (path.name, key)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """Every page in the nav, every link resolving, the API reference generated from the docstrings."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("inspector.api.inspect", "inspector.api.diff", "inspector.api_fit.estimate",
                 "inspector.api_train.train", "inspector.api_fit.plan", "inspector.api.audit"):
        assert f'id="{name}"' in api, name


def test_the_budget_table_names_constants_that_exist_with_the_figures_it_states() -> None:
    """docs/security.md's budget table: every constant it names exists, and the figure beside it is
    that constant's value (in MiB, bytes, a ratio or a count, as written)."""
    import importlib
    import re

    from inspector.sources.transport import HubOptions

    modules = {"transport": "inspector.sources.transport", "safeio": "inspector.safeio",
               "snapshot": "inspector.sources.snapshot", "hub": "inspector.sources.hub",
               "early": "inspector.sources.early",
               "torch_pickle": "inspector.formats.torch_pickle", "pickle_scan": "inspector.formats.pickle_scan",
               "torch_unpickle": "inspector.formats.torch_unpickle",
               "assemble": "inspector.sources.assemble", "output": "inspector.render.output",
               "formats.registry": "inspector.formats.registry", "gguf": "inspector.formats.gguf",
               "data": "inspector.sources.data", "values": "inspector.analysis.comparison.values",
               "budget": "inspector.analysis.serving.budget", "repos.pipeline": "inspector.repos.pipeline",
               "repos.sentence": "inspector.repos.sentence", "lineage": "inspector.analysis.comparison.lineage",
               "api_lineage": "inspector.api_lineage", "stats": "inspector.analysis.facts.stats",
               "samples": "inspector.analysis.comparison.samples"}
    text = (ROOT / "docs" / "security.md").read_text()
    table = text[text.index("  | what | budget | where |"):]
    table = table[:table.index("\n\n")]
    rows = [line for line in table.splitlines()[2:] if "`" in line.split("|")[3]]
    assert len(rows) >= 10
    values = {"HubOptions.workers": HubOptions().workers}
    for line in rows:
        figure, where = line.split("|")[2], line.split("|")[3]
        last = None
        for name in re.findall(r"`([A-Za-z_.]+)`", where):
            module, _, attr = name.rpartition(".")
            if name in modules:  # a module named whole: its constants are the figures' own names
                continue
            if name in values:
                value = values[name]
            elif module:
                value = getattr(importlib.import_module(modules[module]), attr)
                last = module
            else:
                value = getattr(importlib.import_module(modules[last or ""]), attr)
            # a table of budgets (a mapping of records, or one record): every figure in it is stated
            parts = [x for v in (value.values() if isinstance(value, dict) else [value])
                     for x in (v if isinstance(v, tuple) else [v])]
            for value in parts:
                if isinstance(value, float):
                    shown = {f"{value:,}", f"{value}", f"{value:g} s"}
                else:
                    shown = {f"{value // 2**20} MiB", f"{value // 2**10} KiB", f"{value // 2**30} GiB", f"{value:,}",
                             f"{value:,} B", f"{value}:1", f"{value}"}
                assert any(s in figure for s in shown), (name, value, figure)


def test_the_api_page_documents_the_public_names_only() -> None:
    """Issue 52: the API reference lists the public functions and results (``inspector.__all__``), not the
    module's internals."""
    import inspect as pyinspect

    import inspector

    page = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    members = set(re.findall(r"^        - (\w+)$", page, re.MULTILINE))
    public = {name for name in inspector.__all__ if not name.startswith("_")
              and name not in ("Checkpoint", "HubOptions", "InspectorError")}  # documented on their own pages
    functions = {name for name in public if pyinspect.isfunction(getattr(inspector, name))}
    assert members == public, (members ^ public)
    assert functions <= members
