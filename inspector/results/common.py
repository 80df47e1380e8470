"""The parts several documents share: the model, its config, its totals, a suggestion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Final, Literal, TypedDict

from inspector import repos
from inspector.analysis.facts.config import Source
from inspector.model import Origin
from inspector.results.schema import Choices

if TYPE_CHECKING:
    from inspector.analysis.facts.config import ModelConfig
    from inspector.analysis.facts.stats import Summary
    from inspector.analysis.knobs import Knob
    from inspector.model import Checkpoint

#: the documents' version: a key renamed or removed raises it
SchemaVersion = Literal[2]


class ModelDoc(TypedDict):
    """A checkpoint as every document names it (``model_json``)."""

    label: str
    repo_id: str | None
    revision: str | None
    path: str | None
    origin: Origin
    format: str | None
    kind: Annotated[str | None, Choices(lambda: [*repos.names(), None])]


class Named(TypedDict):
    """Any document, or part of one, that names its model (a page's title reads it)."""

    model: ModelDoc


class ConfigDoc(TypedDict):
    """The config's figures, flat (``config_json``)."""

    model_type: str | None
    architectures: list[str]
    hidden_size: int | None
    intermediate_size: int | None
    num_layers: int | None
    num_heads: int | None
    num_kv_heads: int | None
    head_dim: int | None
    vocab_size: int | None
    max_position: int | None
    tie_word_embeddings: bool | None
    dtype: str | None
    num_experts: int | None
    experts_per_token: int | None
    moe_intermediate_size: int | None
    shared_experts: int | None
    first_k_dense: int | None
    sliding_window: int | None
    layer_types: list[str]
    q_lora_rank: int | None
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    qk_nope_head_dim: int | None
    v_head_dim: int | None
    mtp_layers: int | None
    kv_heads_per_layer: list[int]
    quantization: dict[str, object] | None
    source: Source


class TotalsDoc(TypedDict):
    tensors: int
    parameters: int
    stored_elements: int
    buffer_elements: int
    quant_elements: int
    hub_total: int
    bytes: int
    shards: int


class SuggestionDoc(TypedDict):
    """A change that makes it fit (analysis/knobs.py); ``budget_bytes`` 0: another GPU count."""

    change: str
    total: int
    budget_bytes: int


#: 2: every document names its model in one shape (``model_json``)
SCHEMA_VERSION: Final = 2


def model_json(c: Checkpoint) -> ModelDoc:
    """A checkpoint as every JSON document names it: its label, Hub repo id and revision where known,
    its local path (None for the Hub and for a snapshot bundled with the package), where it came
    from (``origin``: file, folder, hf-cache, snapshot, bundled, hub), the formats of its weight
    files (``safetensors``, ``gguf``, ``torch``; joined with ``+`` when mixed, None when none) and what
    it is (``kind``: one ``model``, or a repo kind's name from ``inspector.repos``: ``pipeline``, ``modules``)."""
    formats = sorted({h.format for h in c.headers})
    p = c.provenance
    return {"label": c.label, "repo_id": p.repo_id, "revision": p.revision,
            "path": None if p.origin in ("hub", "bundled") else p.location, "origin": p.origin,
            "format": "+".join(formats) if formats else None, "kind": c.kind}


def config_json(c: ModelConfig) -> ConfigDoc:
    """The config's figures as every document gives them: flat, by their names (``results.common.ConfigDoc``)."""
    moe, mla, layers, storage = c.moe, c.mla, c.layers, c.storage
    return {
        "model_type": c.model_type, "architectures": list(c.architectures), "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size, "num_layers": c.num_layers, "num_heads": c.num_heads,
        "num_kv_heads": c.num_kv_heads, "head_dim": c.head_dim, "vocab_size": c.vocab_size,
        "max_position": c.max_position, "tie_word_embeddings": storage.tie_word_embeddings, "dtype": storage.dtype,
        "num_experts": moe.num_experts, "experts_per_token": moe.experts_per_token,
        "moe_intermediate_size": moe.moe_intermediate_size, "shared_experts": moe.shared_experts,
        "first_k_dense": moe.first_k_dense, "sliding_window": layers.sliding_window,
        "layer_types": list(layers.layer_types), "q_lora_rank": mla.q_lora_rank, "kv_lora_rank": mla.kv_lora_rank,
        "qk_rope_head_dim": mla.qk_rope_head_dim, "qk_nope_head_dim": mla.qk_nope_head_dim,
        "v_head_dim": mla.v_head_dim, "mtp_layers": layers.mtp_layers,
        "kv_heads_per_layer": list(layers.kv_heads_per_layer),
        "quantization": None if storage.quantization is None else dict(storage.quantization),
        "source": c.reading.source,
    }


def totals_json(s: Summary) -> TotalsDoc:
    return {"tensors": s.tensors, "parameters": s.parameters, "stored_elements": s.stored_elements,
            "buffer_elements": s.buffer_elements,
            "quant_elements": s.quant_elements, "hub_total": s.hub_total, "bytes": s.bytes,
            "shards": len(s.shards)}


def suggestions_json(knobs: Sequence[Knob]) -> list[SuggestionDoc]:
    """Each change that makes it fit, with what it then needs (analysis/knobs.py)."""
    return [{"change": k.change, "total": k.total, "budget_bytes": k.budget} for k in knobs]
