"""The ``inspect`` command line. Thin: it resolves arguments, calls the library, renders.

``inspect MODEL`` shows a model; subcommands follow it (``inspect diff A B``, ``inspect aliases`` …).
MODEL is a path, an alias or a Hub repo id. A first word that names a subcommand is the
subcommand, so to inspect a folder called ``diff`` write ``./diff`` (or ``inspect show diff``).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, NoReturn

import typer

from inspector import api, api_fit, repos, results
from inspector.cli import serving
from inspector.cli.app import (
    _ENGINE_NAMES,
    _FORMATS,
    _LOSS_KERNELS,
    _METHOD_NAMES,
    _OPTIMIZER_NAMES,
    _PRECISION_NAMES,
    _REPO_KINDS,
    EXAMPLES,
    AsJson,
    Format,
    ModelArg,
    Shared,
    Wide,
    _choices,
    app,
    shared_options,
)
from inspector.cli.boundary import guarded, take_global_options, version_text, wants_json
from inspector.cli.opening import ProgressBar, ReadAhead, open_any, open_model, open_models, say
from inspector.errors import EXIT_USAGE, UsageError
from inspector.model import Alternatives
from inspector.render import streams, views


@app.command("show", epilog=EXAMPLES["show"],
             help=f"Show what is inside MODEL (the default command: `inspect MODEL`): one model, or a repo of "
                  f"several ({_REPO_KINDS}).")
@shared_options()
def show(
    model: ModelArg,
    tensors: Annotated[bool, typer.Option("--tensors", help="list every tensor: name [shape] DTYPE")] = False,
    collapse: Annotated[
        bool, typer.Option("--collapse", help="with --tensors: one row per repeated layer/expert tensor")
    ] = False,
    shards: Annotated[bool, typer.Option("--shards", help="list every file, however many")] = False,
    files: Annotated[bool, typer.Option(
        "--files", help="every file of the folder or repo with its size and kind (weights, config, tokenizer, "
                        "other) and what a download would fetch; from the listing, nothing downloaded")] = False,
    formula: Annotated[bool, typer.Option("--formula", help="parameters predicted from config.json, per role, "
                                                            "beside the headers' counts")] = False,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", autocompletion=_choices("gpu"),
                help="with a folder or repo of GGUF files: whether each fits this budget (24GiB, 80GiBx2); "
                      "for one model, see `inspect estimate --gpu`")] = None,
    context: Annotated[str | None, typer.Option(
        "--context", help="with --gpu: the context each file's fit is checked at (default: the model's own)")] = None,
    *,
    shared: Shared,
) -> None:
    if context is not None and gpu is None:
        raise UsageError("--context goes with --gpu", hint="inspect REPO --gpu 8GiB --context 8k")
    listing_options = api_fit.estimate_options(context=context, gpu=gpu) if gpu else None  # checked before any read

    if collapse and not tensors:
        raise UsageError("--collapse goes with --tensors", hint="inspect MODEL --tensors --collapse")
    if files and (tensors or formula):
        raise UsageError("--files lists the files, not the tensors", hint="inspect MODEL --files")
    form = views.output_format(shared.fmt, shared.as_json)
    target = views.output_target(form, shared.output, model=model,
                                 conflicts=tensors or files or formula or gpu is not None)

    if api.is_cache_root(model):
        views.check_format(results.CacheResult, form, hint=f"inspect {model}/models--ORG--NAME --format {form}")
        views.emit(api.cache(model), form, wide=shared.wide)
        return
    checkpoint = open_any(model, shared.revision, shared.hub)
    if isinstance(checkpoint, Alternatives):  # one model in several files (GGUF quantisations)
        if files:  # every file of the folder or repo, as listed
            views.emit(api.files_of_several(model, checkpoint, revision=shared.revision,
                                            hub=shared.hub), form, wide=shared.wide)
            return
        serving.file_listing(model, checkpoint, shared.revision, shared.hub, form, shared.wide, gpu, context)
        return
    if listing_options is not None:
        raise UsageError("--gpu with `inspect` answers for a folder or repo of several GGUF files",
                         hint=f"for one model: inspect estimate {model} --gpu {gpu}")
    if files:
        views.emit(api.files(checkpoint), form, wide=shared.wide)
        return
    summary = form == views.Format.TABLE and not tensors  # the table's last line: the estimate and the fit
    shown = api.inspect(checkpoint, tensors=tensors and form != views.Format.HTML, collapse=collapse,
                        formula=formula, summary=summary)
    views.emit(shown, form, view=views.View(all_shards=shards), wide=shared.wide, target=target)


@app.command("diff", epilog=EXAMPLES["diff"],
             help="Compare two models and explain the parameter gap, cause by cause. "
                          "A and B: paths, aliases, Hub repos, or one repo at two revisions (repo@rev1 repo@rev2). "
                          "Exit 0; with --fail-if, exit 1 when the named difference is found; an adapter "
                          "that does not match the base (peft could not load it) exits 1.")
@shared_options(revision=False)
def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="the model to compare from")],
    b: Annotated[str, typer.Argument(metavar="B", help="the model to compare to")],
    fail_if: Annotated[str | None, typer.Option(
        "--fail-if", help="comma-separated: params (count changed), dtypes (a dtype changed), "
                          "shapes (tensors added, removed or reshaped), values (with --values: a tensor's "
                          "sampled bytes changed), any")] = None,
    all_changes: Annotated[bool, typer.Option("--all-changes", help="list every tensor change")] = False,
    values: Annotated[bool, typer.Option(
        "--values", help="which tensors' values changed: a few ranges of each tensor both hold, read and "
                         "compared (never the weights)")] = False,
    sample_bytes: Annotated[str, typer.Option(
        "--sample-bytes", help="with --values: bytes read of each tensor, in ranges of 320 (default 1024: its "
                               "start, middle and end)")] = "1024",
    exact: Annotated[bool, typer.Option(
        "--exact", help="with --values, on local files: hash every compared tensor whole (streamed) to prove "
                        "it identical")] = False,
    *,
    shared: Shared,
) -> None:
    gates = api.gates(fail_if, values=values)
    form = views.output_format(shared.fmt, shared.as_json)
    target = views.output_target(form, shared.output)
    hub = shared.hub
    difference = api.diff(*open_models([a, b], hub), values=values, sample_bytes=sample_bytes, exact=exact, hub=hub)
    views.emit(difference, form, view=views.View(all_changes=all_changes), wide=shared.wide, target=target)
    hit = difference.gates_hit(gates)
    if hit:
        say(f"--fail-if: {', '.join(hit)} changed")
        raise typer.Exit(1)
    if difference.adapter is not None and difference.adapter.problems:
        count = len(difference.adapter.problems)
        say(f"the adapter does not match this base ({count} problem{'s' if count > 1 else ''}: see above); "
            "peft could not load it onto it")
        raise typer.Exit(1)


@app.command("compare", epilog=EXAMPLES["compare"],
             help="Compare 2 to 10 models side by side: totals, config and parameters by role. "
                             "Each model: a path, an alias or a Hub repo.")
@shared_options(revision=False)
def compare_cmd(
    models: Annotated[list[str], typer.Argument(metavar="MODEL...", help="2 to 10 models")],
    *,
    shared: Shared,
) -> None:
    if not 2 <= len(models) <= 10:
        raise UsageError(f"compare takes 2 to 10 models, not {len(models)}")
    form = views.output_format(shared.fmt, shared.as_json)
    target = views.output_target(form, shared.output)
    views.emit(api.compare(*open_models(list(models), shared.hub)), form, wide=shared.wide,
               target=target)


# estimate, train and plan (cli/serving.py), registered here in the help's order
app.command("estimate", epilog=EXAMPLES["estimate"],
             help="Memory, KV cache, FLOPs, MoE active parameters and quantisation-aware counts, "
                              "each with its formula, source and assumptions; with --gpu, whether it fits.",
            )(serving.estimate_cmd)
app.command("train", epilog=EXAMPLES["train"],
             help="The memory to fine-tune MODEL per GPU (full, LoRA, QLoRA): weights, gradients, optimizer "
                  "states and master copy exact from the headers, activations and logits by a stated formula, "
                  "sharded as DeepSpeed ZeRO and FSDP shard them; with --gpu, whether it fits.")(serving.train_cmd)
app.command("plan", epilog=EXAMPLES["plan"],
             help="Which GPUs, how many, in which parallel layout: every GPU x count x tensor/pipeline/expert "
                  "parallel layout, checked against the engine's own start-up rules, each valid one fitted; "
                  "the cheapest (fewest GPUs) first.")(serving.plan_cmd)


@app.command("audit", epilog=EXAMPLES["audit"],
             help="Check that a checkpoint is whole and consistent, from headers, index, config and "
                           "file sizes (Hub repos: the listed sizes). Exit 0 with no error finding, 1 with any. "
                           "Never modifies the audited files.")
@shared_options(file=False)
def audit_cmd(
    target: ModelArg,
    deep: Annotated[
        bool, typer.Option("--deep", help="local only: stream tensor data, flag NaN, Inf, all-zero")
    ] = False,
    modeling: Annotated[bool, typer.Option(
        "--modeling", help="also check against the model class on PyTorch's meta device (needs the torch extra)")
    ] = False,
    lineage: Annotated[bool, typer.Option(
        "--lineage", help="also check the base the model declares against its values (as inspect lineage does)")
    ] = False,
    *,
    shared: Shared,
) -> None:
    form = views.output_format(shared.fmt, shared.as_json)
    views.check_format(results.Audit, form, hint=f"inspect audit {target} --format markdown")
    checkpoint = open_model(target, shared.revision, shared.hub, lenient=True)
    if deep and checkpoint.provenance.root is None:
        raise UsageError("--deep needs a local checkpoint folder or file")
    with ProgressBar() as progress:
        audited = api.audit(checkpoint, modeling=modeling, deep=deep, progress=progress, lineage=lineage,
                            hub=shared.hub)
    views.emit(audited, form, wide=shared.wide)
    if audited.errors:
        raise typer.Exit(1)


@app.command("lineage", epilog=EXAMPLES["lineage"],
             help="Where a checkpoint came from: identical to, a fine-tune, merge, quantisation or adapter of each "
                  "candidate, or unrelated, proven from the listing's file hashes, the tensors' shapes and a few KB "
                  "of sampled values (never the weights). Without candidates, the bases the model declares (card "
                  "base_model, adapter_config.json, GGUF general.base_model). Exit 0; with --fail-if, 1 when the "
                  "named condition holds.")
@shared_options(revision=False)
def lineage_cmd(
    model: ModelArg,
    candidates: Annotated[list[str] | None, typer.Argument(
        metavar="[CANDIDATE]...", help="models it may come from (default: the bases it declares)")] = None,
    fail_if: Annotated[str | None, typer.Option(
        "--fail-if", help="comma-separated: unrelated (no candidate is where it came from, or that is not known), "
                          "changed (not identical to a candidate), declared (the declared base is not borne out)")
    ] = None,
    exact: Annotated[bool, typer.Option(
        "--exact", help="local files: hash every weight file whole (streamed) to prove a copy")] = False,
    *,
    shared: Shared,
) -> None:
    gates = api.lineage_gates(fail_if)
    form = views.output_format(shared.fmt, shared.as_json)
    target = views.output_target(form, shared.output)
    hub = shared.hub
    found = api.lineage(model, list(candidates or ()), exact=exact, hub=hub)
    views.emit(found, form, wide=shared.wide, target=target)
    hit = found.gates_hit(gates)
    if hit:
        say(f"--fail-if {', '.join(hit)}: {found.verdict}")
        raise typer.Exit(1)


@app.command("save", epilog=EXAMPLES["save"],
             help="Write MODEL's header snapshot to a folder: inspect, diff or audit it later offline.")
@shared_options(form=False, file=False)
def save(
    model: ModelArg,
    out: Annotated[str, typer.Option("-o", "--output", help="folder to write (new, empty, or a snapshot)")],
    force: Annotated[bool, typer.Option("--force", help="replace a snapshot of another model in that folder")] = False,
    *,
    shared: Shared,
) -> None:
    checkpoint = open_model(model, shared.revision, shared.hub)
    folder = api.save(checkpoint, out, force=force)
    say(f"saved {checkpoint.tensor_count:,} tensor headers of {checkpoint.label} to {folder}")


@app.command("aliases", epilog=EXAMPLES["aliases"],
             help="List the short names of bundled models (served offline).")
def aliases(as_json: AsJson = False, fmt: Format = "table", wide: Wide = False) -> None:
    views.emit(api.aliases(), views.output_format(fmt, as_json), wide=wide)


def _version_callback(value: bool) -> None:
    if value:
        streams.out(version_text())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version_callback, is_eager=True,
                                          help="print the version and exit")] = False,
) -> None:
    pass


def _leading_options(argv: list[str], commands: set[str]) -> list[str]:
    """``inspect --json diff A B`` → ``inspect diff --json A B``: options written before a subcommand
    are that subcommand's (they were taken as ``show``'s, and MODEL as the subcommand's name). The
    commands' options are looked up only for a line that starts with one."""
    if not argv[0].startswith("-") or not commands & set(argv[1:]):
        return argv
    takes_value = {name for command in typer.main.get_command(app).commands.values()  # type: ignore[attr-defined]
                   for param in command.params
                   if param.param_type_name == "option" and getattr(param, "is_flag", True) is False
                   for name in param.opts}
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-h", "--help", "--version"):
        i += 2 if argv[i] in takes_value else 1
    if 0 < i < len(argv) and argv[i] in commands:
        return [argv[i], *argv[:i], *argv[i + 1:]]
    return argv


def _route(argv: list[str]) -> list[str]:
    """``inspect MODEL …`` → ``inspect show MODEL …``; subcommands and root options pass through;
    options before a subcommand move after it."""
    if not argv:
        return argv
    commands = {c.name for c in app.registered_commands if c.name}
    argv = _leading_options(argv, commands)
    first = argv[0]
    if first in commands or first in ("-h", "--help", "--version", "--install-completion", "--show-completion"):
        return argv

    close = api.did_you_mean(first, sorted(commands - {"show"}))
    if close and not api.is_local(first) and "/" not in first and not api.is_alias(first):
        raise UsageError(f"{first!r} is not a command, a path or an alias",
                         hint=f"did you mean `inspect {close}`?")
    return ["show", *argv]


def prog_name() -> str:
    """The name the CLI was started under (``hf-inspect`` or ``inspect``), for usage lines and shell
    completion; ``inspect`` when run as ``python -m inspector`` or in-process."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name if name in ("inspect", "hf-inspect") else "inspect"


def main(argv: list[str] | None = None) -> NoReturn:
    """In-process entry point (the console script is ``launch.entry``)."""
    sys.exit(run(argv))


def run(argv: list[str] | None) -> int:
    """Run the command line ``argv`` (default: the process's) and return its exit code, inside the one
    error boundary (``boundary.guarded``); typer's own usage errors are worded here."""
    args = take_global_options(list(sys.argv[1:] if argv is None else argv))
    return guarded(args, lambda: _typer_run(args))


def _or(words: list[str]) -> str:
    """``a, b or c``."""
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)


def _registry_help(command: Any) -> None:
    """Fill the registries' names into the options' and commands' help (engines, optimizers, repo kinds), as
    registered now."""
    # deferred: 10 ms at import (inspector.analysis.serving.engines, inspector.analysis.training.losses, …)
    from inspector.analysis.serving.engines import ENGINES
    from inspector.analysis.training.losses import KERNELS
    from inspector.analysis.training.methods import METHODS
    from inspector.analysis.training.optimizers import OPTIMIZERS
    from inspector.analysis.training.precisions import PRECISIONS

    names = {_ENGINE_NAMES: ", ".join(ENGINES), _OPTIMIZER_NAMES: ", ".join(OPTIMIZERS),
             _REPO_KINDS: "; ".join(f"a {k.described}, {k.index_file}" for k in repos.kinds()),
             _FORMATS: "".join(f", {name}" for name in views.format_names()[len(views.Format):]),
             _LOSS_KERNELS: _or([f"{k.name} ({k.described})" for k in KERNELS.values()]),
             _METHOD_NAMES: _or(list(METHODS)),
             _PRECISION_NAMES: _or([f"{p.name} ({p.described})" if p.described else p.name
                                    for p in PRECISIONS.values()])}
    for sub in getattr(command, "commands", {}).values():
        for placeholder, text in names.items():
            if isinstance(getattr(sub, "help", None), str) and placeholder in sub.help:
                sub.help = sub.help.replace(placeholder, text)
        for param in sub.params:
            for placeholder, text in names.items():
                if isinstance(getattr(param, "help", None), str) and placeholder in param.help:
                    param.help = param.help.replace(placeholder, text)


def _typer_run(args: list[str]) -> int:
    ReadAhead.start(args)  # already begun when the console script started this process
    command = typer.main.get_command(app)
    if "--help" in args or "-h" in args:
        _registry_help(command)
    try:
        code = command.main(args=_route(args), prog_name=prog_name(), standalone_mode=False)
        return code if isinstance(code, int) else 0
    except typer.Abort:
        streams.say("Aborted.")
        return 130
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        show_error = getattr(exc, "show", None)
        if callable(show_error):
            show_error()
        else:
            streams.error(str(exc))
        code = getattr(exc, "exit_code", EXIT_USAGE)
        code = code if isinstance(code, int) and code else EXIT_USAGE
        if wants_json(args):
            streams.error_json(str(getattr(exc, "message", exc)), None, code)
        return code
