"""``train --stage dpo|grpo`` and ``--loss fused`` (issue 50), held to TRL 1.16 itself where TRL can answer: its
configs' defaults and refusals, its fused LM head's tile constants, and whether its trainers build a reference model;
the arithmetic terms (the reference model, the doubled DPO batch, GRPO's completions) written out."""

from __future__ import annotations

import math

import pytest

import inspector

trl = pytest.importorskip("trl")

#: meta-llama/Meta-Llama-3-8B's parameters (its index's total_size / 2 B: 16,060,522,496 B of BF16) and shape
LLAMA3_8B = 8_030_261_248
VOCAB, HIDDEN = 128_256, 4_096


def test_dpo_full_holds_a_second_copy_of_the_weights_and_twice_the_rows() -> None:
    """DPOTrainer with a full fine-tune creates the reference model from the model's path (create_model_from_path):
    8,030,261,248 × 2 B, sharded by ZeRO-3 as the policy is; its collator concatenates chosen and rejected, so the
    activations are SFT's at twice the batch (the same formula, the same rows)."""
    dpo = inspector.train("llama3-8b", method="full", stage="dpo", gpu="H100x8", zero=3).train
    assert dpo.memory.reference.bytes == math.ceil(LLAMA3_8B * 2 / 8)
    sft = inspector.train("llama3-8b", method="full", batch=2, gpu="H100x8", zero=3, loss="fused").train
    assert dpo.memory.activations.bytes == sft.memory.activations.bytes
    assert dpo.memory.logits.bytes == sft.memory.logits.bytes
    doc = inspector.train("llama3-8b", method="full", stage="dpo", gpu="H100x8", zero=3).to_dict()
    assert doc["reference"] == dpo.memory.reference.bytes and "reference" in [t["name"] for t in doc["terms"]]


def test_dpo_with_lora_has_no_reference_model() -> None:
    """With a peft model and no ref_model, DPOTrainer sets ref_model None and disables the adapter for the reference
    pass (its source: `if is_peft_model(self.model) ...: self.ref_model = None`)."""
    import inspect as pyinspect

    from trl.trainer import dpo_trainer

    assert "self.ref_model = None" in pyinspect.getsource(dpo_trainer.DPOTrainer.__init__)
    assert inspector.train("llama3-8b", method="lora", stage="dpo").train.memory.reference.bytes == 0


def test_grpo_defaults_are_trls_and_beta_zero_keeps_no_reference() -> None:
    """GRPOConfig's defaults: 8 generations, 512 completion tokens, beta 0.0 (no reference model), vLLM's colocated
    share 0.3 when used; the rows are completions of prompt + completion tokens."""
    config = trl.GRPOConfig(output_dir="/tmp/x", use_cpu=True, bf16=False, per_device_train_batch_size=8)
    assert (config.num_generations, config.max_completion_length, config.beta,
            config.vllm_gpu_memory_utilization) == (8, 512, 0.0, 0.3)
    t = inspector.train("llama3-8b", method="full", stage="grpo", batch=8, gpu="H100x8", zero=3).train
    assert t.memory.reference.bytes == 0
    sft = inspector.train("llama3-8b", method="full", batch=8, seq=2048 + 512, gpu="H100x8", zero=3, loss="fused").train
    assert t.memory.activations.bytes == sft.memory.activations.bytes
    with_beta = inspector.train("llama3-8b", method="full", stage="grpo", batch=8, beta=0.04, gpu="H100x8",
                                zero=3).train
    assert with_beta.memory.reference.bytes == math.ceil(LLAMA3_8B * 2 / 8)


def test_grpo_refuses_what_grpoconfig_refuses() -> None:
    """GRPOConfig raises on a generation batch that does not hold whole groups (1 × 1 GPU with 8 generations) and on
    fewer than 2 generations; so does train."""
    from inspector.errors import UsageError

    with pytest.raises(ValueError, match="divisible by num_generations"):
        trl.GRPOConfig(output_dir="/tmp/x", use_cpu=True, bf16=False, per_device_train_batch_size=1, num_generations=8)
    with pytest.raises(UsageError, match="must be divisible by"):
        inspector.train("llama3-8b", stage="grpo", batch=1)
    # the defaults agree, as GRPOConfig's own do (issue 67: the default batch 1 was refused against 8 generations):
    # with no batch given a GRPO step takes GRPOConfig's per_device_train_batch_size
    default = trl.GRPOConfig(output_dir="/tmp/x", use_cpu=True, bf16=False)
    t = inspector.train("llama3-8b", stage="grpo").train
    assert t.options.batch == default.per_device_train_batch_size
    assert default.per_device_train_batch_size % default.num_generations == 0
    assert inspector.train("llama3-8b").train.options.batch == 1  # SFT: one row, as before
    with pytest.raises(ValueError, match="at least 2"):
        trl.GRPOConfig(output_dir="/tmp/x", use_cpu=True, bf16=False, per_device_train_batch_size=2, num_generations=1)
    with pytest.raises(UsageError, match="at least 2"):
        inspector.train("llama3-8b", stage="grpo", batch=2, generations=1)
    with pytest.raises(UsageError, match="GRPO's only"):
        inspector.train("llama3-8b", generations=4)


def test_a_colocated_vllm_takes_its_share_of_the_budget() -> None:
    """vllm_gpu_memory_utilization 0.3: training fits in the other 70 % of each GPU."""
    plain = inspector.train("llama3-8b", stage="grpo", batch=8, gpu="H100").train
    shared = inspector.train("llama3-8b", stage="grpo", batch=8, gpu="H100", rollout_memory=0.3).train
    assert plain.total == shared.total
    assert shared.largest_batch is not None and plain.largest_batch is not None
    assert shared.largest_batch <= plain.largest_batch


def test_the_fused_head_is_trls_tile_and_not_the_logits() -> None:
    """TRL 1.16's fused LM head projects tiles of TOKEN_CHUNK_SIZE tokens × _CHUNKED_LOGPROB_CHUNK_SIZE vocabulary
    entries (its constants, read from the installed TRL); at its backward it holds one tile in the compute dtype, the
    hidden states' float32 gradient and its per-token vectors: far below the logits whole."""
    from trl.kernels.chunked_logprob import TOKEN_CHUNK_SIZE
    from trl.trainer.utils import _CHUNKED_LOGPROB_CHUNK_SIZE

    from inspector.analysis.training.losses import TILE_TOKENS, TILE_VOCAB

    assert (TILE_TOKENS, TILE_VOCAB) == (TOKEN_CHUNK_SIZE, _CHUNKED_LOGPROB_CHUNK_SIZE)
    tokens = 2048
    fused = inspector.train("llama3-8b", loss="fused").train.memory.logits.bytes
    assert fused == min(tokens, 4096) * min(VOCAB, 32768) * 2 + tokens * HIDDEN * 4 + tokens * 9 * 4
    standard = inspector.train("llama3-8b").train.memory.logits.bytes
    assert standard == tokens * VOCAB * (2 + 4 + 4)
    assert fused < standard / 10


def test_dpo_refuses_the_standard_loss_and_sft_options_stay_as_they_were() -> None:
    from inspector.errors import UsageError

    with pytest.raises(UsageError, match="fused LM head"):
        inspector.train("llama3-8b", stage="dpo", loss="standard")
    doc = inspector.train("llama3-8b").to_dict()
    assert doc["stage"] == "sft" and doc["loss"] == "standard" and doc["reference"] == 0
    assert "reference" not in [t["name"] for t in doc["terms"]]


def test_sequence_parallel_refuses_what_ulysses_refuses() -> None:
    """DeepSpeed's ALST Ulysses (ulysses_sp.py, UlyssesSPAttentionHF.__init__): "Attention head count {n} is not
    divisible by SP size {sp}"; KV heads must divide by the SP size or it by them (Llama 3 8B: 32 heads, 8 KV heads)."""
    from inspector.errors import UsageError

    with pytest.raises(UsageError, match="Attention head count 32 is not divisible by SP size 3"):
        inspector.train("llama3-8b", sp=3, gpu="H100x3")
    with pytest.raises(UsageError, match="Attention head count 32 is not divisible by SP size 64"):
        inspector.train("llama3-8b", sp=64, gpu="H100x64")
    with pytest.raises(UsageError, match="do not split into sequence-parallel groups"):
        inspector.train("llama3-8b", sp=4, gpu="H100x6")
    assert inspector.train("llama3-8b", sp=16, gpu="H100x16").to_dict()["sp"] == 16  # 8 KV heads: replicated 2×


def test_sequence_parallel_shards_the_sequence() -> None:
    """Ulysses shards every sequence evenly over its group outside attention (and the heads inside, the same elements):
    a GPU of SP 4 at 32,768 tokens holds what one GPU holds at 8,192."""
    sp = inspector.train("llama3-8b", sp=4, gpu="H100x4", seq="32k").train
    one = inspector.train("llama3-8b", seq="8k").train
    assert sp.memory.activations.bytes == one.memory.activations.bytes
    assert sp.memory.logits.bytes == one.memory.logits.bytes
    assert inspector.train("llama3-8b", sp=4, gpu="H100x4", seq="32k").to_dict()["sp"] == 4


def test_offloaded_activations_live_on_the_cpu_but_one_layer() -> None:
    """torchtune's OffloadActivations (training/_activation_offloading.py): every saved tensor of 1 KiB or more goes to
    CPU memory in the forward and comes back in the backward as it is needed: the CPU holds the activations whole
    (the figure without offloading), the GPU one layer's (the checkpointed figure less its kept layer inputs)."""
    plain = inspector.train("llama3-8b", method="full", gpu="H100x8", zero=3).train
    off = inspector.train("llama3-8b", method="full", gpu="H100x8", zero=3, offload_activations=True).train
    ckpt = inspector.train("llama3-8b", method="full", gpu="H100x8", zero=3, checkpointing=True).train
    assert off.memory.cpu_bytes == plain.memory.cpu_bytes + plain.memory.activations.bytes
    layers, hidden, tokens = 32, 4096, 2048
    assert off.memory.activations.bytes == ckpt.memory.activations.bytes - tokens * layers * 2 * hidden
    assert off.total < plain.total


def test_chunked_cross_entropy_keeps_every_chunks_log_softmax() -> None:
    """torchtune 0.6.1's CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py), written out: the logits in
    8 chunks, each `F.cross_entropy(chunk.float(), labels, reduction="sum")` in turn. Measured with torch's
    saved_tensors_hooks: what it keeps for the backward is every chunk's float32 log-softmax, 4 B a logit, as ours
    counts beside the 16-bit logits and one chunk's upcast."""
    torch = pytest.importorskip("torch")
    tokens, vocab = 1024, 4096
    logits = torch.randn(tokens, vocab, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, vocab, (tokens,))
    seen: dict[int, int] = {}

    def pack(t: object) -> object:
        storage = t.untyped_storage()  # type: ignore[attr-defined]
        if storage.data_ptr() != logits.untyped_storage().data_ptr():
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = sum(torch.nn.functional.cross_entropy(c.float(), y, reduction="sum")
                   for c, y in zip(logits.chunk(8), labels.chunk(8), strict=True))
    loss.backward()
    from inspector.analysis.training.losses import chunked_head_bytes

    kept = sum(v for v in seen.values() if v >= tokens // 8 * vocab * 4)
    assert kept == tokens * vocab * 4
    assert chunked_head_bytes(tokens, vocab, 2) == tokens * vocab * 2 + kept + tokens // 8 * vocab * 4
