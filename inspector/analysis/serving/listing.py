"""The per-tensor listing behind ``--tensors``: natural order, optionally with layers and experts collapsed."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final, Literal

from inspector import repos
from inspector.analysis.facts.stats import LayerGroup, Summary, Tensor, layer_suffix
from inspector.model import Checkpoint, Kind, natural_key

if TYPE_CHECKING:
    from inspector.analysis.facts.report import Report
    from inspector.analysis.serving.budget import Budget

#: a file of several beside one model: the model, or a projector (llama.cpp's mmproj, loaded beside it)
FileKind = Literal["model", "projector"]
#: a repo's file as ``--files`` sorts it
RepoFileKind = Literal["weights", "index", "config", "tokenizer", "other"]

@dataclass(frozen=True, slots=True)
class ListingRow:
    name: str  # ``model.layers.{0–31}.mlp.gate_proj.weight`` when collapsed
    dtype: str
    shape: tuple[int, ...]
    count: int  # tensors this row stands for
    role: str
    kind: Kind
    file: str | None  # None when the row's tensors span several files


def tensor_rows(tensors: list[Tensor]) -> list[ListingRow]:
    rows = [ListingRow(t.info.name, t.info.dtype, t.info.shape, 1, t.place.role, t.place.kind, t.info.file)
            for t in tensors]
    rows.sort(key=lambda r: natural_key(r.name))
    return rows


_RANGE = re.compile(r"\{(\d+)[^}]*\}")  # order a collapsed range by its first index


def collapsed_rows(tensors: list[Tensor], groups: tuple[LayerGroup, ...]) -> list[ListingRow]:
    """One row per tensor of a repeated block: the layer index becomes the group's range, an
    expert index the range of experts, so DeepSeek-V3's 91,991 tensors fit on a screen.

    Rows are keyed on the group and the name's texts around the expert number, never on a
    rewritten name: a name that already reads like a collapsed one (``layers.{0–31}``,
    ``experts.{#}``) keeps a row of its own."""
    group_of: dict[tuple[str, int], LayerGroup] = {}
    for g in groups:
        for i in range(g.first, g.last + 1):
            group_of[(g.stack, i)] = g
    # (group, name's text before the expert number, after it or None, dtype, shape) → tensors
    Key = tuple[LayerGroup | None, str, str | None, str, tuple[int, ...]]
    buckets: dict[Key, list[Tensor]] = defaultdict(list)
    experts: dict[Key, set[int]] = defaultdict(set)
    for t in tensors:
        name = t.info.name
        place = t.place
        group = None
        if place.stack is not None and place.layer is not None:
            g = group_of[(place.stack, place.layer)]
            if g.count > 1:
                group = g
                name = layer_suffix(t)
        before, after = name, None
        if place.expert is not None:
            head, marker, tail = name.partition(f".experts.{place.expert}.")
            if marker:
                before, after = head, tail
        key = (group, before, after, t.info.dtype, t.info.shape)
        buckets[key].append(t)
        if after is not None:
            experts[key].add(place.expert)  # type: ignore[arg-type]
    rows = []
    for key, members in buckets.items():
        group, name, after, dtype, shape = key
        if group is not None:
            name = f"{group.stack}.{{{group.first}–{group.last}}}.{name}"
        if after is not None:
            ids = experts[key]
            lo, hi = min(ids), max(ids)
            span = f"{lo}–{hi}" if len(ids) == hi - lo + 1 else ",".join(map(str, sorted(ids)))
            name = f"{name}.experts.{{{span}}}.{after}"
        files = {m.info.file for m in members}
        first = members[0]
        rows.append(ListingRow(name, dtype, shape, len(members), first.place.role, first.place.kind,
                               files.pop() if len(files) == 1 else None))
    rows.sort(key=lambda r: natural_key(_RANGE.sub(r"\1", r.name)))
    return rows


@dataclass(frozen=True, slots=True)
class FileRow:
    """One file of a folder or repo holding one model in several files (GGUF quantisations), with
    its fit when a budget is given."""

    file: str
    type: str | None  # the dtype or GGML type holding the most bytes of parameters
    bytes: int
    parameters: int
    bits_per_weight: float | None
    kind: FileKind = "model"  # or a projector (a clip.* mmproj file, loaded beside a model)
    fits: bool | None = None  # None: no budget given, a projector, or unknown (``note`` says why)
    max_context: int | None = None
    kv_bytes_per_token: int | None = None
    #: with a budget: what the file needs per device at the context (weights, KV cache, the engine's
    #: terms, a projector beside it); None where a figure is unknown
    needed_bytes: int | None = None
    note: str | None = None


def largest_fitting(rows: list[FileRow]) -> FileRow | None:
    """The model file that fits with the most bytes (the least quantised of those that fit: "which quant fits
    12 GB"); None where none is known to fit."""
    return max((r for r in rows if r.kind == "model" and r.fits), key=lambda r: (r.bytes, r.file), default=None)


def file_row(file: str, s: Summary, kind: FileKind = "model") -> FileRow:
    by_bytes = max((d for d in s.by_dtype if d.parameters), key=lambda d: d.bytes, default=None)
    return FileRow(file, by_bytes.dtype if by_bytes else None, s.bytes, s.parameters,
                   round(s.bytes * 8 / s.parameters, 3) if s.parameters else None, kind)


def is_projector(report: Report) -> bool:
    """A multimodal projector (llama.cpp's ``mmproj-*.gguf``): its architecture is ``clip``."""
    return report.config.model_type == "clip" or any(
        k.startswith("clip.") for h in report.checkpoint.headers for k in h.metadata)


def file_rows(files: list[tuple[str, Report]], *, budget: Budget | None = None, context: int | None = None,
              kv_dtype: str | None = None) -> tuple[list[FileRow], list[str]]:
    """One row a file; with ``budget``, whether each model file fits at ``context`` (its own limit by
    default) and its largest context, the projectors' bytes added to each model's weights. Returns
    the rows and the assumptions said under them."""
    # deferred: 44 ms at import (inspector.analysis.serving.estimate, inspector.analysis.serving.fit)
    from inspector.analysis.serving.estimate import estimate
    from inspector.analysis.serving.fit import Settings, fit

    projectors = [(f, r) for f, r in files if is_projector(r)]
    extra = sum(r.summary.bytes for _, r in projectors)
    rows: list[FileRow] = []
    for file, report in files:
        if is_projector(report):
            rows.append(file_row(file, report.summary, "projector"))
            continue
        row = file_row(file, report.summary)
        if budget is not None:
            est = estimate(report, context=context, kv_dtype=kv_dtype, what_if=())
            fitted = fit(report, est, budget, settings=Settings(extra_weights=extra))
            kv = est.kv.per_token.value if est.kv is not None else None
            row = replace(row, fits=fitted.fits, max_context=fitted.limits.max_context,
                          kv_bytes_per_token=int(kv) if kv is not None else None,
                          needed_bytes=fitted.total_bytes if fitted.unknown is None else None,
                          note=fitted.unknown or f"at {est.context:,} tokens")
        rows.append(row)
    notes = []
    if projectors and budget is not None:
        names = ", ".join(f for f, _ in projectors)
        notes.append(f"each model file's fit counts the projector {names} ({extra:,} B) beside it, as llama.cpp "
                     "loads an mmproj file with its model for images")
    return rows, notes


@dataclass(frozen=True, slots=True)
class CachedModel:
    """One model snapshot of a Hugging Face cache, with its counts (None where it could not be read)."""

    repo_id: str
    revision: str
    parameters: int | None
    bytes: int | None
    files: int | None
    status: str  # "ok", "config only", or why it could not be read


#: what a file of a repo is, by its name: tokenizer files (transformers, sentencepiece, tiktoken),
#: configs (model, generation, processors, adapters, pipelines, sentence-transformers modules)
TOKENIZER_NAMES: Final = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                          "vocab.json", "vocab.txt", "merges.txt", "tokenizer.model", "spiece.model",
                          "sentencepiece.bpe.model", "chat_template.jinja", "chat_template.json")
TOKENIZER_SUFFIXES: Final = (".tiktoken",)
CONFIG_NAMES: Final = ("config.json", "generation_config.json", "preprocessor_config.json", "processor_config.json",
                       "adapter_config.json", *repos.index_files(), "quantize_config.json",
                       "params.json", "config_sentence_transformers.json", "sentence_bert_config.json",
                       "scheduler_config.json")


@dataclass(frozen=True, slots=True)
class RepoFile:
    path: str
    size: int | None
    kind: RepoFileKind
    counted: bool  # a weight file the inspector reads (False: another format or a copy, never counted)


@dataclass(frozen=True, slots=True)
class RepoFiles:
    """Every file of a folder or repo, as its listing gives them (nothing downloaded)."""

    rows: tuple[RepoFile, ...]
    total_bytes: int  # what a download of every file would fetch (files of unknown size left out)
    weights_bytes: int  # of it, weight files of every format
    unknown_sizes: int  # files the listing gives no size for

    def bytes_of(self, kind: RepoFileKind) -> int:
        return sum(r.size or 0 for r in self.rows if r.kind == kind)


def file_kind(path: str, weight_suffixes: tuple[str, ...]) -> RepoFileKind:
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".index.json") and ("safetensors" in name or "pytorch_model" in name or "model" in name):
        return "index"
    if path.endswith(weight_suffixes):
        return "weights"
    if name in TOKENIZER_NAMES or name.endswith(TOKENIZER_SUFFIXES):
        return "tokenizer"
    if name in CONFIG_NAMES or (name.endswith("_config.json") and "/" not in path):
        return "config"
    return "other"


def repo_files(checkpoint: Checkpoint, counted: frozenset[str] | None = None) -> RepoFiles:
    """The checkpoint's folder or repo, file by file, with each file's kind; ``counted``: the weight
    files read (default: those whose headers it holds; a GGUF set: each file, read on its own)."""
    # deferred: 2 ms at import (inspector.formats.registry)
    from inspector.formats.registry import weight_suffixes

    suffixes = weight_suffixes()
    counted = counted if counted is not None else frozenset(h.file for h in checkpoint.headers)
    rows = tuple(RepoFile(f.path, f.size, kind := file_kind(f.path, suffixes),
                          kind == "weights" and f.path in counted)
                 for f in sorted(checkpoint.files, key=lambda f: natural_key(f.path)))
    return RepoFiles(rows, sum(r.size or 0 for r in rows), sum(r.size or 0 for r in rows if r.kind == "weights"),
                     sum(r.size is None for r in rows))
