"""The package's imports inside functions, and what each one defers.

An import inside a function is there for start-up alone: it keeps a module (rich for `--json`, huggingface_hub for
a local folder, numpy for everything but `diff --values`) out of the processes that never need it. Each block of
such imports carries the figure that justifies it, on the comment line above it::

    # deferred: 38 ms at import (rich.console, rich.table)

This script measures them (a fresh process imports the module, then the block's targets, timed), and finds the
imports that defer nothing: their target is already loaded once their module is (they belong at the top).

    python scripts/lazy_imports.py            # list every block: its module, targets, ms, and the redundant ones
    python scripts/lazy_imports.py --write    # write the comment of each block without one, measured now
    python scripts/lazy_imports.py --write --all   # re-measure and rewrite every block's

tests/test_layers.py holds every block to its comment and to deferring something (``redundant``), not to its
figure: a figure is a start-up time on this machine, for benchmarks/ and this script, never a timed test.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "inspector"
COMMENT = re.compile(r"^\s*# deferred: (\d+(?:\.\d+)?) ms at import \((.+)\)$")


@dataclass(frozen=True)
class Block:
    """Consecutive import statements inside one function: the lines they span and the modules they import."""

    path: Path
    module: str  # the module they are in
    first: int  # 1-based line of the first statement
    last: int
    targets: tuple[str, ...]  # modules imported (``from x import y``: x.y where that is a module, else x)
    indent: str
    #: what each statement asks for: (module, names) for ``from module import names``, (module, ()) for ``import``
    asks: tuple[tuple[str, tuple[str, ...]], ...] = ()


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    if not name.startswith("inspector"):
        return False
    rel = Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def _asks(node: ast.Import | ast.ImportFrom, package: str) -> list[tuple[str, tuple[str, ...]]]:
    if isinstance(node, ast.Import):
        return [(a.name, ()) for a in node.names]
    return [(_base(node, package), tuple(a.name for a in node.names))]


def _base(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, base]) if base else ".".join(anchor)
    return base


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, base]) if base else ".".join(anchor)
    out = []
    for alias in node.names:
        full = f"{base}.{alias.name}"
        out.append(full if _is_module(full) else base)
    return out


def blocks(root: Path = PACKAGE) -> Iterator[Block]:
    """Every block of consecutive import statements in a function body (or a branch of one), in file order."""
    seen: set[tuple[Path, int]] = set()  # a nested function's blocks are met from it and from the one around it
    for path in sorted(root.rglob("*.py")):
        if "snapshots" in path.parts:
            continue
        text = path.read_text()
        lines = text.splitlines()
        module = module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                for field in ("body", "orelse", "finalbody"):
                    body = getattr(node, field, None)
                    if not isinstance(body, list) or (node is not fn and isinstance(
                            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)):
                        continue
                    run: list[ast.Import | ast.ImportFrom] = []
                    for stmt in [*body, None]:
                        if isinstance(stmt, ast.Import | ast.ImportFrom):
                            run.append(stmt)
                            continue
                        if run and (path, run[0].lineno) not in seen:
                            first = run[0].lineno
                            seen.add((path, first))
                            yield Block(path, module, first, run[-1].end_lineno or run[-1].lineno,
                                        tuple(dict.fromkeys(t for s in run for t in _targets(s, package))),
                                        lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())],
                                        tuple(a for st in run for a in _asks(st, package)))
                        run = []


_PROBE = """
import json, sys, time
import {module}
before = set(sys.modules)
start = time.perf_counter()
exec({code!r}, dict(vars({module})))  # the block itself: `from huggingface_hub import X` loads what X needs
took = time.perf_counter() - start
print(json.dumps({{"loaded": sorted(t for t in {targets!r} if t in before), "ms": took * 1000,
                  "added": len(set(sys.modules) - before)}}))
"""


def measure(block: Block) -> dict[str, object]:
    """A fresh process imports the block's module, then runs the block: which of its targets were loaded
    already, and the milliseconds and modules the block added."""
    lines = block.path.read_text().splitlines()[block.first - 1:block.last]
    code = textwrap.dedent("\n".join(lines))
    probe = _PROBE.format(module=block.module, targets=list(block.targets), code=code)
    done = subprocess.run([sys.executable, "-c", probe],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    if done.returncode:
        raise SystemExit(f"{block.module}: {done.stderr.strip().splitlines()[-1]}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


_SATISFIED = """
import json, sys
import {module}
def done(module, names):  # the statement would load nothing: the module, and each name, already there
    m = sys.modules.get(module)
    return m is not None and all(n in vars(m) or f"{{module}}.{{n}}" in sys.modules for n in names)
print(json.dumps([all(done(m, n) for m, n in block) for block in {asks!r}]))
"""


def redundant(root: Path = PACKAGE) -> list[str]:
    """Imports inside functions that would load nothing once their module is imported (every module they name
    loaded, every name they take already bound there: a lazily loading package's attribute counts only once
    loaded): they defer nothing. One process a module."""
    by_module: dict[str, list[Block]] = {}
    for b in blocks(root):
        by_module.setdefault(b.module, []).append(b)
    out = []
    for module, found in sorted(by_module.items()):
        asks = [[(m, list(n)) for m, n in b.asks] for b in found]
        done = subprocess.run([sys.executable, "-c", _SATISFIED.format(module=module, asks=asks)],
                              capture_output=True, text=True, cwd=root.parent, timeout=120)
        if done.returncode:
            raise SystemExit(f"{module}: {done.stderr.strip().splitlines()[-1]}")
        out += [f"{b.path.relative_to(root.parent)}:{b.first}: {', '.join(b.targets)}"
                for b, idle in zip(found, json.loads(done.stdout), strict=True) if idle]
    return out


def uncommented(root: Path = PACKAGE) -> list[str]:
    """Blocks without their ``# deferred: N ms at import (targets)`` line directly above."""
    out = []
    for b in blocks(root):
        above = b.path.read_text().splitlines()[b.first - 2] if b.first > 1 else ""
        if not COMMENT.match(above):
            out.append(f"{b.path.relative_to(root.parent)}:{b.first}: {', '.join(b.targets)}")
    return out


def _comment(block: Block, ms: float) -> str:
    names = ", ".join(block.targets)
    line = f"{block.indent}# deferred: {ms:.0f} ms at import ({names})"
    if len(line) > 120:
        keep = []
        for t in block.targets:
            if len(f"{block.indent}# deferred: {ms:.0f} ms at import ({', '.join([*keep, t])}, …)") > 120:
                break
            keep.append(t)
        line = f"{block.indent}# deferred: {ms:.0f} ms at import ({', '.join(keep)}, …)"
    return line


def write(root: Path = PACKAGE, *, every: bool = False) -> None:
    """The comment of each block that has none written with the figure measured now (``every``: each block's
    replaced too), file by file from the bottom up so that line numbers hold. A figure is re-measured only when
    asked: start-up times move by a few ms from run to run, and a figure's churn is no change."""
    missing = set(uncommented(root))
    found = [b for b in blocks(root) if every or f"{b.path.relative_to(root.parent)}:{b.first}: "
             f"{', '.join(b.targets)}" in missing]
    by_path: dict[Path, list[tuple[Block, float]]] = {}
    for b in found:
        by_path.setdefault(b.path, []).append((b, float(measure(b)["ms"])))  # type: ignore[arg-type]
    for path, items in by_path.items():
        lines = path.read_text().splitlines()
        for b, ms in sorted(items, key=lambda x: -x[0].first):
            at = b.first - 1
            if at > 0 and COMMENT.match(lines[at - 1]):
                lines[at - 1] = _comment(b, ms)
            else:
                lines.insert(at, _comment(b, ms))
        path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the comment of each block that has none")
    parser.add_argument("--all", action="store_true", help="with --write: re-measure and rewrite every block's")
    args = parser.parse_args()
    if args.write:
        write(every=args.all)
        return
    for b in blocks():
        m = measure(b)
        print(f"{b.path.relative_to(ROOT)}:{b.first}  {float(m['ms']):7.1f} ms  +{m['added']} modules  "  # type: ignore[arg-type]
              f"{', '.join(b.targets)}{'  (already loaded: ' + ', '.join(m['loaded']) + ')' if m['loaded'] else ''}")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
