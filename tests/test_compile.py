"""``train --compile`` (issue 50): each decoder layer compiled, as torchtune compiles them. What the backward keeps is
what AOTAutograd's min-cut partitioner decides (inductor's ``partition_fn``; its kernels' code does not change what is
saved), so the oracle is torch itself on CPU: the layers compiled with that partitioner (``compiler="inductor"``) and
no-op graph compilers, and every tensor autograd saves in the forward counted once per storage
(``saved_tensors_hooks``), parameters aside. Ours within ±8 %, on transformers' Llama at two shapes and in bf16 and
fp32; what the flag refuses is what was not measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import saved_bytes

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import inspector  # noqa: E402
from inspector.errors import UsageError  # noqa: E402

BATCH, SEQ = 2, 512
SHAPES = {"small": dict(hidden_size=256, intermediate_size=768, num_attention_heads=8, num_key_value_heads=2),
          "wide": dict(hidden_size=512, intermediate_size=1376, num_attention_heads=8, num_key_value_heads=4)}


def _folder(root: Path, shape: str, dtype: Any) -> Path:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=512, num_hidden_layers=3, max_position_embeddings=1024,
                                      tie_word_embeddings=False, **SHAPES[shape])
    folder = root / f"{shape}-{str(dtype).split('.')[-1]}"
    transformers.LlamaForCausalLM(config).to(dtype).save_pretrained(folder)
    return folder


def _saved_compiled(folder: Path, dtype: Any) -> int:
    from functorch.compile import min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    torch._dynamo.reset()
    model = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation="sdpa")
    model.train()

    def inductors_partition(joint: Any, inputs: Any, **kw: Any) -> Any:
        return min_cut_rematerialization_partition(joint, inputs, compiler="inductor", **kw)

    backend = aot_autograd(fw_compiler=lambda g, _: g, bw_compiler=lambda g, _: g, partition_fn=inductors_partition)
    for layer in model.model.layers:
        layer.compile(backend=backend, dynamic=False)
    ids = torch.randint(0, 512, (BATCH, SEQ), generator=torch.Generator().manual_seed(0))
    return saved_bytes(model, lambda: model(input_ids=ids, labels=ids))


@pytest.mark.parametrize(("shape", "precision"), [("small", "bf16"), ("wide", "bf16"), ("small", "fp32")])
def test_compiled_layers_keep_what_the_partitioner_saves(tmp_path: Path, shape: str, precision: str) -> None:
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    folder = _folder(tmp_path, shape, dtype)
    measured = _saved_compiled(folder, dtype)
    t = inspector.train(str(folder), method="full", precision=precision, batch=BATCH, seq=SEQ, compile=True).train
    eager = inspector.train(str(folder), method="full", precision=precision, batch=BATCH, seq=SEQ).train
    assert t.memory.logits.bytes is not None
    m = t.memory
    ours = m.activations.bytes + m.logits.bytes * 4 // (10 if precision == "bf16" else 8)  # the loss's log-softmax
    assert abs(ours - measured) <= 0.08 * measured, (ours, measured, ours / measured)
    assert t.memory.activations.bytes < eager.memory.activations.bytes  # compiling keeps less than eager mode


@pytest.mark.parametrize("other", [dict(method="lora"), dict(method="qlora"), dict(precision="amp-bf16"),
                                   dict(method="lora", checkpointing=True)])
def test_compile_is_refused_where_it_was_not_measured(other: dict[str, Any]) -> None:
    options = {"method": "full", **other}
    with pytest.raises(UsageError, match="compile"):
        inspector.train("llama3-8b", compile=True, **options)


def test_a_mixture_of_experts_compiled_is_unknown_and_says_why() -> None:
    t = inspector.train("mixtral-8x7b", method="full", compile=True).train
    assert t.memory.activations.bytes is None and t.total is None and "dense gated" in t.memory.activations.formula


@pytest.mark.parametrize(("shape", "dtype_name"), [("small", "bfloat16"), ("wide", "bfloat16"), ("small", "float32")])
def test_one_compiled_layer_keeps_exactly_the_formulas_bytes(tmp_path: Path, shape: str, dtype_name: str) -> None:
    """The partitioner's forward graph of one layer: every tensor it hands the backward (its outputs beyond the
    layer's own) that is an activation (the parameters and the shared rotary tables aside), summed: equal to
    ``compiled_layer_bytes`` × tokens."""
    from functorch.compile import min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    from inspector.analysis.training.activations import Widths, compiled_layer_bytes

    dtype = getattr(torch, dtype_name)
    folder = _folder(tmp_path, shape, dtype)
    torch._dynamo.reset()
    model = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation="sdpa")
    model.train()
    kept: list[int] = []

    def recording(joint: Any, inputs: Any, **kw: Any) -> Any:
        fwd, bwd = min_cut_rematerialization_partition(joint, inputs, compiler="inductor", **kw)
        outputs = next(n for n in fwd.graph.nodes if n.op == "output").args[0][kw["num_fwd_outputs"]:]
        vals = [(n.op, n.meta.get("val")) for n in outputs]
        kept.append(sum(v.numel() * v.element_size() for op, v in vals if isinstance(v, torch.Tensor)
                        and (op != "placeholder" or (v.dim() == 3 and v.shape[0] == BATCH))))
        return fwd, bwd

    backend = aot_autograd(fw_compiler=lambda g, _: g, bw_compiler=lambda g, _: g, partition_fn=recording)
    model.model.layers[0].compile(backend=backend, dynamic=False)
    ids = torch.randint(0, 512, (BATCH, SEQ), generator=torch.Generator().manual_seed(0))
    model(input_ids=ids, labels=ids)
    c = SHAPES[shape]
    head = c["hidden_size"] // c["num_attention_heads"]
    w = Widths(hidden=c["hidden_size"], q=c["hidden_size"], k=c["num_key_value_heads"] * head,
               v=c["num_key_value_heads"] * head, o=c["hidden_size"], heads=c["num_attention_heads"],
               mlp=4 * c["intermediate_size"], down=c["intermediate_size"])
    assert kept == [compiled_layer_bytes(w, dtype.itemsize) * BATCH * SEQ]


@pytest.mark.parametrize("compiled", [False, True])
def test_the_chunked_loss_keeps_what_torch_saves(tmp_path: Path, compiled: bool) -> None:
    """torchtune's CEWithChunkedOutputLoss as its source writes it (modules/loss/ce_chunked_output_loss.py: the
    model's 16-bit logits in 8 chunks over the sequence, each ``F.cross_entropy(chunk.float(), labels,
    reduction="sum")``), and with ``compile`` as training/_compile.py's compile_loss compiles it
    (``loss.compute_cross_entropy = torch.compile(...)``): inductor hands AOTAutograd its decomposition table
    (``select_decomp_table``) and its min-cut partitioner. Every floating-point tensor the loss saves for the
    backward (the int64 labels aside), each storage once: equal to our logits term less the one chunk's transient
    (the float32 upcast uncompiled; the 16-bit gradient compiled) and, uncompiled, less the 16-bit logits (the
    model's output, alive beside the loss, not saved by it) and plus nll_loss's float32 total weight, a scalar a
    chunk, which our term leaves out."""
    import torch.nn.functional as F
    from functorch.compile import min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor.decomposition import select_decomp_table

    from inspector.analysis.training.losses import CHUNKS

    folder = _folder(tmp_path, "small", torch.bfloat16)
    vocab = 512

    def compute_cross_entropy(logits: Any, labels: Any) -> Any:
        return F.cross_entropy(logits.float(), labels, ignore_index=-100, reduction="sum")

    torch._dynamo.reset()
    if compiled:
        def inductors_partition(joint: Any, inputs: Any, **kw: Any) -> Any:
            return min_cut_rematerialization_partition(joint, inputs, compiler="inductor", **kw)

        backend = aot_autograd(fw_compiler=lambda g, _: g, bw_compiler=lambda g, _: g,
                               partition_fn=inductors_partition, decompositions=select_decomp_table())
        compute_cross_entropy = torch.compile(compute_cross_entropy, backend=backend, dynamic=False)
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(BATCH, SEQ, vocab, generator=generator).to(torch.bfloat16).requires_grad_()
    labels = torch.randint(0, vocab, (BATCH, SEQ), generator=generator)
    chunks = [c.reshape(-1, vocab) for c in logits.chunk(CHUNKS, dim=1)]
    targets = [t.reshape(-1) for t in labels.chunk(CHUNKS, dim=1)]
    seen: dict[int, int] = {}

    def pack(t: Any) -> Any:
        if t.is_floating_point():
            seen.setdefault(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        sum(compute_cross_entropy(c, t) for c, t in zip(chunks, targets, strict=True))
    t = inspector.train(str(folder), method="full", precision="bf16", batch=BATCH, seq=SEQ, loss="chunked",
                        compile=compiled).train
    one_chunk = BATCH * SEQ // CHUNKS * vocab * (2 if compiled else 4)
    assert t.memory.logits.bytes is not None
    uncompiled = 0 if compiled else BATCH * SEQ * vocab * 2 - CHUNKS * 4
    logits = t.memory.logits.bytes
    assert logits - one_chunk == sum(seen.values()) + uncompiled, (logits, sum(seen.values()))
