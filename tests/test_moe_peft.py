"""``train`` on a mixture of experts as the libraries hold it (issue 50): transformers 5 loads the experts fused,
peft 0.21 adapts them through its parameter wrapper (or not at all), bitsandbytes quantises only ``nn.Linear``.

Each test builds the model with transformers (tiny configs of each family, random weights, saved by
``save_pretrained``), asks peft and bitsandbytes what they do, and holds ``inspect train`` to it: peft's
``get_nb_trainable_parameters()`` for the LoRA count, the bytes bitsandbytes' loading holds for QLoRA's weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

import inspector  # noqa: E402


def _configs() -> dict[str, Any]:
    common = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    return {
        "mixtral": transformers.MixtralConfig(**common, intermediate_size=96, num_local_experts=4,
                                              num_experts_per_tok=2),
        "qwen2_moe": transformers.Qwen2MoeConfig(**common, intermediate_size=96, moe_intermediate_size=32,
                                                 shared_expert_intermediate_size=48, num_experts=4,
                                                 num_experts_per_tok=2),
        "qwen3_moe": transformers.Qwen3MoeConfig(**common, intermediate_size=96, moe_intermediate_size=32,
                                                 num_experts=4, num_experts_per_tok=2, head_dim=16),
        "deepseek_v3": transformers.DeepseekV3Config(
            vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
            intermediate_size=96, moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2,
            n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8,
            qk_nope_head_dim=8, v_head_dim=16, n_group=1, topk_group=1),
        "llama": transformers.LlamaConfig(**common, intermediate_size=96),
    }


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("moe")
    out = {}
    for name, config in _configs().items():
        torch.manual_seed(0)
        transformers.AutoModelForCausalLM.from_config(config).save_pretrained(root / name)
        out[name] = root / name
    return out


def _peft_count(config: Any, targets: Any, rank: int = 8) -> int:
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=rank, target_modules=targets))
    return int(wrapped.get_nb_trainable_parameters()[0])


#: (family, targets) as a user writes them; peft's own answer is the expectation
CASES = [(family, targets) for family in ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "llama")
         for targets in ("all-linear", "q_b_proj,kv_b_proj" if family == "deepseek_v3" else "q_proj,v_proj")] + [
    ("mixtral", "w1,w2,w3"), ("mixtral", "gate,q_proj"), ("qwen2_moe", "gate_proj,up_proj,down_proj"),
    ("qwen3_moe", "gate_proj,up_proj,down_proj"), ("qwen3_moe", "down_proj"),
    ("deepseek_v3", "gate_proj,up_proj,down_proj"), ("llama", "gate_proj,up_proj,down_proj")]


@pytest.mark.parametrize(("family", "targets"), CASES, ids=[f"{f}-{t}" for f, t in CASES])
def test_lora_counts_equal_peft_on_the_model_transformers_loads(models: dict[str, Path], family: str,
                                                                targets: str) -> None:
    """Mixtral and the qwen2_moe-pattern families (Qwen3-MoE, DeepSeek-V3): the experts fused and wrapped, gate_up
    at rank 2r, the router's weight wrapped, a dense layer's or a shared expert's gate/up/down no longer adapted;
    Qwen2-MoE: no LoRA on its experts or router; a dense Llama as before."""
    config = _configs()[family]
    expected = _peft_count(config, "all-linear" if targets == "all-linear" else targets.split(","))
    got = inspector.train(str(models[family]), method="lora", rank=8, targets=targets).train.trainable
    assert got == expected


def test_a_fused_pair_named_alone_is_refused_as_peft_refuses_it(models: dict[str, Path]) -> None:
    """peft: "Cannot convert PEFT target(s) w1 without also targeting w3 because they are fused into gate_up_proj"."""
    from inspector.errors import UsageError

    with pytest.raises(ValueError, match="without also targeting w3"):
        _peft_count(_configs()["mixtral"], ["w1"])
    with pytest.raises(UsageError, match="without also targeting w3"):
        inspector.train(str(models["mixtral"]), method="lora", targets="w1")


def test_separate_experts_count_one_linear_an_expert(models: dict[str, Path]) -> None:
    """--experts separate (transformers 4.x): every expert's w1, w2, w3 an nn.Linear of its own, r × (in + out)
    each, and the router one too (the count written out from the config: 2 layers, 4 experts, H 64, I 96)."""
    r, h, i, e, layers = 8, 64, 96, 4, 2
    attention = r * (h + h) * 2 + r * (h + 32) * 2  # q, o [64, 64]; k, v [32, 64]
    experts = e * 3 * r * (h + i)
    router = r * (h + e)
    got = inspector.train(str(models["mixtral"]), method="lora", rank=r, experts="separate").train.trainable
    assert got == layers * (attention + experts + router)


def test_mixtral_8x7b_at_full_scale_on_the_meta_device() -> None:
    """The bundled Mixtral-8x7B's real config on PyTorch's meta device, peft all-linear r16: the same count."""
    from inspector.sources.bundled import BY_REPO, bundled_path

    folder = bundled_path(BY_REPO["mistralai/mixtral-8x7b-v0.1"])
    config = transformers.AutoConfig.from_pretrained(folder)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    expected = peft.get_peft_model(model, peft.LoraConfig(r=16, target_modules="all-linear")
                                   ).get_nb_trainable_parameters()[0]
    assert inspector.train("mixtral-8x7b", method="lora", rank=16).train.trainable == expected


def _held(model: Any) -> int:
    """The bytes a loaded model's parameters hold, bitsandbytes' quantisation state included (absmax, its code, the
    offset, the nested absmax and map), each storage once."""
    seen: dict[tuple[int, int], int] = {}

    def add(t: Any) -> None:
        if torch.is_tensor(t):
            seen[(t.data_ptr(), t.nbytes)] = t.nbytes

    for p in model.parameters():
        add(p.data)
        state = getattr(p, "quant_state", None)
        if state is not None:
            for t in (state.absmax, state.code, state.offset):
                add(t)
            if state.state2 is not None:
                add(state.state2.absmax)
                add(state.state2.code)
    return sum(seen.values())


@pytest.mark.parametrize("family", ["mixtral", "qwen3_moe", "llama"])
def test_qlora_weights_are_what_bitsandbytes_loading_holds(models: dict[str, Path], family: str) -> None:
    """transformers + bitsandbytes 4-bit NF4 with double quantisation (QLoRA's recipe), loaded on the CPU: the
    experts and the router stay in bf16 (no nn.Linear), every other linear but the output layer is NF4; the
    weights term less the float32 adapters is the bytes the loaded model holds."""
    pytest.importorskip("bitsandbytes")
    config = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                             bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(models[family], quantization_config=config,
                                                               device_map="cpu", dtype=torch.bfloat16)
    t = inspector.train(str(models[family]), method="qlora", rank=8).train
    assert t.memory.weights.bytes - 4 * t.trainable == _held(loaded)


def test_the_fused_families_are_transformers_own_table() -> None:
    """experts.PATTERN is transformers' _MODEL_TO_CONVERSION_PATTERN's mixtral and qwen2_moe rows (and the two
    patterns); PEFT_CONVERTS is peft's copy of it, mixtral added."""
    from transformers.conversion_mapping import _MODEL_TO_CONVERSION_PATTERN as table

    from inspector.analysis.training.experts import PATTERN, PEFT_CONVERTS

    theirs = {k: v for k, v in table.items() if v in ("mixtral", "qwen2_moe")}
    assert {k: v for k, v in PATTERN.items() if k not in ("mixtral", "qwen2_moe")} == theirs
    from peft.utils.transformers_weight_conversion import _MODEL_TO_CONVERSION_PATTERN as peft_table

    assert {k for k, v in peft_table.items() if v in ("mixtral", "qwen2_moe")} == PEFT_CONVERTS
