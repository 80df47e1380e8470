"""The model as stacks of typed layers: the one description of the architecture every estimate derives from.

``architecture(report)`` reads the headers first and the config second. The headers say which stacks
there are (a decoder, an encoder, a vision or audio tower, a projector, multi-token-prediction layers),
which layers each holds and what each layer mixes tokens with (self-attention, cross-attention, a
state-space scan, linear attention) and how wide its MLP is (dense, or experts); the config says what
the headers cannot: heads and head widths, sliding windows and chunks (``layer_types``, Mistral's and
Gemma 2's defaults), MLA's latent, experts per token. Where neither says, the kind is ``unknown`` and
every figure that needs it says so.

Each stack says when it runs: a decoder once **per generated token**; an encoder, a vision or audio
tower and a projector once **per input** (a prompt for the encoder, an image's patches, an audio's
frames); multi-token-prediction layers **never** in plain decoding. The KV cache, the FLOPs per
token and the prefill count only what runs per token; what runs per input is said apart.

Sources: transformers 5.x modeling code of each family for the tensor layout; vLLM's
``MambaStateShapeCalculator`` (model_executor/layers/mamba/mamba_utils.py) for the recurrent state a
sequence keeps: a causal convolution's last ``kernel - 1`` inputs per channel, and the scan's state
(Mamba: ``d_inner × d_state``; Mamba-2: ``heads × head_dim × d_state``; a gated delta net:
``value heads × key head dim × value head dim``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from inspector.analysis.facts.config import ModelConfig, config_int
from inspector.analysis.facts.roles import classify_all
from inspector.analysis.facts.stats import Tensor
from inspector.analysis.structure.mixers import MIXERS, MixerKind, recurrent_kind, windowed_kind
from inspector.model import Role

StackKind = Literal["decoder", "encoder", "vision", "audio", "projector", "mtp"]
Runs = Literal["per_token", "per_input", "never"]

#: when each kind of stack runs
RUNS: Final[Mapping[StackKind, Runs]] = {"decoder": "per_token", "encoder": "per_input", "vision": "per_input",
                                          "audio": "per_input", "projector": "per_input", "mtp": "never"}

_ATTENTION_ROLES: Final = frozenset({"attn.q", "attn.k", "attn.v", "attn.qkv", "attn.kv", "attn.o"})
_TOWERS: Final[Mapping[str, StackKind]] = {"vision": "vision", "audio": "audio"}
#: config keys of a Mamba-2 head's width and of the scan's state size (Falcon-H1, Mamba2, Bamba,
#: NemotronH, Zamba2, GraniteMoeHybrid; transformers 5.x config classes)
_SSM_HEAD_DIM: Final = ("mamba_d_head", "mamba_head_dim", "mamba_headdim")
_SSM_STATE: Final = ("mamba_d_state", "ssm_state_size", "state_size", "mamba_dstate")


@dataclass(frozen=True, slots=True)
class Attention:
    """An attention mixer's widths; None where the config does not say."""

    heads: int | None
    kv_heads: int | None
    key_dim: int | None  # per head, the q·k width (MLA: nope + rope)
    value_dim: int | None  # per head
    window: int | None = None  # a sliding window or a chunk, in tokens
    latent: int | None = None  # MLA: the latent and rope key a token keeps, per layer

    @property
    def cache_width(self) -> int | None:
        """Elements of K and V (or of MLA's latent) a token keeps in this layer."""
        if self.latent is not None:
            return self.latent
        if self.kv_heads is None or self.key_dim is None or self.value_dim is None:
            return None
        return self.kv_heads * (self.key_dim + self.value_dim)


@dataclass(frozen=True, slots=True)
class Mixer:
    """How one layer mixes tokens."""

    kind: MixerKind
    attention: Attention | None = None
    #: a recurrent mixer's state per sequence, in elements (None: unknown, ``state_formula`` says why)
    state: int | None = None
    state_formula: str = ""


@dataclass(frozen=True, slots=True)
class Mlp:
    kind: Literal["dense", "moe", "none"]
    experts: int = 0
    top_k: int | None = None


@dataclass(frozen=True, slots=True)
class Layer:
    index: int
    mixers: tuple[Mixer, ...]
    mlp: Mlp
    parameters: int
    #: parameters one token runs through: routed experts it does not visit left out
    active: int

    @property
    def kind(self) -> str:
        """One word for the layer: its mixers (``full``, ``sliding 4096``, ``ssm``, ``full+cross``) and MoE."""
        words = []
        for m in self.mixers:
            a = m.attention
            words.append(f"{m.kind} {a.window}" if a is not None and a.window and MIXERS[m.kind].windowed
                         else m.kind)
        return "+".join(words) + (" moe" if self.mlp.kind == "moe" else "")


@dataclass(frozen=True, slots=True)
class Stack:
    kind: StackKind
    name: str  # the tensor names' prefix (``model.layers``, ``encoder.block``); a projector's role
    layers: tuple[Layer, ...]
    parameters: int  # its layers and the tensors of its own outside them (a tower's embeddings, final norms)
    active: int

    @property
    def runs(self) -> Runs:
        return RUNS[self.kind]


@dataclass(frozen=True, slots=True)
class Architecture:
    """The stacks, and the parameters outside them, which partition the model's parameters."""

    stacks: tuple[Stack, ...]
    embedding: int  # the input token embedding: a lookup
    lookups: int  # learned position and token-type embeddings: lookups too
    head: int  # the output layer's own parameters (0: tied to the embedding, or none)
    other: int  # in no stack: a decoder's final norm, a pooler, a task head
    tied: bool  # a decoder whose output layer multiplies by the input embedding
    kv_check: str  # the config's K/V widths against the headers' projections, said once
    #: experts per token and experts, where a layer is a mixture of experts
    top_k: int | None = None
    #: bytes as stored (every tensor: scales and buffers too), for splitting the weights between pipeline
    #: stages: each layer's by (stack, index); the input embedding's and the output layer's and final norms'
    #: outside the layers; and all of them
    layer_bytes: Mapping[tuple[str, int], int] = field(default_factory=dict)
    embedding_bytes: int = 0
    tail_bytes: int = 0
    total_bytes: int = 0

    @property
    def decodes(self) -> bool:
        """Whether anything runs per generated token (a decoder stack)."""
        return any(s.runs == "per_token" for s in self.stacks)

    def running(self, runs: Runs) -> tuple[Stack, ...]:
        return tuple(s for s in self.stacks if s.runs == runs)

    @property
    def per_token_layers(self) -> tuple[Layer, ...]:
        return tuple(layer for s in self.running("per_token") for layer in s.layers)

    @property
    def parameters(self) -> int:
        return sum(s.parameters for s in self.stacks) + self.embedding + self.lookups + self.head + self.other


def architecture(tensors: list[Tensor], config: ModelConfig) -> Architecture:
    """The stacks of a checkpoint's parameters (logical counts) and config."""
    params = [t for t in tensors if t.place.kind == "parameter"]
    by_layer: dict[str, dict[int, list[Tensor]]] = defaultdict(lambda: defaultdict(list))
    loose: list[Tensor] = []
    for t in params:
        stack, layer = t.place.stack, t.place.layer
        if stack is not None and layer is not None:
            by_layer[stack][layer].append(t)
        else:
            loose.append(t)
    roles = {t.place.role for t in params}
    generates = not config.encoder_only and (
        "lm_head" in roles or "embedding" in roles or config.reading.source == "gguf"
        or any(a.endswith(_GENERATING) for a in config.architectures))
    kinds = {name: _stack_kind(name, layers, config, generates, len(by_layer)) for name, layers in by_layer.items()}
    accounts = _Accounts.of(loose, kinds)
    stacks: list[Stack] = []
    for name in sorted(by_layer, key=lambda s: (s.count("."), s)):
        stacks += _stacks_of(name, kinds, by_layer[name], config, accounts.own.get(name, 0))
    if not by_layer and config.num_layers and generates:
        stacks.append(_stack("decoder", "config.json", _config_layers(config, range(config.num_layers)), 0))
    for kind, n in accounts.towers.items():  # a tower's tensors outside its layers join its first stack
        at = next((i for i, s in enumerate(stacks) if s.kind == kind), None)
        if at is None:
            stacks.append(Stack(kind, kind, (), n, n))
        else:
            s = stacks[at]
            stacks[at] = Stack(s.kind, s.name, s.layers, s.parameters + n, s.active + n)
    decodes = any(s.kind == "decoder" for s in stacks)
    layer_bytes, embedding_bytes, tail_bytes, total_bytes = _bytes(tensors)
    return Architecture(
        stacks=tuple(stacks), embedding=accounts.embedding, lookups=accounts.lookups, head=accounts.head,
        other=accounts.other, tied=decodes and accounts.head == 0 and accounts.embedding > 0,
        kv_check=_kv_check(params, config, stacks), top_k=config.moe.experts_per_token, layer_bytes=layer_bytes,
        embedding_bytes=embedding_bytes, tail_bytes=tail_bytes, total_bytes=total_bytes)


@dataclass(slots=True)
class _Accounts:
    """Parameters outside every layer, by where they count: the embedding and the lookups, the output
    layer, a tower or projector, a stack's own (an encoder's final norm), or none (a decoder's norm)."""

    embedding: int = 0
    lookups: int = 0
    head: int = 0
    other: int = 0
    towers: dict[StackKind, int] = field(default_factory=dict)
    own: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, loose: list[Tensor], kinds: Mapping[str, StackKind]) -> _Accounts:
        out = cls()
        homes = sorted(((name.rsplit(".", 1)[0] + "." if "." in name else "", name) for name in kinds),
                       key=lambda pair: -len(pair[0]))
        for t in loose:
            role, n = t.place.role, t.info.numel
            if role == "embedding":
                out.embedding += n
            elif role in ("position_embedding", "token_type_embedding"):
                out.lookups += n
            elif role == "lm_head":
                out.head += n
            elif role in _TOWERS or role == "projector":
                kind = _TOWERS.get(role, "projector")
                out.towers[kind] = out.towers.get(kind, 0) + n
            else:
                home = next((name for prefix, name in homes if prefix and t.info.name.startswith(prefix)), None)
                if home is not None and kinds[home] != "decoder":
                    out.own[home] = out.own.get(home, 0) + n
                else:
                    out.other += n
        return out


def _stacks_of(name: str, kinds: Mapping[str, StackKind], members: Mapping[int, list[Tensor]], config: ModelConfig,
               own: int) -> list[Stack]:
    """One layer stack of the headers: multi-token-prediction layers (past the config's layer count)
    apart, and a decoder's layers the headers lack but the config declares (a partial header) filled in
    as the config says."""
    kind = kinds[name]
    layers = [_layer(i, members[i], name, kind, config) for i in sorted(members)]
    mtp_from = config.num_layers if config.layers.mtp_layers else None
    if kind == "decoder" and mtp_from is not None and any(layer.index >= mtp_from for layer in layers):
        return [_stack("decoder", name, [layer for layer in layers if layer.index < mtp_from], 0),
                _stack("mtp", name, [layer for layer in layers if layer.index >= mtp_from], 0)]
    if kind == "decoder" and len(kinds) == 1 and config.num_layers and config.num_layers > len(layers):
        held = {layer.index for layer in layers}
        layers = sorted(layers + _config_layers(config, [i for i in range(config.num_layers) if i not in held]),
                        key=lambda layer: layer.index)
    return [_stack(kind, name, layers, own)]


def _bytes(tensors: list[Tensor]) -> tuple[dict[tuple[str, int], int], int, int, int]:
    """Bytes as stored: each layer's, the embedding's and the output layer's and norms' outside the
    layers, and all of them."""
    layer_bytes: dict[tuple[str, int], int] = defaultdict(int)
    embedding_bytes = tail_bytes = total_bytes = 0
    for info, place in tensors:
        nbytes = info.end - info.begin
        total_bytes += nbytes
        if place.stack is not None and place.layer is not None:
            layer_bytes[(place.stack, place.layer)] += nbytes
        elif place.role == "embedding":
            embedding_bytes += nbytes
        elif place.role in ("lm_head", "norm"):
            tail_bytes += nbytes
    return dict(layer_bytes), embedding_bytes, tail_bytes, total_bytes


#: architecture names of models that generate (transformers' class-name suffixes)
_GENERATING: Final = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def _config_layers(c: ModelConfig, indexes: Iterable[int]) -> list[Layer]:
    """Decoder layers the headers do not show (a header that holds the embedding only, a partial
    snapshot), as config.json describes them; their parameters unknown (0 counted)."""
    layers = []
    for i in indexes:
        recurrent = recurrent_kind(_layer_type(c, i))  # a word of its kind in layer_types (mixers.py)
        if recurrent is None and len(c.layers.kv_heads_per_layer) > i and c.layers.kv_heads_per_layer[i] == 0:
            recurrent = "ssm"  # GGUF's per-layer KV heads of 0: a state-space layer
        if recurrent is not None:
            mixer = Mixer(recurrent, state_formula="unknown: the headers hold no layers to size the state")
        else:
            roles: set[Role] = {"attn.kv"} if c.mla.kv_lora_rank else {"attn.k"}
            mixer = _attention(i, roles, "decoder", c)
        layers.append(Layer(i, (mixer,), Mlp("moe" if c.moe.num_experts else "dense", c.moe.num_experts or 0,
                                             c.moe.experts_per_token), 0, 0))
    return layers


def _stack(kind: StackKind, name: str, layers: list[Layer], own: int) -> Stack:
    return Stack(kind, name, tuple(layers), sum(x.parameters for x in layers) + own,
                 sum(x.active for x in layers) + own)


def _stack_kind(name: str, layers: Mapping[int, list[Tensor]], config: ModelConfig, generates: bool,
                stacks: int) -> StackKind:
    """A layer stack's kind from its tensors' roles and its name: a vision or audio tower by role; an
    encoder or decoder by name (``model.encoder.layers``, ``decoder.block``); the one main stack of a
    model is its decoder when the model generates (an output layer, or a token embedding it is tied to)
    and an encoder otherwise (BERT, ViT)."""
    first = next(iter(layers.values()))
    tower = next((_TOWERS[t.place.role] for t in first if t.place.role in _TOWERS), None)
    if tower is not None:
        return tower
    parts = name.split(".")
    if any(p.startswith("decoder") for p in parts):
        return "decoder"
    if any(p.startswith("encoder") for p in parts):
        return "audio" if "num_mel_bins" in config.raw else "encoder"
    if stacks > 1 and any(t.place.role == "projector" for t in first):
        return "projector"
    return "decoder" if generates else "encoder"


def _inner_roles(members: list[Tensor], stack: str, index: int) -> set[Role]:
    """The roles of a layer's tensors; inside a tower (whose tensors are all ``vision``) the role of
    each tensor's name within its layer."""
    roles = {t.place.role for t in members}
    if not roles & set(_TOWERS):
        return roles
    cut = len(stack) + len(str(index)) + 2
    return {p.role for p in classify_all(["x.0." + t.info.name[cut:] for t in members])}


def _layer(index: int, members: list[Tensor], stack: str, kind: StackKind, c: ModelConfig) -> Layer:
    roles = _inner_roles(members, stack, index)
    mixers: list[Mixer] = []
    if roles & _ATTENTION_ROLES:
        mixers.append(_attention(index, roles, kind, c))
    if any(r.startswith("linear_attn.") for r in roles):
        mixers.append(_recurrent("linear", members, c))
    if any(r.startswith("ssm.") for r in roles):
        mixers.append(_recurrent("ssm", members, c))
    if "attn.cross" in roles:
        mixers.append(Mixer("cross", _widths(kind, c, cross=True)))
    if not mixers:
        mixers.append(Mixer("unknown"))
    parameters = sum(t.info.numel for t in members)
    experts = [t for t in members if t.place.role.startswith("moe.expert")]
    if not experts:
        mlp = Mlp("dense" if any(r.startswith("mlp.") for r in roles) else "none")
        return Layer(index, tuple(mixers), mlp, parameters, parameters)
    ids = {t.place.expert for t in experts if t.place.expert is not None}
    n = len(ids) or (c.moe.num_experts or 0)
    k = c.moe.experts_per_token
    elements = sum(t.info.numel for t in experts)
    inactive = elements * (n - k) // n if k and n > k else 0
    return Layer(index, tuple(mixers), Mlp("moe", n, k), parameters, parameters - inactive)


def _widths(kind: StackKind, c: ModelConfig, *, cross: bool = False) -> Attention:
    """Heads and head widths of a stack's attention: a decoder of an encoder-decoder reads its own keys
    (``decoder_attention_heads``: BART, Whisper), the rest the config's text-model figures."""
    raw = c.raw
    heads = c.num_heads
    if kind == "decoder" and (cross or "decoder_attention_heads" in raw):
        heads = config_int(raw.get("decoder_attention_heads"), heads or 0) or heads
    elif kind in ("encoder", "audio") and "encoder_attention_heads" in raw:
        heads = config_int(raw.get("encoder_attention_heads"), heads or 0) or heads
    head_dim = c.head_dim
    if heads and heads != c.num_heads and c.hidden_size and "head_dim" not in raw and "d_kv" not in raw:
        head_dim = c.hidden_size // heads
    kv = c.num_kv_heads if heads == c.num_heads else heads
    return Attention(heads, kv, head_dim, c.mla.v_head_dim or head_dim)


def _attention(index: int, roles: set[Role], kind: StackKind, c: ModelConfig) -> Mixer:
    if "attn.kv" in roles and c.mla.kv_lora_rank and c.mla.qk_rope_head_dim is not None:
        d_qk = (c.mla.qk_nope_head_dim or 0) + c.mla.qk_rope_head_dim
        latent = c.mla.kv_lora_rank + c.mla.qk_rope_head_dim
        return Mixer("mla", Attention(c.num_heads, None, d_qk, c.mla.v_head_dim, latent=latent))
    widths = _widths(kind, c)
    if kind != "decoder":
        return Mixer("full", widths)
    per_layer = c.layers.kv_heads_per_layer
    if len(per_layer) > index:
        widths = Attention(widths.heads, per_layer[index], widths.key_dim, widths.value_dim)
    windowed = windowed_kind(_layer_type(c, index), c)  # a windowed kind's word in layer_types (mixers.py)
    if windowed is not None:
        return Mixer(windowed[0], _windowed(widths, windowed[1]))
    return Mixer("full", widths)


def _windowed(a: Attention, window: int) -> Attention:
    return Attention(a.heads, a.kv_heads, a.key_dim, a.value_dim, window=window)


def _layer_type(c: ModelConfig, index: int) -> str:
    """The config's word for a decoder layer: ``layer_types``, else the defaults transformers applies
    (Mistral: every layer slides when a window is set; Gemma 2: even layers slide)."""
    if len(c.layers.layer_types) > index:
        return c.layers.layer_types[index].lower()
    if c.layers.sliding_window and c.model_type == "mistral":
        return "sliding_attention"
    if c.layers.sliding_window and c.model_type == "gemma2":
        return "sliding_attention" if index % 2 == 0 else "full_attention"
    return "full_attention"


#: the role prefix of each recurrent kind's tensors (roles.py)
_STATE_ROLES: Final[Mapping[MixerKind, str]] = {"linear": "linear_attn.", "ssm": "ssm."}


def _recurrent(kind: MixerKind, members: list[Tensor], c: ModelConfig) -> Mixer:
    """A state-space or linear-attention mixer and the state a sequence keeps in it (vLLM's
    MambaStateShapeCalculator): the convolution's last kernel − 1 inputs per channel, plus the scan's
    state, from the headers' shapes and, where they cannot say, the config."""
    prefix = _STATE_ROLES[kind]
    conv = next((t.info.shape for t in members if t.place.role == prefix + "conv" and len(t.info.shape) == 3), None)
    a_log = next((t.info.shape for t in members if t.place.role == prefix + "state"
                  and t.info.name.endswith(("A_log", "ssm_a", "ssm_a.weight"))), None)
    out = next((t.info.shape for t in members if t.place.role == prefix + "out" and len(t.info.shape) == 2), None)
    if conv is None or a_log is None:
        return Mixer(kind, state=None, state_formula="unknown: the headers show no convolution or A_log to size it")
    conv_state = conv[0] * (conv[-1] - 1)
    conv_text = f"conv {conv[0]:,} channels × (kernel {conv[-1]} − 1)"
    raw = c.raw
    if prefix == _STATE_ROLES["linear"]:  # gated delta: a key × value matrix a head
        dk = config_int(raw.get("linear_key_head_dim"), 0)
        dv = config_int(raw.get("linear_value_head_dim"), 0)
        if not (dk and dv):
            return Mixer(kind, state_formula="unknown: the config gives no linear_key_head_dim or "
                                             "linear_value_head_dim")
        heads = a_log[0]
        return Mixer(kind, state=conv_state + heads * dk * dv,
                     state_formula=f"{conv_text} + {heads} value heads × key dim {dk} × value dim {dv}")
    if len(a_log) == 2:  # Mamba: A is [d_inner, d_state]
        return Mixer(kind, state=conv_state + a_log[0] * a_log[1],
                     state_formula=f"{conv_text} + d_inner {a_log[0]:,} × d_state {a_log[1]}")
    d_state = next((v for key in _SSM_STATE if (v := config_int(raw.get(key), 0))), 0)
    if not d_state or out is None:
        return Mixer(kind, state_formula="unknown: the config gives no state size (" + ", ".join(_SSM_STATE) + ")")
    d_ssm = out[1]  # Mamba-2: heads × head_dim, the out projection's input
    return Mixer(kind, state=conv_state + d_ssm * d_state,
                 state_formula=f"{conv_text} + {a_log[0]} heads × head dim {d_ssm // max(a_log[0], 1)} × "
                               f"d_state {d_state}")


def _kv_check(params: list[Tensor], c: ModelConfig, stacks: list[Stack]) -> str:
    """The config's K/V widths against the k/v (or MLA's kv_a) projections of the decoder's layers."""
    decoder = {s.name for s in stacks if s.kind == "decoder"}
    mla = c.mla.kv_lora_rank and c.mla.qk_rope_head_dim is not None
    if mla:
        width = (c.mla.kv_lora_rank or 0) + (c.mla.qk_rope_head_dim or 0)
        outs = {t.info.shape[0] for t in params if t.place.role == "attn.kv" and t.place.stack in decoder
                and t.info.name.endswith("kv_a_proj_with_mqa.weight") and len(t.info.shape) == 2}
        if outs == {width}:
            return f"checked: kv_a_proj_with_mqa has {width} output rows (latent + rope key)"
        return f"MISMATCH: config implies {width}, headers have {sorted(outs)}" if outs else "no kv_a_proj to check"
    kv = [t for t in params if t.place.role in ("attn.k", "attn.v") and t.place.stack in decoder]
    outs = {t.info.shape[0] for t in kv if len(t.info.shape) == 2 and t.info.name.endswith(".weight")}
    width = (c.num_kv_heads or 0) * (c.head_dim or 0)
    if not outs and kv:
        return "k/v projections are packed (quantised): their shapes were not checked"
    if not outs:
        return "no separate k/v projections in the headers to check against"
    if outs == {width}:
        return f"checked: k_proj and v_proj have {width:,} output rows, as the config implies"
    return f"MISMATCH: config implies {width:,} k/v rows, headers have {sorted(outs)}"
