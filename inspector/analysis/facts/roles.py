"""Tensor names → roles, kinds and layer positions, from ordered data tables.

Each tensor gets:

* a **kind**: ``parameter``; ``buffer`` (state a module keeps that is not a parameter, saved in some
  checkpoints: rotary ``inv_freq``, GPT-2's causal-mask ``attn.bias``, BERT's ``position_ids``); or
  ``quant`` (quantisation side data: scales, zero points, group indices; overhead, not parameters);
* a **role** (``attn.q``, ``mlp.down``, ``moe.expert.gate`` …) from the first matching row of
  ``ROLE_TABLE``; a name no row matches is ``other``, never an error;
* its **layer**: the stack it belongs to (``model.layers``) and its index there.

Patterns are searched in the full name. Lookups are memoised on the name with its numbers
replaced, so 90,000 DeepSeek-V3 tensors cost about a hundred regex scans.
"""

from __future__ import annotations

import operator
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Final, Literal, NamedTuple, cast

from inspector.model import Kind, Role

# (kind, pattern, where seen). Checked first, in order.
KIND_TABLE: Final[tuple[tuple[Kind, str, str], ...]] = (
    ("buffer", r"rotary_emb\.inv_freq$", "Llama-2 hf checkpoints, GPT-NeoX, Falcon"),
    ("buffer", r"(^|\.)attn\.(masked_)?bias$", "GPT-2 causal mask [1, 1, n_ctx, n_ctx]; GPT-J, GPT-Neo"),
    ("buffer", r"(^|\.)position_ids$", "BERT, RoBERTa, CLIP, sentence-transformers"),
    ("buffer", r"(^|\.)(running_mean|running_var|num_batches_tracked)$",
     "BatchNorm/InstanceNorm running statistics: buffers of torch's nn.Module (torchcrepe, ResNets, VAEs)"),
    ("buffer", r"(^|\.)rope_freqs\.weight$", "llama.cpp GGUF (Llama 3.1 rope scaling factors)"),
    ("buffer", r"\.e_score_correction_bias$",
     "DeepSeek-V3 router bias (a buffer in transformers' DeepseekV3TopkRouter)"),
    ("quant", r"\.(qzeros|scales|g_idx)$", "GPTQ (AutoGPTQ, GPTQModel) and AWQ"),
    ("quant", r"\.biases$", "MLX affine quantisation (mlx-lm): per-group offsets beside the scales"),
    ("quant", r"\.(weight_scale_inv|weight_scale|input_scale|output_scale|k_scale|v_scale)$",
     "FP8: DeepSeek-V3 block scales (weight_scale_inv), compressed-tensors and fbgemm (weight_scale)"),
    ("quant", r"\.(weight_zero_point|weight_g_idx|weight_shape|weight_global_scale)$",
     "compressed-tensors pack-quantized"),
    ("quant", r"\.(absmax|quant_map|nested_absmax|nested_quant_map|SCB|weight_format)$",
     "bitsandbytes 4-bit and 8-bit"),
    ("quant", r"\.weight\.quant_state\.", "bitsandbytes 4-bit packed quant state"),
    ("quant", r"_scales$", "MXFP4 block scales (gpt-oss *_blocks + *_scales)"),
    ("buffer", r"(^|\.)pos_embed\.pos_embed$",
     "diffusers PatchEmbed's sin-cos table, a persistent buffer (SD3, PixArt: register_buffer(..., persistent=True))"),
    ("buffer", r"(^|\.)final_logits_bias$", "BART, mBART, Pegasus, Marian: register_buffer('final_logits_bias')"),
)

# (role, pattern, where seen). The first match wins, so specific rows come before general ones.
ROLE_TABLE: Final[tuple[tuple[Role, str, str], ...]] = (
    # multimodal towers first: they contain their own q_proj, mlp and norms
    ("projector", r"(^|\.)(multi_modal_projector|mm_projector|visual\.merger|connector|mlp1)\.",
     "LLaVA, Qwen2-VL (visual.merger), Idefics3 (connector), InternVL (mlp1)"),
    ("vision", r"(^|\.)(vision_tower|vision_model|visual|vision_encoder|image_encoder|vpm)\.",
     "LLaVA, Qwen2-VL, Gemma 3, Idefics, PaliGemma, MiniCPM-V"),
    ("audio", r"(^|\.)(audio_tower|audio_encoder|audio_model)\.", "Qwen2-Audio, Gemma 3n"),
    # diffusion models (diffusers names): whole blocks first, so a block's norms and attention are the block's
    ("vae.encoder", r"(^|\.)encoder\.(down_blocks|mid_block|conv_in|conv_out|conv_norm_out)\.",
     "diffusers AutoencoderKL encoder"),
    ("vae.decoder", r"(^|\.)decoder\.(up_blocks|mid_block|conv_in|conv_out|conv_norm_out)\.",
     "diffusers AutoencoderKL decoder"),
    ("vae.quant", r"(^|\.)(post_)?quant_conv\.", "AutoencoderKL latent projections"),
    ("unet.down.attn", r"(^|\.)down_blocks\.\d+\.attentions\.", "UNet2DConditionModel CrossAttnDownBlock2D"),
    ("unet.down.resnet", r"(^|\.)down_blocks\.\d+\.resnets\.", "UNet2DConditionModel down blocks"),
    ("unet.mid.attn", r"(^|\.)mid_block\.attentions\.", "UNetMidBlock2DCrossAttn"),
    ("unet.mid.resnet", r"(^|\.)mid_block\.resnets\.", "UNetMidBlock2DCrossAttn"),
    ("unet.up.attn", r"(^|\.)up_blocks\.\d+\.attentions\.", "UNet2DConditionModel CrossAttnUpBlock2D"),
    ("unet.up.resnet", r"(^|\.)up_blocks\.\d+\.resnets\.", "UNet2DConditionModel up blocks"),
    ("unet.sampler", r"(^|\.)(down_blocks|up_blocks)\.\d+\.(downsamplers|upsamplers)\.",
     "UNet down- and up-sampling convolutions"),
    ("dit.block", r"(^|\.)(transformer_blocks|single_transformer_blocks|joint_transformer_blocks)\.\d+\.",
     "diffusion transformers: DiT, PixArt, SD3 (joint), FLUX (single), Wan"),
    ("diffusion.time", r"(^|\.)(time_embedding|time_proj|add_embedding|time_text_embed|timestep_embedder|"
     r"t_embedder|adaln_single|condition_embedder)\.", "timestep and condition embeddings (UNet, DiT, FLUX, Wan)"),
    # norms before attention, so BERT's attention.output.LayerNorm is a norm
    ("norm", r"(?i)(^|\.)(\w*norm\w*|ln_\w+|ln)\.(weight|bias)$",
     "RMSNorm/LayerNorm everywhere: input_layernorm, ln_1, ln_f, q_a_layernorm, q_norm, enorm"),
    # cross-attention to an encoder's output, before the self-attention rows (the same q/k/v/o leaves)
    ("attn.cross", r"(^|\.)(encoder_attn|EncDecAttention|crossattention|cross_attn)[._]",
     "BART, Whisper, Marian (encoder_attn), T5 (EncDecAttention), BERT decoders (crossattention), Mllama "
     "(cross_attn), GGUF T5 (cross_attn_q)"),
    # state-space mixers (Mamba's selective scan) and linear attention (gated delta net)
    ("ssm.in", r"\.(mixer|mamba)\.(in_proj|x_proj|dt_proj)\.",
     "Mamba/Mamba2 (backbone.layers.N.mixer), Jamba and Falcon-H1 (layers.N.mamba)"),
    ("ssm.conv", r"\.(mixer|mamba)\.conv1d\.", "Mamba, Jamba, Falcon-H1: the causal convolution"),
    ("ssm.state", r"\.(mixer|mamba)\.(A_log|D|dt_bias)$", "Mamba, Jamba, Falcon-H1: the SSM's own A, D and Δ bias"),
    ("ssm.out", r"\.(mixer|mamba)\.out_proj\.", "Mamba, Jamba, Falcon-H1"),
    ("linear_attn.in", r"\.linear_attn\.in_proj\w*\.", "Qwen3-Next gated delta net (in_proj_qkvz, in_proj_ba)"),
    ("linear_attn.conv", r"\.linear_attn\.conv1d\.", "Qwen3-Next gated delta net"),
    ("linear_attn.state", r"\.linear_attn\.(A_log|dt_bias)$", "Qwen3-Next gated delta net"),
    ("linear_attn.out", r"\.linear_attn\.out_proj\.", "Qwen3-Next gated delta net"),
    # T5's names (T5, mT5, Flan-T5, UMT5; its relative position table is attention's)
    ("attn.q", r"\.SelfAttention\.q\.", "T5"),
    ("attn.k", r"\.SelfAttention\.k\.", "T5"),
    ("attn.v", r"\.SelfAttention\.v\.", "T5"),
    ("attn.o", r"\.SelfAttention\.o\.", "T5"),
    ("attn.other", r"\.SelfAttention\.", "T5 relative_attention_bias"),
    ("mlp.gate", r"\.DenseReluDense\.wi_0\.", "T5 v1.1, Flan-T5 (gated GELU)"),
    ("mlp.up", r"\.DenseReluDense\.wi(_1)?\.", "T5 (wi), T5 v1.1 (wi_1)"),
    ("mlp.down", r"\.DenseReluDense\.wo\.", "T5"),
    # vision and audio inputs of a model that is itself a vision or speech model (ViT, Whisper)
    ("patch_embedding", r"(^|\.)embeddings\.patch_embeddings\.", "ViT, DeiT, BEiT: the patch convolution"),
    ("cls_token", r"(^|\.)embeddings\.(cls_token|distillation_token|mask_token)$", "ViT, DeiT"),
    ("position_embedding", r"(^|\.)embeddings\.position_embeddings$", "ViT: learned positions (no .weight)"),
    ("conv_stem", r"(^|\.)encoder\.conv[12]\.", "Whisper: two convolutions from mel frames to hidden states"),
    # llama.cpp names in GGUF files (gguf-py's MODEL_TENSOR names: blk.N.attn_q, ffn_gate_exps, …)
    ("moe.router", r"(^|\.)ffn_gate_inp(_shexp)?\.", "GGUF MoE router (Mixtral, Qwen-MoE, DeepSeek)"),
    ("moe.shared.gate", r"(^|\.)ffn_gate_shexp\.", "GGUF shared expert"),
    ("moe.shared.up", r"(^|\.)ffn_up_shexp\.", "GGUF shared expert"),
    ("moe.shared.down", r"(^|\.)ffn_down_shexp\.", "GGUF shared expert"),
    ("moe.expert.gate", r"(^|\.)ffn_gate_exps\.", "GGUF experts, stacked"),
    ("moe.expert.up", r"(^|\.)ffn_up_exps\.", "GGUF experts, stacked"),
    ("moe.expert.down", r"(^|\.)ffn_down_exps\.", "GGUF experts, stacked"),
    ("attn.qkv", r"(^|\.)attn_qkv\.", "GGUF (Phi-3, Falcon)"),
    ("attn.q", r"(^|\.)attn_q\.", "GGUF"),
    ("attn.k", r"(^|\.)attn_k\.", "GGUF"),
    ("attn.v", r"(^|\.)attn_v\.", "GGUF"),
    ("attn.o", r"(^|\.)attn_output\.", "GGUF"),
    ("mlp.gate", r"(^|\.)ffn_gate\.", "GGUF"),
    ("mlp.up", r"(^|\.)ffn_up\.", "GGUF"),
    ("mlp.down", r"(^|\.)ffn_down\.", "GGUF"),
    ("embedding", r"^token_embd\.weight$", "GGUF"),
    ("position_embedding", r"^position_embd\.weight$", "GGUF (GPT-2)"),
    # mixture of experts
    ("moe.router", r"\.(block_sparse_moe|mlp|moe|feed_forward)\.(gate|router)\.(weight|bias)$",
     "Mixtral, DeepSeek-V2/V3, Qwen2/3-MoE, gpt-oss, Llama 4"),
    ("moe.router", r"\.shared_expert_gate\.weight$", "Qwen2-MoE"),
    ("moe.shared.gate", r"\.shared_experts?\.(gate_proj|w1)\.", "DeepSeek-V2/V3, Qwen2-MoE"),
    ("moe.shared.up", r"\.shared_experts?\.(up_proj|w3)\.", "DeepSeek-V2/V3, Qwen2-MoE"),
    ("moe.shared.down", r"\.shared_experts?\.(down_proj|w2)\.", "DeepSeek-V2/V3, Qwen2-MoE"),
    ("moe.shared", r"\.shared_experts?\.", "other shared-expert tensors"),
    ("moe.expert.gate_up", r"\.experts\.(\d+\.)?gate_up_proj",
     "gpt-oss, Llama 4, transformers 5 fused 3-D experts"),
    ("moe.expert.gate", r"\.experts\.(\d+\.)?(w1|gate_proj)(\.|$|_)", "Mixtral (w1), DeepSeek, Qwen-MoE"),
    ("moe.expert.up", r"\.experts\.(\d+\.)?(w3|up_proj)(\.|$|_)", "Mixtral (w3), DeepSeek, Qwen-MoE"),
    ("moe.expert.down", r"\.experts\.(\d+\.)?(w2|down_proj)(\.|$|_)", "Mixtral (w2), DeepSeek, Qwen-MoE"),
    ("moe.expert", r"\.experts\.", "other expert tensors"),
    # attention
    ("attn.qkv", r"\.(qkv_proj|c_attn|query_key_value|Wqkv|qkv)\.",
     "Phi-3 (qkv_proj), GPT-2 (c_attn), GPT-NeoX/Falcon (query_key_value), MPT (Wqkv)"),
    ("attn.q", r"\.(q_proj|q_a_proj|q_b_proj|wq|query)\.",
     "Llama, Mistral, Qwen, Gemma, Phi-2, DeepSeek MLA (q_a/q_b), Meta originals (wq), BERT (query)"),
    ("attn.kv", r"\.(kv_a_proj_with_mqa|kv_b_proj|kv_proj)\.", "DeepSeek-V2/V3 multi-head latent attention"),
    ("attn.k", r"\.(k_proj|wk|key)\.", "Llama, Mistral, Qwen, Gemma, Phi-2, BERT (key)"),
    ("attn.v", r"\.(v_proj|wv|value)\.", "Llama, Mistral, Qwen, Gemma, Phi-2, BERT (value)"),
    ("attn.o", r"\.(self_attn|attn|attention|self_attention)\.(o_proj|dense|out_proj|c_proj|wo)\.",
     "Llama (o_proj), Phi-2 (dense), GPT-2 (attn.c_proj), GPT-NeoX (attention.dense)"),
    ("attn.o", r"\.attention\.output\.dense\.", "BERT"),
    ("attn.o", r"\.(o_proj|wo)\.", "other layouts"),
    ("attn.other", r"\.(self_attn|attn|attention|self_attention)\.", "sinks, relative position tables"),
    # dense MLP
    ("mlp.gate_up", r"\.gate_up_proj\.", "Phi-3"),
    ("mlp.gate", r"\.(gate_proj|w1)\.", "Llama, Mistral, Qwen, Gemma (gate_proj); Meta originals (w1)"),
    ("mlp.up", r"\.(up_proj|w3|fc1|c_fc|dense_h_to_4h)\.",
     "Llama (up_proj), Meta originals (w3), Phi-2 (fc1), GPT-2 (c_fc), GPT-NeoX (dense_h_to_4h)"),
    ("mlp.up", r"\.intermediate\.dense\.", "BERT"),
    ("mlp.down", r"\.(down_proj|w2|fc2|dense_4h_to_h)\.",
     "Llama (down_proj), Meta originals (w2), Phi-2 (fc2), GPT-NeoX (dense_4h_to_h)"),
    ("mlp.down", r"\.mlp\.c_proj\.", "GPT-2"),
    ("mlp.down", r"\.output\.dense\.", "BERT"),
    # embeddings and heads
    ("embedding", r"(^|\.)(embed_tokens|wte|word_embeddings|tok_embeddings|embed_in|token_embedding)\.weight$",
     "Llama/Mistral/Qwen/Gemma/DeepSeek (embed_tokens), GPT-2 (wte), BERT (word_embeddings), CLIP (token_embedding)"),
    ("embedding", r"(^|\.)(shared|embeddings)\.weight$", "T5 and BART (shared), Mamba (backbone.embeddings)"),
    ("embedding", r"(^|\.)(embed_tokens|wte|word_embeddings|tok_embeddings|embed_in|token_embedding)\."
     r"(lora_embedding_[AB]|base_layer\.weight)$",
     "peft: a LoRA's factors of an embedding, and the frozen base_layer copy it saves beside them"),
    ("position_embedding", r"(^|\.)(wpe|position_embeddings|embed_positions|position_embedding)\.weight$",
     "GPT-2 (wpe), BERT, OPT, CLIP (position_embedding): learned absolute positions"),
    ("token_type_embedding", r"(^|\.)token_type_embeddings\.weight$", "BERT segment embeddings"),
    ("lm_head", r"(^|\.)(lm_head|embed_out|output|shared_head\.head|proj_out)\.(weight|bias)$",
     "lm_head everywhere; GPT-NeoX (embed_out); Meta originals (output); DeepSeek MTP (shared_head.head); "
     "Whisper (proj_out)"),
    ("projector", r"(^|\.)(text_projection|visual_projection)\.", "CLIP, SigLIP: each tower's projection"),
    ("mtp", r"\.(eh_proj)\.", "DeepSeek-V3 multi-token prediction layer"),
    ("pooler", r"(^|\.)pooler\.", "BERT"),
    ("head", r"(^|\.)(classifier|score|qa_outputs|cls)\.", "task heads"),
    ("head", r"(^|\.)logit_(scale|bias)$", "CLIP and SigLIP: the contrastive temperature"),
    ("head", r"^\d+_Dense\.linear\.", "sentence-transformers Dense module (2_Dense/)"),
)

ROLE_ORDER: Final[tuple[str, ...]] = (
    "embedding", "position_embedding", "token_type_embedding", "patch_embedding", "cls_token", "conv_stem",
    "attn.q", "attn.k", "attn.v", "attn.qkv", "attn.kv", "attn.o", "attn.other", "attn.cross",
    "linear_attn.in", "linear_attn.conv", "linear_attn.state", "linear_attn.out",
    "ssm.in", "ssm.conv", "ssm.state", "ssm.out",
    "mlp.gate", "mlp.up", "mlp.gate_up", "mlp.down",
    "moe.router", "moe.expert.gate", "moe.expert.up", "moe.expert.gate_up", "moe.expert.down", "moe.expert",
    "moe.shared.gate", "moe.shared.up", "moe.shared.down", "moe.shared",
    "norm", "lm_head", "mtp", "pooler", "head", "vision", "projector", "audio",
    "unet.down.resnet", "unet.down.attn", "unet.mid.resnet", "unet.mid.attn", "unet.up.resnet", "unet.up.attn",
    "unet.sampler", "dit.block", "diffusion.time", "vae.encoder", "vae.decoder", "vae.quant", "buffer", "other",
)

_PLAIN: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def required_texts(pattern: str) -> tuple[str, ...]:
    r"""Texts one of which every match of ``pattern`` holds, read off simply (``("embed_tokens.",)`` for
    ``(^|\.)embed_tokens\.``; ``("q_proj", "wq", "query")`` for ``\.(q_proj|wq|query)\.``), or ``("",)``
    where none is: the longest run of plain characters and escaped dots outside any group and class,
    less a character a quantifier may drop, or a group of plain alternatives that no quantifier makes
    optional, whichever has the longer shortest text; ``("",)`` for a pattern with an alternation
    outside a group or an inline flag (``(?i)``: case does not matter). Held to the patterns by a test
    on every table row."""
    if pattern.startswith("(?") and not pattern.startswith(("(?:", "(?=", "(?!", "(?<")):
        return ("",)
    found: list[tuple[str, ...]] = []
    run = ""
    depth = 0
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if depth == 0 and pattern[i + 1:i + 2] == ".":
                run += "."
            else:
                found.append((run,))
                run = ""
            i += 2
            continue
        if ch == "[":  # a class: to its closing bracket (a bracket right after [ or [^ is a member)
            found.append((run,))
            run = ""
            j = i + 1 + (pattern[i + 1:i + 2] == "^")
            i = pattern.index("]", j + 1 if pattern[j:j + 1] == "]" else j) + 1
            continue
        if ch == "(":
            found.append((run,))
            run = ""
            if depth == 0:
                group = _plain_group(pattern, i)
                if group is not None:
                    found.append(group[0])
                    i = group[1]
                    continue
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and ch == "|":
            return ("",)
        elif depth == 0 and ch in "?*{":
            found.append((run[:-1],))  # the character before may be absent
            run = ""
            if ch == "{":  # its counts are no text of the name
                i = pattern.index("}", i)
        elif depth == 0 and ch in _PLAIN:
            run += ch
        else:
            found.append((run,))
            run = ""
        i += 1
    found.append((run,))
    return max(found, key=lambda texts: min(map(len, texts)))


def _plain_group(pattern: str, at: int) -> tuple[tuple[str, ...], int] | None:
    """The alternatives of the group that opens at ``at`` and where the pattern goes on after it, when
    the group holds plain texts alone (escaped dots allowed) and no quantifier follows it."""
    close = pattern.find(")", at)
    if close < 0 or pattern[close + 1:close + 2] in ("?", "*", "{", "+"):
        return None
    alternatives = tuple(pattern[at + 1:close].replace("\\.", ".").split("|"))
    if any(not text or not set(text) <= _PLAIN | {"."} for text in alternatives):
        return None
    return alternatives, close + 1


class _Rows:
    """A table's rows, each searched only in names that hold one of its required texts (``required_texts``),
    and compiled the first time one does: a run compiles the few rows its names can match (Qwen3-0.6B's
    names 14 of 108; all 108 took 6.6–7.6 ms a process). ``first`` answers as the plain
    ``next(v for v, p in table if re.search(p, name))`` (``_kind_and_role_plain``; tests/test_roles.py)."""

    def __init__(self, table: Sequence[tuple[str, str, str]]) -> None:
        self.values = [value for value, _, _ in table]
        self.patterns = [pattern for _, pattern, _ in table]
        # one required text as itself (``name.__contains__(text)``), several as a tuple
        self.texts = [texts[0] if len(texts) == 1 else texts for texts in map(required_texts, self.patterns)]
        self.compiled: list[re.Pattern[str] | None] = [None] * len(self.patterns)

    def first(self, name: str, default: str) -> str:
        holds = name.__contains__
        for i, texts in enumerate(self.texts):
            if holds(texts) if type(texts) is str else any(map(holds, texts)):
                rx = self.compiled[i]
                if rx is None:
                    rx = self.compiled[i] = re.compile(self.patterns[i])
                if rx.search(name):
                    return self.values[i]
        return default


_KINDS: Final = _Rows(KIND_TABLE)
_ROLES: Final = _Rows(ROLE_TABLE)
_split = re.compile(r"\.(\d+)(?=\.|$)").split
#: entries each memo keeps at most: real checkpoints have a few hundred name shapes, and a hostile
#: header of a million distinct names must not grow a process-wide table by a million entries
MEMO_LIMIT: Final = 100_000
# a name's shape: the texts between its whole numbers (``("model.layers", ".mlp.w1.weight")``, a
# tuple, so no text in a name can pass for a number) → ``_Shape``
_SHAPES: dict[tuple[str, ...], _Shape] = {}
# ASCII digits → 0xFF, a byte UTF-8 never holds, so a key tells a digit from any character of a
# name (bytes.translate: a tenth of the time of str's)
_MARK: Final = b"\xff"
_DIGITS: Final = bytes.maketrans(b"0123456789", _MARK * 10)
# the name's UTF-8 with its ASCII digits marked → _memo's
_FAST: dict[bytes, _Memo] = {}
_tuple = tuple.__new__  # a NamedTuple built without its Python-level __new__: a third of the time
_LAYER = re.compile(r"^(?P<stack>(?:.*?\.)?(?:layers|layer|h|blocks|block|blk))\.(?P<index>\d+)(?:\.|$)")
_EXPERT = re.compile(r"\.experts\.(\d+)\.")


class Placement(NamedTuple):
    """Where a tensor sits: its kind, role, layer stack and index, and expert index."""

    kind: Kind
    role: Role
    stack: str | None
    layer: int | None
    expert: int | None


def classify(name: str) -> Placement:
    """Kind, role and position of one tensor name. Never raises. (For many names, classify_all.)"""
    return classify_all([name])[0]


def classify_plain(name: str) -> Placement:
    """The specification of ``classify_all``, one name at a time and nothing memoised: the kind and
    role are the first table rows whose patterns the name holds, the layer stack and index are what
    ``_LAYER`` matches at its start, the expert what ``_EXPERT`` finds. ``classify_all`` is its fast
    twin, held equal to it on every bundled snapshot, the fuzz corpus and generated names
    (tests/test_roles.py)."""
    kind, role = _kind_and_role_plain(name)
    m = _LAYER.match(name)
    e = _EXPERT.search(name)
    return Placement(kind, role, m.group("stack") if m else None, int(m.group("index")) if m else None,
                     int(e.group(1)) if e else None)


def classify_all(names: Sequence[str]) -> list[Placement]:
    """Kind, role and position of each name, in order. Never raises.

    Memoised without a regex per name, in one loop (no call a name). ``_FAST`` is keyed on the
    name's UTF-8 with every ASCII digit marked 0xFF (two C calls). Under one key, names differ only
    in digits, each digit in the same place: those of whole dot-separated numbers (the layer, the
    expert) and those inside a part (``w1``, ``fc2``), which change the role. So each key holds
    where such parts sit (as slices of the name: the key of an ASCII name has one byte a
    character) and, per their text, the answer and the slices of the layer and expert numbers.
    Names that are not ASCII, and what that cannot describe (a numbered stack), take the regex
    path, memoised on the shape (``_SHAPES``)."""
    out: list[Placement] = []
    append = out.append
    memo_of = _FAST.get
    number = _NUMBERS.get
    for name in names:
        key = name.encode("utf-8", "surrogatepass").translate(_DIGITS)
        memo = memo_of(key)
        if memo is None:
            memo = _memo(key, ascii_name=len(key) == len(name))
            if len(_FAST) < MEMO_LIMIT:
                _FAST[key] = memo
        literal, answers, _ = memo
        sub = literal(name) if literal is not None else None
        fast = answers.get(sub)
        if fast is None:
            fast = _fresh_entry(name, key, sub, memo)
        if type(fast) is tuple:
            kind, role, stack, layer_at, expert_at = fast
            # inline: the call to _number is for numbers not seen yet (and 0)
            layer = None if layer_at is None else number(name[layer_at]) or _number(name[layer_at])
            expert = None if expert_at is None else number(name[expert_at]) or _number(name[expert_at])
            append(_tuple(Placement, (kind, role, stack, layer, expert)))
        elif fast is False:
            append(_by_regex(name))
        else:  # a Placement: no numbers to read, one shared record
            append(fast)  # type: ignore[arg-type]  # (mypy cannot narrow by `type(...) is`)
    return out


def _shape_of(name: str) -> tuple[list[str], _Shape]:
    """The name cut at its whole numbers (texts and numbers alternating) and ``_by_shape``'s
    facts of its shape, memoised in ``_SHAPES``."""
    parts = _split(name)
    shape = tuple(parts[::2])
    known = _SHAPES.get(shape)
    if known is None:
        known = _by_shape(shape)
        if len(_SHAPES) < MEMO_LIMIT:
            _SHAPES[shape] = known
    return parts, known


def _by_regex(name: str) -> Placement:
    parts, (kind, role, layer_at, expert_at, stack) = _shape_of(name)
    if layer_at is None and expert_at is None:
        return _tuple(Placement, (kind, role, stack, None, None))
    numbers = parts[1::2]
    if stack is _NUMBERED:
        stack = _LAYER.match(name).group("stack")  # type: ignore[union-attr]
    return _tuple(Placement, (
        kind, role, stack,
        None if layer_at is None else int(numbers[layer_at]),
        None if expert_at is None else int(numbers[expert_at]),
    ))


def _number(text: str) -> int:
    """``int(text)``, one object per distinct number: a million expert tensors share a few
    thousand layer and expert numbers (28 bytes each saved per tensor)."""
    value = _NUMBERS.get(text)
    if value is None:
        value = int(text)
        if len(_NUMBERS) < MEMO_LIMIT:
            _NUMBERS[text] = value
    return value


_NUMBERS: dict[str, int] = {}
_Shape = tuple[Kind, Role, "int | None", "int | None", "str | None"]
_Answer = Placement | tuple[Kind, Role, "str | None", "slice[int, int, None] | None",
                            "slice[int, int, None] | None"] | Literal[False]


#: a memo of one digit key: the getter of the parts whose answer depends on their digits, the answers by what it
#: gets, and each such part's slice with whether its digits all stand in runs of two or more (``w123``)
_Memo = tuple[Callable[[str], object] | None, dict[object, "_Answer"], tuple[tuple["slice[int, int, None]", bool], ...]]


def _memo(key: bytes, *, ascii_name: bool) -> _Memo:
    """For a digit key: a getter of the name's parts whose digits are not a whole number (any
    part with a digit and another character, and a first part of digits, which the regex does
    not count as a number), as slices of the name, an empty table of answers keyed on what
    it gets, and those parts. A name that is not ASCII has no fixed character places:
    every name of its key takes the regex path (an answer of False under the key None)."""
    if not ascii_name:
        return None, {None: False}, ()
    spans = _spans(key)
    literal = tuple((spans[i], all(len(run) >= 2 for run in _MARKED.findall(part)))
                    for i, part in enumerate(key.split(b".")) if _MARK in part and (i == 0 or part.strip(_MARK)))
    return _getter([span for span, _ in literal]), {}, literal


def _getter(spans: list[slice[int, int, None]]) -> Callable[[str], object] | None:
    return operator.itemgetter(*spans) if spans else None


#: a part's runs of digits, in its digit key
_MARKED: Final = re.compile(rb"\xff+")


def _fresh_entry(name: str, key: bytes, sub: object, memo: _Memo) -> _Answer:
    """The answer of a name whose parts (``sub``) were not seen under its key, kept under them. Where the key has
    parts whose digits all stand in runs of two or more (``mlp.w1234``), and they come after the layer number
    (the layer stack's text is the name before it), the key's memo is made again without them: the kind and role
    tables read every such run alike (their literal digits each stand between non-digits: ``w1.``, ``fc2.``,
    ``conv[12].``; tests/test_hostile_round6.py holds it over every bundled name), so every name of the key that
    differs only there shares the answer. A header whose every name holds its own such run (``layers.N.mlp.wN``)
    cost a table search a name: the whole ``inspect --json`` of 110,000 such names took 4.24 s of CPU, a regular
    model's as many 0.33 s."""
    _, answers, literal = memo
    fast = _fast_entry(name, key)
    if len(answers) < MEMO_LIMIT:
        answers[sub] = fast
    layer = cast("slice[int, int, None] | None", fast[3]) if type(fast) is tuple else None
    kept = [span for span, runs in literal if not (runs and (layer is None or span.start > layer.start))]
    if len(kept) < len(literal) and key in _FAST:
        getter = _getter(kept)
        _FAST[key] = (getter, {getter(name) if getter is not None else None: fast},
                      tuple((span, False) for span in kept))
    return fast


def _spans(key: bytes) -> list[slice[int, int, None]]:
    """The slice of each dot-separated part of an ASCII name, from its digit key."""
    spans: list[slice[int, int, None]] = []
    start = 0
    for part in key.split(b"."):
        spans.append(slice(start, start + len(part)))
        start += len(part) + 1
    return spans


def _fast_entry(name: str, key: bytes) -> _Answer:
    """For every ASCII name of ``name``'s key and literal parts: the shared Placement when the
    names hold no layer or expert number, else (kind, role, stack, slice of the layer number,
    slice of the expert number); False when a name's parts cannot say where its numbers are."""
    parts, (kind, role, layer_at, expert_at, stack) = _shape_of(name)
    if stack is _NUMBERED:
        return False
    # the dot-separated part each whole number is: the dots before it (its own included)
    numbered = list(accumulate(text.count(".") + 1 for text in parts[:-1:2]))
    if layer_at is None and expert_at is None:
        return Placement(kind, role, stack, None, None)
    spans = _spans(key)
    return (kind, role, stack, None if layer_at is None else spans[numbered[layer_at]],
            None if expert_at is None else spans[numbered[expert_at]])


def role_group(role: str) -> str:
    """The coarse group a role belongs to (``attn.q`` → ``attention``) for summaries."""
    head = role.split(".", 1)[0]
    return {"attn": "attention", "mlp": "mlp", "moe": "moe", "ssm": "ssm", "linear_attn": "linear attention"}.get(
        head, role)


def _by_shape(shape: tuple[str, ...]) -> _Shape:
    """Everything about a name that does not depend on its numbers, from its shape (the texts
    between its whole numbers): kind, role, which of its numbers is the layer and which the
    expert, and the layer stack (``_NUMBERED`` when the stack's own name holds a number)."""
    probe = ".0".join(shape)  # the name with each whole number 0
    # where each number's 0 sits in the probe
    at = list(accumulate((len(text) + 2 for text in shape[:-1]), initial=-1))[1:]
    kind, role = _kind_and_role(probe)
    m = _LAYER.match(probe)
    layer_at = expert_at = None
    stack: str | None = None
    if m:
        end = m.end("stack")
        layer_at = bisect_left(at, end)
        stack = _NUMBERED if layer_at else m.group("stack")
    e = _EXPERT.search(probe)
    if e:
        expert_at = bisect_left(at, e.start(1))
    return kind, role, layer_at, expert_at, stack


#: a layer stack whose own name holds a number (``model.blocks.0.layers``): read from each name
_NUMBERED: Final = "<numbered stack>"


def _kind_and_role(name: str) -> tuple[Kind, Role]:
    kind = cast(Kind, _KINDS.first(name, "parameter"))
    if kind == "buffer":
        return kind, "buffer"
    # quant side data keeps its module's role: `q_proj.scales` is attention q
    return kind, cast(Role, _ROLES.first(name, "other"))


def _kind_and_role_plain(name: str) -> tuple[Kind, Role]:
    """``_kind_and_role`` as the tables say it: the first row whose pattern the name holds."""
    kind: Kind = next((k for k, p, _ in KIND_TABLE if re.search(p, name)), "parameter")
    if kind == "buffer":
        return kind, "buffer"
    return kind, next((r for r, p, _ in ROLE_TABLE if re.search(p, name)), "other")
