"""The standing fuzz stage: structured mutations of every input kind through every command.

    python scripts/fuzz.py [--cases 200] [--seed 0] [--kinds safetensors,config,…] [--time-cap 10]
                           [--memory-cap 2048] [--commands show,json,tensors,estimate,audit,diff]

For each input kind a generator makes a valid input and mutates it (values swapped for hostile ones,
keys dropped, bytes flipped, lengths lied about); each case runs in-process through the real CLI
entry (``cli.commands.run``) for every command. The outcome must be 0, 1 or a documented error code
(2–5) with one ``Error:`` line, never 70 (an internal error) and never over the caps (a time cap per
command by ``setitimer``, a memory cap for the whole run by ``RLIMIT_AS``). Prints a table per kind
and every failing case (kind, seed, command, outcome); exit status 1 when any case failed.

Kinds: safetensors (header JSON and bytes), gguf (a file gguf-py writes, bytes mutated), torch-legacy
(the real lpips alex.pth, bytes mutated), torch-zip (a torch.save-shaped archive, entries mutated),
config (config.json beside a valid model), index (model.safetensors.index.json), adapter (adapter_config.json
beside a LoRA adapter), ref (an HF cache's refs/main), snapshot (a header snapshot's manifest), pipeline
(a diffusers model_index.json over component folders), modules (a sentence-transformers modules.json),
gguf-set (a folder of several GGUF files, some flipped), pack (the header cache's layout: a snapshot whose
headers sit in one pack, its spans or bytes mutated), values (``diff A B --values`` where B's tensor bytes,
length or header are mutated), card (a model card's YAML front matter, structured or nested without end, through
``lineage`` and ``audit --lineage``), tokenizer (tokenizer_config.json, special_tokens_map.json,
generation_config.json or tokenizer.json mutated, or nested without end, or a million values), listing (a Hub
listing, through the one JSON loader and the listing reader; sometimes nested without end or over its values),
answer (the Hub's one-request answer, mutated, through ``rebuilt_from_metadata``: used or set aside, never
an exception).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
import resource
import shutil
import signal
import struct
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOSTILE_VALUES: list[object] = [
    0, -1, 1, 2**64, 2**64 - 1, -(2**63), 10**30, 0.5, -0.0, 1e308, True, False, None, "", "x", "-0", "\u202e",
    "\x1b[31m", "../../etc", "/etc/passwd", "a" * 5000, [], [1, 2], [-1], [2**70], {}, {"a": {"b": {}}},
    [[[[[[[[[[]]]]]]]]]], "\\u0000", "NaN",
]
COMMANDS: dict[str, list[str]] = {
    "show": [], "json": ["--json"], "tensors": ["--tensors", "--collapse"], "estimate": ["estimate"],
    "audit": ["audit"], "diff": ["diff", "gpt2"], "markdown": ["--format", "markdown"],
}


class OverTime(BaseException):
    """Raised by the timer inside a command that runs over the time cap (a BaseException, so no
    ``except Exception`` of ours catches it)."""


def _alarm(signum: int, frame: object) -> None:
    raise OverTime


# --- generators: each writes one case under ``where`` and returns the path to give the CLI -------------


def _header(entries: dict[str, object]) -> bytes:
    raw = json.dumps(entries, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def _valid_entries(rng: random.Random) -> tuple[dict[str, object], int]:
    entries: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for i in range(rng.randint(1, 6)):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        n = 1
        for d in shape:
            n *= d
        name = rng.choice(["model.layers.{}.mlp.up_proj.weight", "model.embed_tokens.weight",
                           "model.layers.{}.self_attn.q_proj.weight", "lm_head.weight", "model.norm.weight"])
        entries[name.format(i)] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + 2 * n]}
        offset += 2 * n
    return entries, offset


def _mutate_value(rng: random.Random, value: object) -> object:
    if isinstance(value, dict) and value and rng.random() < 0.6:
        key = rng.choice(list(value))
        copy = dict(value)
        if rng.random() < 0.2:
            del copy[key]
        else:
            copy[key] = _mutate_value(rng, copy[key])
        return copy
    if isinstance(value, list) and value and rng.random() < 0.6:
        copy = list(value)
        i = rng.randrange(len(copy))
        copy[i] = _mutate_value(rng, copy[i])
        return copy
    return rng.choice(HOSTILE_VALUES)


def _flip(rng: random.Random, blob: bytes, count: int = 4) -> bytes:
    data = bytearray(blob)
    for _ in range(count):
        if not data:
            break
        op = rng.random()
        i = rng.randrange(len(data))
        if op < 0.5:
            data[i] = rng.randrange(256)
        elif op < 0.7:
            del data[i:i + rng.randint(1, 64)]
        elif op < 0.85:
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif len(data) >= 8:  # a length that lies
            struct.pack_into("<Q", data, min(i, len(data) - 8), rng.choice([0, 2**63, 2**64 - 1, len(data)]))
    return bytes(data)


def gen_safetensors(rng: random.Random, where: Path) -> Path:
    entries, data = _valid_entries(rng)
    mutated = _mutate_value(rng, entries)
    blob = _header(mutated) if rng.random() < 0.6 and isinstance(mutated, dict) else _flip(rng, _header(entries))
    (where / "model.safetensors").write_bytes(blob + b"\0" * data)
    return where


LLAMA_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16,
                "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
                "vocab_size": 64, "max_position_embeddings": 128, "torch_dtype": "float16",
                "rope_scaling": {"type": "linear", "factor": 2.0}, "tie_word_embeddings": False}


def _tiny_model(where: Path) -> None:
    entries, data = _valid_entries(random.Random(1))
    (where / "model.safetensors").write_bytes(_header(entries) + b"\0" * data)


def gen_config(rng: random.Random, where: Path) -> Path:
    _tiny_model(where)
    config: object = dict(LLAMA_CONFIG)
    for _ in range(rng.randint(1, 4)):
        config = _mutate_value(rng, config)
    text = json.dumps(config) if rng.random() < 0.9 else _flip(rng, json.dumps(LLAMA_CONFIG).encode()).decode(
        "latin-1")
    (where / "config.json").write_text(text, encoding="latin-1" if isinstance(text, str) else None)
    return where


def gen_index(rng: random.Random, where: Path) -> Path:
    entries, data = _valid_entries(rng)
    (where / "model-00001-of-00001.safetensors").write_bytes(_header(entries) + b"\0" * data)
    index: object = {"metadata": {"total_size": data},
                     "weight_map": {k: "model-00001-of-00001.safetensors" for k in entries if k != "__metadata__"}}
    for _ in range(rng.randint(1, 3)):
        index = _mutate_value(rng, index)
    (where / "model.safetensors.index.json").write_text(json.dumps(index))
    return where


def gen_adapter(rng: random.Random, where: Path) -> Path:
    entries = {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight":
               {"dtype": "F16", "shape": [2, 16], "data_offsets": [0, 64]},
               "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight":
               {"dtype": "F16", "shape": [16, 2], "data_offsets": [64, 128]}}
    (where / "adapter_model.safetensors").write_bytes(_header(entries) + b"\0" * 128)
    config: object = {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"],
                      "base_model_name_or_path": "acme/base", "fan_in_fan_out": False}
    for _ in range(rng.randint(1, 3)):
        config = _mutate_value(rng, config)
    (where / "adapter_config.json").write_text(json.dumps(config))
    return where


def gen_ref(rng: random.Random, where: Path) -> Path:
    repo = where / "models--acme--tiny"
    sha = "0" * 40
    snap = repo / "snapshots" / sha
    snap.mkdir(parents=True)
    _tiny_model(snap)
    (repo / "refs").mkdir()
    ref = repo / "refs" / "main"
    choice = rng.random()
    if choice < 0.3:
        ref.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(0, 80))))
    elif choice < 0.6:
        ref.write_text(rng.choice(["../../../../etc", "/etc", sha + "\n", sha.upper(), sha[:39], "", " " + sha,
                                   "../snapshots/" + sha, sha + sha]))
    elif choice < 0.8:
        with ref.open("wb") as fh:
            fh.truncate(rng.choice([1 << 20, 1 << 30]))
    else:
        ref.mkdir()
    return repo


def gen_snapshot(rng: random.Random, where: Path) -> Path:
    from inspector.sources.resolve import open_local
    from inspector.sources.snapshot import MANIFEST, save_checkpoint

    model = where / "model"
    model.mkdir()
    _tiny_model(model)
    (model / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    snap = where / "snap"
    save_checkpoint(open_local(model), snap)
    manifest: object = json.loads((snap / MANIFEST).read_text())
    for _ in range(rng.randint(1, 3)):
        manifest = _mutate_value(rng, manifest)
    (snap / MANIFEST).write_text(json.dumps(manifest))
    shutil.rmtree(model)
    return snap


def _gguf_bytes() -> bytes:
    import gguf

    path = Path(tempfile.mkdtemp()) / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_embedding_length(16)
    writer.add_head_count(2)
    writer.add_head_count_kv(1)
    writer.add_feed_forward_length(32)
    writer.add_context_length(128)
    writer.add_token_list([f"t{i}" for i in range(8)])
    import numpy as np

    writer.add_tensor("token_embd.weight", np.zeros((8, 16), dtype=np.float16))
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((16, 16), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    data = path.read_bytes()
    shutil.rmtree(path.parent)
    return data


_GGUF: list[bytes] = []


def gen_gguf(rng: random.Random, where: Path) -> Path:
    if not _GGUF:
        _GGUF.append(_gguf_bytes())
    blob = _GGUF[0]
    head = min(len(blob), 2048)  # the header: mutations there, not in the zeros of the data
    (where / "m.gguf").write_bytes(_flip(rng, blob[:head], rng.randint(1, 6)) + blob[head:])
    return where / "m.gguf"


LPIPS = ROOT / "fixtures" / "checkpoints" / "lpips-0.1.4" / "v0.1" / "alex.pth"


def gen_torch_legacy(rng: random.Random, where: Path) -> Path:
    blob = LPIPS.read_bytes()
    (where / "alex.pth").write_bytes(_flip(rng, blob[:4096], rng.randint(1, 6)) + blob[4096:])
    return where / "alex.pth"


def _torch_zip(rng: random.Random) -> bytes:
    """A torch.save-shaped archive (archive/data.pkl, data/0, byteorder, version) with the GLOBAL
    opcodes torch writes, built without torch; the pickle's bytes mutated."""
    def string(s: str) -> bytes:
        raw = s.encode()
        return b"X" + struct.pack("<I", len(raw)) + raw

    pkl = (b"\x80\x02" + b"ccollections\nOrderedDict\n)R" + string("w") +
           b"ctorch._utils\n_rebuild_tensor_v2\n(" +
           b"(" + string("storage") + b"ctorch\nFloatStorage\n" + string("0") + string("cpu") + b"K\x10tQ" +
           b"K\x00K\x04K\x04\x86K\x04K\x01\x86\x89ccollections\nOrderedDict\n)RtRs.")
    if rng.random() < 0.7:
        pkl = _flip(rng, pkl, rng.randint(1, 4))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/data/0", b"\0" * 64)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
        if rng.random() < 0.1:
            z.writestr("archive/data.pkl", b"\x80\x02cos\nsystem\n.")  # a second, hostile entry of the same name
        if rng.random() < 0.1:
            z.writestr("archive/constants.pkl", b"\x80\x02N.")
    blob = out.getvalue()
    return _flip(rng, blob, 1) if rng.random() < 0.2 else blob


def gen_torch_zip(rng: random.Random, where: Path) -> Path:
    (where / "model.pt").write_bytes(_torch_zip(rng))
    return where / "model.pt"


def gen_pipeline(rng: random.Random, where: Path) -> Path:
    """A diffusers pipeline: model_index.json (mutated: components, their [library, class] pairs,
    folder names) over component folders with a config and weights each."""
    index: object = {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.30.0",
                     "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"],
                     "scheduler": ["diffusers", "PNDMScheduler"], "safety_checker": [None, None]}
    for name in ("unet", "vae"):
        (where / name).mkdir()
        entries, data = _valid_entries(rng)
        (where / name / "diffusion_pytorch_model.safetensors").write_bytes(_header(entries) + b"\0" * data)
        (where / name / "config.json").write_text(json.dumps({"_class_name": name}))
    for _ in range(rng.randint(1, 4)):
        index = _mutate_value(rng, index)
    (where / "model_index.json").write_text(json.dumps(index))
    return where


def gen_modules(rng: random.Random, where: Path) -> Path:
    """A sentence-transformers model: the transformer at the top, modules.json (mutated: paths, types,
    repeats) naming a Pooling and a Dense folder."""
    _tiny_model(where)
    (where / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    (where / "1_Pooling").mkdir()
    (where / "1_Pooling" / "config.json").write_text("{}")
    (where / "2_Dense").mkdir()
    dense = {"linear.weight": {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]}}
    (where / "2_Dense" / "model.safetensors").write_bytes(_header(dense) + b"\0" * 256)
    modules: object = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                       {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                       {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]
    for _ in range(rng.randint(1, 3)):
        modules = _mutate_value(rng, modules)
    (where / "modules.json").write_text(json.dumps(modules))
    return where


def gen_gguf_set(rng: random.Random, where: Path) -> Path:
    """A folder of several GGUF files (one model in several quantisations, or a model and its mmproj),
    some mutated: listed one row a file."""
    for i in range(rng.randint(2, 4)):
        blob = _gguf_bytes()
        (where / f"model.Q{i}.gguf").write_bytes(_flip(rng, blob) if rng.random() < 0.4 else blob)
    return where


def gen_pack(rng: random.Random, where: Path) -> Path:
    """A version-3 header snapshot (the header cache's layout: headers in one pack, large ones gzip
    members) of a two-shard model, its spans mutated (moved, lengthened, named twice) or the pack's bytes
    flipped or cut."""
    from inspector.sources.snapshot import MANIFEST, write_snapshot

    entries, data = _valid_entries(rng)
    blob = _header(entries)
    headers = {f"model-0000{i}-of-00002.safetensors": blob for i in (1, 2)}
    write_snapshot(where / "snap", repo_id=None, revision=None, files=[(n, len(blob) + data) for n in headers],
                   headers=headers, stored={"config.json": json.dumps(LLAMA_CONFIG).encode()}, provenance="fuzz",
                   compress_over=rng.choice([0, 65536]), pack=True)
    snap = where / "snap"
    manifest = json.loads((snap / MANIFEST).read_text())
    packed = [f for f in manifest["files"] if "span" in f]
    choice = rng.random()
    if choice < 0.5 and packed:
        f = rng.choice(packed)
        f["span"] = rng.choice([[0, 2**40], [f["span"][0], f["span"][1] + 1], packed[0]["span"], [-1, 8],
                                [2**63, 1], _mutate_value(rng, f["span"])])
        (snap / MANIFEST).write_text(json.dumps(manifest))
    else:
        pack = next(p for p in snap.iterdir() if p.name.startswith("headers.pack"))
        raw = pack.read_bytes()
        pack.write_bytes(raw[: rng.randrange(len(raw))] if choice < 0.7 else _flip(rng, raw))
    return snap


def gen_values(rng: random.Random, where: Path) -> Path:
    """The second side of ``diff A B --values``: A a valid model beside it (``values-base``), B its copy with
    tensor bytes flipped, the file cut inside its data, or its header's offsets or dtypes mutated."""
    entries, data = _valid_entries(rng)
    base = where / "values-base"
    base.mkdir()
    body = bytes(rng.randrange(256) for _ in range(data))
    (base / "model.safetensors").write_bytes(_header(entries) + body)
    side = where / "side"
    side.mkdir()
    choice = rng.random()
    if choice < 0.4:
        blob = _header(entries) + _flip(rng, body, rng.randint(1, 8)) if body else _header(entries)
    elif choice < 0.6:
        blob = (_header(entries) + body)[: rng.randrange(len(_header(entries)), len(_header(entries)) + data + 1)]
    else:
        mutated = _mutate_value(rng, entries)
        blob = (_header(mutated) if isinstance(mutated, dict) else _header(entries)) + body
    (side / "model.safetensors").write_bytes(blob)
    return side


def _card_text(rng: random.Random) -> bytes:
    """A model card's front matter: structured (base_model and its relation mutated, dumped by PyYAML) or hostile
    YAML (nested without end, an alias bomb, a tag that builds an object, a line of 200 kB), bytes flipped
    sometimes."""
    import yaml

    meta: object = {"base_model": ["org/base", "org/other"], "base_model_relation": "finetune", "license": "mit",
                    "tags": ["text-generation"]}
    for _ in range(rng.randint(0, 3)):
        meta = _mutate_value(rng, meta)
    shapes = [
        lambda: yaml.safe_dump(meta, allow_unicode=True),
        lambda: "base_model: " + "[" * rng.choice([63, 64, 65, 600, 5000]) + "]" * rng.choice([0, 600]),
        lambda: "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [{', '.join(['*' + chr(ord(c) - 1)] * 9)}]\n" for c in "bcdefgh") + "base_model: *h",
        lambda: "base_model: !!python/object/apply:os.system ['true']",
        lambda: "base_model: " + "x" * 200_000,
        lambda: "".join(" " * i + "- \n" for i in range(0, rng.choice([100, 1000]), 2)),
    ]
    text = ("---\n" + rng.choice(shapes)() + "\n---\n# card\n").encode("utf-8", "surrogatepass")
    return _flip(rng, text, 2) if rng.random() < 0.2 else text


def gen_card(rng: random.Random, where: Path) -> Path:
    _tiny_model(where)
    (where / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    (where / "README.md").write_bytes(_card_text(rng))
    return where


TOKENIZER_FILES: dict[str, object] = {
    "tokenizer_config.json": {"bos_token": "<s>", "eos_token": {"content": "</s>", "special": True},
                              "model_max_length": 2048, "chat_template": "{% for m in messages %}{{ m }}{% endfor %}",
                              "added_tokens_decoder": {"0": {"content": "<unk>", "special": True}}},
    "special_tokens_map.json": {"bos_token": "<s>", "eos_token": "</s>", "additional_special_tokens": ["<x>"]},
    "generation_config.json": {"bos_token_id": 1, "eos_token_id": [2, 3], "temperature": 0.6, "do_sample": True},
    "tokenizer.json": {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
                       "added_tokens": [{"id": 3, "content": "<s>", "special": True}]},
}


def gen_tokenizer(rng: random.Random, where: Path) -> Path:
    """The tokenizer's files beside a valid model: one of them mutated (values, keys, bytes), or made hostile
    (nested 100,000 deep, or a million values under the byte budget)."""
    _tiny_model(where)
    (where / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    target = rng.choice(sorted(TOKENIZER_FILES))
    for name, doc in TOKENIZER_FILES.items():
        value: object = doc
        if name == target:
            for _ in range(rng.randint(1, 4)):
                value = _mutate_value(rng, value)
        raw = json.dumps(value).encode()
        if name == target:
            roll = rng.random()
            if roll < 0.1:
                raw = b"[" * 100_000 + b"]" * 100_000
            elif roll < 0.2:
                raw = b"[" + b"[]," * 1_000_000 + b"[]]"
            elif roll < 0.4:
                raw = _flip(rng, raw, 2)
        (where / name).write_bytes(raw)
    return where


GENERATORS: dict[str, Callable[[random.Random, Path], Path]] = {
    "safetensors": gen_safetensors, "gguf": gen_gguf, "torch-legacy": gen_torch_legacy, "torch-zip": gen_torch_zip,
    "config": gen_config, "index": gen_index, "adapter": gen_adapter, "ref": gen_ref, "snapshot": gen_snapshot,
    "pipeline": gen_pipeline, "modules": gen_modules, "gguf-set": gen_gguf_set, "pack": gen_pack,
    "values": gen_values, "card": gen_card, "tokenizer": gen_tokenizer,
}
#: kinds whose case is its own command lines (``{target}`` the case, ``{base}`` a file beside it)
OWN_COMMANDS: dict[str, list[list[str]]] = {
    "card": [["lineage", "{target}"], ["lineage", "{target}", "--json"], ["audit", "{target}", "--lineage"]],
    "values": [["diff", "{base}", "{target}", "--values", "--json"],
               ["diff", "{base}", "{target}", "--values", "--exact"],
               ["diff", "{base}", "{target}", "--values", "--sample-bytes", "64", "--format", "markdown"]],
}


def listing_case(rng: random.Random) -> str:
    """A Hub listing through the one JSON loader and the listing reader: 'ok' or the error class."""
    from inspector.errors import InspectorError
    from inspector.safeio import parse_json_object
    from inspector.sources.hub import repo_sizes
    from inspector.sources.transport import LISTING_VALUES, Hub, HubOptions

    listing: object = {"sha": "0" * 40, "siblings": [{"rfilename": "config.json", "size": 10},
                                                     {"rfilename": "model.safetensors", "size": 100,
                                                      "lfs": {"size": 100}}]}
    for _ in range(rng.randint(1, 4)):
        listing = _mutate_value(rng, listing)
    raw = json.dumps(listing).encode()
    roll = rng.random()
    if roll < 0.3:
        raw = _flip(rng, raw, 2)
    elif roll < 0.4:  # nested without end, or more values than a listing may hold, under the byte budget
        raw = rng.choice([b"[" * 100_000 + b"]" * 100_000, b'{"siblings": [' + b"[]," * 2_000_000 + b"[]]}"])
    try:
        info = parse_json_object(raw, "listing", max_values=LISTING_VALUES)
        repo_sizes(Hub(HubOptions(endpoint="http://127.0.0.1:9")), info, "acme/x")
    except InspectorError as exc:
        return type(exc).__name__
    return "ok"


def answer_case(rng: random.Random) -> str:
    """The Hub's one-request answer (``safetensors-metadata``) for a two-shard repo, mutated (values swapped,
    keys dropped, bytes flipped, a shard's header lying about a shape, a dtype or offsets), through
    ``rebuilt_from_metadata`` against the listing: 'used', 'set aside', or the error class (a failure: the
    answer must be used or set aside, never raise)."""
    from inspector.sources.early import ONE_REQUEST_INDEX, rebuilt_from_metadata

    shards: dict[str, object] = {}
    sizes: dict[str, int | None] = {ONE_REQUEST_INDEX: 100}
    total = 0
    for i in (1, 2):  # each shard its own tensors (a name in two shards sets the answer aside)
        entries, data = _valid_entries(rng)
        entries = {k if k == "__metadata__" else f"shard{i}.{k}": v for k, v in entries.items()}
        name = f"model-0000{i}-of-00002.safetensors"
        shards[name] = json.loads(_header(entries)[8:])
        sizes[name] = len(_header(entries)) + data
        total += data
    answer: object = {"index": {"metadata": {"total_size": total}}, "headers": shards}
    for _ in range(rng.choice([0, 1, 1, 2, 3])):  # a fifth of the answers unchanged: those are used
        answer = _mutate_value(rng, answer)
    raw = json.dumps(answer).encode()
    if rng.random() < 0.3:
        raw = _flip(rng, raw, 2)
    try:
        got = rebuilt_from_metadata(raw, rng.choice([None, "0" * 40, "1" * 40]), "0" * 40, sizes, ONE_REQUEST_INDEX)
    except Exception as exc:
        return f"crash:{type(exc).__name__}"
    return "used" if got is not None else "set aside"


#: kinds read in-process by a library function (no command line): the case's outcome, a word
LIBRARY_CASES: dict[str, Callable[[random.Random], str]] = {"listing": listing_case, "answer": answer_case}


# --- differential: the same file through the format's own reference reader --------------------------

#: the reference reader of each kind that has one: what its own ecosystem would load
REFERENCES = {"safetensors": "safetensors (Rust) deserialize", "gguf": "gguf-py GGUFReader",
              "torch-legacy": "torch.load(weights_only=True)", "torch-zip": "torch.load(weights_only=True)"}


def _torch_leaves(value: object, depth: int = 0) -> list[object]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 50:
        return []
    if isinstance(value, dict):
        return [t for v in value.values() for t in _torch_leaves(v, depth + 1)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _torch_leaves(v, depth + 1)]
    return []


def reference_figures(kind: str, target: Path) -> tuple[str, int, int, str]:
    """(outcome, tensors, elements, why) by the reference: 'accept' or 'refuse'."""
    try:
        if kind == "safetensors":
            from safetensors import deserialize

            target = next(target.glob("*.safetensors")) if target.is_dir() else target

            items = deserialize(target.read_bytes())
            elements = 0
            for _, entry in items:
                n = 1
                for d in entry["shape"]:
                    n *= d
                elements += n
            return "accept", len(items), elements, ""
        if kind == "gguf":
            import gguf

            reader = gguf.GGUFReader(str(target))
            return "accept", len(reader.tensors), sum(int(t.n_elements) for t in reader.tensors), ""
        import torch

        leaves = _torch_leaves(torch.load(str(target), weights_only=True, map_location="cpu"))
        return "accept", len(leaves), sum(int(t.numel()) for t in leaves), ""  # type: ignore[attr-defined]
    except OverTime:
        raise
    except BaseException as exc:  # whatever the reference raises is its refusal
        if isinstance(exc, KeyboardInterrupt):
            raise
        return "refuse", 0, 0, f"{type(exc).__name__}: {str(exc)[:120]}"


def our_figures(target: Path) -> tuple[str, int, int, str]:
    import inspector
    from inspector.errors import InspectorError

    try:
        checkpoint = inspector.open_model(str(target))
    except InspectorError as exc:
        return "refuse", 0, 0, f"{type(exc).__name__}: {str(exc)[:120]}"
    except Exception as exc:  # what the CLI would report as an internal error (exit 70): a finding
        return "crash", 0, 0, f"{type(exc).__name__}: {str(exc)[:120]}"
    tensors = [t for h in checkpoint.headers for t in h.tensors]
    return "accept", len(tensors), sum(t.numel for t in tensors), ""


def differential(kind: str, target: Path, time_cap: float) -> tuple[str, str]:
    """('agree' or the kind of disagreement, a line saying both sides)."""
    signal.setitimer(signal.ITIMER_REAL, time_cap)
    try:
        ref = reference_figures(kind, target)
    except OverTime:
        return "reference-over-time", ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    ours = our_figures(target)
    if ours[0] == "crash":
        return "crash (an internal error of ours)", f"ours {ours[3]}"
    if ref[0] == ours[0] == "refuse" or ref[:3] == ours[:3]:
        return "agree", ""
    if ref[0] == "accept" and ours[0] == "accept":
        what = "figures-differ"
    else:  # named by the refusing side's reason, its numbers and names left out, so that cases group
        why = _reason(ref[3] if ours[0] == "accept" else ours[3])
        what = ("we-accept-reference-refuses: " if ours[0] == "accept" else "we-refuse-reference-accepts: ") + why
    return what, f"ours {ours[0]} {ours[1]} tensors {ours[2]:,} elements {ours[3]} | reference {ref[0]} " \
                 f"{ref[1]} tensors {ref[2]:,} elements {ref[3]}"


def _reason(text: str) -> str:
    """An error's class of reason: its type and words, without numbers, quoted names or file names."""
    kind, _, message = text.partition(": ")
    message = message.split(": ", 1)[-1] if message.startswith(("m.", "model.", "alex.")) else message
    message = re.sub(r"'[^']*'|\"[^\"]*\"|0x[0-9a-f]+|[0-9][0-9,._]*", "…", message)
    return f"{kind}: {message[:60]}"


# --- the runner ------------------------------------------------------------------------------------


def run_cli(args: list[str], time_cap: float) -> tuple[int, str, float]:
    from inspector.cli.commands import run
    from inspector.render import output

    output._CONSOLES.clear()  # a console made for the real stdout would bypass the capture
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, time_cap)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run(args)
    except OverTime:
        code = -1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return code, err.getvalue(), time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=200, help="cases per input kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default=",".join([*GENERATORS, *LIBRARY_CASES]))
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--time-cap", type=float, default=10.0, help="seconds per command")
    parser.add_argument("--memory-cap", type=int, default=2048, help="MB of address space for the whole run")
    parser.add_argument("--differential", action="store_true",
                        help="also read each case with the format's reference reader (" +
                             "; ".join(f"{k}: {v}" for k, v in REFERENCES.items()) + ") and tally disagreements")
    args = parser.parse_args()
    limit = args.memory_cap * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a hostile name never reaches out
    os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="fuzz-home-")
    failures: list[str] = []
    disagreements: Counter[tuple[str, str]] = Counter()
    examples: dict[tuple[str, str], list[str]] = {}
    print(f"seed {args.seed}, {args.cases} cases a kind, commands {args.commands}, caps {args.time_cap:g} s a "
          f"command and {args.memory_cap} MB")
    print(f"{'kind':14} {'cases':>6} {'runs':>6} {'exit codes':40} {'slowest s':>9} {'failures':>8}")
    for kind in args.kinds.split(","):
        codes: Counter[str] = Counter()
        slowest = 0.0
        runs = 0
        bad = 0
        for case in range(args.cases):
            rng = random.Random(f"{args.seed}:{kind}:{case}")
            if kind in LIBRARY_CASES:
                outcome = LIBRARY_CASES[kind](rng)
                codes[outcome] += 1
                runs += 1
                if outcome.startswith("crash"):
                    bad += 1
                    failures.append(f"{kind} case {case} (seed {args.seed}): {outcome}")
                continue
            where = Path(tempfile.mkdtemp(prefix="fuzz-"))
            try:
                try:
                    target = GENERATORS[kind](rng, where)
                except Exception as exc:  # a generator that could not build its input: not a finding
                    codes[f"gen:{type(exc).__name__}"] += 1
                    continue
                if args.differential and kind in REFERENCES:
                    verdict, line = differential(kind, target, args.time_cap)
                    disagreements[kind, verdict] += 1
                    if verdict.startswith("crash"):
                        failures.append(f"{kind} case {case} (seed {args.seed}) library read: {line}")
                    if verdict != "agree":
                        examples.setdefault((kind, verdict), []).append(f"case {case}: {line}")
                if kind in OWN_COMMANDS:
                    argvs = [[a.format(target=target, base=target.parent / f"{kind}-base") for a in line]
                             for line in OWN_COMMANDS[kind]]
                else:
                    argvs = [[*COMMANDS[name], str(target)] if COMMANDS[name][:1] in (["estimate"], ["audit"]) else (
                        ["diff", str(target), "gpt2"] if name == "diff" else [str(target), *COMMANDS[name]])
                        for name in args.commands.split(",")]
                for argv in argvs:
                    code, err, took = run_cli(argv, args.time_cap)
                    runs += 1
                    slowest = max(slowest, took)
                    codes[str(code)] += 1
                    lines = [line for line in err.splitlines() if line.startswith("Error:")]
                    ok = code in (0, 1) or (code in (2, 3, 4, 5) and len(lines) == 1)
                    if not ok:
                        bad += 1
                        shown_args = " ".join(argv)
                        failures.append(f"{kind} case {case} (seed {args.seed}) {shown_args}: exit {code} "
                                        f"{err.strip()[:200]!r}")
            finally:
                shutil.rmtree(where, ignore_errors=True)
        shown = ", ".join(f"{c}×{n}" for c, n in sorted(codes.items()))
        print(f"{kind:14} {args.cases:6d} {runs:6d} {shown:40} {slowest:9.2f} {bad:8d}", flush=True)
        if args.differential and kind in REFERENCES:  # said as each kind ends: a cut run keeps what it found
            tally = ", ".join(f"{v} {n}" for (k, v), n in sorted(disagreements.items()) if k == kind)
            print(f"{'':14} against {REFERENCES[kind]}: {tally}", flush=True)
    if args.differential:
        print(f"\n{'kind':14} {'reference':34} {'cases':>6}  verdict")
        for (kind, verdict), n in sorted(disagreements.items()):
            print(f"{kind:14} {REFERENCES[kind]:34} {n:6d}  {verdict}")
        for (kind, verdict), lines in sorted(examples.items()):
            for line in lines[:5]:
                print(f"  {kind} {verdict} {line}")
    for line in failures[:50]:
        print("FAIL", line)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
