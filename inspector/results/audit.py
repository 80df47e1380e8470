"""``inspect audit TARGET --json``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypedDict

from inspector.model import Severity
from inspector.results import common
from inspector.results.common import ModelDoc, SchemaVersion

if TYPE_CHECKING:
    from inspector.analysis.checks.audit import AuditResult


class AuditCounts(TypedDict):
    error: int
    warning: int
    info: int


class AuditChecked(TypedDict):
    files: int
    headers: int
    tensors: int


class FindingRow(TypedDict):
    code: str
    severity: Severity
    file: str | None
    tensor: str | None
    message: str


class PickleGlobalRow(TypedDict):
    file: str
    pickle: str
    module: str
    name: str
    verdict: Literal["allowed", "refused"]


class AuditDoc(TypedDict):
    schema_version: SchemaVersion
    model: ModelDoc
    ok: bool
    counts: AuditCounts
    checked: AuditChecked
    findings: list[FindingRow]
    pickle_globals: list[PickleGlobalRow]


def audit_json(result: AuditResult) -> AuditDoc:
    inp = result.input
    return {
        "schema_version": common.SCHEMA_VERSION,
        "model": common.model_json(inp.checkpoint) if inp.checkpoint is not None else {
            "label": inp.label, "repo_id": None, "revision": None, "path": None if inp.remote else inp.location,
            "origin": "hub" if inp.remote else "folder", "format": None,
            "kind": None},
        "ok": result.errors == 0,
        "counts": {"error": result.errors, "warning": result.warnings,
                   "info": sum(f.severity == "info" for f in result.findings)},
        "checked": {"files": result.checked.files, "headers": result.checked.headers,
                    "tensors": result.checked.tensors},
        "findings": [{"code": f.code, "severity": f.severity, "file": f.file, "tensor": f.tensor,
                      "message": f.message} for f in result.findings],
        "pickle_globals": [{"file": file, "pickle": i.pickle, "module": i.module, "name": i.name,
                            "verdict": "allowed" if i.allowed else "refused"} for file, i in result.imports],
    }
