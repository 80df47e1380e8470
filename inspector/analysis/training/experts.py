"""A mixture of experts as the libraries hold it in memory, not as its files store it: what ``train`` adapts and
quantises is what peft and bitsandbytes see once transformers has loaded the model.

transformers 5 loads the experts of these families fused, whatever their files hold (per-expert ``w1``/``w2``/
``w3`` or ``gate_proj``/``up_proj``/``down_proj``): one ``experts.gate_up_proj`` parameter [E, 2I, H] and one
``experts.down_proj`` [E, H, I] a layer, and the router a module of its own (``…TopKRouter``, its ``gate.weight``
a bare parameter). None of them is an ``nn.Linear`` then, so:

* **bitsandbytes** (``Linear4bit`` replaces ``nn.Linear`` only) leaves the experts and the router in 16-bit;
* **peft** 0.21 reaches them only through its conversion of the LoRA config
  (``utils/transformers_weight_conversion.py``, ``_convert_peft_config_moe``), for the model types whose
  weights convert by the ``mixtral`` or ``qwen2_moe`` pattern (``_MODEL_TO_CONVERSION_PATTERN``, with ``mixtral``
  added by peft): a target named as the file names it (``w1``/``w3``, ``gate_proj``/``up_proj`` →
  ``gate_up_proj``; ``w2``/``down_proj`` → ``down_proj``; ``gate`` → ``gate.weight``) becomes a target
  *parameter*, wrapped by ``lora.ParamWrapper``: lora_A [r·E, in] and lora_B [out, r·E], at rank 2r for
  ``gate_up_proj`` (the two fused targets, ``rank_pattern``); and it leaves the target
  *modules*, so a dense layer's or a shared expert's ``gate_proj`` of the same name is adapted no more.
  ``all-linear`` resolves to every linear leaf name plus those names first. A family fused but not converted
  (``qwen2_moe`` itself) has no LoRA on its experts or router at all.

The versions modelled: transformers 5.24, peft 0.21.2 (tests build each family with them and count). ``--experts
separate`` models transformers 4.x, which kept every expert an ``nn.Linear``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from inspector.analysis.facts.stats import Tensor

Layout = Literal["fused", "separate"]
LAYOUTS: Final[tuple[Layout, ...]] = ("fused", "separate")
VERSIONS: Final = "transformers 5.24, peft 0.21.2"

#: transformers 5.24 ``conversion_mapping._MODEL_TO_CONVERSION_PATTERN``: the model types whose experts load fused,
#: by the pattern that fuses them (the patterns' own types, mixtral and qwen2_moe, too). A test holds this table to
#: transformers' own.
PATTERN: Final[Mapping[str, str]] = {
    "mixtral": "mixtral", "minimax": "mixtral", "minimax_m2": "mixtral",
    **{t: "qwen2_moe" for t in (
        "qwen2_moe", "Dots3NoteTextModel", "afmoe", "deepseek_v2", "deepseek_v3", "deepseek_v32", "dots1",
        "ernie4_5_moe", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa", "glm4v_moe", "longcat_flash", "solar_open",
        "mellum", "qwen3_moe", "beam", "qwen3_omni_moe", "qwen3_omni_moe_thinker", "qwen3_omni_moe_text",
        "qwen3_next", "hunyuan_v1_moe", "flex_olmo", "olmoe", "sarvam_mla", "exaone_moe", "cohere2_moe",
        "UnlimitedOcrTextModel")},
}
#: the types peft's conversion reaches (its copy of the table, ``mixtral`` added): every fused type but qwen2_moe,
#: which is a pattern of transformers' and no key of the table
PEFT_CONVERTS: Final = frozenset(t for t in PATTERN if t != "qwen2_moe")
#: peft's ``_MOE_TARGET_MODULE_MAPPING``: a file's module name → the fused parameter it becomes
TARGETS: Final[Mapping[str, Mapping[str, str]]] = {
    "mixtral": {"gate": "router", "w1": "gate_up", "w3": "gate_up", "w2": "down"},
    "qwen2_moe": {"gate": "router", "gate_proj": "gate_up", "up_proj": "gate_up", "down_proj": "down"},
}
#: peft's ``_MOE_FUSED_TARGETS``: the names fused into gate_up, all of which must be targeted together
FUSED_PAIR: Final[Mapping[str, tuple[str, str]]] = {"mixtral": ("w1", "w3"), "qwen2_moe": ("gate_proj", "up_proj")}


@dataclass(frozen=True, slots=True)
class MoeLayer:
    """One layer's experts as transformers 5 holds them: E experts of width I over hidden H, and its router."""

    layer: int | None
    experts: int
    hidden: int
    width: int
    router: tuple[int, int] | None  # [E, H]
    names: frozenset[str]  # the file's tensors these stand for (per-expert linears, the router)


def fused(model_type: str | None, layout: Layout) -> bool:
    """Whether this model's experts are fused in memory (transformers 5, ``--experts fused``)."""
    return layout == "fused" and model_type in PATTERN


def separate(layout: Layout) -> bool:
    """Experts one ``nn.Linear`` each, as transformers 4.x held them (``--experts separate``)."""
    return layout == "separate"


def moe_layers(tensors: Iterable[Tensor]) -> list[MoeLayer]:
    """The MoE layers of a checkpoint from its expert tensors (per-expert 2-D linears, or fused 3-D
    parameters) and routers, by layer."""
    by_layer: dict[tuple[str | None, int | None], list[Tensor]] = defaultdict(list)
    for t in tensors:
        role = t.place.role
        if t.place.kind == "parameter" and (role.startswith("moe.expert") or role == "moe.router"):
            by_layer[(t.place.stack, t.place.layer)].append(t)
    out = []
    for (_, layer), members in by_layer.items():
        experts = {t.place.expert for t in members if t.place.expert is not None}
        down = [t for t in members if t.place.role == "moe.expert.down"]
        if not down:
            continue
        shape = down[0].info.shape
        if len(shape) == 3:  # fused in the file already: down_proj [E, H, I]
            n, hidden, width = shape
        elif len(shape) == 2 and experts:
            n, (hidden, width) = len(experts), shape
        else:
            continue
        # the router scores every expert: [E, H] (a shared expert's gate, [1, H], stays an nn.Linear)
        router = next((t for t in members if t.place.role == "moe.router" and t.info.shape == (n, hidden)), None)
        names = {t.info.name for t in members if t.place.role.startswith("moe.expert")}
        out.append(MoeLayer(layer, n, hidden, width, _pair(router.info.shape) if router is not None else None,
                            frozenset(names | ({router.info.name} if router is not None else set()))))
    return out


def _pair(shape: tuple[int, ...]) -> tuple[int, int]:
    return shape[0], shape[1]


@dataclass(frozen=True, slots=True)
class Wrapped:
    """A parameter peft wraps (``lora.ParamWrapper``): lora_A [rank·E, in], lora_B [out, rank·E]."""

    module: str
    role: str
    out: int
    inp: int
    experts: int
    fused: int  # targets fused into it: its rank is fused × r (peft's rank_pattern)

    def factors(self, rank: int) -> tuple[tuple[int, int], tuple[int, int]]:
        r = rank * self.fused * self.experts
        return (r, self.inp), (self.out, r)

    def parameters(self, rank: int) -> int:
        a, b = self.factors(rank)
        return a[0] * a[1] + b[0] * b[1]


def wrapped(model_type: str, layers: Iterable[MoeLayer], targets: Iterable[str]) -> list[Wrapped]:
    """The fused parameters peft adapts for these targets (file names, as peft's conversion reads them)."""
    mapping = TARGETS[PATTERN[model_type]]
    wanted = {mapping[t] for t in targets if t in mapping}
    out = []
    for m in layers:
        where = f"layer {m.layer}" if m.layer is not None else "experts"
        if "gate_up" in wanted:
            out.append(Wrapped(f"{where}.experts.gate_up_proj", "moe.expert.gate_up", 2 * m.width, m.hidden,
                               m.experts, 2))
        if "down" in wanted:
            out.append(Wrapped(f"{where}.experts.down_proj", "moe.expert.down", m.hidden, m.width, m.experts, 1))
        if "router" in wanted and m.router is not None:
            out.append(Wrapped(f"{where}.gate.weight", "moe.router", m.router[0], m.router[1], 1, 1))
    return out


def unpaired(model_type: str, targets: Iterable[str]) -> str | None:
    """peft's refusal where one of a fused pair is targeted without the other, in its words; else None."""
    pair = FUSED_PAIR[PATTERN[model_type]]
    named = set(targets) & set(pair)
    if len(named) == 1:
        missing = (set(pair) - named).pop()
        return (f"peft cannot convert target {named.pop()} without also targeting {missing}: they are fused into "
                "gate_up_proj")
    return None
