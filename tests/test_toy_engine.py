"""Adding a serving engine is one module: a class implementing ``engines.base.Engine``, registered with
``engines.register`` (a built-in one adds its name to ``ENGINES`` instead), nothing else (issue 49).

The toy engine below lives in a temporary module the test writes (never in the package): the whole device, one
constant term of 1 GiB beside the weights, a KV pool in pages of 8 tokens, and one start-up rule (the attention
heads divisible by TP) cited to a made-up source. It is seen in every place an engine shows: the library, every
output format of ``estimate`` and ``plan``, the JSON Schema the schema script generates, and ``--help``."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generated_schemas, help_with_strategy, toy_strategy
from jsonschema import Draft202012Validator

from inspector.analysis.serving import engines

ROOT = Path(__file__).resolve().parent.parent

TOY_MODULE = '''
from dataclasses import dataclass

from inspector.analysis.serving.engines.base import GIB, Term, even_stages


@dataclass(frozen=True, slots=True)
class Toy:
    name: str = "toy"
    pool: bool = True
    host_input: bool = False
    layer_split: bool = False
    fraction: str | None = None
    page: int = 8

    @property
    def rules(self):
        return {"heads": ("attention heads divisible by TP", "toy/engine.c check_heads")}

    def cells(self, context, window):
        return context

    def window_rule(self, context, window):
        return ""

    def usable(self, budget, utilization, *, devices=1, pipeline=1):
        return budget, None

    def fraction_words(self, fraction):
        return "", "the whole device"

    def pool_tokens(self, pool, per_token):
        return (pool // per_token) // 8 * 8 if per_token > 0 and pool > 0 else 0

    def stage_layers(self, layers, stages):
        return even_stages(layers, stages)

    def terms(self, shape, *, gpu_bytes, gpu_name, devices, samples, pipeline):
        return (Term("toy scratch", GIB, "1 GiB, always", "toy/engine.c"),)


ENGINE = Toy()
'''


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toyengine", TOY_MODULE, engines, "ENGINE") as folder:
        yield folder


def test_an_engine_registered_from_outside_shows_everywhere(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    est = inspector.estimate("llama3-8b", gpu="H100", engine="toy", context=8192)
    assert est.fit is not None and est.fit.engine == "toy"
    f = est.fit
    assert [t.name for t in f.runtime.terms] == ["toy scratch"] and f.runtime.usable_bytes == f.budget_bytes
    assert f.kv.pool_bytes == f.runtime.usable_bytes - f.weights.per_device - 2**30  # its one term, its whole device
    assert f.kv.pool_tokens == f.kv.pool_bytes // f.kv.per_token // 8 * 8  # its pages

    for fmt in ("table", "markdown", "html", "json"):
        out = tmp_path / f"estimate.{fmt}"
        args = ["estimate", "llama3-8b", "--gpu", "H100", "--engine", "toy", "--format", fmt]
        r = cli(*args, *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        text = out.read_text() if fmt == "html" else r.out
        assert "toy scratch" in text and "toy" in text, fmt

    plan = cli("plan", "llama3-8b", "--engine", "toy", "--gpu", "H100", "--max-gpus", "4", "--json")
    assert plan.code == 0, plan.err
    doc = plan.json()
    assert doc["engine"] == "toy" and [r["source"] for r in doc["rules"]] == ["toy/engine.c check_heads"]
    assert {row["tp"] for row in doc["layouts"] if not row["valid"]} == {3}  # 32 heads: only TP 3 breaks it

    # the schema script reads the registry: with the toy registered, its name is in the enum and the documents
    # the toy produced validate
    made = generated_schemas()
    assert "toy" in made["plan"]["properties"]["engine"]["enum"]
    Draft202012Validator(made["plan"]).validate(doc)
    estimate_doc = cli("estimate", "llama3-8b", "--gpu", "H100", "--engine", "toy", "--json").json()
    Draft202012Validator(made["estimate"]).validate(estimate_doc)

    # --help lists the engines registered when the CLI is imported (a fresh process, as a plugin would run)
    shown = help_with_strategy(toy, "toyengine", "from inspector.analysis.serving import engines; "
                               "engines.register(toyengine.ENGINE)", "estimate", tmp_path)
    assert "vllm, llama.cpp, sglang, toy" in " ".join(shown.split()), shown


def test_unknown_engines_are_refused_with_the_registered_names(cli) -> None:
    r = cli("estimate", "llama3-8b", "--gpu", "H100", "--engine", "nope")
    assert r.code != 0 and "vllm or llama.cpp or sglang" in r.err
