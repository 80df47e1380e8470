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
import math
import re
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
#: the most tensor infos and metadata entries a header may list. GGUF stores a layer's experts fused, so
#: real files list a few thousand tensors (DeepSeek-V3's: 1,025) and a few dozen keys (a vocabulary is one
#: array). Measured on a 2-core machine, as a whole ``inspect FILE --json``: 100,000 tensor infos 1.1 s of
#: CPU and 105 MB, 200,000 1.6 s and 172 MB; 1,000,000 (a 51 MB header, inside ``MAX_HEADER``) took 6.6 s
#: and 649 MB, past what one hostile file may cost. llama.cpp sets no such bound; a file past it is refused
#: by name (``gguf-counts``)
MAX_TENSORS: Final = 200_000
MAX_KV: Final = 65_536
#: metadata arrays longer than this are summarised (``tokenizer.ggml.tokens`` is 128,256 strings)
SHOWN_ARRAY: Final = 16
#: llama.cpp's name of one part of a model split in several files (``llama_split_path``: ``%s-%05d-of-%05d.gguf``,
#: what ``llama-gguf-split`` and gguf-py's GGUFWriter with ``split_max_tensors``/``split_max_size`` write); each
#: part holds ``split.no`` (from 0), ``split.count`` and the first part the model's metadata. llama.cpp loads the
#: parts as one model from the first's name
SPLIT_NAME: Final = re.compile(r"(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf")
#: the most parts one split model may name (a name from outside: ``-00001-of-99999``)
MAX_SPLIT_PARTS: Final = 1024


def split_parts(name: str) -> list[str] | None:
    """Every part's name (in order, in ``name``'s folder) of the split model ``name`` is a part of, by llama.cpp's
    naming; None for a name that is not a part (or names more than ``MAX_SPLIT_PARTS`` parts, or a part past
    the count)."""
    folder, slash, base = name.rpartition("/")
    m = SPLIT_NAME.fullmatch(base)
    if m is None or not 1 <= int(m["no"]) <= int(m["count"]) <= MAX_SPLIT_PARTS:
        return None
    count = int(m["count"])
    return [f"{folder}{slash}{m['stem']}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1)]


def check_split(parts: list[WeightFile]) -> None:
    """The parts of one split model, read in order: each says it is the part its name says (``split.no``, from 0)
    of as many as there are (``split.count``), as llama.cpp checks when it loads them."""
    for i, part in enumerate(parts):
        no, count = part.metadata.get("split.no"), part.metadata.get("split.count")
        if (no, count) != (str(i), str(len(parts))):  # metadata as its text
            raise GgufError("gguf-split", f"the part {i + 1} of {len(parts)} of a split model says it is part "
                              f"{str(no)[:12]} of {str(count)[:12]} (split.no from 0, split.count)", part.file)


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


_U32: Final = struct.Struct("<I")
_U64: Final = struct.Struct("<Q")
#: the fewest bytes a metadata entry takes (key length, a one-byte key, value type, a one-byte value)
#: and a tensor info (name length, a one-byte name, dimension count, type, offset): a count that
#: cannot fit in the bytes the file has is refused before any entry is read
MIN_ENTRY: Final = 8 + 1 + 4 + 1
MIN_TENSOR_INFO: Final = 8 + 1 + 4 + 4 + 8
#: numeric metadata arrays up to this long are kept whole (per-layer figures: head counts, feed-forward
#: lengths, sliding-window patterns); longer ones (token scores) keep their first SHOWN_ARRAY values
KEPT_ARRAY: Final = 4096


class GgufScan:
    """One resumable parse of a GGUF header. ``feed`` is given the file's first bytes, each time more
    of them (the same prefix, longer); it parses on from the last whole entry, so the work grows with
    the header, not with the number of reads. Counts, string lengths and array lengths are checked
    against the bytes the file has (and ``MAX_HEADER``) before anything is read or allocated."""

    def __init__(self, file: str, file_size: int | None) -> None:
        self.file = file
        self.file_size = file_size
        self.at = 0
        self.version = 0
        self.n_tensors = -1
        self.n_kv = 0
        self.metadata: dict[str, Any] = {}
        self.infos: list[tuple[str, tuple[int, ...], int, int]] = []
        self.names: set[str] = set()
        self.replaced = 0  # strings that were not UTF-8, shown with U+FFFD

    # --- bounds -----------------------------------------------------------------------------------

    def _reach(self, view: memoryview, end: int) -> None:
        """``end`` must lie inside the file and the header budget; Incomplete when not yet read."""
        if self.file_size is not None and end > self.file_size:
            raise GgufError("gguf-truncated", f"the header reaches byte {end:,} but the file has {self.file_size:,}",
                            self.file)
        if end > MAX_HEADER:
            raise GgufError("gguf-header-too-large", f"the header needs more than {MAX_HEADER:,} bytes", self.file)
        if end > len(view):
            raise Incomplete(end)

    def _u32(self, view: memoryview, at: int) -> int:
        self._reach(view, at + 4)
        return int(_U32.unpack_from(view, at)[0])

    def _u64(self, view: memoryview, at: int) -> int:
        self._reach(view, at + 8)
        return int(_U64.unpack_from(view, at)[0])

    def _string(self, view: memoryview, at: int, keep: bool = True) -> tuple[str, int]:
        n = self._u64(view, at)
        if n > MAX_STRING:
            raise GgufError("gguf-string-too-long", f"a string claims {n:,} bytes", self.file)
        end = at + 8 + n
        self._reach(view, end)
        if not keep:
            return "", end
        raw = view[at + 8:end]
        try:
            return str(raw, "utf-8"), end
        except UnicodeDecodeError:  # llama.cpp and gguf-py take the bytes as they are; we show U+FFFD
            self.replaced += 1
            return str(raw, "utf-8", "replace"), end

    # --- the parse ----------------------------------------------------------------------------------

    def feed(self, blob: bytes | bytearray | memoryview) -> int | None:
        """Parse on; None when the tensor infos are whole, else how many bytes are needed."""
        view = memoryview(blob)
        try:
            if self.n_tensors < 0:
                self._fixed(view)
            while len(self.metadata) < self.n_kv:
                self.at = self._entry(view, self.at)
            while len(self.infos) < self.n_tensors:
                self.at = self._tensor_info(view, self.at)
        except Incomplete as more:
            return more.need
        return None

    def _fixed(self, view: memoryview) -> None:
        if len(view) >= 4 and bytes(view[:4]) != MAGIC:
            raise GgufError("gguf-bad-magic", "not a GGUF file (no GGUF magic)", self.file)
        self._reach(view, 24)
        version = self._u32(view, 4)
        if version not in VERSIONS:
            swapped = struct.unpack("<I", struct.pack(">I", version))[0]
            if swapped in VERSIONS:
                raise GgufError("gguf-big-endian", f"a big-endian GGUF (version {swapped}): only little-endian is "
                                                   "read", self.file, hint="convert it with llama.cpp's gguf tools")
            raise GgufError("gguf-version", f"GGUF version {version} is not supported (2 and 3 are)", self.file)
        n_tensors, n_kv = self._u64(view, 8), self._u64(view, 16)
        if n_tensors > MAX_TENSORS or n_kv > MAX_KV:
            raise GgufError("gguf-counts", f"{n_tensors:,} tensors and {n_kv:,} metadata entries: more than the "
                                           f"{MAX_TENSORS:,} tensors and {MAX_KV:,} entries read (real files list "
                                           "a few thousand and a few dozen)", self.file)
        least = 24 + n_kv * MIN_ENTRY + n_tensors * MIN_TENSOR_INFO
        room = MAX_HEADER if self.file_size is None else min(self.file_size, MAX_HEADER)
        if least > room:
            where = f"the file has {self.file_size:,}" if room == self.file_size else \
                f"a header may take {MAX_HEADER:,}"
            raise GgufError("gguf-counts", f"{n_tensors:,} tensors and {n_kv:,} metadata entries need at least "
                                           f"{least:,} bytes; {where}", self.file)
        self.version, self.n_tensors, self.n_kv, self.at = version, n_tensors, n_kv, 24

    def _entry(self, view: memoryview, at: int) -> int:
        key, at = self._string(view, at)
        if key in self.metadata:  # llama.cpp refuses a file with a key twice
            raise GgufError("gguf-duplicate-key", f"metadata key {key!r} appears twice", self.file)
        vtype = self._u32(view, at)
        value, at = self._value(view, at + 4, vtype, key)
        self.metadata[key] = value
        return at

    def _value(self, view: memoryview, at: int, vtype: int, key: str) -> tuple[Any, int]:
        if vtype in _SCALARS:
            fmt = _SCALARS[vtype]
            size = struct.calcsize(fmt)
            self._reach(view, at + size)
            return struct.unpack_from(fmt, view, at)[0], at + size
        if vtype == 8:
            return self._string(view, at)
        if vtype != 9:
            raise GgufError("gguf-value-type", f"{key}: unknown value type {vtype}", self.file)
        etype = self._u32(view, at)
        count = self._u64(view, at + 4)
        at += 12
        if etype == 9:
            raise GgufError("gguf-nested-array", f"{key}: arrays of arrays are not read", self.file)
        if etype not in _SCALARS and etype != 8:
            raise GgufError("gguf-value-type", f"{key}: unknown array element type {etype}", self.file)
        if etype in _SCALARS:
            fmt = _SCALARS[etype]
            size = struct.calcsize(fmt)
            self._reach(view, at + size * count)
            kept = count if count <= KEPT_ARRAY else SHOWN_ARRAY
            values = list(struct.unpack_from(f"<{kept}{fmt[1:]}", view, at))
            return {"type": _TYPE_NAMES[etype], "count": count, "values": values}, at + size * count
        self._reach(view, at + 8 * count)  # each string takes 8 bytes of length at least
        shown = []
        for i in range(count):
            text, at = self._string(view, at, keep=i < SHOWN_ARRAY)
            if i < SHOWN_ARRAY:
                shown.append(text)
        return {"type": "string", "count": count, "values": shown}, at

    def _tensor_info(self, view: memoryview, at: int) -> int:
        name, at = self._string(view, at)
        n_dims = self._u32(view, at)
        if n_dims > MAX_DIMS:
            raise GgufError("gguf-dims", f"tensor {name!r}: {n_dims} dimensions", self.file)
        self._reach(view, at + 4 + 8 * n_dims + 12)
        dims = struct.unpack_from(f"<{n_dims}Q", view, at + 4)
        at += 4 + 8 * n_dims
        ggml_type, offset = struct.unpack_from("<IQ", view, at)
        if name in self.names:  # gguf-py and llama.cpp refuse a file with a tensor name twice
            raise GgufError("gguf-duplicate-tensor", f"tensor name {name!r} appears twice", self.file)
        self.names.add(name)
        self.infos.append((name, dims, ggml_type, offset))
        return at + 12

    def alignment(self) -> int:
        """``general.alignment`` once the metadata is read (32 by default); GgufError if not a power of two."""
        alignment = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if type(alignment) is not int or alignment <= 0 or alignment & (alignment - 1):
            raise GgufError("gguf-alignment", f"general.alignment {alignment!r} is not a power of two", self.file)
        return alignment

    def header_end(self) -> int:
        """Where the tensor data starts (the tensor infos' end, padded to the alignment), or where the
        header ends when there are no tensors."""
        alignment = self.alignment()
        return -(-self.at // alignment) * alignment if self.infos else self.at

    def finish(self, blob: bytes | bytearray, file_size: int | None) -> tuple[WeightFile, dict[str, Any], int]:
        """The records, once ``feed`` returned None; ``file_size`` (None when the audit's sink checks the end)
        is checked against the end of the tensor data."""
        # deferred: 97 ms at import (gguf)
        import gguf

        file, metadata = self.file, self.metadata
        alignment = self.alignment()
        infos_end = self.at
        data_start = -(-infos_end // alignment) * alignment
        tensors: list[TensorInfo] = []
        for name, dims, ggml_type, offset in self.infos:
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
        check_layout(tensors, data_start, file_size, file)
        stop = data_start if tensors else infos_end
        shown = {k: _show(v) for k, v in metadata.items()}
        if self.replaced:
            shown["strings not UTF-8"] = f"{self.replaced:,} (shown with U+FFFD)"
        header = WeightFile(file=file, format="gguf", tensors=tuple(tensors), metadata=shown, file_size=file_size,
                            data_start=stop, data_length=max((t.end for t in tensors), default=0),
                            head=bytes(memoryview(blob)[:min(stop, len(blob))]))
        _remember(header.head, metadata)
        return header, metadata, self.version


def check_layout(tensors: list[TensorInfo], data_start: int, file_size: int | None, file: str) -> None:
    """No two tensors' data overlap; with ``file_size``, none ends past the end of the file. (The
    audit reads leniently and applies the second rule itself, as a finding.)"""
    ordered = sorted(tensors, key=lambda t: t.begin)
    for a, b in itertools.pairwise(ordered):
        if b.begin < a.end:
            raise GgufError("gguf-overlap", f"tensors {a.name!r} and {b.name!r} overlap", file)
    end = data_start + max((t.end for t in tensors), default=0)
    if file_size is not None and tensors and end > file_size:
        raise GgufError("gguf-data-beyond-file", f"tensor data ends at byte {end:,} but the file has {file_size:,}",
                        file)


def parse_gguf(blob: bytes | bytearray, *, file: str = "<bytes>", file_size: int | None = None) -> tuple[
        WeightFile, dict[str, Any], int]:
    """(header, metadata, version) of a whole header in one call. Raises ``Incomplete`` when ``blob``
    ends before the tensor infos do, and ``GgufError`` naming the rule a hostile or broken header
    breaks."""
    scan = GgufScan(file, file_size)
    need = scan.feed(blob)
    if need is not None:
        raise Incomplete(need)
    return scan.finish(blob, file_size)


#: the metadata of the last few headers parsed, by their kept bytes: ``config`` of a header just read
#: needs no second parse
_RECENT: list[tuple[bytes, dict[str, Any]]] = []


def _remember(head: bytes, metadata: dict[str, Any]) -> None:
    _RECENT.append((head, metadata))
    del _RECENT[:-4]


def metadata_of(header: WeightFile) -> dict[str, Any]:
    """The parsed metadata of a GGUF header (from the parse that made it, else parsed again)."""
    for kept, recent in reversed(_RECENT):
        if kept is header.head:
            found: dict[str, Any] = recent
            return found
    parsed: dict[str, Any] = parse_gguf(header.head, file=header.file)[1]
    return parsed


def _show(value: Any) -> str:
    if isinstance(value, dict) and "count" in value:
        head = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in value["values"][:4])
        more = " …" if value["count"] > 4 else ""
        return f"[{value['count']:,} {value['type']}: {head}{more}]"
    return str(value)


#: the key that marks a config made from GGUF metadata: its figures are the file's, read as they are
#: (transformers is never asked to fill them)
GGUF_CONFIG: Final = "gguf_metadata"

#: llama.cpp's sliding-window layout where the file has no ``attention.sliding_window_pattern``: each
#: architecture's hparams loader in llama.cpp (src/llama-model.cpp, ``hparams.set_swa_pattern(n)``)
#: marks layer i sliding unless ``i % n == n - 1``; the window when the file gives none (Gemma 2's
#: 4096, Llama 4's 8192-token chunks). Architectures that store the pattern per layer need no row.
LLAMA_CPP_SWA: Final[dict[str, tuple[int, int | None]]] = {
    "gemma2": (2, 4096), "gemma3": (6, None), "gemma3n": (5, None), "gemma-embedding": (6, None),
    "cohere2": (4, None), "exaone4": (4, None), "gpt-oss": (2, None), "llama4": (4, 8192),
}


def _count(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value < 1 << 40 else None


def _per_layer(value: Any, layers: int | None) -> tuple[int | None, tuple[int, ...]]:
    """A figure llama.cpp reads with ``get_key_or_arr``: one count, or one per layer. (its largest,
    the per-layer counts or () when it is one count)"""
    if isinstance(value, dict) and value.get("type") != "string":
        values = value.get("values", [])
        if layers is None or value.get("count") != layers or len(values) != layers or \
                not all(_count(v) is not None for v in values):
            return None, ()
        return max(values, default=None), tuple(values)
    return _count(value), ()


def _swa_layers(metadata: dict[str, Any], arch: str, layers: int | None, window: int | None) -> tuple[
        list[str] | None, int | None]:
    """Per-layer attention kinds and the window, as llama.cpp lays them out."""
    # deferred: 94 ms at import (gguf)
    import gguf

    if layers is None:
        return None, window
    pattern = metadata.get(gguf.Keys.Attention.SLIDING_WINDOW_PATTERN.format(arch=arch))
    default = LLAMA_CPP_SWA.get(arch)
    if window is None and default is not None:
        window = default[1]
    if window is None or window == 0:
        return None, None
    if pattern is None and default is None:  # llama.cpp applies a window only where the file gives its
        return None, None  # pattern or the architecture's loader sets one (Phi-3's is switched off)
    if isinstance(pattern, dict):  # one flag per layer: true where the layer slides
        flags = pattern.get("values", [])
        if pattern.get("count") != layers or len(flags) != layers:
            return None, None
        return ["sliding_attention" if f else "full_attention" for f in flags], window
    period = _count(pattern) if pattern is not None else (default[0] if default else None)
    if period is None:
        return None, None
    return ["sliding_attention" if period == 0 or i % period < period - 1 else "full_attention"
            for i in range(layers)], window


def gguf_config(metadata: dict[str, Any], tensor_names: set[str]) -> dict[str, Any]:
    """config.json's figures from a GGUF's own metadata, by gguf-py's key names (``{arch}.block_count``
    → ``num_hidden_layers``, …), for any architecture: ``model_type`` is the one llama.cpp names, the
    vocabulary the token list's length, per-layer figures (head counts, feed-forward lengths) read
    per layer, a layer whose KV head count is 0 a recurrent one, and the sliding-window layout as
    llama.cpp builds it."""
    # deferred: 93 ms at import (gguf)
    import gguf

    arch = metadata.get(gguf.Keys.General.ARCHITECTURE)
    if not isinstance(arch, str):
        return {}
    keys, attn = gguf.Keys.LLM, gguf.Keys.Attention

    def get(key: str) -> Any:
        return metadata.get(key.format(arch=arch))

    def number(key: str) -> float | None:
        value = get(key)
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return value if ok else None

    layers = _count(get(keys.BLOCK_COUNT))
    heads, _ = _per_layer(get(attn.HEAD_COUNT), layers)
    kv_heads, kv_per_layer = _per_layer(get(attn.HEAD_COUNT_KV), layers)
    ffn, ffn_per_layer = _per_layer(get(keys.FEED_FORWARD_LENGTH), layers)
    tokens = metadata.get(gguf.Keys.Tokenizer.LIST)
    vocab = _count(get(keys.VOCAB_SIZE)) or (_count(tokens.get("count")) if isinstance(tokens, dict) else None)
    layer_types, window = _swa_layers(metadata, arch, layers, _count(get(attn.SLIDING_WINDOW)))
    if kv_per_layer and any(k == 0 for k in kv_per_layer):  # llama.cpp: a layer with no KV heads is recurrent
        base = layer_types or ["full_attention"] * len(kv_per_layer)
        layer_types = ["recurrent" if k == 0 else t for k, t in zip(kv_per_layer, base, strict=True)]
    config: dict[str, Any] = {
        GGUF_CONFIG: True, "model_type": arch, "architectures": [f"{arch} (GGUF)"],
        "hidden_size": _count(get(keys.EMBEDDING_LENGTH)), "num_hidden_layers": layers,
        "intermediate_size": ffn, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "max_position_embeddings": _count(get(keys.CONTEXT_LENGTH)), "vocab_size": vocab,
        "num_local_experts": _count(get(keys.EXPERT_COUNT)), "num_experts_per_tok": _count(get(keys.EXPERT_USED_COUNT)),
        "moe_intermediate_size": _count(get(keys.EXPERT_FEED_FORWARD_LENGTH)),
        "n_shared_experts": _count(get(keys.EXPERT_SHARED_COUNT)),
        "first_k_dense_replace": _count(get(keys.LEADING_DENSE_BLOCK_COUNT)),
        "head_dim": _count(get(attn.KEY_LENGTH)), "v_head_dim": _count(get(attn.VALUE_LENGTH)),
        "q_lora_rank": _count(get(attn.Q_LORA_RANK)), "kv_lora_rank": _count(get(attn.KV_LORA_RANK)),
        "sliding_window": window, "layer_types": layer_types,
        # a window the file gives that llama.cpp's loader does not apply: said beside the KV cache
        "sliding_window_unused": _count(get(attn.SLIDING_WINDOW)) if window is None else None,
        "rope_theta": number(gguf.Keys.Rope.FREQ_BASE),
        "tie_word_embeddings": "output.weight" not in tensor_names if tensor_names else None,
        "num_key_value_heads_per_layer": list(kv_per_layer) or None,
        "intermediate_size_per_layer": list(ffn_per_layer) or None,
    }
    if config["kv_lora_rank"] is not None:  # MLA (DeepSeek-V2/V3 as llama.cpp writes them)
        config["qk_rope_head_dim"] = _count(get(gguf.Keys.Rope.DIMENSION_COUNT))
        config["head_dim"] = config["v_head_dim"] = None
    return {k: v for k, v in config.items() if v is not None}


def with_gguf_names(checkpoint: Checkpoint, arch_name: str) -> Checkpoint:
    """``checkpoint`` (a safetensors or pickle one) with its tensors renamed as llama.cpp names them
    (gguf-py's ``TensorNameMap``: ``model.layers.0.self_attn.q_proj.weight`` → ``blk.0.attn_q.weight``),
    so a diff against a GGUF of the same model aligns tensor by tensor. Names the map does not know
    (buffers such as ``rotary_emb.inv_freq``) stay as they are."""
    # deferred: 93 ms at import (dataclasses, gguf)
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
    return replace(checkpoint, headers=tuple(headers)).with_notes(
        "tensor names mapped to llama.cpp's by gguf-py's TensorNameMap")
