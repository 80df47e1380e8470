"""The shape CI keeps: which layer may import which, no import cycles, who may write to the terminal
and to files, no explicit ``Any`` where it must not be. Each check is run once on the package and
once on a planted violation, to show it can fail."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "inspector"

#: the layers, and the layers each may import (ARCHITECTURE.md: cli → render → analysis → sources |
#: formats → model/errors/safeio); the package's __init__ is the public API, above all but the CLI
BASE = ("inspector.model", "inspector.errors", "inspector.safeio", "inspector.pause", "inspector.strategies")
ALLOWED: dict[str, set[str]] = {
    "base": {"base"},
    "formats": {"base", "formats"},
    "repos": {"base", "repos"},
    "sources": {"base", "formats", "repos", "sources"},
    "analysis": {"base", "formats", "repos", "analysis"},
    "results": {"base", "formats", "repos", "analysis", "results"},
    "render": {"base", "formats", "repos", "analysis", "results", "render"},
    "api": {"base", "formats", "repos", "sources", "analysis", "results", "render", "api"},
    "cli": {"base", "formats", "repos", "sources", "analysis", "results", "render", "api", "cli"},
}


def layer_of(module: str) -> str:
    if module in BASE:
        return "base"
    if module in ("inspector", "inspector.api", "inspector.__main__") or module.startswith("inspector.api_"):
        return "cli" if module == "inspector.__main__" else "api"
    part = module.split(".")[1]
    if part in ("formats", "repos", "sources", "analysis", "results", "render", "cli"):
        return part
    raise AssertionError(f"{module}: in no layer; put it in one of the packages")


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> set[str]:
    """Every ``inspector`` module ``path`` imports, at module level or inside a function."""
    this = module_name(path, root)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "inspector")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            if base.split(".")[0] != "inspector":
                continue
            for alias in node.names:  # `from inspector.formats import gguf` imports a module
                candidate = f"{base}.{alias.name}"
                found.add(candidate if _is_module(candidate, root) else base)
    return {m for m in found if m != this}


def _is_module(name: str, root: Path) -> bool:
    rel = Path(*name.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def layer_violations(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        if "snapshots" in path.parts:
            continue
        this = module_name(path, root)
        for imported in sorted(imports_of(path, root)):
            if layer_of(imported) not in ALLOWED[layer_of(this)]:
                out.append(f"{this} ({layer_of(this)}) imports {imported} ({layer_of(imported)})")
    return out


def cycles(root: Path) -> list[list[str]]:
    """Import cycles among modules (package __init__ files left out: they import nothing of ours)."""
    graph = {module_name(p, root): {m for m in imports_of(p, root) if _is_module(m, root)}
             for p in root.rglob("*.py") if "snapshots" not in p.parts}
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_every_import_goes_down_the_layers() -> None:
    assert layer_violations(PACKAGE) == []


def test_no_import_cycles() -> None:
    assert cycles(PACKAGE) == []


def test_the_layer_check_catches_a_planted_violation(tmp_path: Path) -> None:
    fake = tmp_path / "inspector"
    for pkg in ("analysis", "sources"):
        (fake / pkg).mkdir(parents=True)
        (fake / pkg / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "analysis" / "x.py").write_text("def f():\n    from inspector.sources import y\n")
    (fake / "sources" / "y.py").write_text("from inspector.sources.z import q\n")
    (fake / "sources" / "z.py").write_text("from inspector.sources.y import q\n")
    assert layer_violations(fake) == ["inspector.analysis.x (analysis) imports inspector.sources.y (sources)"]
    assert cycles(fake) == [["inspector.sources.y", "inspector.sources.z", "inspector.sources.y"]]


# --- analysis/: a package per domain, each importing only the domains below it --------------------------

#: the domains of analysis/ and the domains each may import (docs/architecture.md): what is stored under the
#: architecture under serving under training; the audit's checks over the stored facts; comparison over the
#: facts, the architecture, serving and the checks; ``analysis.knobs`` (what to change for an answer to fit)
#: above serving and training
DOMAINS: dict[str, set[str]] = {
    "facts": {"facts"},
    "structure": {"facts", "structure"},
    "serving": {"facts", "structure", "serving"},
    "training": {"facts", "structure", "serving", "training"},
    "checks": {"facts", "checks"},
    "comparison": {"facts", "structure", "serving", "checks", "comparison"},
    "knobs": {"facts", "structure", "serving", "training", "knobs"},
}


def domain_of(module: str) -> str:
    part = module.split(".")[2]
    if part in DOMAINS:
        return part
    raise AssertionError(f"{module}: in no domain of analysis/; put it in one of {sorted(DOMAINS)}")


def domain_violations(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "analysis").rglob("*.py")):
        this = module_name(path, root)
        if this == "inspector.analysis":
            continue
        for imported in sorted(m for m in imports_of(path, root) if m.startswith("inspector.analysis.")):
            if domain_of(imported) not in DOMAINS[domain_of(this)]:
                out.append(f"{this} ({domain_of(this)}) imports {imported} ({domain_of(imported)})")
    return out


def test_each_domain_of_analysis_imports_only_the_domains_below_it() -> None:
    assert domain_violations(PACKAGE) == []
    assert sorted(p.name for p in (PACKAGE / "analysis").iterdir() if p.suffix == ".py") == ["__init__.py", "knobs.py"]


def test_the_domain_check_catches_a_planted_violation(tmp_path: Path) -> None:
    fake = tmp_path / "inspector"
    for pkg in ("facts", "training"):
        (fake / "analysis" / pkg).mkdir(parents=True)
        (fake / "analysis" / pkg / "__init__.py").write_text("")
    (fake / "analysis" / "__init__.py").write_text("")
    (fake / "analysis" / "facts" / "report.py").write_text(
        "def f():\n    from inspector.analysis.training import train\n")
    (fake / "analysis" / "training" / "train.py").write_text("from inspector.analysis.facts import report\n")
    assert domain_violations(fake) == [
        "inspector.analysis.facts.report (facts) imports inspector.analysis.training.train (training)"]


# --- writes: ruff's banned-api rule (pyproject.toml) and what ruff cannot see ------------------------

#: Path methods that change the file system: only the path guard (safeio) calls them
WRITING_METHODS = frozenset({"write_text", "write_bytes", "mkdir", "unlink", "rmdir", "rename", "touch",
                             "symlink_to", "hardlink_to", "chmod"})


def write_violations(root: Path) -> list[str]:
    """Calls ruff cannot ban by name: ``open(…)`` for writing and the writing Path methods,
    anywhere but ``inspector/safeio.py``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "safeio.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(root.parent)}:{node.lineno}"
            if isinstance(node.func, ast.Attribute) and node.func.attr in WRITING_METHODS:
                out.append(f"{where}: .{node.func.attr}()")
            if isinstance(node.func, ast.Name) and node.func.id == "open" and _write_mode(node):
                out.append(f"{where}: open(…, {_write_mode(node)!r})")
    return out


def _write_mode(call: ast.Call) -> str | None:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    text = mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "r"
    return text if set(text) & set("wax+") else None


def test_only_the_path_guard_writes_files() -> None:
    assert write_violations(PACKAGE) == []


def test_the_write_check_catches_a_planted_write(tmp_path: Path) -> None:
    fake = tmp_path / "inspector"
    (fake / "analysis").mkdir(parents=True)
    (fake / "analysis" / "x.py").write_text("from pathlib import Path\nPath('a').write_text('x')\n"
                                            "open('b', 'wb')\nopen('c')\n")
    assert write_violations(fake) == ["inspector/analysis/x.py:2: .write_text()",
                                      "inspector/analysis/x.py:3: open(…, 'wb')"]


def _ruff(path_in_repo: str, source: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--quiet", "--output-format", "concise",
                           "--stdin-filename", path_in_repo, "-"], input=source, capture_output=True, text=True,
                          cwd=ROOT)
    return done.stdout


@pytest.mark.parametrize(("where", "source", "rule"), [
    ("inspector/analysis/planted.py", 'print("x")\n', "T201"),
    ("inspector/sources/planted.py", 'import sys\n\nsys.stderr.write("x")\n', "TID251"),
    ("inspector/formats/planted.py", 'import os\n\nos.replace("a", "b")\n', "TID251"),
    ("inspector/cli/planted.py", 'import shutil\n\nshutil.rmtree("x")\n', "TID251"),
    ("inspector/analysis/planted.py", "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n"
                                                            for i in range(20)) + "    return 0\n", "C901"),
])
def test_each_ruff_rule_catches_a_planted_violation(where: str, source: str, rule: str) -> None:
    assert rule in _ruff(where, source)


def test_the_render_layer_may_write_to_the_terminal() -> None:
    assert _ruff("inspector/render/planted.py", 'import sys\n\nsys.stdout.write("x")\n') == ""


# --- no explicit Any in analysis/ and render/: mypy's disallow_any_explicit (pyproject.toml) --------


def test_mypy_refuses_an_explicit_any_in_analysis(tmp_path: Path) -> None:
    from helpers import mypy_on_planted

    said = mypy_on_planted("inspector/analysis/_planted_any.py",
                           "from typing import Any\n\n\ndef f(x: Any) -> int:\n    return 1\n", tmp_path)
    assert 'Explicit "Any" is not allowed' in said, said


# --- the estimate's figures are read from its typed parts, never by name ------------------------------

ESTIMATE = Path("analysis", "serving", "estimate.py")


def figure_names(root: Path) -> set[str]:
    """The names the estimate gives its figures: the first argument of each ``Figure(...)`` call in
    analysis/serving/estimate.py."""
    names = set()
    for node in ast.walk(ast.parse((root / ESTIMATE).read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Figure" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.add(node.args[0].value)
    return names


def figure_lookups(root: Path) -> list[str]:
    """An estimate figure read by its name outside the estimate's module: a ``.name`` compared with a
    figure's name (``f.name == "kv_bytes"``), or a figure's name passed to a look-up on an estimate or its
    figures (``est.get("kv_bytes")``, ``estimate.find(...)``, ``figures.get(...)``). JSON documents the
    renderers read (the fit's or a plan row's fields share some names) are records of their own."""
    names = figure_names(root)
    out = []
    for path in sorted(root.rglob("*.py")):
        if path == root / ESTIMATE or "snapshots" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            args: list[ast.expr] = []
            if isinstance(node, ast.Compare) and any(isinstance(x, ast.Attribute) and x.attr == "name"
                                                     for x in (node.left, *node.comparators)):
                args = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("get", "find", "figure") \
                    and any(word in ast.unparse(node.func.value) for word in ("est", "figure")):
                args = list(node.args)
            for arg in args:
                if isinstance(arg, ast.Constant) and arg.value in names:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno}: {arg.value!r}")
    return out


def test_no_figure_is_looked_up_by_name_outside_the_estimate() -> None:
    assert figure_lookups(PACKAGE) == []


def test_the_figure_check_catches_a_planted_look_up(tmp_path: Path) -> None:
    fake = tmp_path / "inspector"
    (fake / ESTIMATE).parent.mkdir(parents=True)
    (fake / "render").mkdir()
    (fake / ESTIMATE).write_text('Figure("kv_bytes", 1)\n')
    (fake / "render" / "x.py").write_text('a = est.get("kv_bytes")\nb = [f for f in fs if f.name == "kv_bytes"]\n')
    assert figure_lookups(fake) == ["inspector/render/x.py:1: 'kv_bytes'", "inspector/render/x.py:2: 'kv_bytes'"]


def test_the_fit_is_one_module() -> None:
    """Every function that fits a model to a budget lives in analysis/serving/fit.py (engines as strategies in the
    analysis/serving/engines/ package); no other module defines one."""
    elsewhere = [f"{path.relative_to(ROOT)}: {node.name}" for path in sorted(PACKAGE.rglob("*.py"))
                 if path.name != "fit.py" and "engines" not in path.parts and "snapshots" not in path.parts
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.FunctionDef) and ("fit" in node.name.split("_") and "json" not in node.name
                                                            and "table" not in node.name and "html" not in node.name)]
    assert elsewhere == []


def test_analysis_dispatches_on_the_kind_never_on_file_names() -> None:
    """A checkpoint's kind (``Checkpoint.kind``: model, pipeline, modules) is decided from the index it
    was read from, by the repo kinds' registry (``inspector.repos``); no analysis or render module compares the
    index's file name to learn it (issue 40: five sites did)."""
    offenders = [f"{path.relative_to(ROOT)}:{n}" for layer in ("analysis", "render")
                 for path in sorted((PACKAGE / layer).glob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if "model_index.json" in line or "modules.json" in line]
    assert offenders == []


def test_a_checkpoint_is_a_few_typed_parts_not_a_wide_record() -> None:
    """``Checkpoint`` holds what it is and its parts (issue 40: 19 fields, widened for each kind):
    where it came from, the small files beside it and what a lenient read found are records of their
    own; at most 10 fields."""
    import dataclasses

    from inspector.model import Checkpoint, Problems, Provenance, SideFiles

    names = [f.name for f in dataclasses.fields(Checkpoint)]
    assert len(names) <= 10, names
    assert {"provenance", "side", "problems"} <= set(names)
    assert all(dataclasses.is_dataclass(t) for t in (Provenance, SideFiles, Problems))


def test_what_a_read_does_with_a_problem_is_a_sink_decided_once_not_a_flag() -> None:
    """Issue 40: a ``lenient`` flag ran through 21 signatures. The audit's leniency is now a problem sink
    (``errors.ProblemSink``) decided where a model is opened and carried by the source; no function
    below the opening seam (``api.open_model``, ``resolve.open_checkpoint``, the CLI's opening) takes a
    ``lenient`` parameter, and no reader takes a ``strict`` one."""
    seams = {("api.py", "open_model"), ("resolve.py", "open_checkpoint"), ("opening.py", "open_model"),
             ("opening.py", "load")}
    found = [f"{path.relative_to(ROOT)}:{node.name}" for path in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
             and (path.name, node.name) not in seams
             and {a.arg for a in (*node.args.args, *node.args.kwonlyargs)} & {"lenient", "strict"}]
    assert found == []


def test_the_audit_sink_collects_and_the_default_raises(tmp_path: Path) -> None:
    """The two sinks on one broken folder: the default raises the header's error at once; the audit's
    keeps it, reads the good file, and has every top-level safetensors file read."""
    from helpers import raw_header

    from inspector.errors import COLLECT, UnknownDtype
    from inspector.sources.resolve import open_local

    (tmp_path / "a.safetensors").write_bytes(raw_header({"x": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}))
    (tmp_path / "b.safetensors").write_bytes(raw_header({}))
    with pytest.raises(UnknownDtype):
        open_local(tmp_path)
    c = open_local(tmp_path, problems=COLLECT)
    assert [e.rule for e in c.problems.header_errors] == ["unknown-dtype"] and [h.file for h in c.headers] == \
        ["b.safetensors"]


def gc_calls(root: Path) -> list[str]:
    """Every use of ``gc`` outside ``pause.py``, and every use of the pause outside the two entry points."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if rel != "pause.py" and isinstance(node, ast.Import | ast.ImportFrom) and (
                    any(a.name == "gc" for a in node.names) if isinstance(node, ast.Import) else node.module == "gc"):
                found.append(f"{rel}: imports gc")
            library = rel.startswith("api") and "/" not in rel  # the api layer's modules: api.py, api_fit.py, …
            if not library and rel not in ("cli/launch.py", "pause.py") and isinstance(node, ast.ImportFrom) and (
                    node.module == "inspector.pause" or (node.module == "inspector" and
                                                         any(a.name == "pause" for a in node.names))):
                found.append(f"{rel}: pauses the collector below the entry points")
    return found


def test_the_collector_is_paused_in_one_place_at_the_two_entry_points() -> None:
    """Issue 39: ``gc`` is touched only by ``inspector/pause.py``, used by the console script
    (``cli/launch.py``) and the library (the api layer: ``api.py``, ``api_fit.py``, ``api_train.py``) and nowhere
    below them."""
    assert gc_calls(PACKAGE) == []
    paused = {node.name for module in ("api.py", "api_fit.py", "api_train.py")
              for node in ast.parse((PACKAGE / module).read_text()).body if isinstance(node, ast.FunctionDef)
              and any(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "paused" for d in node.decorator_list)}
    assert {"open_model", "inspect", "diff", "compare", "estimate", "audit", "train", "plan", "save", "files"} <= paused


def test_the_collector_check_catches_a_planted_pause(tmp_path: Path) -> None:
    root = tmp_path / "inspector"
    (root / "analysis").mkdir(parents=True)
    (root / "analysis" / "stats.py").write_text("import gc\nfrom inspector.pause import paused\n")
    (root / "pause.py").write_text("import gc\n")
    assert gc_calls(root) == ["analysis/stats.py: imports gc",
                              "analysis/stats.py: pauses the collector below the entry points"]


def test_a_library_call_runs_paused_and_gives_the_collector_back(monkeypatch) -> None:
    import gc

    import inspector
    from inspector.analysis.facts import report

    seen: list[bool] = []
    real = report.build_report
    monkeypatch.setattr(report, "build_report", lambda c: seen.append(gc.isenabled()) or real(c))
    assert gc.isenabled()
    inspector.inspect("llama3-8b")
    assert seen == [False] and gc.isenabled()


# --- rooms, not strings: a kind is asked, never compared by name outside its own module (issue 49) ----------------


def _literals(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _kind_like(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "kind") or (isinstance(node, ast.Name)
                                                                          and node.id == "kind")


def _named(node: ast.AST, *words: str) -> bool:
    """``x.kernel`` or ``kernel`` (for ``words`` ("kernel", ...)): what a name is compared against."""
    return (isinstance(node, ast.Attribute) and node.attr in words) or (isinstance(node, ast.Name) and node.id in words)


def kind_comparisons(root: Path) -> list[str]:
    """Comparisons of a mixer's or a repo's kind with a mixer kind's or a repo kind's name (``m.kind == "mla"``,
    ``checkpoint.kind == "pipeline"``), of a loss kernel or a method with its name (``s.kernel == "fused"``,
    ``o.method == "full"``), and of
    anything with an engine's, an optimizer's or a precision's name (``engine == "vllm"``, ``precision ==
    "fp32"``), outside the modules that define them."""
    from inspector import repos
    from inspector.analysis.serving.engines import ENGINES
    from inspector.analysis.structure.mixers import MIXERS
    from inspector.analysis.training.losses import KERNELS
    from inspector.analysis.training.methods import METHODS
    from inspector.analysis.training.optimizers import OPTIMIZERS
    from inspector.analysis.training.precisions import PRECISIONS

    names = set(ENGINES) | set(OPTIMIZERS) | set(PRECISIONS)
    kinds = set(MIXERS) | set(repos.KINDS)
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel.startswith(("inspector/analysis/serving/engines/", "inspector/snapshots/", "inspector/repos/")) \
                or rel in ("inspector/analysis/structure/mixers.py", "inspector/analysis/training/optimizers.py",
                           "inspector/analysis/training/losses.py", "inspector/analysis/training/precisions.py",
                           "inspector/analysis/training/methods.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            parts = [node.left, *node.comparators]
            found = set().union(*map(_literals, parts))
            if found & names or (found & kinds and any(map(_kind_like, parts))) or (
                    found & set(KERNELS) and any(_named(p, "kernel", "loss") for p in parts)) or (
                    found & set(METHODS) and any(_named(p, "method") for p in parts)):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_kind_is_compared_by_name_outside_its_module() -> None:
    assert kind_comparisons(PACKAGE) == []


def test_the_kind_check_sees_a_comparison(tmp_path: Path) -> None:
    fake = tmp_path / "inspector"
    (fake / "analysis").mkdir(parents=True)
    (fake / "analysis" / "x.py").write_text('a = m.kind == "mla"\nb = engine in ("vllm", "x")\n'
                                           'c = o.method == "full"\nd = checkpoint.kind == "pipeline"\n'
                                           'e = o.precision == "fp32"\nf = s.kernel == "fused"\n'
                                           'g = layout == "fused"\n')
    assert kind_comparisons(fake) == ["inspector/analysis/x.py:1: m.kind == 'mla'",
                                      "inspector/analysis/x.py:2: engine in ('vllm', 'x')",
                                      "inspector/analysis/x.py:3: o.method == 'full'",
                                      "inspector/analysis/x.py:4: checkpoint.kind == 'pipeline'",
                                      "inspector/analysis/x.py:5: o.precision == 'fp32'",
                                      "inspector/analysis/x.py:6: s.kernel == 'fused'"]


# --- sizes: no module over 600 lines, no function over 80 (issue 49) --------------------------------------------

MODULE_LINES = 600
FUNCTION_LINES = 80
#: the functions over the budget today, with their length: each is to be split, and this list may only shrink
#: (a function on it may not grow; one not on it may not pass the budget)
OVER_BUDGET: dict[str, int] = {}


def sizes(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(modules over ``MODULE_LINES``, functions over ``FUNCTION_LINES``), each with its length."""
    modules, functions = {}, {}
    for path in sorted(root.rglob("*.py")):
        if "snapshots" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        if len(text.splitlines()) > MODULE_LINES:
            modules[rel] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    functions[f"{rel}:{node.name}"] = length
    return modules, functions


def test_no_module_is_over_600_lines_and_no_function_grows_past_80() -> None:
    modules, functions = sizes(PACKAGE)
    assert modules == {}
    grown = {name: length for name, length in functions.items() if length > OVER_BUDGET.get(name, FUNCTION_LINES)}
    assert grown == {}
    assert set(OVER_BUDGET) <= set(functions), "a function was split: take it off OVER_BUDGET"


#: the most fields a record of the package may have (issue 49: records that stay narrow: a core plus parts)
RECORD_FIELDS = 16
#: the records over it today, with their field counts: each is to be split, and this list may only shrink
WIDE_RECORDS: dict[str, int] = {}


def record_fields(root: Path) -> dict[str, int]:
    """Every dataclass of the package with more than ``RECORD_FIELDS`` fields (class-level annotations, ClassVar
    aside), with its count."""
    wide = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef) or not any(
                    ast.unparse(d.func if isinstance(d, ast.Call) else d) == "dataclass" for d in node.decorator_list):
                continue
            count = sum(1 for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                        and "ClassVar" not in ast.unparse(s.annotation))
            if count > RECORD_FIELDS:
                wide[f"{path.relative_to(root).as_posix()}:{node.name}"] = count
    return wide


def test_no_record_grows_past_its_field_budget() -> None:
    """A capability is a part of its own, not more flags on a record (``Fit`` went from 35 fields to a core of 15
    with its weights, KV cache, limits, runtime and stages as parts)."""
    wide = record_fields(PACKAGE)
    grown = {name: n for name, n in wide.items() if n > WIDE_RECORDS.get(name, RECORD_FIELDS)}
    assert grown == {}
    assert set(WIDE_RECORDS) <= set(wide), "a record was narrowed: take it off WIDE_RECORDS"


def test_the_field_budget_sees_a_wide_record(tmp_path: Path) -> None:
    root = tmp_path / "inspector"
    root.mkdir()
    fields = "".join(f"    f{i}: int\n" for i in range(17))
    (root / "wide.py").write_text("from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Wide:\n"
                                  + fields + "\n\n@dataclass\nclass Narrow:\n    x: int\n")
    assert record_fields(root) == {"wide.py:Wide": 17}


def test_the_size_check_sees_a_long_module_and_function(tmp_path: Path) -> None:
    root = tmp_path / "inspector"
    root.mkdir()
    (root / "big.py").write_text("def f():\n" + "    x = 1\n" * 90 + "\n" * 520)
    modules, functions = sizes(root)
    assert modules == {"big.py": 611} and functions == {"big.py:f": 91}


# --- imports inside functions: each defers something, and says what (issue 49) -----------------------------------


def _lazy_imports():  # scripts/lazy_imports.py, the one place that finds and measures them
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import lazy_imports
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return lazy_imports


def test_every_import_inside_a_function_defers_something_and_carries_its_figure() -> None:
    """An import inside a function is there for start-up alone: it must load something its module has not
    loaded by the time it is imported (a fresh process per module says), and carry the milliseconds it keeps
    out of start-up on the line above (``# deferred: N ms at import (modules)``, written by
    ``scripts/lazy_imports.py --write``; the figure is this machine's, not asserted)."""
    lazy = _lazy_imports()
    assert lazy.uncommented() == []
    assert lazy.redundant() == []


def test_the_lazy_import_checks_see_an_idle_and_an_unexplained_import(tmp_path: Path) -> None:
    lazy = _lazy_imports()
    fake = tmp_path / "inspector"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "x.py").write_text("import os\n\n\ndef f():\n    # deferred: 3 ms at import (os)\n    import os\n"
                               "    return os\n\n\ndef g():\n    import colorsys\n    return colorsys\n")
    assert lazy.redundant(fake) == ["inspector/x.py:6: os"]
    assert lazy.uncommented(fake) == ["inspector/x.py:11: colorsys"]
