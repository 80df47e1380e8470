"""``inspect MODEL --json``."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from inspector.model import Kind
from inspector.results import common
from inspector.results.common import ConfigDoc, ModelDoc, SchemaVersion, TotalsDoc

if TYPE_CHECKING:
    from inspector.analysis.facts.formula import FormulaCheck
    from inspector.analysis.facts.report import Report
    from inspector.analysis.serving.listing import ListingRow


class RoleRow(TypedDict):
    role: str
    tensors: int
    parameters: int
    quant_elements: int
    buffer_elements: int
    bytes: int


class DtypeRow(TypedDict):
    dtype: str
    tensors: int
    parameters: int
    elements: int
    bytes: int


class LayerGroupRow(TypedDict):
    stack: str
    first: int
    last: int
    count: int
    tensors_each: int
    parameters_each: int
    bytes_each: int


class ShardRow(TypedDict):
    file: str
    size: int | None
    tensors: int
    header_bytes: int
    data_bytes: int
    metadata: dict[str, str]


class FileSize(TypedDict):
    path: str
    size: int | None


ComponentRow = TypedDict("ComponentRow", {
    "name": str, "library": str | None, "class": str | None, "model_type": str | None, "tensors": int,
    "parameters": int, "bytes": int, "dtypes": list[str]})

TokenizerDoc = TypedDict("TokenizerDoc", {
    "class": str | None, "vocab_size": int | None, "vocab_source": str, "embedding_rows": int | None,
    "special": dict[str, str], "added_tokens": int | None, "added_special": int | None, "chat_template": bool,
    "chat_template_source": str | None, "chat_templates": list[str], "model_max_length": int | None,
    "generation": dict[str, object], "notes": list[str]})


class FormulaRow(TypedDict):
    role: str
    formula: str
    predicted: int
    actual: int
    note: str


class FormulaDoc(TypedDict):
    """The config-only formula beside the headers' count (analysis/facts/formula.py)."""

    #: None: no closed formula for this model type (``notes`` says so)
    family: str | None
    predicted: int
    actual: int
    context_enters: bool
    notes: list[str]
    rows: list[FormulaRow]


class TensorRow(TypedDict):
    name: str
    dtype: str
    shape: list[int]
    count: int
    role: str
    kind: Kind
    file: str | None
    #: llama.cpp's order of dimensions (innermost first) for a GGUF tensor, else None
    shape_in_file: list[int] | None


class ShowDoc(TypedDict):
    schema_version: SchemaVersion
    model: ModelDoc
    config: ConfigDoc
    totals: TotalsDoc
    by_role: list[RoleRow]
    by_dtype: list[DtypeRow]
    layer_groups: list[LayerGroupRow]
    shards: list[ShardRow]
    other_weight_files: list[FileSize]
    components: list[ComponentRow] | None
    tokenizer: TokenizerDoc | None
    notes: list[str]
    formula: FormulaDoc | None
    tensors: list[TensorRow] | None


def report_json(report: Report, *, rows: list[ListingRow] | None, formula: FormulaCheck | None = None
                ) -> ShowDoc:
    """The ``inspect --json`` document (schema_version 2; every key always present)."""
    c = report.checkpoint
    s = report.summary
    metadata = {h.file: h.metadata for h in c.headers}
    return {
        "schema_version": common.SCHEMA_VERSION,
        "model": common.model_json(c),
        "config": common.config_json(report.config),
        "totals": common.totals_json(s),
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


def tokenizer_json(report: Report) -> TokenizerDoc | None:
    t = report.tokenizer
    if t is None:
        return None
    return {"class": t.tokenizer_class, "vocab_size": t.vocab_size, "vocab_source": t.vocab_source,
            "embedding_rows": t.embedding_rows, "special": dict(t.special), "added_tokens": t.added_tokens,
            "added_special": t.added_special, "chat_template": t.chat_template,
            "chat_template_source": t.chat_template_source, "chat_templates": list(t.chat_templates),
            "model_max_length": t.model_max_length, "generation": dict(t.generation), "notes": list(t.notes)}


def components_json(report: Report) -> list[ComponentRow] | None:
    return [{"name": r.name, "library": r.library, "class": r.class_name, "model_type": r.model_type,
             "tensors": r.tensors, "parameters": r.parameters, "bytes": r.bytes, "dtypes": list(r.dtypes)}
            for r in report.components] if report.components else None


def formula_json(check: FormulaCheck) -> FormulaDoc:
    return {
        "family": check.family, "predicted": check.predicted, "actual": check.actual,
        "context_enters": check.context_enters, "notes": list(check.notes),
        "rows": [{"role": r.role, "formula": r.formula, "predicted": r.predicted, "actual": r.actual,
                  "note": r.note} for r in check.rows],
    }
