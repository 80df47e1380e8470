"""The typer application, the options every command shares (defined once, here), shell completion's choices and
the commands' examples. The commands are in ``commands`` and ``serving``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from inspector.render import views

if TYPE_CHECKING:
    from inspector.sources.transport import HubOptions

EXIT_CODES_HELP = (
    "Exit codes: 0 ok · 1 a result to gate on (differences, audit errors) · 2 usage · "
    "3 not found or no access · 4 invalid checkpoint · 5 network · 70 internal error. "
    "Anywhere on the line: --quiet (-q) says nothing on stderr but errors; --no-color (or NO_COLOR) draws no colours."
)

def _plain_required_metavar() -> None:
    """Usage lines name a required argument as ``MODEL``, not typer's ``{MODEL}`` (issue 52): typer 0.28's
    ``TyperArgument.make_metavar`` wraps a required one in braces; the braces are taken off what it gives."""
    original = typer.core.TyperArgument.make_metavar

    def make_metavar(self: typer.core.TyperArgument, ctx: Any, *, usage: bool = False) -> str:
        text = original(self, ctx, usage=usage)
        return text[1:-1] if text.startswith("{") and text.endswith("}") else text

    typer.core.TyperArgument.make_metavar = make_metavar  # type: ignore[method-assign]

#: placeholders in an option's help for a registry's names, filled from the registry only when help is printed
#: (``_registry_help``: a command that prints no help does not import the registries)
_ENGINE_NAMES = "{engines}"
_OPTIMIZER_NAMES = "{optimizers}"
_REPO_KINDS = "{repo_kinds}"
_FORMATS = "{formats}"
_LOSS_KERNELS = "{loss_kernels}"
_PRECISION_NAMES = "{precisions}"
_METHOD_NAMES = "{methods}"


_plain_required_metavar()


def _choices(kind: str) -> Callable[[str], list[str]]:
    """Shell completion of an option's values, from the tables the code itself checks them against (each
    imported only when the shell asks): methods, optimizers, precisions, offloads, engines, objectives,
    formats, KV dtypes, GPU names and the bundled aliases."""
    def complete(incomplete: str) -> list[str]:
        # deferred: 68 ms at import (inspector.analysis.serving.engines, inspector.analysis.serving.plan, …)
        from inspector.analysis.serving.engines import ENGINES, GPUS
        from inspector.analysis.serving.plan import OBJECTIVES
        from inspector.analysis.training.experts import LAYOUTS
        from inspector.analysis.training.losses import KERNELS
        from inspector.analysis.training.methods import METHODS
        from inspector.analysis.training.optimizers import OPTIMIZERS
        from inspector.analysis.training.options import OFFLOADS
        from inspector.analysis.training.precisions import PRECISIONS
        from inspector.analysis.training.stages import STAGES
        from inspector.formats.dtypes import USER_DTYPE_BYTES
        from inspector.sources.bundled import ALIASES

        tables: dict[str, Iterable[str]] = {
            "method": METHODS, "optimizer": OPTIMIZERS, "precision": PRECISIONS, "offload": OFFLOADS,
            "engine": ENGINES, "objective": OBJECTIVES, "format": views.format_names(),
            "kv_dtype": USER_DTYPE_BYTES, "gpu": GPUS, "model": ALIASES, "experts": LAYOUTS,
            "stage": STAGES, "loss": KERNELS}
        return [value for value in tables[kind] if value.startswith(incomplete)]
    return complete


def _examples(*lines: str) -> str:
    """An --help epilog of examples (``\\b``: click prints the block as it is)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


#: the examples every --help shows
EXAMPLES: dict[str, str] = {
    "show": _examples("inspect llama3-8b", "inspect meta-llama/Meta-Llama-3-8B --tensors --collapse",
                      "inspect ./my-checkpoint --json | jq .totals", "inspect Qwen/Qwen3-0.6B --format markdown"),
    "diff": _examples("inspect diff llama2-7b llama3-8b",
                      "inspect diff org/name@v1 org/name@v2 --fail-if params,shapes",
                      "inspect diff BASE ./adapter --format markdown"),
    "compare": _examples("inspect compare llama3-8b mistral-7b qwen2.5-7b", "inspect compare A B --format markdown"),
    "estimate": _examples("inspect estimate llama3-8b", "inspect estimate mixtral-8x7b --gpu 80GiBx2 --context 32k",
                          "inspect estimate llama3-8b --gpu 24GiB --dtype fp8 --kv-dtype fp8 --json"),
    "train": _examples("inspect train llama3-8b --method qlora --gpu RTX4090",
                       "inspect train llama3-8b --method full --gpu H100x8 --zero 3 --checkpointing",
                       "inspect train mistral-7b --method lora --rank 8 --targets q_proj,v_proj --seq 4k --json",
                       "inspect train qwen2.5-7b --method lora --optimizer adamw-8bit --gpu 24GiB --batch 4",
                       "inspect train llama3-8b --method full --stage dpo --gpu H100x8 --zero 3",
                       "inspect train qwen2.5-7b --stage grpo --batch 8 --gpu H100 --rollout-memory 0.3"),
    "plan": _examples("inspect plan llama3-70b", "inspect plan mixtral-8x7b --gpu H100,A100-80GB,L40S --context 32k",
                      "inspect plan qwen2.5-7b --objective throughput --json",
                      "inspect plan llama3-70b --gpu H100 --max-gpus 8 --nodes 2"),
    "audit": _examples("inspect audit ./my-checkpoint", "inspect audit org/name --json",
                       "inspect audit ./folder --deep"),
    "lineage": _examples("inspect lineage ./my-finetune", "inspect lineage org/merged org/parent-a org/parent-b",
                         "inspect lineage model.Q8_0.gguf meta-llama/Meta-Llama-3-8B --json",
                         "inspect lineage org/name --fail-if declared"),
    "save": _examples("inspect save meta-llama/Meta-Llama-3-8B -o ./llama3-headers", "inspect ./llama3-headers"),
    "aliases": _examples("inspect aliases", "inspect aliases --json"),
}


app = typer.Typer(
    name="inspect",
    help="What is inside a Hugging Face checkpoint, and why is it that big? Reads config, index and "
    "safetensors headers only, never the weights.\n\n"
    "inspect MODEL shows a model (MODEL: a path, an alias from `inspect aliases`, or a Hub repo "
    "org/name[@revision]). A first word that is a subcommand runs it: to inspect a folder named like "
    "one, write ./NAME.\n\n" + EXIT_CODES_HELP,
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Examples:\n\n\b\n  inspect llama3-8b\n  inspect meta-llama/Meta-Llama-3-8B --json\n"
           "  inspect diff llama2-7b llama3-8b\n  inspect estimate llama3-8b --gpu 24GiB\n"
           "  inspect audit ./my-checkpoint",
)


Wide = Annotated[bool, typer.Option("--wide", help="on a terminal: draw tables at full width (as when piped)")]
Format = Annotated[str, typer.Option("--format", autocompletion=_choices("format"),
        help="table (default), json, markdown or html (a self-contained page: to stdout, or to a file with "
             f"-o){_FORMATS}")]
Output = Annotated[str | None, typer.Option("-o", "--output", help="with --format html: the file to write "
                                                                  "(replaces only a report this tool wrote)")]
Explain = Annotated[bool, typer.Option(
    "--explain", help="each figure's formula, source and assumptions in the table (--json has them always)")]
FailIfFit = Annotated[str | None, typer.Option(
    "--fail-if", help="nofit: exit 1, with the verdict on stderr, unless it fits (an unknown fit fails too)")]
#: the model every command reads (one place for its metavar, completion and help)
ModelArg = Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
                                         help="path, alias, or Hub repo id (org/name[@revision])")]
AsJson = Annotated[bool, typer.Option("--json", help="short for --format json: one JSON document (schema_version 2)")]
Revision = Annotated[str | None, typer.Option("--revision", help="Hub branch, tag or commit (or write repo@rev)")]
Endpoint = Annotated[str | None, typer.Option("--endpoint", help="Hub endpoint (default: HF_ENDPOINT, then the Hub)")]
Token = Annotated[str | None, typer.Option("--token", help="Hub token (default: HF_TOKEN, then `hf auth login`'s)")]
Offline = Annotated[bool, typer.Option("--offline", help="no network: the header cache and bundled snapshots only")]


# --- the options several commands share, added to each once ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shared:
    """What the shared options said (``shared_options`` adds them to a command, which takes this record as
    ``shared``): the output's form and where it goes, the revision, and how to reach the Hub."""

    as_json: bool = False
    fmt: str = "table"
    wide: bool = False
    output: str | None = None
    revision: str | None = None
    endpoint: str | None = None
    token: str | None = None
    offline: bool = False

    @property
    def hub(self) -> HubOptions:
        """The run's one ``HubOptions``."""
        # deferred: 1 ms at import (inspector.cli.opening)
        from inspector.cli.opening import hub_options

        return hub_options(self.endpoint, self.token, self.offline)


#: the shared options by group: (parameter, its typer annotation, its default)
_FORM: Final = (("as_json", AsJson, False), ("fmt", Format, "table"), ("wide", Wide, False))
_FILE: Final = (("output", Output, None),)
_REVISION: Final = (("revision", Revision, None),)
_HUB: Final = (("endpoint", Endpoint, None), ("token", Token, None), ("offline", Offline, False))


def shared_options(*, form: bool = True, file: bool = True, revision: bool = True,
                   hub: bool = True) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add the shared options to a command, after its own, in one order: ``form`` (--json, --format, --wide),
    ``file`` (-o), ``revision`` (--revision), ``hub`` (--endpoint, --token, --offline). The command takes them as one
    ``shared: Shared`` parameter; typer sees each option as written here, once."""
    extra = [*(_FORM if form else ()), *(_FILE if file else ()), *(_REVISION if revision else ()),
             *(_HUB if hub else ())]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "shared"]

        @functools.wraps(command)
        def with_shared(**given: Any) -> None:
            shared = Shared(**{name: given.pop(name) for name, _, _ in extra})
            command(**given, shared=shared)

        parameters = [*own, *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                                annotation=annotation) for name, annotation, default in extra)]
        with_shared.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        with_shared.__annotations__ = {}  # typer reads the signature's (evaluated) annotations
        return with_shared

    return decorate
