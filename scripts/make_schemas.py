"""Write the JSON Schemas of every ``--json`` document to inspector/schemas/ (JSON Schema 2020-12).

    python scripts/make_schemas.py [--out inspector/schemas]

Each schema says what a document promises: every key always present (``required``), no other key
(``additionalProperties: false``), raw integers, ``null`` only where a figure can be unknown.
tests/test_schemas.py validates real output of every command against them, checks that a document
with a required field removed is rejected, and that re-running this script reproduces the files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from inspector import repos
from inspector.analysis.engines import ENGINES
from inspector.analysis.optimizers import OPTIMIZERS

ROOT = Path(__file__).resolve().parent.parent
BASE = "https://github.com/hf-inspector/inspector/schemas/"

INT = {"type": "integer"}
NINT = {"type": ["integer", "null"]}
NUM = {"type": "number"}
NNUM = {"type": ["number", "null"]}
STR = {"type": "string"}
NSTR = {"type": ["string", "null"]}
BOOL = {"type": "boolean"}
NBOOL = {"type": ["boolean", "null"]}
STRS = {"type": "array", "items": STR}
INTS = {"type": "array", "items": INT}
NINTS = {"anyOf": [INTS, {"type": "null"}]}


def obj(props: dict[str, Any], *, nullable: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": list(props),
                              "additionalProperties": False}
    return {"anyOf": [schema, {"type": "null"}]} if nullable else schema


def arr(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def document(name: str, title: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE + f"{name}.schema.json",
            "title": title, **obj({"schema_version": {"const": 2}, **props})}


MODEL = obj({
    "label": STR, "repo_id": NSTR, "revision": NSTR, "path": NSTR,
    "origin": {"enum": ["file", "folder", "hf-cache", "snapshot", "bundled", "hub"]},
    "format": NSTR, "kind": {"enum": [*repos.names(), None]},
})
CONFIG = obj({
    "model_type": NSTR, "architectures": STRS, "hidden_size": NINT, "intermediate_size": NINT, "num_layers": NINT,
    "num_heads": NINT, "num_kv_heads": NINT, "head_dim": NINT, "vocab_size": NINT, "max_position": NINT,
    "tie_word_embeddings": NBOOL, "dtype": NSTR, "num_experts": NINT, "experts_per_token": NINT,
    "moe_intermediate_size": NINT, "shared_experts": NINT, "first_k_dense": NINT, "sliding_window": NINT,
    "layer_types": STRS, "q_lora_rank": NINT, "kv_lora_rank": NINT, "qk_rope_head_dim": NINT,
    "qk_nope_head_dim": NINT, "v_head_dim": NINT, "mtp_layers": NINT, "kv_heads_per_layer": INTS,
    "quantization": {"type": ["object", "null"]}, "source": {"enum": ["table", "transformers", "gguf", "raw", "none"]},
})
TOTALS = obj({"tensors": INT, "parameters": INT, "stored_elements": INT, "buffer_elements": INT,
              "quant_elements": INT, "hub_total": INT, "bytes": INT, "shards": INT})
KIND = {"enum": ["parameter", "buffer", "quant"]}

SHOW = document("show", "inspect MODEL --json", {
    "model": MODEL, "config": CONFIG, "totals": TOTALS,
    "by_role": arr(obj({"role": STR, "tensors": INT, "parameters": INT, "quant_elements": INT,
                        "buffer_elements": INT, "bytes": INT})),
    "by_dtype": arr(obj({"dtype": STR, "tensors": INT, "parameters": INT, "elements": INT, "bytes": INT})),
    "layer_groups": arr(obj({"stack": STR, "first": INT, "last": INT, "count": INT, "tensors_each": INT,
                             "parameters_each": INT, "bytes_each": INT})),
    "shards": arr(obj({"file": STR, "size": NINT, "tensors": INT, "header_bytes": INT, "data_bytes": INT,
                       "metadata": {"type": "object", "additionalProperties": STR}})),
    "other_weight_files": arr(obj({"path": STR, "size": NINT})),
    "components": {"anyOf": [arr(obj({"name": STR, "library": NSTR, "class": NSTR, "model_type": NSTR,
                                      "tensors": INT, "parameters": INT, "bytes": INT, "dtypes": STRS})),
                             {"type": "null"}]},
    "tokenizer": {"anyOf": [obj({
        "class": NSTR, "vocab_size": NINT, "vocab_source": STR, "embedding_rows": NINT,
        "special": {"type": "object", "additionalProperties": STR}, "added_tokens": NINT, "added_special": NINT,
        "chat_template": BOOL, "chat_template_source": NSTR, "chat_templates": STRS, "model_max_length": NINT,
        "generation": {"type": "object"}, "notes": STRS}), {"type": "null"}]},
    "notes": STRS,
    "formula": obj({"family": STR, "predicted": INT, "actual": INT, "context_enters": BOOL, "notes": STRS,
                    "rows": arr(obj({"role": STR, "formula": STR, "predicted": INT, "actual": INT, "note": STR}))},
                   nullable=True),
    "tensors": {"anyOf": [arr(obj({"name": STR, "dtype": STR, "shape": INTS, "count": INT, "role": STR,
                                   "kind": KIND, "file": NSTR, "shape_in_file": NINTS})), {"type": "null"}]},
})

SIDE = obj({"model": MODEL, "parameters": INT, "buffer_elements": INT, "bytes": INT, "active_parameters": NINT,
            "model_type": NSTR})
DIFF = document("diff", "inspect diff A B --json", {
    "a": SIDE, "b": SIDE, "identical": BOOL, "same_layout": BOOL,
    "delta": obj({"parameters": INT, "buffer_elements": INT, "bytes": INT}),
    "causes": arr(obj({"cause": STR, "label": STR, "delta": INT,
                       "items": arr(obj({"tensor": STR, "count": INT, "formula": STR, "delta": INT}))})),
    "residual": INT,
    "residual_items": arr(obj({"tensor": STR, "count": INT, "formula": STR, "delta": INT})),
    "roles": arr(obj({"role": STR, "a": INT, "b": INT, "delta": INT})),
    "dtypes": arr(obj({"dtype": STR, "a": INT, "b": INT})),
    "bytes_by_dtype": arr(obj({"dtype": STR, "elements": INT, "bytes": INT})),
    "changes": arr(obj({"kind": {"enum": ["added", "removed", "reshaped", "retyped"]}, "role": STR, "name": STR,
                        "count": INT, "shape_a": NINTS, "shape_b": NINTS, "dtype_a": NSTR, "dtype_b": NSTR})),
    "notes": STRS,
    "values": obj({
        "sample_bytes": INT, "exact": BOOL, "weights_bytes": INT, "bytes_hashed": INTS, "bytes_read": INTS,
        "requests": INTS,
        "summary": STRS,
        "counts": obj({"changed": INT, "same-sampled": INT, "identical": INT, "incomparable": INT}),
        "tensors": arr(obj({"name": STR, "role": STR, "layer": NINT,
                            "verdict": {"enum": ["changed", "same-sampled", "identical", "incomparable"]},
                            "sampled_bytes": INT, "bytes": INT, "why": STR,
                            # a changed float tensor's size of change, over its differing sampled ranges
                            "max_abs_delta": {"type": ["number", "null"]},
                            "relative_delta": {"type": ["number", "null"]}}))}, nullable=True),
})

COMPARE = document("compare", "inspect compare M1 … Mn --json", {
    "models": arr(obj({"model": MODEL, "totals": TOTALS, "config": CONFIG, "kv_bytes_per_token": NINT,
                       "roles": {"type": "object", "additionalProperties": INT},
                       "parameters_by_role": {"type": "object", "additionalProperties": INT}})),
    "rows": arr(obj({"section": {"enum": ["totals", "config", "roles"]}, "label": STR,
                     "values": arr({"type": ["integer", "number", "string", "boolean", "null"]})})),
})

FIT = obj({
    "budget_bytes": INT, "devices": INT, "batch": INT, "context": INT, "weights_bytes": INT,
    "weights_bytes_all_devices": INT, "replicated_bytes": INT, "replicated": STRS, "kv_bytes_per_token": INT,
    "kv_bytes": INT, "kv_share": STR, "kv_formula": STR, "overhead_bytes": INT, "overhead_formula": STR,
    "total_bytes": INT,
    "fits": NBOOL, "max_context": NINT, "max_context_capped": BOOL, "max_batch": NINT, "model_limit": NINT,
    "unknown": NSTR, "engine": {"enum": [*ENGINES, "diffusers"]}, "gpu": NSTR, "utilization": NNUM,
    "usable_bytes": INT, "terms": arr(obj({"name": STR, "bytes": INT, "formula": STR, "source": STR})),
    "kv_pool_bytes": NINT, "kv_pool_tokens": NINT, "pipeline": INT, "stages": STRS, "stage": NSTR,
    "weights_note": NSTR, "curve": arr(obj({"context": INT, "total_bytes": INT})), "state_bytes": INT,
}, nullable=True)
STACK_KINDS = {"enum": ["decoder", "encoder", "vision", "audio", "projector", "mtp"]}
ARCHITECTURE = obj({
    "decodes": BOOL, "tied": BOOL, "kv_check": STR, "embedding": INT, "lookups": INT, "head": INT, "other": INT,
    "stacks": arr(obj({"kind": STACK_KINDS, "name": STR, "runs": {"enum": ["per_token", "per_input", "never"]},
                       "parameters": INT, "active_parameters": INT, "layers": INT,
                       "layer_kinds": arr(obj({"kind": STR, "first": INT, "last": INT, "count": INT}))})),
})
ESTIMATE = document("estimate", "inspect estimate MODEL --json", {
    "model": MODEL, "context": INT, "batch": INT, "kv_dtype": STR, "no_tokens": NSTR,
    "figures": arr(obj({"name": STR, "label": STR, "value": NNUM, "unit": STR, "formula": STR, "source": STR,
                        "assumptions": STRS})),
    "quantization": obj({"method": NSTR, "bits": NINT, "source": STR, "logical_parameters": INT,
                         "stored_elements": INT, "overhead_elements": INT, "notes": STRS,
                         "by_role": arr(obj({"role": STR, "logical": INT, "stored": INT, "weight_bytes": INT,
                                             "overhead_bytes": INT, "bits_per_weight": NNUM}))}),
    "what_if": arr(obj({"dtype": STR, "bytes": INT, "formula": STR})),
    "architecture": ARCHITECTURE,
    "fit": FIT,
    "fits": NBOOL,  # the one answer a script gates on (issue 52): fit.fits, null without a budget
    "warnings": STRS,
    # where it does not fit: each change that makes it fit (analysis/knobs.py); budget_bytes 0: another GPU count
    "suggestions": arr(obj({"change": STR, "total": INT, "budget_bytes": INT})),
})

TRAIN = document("train", "inspect train MODEL --json", {
    "model": MODEL, "method": {"enum": ["full", "lora", "qlora"]}, "rank": NINT, "alpha": NNUM, "targets": STRS,
    "optimizer": {"enum": [*OPTIMIZERS]},
    "precision": {"enum": ["bf16-mixed", "fp16-mixed", "bf16", "fp32", "amp-bf16", "amp-fp16"]}, "batch": INT,
    "seq": INT,
    "checkpointing": BOOL, "gpus": INT, "gpu": NSTR, "budget_bytes": NINT, "zero": INT, "fsdp": BOOL,
    "offload": {"enum": ["none", "optimizer", "all"]}, "experts": {"enum": ["fused", "separate"]},
    "stage": {"enum": ["sft", "dpo", "grpo"]}, "loss": {"enum": ["standard", "chunked", "fused"]}, "generations": NINT,
    "completion_len": NINT, "beta": NNUM, "rollout_memory": NNUM, "reference": INT, "sp": INT, "freeze": STRS,
    "optimizer_in_backward": BOOL, "offload_activations": BOOL, "compile": BOOL,
    "trainable_parameters": INT, "frozen_parameters": INT, "adapted_modules": INT,
    "trainable_by_role": {"type": "object", "additionalProperties": INT},
    "weights": INT, "gradients": INT, "optimizer_states": INT, "master_weights": INT, "activations": NINT,
    "logits": INT, "overhead": INT, "total": NINT, "fits": NBOOL, "cpu_bytes": INT, "largest_batch": NINT,
    "largest_seq": NINT, "bits_per_weight": NNUM, "peak_rule": STR,
    "peak": obj({"moment": STR, "parts": arr(obj({"name": STR, "bytes": INT}))}, nullable=True),
    "terms": arr(obj({"name": STR, "bytes": NINT, "formula": STR, "source": STR, "exact": BOOL})),
    "rules_of_thumb": arr(obj({"who": STR, "bytes": INT, "formula": STR})),
    "assumptions": STRS,
    # where it does not fit: each change that makes it fit, cheapest first (analysis/knobs.py)
    "suggestions": arr(obj({"change": STR, "total": INT, "budget_bytes": INT})),
})

PLAN = document("plan", "inspect plan MODEL --json", {
    "model": MODEL, "engine": {"enum": [*ENGINES]}, "context": INT,
    "objective": {"enum": ["gpus", "throughput", "context"]}, "utilization": NNUM, "answer": STR,
    "fits": NBOOL,  # some layout fits; null where no valid layout's fit is known
    "rules": arr(obj({"key": STR, "demands": STR, "source": STR})),
    # where no layout fits: the GPU count that would (analysis/knobs.py)
    "suggestions": arr(obj({"change": STR, "total": INT, "budget_bytes": INT})),
    "layouts": arr(obj({
        "gpu": STR, "gpu_bytes": INT, "gpus": INT, "tp": INT, "pp": INT, "ep": INT, "valid": BOOL, "fits": NBOOL,
        "reasons": STRS, "weights_bytes": NINT, "replicated_bytes": NINT, "kv_pool_bytes": NINT,
        "kv_pool_tokens": NINT, "kv_bytes_per_token": NINT, "total_bytes": NINT, "usable_bytes": NINT,
        "max_context": NINT, "max_sequences": NINT, "terms": arr(obj({"name": STR, "bytes": INT}))})),
})

AUDIT = document("audit", "inspect audit TARGET --json", {
    "model": MODEL, "ok": BOOL,
    "counts": obj({"error": INT, "warning": INT, "info": INT}),
    "checked": obj({"files": INT, "headers": INT, "tensors": INT}),
    "findings": arr(obj({"code": STR, "severity": {"enum": ["error", "warning", "info"]}, "file": NSTR,
                         "tensor": NSTR, "message": STR})),
    "pickle_globals": arr(obj({"file": STR, "pickle": STR, "module": STR, "name": STR,
                               "verdict": {"enum": ["allowed", "refused"]}})),
})

ADAPTER_SIDE = obj({"model": MODEL, "parameters": INT, "bytes": INT, "model_type": NSTR})
ADAPTER_DIFF = document("adapter-diff", "inspect diff BASE ADAPTER --json (a PEFT adapter against its base)", {
    "kind": {"const": "adapter"}, "base": ADAPTER_SIDE, "adapter": ADAPTER_SIDE, "peft_type": NSTR, "rank": NINT,
    "alpha": NNUM, "target_modules": STRS, "base_model_name_or_path": NSTR, "parameters": INT,
    "trainable_parameters": INT, "frozen_copies": arr(obj({"tensor": STR, "parameters": INT})), "share_of_base": NNUM,
    "modules": arr(obj({"module": STR, "layers": INT, "rank": INT, "lora_a": INTS, "lora_b": INTS, "formula": STR,
                        "parameters": INT, "base_shape": NINTS})),
    "other": arr(obj({"tensor": STR, "parameters": INT})),
    "problems": STRS,
})

FILES = document("files", "inspect FOLDER|REPO --json, for one model in several GGUF files [--gpu B --context N]", {
    "where": STR, "budget_bytes": NINT, "devices": NINT,
    "files": arr(obj({"file": STR, "kind": {"enum": ["model", "projector"]}, "type": NSTR, "bytes": INT,
                      "parameters": INT, "bits_per_weight": NNUM, "fits": NBOOL, "max_context": NINT,
                      "kv_bytes_per_token": NINT, "needed_bytes": NINT, "note": NSTR})),
    "notes": STRS,
})

REPO_FILES = document("repo-files", "inspect MODEL --files --json", {
    "model": MODEL,
    "files": arr(obj({"path": STR, "size": NINT, "kind": {"enum": ["weights", "index", "config", "tokenizer", "other"]},
                      "counted": BOOL})),
    "total_bytes": INT, "weights_bytes": INT, "weights_share": NNUM,
    "bytes_by_kind": obj({"weights": INT, "index": INT, "config": INT, "tokenizer": INT, "other": INT}),
    "unknown_sizes": INT,
})

def _lineage() -> dict[str, Any]:
    """The relation and tensor-kind enums from the analysis' own tables (one list of words, not two)."""
    from typing import get_args

    from inspector.analysis.lineage import RELATIONS, Kind

    relation = {"enum": list(RELATIONS)}
    tensor = obj({"name": STR, "role": STR, "layer": NINT, "relation": {"enum": list(get_args(Kind))}, "why": STR,
                  "correlation": NNUM, "max_abs_change": NNUM})
    candidate = obj({
        "model": STR, "checkpoint": {"anyOf": [MODEL, {"type": "null"}]}, "declared": NSTR, "relation": relation,
        "why": STR, "files_identical": NINT, "files_compared": NINT, "tensors_aligned": INT, "tensors_compared": INT,
        "tensors_packed": INT,
        "tensors_equal": INT, "tensors_changed": INT, "tensors_unrelated": INT, "tensors_blended": INT,
        "tensors_quantized": INT, "tensors_constant": INT, "tensors_incomparable": INT, "changed_roles": STRS,
        "changed_layers": INTS, "weight": NNUM, "fingerprint": NSTR, "tensors": arr(tensor)})
    return document("lineage", "inspect lineage MODEL [CANDIDATE ...] --json", {
        "model": MODEL, "verdict": relation, "base": NSTR, "parents": STRS,
        "weights": {"type": "object", "additionalProperties": NNUM},
        "declared_base": NSTR, "declared_bases": arr(obj({"model": STR, "where": STR})),
        "declared_relation": {"enum": ["adapter", "merge", "quantized", "finetune", None]},
        "declared_matches": NBOOL, "fingerprint": STR, "tensors_sampled": INT, "bytes_read": INT,
        "model_bytes_read": INT, "weights_bytes": INT, "requests": INT, "evidence": STRS, "candidates": arr(candidate)})


LINEAGE = _lineage()

SCHEMAS = {"show": SHOW, "files": FILES, "repo-files": REPO_FILES, "diff": DIFF, "adapter-diff": ADAPTER_DIFF,
           "compare": COMPARE, "estimate": ESTIMATE, "audit": AUDIT, "train": TRAIN, "plan": PLAN,
           "lineage": LINEAGE}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "inspector" / "schemas")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, schema in SCHEMAS.items():
        (args.out / f"{name}.schema.json").write_text(json.dumps(schema, indent=1) + "\n")


if __name__ == "__main__":
    main()
