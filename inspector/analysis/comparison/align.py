"""How two checkpoints' tensors pair up, for ``diff`` and ``lineage``: layer by layer and by name within a layer,
Conv1D weights turned to ``nn.Linear``'s [out, in], a fused projection (``qkv_proj``, ``gate_up_proj``) cut into its
parts by the config's widths where the other side keeps them apart, renamed tensors paired by role, leftover norms in
name order; and a GGUF against another format with llama.cpp's names (gguf-py's ``TensorNameMap``)."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Final

from inspector.analysis.facts.config import ModelConfig
from inspector.analysis.facts.families import CONV1D_TYPES
from inspector.analysis.facts.report import Report
from inspector.analysis.facts.stats import Tensor
from inspector.formats.gguf import with_gguf_names
from inspector.model import Checkpoint, natural_key


def mlp_width(c: ModelConfig) -> int | None:
    """The MLP width; GPT-2's config leaves ``n_inner`` null, meaning 4 × hidden."""
    if c.intermediate_size is None and c.hidden_size and c.model_type in CONV1D_TYPES:
        return 4 * c.hidden_size
    return c.intermediate_size




def oriented(t: Tensor, c: ModelConfig) -> Tensor:
    """A Conv1D weight ([in, out]) as an nn.Linear one ([out, in])."""
    if c.model_type in CONV1D_TYPES and len(t.info.shape) == 2 and t.place.role.split(".", 1)[0] in ("attn", "mlp"):
        return Tensor(t.info._replace(shape=t.info.shape[::-1]), t.place)
    return t


#: a fused projection's parts, in the order they are stacked along its output dimension
FUSED: Final[dict[str, tuple[str, ...]]] = {
    "attn.qkv": ("attn.q", "attn.k", "attn.v"),
    "mlp.gate_up": ("mlp.gate", "mlp.up"),
}


def split_fused(key: str, t: Tensor, c: ModelConfig) -> dict[str, Tensor] | None:
    """A fused projection cut into its parts by the config's widths, or None where they do not add up."""
    parts = FUSED[t.place.role]
    widths: tuple[int, ...]
    if t.place.role == "attn.qkv":
        if not (c.num_heads and c.num_kv_heads and c.head_dim):
            return None
        widths = (c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.num_kv_heads * c.head_dim)
    else:
        width = mlp_width(c)
        if not width:
            return None
        widths = (width, width)
    shape = t.info.shape
    if not shape or sum(widths) != shape[0]:
        return None
    rest = math.prod(shape[1:])
    return {f"{key}[{role.split('.', 1)[1]}]": Tensor(
        t.info._replace(shape=(w, *shape[1:]), numel=w * rest), t.place._replace(role=role))  # type: ignore[arg-type]
        for role, w in zip(parts, widths, strict=True)}


def pair_layer(ref: dict[str, Tensor], other: dict[str, Tensor], pair: Callable[[Tensor, Tensor, str], None],
                single: Callable[[Tensor, int, str], None], ca: ModelConfig, cb: ModelConfig) -> None:
    if ca.model_type in CONV1D_TYPES:
        ref = {k: oriented(t, ca) for k, t in ref.items()}
    if cb.model_type in CONV1D_TYPES:
        other = {k: oriented(t, cb) for k, t in other.items()}
    unmatched_a = {k: v for k, v in ref.items() if k not in other}
    unmatched_b = {k: v for k, v in other.items() if k not in ref}
    for key in ref.keys() & other.keys():
        pair(ref[key], other[key], key)
    # a fused projection against separate ones: cut it into its parts
    for mine, theirs, config in ((unmatched_a, unmatched_b, ca), (unmatched_b, unmatched_a, cb)):
        for key, t in list(mine.items()):
            role = t.place.role
            if role in FUSED and t.place.expert is None and \
                    not any(u.place.role == role for u in theirs.values()) and \
                    any(u.place.role in FUSED[role] for u in theirs.values()):
                parts = split_fused(key, t, config)
                if parts:
                    del mine[key]
                    mine.update(parts)
    # same role and leaf on both sides, once each: renamed (e.g. w1 ↔ gate_proj, c_proj ↔ dense)
    by_role_a = unique_by_role(unmatched_a)
    by_role_b = unique_by_role(unmatched_b)
    for rk in by_role_a.keys() & by_role_b.keys():
        ka, kb = by_role_a[rk], by_role_b[rk]
        pair(unmatched_a.pop(ka), unmatched_b.pop(kb), kb)
    # norms left over pair in name order (ln_1 ↔ input_layernorm, ln_2 ↔ post_attention_layernorm)
    for leaf in ("weight", "bias"):
        norms_a = sorted((k for k, t in unmatched_a.items() if t.place.role == "norm" and leaf_of(t) == leaf),
                         key=natural_key)
        norms_b = sorted((k for k, t in unmatched_b.items() if t.place.role == "norm" and leaf_of(t) == leaf),
                         key=natural_key)
        for ka, kb in zip(norms_a, norms_b, strict=False):
            pair(unmatched_a.pop(ka), unmatched_b.pop(kb), kb)
    for k, t in unmatched_b.items():
        single(t, +1, layer_pattern(k))
    for k, t in unmatched_a.items():
        single(t, -1, layer_pattern(k))


def leaf_of(t: Tensor) -> str:
    return t.info.name.rsplit(".", 1)[-1]


def unique_by_role(tensors: dict[str, Tensor]) -> dict[tuple[str, str], str]:
    seen: dict[tuple[str, str], list[str]] = defaultdict(list)
    for k, t in tensors.items():
        if t.place.expert is None:
            seen[(t.place.role, leaf_of(t))].append(k)
    return {rk: ks[0] for rk, ks in seen.items() if len(ks) == 1}


def align_stacks(la: dict[str, dict[int, dict[str, Tensor]]], lb: dict[str, dict[int, dict[str, Tensor]]]) \
        -> tuple[dict[str, dict[int, dict[str, Tensor]]], dict[str, dict[int, dict[str, Tensor]]]]:
    """Two models' main stacks under one name when they differ (GPT-2's ``h``, Phi-2's
    ``model.layers``): the stack each side has alone, if there is exactly one on each side."""
    only_a, only_b = set(la) - set(lb), set(lb) - set(la)
    if len(only_a) == 1 and len(only_b) == 1:
        (sa,), (sb,) = only_a, only_b
        la = dict(la)
        la[sb] = la.pop(sa)
    return la, lb


def layers_of(r: Report) -> dict[str, dict[int, dict[str, Tensor]]]:
    """stack → layer → the name inside the layer (``layer_suffix``) → tensor."""
    out: dict[str, dict[int, dict[str, Tensor]]] = defaultdict(lambda: defaultdict(dict))
    cut: dict[tuple[str, int], tuple[int, dict[str, Tensor]]] = {}  # where each layer's names start, its dict
    for t in r.tensors:
        (name, *_), (_, _, stack, layer, _) = t
        if stack is not None and layer is not None:
            at = cut.get((stack, layer))
            if at is None:
                at = cut[(stack, layer)] = (len(stack) + len(str(layer)) + 2, out[stack][layer])
            at[1][name[at[0]:]] = t
    return out


EXPERT_NUMBER: Final = re.compile(r"\.experts\.\d+\.")


def layer_pattern(local: str) -> str:
    """A name inside a layer with its expert number stood for by E (the experts of a layer count once)."""
    return str(EXPERT_NUMBER.sub(".experts.E.", local))



def align_formats(a: Checkpoint, b: Checkpoint) -> tuple[Checkpoint, Checkpoint]:
    """A GGUF against a safetensors (or pickle) checkpoint: name the latter's tensors as llama.cpp
    does, so that the same model in two formats aligns tensor by tensor."""
    def is_gguf(c: Checkpoint) -> bool:
        return bool(c.headers) and all(h.format == "gguf" for h in c.headers)

    if is_gguf(a) == is_gguf(b):
        return a, b

    g, other = (a, b) if is_gguf(a) else (b, a)
    arch = (g.config or {}).get("model_type")
    if not isinstance(arch, str):
        return a, b
    renamed = with_gguf_names(other, arch)
    return (a, renamed) if is_gguf(a) else (renamed, b)
