"""The parameter gap between two models, explained cause by cause (``explain``): each paired tensor's dimensions
matched to the config quantity that explains their change and moved from A's size to B's one cause at a time in
``CAUSE_ORDER``, so the causes telescope to B − A exactly; extra layers, tensors only one side has, and the named
residual. ``diff`` pairs the tensors and calls it (the rule in full: ``diff``'s docstring)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from inspector.analysis.comparison.align import align_stacks, layer_pattern, layers_of, leaf_of, mlp_width, pair_layer
from inspector.analysis.facts.config import ModelConfig
from inspector.analysis.facts.packing import PACKING_DTYPES, is_packed
from inspector.analysis.facts.report import Report
from inspector.analysis.facts.stats import Tensor, layer_suffix

CAUSE_ORDER: Final[tuple[str, ...]] = (
    "vocabulary", "positions", "hidden size", "layer count", "MLP width", "gated MLP", "expert MLP width",
    "q width", "KV width", "experts", "router", "tied embeddings", "biases", "norms", "quantisation", "residual",
)


@dataclass(frozen=True, slots=True)
class Item:
    """One line of a cause's arithmetic: a tensor (pattern) and what it contributed."""

    tensor: str
    count: int  # tensors (layers × experts) the line stands for
    formula: str  # per tensor, e.g. "(14,336 − 11,008) × 4,096"
    delta: int  # total of the line


@dataclass(frozen=True, slots=True)
class Cause:
    key: str
    label: str  # "vocabulary 32,000 → 128,256"
    delta: int
    items: tuple[Item, ...]


# --- quantities a dimension can stand for ----------------------------------------------------


def _quantities(c: ModelConfig) -> list[tuple[str, str, int]]:
    """(cause, label, value) for every config quantity a tensor dimension can be, in cause order."""
    q: list[tuple[str, str, int]] = []

    def add(cause: str, label: str, value: int | None) -> None:
        if value:
            q.append((cause, label, value))

    add("vocabulary", "vocab", c.vocab_size)
    add("positions", "positions", c.max_position)
    add("hidden size", "hidden", c.hidden_size)
    width = mlp_width(c)
    add("MLP width", "intermediate", width)
    if width:
        add("MLP width", "2 × intermediate", 2 * width)  # fused gate_up
    add("expert MLP width", "moe_intermediate", c.moe.moe_intermediate_size)
    if c.num_heads and c.head_dim:
        add("q width", "heads × head_dim", c.num_heads * c.head_dim)
    if c.num_kv_heads and c.head_dim:
        add("KV width", "KV heads × head_dim", c.num_kv_heads * c.head_dim)
        if c.num_heads:
            add("q width", "(heads + 2 KV heads) × head_dim", (c.num_heads + 2 * c.num_kv_heads) * c.head_dim)
    if c.hidden_size:
        add("q width", "3 × hidden", 3 * c.hidden_size)  # GPT-2 c_attn
    add("router", "experts", c.moe.num_experts)
    return q


# nn.Linear weights are [out, in]: what each position of a role's weight stands for. Used only to
# choose between quantities that both fit (a q_proj whose q width equals the hidden size).
LINEAR_LAYOUT: Final[dict[str, tuple[str, str]]] = {
    "attn.q": ("q width", "hidden size"), "attn.o": ("hidden size", "q width"),
    "attn.k": ("KV width", "hidden size"), "attn.v": ("KV width", "hidden size"),
    "mlp.gate": ("MLP width", "hidden size"), "mlp.up": ("MLP width", "hidden size"),
    "mlp.down": ("hidden size", "MLP width"),
}


def _cause_of(dim_a: int, dim_b: int, qa: list[tuple[str, str, int]], qb: dict[str, int],
              prefer: str | None = None) -> tuple[str, str]:
    """The quantity that is dim_a in A and dim_b in B (the layout's choice, else the first in
    cause order), or the residual."""
    fits = [(cause, label) for cause, label, value in qa if value == dim_a and qb.get(label) == dim_b]
    for fit in fits:
        if fit[0] == prefer:
            return fit
    return fits[0] if fits else ("residual", "unexplained dimension")


class _Ledger:
    """Collects (cause, tensor pattern, formula) → count and delta."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])

    def add(self, cause: str, tensor: str, formula: str, delta: int) -> None:
        if delta == 0:
            return
        line = self.lines[(cause, tensor, formula)]
        line[0] += 1
        line[1] += delta


def _pair(ledger: _Ledger, qa: list[tuple[str, str, int]], qb: dict[str, int], ta: Tensor, tb: Tensor,
          key: str) -> None:
    """Two tensors paired under ``key`` (the name inside its layer, B's where renamed); its pattern
    (experts numbered E) is written only where a line is added (91,991 pairs of DeepSeek-V3 add none)."""
    if ta.place.kind != "parameter" or tb.place.kind != "parameter":
        return
    sa, sb = ta.info.shape, tb.info.shape
    if sa == sb and ta.info.numel == tb.info.numel == math.prod(sa):  # (what the checks below let pass)
        return
    pattern = layer_pattern(key)
    if ta.info.numel != math.prod(sa) or tb.info.numel != math.prod(sb):  # packed words: logical counts,
        # which a shape's dimensions do not give (the packed axis differs by format)
        ledger.add("residual", pattern, f"{ta.info.numel:,} → {tb.info.numel:,} weights (packed)",
                   tb.info.numel - ta.info.numel)
        return
    if sa == sb:
        return
    if len(sa) != len(sb):
        ledger.add("residual", pattern, f"{shape_words(sa)} → {shape_words(sb)}", tb.info.numel - ta.info.numel)
        return
    layout = LINEAR_LAYOUT.get(ta.place.role) if len(sa) <= 2 else None
    causes = []
    for i, (x, y) in enumerate(zip(sa, sb, strict=True)):
        if x == y:
            causes.append(("", ""))
            continue
        found = _cause_of(x, y, qa, qb, layout[i] if layout else None)
        if found[0] == "residual" and i == 0 and ta.place.role in ("embedding", "lm_head"):
            found = ("vocabulary", "rows")  # a vocabulary the config does not state (added tokens)
        causes.append(found)
    current = list(sa)
    for cause in CAUSE_ORDER:
        dims = [i for i, (c, _) in enumerate(causes) if c == cause]
        if not dims:
            continue
        before = math.prod(current)
        parts = []
        for i, x in enumerate(current):
            parts.append(f"({sb[i]:,} − {x:,})" if i in dims and len(dims) == 1 else f"{x:,}")
        for i in dims:
            current[i] = sb[i]
        after = math.prod(current)
        formula = " × ".join(parts) if len(dims) == 1 else f"{shape_words(tuple(current))} − " + \
            shape_words(tuple(sa[i] if i in dims else current[i] for i in range(len(sa))))
        ledger.add(cause, pattern, formula, after - before)


def _added_cause(t: Tensor, other: Report, packed: bool, gated: bool) -> str:
    """The cause a tensor only one side has counts under, against ``other`` (the side without it; ``packed``,
    ``gated``: whether it stores packed words and has a gated MLP)."""
    role = t.place.role
    leaf = t.info.name.rsplit(".", 1)[-1]
    if is_packed(leaf) or (leaf == "weight" and packed and role.split(".", 1)[0] in ("attn", "mlp", "moe")):
        return "quantisation"  # a packed tensor against an unpacked one: stored elements differ
    if role.startswith("moe.expert") or role.startswith("moe.shared") or \
            (role.startswith("mlp.") and _has_experts(other)):
        return "experts"
    if role in _ONE_SIDE_ROLES:
        return _ONE_SIDE_ROLES[role]
    if role == "mlp.gate" and not gated:
        return "gated MLP"
    if leaf == "bias":  # after the roles above (a norm's bias is the norm's), before the output layer
        return "biases"
    return "tied embeddings" if role == "lm_head" else "residual"


#: the cause of a tensor only one side has, by its role alone
_ONE_SIDE_ROLES: Final[dict[str, str]] = {"moe.router": "router", "position_embedding": "positions", "norm": "norms"}


def explain(a: Report, b: Report) -> tuple[Cause, ...]:
    ca, cb = a.config, b.config
    qa = _quantities(ca)
    qb = {label: value for _, label, value in _quantities(cb)}
    ledger = _Ledger()

    def pair(ta: Tensor, tb: Tensor, key: str) -> None:
        """Two tensors paired under ``key`` (the name inside its layer, B's where renamed): ``_pair``."""
        _pair(ledger, qa, qb, ta, tb, key)

    packed = {id(a): _packed(a), id(b): _packed(b)}
    gated = {id(a): _gated(a), id(b): _gated(b)}

    def single(t: Tensor, sign: int, pattern: str) -> None:
        if t.place.kind != "parameter":
            return
        other = b if sign < 0 else a
        cause = _added_cause(t, other, packed[id(other)], gated[id(other)])
        word = "added" if sign > 0 else "removed"
        ledger.add(cause, pattern, f"{word} {shape_words(t.info.shape)}", sign * t.info.numel)

    if b is a:  # one report both sides: each tensor pairs with itself, every delta is 0, and no line of 0 is kept
        return _causes(ledger, a, b)
    # layers
    la, lb = layers_of(a), layers_of(b)
    la, lb = align_stacks(la, lb)
    for stack in sorted(set(la) | set(lb)):
        layers_a, layers_b = la.get(stack, {}), lb.get(stack, {})
        if not layers_a or not layers_b:  # a whole stack only one side has (a vision tower, say)
            sign, layers = (1, layers_b) if layers_b else (-1, layers_a)
            for ts in layers.values():
                for t in ts.values():
                    single(t, sign, f"{stack}.N.{layer_suffix(t)}")
            continue
        template = layers_a[max(layers_a)]
        size = sum(t.info.numel for t in template.values() if t.place.kind == "parameter")
        # by the layers each side has, not by a range up to the highest number: a header naming
        # layer 10⁹ must not make a loop of 10⁹ (nor a gap in A's numbers a missing key)
        for _ in layers_b.keys() - layers_a.keys():  # first at A's size (layer count), then its widths
            ledger.add("layer count", f"{stack}: a layer at A's size", f"+{size:,}", size)
        for i in sorted(layers_a.keys() - layers_b.keys()):
            removed = sum(t.info.numel for t in layers_a[i].values() if t.place.kind == "parameter")
            ledger.add("layer count", f"{stack}: a layer of A", f"−{removed:,}", -removed)
        for i in sorted(layers_b):
            pair_layer(layers_a.get(i, template), layers_b[i], pair, single, ca, cb)
    # outside the layers
    oa = {t.info.name: t for t in a.tensors if t.place.layer is None}
    ob = {t.info.name: t for t in b.tensors if t.place.layer is None}
    pair_layer(oa, ob, pair, single, ca, cb)

    return _causes(ledger, a, b)


def _packed(r: Report) -> bool:
    return any(is_packed(t.info.name) for t in r.tensors
               if t.place.kind == "parameter" and t.info.dtype in PACKING_DTYPES)


def _gated(r: Report) -> bool:
    """A gated (SwiGLU/GeGLU) MLP: a gate matrix, alone or fused with up."""
    return any(row.role in ("mlp.gate", "mlp.gate_up") for row in r.summary.by_role)


def _has_experts(r: Report) -> bool:
    return any(row.role.startswith("moe.expert") for row in r.summary.by_role)


#: an expert's number in a tensor name (compiled once: diff calls it for every tensor of both sides)
def _causes(ledger: _Ledger, a: Report, b: Report) -> tuple[Cause, ...]:
    grouped: dict[str, list[Item]] = defaultdict(list)
    for (cause, tensor, formula), (count, delta) in ledger.lines.items():
        grouped[cause].append(Item(tensor, count, formula, delta))
    causes = []
    for cause in CAUSE_ORDER:
        items = grouped.get(cause)
        if not items and cause != "residual":
            continue
        items = sorted(items or [], key=lambda i: (-abs(i.delta), i.tensor))
        causes.append(Cause(cause, _label(cause, a, b),
                            sum(i.delta for i in items), tuple(items)))
    return tuple(causes)


def _change(x: object, y: object) -> str:
    return f"{x:,} → {y:,}" if isinstance(x, int) and isinstance(y, int) else f"{x} → {y}"


def _vocabulary(a: Report, b: Report) -> str:
    va, vb = _rows(a, "embedding") or a.config.vocab_size, _rows(b, "embedding") or b.config.vocab_size
    label = f"vocabulary {_change(va, vb)}"
    if va and vb and 0 < abs(vb - va) <= max(va, vb) // 100:
        label += f" ({vb - va:+,} tokens)"
    return label


def _positions(a: Report, b: Report) -> str:
    pa, pb = _rows(a, "position_embedding"), _rows(b, "position_embedding")
    if pa and pb:
        return f"learned positions {_change(pa, pb)}"
    return f"learned positions {f'{pa:,}' if pa else 'none (rotary)'} → {f'{pb:,}' if pb else 'none (rotary)'}"


def _kv_width(a: Report, b: Report) -> str:
    ca, cb = a.config, b.config
    heads = f"KV heads {_change(ca.num_kv_heads, cb.num_kv_heads)}"
    if ca.head_dim == cb.head_dim:
        return f"{heads} (grouped-query attention)"
    return f"{heads} × head_dim {_change(ca.head_dim, cb.head_dim)}"


def _tied_embeddings(a: Report, b: Report) -> str:
    ta, tb = a.config.storage.tie_word_embeddings, b.config.storage.tie_word_embeddings
    if ta is not None and ta == tb:  # the configs agree: what differs is whether lm_head is saved
        saved = ("saved" if not _tied(a) else "not saved", "saved" if not _tied(b) else "not saved")
        return f"lm_head {saved[0]} → {saved[1]} (tie_word_embeddings {str(ta).lower()} in both configs)"
    return f"tied embeddings {_tied(a)} → {_tied(b)}"


def _norms(a: Report, b: Report) -> str:
    na, nb = _norm_kind(a), _norm_kind(b)
    return f"norms {na} → {nb}" if na != nb else "norms"


def _quantisation(a: Report, b: Report) -> str:
    qa = (a.config.storage.quantization or {}).get("quant_method", "none")
    qb = (b.config.storage.quantization or {}).get("quant_method", "none")
    return f"quantisation {qa} → {qb}: packed weights count stored elements, widths included"


def _gated_mlp(a: Report, b: Report) -> str:
    word = ("plain", "gated") if _gated(b) else ("gated", "plain")
    return f"MLP {word[0]} → {word[1]} (a gate matrix beside up and down)"


#: each cause's label from the two sides (a cause not listed is its own label)
_LABELS: Final[Mapping[str, Callable[[Report, Report], str]]] = {
    "vocabulary": _vocabulary,
    "positions": _positions,
    "hidden size": lambda a, b: f"hidden size {_change(a.config.hidden_size, b.config.hidden_size)}",
    "layer count": lambda a, b: f"layers {_change(a.config.num_layers, b.config.num_layers)}",
    "MLP width": lambda a, b: f"MLP width {_change(mlp_width(a.config), mlp_width(b.config))}",
    "gated MLP": _gated_mlp,
    "expert MLP width": lambda a, b: "expert MLP width " + _change(a.config.moe.moe_intermediate_size,
                                                                   b.config.moe.moe_intermediate_size),
    "q width": lambda a, b: (f"attention heads {_change(a.config.num_heads, b.config.num_heads)} × head_dim "
                             f"{_change(a.config.head_dim, b.config.head_dim)}"),
    "KV width": _kv_width,
    "experts": lambda a, b: f"experts {a.config.moe.num_experts or 'dense'} → {b.config.moe.num_experts or 'dense'}",
    "router": lambda a, b: "MoE router",
    "tied embeddings": _tied_embeddings,
    "norms": _norms,
    "quantisation": _quantisation,
    "residual": lambda a, b: "residual (no config cause)",
}


def _label(cause: str, a: Report, b: Report) -> str:
    draw = _LABELS.get(cause)
    return cause if draw is None else draw(a, b)


def _rows(r: Report, role: str) -> int | None:
    """The first dimension of the report's (first) tensor of this role outside the layers."""
    return next((t.info.shape[0] for t in r.tensors
                 if t.place.role == role and t.place.layer is None and t.info.shape), None)


def _tied(r: Report) -> bool:
    return not any(t.place.role == "lm_head" for t in r.tensors) if not r.config.encoder_only \
        else bool(r.config.storage.tie_word_embeddings)


def _norm_kind(r: Report) -> str:
    """How a layer's norms look in the first layer: "2 × LayerNorm (weight + bias)" and the like."""
    first = [t for t in r.tensors if t.place.role == "norm" and t.place.layer == 0]
    weights = sum(1 for t in first if leaf_of(t) == "weight")
    biased = any(leaf_of(t) == "bias" for t in first)
    kind = "LayerNorm (weight + bias)" if biased else "RMSNorm (weight)"
    return f"{weights} × {kind} per layer" if weights else "none per layer"


def shape_words(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(f"{d:,}" for d in shape) + "]"
