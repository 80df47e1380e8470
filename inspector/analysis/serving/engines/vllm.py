"""vLLM as a strategy (``--engine vllm``, the default for safetensors): the budget is the device's capacity ×
``gpu_memory_utilization``; the KV pool is what is left after the weights (with the rotary cos/sin
cache vLLM builds beside them), the activation peak of its profiling run and the memory outside
torch's allocator. The profile run is one forward pass over ``max_num_batched_tokens`` tokens and
a sampler pass over ``max_num_seqs`` rows of logits; both defaults depend on the GPU as vLLM's
``EngineArgs.get_batch_defaults`` sets them for ``vllm serve``. CUDA graphs are captured after the
pool is sized and are not subtracted (vLLM 0.19's default; its log says so)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from inspector.analysis.serving.engines.base import GIB, ModelShape, PagedByWindow, Term, rotary_term

VLLM_VERSION: Final = "0.19"
VLLM_UTILIZATION: Final = 0.9  # vLLM's default gpu_memory_utilization
VLLM_BLOCK: Final = 16  # tokens per KV block (the default block size of its CUDA attention backends)
#: memory outside torch's allocator per device (CUDA context, cuBLAS/NCCL workspaces): vLLM 0.19 on
#: H100-80GB measured it at 0.24-0.27 GiB alone and 2.06-2.17 GiB per device at TP 2 and 4 (NCCL and
#: custom all-reduce buffers), llm-d planner accuracy report v0.19.0, "Non-torch constants" table
VLLM_NON_TORCH: Final = (int(0.27 * GIB), int(2.1 * GIB))
VLLM_NON_TORCH_SOURCE: Final = ("vLLM 0.19 on H100-80GB, measured by the llm-d planner accuracy report (v0.19.0): "
                                "mean 0.27 GiB at TP 1, 2.06-2.17 GiB per device at TP >= 2 (NCCL buffers)")
_SCHED: Final = "vLLM EngineArgs.get_batch_defaults (vllm serve): 8,192 tokens and 1,024 sequences on a GPU " \
                "of >= 70 GiB that is not an A100, else 2,048 and 256"


def vllm_batch_defaults(gpu_bytes: int, gpu_name: str | None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) as ``vllm serve`` picks them for this GPU."""
    big = gpu_bytes >= 70 * GIB and "a100" not in (gpu_name or "").lower()
    return (8192, 1024) if big else (2048, 256)


def vllm_terms(*, gpu_bytes: int, gpu_name: str | None, devices: int, hidden: int, inter: int, vocab: int | None,
               dtype_bytes: float, max_position: int | None, rotary_dim: int | None, samples: bool = True,
               pipeline: int = 1, experts_per_token: int = 0) -> tuple[Term, ...]:
    """The per-device terms vLLM's memory profile subtracts before its KV pool (weights apart);
    ``devices``: tensor-parallel ways; ``samples``: whether this pipeline stage runs the sampler
    (the last one does)."""
    tokens, seqs = vllm_batch_defaults(gpu_bytes, gpu_name)
    rows = min(seqs, tokens)
    terms = rotary_term(max_position, rotary_dim, dtype_bytes,
                        "vLLM RotaryEmbedding.cos_sin_cache, held beside the weights (its 'weights' figure)")
    width = math.ceil(inter / devices)
    if experts_per_token:  # fused_moe's caches: [tokens, k, 2 × width], [tokens · k, width], [tokens, k, hidden]
        forward = int(tokens * (experts_per_token * (3 * width + hidden) + 4 * hidden) * dtype_bytes)
        forward_formula = (f"{tokens:,} tokens × ({experts_per_token} experts × (3 × expert width {width:,} + "
                           f"hidden) + 4 × hidden {hidden:,}) × {dtype_bytes:g} B (fused_moe's intermediate caches)")
    else:
        forward = int(tokens * (3 * width + 4 * hidden) * dtype_bytes)
        forward_formula = (f"{tokens:,} tokens × (3 × MLP width {width:,} + 4 × hidden {hidden:,})"
                           f" × {dtype_bytes:g} B")
    if not samples:
        sampler, sampler_formula = 0, "not on this pipeline stage (the last stage samples)"
    elif vocab:
        sampler = int(rows * vocab * (dtype_bytes + 12) + tokens * hidden * dtype_bytes)
        sampler_formula = (f"{rows:,} rows × vocab {vocab:,} × ({dtype_bytes:g} B logits + 3 × 4 B float32 "
                           f"logits, probabilities, sampling noise) + {tokens:,} × hidden {hidden:,} × "
                           f"{dtype_bytes:g} B kept hidden states")
    else:
        sampler, sampler_formula = 0, "no vocabulary size in the config: sampler pass not counted"
    peak, formula = (sampler, "sampler pass: " + sampler_formula) if sampler >= forward else \
        (forward, "forward pass: " + forward_formula)
    terms.append(Term("activation peak", peak,
                      formula + f" (the larger of the forward pass, {forward / GIB:.2f} GiB, and the sampler pass, "
                                f"{sampler / GIB:.2f} GiB)",
                      f"vLLM's profile run (gpu_model_runner.profile_run) with max_num_batched_tokens {tokens:,} "
                      f"and max_num_seqs {seqs:,}: {_SCHED}"))
    if devices == 1 and pipeline > 1:
        terms.append(Term("non-torch memory", VLLM_NON_TORCH_PP, "constant per device at pipeline parallel >= 2",
                          "vLLM 0.19 on H100-80GB, llm-d planner accuracy report (v0.19.0): 0.07 GiB at PP 2 and 4"))
    else:
        terms.append(Term("non-torch memory", VLLM_NON_TORCH[devices > 1],
                          "constant per device" + (" (NCCL and all-reduce buffers at TP >= 2)" if devices > 1 else ""),
                          VLLM_NON_TORCH_SOURCE))
    terms.append(Term("CUDA graphs", 0, "captured after the KV pool is sized: not subtracted from it",
                      "vLLM 0.19 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS off); they take 0.5-1.9 GiB beyond "
                      "the utilization budget, inside the 1 - utilization headroom"))
    return tuple(terms)


#: non-torch memory per device at pipeline parallel >= 2 (TP 1): 0.07 GiB, llm-d's PP 2 and PP 4 rows
VLLM_NON_TORCH_PP: Final = int(0.07 * GIB)


_V: Final = f"vLLM {VLLM_VERSION}"
#: its start-up rules, by the check ``plan.CHECKS`` runs: what each demands, where vLLM's source says so
VLLM_RULES: Final[Mapping[str, tuple[str, str]]] = {
    "heads": ("attention heads divisible by TP",
              f"{_V} vllm/config/model.py ModelConfig.verify_with_parallel_config (\"Total number of attention heads "
              "must be divisible by tensor parallel size\")"),
    "kv_heads": ("KV heads divisible by TP, or TP by KV heads (each KV head then replicated)",
                 f"{_V} vllm/model_executor/layers/linear.py QKVParallelLinear (divide(total_num_kv_heads, tp_size), "
                 "else num_kv_head_replicas = divide(tp_size, total_num_kv_heads))"),
    "mlp": ("MLP and expert widths divisible by TP",
            f"{_V} vllm/model_executor/layers/linear.py MergedColumnParallelLinear and RowParallelLinear "
            "(divide(size, tp_size)); fused_moe/layer.py FusedMoE (intermediate_size_per_partition)"),
    "vocab": ("the vocabulary, padded to a multiple of 64, divisible by TP",
              f"{_V} vllm/model_executor/layers/vocab_parallel_embedding.py (pad_vocab_size(…, 64), "
              "vocab_range_from_global_vocab_size: divide(global_vocab_size, world_size))"),
    "group_size": ("a GPTQ/AWQ row-parallel layer's input per GPU a multiple of the group size",
                   f"{_V} vllm/model_executor/layers/quantization/gptq.py and awq.py create_weights (\"The input size "
                   "is not aligned with the quantized weight shape. This can be caused by too large tensor parallel "
                   "size.\")"),
    "pack_factor": ("a GPTQ/AWQ column-parallel layer's output per GPU a multiple of the pack factor",
                    f"{_V} quantization/gptq.py and awq.py create_weights (\"The output size is not aligned with the "
                    "quantized weight shape\")"),
    "fp8_block": ("FP8 block quantisation: inputs per GPU divisible by block_k, outputs by block_n",
                  f"{_V} vllm/model_executor/layers/quantization/utils/fp8_utils.py validate_fp8_block_shape"),
    "stages": ("pipeline stages at most the layers",
               f"{_V} vllm/distributed/utils.py get_pp_indices (each stage holds at least one layer)"),
    "experts": ("each expert-parallel rank holds at least one expert",
                f"{_V} vllm/model_executor/layers/fused_moe/layer.py determine_expert_map (experts split as evenly "
                "as possible over the EP ranks)"),
}


class Vllm(PagedByWindow):
    __slots__ = ()

    def fraction_words(self, fraction: float) -> tuple[str, str]:
        return f"utilization {fraction:g}", f"budget × gpu_memory_utilization {fraction:g}"

    def pool_tokens(self, pool: int, per_token: int) -> int:
        """Whole blocks of ``VLLM_BLOCK`` tokens (vLLM's num_gpu_blocks × block size)."""
        return (pool // (per_token * VLLM_BLOCK)) * VLLM_BLOCK if per_token > 0 and pool > 0 else 0

    def usable(self, budget: int, utilization: float | None, *, devices: int = 1,
               pipeline: int = 1) -> tuple[int, float | None]:
        u = utilization or VLLM_UTILIZATION
        return int(budget * u), u

    def terms(self, shape: ModelShape, *, gpu_bytes: int, gpu_name: str | None, devices: int, samples: bool,
              pipeline: int) -> tuple[Term, ...]:
        return vllm_terms(gpu_bytes=gpu_bytes, gpu_name=gpu_name, devices=devices, hidden=shape.hidden,
                          inter=shape.inter, vocab=shape.vocab, dtype_bytes=shape.dtype_bytes,
                          max_position=shape.max_position, rotary_dim=shape.rotary_dim, samples=samples,
                          pipeline=pipeline, experts_per_token=shape.experts_per_token)


VLLM: Final = Vllm(name="vllm", fraction="gpu_memory_utilization", page=VLLM_BLOCK, rules=VLLM_RULES)
