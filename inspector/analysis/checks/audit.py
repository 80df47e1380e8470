"""Audit a checkpoint without loading its weights: is it whole and consistent?

Reads only what ``inspect`` reads (headers, index, config, file sizes) and never writes to the
audited folder. Each problem is a Finding with a stable code, a severity, the file and tensor it
concerns and one sentence. Local folders read file sizes from the disk; Hub repos from the sizes
the Hub lists, so a truncated shard is caught without a byte of its data.

Codes (stable; the README lists them):

=========================  ========  ==================================================================
header.<rule>              error     a header breaks a rule of the format (rule as in ``errors``)
file.zero-length           error     an empty .safetensors file
file.truncated             error     the file is shorter than its header says (bytes missing named)
file.trailing-bytes        warning   bytes after the last tensor's data
index.invalid              error     the index is not JSON or has no weight_map
index.missing-shard        error     the index names a shard the folder or repo lacks
index.tensor-not-in-shard  error     the index places a tensor in a shard whose header lacks it
index.tensor-not-indexed   error     a shard holds a tensor the index does not list
index.total-size           warning   metadata.total_size differs from the headers' data bytes
index.orphan-shard         warning   a .safetensors file the index does not name
index.rebuilt              warning   a snapshot's index was rebuilt from its headers: not checked
tensor.duplicate           error     a tensor in two shards
weights.bin-disagrees      warning   pytorch_model.bin.index.json lists other tensors than the safetensors
config.<field>             error     a tensor's shape contradicts config.json (field named)
config.tied                error/w.  tie_word_embeddings against the presence of lm_head
config.dtype               warning   torch_dtype is not the dtype of most parameters
tensor.buffer              info      a saved buffer, not a parameter
tensor.nan / .inf / .zero  error/w.  --deep: NaN, Inf or all-zero tensor data
model.missing-key          error     --modeling: the model class expects a key the checkpoint lacks
model.shape-mismatch       error     --modeling: a key's shape differs from the model's
model.unexpected-key       warning   --modeling: a key the model class does not have
model.undeclared-buffer    info      --modeling: a saved buffer the model recomputes (non-persistent)
model.ignored-key          info      --modeling: a key the model class ignores on load by design
model.not-checked          info      --modeling: converted by an operation not simulated here
lineage.declared-base      warning   --lineage: the declared base (card, adapter, GGUF) is unrelated to it
lineage.declared-unread    info      --lineage: the declared base could not be read or decided
=========================  ========  ==================================================================
"""

from __future__ import annotations

import mmap
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from inspector.analysis.facts.config import ModelConfig, load_config
from inspector.analysis.facts.stats import Tensor, placed
from inspector.errors import HeaderError, InvalidCheckpointError, NotRegularFile, PickleError
from inspector.formats.dtypes import SAFETENSORS_TO_TORCH
from inspector.model import BIN_INDEX, Checkpoint, FileEntry, Import, Phase, Progress, Severity, WeightFile, natural_key

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    message: str
    file: str | None = None
    tensor: str | None = None


@dataclass(frozen=True, slots=True)
class AuditInput:
    """What an audit reads: every file with its size, the header bytes of the safetensors files
    (or why they could not be read), the index and the config."""

    label: str
    location: str
    remote: bool
    files: tuple[FileEntry, ...]
    headers: dict[str, WeightFile]
    header_errors: dict[str, HeaderError]
    config: Mapping[str, object] | None
    index: Mapping[str, object] | None
    index_name: str | None
    index_error: str | None
    bin_index: Mapping[str, object] | None
    root: Path | None = None  # local folder, for --deep
    checkpoint: Checkpoint | None = None  # what was opened (its name, revision, source, formats)


@dataclass(frozen=True, slots=True)
class Checked:
    """What the audit went through: files, headers read or refused, tensors."""

    files: int = 0
    headers: int = 0
    tensors: int = 0


@dataclass(frozen=True, slots=True)
class AuditResult:
    input: AuditInput
    findings: tuple[Finding, ...]
    checked: Checked = field(default_factory=Checked)

    @property
    def imports(self) -> list[tuple[str, Import]]:
        """(file, global) for every global the files' pickles name, read or refused: the inventory."""
        inp = self.input
        rows = [(name, Import(*i)) for name, exc in sorted(inp.header_errors.items())
                if isinstance(exc, PickleError) for i in exc.imports]
        rows += [(name, i) for name, h in sorted(inp.headers.items()) for i in h.imports]
        return rows

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity == "warning" for f in self.findings)


# --- input: a lenient checkpoint from the one resolver ---------------------------------------------


def audit_input(checkpoint: Checkpoint) -> AuditInput:
    """What the checks read, from a checkpoint opened with the audit's sink (``resolve.open_checkpoint(...,
    lenient=True)``, ``errors.COLLECT``): header errors, a broken index and missing shards arrive as data."""
    bin_index = checkpoint.side.json.get(BIN_INDEX)
    return AuditInput(
        label=checkpoint.label, location=checkpoint.provenance.location, remote=checkpoint.provenance.origin == "hub",
        files=checkpoint.files or tuple(FileEntry(h.file, h.file_size) for h in checkpoint.headers),
        headers={h.file: h for h in checkpoint.headers},
        header_errors={e.file or "": e for e in checkpoint.problems.header_errors},
        config=checkpoint.config, index=checkpoint.index, index_name=checkpoint.side.index_name,
        index_error=checkpoint.problems.index_error,
        bin_index=bin_index if bin_index and isinstance(bin_index.get("weight_map"), dict) else None,
        root=Path(checkpoint.provenance.root) if checkpoint.provenance.root else None, checkpoint=checkpoint,
    )


# --- checks ------------------------------------------------------------------------------------


def audit(inp: AuditInput) -> AuditResult:
    findings: list[Finding] = []
    add = findings.append
    sizes = {f.path: f.size for f in inp.files}
    for name, exc in sorted(inp.header_errors.items()):
        if sizes.get(name) == 0 and not isinstance(exc, NotRegularFile):
            add(Finding("file.zero-length", "error", "the file is empty (0 bytes)", name))
        else:
            family = "pickle" if isinstance(exc, PickleError) else "header"
            code = exc.rule if "." in exc.rule else f"{family}.{exc.rule}"  # zip.duplicate-entry names its own
            add(Finding(code, "error", exc.message.removeprefix(f"{name}: "), name))
    for name, h in inp.headers.items():
        size, expected = sizes.get(name), h.expected_file_size
        if size is None or expected is None:  # a pickle's storages are checked against the file by its reader
            continue
        if expected > size:
            add(Finding("file.truncated", "error",
                        f"the header says {expected:,} bytes but the file has {size:,}: "
                        f"{expected - size:,} bytes missing", name))
        elif expected < size:
            add(Finding("file.trailing-bytes", "warning",
                        f"{size - expected:,} bytes after the last tensor's data", name))
    _index_checks(inp, add)
    tensors = placed(t for h in inp.headers.values() for t in h.tensors)
    config = load_config(inp.config) if inp.config else ModelConfig()
    if inp.config:
        _config_checks(config, tensors, add)
    for t in tensors:
        if t.place.kind == "buffer":
            add(Finding("tensor.buffer", "info",
                        f"saved buffer {_shape(t.info.shape)} {t.info.dtype}: state, not a parameter "
                        "(modeling code usually recomputes it and transformers drops it on load)",
                        t.info.file, t.info.name))
    checked = Checked(files=len(inp.files), headers=len(inp.headers) + len(inp.header_errors), tensors=len(tensors))
    return AuditResult(inp, sort_findings(findings), checked)


#: within a severity, what makes a checkpoint unusable first: a missing or broken file before a shape that
#: contradicts the config, before what a load would do (issue 41: a missing shard came after 40 config rows)
CODE_ORDER = ("file.", "index.", "header.", "zip.", "pickle.", "tensor.duplicate", "weights.", "config.", "model.",
              "tensor.")


def _code_rank(code: str) -> int:
    return next((i for i, prefix in enumerate(CODE_ORDER) if code.startswith(prefix)), len(CODE_ORDER))


def sort_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """By severity, then by how much the problem breaks (``CODE_ORDER``), then code, file and tensor."""
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return tuple(sorted(findings, key=lambda f: (order[f.severity], _code_rank(f.code), f.code,
                                                 natural_key(f.file or ""), natural_key(f.tensor or ""))))


@dataclass(frozen=True, slots=True)
class Repeat:
    """Findings that differ only in a layer (or expert) number of their tensor: one row for people.
    ``tensor`` names them all (``model.layers.{0–31}.self_attn.rotary_emb.inv_freq``); ``files`` the
    files they are in."""

    first: Finding
    count: int
    tensor: str | None
    files: tuple[str, ...]


_NUMBER = re.compile(r"(?<=\.)\d+(?=\.|$)")


def repeats(findings: Iterable[Finding]) -> tuple[Repeat, ...]:
    """Findings with the same severity, code and sentence whose tensor names differ in one number, as one
    Repeat each, in the order of their first finding; every other finding a Repeat of one."""
    groups: dict[tuple[str, str, str, str], list[Finding]] = {}
    for f in findings:
        pattern = _NUMBER.sub("#", f.tensor) if f.tensor else ""
        numbered = pattern != (f.tensor or "") and pattern.count("#") == 1
        key = (f.severity, f.code, f.message, pattern if numbered else f"{f.file}\0{f.tensor}")
        groups.setdefault(key, []).append(f)
    out = []
    for members in groups.values():
        first = members[0]
        files = tuple(dict.fromkeys(m.file for m in members if m.file))
        if len(members) == 1 or first.tensor is None:
            out.append(Repeat(first, len(members), first.tensor, files))
            continue
        numbers = sorted({int(_NUMBER.search(m.tensor or "").group()) for m in members})  # type: ignore[union-attr]
        span = (f"{numbers[0]}–{numbers[-1]}" if numbers[-1] - numbers[0] + 1 == len(numbers)
                else ",".join(map(str, numbers[:6])) + ("…" if len(numbers) > 6 else ""))
        out.append(Repeat(first, len(members), _NUMBER.sub("{" + span + "}", first.tensor, count=1), files))
    return tuple(out)


def _index_checks(inp: AuditInput, add: Callable[[Finding], None]) -> None:  # noqa: C901 (over the limit before it was set; to be split)
    sizes = {f.path: f.size for f in inp.files}
    if inp.index_error:
        add(Finding("index.invalid", "error", f"the index cannot be used: {inp.index_error}", inp.index_name))
    located: dict[str, list[str]] = defaultdict(list)
    for name, h in inp.headers.items():
        for t in h.tensors:
            located[t.name].append(name)
    for tensor, shards in sorted(located.items()):
        if len(shards) > 1:
            add(Finding("tensor.duplicate", "error", f"the tensor is in {len(shards)} shards: {', '.join(shards)}",
                        shards[0], tensor))
    if inp.index is None:
        return
    if inp.checkpoint is not None and inp.index_name in inp.checkpoint.side.rebuilt:
        add(Finding("index.rebuilt", "warning", "the index's weight_map was rebuilt from the shard headers (the Hub's "
                    "one-request answer leaves it out), so it was not checked: audit the repo itself, online",
                    inp.index_name))
        return
    weight_map = inp.index.get("weight_map")
    if not isinstance(weight_map, dict):
        return
    named = {v for v in weight_map.values() if isinstance(v, str)}
    for shard in sorted(named - set(sizes), key=natural_key):
        count = sum(1 for v in weight_map.values() if v == shard)
        add(Finding("index.missing-shard", "error",
                    f"the index places {count:,} tensors in this shard, which the "
                    f"{'repo' if inp.remote else 'folder'} lacks", shard))
    for indexed, shard in sorted(weight_map.items()):
        if isinstance(shard, str) and shard in inp.headers and shard not in located.get(indexed, []):
            where = located.get(indexed)
            add(Finding("index.tensor-not-in-shard", "error",
                        f"the index places it in {shard}, whose header lacks it"
                        + (f" (it is in {', '.join(where)})" if where else ""), shard, indexed))
    for tensor, shards in sorted(located.items()):
        if tensor not in weight_map:
            add(Finding("index.tensor-not-indexed", "error", "the shard holds it but the index does not list it",
                        shards[0], tensor))
    meta = inp.index.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    data = sum(h.data_length for h in inp.headers.values())
    if isinstance(total, int) and not inp.header_errors and named <= set(inp.headers) and total != data:
        add(Finding("index.total-size", "warning",
                    f"metadata.total_size is {total:,} but the headers hold {data:,} bytes of tensor data",
                    inp.index_name))
    for name in sorted(set(sizes) - named, key=natural_key):
        if name.endswith(".safetensors") and "/" not in name:
            add(Finding("index.orphan-shard", "warning", "a safetensors file the index does not name", name))
    if inp.bin_index and isinstance(bin_map := inp.bin_index.get("weight_map"), dict):
        a, b = set(weight_map), set(bin_map)
        if a != b:
            add(Finding("weights.bin-disagrees", "warning",
                        f"pytorch_model.bin.index.json lists {len(b - a):,} tensors the safetensors lack and lacks "
                        f"{len(a - b):,} they have", "pytorch_model.bin.index.json"))


def _config_checks(c: ModelConfig, tensors: list[Tensor], add: Callable[[Finding], None]) -> None:  # noqa: C901 (over the limit before it was set; to be split)
    def bad(field_: str, t: Tensor, says: str) -> None:
        add(Finding(f"config.{field_}", "error", f"config says {says} but {t.info.name.rsplit('.', 2)[-2]} is "
                                               f"{_shape(t.info.shape)}", t.info.file, t.info.name))

    params = [t for t in tensors if t.place.kind == "parameter" and t.info.name.endswith(".weight")
              and len(t.info.shape) == 2]
    hd = c.head_dim
    for t in params:
        rows, cols = t.info.shape
        role = t.place.role
        if role == "embedding" and t.place.layer is None:
            if c.vocab_size and rows != c.vocab_size:
                bad("vocab_size", t, f"vocab_size {c.vocab_size:,}")
            if c.hidden_size and cols != c.hidden_size:
                bad("hidden_size", t, f"hidden_size {c.hidden_size:,}")
        elif role == "lm_head" and t.place.layer is None and c.vocab_size and rows != c.vocab_size:
            bad("vocab_size", t, f"vocab_size {c.vocab_size:,}")
        elif role == "attn.q" and t.info.name.endswith("q_proj.weight") and c.num_heads and hd \
                and rows != c.num_heads * hd:
            bad("num_attention_heads", t, f"{c.num_heads} heads × head_dim {hd} = {c.num_heads * hd:,} rows")
        elif role in ("attn.k", "attn.v") and c.num_kv_heads and hd and rows != c.num_kv_heads * hd:
            bad("num_key_value_heads", t, f"{c.num_kv_heads} KV heads × head_dim {hd} = {c.num_kv_heads * hd:,} rows")
        elif role in ("mlp.gate", "mlp.up") and c.intermediate_size and rows != c.intermediate_size \
                and t.info.name.endswith(("gate_proj.weight", "up_proj.weight")) \
                and not (c.moe.first_k_dense is None and c.moe.num_experts):
            bad("intermediate_size", t, f"intermediate_size {c.intermediate_size:,}")
        elif role in ("moe.expert.gate", "moe.expert.up"):
            width = c.moe.moe_intermediate_size or c.intermediate_size
            if width and rows != width:
                bad("moe_intermediate_size" if c.moe.moe_intermediate_size else "intermediate_size", t,
                    f"{width:,} rows")
        # nn.Linear [out, in] layouts only: GPT-2's Conv1D stores [in, out]
        if c.hidden_size and role in ("attn.q", "attn.k", "attn.v", "mlp.gate", "mlp.up") and cols != c.hidden_size \
                and t.info.name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight",
                                          "up_proj.weight", ".w1.weight", ".w3.weight")) \
                and not t.info.name.endswith(("q_b_proj.weight", "kv_b_proj.weight")):
            bad("hidden_size", t, f"hidden_size {c.hidden_size:,} columns")
    layers = {t.place.layer for t in tensors if t.place.layer is not None and t.place.role not in ("vision", "audio",
                                                                                                   "projector")}
    expected = (c.num_layers or 0) + (c.layers.mtp_layers or 0)
    if c.num_layers and layers and len(layers) != expected:
        add(Finding("config.num_hidden_layers", "error",
                    f"config says {c.num_layers} layers"
                    + (f" + {c.layers.mtp_layers} MTP" if c.layers.mtp_layers else "")
                    + f" but the headers have {len(layers)} (indices {min(layers)}–{max(layers)})"))
    if c.moe.num_experts:
        per_layer: dict[int | None, set[int]] = defaultdict(set)
        for t in tensors:
            if t.place.expert is not None:
                per_layer[t.place.layer].add(t.place.expert)
        wrong = sorted((k for k, v in per_layer.items() if len(v) != c.moe.num_experts), key=lambda x: x or 0)
        if wrong:
            add(Finding("config.num_experts", "error",
                        f"config says {c.moe.num_experts} experts but layer {wrong[0]} has "
                        f"{len(per_layer[wrong[0]])}"))
    has_head = any(t.place.role == "lm_head" and t.place.layer is None for t in tensors)
    has_embed = any(t.place.role == "embedding" for t in tensors)
    if c.storage.tie_word_embeddings is False and not has_head and has_embed:
        add(Finding("config.tied", "error", "tie_word_embeddings is false but there is no lm_head tensor: "
                                            "the output layer would be randomly initialised on load"))
    elif c.storage.tie_word_embeddings is True and has_head:
        add(Finding("config.tied", "warning", "tie_word_embeddings is true but an lm_head tensor is saved: "
                                              "it will be replaced by the embedding on load"))
    if c.storage.dtype:
        counts: Counter[str] = Counter()
        for t in tensors:
            if t.place.kind == "parameter":
                counts[t.info.dtype] += t.info.numel
        if counts:
            main = counts.most_common(1)[0][0]
            if main != c.storage.dtype and not c.storage.quantization:
                add(Finding("config.dtype", "warning",
                            f"torch_dtype says {c.storage.dtype} but most parameters are {main}"))


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# --- --deep: the tensor data itself ----------------------------------------------------------------

CHUNK_BYTES = 64 * 1024 * 1024


def deep_scan(inp: AuditInput, progress: Progress | None = None) -> list[Finding]:
    """Stream every tensor's bytes through a memory map, a bounded chunk at a time, and flag NaN,
    Inf and all-zero tensors. Local files only; reads, never writes (the map is read-only)."""
    # deferred: 52 ms at import (mmap, numpy)
    import mmap

    import numpy as np

    if inp.root is None:
        raise InvalidCheckpointError("⟨deep⟩ reads tensor data, which a Hub repo or snapshot does not have locally",
                                     hint="download the checkpoint, or audit without ⟨deep⟩")
    findings: list[Finding] = []
    total = sum(t.nbytes for h in inp.headers.values() for t in h.tensors)
    done = 0
    for name, h in sorted(inp.headers.items()):
        path = inp.root / name
        size = path.stat().st_size
        if h.data_start is None or h.expected_file_size is None or size < h.expected_file_size or size == 0:
            continue  # truncated: already a finding; do not read past the end (pickles: not scanned)
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for t in h.tensors:
                kind = _scan_tensor(np, mm, h.data_start + t.begin, t.nbytes, t.dtype)
                if kind == "nan":
                    findings.append(Finding("tensor.nan", "error", f"{t.dtype} data holds NaN", name, t.name))
                elif kind == "inf":
                    findings.append(Finding("tensor.inf", "error", f"{t.dtype} data holds Inf", name, t.name))
                elif kind == "zero" and t.nbytes:
                    findings.append(Finding("tensor.zero", "warning", "every element is zero", name, t.name))
                done += t.nbytes
                if progress:
                    progress(Phase.DATA, done, total)
    return findings


def _scan_tensor(np: ModuleType, mm: mmap.mmap, start: int, length: int, dtype: str) -> str | None:
    """One tensor, a chunk at a time; pages already scanned are released at once (MADV_DONTNEED
    on a read-only map only drops clean page-cache pages), so memory stays bounded by the chunk."""
    nonzero = False
    page = mmap.PAGESIZE
    view = memoryview(mm)
    try:
        step = CHUNK_BYTES - CHUNK_BYTES % 8
        for offset in range(start, start + length, step):
            end = min(start + length, offset + step)
            kind, any_nonzero = _scan_chunk(np, view[offset:end], dtype)
            lo = offset - offset % page
            if hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED") and end > lo:
                mm.madvise(mmap.MADV_DONTNEED, lo, end - lo)
            if kind:
                return kind
            nonzero = nonzero or any_nonzero
    finally:
        view.release()
    return None if nonzero else "zero"


_FLOATS = {dt: SAFETENSORS_TO_TORCH[dt] for dt in ("F32", "F16", "F64")}  # numpy has these three


def _scan_chunk(np: ModuleType, chunk: memoryview, dtype: str) -> tuple[str | None, bool]:
    """(nan / inf / None, whether any element is non-zero) for one chunk of a tensor's bytes."""
    if dtype in _FLOATS:
        values = np.frombuffer(chunk, dtype=_FLOATS[dtype])
        if not np.isfinite(values).all():
            return ("nan" if np.isnan(values).any() else "inf"), True
        return None, bool(values.any())
    if dtype == "BF16":
        bits = np.frombuffer(chunk, dtype=np.uint16)
        special = (bits & 0x7F80) == 0x7F80
        if special.any():
            return ("nan" if (special & ((bits & 0x007F) != 0)).any() else "inf"), True
        return None, bool((bits & 0x7FFF).any())
    raw = np.frombuffer(chunk, dtype=np.uint8)
    if dtype == "F8_E4M3":  # e4m3fn: no Inf; NaN is S.1111.111
        if ((raw & 0x7F) == 0x7F).any():
            return "nan", True
        return None, bool((raw & 0x7F).any())
    if dtype == "F8_E5M2":
        special = (raw & 0x7C) == 0x7C
        if special.any():
            return ("nan" if (special & ((raw & 0x03) != 0)).any() else "inf"), True
        return None, bool((raw & 0x7F).any())
    return None, bool(raw.any())
