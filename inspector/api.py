"""The library: what the CLI does, as functions that return typed results.

Each function opens its model(s) the way the CLI does (a path, an HF cache folder, a header snapshot,
an alias, or a Hub repo ``org/name[@revision]`` with the same defaults: ``HF_ENDPOINT``, ``HF_TOKEN``
or the saved login, ``HF_HUB_OFFLINE``, the header cache) and returns a frozen result whose
``to_dict()`` is the CLI's ``--json`` document of the same command. Errors are the typed exceptions
of ``inspector.errors`` that the CLI maps to exit codes. Nothing here prints. Each function that
opens or analyses a model runs with the cyclic collector paused (``inspector.pause``).

    >>> import inspector
    >>> inspector.inspect("llama3-8b").parameters
    8030261248
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from inspector import results
from inspector.errors import SeveralFiles, UsageError
from inspector.model import Alternatives, Checkpoint, Progress
from inspector.pause import paused

if TYPE_CHECKING:
    from inspector.analysis.serving.listing import CachedModel
    from inspector.errors import ProblemSink
    from inspector.sources.transport import HubOptions

@paused()
def open_model(model: str | Checkpoint, *, revision: str | None = None, hub: HubOptions | None = None,
               lenient: bool = False, progress: Progress | None = None) -> Checkpoint:
    """Open ``model`` from wherever it is (``sources.resolve.open_checkpoint``; the Hub through
    huggingface_hub with ``hub``'s endpoint, token and offline switch, or their environment defaults:
    ``HubOptions``, the one record of how to reach the Hub, which every function here takes as ``hub``).
    ``lenient``: problems are collected on the checkpoint instead of raised (what ``audit`` reads).
    ``progress`` is told (phase, done, total) as a Hub repo's listing and headers arrive; ``hub.on_wait``, in
    words, when a read waits for the server (Retry-After). The one route by which every command opens a model."""
    if isinstance(model, Checkpoint):
        return model
    # deferred: 23 ms at import (inspector.analysis.facts.config, inspector.sources.config_cache, …)
    from inspector.analysis.facts.config import use_figure_store
    from inspector.sources.config_cache import DiskFigureStore
    from inspector.sources.resolve import open_checkpoint
    from inspector.sources.transport import HubOptions

    options = hub or HubOptions()

    def open_repo(repo_id: str, revision: str | None, problems: ProblemSink, only: str | None) -> Checkpoint:
        # the Hub's reader (and its cache, pool and hashing) is imported when a Hub repo is opened: a
        # local folder or an alias never needs it (10 ms of a local run)
        # deferred: 24 ms at import (inspector.sources.hub)
        from inspector.sources.hub import hub_opener

        return hub_opener(options, progress)(repo_id, revision, problems, only)

    use_figure_store(DiskFigureStore())
    return open_checkpoint(model, hub=open_repo, revision=revision, lenient=lenient)


def open_any(model: str | Checkpoint, *, revision: str | None = None, hub: HubOptions | None = None,
             progress: Progress | None = None) -> Checkpoint | Alternatives:
    """``open_model``, or where ``model`` is one model in several files (GGUF quantisations) that must not be added
    up, those files as ``Alternatives``: the one place the source's ``SeveralFiles`` becomes a value."""
    try:
        return open_model(model, revision=revision, hub=hub, progress=progress)
    except SeveralFiles as several:
        opener = several.opener

        def one(file: str) -> Checkpoint:
            assert opener is not None
            opened = opener(file)
            assert isinstance(opened, Checkpoint)
            return opened

        return Alternatives(several.where, tuple(several.files), dict(several.listing), several.message,
                            several.hint, one if opener is not None else None)


def repo_and_revision(spec: str) -> tuple[str, str | None]:
    """``org/name@rev`` → (``org/name``, ``rev``); without ``@``, the revision is None."""
    # deferred: 12 ms at import (inspector.sources.resolve)
    from inspector.sources.resolve import split_revision

    return split_revision(spec)


def did_you_mean(word: str, choices: Sequence[str]) -> str | None:
    """The closest of ``choices`` when ``word`` is close enough to be a typo of it."""
    # deferred: 11 ms at import (inspector.sources.resolve)
    from inspector.sources.resolve import did_you_mean as closest

    return closest(word, choices)


# --- aliases ---------------------------------------------------------------------------------------

def aliases() -> results.Aliases:
    """Every alias, with the repo it stands for and whether its snapshot is bundled."""
    # deferred: 1 ms at import (inspector.sources.bundled)
    from inspector.sources.bundled import all_aliases, bundled_path

    return results.Aliases(tuple(results.AliasRow(a.name, a.repo_id, a.description, bundled_path(a).is_dir())
                         for a in all_aliases()))


def is_alias(name: str) -> bool:
    # deferred: 1 ms at import (inspector.sources.bundled)
    from inspector.sources.bundled import ALIASES

    return name.lower() in ALIASES


# --- the Hugging Face cache ----------------------------------------------------------------------------

def is_cache_root(path: str | Path) -> bool:
    """``path`` is a Hugging Face cache root (a folder of ``models--ORG--NAME`` folders)."""
    # deferred: 11 ms at import (inspector.sources.resolve)
    from inspector.safeio import local_path
    from inspector.sources.resolve import is_hf_cache_root

    folder = local_path(str(path))
    return folder is not None and is_hf_cache_root(folder)


def is_local(path: str) -> bool:
    """Something is at ``path`` on this machine (a name no file system could hold is not looked up)."""
    # deferred: 2 ms at import (inspector.safeio)
    from inspector.safeio import local_path

    return local_path(path) is not None


def cache(root: str | Path) -> results.CacheResult:
    """Every model of the Hugging Face cache at ``root``, read from its snapshots' headers."""
    # deferred: 36 ms at import (inspector.analysis.facts.report, inspector.analysis.serving.listing, …)
    from inspector.analysis.facts.report import build_report
    from inspector.analysis.serving.listing import CachedModel
    from inspector.errors import ConfigOnly, InspectorError
    from inspector.sources.resolve import cached_models, open_folder

    folder_root = Path(root).expanduser()
    rows: list[CachedModel] = []
    for repo_id, sha, folder in cached_models(folder_root):
        try:
            s = build_report(open_folder(folder, origin="hf-cache", repo_id=repo_id, revision=sha)).summary
            rows.append(CachedModel(repo_id, sha, s.parameters, s.bytes, len(s.shards), "ok"))
        except InspectorError as exc:
            status = "config only" if isinstance(exc, ConfigOnly) else exc.message
            rows.append(CachedModel(repo_id, sha, None, None, None, status))
    return results.CacheResult(str(folder_root), tuple(rows))


# --- save ------------------------------------------------------------------------------------------


@paused()
def save(model: str | Checkpoint, folder: str | Path, *, force: bool = False, revision: str | None = None,
         hub: HubOptions | None = None) -> Path:
    """Write the model's header snapshot to ``folder`` (new, empty, or a snapshot of the same model;
    ``force`` replaces one of another model) and return the folder: inspect, diff or audit it offline."""
    # deferred: 10 ms at import (inspector.sources.snapshot)
    from inspector.sources.snapshot import save_checkpoint

    checkpoint = open_model(model, revision=revision, hub=hub)
    return save_checkpoint(checkpoint, Path(folder), force=force)


# --- output ----------------------------------------------------------------------------------------


def to_text(result: results.AnyResult, format: str = "html") -> str:
    """``result`` as the CLI writes it in ``format`` (html, markdown, json; table: as piped, 100 columns):
    ``to_text(inspect("llama3-8b"), "html")`` is the page ``inspect llama3-8b --format html`` writes."""
    # deferred: 5 ms at import (inspector.render.views)
    from inspector.render.views import to_text as render_text

    return render_text(result, format)


# --- show ----------------------------------------------------------------------------------------

@paused()
def inspect(model: str | Checkpoint, *, tensors: bool = False, collapse: bool = False, formula: bool = False,
            summary: bool = False, revision: str | None = None, hub: HubOptions | None = None) -> results.Inspection:
    """What is inside ``model``: ``inspect MODEL`` (``--tensors``, ``--collapse``, ``--formula``);
    ``summary``: also the estimate and the smallest common budget it fits (the table's last line)."""
    # deferred: 27 ms at import (inspector.analysis.facts.report, inspector.errors, inspector.render.show)
    from inspector.analysis.facts.report import build_report
    from inspector.errors import InspectorError, UsageError
    from inspector.render.show import listing

    if collapse and not tensors:
        raise UsageError("collapse goes with tensors")
    report = build_report(open_model(model, revision=revision, hub=hub))
    rows = tuple(listing(report, collapse)) if tensors else None
    est = common = None
    if summary:
        # deferred: 83 ms at import (inspector.analysis.serving.estimate, inspector.analysis.serving.fit)
        from inspector.analysis.serving.estimate import estimate as estimate_report
        from inspector.analysis.serving.fit import common_fit

        try:  # the summary is a courtesy: a model the estimate cannot read still inspects
            est = estimate_report(report, what_if=())
            common = common_fit(report, est)
        except InspectorError:
            pass
    check = None
    if formula:
        # deferred: 27 ms at import (inspector.analysis.facts.formula)
        from inspector.analysis.facts.formula import formula_check

        check = formula_check(report)
    return results.Inspection(report, rows, check, est, common)


# --- diff ----------------------------------------------------------------------------------------

@paused()
def diff(a: str | Checkpoint, b: str | Checkpoint, *, values: bool = False, sample_bytes: int | str = 1024,
         exact: bool = False, hub: HubOptions | None = None) -> results.Difference:
    """Why B differs from A (``inspect diff A B``). A PEFT adapter and its base (in either order) give
    the adapter's check against the base instead. ``values``: also which tensors' values differ, from
    ``sample_bytes`` of each (``--values``); ``exact``: local tensors hashed whole (``--exact``)."""
    # deferred: 33 ms at import (inspector.analysis.comparison.adapter, inspector.analysis.comparison.align, …)
    from inspector.analysis.comparison.adapter import adapter_config, diff_adapter
    from inspector.analysis.comparison.align import align_formats
    from inspector.analysis.comparison.diff import diff_reports
    from inspector.analysis.facts.report import build_report
    from inspector.errors import UsageError

    sample = _sample_bytes(sample_bytes)
    if exact and not values:
        raise UsageError("⟨exact⟩ goes with ⟨values⟩", hint="inspect diff A B --values --exact")
    ca = open_model(a, hub=hub)
    cb = ca if b == a else open_model(b, hub=hub)
    aligned_a, aligned_b = align_formats(ca, cb)
    ra = build_report(aligned_a)
    rb = ra if aligned_b is aligned_a else build_report(aligned_b)  # one checkpoint both sides: one report
    if (adapter_config(ra) is None) != (adapter_config(rb) is None):
        if values:
            raise UsageError("⟨values⟩ compares the tensors two models share; an adapter adds its own",
                             hint="diff the adapter against its base without ⟨values⟩")
        base, adapter = (ra, rb) if adapter_config(rb) is not None else (rb, ra)
        return results.Difference(adapter=diff_adapter(base, adapter))
    # deferred: 0 ms at import (inspector.api_values)
    from inspector.api_values import value_diff

    return results.Difference(result=diff_reports(ra, rb),
                      values=value_diff(ra, rb, sample, exact, hub) if values else None)


def gates(fail_if: str | None, *, values: bool = False) -> list[str]:
    """``--fail-if``'s comma-separated conditions (params, dtypes, shapes, values, any), checked; ``values``
    only with ``values=True`` (the diff reads the tensors' bytes); for ``Difference.gates_hit``."""
    # deferred: 30 ms at import (inspector.analysis.comparison.diff)
    from inspector.analysis.comparison.diff import parse_gates

    return parse_gates(fail_if, values=values)


def answer_gates(fail_if: str | None, *, budget: bool = True) -> tuple[str, ...]:
    """``--fail-if``'s conditions for ``estimate``, ``train`` and ``plan`` (``nofit``), checked before any
    model is opened; ``budget``: whether a GPU budget was given (``nofit`` needs one); for the results'
    ``gates_hit``."""
    # deferred: 28 ms at import (inspector.analysis.serving.fit)
    from inspector.analysis.serving.fit import parse_fit_gates

    return parse_fit_gates(fail_if, budget=budget)


def _sample_bytes(value: int | str) -> int:
    # deferred: 9 ms at import (inspector.analysis.serving.budget, inspector.errors)
    from inspector.analysis.serving.budget import parse_count
    from inspector.errors import UsageError

    n = parse_count(str(value), "⟨sample_bytes⟩")
    if not 64 <= n <= 1 << 20:
        raise UsageError(f"⟨sample_bytes⟩ {n:,} is not 64 to 1,048,576 bytes a tensor")
    return n


# --- lineage -------------------------------------------------------------------------------------

@paused()
def lineage(model: str | Checkpoint, candidates: Sequence[str | Checkpoint] = (), *, exact: bool = False,
            hub: HubOptions | None = None) -> results.LineageResult:
    """Where ``model`` came from (``inspect lineage MODEL [CANDIDATE ...]``): each candidate's relation to it
    (identical, finetune, merge, quantized, adapter, unrelated, different-architecture, unknown) from the
    listing's file hashes, the tensors' names and shapes, and a few KB of sampled values; without candidates,
    the bases it declares (card ``base_model``, ``adapter_config.json``, a GGUF's ``general.base_model``).
    ``exact``: local weight files hashed whole (streamed) to prove a copy. At most 10 candidates."""
    # deferred: 57 ms at import (inspector.api_lineage)
    from inspector.api_lineage import find

    return results.LineageResult(find(model, candidates, exact=exact, hub=hub,
                              opener=lambda name, options: open_model(name, hub=options)))


_lineage = lineage  # for ``audit``, whose ``lineage`` parameter is a switch


def lineage_gates(fail_if: str | None) -> tuple[str, ...]:
    """``--fail-if``'s conditions for ``lineage`` (unrelated, changed, declared), checked before any model is
    opened; for ``LineageResult.gates_hit``."""
    # deferred: 45 ms at import (inspector.analysis.comparison.ancestry, inspector.errors)
    from inspector.analysis.comparison.ancestry import GATES
    from inspector.errors import UsageError

    if not fail_if:
        return ()
    named = tuple(g.strip() for g in fail_if.split(",") if g.strip())
    wrong = [g for g in named if g not in GATES]
    if wrong or not named:
        raise UsageError(f"⟨fail_if⟩ {', '.join(wrong) or fail_if!r}: not one of {', '.join(GATES)}",
                         hint="inspect lineage MODEL BASE --fail-if unrelated")
    return named


# --- compare -------------------------------------------------------------------------------------

@paused()
def compare(*models: str | Checkpoint, hub: HubOptions | None = None) -> results.ComparisonResult:
    """2 to 10 models side by side (``inspect compare``)."""
    # deferred: 27 ms at import (inspector.analysis.comparison.compare, inspector.analysis.facts.report, …)
    from inspector.analysis.comparison.compare import compare as compare_reports
    from inspector.analysis.facts.report import build_report
    from inspector.errors import UsageError

    if not 2 <= len(models) <= 10:
        raise UsageError(f"compare takes 2 to 10 models, not {len(models)}")
    return results.ComparisonResult(compare_reports([
        build_report(open_model(m, hub=hub)) for m in models]))


# --- several files of one model (GGUF quantisations) --------------------------------------------------

#: the files of a several-file repo (GGUF quantisations) read at once
FILE_WORKERS: Final = 8


@paused()
def open_several(model: str, several: Alternatives, *, revision: str | None = None, hub: HubOptions | None = None,
                 only_first: bool = False) -> list[tuple[str, Checkpoint]]:
    """Each file of a folder or repo that holds one model in several files (``Alternatives``), opened
    on its own: with what the source already read where it can (a Hub repo's listing at its commit:
    one header read a file), else by name (``MODEL/FILE``); ``FILE_WORKERS`` at a time, in order."""
    # deferred: 6 ms at import (concurrent.futures)
    from concurrent.futures import ThreadPoolExecutor

    name, rev = repo_and_revision(model)

    def one(file: str) -> Checkpoint:
        if several.opener is not None:
            return several.opener(file)
        return open_model(f"{name}/{file}" + (f"@{rev}" if rev else ""), revision=revision, hub=hub)

    first = one(several.files[0])  # on this thread: what a read imports is imported before the pool starts
    if only_first:
        return [(several.files[0], first)]
    with ThreadPoolExecutor(max_workers=max(1, min(FILE_WORKERS, len(several.files) - 1)),
                            thread_name_prefix="inspector-file") as pool:
        rest = list(pool.map(one, several.files[1:]))
    return list(zip(several.files, [first, *rest], strict=True))


# --- the files of a repo --------------------------------------------------------------------------

@paused()
def files_of_several(model: str, several: Alternatives, *, revision: str | None = None,
                     hub: HubOptions | None = None) -> results.FilesResult:
    """``inspect MODEL --files`` of a folder or repo of several GGUF files: every file as the source
    listed it, each model file counted on its own (one file's header is read, for the origin)."""
    # deferred: 15 ms at import (dataclasses, inspector.analysis.serving.listing, inspector.model)
    from dataclasses import replace

    from inspector.analysis.serving.listing import repo_files
    from inspector.model import FileEntry, natural_key

    first = open_several(model, several, revision=revision, hub=hub, only_first=True)[0][1]
    entries = tuple(FileEntry(p, s) for p, s in sorted(several.listing.items(), key=lambda kv: natural_key(kv[0])))
    where = first.provenance
    whole = replace(first, label=several.where if where.origin != "hub" else where.repo_id or several.where,
                    headers=(), files=entries, components=())
    return results.FilesResult(whole, repo_files(whole, counted=frozenset(several.files)))


@paused()
def files(model: str | Checkpoint, *, revision: str | None = None,
          hub: HubOptions | None = None) -> results.FilesResult:
    """``inspect MODEL --files``."""
    # deferred: 15 ms at import (inspector.analysis.serving.listing)
    from inspector.analysis.serving.listing import repo_files

    checkpoint = open_model(model, revision=revision, hub=hub)
    return results.FilesResult(checkpoint, repo_files(checkpoint))


# --- audit ---------------------------------------------------------------------------------------

@paused()
def audit(model: str | Checkpoint, *, modeling: bool = False, deep: bool = False,
          progress: Progress | None = None, revision: str | None = None,
          hub: HubOptions | None = None, lineage: bool = False) -> results.Audit:
    """``inspect audit``: is the checkpoint whole and consistent? ``modeling`` also checks against
    the model class on PyTorch's meta device (the torch extra). ``deep`` also scans the tensor data
    for NaN, Inf and all-zero tensors: local files only (it reads the weights; never a Hub repo's),
    ``progress`` told (``Phase.DATA``, bytes done, bytes in all). ``lineage``: the base the model declares
    checked against it as ``inspect lineage`` checks it (a few KB of each read)."""
    # deferred: 22 ms at import (inspector.analysis.checks.audit)
    from inspector.analysis.checks import audit as audit_mod

    checkpoint = open_model(model, revision=revision, hub=hub, lenient=True)
    inp = audit_mod.audit_input(checkpoint)
    result = audit_mod.audit(inp)
    extra: list[audit_mod.Finding] = []
    if deep:
        if inp.root is None:
            raise UsageError("the deep scan needs a local checkpoint folder or file")
        extra += audit_mod.deep_scan(inp, progress)
    if modeling:
        # deferred: 21 ms at import (inspector.analysis.checks.modeling)
        from inspector.analysis.checks.modeling import modeling_check

        extra += modeling_check(inp)
    if lineage:
        # deferred: 58 ms at import (inspector.analysis.comparison.ancestry, inspector.analysis.comparison.lineage, …)
        from inspector.analysis.comparison.ancestry import declared_findings
        from inspector.analysis.comparison.lineage import declared_bases
        from inspector.api_lineage import card

        if declared_bases(checkpoint, card(checkpoint, hub)).bases:
            extra += declared_findings(_lineage(checkpoint, hub=hub).lineage)
    if extra:
        result = audit_mod.AuditResult(result.input, audit_mod.sort_findings((*result.findings, *extra)),
                                       result.checked)
    return results.Audit(result)
