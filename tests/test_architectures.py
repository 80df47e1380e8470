"""The architecture model against the families transformers ships, each written by transformers itself.

Every tiny model here is built with ``from_config`` and written with ``save_pretrained``
(tests/families.py). The counts are transformers' own (``num_parameters()`` of the model and of its
sub-modules); KV cache, recurrent state and FLOPs are formulas written out below from each config, by
hand: never the inspector's own output.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from families import FAMILIES, write

import inspector

pytest.importorskip("torch", reason="the torch extra: .ci/run installs it")

BF16 = 2  # bytes: every estimate below is asked for a bf16 KV cache
CTX = 10


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("families")
    return {name: (root / name, write(name, root / name)) for name in FAMILIES}


def estimate(written: dict[str, tuple[Path, Any]], name: str) -> Any:
    return inspector.estimate(str(written[name][0]), context=CTX, kv_dtype="bf16").estimate


def numel(*tensors: Any) -> int:
    return sum(t.numel() for t in tensors)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_counts_and_roles_are_transformers_own(written: dict[str, tuple[Path, Any]], name: str) -> None:
    folder, model = written[name]
    shown = inspector.inspect(str(folder))
    s = shown.report.summary
    assert s.parameters == model.num_parameters(), name
    saved = model.state_dict()
    buffers = {n for n, _ in model.named_buffers() if n in saved}
    assert s.buffer_elements == sum(saved[n].numel() for n in buffers), name
    assert not [r for r in s.by_role if r.role == "other"], f"{name}: every tensor has a role"


def test_decoders_dense_gqa_and_windows(written: dict[str, tuple[Path, Any]]) -> None:
    """Llama: 3 layers × 2 KV heads × head_dim 4; Mistral: every layer slides over 4 tokens; Gemma 2:
    even layers slide; Gemma 3: the layer_types transformers wrote (five sliding, then one full)."""
    e = estimate(written, "llama")
    assert e.kv.per_token.value == 2 * 3 * 2 * 4 * BF16
    model = written["llama"][1]
    vocab_by_hidden = 40 * 16
    assert e.flops.weights_per_token.value == 2 * (model.num_parameters() - vocab_by_hidden)  # untied head
    assert e.flops.attention_per_token.value == 2 * 3 * 4 * (4 + 4) * CTX

    e = estimate(written, "mistral")
    assert e.kv.per_token.value == 2 * 3 * 2 * 4 * BF16
    assert e.kv.bytes.value == 2 * 3 * 2 * 4 * BF16 * min(CTX, 4)

    e = estimate(written, "gemma2")  # layers 0, 2 slide (window 4); 1, 3 attend in full
    per_layer = 2 * 2 * 8 * BF16
    assert e.kv.per_token.value == 4 * per_layer
    assert e.kv.bytes.value == per_layer * (4 + CTX + 4 + CTX)
    assert e.flops.attention_per_token.value == 2 * 4 * (8 + 8) * (4 + CTX + 4 + CTX)

    e = estimate(written, "gemma3")
    types = written["gemma3"][1].config.layer_types
    cells = sum(min(CTX, 4) if t == "sliding_attention" else CTX for t in types)
    assert types.count("full_attention") == 1 and e.kv.bytes.value == per_layer * cells


def test_a_vlm_decodes_with_its_language_model_only(written: dict[str, tuple[Path, Any]]) -> None:
    """Gemma 3 VLM: the vision tower and projector run once per image, not per generated token."""
    model = written["gemma3-vlm"][1]
    e = estimate(written, "gemma3-vlm")
    text = model.config.text_config
    assert text.layer_types == ["sliding_attention", "sliding_attention"]
    assert e.kv.per_token.value == 2 * text.num_hidden_layers * text.num_key_value_heads * text.head_dim * BF16
    # the language model's weights (its tied head is its embedding: counted once, the lookup not at all)
    assert e.flops.weights_per_token.value == 2 * model.model.language_model.num_parameters()
    projector = sum(p.numel() for p in model.model.multi_modal_projector.parameters())
    towers = model.model.vision_tower.num_parameters() + projector
    assert e.flops.per_input_token.value == 2 * towers
    kinds = {s.kind: s.runs for s in e.architecture.stacks}
    assert kinds == {"decoder": "per_token", "vision": "per_input", "projector": "per_input"}


def test_moe_active_parameters(written: dict[str, tuple[Path, Any]]) -> None:
    """Qwen3-MoE: 2 layers of 4 experts (gate, up, down: 3 × 16 × 8 each), 2 a token; gpt-oss: fused
    experts with biases; DeepSeek-V3: the first layer dense, MLA's latent cached."""
    e = estimate(written, "qwen3-moe")
    assert e.moe.active.value == written["qwen3-moe"][1].num_parameters() - 2 * (4 - 2) * 3 * 16 * 8
    assert e.kv.per_token.value == 2 * 2 * 2 * 4 * BF16

    e = estimate(written, "gpt-oss")  # per layer: gate_up [4, 16, 16] + bias [4, 16], down [4, 8, 16] + bias [4, 16]
    experts = 4 * (16 * 16 + 16 + 8 * 16 + 16)
    assert e.moe.active.value == written["gpt-oss"][1].num_parameters() - 4 * experts * (4 - 2) // 4
    assert e.kv.bytes.value == 2 * 2 * 4 * BF16 * (4 + CTX + 4 + CTX)  # sliding layers 0 and 2, window 4

    e = estimate(written, "deepseek-v3")
    assert e.kv.per_token.value == (8 + 4) * 3 * BF16  # (kv_lora_rank + qk_rope_head_dim) × layers
    experts = 4 * 3 * 16 * 8
    assert e.moe.active.value == written["deepseek-v3"][1].num_parameters() - 2 * experts * (4 - 2) // 4
    assert e.flops.attention_per_token.value == 3 * 2 * 4 * ((4 + 4) + 4) * CTX  # d_qk = nope + rope, d_v 4


def test_hybrids_cache_only_their_attention_layers(written: dict[str, tuple[Path, Any]]) -> None:
    """Qwen3-Next (one full-attention layer in four, gated delta nets between), Jamba (attention at
    layers 1 and 3, Mamba elsewhere), Falcon-H1 (attention and Mamba-2 side by side in every layer),
    Mamba (no attention). Recurrent state per sequence, in the model's float32, as vLLM's
    MambaStateShapeCalculator sizes it: conv (kernel − 1) × channels, plus the scan's state."""
    e = estimate(written, "qwen3-next")
    assert written["qwen3-next"][1].config.layer_types.count("full_attention") == 1
    assert e.kv.per_token.value == 2 * 1 * 2 * 4 * BF16
    assert e.flops.attention_per_token.value == 2 * 1 * 4 * (4 + 4) * CTX
    conv_dim = 2 * (2 * 4) + 4 * 4  # key heads × key dim (q and k) + value heads × value dim
    assert e.kv.state_per_sequence.value == 3 * (conv_dim * (4 - 1) + 4 * 4 * 4) * 4
    active = written["qwen3-next"][1].num_parameters() - 4 * (4 - 2) * 3 * 16 * 8
    assert e.flops.weights_per_token.value == 2 * (active - 40 * 16)
    assert e.flops.prefill.value == e.flops.weights_per_token.value * CTX + 2 * 4 * 8 * CTX * (CTX + 1) // 2

    e = estimate(written, "jamba")
    assert e.kv.per_token.value == 2 * 2 * 2 * 4 * BF16
    assert e.kv.state_per_sequence.value == 2 * (32 * (4 - 1) + 32 * 4) * 4  # d_inner 32, d_state 4
    assert e.flops.attention_per_token.value == 2 * 2 * 4 * (4 + 4) * CTX

    e = estimate(written, "falcon-h1")
    assert e.kv.per_token.value == 2 * 2 * 2 * 4 * BF16
    conv = 32 + 2 * 1 * 4  # d_ssm + 2 × groups × d_state
    assert e.kv.state_per_sequence.value == 2 * (conv * (4 - 1) + 4 * 8 * 4) * 4

    e = estimate(written, "mamba")
    assert e.kv.per_token.value == 0 and e.kv.none is not None
    assert e.kv.state_per_sequence.value == 2 * (32 * (4 - 1) + 32 * 4) * 4
    assert e.flops.attention_per_token.value == 0


def test_encoder_decoders_cache_with_the_decoder(written: dict[str, tuple[Path, Any]]) -> None:
    """T5 (3 encoder and 2 decoder layers, d_kv 8), BART and Whisper (2 decoder layers of 16 wide): the KV
    cache is the decoder's; cross-attention K/V is per input token; the encoder runs once per input."""
    model = written["t5"][1]
    e = estimate(written, "t5")
    assert e.kv.per_token.value == 2 * 2 * 4 * 8 * BF16  # decoder layers × heads × d_kv, not num_layers (3)
    assert e.kv.cross_per_input_token.value == 2 * 2 * 4 * 8 * BF16
    assert e.flops.weights_per_token.value == 2 * model.decoder.num_parameters()  # tied head = shared
    assert e.flops.per_input_token.value == 2 * (model.encoder.num_parameters() - numel(model.shared.weight))

    for name in ("bart", "whisper"):
        model = written[name][1]
        e = estimate(written, name)
        decoder = model.model.decoder
        assert e.kv.per_token.value == 2 * 2 * 16 * BF16, name
        assert e.kv.cross_per_input_token.value == 2 * 2 * 16 * BF16, name
        positions = numel(decoder.embed_positions.weight)
        assert e.flops.weights_per_token.value == 2 * (decoder.num_parameters() - positions), name
        assert {s.kind for s in e.architecture.stacks} == {"decoder", "audio" if name == "whisper" else "encoder"}


@pytest.mark.parametrize("name", ["vit", "bert", "clip"])
def test_encoders_keep_no_kv_cache(written: dict[str, tuple[Path, Any]], name: str) -> None:
    e = estimate(written, name)
    assert e.kv.per_token.value is None and e.kv.none is not None
    assert e.flops.weights_per_token.value is None
    assert not e.architecture.decodes
    if name == "clip":
        assert {s.kind for s in e.architecture.stacks} == {"encoder", "vision", "projector"}


def test_the_estimate_reads_fields_not_names(written: dict[str, tuple[Path, Any]]) -> None:
    """Every figure of the JSON document is one of the typed parts', in the same order."""
    e = estimate(written, "t5")
    doc = inspector.estimate(str(written["t5"][0]), context=CTX, kv_dtype="bf16").to_dict()
    assert [f["name"] for f in doc["figures"]] == [f.name for f in e.figures]
    assert doc["architecture"]["stacks"][0]["layer_kinds"] == [{"kind": "full+cross", "first": 0, "last": 1,
                                                                "count": 2}]
    assert math.isclose(sum(s["parameters"] for s in doc["architecture"]["stacks"]) + doc["architecture"]["embedding"]
                        + doc["architecture"]["lookups"] + doc["architecture"]["head"] + doc["architecture"]["other"],
                        written["t5"][1].num_parameters())


def test_a_text_model_to_its_vlm_names_the_vision_tower_with_no_residual(tmp_path: Path) -> None:
    """Issue 41: a text model → its VLM left 71 % of the gap as "residual". The vision tower and the
    projector are causes of their own, added whole; their sums are the VLM's own tower and projector
    parameters as transformers counts them (``vision_tower``, ``multi_modal_projector``), and nothing is
    left unexplained."""
    torch = pytest.importorskip("torch")
    import transformers

    write("gemma3-vlm", tmp_path / "vlm")
    text_config = FAMILIES["gemma3-vlm"][2]["text_config"]
    torch.manual_seed(0)
    transformers.Gemma3ForCausalLM(transformers.AutoConfig.for_model("gemma3_text", **text_config)) \
        .save_pretrained(tmp_path / "text")
    vlm = transformers.Gemma3ForConditionalGeneration.from_pretrained(tmp_path / "vlm")
    tower = sum(p.numel() for p in vlm.model.vision_tower.parameters())
    projector = sum(p.numel() for p in vlm.model.multi_modal_projector.parameters())
    doc = inspector.diff(str(tmp_path / "text"), str(tmp_path / "vlm")).to_dict()
    causes = {c["cause"]: c["delta"] for c in doc["causes"]}
    assert causes["vision tower"] == tower and causes["multimodal projector"] == projector
    assert doc["residual"] == 0
    assert sum(causes.values()) + doc["residual"] == doc["delta"]["parameters"]


def test_a_vlms_two_layer_stacks_are_named_in_the_table(written, cli) -> None:
    """Issue 41: a VLM's layer-block table had two rows both named "layers 0–1 ×2". Stacks whose names end
    alike are named whole; each row's parameters are that stack's in transformers' own modules."""
    folder, model = written["gemma3-vlm"]
    out = cli(str(folder)).out
    table = out[out.index("Layer blocks"):]
    rows = [line for line in table.splitlines() if "×" in line]
    language = next(line for line in rows if "language_model" in line)
    vision = next(line for line in rows if "vision_tower" in line)
    assert f"{numel(*model.model.language_model.layers.parameters()):,}" in language
    assert f"{numel(*model.model.vision_tower.encoder.layers.parameters()):,}" in vision
