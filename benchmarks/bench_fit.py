"""Memory figures side by side with hf-mem's, for the same models: weights and KV cache.

    pip install hf-mem   # the bench extra
    python benchmarks/bench_fit.py [--context 8192] [--batch 1]

hf-mem's readers fetch from https://huggingface.co only, but its arithmetic is two plain functions:
``parse_safetensors_metadata`` (weights from parsed headers) and
``compute_safetensors_kv_cache_size`` (KV cache from config.json). This script feeds both the same
headers and configs the inspector reads (the bundled snapshots), prints the figures beside ours, and
explains every difference: ``same`` or the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

MODELS = ("llama2-7b", "llama3-8b", "llama3-70b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "gemma-2b", "phi-2",
          "gpt2", "llama2-13b-gptq", "deepseek-v3")


def hf_mem_figures(checkpoint, context: int, batch: int) -> tuple[int, int | None, str | None]:
    from hf_mem.safetensors.kv_cache import compute_safetensors_kv_cache_size, resolve_kv_cache_dtype
    from hf_mem.safetensors.metadata import parse_safetensors_metadata

    raw = {h.file: json.loads(h.head[8:]) for h in checkpoint.headers}
    metadata = parse_safetensors_metadata(raw)
    config = dict(checkpoint.config or {})
    try:
        dtype = resolve_kv_cache_dtype(config, "auto", metadata, checkpoint.label)
        kv = compute_safetensors_kv_cache_size(config, dtype, context, batch)
    except Exception as exc:  # hf-mem refuses some configs (GPTQ, missing keys): say which
        return metadata.bytes_count, None, f"{type(exc).__name__}: {str(exc)[:100]}"
    return metadata.bytes_count, kv, dtype


def explain(ours, theirs: int | None, report, est, their_dtype: str | None) -> str:
    if theirs is None:
        return "hf-mem gives no KV figure"
    if ours == theirs:
        return "same"
    c = report.config
    if c.mla.kv_lora_rank:
        return (f"MLA: we count the cached latent (kv_lora_rank + rope dim) per layer in {est.kv_dtype}; "
                f"hf-mem counts 2 × KV heads × hidden/heads as for plain attention, in {their_dtype}")
    if c.encoder_only:
        return "encoder: no KV cache (hf-mem computes one)"
    if c.layers.sliding_window and ours < theirs:
        return "sliding-window layers keep at most the window: we cap them, hf-mem reserves the full context"
    if report.config.storage.dtype and est.kv_dtype not in (report.config.storage.dtype.lower(),):
        return f"KV dtype differs ({est.kv_dtype} here)"
    return "differs: see the formulas in inspect estimate"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    from importlib.metadata import version

    from inspector.analysis.facts.report import build_report
    from inspector.analysis.serving.estimate import estimate
    from inspector.sources.resolve import open_checkpoint

    print(f"hf-mem {version('hf-mem')}; context {args.context:,}, batch {args.batch}; bytes")
    print(f"{'model':<16} {'weights (ours)':>18} {'weights (hf-mem)':>18}  {'KV (ours)':>15} {'KV (hf-mem)':>15}  "
          "difference")
    for alias in MODELS:
        checkpoint = open_checkpoint(alias)
        report = build_report(checkpoint)
        est = estimate(report, context=args.context, batch=args.batch)
        kv = est.kv.bytes.value if est.kv is not None else None
        weights, their_kv, note = hf_mem_figures(checkpoint, args.context, args.batch)
        weights_note = "same" if weights == report.summary.bytes else "weights differ"
        why = explain(kv, their_kv, report, est, note)
        if their_kv is None and note:
            why += f" ({note})"
        ours_kv = f"{kv:,}" if kv is not None else "—"
        hf_kv = f"{their_kv:,}" if their_kv is not None else "—"
        print(f"{alias:<16} {report.summary.bytes:>18,} {weights:>18,}  {ours_kv:>15} {hf_kv:>15}  "
              f"weights {weights_note}; KV {why}")


if __name__ == "__main__":
    main()
