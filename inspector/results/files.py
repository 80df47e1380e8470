"""``inspect MODEL --files --json`` and the several-GGUF-files listing."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from inspector.analysis.serving.listing import FileKind, RepoFileKind, largest_fitting
from inspector.results import common
from inspector.results.common import ModelDoc, SchemaVersion

if TYPE_CHECKING:
    from inspector.analysis.serving.budget import Budget
    from inspector.analysis.serving.listing import CachedModel, FileRow, RepoFiles
    from inspector.model import Checkpoint


class GgufFileRow(TypedDict):
    file: str
    kind: FileKind
    type: str | None
    bytes: int
    parameters: int
    bits_per_weight: float | None
    fits: bool | None
    max_context: int | None
    kv_bytes_per_token: int | None
    needed_bytes: int | None
    note: str | None


class FilesDoc(TypedDict):
    schema_version: SchemaVersion
    where: str
    budget_bytes: int | None
    devices: int | None
    #: with a budget: the model file that fits with the most bytes (null: none is known to fit, or no budget)
    largest_fit: str | None
    files: list[GgufFileRow]
    notes: list[str]


class RepoFileRow(TypedDict):
    path: str
    size: int | None
    kind: RepoFileKind
    counted: bool


class BytesByKind(TypedDict):
    weights: int
    index: int
    config: int
    tokenizer: int
    other: int


class RepoFilesDoc(TypedDict):
    schema_version: SchemaVersion
    model: ModelDoc
    files: list[RepoFileRow]
    total_bytes: int
    weights_bytes: int
    weights_share: float | None
    bytes_by_kind: BytesByKind
    unknown_sizes: int


def files_json(where: str, rows: list[FileRow], budget: Budget | None = None,
               notes: list[str] | None = None) -> FilesDoc:
    """Several files of one model; with a budget, the fit of each model file (``fits`` null for a
    projector, or where a figure is unknown: ``note`` says why)."""
    return {"schema_version": common.SCHEMA_VERSION, "where": where,
            "budget_bytes": budget.per_device if budget else None, "devices": budget.devices if budget else None,
            "largest_fit": best.file if budget and (best := largest_fitting(rows)) is not None else None,
            "files": [{"file": r.file, "kind": r.kind, "type": r.type, "bytes": r.bytes, "parameters": r.parameters,
                       "bits_per_weight": r.bits_per_weight, "fits": r.fits, "max_context": r.max_context,
                       "kv_bytes_per_token": r.kv_bytes_per_token, "needed_bytes": r.needed_bytes,
                       "note": r.note} for r in rows],
            "notes": list(notes or [])}


def repo_files_json(checkpoint: Checkpoint, files: RepoFiles) -> RepoFilesDoc:
    """Every file with its size and kind; the bytes a download of all would fetch, the weights' share."""
    return {
        "schema_version": common.SCHEMA_VERSION, "model": common.model_json(checkpoint),
        "files": [{"path": r.path, "size": r.size, "kind": r.kind, "counted": r.counted} for r in files.rows],
        "total_bytes": files.total_bytes, "weights_bytes": files.weights_bytes,
        "weights_share": files.weights_bytes / files.total_bytes if files.total_bytes else None,
        "bytes_by_kind": {"weights": files.bytes_of("weights"), "index": files.bytes_of("index"),
                          "config": files.bytes_of("config"), "tokenizer": files.bytes_of("tokenizer"),
                          "other": files.bytes_of("other")},
        "unknown_sizes": files.unknown_sizes,
    }


def cache_json(root: str, rows: list[CachedModel]) -> dict[str, object]:
    return {"schema_version": common.SCHEMA_VERSION, "cache": root,
            "models": [{"repo_id": r.repo_id, "revision": r.revision, "parameters": r.parameters, "bytes": r.bytes,
                        "files": r.files, "status": r.status} for r in rows]}
