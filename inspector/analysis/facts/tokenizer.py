"""The tokenizer, chat template and generation defaults, from the small files beside the weights.

Never the weights, and never code: ``tokenizer_config.json``, ``special_tokens_map.json``,
``tokenizer.json`` (when small enough to have been read), ``chat_template.jinja`` /
``chat_template.json`` and ``generation_config.json``; for a GGUF, its ``tokenizer.*`` metadata.
A chat template is reported present and where it was found; it is never rendered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from inspector.analysis.facts.config import ModelConfig
from inspector.errors import InvalidCheckpointError
from inspector.model import Checkpoint
from inspector.safeio import parse_document

SPECIAL_KEYS: Final = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
GENERATION_KEYS: Final = ("do_sample", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                          "max_new_tokens", "max_length", "bos_token_id", "eos_token_id", "pad_token_id")
#: where a chat template may live, in the order transformers 4.43+ looks (a separate file wins)
TEMPLATE_SOURCES: Final = ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")


@dataclass(frozen=True, slots=True)
class TokenizerSummary:
    tokenizer_class: str | None
    vocab_size: int | None  # tokens the tokenizer can produce (ids 0 … n−1), where known
    vocab_source: str  # where vocab_size came from, or why it is unknown
    special: tuple[tuple[str, str], ...]  # (bos_token, "<s>") …
    added_tokens: int | None  # tokens added on top of the base vocabulary (tokenizer_config/tokenizer.json)
    added_special: int | None  # of which marked special
    chat_template: bool
    chat_template_source: str | None  # the file (or GGUF key) holding it
    chat_templates: tuple[str, ...]  # named templates (tool_use, rag …) beside the default
    model_max_length: int | None
    generation: tuple[tuple[str, object], ...]  # generation_config.json defaults
    embedding_rows: int | None  # the config's vocab_size (rows of the embedding matrix)
    notes: tuple[str, ...]


def _json(files: Mapping[str, bytes], name: str) -> dict[str, object] | None:
    raw = files.get(name)
    if raw is None:
        return None
    try:
        return parse_document(raw, name, name)
    except InvalidCheckpointError:
        return None  # a damaged (or over-budget) side file is not the model's fault: said as unknown


def _token_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    content = value.get("content") if isinstance(value, dict) else None
    return content if isinstance(content, str) else None  # an AddedToken written out


def tokenizer_summary(checkpoint: Checkpoint, config: ModelConfig) -> TokenizerSummary | None:
    """What the checkpoint says about its tokenizer; None when it carries nothing about one."""
    if checkpoint.side.raw:
        return _from_files(checkpoint.side.raw, config)
    gguf = next((h for h in checkpoint.headers if h.format == "gguf"), None)
    if gguf is not None and any(k.startswith("tokenizer.") for k in gguf.metadata):
        return _from_gguf(gguf.metadata, config)
    return None


def _from_files(files: Mapping[str, bytes], config: ModelConfig) -> TokenizerSummary:  # noqa: C901
    tc = _json(files, "tokenizer_config.json") or {}
    stm = _json(files, "special_tokens_map.json") or {}
    tj = _json(files, "tokenizer.json")
    gen = _json(files, "generation_config.json") or {}
    notes: list[str] = []
    special = []
    for key in SPECIAL_KEYS:
        text = _token_text(tc.get(key)) or _token_text(stm.get(key))
        if text is not None:
            special.append((key, text))
    added_decoder = tc.get("added_tokens_decoder")
    ids: list[int] = []
    added = added_special = None
    if isinstance(added_decoder, dict):
        entries = [(k, v) for k, v in added_decoder.items() if isinstance(v, dict) and str(k).isdigit()]
        ids = [int(k) for k, _ in entries]
        added, added_special = len(entries), sum(1 for _, v in entries if v.get("special") is True)
    vocab_size, source = None, "unknown: tokenizer.json not read (absent, or larger than this tool reads for it)"
    if tj is not None:
        model = tj.get("model")
        vocab = model.get("vocab") if isinstance(model, dict) else None
        base = [v for v in vocab.values() if isinstance(v, int)] if isinstance(vocab, dict) else []
        count = len(vocab) if isinstance(vocab, list) else None  # a Unigram vocabulary: [[piece, score], …]
        listed = tj.get("added_tokens")
        tokens = [t for t in listed if isinstance(t, dict)] if isinstance(listed, list) else []
        extra_ids = [i for t in tokens if isinstance(i := t.get("id"), int)]
        top = max([*base, *extra_ids], default=-1) + 1
        if count is not None:
            top = max(top, count)
        if top > 0:
            vocab_size, source = top, "tokenizer.json: the highest token id + 1 (vocabulary and added tokens)"
        if added is None:
            added = len(extra_ids)
            added_special = sum(1 for t in tokens if t.get("special") is True)
    elif ids:
        source = (f"unknown: tokenizer.json not read; tokenizer_config.json's added tokens reach id {max(ids):,}, "
                  "so at least " + f"{max(ids) + 1:,}")
    template_source = None
    named: list[str] = []
    for name in TEMPLATE_SOURCES:
        if name == "chat_template.jinja" and files.get(name, b"").strip():
            template_source = name
        elif name == "chat_template.json":
            doc = _json(files, name)
            if doc is not None and doc.get("chat_template"):
                template_source = name
        elif name == "tokenizer_config.json":
            value = tc.get("chat_template")
            if isinstance(value, list):  # [{"name": "default", "template": …}, {"name": "tool_use", …}]
                named = [n for v in value if isinstance(v, dict) and isinstance(n := v.get("name"), str)]
            if value:
                template_source = template_source or name
        if template_source:
            break
    rows = config.vocab_size
    if vocab_size is not None and rows is not None and vocab_size != rows:
        if vocab_size < rows:
            notes.append(f"the tokenizer has {vocab_size:,} tokens and the embedding {rows:,} rows: "
                         f"{rows - vocab_size:,} rows no token reaches (padding, often to a multiple of 64)")
        else:
            notes.append(f"the tokenizer has {vocab_size:,} tokens but the embedding only {rows:,} rows: ids "
                         f"{rows:,} and above have no embedding (resize the embeddings)")
    length = tc.get("model_max_length")
    generation = tuple((k, gen[k]) for k in GENERATION_KEYS
                       if k in gen and isinstance(gen[k], (int, float, bool, list)))
    cls = tc.get("tokenizer_class")
    return TokenizerSummary(
        tokenizer_class=cls if isinstance(cls, str) else None, vocab_size=vocab_size, vocab_source=source,
        special=tuple(special), added_tokens=added, added_special=added_special,
        chat_template=template_source is not None, chat_template_source=template_source,
        chat_templates=tuple(n for n in named if n != "default"),
        model_max_length=length if isinstance(length, int) and not isinstance(length, bool) and length < 10**12
        else None,  # transformers writes 1e30 for "no limit"
        generation=generation, embedding_rows=rows, notes=tuple(notes))


def _from_gguf(meta: Mapping[str, object], config: ModelConfig) -> TokenizerSummary:
    """A GGUF's own tokenizer: ``tokenizer.ggml.*`` (gguf-py's Keys.Tokenizer) and its chat template."""
    count = config.vocab_size if "tokenizer.ggml.tokens" in meta else None  # the config counts the list
    special = []
    for key, name in (("bos_token", "tokenizer.ggml.bos_token_id"), ("eos_token", "tokenizer.ggml.eos_token_id"),
                      ("unk_token", "tokenizer.ggml.unknown_token_id"),
                      ("pad_token", "tokenizer.ggml.padding_token_id")):
        value = meta.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            special.append((key, f"id {value}"))
    template = meta.get("tokenizer.chat_template")
    named = tuple(k.removeprefix("tokenizer.chat_template.") for k in meta
                  if k.startswith("tokenizer.chat_template."))
    model = meta.get("tokenizer.ggml.model")
    return TokenizerSummary(
        tokenizer_class=f"llama.cpp {model}" if isinstance(model, str) else None, vocab_size=count,
        vocab_source="tokenizer.ggml.tokens (the GGUF's token list)" if count is not None else
        "unknown: the GGUF has no token list", special=tuple(special), added_tokens=None, added_special=None,
        chat_template=bool(template), chat_template_source="tokenizer.chat_template (GGUF metadata)" if template
        else None, chat_templates=named, model_max_length=None, generation=(), embedding_rows=config.vocab_size,
        notes=())
