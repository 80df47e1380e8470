"""Renderers for ``inspect train``: a table for people, JSON for scripts, markdown for pull requests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.analysis.facts.report import Report
from inspector.analysis.knobs import Knob
from inspector.analysis.training.optimizers import OPTIMIZERS
from inspector.analysis.training.stages import headline as stage_headline
from inspector.analysis.training.train import Train
from inspector.render.estimate import EXPLAIN_HINT
from inspector.render.output import n
from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:
    pass

GIB = 2**30


def _gib(value: int | None) -> str:
    return "unknown" if value is None else f"{value / GIB:.2f}"


def knob_title(suggestions: Sequence[Knob]) -> str:
    """What the changes listed are: those that make it fit, or (none does) the one that comes closest."""
    if any(k.budget == 0 or k.total <= k.budget for k in suggestions):
        return "what makes it fit"
    return "no one change makes it fit; the closest"


def knob_lines(suggestions: Sequence[Knob]) -> list[str]:
    """Each change that makes the step fit, with what it then needs: "--checkpointing: 19.10 GiB"."""
    return [f"{k.change}: {_gib(k.total)} GiB of {_gib(k.budget)} GiB" if k.budget else
            f"{k.change}: {_gib(k.total)} GiB a GPU" for k in suggestions]


def _headline(report: Report, t: Train) -> str:
    o = t.options
    method = o.method_kind
    what = method.title.format(rank=o.rank)
    if method.adapter:
        what += " on " + ", ".join(o.targets)
    gpus = "" if o.budget is None else f"; {t.devices} × {o.budget.gpu or _gib(o.budget.per_device) + ' GiB'}"
    shard = f", ZeRO {o.shard.zero}" if o.shard.zero else (", FSDP" if o.shard.fsdp else "")
    shard += f", offload {o.shard.offload}" if o.shard.offloading.optimizer else ""
    shard += f", SP {o.shard.sp}" if o.shard.sp > 1 else ""
    shard += f", frozen {', '.join(sanitize(f) for f in o.freeze)}" if o.freeze else ""
    shard += ", optimizer in backward" if o.step.optimizer_in_backward else ""
    shard += ", activations offloaded" if o.step.offload_activations else ""
    shard += ", layers compiled" if o.step.compile else ""
    stage, loss = stage_headline(o.stage)
    return (f"{sanitize(report.checkpoint.label)}: {stage}{what}, {o.precision}, {o.optimizer}, batch {o.batch} × "
            f"{o.seq:,} tokens{loss}, checkpointing {'on' if o.step.checkpointing else 'off'}{gpus}{shard}")


def train_table(report: Report, t: Train, *, explain: bool = False) -> RenderableType:
    o = t.options
    parts: list[RenderableType] = [Text(_headline(report, t), style="bold")]
    kind = f"{t.adapted:,} adapted modules" if o.method_kind.adapter else "every parameter"
    parts.append(Text(f"trainable {n(t.trainable)} parameters ({kind}); frozen {n(t.frozen)}"
                      + (f"; frozen linear weights in NF4 at {t.bits_per_weight:.3f} bits a weight"
                         if t.bits_per_weight else "")))
    table = Table(title="Memory per GPU", title_justify="left", show_edge=False, pad_edge=False)
    for col, just in (("term", "left"), ("bytes", "right"), ("GiB", "right"), ("", "left"),
                      *([("how", "left")] if explain else [])):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for term in t.terms:
        table.add_row(term.name.replace("_", " "), n(term.bytes) if term.bytes is not None else "unknown",
                      _gib(term.bytes), "exact" if term.exact else "model",
                      *([sanitize(term.formula)] if explain else []))
    table.add_row(Text("total (peak)", style="bold"), n(t.total) if t.total is not None else "unknown",
                  _gib(t.total), "", *([sanitize(t.peak_rule)] if explain else []))
    parts.append(table)
    if t.memory.cpu_bytes:
        parts.append(Text(f"on the CPU: {n(t.memory.cpu_bytes)} B ({_gib(t.memory.cpu_bytes)} GiB) per GPU's share"))
    if o.budget is not None:
        if t.fits is None:
            parts.append(Text("fit unknown: " + sanitize(t.memory.activations.formula), style="bold yellow"))
        else:
            verdict = Text("fits" if t.fits else "does not fit", style="bold green" if t.fits else "bold red")
            verdict.append(f": {_gib(t.total)} GiB of {_gib(o.budget.per_device)} GiB per GPU", style="")
            parts.append(verdict)
            parts.append(Text(f"largest batch at {o.seq:,} tokens: {t.largest_batch:,}; largest sequence at batch "
                              f"{o.batch}: {t.largest_seq:,} tokens" if t.largest_batch is not None
                              and t.largest_seq is not None else ""))
    if not explain:
        return Group(*parts, Text(EXPLAIN_HINT, style="dim"))
    thumbs = Table(title="What others would say (their rules, not ours)", title_justify="left", show_edge=False,
                   pad_edge=False)
    for col, just in (("who", "left"), ("GiB", "right"), ("their rule", "left")):
        thumbs.add_column(col, justify=just)  # type: ignore[arg-type]
    for th in t.thumbs:
        thumbs.add_row(th.who, _gib(th.bytes), th.formula)
    parts += [Text(""), thumbs, Text("")]
    parts.append(Text("optimizer: " + sanitize(f"{OPTIMIZERS[o.optimizer].states} ({OPTIMIZERS[o.optimizer].source})"),
                      style="dim"))
    parts += [Text("assumes: " + sanitize(a), style="dim") for a in t.assumptions]
    return Group(*parts)


def train_markdown(report: Report, t: Train, suggestions: Sequence[Knob] = ()) -> str:
    lines = [f"### {markdown(_headline(report, t))}", "",
             f"trainable **{n(t.trainable)}** parameters; frozen {n(t.frozen)}", "",
             "| term | bytes | GiB | how |", "|---|--:|--:|---|"]
    for term in t.terms:
        lines.append(f"| {term.name} | {n(term.bytes) if term.bytes is not None else 'unknown'} | {_gib(term.bytes)} | "
                     f"{markdown(term.formula)} |")
    lines.append(f"| **total** | {n(t.total) if t.total is not None else 'unknown'} | {_gib(t.total)} | "
                 f"{markdown(t.peak_rule)} |")
    lines.append("")
    if t.options.budget is not None:
        lines.append("fit unknown" if t.fits is None else ("fits" if t.fits else "does not fit"))
    if suggestions:
        lines += ["", f"{knob_title(suggestions).capitalize()}:", ""]
        lines += [f"- {markdown(line)}" for line in knob_lines(suggestions)]
    return "\n".join(lines) + "\n"
