"""``inspect compare M1 … Mn --json``."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from inspector.analysis.comparison.compare import Cell, Section
from inspector.results import common
from inspector.results.common import ConfigDoc, ModelDoc, SchemaVersion, TotalsDoc

if TYPE_CHECKING:
    from inspector.analysis.comparison.compare import Comparison


class CompareModel(TypedDict):
    model: ModelDoc
    totals: TotalsDoc
    config: ConfigDoc
    kv_bytes_per_token: int | None
    roles: dict[str, int]
    parameters_by_role: dict[str, int]


class CompareRow(TypedDict):
    section: Section
    label: str
    values: list[Cell]


class CompareDoc(TypedDict):
    schema_version: SchemaVersion
    models: list[CompareModel]
    rows: list[CompareRow]


def compare_json(cmp: Comparison) -> CompareDoc:
    return {
        "schema_version": common.SCHEMA_VERSION,
        "models": [
            {"model": common.model_json(r.checkpoint), "totals": common.totals_json(r.summary),
             "config": common.config_json(r.config),
             "kv_bytes_per_token": kv,
             "roles": {x.role: x.parameters or x.buffer_elements or x.quant_elements for x in r.summary.by_role},
             "parameters_by_role": {x.role: x.parameters for x in r.summary.by_role if x.parameters}}
            for r, kv in zip(cmp.reports, cmp.kv_bytes_per_token, strict=True)
        ],
        "rows": [{"section": row.section, "label": row.label, "values": list(row.values)} for row in cmp.rows],
    }
