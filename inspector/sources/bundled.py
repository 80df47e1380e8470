"""Short names for well-known models, each served offline by a bundled header snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

SNAPSHOT_ROOT: Final = Path(__file__).parent.parent / "snapshots"


@dataclass(frozen=True, slots=True)
class Alias:
    name: str
    repo_id: str
    description: str

    @property
    def folder(self) -> str:
        return self.repo_id.replace("/", "__")


_TABLE: Final = (
    Alias("llama2-7b", "meta-llama/Llama-2-7b-hf", "Llama 2 7B, F16, with rotary inv_freq buffers"),
    Alias("llama3-8b", "meta-llama/Meta-Llama-3-8B", "Llama 3 8B, BF16, grouped-query attention"),
    Alias("llama3-70b", "meta-llama/Meta-Llama-3-70B", "Llama 3 70B, BF16, 30 shards"),
    Alias("mistral-7b", "mistralai/Mistral-7B-Instruct-v0.2", "Mistral 7B Instruct v0.2, BF16"),
    Alias("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", "Mixtral 8x7B, 8 experts, top-2"),
    Alias("qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", "Qwen2.5 7B Instruct, q/k/v biases"),
    Alias("gemma-2b", "google/gemma-2b", "Gemma 2B, tied embeddings, multi-query attention"),
    Alias("phi-2", "microsoft/phi-2", "Phi-2, biases, partial rotary"),
    Alias("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", "Phi-3 mini 4k, fused qkv_proj and gate_up_proj"),
    Alias("tinyllama", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "TinyLlama 1.1B chat, Llama layout, 4 KV heads"),
    Alias("qwen3-0.6b", "Qwen/Qwen3-0.6B", "Qwen3 0.6B, q/k norms, head_dim 128, tied embeddings"),
    Alias("gpt2", "openai-community/gpt2", "GPT-2 124M, F32, attn.bias mask buffers"),
    Alias("llama2-13b-gptq", "TheBloke/Llama-2-13B-chat-GPTQ", "Llama 2 13B chat, GPTQ 4-bit, group 128"),
    Alias("deepseek-v3", "deepseek-ai/DeepSeek-V3", "DeepSeek-V3, MLA + 256-expert MoE, FP8, 163 shards"),
)

ALIASES: Final[dict[str, Alias]] = {a.name: a for a in _TABLE}
BY_REPO: Final[dict[str, Alias]] = {a.repo_id.lower(): a for a in _TABLE}


def bundled_path(alias: Alias) -> Path:
    return SNAPSHOT_ROOT / alias.folder


def all_aliases() -> tuple[Alias, ...]:
    return _TABLE
