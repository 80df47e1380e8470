"""``inspect MODEL``: one result object with everything the renderers show."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter, itemgetter

from inspector.analysis.config import ModelConfig, load_config
from inspector.analysis.peft import describe
from inspector.analysis.roles import PACKING_DTYPES, module_bits, quant_bits, values_per_element
from inspector.analysis.stats import Summary, Tensor, placed, stored_elements, summarize_tensors
from inspector.formats.registry import weight_suffixes
from inspector.formats.safetensors import without_gc
from inspector.model import ADAPTER_CONFIG, Checkpoint, FileEntry


@dataclass(frozen=True, slots=True)
class Report:
    checkpoint: Checkpoint
    config: ModelConfig
    summary: Summary
    tensors: list[Tensor]
    other_weights: tuple[FileEntry, ...]
    notes: tuple[str, ...]


def logical(tensors: list[Tensor], quantization: object) -> list[Tensor]:
    """The tensors with each packed parameter counting the weights it holds (a GPTQ/AWQ ``qweight``
    of int32 words holds 32/bits each; ``roles.values_per_element``): "parameters" means logical
    weights everywhere, as a GGUF's elements do; what is stored stays the product of the shape."""
    if PACKING_DTYPES.isdisjoint(map(attrgetter("dtype"), map(itemgetter(0), tensors))):  # C loops: 1M in ~30 ms
        return tensors
    bits = quant_bits(quantization)
    out = []
    for t in tensors:
        info, place = t
        if place.kind == "parameter" and info.dtype in PACKING_DTYPES:
            per = values_per_element(info.name, info.dtype, module_bits(quantization, info.name, bits))
            if per != 1:
                t = Tensor(info._replace(numel=stored_elements(info) * per), place)
        out.append(t)
    return out


@without_gc()
def build_report(checkpoint: Checkpoint) -> Report:
    config = load_config(checkpoint.config)
    tensors = logical(placed(checkpoint.tensors()), config.quantization)
    summary = summarize_tensors(tensors, checkpoint)
    other = other_weight_files(checkpoint)
    return Report(checkpoint, config, summary, tensors, other, _notes(checkpoint, config, summary, tensors, other))


def _notes(checkpoint: Checkpoint, config: ModelConfig, summary: Summary, tensors: list[Tensor],
           other: tuple[FileEntry, ...]) -> tuple[str, ...]:
    notes = list(checkpoint.notes)
    roles = {r.role for r in summary.by_role}
    if "embedding" in roles and "lm_head" not in roles and not config.encoder_only:
        if config.tie_word_embeddings is False:
            notes.append("config says tie_word_embeddings=false, yet the checkpoint has no lm_head tensor "
                         "(transformers would initialise it randomly)")
        else:
            notes.append("no lm_head tensor: the output layer reuses the input embedding (tied)")
    for h in checkpoint.headers:
        if h.file.endswith(".gguf") and not h.tensors:
            tokenizer = h.metadata.get("tokenizer.ggml.model", "unknown")
            vocab = f"{config.vocab_size:,} tokens" if config.vocab_size else "no token list"
            notes.append(f"{h.file}: a vocab-only GGUF (no tensors): vocabulary {vocab}, tokenizer model {tokenizer}")
    metadata = sorted({tuple(sorted(h.metadata.items())) for h in checkpoint.headers
                       if h.metadata and not h.file.endswith(".gguf")})
    if len(metadata) == 1:
        shown = ", ".join(f"{k}={v}" for k, v in metadata[0])
        files = len(checkpoint.headers)
        notes.append(f"safetensors metadata: {shown}" + (f" (all {files} files)" if files > 1 else ""))
    elif metadata:
        notes.append(f"safetensors metadata differs between files ({len(metadata)} kinds; --json lists each)")
    if summary.buffer_elements:
        names = sorted({t.info.name.rsplit(".", 2)[-2] + "." + t.info.name.rsplit(".", 1)[-1]
                        if t.info.name.count(".") else t.info.name
                        for t in tensors if t.place.kind == "buffer"})
        notes.append(
            f"{summary.buffer_elements:,} buffer elements ({', '.join(names)}) are saved state, not "
            "parameters; the Hub's count includes them"
        )
    if summary.quant_elements:
        method = (config.quantization or {}).get("quant_method", "quantised")
        notes.append(
            f"{method} checkpoint: parameters count stored elements (packed words count once); "
            f"{summary.quant_elements:,} elements of scales/zero points are overhead, not parameters"
        )
    if other:
        shown = ", ".join(f.path for f in other[:4]) + (" …" if len(other) > 4 else "")
        notes.append(f"also present, not counted: {shown}")
    adapter = checkpoint.side_json.get(ADAPTER_CONFIG)
    if isinstance(adapter, dict):
        base = adapter.get("base_model_name_or_path")
        notes.append(f"a PEFT adapter ({describe(adapter)})" + (f" for {base}" if isinstance(base, str) else "")
                     + ": `inspect diff BASE ADAPTER` sets it against its base")
    for name, value in config.unread:
        notes.append(f"config.json: {name} = {value} is not a count this tool reads; left unknown")
    if config.source == "raw" and checkpoint.config:
        notes.append("config read from raw JSON: transformers does not know this model type")
    return tuple(notes)


def other_weight_files(checkpoint: Checkpoint) -> tuple[FileEntry, ...]:
    """Weight files present that are not the ones being counted (``original/*.pth``,
    ``pytorch_model*.bin`` beside safetensors, ``*.gguf``): reported as present, never counted."""
    counted = {h.file for h in checkpoint.headers}
    suffixes = weight_suffixes()
    return tuple(f for f in checkpoint.files if f.path not in counted and f.path.endswith(suffixes))
