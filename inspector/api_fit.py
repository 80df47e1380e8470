"""The library's answers to "what will it take to serve it": ``estimate`` (will it fit on a GPU, with the engine's
own accounting), ``plan`` (which GPUs and which parallel layout) and ``list_files`` (each file of a several-file
model fitted). A module of the api layer beside ``inspector.api`` (which opens models)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inspector.api import FILE_WORKERS, open_any, open_model
from inspector.errors import UsageError
from inspector.model import Alternatives, Checkpoint
from inspector.pause import paused
from inspector.results import EstimateResult, FileListing, PlanResult

if TYPE_CHECKING:
    from inspector.analysis.facts.report import Report
    from inspector.analysis.knobs import Knob
    from inspector.analysis.serving.budget import Budget
    from inspector.analysis.serving.engines import Engine
    from inspector.analysis.serving.estimate import Estimate
    from inspector.analysis.serving.fit import Fit
    from inspector.analysis.serving.plan import Plan
    from inspector.sources.transport import HubOptions


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
    # deferred: 9 ms at import (inspector.analysis.serving.budget, inspector.analysis.serving.engines, inspector.errors)
    from inspector.analysis.serving.budget import parse_budget, parse_count
    from inspector.analysis.serving.engines import ENGINES
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
    # deferred: 9 ms at import (inspector.analysis.serving.budget, inspector.errors)
    from inspector.analysis.serving.budget import parse_fraction
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
    # deferred: 56 ms at import (inspector.analysis.facts.report, inspector.analysis.serving.engines, …)
    from inspector.analysis.facts.report import build_report
    from inspector.analysis.serving.engines import ENGINES
    from inspector.analysis.serving.estimate import estimate as estimate_report
    from inspector.analysis.serving.fit import Settings, fit

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
    # deferred: 105 ms at import (dataclasses, inspector.analysis.facts.report, inspector.analysis.knobs, …)
    from dataclasses import replace

    from inspector.analysis.facts.report import build_report
    from inspector.analysis.knobs import estimate_knobs
    from inspector.analysis.serving.engines import ENGINES
    from inspector.analysis.serving.estimate import default_engine
    from inspector.analysis.serving.estimate import estimate as estimate_report
    from inspector.analysis.serving.fit import Settings, fit
    from inspector.analysis.serving.plan import plan as plan_report

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
        c = report.checkpoint
        p = c.provenance
        if len(c.headers) != 1 or c.headers[0].format != "gguf":
            return None
        container = p.root if p.origin == "file" else f"{p.repo_id}@{p.revision}" if p.origin == "hub" and \
            p.repo_id and p.revision else None
        if container is None:
            return None
        mine = c.headers[0].file
        several = open_any(container, hub=hub)
        if not isinstance(several, Alternatives):
            return None  # one model file there: no other quantisation
        size = several.listing.get(mine)
        others = sorted(((s, f) for f, s in several.listing.items() if f in several.files and f != mine
                         and s is not None and size is not None and s < size
                         and not f.rsplit("/", 1)[-1].lower().startswith("mmproj")), reverse=True)
        for _, name in others[:FILE_WORKERS]:
            path = str(Path(container) / name) if p.origin == "file" else f"{p.repo_id}/{name}"
            opened = several.opener(name) if several.opener is not None else open_model(path, hub=hub)
            other = build_report(opened)
            other_est = estimate_report(other, context=est.context, batch=options.batch, kv_dtype=options.kv_dtype,
                                        what_if=())
            done = fit(other, other_est, budget, engine, settings=quick, pipeline=options.pipeline)
            if done.fits is True:
                return f"use {path}", done.total_bytes
        return None

    return estimate_knobs(fitted, context=est.context, kv_dtype=est.kv_dtype, again=again, layout=layout,
                          smaller_file=smaller_file)


def list_files(where: str, files: Sequence[tuple[str, Checkpoint]], *, name: str | None = None,
               gpu: str | None = None, context: int | str | None = None, kv_dtype: str | None = None) -> FileListing:
    """The rows of ``files`` (each file opened on its own, by name); with ``gpu`` (``24GiB``) the fit
    of each model file at ``context``, projectors (``mmproj``) counted beside every model. ``name``: how
    one file is named (``NAME/FILE``; default ``where``)."""
    # deferred: 29 ms at import (inspector.analysis.facts.report, inspector.analysis.serving.listing)
    from inspector.analysis.facts.report import build_report
    from inspector.analysis.serving.listing import file_rows

    options = estimate_options(context=context, gpu=gpu, kv_dtype=kv_dtype)
    rows, notes = file_rows([(file, build_report(c)) for file, c in files], budget=options.budget,
                            context=options.context, kv_dtype=options.kv_dtype)
    return FileListing(where, name or where, tuple(rows), options.budget, tuple(notes))


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
    # deferred: 65 ms at import (inspector.analysis.serving.budget, inspector.analysis.serving.engines, …)
    from inspector.analysis.serving.budget import parse_count, parse_whole
    from inspector.analysis.serving.engines import ENGINES
    from inspector.analysis.serving.fit import SUMMARY_CONTEXT
    from inspector.analysis.serving.plan import MAX_GPUS, OBJECTIVES, gpu_list
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
    # deferred: 77 ms at import (inspector.analysis.facts.report, inspector.analysis.knobs, …)
    from inspector.analysis.facts.report import build_report
    from inspector.analysis.knobs import plan_knobs
    from inspector.analysis.serving.engines import ENGINES
    from inspector.analysis.serving.estimate import estimate as estimate_report
    from inspector.analysis.serving.plan import plan as plan_report

    report = build_report(checkpoint)
    est = estimate_report(report, context=options.context, kv_dtype=options.kv_dtype, what_if=())

    def planned(max_gpus: int) -> Plan:
        return plan_report(report, est, ENGINES[options.engine], gpus=options.gpus, max_gpus=max_gpus,
                           objective=options.objective, utilization=options.utilization)

    done = planned(options.max_gpus)
    return PlanResult(report, done, plan_knobs(done, options.max_gpus, planned))
