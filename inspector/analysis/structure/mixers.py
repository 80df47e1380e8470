"""What a layer mixes tokens with, one kind a record: whether it keeps a cache per token (and of what), a state per
sequence, a window or chunk bounding it, and the tokens a query attends to. The rest of the package asks the kind
(``MIXERS[m.kind]``), never compares its name; ``architecture`` assigns the kinds from the config and headers,
a windowed or recurrent kind where a word of its own stands in the config's ``layer_types`` (``type_words``). Adding
a kind is one record registered with ``register`` (tests/test_toy_mixer.py).

The kinds: attention over every earlier token (full), over a window (sliding), within fixed chunks (chunked),
through MLA's latent (mla), over an encoder's output (cross); a recurrent state (ssm, linear); unknown where
neither headers nor config say."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from inspector.analysis.facts.config import ModelConfig, config_int

#: a kind's name: a key of ``MIXERS``
MixerKind = str


def _causal(window: int | None, t: int) -> int:
    return t


def _causal_prefix(window: int | None, t: int) -> int:
    return t * (t + 1) // 2


def _in_window(window: int | None, t: int) -> int:
    return min(t, window) if window else t


def _in_window_prefix(window: int | None, t: int) -> int:
    if not window:
        return _causal_prefix(window, t)
    w = min(t, window)
    return w * (w + 1) // 2 + (t - w) * w


def _in_chunk(window: int | None, t: int) -> int:
    return (t - 1) % window + 1 if window else t


def _in_chunk_prefix(window: int | None, t: int) -> int:
    if not window:
        return _causal_prefix(window, t)
    whole, rest = divmod(t, window)
    return whole * window * (window + 1) // 2 + rest * (rest + 1) // 2


@dataclass(frozen=True, slots=True)
class Mixing:
    """One kind of mixer and what the estimates ask of it."""

    name: MixerKind
    caches: bool = False  # keeps K and V (or a latent) for every token it attends to
    recurrent: bool = False  # keeps a fixed state per sequence instead
    windowed: bool = False  # a window or chunk bounds what it attends to (and keeps)
    latent: bool = False  # MLA: one latent per token shared by the heads, its keys and values up-projected per head
    over_input: bool = False  # attends over an encoder's output: its length is the input's
    #: tokens a query at position t attends to, given the layer's window; and their sum over positions 1…t
    attended: Callable[[int | None, int], int] = _causal
    attended_prefix: Callable[[int | None, int], int] = _causal_prefix
    #: the layers of this kind in words: what they keep at most, and how far a query reaches (formulas)
    keeps_words: str = ""
    reach_words: str = ""
    attends_words: str = ""  # its layers' bound in the FLOPs' assumptions, where one window holds for them all
    #: words of the config's ``layer_types`` that make a decoder layer this kind (a substring of the layer's word)
    type_words: tuple[str, ...] = ()
    #: a windowed kind's window (or chunk) from the config; 0 where the config gives none (then full attention)
    window: Callable[[ModelConfig], int] | None = None

    @property
    def attends(self) -> bool:
        """Attention the activation formula covers: a cache over the tokens, or cross-attention."""
        return self.caches or self.over_input


def _sliding_window(c: ModelConfig) -> int:
    return c.layers.sliding_window or 0


def _attention_chunk(c: ModelConfig) -> int:
    return config_int(c.raw.get("attention_chunk_size"), 0)


_KINDS: Final = (
    Mixing("full", caches=True),
    Mixing("sliding", caches=True, windowed=True, attended=_in_window, attended_prefix=_in_window_prefix,
           keeps_words="sliding-window layers keep at most", reach_words="min(context, window ",
           attends_words="sliding-window layers attend to at most", type_words=("sliding",), window=_sliding_window),
    Mixing("chunked", caches=True, windowed=True, attended=_in_chunk, attended_prefix=_in_chunk_prefix,
           keeps_words="chunked-attention layers keep at most their chunk of", reach_words="position in its chunk of ",
           type_words=("chunked",), window=_attention_chunk),
    Mixing("mla", caches=True, latent=True),
    Mixing("cross", over_input=True),
    Mixing("ssm", recurrent=True, type_words=("mamba", "ssm", "recurrent", "conv")),
    Mixing("linear", recurrent=True, type_words=("linear_attention",)),
    Mixing("unknown"),
)
#: THE table of mixer kinds, by name (``register`` adds one)
MIXERS: Final[dict[str, Mixing]] = {k.name: k for k in _KINDS}
_BUILT_IN: Final = frozenset(MIXERS)


def register(kind: Mixing) -> None:
    """Add a kind of mixer: its words in ``layer_types`` then make decoder layers of it."""
    if kind.name in MIXERS:
        raise ValueError(f"a mixer kind named {kind.name!r} is registered already")
    MIXERS[kind.name] = kind


def unregister(name: str) -> None:
    """Remove a kind ``register`` added (the built-in ones stay)."""
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is a built-in mixer kind")
    MIXERS.pop(name, None)


def windowed_kind(layer_type: str, c: ModelConfig) -> tuple[str, int] | None:
    """The windowed kind whose word stands in a decoder layer's ``layer_types`` word, with the window the config
    gives it; None for full attention (no such word, or no window in the config)."""
    for kind in MIXERS.values():
        if kind.window is not None and any(w in layer_type for w in kind.type_words):
            window = kind.window(c)
            if window:
                return kind.name, window
    return None


def recurrent_kind(layer_type: str) -> str | None:
    """The recurrent kind whose word stands in a layer's ``layer_types`` word, or None."""
    return next((kind.name for kind in MIXERS.values() if kind.recurrent
                 and any(w in layer_type for w in kind.type_words)), None)
