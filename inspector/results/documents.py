"""Every published ``--json`` document: its schema's name, its title and its type; and the schemas
written from them (scripts/make_schemas.py writes them to inspector/schemas/)."""

from __future__ import annotations

from inspector.results import audit, compare, diff, estimate, files, lineage, plan, show, train
from inspector.results.schema import document_schema


def documents() -> dict[str, tuple[str, object]]:
    """Each published document: its schema's name, its title and its type."""
    return {"show": ("inspect MODEL --json", show.ShowDoc),
            "files": ("inspect FOLDER|REPO --json, for one model in several GGUF files [--gpu B --context N]",
                      files.FilesDoc),
            "repo-files": ("inspect MODEL --files --json", files.RepoFilesDoc),
            "diff": ("inspect diff A B --json", diff.DiffDoc),
            "adapter-diff": ("inspect diff BASE ADAPTER --json (a PEFT adapter against its base)",
                             diff.AdapterDiffDoc),
            "compare": ("inspect compare M1 … Mn --json", compare.CompareDoc),
            "estimate": ("inspect estimate MODEL --json", estimate.EstimateDoc),
            "audit": ("inspect audit TARGET --json", audit.AuditDoc),
            "train": ("inspect train MODEL --json", train.TrainDoc),
            "plan": ("inspect plan MODEL --json", plan.PlanDoc),
            "lineage": ("inspect lineage MODEL [CANDIDATE ...] --json", lineage.LineageDoc)}


def schemas() -> dict[str, dict[str, object]]:
    """Every document's JSON Schema, from its type and the registries as they are now."""
    return {name: document_schema(name, title, tp) for name, (title, tp) in documents().items()}
