"""inspect diff: the explanation sums exactly and matches the reference split (fixtures/reference.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import FIXTURES, ref, save_real, tiny_llama

from inspector.analysis.comparison.diff import diff_reports
from inspector.analysis.facts.report import build_report
from inspector.errors import EXIT_NOT_FOUND, EXIT_USAGE
from inspector.sources.resolve import open_checkpoint

GOLDEN = FIXTURES / "golden"


def diff(a: str, b: str):
    return diff_reports(build_report(open_checkpoint(a)), build_report(open_checkpoint(b)))


def causes(d) -> dict[str, int]:
    return {c.key: c.delta for c in d.causes}


def test_llama2_to_llama3_as_in_the_reference() -> None:
    d = diff("llama2-7b", "llama3-8b")
    assert d.parameters == (ref("llama2-7b.parameters"), ref("llama3-8b.parameters"))
    assert d.delta == ref("llama3-8b.parameters") - ref("llama2-7b.parameters")
    assert causes(d) == {"vocabulary": ref("diff.llama2-llama3.vocabulary"), "MLP width": ref("diff.llama2-llama3.mlp"),
                         "KV width": ref("diff.llama2-llama3.kv"), "residual": 0}
    vocab = next(c for c in d.causes if c.key == "vocabulary")
    half = ref("diff.llama2-llama3.vocabulary") // 2
    assert {i.tensor: i.delta for i in vocab.items} == {"model.embed_tokens.weight": half, "lm_head.weight": half}
    assert d.buffers[1] - d.buffers[0] == -ref("llama2-7b.buffers")
    assert sum(c.delta for c in d.causes) == d.delta
    # bytes: F16 → BF16 keeps 2 bytes per element; the F32 inv_freq buffers go
    assert dict((dt, db) for dt, _, db in d.bytes_by_dtype()) == {
        "BF16": ref("llama3-8b.bytes"), "F16": -2 * ref("llama2-7b.parameters"), "F32": -4 * ref("llama2-7b.buffers")}
    assert sum(db for *_, db in d.bytes_by_dtype()) == d.bytes[1] - d.bytes[0]


def test_mistral_to_mixtral_explains_experts_router_and_active() -> None:
    d = diff("mistral-7b", "mixtral-8x7b")
    per_expert = 3 * 4096 * 14336
    assert causes(d) == {"experts": (8 - 1) * per_expert * 32, "router": 8 * 4096 * 32, "residual": 0}
    assert d.active == (None, ref("mixtral-8x7b.active"))
    assert d.parameters[1] == ref("mixtral-8x7b.parameters")


def test_llama3_8b_to_70b_explains_hidden_mlp_layers_heads() -> None:
    d = diff("llama3-8b", "llama3-70b")
    c = causes(d)
    assert set(c) == {"hidden size", "layer count", "MLP width", "q width", "residual"}
    assert c["layer count"] == 48 * 218_112_000  # 48 extra layers at 8B's per-layer size
    assert c["residual"] == 0
    assert sum(c.values()) == ref("llama3-70b.parameters") - ref("llama3-8b.parameters")


def test_reverse_diff_negates_every_cause() -> None:
    forward, backward = causes(diff("llama2-7b", "llama3-8b")), causes(diff("llama3-8b", "llama2-7b"))
    assert backward == {k: -v for k, v in forward.items()}


def test_gpt2_to_phi2_explains_across_families() -> None:
    """GPT-2's Conv1D weights are read [out, in]; its fused c_attn meets Phi-2's q/k/v by the config's
    widths. Figures from the two real configs (fixtures/realdata: n_embd 768, n_layer 12, vocab 50,257,
    n_positions 1,024; hidden 2,560, 32 layers, vocab 51,200, MLP 10,240)."""
    d = diff("gpt2", "phi-2")
    c = causes(d)
    assert d.delta == ref("phi-2.bytes") // 2 - ref("gpt2.parameters")  # phi-2 is all F16
    assert sum(c.values()) == d.delta
    assert {"vocabulary", "hidden size", "layer count", "MLP width", "positions", "tied embeddings"} <= set(c)
    assert abs(c["residual"]) <= 0.05 * abs(d.delta)
    assert c["residual"] == 0
    assert c["vocabulary"] == (51200 - 50257) * 768  # GPT-2 ties lm_head: one matrix
    assert c["positions"] == -1024 * 768  # wpe: learned positions against rotary
    gpt2_layer = 12 * 768 * 768 + 3 * 768 + 768 + 4 * 768 + 768 + 4 * 768  # weights, biases, two LayerNorms
    assert c["layer count"] == (32 - 12) * gpt2_layer
    assert c["tied embeddings"] == 51200 * 2560
    assert c["biases"] == 51200  # lm_head.bias
    assert c["norms"] == -32 * 2 * 768  # ln_2 (weight + bias) has no counterpart in Phi-2's parallel block
    assert not d.same_layout and any("different layouts" in note for note in d.notes)


def test_phi2_to_phi3_mini_splits_fused_projections() -> None:
    """Phi-3's qkv_proj and gate_up_proj are cut by the config's widths (fixtures/snapshot-configs)."""
    d = diff("phi-2", "phi-3-mini")
    c = causes(d)
    assert d.delta == ref("phi-3-mini.parameters") - ref("phi-2.bytes") // 2
    assert sum(c.values()) == d.delta and c["residual"] == 0
    assert {"vocabulary", "hidden size", "MLP width", "gated MLP", "biases", "norms"} <= set(c)
    assert "layer count" not in c  # both configs have num_hidden_layers 32: layers are no cause here
    assert c["vocabulary"] == 2 * (32064 - 51200) * 2560  # embedding and untied lm_head, at Phi-2's hidden
    assert c["gated MLP"] == 32 * 8192 * 3072  # the gate half of gate_up_proj, at Phi-3's widths
    # Phi-2's biases: q, k, v, dense, fc2 (2,560 each), fc1 (10,240) per layer, and lm_head's
    assert c["biases"] == -(32 * (5 * 2560 + 10240) + 51200)
    label = next(x.label for x in d.causes if x.key == "norms")
    assert "LayerNorm (weight + bias)" in label and "RMSNorm (weight)" in label
    assert any("partial rotary 0.4 → 1" in note for note in d.notes)


def test_tinyllama_to_qwen3_and_qwen_to_llama3() -> None:
    d = diff("tinyllama", "qwen3-0.6b")
    c = causes(d)
    assert d.delta == ref("qwen3-0.6b.parameters") - ref("tinyllama.parameters")
    assert sum(c.values()) == d.delta and c["residual"] == 0
    tiny_layer = 2 * 2048 * 2048 + 2 * 4 * 64 * 2048 + 3 * 5632 * 2048 + 2 * 2048  # TinyLlama's config
    assert c["layer count"] == (28 - 22) * tiny_layer
    assert "tied embeddings" not in c  # Qwen3-0.6B's repo stores lm_head.weight, as TinyLlama's does
    assert c["norms"] == 28 * 2 * 128  # Qwen3's q_norm and k_norm over head_dim 128
    # Qwen2.5-7B → Llama-3-8B: Qwen's q/k/v biases are a named cause (over Llama's 32 layers)
    d = diff("qwen2.5-7b", "llama3-8b")
    c = causes(d)
    assert abs(c["residual"]) <= 0.01 * abs(d.delta)
    assert c["biases"] == -32 * (3584 + 2 * 512)


def test_llama2_to_mistral_is_kv_heads_and_mlp_width() -> None:
    d = diff("llama2-7b", "mistral-7b")
    c = causes(d)
    # Llama-2-7B: hidden 4,096, MLP 11,008, 32 KV heads; Mistral-7B: MLP 14,336, 8 KV heads (configs)
    assert c == {"MLP width": 32 * 3 * (14336 - 11008) * 4096, "KV width": 32 * 2 * (1024 - 4096) * 4096,
                 "residual": 0}


def test_added_tokens_in_a_fine_tune(tmp_path: Path) -> None:
    """Vocabulary 32,000 → 32,002: 2 rows × hidden 4,096 × 2 tensors, with the config updated or not."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import make_snapshots as ms

    tuned = {**ms.LLAMA2_7B, "vocab_size": 32002}
    ms.build(ms.Model("acme/llama2-7b-tuned", tuned, lambda c: ms.llama_like(c, dtype="F16"), None), tmp_path)
    stale = ms.LLAMA2_7B  # the tokens were added, the config was not updated
    ms.build(ms.Model("acme/llama2-7b-stale", stale,
                      lambda c: ms.llama_like({**c, "vocab_size": 32002}, dtype="F16"), None), tmp_path)
    ms.build(ms.Model("acme/llama2-7b", ms.LLAMA2_7B, lambda c: ms.llama_like(c, dtype="F16"), None), tmp_path)
    for name in ("acme__llama2-7b-tuned", "acme__llama2-7b-stale"):
        d = diff(str(tmp_path / "acme__llama2-7b"), str(tmp_path / name))
        assert causes(d) == {"vocabulary": 2 * 4096 * 2, "residual": 0}, name
        label = next(c.label for c in d.causes if c.key == "vocabulary")
        assert label == "vocabulary 32,000 → 32,002 (+2 tokens)", name


def test_identical_models(cli) -> None:
    r = cli("diff", "gpt2", "gpt2")
    assert r.code == 0 and "no differences" in r.out
    assert cli("diff", "gpt2", "gpt2", "--json").json()["identical"] is True


def test_json_sums_and_is_stable(cli) -> None:
    """Golden file: INSPECTOR_UPDATE_GOLDEN=1 rewrites it (read the diff before committing)."""
    first = cli("diff", "llama2-7b", "llama3-8b", "--json").json()
    second = cli("diff", "llama2-7b", "llama3-8b", "--json").json()
    assert first == second
    assert sum(c["delta"] for c in first["causes"]) == first["delta"]["parameters"] == 1_291_845_632
    for c in first["causes"]:
        assert sum(i["delta"] for i in c["items"]) == c["delta"]
    golden = GOLDEN / "diff_llama2-7b_llama3-8b.json"
    if os.environ.get("INSPECTOR_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(first, indent=2, ensure_ascii=False) + "\n")
    assert first == json.loads(golden.read_text())


def test_markdown_for_pull_requests(cli) -> None:
    r = cli("diff", "mistral-7b", "mixtral-8x7b", "--format", "markdown")
    assert r.code == 0
    assert r.out.startswith("### mistralai/Mistral-7B-Instruct-v0.2 → mistralai/Mixtral-8x7B-v0.1")
    assert "| **MoE router** | | | | **+1,048,576** |" in r.out


def test_fail_if_gates(cli) -> None:
    assert cli("diff", "llama2-7b", "llama3-8b", "--fail-if", "params").code == 1
    assert cli("diff", "llama2-7b", "llama3-8b", "--fail-if", "dtypes").code == 1
    assert cli("diff", "gpt2", "gpt2", "--fail-if", "any").code == 0
    assert cli("diff", "gpt2", "gpt2", "--fail-if", "nonsense").code == EXIT_USAGE


def test_a_missing_side_is_not_found(cli, tmp_path: Path) -> None:
    r = cli("diff", "gpt2", str(tmp_path / "nope"))
    assert r.code == EXIT_NOT_FOUND and r.err.startswith("Error:")


def test_layer_count_and_tied_embeddings_on_tiny_models(tmp_path: Path) -> None:
    for name, kw in (("a", {"layers": 2, "tied": False}), ("b", {"layers": 3, "tied": True})):
        config, entries = tiny_llama(**kw)
        folder = tmp_path / name
        save_real(folder / "model.safetensors", {n: (dt, s) for n, dt, s in entries})
        (folder / "config.json").write_text(json.dumps(config))
    d = diff(str(tmp_path / "a"), str(tmp_path / "b"))
    per_layer = 4 * 8 * 8 // 2 * 0 + (8 * 8 + 4 * 8 + 4 * 8 + 8 * 8) + 3 * 8 * 16 + 2 * 8
    assert causes(d) == {"layer count": per_layer, "tied embeddings": -32 * 8, "residual": 0}


def test_an_added_name_that_reads_like_a_layer_pattern_is_its_own_change(tmp_path: Path) -> None:
    config, entries = tiny_llama()
    extra = {f"model.layers.{i}.mlp.extra.weight": ("F32", (4,)) for i in range(2)}
    extra["model.layers.{#}.mlp.extra.weight"] = ("F32", (4,))  # not in a layer: a name like a pattern
    for name, more in (("a", {}), ("b", extra)):
        save_real(tmp_path / name / "model.safetensors", {**{n: (dt, s) for n, dt, s in entries}, **more})
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    d = diff(str(tmp_path / "a"), str(tmp_path / "b"))
    added = {c.name: c.count for c in d.changes if c.kind == "added"}
    # two layers' tensors in one row, the look-alike alone (it once joined the row: ×3)
    assert added == {"model.layers.{0–1}.mlp.extra.weight": 2, "model.layers.{#}.mlp.extra.weight": 1}


def test_layer_numbers_far_apart_or_with_gaps_are_diffed_by_the_layers_present(tmp_path: Path) -> None:
    """A header naming layer 10⁹ once made a loop of 10⁹ ledger rows; a gap in A's numbers a
    KeyError. Run as a process with a deadline, so a regression fails rather than hangs."""
    import subprocess
    import sys

    config, entries = tiny_llama(layers=3)
    tensors = {n: (dt, s) for n, dt, s in entries}
    gap = {n: v for n, v in tensors.items() if ".layers.1." not in n}  # layers 0 and 2
    far = {**tensors, "model.layers.1000000000.mlp.up_proj.weight": ("F32", (16, 8))}
    for name, content in (("gap", gap), ("far", far)):
        save_real(tmp_path / name / "model.safetensors", content)
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    for a, b in (("far", "gap"), ("gap", "far")):
        done = subprocess.run([sys.executable, "-m", "inspector", "diff", str(tmp_path / a), str(tmp_path / b),
                               "--json"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-300:]
        doc = json.loads(done.stdout)
        delta = doc["delta"]["parameters"]
        # B − A: one layer of tiny_llama (q, o 8·8 each; k, v 4·8 each; gate, up, down 8·16
        # each; two norms of 8: 592) and the far tensor (16·8), each way round
        assert delta == (592 + 16 * 8) * (1 if b == "far" else -1)
        assert sum(c["delta"] for c in doc["causes"]) + doc["residual"] == delta, doc["causes"]


def test_quantised_against_dense_is_a_named_cause(tmp_path: Path) -> None:
    """A GPTQ model against its dense original: parameters are logical everywhere, so the delta is 0
    (the logical count of Llama-2-13B, fixtures/reference.json); the storage change is in the bytes."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import make_snapshots as ms

    dense = {k: v for k, v in ms.LLAMA2_13B_GPTQ.items() if k != "quantization_config"}
    ms.build(ms.Model("acme/llama2-13b-dense", dense, lambda c: ms.llama_like(c, dtype="F16"), None), tmp_path)
    d = diff(str(tmp_path / "acme__llama2-13b-dense"), "llama2-13b-gptq")
    found = causes(d)
    assert d.delta == 0 and found.get("residual", 0) == 0 and sum(found.values()) == 0
    assert d.a.summary.parameters == d.b.summary.parameters == ref("llama2-13b-gptq.logical")
    assert d.b.summary.stored_elements < d.b.summary.parameters and d.bytes[1] < d.bytes[0]


def test_json_causes_and_residual_add_up_once_for_every_bundled_pair(cli) -> None:
    """`causes` holds named causes only and `residual` appears once: their sum is the gap, for every
    ordered pair of bundled models; across families too, nothing is left unexplained but DeepSeek-V3's MLA."""
    from inspector.sources.bundled import all_aliases

    names = [a.name for a in all_aliases() if a.name != "deepseek-v3"]  # the large one is covered below
    for a in names:
        for b in names:
            doc = cli("diff", a, b, "--json").json()
            assert all(c["cause"] != "residual" for c in doc["causes"]), (a, b)
            assert sum(c["delta"] for c in doc["causes"]) + doc["residual"] == doc["delta"]["parameters"], (a, b)
            assert doc["residual"] == 0, (a, b)  # every bundled pair without MLA is explained in full
    doc = cli("diff", "llama3-8b", "deepseek-v3", "--json").json()
    assert sum(c["delta"] for c in doc["causes"]) + doc["residual"] == doc["delta"]["parameters"]


def test_compare_a_family_side_by_side(cli) -> None:
    models = ("llama2-7b", "llama3-8b", "mistral-7b", "qwen2.5-7b")
    doc = cli("compare", *models, "--json").json()
    totals = [m["totals"]["parameters"] for m in doc["models"]]
    assert totals == [ref("llama2-7b.parameters"), ref("llama3-8b.parameters"),
                      ref("mistral-7b.bytes") // 2, ref("qwen2.5-7b.parameters")]  # Mistral is all BF16
    assert [m["kv_bytes_per_token"] for m in doc["models"]][:2] == [ref("llama2-7b.kv_bytes_per_token"),
                                                                     ref("llama3-8b.kv_bytes_per_token")]
    for m in doc["models"]:
        assert sum(v for role, v in m["roles"].items() if role != "buffer") == m["totals"]["parameters"]
    table = cli("compare", *models).out
    assert f"{ref('qwen2.5-7b.parameters'):,}" in table and "Parameters by role" in table
    md = cli("compare", *models, "--format", "markdown").out
    assert md.startswith("**Totals**") and f"| parameters | {ref('llama2-7b.parameters'):,} |" in md
    assert cli("compare", "gpt2").code == EXIT_USAGE


def test_a_saved_lm_head_under_one_tied_config_is_labelled_as_what_changed(tmp_path: Path) -> None:
    """Issue 41: "tied embeddings True → False" was printed when both configs say tie_word_embeddings true
    and only B saved an lm_head. The label says what differs; the delta is the saved lm_head (vocab × hidden)."""
    cfg, tied = tiny_llama(tied=True)
    _, untied = tiny_llama(tied=False)
    for name, entries in (("a", tied), ("b", untied)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))  # tie_word_embeddings true in both
        save_real(tmp_path / name / "model.safetensors", {n: (d, s) for n, d, s in entries})
    d = diff_reports(build_report(open_checkpoint(str(tmp_path / "a"))),
                     build_report(open_checkpoint(str(tmp_path / "b"))))
    cause = next(c for c in d.causes if c.key == "tied embeddings")
    assert cause.delta == cfg["vocab_size"] * cfg["hidden_size"]
    assert cause.label == "lm_head not saved → saved (tie_word_embeddings true in both configs)"
    assert "True → False" not in cause.label


def test_one_report_on_both_sides_answers_as_two_equal_reports() -> None:
    """Issue 54: ``diff A A`` reads A once and builds one report for both sides, which takes shortcuts (no
    changes, each tensor paired with itself). Its answer equals the general path's over two reports built
    separately from the same files: GPTQ's and mlx-lm's packed words, a MoE with FP8 scales, Conv1D
    weights, fused projections."""
    from inspector.results.diff import diff_json

    packed = str(FIXTURES / "mlx" / "tiny-llama-4bit")  # mlx-lm's 4-bit words: 8 weights an element
    for alias in ("llama2-13b-gptq", "deepseek-v3", "gpt2", "phi-3-mini", packed):
        one = build_report(open_checkpoint(alias))
        other = build_report(open_checkpoint(alias))
        assert other is not one
        same, general = diff_reports(one, one), diff_reports(one, other)
        assert same.causes == general.causes and same.changes == general.changes == ()
        assert diff_json(same, None) == diff_json(general, None), alias
