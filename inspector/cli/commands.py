"""The ``inspect`` command line. Thin: it resolves arguments, calls the library, renders.

``inspect MODEL`` shows a model; subcommands follow it (``inspect diff A B``, ``inspect aliases`` …).
MODEL is a path, an alias or a Hub repo id. A first word that names a subcommand is the
subcommand, so to inspect a folder called ``diff`` write ``./diff`` (or ``inspect show diff``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from inspector import api, api_fit, api_train
from inspector.cli.boundary import guarded, take_global_options, version_text, wants_json
from inspector.cli.opening import ProgressBar, ReadAhead, hub_options, open_model, open_models, say
from inspector.errors import EXIT_USAGE, SeveralFiles
from inspector.render import results, streams, views

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


_plain_required_metavar()


def _choices(kind: str) -> Callable[[str], list[str]]:
    """Shell completion of an option's values, from the tables the code itself checks them against (each
    imported only when the shell asks): methods, optimizers, precisions, offloads, engines, objectives,
    formats, KV dtypes, GPU names and the bundled aliases."""
    def complete(incomplete: str) -> list[str]:
        from inspector.analysis.engines import ENGINES, GPUS
        from inspector.analysis.experts import LAYOUTS
        from inspector.analysis.optimizers import OPTIMIZERS
        from inspector.analysis.plan import OBJECTIVES
        from inspector.analysis.stages import LOSSES, STAGES
        from inspector.analysis.train import METHODS, OFFLOADS, PRECISIONS
        from inspector.formats.dtypes import USER_DTYPE_BYTES
        from inspector.sources.bundled import ALIASES

        tables: dict[str, Iterable[str]] = {
            "method": METHODS, "optimizer": OPTIMIZERS, "precision": PRECISIONS, "offload": OFFLOADS,
            "engine": ENGINES, "objective": OBJECTIVES, "format": [f.value for f in views.Format],
            "kv_dtype": USER_DTYPE_BYTES, "gpu": GPUS, "model": ALIASES, "experts": LAYOUTS,
            "stage": STAGES, "loss": LOSSES}
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
        help="table (default), json, markdown or html (a self-contained "
                                                     "page: to stdout, or to a file with -o)")]
Output = Annotated[str | None, typer.Option("-o", "--output", help="with --format html: the file to write "
                                                                  "(replaces only a report this tool wrote)")]
Explain = Annotated[bool, typer.Option(
    "--explain", help="each figure's formula, source and assumptions in the table (--json has them always)")]
FailIfFit = Annotated[str | None, typer.Option(
    "--fail-if", help="nofit: exit 1, with the verdict on stderr, unless it fits (an unknown fit fails too)")]
AsJson = Annotated[bool, typer.Option("--json", help="short for --format json: one JSON document (schema_version 2)")]
Revision = Annotated[str | None, typer.Option("--revision", help="Hub branch, tag or commit (or write repo@rev)")]
Endpoint = Annotated[str | None, typer.Option("--endpoint", help="Hub endpoint (default: HF_ENDPOINT, then the Hub)")]
Token = Annotated[str | None, typer.Option("--token", help="Hub token (default: HF_TOKEN, then `hf auth login`'s)")]
Offline = Annotated[bool, typer.Option("--offline", help="no network: the header cache and bundled snapshots only")]


@app.command("show", epilog=EXAMPLES["show"],
             help="Show what is inside MODEL (the default command: `inspect MODEL`).")
def show(
    model: Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
            help="path, alias, or Hub repo id (org/name[@revision])")],
    as_json: AsJson = False,
    fmt: Format = "table",
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
    revision: Revision = None,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
    output: Output = None,
) -> None:
    from inspector.errors import UsageError

    if context is not None and gpu is None:
        raise UsageError("--context goes with --gpu", hint="inspect REPO --gpu 8GiB --context 8k")
    listing_options = api_fit.estimate_options(context=context, gpu=gpu) if gpu else None  # checked before any read

    if collapse and not tensors:
        raise UsageError("--collapse goes with --tensors", hint="inspect MODEL --tensors --collapse")
    if files and (tensors or formula):
        raise UsageError("--files lists the files, not the tensors", hint="inspect MODEL --files")
    form = views.output_format(fmt, as_json)
    target = views.output_target(form, output, model=model,
                                 conflicts=tensors or files or formula or gpu is not None)

    if api.is_cache_root(model):
        views.check_format(results.CacheResult, form, hint=f"inspect {model}/models--ORG--NAME --format {form}")
        views.emit(api.cache(model), form, wide=wide)
        return
    try:
        checkpoint = open_model(model, revision, hub_options(endpoint, token, offline))
    except SeveralFiles as several:
        if files:  # every file of the folder or repo, as listed
            views.emit(api.files_of_several(model, several, revision=revision,
                                            hub=hub_options(endpoint, token, offline)), form, wide=wide)
            return
        file_listing(model, several, revision, hub_options(endpoint, token, offline), form, wide, gpu, context)
        return
    if listing_options is not None:
        raise UsageError("--gpu with `inspect` answers for a folder or repo of several GGUF files",
                         hint=f"for one model: inspect estimate {model} --gpu {gpu}")
    if files:
        views.emit(api.files(checkpoint), form, wide=wide)
        return
    summary = form == views.Format.TABLE and not tensors  # the table's last line: the estimate and the fit
    shown = api.inspect(checkpoint, tensors=tensors and form != views.Format.HTML, collapse=collapse,
                        formula=formula, summary=summary)
    views.emit(shown, form, view=views.View(all_shards=shards), wide=wide, target=target)


def file_listing(model: str, several: SeveralFiles, revision: str | None, hub: Any, form: views.Format, wide: bool,
                  gpu: str | None,
                  context: str | None) -> None:
    """A folder or repo holding one model in several GGUF files: one row a file (its header only)."""
    views.check_format(results.FileListing, form, hint=f"{several.hint} --format {form}" if several.hint else None)
    opened = api.open_several(model, several, revision=revision, hub=hub)
    name, _ = api.repo_and_revision(model)
    views.emit(api_fit.list_files(several.where, opened, name=name, gpu=gpu, context=context), form, wide=wide)


@app.command("diff", epilog=EXAMPLES["diff"],
             help="Compare two models and explain the parameter gap, cause by cause. "
                          "A and B: paths, aliases, Hub repos, or one repo at two revisions (repo@rev1 repo@rev2). "
                          "Exit 0; with --fail-if, exit 1 when the named difference is found; an adapter "
                          "that does not match the base (peft could not load it) exits 1.")
def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="the model to compare from")],
    b: Annotated[str, typer.Argument(metavar="B", help="the model to compare to")],
    as_json: AsJson = False,
    fmt: Format = "table",
    fail_if: Annotated[str | None, typer.Option(
        "--fail-if", help="comma-separated: params (count changed), dtypes (a dtype changed), "
                          "shapes (tensors added, removed or reshaped), values (with --values: a tensor's "
                          "sampled bytes changed), any")] = None,
    all_changes: Annotated[bool, typer.Option("--all-changes", help="list every tensor change")] = False,
    values: Annotated[bool, typer.Option(
        "--values", help="which tensors' values changed: a few ranges of each tensor both hold, read and "
                         "compared (never the weights)")] = False,
    sample_bytes: Annotated[str, typer.Option(
        "--sample-bytes", help="with --values: bytes read of each tensor, in ranges of 256 (default 1024)")] = "1024",
    exact: Annotated[bool, typer.Option(
        "--exact", help="with --values, on local files: hash every compared tensor whole (streamed) to prove "
                        "it identical")] = False,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
    output: Output = None,
) -> None:
    gates = api.gates(fail_if, values=values)
    form = views.output_format(fmt, as_json)
    target = views.output_target(form, output)
    hub = hub_options(endpoint, token, offline)
    difference = api.diff(*open_models([a, b], hub), values=values, sample_bytes=sample_bytes, exact=exact, hub=hub)
    views.emit(difference, form, view=views.View(all_changes=all_changes), wide=wide, target=target)
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
def compare_cmd(
    models: Annotated[list[str], typer.Argument(metavar="MODEL...", help="2 to 10 models")],
    as_json: AsJson = False,
    fmt: Format = "table",
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
    output: Output = None,
) -> None:
    from inspector.errors import UsageError

    if not 2 <= len(models) <= 10:
        raise UsageError(f"compare takes 2 to 10 models, not {len(models)}")
    form = views.output_format(fmt, as_json)
    target = views.output_target(form, output)
    views.emit(api.compare(*open_models(list(models), hub_options(endpoint, token, offline))), form, wide=wide,
               target=target)


@app.command("estimate", epilog=EXAMPLES["estimate"],
             help="Memory, KV cache, FLOPs, MoE active parameters and quantisation-aware counts, "
                              "each with its formula, source and assumptions; with --gpu, whether it fits.")
def estimate_cmd(
    model: Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
            help="path, alias, or Hub repo id (org/name[@revision])")],
    context: Annotated[str | None, typer.Option(
        "--context", help="tokens: 8192, 8k, 128k, 1M (k and M binary; default: the config's context)")] = None,
    batch: Annotated[str, typer.Option("--batch", help="sequences")] = "1",
    kv_dtype: Annotated[str | None, typer.Option(
        "--kv-dtype", autocompletion=_choices("kv_dtype"),
                help="bf16, fp16, fp32, fp8, int8, int4, or llama.cpp's q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl "
                           "(default: the model's dtype; f16 for a GGUF, as llama.cpp)")] = None,
    dtype: Annotated[str | None, typer.Option(
        "--dtype", help="what-if weight dtypes, comma-separated (default bf16,fp8,int4); with --gpu, one dtype "
                        "sizes the weights in the fit")] = None,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", autocompletion=_choices("gpu"),
                help="memory budget per device, optionally ×N devices: 24GiB, 80GiBx2, 141GiBx8, 16GB, or a GPU "
                      "by name: H100, H200, A100-80GB, A100-40GB, L40S, L4, A10G, RTX4090, T4 (H100x2, 8xA100, "
                      "'RTX 4090', 4090)")] = None,
    engine: Annotated[str | None, typer.Option(
        "--engine", autocompletion=_choices("engine"),
                help=f"with --gpu: the serving engine whose memory the fit models, {_ENGINE_NAMES} "
                         "(default: llama.cpp for a GGUF, vllm otherwise)")] = None,
    utilization: Annotated[str | None, typer.Option(
        "--utilization", help="with --gpu: the share of the device the engine takes: vLLM's "
                              "gpu_memory_utilization (default 0.9), SGLang's mem_fraction_static (default by the "
                              "GPU, as SGLang sets it)")] = None,
    pipeline: Annotated[str, typer.Option(
        "--pipeline", help="with --gpu: pipeline-parallel stages the layers are split between; they divide "
                           "the devices (--gpu H100x4 --pipeline 2: tensor parallel 2 in each stage)")] = "1",
    overhead: Annotated[str | None, typer.Option(
        "--overhead", help="runtime overhead per device, replacing the engine's terms (activation peak, "
                           "buffers): 2GiB, 500MB")] = None,
    fail_if: FailIfFit = None,
    explain: Explain = False,
    as_json: AsJson = False,
    fmt: Format = "table",
    revision: Revision = None,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
    output: Output = None,
) -> None:
    gates = api.answer_gates(fail_if, budget=gpu is not None)
    form = views.output_format(fmt, as_json)
    target = views.output_target(form, output)
    options = api_fit.estimate_options(context=context, batch=batch, kv_dtype=kv_dtype, gpu=gpu, overhead=overhead,
                                   engine=engine, utilization=utilization, pipeline=pipeline,
                                   dtypes=[d.strip() for d in dtype.split(",") if d.strip()] if dtype else None)
    try:
        checkpoint = open_model(model, revision, hub_options(endpoint, token, offline))
    except SeveralFiles as several:  # a GGUF repo of several quantisations: the fit of each file
        file_listing(model, several, revision, hub_options(endpoint, token, offline), form, wide, gpu, context)
        return
    done = api_fit.estimate_with(checkpoint, options, hub=hub_options(endpoint, token, offline))
    for warning in (*done.estimate.warnings, *(done.fit.warnings if done.fit is not None else ())):
        say(f"warning: {warning}")
    views.emit(done, form, view=views.View(explain=explain), wide=wide, target=target)
    _gate(done, gates)


@app.command("train", epilog=EXAMPLES["train"],
             help="The memory to fine-tune MODEL per GPU (full, LoRA, QLoRA): weights, gradients, optimizer "
                  "states and master copy exact from the headers, activations and logits by a stated formula, "
                  "sharded as DeepSpeed ZeRO and FSDP shard them; with --gpu, whether it fits.")
def train_cmd(
    model: Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
            help="path, alias, or Hub repo id (org/name[@revision])")],
    method: Annotated[str, typer.Option("--method", autocompletion=_choices("method"),
            help="full, lora or qlora")] = "lora",
    rank: Annotated[str | None, typer.Option("--rank", help="LoRA rank r (default 16)")] = None,
    alpha: Annotated[str | None, typer.Option("--alpha", help="LoRA alpha (reported only: it scales, costs nothing)")
                     ] = None,
    targets: Annotated[str | None, typer.Option(
        "--targets", help="all-linear (the default; peft's rule: every linear layer but the output layer) or module "
                          "names, comma-separated: q_proj,v_proj; an embedding's name adapts it too")] = None,
    optimizer: Annotated[str, typer.Option(
        "--optimizer", autocompletion=_choices("optimizer"),
                help=_OPTIMIZER_NAMES)] = "adamw",
    precision: Annotated[str, typer.Option(
        "--precision", autocompletion=_choices("precision"),
                help="bf16-mixed (16-bit weights and an fp32 master copy), fp16-mixed, bf16 (pure), fp32, "
                     "amp-bf16 or amp-fp16 (torch autocast over fp32 weights)")
    ] = "bf16-mixed",
    batch: Annotated[str, typer.Option("--batch", help="sequences per GPU per step")] = "1",
    seq: Annotated[str, typer.Option("--seq", help="tokens per sequence: 2048, 4k, 32k")] = "2048",
    checkpointing: Annotated[bool, typer.Option(
        "--checkpointing/--no-checkpointing", help="activation (gradient) checkpointing, per layer")] = False,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", autocompletion=_choices("gpu"),
                help="memory per GPU, ×N GPUs: 24GiB, 80GiBx8, or a GPU by name: H100, A100-80GB, RTX4090 "
                      "(H100x8, 8xA100, 'RTX 4090', 4090)")] = None,
    zero: Annotated[str, typer.Option("--zero", help="DeepSpeed ZeRO stage 0, 1, 2 or 3 (needs several GPUs)")] = "0",
    fsdp: Annotated[bool, typer.Option("--fsdp", help="FSDP full shard (ZeRO stage 3's layout)")] = False,
    offload: Annotated[str, typer.Option(
        "--offload", autocompletion=_choices("offload"),
                help="none, optimizer (states and master copy to the CPU) or all (the weights too)")] = "none",
    experts: Annotated[str, typer.Option(
        "--experts", autocompletion=_choices("experts"),
        help="a MoE's experts in memory: fused (transformers 5: what peft adapts and bitsandbytes quantises) or "
             "separate (transformers 4.x, one nn.Linear an expert)")] = "fused",
    stage: Annotated[str, typer.Option(
        "--stage", autocompletion=_choices("stage"),
        help="sft, dpo (chosen and rejected, a reference model with full) or grpo (completions a prompt), as TRL "
             "1.16 runs them")] = "sft",
    loss: Annotated[str | None, typer.Option(
        "--loss", autocompletion=_choices("loss"),
        help="standard (transformers' loss: the logits whole), chunked (torchtune's chunked cross-entropy) or "
             "fused (TRL's fused LM head; dpo and grpo use it)")
    ] = None,
    generations: Annotated[str | None, typer.Option(
        "--generations", help="grpo: completions a prompt (default 8)")] = None,
    completion_len: Annotated[str | None, typer.Option(
        "--completion-len", help="grpo: tokens a completion at most (default 512); --seq is the prompt")] = None,
    beta: Annotated[str | None, typer.Option(
        "--beta", help="grpo: the KL weight (default 0.0: no reference model)")] = None,
    rollout_memory: Annotated[str | None, typer.Option(
        "--rollout-memory", help="grpo: a colocated vLLM's share of each GPU (TRL's vllm_gpu_memory_utilization, "
                                 "0.3 when it is used)")] = None,
    sp: Annotated[str, typer.Option(
        "--sp", help="sequence parallel over N GPUs of --gpu (DeepSpeed Ulysses): heads must divide by N")] = "1",
    freeze: Annotated[str | None, typer.Option(
        "--freeze", help="comma-separated parts kept from training: vision, audio, projector (a VLM's) or module "
                         "paths (model.embed_tokens)")] = None,
    optimizer_in_backward: Annotated[bool, typer.Option(
        "--optimizer-in-backward", help="the optimizer steps each parameter as its gradient is accumulated "
                                        "(torchtune's optimizer_in_bwd): one gradient alive at a time")] = False,
    compile_layers: Annotated[bool, typer.Option(
        "--compile", help="each decoder layer compiled (torch.compile): the backward keeps what inductor's "
                          "partitioner saves (full fine-tuning)")] = False,
    offload_activations: Annotated[bool, typer.Option(
        "--offload-activations", help="activations held in CPU memory, one layer's brought back at a time in the "
                                      "backward (torchtune's OffloadActivations)")] = False,
    fail_if: FailIfFit = None,
    explain: Explain = False,
    as_json: AsJson = False,
    fmt: Format = "table",
    revision: Revision = None,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
    output: Output = None,
) -> None:
    gates = api.answer_gates(fail_if, budget=gpu is not None)
    form = views.output_format(fmt, as_json)
    target = views.output_target(form, output)
    options = api_train.train_options(method=method, rank=rank, alpha=alpha, targets=targets, optimizer=optimizer,
                                precision=precision, batch=batch, seq=seq, checkpointing=checkpointing, gpu=gpu,
                                zero=zero, fsdp=fsdp, offload=offload, experts=experts, stage=stage, loss=loss,
                                generations=generations, completion_len=completion_len, beta=beta,
                                rollout_memory=rollout_memory, sp=sp, freeze=freeze,
                                optimizer_in_backward=optimizer_in_backward,
                                offload_activations=offload_activations, compile=compile_layers)
    done = api_train.train_with(open_model(model, revision, hub_options(endpoint, token, offline)), options)
    views.emit(done, form, view=views.View(explain=explain), wide=wide, target=target)
    _gate(done, gates)


@app.command("plan", epilog=EXAMPLES["plan"],
             help="Which GPUs, how many, in which parallel layout: every GPU x count x tensor/pipeline/expert "
                  "parallel layout, checked against the engine's own start-up rules, each valid one fitted; "
                  "the cheapest (fewest GPUs) first.")
def plan_cmd(
    model: Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
            help="path, alias, or Hub repo id (org/name[@revision])")],
    gpu: Annotated[str | None, typer.Option(
        "--gpu", autocompletion=_choices("gpu"),
                help="GPUs to consider, comma-separated: H100,A100-80GB,L40S (default: every named GPU)")] = None,
    max_gpus: Annotated[str, typer.Option("--max-gpus", help="GPUs per node to try, 1 to N (default 8)")] = "8",
    nodes: Annotated[str, typer.Option("--nodes", help="nodes: multiplies --max-gpus")] = "1",
    engine: Annotated[str | None, typer.Option("--engine", autocompletion=_choices("engine"),
            help=f"{_ENGINE_NAMES} (default vllm)")] = None,
    context: Annotated[str | None, typer.Option(
        "--context", help="tokens a sequence holds, for the sequences that fit (default 8k)")] = None,
    objective: Annotated[str, typer.Option(
        "--objective", autocompletion=_choices("objective"),
                help="gpus (fewest, then the most KV headroom), throughput (most sequences) or context")
    ] = "gpus",
    utilization: Annotated[str | None, typer.Option(
        "--utilization", help="vLLM's gpu_memory_utilization (default 0.9) or SGLang's mem_fraction_static "
                              "(default by the GPU)")] = None,
    kv_dtype: Annotated[str | None, typer.Option("--kv-dtype", autocompletion=_choices("kv_dtype"),
            help="the KV cache's dtype (default: the model's)")
                        ] = None,
    fail_if: FailIfFit = None,
    explain: Explain = False,
    as_json: AsJson = False,
    fmt: Format = "table",
    revision: Revision = None,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
    output: Output = None,
) -> None:
    gates = api.answer_gates(fail_if)
    form = views.output_format(fmt, as_json)
    target = views.output_target(form, output)
    options = api_fit.plan_options(gpus=gpu, max_gpus=max_gpus, nodes=nodes, engine=engine, context=context,
                               objective=objective, utilization=utilization, kv_dtype=kv_dtype)
    done = api_fit.plan_with(open_model(model, revision, hub_options(endpoint, token, offline)), options)
    views.emit(done, form, view=views.View(explain=explain), wide=wide, target=target)
    _gate(done, gates)


def _gate(done: results.EstimateResult | results.TrainResult | results.PlanResult, gates: tuple[str, ...]) -> None:
    """``--fail-if nofit``: exit 1, the verdict on stderr, unless the answer is "fits"."""
    hit = done.gates_hit(gates)
    if hit:
        say(f"--fail-if {', '.join(hit)}: {done.verdict}")
        raise typer.Exit(1)


@app.command("audit", epilog=EXAMPLES["audit"],
             help="Check that a checkpoint is whole and consistent, from headers, index, config and "
                           "file sizes (Hub repos: the listed sizes). Exit 0 with no error finding, 1 with any. "
                           "Never modifies the audited files.")
def audit_cmd(
    target: Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
            help="path, alias, or Hub repo id (org/name[@revision])")],
    as_json: AsJson = False,
    fmt: Format = "table",
    deep: Annotated[
        bool, typer.Option("--deep", help="local only: stream tensor data, flag NaN, Inf, all-zero")
    ] = False,
    modeling: Annotated[bool, typer.Option(
        "--modeling", help="also check against the model class on PyTorch's meta device (needs the torch extra)")
    ] = False,
    lineage: Annotated[bool, typer.Option(
        "--lineage", help="also check the base the model declares against its values (as inspect lineage does)")
    ] = False,
    revision: Revision = None,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
) -> None:
    form = views.output_format(fmt, as_json)
    views.check_format(results.Audit, form, hint=f"inspect audit {target} --format markdown")
    checkpoint = open_model(target, revision, hub_options(endpoint, token, offline), lenient=True)
    if deep and checkpoint.root is None:
        from inspector.errors import UsageError

        raise UsageError("--deep needs a local checkpoint folder or file")
    with ProgressBar() as progress:
        audited = api.audit(checkpoint, modeling=modeling, deep=deep, progress=progress, lineage=lineage,
                            hub=hub_options(endpoint, token, offline))
    views.emit(audited, form, wide=wide)
    if audited.errors:
        raise typer.Exit(1)


@app.command("lineage", epilog=EXAMPLES["lineage"],
             help="Where a checkpoint came from: identical to, a fine-tune, merge, quantisation or adapter of each "
                  "candidate, or unrelated, proven from the listing's file hashes, the tensors' shapes and a few KB "
                  "of sampled values (never the weights). Without candidates, the bases the model declares (card "
                  "base_model, adapter_config.json, GGUF general.base_model). Exit 0; with --fail-if, 1 when the "
                  "named condition holds.")
def lineage_cmd(
    model: Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
            help="path, alias, or Hub repo id (org/name[@revision])")],
    candidates: Annotated[list[str] | None, typer.Argument(
        metavar="[CANDIDATE]...", help="models it may come from (default: the bases it declares)")] = None,
    as_json: AsJson = False,
    fmt: Format = "table",
    fail_if: Annotated[str | None, typer.Option(
        "--fail-if", help="comma-separated: unrelated (no candidate is where it came from, or that is not known), "
                          "changed (not identical to a candidate), declared (the declared base is not borne out)")
    ] = None,
    exact: Annotated[bool, typer.Option(
        "--exact", help="local files: hash every weight file whole (streamed) to prove a copy")] = False,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    wide: Wide = False,
    output: Output = None,
) -> None:
    gates = api.lineage_gates(fail_if)
    form = views.output_format(fmt, as_json)
    target = views.output_target(form, output)
    hub = hub_options(endpoint, token, offline)
    found = api.lineage(model, list(candidates or ()), exact=exact, hub=hub)
    views.emit(found, form, wide=wide, target=target)
    hit = found.gates_hit(gates)
    if hit:
        say(f"--fail-if {', '.join(hit)}: {found.verdict}")
        raise typer.Exit(1)


@app.command("save", epilog=EXAMPLES["save"],
             help="Write MODEL's header snapshot to a folder: inspect, diff or audit it later offline.")
def save(
    model: Annotated[str, typer.Argument(metavar="MODEL", autocompletion=_choices("model"),
            help="path, alias, or Hub repo id (org/name[@revision])")],
    out: Annotated[str, typer.Option("-o", "--output", help="folder to write (new, empty, or a snapshot)")],
    revision: Revision = None,
    endpoint: Endpoint = None,
    token: Token = None,
    offline: Offline = False,
    force: Annotated[bool, typer.Option("--force", help="replace a snapshot of another model in that folder")] = False,
) -> None:
    checkpoint = open_model(model, revision, hub_options(endpoint, token, offline))
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
    if close and not Path(first).exists() and "/" not in first and not api.is_alias(first):
        from inspector.errors import UsageError

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


def _registry_help(command: Any) -> None:
    """Fill the registries' names into the options' help (engines, optimizers), as registered now."""
    from inspector.analysis.engines import ENGINES
    from inspector.analysis.optimizers import OPTIMIZERS

    names = {_ENGINE_NAMES: ", ".join(ENGINES), _OPTIMIZER_NAMES: ", ".join(OPTIMIZERS)}
    for sub in getattr(command, "commands", {}).values():
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
