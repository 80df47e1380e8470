"""``train --freeze`` (issue 50): a VLM's vision tower (and projector) kept from training, held to what torch and
peft count on the model transformers builds: the parameters left requiring grad after ``requires_grad_(False)`` on
the tower (a full fine-tune), and peft's trainable count with ``exclude_modules`` on it (LoRA all-linear)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

import inspector  # noqa: E402
from inspector.errors import UsageError  # noqa: E402


def _config() -> Any:
    vision = transformers.CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                           num_attention_heads=4, image_size=32, patch_size=8)
    text = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2)
    return transformers.LlavaConfig(vision_config=vision, text_config=text, image_token_index=255)


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("vlm") / "llava"
    transformers.LlavaForConditionalGeneration(_config()).save_pretrained(folder)
    return folder


def _requiring_grad(frozen: tuple[str, ...]) -> int:
    model = transformers.LlavaForConditionalGeneration(_config())
    for part in frozen:
        getattr(model.model, part).requires_grad_(False)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@pytest.mark.parametrize(("freeze", "parts"), [("vision", ("vision_tower",)),
                                              ("vision,projector", ("vision_tower", "multi_modal_projector"))])
def test_a_full_finetune_with_frozen_towers_trains_what_torch_leaves_requiring_grad(llava: Path, freeze: str,
                                                                                    parts: tuple[str, ...]) -> None:
    t = inspector.train(str(llava), method="full", freeze=freeze).train
    assert t.trainable == _requiring_grad(parts)
    doc = inspector.train(str(llava), method="full", freeze=freeze).to_dict()
    assert doc["gradients"] == t.trainable * 2 and doc["freeze"] == freeze.split(",")


def test_lora_with_the_tower_frozen_equals_peft_excluding_it(llava: Path) -> None:
    model = transformers.LlavaForConditionalGeneration(_config())
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules="all-linear",
                                                         exclude_modules=r".*vision_tower.*"))
    assert inspector.train(str(llava), method="lora", rank=8, freeze="vision").train.trainable == \
        wrapped.get_nb_trainable_parameters()[0]


def test_lora_all_linear_on_a_vlm_equals_peft(llava: Path) -> None:
    """peft's all-linear adapts the tower's linears too, never its position embedding (an nn.Embedding)."""
    model = transformers.LlavaForConditionalGeneration(_config())
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules="all-linear"))
    assert inspector.train(str(llava), method="lora", rank=8).train.trainable == \
        wrapped.get_nb_trainable_parameters()[0]


def test_a_part_the_model_lacks_is_named(llava: Path) -> None:
    with pytest.raises(UsageError, match="names no part of this model"):
        inspector.train(str(llava), method="full", freeze="audio")
