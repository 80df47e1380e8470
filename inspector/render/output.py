"""Renderers: results → rich tables for people, fixed-schema dicts for JSON.

Nothing here reads files or the network; everything printed of a tensor name or metadata goes
through ``sanitize`` first, since those strings come from untrusted headers.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from inspector.analysis.config import ModelConfig
from inspector.analysis.report import Report
from inspector.analysis.stats import Summary
from inspector.formats.dtypes import DTYPE_BITS
from inspector.model import ORIGIN_WORDS, Checkpoint
from inspector.render.text import sanitize

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it; the result
    # types of the other commands are not imported by a plain `inspect MODEL` either
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.table import Table

    from inspector.analysis.architecture import Architecture, Stack
    from inspector.analysis.audit import AuditResult
    from inspector.analysis.compare import Comparison
    from inspector.analysis.estimate import Estimate
    from inspector.analysis.fit import Budget, CommonFit, Fit
    from inspector.analysis.formula import FormulaCheck
    from inspector.analysis.knobs import Knob
    from inspector.analysis.listing import CachedModel, FileRow, ListingRow, RepoFiles

#: 2: every document names its model in one shape (``model_json``)
SCHEMA_VERSION = 2
#: the width when stdout is not a terminal (a file, a pipe) or with --wide: tables at full width
UNLIMITED = 1_000_000


# --- the console ------------------------------------------------------------------------------

_CONSOLES: dict[tuple[bool, bool], Console] = {}


def console(*, stderr: bool = False, wide: bool = False) -> Console:
    """The one console of the run for stdout (or stderr). Markup and emoji codes are off, so no
    string is ever interpreted; our styles come as Text objects. Not a terminal, or ``wide``: no
    width limit, so nothing is cut."""
    from rich.console import Console

    key = (stderr, wide)
    if key not in _CONSOLES:
        stream = sys.stderr if stderr else sys.stdout
        tty = stream.isatty()
        _CONSOLES[key] = Console(stderr=stderr, soft_wrap=True, highlight=False, markup=False, emoji=False,
                                 width=None if tty and not wide else UNLIMITED)
    return _CONSOLES[key]


def emit(renderable: RenderableType, *, stderr: bool = False, wide: bool = False) -> None:
    """Print a renderable so that no number or label is cut: right-aligned (numeric) columns never
    wrap and keep the width of their widest cell (their header folds at its words), text columns fold
    (never below their longest word, up to ``LABEL_MIN_CAP``), lines of text wrap at the terminal's
    width, and a table that cannot fit the terminal even folded is printed at its natural width (the
    terminal then wraps its lines), each part of a group on its own. Piped (no width limit), lines
    carry no trailing spaces and nothing is wrapped."""
    from rich.measure import Measurement
    from rich.table import Table

    out = console(stderr=stderr, wide=wide)
    unlimited = out.options.update(max_width=UNLIMITED)
    _harden(renderable, out, unlimited)
    parts = _leaves(renderable) if out.is_terminal and out.width < UNLIMITED else [renderable]
    for part in parts:
        need = Measurement.get(out, unlimited, part)
        if need.minimum > out.width:  # the figures' headers fold at their words before the table is widened
            _harden(part, out, unlimited, fold=True)
            need = Measurement.get(out, unlimited, part)
        # squeezed below its minimum, rich would share the shortfall out over every column, labels included;
        # a table whose labels can fold below their longest word (a tensor name) within the width is drawn
        # at it all the same: only its label columns give way (_label_room)
        if need.minimum <= out.width:
            _print(out, part)
            continue
        if isinstance(part, Table) and _label_room(part, out, unlimited):
            for column in part.columns:
                if not column.no_wrap:
                    column.min_width = None  # rich measures a column back up to its min_width after narrowing it
            _print(out, part)
            continue
        terminal = out.size  # rich caps a print's width at the console's: widen the console for this print
        out.size = (max(terminal.width, need.maximum), terminal.height)
        try:
            _print(out, part)
        finally:
            out.size = terminal


def _label_room(part: Table, out: Console, options: ConsoleOptions) -> bool:
    """Whether a table fits the terminal with its figures whole and only its label columns narrowed:
    rich narrows the widest label column to the next widest, and so on (``Table._collapse_widths``),
    before its last resort of narrowing every column (figures included, which would cut them); so the
    figures' widths, every label column at the narrowest label's natural width and at least
    ``LABEL_FLOOR``, and the borders and padding must fit (the labels then fold below their longest word:
    ``emit`` lifts the floor ``_harden`` set them)."""
    from rich.measure import Measurement

    if not part.columns:
        return False
    padding = [part._get_padding_width(i) for i in range(len(part.columns))]
    figures = labels = 0
    narrowest: int | None = None
    for column, pad in zip(part.columns, padding, strict=True):
        if column.no_wrap:
            figures += (column.min_width or 0) + pad
            continue
        labels += 1
        natural = max((Measurement.get(out, options, cell).maximum for cell in [column.header, *column.cells]),
                      default=1)
        narrowest = natural + pad if narrowest is None else min(narrowest, natural + pad)
    if not labels or narrowest is None:
        return False
    floor = max(narrowest, LABEL_FLOOR)
    return figures + labels * floor + part._extra_width <= out.width


#: the narrowest a label column is folded to when a table must fit the terminal
LABEL_FLOOR: Final = 8


def _leaves(renderable: RenderableType) -> list[RenderableType]:
    from rich.console import Group

    if isinstance(renderable, Group):
        return [leaf for part in renderable.renderables for leaf in _leaves(part)]
    return [renderable]


def _print(out: Console, renderable: RenderableType) -> None:
    """Print; on a terminal, text wraps at its width; not on a terminal (a pipe, a file), without the
    spaces rich pads lines with and without wrapping."""
    if out.is_terminal:
        out.print(renderable, soft_wrap=False)
        return
    with out.capture() as captured:
        out.print(renderable)
    out.file.write("\n".join(line.rstrip() for line in captured.get().split("\n")))


def _harden(renderable: RenderableType, out: Console, options: ConsoleOptions, *, fold: bool = False) -> None:
    from rich.console import Group
    from rich.measure import Measurement
    from rich.table import Table

    if isinstance(renderable, Group):
        for part in renderable.renderables:
            _harden(part, out, options, fold=fold)
    elif isinstance(renderable, Table):
        for column in renderable.columns:
            if column.justify == "right":  # the figures whole; a header wider than them folds at its words
                column.no_wrap = True
                widest = max((Measurement.get(out, options, cell).maximum for cell in column.cells), default=1)
                if fold:
                    column.header = _folded(column.header, widest)
                column.min_width = max(widest, *(len(line) for line in _plain(column.header).split("\n")))
            else:  # a label folds rather than being cut, but never below its longest word (capped)
                column.overflow = "fold"
                cells = [column.header, *column.cells]
                words = max((len(w) for cell in cells for w in _plain(cell).split()), default=1)
                column.min_width = max(column.min_width or 0, min(words, LABEL_MIN_CAP))


def _folded(header: RenderableType, width: int) -> RenderableType:
    """A numeric column's header broken into lines at its words, each at most ``width`` wide where a
    word allows (the column never wraps: its figures must stay whole); a header of one word (a repo id:
    ``meta-llama/Meta-Llama-3-8B``) breaks after its ``/``, ``-``, ``_``, ``.`` or ``@``, each piece whole."""
    import re
    import textwrap

    from rich.text import Text

    plain = _plain(header)
    if len(plain) <= width:
        return header
    if " " in plain:
        lines = textwrap.wrap(plain, width=width, break_long_words=False)
    else:
        lines = [""]
        for piece in re.findall(r"[^/\-_.@]+[/\-_.@]?|[/\-_.@]", plain):
            if lines[-1] and len(lines[-1]) + len(piece) > width:
                lines.append("")
            lines[-1] += piece
    joined = "\n".join(lines)
    return Text(joined, style=header.style) if isinstance(header, Text) else joined


#: the most rows one table draws (a table costs about half a millisecond a row to lay out); the rest
#: are summed in one line naming what lists every one (``--json``, ``--tensors``) (issue 40: a
#: 4.5 MB header drew 25 s of layer-block rows)
MAX_TABLE_ROWS: Final = 200


def capped(count: int, what: str, everything: str) -> list[RenderableType]:
    """The line under a table of ``count`` rows that drew only ``MAX_TABLE_ROWS`` (none when all fit)."""
    from rich.text import Text

    if count <= MAX_TABLE_ROWS:
        return []
    return [Text(f"… {count - MAX_TABLE_ROWS:,} more {what} not drawn ({everything} lists every one)", style="dim")]


#: the narrowest a label column may be made: its longest word, up to this many characters
LABEL_MIN_CAP = 32


def _plain(cell: object) -> str:
    from rich.text import Text

    return cell.plain if isinstance(cell, Text) else str(cell)


# --- JSON text ----------------------------------------------------------------------------------


#: a \\uD800–\\uDFFF escape in ASCII JSON text: a lone surrogate (a valid pair never reaches the
#: encoder as two code units from our strings), which strict JSON parsers reject
_SURROGATE_ESCAPE: Final = re.compile(r"\\ud[89a-f][0-9a-f]{2}")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def json_document(doc: object) -> tuple[str, int]:
    """``json_text`` that is always strict JSON (RFC 8259): strings from outside that are not valid
    Unicode (lone surrogates, from pickle keys, configs, snapshots) have each such code unit replaced
    by U+FFFD. Returns the text and how many strings were changed (the caller says so)."""
    text = json_text(doc)
    if _SURROGATE_ESCAPE.search(text) is None:
        return text, 0
    changed = [0]

    def clean(value: object) -> object:
        if isinstance(value, str):
            fixed, n = _SURROGATE.subn("\ufffd", value)
            changed[0] += bool(n)
            return fixed
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return json_text(clean(doc)), changed[0]


def json_text(doc: object) -> str:
    """A JSON document as text: objects indented two spaces, a list of objects one object a line
    (so ``grep`` finds a tensor's whole record), everything else on one line. ASCII only, so
    control characters, bidi marks and lone surrogates from untrusted names arrive escaped
    (``\\u001b``), never raw. Strict JSON: a NaN or an infinity is a bug (``ValueError``), never a
    ``NaN`` written for a script's parser to choke on. Built from C-encoded pieces: ``json.dumps(indent=2)`` runs the
    pure-Python encoder, 1.0 s of the 2.6 s of ``inspect deepseek-v3 --json --tensors``."""
    return _json(doc, "") + "\n"


def _json(value: object, pad: str) -> str:
    inner = pad + "  "
    if isinstance(value, dict) and value:
        return "{\n" + ",\n".join(f"{inner}{json.dumps(str(k), ensure_ascii=True)}: {_json(v, inner)}"
                                   for k, v in value.items()) + f"\n{pad}}}"
    if isinstance(value, list | tuple) and value and all(isinstance(x, dict) for x in value):
        return "[\n" + ",\n".join(inner + json.dumps(x, ensure_ascii=True, allow_nan=False) for x in value) \
            + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=True, allow_nan=False)


# --- number formats ---------------------------------------------------------------------------


def n(value: float | None) -> str:
    return "—" if value is None else f"{value:,}"


def short(value: int) -> str:
    """8,030,261,248 → 8.03 B (always shown beside the exact figure, never instead of it)."""
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return str(value)


def size(value: int | None) -> str:
    if value is None:
        return "size unknown"
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if abs(value) >= factor:
            return f"{value / factor:.2f} {unit}"
    return f"{value} B"


def shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# --- the model, named the same way in every document --------------------------------------------


def model_json(c: Checkpoint) -> dict[str, object]:
    """A checkpoint as every JSON document names it: its label, Hub repo id and revision where known,
    its local path (None for the Hub and for a snapshot bundled with the package), where it came
    from (``origin``: file, folder, hf-cache, snapshot, bundled, hub) and the formats of its weight
    files (``safetensors``, ``gguf``, ``torch``; joined with ``+`` when mixed, None when none)."""
    formats = sorted({h.format for h in c.headers})
    return {"label": c.label, "repo_id": c.repo_id, "revision": c.revision,
            "path": None if c.origin in ("hub", "bundled") else c.location, "origin": c.origin,
            "format": "+".join(formats) if formats else None}


# --- inspect: JSON ----------------------------------------------------------------------------


def report_json(report: Report, *, rows: list[ListingRow] | None, formula: FormulaCheck | None = None
                ) -> dict[str, object]:
    """The ``inspect --json`` document (schema_version 2; every key always present)."""
    c = report.checkpoint
    s = report.summary
    metadata = {h.file: h.metadata for h in c.headers}
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model_json(c),
        "config": report.config.as_dict(),
        "totals": totals_json(s),
        "by_role": [
            {"role": r.role, "tensors": r.tensors, "parameters": r.parameters,
             "quant_elements": r.quant_elements, "buffer_elements": r.buffer_elements, "bytes": r.bytes}
            for r in s.by_role
        ],
        "by_dtype": [
            {"dtype": d.dtype, "tensors": d.tensors, "parameters": d.parameters, "elements": d.elements,
             "bytes": d.bytes}
            for d in s.by_dtype
        ],
        "layer_groups": [
            {"stack": g.stack, "first": g.first, "last": g.last, "count": g.count,
             "tensors_each": g.tensors_each, "parameters_each": g.parameters_each, "bytes_each": g.bytes_each}
            for g in s.layer_groups
        ],
        "shards": [
            {"file": h.file, "size": h.size, "tensors": h.tensors, "header_bytes": h.header_bytes,
             "data_bytes": h.data_bytes, "metadata": dict(metadata.get(h.file, {}))}
            for h in s.shards
        ],
        "other_weight_files": [{"path": f.path, "size": f.size} for f in report.other_weights],
        "components": components_json(report),
        "tokenizer": tokenizer_json(report),
        "notes": list(report.notes),
        "formula": None if formula is None else formula_json(formula),
        "tensors": None if rows is None else [
            {"name": r.name, "dtype": r.dtype, "shape": list(r.shape), "count": r.count, "role": r.role,
             "kind": r.kind, "file": r.file,
             # llama.cpp stores dimensions innermost first: the file's own order, beside the HF order
             "shape_in_file": list(reversed(r.shape)) if (r.file or "").endswith(".gguf") else None}
            for r in rows
        ],
    }


def totals_json(s: Summary) -> dict[str, int]:
    return {"tensors": s.tensors, "parameters": s.parameters, "stored_elements": s.stored_elements,
            "buffer_elements": s.buffer_elements,
            "quant_elements": s.quant_elements, "hub_total": s.hub_total, "bytes": s.bytes,
            "shards": len(s.shards)}


def listing(report: Report, collapse: bool) -> list[ListingRow]:
    from inspector.analysis.listing import collapsed_rows, tensor_rows  # only where tensors are listed

    if collapse:
        return collapsed_rows(report.tensors, report.summary.layer_groups)
    return tensor_rows(report.tensors)


# --- inspect: tables --------------------------------------------------------------------------


def _mlp_parts(cfg: ModelConfig) -> list[str]:
    """The MLP width: a dense model's; a MoE's expert width (``moe_intermediate_size``, or the MLP
    width where experts are whole MLPs, as Mixtral's), its shared experts, and a dense width only
    where dense layers lead (DeepSeek's ``first_k_dense_replace``)."""
    if not cfg.num_experts:
        return [f"MLP {n(cfg.intermediate_size)}"] if cfg.intermediate_size else []
    width = cfg.moe_intermediate_size or cfg.intermediate_size
    parts = [f"experts {cfg.num_experts} × MLP {n(width)} (top-{cfg.experts_per_token})" if width else
             f"experts {cfg.num_experts} (top-{cfg.experts_per_token})"]
    shared_width = cfg.raw.get("shared_expert_intermediate_size")
    if type(shared_width) is int and shared_width > 0:
        parts.append(f"shared expert MLP {n(shared_width)}")
    elif cfg.shared_experts and cfg.moe_intermediate_size:
        parts.append(f"shared experts {cfg.shared_experts} × MLP {n(cfg.moe_intermediate_size)}")
    if cfg.first_k_dense and cfg.intermediate_size and cfg.moe_intermediate_size:
        parts.append(f"dense MLP {n(cfg.intermediate_size)} in the first {cfg.first_k_dense} layers")
    return parts


def config_line(cfg: ModelConfig) -> str:
    if cfg.source == "none":
        return "no config.json"
    parts: list[str] = []
    if cfg.architectures:
        parts.append(", ".join(cfg.architectures))
    if cfg.hidden_size:
        parts.append(f"hidden {n(cfg.hidden_size)}")
    if cfg.num_layers:
        parts.append(f"layers {cfg.num_layers}")
    if cfg.num_heads:
        kv = f", {cfg.num_kv_heads} KV" if cfg.num_kv_heads and cfg.num_kv_heads != cfg.num_heads else ""
        hd = f", head_dim {cfg.head_dim}" if cfg.head_dim else ""
        parts.append(f"heads {cfg.num_heads}{kv}{hd}")
    if cfg.kv_lora_rank:
        parts.append(f"MLA kv_lora_rank {cfg.kv_lora_rank} + rope {cfg.qk_rope_head_dim}")
    parts += _mlp_parts(cfg)
    if cfg.vocab_size:
        parts.append(f"vocab {n(cfg.vocab_size)}")
    if cfg.tie_word_embeddings is not None and not cfg.encoder_only:  # an encoder has no output layer to tie
        parts.append("tied embeddings" if cfg.tie_word_embeddings else "untied")
    if cfg.max_position:
        parts.append(f"context {n(cfg.max_position)}")
    if cfg.dtype:
        parts.append(cfg.dtype)
    if cfg.quantization:
        from inspector.analysis.roles import MLX_BITS, quant_bits

        named = cfg.quantization.get("quant_method")
        mlx = "quantization" in cfg.raw  # mlx-lm's block: only the bits it writes are bits
        bits = quant_bits(cfg.quantization)
        bits = None if mlx and bits not in MLX_BITS else bits
        parts.append((named if isinstance(named, str) else "mlx" if mlx else "quantised") +
                     (f" {bits}-bit" if bits is not None else ""))
    return " · ".join(parts)


def origin_text(c: Checkpoint) -> str:
    """Where the figures come from, said in the title line: a bundled snapshot says it was rebuilt."""
    at = f" at revision {c.revision[:12]}" if c.revision else ""
    if c.origin == "bundled":
        return f"bundled header snapshot, rebuilt from config.json{at} by shape rules"
    origin = "Hub, headers only" if c.origin == "hub" else ORIGIN_WORDS[c.origin]
    return origin + (f", revision {c.revision[:12]}" if c.revision else "")


def report_table(report: Report, *, all_shards: bool = False, logical: tuple[str, int] | None = None) -> RenderableType:
    """``logical``: (method, logical parameters) of a packed quantised checkpoint: the method is named
    beside the parameters (which are logical whatever is passed)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    c = report.checkpoint
    s = report.summary
    title = Text()
    title.append(sanitize(c.label), style="bold")
    title.append(f"  ({sanitize(origin_text(c))})", style="dim")
    line = config_line(report.config) if c.kind != "pipeline" else \
        f"{c.composite_class or 'pipeline'} ({c.composite}): " + ", ".join(
            f"{r.name} {r.class_name or ''}".strip() for r in report.components if r.tensors)
    parts: list[RenderableType] = [title, Text(sanitize(line), style="cyan"), Text("")]

    totals = Table.grid(padding=(0, 2))
    totals.add_column(style="bold")
    totals.add_column(justify="right")
    totals.add_column(style="dim")
    if s.stored_elements != s.parameters:
        how = f", {sanitize(logical[0])}" if logical is not None else ""
        totals.add_row("Parameters", n(s.parameters), f"{short(s.parameters)}, logical (a packed word counts the "
                                                      f"weights it holds){how}")
        totals.add_row("Stored", n(s.stored_elements), "elements as stored: packed words count once")
    else:
        totals.add_row("Parameters", n(s.parameters), short(s.parameters))
    totals.add_row("Buffers", n(s.buffer_elements), "elements of saved non-parameter state")
    if s.quant_elements:
        totals.add_row("Quant data", n(s.quant_elements), "elements of scales, zero points, indices")
    totals.add_row("Hub total", n(s.hub_total), "every element, as the Hub's model page counts")
    totals.add_row("Bytes", n(s.bytes), size(s.bytes) + " of tensor data")
    totals.add_row("Tensors", n(s.tensors), f"in {len(s.shards)} file{'s' if len(s.shards) != 1 else ''}")
    parts += [totals, Text("")]
    if report.components:
        parts += [components_table(report), Text("")]

    roles = Table(title="By role", title_justify="left", show_edge=False, pad_edge=False)
    roles.add_column("role")
    roles.add_column("tensors", justify="right")
    roles.add_column("parameters", justify="right")
    roles.add_column("share", justify="right")
    roles.add_column("bytes", justify="right")
    blocks = any(d.dtype not in DTYPE_BITS for d in s.by_dtype)  # GGML block types: bits per weight vary
    if blocks:
        roles.add_column("bits/el.", justify="right")
    for r in s.by_role:
        count = r.parameters or r.buffer_elements or r.quant_elements
        label = r.role + (" (not parameters)" if r.role == "buffer" else "")
        share = f"{100 * r.parameters / s.parameters:.2f}%" if s.parameters and r.parameters else ""
        cells = [label, n(r.tensors), n(count), share, n(r.bytes)]
        if blocks:
            cells.append(f"{r.bytes * 8 / count:.3f}" if count else "—")
        roles.add_row(*cells)
    parts += [roles, Text("")]

    if s.layer_groups:
        layers = Table(title="Layer blocks", title_justify="left", show_edge=False, pad_edge=False)
        layers.add_column("block")
        layers.add_column("tensors each", justify="right")
        layers.add_column("parameters each", justify="right")
        layers.add_column("parameters", justify="right")
        layers.add_column("bytes each", justify="right")
        stacks = {g.stack for g in s.layer_groups}
        alike = len({stack.rsplit(".", 1)[-1] for stack in stacks}) < len(stacks)  # two stacks' "layers"
        for g in s.layer_groups[:MAX_TABLE_ROWS]:
            layers.add_row(sanitize(g.full_label if alike else g.label), n(g.tensors_each), n(g.parameters_each),
                           n(g.parameters_each * g.count), n(g.bytes_each))
        rest = s.layer_groups[MAX_TABLE_ROWS:]
        if rest:  # the table still sums: the blocks not drawn are one row
            layers.add_row(f"… {len(rest):,} more blocks", "", "", n(sum(g.parameters_each * g.count for g in rest)),
                           "", style="dim")
        layers.add_row("outside blocks", "", "", n(s.outside_layers_parameters), "", style="dim")
        parts += [layers, *capped(len(s.layer_groups), "layer blocks", "--json"), Text("")]

    dtypes = Table(title="By dtype", title_justify="left", show_edge=False, pad_edge=False)
    dtypes.add_column("dtype")
    dtypes.add_column("tensors", justify="right")
    dtypes.add_column("elements", justify="right")
    dtypes.add_column("of which parameters", justify="right")
    dtypes.add_column("bytes", justify="right")
    if blocks:
        dtypes.add_column("bits/el.", justify="right")
    for d in s.by_dtype:
        cells = [sanitize(d.dtype), n(d.tensors), n(d.elements), n(d.parameters), n(d.bytes)]
        if blocks:
            cells.append(f"{d.bytes * 8 / d.elements:.3f}" if d.elements else "—")
        dtypes.add_row(*cells)
    parts += [dtypes, Text("")]

    return Group(*parts, *_report_tail(report, all_shards))


def _report_tail(report: Report, all_shards: bool) -> list[RenderableType]:
    """The files, the tokenizer and the notes of ``report_table``."""
    from rich.table import Table
    from rich.text import Text

    s = report.summary
    parts: list[RenderableType] = []
    if s.shards and (len(s.shards) <= 8 or all_shards):
        shards = Table(title="Files", title_justify="left", show_edge=False, pad_edge=False)
        shards.add_column("file")
        shards.add_column("size", justify="right")
        shards.add_column("tensors", justify="right")
        shards.add_column("header", justify="right")
        for h in s.shards:
            shards.add_row(sanitize(h.file), n(h.size), n(h.tensors), n(h.header_bytes))
        parts += [shards, Text("")]
    elif s.shards:
        sizes = [h.size for h in s.shards if h.size is not None]
        parts.append(Text(
            f"{len(s.shards)} files, {size(sum(sizes))} in all, headers {size(sum(h.header_bytes for h in s.shards))}"
            " (--shards lists them)", style="dim"))
        parts.append(Text(""))

    tokenizer = tokenizer_lines(report)
    if tokenizer:
        parts += [Text("Tokenizer", style="italic"), *(Text("  " + sanitize(line, 500)) for line in tokenizer),
                  Text("")]
    for note in report.notes:
        parts.append(Text("note: " + sanitize(note, 500), style="yellow"))
    return parts


def components_table(report: Report) -> RenderableType:
    """A multi-component repo's components: class, parameters, bytes, dtypes; their sum is the total."""
    from rich.table import Table

    c = report.checkpoint
    t = Table(title=f"Components ({c.composite})", title_justify="left", show_edge=False, pad_edge=False)
    for name, justify in (("component", "left"), ("class", "left"), ("tensors", "right"), ("parameters", "right"),
                          ("share", "right"), ("bytes", "right"), ("dtype", "left")):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    total = report.summary.parameters or 1
    for r in report.components[:MAX_TABLE_ROWS]:
        if not r.tensors:
            t.add_row(sanitize(r.name), sanitize(r.class_name or ""), "—", "no weights", "", "", "", style="dim")
            continue
        t.add_row(sanitize(r.name), sanitize(r.class_name or r.model_type or ""), n(r.tensors), n(r.parameters),
                  f"{100 * r.parameters / total:.2f}%", n(r.bytes), sanitize(", ".join(r.dtypes)))
    rest = report.components[MAX_TABLE_ROWS:]
    if rest:  # the table still sums to the total
        t.add_row(f"… {len(rest):,} more", "", n(sum(r.tensors for r in rest)), n(sum(r.parameters for r in rest)),
                  "", n(sum(r.bytes for r in rest)), "", style="dim")
    return t


def tokenizer_lines(report: Report) -> list[str]:
    """The tokenizer in a few lines: vocabulary, special and added tokens, chat template, generation."""
    t = report.tokenizer
    if t is None:
        return []
    vocab = f"{t.vocab_size:,} tokens ({t.vocab_source})" if t.vocab_size is not None else t.vocab_source
    lines = [f"vocabulary: {vocab}" + (f"; embedding rows {t.embedding_rows:,}" if t.embedding_rows else "")]
    if t.tokenizer_class:
        lines.append(f"class: {t.tokenizer_class}" + (f"; model_max_length {t.model_max_length:,}"
                                                     if t.model_max_length else ""))
    if t.special:
        lines.append("special: " + ", ".join(f"{k} {v!r}" for k, v in t.special))
    if t.added_tokens is not None:
        special = f", {t.added_special:,} special" if t.added_special else ""
        lines.append(f"added tokens: {t.added_tokens:,}{special}")
    template = f"yes ({t.chat_template_source})" if t.chat_template else "no"
    if t.chat_templates:
        template += "; also named: " + ", ".join(t.chat_templates)
    lines.append(f"chat template: {template}")
    if t.generation:
        lines.append("generation defaults: " + ", ".join(f"{k} {v}" for k, v in t.generation))
    return lines + [f"note: {note}" for note in t.notes]


def tokenizer_json(report: Report) -> dict[str, object] | None:
    t = report.tokenizer
    if t is None:
        return None
    return {"class": t.tokenizer_class, "vocab_size": t.vocab_size, "vocab_source": t.vocab_source,
            "embedding_rows": t.embedding_rows, "special": dict(t.special), "added_tokens": t.added_tokens,
            "added_special": t.added_special, "chat_template": t.chat_template,
            "chat_template_source": t.chat_template_source, "chat_templates": list(t.chat_templates),
            "model_max_length": t.model_max_length, "generation": dict(t.generation), "notes": list(t.notes)}


def components_json(report: Report) -> list[dict[str, object]] | None:
    return [{"name": r.name, "library": r.library, "class": r.class_name, "model_type": r.model_type,
             "tensors": r.tensors, "parameters": r.parameters, "bytes": r.bytes, "dtypes": list(r.dtypes)}
            for r in report.components] if report.components else None


def tensor_lines(rows: list[ListingRow]) -> list[str]:
    """``model.layers.0.mlp.gate_proj.weight [14336, 4096] BF16`` lines (plain, for pipes)."""
    return [
        f"{sanitize(r.name)} {shape_text(r.shape)} {r.dtype}" + (f" ×{r.count}" if r.count > 1 else "")
        for r in rows
    ]



def formula_json(check: FormulaCheck) -> dict[str, object]:
    return {
        "family": check.family, "predicted": check.predicted, "actual": check.actual,
        "context_enters": check.context_enters, "notes": list(check.notes),
        "rows": [{"role": r.role, "formula": r.formula, "predicted": r.predicted, "actual": r.actual,
                  "note": r.note} for r in check.rows],
    }


def formula_table(check: FormulaCheck) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if check.family is None:
        return Text(sanitize("formula: " + "; ".join(check.notes)), style="dim")
    t = Table(title=f"Config formula ({check.family}) vs headers", title_justify="left", show_edge=False,
              pad_edge=False)
    for col, just in (("role", "left"), ("formula", "left"), ("from config", "right"), ("in headers", "right"),
                      ("", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in check.rows:
        flag = "" if r.predicted == r.actual else f"differs by {r.actual - r.predicted:+,}"
        t.add_row(r.role, r.formula, n(r.predicted), n(r.actual), "; ".join(x for x in (flag, r.note) if x))
    t.add_row("total", "", n(check.predicted), n(check.actual), "", style="bold")
    return Group(t, *(Text("note: " + sanitize(note), style="dim") for note in check.notes))


# --- estimate -------------------------------------------------------------------------------------

#: each estimate figure's label in tables and pages (its JSON ``name`` is the key a script reads)
FIGURE_LABELS: Final = {
    "weights_bytes": "weights, as stored", "kv_bytes_per_token": "KV cache per token", "kv_bytes": "KV cache",
    "total_parameters": "parameters, total", "main_parameters": "parameters, main model",
    "active_parameters": "parameters, active per token", "flops_per_token_weights": "FLOPs per token, weights",
    "flops_per_token_attention": "FLOPs per token, attention", "flops_decode_step": "FLOPs, one decode step",
    "flops_prefill": "FLOPs, prefill", "attention_to_gemm_ratio": "attention / weight FLOPs",
    "attention_to_gemm_ratio_closed_form": "… closed form t / (2D + 1.5I)",
    "kv_bytes_full_reservation": "KV cache, whole-context reservation",
    "kv_bytes_per_input_token": "cross-attention K/V per input token",
    "state_bytes_per_sequence": "recurrent state per sequence", "flops_per_input_token": "FLOPs per input token",
}


def figure_label(name: str) -> str:
    """A figure's label; a component's figure (``weights_bytes.unet``) is its kind's label and the
    component (``weights, as stored: unet``)."""
    kind, _, part = name.partition(".")
    return f"{FIGURE_LABELS[kind]}: {part}" if part else FIGURE_LABELS[kind]


def _value(v: int | float | None, unit: str) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4f}"
    if unit == "B":
        return f"{v:,} B ({size(v)})"
    if unit == "FLOP":
        return f"{v:,} ({short(v)})"
    return n(v)


def fit_json(f: Fit) -> dict[str, object]:
    """The ``fit`` object: bytes per device; total = weights + KV + overhead; fits ⇔ total ≤ budget."""
    return {
        "budget_bytes": f.budget_bytes, "devices": f.devices, "batch": f.batch, "context": f.context,
        "weights_bytes": f.weights_bytes, "weights_bytes_all_devices": f.weights_bytes_all,
        "replicated_bytes": f.replicated_bytes, "replicated": list(f.replicated),
        "kv_bytes_per_token": f.kv_bytes_per_token, "kv_bytes": f.kv_bytes, "kv_share": f.kv_share,
        "kv_formula": f.kv_formula, "overhead_bytes": f.overhead_bytes, "overhead_formula": f.overhead_formula,
        "total_bytes": f.total_bytes,
        "fits": f.fits, "max_context": f.max_context, "max_context_capped": f.max_context_capped,
        "max_batch": f.max_batch, "model_limit": f.model_limit, "unknown": f.unknown,
        "engine": f.engine, "gpu": f.gpu, "utilization": f.utilization, "usable_bytes": f.usable_bytes,
        "terms": [{"name": t.name, "bytes": t.bytes, "formula": t.formula, "source": t.source} for t in f.terms],
        "kv_pool_bytes": f.kv_pool_bytes, "kv_pool_tokens": f.kv_pool_tokens,
        "pipeline": f.pipeline, "stages": list(f.stages), "stage": f.stage, "weights_note": f.weights_note,
        "curve": [{"context": x, "total_bytes": y} for x, y in f.curve], "state_bytes": f.state_bytes,
    }


def gb_gib(value: int) -> str:
    return f"{value:,} B ({value / 10**9:.2f} GB, {value / 2**30:.2f} GiB)"


#: the line a table without ``--explain`` ends with
EXPLAIN_HINT = "--explain: each figure's formula, source and assumptions (--json has them always)"


def fit_table(f: Fit, *, explain: bool = False) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    per = " per device" if f.devices > 1 else ""
    gpu = f" {f.gpu}" if f.gpu else ""
    util = f" × utilization {f.utilization:g}" if f.utilization else ""
    at = f", context {f.context:,}, batch {f.batch}" if f.engine != "diffusers" else ""
    # the question as a line of its own: as the table's title it wrapped at the table's width
    title = Text(f"Will it fit? {f.devices} ×{gpu} {f.budget_bytes / 2**30:.2f} GiB{util}, {f.engine}{at}",
                 style="italic")
    t = Table(show_edge=False, pad_edge=False)
    t.add_column("memory" + per)
    t.add_column("bytes", justify="right")
    t.add_column("GB", justify="right")
    t.add_column("GiB", justify="right")
    if explain:
        t.add_column("how")
    tp = f.devices // f.pipeline
    rows = [("weights", f.weights_bytes, (f"1/{tp} of {f.weights_bytes_all:,} B, replicated pieces whole"
                                          if tp > 1 else "as the headers hold them") +
             (f"; {f.weights_note}" if f.weights_note else "")),
            ("KV cache", f.kv_bytes, f.kv_share if f.engine == "diffusers" else "unknown (not counted)"
             if f.fits is None else
             f"{f.kv_formula}; {f.kv_share}")]
    if f.state_bytes:
        rows.append(("recurrent state", f.state_bytes, f"state per sequence × batch {f.batch}"))
    rows += [(term.name, term.bytes, term.formula) for term in f.terms]
    rows += [("total", f.total_bytes, "weights + KV cache + " + ("recurrent state + " if f.state_bytes else "")
              + f.overhead_formula),
             ("budget", f.budget_bytes, f"--gpu{gpu}")]
    if f.utilization:
        rows.append(("usable", f.usable_bytes, f"budget × gpu_memory_utilization {f.utilization:g}"))
    if f.kv_pool_bytes is not None and f.fits is not None:
        tokens = f"; {f.kv_pool_tokens:,} tokens in blocks of 16" if f.kv_pool_tokens is not None else \
            "; tokens not given: windowed or recurrent layers are paged apart by vLLM's hybrid allocator"
        rows.append(("KV pool", f.kv_pool_bytes,
                     "usable − weights − terms above (vLLM sizes its cache to it)" + tokens))
    for label, value, how in rows:
        t.add_row(sanitize(label), n(value), f"{value / 10**9:.2f}", f"{value / 2**30:.2f}",
                  *([sanitize(how)] if explain else []))
    if f.fits is None:
        parts: list[RenderableType] = [title, t, Text("fit unknown: " + sanitize(f.unknown or "a figure is missing"),
                                                      style="bold yellow")]
    else:
        verdict = Text("fits" if f.fits else "does not fit", style="bold green" if f.fits else "bold red")
        verdict.append(f": {f.total_bytes / 2**30:.2f} GiB of {f.usable_bytes / 2**30:.2f} GiB{per}", style="")
        limit = (f"the model's own limit of {f.model_limit:,}" if f.max_context_capped else "the budget")
        most = (f"largest context that fits at batch {f.batch}: {f.max_context:,} tokens (capped by {limit}); "
                f"largest batch at {f.context:,} tokens: {f.max_batch:,}") if f.max_context else \
            "the weights alone are more than the budget, before any activation" if f.engine == "diffusers" else \
            "not even one token of context fits beside the weights and overhead"
        parts = [title, t, verdict, Text(most)]
    sources = [f"{term.name}: {term.source}" for term in f.terms] if explain else []
    if sources:
        parts.append(Text("sources: " + sanitize("; ".join(sources)), style="dim"))
    if f.replicated and f.devices > 1:
        parts.append(Text("replicated on every device: " + ", ".join(f.replicated), style="dim"))
    if f.stages:
        parts.append(Text(f"{f.pipeline} pipeline stages of {f.devices // f.pipeline} device(s); the figures above "
                          f"are the tightest, {f.stage}: " + "; ".join(f.stages), style="dim"))
    return Group(*parts)  # (its warnings are said once, on stderr)


def estimate_json(report: Report, est: Estimate, fitted: Fit | None = None,
                  suggestions: Sequence[Knob] = ()) -> dict[str, object]:
    q = est.quant
    c = report.checkpoint
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model_json(c),
        "context": est.context, "batch": est.batch, "kv_dtype": est.kv_dtype, "no_tokens": est.no_tokens,
        "figures": [{"name": f.name, "label": figure_label(f.name), "value": f.value, "unit": f.unit,
                     "formula": f.formula, "source": f.source,
                     "assumptions": list(f.assumptions)} for f in est.figures],
        "quantization": {
            "method": q.method, "bits": q.bits, "source": q.source, "logical_parameters": q.logical_parameters,
            "stored_elements": q.stored_elements, "overhead_elements": q.overhead_elements, "notes": list(q.notes),
            "by_role": [{"role": r.role, "logical": r.logical, "stored": r.stored, "weight_bytes": r.weight_bytes,
                         "overhead_bytes": r.overhead_bytes, "bits_per_weight": r.bits_per_weight} for r in q.rows],
        },
        "what_if": [{"dtype": w.dtype, "bytes": w.bytes, "formula": w.formula} for w in est.what_if],
        "architecture": architecture_json(est.architecture),
        "fit": None if fitted is None else fit_json(fitted),
        "fits": None if fitted is None else fitted.fits,
        "warnings": list(est.warnings) + ([] if fitted is None else list(fitted.warnings)),
        "suggestions": [{"change": k.change, "total": k.total, "budget_bytes": k.budget} for k in suggestions],
    }


def architecture_json(arch: Architecture) -> dict[str, object]:
    """The stacks, each with when it runs and its layers in runs of one kind; the parameters outside."""
    return {
        "decodes": arch.decodes, "tied": arch.tied, "kv_check": arch.kv_check,
        "embedding": arch.embedding, "lookups": arch.lookups, "head": arch.head, "other": arch.other,
        "stacks": [{"kind": s.kind, "name": s.name, "runs": s.runs, "parameters": s.parameters,
                    "active_parameters": s.active, "layers": len(s.layers),
                    "layer_kinds": [{"kind": kind, "first": first, "last": last, "count": count}
                                    for kind, first, last, count in layer_runs(s)]} for s in arch.stacks],
    }


def layer_runs(stack: Stack) -> list[tuple[str, int, int, int]]:
    """A stack's layers as runs of one kind: (kind, first index, last index, count)."""
    runs: list[tuple[str, int, int, int]] = []
    for layer in stack.layers:
        kind = layer.kind
        if runs and runs[-1][0] == kind and runs[-1][2] == layer.index - 1:
            k, first, _, count = runs[-1]
            runs[-1] = (k, first, layer.index, count + 1)
        else:
            runs.append((kind, layer.index, layer.index, 1))
    return runs


def stacks_line(arch: Architecture) -> str:
    """The stacks in one line: ``decoder 32 layers (full ×32, per token) · vision 27 layers (per input)``."""
    parts = []
    for s in arch.stacks:
        runs = layer_runs(s)
        kinds = ", ".join(f"{k} ×{count}" if count > 1 else k for k, _, _, count in runs[:6])
        kinds += " …" if len(runs) > 6 else ""
        when = {"per_token": "per token", "per_input": "once per input", "never": "not in plain decoding"}[s.runs]
        layers = f"{len(s.layers)} layers ({kinds}), " if s.layers else ""
        parts.append(f"{s.kind} {layers}{s.parameters:,} parameters, {when}")
    return "stacks: " + " · ".join(parts)


def estimate_scope(est: Estimate) -> str:
    """What an estimate is of: context, batch and KV dtype, or a pipeline's weights alone."""
    if est.kv is None:
        return "weights (a diffusion model decodes no tokens: no KV cache, no per-token FLOPs)"
    return f"estimates at context {est.context:,}, batch {est.batch}, KV cache in {est.kv_dtype}"


def estimate_table(report: Report, est: Estimate, fitted: Fit | None = None, *,
                   explain: bool = False) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    c = report.checkpoint
    parts: list[RenderableType] = [] if fitted is None else [fit_table(fitted, explain=explain), Text("")]
    parts += [
        Text(f"{sanitize(c.label)}: {estimate_scope(est)}", style="bold")]
    if est.architecture.stacks and est.kv is not None:
        parts.append(Text(sanitize(stacks_line(est.architecture)), style="dim"))
    t = Table(show_edge=False, pad_edge=False)
    t.add_column("figure")
    t.add_column("value", justify="right")
    if explain:
        t.add_column("formula")
        t.add_column("notes", justify="right")
    notes: list[str] = []
    for f in est.figures:
        marks = []
        for text in (f.source, *f.assumptions):
            if text not in notes:
                notes.append(text)
            marks.append(str(notes.index(text) + 1))
        t.add_row(sanitize(figure_label(f.name)), _value(f.value, f.unit),
                  *([sanitize(f.formula), ",".join(marks)] if explain else []))
    parts += [t, Text("")]
    q = est.quant
    if q.method or q.overhead_elements:
        heading = f"Quantisation: {q.method} {q.bits or ''}-bit (from {q.source})".replace(" -bit", "")
        qt = Table(title=sanitize(heading),
                   title_justify="left", show_edge=False, pad_edge=False)
        for col, just in (("role", "left"), ("logical parameters", "right"), ("stored elements", "right"),
                          ("weight bytes", "right"), ("overhead bytes", "right"), ("bits/weight", "right")):
            qt.add_column(col, justify=just)  # type: ignore[arg-type]
        for r in q.rows:
            bpw = f"{r.bits_per_weight:.3f}" if r.bits_per_weight is not None else "—"
            qt.add_row(r.role, n(r.logical), n(r.stored), n(r.weight_bytes), n(r.overhead_bytes), bpw)
        qt.add_row("total", n(q.logical_parameters), n(q.stored_elements), "", n(q.overhead_elements) + " el.",
                   "", style="bold")
        parts += [qt, Text("scales, zero points and group indices are overhead, not parameters", style="dim"),
                  Text("")]
        notes += list(q.notes)
    w = Table(title="Weights at other dtypes", title_justify="left", show_edge=False, pad_edge=False)
    w.add_column("dtype")
    w.add_column("bytes", justify="right")
    w.add_column("how")
    for what in est.what_if:
        w.add_row(what.dtype, f"{what.bytes:,} ({size(what.bytes)})", sanitize(what.formula))
    parts += [w, Text("")]
    if not explain:
        return Group(*parts, Text(EXPLAIN_HINT, style="dim"))
    for i, note in enumerate(notes, 1):
        parts.append(Text(f"{i}. {sanitize(note)}", style="dim"))
    return Group(*parts)


def estimate_line(est: Estimate, common: CommonFit | None = None) -> str:
    """The one-line summary ``inspect MODEL`` prints; ``common``: the smallest common budget it fits."""
    kv = est.kv
    if kv is None:  # a diffusion pipeline or model: weights (per component) only
        parts = [f"{sanitize(f.name.removeprefix('weights_bytes.'))} {n(f.value)} B" for f in est.weights.components] \
            or [f"{n(est.weights.bytes.value)} B"]
        return ("estimate: no KV cache or per-token FLOPs (a diffusion model decodes no tokens); weights " +
                " · ".join(parts))
    flops = est.flops.weights_per_token.value if est.flops is not None else None
    per_input = est.flops.per_input_token if est.flops is not None else None
    value = kv.per_token.value
    if kv.none is not None:
        kv_text = f"no KV cache ({kv.none})"
    else:
        kv_text = f"KV cache {n(value)} B/token ({est.kv_dtype})" if value is not None else "KV cache unknown"
    parts = [kv_text, f"{n(flops)} FLOPs/token (weights)" if flops else
             f"{n(per_input.value)} FLOPs/input token (weights)" if per_input is not None and per_input.value else ""]
    if kv.state_per_sequence is not None and kv.state_per_sequence.value is not None:
        parts.append(f"recurrent state {n(kv.state_per_sequence.value)} B/sequence")
    if est.moe is not None:
        parts.append(f"active {n(est.moe.active.value)} parameters/token")
    if est.quant.method:
        parts.append(f"{sanitize(est.quant.method)}: {n(est.quant.logical_parameters)} logical parameters")
    if common is not None:
        from inspector.analysis.fit import COMMON_BUDGETS_GIB

        parts.append(f"fits {'one' if common.devices == 1 else f'{common.devices} ×'} {common.gib} GiB GPU"
                     f"{'' if common.devices == 1 else 's'} at {common.context:,} tokens of context"
                     if common.devices is not None else
                     f"does not fit 8 × {COMMON_BUDGETS_GIB[-1]} GiB GPUs at {common.context:,} tokens of context")
    return "estimate: " + " · ".join(p for p in parts if p) + " (inspect estimate for formulas)"


# --- audit ----------------------------------------------------------------------------------------


def audit_json(result: AuditResult) -> dict[str, object]:
    inp = result.input
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model_json(inp.checkpoint) if inp.checkpoint is not None else {
            "label": inp.label, "repo_id": None, "revision": None, "path": None if inp.remote else inp.location,
            "origin": "hub" if inp.remote else "folder", "format": None},
        "ok": result.errors == 0,
        "counts": {"error": result.errors, "warning": result.warnings,
                   "info": sum(f.severity == "info" for f in result.findings)},
        "checked": dict(result.checked),
        "findings": [{"code": f.code, "severity": f.severity, "file": f.file, "tensor": f.tensor,
                      "message": f.message} for f in result.findings],
        "pickle_globals": [{"file": file, "pickle": i.pickle, "module": i.module, "name": i.name,
                            "verdict": "allowed" if i.allowed else "refused"} for file, i in result.imports],
    }


def audit_table(result: AuditResult) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    inp = result.input
    head = Text()
    head.append(f"audit {sanitize(inp.label)}", style="bold")
    bundled = inp.checkpoint is not None and inp.checkpoint.origin == "bundled"
    location = "bundled header snapshot" if bundled else inp.location
    head.append(f"  ({sanitize(location)})", style="dim")
    parts: list[RenderableType] = [head]
    checked = result.checked
    parts.append(Text(f"checked {checked.get('files', 0)} files, {checked.get('headers', 0)} headers, "
                      f"{checked.get('tensors', 0):,} tensors"))
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
    from inspector.analysis.audit import repeats

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


# --- compare --------------------------------------------------------------------------------------


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return n(value)
    return sanitize(str(value))


def _column_label(report: Report) -> str:
    c = report.checkpoint
    return sanitize(c.label + (f"@{c.revision[:12]}" if c.revision and c.origin in ("hub", "hf-cache") else ""))


def compare_json(cmp: Comparison) -> dict[str, object]:
    return {
        "schema_version": SCHEMA_VERSION,
        "models": [
            {"model": model_json(r.checkpoint), "totals": totals_json(r.summary), "config": r.config.as_dict(),
             "kv_bytes_per_token": kv,
             "roles": {x.role: x.parameters or x.buffer_elements or x.quant_elements for x in r.summary.by_role},
             "parameters_by_role": {x.role: x.parameters for x in r.summary.by_role if x.parameters}}
            for r, kv in zip(cmp.reports, cmp.kv_bytes_per_token, strict=True)
        ],
        "rows": [{"section": row.section, "label": row.label, "values": list(row.values)} for row in cmp.rows],
    }


def compare_table(cmp: Comparison) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    # each column headed by the model's own name, the full id (and revision) in a legend above: a header
    # of org/name@revision made the table 117 columns wide
    heads = _short_labels(cmp.reports)
    parts: list[RenderableType] = [Text(sanitize(f"{head}: {_column_label(r)}"), style="dim")
                                   for head, r in zip(heads, cmp.reports, strict=True) if head != _column_label(r)]
    for section, title in (("totals", "Totals"), ("config", "Config"), ("roles", "Parameters by role")):
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        t.add_column("")
        for head in heads:
            t.add_column(head, justify="right")
        for row in cmp.rows:
            if row.section == section:
                t.add_row(row.label, *(_cell(v) for v in row.values))
        parts += [t, Text("")]
    return Group(*parts)


def _short_labels(reports: Sequence[Report]) -> list[str]:
    """A column's header: the model's last name part (``Meta-Llama-3-8B``), with its revision where two
    columns would read alike, or its whole label where even that repeats."""
    labels = [_column_label(r) for r in reports]
    short = [sanitize(r.checkpoint.label.rstrip("/").rsplit("/", 1)[-1]) for r in reports]
    for i, r in enumerate(reports):
        if short.count(short[i]) > 1 and r.checkpoint.revision:
            short[i] = f"{short[i]}@{r.checkpoint.revision[:7]}"
    return [s if short.count(s) == 1 else labels[i] for i, s in enumerate(short)]


def compare_markdown(cmp: Comparison) -> str:
    from inspector.render.text import markdown

    head = "| | " + " | ".join(markdown(_column_label(r)) for r in cmp.reports) + " |"
    rule = "|---|" + "--:|" * len(cmp.reports)
    lines: list[str] = []
    for section, title in (("totals", "Totals"), ("config", "Config"), ("roles", "Parameters by role")):
        lines += [f"**{title}**", "", head, rule]
        for row in cmp.rows:
            if row.section == section:
                lines.append(f"| {markdown(row.label)} | " + " | ".join(markdown(_cell(v)) for v in row.values) + " |")
        lines.append("")
    return "\n".join(lines)


# --- several files of one model; a Hugging Face cache -----------------------------------------------


def files_json(where: str, rows: list[FileRow], budget: Budget | None = None,
               notes: list[str] | None = None) -> dict[str, object]:
    """Several files of one model; with a budget, the fit of each model file (``fits`` null for a
    projector, or where a figure is unknown: ``note`` says why)."""
    return {"schema_version": SCHEMA_VERSION, "where": where,
            "budget_bytes": budget.per_device if budget else None, "devices": budget.devices if budget else None,
            "files": [{"file": r.file, "kind": r.kind, "type": r.type, "bytes": r.bytes, "parameters": r.parameters,
                       "bits_per_weight": r.bits_per_weight, "fits": r.fits, "max_context": r.max_context,
                       "kv_bytes_per_token": r.kv_bytes_per_token, "needed_bytes": r.needed_bytes,
                       "note": r.note} for r in rows],
            "notes": list(notes or [])}


def files_table(where: str, name: str, rows: list[FileRow], budget: Budget | None = None,
                notes: list[str] | None = None) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    # one model in several quantisations holds the same parameters in each file: said once in the title, and
    # a kind column only where a projector is among them (an 80-column terminal holds the rest whole)
    kinds = any(r.kind != "model" for r in rows)
    counts = {r.parameters for r in rows}
    title = f"{where}: {len(rows)} GGUF files (inspect {name}/FILE for one)"
    if len(counts) == 1:
        title += f"; {n(next(iter(counts)))} parameters each"
    if budget is not None:
        title += f"; fit in {budget.devices} × {budget.per_device / 2**30:.2f} GiB"
    t = Table(title=sanitize(title), title_justify="left", show_edge=False, pad_edge=False)
    columns = [("file", "left"), *([("kind", "left")] if kinds else []), ("type", "left"), ("bytes", "right"),
               *([("parameters", "right")] if len(counts) > 1 else []), ("bits/weight", "right")]
    if budget is not None:
        columns += [("needs GiB", "right"), ("fits", "left"), ("largest context", "right")]
    for col, just in columns:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    # a row's note (why a fit is unknown, what a projector is) under the table, once for the files that
    # share it: a column of prose made every row as wide as its sentence (188 columns on an 80-column terminal)
    said: dict[str, list[str]] = {}
    for r in rows[:MAX_TABLE_ROWS]:
        cells = [sanitize(r.file), *([r.kind] if kinds else []), sanitize(r.type or "—"), n(r.bytes),
                 *([n(r.parameters)] if len(counts) > 1 else []),
                 f"{r.bits_per_weight:.3f}" if r.bits_per_weight else "—"]
        if budget is not None:
            verdict = "—" if r.kind != "model" else ("unknown" if r.fits is None else ("yes" if r.fits else "no"))
            cells += [f"{r.needed_bytes / 2**30:.2f}" if r.needed_bytes is not None else "—", verdict,
                      n(r.max_context) if r.max_context is not None else "—"]
            note = r.note or ("loaded beside a model" if r.kind == "projector" else "")
            if note:
                said.setdefault(note, []).append(r.file)
        t.add_row(*cells)
    under = [Text(sanitize(f"{', '.join(files) if len(files) <= 3 else f'{len(files)} files'}: {note}"))
             for note, files in said.items()]
    return Group(t, *capped(len(rows), "files", "--json"), *under,
                 *(Text(sanitize(note), style="dim") for note in notes or []))


def repo_files_json(checkpoint: Checkpoint, files: RepoFiles) -> dict[str, object]:
    """Every file with its size and kind; the bytes a download of all would fetch, the weights' share."""
    return {
        "schema_version": SCHEMA_VERSION, "model": model_json(checkpoint),
        "files": [{"path": r.path, "size": r.size, "kind": r.kind, "counted": r.counted} for r in files.rows],
        "total_bytes": files.total_bytes, "weights_bytes": files.weights_bytes,
        "weights_share": files.weights_bytes / files.total_bytes if files.total_bytes else None,
        "bytes_by_kind": {kind: files.bytes_of(kind) for kind in ("weights", "index", "config", "tokenizer", "other")},
        "unknown_sizes": files.unknown_sizes,
    }


def repo_files_table(checkpoint: Checkpoint, files: RepoFiles) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    t = Table(title=sanitize(f"{checkpoint.label}: {len(files.rows):,} files"), title_justify="left",
              show_edge=False, pad_edge=False)
    for col, just in (("file", "left"), ("kind", "left"), ("bytes", "right"), ("", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in files.rows[:MAX_TABLE_ROWS]:
        mark = "counted" if r.counted else ("another format or a copy: not counted" if r.kind == "weights" else "")
        t.add_row(sanitize(r.path), r.kind, n(r.size) if r.size is not None else "unknown", mark)
    share = f" ({files.weights_bytes / files.total_bytes:.1%})" if files.total_bytes else ""
    kinds = ", ".join(f"{kind} {size(files.bytes_of(kind))}" for kind in ("weights", "index", "config", "tokenizer",
                                                                            "other") if files.bytes_of(kind))
    lines = [Text(f"a download of every file fetches {files.total_bytes:,} B ({size(files.total_bytes)}); weights "
                  f"{files.weights_bytes:,} B{share}"), Text(kinds, style="dim")]
    if files.unknown_sizes:
        lines.append(Text(f"{files.unknown_sizes} file(s) of unknown size (not in the total)", style="yellow"))
    return Group(t, *capped(len(files.rows), "files", "--files --json"), *lines)


def cache_json(root: str, rows: list[CachedModel]) -> dict[str, object]:
    return {"schema_version": SCHEMA_VERSION, "cache": root,
            "models": [{"repo_id": r.repo_id, "revision": r.revision, "parameters": r.parameters, "bytes": r.bytes,
                        "files": r.files, "status": r.status} for r in rows]}


def cache_table(root: str, rows: list[CachedModel]) -> RenderableType:
    from rich.console import Group
    from rich.table import Table

    t = Table(title=sanitize(f"Hugging Face cache {root}"), title_justify="left", show_edge=False, pad_edge=False)
    for col, just in (("repo", "left"), ("revision", "left"), ("parameters", "right"), ("bytes", "right"),
                      ("files", "right"), ("", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in rows[:MAX_TABLE_ROWS]:
        t.add_row(sanitize(r.repo_id), sanitize(r.revision[:12]), n(r.parameters), n(r.bytes),
                  n(r.files), "" if r.status == "ok" else sanitize(r.status))
    more = capped(len(rows), "cached models", "--json")
    return Group(t, *more) if more else t


# --- markdown for show, estimate and audit (pull-request comments) -----------------------------------


def _md_table(title: str | None, head: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    rule = "|" + "|".join("--:" if i in right else "---" for i in range(len(head))) + "|"
    lead = [f"**{title}**", ""] if title else []
    return [*lead, "| " + " | ".join(head) + " |", rule, *("| " + " | ".join(r) + " |" for r in rows), ""]


def table_markdown(renderable: RenderableType) -> str:
    """A listing's rich table(s) as markdown: each table's title in bold, its columns and cells (already
    sanitised, escaped for markdown here), right-aligned columns kept right; a line of text as a line."""
    from rich.console import Group
    from rich.table import Table

    from inspector.render.text import markdown

    lines: list[str] = []
    for part in _leaves(renderable) if isinstance(renderable, Group) else [renderable]:
        if isinstance(part, Table):
            head = [markdown(_plain(c.header)) for c in part.columns]
            cells = [[markdown(_plain(cell)) for cell in c.cells] for c in part.columns]
            rows = [list(row) for row in zip(*cells, strict=True)] if cells else []
            right = {i for i, c in enumerate(part.columns) if c.justify == "right"}
            lines += _md_table(_plain(part.title) if part.title else None, head, rows, right)
        else:
            lines += [markdown(_plain(part)), ""]
    return "\n".join(lines)


def report_markdown(report: Report) -> str:
    """``inspect MODEL --format markdown``: headline figures, by role, by dtype, files. Every string
    from the checkpoint is escaped for markdown."""
    from inspector.render.text import markdown

    s = report.summary
    c = report.checkpoint
    lines = [f"### {markdown(c.label)}", ""]
    lines += _md_table(None, ["figure", "value", "what it counts"], [
        ["Parameters", n(s.parameters), "elements of tensors that are parameters"],
        ["Buffers", n(s.buffer_elements), "elements of saved non-parameter state"],
        ["Quant data", n(s.quant_elements), "scales, zero points and other quantisation side data"],
        ["Hub total", n(s.hub_total), "every element, as the Hub's model page counts"],
        ["Bytes", n(s.bytes), "tensor data bytes from the headers"],
        ["Tensors", n(s.tensors), f"in {len(s.shards)} files"],
    ], {1})
    lines += _md_table("By role",
        ["role", "tensors", "parameters", "bytes"],
        [[markdown(r.role), n(r.tensors), n(r.parameters or r.quant_elements or r.buffer_elements), n(r.bytes)]
         for r in s.by_role], {1, 2, 3})
    lines += _md_table("By dtype",
        ["dtype", "tensors", "elements", "bytes"],
        [[markdown(d.dtype), n(d.tensors), n(d.elements), n(d.bytes)] for d in s.by_dtype], {1, 2, 3})
    lines += _md_table("Files",
        ["file", "size", "tensors"], [[markdown(h.file), n(h.size), n(h.tensors)] for h in s.shards[:MAX_TABLE_ROWS]],
        {1, 2})
    if len(s.shards) > MAX_TABLE_ROWS:
        lines += [f"_… {len(s.shards) - MAX_TABLE_ROWS:,} more files not drawn (--json lists every one)_", ""]
    lines += [f"_{markdown(note)}_" for note in report.notes]
    return "\n".join(lines) + "\n"


def estimate_markdown(report: Report, est: Estimate, fitted: Fit | None = None) -> str:
    """``inspect estimate --format markdown``: every figure with its formula and source; the fit."""
    from inspector.render.text import markdown

    lines = [f"### {markdown(report.checkpoint.label)}: {markdown(estimate_scope(est))}", ""]
    lines += _md_table(None, ["figure", "value", "formula", "source"], [
        [markdown(f.name), "unknown" if f.value is None else n(f.value) + (f" {markdown(f.unit)}" if f.unit else ""),
         markdown(f.formula), markdown(f.source)] for f in est.figures], {1})
    if est.what_if:
        lines += _md_table("Weights in other dtypes",
            ["dtype", "bytes"], [[markdown(w.dtype), n(w.bytes)] for w in est.what_if], {1})
    if fitted is not None:
        lines += _md_table("Fit", ["term", "bytes per device"], [
            ["weights", n(fitted.weights_bytes)], ["KV cache", n(fitted.kv_bytes)],
            *[[markdown(t.name), n(t.bytes)] for t in fitted.terms], ["total", n(fitted.total_bytes)],
            ["budget", n(fitted.budget_bytes)], ["usable", n(fitted.usable_bytes)],
            *([["KV pool", n(fitted.kv_pool_bytes)]] if fitted.kv_pool_bytes is not None else [])], {1})
        if fitted.fits is False and fitted.engine == "diffusers":
            lines.append("does not fit: the weights alone are more than the budget, before any activation")
        elif fitted.fits is None or fitted.max_context is None or fitted.max_batch is None:
            lines.append("fit unknown: " + markdown(fitted.unknown or "a figure is missing"))
        else:
            lines.append(("fits" if fitted.fits else "does not fit") +
                         f"; largest context {n(fitted.max_context)}, largest batch {n(fitted.max_batch)}")
    lines += [f"_warning: {markdown(w)}_" for w in (*est.warnings, *(fitted.warnings if fitted else ()))]
    return "\n".join(lines) + "\n"


def audit_markdown(result: AuditResult) -> str:
    """``inspect audit --format markdown``: the verdict and every finding."""
    from inspector.render.text import markdown

    inp = result.input
    verdict = "clean: no findings" if not result.findings else (
        f"{result.errors} error(s), {result.warnings} warning(s)")
    lines = [f"### audit of {markdown(inp.label)}: {verdict}", ""]
    if result.findings:
        lines += _md_table(None, ["severity", "code", "file", "tensor", "finding"], [
            [f.severity, markdown(f.code), markdown(f.file or ""), markdown(f.tensor or ""), markdown(f.message)]
            for f in result.findings], set())
    return "\n".join(lines) + "\n"
