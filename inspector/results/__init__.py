"""What each command answers, in one shape: a record a command (``inspector.api`` builds them,
``render.views`` draws them), whose ``to_dict()`` is the command's ``--json`` document, typed: the
document is a ``TypedDict`` (``results/<command>.py``, beside the one function that builds it), mypy
holds every builder and every reader (the HTML) to its keys, and the JSON Schema is written from it
(``results/schema.py``). Nothing here prints or draws."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inspector.model import Checkpoint

if TYPE_CHECKING:
    from inspector.analysis.checks.audit import AuditResult
    from inspector.analysis.comparison.adapter import AdapterDiff
    from inspector.analysis.comparison.ancestry import Lineage
    from inspector.analysis.comparison.compare import Comparison
    from inspector.analysis.comparison.diff import Diff
    from inspector.analysis.comparison.values import ValueDiff
    from inspector.analysis.facts.formula import FormulaCheck
    from inspector.analysis.facts.report import Report
    from inspector.analysis.knobs import Knob
    from inspector.analysis.serving.budget import Budget
    from inspector.analysis.serving.estimate import Estimate
    from inspector.analysis.serving.fit import CommonFit, Fit
    from inspector.analysis.serving.listing import CachedModel, FileRow, ListingRow, RepoFiles
    from inspector.analysis.serving.plan import Plan
    from inspector.analysis.training.train import Train
    from inspector.results.audit import AuditDoc
    from inspector.results.compare import CompareDoc
    from inspector.results.diff import AdapterDiffDoc, DiffDoc
    from inspector.results.estimate import EstimateDoc
    from inspector.results.files import FilesDoc, RepoFilesDoc
    from inspector.results.lineage import LineageDoc
    from inspector.results.plan import PlanDoc
    from inspector.results.show import ShowDoc
    from inspector.results.train import TrainDoc


@dataclass(frozen=True, slots=True)
class AliasRow:
    alias: str
    repo_id: str
    description: str
    bundled: bool  # its header snapshot ships in the package


@dataclass(frozen=True, slots=True)
class Aliases:
    """``inspect aliases``: the short names of the bundled models."""

    rows: tuple[AliasRow, ...]

    def to_dict(self) -> dict[str, object]:
        # deferred: 6 ms at import (inspector.results.common)
        from inspector.results.common import SCHEMA_VERSION

        return {"schema_version": SCHEMA_VERSION,
                "aliases": [{"alias": r.alias, "repo_id": r.repo_id, "description": r.description,
                             "bundled": r.bundled} for r in self.rows]}

    def names(self) -> frozenset[str]:
        return frozenset(r.alias.lower() for r in self.rows)


@dataclass(frozen=True, slots=True)
class CacheResult:
    """``inspect $HF_HUB_CACHE``: every cached model with its counts (``status`` says why one has none)."""

    root: str
    rows: tuple[CachedModel, ...]

    def to_dict(self) -> dict[str, object]:
        # deferred: 6 ms at import (inspector.results.files)
        from inspector.results.files import cache_json

        return cache_json(self.root, list(self.rows))


@dataclass(frozen=True, slots=True)
class Inspection:
    """``inspect MODEL``: the report (counts by role, dtype, layer block, file) and, when asked, the
    tensor listing and the config-only formula."""

    report: Report
    rows: tuple[ListingRow, ...] | None = None
    formula: FormulaCheck | None = None
    #: with ``summary``: the estimate at the model's defaults and the smallest common budget it fits
    #: (None where there is none: a figure unknown, an encoder)
    estimate: Estimate | None = None
    common: CommonFit | None = None

    @property
    def checkpoint(self) -> Checkpoint:
        return self.report.checkpoint

    @property
    def parameters(self) -> int:
        """Elements of tensors that are parameters (the headline figure)."""
        return self.report.summary.parameters

    @property
    def bytes(self) -> int:
        """Tensor data bytes, from the headers' offsets."""
        return self.report.summary.bytes

    def to_dict(self) -> ShowDoc:
        """The ``inspect MODEL --json`` document (schema ``inspector/schemas/show.schema.json``)."""
        # deferred: 7 ms at import (inspector.results.show)
        from inspector.results.show import report_json

        return report_json(self.report, rows=list(self.rows) if self.rows is not None else None,
                           formula=self.formula)


@dataclass(frozen=True, slots=True)
class Difference:
    """``inspect diff A B``: the gap explained cause by cause, or an adapter set against its base."""

    result: Diff | None = None
    adapter: AdapterDiff | None = None
    #: with ``values``: which tensors' bytes differ, from a few ranges of each
    values: ValueDiff | None = None

    @property
    def delta(self) -> int:
        """B's parameters minus A's (an adapter: the parameters it adds)."""
        if self.result is not None:
            return self.result.delta
        assert self.adapter is not None
        return self.adapter.parameters

    def gates_hit(self, gates: Sequence[str]) -> list[str]:
        """The ``--fail-if`` conditions (params, dtypes, shapes, any) this difference trips."""
        # deferred: 33 ms at import (inspector.analysis.comparison.adapter, inspector.analysis.comparison.diff)
        from inspector.analysis.comparison.adapter import adapter_gates_hit
        from inspector.analysis.comparison.diff import gates_hit

        if self.result is not None:
            return gates_hit(self.result, list(gates), self.values)
        assert self.adapter is not None
        return adapter_gates_hit(self.adapter, list(gates))

    def to_dict(self) -> DiffDoc | AdapterDiffDoc:
        """The ``inspect diff A B --json`` document (``diff.schema.json``, or ``adapter-diff`` for an adapter)."""
        # deferred: 39 ms at import (inspector.results.diff)
        from inspector.results.diff import adapter_json, diff_json

        if self.result is not None:
            return diff_json(self.result, self.values)
        assert self.adapter is not None
        return adapter_json(self.adapter)


@dataclass(frozen=True, slots=True)
class ComparisonResult:
    """``inspect compare M1 … Mn``: totals, config and parameters by role, one column a model."""

    comparison: Comparison

    def to_dict(self) -> CompareDoc:
        """The ``inspect compare --json`` document (``compare.schema.json``)."""
        # deferred: 6 ms at import (inspector.results.compare)
        from inspector.results.compare import compare_json

        return compare_json(self.comparison)


class _FitAnswer(ABC):
    """A result that answers "does it fit?": its ``--fail-if nofit`` gate, failing closed where a figure is
    unknown."""

    __slots__ = ()

    @property
    @abstractmethod
    def fits(self) -> bool | None:
        """Whether it fits (None: unknown)."""

    def gates_hit(self, gates: Sequence[str]) -> list[str]:
        """The ``--fail-if`` conditions (``fit.FIT_GATES``) this answer trips."""
        return ["nofit"] if "nofit" in gates and self.fits is not True else []


@dataclass(frozen=True, slots=True)
class EstimateResult(_FitAnswer):
    """``inspect estimate MODEL``: memory, KV cache, FLOPs, MoE active parameters, quantisation-aware
    counts, each with its formula; with a GPU budget, the fit."""

    report: Report
    estimate: Estimate
    fit: Fit | None = None
    #: where it does not fit: the changes that make it fit (``analysis.knobs.estimate_knobs``)
    suggestions: tuple[Knob, ...] = ()

    @property
    def fits(self) -> bool | None:
        """Whether the model fits the budget (None: no budget, or a figure the fit needs is unknown)."""
        return None if self.fit is None else self.fit.fits

    @property
    def verdict(self) -> str:
        """The answer in one line: "does not fit: 30.96 GiB of 21.60 GiB per device"."""
        f = self.fit
        if f is None:
            return "no budget given (--gpu)"
        if f.fits is None:
            return f"fit unknown: {f.unknown or 'a figure is missing'}"
        per = " per device" if f.devices > 1 else ""
        return f"{_fits_word(f.fits)}: {f.total_bytes / 2**30:.2f} GiB of {f.runtime.usable_bytes / 2**30:.2f} GiB{per}"

    def to_dict(self) -> EstimateDoc:
        """The ``inspect estimate --json`` document (``estimate.schema.json``)."""
        # deferred: 35 ms at import (inspector.results.estimate)
        from inspector.results.estimate import estimate_json

        return estimate_json(self.report, self.estimate, self.fit, self.suggestions)


@dataclass(frozen=True, slots=True)
class FileListing:
    """A folder or repo holding one model in several files: a row a file (type, bytes, bits per
    weight, parameters) and, with a budget, whether each fits and its largest context."""

    where: str
    #: how one file of it is named: ``NAME/FILE`` (the repo id or the folder as given)
    name: str
    rows: tuple[FileRow, ...]
    budget: Budget | None
    notes: tuple[str, ...]

    def to_dict(self) -> FilesDoc:
        """The ``inspect FOLDER|REPO --json`` document of such a folder (``files.schema.json``)."""
        # deferred: 6 ms at import (inspector.results.files)
        from inspector.results.files import files_json

        return files_json(self.where, list(self.rows), self.budget, list(self.notes))


@dataclass(frozen=True, slots=True)
class FilesResult:
    """``inspect MODEL --files``: every file of the folder or repo with its size and kind, and what a
    download of all of them would fetch (from the listing: nothing is downloaded)."""

    checkpoint: Checkpoint
    files: RepoFiles

    def to_dict(self) -> RepoFilesDoc:
        """The ``inspect MODEL --files --json`` document (``repo-files.schema.json``)."""
        # deferred: 6 ms at import (inspector.results.files)
        from inspector.results.files import repo_files_json

        return repo_files_json(self.checkpoint, self.files)


@dataclass(frozen=True, slots=True)
class Audit:
    """``inspect audit``: the findings over a checkpoint opened leniently."""

    result: AuditResult

    @property
    def errors(self) -> int:
        """Error findings: the CLI exits 1 on any."""
        return self.result.errors

    @property
    def ok(self) -> bool:
        return self.result.errors == 0

    def to_dict(self) -> AuditDoc:
        """The ``inspect audit --json`` document (``audit.schema.json``)."""
        # deferred: 6 ms at import (inspector.results.audit)
        from inspector.results.audit import audit_json

        return audit_json(self.result)


@dataclass(frozen=True, slots=True)
class TrainResult(_FitAnswer):
    """``inspect train MODEL``: the memory to fine-tune the model per GPU, term by term, and whether
    it fits the budget."""

    report: Report
    train: Train
    #: where it does not fit: the changes that make it fit, cheapest first (``analysis.knobs``)
    suggestions: tuple[Knob, ...] = ()

    @property
    def fits(self) -> bool | None:
        """Whether the training step fits the budget per GPU (None: no budget, or a term unknown)."""
        return self.train.fits

    @property
    def verdict(self) -> str:
        """The answer in one line: "does not fit: 30.96 GiB of 24.00 GiB per GPU"."""
        t, budget = self.train, self.train.options.budget
        if budget is None:
            return "no budget given (--gpu)"
        if t.fits is None or t.total is None:
            return f"fit unknown: {t.memory.activations.formula}"
        return f"{_fits_word(t.fits)}: {t.total / 2**30:.2f} GiB of {budget.per_device / 2**30:.2f} GiB per GPU"

    def to_dict(self) -> TrainDoc:
        """The ``inspect train --json`` document (``train.schema.json``)."""
        # deferred: 33 ms at import (inspector.results.train)
        from inspector.results.train import train_json

        return train_json(self.report, self.train, self.suggestions)


@dataclass(frozen=True, slots=True)
class PlanResult(_FitAnswer):
    """``inspect plan MODEL``: every GPU × count × parallel layout, valid or not by the engine's own
    rules, each valid one fitted, cheapest first."""

    report: Report
    plan: Plan
    #: where no layout fits: the GPU count that would (``analysis.knobs.plan_knobs``)
    suggestions: tuple[Knob, ...] = ()

    @property
    def fits(self) -> bool | None:
        """Whether some layout of the GPUs considered fits (None: no valid layout's fit is known)."""
        return self.plan.fits

    @property
    def verdict(self) -> str:
        """The answer in one line: the best layout, or why none fits."""
        # deferred: 80 ms at import (inspector.results.plan)
        from inspector.results.plan import headline

        return headline(self.plan)

    def to_dict(self) -> PlanDoc:
        """The ``inspect plan --json`` document (``plan.schema.json``)."""
        # deferred: 80 ms at import (inspector.results.plan)
        from inspector.results.plan import plan_json

        return plan_json(self.report, self.plan, self.suggestions)


@dataclass(frozen=True, slots=True)
class LineageResult:
    """``inspect lineage MODEL [CANDIDATE ...]``: where the model came from, each candidate's relation to it
    and the evidence counted."""

    lineage: Lineage

    @property
    def verdict(self) -> str:
        """identical, finetune, merge, quantized, adapter, unrelated, different-architecture or unknown."""
        return self.lineage.verdict

    @property
    def base(self) -> str | None:
        """The closest candidate the model came from (None for a merge: see ``parents``, or for none)."""
        return self.lineage.base

    @property
    def parents(self) -> tuple[str, ...]:
        return self.lineage.parents

    @property
    def declared_matches(self) -> bool | None:
        return self.lineage.declared_matches

    def gates_hit(self, gates: Sequence[str]) -> list[str]:
        """The ``--fail-if`` conditions (unrelated, changed, declared) this answer trips."""
        # deferred: 46 ms at import (inspector.analysis.comparison.ancestry)
        from inspector.analysis.comparison.ancestry import gates_hit

        return gates_hit(self.lineage, gates)

    def to_dict(self) -> LineageDoc:
        """The ``inspect lineage --json`` document (``lineage.schema.json``)."""
        # deferred: 33 ms at import (inspector.results.lineage)
        from inspector.results.lineage import lineage_json

        return lineage_json(self.lineage)


#: every result a command returns (what ``api.to_text`` draws)
AnyResult = (Inspection | Difference | ComparisonResult | EstimateResult | TrainResult | PlanResult | Audit
             | LineageResult | FileListing | FilesResult | CacheResult | Aliases)


def _fits_word(fits: bool) -> str:
    return "fits" if fits else "does not fit"
