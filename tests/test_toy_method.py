"""Adding a fine-tuning method is one module: a ``methods.Method`` registered with ``methods.register``, nothing else
(issue 49). The toy below is LoRA under another name and title, with a rule of thumb of its own, in a temporary
module the test writes; it is seen in the library's figures (peft's own trainable count), every output format of
``train``, the generated JSON Schema, ``--help`` and the suggestions a full fine-tune that does not fit gets."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import help_with_strategy, toy_strategy, train_schema_takes

from inspector.analysis.training import methods

TOY_MODULE = '''
from inspector.analysis.training.methods import Method

METHOD = Method("toy-lora", adapter=True, nf4=False, title="toy adapter rank {rank}", thumb=(1.0, "toy: 1x GB"))
'''

#: LoRA r=16 on every linear of Llama 3 8B (q, k, v, o, gate, up, down in 32 layers), as peft's LoraLayer makes it
#: (lora_A r × in, lora_B out × r), written out from its config.json: 32 × 16 × (4096+4096 + 4096+1024 + 4096+1024
#: + 4096+4096 + 4096+14336 + 4096+14336 + 14336+4096) = 41,943,040, the count peft prints for this setup
LORA_R16_ALL_LINEAR = 32 * 16 * (8192 + 5120 + 5120 + 8192 + 18432 + 18432 + 18432)


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toymethod", TOY_MODULE, methods, "METHOD") as folder:
        yield folder


def test_a_method_registered_from_outside_shows_everywhere(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    t = inspector.train("llama3-8b", method="toy-lora", rank=16).train
    assert t.trainable == LORA_R16_ALL_LINEAR
    assert t.memory.master_weights.bytes == 0  # an adapter: float32 already, no master copy
    assert any(th.formula.startswith("toy: 1x GB") for th in t.thumbs)

    for fmt in ("table", "markdown", "html", "json"):
        out = tmp_path / f"train.{fmt}"
        r = cli("train", "llama3-8b", "--method", "toy-lora", "--format", fmt,
                *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        text = out.read_text() if fmt == "html" else r.out
        assert ("toy-lora" if fmt in ("json", "html") else "toy adapter rank 16") in text, fmt

    doc = cli("train", "llama3-8b", "--method", "toy-lora", "--json").json()
    assert doc["method"] == "toy-lora" and doc["rank"] == 16 and doc["trainable_parameters"] == LORA_R16_ALL_LINEAR
    train_schema_takes(doc, "method", "toy-lora")

    shown = help_with_strategy(toy, "toymethod", "from inspector.analysis.training import methods; "
                               "methods.register(toymethod.METHOD)", "train", tmp_path)
    assert "full, lora, qlora or toy-lora" in " ".join(shown.split()), shown


def test_the_built_in_methods_stay_and_the_toy_is_gone_after(cli) -> None:
    methods.unregister("qlora")
    assert "qlora" in methods.METHODS
    r = cli("train", "llama3-8b", "--method", "toy-lora")
    assert r.code == 2 and "full, lora, qlora" in r.err, r.err
