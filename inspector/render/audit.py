"""Renderers for ``inspect audit``: the findings table, its JSON document and markdown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it; the result
    # types of the other commands are not imported by a plain `inspect MODEL` either
    from rich.console import RenderableType

    from inspector.analysis.checks.audit import AuditResult

from inspector.render.output import MAX_TABLE_ROWS, capped, md_table

# --- audit ----------------------------------------------------------------------------------------


def audit_table(result: AuditResult) -> RenderableType:
    # deferred: 34 ms at import (rich.console, rich.table, rich.text)
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    inp = result.input
    head = Text()
    head.append(f"audit {sanitize(inp.label)}", style="bold")
    bundled = inp.checkpoint is not None and inp.checkpoint.provenance.origin == "bundled"
    location = "bundled header snapshot" if bundled else inp.location
    head.append(f"  ({sanitize(location)})", style="dim")
    parts: list[RenderableType] = [head]
    checked = result.checked
    parts.append(Text(f"checked {checked.files} files, {checked.headers} headers, {checked.tensors:,} tensors"))
    imports = result.imports
    if imports:  # the pickles' inventory: every global named, refused ones each on a line
        refused = [(file, i) for file, i in imports if not i.allowed]
        parts.append(Text(f"pickle globals: {len(imports) - len(refused)} allowed, {len(refused)} refused "
                          "(read from the opcodes, nothing run)"))
        for file, i in refused[:20]:
            parts.append(Text(sanitize(f"  refused {i.module}.{i.name} in {file} ({i.pickle})"), style="red"))
    if not result.findings:
        parts.append(Text("clean: no findings", style="green"))
        return Group(*parts)
    # deferred: 38 ms at import (inspector.analysis.checks.audit)
    from inspector.analysis.checks.audit import repeats

    t = Table(show_edge=False, pad_edge=False)
    for col in ("severity", "code", "where", "finding"):
        t.add_column(col)
    style = {"error": "red", "warning": "yellow", "info": "dim"}
    rows = repeats(result.findings)
    for r in rows[:MAX_TABLE_ROWS]:  # by severity, the worst first; per-layer repeats on one row
        f = r.first
        where = Text(sanitize(r.tensor or ""))
        if r.count > 1:
            where.append(f" ×{r.count}", style="bold")
        files = sanitize(r.files[0]) if len(r.files) == 1 else f"{len(r.files)} files" if r.files else ""
        if files:
            where.append(("\n" if r.tensor else "") + files, style="dim")
        t.add_row(Text(f.severity, style=style[f.severity]), f.code, where, sanitize(f.message))
    parts += [t, *capped(len(rows), "findings", "--json")]
    verdict = "no errors" if result.errors == 0 else f"{result.errors} error(s)"
    parts.append(Text(f"{verdict}, {result.warnings} warning(s)", style="green" if result.errors == 0 else "red"))
    return Group(*parts)


def audit_markdown(result: AuditResult) -> str:
    """``inspect audit --format markdown``: the verdict and every finding."""
    inp = result.input
    verdict = "clean: no findings" if not result.findings else (
        f"{result.errors} error(s), {result.warnings} warning(s)")
    lines = [f"### audit of {markdown(inp.label)}: {verdict}", ""]
    if result.findings:
        lines += md_table(None, ["severity", "code", "file", "tensor", "finding"], [
            [f.severity, markdown(f.code), markdown(f.file or ""), markdown(f.tensor or ""), markdown(f.message)]
            for f in result.findings], set())
    return "\n".join(lines) + "\n"
