"""Adding a loss kernel is one module: an ``losses.LossKernel`` registered with ``losses.register``, nothing else
(issue 49). The toy below keeps one byte a logit, in a temporary module the test writes; it is seen in the
library's figures, every output format of ``train``, the generated JSON Schema, ``--help`` and the refusal a kernel
TRL's preference trainers do not run gets."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import help_with_strategy, toy_strategy, train_schema_takes

from inspector.analysis.training import losses

TOY_MODULE = '''
from inspector.analysis.training.losses import LossKernel


def _one_byte_a_logit(head):
    return head.tokens * head.vocab


def _words(head):
    return f"toy kernel: {head.rows} × vocabulary {head.vocab:,} × 1 B"


KERNEL = LossKernel("toy-loss", "one byte a logit", _one_byte_a_logit, _words, ", toy kernel",
                    "the loss as the toy kernel keeps it", with_trl=False)
'''

#: meta-llama/Meta-Llama-3-8B config.json vocab_size (its output layer's rows in the index, 128,256)
LLAMA3_VOCAB = 128_256


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toyloss", TOY_MODULE, losses, "KERNEL") as folder:
        yield folder


def test_a_loss_kernel_registered_from_outside_shows_everywhere(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    t = inspector.train("llama3-8b", method="lora", loss="toy-loss", batch=2, seq=1024).train
    assert t.memory.logits.bytes == 2 * 1024 * LLAMA3_VOCAB  # the toy's rule: one byte a logit
    assert t.memory.logits.formula == f"toy kernel: 2 × 1,024 tokens × vocabulary {LLAMA3_VOCAB:,} × 1 B"

    for fmt in ("table", "markdown", "html", "json"):
        out = tmp_path / f"train.{fmt}"
        args = ["train", "llama3-8b", "--loss", "toy-loss", "--format", fmt]
        r = cli(*args, *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        text = out.read_text() if fmt == "html" else r.out
        assert ("toy-loss" if fmt == "json" else "toy kernel") in text, fmt

    doc = cli("train", "llama3-8b", "--loss", "toy-loss", "--json").json()
    assert doc["loss"] == "toy-loss"
    train_schema_takes(doc, "loss", "toy-loss")

    refused = cli("train", "llama3-8b", "--stage", "dpo", "--loss", "toy-loss")  # with_trl=False, as standard
    assert refused.code == 2 and "fused LM head" in refused.err, refused.err

    shown = help_with_strategy(toy, "toyloss", "from inspector.analysis.training import losses; "
                               "losses.register(toyloss.KERNEL)", "train", tmp_path)
    assert "toy-loss (one byte a logit)" in " ".join(shown.split()), shown  # the help wraps its lines


def test_the_built_in_kernels_stay_and_the_toy_is_gone_after(cli) -> None:
    """Outside the fixture the toy is unknown (refused in one line, with the kernels there are), and a built-in
    kernel cannot be unregistered."""
    losses.unregister("fused")
    assert "fused" in losses.KERNELS
    r = cli("train", "llama3-8b", "--loss", "toy-loss")
    assert r.code == 2 and "standard, chunked, fused" in r.err, r.err
