"""``inspect MODEL``: one result object with everything the renderers show."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from operator import attrgetter, itemgetter

from inspector import repos
from inspector.analysis.facts.config import ModelConfig, load_config, transformers_installed
from inspector.analysis.facts.packing import PACKING_DTYPES, logical_elements, module_bits, quant_bits
from inspector.analysis.facts.peft import describe, is_frozen_copy
from inspector.analysis.facts.stats import Summary, Tensor, placed, stored_elements, summarize_tensors
from inspector.analysis.facts.tokenizer import TokenizerSummary, tokenizer_summary
from inspector.formats.registry import weight_suffixes
from inspector.model import ADAPTER_CONFIG, Checkpoint, FileEntry


@dataclass(frozen=True, slots=True)
class ComponentRow:
    """One component of a multi-component repo, counted from its tensors (named ``component.…``)."""

    name: str
    library: str | None
    class_name: str | None
    tensors: int
    parameters: int
    bytes: int
    dtypes: tuple[str, ...]  # by bytes, largest first
    model_type: str | None  # the component's config model_type or _class_name


@dataclass(frozen=True, slots=True)
class Report:
    checkpoint: Checkpoint
    config: ModelConfig
    summary: Summary
    tensors: list[Tensor]
    other_weights: tuple[FileEntry, ...]
    notes: tuple[str, ...]
    #: a multi-component repo's components (a diffusers pipeline's, a sentence-transformers model's
    #: modules), whose figures sum to the summary's
    components: tuple[ComponentRow, ...] = ()
    #: the tokenizer, chat template and generation defaults, from the small files (None: nothing said)
    tokenizer: TokenizerSummary | None = None


def logical(tensors: list[Tensor], quantization: object) -> list[Tensor]:
    """The tensors with each packed parameter counting the weights it holds (a GPTQ/AWQ ``qweight``
    of int32 words holds 32/bits each; ``packing.logical_elements``): "parameters" means logical
    weights everywhere, as a GGUF's elements do; what is stored stays the product of the shape."""
    if PACKING_DTYPES.isdisjoint(map(attrgetter("dtype"), map(itemgetter(0), tensors))):  # C loops: 1M in ~30 ms
        return tensors
    bits = quant_bits(quantization)
    out = []
    for t in tensors:
        info, place = t
        if place.kind == "parameter" and info.dtype in PACKING_DTYPES:
            stored = stored_elements(info)
            count = logical_elements(info.name, info.dtype, module_bits(quantization, info.name, bits), stored)
            if count != stored:
                t = Tensor(info._replace(numel=count), place)
        out.append(t)
    return out


def build_report(checkpoint: Checkpoint) -> Report:
    config = load_config(checkpoint.config)
    tensors = placed(checkpoint.tensors())
    summary = summarize_tensors(tensors, checkpoint)
    if not PACKING_DTYPES.isdisjoint(row.dtype for row in summary.by_dtype):  # the summary's dtypes: no pass of 1M
        tensors = logical(tensors, config.storage.quantization)
        summary = summarize_tensors(tensors, checkpoint)
    other = other_weight_files(checkpoint)
    return Report(checkpoint, config, summary, tensors, other, _notes(checkpoint, config, summary, tensors, other),
                  component_rows(checkpoint, tensors), tokenizer_summary(checkpoint, config))


def component_rows(checkpoint: Checkpoint, tensors: list[Tensor]) -> tuple[ComponentRow, ...]:
    """Each component's tensors, parameters, bytes and dtypes; a sentence-transformers model's
    transformer at its top level is the row named ``""`` → ``transformer`` (sentence-transformers 1.x
    kept it in a module folder, ``0_Transformer``, a row of its own)."""
    if not checkpoint.components:
        return ()

    names = {c.name for c in checkpoint.components if c.checkpoint is not None}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    dtypes: dict[str, Counter[str]] = defaultdict(Counter)
    for info, place in tensors:
        head = info.name.split(".", 1)[0]
        key = head if head in names else ""
        row = counts[key]
        row[0] += 1
        row[1] += info.numel if place.kind == "parameter" else 0
        row[2] += info.nbytes
        dtypes[key][info.dtype] += info.nbytes
    rows = []
    shown = repo.top if (repo := repos.kind_of(checkpoint)) is not None else None
    if shown is not None and "" in counts:  # the top level's own tensors (a sentence-transformers transformer)
        kind = (checkpoint.config or {}).get("model_type")
        t, p, b = counts[""]
        top = tuple(d for d, _ in dtypes[""].most_common())
        rows.append(ComponentRow(shown[0], shown[1], None, t, p, b, top, kind if isinstance(kind, str) else None))
    for c in checkpoint.components:
        t, p, b = counts.get(c.name, [0, 0, 0]) if c.checkpoint is not None else (0, 0, 0)
        config = c.checkpoint.config if c.checkpoint is not None else None
        kind = (config or {}).get("model_type") or (config or {}).get("_class_name")
        rows.append(ComponentRow(c.name, c.library, c.class_name, t, p, b,
                                 tuple(d for d, _ in dtypes[c.name].most_common()) if c.checkpoint else (),
                                 kind if isinstance(kind, str) else None))
    return tuple(rows)


def _notes(checkpoint: Checkpoint, config: ModelConfig, summary: Summary, tensors: list[Tensor],
           other: tuple[FileEntry, ...]) -> tuple[str, ...]:
    notes = list(checkpoint.provenance.notes)
    roles = {r.role for r in summary.by_role}
    repo = repos.kind_of(checkpoint)
    if "embedding" in roles and "lm_head" not in roles and not config.encoder_only and repo is None:
        if config.storage.tie_word_embeddings is False:
            notes.append("config says tie_word_embeddings=false, yet the checkpoint has no lm_head tensor "
                         "(transformers would initialise it randomly)")
        else:
            notes.append("no lm_head tensor: the output layer reuses the input embedding (tied)")
    for h in checkpoint.headers:
        if h.file.endswith(".gguf") and not h.tensors:
            tokenizer = h.metadata.get("tokenizer.ggml.model", "unknown")
            vocab = f"{config.vocab_size:,} tokens" if config.vocab_size else "no token list"
            notes.append(f"{h.file}: a vocab-only GGUF (no tensors): vocabulary {vocab}, tokenizer model {tokenizer}")
    # the safetensors files' own __metadata__ (a torch pickle's archive facts are not it: issue 41 saw
    # "safetensors metadata: format=pytorch zip" on a .bin)
    metadata = sorted({tuple(sorted(h.metadata.items())) for h in checkpoint.headers
                       if h.metadata and h.format == "safetensors"})
    if len(metadata) == 1:
        shown = ", ".join(f"{k}={v}" for k, v in metadata[0])
        files = sum(h.format == "safetensors" for h in checkpoint.headers)
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
        method = (config.storage.quantization or {}).get("quant_method", "quantised")
        notes.append(
            f"{method} checkpoint: parameters count stored elements (packed words count once); "
            f"{summary.quant_elements:,} elements of scales/zero points are overhead, not parameters"
        )
    if other:
        shown = ", ".join(f.path for f in other[:4]) + (" …" if len(other) > 4 else "")
        notes.append(f"also present, not counted: {shown}")
    adapter = checkpoint.side.json.get(ADAPTER_CONFIG)
    if isinstance(adapter, dict):
        base = adapter.get("base_model_name_or_path")
        notes.append(f"a PEFT adapter ({describe(adapter)})" + (f" for {base}" if isinstance(base, str) else "")
                     + ": `inspect diff BASE ADAPTER` sets it against its base")
        frozen = sum(t.info.numel for t in tensors if t.place.kind == "parameter" and is_frozen_copy(t.info.name))
        if frozen:
            notes.append(f"trainable {summary.parameters - frozen:,} of the {summary.parameters:,}: {frozen:,} are "
                         "frozen copies of base layers (…base_layer.weight, peft's save_embedding_layers)")
    for name, value in config.reading.unread:
        notes.append(f"config.json: {name} = {value} is not a count this tool reads; left unknown")
    if repo is not None and (said := repo.note(checkpoint.composite_class)) is not None:
        notes.append(said)
    if config.reading.source == "raw" and checkpoint.config:
        diffusers_class = checkpoint.config.get("_class_name")  # a diffusers model's config, not transformers'
        notes.append(f"config read from raw JSON: a diffusers {diffusers_class} config" if isinstance(
            diffusers_class, str) else "config read from raw JSON: transformers does not know this model type"
            if transformers_installed() else
            "config read from raw JSON: its model type is not in this tool's table and transformers is not "
            "installed (pip install 'hf-inspector[transformers]' lets AutoConfig describe it)")
    return tuple(notes)


def other_weight_files(checkpoint: Checkpoint) -> tuple[FileEntry, ...]:
    """Weight files present that are not the ones being counted (``original/*.pth``,
    ``pytorch_model*.bin`` beside safetensors, ``*.gguf``): reported as present, never counted."""
    counted = {h.file for h in checkpoint.headers}
    suffixes = weight_suffixes()
    return tuple(f for f in checkpoint.files if f.path not in counted and f.path.endswith(suffixes))
