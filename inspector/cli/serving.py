"""The commands that answer what it takes to run a model: ``estimate``, ``train`` and ``plan`` (registered by
``commands`` in the help's order)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from inspector import api, api_fit, api_train, results
from inspector.cli.app import (
    _ENGINE_NAMES,
    _LOSS_KERNELS,
    _METHOD_NAMES,
    _OPTIMIZER_NAMES,
    _PRECISION_NAMES,
    Explain,
    FailIfFit,
    ModelArg,
    Shared,
    _choices,
    shared_options,
)
from inspector.cli.opening import open_any, open_model, say
from inspector.model import Alternatives
from inspector.render import views

if TYPE_CHECKING:
    from inspector.sources.transport import HubOptions


@shared_options()
def estimate_cmd(
    model: ModelArg,
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
    *,
    shared: Shared,
) -> None:
    gates, form, target = _answering(shared, fail_if, budget=gpu is not None)
    options = api_fit.estimate_options(context=context, batch=batch, kv_dtype=kv_dtype, gpu=gpu, overhead=overhead,
                                   engine=engine, utilization=utilization, pipeline=pipeline,
                                   dtypes=[d.strip() for d in dtype.split(",") if d.strip()] if dtype else None)
    checkpoint = open_any(model, shared.revision, shared.hub)
    if isinstance(checkpoint, Alternatives):  # a GGUF repo of several quantisations: the fit of each file
        file_listing(model, checkpoint, shared.revision, shared.hub, form, shared.wide, gpu, context)
        return
    done = api_fit.estimate_with(checkpoint, options, hub=shared.hub)
    for warning in (*done.estimate.warnings, *(done.fit.warnings if done.fit is not None else ())):
        say(f"warning: {warning}")
    _emit_gated(done, gates, form, target, explain, shared)


@shared_options()
def train_cmd(
    model: ModelArg,
    method: Annotated[str, typer.Option("--method", autocompletion=_choices("method"),
            help=_METHOD_NAMES)] = "lora",
    rank: Annotated[str | None, typer.Option("--rank", help="LoRA rank r (default 16)")] = None,
    alpha: Annotated[str | None, typer.Option("--alpha", help="LoRA alpha (reported only: it scales, costs nothing)")
                     ] = None,
    targets: Annotated[str | None, typer.Option(
        "--targets", help="all-linear (the default; peft's rule: every linear layer but the output layer) or module "
                          "names, comma-separated: q_proj,v_proj; an embedding's name adapts it too")] = None,
    optimizer: Annotated[str, typer.Option("--optimizer", autocompletion=_choices("optimizer"), help=_OPTIMIZER_NAMES)
                         ] = "adamw",
    precision: Annotated[str, typer.Option(
        "--precision", autocompletion=_choices("precision"),
                help=_PRECISION_NAMES)] = "bf16-mixed",
    batch: Annotated[str | None, typer.Option("--batch", help="sequences per GPU per step (default 1; --stage grpo: "
                                                             "8, TRL's GRPOConfig's own)")] = None,
    seq: Annotated[str, typer.Option("--seq", help="tokens per sequence: 2048, 4k, 32k")] = "2048",
    checkpointing: Annotated[bool, typer.Option(
        "--checkpointing/--no-checkpointing", help="activation (gradient) checkpointing, per layer")] = False,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", autocompletion=_choices("gpu"),
                help="memory per GPU, ×N GPUs: 24GiB, 80GiBx8, or a GPU by name: H100, A100-80GB, RTX4090 "
                      "(H100x8, 8xA100, 'RTX 4090', 4090)")] = None,
    zero: Annotated[str, typer.Option("--zero", help="DeepSpeed ZeRO stage 0, 1, 2 or 3 (needs several GPUs)")] = "0",
    fsdp: Annotated[bool, typer.Option("--fsdp", help="FSDP full shard (ZeRO stage 3's layout)")] = False,
    offload: Annotated[str, typer.Option("--offload", autocompletion=_choices("offload"), help="none, optimizer "
                                         "(states and master copy to the CPU) or all (the weights too)")] = "none",
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
        help=_LOSS_KERNELS)] = None,
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
    *,
    shared: Shared,
) -> None:
    gates, form, target = _answering(shared, fail_if, budget=gpu is not None)
    options = api_train.train_options(method=method, rank=rank, alpha=alpha, targets=targets, optimizer=optimizer,
                                precision=precision, batch=batch, seq=seq, checkpointing=checkpointing, gpu=gpu,
                                zero=zero, fsdp=fsdp, offload=offload, experts=experts, stage=stage, loss=loss,
                                generations=generations, completion_len=completion_len, beta=beta,
                                rollout_memory=rollout_memory, sp=sp, freeze=freeze,
                                optimizer_in_backward=optimizer_in_backward,
                                offload_activations=offload_activations, compile=compile_layers)
    done = api_train.train_with(open_model(model, shared.revision, shared.hub), options)
    _emit_gated(done, gates, form, target, explain, shared)


@shared_options()
def plan_cmd(
    model: ModelArg,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", autocompletion=_choices("gpu"),
                help="GPUs to consider, comma-separated: H100,A100-80GB,L40S; with a count (8xA100), the answer on "
                     "that many (default: every named GPU)")] = None,
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
    *,
    shared: Shared,
) -> None:
    gates, form, target = _answering(shared, fail_if, budget=True)
    options = api_fit.plan_options(gpus=gpu, max_gpus=max_gpus, nodes=nodes, engine=engine, context=context,
                               objective=objective, utilization=utilization, kv_dtype=kv_dtype)
    done = api_fit.plan_with(open_model(model, shared.revision, shared.hub), options)
    _emit_gated(done, gates, form, target, explain, shared)


def _answering(shared: Shared, fail_if: str | None, *,
               budget: bool) -> tuple[tuple[str, ...], str, Path | None]:
    """What ``estimate``, ``train`` and ``plan`` settle before opening a model: ``--fail-if``'s conditions (checked
    first), the output format and where it goes."""
    gates = api.answer_gates(fail_if, budget=budget)
    form = views.output_format(shared.fmt, shared.as_json)
    return gates, form, views.output_target(form, shared.output)


def _emit_gated(done: results.EstimateResult | results.TrainResult | results.PlanResult, gates: tuple[str, ...],
                form: str, target: Path | None, explain: bool, shared: Shared) -> None:
    """The answer drawn; then ``--fail-if nofit``: exit 1, the verdict on stderr, unless the answer is "fits"."""
    views.emit(done, form, view=views.View(explain=explain), wide=shared.wide, target=target)
    hit = done.gates_hit(gates)
    if hit:
        say(f"--fail-if {', '.join(hit)}: {done.verdict}")
        raise typer.Exit(1)


def file_listing(model: str, several: Alternatives, revision: str | None, hub: HubOptions, form: str, wide: bool,
                 gpu: str | None, context: str | None) -> None:
    """A folder or repo holding one model in several GGUF files: one row a file (its header only)."""
    views.check_format(results.FileListing, form, hint=f"{several.hint} --format {form}" if several.hint else None)
    opened = api.open_several(model, several, revision=revision, hub=hub)
    name, _ = api.repo_and_revision(model)
    views.emit(api_fit.list_files(several.where, opened, name=name, gpu=gpu, context=context), form, wide=wide)
