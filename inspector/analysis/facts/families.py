"""THE model-family table: what the inspector knows of each ``model_type`` (transformers' names).

One row per model type, each fact a column; every family set of the package derives from it
(``LLAMA_LIKE``, ``ENCODER_ONLY_TYPES``, ``CONV1D_TYPES``, ``FORMULA_LLAMA``). The config figures and
defaults of the types read without transformers are ``config.TABLE`` (checked against transformers'
own config classes by tests/test_config_table.py).

Sources: transformers 5.x modeling code of each type (layer layout: q/k/v/o projections and a gated
gate/up/down MLP with RMSNorm, or GPT-2's Conv1D ``c_attn``/``c_fc`` stored [in, out], or BERT's encoder).
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

Layout = Literal["llama", "gpt2", "encoder", "other"]


class Family(NamedTuple):
    layout: Layout
    #: the parameter formula (``analysis/facts/formula.py``) knows every tensor of this type
    formula: bool = False
    #: attention and MLP weights are transformers' Conv1D, stored [in, out]
    conv1d: bool = False


_LLAMA = Family("llama")
_LLAMA_FORMULA = Family("llama", formula=True)
_ENCODER = Family("encoder")

TABLE: Final[dict[str, Family]] = {
    # Llama's layer layout (q/k/v/o, gated gate/up/down MLP, RMSNorm); the diff aligns them together
    "llama": _LLAMA_FORMULA, "mistral": _LLAMA_FORMULA, "mixtral": _LLAMA_FORMULA, "qwen2": _LLAMA_FORMULA,
    "gemma": _LLAMA_FORMULA,
    "qwen2_moe": _LLAMA, "qwen3": _LLAMA, "qwen3_moe": _LLAMA, "gemma2": _LLAMA, "gemma3_text": _LLAMA,
    "phi3": _LLAMA, "deepseek_v2": _LLAMA, "deepseek_v3": _LLAMA, "olmo": _LLAMA, "olmo2": _LLAMA,
    "granite": _LLAMA, "cohere": _LLAMA, "starcoder2": _LLAMA,
    # GPT-2: Conv1D weights
    "gpt2": Family("gpt2", formula=True, conv1d=True),
    # encoders only (BERT, RoBERTa and kin; sentence-transformers checkpoints such as all-MiniLM-L6-v2
    # are "bert"): bidirectional attention, no KV cache
    "bert": Family("encoder", formula=True),
    **{t: _ENCODER for t in ("roberta", "distilbert", "xlm-roberta", "electra", "deberta", "deberta-v2", "albert",
                             "mpnet", "camembert", "nomic_bert", "modernbert", "xlm", "flaubert", "ernie", "nezha",
                             "megatron-bert",
                             # the text and image encoders of diffusion pipelines (CLIP, SigLIP): no decoding
                             "clip_text_model", "clip_vision_model", "siglip_text_model", "siglip_vision_model")},
}

#: model types with Llama's layer layout
LLAMA_LIKE: Final = frozenset(t for t, f in TABLE.items() if f.layout == "llama")
#: model types that are encoders only
ENCODER_ONLY_TYPES: Final = frozenset(t for t, f in TABLE.items() if f.layout == "encoder")
#: model types whose attention and MLP weights are Conv1D, stored [in, out]
CONV1D_TYPES: Final = frozenset(t for t, f in TABLE.items() if f.conv1d)
#: the Llama-like types whose every tensor the formula knows
FORMULA_LLAMA: Final = frozenset(t for t in LLAMA_LIKE if TABLE[t].formula)
#: architecture suffixes that mean an encoder head (transformers class names); classification heads
#: are left out, since decoders have them too (LlamaForSequenceClassification)
ENCODER_ONLY_HEADS: Final = ("ForMaskedLM", "EncoderModel")  # T5EncoderModel: FLUX's and SD3's text encoder
