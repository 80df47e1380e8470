"""config.json → the handful of architecture figures the inspector reasons with.

transformers owns config semantics (attribute aliases such as GPT-2's ``n_embd``, per-family
defaults such as Gemma's tied embeddings, layer types a config class derives, sub-configs of
multimodal models). The families people use today are described here from their configs' own
fields with the defaults and rules of transformers' config classes (``TABLE``, held to
``AutoConfig`` by tests/test_config_table.py), so reading them imports no transformers. Only a
model type outside the table goes through ``AutoConfig``: there its semantics are the only source.
It is imported lazily (about a second, and it reads every model's source file) and never with
``trust_remote_code``. A config transformers does not know still inspects, from the raw JSON.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Final, Literal, Protocol

from inspector.analysis.facts.families import ENCODER_ONLY_HEADS, ENCODER_ONLY_TYPES
from inspector.formats.dtypes import TORCH_TO_SAFETENSORS
from inspector.formats.gguf import GGUF_CONFIG

_ALIASES: dict[str, tuple[str, ...]] = {
    # our name: raw config keys, in order of preference (used when transformers cannot help)
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim", "model_dim"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", "hidden_dim"),
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "num_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "num_kv_heads": ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num"),
    "vocab_size": ("vocab_size", "n_vocab", "padded_vocab_size"),
    "max_position": ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "seq_length"),
    "head_dim": ("head_dim", "kv_channels", "d_kv"),  # d_kv: T5's per-head width (not d_model / heads)
    "num_experts": ("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token"),
    "moe_intermediate_size": ("moe_intermediate_size", "expert_intermediate_size"),
    "shared_experts": ("n_shared_experts", "num_shared_experts"),
    "first_k_dense": ("first_k_dense_replace",),
    "sliding_window": ("sliding_window",),
    "q_lora_rank": ("q_lora_rank",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    "mtp_layers": ("num_nextn_predict_layers",),
}


@dataclass(frozen=True, slots=True)
class MoeFigures:
    """A mixture of experts' figures (None where the config says nothing: a dense model)."""

    num_experts: int | None = None
    experts_per_token: int | None = None
    moe_intermediate_size: int | None = None
    shared_experts: int | None = None
    first_k_dense: int | None = None  # the first layers dense (DeepSeek's first_k_dense_replace)


@dataclass(frozen=True, slots=True)
class MlaFigures:
    """Multi-head latent attention's figures (DeepSeek-V2/V3): the query's and the cache's low ranks and the
    heads' split into positional (rope) and content (nope) parts; None where the model has none."""

    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None


@dataclass(frozen=True, slots=True)
class LayerFigures:
    """What differs layer by layer: the window of windowed layers, each layer's kind (``layer_types``), KV
    heads where they differ (a GGUF's per-layer ``head_count_kv``) and multi-token-prediction layers."""

    sliding_window: int | None = None
    layer_types: tuple[str, ...] = ()
    kv_heads_per_layer: tuple[int, ...] = ()
    mtp_layers: int | None = None


@dataclass(frozen=True, slots=True)
class StorageFigures:
    """How the config says the weights are kept: their dtype, whether the output layer is the input embedding
    (tied) and the quantisation block, as given."""

    dtype: str | None = None  # safetensors name, e.g. BF16
    tie_word_embeddings: bool | None = None
    quantization: Mapping[str, object] | None = None


#: how a config was read: "table" (our own, checked against transformers), "transformers", "gguf" (the
#: file's own metadata), "raw" (the config's keys as given) or "none" (no config)
Source = Literal["table", "transformers", "gguf", "raw", "none"]


@dataclass(frozen=True, slots=True)
class ConfigReading:
    """How the config was read, and what of it was not."""

    source: Source = "none"
    #: figures the config gives that are not counts in range (name, the value as given): left unknown
    unread: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Architecture figures of a checkpoint's text model. ``None`` where the config says nothing."""

    model_type: str | None = None
    architectures: tuple[str, ...] = ()
    hidden_size: int | None = None
    intermediate_size: int | None = None
    num_layers: int | None = None
    num_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    max_position: int | None = None
    moe: MoeFigures = field(default_factory=MoeFigures)
    mla: MlaFigures = field(default_factory=MlaFigures)
    layers: LayerFigures = field(default_factory=LayerFigures)
    storage: StorageFigures = field(default_factory=StorageFigures)
    reading: ConfigReading = field(default_factory=ConfigReading)
    raw: Mapping[str, object] = field(default_factory=dict)

    @property
    def encoder_only(self) -> bool:
        """An encoder (BERT and kin): bidirectional attention, no output layer over the vocabulary
        for generation, no autoregressive decoding and so no KV cache."""
        if self.model_type in ENCODER_ONLY_TYPES:
            return True
        return bool(self.architectures) and all(a.endswith(ENCODER_ONLY_HEADS) for a in self.architectures)


def load_config(raw: Mapping[str, object] | None, *, cache: bool = True) -> ModelConfig:
    """Normalise a parsed config.json. Never raises on content: unknown configs fall back to raw.

    Importing transformers costs about a second, so what it makes of a config is kept in the
    figure store (``use_figure_store``; the CLI's is ``$HF_HOME/inspector/configs``), keyed by the
    config's content and the transformers version: the same config is not normalised twice.
    """
    if not raw:
        return ModelConfig()
    if raw.get(GGUF_CONFIG) is True:  # a GGUF's own metadata: its figures as they are, nothing filled in
        own: dict[str, object] = {name: _first(raw, keys) for name, keys in _ALIASES.items()}
        own["tie_word_embeddings"] = raw.get("tie_word_embeddings")
        own["layer_types"] = raw.get("layer_types")
        return _build(raw, own, "gguf")
    direct = _from_table(raw)
    if direct is not None:  # no transformers import: the common case costs nothing
        return _build(raw, direct, "table")
    key = figure_key(raw) if cache else None
    cached = _cache_read(key) if key else None
    if cached is not None:
        figures = cached["figures"]
        if isinstance(figures, Mapping):  # _cache_read keeps only transformers' readings
            return _build(raw, figures, "transformers")
    figures = None if _layers_implausible(raw) else _from_transformers(raw)
    source: Source = "transformers"
    if figures is None:
        text = raw.get("text_config")
        flat = {**raw, **text} if isinstance(text, Mapping) else dict(raw)
        figures = {name: _first(flat, keys) for name, keys in _ALIASES.items()}
        figures["tie_word_embeddings"] = flat.get("tie_word_embeddings")
        figures["layer_types"] = flat.get("layer_types")
        figures["dtype"] = flat.get("torch_dtype") or flat.get("dtype")
        source = "raw"
    if key and source == "transformers":  # a reading without transformers is never kept: it may be
        _cache_write(key, {"figures": figures, "source": source})  # an import that failed, not an answer
    return _build(raw, figures, source)


class FigureStore(Protocol):
    """Where what transformers made of a config is kept between runs (``sources.config_cache`` keeps
    it on disk; analysis itself does no I/O). Keyed by ``figure_key``."""

    def get(self, key: str) -> Mapping[str, object] | None: ...

    def put(self, key: str, value: Mapping[str, object]) -> None: ...


class _Memory:
    """The default store: this process only."""

    def __init__(self) -> None:
        self.entries: dict[str, Mapping[str, object]] = {}

    def get(self, key: str) -> Mapping[str, object] | None:
        return self.entries.get(key)

    def put(self, key: str, value: Mapping[str, object]) -> None:
        if len(self.entries) < 1000:
            self.entries[key] = value


_store: FigureStore = _Memory()


def use_figure_store(store: FigureStore) -> None:
    """Keep transformers' readings of configs in ``store`` (the CLI and the library API install the
    on-disk one at start)."""
    global _store
    _store = store


#: bumped when what is stored changes shape
_CACHE_FORMAT = 2


def figure_key(raw: Mapping[str, object]) -> str | None:
    """The store's key: the config's content, the transformers version and the entry format."""
    try:
        # deferred: 22 ms at import (importlib.metadata)
        from importlib.metadata import version

        tf = version("transformers")
        blob = json.dumps(raw, sort_keys=True, default=str).encode()
    except Exception:
        return None
    return hashlib.sha256(blob + f"|{tf}|{_CACHE_FORMAT}".encode()).hexdigest()


def _cache_read(key: str) -> dict[str, object] | None:
    value = _store.get(key)
    ok = isinstance(value, Mapping) and isinstance(value.get("figures"), dict) and value.get("source") == "transformers"
    return dict(value) if ok and value is not None else None


def _cache_write(key: str, value: dict[str, object]) -> None:
    _store.put(key, value)


def _build(raw: Mapping[str, object], figures: Mapping[str, object], source: Source) -> ModelConfig:
    hidden, heads = _int(figures.get("hidden_size")), _int(figures.get("num_heads"))
    head_dim = _int(figures.get("head_dim"))
    if head_dim is None and hidden and heads and figures.get("kv_lora_rank") is None:
        head_dim = hidden // heads  # not for MLA, whose heads have separate nope/rope/v dims
    kv_heads = _int(figures.get("num_kv_heads"))
    if kv_heads is None and raw.get("multi_query") is True:
        kv_heads = 1  # Falcon-7B, StarCoder
    if kv_heads is None and source != "raw":
        kv_heads = heads  # the documented default of transformers' config classes and of llama.cpp
        # (a config only read raw says nothing of its KV heads: they stay unknown, not guessed)
    dtype = figures.get("dtype")
    quant = raw.get("quantization_config")
    if isinstance(mlx := raw.get("quantization"), Mapping) and "bits" in mlx:
        # mlx-lm's block: {"group_size": 64, "bits": 4, "<module>": {"bits": 8}}, which its loader reads before
        # quantization_config (mlx-lm writes the same block under both names since 0.2x)
        _check_mlx_bits(mlx)
        if not isinstance(quant, Mapping):
            quant = mlx
    layer_types = figures.get("layer_types")
    architectures = raw.get("architectures")
    if architectures is None and isinstance(raw.get("_class_name"), str):
        architectures = [raw["_class_name"]]  # a diffusers config names its class so (UNet2DConditionModel)
    unread = tuple((name, repr(value)[:40]) for name in _ALIASES
                   if (value := figures.get(name)) is not None
                   and _int(value, MAX_LAYERS if name == "num_layers" else MAX_FIGURE) is None)
    return ModelConfig(
        model_type=model_type if isinstance(model_type := raw.get("model_type"), str) else None,
        architectures=tuple(a for a in architectures if isinstance(a, str)) if isinstance(architectures, list) else (),
        hidden_size=hidden,
        intermediate_size=_int(figures.get("intermediate_size")),
        num_layers=_int(figures.get("num_layers"), MAX_LAYERS),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=_int(figures.get("vocab_size")),
        max_position=_int(figures.get("max_position")),
        moe=MoeFigures(**{f.name: _int(figures.get(f.name)) for f in fields(MoeFigures)}),
        mla=MlaFigures(**{f.name: _int(figures.get(f.name)) for f in fields(MlaFigures)}),
        layers=LayerFigures(
            sliding_window=_int(figures.get("sliding_window")),
            layer_types=tuple(str(t) for t in layer_types) if isinstance(layer_types, list | tuple) else (),
            kv_heads_per_layer=tuple(v for v in per_layer if _int(v) is not None)
            if isinstance(per_layer := raw.get("num_key_value_heads_per_layer"), list) else (),
            mtp_layers=_int(figures.get("mtp_layers"))),
        storage=StorageFigures(
            dtype=TORCH_TO_SAFETENSORS.get(str(dtype).removeprefix("torch.")) if dtype else None,
            tie_word_embeddings=tie if isinstance(tie := figures.get("tie_word_embeddings"), bool) else None,
            quantization=quant if isinstance(quant, Mapping) else None),
        reading=ConfigReading(source=source, unread=unread),
        raw=raw,
    )


class _Heads:
    """A default of "as many as the attention heads" (``num_key_value_heads`` left out)."""


HEADS: Final = _Heads()
_Rule = Callable[[Mapping[str, object], int], "list[str] | None"]


def _window_layers(flat: Mapping[str, object], layers: int) -> list[str] | None:
    """Qwen2Config/Qwen3Config: sliding from ``max_window_layers`` on, where a window is switched on."""
    start = _int(flat.get("max_window_layers")) or 0
    on = flat.get("sliding_window") is not None
    return ["sliding_attention" if on and i >= start else "full_attention" for i in range(layers)]


def _odd_window_layers(flat: Mapping[str, object], layers: int) -> list[str] | None:
    """Qwen2MoeConfig: every other layer below ``max_window_layers`` slides, where a window is on."""
    below = _int(flat.get("max_window_layers"))
    on = bool(flat.get("use_sliding_window")) and below is not None
    return ["sliding_attention" if on and (i + 1) % 2 and i < below else "full_attention"  # type: ignore[operator]
            for i in range(layers)]


def _every(key: str, default: int, kind: str) -> _Rule:
    """One layer in ``flat[key]`` (``default`` when left out) is full attention, the others ``kind``
    (Gemma 2/3, gpt-oss: sliding; Qwen3-Next: linear, its ``full_attention_interval``)."""
    def rule(flat: Mapping[str, object], layers: int) -> list[str] | None:
        every = _int(flat.get(key, default))
        return None if not every else [kind if (i + 1) % every else "full_attention" for i in range(layers)]
    return rule


@dataclass(frozen=True)
class Defaults:
    """What transformers' config class of one model type fills in for a key config.json leaves out
    (transformers 5.x ``<Type>Config`` fields and ``__post_init__``)."""

    #: raw key → its default (``HEADS``: num_attention_heads)
    keys: Mapping[str, object]
    #: the layer types when the config lists none (``__post_init__``'s rule)
    layer_types: _Rule | None = None
    #: ``use_sliding_window`` is read, and ``sliding_window`` becomes this while it is off
    window_off: object = None
    switched_window: bool = False
    #: raw keys whose presence this table does not model (transformers then reads the config)
    unmodelled: tuple[str, ...] = ()


_ALTERNATE = _every("sliding_window_pattern", 2, "sliding_attention")  # no key: Gemma 2 and gpt-oss alternate

#: Model types whose figures come from config.json directly, with the defaults transformers' config
#: class applies to a key the file leaves out. Every other type goes through transformers' AutoConfig.
#: tests/test_config_table.py checks each type against AutoConfig, on real configs and on minimal
#: ones that leave every defaulted key out.
TABLE: Final[dict[str, Defaults]] = {
    "llama": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 2048, "num_key_value_heads": HEADS}),
    "mistral": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 131072, "num_key_value_heads": 8,
                         "sliding_window": 4096}),
    "mixtral": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 131072, "num_key_value_heads": 8,
                         "num_local_experts": 8, "num_experts_per_tok": 2}),
    "qwen2": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 32768, "num_key_value_heads": 32},
                      _window_layers, switched_window=True),
    "qwen3": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 32768, "num_key_value_heads": 32,
                       "head_dim": 128}, _window_layers, switched_window=True),
    "qwen2_moe": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 32768, "num_key_value_heads": 16,
                           "sliding_window": 4096, "max_window_layers": 28, "num_experts": 60,
                           "num_experts_per_tok": 4, "moe_intermediate_size": 1408},
                          _odd_window_layers, window_off=0, switched_window=True),
    "qwen3_moe": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 32768, "num_key_value_heads": 4,
                           "sliding_window": 4096, "num_experts": 128, "num_experts_per_tok": 8,
                           "moe_intermediate_size": 768}, switched_window=True),
    "qwen3_next": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 32768, "num_key_value_heads": 2,
                            "head_dim": 256, "num_experts": 512, "num_experts_per_tok": 10,
                            "moe_intermediate_size": 512},
                           _every("full_attention_interval", 4, "linear_attention")),
    "gemma": Defaults({"tie_word_embeddings": True, "max_position_embeddings": 8192, "num_key_value_heads": 16,
                       "head_dim": 256}),
    "gemma2": Defaults({"tie_word_embeddings": True, "max_position_embeddings": 8192, "num_key_value_heads": 4,
                        "head_dim": 256, "sliding_window": 4096}, _ALTERNATE, unmodelled=("sliding_window_pattern",)),
    "gemma3_text": Defaults({"tie_word_embeddings": True, "max_position_embeddings": 131072,
                             "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096},
                            _every("sliding_window_pattern", 6, "sliding_attention"),
                            unmodelled=("use_bidirectional_attention",)),  # it halves the window
    "gpt_oss": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 131072, "num_key_value_heads": 8,
                         "head_dim": 64, "num_local_experts": 128, "num_experts_per_tok": 4, "sliding_window": 128},
                        _ALTERNATE, unmodelled=("sliding_window_pattern",)),
    "olmo2": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 2048, "num_key_value_heads": HEADS}),
    "phi": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 2048, "num_key_value_heads": HEADS}),
    "phi3": Defaults({"tie_word_embeddings": False, "max_position_embeddings": 4096, "num_key_value_heads": HEADS}),
    "gpt2": Defaults({"tie_word_embeddings": True, "n_positions": 1024}),
    "bert": Defaults({"tie_word_embeddings": True, "max_position_embeddings": 512}),
    "deepseek_v3": Defaults({
        "tie_word_embeddings": False, "max_position_embeddings": 4096, "num_key_value_heads": 128,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
        "v_head_dim": 128, "num_nextn_predict_layers": 1, "first_k_dense_replace": 3}),
}


def _from_table(raw: Mapping[str, object]) -> dict[str, object] | None:
    """The figures of a config whose model type the table knows, without transformers."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in TABLE or "text_config" in raw:
        return None
    defaults = TABLE[model_type]
    if any(key in raw for key in defaults.unmodelled):
        return None
    flat = dict(raw)
    heads = _first(flat, _ALIASES["num_heads"])
    for key, value in defaults.keys.items():
        if key not in flat:  # an explicit null stays null, as in transformers
            flat[key] = heads if value is HEADS else value
    if defaults.switched_window and not flat.get("use_sliding_window"):
        flat["sliding_window"] = defaults.window_off  # dropped unless switched on
    figures = {name: _first(flat, keys) for name, keys in _ALIASES.items()}
    figures["tie_word_embeddings"] = flat.get("tie_word_embeddings")
    layers = _int(figures.get("num_layers"), MAX_LAYERS)
    layer_types = flat.get("layer_types")
    if layer_types is None and defaults.layer_types is not None and layers is not None:
        layer_types = defaults.layer_types(flat, layers)
    figures["layer_types"] = layer_types
    figures["dtype"] = flat.get("torch_dtype") or flat.get("dtype")
    if "head_dim" not in raw and figures.get("kv_lora_rank"):
        figures["head_dim"] = None  # MLA: heads have separate nope/rope/v dims
    return figures


def transformers_installed() -> bool:
    """Whether the optional transformers is there (``pip install 'hf-inspector[transformers]'``), without
    importing it."""
    return importlib.util.find_spec("transformers") is not None


def _from_transformers(raw: Mapping[str, object]) -> dict[str, object] | None:
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or not transformers_installed():
        return None
    try:
        with quiet_transformers():
            # deferred: 2021 ms at import (transformers)
            from transformers import AutoConfig

            kwargs = {k: v for k, v in raw.items() if k != "model_type"}
            config = AutoConfig.for_model(model_type, **kwargs)
            text = config.get_text_config() if hasattr(config, "get_text_config") else config
    except Exception:  # unknown model_type, or a config transformers rejects: use the raw JSON
        return None
    figures: dict[str, object] = {}
    for name, keys in _ALIASES.items():
        figures[name] = _first_attr(text, keys)
    # transformers fills head_dim for every Llama-like config; MLA models report the rope dim there
    text_raw = raw.get("text_config")
    if "head_dim" not in raw and not (isinstance(text_raw, Mapping) and "head_dim" in text_raw):
        figures["head_dim"] = None if figures.get("kv_lora_rank") else figures.get("head_dim")
    tie = getattr(text, "tie_word_embeddings", None)
    if tie is None:
        tie = getattr(config, "tie_word_embeddings", None)
    figures["tie_word_embeddings"] = tie
    figures["layer_types"] = getattr(text, "layer_types", None)
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) \
        or raw.get("torch_dtype") or raw.get("dtype")
    figures["dtype"] = dtype if isinstance(dtype, str) else (str(dtype) if dtype is not None else None)
    return figures


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Keep transformers' 'PyTorch was not found' advice and config warnings off the terminal."""
    saved = os.environ.get("TRANSFORMERS_NO_ADVISORY_WARNINGS")
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if saved is None:
            os.environ.pop("TRANSFORMERS_NO_ADVISORY_WARNINGS", None)
        else:
            os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = saved


def _first(raw: Mapping[str, object], keys: tuple[str, ...]) -> object:
    return next((raw[k] for k in keys if raw.get(k) is not None), None)


def _first_attr(obj: object, keys: tuple[str, ...]) -> object:
    for key in keys:
        try:
            value = getattr(obj, key, None)
        except Exception:
            value = None
        if value is not None:
            return value
    return None


#: the largest figure read from a config (a hidden size, a vocabulary, a context); a layer count
#: is held tighter, as per-layer lists are built from it. Beyond them a figure is unknown (None):
#: a config of num_hidden_layers 10³⁰ must not become a list of 10³⁰ layer kinds.
MAX_FIGURE: Final = 1 << 40
MAX_LAYERS: Final = 100_000


def _check_mlx_bits(block: Mapping[str, object]) -> None:
    """mlx-lm's quantisation block, and each per-module override in it, names bits mlx can pack
    (``mx.quantize``: 2, 3, 4, 5, 6, 8); any other value (0, −1, a string) is refused by name, as mlx-lm's
    load refuses it, not read as a quantised checkpoint with made-up packing (or, in an override, silently
    replaced by the default)."""
    # deferred: 4 ms at import (inspector.analysis.facts.roles, inspector.errors)
    from inspector.analysis.facts.packing import MLX_BITS
    from inspector.errors import InvalidCheckpointError

    overrides = [(f"{k[:60]}.bits", v["bits"]) for k, v in block.items() if
                  isinstance(v, Mapping) and "bits" in v]
    for where, bits in [("bits", block.get("bits")), *overrides]:
        if type(bits) is not int or bits not in MLX_BITS:
            raise InvalidCheckpointError(
                f"config.json: quantization.{where} {str(bits)[:24]!r} is not one mlx packs "
                f"({', '.join(map(str, MLX_BITS))})", hint="the config is damaged or not mlx-lm's; fix its "
                "quantization block")


def config_int(value: object, default: int, limit: int = MAX_FIGURE) -> int:
    """A count from a config.json value: ``default`` when it is missing or not a count in range."""
    got = _int(value, limit)
    return default if got is None else got


def _int(value: object, limit: int = MAX_FIGURE) -> int | None:
    return value if type(value) is int and 0 <= value <= limit else None


def _layers_implausible(raw: Mapping[str, object]) -> bool:
    """A layer count (under any of its names, also in text_config) that is an int beyond MAX_LAYERS:
    transformers' config classes build per-layer lists from it, so such a config is read raw."""
    text = raw.get("text_config")
    return any(type(v) is int and v > MAX_LAYERS
               for where in (raw, text if isinstance(text, Mapping) else {})
               for v in (where.get(k) for k in _ALIASES["num_layers"]))
