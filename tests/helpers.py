"""Build safetensors files for tests: with the real safetensors library where the file is valid,
byte by byte (struct.pack) where it must be broken."""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from inspector.formats.safetensors import encode_header

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
_REFERENCE: dict[str, Any] = {}


def ref(figure: str) -> Any:
    """A reference figure from fixtures/reference.json (value, what it counts, its source)."""
    if not _REFERENCE:
        for entry in json.loads((FIXTURES / "reference.json").read_text())["figures"]:
            _REFERENCE[entry["id"]] = entry
    return _REFERENCE[figure]["value"]


def realdata(folder: str, name: str) -> dict[str, Any]:
    """A real file copied into fixtures/realdata (its SOURCE.txt beside it)."""
    return json.loads((FIXTURES / "realdata" / folder / name).read_text())

NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "U8": np.uint8,
      "I8": np.int8, "F64": np.float64, "BOOL": np.bool_}


def save_real(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]],
              metadata: dict[str, str] | None = None) -> Path:
    """A valid file written by the safetensors library itself (zeros)."""
    from safetensors.numpy import save_file

    arrays = {name: np.zeros(shape, dtype=NP[dtype]) for name, (dtype, shape) in tensors.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(arrays, str(path), metadata=metadata)
    return path


def raw_header(obj: Any, pad: bool = True) -> bytes:
    """8-byte length + JSON of any object, valid or not."""
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    if pad:
        body += b" " * (-len(body) % 8)
    return struct.pack("<Q", len(body)) + body


def write_raw(path: Path, obj: Any, data: int = 0, pad: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw_header(obj, pad) + b"\0" * data)
    return path


def write_layout(path: Path, entries: list[tuple[str, str, tuple[int, ...]]],
                 metadata: dict[str, str] | None = None, sparse: bool = True) -> Path:
    """A full-size file from a layout: the reference writer's header, then a hole of zeros."""
    blob, data = encode_header(entries, metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.write(blob)
        if sparse:
            fh.truncate(len(blob) + data)
        else:
            fh.write(b"\0" * data)
    return path


def tiny_llama(layers: int = 2, hidden: int = 8, inter: int = 16, vocab: int = 32, heads: int = 2,
               kv: int = 1, tied: bool = False, dtype: str = "F32") -> tuple[dict, list]:
    hd = hidden // heads
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
              "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv, "vocab_size": vocab, "tie_word_embeddings": tied,
              "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
              "max_position_embeddings": 128}
    e = [("model.embed_tokens.weight", dtype, (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        e += [(p + "self_attn.q_proj.weight", dtype, (heads * hd, hidden)),
              (p + "self_attn.k_proj.weight", dtype, (kv * hd, hidden)),
              (p + "self_attn.v_proj.weight", dtype, (kv * hd, hidden)),
              (p + "self_attn.o_proj.weight", dtype, (hidden, heads * hd)),
              (p + "mlp.gate_proj.weight", dtype, (inter, hidden)),
              (p + "mlp.up_proj.weight", dtype, (inter, hidden)),
              (p + "mlp.down_proj.weight", dtype, (hidden, inter)),
              (p + "input_layernorm.weight", dtype, (hidden,)),
              (p + "post_attention_layernorm.weight", dtype, (hidden,))]
    e.append(("model.norm.weight", dtype, (hidden,)))
    if not tied:
        e.append(("lm_head.weight", dtype, (vocab, hidden)))
    return config, e


def finish_gguf(writer: Any, *, data: bool = True) -> None:
    """Write a gguf-py GGUFWriter's header, metadata and tensors (or, with ``data=False``, the tensor
    infos only: the data is left a hole) and close it."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    if data:
        writer.write_tensors_to_file()
    else:
        writer.write_ti_data_to_file()
    writer.close()


def llama3_8b_gguf(path: Path, main: str = "Q4_K", sensitive: str = "Q6_K") -> Path:
    """Llama-3-8B's tensor infos (shapes as meta-llama/Meta-Llama-3-8B's index) written by gguf-py,
    ``main`` for most matrices and ``sensitive`` for attn_v, ffn_down and output, as llama.cpp's
    K-quant mixes do (the defaults: Q4_K_M), F32 norms; the data a hole (a sparse file)."""
    import gguf

    hidden, inter, vocab, layers, kv = 4096, 14336, 128256, 32, 1024
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(inter)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    w.add_context_length(8192)
    w.add_vocab_size(vocab)

    def info(name: str, shape: tuple[int, ...], kind: str) -> None:
        qtype = gguf.GGMLQuantizationType[kind]
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        w.add_tensor_info(name, shape, np.dtype(np.float32), int(np.prod(shape)) // block * size, raw_dtype=qtype)

    info("token_embd.weight", (vocab, hidden), main)
    for i in range(layers):
        p = f"blk.{i}."
        info(p + "attn_norm.weight", (hidden,), "F32")
        for part, shape, kind in (("attn_q", (hidden, hidden), main), ("attn_k", (kv, hidden), main),
                                  ("attn_v", (kv, hidden), sensitive), ("attn_output", (hidden, hidden), main),
                                  ("ffn_gate", (inter, hidden), main), ("ffn_up", (inter, hidden), main),
                                  ("ffn_down", (hidden, inter), sensitive)):
            info(p + part + ".weight", shape, kind)
        info(p + "ffn_norm.weight", (hidden,), "F32")
    info("output_norm.weight", (hidden,), "F32")
    info("output.weight", (vocab, hidden), sensitive)
    finish_gguf(w, data=False)
    return path


#: a child process that runs the CLI and prints its exit code, seconds, CPU seconds of the run (user and
#: system, its threads included, imports before it not) and peak resident set (VmHWM). Tests bound CPU,
#: not wall time: a loaded CI machine stretches the one, not the other
_PEAK = r"""
import json, sys, time
from inspector.cli.commands import run
t, c = time.perf_counter(), time.process_time()
code = run(sys.argv[1:])
took, cpu = time.perf_counter() - t, time.process_time() - c
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"code": code, "seconds": took, "cpu": cpu, "peak_mb": hwm / 1024}))
"""


def measured(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``inspect ARGS`` in a child process: {"code", "seconds", "cpu", "peak_mb"} of that process alone (its
    stdout's last line; what the command printed comes before it)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    lines = done.stdout.strip().splitlines()
    facts: dict[str, Any] = json.loads(lines[-1])
    facts["stderr"], facts["stdout"] = done.stderr, "\n".join(lines[:-1])
    return facts


def model_gguf(path: Path, dtype: Any) -> bytes:
    """A one-layer llama GGUF that gguf-py writes, its embedding [32000, 1024] in ``dtype`` (numpy's: F32 is
    twice F16's bytes), with the metadata a fit needs (layers, context, widths, heads); its bytes."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_context_length(2048)
    w.add_embedding_length(1024)
    w.add_feed_forward_length(2048)
    w.add_head_count(8)
    w.add_head_count_kv(8)
    w.add_tensor("token_embd.weight", np.zeros((32000, 1024), dtype=dtype))
    finish_gguf(w)
    return path.read_bytes()


def saved_bytes(model: Any, forward: Any) -> int:
    """Bytes autograd saves for the backward while ``forward()`` runs ``model``: every tensor packed by
    ``torch.autograd.graph.saved_tensors_hooks``, each storage once, the model's parameters aside."""
    import torch

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: Any) -> Any:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen.setdefault(storage.data_ptr(), storage.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(seen.values())


@contextlib.contextmanager
def toy_strategy(folder: Path, module: str, text: str, registry: Any, attribute: str) -> Iterator[Path]:
    """A strategy written by a test in a module of its own (never in the package), imported and registered with
    ``registry.register(module.<attribute>)`` for the block; unregistered and forgotten after. Yields its folder."""
    import importlib
    import sys

    folder.mkdir()
    (folder / f"{module}.py").write_text(text)
    sys.path.insert(0, str(folder))
    strategy = getattr(importlib.import_module(module), attribute)
    registry.register(strategy)
    try:
        yield folder
    finally:
        registry.unregister(strategy.name)
        sys.path.remove(str(folder))
        sys.modules.pop(module, None)


def generated_schemas() -> dict[str, Any]:
    """The JSON Schemas as scripts/make_schemas.py would write them now (from the document types in
    inspector/results/, the registries as they stand), by the schema's name."""
    from inspector.results.documents import schemas

    return schemas()


def train_schema_takes(doc: dict[str, Any], field: str, word: str) -> None:
    """The train JSON Schema, generated now, lists ``word`` among ``field``'s words and validates ``doc``."""
    from jsonschema import Draft202012Validator

    schema = generated_schemas()["train"]
    assert word in schema["properties"][field]["enum"], schema["properties"][field]
    Draft202012Validator(schema).validate(doc)


def help_with_strategy(folder: Path, module: str, registration: str, command: str, home: Path) -> str:
    """``inspect COMMAND --help`` in a fresh process that imports ``module`` from ``folder`` and runs
    ``registration`` (say ``from inspector.analysis.serving import engines; engines.register(toyengine.ENGINE)``)
    before the CLI is imported, as a plugin would."""
    import subprocess
    import sys

    code = (f"import sys; sys.path.insert(0, {str(folder)!r}); import {module}; {registration}; "
            f"from inspector.cli.commands import main; main([{command!r}, '--help'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "200", "PATH": "", "HOME": str(home)})
    return done.stdout + done.stderr


def mypy_on_planted(relative: str, text: str, cache: Path) -> str:
    """mypy's report on a module planted in the package (``relative`` to its root, with the project's mypy
    settings for that place), removed after: what the type checker says of code no one should write."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    planted = root / relative
    planted.write_text(text)
    try:
        done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(cache),
                               str(planted)], capture_output=True, text=True, cwd=root)
    finally:
        planted.unlink()
    return done.stdout
