"""GGUF header: bytes in, records out (versions 2 and 3, little-endian).

Layout (llama.cpp's ``gguf`` spec): ``GGUF`` magic, uint32 version, uint64 tensor count, uint64
metadata count; the metadata key/values (string key, uint32 value type, value; arrays carry an
element type and a count); the tensor infos (name, uint32 n_dims, uint64 dims in GGML order, innermost
first, uint32 GGML type, uint64 offset into the data); padding to ``general.alignment`` (32 by
default); then the data. Sizes per GGML type come from the ``gguf`` package's ``GGML_QUANT_SIZES``
(block size and bytes per block), never a table of ours.

The parser reads only the bytes it is given and says how many more it needs (``Incomplete``), so
a remote reader can grow its range requests until the metadata and tensor infos are whole.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any, Final

from inspector.errors import HeaderError
from inspector.model import Checkpoint, TensorInfo, WeightFile

MAGIC: Final = b"GGUF"
VERSIONS: Final = (2, 3)
DEFAULT_ALIGNMENT: Final = 32
MAX_HEADER: Final = 128 * 1024 * 1024  # metadata + tensor infos; a 262k-token vocabulary is ~20 MB
MAX_DIMS: Final = 8
MAX_STRING: Final = 64 * 1024 * 1024
#: metadata arrays longer than this are summarised (``tokenizer.ggml.tokens`` is 128,256 strings)
SHOWN_ARRAY: Final = 16

_SCALARS: Final = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
                   12: "<d"}
_TYPE_NAMES: Final = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32",
                      7: "bool", 8: "string", 9: "array", 10: "uint64", 11: "int64", 12: "float64"}


class GgufError(HeaderError):
    """A GGUF header breaks a rule of the format; ``rule`` names which."""

    rule = "gguf"

    def __init__(self, rule: str, message: str, file: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, file, hint)
        self.rule = rule


class Incomplete(Exception):
    """The bytes end before the header does; ``need`` is a lower bound on the bytes required."""

    def __init__(self, need: int) -> None:
        super().__init__(need)
        self.need = need


class _Cursor:
    def __init__(self, data: bytes | bytearray | memoryview, file: str) -> None:
        self.data = memoryview(data)
        self.at = 0
        self.file = file

    def take(self, n: int) -> memoryview:
        end = self.at + n
        if end > len(self.data):
            raise Incomplete(end)
        out = self.data[self.at:end]
        self.at = end
        return out

    def scalar(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def string(self) -> str:
        n = self.scalar("<Q")
        if n > MAX_STRING:
            raise GgufError("gguf-string-too-long", f"a string claims {n:,} bytes", self.file)
        try:
            return str(self.take(n), "utf-8")
        except UnicodeDecodeError:
            raise GgufError("gguf-not-utf8", "a string is not valid UTF-8", self.file) from None


def _value(cur: _Cursor, vtype: int, key: str) -> Any:
    if vtype in _SCALARS:
        return cur.scalar(_SCALARS[vtype])
    if vtype == 8:
        return cur.string()
    if vtype == 9:
        etype = cur.scalar("<I")
        count = cur.scalar("<Q")
        if etype == 9:
            raise GgufError("gguf-nested-array", f"{key}: arrays of arrays are not read", cur.file)
        if etype not in _SCALARS and etype != 8:
            raise GgufError("gguf-value-type", f"{key}: unknown array element type {etype}", cur.file)
        if etype in _SCALARS:
            size = struct.calcsize(_SCALARS[etype])
            raw = cur.take(size * count)
            shown = [struct.unpack_from(_SCALARS[etype], raw, i * size)[0] for i in range(min(count, SHOWN_ARRAY))]
        else:
            shown = []
            for i in range(count):
                s = cur.string()
                if i < SHOWN_ARRAY:
                    shown.append(s)
        return {"type": _TYPE_NAMES[etype], "count": count, "values": shown}
    raise GgufError("gguf-value-type", f"{key}: unknown value type {vtype}", cur.file)


def parse_gguf(blob: bytes | bytearray, *, file: str = "<bytes>", file_size: int | None = None) -> tuple[  # noqa: C901
        WeightFile, dict[str, Any], int]:
    """(header, metadata, version). Raises ``Incomplete`` when ``blob`` ends before the tensor
    infos do, and ``GgufError`` naming the rule a hostile or broken header breaks."""
    import gguf

    cur = _Cursor(blob, file)
    if len(blob) >= 4 and bytes(blob[:4]) != MAGIC:
        raise GgufError("gguf-bad-magic", "not a GGUF file (no GGUF magic)", file)
    cur.take(4)
    version = cur.scalar("<I")
    if version not in VERSIONS:
        swapped = struct.unpack("<I", struct.pack(">I", version))[0]
        if swapped in VERSIONS:
            raise GgufError("gguf-big-endian", f"a big-endian GGUF (version {swapped}): only little-endian is read",
                            file, hint="convert it with llama.cpp's gguf tools")
        raise GgufError("gguf-version", f"GGUF version {version} is not supported (2 and 3 are)", file)
    n_tensors = cur.scalar("<Q")
    n_kv = cur.scalar("<Q")
    if n_tensors > 10_000_000 or n_kv > 10_000_000:
        raise GgufError("gguf-counts", f"{n_tensors:,} tensors and {n_kv:,} metadata entries: not a real header",
                        file)
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        vtype = cur.scalar("<I")
        metadata[key] = _value(cur, vtype, key)
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise GgufError("gguf-alignment", f"general.alignment {alignment!r} is not a power of two", file)
    raw_infos: list[tuple[str, tuple[int, ...], int, int]] = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.scalar("<I")
        if n_dims > MAX_DIMS:
            raise GgufError("gguf-dims", f"tensor {name!r}: {n_dims} dimensions", file)
        dims = tuple(cur.scalar("<Q") for _ in range(n_dims))
        ggml_type = cur.scalar("<I")
        offset = cur.scalar("<Q")
        raw_infos.append((name, dims, ggml_type, offset))
    infos_end = cur.at
    data_start = -(-infos_end // alignment) * alignment
    if cur.at > MAX_HEADER:
        raise GgufError("gguf-header-too-large", f"the header takes {cur.at:,} bytes", file)
    tensors: list[TensorInfo] = []
    for name, dims, ggml_type, offset in raw_infos:
        try:
            qtype = gguf.GGMLQuantizationType(ggml_type)
            block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        except (ValueError, KeyError):
            raise GgufError("gguf-unknown-type", f"tensor {name!r}: unknown GGML type {ggml_type}", file) from None
        numel = 1
        for d in dims:
            numel *= d
        if dims and dims[0] % block:
            raise GgufError("gguf-block", f"tensor {name!r}: {qtype.name} packs {block} values a block, but its "
                                          f"rows have {dims[0]:,}", file)
        if offset % alignment:
            raise GgufError("gguf-offset-alignment", f"tensor {name!r}: offset {offset:,} is not a multiple of "
                                                     f"{alignment}", file)
        nbytes = numel // block * type_size
        # the HF order: llama.cpp stores dimensions innermost first
        tensors.append(TensorInfo(name, qtype.name, tuple(reversed(dims)), offset, offset + nbytes, file, numel))
    ordered = sorted(tensors, key=lambda t: t.begin)
    for a, b in itertools.pairwise(ordered):
        if b.begin < a.end:
            raise GgufError("gguf-overlap", f"tensors {a.name!r} and {b.name!r} overlap", file)
    data_length = max((t.end for t in tensors), default=0)
    if file_size is not None and tensors and data_start + data_length > file_size:
        raise GgufError("gguf-data-beyond-file", f"tensor data ends at byte {data_start + data_length:,} but the "
                                                 f"file has {file_size:,}", file)
    stop = data_start if tensors else infos_end
    header = WeightFile(file=file, format="gguf", tensors=tuple(tensors),
                        metadata={k: _show(v) for k, v in metadata.items()}, file_size=file_size,
                        data_start=stop, data_length=data_length, head=bytes(memoryview(blob)[:min(stop, len(blob))]))
    return header, metadata, version


def _show(value: Any) -> str:
    if isinstance(value, dict) and "count" in value:
        head = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in value["values"][:4])
        more = " …" if value["count"] > 4 else ""
        return f"[{value['count']:,} {value['type']}: {head}{more}]"
    return str(value)


def gguf_config(metadata: dict[str, Any], tensor_names: set[str]) -> dict[str, Any]:
    """config.json's figures from GGUF metadata (``llama.block_count`` → ``num_hidden_layers``, …),
    with ``model_type`` the architecture llama.cpp names."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str):
        return {}

    def get(key: str) -> Any:
        return metadata.get(f"{arch}.{key}")

    tokens = metadata.get("tokenizer.ggml.tokens")
    vocab = get("vocab_size") or (tokens["count"] if isinstance(tokens, dict) else None)
    config = {
        "model_type": arch, "architectures": [f"{arch} (GGUF)"],
        "hidden_size": get("embedding_length"), "num_hidden_layers": get("block_count"),
        "intermediate_size": get("feed_forward_length"), "num_attention_heads": get("attention.head_count"),
        "num_key_value_heads": get("attention.head_count_kv"), "max_position_embeddings": get("context_length"),
        "vocab_size": vocab, "num_local_experts": get("expert_count"), "num_experts_per_tok": get("expert_used_count"),
        "head_dim": get("attention.key_length"), "sliding_window": get("attention.sliding_window"),
        "rope_theta": get("rope.freq_base"),
        "tie_word_embeddings": "output.weight" not in tensor_names if tensor_names else None,
    }
    return {k: v for k, v in config.items() if v is not None}


def with_gguf_names(checkpoint: Checkpoint, arch_name: str) -> Checkpoint:
    """``checkpoint`` (a safetensors or pickle one) with its tensors renamed as llama.cpp names them
    (gguf-py's ``TensorNameMap``: ``model.layers.0.self_attn.q_proj.weight`` → ``blk.0.attn_q.weight``),
    so a diff against a GGUF of the same model aligns tensor by tensor. Names the map does not know
    (buffers such as ``rotary_emb.inv_freq``) stay as they are."""
    from dataclasses import replace

    import gguf

    arch = next((a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == arch_name), None)
    layers = (checkpoint.config or {}).get("num_hidden_layers")
    if arch is None or not isinstance(layers, int):
        return checkpoint
    names = gguf.get_tensor_name_map(arch, layers)
    headers = []
    for h in checkpoint.headers:
        renamed = tuple(t._replace(name=names.get_name(t.name, try_suffixes=(".weight", ".bias")) or t.name)
                        for t in h.tensors)
        headers.append(replace(h, tensors=renamed))
    return replace(checkpoint, headers=tuple(headers),
                   notes=(*checkpoint.notes, "tensor names mapped to llama.cpp's by gguf-py's TensorNameMap"))
