"""SGLang as a strategy (``--engine sglang``): its memory rules read from its source.

* **The static budget** is ``mem_fraction_static`` of the memory free *before the weights load* (not of the device's
  capacity): ``ModelRunner`` takes ``init_torch_distributed()``'s free memory as ``total_gpu_memory`` and
  ``profile_max_num_token`` keeps ``rest = free_after_load - total_gpu_memory × (1 - mem_fraction_static)`` for the KV
  pool, ``int(rest_GiB × 2**30) // cell_size`` tokens (model_runner_kv_cache_mixin.py). So the pool is
  ``(capacity − memory outside torch before loading) × fraction − what loading took``.
* **The default fraction** (``ServerArgs._handle_gpu_memory_settings``): ``(gpu_mem − reserved) / gpu_mem`` rounded
  to 3 places, ``reserved`` in MiB = 512 + max(chunked_prefill_size, 2048) × 1.5 + cuda_graph_max_bs × 2 +
  tp × pp / 8 × 1024, at least 10 GiB on a GPU of more than 60 GiB; chunked_prefill_size and cuda_graph_max_bs by
  the GPU's memory and TP (its table, below).
* **The pool** in whole pages (``page_size``, 1 by default: every token). The activations and CUDA graphs live in
  the ``1 − fraction`` SGLang holds back, not in the pool's budget.
* **Start-up refusals**: its linear and embedding layers are vLLM's (sglang/srt/layers/linear.py: "Adapted from
  vllm … linear.py", the same ``divide``), so TP must divide the heads, KV heads (or be divided by them), the MLP and
  expert widths and the padded vocabulary. (Its refusal of a pool of no token, "Not enough memory. Please try to
  increase --mem-fraction-static", is the fit's "does not fit" here.)

Held to SGLang's own logs (fixtures/sglang/, tests/test_sglang.py): the pool's tokens from the log's free memory
and fraction reproduce its ``#tokens``, and from the config and the GPU alone within ±2 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from inspector.analysis.serving.engines.base import GIB, MIB, ModelShape, PagedByWindow, Term, rotary_term

SOURCE: Final = "SGLang python/sglang/srt/server_args.py ServerArgs._handle_gpu_memory_settings"
POOL_SOURCE: Final = "SGLang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py profile_max_num_token"
PAGE: Final = 1  # --page-size's default: the pool allocates token by token
#: memory outside torch's allocator before the weights load (CUDA context, NCCL): capacity − the log's "Load weight
#: begin. avail mem": 79.19 − 78.81 = 0.38 GiB at TP 1 (SGLang's docs, fixtures/sglang: an 80 GB card the log does
#: not name, taken as an H100-80GB; 0.54 GiB were it an A100-80GB), 0.40 GiB at TP 4 on an L4 (0.13 GiB of it NCCL's,
#: as "Init torch distributed ends. mem usage" shows)
BEFORE_LOAD: Final = int(0.38 * GIB)
#: what loading takes beyond the weights and the rotary cache (the log's "mem usage" less both): 0.10 GiB for
#: Llama-3.1-8B on an H100, 0.17 GiB for DeepSeek-R1-Distill-Qwen-7B on an RTX 3090 (fixtures/sglang)
LOAD_EXTRA: Final = int(0.1 * GIB)
MEASURED: Final = ("measured in SGLang's logs (fixtures/sglang/receipts.json): 0.38 GiB before loading at TP 1 "
                   "(0.40 at TP 4 on L4); loading takes 0.10-0.17 GiB beyond the weights and the rotary cache")

#: (below MiB of GPU memory, chunked_prefill_size, cuda_graph_max_bs at TP < 4, at TP >= 4): its table, CUDA GPUs
_BY_MEMORY: Final = ((20 * 1024, 2048, 8, 8), (35 * 1024, 2048, 24, 80), (60 * 1024, 4096, 32, 160),
                     (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512))
_LARGEST: Final = (16384, 512, 512)  # B200, MI300


def defaults(gpu_bytes: int, tp: int, pp: int = 1) -> tuple[int, int, float]:
    """(chunked_prefill_size, cuda_graph_max_bs, mem_fraction_static) as SGLang sets them for this GPU and layout."""
    gpu_mem = gpu_bytes / MIB  # get_device_memory_capacity: total memory in MiB
    chunk, graphs = next(((c, small if tp < 4 else large) for below, c, small, large in _BY_MEMORY if gpu_mem < below),
                         (_LARGEST[0], _LARGEST[1]))
    reserved = 512 + max(chunk, 2048) * 1.5 + graphs * 2 + tp * pp / 8 * 1024
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return chunk, graphs, round((gpu_mem - reserved) / gpu_mem, 3)


def static_budget(gpu_bytes: int, fraction: float) -> int:
    """The bytes the weights and the KV pool may take: ``fraction`` of what is free before the weights load."""
    return int((gpu_bytes - BEFORE_LOAD) * fraction)


#: its start-up rules, by the check ``plan.CHECKS`` runs (its layers are vLLM's, adapted)
_L: Final = "SGLang python/sglang/srt/layers/"
SGLANG_RULES: Final[Mapping[str, tuple[str, str]]] = {
    "heads": ("attention heads divisible by TP",
              _L + "linear.py QKVParallelLinear (divide(total_num_heads, tp_size): \"{} is not divisible by {}\")"),
    "kv_heads": ("KV heads divisible by TP, or TP by KV heads (each KV head then replicated)",
                 _L + "linear.py QKVParallelLinear (divide(total_num_kv_heads, tp_size), else num_kv_head_replicas = "
                      "divide(tp_size, total_num_kv_heads))"),
    "mlp": ("MLP and expert widths divisible by TP",
            _L + "linear.py MergedColumnParallelLinear and RowParallelLinear (divide(size, tp_size)); "
                 "moe/fused_moe_triton/layer.py FusedMoE (intermediate_size_per_partition)"),
    "vocab": ("the vocabulary, padded to a multiple of 64, divisible by TP",
              _L + "vocab_parallel_embedding.py (pad_vocab_size(…, 64), divide(global_vocab_size, world_size))"),
    "stages": ("pipeline stages at most the layers",
               "SGLang python/sglang/srt/distributed/utils.py get_pp_indices (each stage holds at least one layer)"),
}


class Sglang(PagedByWindow):
    __slots__ = ()

    def usable(self, budget: int, utilization: float | None, *, devices: int = 1,
               pipeline: int = 1) -> tuple[int, float | None]:
        fraction = utilization if utilization is not None else defaults(budget, devices, pipeline)[2]
        return static_budget(budget, fraction), fraction

    def fraction_words(self, fraction: float) -> tuple[str, str]:
        return (f"mem_fraction_static {fraction:g}",
                f"(budget − {BEFORE_LOAD / GIB:.2f} GiB outside torch before loading) × mem_fraction_static "
                f"{fraction:g} ({POOL_SOURCE})")

    def pool_tokens(self, pool: int, per_token: int) -> int:
        return (pool // per_token) // PAGE * PAGE if per_token > 0 and pool > 0 else 0

    def terms(self, shape: ModelShape, *, gpu_bytes: int, gpu_name: str | None, devices: int, samples: bool,
              pipeline: int) -> tuple[Term, ...]:
        chunk, graphs, fraction = defaults(gpu_bytes, devices, pipeline)
        terms = rotary_term(shape.max_position, shape.rotary_dim, shape.dtype_bytes,
                            "SGLang RotaryEmbedding.cos_sin_cache (vLLM's), built beside the weights")
        terms.append(Term("loading", LOAD_EXTRA, "constant per device: what loading holds beyond the weights",
                          MEASURED))
        terms.append(Term("before loading", 0, f"{BEFORE_LOAD / GIB:.2f} GiB outside torch (CUDA context, NCCL) "
                          "before the weights load: already out of the static budget, which is the fraction of what "
                          "is free then", MEASURED))
        terms.append(Term("activations and CUDA graphs", 0,
                          f"held back outside the static budget (1 − mem_fraction_static); its default "
                          f"{fraction:g} here reserves for chunked_prefill_size {chunk:,} and cuda_graph_max_bs "
                          f"{graphs}", SOURCE))
        return tuple(terms)


SGLANG: Final = Sglang(name="sglang", fraction="mem_fraction_static", page=PAGE, rules=SGLANG_RULES)
