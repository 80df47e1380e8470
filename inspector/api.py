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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from inspector.model import Checkpoint, Progress
from inspector.pause import paused
from inspector.render.results import (
    Aliases,
    AliasRow,
    Audit,
    CacheResult,
    ComparisonResult,
    Difference,
    EstimateResult,
    FileListing,
    FilesResult,
    Inspection,
    LineageResult,
    PlanResult,
    TrainResult,
)

if TYPE_CHECKING:
    from inspector.analysis.engines import Engine
    from inspector.analysis.estimate import Estimate
    from inspector.analysis.fit import Budget, Fit
    from inspector.analysis.knobs import Knob
    from inspector.analysis.listing import CachedModel
    from inspector.analysis.options import TrainOptions
    from inspector.analysis.plan import Plan
    from inspector.analysis.report import Report
    from inspector.analysis.stages import StageOptions
    from inspector.errors import ProblemSink, SeveralFiles
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
    from inspector.analysis.config import use_figure_store
    from inspector.sources.config_cache import DiskFigureStore
    from inspector.sources.resolve import open_checkpoint
    from inspector.sources.transport import HubOptions

    options = hub or HubOptions()

    def open_repo(repo_id: str, revision: str | None, problems: ProblemSink, only: str | None) -> Checkpoint:
        # the Hub's reader (and its cache, pool and hashing) is imported when a Hub repo is opened: a
        # local folder or an alias never needs it (10 ms of a local run)
        from inspector.sources.hub import hub_opener

        return hub_opener(options, progress)(repo_id, revision, problems, only)

    use_figure_store(DiskFigureStore())
    return open_checkpoint(model, hub=open_repo, revision=revision, lenient=lenient)


def repo_and_revision(spec: str) -> tuple[str, str | None]:
    """``org/name@rev`` → (``org/name``, ``rev``); without ``@``, the revision is None."""
    from inspector.sources.resolve import split_revision

    return split_revision(spec)


def did_you_mean(word: str, choices: Sequence[str]) -> str | None:
    """The closest of ``choices`` when ``word`` is close enough to be a typo of it."""
    from inspector.sources.resolve import did_you_mean as closest

    return closest(word, choices)


# --- aliases ---------------------------------------------------------------------------------------

def aliases() -> Aliases:
    """Every alias, with the repo it stands for and whether its snapshot is bundled."""
    from inspector.sources.bundled import all_aliases, bundled_path

    return Aliases(tuple(AliasRow(a.name, a.repo_id, a.description, bundled_path(a).is_dir())
                         for a in all_aliases()))


def is_alias(name: str) -> bool:
    from inspector.sources.bundled import ALIASES

    return name.lower() in ALIASES


# --- the Hugging Face cache ----------------------------------------------------------------------------

def is_cache_root(path: str | Path) -> bool:
    """``path`` is a Hugging Face cache root (a folder of ``models--ORG--NAME`` folders)."""
    from inspector.sources.resolve import is_hf_cache_root

    return is_hf_cache_root(Path(path).expanduser())


def cache(root: str | Path) -> CacheResult:
    """Every model of the Hugging Face cache at ``root``, read from its snapshots' headers."""
    from inspector.analysis.listing import CachedModel
    from inspector.analysis.report import build_report
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
    return CacheResult(str(folder_root), tuple(rows))


# --- save ------------------------------------------------------------------------------------------


@paused()
def save(model: str | Checkpoint, folder: str | Path, *, force: bool = False, revision: str | None = None,
         hub: HubOptions | None = None) -> Path:
    """Write the model's header snapshot to ``folder`` (new, empty, or a snapshot of the same model;
    ``force`` replaces one of another model) and return the folder: inspect, diff or audit it offline."""
    from inspector.sources.snapshot import save_checkpoint

    checkpoint = open_model(model, revision=revision, hub=hub)
    return save_checkpoint(checkpoint, Path(folder), force=force)


# --- output ----------------------------------------------------------------------------------------


def to_text(result: Inspection | Difference | ComparisonResult | EstimateResult | TrainResult | PlanResult | Audit
            | FileListing | FilesResult | CacheResult | Aliases, format: str = "html") -> str:
    """``result`` as the CLI writes it in ``format`` (html, markdown, json; table: as piped, 100 columns):
    ``to_text(inspect("llama3-8b"), "html")`` is the page ``inspect llama3-8b --format html`` writes."""
    from inspector.render.views import to_text as render_text

    return render_text(result, format)


# --- show ----------------------------------------------------------------------------------------

@paused()
def inspect(model: str | Checkpoint, *, tensors: bool = False, collapse: bool = False, formula: bool = False,
            summary: bool = False, revision: str | None = None, hub: HubOptions | None = None) -> Inspection:
    """What is inside ``model``: ``inspect MODEL`` (``--tensors``, ``--collapse``, ``--formula``);
    ``summary``: also the estimate and the smallest common budget it fits (the table's last line)."""
    from inspector.analysis.report import build_report
    from inspector.errors import InspectorError, UsageError
    from inspector.render.output import listing

    if collapse and not tensors:
        raise UsageError("collapse goes with tensors")
    report = build_report(open_model(model, revision=revision, hub=hub))
    rows = tuple(listing(report, collapse)) if tensors else None
    est = common = None
    if summary:
        from inspector.analysis.estimate import estimate as estimate_report
        from inspector.analysis.fit import common_fit

        try:  # the summary is a courtesy: a model the estimate cannot read still inspects
            est = estimate_report(report, what_if=())
            common = common_fit(report, est)
        except InspectorError:
            pass
    check = None
    if formula:
        from inspector.analysis.formula import formula_check

        check = formula_check(report)
    return Inspection(report, rows, check, est, common)


# --- diff ----------------------------------------------------------------------------------------

@paused()
def diff(a: str | Checkpoint, b: str | Checkpoint, *, values: bool = False, sample_bytes: int | str = 1024,
         exact: bool = False, hub: HubOptions | None = None) -> Difference:
    """Why B differs from A (``inspect diff A B``). A PEFT adapter and its base (in either order) give
    the adapter's check against the base instead. ``values``: also which tensors' values differ, from
    ``sample_bytes`` of each (``--values``); ``exact``: local tensors hashed whole (``--exact``)."""
    from inspector.analysis.adapter import adapter_config, diff_adapter
    from inspector.analysis.align import align_formats
    from inspector.analysis.diff import diff_reports
    from inspector.analysis.report import build_report
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
        return Difference(adapter=diff_adapter(base, adapter))
    from inspector.api_values import value_diff

    return Difference(result=diff_reports(ra, rb),
                      values=value_diff(ra, rb, sample, exact, hub) if values else None)


def gates(fail_if: str | None, *, values: bool = False) -> list[str]:
    """``--fail-if``'s comma-separated conditions (params, dtypes, shapes, values, any), checked; ``values``
    only with ``values=True`` (the diff reads the tensors' bytes); for ``Difference.gates_hit``."""
    from inspector.analysis.diff import parse_gates

    return parse_gates(fail_if, values=values)


def answer_gates(fail_if: str | None, *, budget: bool = True) -> tuple[str, ...]:
    """``--fail-if``'s conditions for ``estimate``, ``train`` and ``plan`` (``nofit``), checked before any
    model is opened; ``budget``: whether a GPU budget was given (``nofit`` needs one); for the results'
    ``gates_hit``."""
    from inspector.analysis.fit import parse_fit_gates

    return parse_fit_gates(fail_if, budget=budget)


def _sample_bytes(value: int | str) -> int:
    from inspector.analysis.fit import parse_count
    from inspector.errors import UsageError

    n = parse_count(str(value), "⟨sample_bytes⟩")
    if not 64 <= n <= 1 << 20:
        raise UsageError(f"⟨sample_bytes⟩ {n:,} is not 64 to 1,048,576 bytes a tensor")
    return n


# --- lineage -------------------------------------------------------------------------------------

@paused()
def lineage(model: str | Checkpoint, candidates: Sequence[str | Checkpoint] = (), *, exact: bool = False,
            hub: HubOptions | None = None) -> LineageResult:
    """Where ``model`` came from (``inspect lineage MODEL [CANDIDATE ...]``): each candidate's relation to it
    (identical, finetune, merge, quantized, adapter, unrelated, different-architecture, unknown) from the
    listing's file hashes, the tensors' names and shapes, and a few KB of sampled values; without candidates,
    the bases it declares (card ``base_model``, ``adapter_config.json``, a GGUF's ``general.base_model``).
    ``exact``: local weight files hashed whole (streamed) to prove a copy. At most 10 candidates."""
    from inspector.api_lineage import find

    return LineageResult(find(model, candidates, exact=exact, hub=hub,
                              opener=lambda name: open_model(name, hub=hub)))


_lineage = lineage  # for ``audit``, whose ``lineage`` parameter is a switch


def lineage_gates(fail_if: str | None) -> tuple[str, ...]:
    """``--fail-if``'s conditions for ``lineage`` (unrelated, changed, declared), checked before any model is
    opened; for ``LineageResult.gates_hit``."""
    from inspector.analysis.ancestry import GATES
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
def compare(*models: str | Checkpoint, hub: HubOptions | None = None) -> ComparisonResult:
    """2 to 10 models side by side (``inspect compare``)."""
    from inspector.analysis.compare import compare as compare_reports
    from inspector.analysis.report import build_report
    from inspector.errors import UsageError

    if not 2 <= len(models) <= 10:
        raise UsageError(f"compare takes 2 to 10 models, not {len(models)}")
    return ComparisonResult(compare_reports([
        build_report(open_model(m, hub=hub)) for m in models]))


# --- estimate ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class EstimateOptions:
    """``estimate``'s options, checked before any model is opened (a usage error costs no read)."""

    context: int | None
    batch: int
    kv_dtype: str | None
    what_if: tuple[str, ...]
    budget: Budget | None
    weights_dtype: str | None
    overhead: int | None
    engine: str | None = None  # a name in engines.ENGINES; None: by the checkpoint's format
    utilization: float | None = None  # the engine's share of a device (vLLM's gpu_memory_utilization, SGLang's
    # mem_fraction_static)
    pipeline: int = 1  # pipeline-parallel stages (the budget's devices = tensor-parallel × stages)


def estimate_options(*, context: int | str | None = None, batch: int | str = 1, kv_dtype: str | None = None,
                     dtypes: Sequence[str] | None = None, gpu: str | None = None,
                     overhead: str | None = None, engine: str | None = None,
                     utilization: float | str | None = None, pipeline: int | str = 1) -> EstimateOptions:
    """``context`` and ``batch`` as numbers or the CLI's words (``8k``); ``dtypes``: what-if weight
    dtypes (with ``gpu``, one: the weights' width in the fit); ``gpu``: a budget per device, ``24GiB``,
    ``80GiBx2`` or a GPU's name (``H100``, ``A100-40GBx2``); ``overhead``: a per-device overhead
    replacing the engine's terms; ``engine``: ``vllm``, ``llama.cpp`` or ``sglang``; ``utilization``: vLLM's
    ``gpu_memory_utilization`` (0 < u <= 1, default 0.9) or SGLang's ``mem_fraction_static`` (by the GPU);
    ``pipeline``: pipeline-parallel stages, which
    divide the budget's devices (``H100x4`` with 2 stages: tensor parallel 2 in each)."""
    from inspector.analysis.engines import ENGINES
    from inspector.analysis.fit import parse_budget, parse_count
    from inspector.errors import UsageError

    budget = parse_budget(gpu) if gpu else None
    extra = parse_budget(overhead, "⟨overhead⟩").per_device if overhead else None
    what_if = tuple(dtypes) if dtypes is not None else ("bf16", "fp8", "int4")
    if engine is not None and engine.lower() not in ENGINES:
        raise UsageError(f"⟨engine⟩: unknown {engine!r}", hint="use " + " or ".join(ENGINES))
    util = _utilization(utilization)
    if util is not None and engine is not None and ENGINES[engine.lower()].fraction is None:
        raise UsageError(f"⟨utilization⟩ is vLLM's gpu_memory_utilization or SGLang's mem_fraction_static; "
                         f"{engine.lower()} takes the whole device", hint="use it with ⟨engine=vllm⟩")
    stages = parse_count(str(pipeline), "⟨pipeline⟩")
    if budget is not None and (stages > budget.devices or budget.devices % stages):
        raise UsageError(f"⟨pipeline⟩ {stages} does not divide the {budget.devices} devices of ⟨gpu⟩",
                         hint="for example ⟨gpu=H100x4⟩ ⟨pipeline=2⟩ (tensor parallel 2 in each of 2 stages)")
    if budget is None and (extra is not None or engine is not None or util is not None or stages > 1):
        raise UsageError("⟨overhead⟩, ⟨engine⟩, ⟨utilization⟩ and ⟨pipeline⟩ go with ⟨gpu⟩",
                         hint="inspect estimate MODEL --gpu H100 --engine vllm --utilization 0.95")
    weights_dtype = None
    if budget is not None and dtypes is not None:
        if len(what_if) != 1:
            raise UsageError("with ⟨gpu⟩, ⟨dtypes⟩ takes one dtype: the weights' width in the fit",
                             hint="for example ⟨dtypes=fp8⟩")
        weights_dtype = what_if[0]
    return EstimateOptions(parse_count(str(context), "⟨context⟩") if context is not None else None,
                           parse_count(str(batch), "⟨batch⟩"), kv_dtype, what_if, budget, weights_dtype, extra,
                           engine.lower() if engine else None, util, stages)


def _utilization(value: float | str | None) -> float | None:
    """vLLM's gpu_memory_utilization: a fraction in (0, 1]; None when not given."""
    from inspector.analysis.fit import parse_fraction
    from inspector.errors import UsageError

    if value is None:
        return None
    util = parse_fraction(value, "⟨utilization⟩")
    if not 0 < util <= 1:
        raise UsageError(f"⟨utilization⟩: {value!r} is not a fraction in (0, 1]", hint="for example 0.95")
    return util


@paused()
def estimate(model: str | Checkpoint, *, context: int | str | None = None, batch: int | str = 1,
             kv_dtype: str | None = None, dtypes: Sequence[str] | None = None, gpu: str | None = None,
             overhead: str | None = None, engine: str | None = None, utilization: float | str | None = None,
             pipeline: int | str = 1, revision: str | None = None, hub: HubOptions | None = None) -> EstimateResult:
    """``inspect estimate`` (options as ``estimate_options`` takes them)."""
    options = estimate_options(context=context, batch=batch, kv_dtype=kv_dtype, dtypes=dtypes, gpu=gpu,
                               overhead=overhead, engine=engine, utilization=utilization, pipeline=pipeline)
    return estimate_with(open_model(model, revision=revision, hub=hub), options, hub=hub)


@paused()
def estimate_with(checkpoint: Checkpoint, options: EstimateOptions, *, hub: HubOptions | None = None) -> EstimateResult:
    """The estimate of an open checkpoint with checked options (``hub``: how its repo is reached again, for
    the other files a suggestion may name)."""
    from inspector.analysis.engines import ENGINES
    from inspector.analysis.estimate import estimate as estimate_report
    from inspector.analysis.fit import Settings, fit
    from inspector.analysis.report import build_report

    report = build_report(checkpoint)
    est = estimate_report(report, context=options.context, batch=options.batch, kv_dtype=options.kv_dtype,
                          what_if=options.what_if)
    settings = Settings(options.weights_dtype, options.overhead, options.utilization)
    engine = ENGINES[options.engine] if options.engine else None
    fitted = fit(report, est, options.budget, engine, settings=settings,
                 pipeline=options.pipeline) if options.budget else None
    if fitted is None or fitted.fits is not False or options.budget is None:
        return EstimateResult(report, est, fitted)
    return EstimateResult(report, est, fitted, _estimate_knobs(report, est, options, engine, fitted, hub))


def _estimate_knobs(report: Report, est: Estimate, options: EstimateOptions, engine: Engine | None,
                    fitted: Fit, hub: HubOptions | None = None) -> tuple[Knob, ...]:
    """What makes a model that does not fit fit (``analysis.knobs.estimate_knobs``): the same fit at a
    shorter context or an 8-bit KV cache, and ``plan``'s first layout of more of the same GPU."""
    from dataclasses import replace

    from inspector.analysis.engines import ENGINES
    from inspector.analysis.estimate import default_engine
    from inspector.analysis.estimate import estimate as estimate_report
    from inspector.analysis.fit import Settings, fit
    from inspector.analysis.knobs import estimate_knobs
    from inspector.analysis.plan import plan as plan_report
    from inspector.analysis.report import build_report

    budget = options.budget
    assert budget is not None
    quick = Settings(options.weights_dtype, options.overhead, options.utilization, curve_points=0)

    def again(context: int, kv_dtype: str) -> Fit:
        changed = estimate_report(report, context=context, batch=options.batch, kv_dtype=kv_dtype, what_if=())
        return fit(report, changed, budget, engine, settings=quick, pipeline=options.pipeline)

    def layout() -> tuple[str, int] | None:
        if budget.gpu is None or options.pipeline != 1:
            return None
        chosen = engine or default_engine(report)
        found = plan_report(report, replace(est, what_if=()), ENGINES[chosen.name], gpus=[budget.gpu], max_gpus=8,
                            utilization=options.utilization).best
        if found is None or found.fit is None or found.layout.gpus <= budget.devices:
            return None
        lay = found.layout
        change = f"--gpu {budget.gpu}x{lay.gpus}" + (f" --pipeline {lay.pp}" if lay.pp > 1 else "")
        return change, found.fit.total_bytes

    def smaller_file() -> tuple[str, int] | None:
        """The largest other GGUF file of the same local folder or Hub repo (at the commit read) that fits,
        reading headers only (the repo's listing once, then one header a file tried)."""
        from pathlib import Path

        from inspector.errors import SeveralFiles

        c = report.checkpoint
        p = c.provenance
        if len(c.headers) != 1 or c.headers[0].format != "gguf":
            return None
        container = p.root if p.origin == "file" else f"{p.repo_id}@{p.revision}" if p.origin == "hub" and \
            p.repo_id and p.revision else None
        if container is None:
            return None
        mine = c.headers[0].file
        try:
            open_model(container, hub=hub)
            return None  # one model file there: no other quantisation
        except SeveralFiles as several:
            size = several.listing.get(mine)
            others = sorted(((s, f) for f, s in several.listing.items() if f in several.files and f != mine
                             and s is not None and size is not None and s < size
                             and not f.rsplit("/", 1)[-1].lower().startswith("mmproj")), reverse=True)
            opener = several.opener
        for _, name in others[:FILE_WORKERS]:
            path = str(Path(container) / name) if p.origin == "file" else f"{p.repo_id}/{name}"
            opened = opener(name) if opener is not None else open_model(path, hub=hub)
            assert isinstance(opened, Checkpoint)
            other = build_report(opened)
            other_est = estimate_report(other, context=est.context, batch=options.batch, kv_dtype=options.kv_dtype,
                                        what_if=())
            done = fit(other, other_est, budget, engine, settings=quick, pipeline=options.pipeline)
            if done.fits is True:
                return f"use {path}", done.total_bytes
        return None

    return estimate_knobs(fitted, context=est.context, kv_dtype=est.kv_dtype, again=again, layout=layout,
                          smaller_file=smaller_file)


# --- several files of one model (GGUF quantisations) --------------------------------------------------

#: the files of a several-file repo (GGUF quantisations) read at once
FILE_WORKERS: Final = 8


@paused()
def open_several(model: str, several: SeveralFiles, *, revision: str | None = None, hub: HubOptions | None = None,
                 only_first: bool = False) -> list[tuple[str, Checkpoint]]:
    """Each file of a folder or repo that holds one model in several files (``SeveralFiles``), opened
    on its own: with what the source already read where it can (a Hub repo's listing at its commit:
    one header read a file), else by name (``MODEL/FILE``); ``FILE_WORKERS`` at a time, in order."""
    from concurrent.futures import ThreadPoolExecutor

    name, rev = repo_and_revision(model)

    def one(file: str) -> Checkpoint:
        if several.opener is not None:
            opened = several.opener(file)
            assert isinstance(opened, Checkpoint)
            return opened
        return open_model(f"{name}/{file}" + (f"@{rev}" if rev else ""), revision=revision, hub=hub)

    first = one(several.files[0])  # on this thread: what a read imports is imported before the pool starts
    if only_first:
        return [(several.files[0], first)]
    with ThreadPoolExecutor(max_workers=max(1, min(FILE_WORKERS, len(several.files) - 1)),
                            thread_name_prefix="inspector-file") as pool:
        rest = list(pool.map(one, several.files[1:]))
    return list(zip(several.files, [first, *rest], strict=True))


def list_files(where: str, files: Sequence[tuple[str, Checkpoint]], *, name: str | None = None,
               gpu: str | None = None, context: int | str | None = None, kv_dtype: str | None = None) -> FileListing:
    """The rows of ``files`` (each file opened on its own, by name); with ``gpu`` (``24GiB``) the fit
    of each model file at ``context``, projectors (``mmproj``) counted beside every model. ``name``: how
    one file is named (``NAME/FILE``; default ``where``)."""
    from inspector.analysis.listing import file_rows
    from inspector.analysis.report import build_report

    options = estimate_options(context=context, gpu=gpu, kv_dtype=kv_dtype)
    rows, notes = file_rows([(file, build_report(c)) for file, c in files], budget=options.budget,
                            context=options.context, kv_dtype=options.kv_dtype)
    return FileListing(where, name or where, tuple(rows), options.budget, tuple(notes))


# --- the files of a repo --------------------------------------------------------------------------

@paused()
def files_of_several(model: str, several: SeveralFiles, *, revision: str | None = None,
                     hub: HubOptions | None = None) -> FilesResult:
    """``inspect MODEL --files`` of a folder or repo of several GGUF files: every file as the source
    listed it, each model file counted on its own (one file's header is read, for the origin)."""
    from dataclasses import replace

    from inspector.analysis.listing import repo_files
    from inspector.model import FileEntry, natural_key

    first = open_several(model, several, revision=revision, hub=hub, only_first=True)[0][1]
    entries = tuple(FileEntry(p, s) for p, s in sorted(several.listing.items(), key=lambda kv: natural_key(kv[0])))
    whole = replace(first, label=several.where if first.origin != "hub" else first.repo_id or several.where,
                    headers=(), files=entries, components=())
    return FilesResult(whole, repo_files(whole, counted=frozenset(several.files)))


@paused()
def files(model: str | Checkpoint, *, revision: str | None = None, hub: HubOptions | None = None) -> FilesResult:
    """``inspect MODEL --files``."""
    from inspector.analysis.listing import repo_files

    checkpoint = open_model(model, revision=revision, hub=hub)
    return FilesResult(checkpoint, repo_files(checkpoint))


# --- audit ---------------------------------------------------------------------------------------

@paused()
def audit(model: str | Checkpoint, *, modeling: bool = False, deep: bool = False,
          progress: Progress | None = None, revision: str | None = None,
          hub: HubOptions | None = None, lineage: bool = False) -> Audit:
    """``inspect audit``: is the checkpoint whole and consistent? ``modeling`` also checks against
    the model class on PyTorch's meta device (the torch extra). ``deep`` also scans the tensor data
    for NaN, Inf and all-zero tensors: local files only (it reads the weights; never a Hub repo's),
    ``progress`` told (``Phase.DATA``, bytes done, bytes in all). ``lineage``: the base the model declares
    checked against it as ``inspect lineage`` checks it (a few KB of each read)."""
    from inspector.analysis import audit as audit_mod

    checkpoint = open_model(model, revision=revision, hub=hub, lenient=True)
    inp = audit_mod.audit_input(checkpoint)
    result = audit_mod.audit(inp)
    extra: list[audit_mod.Finding] = []
    if deep:
        if inp.root is None:
            from inspector.errors import UsageError

            raise UsageError("the deep scan needs a local checkpoint folder or file")
        extra += audit_mod.deep_scan(inp, progress)
    if modeling:
        from inspector.analysis.modeling import modeling_check

        extra += modeling_check(inp)
    if lineage:
        from inspector.analysis.ancestry import declared_findings
        from inspector.analysis.lineage import declared_bases
        from inspector.api_lineage import card

        if declared_bases(checkpoint, card(checkpoint, hub)).bases:
            extra += declared_findings(_lineage(checkpoint, hub=hub).lineage)
    if extra:
        result = audit_mod.AuditResult(result.input, audit_mod.sort_findings((*result.findings, *extra)),
                                       result.checked)
    return Audit(result)


# --- train -----------------------------------------------------------------------------------------

def train_options(*, method: str = "lora", rank: int | str | None = None, alpha: float | str | None = None,
                  targets: str | Sequence[str] | None = None, optimizer: str = "adamw",
                  precision: str = "bf16-mixed", batch: int | str = 1, seq: int | str = 2048,
                  checkpointing: bool = False, gpu: str | None = None, zero: int | str = 0, fsdp: bool = False,
                  offload: str = "none", experts: str = "fused", stage: str = "sft", loss: str | None = None,
                  generations: int | str | None = None, completion_len: int | str | None = None,
                  beta: float | str | None = None, rollout_memory: float | str | None = None,
                  sp: int | str = 1, freeze: str | Sequence[str] | None = None,
                  optimizer_in_backward: bool = False, offload_activations: bool = False,
                  compile: bool = False) -> TrainOptions:
    """``train``'s options, checked before any model is opened: ``method`` full, lora or qlora;
    ``rank`` (default 16), ``alpha`` (positive, finite) and ``targets`` (``all-linear``, the default, or
    module names: a comma-separated string or a list) only for LoRA and QLoRA; ``gpu`` a budget
    or a GPU's name, ``xN`` for N GPUs; ``zero`` a DeepSpeed stage; ``offload`` none, optimizer or all;
    ``experts`` fused (a MoE as transformers 5 loads it, the default) or separate (transformers 4.x); ``stage``
    sft, dpo or grpo as TRL runs them, ``loss`` standard or fused (TRL's fused LM head; DPO's and GRPO's own), and
    for GRPO ``generations`` (8), ``completion_len`` (512), ``beta`` (0.0) and ``rollout_memory`` (a colocated
    vLLM's share of each GPU, 0); ``sp`` a sequence-parallel group size (DeepSpeed Ulysses); ``freeze`` parts
    kept from training (vision, audio, projector, or module paths); ``optimizer_in_backward`` each gradient applied
    and freed as it is accumulated (torchtune's optimizer_in_bwd); ``offload_activations`` the activations held in
    CPU memory (torchtune's OffloadActivations); ``compile`` each decoder layer compiled (torch.compile)."""
    import math

    from inspector.analysis.fit import parse_budget, parse_count, parse_fraction, parse_whole
    from inspector.analysis.options import TrainOptions
    from inspector.analysis.train import check_adapter_options, check_options
    from inspector.errors import UsageError

    check_adapter_options(method.lower(), [name for name, value in (("⟨rank⟩", rank), ("⟨alpha⟩", alpha),
                                                                     ("⟨targets⟩", targets)) if value is not None])
    targets = "all-linear" if targets is None else targets
    names = tuple(t.strip() for t in (targets.split(",") if isinstance(targets, str) else targets) if t.strip())
    if not names:
        raise UsageError("⟨targets⟩ names no module", hint="all-linear, or q_proj,v_proj")
    rank_value = parse_whole(16 if rank is None else rank, "⟨rank⟩")
    zero_value = parse_whole(zero, "⟨zero⟩")
    alpha_value = None if alpha is None else parse_fraction(alpha, "⟨alpha⟩")
    if alpha_value is not None and not (math.isfinite(alpha_value) and alpha_value > 0):
        raise UsageError(f"⟨alpha⟩ {str(alpha)[:24]!r} is not a positive finite number", hint="for example 32")
    options = TrainOptions(
        method=method.lower(), rank=rank_value, alpha=alpha_value, targets=names, optimizer=optimizer.lower(),
        precision=precision.lower(), batch=parse_count(str(batch), "⟨batch⟩"), seq=parse_count(str(seq), "⟨seq⟩"),
        checkpointing=checkpointing, budget=parse_budget(gpu) if gpu else None, zero=zero_value, fsdp=fsdp,
        offload=offload.lower(), experts=experts.lower(),  # type: ignore[arg-type]
        stage=_stage_options(stage, loss, generations, completion_len, beta, rollout_memory),
        sp=parse_whole(sp, "⟨sp⟩"),
        freeze=tuple(f.strip() for f in ((freeze or "").split(",") if isinstance(freeze, str) or freeze is None
                                         else freeze) if f.strip()),
        optimizer_in_backward=optimizer_in_backward, offload_activations=offload_activations, compile=compile)
    check_options(options)
    return options


def _stage_options(stage: str, loss: str | None, generations: int | str | None, completion_len: int | str | None,
                   beta: float | str | None, rollout_memory: float | str | None) -> StageOptions:
    import math

    from inspector.analysis.fit import parse_count, parse_fraction, parse_whole
    from inspector.analysis.stages import COMPLETION, GENERATIONS, StageOptions, check_stage
    from inspector.errors import UsageError

    given = [name for name, value in (("⟨generations⟩", generations), ("⟨completion_len⟩", completion_len),
                                      ("⟨beta⟩", beta), ("⟨rollout_memory⟩", rollout_memory)) if value is not None]
    chosen = StageOptions(
        stage=stage.lower(), loss=loss.lower() if loss is not None else None,  # type: ignore[arg-type]
        generations=GENERATIONS if generations is None else parse_whole(generations, "⟨generations⟩"),
        completion=COMPLETION if completion_len is None else parse_count(str(completion_len), "⟨completion_len⟩"),
        beta=0.0 if beta is None else parse_fraction(beta, "⟨beta⟩"),
        rollout_memory=0.0 if rollout_memory is None else parse_fraction(rollout_memory, "⟨rollout_memory⟩"))
    if not (math.isfinite(chosen.beta) and math.isfinite(chosen.rollout_memory)):
        raise UsageError("⟨beta⟩ and ⟨rollout_memory⟩ are finite numbers")
    check_stage(chosen, given)
    return chosen


@paused()
def train(model: str | Checkpoint, *, method: str = "lora", rank: int | str | None = None,
          alpha: float | str | None = None, targets: str | Sequence[str] | None = None, optimizer: str = "adamw",
          precision: str = "bf16-mixed", batch: int | str = 1, seq: int | str = 2048, checkpointing: bool = False,
          gpu: str | None = None, zero: int | str = 0, fsdp: bool = False, offload: str = "none",
          experts: str = "fused", stage: str = "sft", loss: str | None = None, generations: int | str | None = None,
          completion_len: int | str | None = None, beta: float | str | None = None,
          rollout_memory: float | str | None = None, sp: int | str = 1, freeze: str | Sequence[str] | None = None,
          optimizer_in_backward: bool = False, offload_activations: bool = False, compile: bool = False,
          revision: str | None = None,
          hub: HubOptions | None = None) -> TrainResult:
    """``inspect train``: the memory to fine-tune ``model`` (options as ``train_options`` takes them)."""
    checked = train_options(method=method, rank=rank, alpha=alpha, targets=targets, optimizer=optimizer,
                            precision=precision, batch=batch, seq=seq, checkpointing=checkpointing, gpu=gpu,
                            zero=zero, fsdp=fsdp, offload=offload, experts=experts, stage=stage, loss=loss,
                            generations=generations, completion_len=completion_len, beta=beta,
                            rollout_memory=rollout_memory, sp=sp, freeze=freeze,
                            optimizer_in_backward=optimizer_in_backward, offload_activations=offload_activations,
                            compile=compile)
    return train_with(open_model(model, revision=revision, hub=hub), checked)


@paused()
def train_with(checkpoint: Checkpoint, options: TrainOptions) -> TrainResult:
    """The training memory of an open checkpoint with checked options."""
    from inspector.analysis.knobs import train_knobs
    from inspector.analysis.report import build_report
    from inspector.analysis.train import train as train_report

    report = build_report(checkpoint)
    done = train_report(report, options)
    return TrainResult(report, done, train_knobs(done, lambda changed: train_report(report, changed)))


# --- plan ------------------------------------------------------------------------------------------

@paused()
def plan(model: str | Checkpoint, *, gpu: str | Sequence[str] | None = None, max_gpus: int | str = 8,
         nodes: int | str = 1, engine: str | None = None, context: int | str | None = None,
         objective: str = "gpus", utilization: float | str | None = None, kv_dtype: str | None = None,
         revision: str | None = None, hub: HubOptions | None = None,
         gpus: str | Sequence[str] | None = None) -> PlanResult:
    """``inspect plan``: ``gpu`` the GPU names to consider (comma-separated or a list; default every
    named GPU; spelt as ``estimate`` and ``train`` spell it; ``gpus`` is the older spelling, still
    taken), ``max_gpus`` per node and ``nodes``, ``engine`` vllm (default) or llama.cpp, the
    ``context`` each sequence holds (default 8k), ``objective`` gpus, throughput or context."""
    if gpu is not None and gpus is not None:
        from inspector.errors import UsageError

        raise UsageError("plan takes gpu= (or the older gpus=), not both")
    options = plan_options(gpus=gpu if gpu is not None else gpus, max_gpus=max_gpus, nodes=nodes, engine=engine,
                           context=context, objective=objective, utilization=utilization, kv_dtype=kv_dtype)
    return plan_with(open_model(model, revision=revision, hub=hub), options)


@dataclass(frozen=True, slots=True)
class PlanOptions:
    gpus: tuple[str, ...] | None
    max_gpus: int
    engine: str
    context: int
    objective: str
    utilization: float | None
    kv_dtype: str | None


def plan_options(*, gpus: str | Sequence[str] | None = None, max_gpus: int | str = 8, nodes: int | str = 1,
                 engine: str | None = None, context: int | str | None = None, objective: str = "gpus",
                 utilization: float | str | None = None, kv_dtype: str | None = None) -> PlanOptions:
    """``plan``'s options, checked before any model is opened."""
    from inspector.analysis.engines import ENGINES
    from inspector.analysis.fit import SUMMARY_CONTEXT, parse_count, parse_whole
    from inspector.analysis.plan import MAX_GPUS, OBJECTIVES, gpu_list
    from inspector.errors import UsageError

    names = gpu_list(gpus if isinstance(gpus, str) or gpus is None else ",".join(gpus))
    per_node, node_count = parse_whole(max_gpus, "⟨max_gpus⟩"), parse_whole(nodes, "⟨nodes⟩")
    if not 1 <= per_node <= MAX_GPUS or not 1 <= node_count <= MAX_GPUS or per_node * node_count > MAX_GPUS:
        raise UsageError(f"⟨max_gpus⟩ {per_node} × ⟨nodes⟩ {node_count}: 1 to {MAX_GPUS:,} GPUs in all")
    engine_name = (engine or "vllm").lower()
    if engine_name not in ENGINES:
        raise UsageError(f"⟨engine⟩: unknown {engine!r}", hint="use " + " or ".join(ENGINES))
    if objective not in OBJECTIVES:
        raise UsageError(f"⟨objective⟩: unknown {objective!r}", hint="use " + ", ".join(OBJECTIVES))
    util = _utilization(utilization)
    ctx = parse_count(str(context), "⟨context⟩") if context is not None else SUMMARY_CONTEXT
    return PlanOptions(names, per_node * node_count, engine_name, ctx, objective, util, kv_dtype)


@paused()
def plan_with(checkpoint: Checkpoint, options: PlanOptions) -> PlanResult:
    from inspector.analysis.engines import ENGINES
    from inspector.analysis.estimate import estimate as estimate_report
    from inspector.analysis.knobs import plan_knobs
    from inspector.analysis.plan import plan as plan_report
    from inspector.analysis.report import build_report

    report = build_report(checkpoint)
    est = estimate_report(report, context=options.context, kv_dtype=options.kv_dtype, what_if=())

    def planned(max_gpus: int) -> Plan:
        return plan_report(report, est, ENGINES[options.engine], gpus=options.gpus, max_gpus=max_gpus,
                           objective=options.objective, utilization=options.utilization)

    done = planned(options.max_gpus)
    return PlanResult(report, done, plan_knobs(done, options.max_gpus, planned))
