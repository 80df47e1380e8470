"""The role table against real tensor names of each family it claims to cover."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.analysis.facts import roles
from inspector.analysis.facts.roles import KIND_TABLE, ROLE_ORDER, ROLE_TABLE, classify

CASES = [
    # Llama 1/2/3, Mistral, Qwen2/2.5 (names shared)
    ("model.embed_tokens.weight", "parameter", "embedding"),
    ("model.layers.0.self_attn.q_proj.weight", "parameter", "attn.q"),
    ("model.layers.0.self_attn.k_proj.weight", "parameter", "attn.k"),
    ("model.layers.0.self_attn.v_proj.weight", "parameter", "attn.v"),
    ("model.layers.0.self_attn.o_proj.weight", "parameter", "attn.o"),
    ("model.layers.3.self_attn.q_proj.bias", "parameter", "attn.q"),  # Qwen2 bias
    ("model.layers.0.mlp.gate_proj.weight", "parameter", "mlp.gate"),
    ("model.layers.0.mlp.up_proj.weight", "parameter", "mlp.up"),
    ("model.layers.0.mlp.down_proj.weight", "parameter", "mlp.down"),
    ("model.layers.0.input_layernorm.weight", "parameter", "norm"),
    ("model.layers.0.post_attention_layernorm.weight", "parameter", "norm"),
    ("model.norm.weight", "parameter", "norm"),
    ("lm_head.weight", "parameter", "lm_head"),
    ("model.layers.7.self_attn.rotary_emb.inv_freq", "buffer", "buffer"),  # Llama-2-hf
    # Meta originals (consolidated.pth names)
    ("layers.0.attention.wq.weight", "parameter", "attn.q"),
    ("layers.0.attention.wo.weight", "parameter", "attn.o"),
    ("layers.0.feed_forward.w1.weight", "parameter", "mlp.gate"),
    ("layers.0.feed_forward.w2.weight", "parameter", "mlp.down"),
    ("tok_embeddings.weight", "parameter", "embedding"),
    ("output.weight", "parameter", "lm_head"),
    # Qwen3 / Gemma 3 per-head norms; Gemma 2/3 sandwich norms
    ("model.layers.0.self_attn.q_norm.weight", "parameter", "norm"),
    ("model.layers.0.self_attn.k_norm.weight", "parameter", "norm"),
    ("model.layers.0.pre_feedforward_layernorm.weight", "parameter", "norm"),
    ("model.layers.0.post_feedforward_layernorm.weight", "parameter", "norm"),
    # Mixtral
    ("model.layers.0.block_sparse_moe.gate.weight", "parameter", "moe.router"),
    ("model.layers.0.block_sparse_moe.experts.7.w1.weight", "parameter", "moe.expert.gate"),
    ("model.layers.0.block_sparse_moe.experts.7.w2.weight", "parameter", "moe.expert.down"),
    ("model.layers.0.block_sparse_moe.experts.7.w3.weight", "parameter", "moe.expert.up"),
    # Qwen2-MoE / Qwen3-MoE
    ("model.layers.1.mlp.gate.weight", "parameter", "moe.router"),
    ("model.layers.1.mlp.shared_expert_gate.weight", "parameter", "moe.router"),
    ("model.layers.1.mlp.shared_expert.up_proj.weight", "parameter", "moe.shared.up"),
    ("model.layers.1.mlp.experts.12.gate_proj.weight", "parameter", "moe.expert.gate"),
    # gpt-oss / transformers 5 fused 3-D experts, MXFP4
    ("model.layers.0.mlp.router.weight", "parameter", "moe.router"),
    ("model.layers.0.mlp.router.bias", "parameter", "moe.router"),
    ("model.layers.0.mlp.experts.gate_up_proj_blocks", "parameter", "moe.expert.gate_up"),
    ("model.layers.0.mlp.experts.gate_up_proj_scales", "quant", "moe.expert.gate_up"),
    ("model.layers.0.mlp.experts.down_proj_bias", "parameter", "moe.expert.down"),
    # Phi-2
    ("model.layers.0.self_attn.dense.weight", "parameter", "attn.o"),
    ("model.layers.0.mlp.fc1.weight", "parameter", "mlp.up"),
    ("model.layers.0.mlp.fc2.bias", "parameter", "mlp.down"),
    ("model.final_layernorm.bias", "parameter", "norm"),
    ("lm_head.bias", "parameter", "lm_head"),
    # Phi-3
    ("model.layers.0.self_attn.qkv_proj.weight", "parameter", "attn.qkv"),
    ("model.layers.0.mlp.gate_up_proj.weight", "parameter", "mlp.gate_up"),
    # GPT-2
    ("wte.weight", "parameter", "embedding"),
    ("wpe.weight", "parameter", "position_embedding"),
    ("h.0.attn.bias", "buffer", "buffer"),
    ("h.0.attn.masked_bias", "buffer", "buffer"),
    ("h.0.attn.c_attn.weight", "parameter", "attn.qkv"),
    ("h.0.attn.c_attn.bias", "parameter", "attn.qkv"),
    ("h.0.attn.c_proj.weight", "parameter", "attn.o"),
    ("h.0.mlp.c_fc.weight", "parameter", "mlp.up"),
    ("h.0.mlp.c_proj.weight", "parameter", "mlp.down"),
    ("h.11.ln_1.weight", "parameter", "norm"),
    ("ln_f.bias", "parameter", "norm"),
    ("transformer.h.0.attn.c_attn.weight", "parameter", "attn.qkv"),
    # BERT / MiniLM
    ("embeddings.word_embeddings.weight", "parameter", "embedding"),
    ("embeddings.position_embeddings.weight", "parameter", "position_embedding"),
    ("embeddings.token_type_embeddings.weight", "parameter", "token_type_embedding"),
    ("embeddings.position_ids", "buffer", "buffer"),
    ("embeddings.LayerNorm.weight", "parameter", "norm"),
    ("encoder.layer.0.attention.self.query.weight", "parameter", "attn.q"),
    ("encoder.layer.0.attention.self.key.bias", "parameter", "attn.k"),
    ("encoder.layer.0.attention.self.value.weight", "parameter", "attn.v"),
    ("encoder.layer.0.attention.output.dense.weight", "parameter", "attn.o"),
    ("encoder.layer.0.attention.output.LayerNorm.weight", "parameter", "norm"),
    ("encoder.layer.0.intermediate.dense.weight", "parameter", "mlp.up"),
    ("encoder.layer.0.output.dense.weight", "parameter", "mlp.down"),
    ("encoder.layer.0.output.LayerNorm.bias", "parameter", "norm"),
    ("pooler.dense.weight", "parameter", "pooler"),
    # DeepSeek-V3: MLA, MoE, FP8 scales, MTP
    ("model.layers.0.self_attn.q_a_proj.weight", "parameter", "attn.q"),
    ("model.layers.0.self_attn.q_a_proj.weight_scale_inv", "quant", "attn.q"),
    ("model.layers.0.self_attn.q_a_layernorm.weight", "parameter", "norm"),
    ("model.layers.0.self_attn.q_b_proj.weight", "parameter", "attn.q"),
    ("model.layers.0.self_attn.kv_a_proj_with_mqa.weight", "parameter", "attn.kv"),
    ("model.layers.0.self_attn.kv_a_layernorm.weight", "parameter", "norm"),
    ("model.layers.0.self_attn.kv_b_proj.weight", "parameter", "attn.kv"),
    ("model.layers.3.mlp.gate.weight", "parameter", "moe.router"),
    ("model.layers.3.mlp.gate.e_score_correction_bias", "buffer", "buffer"),
    ("model.layers.3.mlp.experts.255.down_proj.weight", "parameter", "moe.expert.down"),
    ("model.layers.3.mlp.shared_experts.gate_proj.weight_scale_inv", "quant", "moe.shared.gate"),
    ("model.layers.61.eh_proj.weight", "parameter", "mtp"),
    ("model.layers.61.enorm.weight", "parameter", "norm"),
    ("model.layers.61.shared_head.head.weight", "parameter", "lm_head"),
    ("model.layers.61.embed_tokens.weight", "parameter", "embedding"),
    # GPTQ / AWQ / bitsandbytes
    ("model.layers.0.self_attn.q_proj.qweight", "parameter", "attn.q"),
    ("model.layers.0.self_attn.q_proj.qzeros", "quant", "attn.q"),
    ("model.layers.0.self_attn.q_proj.scales", "quant", "attn.q"),
    ("model.layers.0.mlp.down_proj.g_idx", "quant", "mlp.down"),
    ("model.layers.0.mlp.down_proj.weight.absmax", "quant", "mlp.down"),
    ("model.layers.0.mlp.down_proj.weight.quant_state.bitsandbytes__nf4", "quant", "mlp.down"),
    # vision-language: LLaVA-1.5, Qwen2-VL, Gemma 3
    ("vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight", "parameter", "vision"),
    ("vision_tower.vision_model.embeddings.position_ids", "buffer", "buffer"),
    ("multi_modal_projector.linear_1.weight", "parameter", "projector"),
    ("language_model.model.layers.0.self_attn.q_proj.weight", "parameter", "attn.q"),
    ("visual.blocks.0.attn.qkv.weight", "parameter", "vision"),
    ("visual.merger.mlp.0.weight", "parameter", "projector"),
    ("model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", "parameter", "vision"),
    # unknown names never crash
    ("something.entirely.new", "parameter", "other"),
    ("", "parameter", "other"),
    ("..7..", "parameter", "other"),
]


@pytest.mark.parametrize(("name", "kind", "role"), CASES)
def test_role_of_real_names(name: str, kind: str, role: str) -> None:
    place = classify(name)
    assert (place.kind, place.role) == (kind, role)
    assert place.role in ROLE_ORDER


def test_layer_and_expert_positions() -> None:
    p = classify("model.layers.12.block_sparse_moe.experts.7.w1.weight")
    assert (p.stack, p.layer, p.expert) == ("model.layers", 12, 7)
    p = classify("vision_tower.vision_model.encoder.layers.3.mlp.fc1.weight")
    assert (p.stack, p.layer) == ("vision_tower.vision_model.encoder.layers", 3)
    p = classify("h.11.mlp.c_fc.weight")
    assert (p.stack, p.layer) == ("h", 11)
    p = classify("encoder.layer.5.output.dense.weight")
    assert (p.stack, p.layer) == ("encoder.layer", 5)
    assert classify("model.norm.weight").layer is None


def test_every_table_row_names_where_it_was_seen() -> None:
    for row in (*KIND_TABLE, *ROLE_TABLE):
        assert len(row) == 3 and row[2].strip()


# --- the two memos agree ------------------------------------------------------------------------

_PART = st.one_of(
    st.sampled_from(["model", "layers", "h", "blocks", "mlp", "experts", "self_attn", "q_proj", "w1", "w2", "w3",
                     "fc1", "fc2", "weight", "bias", "scales", "qweight", "embed_tokens", "lm_head", "norm",
                     "block_sparse_moe", "gate", "shared_experts", "inv_freq", "", "01", "1e5", "٣", "#", "w#",
                     "\xff"]),
    st.integers(0, 300).map(str),
    st.text("ab0129._", min_size=1, max_size=6),
)


def _regex_path(name: str) -> roles.Placement:
    """classify with the digit-key memo out of the way: every name through the regex path."""
    saved = roles._fast_entry
    roles._fast_entry = lambda *_: False  # type: ignore[assignment]
    try:
        roles._FAST.clear()
        return classify(name)
    finally:
        roles._fast_entry = saved
        roles._FAST.clear()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_PART, min_size=1, max_size=8).map(".".join), min_size=1, max_size=12))
def test_the_digit_key_memo_answers_as_the_regex_path(names: list[str]) -> None:
    """Names that share their digits' places (``w1``/``w2``, ``layers.3``/``layers.7``) are each
    classified as the regex path classifies them alone, in any order."""
    expected = [_regex_path(n) for n in names]
    assert expected == [roles.classify_plain(n) for n in names]  # the shape memo: the specification's answers
    roles._FAST.clear()
    assert [classify(n) for n in names] == expected
    assert [classify(n) for n in reversed(names)] == expected[::-1]
    roles._FAST.clear()
    assert roles.classify_all(names) == expected
    assert roles.classify_all([*names, *names]) == expected * 2  # the memos filled: the same answers


def test_parts_with_digits_keep_their_roles_under_one_digit_key() -> None:
    roles._FAST.clear()
    got = [classify(f"model.layers.{i}.block_sparse_moe.experts.{j}.w{k}.weight") for i, j, k in
           [(1, 2, 1), (3, 4, 2), (5, 6, 3)]]
    # Mixtral's w1/w2/w3: gate, down, up (the role table's Meta-originals rows)
    assert [(p.role, p.layer, p.expert) for p in got] == [
        ("moe.expert.gate", 1, 2), ("moe.expert.down", 3, 4), ("moe.expert.up", 5, 6)]


def test_a_trailing_newline_or_a_leading_number_is_classified_as_the_regex_path() -> None:
    # the regex's `$` also matches before a final newline; a first part has no dot before it
    for name in ["model.layers.12\n", "model.layers.12.w1\n", "3.mlp.w2.weight", "٣.layers.٤.fc1.weight"]:
        roles._FAST.clear()
        assert classify(name) == _regex_path(name), name


def test_names_that_are_not_ascii_are_classified_as_the_regex_path() -> None:
    # the memo reads numbers at fixed character places, which only an ASCII name's key gives
    # (é is two bytes of UTF-8): such names take the regex path, and agree with it
    names = ["modèle.layers.3.mlp.w1.weight", "modèle.layers.12.mlp.w2.weight", "model.layers.4.mlp.w3.weight",
             "model.layers.4.mlp.w3.wéight", "modèle.embed_tokens.weight"]
    expected = [_regex_path(n) for n in names]
    roles._FAST.clear()
    assert roles.classify_all(names) == expected
    assert [(p.layer, p.role) for p in expected[:3]] == [(3, "mlp.gate"), (12, "mlp.down"), (4, "mlp.up")]


def test_a_name_holding_the_memos_placeholder_is_not_taken_for_a_number() -> None:
    # the memos once wrote numbers as '#': 'model.layers.#.mlp' then shared a key and a shape
    # with 'model.layers.5.mlp' and raised (int('#'), an empty number list) instead of answering
    for names in (["model.layers.5.mlp.up_proj.weight", "model.layers.#.mlp.up_proj.weight"],
                  ["model.layers.#.mlp.up_proj.weight", "model.layers.5.mlp.up_proj.weight"]):
        roles._FAST.clear()
        roles._SHAPES.clear()
        got = {n: (p.role, p.stack, p.layer) for n, p in zip(names, roles.classify_all(names), strict=True)}
        assert got == {"model.layers.5.mlp.up_proj.weight": ("mlp.up", "model.layers", 5),
                       "model.layers.#.mlp.up_proj.weight": ("mlp.up", None, None)}


def test_the_memos_stop_growing_at_their_limit_and_still_answer(monkeypatch) -> None:
    """A hostile header of many distinct names cannot grow the process-wide memos without end."""
    monkeypatch.setattr(roles, "MEMO_LIMIT", 5)
    for memo in (roles._FAST, roles._SHAPES, roles._NUMBERS):
        memo.clear()
    names = [f"model.layers.{i}.mlp.x{chr(97 + i % 26)}{i}_proj.weight" for i in range(60)]
    got = [classify(n) for n in names]
    assert len(roles._FAST) <= 5 and len(roles._SHAPES) <= 5 and len(roles._NUMBERS) <= 5
    assert [(p.layer, p.stack) for p in got] == [(i, "model.layers") for i in range(60)]
    for memo in (roles._FAST, roles._SHAPES, roles._NUMBERS):
        memo.clear()


@pytest.mark.parametrize("alias", ["deepseek-v3", "llama3-8b", "gpt2", "mixtral-8x7b", "qwen3-0.6b"])
def test_the_summary_s_layer_blocks_are_the_plain_grouping_s(alias: str) -> None:
    """``summarize_tensors`` gathers the layer blocks in its own pass (issue 39: a second pass over a
    million tensors cost 0.14 s); the plain twin groups them with ``by_layer``. Both collapse alike, on
    the bundled checkpoints in their order and with their tensors reversed (layers then arrive out of
    order and each layer's tensors in another order)."""
    from inspector.analysis.facts.stats import _collapse, by_layer, layer_groups, placed, summarize_tensors
    from inspector.sources.bundled import ALIASES, bundled_path
    from inspector.sources.resolve import open_checkpoint

    tensors = placed(open_checkpoint(str(bundled_path(ALIASES[alias]))).tensors())
    for order in (tensors, tensors[::-1]):
        plain = _collapse(by_layer(order))
        assert summarize_tensors(order).layer_groups == plain == layer_groups(order)
        assert plain  # every one of these has a layer stack


def _bundled_names() -> dict[str, list[str]]:
    """Every tensor name of each bundled snapshot (one entry a snapshot, aliases folded), in file order."""
    from inspector.sources.bundled import ALIASES, bundled_path
    from inspector.sources.resolve import open_checkpoint

    out: dict[str, list[str]] = {}
    for alias in ALIASES.values():
        folder = bundled_path(alias)
        if folder.name not in out:
            out[folder.name] = [t.name for t in open_checkpoint(str(folder)).tensors()]
    return out


def _the_fast_twin_answers_as_the_plain_classifier(names: list[str]) -> None:
    plain = [roles.classify_plain(n) for n in names]
    for order in (names, names[::-1]):
        for memo in (roles._FAST, roles._SHAPES, roles._NUMBERS):
            memo.clear()
        got = roles.classify_all(order)
        assert got == (plain if order is names else plain[::-1])
    assert roles.classify_all(names) == plain  # with the memos full


def test_the_fast_classifier_is_the_plain_one_on_every_bundled_snapshot() -> None:
    """Issue 39: ``classify_all`` (memoised on each name's digit key) against ``classify_plain`` (every
    table row searched in the name itself) on all 14 bundled snapshots' tensors, in order and reversed."""
    everything = _bundled_names()
    assert len(everything) == 14 and sum(map(len, everything.values())) > 95_000
    for names in everything.values():
        _the_fast_twin_answers_as_the_plain_classifier(names)


def test_the_fast_classifier_is_the_plain_one_on_the_fuzz_corpus() -> None:
    """The fuzz corpus: the bundled names with bytes flipped, cut and inserted by the fuzz stage's own
    mutation (scripts/fuzz.py ``_flip``, seeded), read as UTF-8 with bad bytes kept as lone surrogates (as a
    JSON header's escapes can give), and the names of the reference fuzz's 20,000 headers."""
    import json
    import random
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import fuzz
    import test_reference_fuzz as reference

    rng = random.Random(20261126)
    real = [n for names in _bundled_names().values() for n in names]
    flipped = [fuzz._flip(rng, n.encode(), rng.randint(1, 3)).decode("utf-8", "surrogateescape")
               for n in rng.sample(real, 20_000)]
    ref_rng = random.Random(reference.SEED)
    theirs: list[str] = []
    for _ in range(2_000):
        blob = reference._case(ref_rng)
        try:
            doc = json.loads(blob[8:8 + int.from_bytes(blob[:8], "little")])
        except (ValueError, UnicodeDecodeError):
            continue
        theirs += [k for k in doc if isinstance(k, str)] if isinstance(doc, dict) else []
    corpus = flipped + theirs
    assert len(set(corpus)) > 15_000 and any(not n.isascii() for n in corpus)
    _the_fast_twin_answers_as_the_plain_classifier(corpus)


_ROWS = [(value, pattern) for value, pattern, _ in (*KIND_TABLE, *ROLE_TABLE)]


def test_every_match_of_a_row_holds_one_of_its_required_texts() -> None:
    """The prefilter may only skip rows that cannot match: on every bundled name, each row that matches
    it (``re.search``, the table's own meaning) has one of ``required_texts`` in it; and each row's texts
    are read off as the pattern says (a few written out here)."""
    import re

    names = {n for names in _bundled_names().values() for n in names}
    for value, pattern in _ROWS:
        texts = roles.required_texts(pattern)
        for name in names:
            if re.search(pattern, name):
                assert any(t in name for t in texts), (value, pattern, texts, name)
    spelled = {r"(^|\.)embed_tokens\.": ("embed_tokens.",), r"\.(q_proj|wq|query)\.": ("q_proj", "wq", "query"),
               r"\.DenseReluDense\.wi(_1)?\.": (".DenseReluDense.wi",), r"_scales$": ("_scales",),
               r"(?i)(^|\.)ln\.": ("",), r"a_b|c_d": ("",), r"ab?c": ("a",), r"xy[ab]\]z": ("xy",),
               r"(foo|bar)?bazz": ("bazz",), r"xa{10,300}": ("x",),  # a count is no text of the name
               r"\.experts\.(\d+\.)?(w1|gate_proj)(\.|$|_)": (".experts.",)}
    assert {p: roles.required_texts(p) for p in spelled} == spelled
    for pattern, texts in spelled.items():  # each one is what a match must hold
        for name in ("model.embed_tokens.weight", "h.q_proj.w", "x.DenseReluDense.wi.y", "w_scales", "ac", "xyb]z",
                     "foobazz", "bazz", "m.experts.3.w1.weight", "x" + "a" * 10):
            if re.search(pattern, name):
                assert any(t in name for t in texts)


def test_a_run_compiles_only_the_rows_its_names_can_match() -> None:
    """A fresh process classifying Qwen3-0.6B's 311 names compiles 14 of the tables' 108 patterns (its
    names hold the required texts of those alone), and answers as the plain classifier."""
    import subprocess
    import sys

    code = ("from inspector.analysis.facts import roles\n"
            "from inspector.sources.bundled import ALIASES, bundled_path\n"
            "from inspector.sources.resolve import open_checkpoint\n"
            "names = [t.name for t in open_checkpoint(str(bundled_path(ALIASES['qwen3-0.6b']))).tensors()]\n"
            "assert roles.classify_all(names) == [roles.classify_plain(n) for n in names]\n"
            "print(len(names), sum(rx is not None for rx in roles._KINDS.compiled + roles._ROLES.compiled))\n")
    # classify_plain is run after classify_all: it searches with re's own cache, not the rows'
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    tensors, compiled = map(int, done.stdout.split())
    assert tensors == 311 and len(_ROWS) == 108
    assert compiled <= 20, compiled


def test_layers_alike_in_another_order_collapse_and_a_repeated_name_counts_as_often_as_it_occurs() -> None:
    """The collapse compares a layer with its run's first in any order (a layer split across two shards at
    another place lists its tensors in another order: most of DeepSeek-V3's). Where a name occurs twice in a
    layer (two files holding one tensor, read leniently), the layers are alike only when each name occurs as
    often: layer 2 has the names of layer 0 (as a set) but ``b`` twice and ``a`` once, so it starts a block."""
    from inspector.analysis.facts.roles import classify
    from inspector.analysis.facts.stats import Tensor, layer_groups
    from inspector.model import TensorInfo

    def layer(index: int, names: list[str]) -> list[Tensor]:
        return [Tensor(TensorInfo(f"model.layers.{index}.{n}", "F16", (2,), 0, 4, "f", 2),
                       classify(f"model.layers.{index}.{n}")) for n in names]

    tensors = layer(0, ["a", "a", "b"]) + layer(1, ["b", "a", "a"]) + layer(2, ["a", "b", "b"])
    assert [(g.first, g.last) for g in layer_groups(tensors)] == [(0, 1), (2, 2)]
    distinct = layer(0, ["a", "b", "c"]) + layer(1, ["c", "a", "b"]) + layer(2, ["b", "c", "a"])
    assert [(g.first, g.last) for g in layer_groups(distinct)] == [(0, 2)]
