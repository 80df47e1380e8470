"""Generate the bundled header snapshots from public configs and exact shape rules.

    python scripts/make_snapshots.py            # writes inspector/snapshots/
    python scripts/make_snapshots.py --out DIR  # somewhere else (the tests compare the two)

No weights, no network and no torch: each model is a list of (name, dtype, shape) in the order the
checkpoint's writer saved its state dict, using the names real checkpoints carry on the Hub (Mixtral's
``block_sparse_moe.experts.N.w1``, not transformers' fused in-memory names). Shards are filled the
way ``transformers`` shards a state dict (greedy, in order, up to a maximum shard size), and each
shard header is laid out as the ``safetensors`` reference writer lays it out, with the
``{"format": "pt"}`` metadata transformers writes. Shard boundaries are therefore ours, not
necessarily the real repo's; tensor names, shapes, dtypes, counts and ``total_size`` are exact.

The inputs are each model's public config.json values, in fixtures/snapshot-configs (the tests
compare those that have a real copy in fixtures/realdata with it); the tests check the results
against the real indexes and published counts in fixtures/.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inspector.formats.dtypes import DTYPE_BITS  # noqa: E402
from inspector.formats.safetensors import encode_header  # noqa: E402
from inspector.sources.snapshot import write_snapshot  # noqa: E402

Entry = tuple[str, str, tuple[int, ...]]
GB = 10**9  # transformers' "5GB" is decimal


@dataclass(frozen=True)
class Model:
    repo_id: str
    config: dict[str, object]
    tensors: Callable[[dict[str, object]], Iterator[Entry]]
    max_shard: int | None  # None: a single model.safetensors
    revision: str | None = None
    shard_digits: tuple[int, int] = (5, 5)
    extra_files: tuple[tuple[str, int | None], ...] = ()
    stored_files: tuple[tuple[str, dict[str, object]], ...] = ()
    note: str = ""


# --- architectures --------------------------------------------------------------------------


def llama_like(c: dict[str, object], *, qkv_bias: bool = False, inv_freq: bool = False, qk_norm: bool = False,
               moe: str | None = None, dtype: str = "BF16", tied_default: bool = False,
               stores_lm_head: bool = False) -> Iterator[Entry]:
    """Llama 1/2/3, Mistral, Qwen2 (q/k/v bias), Qwen3 (q_norm/k_norm over head_dim), Mixtral
    (``moe="mixtral"``), Gemma (tied: its config omits ``tie_word_embeddings`` and transformers'
    GemmaConfig defaults it to true). ``stores_lm_head``: the repo's file holds ``lm_head.weight``
    although the config ties it (Qwen3-0.6B)."""
    h = int(c["hidden_size"])  # type: ignore[arg-type]
    inter = int(c["intermediate_size"])  # type: ignore[arg-type]
    heads = int(c["num_attention_heads"])  # type: ignore[arg-type]
    kv = int(c.get("num_key_value_heads", heads))  # type: ignore[arg-type]
    hd = int(c.get("head_dim", h // heads))  # type: ignore[arg-type]
    vocab = int(c["vocab_size"])  # type: ignore[arg-type]
    yield "model.embed_tokens.weight", dtype, (vocab, h)
    for i in range(int(c["num_hidden_layers"])):  # type: ignore[arg-type]
        p = f"model.layers.{i}."
        yield p + "self_attn.q_proj.weight", dtype, (heads * hd, h)
        if qkv_bias:
            yield p + "self_attn.q_proj.bias", dtype, (heads * hd,)
        yield p + "self_attn.k_proj.weight", dtype, (kv * hd, h)
        if qkv_bias:
            yield p + "self_attn.k_proj.bias", dtype, (kv * hd,)
        yield p + "self_attn.v_proj.weight", dtype, (kv * hd, h)
        if qkv_bias:
            yield p + "self_attn.v_proj.bias", dtype, (kv * hd,)
        yield p + "self_attn.o_proj.weight", dtype, (h, heads * hd)
        if qk_norm:
            yield p + "self_attn.q_norm.weight", dtype, (hd,)
            yield p + "self_attn.k_norm.weight", dtype, (hd,)
        if inv_freq:
            yield p + "self_attn.rotary_emb.inv_freq", "F32", (hd // 2,)
        if moe == "mixtral":
            yield p + "block_sparse_moe.gate.weight", dtype, (int(c["num_local_experts"]), h)  # type: ignore[arg-type]
            for e in range(int(c["num_local_experts"])):  # type: ignore[arg-type]
                q = f"{p}block_sparse_moe.experts.{e}."
                yield q + "w1.weight", dtype, (inter, h)
                yield q + "w2.weight", dtype, (h, inter)
                yield q + "w3.weight", dtype, (inter, h)
        else:
            yield p + "mlp.gate_proj.weight", dtype, (inter, h)
            yield p + "mlp.up_proj.weight", dtype, (inter, h)
            yield p + "mlp.down_proj.weight", dtype, (h, inter)
        yield p + "input_layernorm.weight", dtype, (h,)
        yield p + "post_attention_layernorm.weight", dtype, (h,)
    yield "model.norm.weight", dtype, (h,)
    if stores_lm_head or not c.get("tie_word_embeddings", tied_default):
        yield "lm_head.weight", dtype, (vocab, h)


def llama_gptq(c: dict[str, object]) -> Iterator[Entry]:
    """AutoGPTQ 4-bit layout (TheBloke): per linear ``qweight [in/8, out] I32``,
    ``qzeros [in/g, out/8] I32``, ``scales [in/g, out] F16``, ``g_idx [in] I32``; no bias for
    Llama (AutoGPTQ keeps a bias only where the layer had one). Embedding, norms, lm_head stay F16."""
    q = c["quantization_config"]
    assert isinstance(q, dict)
    bits, group = int(q["bits"]), int(q["group_size"])
    pack = 32 // bits
    h, inter = int(c["hidden_size"]), int(c["intermediate_size"])  # type: ignore[arg-type]
    heads = int(c["num_attention_heads"])  # type: ignore[arg-type]
    kv = int(c.get("num_key_value_heads", heads))  # type: ignore[arg-type]
    hd = h // heads
    vocab = int(c["vocab_size"])  # type: ignore[arg-type]

    def linear(name: str, n_in: int, n_out: int) -> Iterator[Entry]:
        yield name + ".qweight", "I32", (n_in // pack, n_out)
        yield name + ".qzeros", "I32", (n_in // group, n_out // pack)
        yield name + ".scales", "F16", (n_in // group, n_out)
        yield name + ".g_idx", "I32", (n_in,)

    yield "model.embed_tokens.weight", "F16", (vocab, h)
    for i in range(int(c["num_hidden_layers"])):  # type: ignore[arg-type]
        p = f"model.layers.{i}."
        yield from linear(p + "self_attn.q_proj", h, heads * hd)
        yield from linear(p + "self_attn.k_proj", h, kv * hd)
        yield from linear(p + "self_attn.v_proj", h, kv * hd)
        yield from linear(p + "self_attn.o_proj", heads * hd, h)
        yield from linear(p + "mlp.gate_proj", h, inter)
        yield from linear(p + "mlp.up_proj", h, inter)
        yield from linear(p + "mlp.down_proj", inter, h)
        yield p + "input_layernorm.weight", "F16", (h,)
        yield p + "post_attention_layernorm.weight", "F16", (h,)
    yield "model.norm.weight", "F16", (h,)
    yield "lm_head.weight", "F16", (vocab, h)


def phi2(c: dict[str, object]) -> Iterator[Entry]:
    h, inter, vocab = int(c["hidden_size"]), int(c["intermediate_size"]), int(c["vocab_size"])  # type: ignore[arg-type]
    d = "F16"
    yield "model.embed_tokens.weight", d, (vocab, h)
    for i in range(int(c["num_hidden_layers"])):  # type: ignore[arg-type]
        p = f"model.layers.{i}."
        for proj in ("q_proj", "k_proj", "v_proj", "dense"):
            yield f"{p}self_attn.{proj}.weight", d, (h, h)
            yield f"{p}self_attn.{proj}.bias", d, (h,)
        yield p + "mlp.fc1.weight", d, (inter, h)
        yield p + "mlp.fc1.bias", d, (inter,)
        yield p + "mlp.fc2.weight", d, (h, inter)
        yield p + "mlp.fc2.bias", d, (h,)
        yield p + "input_layernorm.weight", d, (h,)
        yield p + "input_layernorm.bias", d, (h,)
    yield "model.final_layernorm.weight", d, (h,)
    yield "model.final_layernorm.bias", d, (h,)
    yield "lm_head.weight", d, (vocab, h)
    yield "lm_head.bias", d, (vocab,)


def phi3(c: dict[str, object]) -> Iterator[Entry]:
    """Phi-3 as saved on the Hub: fused ``qkv_proj`` [(heads + 2 KV heads) × head_dim, hidden] and
    ``gate_up_proj`` [2 × intermediate, hidden], RMSNorm weights only, no biases, untied lm_head."""
    h, inter, vocab = int(c["hidden_size"]), int(c["intermediate_size"]), int(c["vocab_size"])  # type: ignore[arg-type]
    heads = int(c["num_attention_heads"])  # type: ignore[arg-type]
    kv = int(c.get("num_key_value_heads", heads))  # type: ignore[arg-type]
    hd = h // heads
    d = "BF16"
    yield "model.embed_tokens.weight", d, (vocab, h)
    for i in range(int(c["num_hidden_layers"])):  # type: ignore[arg-type]
        p = f"model.layers.{i}."
        yield p + "self_attn.qkv_proj.weight", d, ((heads + 2 * kv) * hd, h)
        yield p + "self_attn.o_proj.weight", d, (h, heads * hd)
        yield p + "mlp.gate_up_proj.weight", d, (2 * inter, h)
        yield p + "mlp.down_proj.weight", d, (h, inter)
        yield p + "input_layernorm.weight", d, (h,)
        yield p + "post_attention_layernorm.weight", d, (h,)
    yield "model.norm.weight", d, (h,)
    yield "lm_head.weight", d, (vocab, h)


def gpt2(c: dict[str, object]) -> Iterator[Entry]:
    """GPT-2 as saved on the Hub: no ``transformer.`` prefix, Conv1D weights stored [in, out],
    the causal mask ``attn.bias`` [1, 1, n_ctx, n_ctx] saved per layer, lm_head tied to wte."""
    h, vocab, ctx = int(c["n_embd"]), int(c["vocab_size"]), int(c["n_ctx"])  # type: ignore[arg-type]
    d = "F32"
    yield "wte.weight", d, (vocab, h)
    yield "wpe.weight", d, (int(c["n_positions"]), h)  # type: ignore[arg-type]
    for i in range(int(c["n_layer"])):  # type: ignore[arg-type]
        p = f"h.{i}."
        yield p + "ln_1.weight", d, (h,)
        yield p + "ln_1.bias", d, (h,)
        yield p + "attn.bias", d, (1, 1, ctx, ctx)
        yield p + "attn.c_attn.weight", d, (h, 3 * h)
        yield p + "attn.c_attn.bias", d, (3 * h,)
        yield p + "attn.c_proj.weight", d, (h, h)
        yield p + "attn.c_proj.bias", d, (h,)
        yield p + "ln_2.weight", d, (h,)
        yield p + "ln_2.bias", d, (h,)
        yield p + "mlp.c_fc.weight", d, (h, 4 * h)
        yield p + "mlp.c_fc.bias", d, (4 * h,)
        yield p + "mlp.c_proj.weight", d, (4 * h, h)
        yield p + "mlp.c_proj.bias", d, (h,)
    yield "ln_f.weight", d, (h,)
    yield "ln_f.bias", d, (h,)


def deepseek_v3(c: dict[str, object]) -> Iterator[Entry]:
    """DeepSeek-V3 as released: FP8 (E4M3) linear weights with F32 ``weight_scale_inv`` per
    128×128 block, BF16 embeddings, norms, router and MTP projection, F32 router bias; layers 0–2
    dense, 3–60 MoE (256 routed + 1 shared expert); layer 61 is the multi-token-prediction layer."""
    h = int(c["hidden_size"])  # type: ignore[arg-type]
    vocab = int(c["vocab_size"])  # type: ignore[arg-type]
    heads = int(c["num_attention_heads"])  # type: ignore[arg-type]
    q_rank, kv_rank = int(c["q_lora_rank"]), int(c["kv_lora_rank"])  # type: ignore[arg-type]
    nope, rope, vdim = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])  # type: ignore[arg-type]
    inter, moe_inter = int(c["intermediate_size"]), int(c["moe_intermediate_size"])  # type: ignore[arg-type]
    experts = int(c["n_routed_experts"])  # type: ignore[arg-type]
    dense = int(c["first_k_dense_replace"])  # type: ignore[arg-type]
    layers = int(c["num_hidden_layers"]) + int(c["num_nextn_predict_layers"])  # type: ignore[arg-type]
    block = c["quantization_config"]["weight_block_size"]  # type: ignore[index]
    bo, bi = int(block[0]), int(block[1])

    def fp8(name: str, n_out: int, n_in: int) -> Iterator[Entry]:
        yield name + ".weight", "F8_E4M3", (n_out, n_in)
        yield name + ".weight_scale_inv", "F32", (math.ceil(n_out / bo), math.ceil(n_in / bi))

    def mlp(p: str, width: int) -> Iterator[Entry]:
        yield from fp8(p + "gate_proj", width, h)
        yield from fp8(p + "up_proj", width, h)
        yield from fp8(p + "down_proj", h, width)

    yield "model.embed_tokens.weight", "BF16", (vocab, h)
    for i in range(layers):
        p = f"model.layers.{i}."
        if i >= int(c["num_hidden_layers"]):  # type: ignore[arg-type]
            yield p + "embed_tokens.weight", "BF16", (vocab, h)
            yield p + "enorm.weight", "BF16", (h,)
            yield p + "hnorm.weight", "BF16", (h,)
            yield p + "eh_proj.weight", "BF16", (h, 2 * h)
            yield p + "shared_head.norm.weight", "BF16", (h,)
            yield p + "shared_head.head.weight", "BF16", (vocab, h)
        yield from fp8(p + "self_attn.q_a_proj", q_rank, h)
        yield p + "self_attn.q_a_layernorm.weight", "BF16", (q_rank,)
        yield from fp8(p + "self_attn.q_b_proj", heads * (nope + rope), q_rank)
        yield from fp8(p + "self_attn.kv_a_proj_with_mqa", kv_rank + rope, h)
        yield p + "self_attn.kv_a_layernorm.weight", "BF16", (kv_rank,)
        yield from fp8(p + "self_attn.kv_b_proj", heads * (nope + vdim), kv_rank)
        yield from fp8(p + "self_attn.o_proj", h, heads * vdim)
        if i < dense:
            yield from mlp(p + "mlp.", inter)
        else:
            yield p + "mlp.gate.weight", "BF16", (experts, h)
            yield p + "mlp.gate.e_score_correction_bias", "F32", (experts,)
            for e in range(experts):
                yield from mlp(f"{p}mlp.experts.{e}.", moe_inter)
            yield from mlp(p + "mlp.shared_experts.", moe_inter * int(c["n_shared_experts"]))  # type: ignore[arg-type]
        yield p + "input_layernorm.weight", "BF16", (h,)
        yield p + "post_attention_layernorm.weight", "BF16", (h,)
    yield "model.norm.weight", "BF16", (h,)
    yield "lm_head.weight", "BF16", (vocab, h)


# --- configs (public config.json values, kept in fixtures/snapshot-configs) -----------------

CONFIGS = ROOT / "fixtures" / "snapshot-configs"


def config(repo_id: str, name: str = "") -> dict[str, object]:
    """A model's config.json values (or another small file's, ``name``), as the generator's input."""
    stem = repo_id.replace("/", "__")
    value: dict[str, object] = json.loads((CONFIGS / (f"{stem}.{name}" if name else f"{stem}.json")).read_text())
    return value


LLAMA2_7B = config("meta-llama/Llama-2-7b-hf")
LLAMA3_8B = config("meta-llama/Meta-Llama-3-8B")
LLAMA3_70B = config("meta-llama/Meta-Llama-3-70B")
MISTRAL_7B = config("mistralai/Mistral-7B-Instruct-v0.2")
MIXTRAL = config("mistralai/Mixtral-8x7B-v0.1")
QWEN25_7B = config("Qwen/Qwen2.5-7B-Instruct")
GEMMA_2B = config("google/gemma-2b")
PHI2 = config("microsoft/phi-2")
GPT2 = config("openai-community/gpt2")
LLAMA2_13B_GPTQ = config("TheBloke/Llama-2-13B-chat-GPTQ")
GPTQ_QUANTIZE_CONFIG = config("TheBloke/Llama-2-13B-chat-GPTQ", "quantize_config.json")
DEEPSEEK_V3 = config("deepseek-ai/DeepSeek-V3")
PHI3_MINI = config("microsoft/Phi-3-mini-4k-instruct")
TINYLLAMA = config("TinyLlama/TinyLlama-1.1B-Chat-v1.0")
QWEN3_06B = config("Qwen/Qwen3-0.6B")

MODELS: tuple[Model, ...] = (
    Model("meta-llama/Llama-2-7b-hf", LLAMA2_7B,
          lambda c: llama_like(c, inv_freq=True, dtype="F16"), 10 * GB,
          revision="01c7f73d771dfac7d292323805ebc428287df4f9",
          extra_files=(("pytorch_model-00001-of-00002.bin", None), ("pytorch_model-00002-of-00002.bin", None),
                       ("pytorch_model.bin.index.json", None), ("tokenizer.model", None))),
    Model("meta-llama/Meta-Llama-3-8B", LLAMA3_8B, llama_like, 5 * GB,
          revision="8cde5ca8380496c9a6cc7ef3a8b46a0372a1d920",
          extra_files=(("original/consolidated.00.pth", None), ("original/params.json", None),
                       ("original/tokenizer.model", None), ("tokenizer.json", None))),
    Model("meta-llama/Meta-Llama-3-70B", LLAMA3_70B, llama_like, 5 * GB,
          note="shard size chosen to give the real repo's 30 shards"),
    Model("mistralai/Mistral-7B-Instruct-v0.2", MISTRAL_7B, llama_like, 5 * GB),
    Model("mistralai/Mixtral-8x7B-v0.1", MIXTRAL, lambda c: llama_like(c, moe="mixtral"), 5 * GB),
    Model("Qwen/Qwen2.5-7B-Instruct", QWEN25_7B, lambda c: llama_like(c, qkv_bias=True), 4 * GB,
          revision="a09a35458c702b33eeacc393d103063234e8bc28"),
    Model("google/gemma-2b", GEMMA_2B, lambda c: llama_like(c, tied_default=True), 5 * GB),
    Model("microsoft/phi-2", PHI2, phi2, 5 * GB),
    Model("openai-community/gpt2", GPT2, gpt2, None, revision="607a30d783dfa663caf39e06633721c8d4cfcd7e",
          extra_files=(("pytorch_model.bin", None), ("flax_model.msgpack", None), ("tf_model.h5", None),
                       ("onnx/decoder_model.onnx", None))),
    Model("TheBloke/Llama-2-13B-chat-GPTQ", LLAMA2_13B_GPTQ, llama_gptq, None,
          stored_files=(("quantize_config.json", GPTQ_QUANTIZE_CONFIG),),
          note="AutoGPTQ layout; no bias tensors (Llama linears have none)"),
    Model("microsoft/Phi-3-mini-4k-instruct", PHI3_MINI, phi3, 5 * GB),
    Model("TinyLlama/TinyLlama-1.1B-Chat-v1.0", TINYLLAMA, llama_like, None),
    Model("Qwen/Qwen3-0.6B", QWEN3_06B, lambda c: llama_like(c, qk_norm=True, stores_lm_head=True), None,
          note="the config ties the embeddings, but the repo's model.safetensors stores lm_head.weight too "
               "(751,632,384 elements, as the Hub counts them)"),
    Model("deepseek-ai/DeepSeek-V3", DEEPSEEK_V3, deepseek_v3, int(4.25 * GB), shard_digits=(5, 6),
          note="shard size chosen to give the real repo's 163 shards; real names model-0000N-of-000163"),
)


# --- sharding and writing ---------------------------------------------------------------------


def nbytes(entry: Entry) -> int:
    return math.prod(entry[2]) * DTYPE_BITS[entry[1]] // 8


def shard(entries: list[Entry], max_shard: int | None, digits: tuple[int, int]) -> list[tuple[str, list[Entry]]]:
    """transformers' greedy sharding: a new shard when the next tensor would pass the maximum."""
    if max_shard is None:
        return [("model.safetensors", entries)]
    blocks: list[list[Entry]] = [[]]
    size = 0
    for e in entries:
        b = nbytes(e)
        if blocks[-1] and size + b > max_shard:
            blocks.append([])
            size = 0
        blocks[-1].append(e)
        size += b
    n = len(blocks)
    a, z = digits
    return [(f"model-{i + 1:0{a}d}-of-{n:0{z}d}.safetensors", block) for i, block in enumerate(blocks)]


def real_shards(model: Model, entries: list[Entry]) -> list[tuple[str, list[Entry]]] | None:
    """The real repo's shard boundaries, where its index is in fixtures/realdata."""
    index = ROOT / "fixtures" / "realdata" / model.repo_id.replace("/", "__") / "model.safetensors.index.json"
    if not index.is_file():
        return None
    weight_map: dict[str, str] = json.loads(index.read_text())["weight_map"]
    if set(weight_map) != {e[0] for e in entries}:
        raise SystemExit(f"{model.repo_id}: the shape rules' tensor names differ from the real index")
    blocks: dict[str, list[Entry]] = {}
    for e in entries:
        blocks.setdefault(weight_map[e[0]], []).append(e)
    return sorted(blocks.items())


def build(model: Model, out: Path) -> dict[str, int]:
    entries = list(model.tensors(model.config))
    real = real_shards(model, entries)
    shards = real or shard(entries, model.max_shard, model.shard_digits)
    headers: dict[str, bytes] = {}
    files: list[tuple[str, int | None]] = []
    stored: dict[str, bytes] = {}
    weight_map: dict[str, str] = {}
    total = 0
    for name, block in shards:
        blob, data = encode_header(((n, d, s) for n, d, s in block), {"format": "pt"})
        headers[name] = blob
        files.append((name, len(blob) + data))
        total += data
        weight_map.update({e[0]: name for e in block})

    def add(path: str, value: object) -> None:
        data = (json.dumps(value, indent=2) + "\n").encode()
        stored[path] = data
        files.append((path, len(data)))

    add("config.json", model.config)
    for path, value in model.stored_files:
        add(path, value)
    if len(shards) > 1:
        add("model.safetensors.index.json",
            {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))})
    files.extend(model.extra_files)
    files.sort()
    boundaries = "shard boundaries are the real index's" if real else \
        "shard boundaries follow transformers' greedy sharding (the real index was not at hand)"
    provenance = (
        "made from the public config by exact shape rules (scripts/make_snapshots.py); "
        + boundaries + (f"; {model.note}" if model.note else "")
    )
    write_snapshot(out / model.repo_id.replace("/", "__"), compress_level=9, repo_id=model.repo_id,
                   revision=model.revision,
                   files=files, headers=headers, stored=stored, provenance=provenance)
    return {"tensors": len(entries), "shards": len(shards), "bytes": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "inspector" / "snapshots")
    parser.add_argument("--only", help="build only the repo ids containing this text")
    args = parser.parse_args()
    for model in MODELS:
        if args.only and args.only.lower() not in model.repo_id.lower():
            continue
        facts = build(model, args.out)
        print(f"{model.repo_id}: {facts['tensors']:,} tensors, {facts['shards']} shards, {facts['bytes']:,} bytes")


if __name__ == "__main__":
    main()
