"""``inspect lineage MODEL [CANDIDATE ...] --json``: the relation and tensor-kind words are the analysis' own."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from inspector.analysis.comparison.lineage import CardRelation, Kind, Relation
from inspector.results import common
from inspector.results.common import ModelDoc, SchemaVersion

if TYPE_CHECKING:
    from inspector.analysis.comparison.ancestry import Candidate, Lineage, TensorEvidence


class LineageTensor(TypedDict):
    name: str
    role: str
    layer: int | None
    relation: Kind
    why: str
    correlation: float | None
    max_abs_change: float | None


class CandidateDoc(TypedDict):
    model: str
    checkpoint: ModelDoc | None
    declared: str | None
    relation: Relation
    why: str
    files_identical: int | None
    files_compared: int | None
    tensors_aligned: int
    tensors_compared: int
    tensors_packed: int
    tensors_equal: int
    tensors_changed: int
    tensors_unrelated: int
    tensors_blended: int
    tensors_quantized: int
    tensors_constant: int
    tensors_incomparable: int
    changed_roles: list[str]
    changed_layers: list[int]
    weight: float | None
    fingerprint: str | None
    tensors: list[LineageTensor]


class DeclaredBase(TypedDict):
    model: str
    where: str


class LineageDoc(TypedDict):
    schema_version: SchemaVersion
    model: ModelDoc
    verdict: Relation
    base: str | None
    parents: list[str]
    weights: dict[str, float | None]
    declared_base: str | None
    declared_bases: list[DeclaredBase]
    declared_relation: CardRelation | None
    declared_matches: bool | None
    fingerprint: str
    tensors_sampled: int
    bytes_read: int
    model_bytes_read: int
    weights_bytes: int
    requests: int
    evidence: list[str]
    candidates: list[CandidateDoc]


def _tensor_json(t: TensorEvidence) -> LineageTensor:
    return {"name": t.name, "role": t.role, "layer": t.layer, "relation": t.kind, "why": t.why,
            "correlation": t.correlation, "max_abs_change": t.max_abs}


def _candidate_json(c: Candidate) -> CandidateDoc:
    k = c.counts
    return {
        "model": c.label, "checkpoint": common.model_json(c.checkpoint) if c.checkpoint is not None else None,
        "declared": c.declared, "relation": c.relation, "why": c.why,
        "files_identical": c.files[0] if c.files is not None else None,
        "files_compared": c.files[1] if c.files is not None else None,
        "tensors_aligned": c.aligned, "tensors_compared": k.compared, "tensors_packed": k.packed,
        "tensors_equal": k.equal,
        "tensors_changed": k.changed + k.unrelated, "tensors_unrelated": k.unrelated, "tensors_blended": k.blended,
        "tensors_quantized": k.quantized, "tensors_constant": k.constant, "tensors_incomparable": k.incomparable,
        "changed_roles": list(c.changed_roles), "changed_layers": list(c.changed_layers), "weight": c.weight,
        "fingerprint": c.fingerprint,
        "tensors": [_tensor_json(t) for t in c.tensors],
    }


def lineage_json(lin: Lineage) -> LineageDoc:
    """The ``inspect lineage --json`` document: the verdict, the base (or a merge's parents), the declared
    base checked, the bytes and requests read, one object a candidate."""
    parents = {c.label: c.weight for c in lin.candidates}
    return {
        "schema_version": common.SCHEMA_VERSION, "model": common.model_json(lin.model.checkpoint),
        "verdict": lin.verdict,
        "base": lin.base, "parents": list(lin.parents), "weights": {p: parents[p] for p in lin.parents},
        "declared_base": lin.declared.first,
        "declared_bases": [{"model": b, "where": w} for b, w in lin.declared.bases],
        "declared_relation": lin.declared.relation, "declared_matches": lin.declared_matches,
        "fingerprint": lin.fingerprint, "tensors_sampled": lin.sampled,
        "bytes_read": sum(lin.tensor_bytes_read), "model_bytes_read": lin.tensor_bytes_read[0],
        "weights_bytes": lin.model.summary.bytes, "requests": lin.requests,
        "evidence": list(lin.evidence), "candidates": [_candidate_json(c) for c in lin.candidates],
    }
