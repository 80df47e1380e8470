"""Tiny models of each architecture family, written by transformers itself (``from_config`` +
``save_pretrained``): the layouts the architecture tests read. Each entry is the model class's name in
transformers and the config it is built from, small enough to build in milliseconds on the CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: name → (transformers model class, model_type, config keys)
FAMILIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama": ("LlamaForCausalLM", "llama", dict(hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                                                num_attention_heads=4, num_key_value_heads=2, vocab_size=40)),
    "mistral": ("MistralForCausalLM", "mistral", dict(hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=40,
                                                      sliding_window=4)),
    "gemma2": ("Gemma2ForCausalLM", "gemma2", dict(hidden_size=16, intermediate_size=32, num_hidden_layers=4,
                                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                                   vocab_size=40, sliding_window=4)),
    "gemma3": ("Gemma3ForCausalLM", "gemma3_text", dict(hidden_size=16, intermediate_size=32, num_hidden_layers=6,
                                                        num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                                        vocab_size=40, sliding_window=4)),
    "gemma3-vlm": ("Gemma3ForConditionalGeneration", "gemma3", dict(
        text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=8, vocab_size=300, sliding_window=4),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                           image_size=28, patch_size=14),
        mm_tokens_per_image=4, image_token_index=299, boi_token_index=297, eoi_token_index=298)),
    "qwen3-moe": ("Qwen3MoeForCausalLM", "qwen3_moe", dict(hidden_size=16, intermediate_size=32,
                                                           num_hidden_layers=2, num_attention_heads=4,
                                                           num_key_value_heads=2, head_dim=4, vocab_size=40,
                                                           moe_intermediate_size=8, num_experts=4,
                                                           num_experts_per_tok=2)),
    "qwen3-next": ("Qwen3NextForCausalLM", "qwen3_next", dict(
        hidden_size=16, num_hidden_layers=4, vocab_size=40, num_attention_heads=4, num_key_value_heads=2,
        head_dim=4, intermediate_size=32, moe_intermediate_size=8, shared_expert_intermediate_size=8,
        num_experts=4, num_experts_per_tok=2, linear_num_value_heads=4, linear_num_key_heads=2,
        linear_key_head_dim=4, linear_value_head_dim=4, linear_conv_kernel_dim=4, full_attention_interval=4)),
    "deepseek-v3": ("DeepseekV3ForCausalLM", "deepseek_v3", dict(
        hidden_size=16, num_hidden_layers=3, vocab_size=40, num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=32, moe_intermediate_size=8, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
        first_k_dense_replace=1, q_lora_rank=8, kv_lora_rank=8, qk_rope_head_dim=4, qk_nope_head_dim=4,
        v_head_dim=4, n_group=1, topk_group=1)),
    "gpt-oss": ("GptOssForCausalLM", "gpt_oss", dict(hidden_size=16, num_hidden_layers=4, vocab_size=40,
                                                     num_attention_heads=4, num_key_value_heads=2, head_dim=4,
                                                     intermediate_size=8, num_local_experts=4,
                                                     num_experts_per_tok=2, sliding_window=4)),
    "mamba": ("MambaForCausalLM", "mamba", dict(hidden_size=16, num_hidden_layers=2, vocab_size=40, state_size=4,
                                                expand=2, conv_kernel=4)),
    "jamba": ("JambaForCausalLM", "jamba", dict(hidden_size=16, num_hidden_layers=4, vocab_size=40,
                                                num_attention_heads=4, num_key_value_heads=2, intermediate_size=32,
                                                num_experts=4, num_experts_per_tok=2, attn_layer_period=2,
                                                attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1,
                                                mamba_d_state=4, mamba_expand=2, mamba_dt_rank=4, mamba_d_conv=4)),
    "falcon-h1": ("FalconH1ForCausalLM", "falcon_h1", dict(hidden_size=16, num_hidden_layers=2, vocab_size=40,
                                                           num_attention_heads=4, num_key_value_heads=2,
                                                           intermediate_size=32, mamba_d_state=4, mamba_n_heads=4,
                                                           mamba_d_head=8, mamba_n_groups=1, mamba_d_ssm=32,
                                                           mamba_d_conv=4, head_dim=4)),
    "t5": ("T5ForConditionalGeneration", "t5", dict(d_model=16, d_kv=8, d_ff=32, num_layers=3, num_decoder_layers=2,
                                                    num_heads=4, vocab_size=40, decoder_start_token_id=0,
                                                    pad_token_id=0, eos_token_id=1)),
    "bart": ("BartForConditionalGeneration", "bart", dict(d_model=16, encoder_layers=3, decoder_layers=2,
                                                          encoder_attention_heads=4, decoder_attention_heads=4,
                                                          encoder_ffn_dim=32, decoder_ffn_dim=32, vocab_size=40,
                                                          max_position_embeddings=20, pad_token_id=1,
                                                          bos_token_id=0, eos_token_id=2,
                                                          decoder_start_token_id=2)),
    "whisper": ("WhisperForConditionalGeneration", "whisper", dict(
        d_model=16, encoder_layers=4, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=32, decoder_ffn_dim=32, vocab_size=60, num_mel_bins=8, max_source_positions=10,
        max_target_positions=12, pad_token_id=50, bos_token_id=50, eos_token_id=50, decoder_start_token_id=50)),
    "vit": ("ViTForImageClassification", "vit", dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                                     intermediate_size=32, image_size=8, patch_size=4,
                                                     num_labels=3)),
    "bert": ("BertForMaskedLM", "bert", dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=32, vocab_size=40, max_position_embeddings=20)),
    "clip": ("CLIPModel", "clip", dict(
        text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                         vocab_size=40, max_position_embeddings=20, projection_dim=8),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                           image_size=8, patch_size=4, projection_dim=8),
        projection_dim=8)),
}


def write(name: str, folder: Path) -> Any:
    """Build the family's tiny model with transformers (random weights, seed 0) and save it to
    ``folder`` with ``save_pretrained``; the model is returned for its own counts."""
    import torch
    import transformers

    cls_name, model_type, keys = FAMILIES[name]
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(model_type, **keys)
    model = getattr(transformers, cls_name)(config)
    model.save_pretrained(folder)
    return model
