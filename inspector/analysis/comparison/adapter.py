"""A PEFT adapter against its base model: what the adapter adds, module by module, exactly.

An adapter folder holds ``adapter_config.json`` (PEFT's: ``peft_type``, rank ``r``, ``lora_alpha``,
``target_modules``, ``base_model_name_or_path``, ``modules_to_save``) and ``adapter_model.safetensors``,
whose names are the base model's module names under PEFT's ``base_model.model.`` prefix:
``…q_proj.lora_A.weight`` [r, in] and ``…q_proj.lora_B.weight`` [out, r] for a LoRA pair (so
r × (in + out) parameters per adapted matrix), ``lora_embedding_A``/``_B`` for an embedding,
``lora_magnitude_vector`` for DoRA, and whole copies of ``modules_to_save``.

Each adapted module is found in the base (by name, and by the base's weight shape): the adapter's
``in`` and ``out`` must be that weight's (transposed for Conv1D bases: PEFT's ``fan_in_fan_out``);
a module the base lacks, or whose shape disagrees, is a problem, said by name.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

from inspector.analysis.facts.peft import is_frozen_copy, targets
from inspector.analysis.facts.report import Report
from inspector.analysis.facts.roles import classify
from inspector.model import ADAPTER_CONFIG

PEFT_PREFIX: Final = "base_model.model."
_LORA = re.compile(r"^(?P<module>.+)\.(?P<part>lora_A|lora_B|lora_embedding_A|lora_embedding_B|lora_magnitude_vector)"
                   r"(?:\.[A-Za-z0-9_]+)?(?:\.weight)?$")


@dataclass(frozen=True, slots=True)
class AdapterModule:
    """One adapted module, over every layer that adapts it."""

    module: str  # within the layer: "self_attn.q_proj" (or the full name outside the layers)
    layers: int  # how many instances (layers) carry it
    rank: int
    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    parameters: int  # over all instances, magnitude vectors included
    base_shape: tuple[int, ...] | None  # the base weight's shape, None where the base lacks it

    @property
    def formula(self) -> str:
        """Per instance: r × (in + out) for a LoRA pair."""
        extra = self.parameters // self.layers - math.prod(self.shape_a) - math.prod(self.shape_b)
        core = f"{self.rank:,} × ({self.shape_a[-1]:,} + {self.shape_b[0]:,})"
        return core + (f" + {extra:,}" if extra else "")


class AdapterProblem(NamedTuple):
    """Where an adapter does not match its base, as peft's load would fail on it: ``shapes`` (a module
    the base lacks, a shape that differs: most likely the wrong base) or ``params`` (an incomplete
    pair, ranks that disagree)."""

    gate: Literal["shapes", "params"]
    text: str


@dataclass(frozen=True, slots=True)
class AdapterDiff:
    base: Report
    adapter: Report
    peft_type: str
    rank: int | None
    alpha: float | None
    targets: tuple[str, ...]
    base_model: str | None
    modules: tuple[AdapterModule, ...]
    other: tuple[tuple[str, int], ...]  # adapter tensors that are no LoRA pair (modules_to_save): name, elements
    problems: tuple[AdapterProblem, ...]
    #: frozen copies of base layers saved beside the factors (``…embed_tokens.base_layer.weight``): name, elements
    frozen: tuple[tuple[str, int], ...] = ()

    @property
    def parameters(self) -> int:
        """Every parameter element the adapter's files hold."""
        return self.adapter.summary.parameters

    @property
    def trainable(self) -> int:
        """What the adapter trains: its elements less the frozen copies of base layers (peft's
        ``get_nb_trainable_parameters``)."""
        return self.parameters - sum(n for _, n in self.frozen)

    @property
    def share(self) -> float:
        """The adapter's parameters as a fraction of the base's."""
        return self.parameters / self.base.summary.parameters if self.base.summary.parameters else 0.0


def adapter_config(report: Report) -> Mapping[str, object] | None:
    """The PEFT adapter config of a checkpoint, if it is an adapter."""
    doc = report.checkpoint.side.json.get(ADAPTER_CONFIG)
    return doc if isinstance(doc, Mapping) else None


@dataclass(slots=True)
class _Group:
    """What the adapter holds for one module of the base (all its layers together)."""

    layers: set[int | None] = field(default_factory=set)
    a: tuple[int, ...] | None = None
    b: tuple[int, ...] | None = None
    n: int = 0
    base: tuple[int, ...] | None = None
    missing: int = 0
    embedding: bool = False


def _modules(groups: dict[str, _Group], conv1d: bool, problems: list[AdapterProblem]) -> list[AdapterModule]:
    """Each adapted module from its lora_A/lora_B pair, checked against the base weight it adapts (a problem for
    each pair that is incomplete, of two ranks, or of the wrong shape)."""
    modules = []
    for local, g in groups.items():
        a, b = g.a, g.b
        if g.missing:
            problems.append(AdapterProblem("shapes", f"{local}: the base has no such weight ({g.missing} adapter "
                                           "tensors without one)"))
        if a is None or b is None or len(a) != 2 or len(b) != 2:
            problems.append(AdapterProblem("params", f"{local}: not a complete lora_A/lora_B pair"))
            continue
        embedding = g.embedding
        rank = a[0]
        if b[1] != rank:
            problems.append(AdapterProblem("params", f"{local}: lora_A has rank {rank}, lora_B {b[1]}"))
        base_shape = g.base
        if base_shape is not None and len(base_shape) == 2:
            expected = {(b[0], a[1]), (a[1], b[0])} if conv1d else {(b[0], a[1])}
            if embedding:
                expected = {(a[1], b[0])}  # lora_embedding_A [r, vocab], _B [hidden, r]
            if tuple(base_shape) not in expected:
                problems.append(AdapterProblem("shapes", f"{local}: the adapter is [{b[0]:,} × {a[1]:,}], the base "
                                               f"weight [{base_shape[0]:,}, {base_shape[1]:,}]"))
        modules.append(AdapterModule(local, len(g.layers), rank, a, b, g.n, base_shape))
    return modules


def diff_adapter(base: Report, adapter: Report) -> AdapterDiff:
    config = adapter_config(adapter) or {}
    base_shapes = {t.info.name: t.info.shape for t in base.tensors}
    conv1d = bool(config.get("fan_in_fan_out"))
    groups: dict[str, _Group] = defaultdict(_Group)
    other: list[tuple[str, int]] = []
    frozen: list[tuple[str, int]] = []
    problems: list[AdapterProblem] = []
    for t in adapter.tensors:
        name = t.info.name.removeprefix(PEFT_PREFIX)
        if is_frozen_copy(name):
            frozen.append((name, t.info.numel))
            continue
        m = _LORA.match(name)
        if m is None:
            other.append((name, t.info.numel))
            continue
        module, part = m.group("module"), m.group("part")
        weight = module + ".weight"
        place = classify(weight)
        local = module
        if place.stack is not None and place.layer is not None:
            local = module.removeprefix(f"{place.stack}.{place.layer}.")
        g = groups[local]
        g.layers.add(place.layer)
        g.n += t.info.numel
        g.embedding = g.embedding or part.startswith("lora_embedding")
        if part in ("lora_A", "lora_embedding_A"):
            g.a = t.info.shape
        elif part in ("lora_B", "lora_embedding_B"):
            g.b = t.info.shape
        found = base_shapes.get(weight)
        if found is None:
            found = next((s for n, s in base_shapes.items() if n.endswith("." + weight) or weight.endswith("." + n)),
                         None)
        if found is None:
            g.missing += 1
        else:
            g.base = found
    modules = _modules(groups, conv1d, problems)
    modules.sort(key=lambda m: m.module)
    rank_cfg, alpha = config.get("r"), config.get("lora_alpha")
    if isinstance(rank_cfg, int) and not config.get("rank_pattern"):
        odd = sorted({m.rank for m in modules if m.rank != rank_cfg})
        if odd:
            problems.append(AdapterProblem("params", f"adapter_config.json says r={rank_cfg}, the tensors have rank "
                                                     f"{', '.join(map(str, odd))}"))
    base_model = config.get("base_model_name_or_path")
    return AdapterDiff(
        base=base, adapter=adapter,
        peft_type=str(config.get("peft_type") or "unknown"),
        rank=rank_cfg if isinstance(rank_cfg, int) else None,
        alpha=float(alpha) if isinstance(alpha, int | float) and not isinstance(alpha, bool) else None,
        targets=targets(config),
        base_model=base_model if isinstance(base_model, str) else None,
        modules=tuple(modules),
        other=tuple(other),
        problems=tuple(dict.fromkeys(problems)),
        frozen=tuple(frozen),
    )



def adapter_gates_hit(result: AdapterDiff, gates: list[str]) -> list[str]:
    """The ``--fail-if`` gates an adapter trips against its base. An adapter always adds its own
    tensors; what a gate catches, as for a model diff, is where it does not match the base: a module
    the base lacks or whose shape differs (shapes), a rank the tensors and config disagree on or an
    incomplete pair (params), any of these (any). An adapter in another dtype than the base is normal
    (LoRA weights in F32 on a BF16 base) and trips nothing."""
    kinds = {p.gate for p in result.problems}
    triggered = {"params": "params" in kinds, "shapes": "shapes" in kinds, "any": bool(kinds), "dtypes": False,
                 "values": False}
    return [g for g in gates if triggered[g]]
