"""``inspect lineage``: every verdict on checkpoints written by libraries nobody here wrote.

A tiny Llama (transformers' ``LlamaForCausalLM``, random weights, fp32) is the base; from it: a copy fine-tuned
three AdamW steps on layer 1 only (torch on CPU), the same weights re-sharded by ``save_pretrained``, a peft LoRA
on q_proj and v_proj merged into it (``merge_and_unload``), a linear merge of it and a second initialisation made
by mergekit (weights 0.3 and 0.7, its own YAML), GGUFs written by gguf-py's writer and quantiser (F16 and Q8_0, the
tensors named by gguf-py's ``TensorNameMap`` and q and k reordered as llama.cpp's ``convert_hf_to_gguf.py`` does),
an unpermuted peft adapter, and an unrelated initialisation of the same config (another seed). Each expected
verdict is what that library did to the weights, never our output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

import inspector
from inspector.cli.commands import run

HEADS, KV_HEADS = 4, 2


def _config() -> Any:
    import transformers

    return transformers.LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
                                    num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                                    max_position_embeddings=256, tie_word_embeddings=False)


def _model(seed: int) -> Any:
    import torch
    import transformers

    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(_config()).eval()


def _finetune(base: Path, out: Path) -> None:
    """Three AdamW steps on layer 1's parameters only (the rest frozen), on random tokens."""
    import torch
    import transformers

    model = transformers.LlamaForCausalLM.from_pretrained(base)
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("model.layers.1.")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    torch.manual_seed(5)
    for _ in range(3):
        ids = torch.randint(0, 1024, (2, 16))
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(out)


def _lora(base: Path, merged: Path, adapter: Path) -> None:
    import peft
    import transformers

    model = transformers.LlamaForCausalLM.from_pretrained(base)
    # init_lora_weights=False: B is random too, so the merge changes q and v (peft's default B = 0 would not)
    lora = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                      init_lora_weights=False))
    lora.save_pretrained(adapter)
    lora.merge_and_unload().save_pretrained(merged)


def _mergekit(a: Path, b: Path, out: Path) -> None:
    config = out.parent / "merge.yml"
    config.write_text(f"merge_method: linear\nmodels:\n  - model: {a}\n    parameters: {{weight: 0.3}}\n"
                      f"  - model: {b}\n    parameters: {{weight: 0.7}}\ndtype: float32\n")
    exe = Path(sys.executable).with_name("mergekit-yaml")
    done = subprocess.run([str(exe), str(config), str(out)], capture_output=True, text=True, timeout=600, check=False)
    assert (out / "model.safetensors").is_file(), done.stderr[-2000:]


def _permute(w: Any, heads: int, kv_heads: int) -> Any:
    """``convert_hf_to_gguf.py``'s ``LlamaModel.permute``, written out: rows of each head interleaved."""
    if kv_heads is not None and heads != kv_heads:
        heads = kv_heads
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _gguf(source: Path, out: Path, kind: str) -> None:
    """A GGUF of ``source`` as llama.cpp's converter writes one: gguf-py's names, q and k permuted, 2-D
    weights in ``kind`` (gguf-py's own quantiser for Q8_0), 1-D norms in F32; the base declared by repo URL."""
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    tensors = load_file(source / "model.safetensors")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_block_count(2)
    w.add_context_length(256)
    w.add_embedding_length(256)
    w.add_feed_forward_length(768)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_uint32("general.base_model.count", 1)
    w.add_string("general.base_model.0.repo_url", "https://huggingface.co/org/base")
    for name, data in tensors.items():
        if name.endswith("q_proj.weight"):
            data = _permute(data, HEADS, HEADS)
        elif name.endswith("k_proj.weight"):
            data = _permute(data, HEADS, KV_HEADS)
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert new is not None, name
        if data.ndim == 1:
            w.add_tensor(new, data.astype(np.float32))
        elif kind == "F16":
            w.add_tensor(new, data.astype(np.float16))
        else:
            qtype = gguf.GGMLQuantizationType[kind]
            w.add_tensor(new, gguf.quants.quantize(data.astype(np.float32), qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lineage")
    paths = {k: root / k for k in ("base", "other", "finetune", "resharded", "lora", "adapter")}
    _model(0).save_pretrained(paths["base"])
    _model(1).save_pretrained(paths["other"])
    _model(0).save_pretrained(paths["resharded"], max_shard_size="400KB")
    _finetune(paths["base"], paths["finetune"])
    _lora(paths["base"], paths["lora"], paths["adapter"])
    for kind in ("F16", "Q8_0"):
        paths[f"gguf-{kind}"] = root / f"base.{kind}.gguf"
        _gguf(paths["base"], paths[f"gguf-{kind}"], kind)
    paths["gguf-other"] = root / "other.Q8_0.gguf"
    _gguf(paths["other"], paths["gguf-other"], "Q8_0")
    return paths


@pytest.fixture(scope="module")
def merged(family: dict[str, Path]) -> Path:
    """mergekit's linear merge of the base (0.3) and the second initialisation (0.7), by its own CLI."""
    pytest.importorskip("mergekit")
    out = family["base"].parent / "merge"
    if not (out / "model.safetensors").is_file():
        _mergekit(family["base"], family["other"], out)
    return out


@pytest.fixture(scope="module", params=[False, True], ids=["nf4", "nf4-double-quant"])
def bnb4(family: dict[str, Path], request: pytest.FixtureRequest) -> Path:
    """The base loaded by transformers with bitsandbytes' 4-bit NF4 (on CPU; with and without double
    quantisation) and saved: the linears packed with absmax, quant_map and quant_state; the rest as they were."""
    pytest.importorskip("bitsandbytes")
    import transformers

    out = family["base"].parent / f"bnb4-{request.param}"
    if not out.is_dir():
        config = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                 bnb_4bit_use_double_quant=request.param)
        model = transformers.AutoModelForCausalLM.from_pretrained(family["base"], quantization_config=config,
                                                                  device_map="cpu")
        model.save_pretrained(out)
    return out


def lineage(model: Path | str, *candidates: Path | str) -> dict[str, Any]:
    return inspector.lineage(str(model), [str(c) for c in candidates]).to_dict()


def by_model(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {Path(c["model"]).name: c for c in doc["candidates"]}


def test_the_resharded_copy_is_identical_and_a_second_initialisation_unrelated(family: dict[str, Path]) -> None:
    """save_pretrained's max_shard_size splits the same weights over files: identical; another seed: unrelated."""
    doc = lineage(family["resharded"], family["base"], family["other"])
    cands = by_model(doc)
    assert doc["verdict"] == "identical" and Path(doc["base"]).name == "base"
    assert cands["base"]["relation"] == "identical"
    assert cands["other"]["relation"] == "unrelated" and cands["other"]["tensors_equal"] == 0
    assert cands["base"]["tensors_equal"] == cands["base"]["tensors_compared"] - cands["base"]["tensors_constant"] > 0


def test_the_finetune_changed_layer_one_only(family: dict[str, Path]) -> None:
    """Three AdamW steps with only model.layers.1 trainable: every sampled tensor of layer 1 changed (its norms
    too: AdamW moves every trainable weight), nothing else."""
    doc = lineage(family["finetune"], family["base"])
    base = by_model(doc)["base"]
    assert doc["verdict"] == "finetune" and base["relation"] == "finetune"
    assert base["changed_layers"] == [1]
    changed = {t["name"] for t in base["tensors"] if t["relation"] == "changed"}
    trained = {f"model.layers.1.{m}.weight" for m in (
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
        "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm")}
    assert changed == trained
    assert all(t["correlation"] is None or t["correlation"] > 0.9 for t in base["tensors"] if t["name"] in trained)


def test_the_unrelated_pairs_are_never_called_a_finetune(family: dict[str, Path]) -> None:
    """Two initialisations share their norms (ones) and nothing else: every pair is unrelated, both ways, the
    norms counted as constants (no evidence), the fine-tune of one against the other too."""
    for model, candidate in (("other", "base"), ("base", "other"), ("finetune", "other"), ("gguf-other", "base")):
        doc = lineage(family[model], family[candidate])
        assert doc["verdict"] == "unrelated", (model, candidate, doc["evidence"])
        assert doc["base"] is None


def test_a_merged_lora_changed_only_its_targets(family: dict[str, Path]) -> None:
    """peft's merge_and_unload adds B·A·α/r to q_proj and v_proj: those changed in every layer, the rest equal."""
    doc = lineage(family["lora"], family["base"])
    base = by_model(doc)["base"]
    assert doc["verdict"] == "finetune"
    assert set(base["changed_roles"]) == {"attn.q", "attn.v"} and base["changed_layers"] == [0, 1]
    assert base["tensors_changed"] == 4


def test_the_unmerged_adapter_is_an_adapter_of_its_base(family: dict[str, Path]) -> None:
    """The adapter folder peft saved names its base by path: every module fits it (no value read)."""
    doc = lineage(family["adapter"], family["base"])
    assert doc["verdict"] == "adapter" and doc["bytes_read"] == 0


def test_mergekit_linear_is_found_with_its_parents_and_weights(family: dict[str, Path], merged: Path) -> None:
    """mergekit's linear merge (weights 0.3 and 0.7 in the YAML) of the base and a second initialisation."""
    doc = lineage(merged, family["base"], family["other"])
    assert doc["verdict"] == "merge"
    assert sorted(Path(p).name for p in doc["parents"]) == ["base", "other"]
    weights = {Path(k).name: v for k, v in doc["weights"].items()}
    assert weights["base"] == pytest.approx(0.3, abs=1e-4) and weights["other"] == pytest.approx(0.7, abs=1e-4)
    cands = by_model(doc)
    assert cands["base"]["tensors_blended"] == cands["other"]["tensors_blended"] > 0
    assert all(c["relation"] == "merge" for c in cands.values())


@pytest.mark.parametrize("kind", ["F16", "Q8_0"])
def test_a_gguf_made_by_gguf_py_is_quantized_from_its_base(family: dict[str, Path], kind: str) -> None:
    """F16 (numpy's cast) and Q8_0 (gguf-py's quantiser) from the base, q and k reordered as llama.cpp does:
    quantised from the base, every 2-D tensor within the type's bound, none changed; another seed's Q8_0 GGUF
    is not."""
    doc = lineage(family[f"gguf-{kind}"], family["base"])
    base = by_model(doc)["base"]
    assert doc["verdict"] == "quantized", doc["evidence"]
    assert base["tensors_changed"] == 0 and base["tensors_quantized"] >= 16
    qk = [t for t in base["tensors"] if ".attn_q." in t["name"] or ".attn_k." in t["name"]]
    assert len(qk) == 4 and all(t["relation"] == "quantized" for t in qk)


def test_a_gguf_declares_its_base_and_lineage_tries_it(family: dict[str, Path]) -> None:
    """general.base_model.0.repo_url names a Hub repo: with no candidate that is what lineage tries, and
    (offline, no such repo anywhere) says it could not read it rather than guess."""
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "inspector", "lineage", str(family["gguf-Q8_0"]), "--json"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    doc = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert doc["declared_base"] == "org/base" and doc["verdict"] == "unknown" and doc["declared_matches"] is None
    assert doc["candidates"][0]["declared"] == "GGUF general.base_model.0.repo_url"


def test_no_candidate_and_nothing_declared_says_what_to_pass(family: dict[str, Path], capsys) -> None:
    assert run(["lineage", str(family["base"])]) == 2
    err = capsys.readouterr().err
    assert "declares no base" in err and "inspect lineage MODEL BASE" in err and "Traceback" not in err


def test_a_candidate_that_cannot_be_read_is_named(family: dict[str, Path], tmp_path: Path, capsys) -> None:
    assert run(["lineage", str(family["base"]), str(tmp_path / "missing")]) == 3
    err = capsys.readouterr().err
    assert f"candidate {tmp_path / 'missing'}" in err and "Traceback" not in err


def test_the_gates(family: dict[str, Path], capsys) -> None:
    assert run(["lineage", str(family["finetune"]), str(family["base"]), "--fail-if", "unrelated"]) == 0
    assert run(["lineage", str(family["finetune"]), str(family["base"]), "--fail-if", "changed"]) == 1
    assert run(["lineage", str(family["other"]), str(family["base"]), "--fail-if", "unrelated"]) == 1
    assert run(["lineage", str(family["resharded"]), str(family["base"]), "--fail-if", "changed,unrelated"]) == 0
    assert run(["lineage", str(family["base"]), str(family["base"]), "--fail-if", "bogus"]) == 2
    assert "--fail-if unrelated: unrelated" in capsys.readouterr().err


def test_exact_proves_a_local_copy_by_hashing_whole_files(family: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(family["base"], copy)
    plain = lineage(copy, family["base"])
    exact = inspector.lineage(str(copy), [str(family["base"])], exact=True).to_dict()
    assert plain["candidates"][0]["files_identical"] is None and plain["bytes_read"] > 0
    assert exact["candidates"][0]["files_identical"] == exact["candidates"][0]["files_compared"] == 1
    # the bytes it hashed are counted (issue 66: bytes_read left them out): both sides' weight files, whole (os.stat)
    weights = sum(f.stat().st_size for side in (copy, family["base"]) for f in side.glob("*.safetensors"))
    assert exact["verdict"] == "identical" and exact["bytes_read"] == weights


def test_every_format_draws_it(family: dict[str, Path], merged: Path) -> None:
    from inspector.render.views import Format, to_text

    result = inspector.lineage(str(merged), [str(family["base"]), str(family["other"])])
    table = to_text(result, Format.TABLE, width=80)
    assert " is a merge of " in table.splitlines()[0] and max(map(len, table.splitlines())) <= 80
    assert "| candidate | relation |" in to_text(result, Format.MARKDOWN)
    assert 'id="lineage-candidates"' in to_text(result, Format.HTML)


# --- through the test Hub ------------------------------------------------------------------------------


def _card(base: str) -> bytes:
    return f"---\nlicense: apache-2.0\nbase_model:\n- {base}\nbase_model_relation: finetune\n---\n# a model\n".encode()


def _serve(server: Any, repo: str, folder: Path, card: bytes | None = None) -> None:
    from hubserver import VFile

    files: dict[str, Any] = {}
    for f in folder.iterdir():
        data = f.read_bytes()
        files[f.name] = VFile(len(data), data, lfs=True) if f.suffix == ".safetensors" else data
    if card is not None:
        files["README.md"] = card
    server.add_files(repo, files)


@pytest.fixture(scope="module")
def hub(family: dict[str, Path]) -> Any:
    from hubserver import HubServer

    with HubServer() as server:
        _serve(server, "org/base", family["base"])
        _serve(server, "org/copy", family["base"])
        _serve(server, "org/other", family["other"])
        _serve(server, "org/tuned", family["finetune"], _card("org/base"))
        _serve(server, "org/claims", family["finetune"], _card("org/other"))
        yield server


def _data_ranges(server: Any, family: dict[str, Path]) -> list[tuple[str, int]]:
    """The range requests the server saw that start past a safetensors file's header (tensor data)."""
    ends = {}
    for folder in (family["base"], family["finetune"]):
        head = (folder / "model.safetensors").read_bytes()[:8]
        ends[folder.name] = 8 + int.from_bytes(head, "little")
    header_end = min(ends.values())
    out = []
    for r in server.requests("GET"):
        if r.range and r.path.endswith(".safetensors"):
            start = int(r.range.split("=")[1].split("-")[0])
            if start >= header_end:
                out.append((r.path, start))
    return out


def test_a_reupload_is_proven_by_the_listing_hashes_with_no_tensor_byte_read(hub: Any, family: dict[str, Path]
                                                                              ) -> None:
    """The Hub listing's LFS sha256 of every weight file is one of the candidate's: identical, and the server saw
    no range request into tensor data."""
    from inspector.sources.transport import HubOptions

    hub.clear_log()
    doc = inspector.lineage("org/copy", ["org/base"], hub=HubOptions(endpoint=hub.url, use_cache=False)).to_dict()
    hub.state.settle()
    assert doc["verdict"] == "identical" and doc["candidates"][0]["files_identical"] == 1
    assert doc["bytes_read"] == 0 and doc["requests"] == 0
    assert _data_ranges(hub, family) == []


def test_a_finetune_over_the_hub_reads_under_two_percent_a_side(hub: Any, family: dict[str, Path]) -> None:
    """The fine-tune decided with the bytes read ≤ 2 % of the weights on each side; the requests as documented: at
    most one a sampled range a side (``RANGES`` a tensor), the count the server saw."""
    from inspector.analysis.comparison.samples import RANGES
    from inspector.sources.transport import HubOptions

    hub.clear_log()
    doc = inspector.lineage("org/tuned", ["org/base"], hub=HubOptions(endpoint=hub.url, use_cache=False)).to_dict()
    hub.state.settle()
    assert doc["verdict"] == "finetune" and doc["candidates"][0]["changed_layers"] == [1]
    weights = doc["weights_bytes"]
    assert doc["model_bytes_read"] <= 0.02 * weights
    assert doc["bytes_read"] - doc["model_bytes_read"] <= 0.02 * weights
    seen = _data_ranges(hub, family)
    assert len(seen) == doc["requests"] <= 2 * RANGES * doc["tensors_sampled"]
    assert doc["declared_base"] == "org/base" and doc["declared_matches"] is True


def test_a_card_that_declares_the_wrong_base(hub: Any, cli) -> None:
    """The card says org/other; the values say it shares nothing with it: declared_matches false, the gate trips,
    and the audit says so."""
    r = cli("lineage", "org/claims", "--endpoint", hub.url, "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["declared_base"] == "org/other" and doc["declared_relation"] == "finetune"
    assert doc["verdict"] == "unrelated" and doc["declared_matches"] is False
    r = cli("lineage", "org/claims", "--endpoint", hub.url, "--fail-if", "declared")
    assert r.code == 1 and "--fail-if declared" in r.err
    r = cli("audit", "org/claims", "--endpoint", hub.url, "--lineage", "--json")
    codes = {f["code"]: f for f in r.json()["findings"]}
    assert "lineage.declared-base" in codes and "org/other" in codes["lineage.declared-base"]["message"]
    r = cli("audit", "org/tuned", "--endpoint", hub.url, "--lineage", "--json")
    assert not any(f["code"].startswith("lineage.") for f in r.json()["findings"])


def test_every_verdict_document_validates_against_its_schema(family: dict[str, Path], merged: Path, tmp_path: Path
                                                              ) -> None:
    """inspector/schemas/lineage.schema.json (scripts/make_schemas.py) holds each verdict's document; one with a
    required key removed or a key added is rejected."""
    from jsonschema import Draft202012Validator

    schema = json.loads((Path(inspector.__file__).parent / "schemas" / "lineage.schema.json").read_text())
    check = Draft202012Validator(schema)
    docs = [lineage(merged, family["base"], family["other"]), lineage(family["finetune"], family["base"]),
            lineage(family["gguf-Q8_0"], family["base"]), lineage(family["adapter"], family["base"]),
            lineage(family["other"], family["base"])]
    assert {d["verdict"] for d in docs} == {"merge", "finetune", "quantized", "adapter", "unrelated"}
    for doc in docs:
        assert list(check.iter_errors(doc)) == []
    broken = dict(docs[0])
    del broken["declared_matches"]
    assert list(check.iter_errors(broken))
    assert list(check.iter_errors({**docs[0], "extra": 1}))


def test_a_bitsandbytes_4bit_save_is_quantized_from_its_base(family: dict[str, Path], bnb4: Path) -> None:
    """Every packed linear decoded (codes × absmax, the nested absmax too) lies within half the NF4 map's largest
    gap of the block's absmax of the base's values; against another initialisation, unrelated."""
    doc = lineage(bnb4, family["base"])
    base = by_model(doc)["base"]
    assert doc["verdict"] == "quantized", doc["evidence"]
    linears = [t for t in base["tensors"] if t["name"].endswith("_proj.weight")]
    assert len(linears) == 14 and all(t["relation"] == "quantized" for t in linears)
    assert lineage(bnb4, family["other"])["verdict"] == "unrelated"


def test_gptq_packed_linears_are_counted_not_guessed(family: dict[str, Path], tmp_path: Path) -> None:
    """A GPTQ layout (AutoGPTQ's QuantLinear names: qweight int32 [in/8, out], qzeros, scales, g_idx) beside the
    base's own embeddings, norms and output layer (safetensors' writer): the packed linears are counted, not
    dequantised, and the verdict says it rests on the unpacked tensors; the same layout beside another
    initialisation's unpacked tensors is unrelated."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    for source, verdict in (("base", "quantized"), ("other", "unrelated")):
        tensors = load_file(family[source] / "model.safetensors")
        out: dict[str, Any] = {}
        for name, data in tensors.items():
            if name.endswith("_proj.weight"):
                module = name.removesuffix(".weight")
                rows, cols = data.shape
                out[f"{module}.qweight"] = np.zeros((cols // 8, rows), np.int32)
                out[f"{module}.qzeros"] = np.zeros((cols // 128, rows // 8), np.int32)
                out[f"{module}.scales"] = np.ones((cols // 128, rows), np.float16)
                out[f"{module}.g_idx"] = np.arange(cols, dtype=np.int32) // 128
            else:
                out[name] = data
        folder = tmp_path / f"gptq-{source}"
        folder.mkdir()
        save_file(out, str(folder / "model.safetensors"))
        config = json.loads((family[source] / "config.json").read_text())
        config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128}
        (folder / "config.json").write_text(json.dumps(config))
        doc = lineage(folder, family["base"])
        base = by_model(doc)["base"]
        assert doc["verdict"] == verdict, doc["evidence"]
        assert base["tensors_packed"] == 14
        if verdict == "quantized":
            assert "packed" in base["why"] and "not dequantised" in base["why"]
