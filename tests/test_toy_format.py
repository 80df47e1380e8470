"""Adding a format is one module: a reader registered with ``formats.registry.register``, nothing else.

The toy format below lives in a temporary module written by the test (never in the package): magic
``TOYF``, a little-endian u32 count, then per tensor a u16 name length, the name, a u8 dtype index
into the dtype table, a u8 rank and u32 dimensions; the data follows, tensor after tensor. The same
file is read through every source: the file itself, a folder, the HF cache layout, a header snapshot
saved from it, and the test Hub.
"""

from __future__ import annotations

import importlib
import json
import os
import struct
import sys
from pathlib import Path

import pytest
from hubserver import HubServer, VFile

from inspector.analysis.facts.stats import summarize
from inspector.formats import registry
from inspector.sources.hub import HubOptions, open_hub
from inspector.sources.resolve import open_checkpoint

TOY_MODULE = '''
import struct
from dataclasses import dataclass

from inspector.errors import InvalidEntry
from inspector.formats.dtypes import DTYPE_BITS, TABLE
from inspector.formats.registry import PrefixReader
from inspector.model import TensorInfo, WeightFile


@dataclass(frozen=True, slots=True)
class Toy(PrefixReader):
    name: str = "toy"
    suffixes: tuple[str, ...] = (".toy",)
    max_header: int = 1 << 20
    keeps_head: bool = True
    alternatives: bool = False

    def first_read(self, hint):
        return 16

    def need(self, prefix, *, file, file_size):
        if prefix[:4] != b"TOYF":
            raise InvalidEntry("not a toy file", file)
        (count,) = struct.unpack_from("<I", prefix, 4)
        at = 8
        for _ in range(count):
            if len(prefix) < at + 2:
                return at + 2
            (n,) = struct.unpack_from("<H", prefix, at)
            if len(prefix) < at + 2 + n + 2:
                return at + 2 + n + 2
            rank = prefix[at + 2 + n + 1]
            at += 2 + n + 2 + 4 * rank
        return at

    def parse(self, blob, *, file, file_size):
        (count,) = struct.unpack_from("<I", blob, 4)
        at, offset, tensors = 8, 0, []
        for _ in range(count):
            (n,) = struct.unpack_from("<H", blob, at)
            name = bytes(blob[at + 2:at + 2 + n]).decode()
            dtype, rank = TABLE[blob[at + 2 + n]].name, blob[at + 2 + n + 1]
            shape = struct.unpack_from(f"<{rank}I", blob, at + 2 + n + 2)
            at += 2 + n + 2 + 4 * rank
            numel = 1
            for d in shape:
                numel *= d
            nbytes = numel * DTYPE_BITS[dtype] // 8
            tensors.append(TensorInfo(name, dtype, tuple(shape), offset, offset + nbytes, file, numel))
            offset += nbytes
        return WeightFile(file=file, format="toy", tensors=tuple(tensors), file_size=file_size, data_start=at,
                          data_length=offset, head=bytes(blob[:at]))


READER = Toy()
'''

#: (name, dtype, shape): a two-layer toy in Llama's names
TENSORS = [("model.embed_tokens.weight", "BF16", (64, 16))] + [
    (f"model.layers.{i}.{part}.weight", "BF16", shape) for i in range(2)
    for part, shape in (("self_attn.q_proj", (16, 16)), ("mlp.up_proj", (32, 16)), ("input_layernorm", (16,)))
] + [("lm_head.weight", "F32", (64, 16))]


def toy_bytes() -> tuple[bytes, int, int]:
    from inspector.formats.dtypes import TABLE

    index = {d.name: i for i, d in enumerate(TABLE)}
    head = bytearray(b"TOYF" + struct.pack("<I", len(TENSORS)))
    data = 0
    for name, dtype, shape in TENSORS:
        raw = name.encode()
        head += struct.pack("<H", len(raw)) + raw + bytes([index[dtype], len(shape)]) + struct.pack(
            f"<{len(shape)}I", *shape)
        numel = 1
        for d in shape:
            numel *= d
        data += numel * (4 if dtype == "F32" else 2)
    return bytes(head) + b"\0" * data, len(head) + data, data


@pytest.fixture
def toy(tmp_path: Path):
    (tmp_path / "toymod").mkdir()
    (tmp_path / "toymod" / "toyformat.py").write_text(TOY_MODULE)
    sys.path.insert(0, str(tmp_path / "toymod"))
    try:
        module = importlib.import_module("toyformat")
        registry.register(module.READER)
        yield
    finally:
        registry.unregister("toy")
        sys.path.remove(str(tmp_path / "toymod"))
        sys.modules.pop("toyformat", None)


EXPECTED = sum(int.__mul__(*s) if len(s) == 2 else s[0] for _, _, s in TENSORS)  # elements the test wrote


def test_a_format_registered_from_outside_reads_through_every_source(tmp_path: Path, toy, online, cli) -> None:
    blob, size, data_bytes = toy_bytes()
    config = {"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 64}
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "model.toy").write_bytes(blob)
    (folder / "config.json").write_text(json.dumps(config))

    seen = {}
    seen["file"] = open_checkpoint(str(folder / "model.toy"))
    seen["folder"] = open_checkpoint(str(folder))
    # the Hugging Face cache layout: snapshots/<sha>/ of links into blobs/
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--acme--toy"
    snap = repo / "snapshots" / sha
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    for f in folder.iterdir():
        (repo / "blobs" / f.name).write_bytes(f.read_bytes())
        os.symlink(os.path.relpath(repo / "blobs" / f.name, snap), snap / f.name)
    seen["hf-cache"] = open_checkpoint(str(repo))
    saved = cli("save", str(folder), "-o", str(tmp_path / "snap"))
    assert saved.code == 0, saved.err
    seen["snapshot"] = open_checkpoint(str(tmp_path / "snap"))
    with HubServer() as server:
        server.add_files("acme/toy", {"model.toy": VFile(size, blob, True),
                                      "config.json": json.dumps(config).encode()})
        seen["hub"] = open_hub("acme/toy", options=HubOptions(endpoint=server.url, timeout=5, use_cache=False))
        assert all(r.range for r in server.requests("GET") if r.path.endswith(".toy"))  # headers only

    for where, checkpoint in seen.items():
        s = summarize(checkpoint)
        assert [h.format for h in checkpoint.headers] == ["toy"], where
        assert s.tensors == len(TENSORS) and s.hub_total == EXPECTED, where
        assert s.bytes == data_bytes, where
