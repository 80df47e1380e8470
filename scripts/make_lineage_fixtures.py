"""Write fixtures/lineage/: three tiny Llama checkpoints (BF16) that transformers saves, for the README's and the
docs' ``inspect lineage`` examples, kept in git so an example runs without torch.

    python scripts/make_lineage_fixtures.py

``base``: ``LlamaForCausalLM`` of a tiny config, seed 0. ``finetune``: the base after three AdamW steps (lr 1e-3, fp32)
on layer 1 only, the rest frozen. ``other``: the same config, seed 1. Each is cast to bfloat16 and written by
``save_pretrained``; ``finetune``'s card declares ``base_model: org/base`` (the Hub name the example stands for).
"""

from __future__ import annotations

from pathlib import Path

import torch
import transformers

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "lineage"


def main() -> None:
    config = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                      tie_word_embeddings=False)
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM(config)
    tuned = transformers.LlamaForCausalLM(config)
    tuned.load_state_dict(base.state_dict())
    for name, p in tuned.named_parameters():
        p.requires_grad = name.startswith("model.layers.1.")
    opt = torch.optim.AdamW([p for p in tuned.parameters() if p.requires_grad], lr=1e-3)
    for _ in range(3):
        ids = torch.randint(0, 256, (2, 16))
        tuned(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
    torch.manual_seed(1)
    other = transformers.LlamaForCausalLM(config)
    for name, model in (("base", base), ("finetune", tuned), ("other", other)):
        model.to(torch.bfloat16).save_pretrained(OUT / name)
    (OUT / "finetune" / "README.md").write_text("---\nbase_model: org/base\nbase_model_relation: finetune\n---\n"
                                                 "# finetune\n\nLayer 1 of org/base, three AdamW steps.\n")


if __name__ == "__main__":
    main()
