"""The training step's peak (``Train.total``, issue 50): where in the step the memory peaks (at the loss, in the top
layer's backward, at the backward's end) held to torch's own ``MemTracker`` (torch.distributed._tools.mem_tracker: a
TorchDispatchMode that sees every storage made or freed, parameters, gradients, optimizer states, activations and
temporaries alike) over real training steps on CPU: transformers' Llama in bf16, torch's AdamW stepped, with and
without gradient checkpointing, and with the optimizer stepped in the backward as torchtune's ``optimizer_in_bwd``
does (one optimizer a parameter, ``register_post_accumulate_grad_hook``). The peak of the third step (the optimizer
states made on the first) against ours less the memory outside torch's allocator, within ±8 %."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import inspector  # noqa: E402

BATCH, SEQ, VOCAB = 2, 512, 512


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=VOCAB, num_hidden_layers=4, max_position_embeddings=1024,
                                      hidden_size=256, intermediate_size=768, num_attention_heads=8,
                                      num_key_value_heads=2, tie_word_embeddings=False)
    folder = tmp_path_factory.mktemp("peak") / "llama"
    transformers.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    return folder


def _measured_peak(folder: Path, checkpointing: bool, in_backward: bool) -> int:
    from torch.distributed._tools.mem_tracker import MemTracker

    model = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.train()
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(0))
    tracker = MemTracker()
    if in_backward:
        optimizers = {p: torch.optim.AdamW([p], lr=1e-4) for p in model.parameters()}

        def step(p: Any) -> None:
            optimizers[p].step()
            optimizers[p].zero_grad(set_to_none=True)

        for p in model.parameters():
            p.register_post_accumulate_grad_hook(step)
        tracker.track_external(model, *optimizers.values())
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        tracker.track_external(model, optimizer)
    with tracker:
        for _ in range(3):
            tracker.reset_mod_stats()
            model(input_ids=ids, labels=ids).loss.backward()
            if not in_backward:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
    (device,) = tracker.get_tracker_snapshot("peak")
    return int(tracker.get_tracker_snapshot("peak")[device]["Total"])


@pytest.mark.parametrize(("checkpointing", "in_backward"), [(False, False), (True, False), (False, True),
                                                            (True, True)])
def test_the_peak_is_where_torch_measures_it(llama: Path, checkpointing: bool, in_backward: bool) -> None:
    measured = _measured_peak(llama, checkpointing, in_backward)
    t = inspector.train(str(llama), method="full", precision="bf16", optimizer="adamw", batch=BATCH, seq=SEQ,
                        checkpointing=checkpointing, optimizer_in_backward=in_backward).train
    assert t.total is not None and t.memory.overhead.bytes is not None
    ours = t.total - t.memory.overhead.bytes
    assert abs(ours - measured) <= 0.08 * measured, (ours, measured, ours / measured)
