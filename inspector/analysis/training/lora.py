"""What LoRA and QLoRA adapt and quantise, over the model as transformers loads it: the linear layers peft's
``target_modules`` selects (``all-linear``: every linear layer but the output layer), a fused MoE's wrapped
parameters (``experts``), the parts ``--freeze`` keeps from training, and bitsandbytes' NF4 bytes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from inspector.analysis.facts.stats import Tensor
from inspector.analysis.training.experts import (
    PATTERN,
    PEFT_CONVERTS,
    TARGETS,
    Layout,
    Wrapped,
    fused,
    moe_layers,
    unpaired,
    wrapped,
)
from inspector.errors import UsageError

# --- what LoRA adapts ------------------------------------------------------------------------------

#: roles whose 2-D weights are not nn.Linear (embeddings are nn.Embedding; convolutions are not 2-D)
_NOT_LINEAR: Final = frozenset({"embedding", "position_embedding", "token_type_embedding", "cls_token",
                                "patch_embedding", "conv_stem", "norm", "buffer"})
_EMBEDDINGS: Final = frozenset({"embedding", "position_embedding", "token_type_embedding"})
#: modules that are nn.Embedding though their role is another's (T5's relative position table, attention's)
_EMBEDDING_MODULES: Final = ("relative_attention_bias",)


@dataclass(frozen=True, slots=True)
class Adapted:
    """One module LoRA adapts: its name, role and shape (Linear [out, in]; Embedding [vocab, hidden])."""

    module: str
    role: str
    shape: tuple[int, int]
    embedding: bool

    def parameters(self, rank: int) -> int:
        """r × (in + out) for a linear layer (A [r, in], B [out, r]); r × (vocab + hidden) for an
        embedding (lora_embedding_A [r, vocab], _B [hidden, r]): the same sum of the two dimensions."""
        return rank * (self.shape[0] + self.shape[1])

    def factors(self, rank: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The two tensors the optimizer updates: lora_A [r, in], lora_B [out, r] of a linear layer [out, in];
        lora_embedding_A [r, vocabulary], _B [hidden, r] of an embedding."""
        if self.embedding:
            return (rank, self.shape[0]), (self.shape[1], rank)
        return (rank, self.shape[1]), (self.shape[0], rank)


def linear_modules(tensors: Iterable[Tensor]) -> list[tuple[str, Tensor]]:
    """The linear layers of a checkpoint: 2-D ``.weight`` parameters of a role that is no embedding,
    norm or convolution (fused 3-D experts are parameters, not linear layers: peft cannot target them), and
    no embedding inside a tower either (a vision tower's ``position_embedding`` is an ``nn.Embedding``)."""
    return [(t.info.name[: -len(".weight")], t) for t in tensors
            if t.place.kind == "parameter" and t.info.name.endswith(".weight") and len(t.info.shape) == 2
            and t.place.role not in _NOT_LINEAR and not t.info.name[: -len(".weight")].endswith(_EMBEDDING_MODULES)
            and "embed" not in t.info.name[: -len(".weight")].rsplit(".", 1)[-1]]


def in_memory_linears(tensors: list[Tensor], model_type: str | None, layout: Layout) -> list[tuple[str, Tensor]]:
    """The ``nn.Linear`` layers once transformers has loaded the model: the files' linear layers, less the experts
    and routers transformers 5 fuses (``experts.fused``): what bitsandbytes quantises and peft's modules reach."""
    if not fused(model_type, layout):
        return linear_modules(tensors)
    hidden = {name for m in moe_layers(tensors) for name in m.names}
    return [(m, t) for m, t in linear_modules(tensors) if t.info.name not in hidden]


def adapted_modules(tensors: list[Tensor], targets: tuple[str, ...], model_type: str | None = None,
                    layout: Layout = "fused") -> list[Adapted | Wrapped]:
    """The modules peft's ``target_modules`` selects: ``all-linear`` (every linear layer but the output
    layer, peft's ``_maybe_include_all_linear_layers``), or names matched as peft matches them (the
    module's name equals the key or ends with ``.`` + key), over the model as transformers loads it: a fused
    MoE's experts and router are no linear layers, and for the families peft converts its expert and router
    names become wrapped parameters (``experts.wrapped``). A target that matches nothing is a usage error
    naming the nearest module names."""
    linears = in_memory_linears(tensors, model_type, layout)
    if fused(model_type, layout) and model_type in PEFT_CONVERTS:
        assert model_type is not None
        return _converted(tensors, linears, targets, model_type)
    if targets == ("all-linear",):
        return [Adapted(m, t.place.role, _pair(t.info.shape), False) for m, t in linears if t.place.role != "lm_head"]
    embeddings = [(t.info.name[: -len(".weight")], t) for t in tensors if t.place.kind == "parameter"
                  and t.place.role in _EMBEDDINGS and t.info.name.endswith(".weight") and len(t.info.shape) == 2]
    out: list[Adapted] = []
    for key in targets:
        found = [Adapted(m, t.place.role, _pair(t.info.shape), False) for m, t in linears if _matches(m, key)]
        found += [Adapted(m, t.place.role, _pair(t.info.shape), True) for m, t in embeddings if _matches(m, key)]
        if not found:
            leaves = sorted({m.rsplit(".", 1)[-1] for m, _ in linears + embeddings})
            near = difflib.get_close_matches(key, leaves, n=5, cutoff=0.4) or leaves[:8]
            raise UsageError(f"⟨targets⟩: {key!r} matches no linear layer or embedding of this model",
                             hint="its modules include " + ", ".join(near))
        out += found
    unique = {a.module: a for a in out}
    return list(unique.values())


#: the parts ``--freeze`` names by role: a VLM's towers and projector
FREEZABLE: Final = ("vision", "audio", "projector")


def frozen(tensors: Iterable[Tensor], names: Sequence[str]) -> frozenset[str]:
    """The parameters ``--freeze`` keeps from training: those of a role it names (``FREEZABLE``), or under a module
    it names (a name equal to the tensor's module path, or a prefix of it ending at a dot). A name that matches no
    parameter is a usage error naming the roles there are."""
    params = [t for t in tensors if t.place.kind == "parameter"]
    out: set[str] = set()
    for name in names:
        hit = {t.info.name for t in params if t.place.role == name or t.info.name.startswith(name + ".")}
        if not hit:
            roles = sorted({t.place.role for t in params if t.place.role in FREEZABLE})
            raise UsageError(f"⟨freeze⟩: {name!r} names no part of this model",
                             hint=("its towers: " + ", ".join(roles)) if roles else
                             "a module path, as the tensor names start (model.embed_tokens)")
        out |= hit
    return frozenset(out)


def _converted(tensors: list[Tensor], linears: list[tuple[str, Tensor]], targets: tuple[str, ...],
               model_type: str) -> list[Adapted | Wrapped]:
    """peft's conversion of the LoRA config for a fused MoE (``experts``): ``all-linear`` is every linear leaf
    name (the output layer's aside) and every name its mapping knows; a name the mapping knows targets the fused
    parameter and no module of that name; the others target modules as usual."""
    mapping = TARGETS[PATTERN[model_type]]
    if targets == ("all-linear",):
        leaves = {m.rsplit(".", 1)[-1] for m, t in linears if t.place.role != "lm_head"} | set(mapping)
    else:
        leaves = set(targets)
        refused = unpaired(model_type, leaves)
        if refused is not None:
            raise UsageError(f"⟨targets⟩: {refused}", hint="name both, or neither")
    modules = leaves - set(mapping)
    out: list[Adapted | Wrapped] = [Adapted(m, t.place.role, _pair(t.info.shape), False) for m, t in linears
                                    if any(_matches(m, key) for key in modules)]
    out += wrapped(model_type, moe_layers(tensors), leaves & set(mapping))
    if targets != ("all-linear",):
        for key in modules:
            if not any(_matches(m, key) for m, _ in linears):
                leaves_here = sorted({m.rsplit(".", 1)[-1] for m, _ in linears} | set(mapping))
                near = difflib.get_close_matches(key, leaves_here, n=5, cutoff=0.4) or leaves_here[:8]
                raise UsageError(f"⟨targets⟩: {key!r} matches no linear layer of this model as transformers loads "
                                 "it", hint="its modules include " + ", ".join(near))
    return out


def _matches(module: str, key: str) -> bool:
    return module == key or module.endswith("." + key)


def _pair(shape: tuple[int, ...]) -> tuple[int, int]:
    return shape[0], shape[1]


# --- QLoRA's frozen weights --------------------------------------------------------------------------

NF4_BLOCK: Final = 64
NF4_BLOCK2: Final = 256
NF4_SOURCE: Final = ("bitsandbytes functional.quantize_4bit (quant_type nf4, blocksize 64, compress_statistics: "
                     "absmax − its mean quantised blockwise in blocks of 256), as transformers' "
                     "BitsAndBytesConfig(load_in_4bit, bnb_4bit_use_double_quant) stores every linear layer but "
                     "the output layer")


def nf4_bytes(numel: int) -> int:
    """Bytes of one linear weight in bitsandbytes' NF4 with double quantisation: two 4-bit values a
    byte; a uint8 scale per block of 64; a float32 absmax per 256 of those blocks; the float32 offset
    of the scales, the 16-entry float32 NF4 code, and the nested quantisation's own 256-entry float32 map
    (``quantize_blockwise``'s dynamic code, one a layer: measured after loading with bitsandbytes 0.50)."""
    blocks = -(-numel // NF4_BLOCK)
    return -(-numel // 2) + blocks + 4 * -(-blocks // NF4_BLOCK2) + 4 + 16 * 4 + 256 * 4
