"""Renderers of ``inspect MODEL``: the report as JSON, as a table for people and as markdown; the config line, the
components, the tokenizer, the tensor listing and the formula check. Every string from the checkpoint goes through
``sanitize`` (or ``markdown``) first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector import repos
from inspector.analysis.facts.config import ModelConfig
from inspector.analysis.facts.packing import MLX_BITS, quant_bits
from inspector.analysis.facts.report import Report
from inspector.formats.dtypes import DTYPE_BITS
from inspector.model import ORIGIN_WORDS, Checkpoint
from inspector.render.output import (
    MAX_TABLE_ROWS,
    capped,
    md_table,
    n,
    shape_text,
    short,
    size,
    table_markdown,
    titled_table,
)
from inspector.render.text import markdown, sanitize

if TYPE_CHECKING:  # rich is imported where a table is drawn: `inspect --json` never needs it
    from rich.console import RenderableType

    from inspector.analysis.facts.formula import FormulaCheck
    from inspector.analysis.serving.listing import ListingRow

# --- inspect: JSON ----------------------------------------------------------------------------


def listing(report: Report, collapse: bool) -> list[ListingRow]:
    # deferred: 4 ms at import (inspector.analysis.serving.listing)
    from inspector.analysis.serving.listing import collapsed_rows, tensor_rows  # only where tensors are listed

    if collapse:
        return collapsed_rows(report.tensors, report.summary.layer_groups)
    return tensor_rows(report.tensors)


# --- inspect: tables --------------------------------------------------------------------------


def _mlp_parts(cfg: ModelConfig) -> list[str]:
    """The MLP width: a dense model's; a MoE's expert width (``moe_intermediate_size``, or the MLP
    width where experts are whole MLPs, as Mixtral's), its shared experts, and a dense width only
    where dense layers lead (DeepSeek's ``first_k_dense_replace``)."""
    if not cfg.moe.num_experts:
        return [f"MLP {n(cfg.intermediate_size)}"] if cfg.intermediate_size else []
    width = cfg.moe.moe_intermediate_size or cfg.intermediate_size
    parts = [f"experts {cfg.moe.num_experts} × MLP {n(width)} (top-{cfg.moe.experts_per_token})" if width else
             f"experts {cfg.moe.num_experts} (top-{cfg.moe.experts_per_token})"]
    shared_width = cfg.raw.get("shared_expert_intermediate_size")
    if type(shared_width) is int and shared_width > 0:
        parts.append(f"shared expert MLP {n(shared_width)}")
    elif cfg.moe.shared_experts and cfg.moe.moe_intermediate_size:
        parts.append(f"shared experts {cfg.moe.shared_experts} × MLP {n(cfg.moe.moe_intermediate_size)}")
    if cfg.moe.first_k_dense and cfg.intermediate_size and cfg.moe.moe_intermediate_size:
        parts.append(f"dense MLP {n(cfg.intermediate_size)} in the first {cfg.moe.first_k_dense} layers")
    return parts


def config_line(cfg: ModelConfig) -> str:
    if cfg.reading.source == "none":
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
    if cfg.mla.kv_lora_rank:
        parts.append(f"MLA kv_lora_rank {cfg.mla.kv_lora_rank} + rope {cfg.mla.qk_rope_head_dim}")
    parts += _mlp_parts(cfg)
    if cfg.vocab_size:
        parts.append(f"vocab {n(cfg.vocab_size)}")
    if cfg.storage.tie_word_embeddings is not None and not cfg.encoder_only:  # an encoder has no output layer to tie
        parts.append("tied embeddings" if cfg.storage.tie_word_embeddings else "untied")
    if cfg.max_position:
        parts.append(f"context {n(cfg.max_position)}")
    if cfg.storage.dtype:
        parts.append(cfg.storage.dtype)
    if cfg.storage.quantization:
        named = cfg.storage.quantization.get("quant_method")
        mlx = "quantization" in cfg.raw  # mlx-lm's block: only the bits it writes are bits
        bits = quant_bits(cfg.storage.quantization)
        bits = None if mlx and bits not in MLX_BITS else bits
        parts.append((named if isinstance(named, str) else "mlx" if mlx else "quantised") +
                     (f" {bits}-bit" if bits is not None else ""))
    return " · ".join(parts)


def origin_text(c: Checkpoint) -> str:
    """Where the figures come from, said in the title line: a bundled snapshot says it was rebuilt."""
    at = f" at revision {c.provenance.revision[:12]}" if c.provenance.revision else ""
    if c.provenance.origin == "bundled":
        return f"bundled header snapshot, rebuilt from config.json{at} by shape rules"
    origin = "Hub, headers only" if c.provenance.origin == "hub" else ORIGIN_WORDS[c.provenance.origin]
    return origin + (f", revision {c.provenance.revision[:12]}" if c.provenance.revision else "")


def _totals_grid(report: Report, logical: tuple[str, int] | None) -> RenderableType:
    """The headline counts: parameters (logical and stored for packed words), buffers, quant data, the Hub's total,
    bytes and tensors."""
    # deferred: 17 ms at import (rich.table)
    from rich.table import Table

    s = report.summary
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
    return totals


def _layers_table(report: Report) -> RenderableType:
    """One row a repeated layer block (the blocks not drawn summed in one row, so the table still sums), and what is
    outside the blocks."""

    s = report.summary
    layers = titled_table("Layer blocks", "block", "tensors each", "parameters each", "parameters", "bytes each")
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
    return layers


def report_table(report: Report, *, all_shards: bool = False, logical: tuple[str, int] | None = None) -> RenderableType:
    """``logical``: (method, logical parameters) of a packed quantised checkpoint: the method is named
    beside the parameters (which are logical whatever is passed)."""
    # deferred: 20 ms at import (rich.console, rich.text)
    from rich.console import Group
    from rich.text import Text

    c = report.checkpoint
    s = report.summary
    title = Text()
    title.append(sanitize(c.label), style="bold")
    title.append(f"  ({sanitize(origin_text(c))})", style="dim")
    repo = repos.kind_of(c)
    line = config_line(report.config) if repo is None or not repo.separate else \
        f"{c.composite_class or repo.name} ({repo.index_file}): " + ", ".join(
            f"{r.name} {r.class_name or ''}".strip() for r in report.components if r.tensors)
    parts: list[RenderableType] = [title, Text(sanitize(line), style="cyan"), Text("")]

    totals = _totals_grid(report, logical)
    parts += [totals, Text("")]
    if report.components:
        parts += [components_table(report), Text("")]

    roles = titled_table("By role", "role", "tensors", "parameters", "share", "bytes")
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
        parts += [_layers_table(report), *capped(len(s.layer_groups), "layer blocks", "--json"), Text("")]

    dtypes = titled_table("By dtype", "dtype", "tensors", "elements", "of which parameters", "bytes")
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
    # deferred: 13 ms at import (rich.text)
    from rich.text import Text

    s = report.summary
    parts: list[RenderableType] = []
    if s.shards and (len(s.shards) <= 8 or all_shards):
        shards = titled_table("Files", "file", "size", "tensors", "header")
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
    # deferred: 17 ms at import (rich.table)
    from rich.table import Table

    c = report.checkpoint
    repo = repos.kind_of(c)
    title = "Components" + (f" ({repo.index_file})" if repo is not None else "")
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
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


def tensor_lines(rows: list[ListingRow]) -> list[str]:
    """``model.layers.0.mlp.gate_proj.weight [14336, 4096] BF16`` lines (plain, for pipes)."""
    return [
        f"{sanitize(r.name)} {shape_text(r.shape)} {r.dtype}" + (f" ×{r.count}" if r.count > 1 else "")
        for r in rows
    ]


def formula_table(check: FormulaCheck) -> RenderableType:
    # deferred: 25 ms at import (rich.console, rich.table, rich.text)
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


def report_markdown(report: Report) -> str:
    """``inspect MODEL --format markdown``: headline figures, by role, by dtype, files. Every string
    from the checkpoint is escaped for markdown."""
    s = report.summary
    c = report.checkpoint
    lines = [f"### {markdown(c.label)}", ""]
    lines += md_table(None, ["figure", "value", "what it counts"], [
        ["Parameters", n(s.parameters), "elements of tensors that are parameters"],
        ["Buffers", n(s.buffer_elements), "elements of saved non-parameter state"],
        ["Quant data", n(s.quant_elements), "scales, zero points and other quantisation side data"],
        ["Hub total", n(s.hub_total), "every element, as the Hub's model page counts"],
        ["Bytes", n(s.bytes), "tensor data bytes from the headers"],
        ["Tensors", n(s.tensors), f"in {len(s.shards)} files"],
    ], {1})
    if report.components:  # a multi-component repo's parts, as the table draws them
        lines += table_markdown(components_table(report)).splitlines()
    lines += md_table("By role",
        ["role", "tensors", "parameters", "bytes"],
        [[markdown(r.role), n(r.tensors), n(r.parameters or r.quant_elements or r.buffer_elements), n(r.bytes)]
         for r in s.by_role], {1, 2, 3})
    lines += md_table("By dtype",
        ["dtype", "tensors", "elements", "bytes"],
        [[markdown(d.dtype), n(d.tensors), n(d.elements), n(d.bytes)] for d in s.by_dtype], {1, 2, 3})
    lines += md_table("Files",
        ["file", "size", "tensors"], [[markdown(h.file), n(h.size), n(h.tensors)] for h in s.shards[:MAX_TABLE_ROWS]],
        {1, 2})
    if len(s.shards) > MAX_TABLE_ROWS:
        lines += [f"_… {len(s.shards) - MAX_TABLE_ROWS:,} more files not drawn (--json lists every one)_", ""]
    lines += [f"_{markdown(note)}_" for note in report.notes]
    return "\n".join(lines) + "\n"
