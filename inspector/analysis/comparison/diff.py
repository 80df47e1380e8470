"""Compare two checkpoints and explain the parameter gap, cause by cause, exactly.

Alignment. Tensors inside the repeated block are paired by their name within the layer
(``self_attn.k_proj.weight``), layer i of B with layer i of A; a layer B has beyond A's count is
paired with A's last layer (its template). Outside the block, tensors pair by name, then by role.
Across families the pairing goes through the normalised roles: two models' main layer stacks
(``h`` and ``model.layers``) are aligned; GPT-2's Conv1D weights, stored [in, out], are read as
[out, in] like every nn.Linear; a fused projection (``c_attn``, ``qkv_proj``, ``query_key_value``,
``gate_up_proj``) facing separate ones is split into its parts by the config's widths (q: heads ×
head_dim, k and v: KV heads × head_dim; gate and up: the MLP width each); tensors left over pair by
role and leaf (a lone ``attn.o`` weight with the other's), and norms pair in name order (``ln_1``
with ``input_layernorm``).

Attribution (the stated, deterministic rule). Each dimension of a paired tensor is matched to the
config quantity that explains its change: the quantity whose value in A equals the dimension in A
and whose value in B equals it in B (vocabulary, hidden size, MLP width, q width = heads ×
head_dim, KV width = KV heads × head_dim, …). When several dimensions change for different causes
(hidden size and vocabulary both grow), the dimensions are moved from A's size to B's one cause at
a time, in the order of ``CAUSE_ORDER``; each step's increase in elements is that cause's. The
steps telescope, so the causes add up to B − A exactly. Then:

* extra (or missing) layers: ``layer count``, at the template layer's size in A;
* tensors only one side has: learned ``positions`` (GPT-2's ``wpe`` against rotary), ``gated MLP``
  (the third matrix of a SwiGLU MLP), ``experts`` (a dense MLP replaced by experts, experts added),
  the MoE ``router``, ``tied embeddings`` (an lm_head dropped or added), ``biases``, ``norms`` (a
  LayerNorm's bias against an RMSNorm, a norm more or less per layer, q/k norms);
* anything else: the named ``residual``, never hidden.

Buffers are not parameters and are reported beside the causes, as are bytes and dtypes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import TYPE_CHECKING, Final, Literal

from inspector import repos
from inspector.analysis.comparison.explain import Cause, Item, explain, shape_words
from inspector.analysis.facts.config import ModelConfig
from inspector.analysis.facts.families import LLAMA_LIKE
from inspector.analysis.facts.report import Report, build_report
from inspector.analysis.facts.roles import ROLE_ORDER, role_group
from inspector.analysis.facts.stats import Tensor, layer_suffix
from inspector.errors import InvalidCheckpointError, UsageError
from inspector.model import Checkpoint, natural_key

if TYPE_CHECKING:
    from inspector.analysis.comparison.values import ValueDiff

#: how a tensor differs between the two sides
ChangeKind = Literal["added", "removed", "reshaped", "retyped"]


@dataclass(frozen=True, slots=True)
class Change:
    kind: ChangeKind
    role: str
    name: str  # collapsed over layers: "model.layers.{0–31}.mlp.gate_proj.weight"
    count: int
    shape_a: tuple[int, ...] | None
    shape_b: tuple[int, ...] | None
    dtype_a: str | None
    dtype_b: str | None


@dataclass(frozen=True, slots=True)
class RoleDelta:
    role: str
    a: int
    b: int


@dataclass(frozen=True, slots=True)
class Diff:
    a: Report
    b: Report
    same_layout: bool
    causes: tuple[Cause, ...]
    changes: tuple[Change, ...]
    roles: tuple[RoleDelta, ...]
    buffers: tuple[int, int]
    bytes: tuple[int, int]
    dtypes: tuple[tuple[str, int, int], ...]  # dtype, elements in A, elements in B
    active: tuple[int | None, int | None]
    notes: tuple[str, ...]

    @property
    def parameters(self) -> tuple[int, int]:
        return self.a.summary.parameters, self.b.summary.parameters

    @property
    def delta(self) -> int:
        return self.b.summary.parameters - self.a.summary.parameters

    def bytes_by_dtype(self) -> tuple[tuple[str, int, int], ...]:
        """ΔBytes split by dtype: (dtype, Δelements, Δbytes); the Δbytes add up to B − A exactly."""
        # the headers' own bytes per dtype: exact for GGML block types too (Q4_K is 4.5 bits)
        bytes_a = {d.dtype: d.bytes for d in self.a.summary.by_dtype}
        bytes_b = {d.dtype: d.bytes for d in self.b.summary.by_dtype}
        rows = []
        for dtype, x, y in self.dtypes:
            if x != y or bytes_a.get(dtype, 0) != bytes_b.get(dtype, 0):
                rows.append((dtype, y - x, bytes_b.get(dtype, 0) - bytes_a.get(dtype, 0)))
        return tuple(rows)

    @property
    def identical(self) -> bool:
        return not self.changes and self.parameters[0] == self.parameters[1] \
            and self.buffers[0] == self.buffers[1] and self.bytes[0] == self.bytes[1]


# --- the diff ----------------------------------------------------------------------------------


_NAME_OF: Final = attrgetter("info.name")


def _one_name_one_tensor(r: Report) -> None:
    """A diff pairs tensors by name and sums each side's causes to its total: a name in two shards (no
    index to pick one; ``audit``'s tensor.duplicate) would be counted twice on one side and once in the
    pairs. Refused by name, as the audit reports it."""
    if len(set(map(_NAME_OF, r.tensors))) == len(r.tensors):  # every name once (in C): nothing to find
        return
    where: dict[str, str] = {}
    for t in r.tensors:
        first = where.setdefault(t.info.name, t.info.file)
        if first != t.info.file:
            raise InvalidCheckpointError(f"{r.checkpoint.label}: tensor {t.info.name!r} is in two files ({first} and "
                                         f"{t.info.file}); a diff pairs tensors by name",
                                         hint=f"inspect audit {r.checkpoint.label} lists every one")


def diff_reports(a: Report, b: Report) -> Diff:
    for side in {id(a): a, id(b): b}.values():  # (once where both sides are one report)
        _one_name_one_tensor(side)
    ca, cb = a.config, b.config
    same = _same_layout(a, b)
    roles = _role_deltas(a, b)
    changes = _changes(a, b)
    notes: list[str] = []
    # deferred: 19 ms at import (inspector.analysis.serving.estimate)
    from inspector.analysis.serving.estimate import no_tokens

    kind_a, kind_b = repos.kind_of(a.checkpoint), repos.kind_of(b.checkpoint)
    piped = (kind_a is not None and kind_a.separate, kind_b is not None and kind_b.separate)
    pipelines = all(piped)
    diffusion = not any(piped) and no_tokens(a) is not None and no_tokens(b) is not None
    causes = _component_causes(a, b, notes) if pipelines else _whole_causes(a, b) if any(piped) else \
        _role_causes(a, b) if diffusion else _explain_with_towers(a, b)
    if pipelines:
        words = f"{kind_a.described}s" if kind_a is kind_b and kind_a is not None else "repos of components"
        notes.insert(0, f"two {words}: explained component by component, each with its own config")
    elif any(piped):
        notes.append(_one_pipeline_note(a, b))
    elif diffusion:
        notes += _config_changes(a, b)
    elif not same:
        kinds = f"{ca.model_type or 'unknown'} vs {cb.model_type or 'unknown'}"
        notes.append(f"different layouts ({kinds}): tensors aligned through their roles; fused projections "
                     "split by the config's widths")
    rotary = (_partial_rotary(ca), _partial_rotary(cb))
    if rotary[0] != rotary[1]:
        notes.append(f"partial rotary {rotary[0]:g} → {rotary[1]:g} of each head: rotary embeddings have no "
                     "parameters, so it is no cause")
    if ca.vocab_size and cb.vocab_size and ca.vocab_size != cb.vocab_size \
            and (ca.vocab_size % 64 == 0) != (cb.vocab_size % 64 == 0):
        even, odd = (ca.vocab_size, cb.vocab_size) if ca.vocab_size % 64 == 0 else (cb.vocab_size, ca.vocab_size)
        notes.append(f"vocabulary {even:,} is a multiple of 64 (often padding past the tokenizer's tokens), "
                     f"{odd:,} is not")
    total = sum(c.delta for c in causes)
    assert total == b.summary.parameters - a.summary.parameters, "causes must sum to the difference"
    dt: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for d in a.summary.by_dtype:
        dt[d.dtype][0] = d.elements
    for d in b.summary.by_dtype:
        dt[d.dtype][1] = d.elements
    # deferred: 19 ms at import (inspector.analysis.serving.estimate)
    from inspector.analysis.serving.estimate import active_parameters

    return Diff(
        a=a, b=b, same_layout=same, causes=causes, changes=changes, roles=roles,
        buffers=(a.summary.buffer_elements, b.summary.buffer_elements),
        bytes=(a.summary.bytes, b.summary.bytes),
        dtypes=tuple((k, v[0], v[1]) for k, v in sorted(dt.items())),
        active=(active := active_parameters(a), active if b is a else active_parameters(b)),
        notes=tuple(notes),
    )


#: the roles of a stack that one model may have whole and the other not: a vision or audio tower and the
#: projector joining it to the language model (a text model → its VLM)
TOWER_ROLES: Final[tuple[str, ...]] = ("vision", "audio", "projector")


def _explain_with_towers(a: Report, b: Report) -> tuple[Cause, ...]:
    """A tower (vision, audio) or projector on one side only is a cause of its own, added or removed whole,
    each tensor its item (issue 41: a text model → its VLM left 71 % of the gap as residual); the rest of
    the two models is explained as two language models."""
    roles_a = {t.place.role for t in a.tensors if t.place.kind == "parameter"}
    roles_b = roles_a if b is a else {t.place.role for t in b.tensors if t.place.kind == "parameter"}
    alone = [r for r in TOWER_ROLES if (r in roles_a) != (r in roles_b)]
    if not alone:
        return explain(a, b)
    causes: list[Cause] = []
    for role in alone:
        added = role in roles_b
        side = b if added else a
        grouped: dict[str, list[Tensor]] = defaultdict(list)
        for x in side.tensors:
            if x.place.kind == "parameter" and x.place.role == role:
                grouped[_LAYER_NUMBER.sub(".N.", x.info.name)].append(x)
        sign = 1 if added else -1
        items = tuple(sorted((Item(name, len(members), f"{'added' if added else 'removed'} "
                                                        f"{shape_words(members[0].info.shape)}",
                                   sign * sum(m.info.numel for m in members))
                              for name, members in grouped.items()), key=lambda i: -abs(i.delta)))
        what = {"vision": "vision tower", "audio": "audio tower", "projector": "multimodal projector"}[role]
        total = sum(i.delta for i in items)
        causes.append(Cause(what, f"{what} {'added' if added else 'removed'} "
                                             f"({abs(total):,} parameters)", total, items))
    kept_a = replace(a, tensors=[x for x in a.tensors if x.place.role not in alone])
    kept_b = replace(b, tensors=[x for x in b.tensors if x.place.role not in alone])
    return (*explain(kept_a, kept_b), *causes)


_LAYER_NUMBER: Final = re.compile(r"\.\d+\.")


def _component_causes(a: Report, b: Report, notes: list[str]) -> tuple[Cause, ...]:
    """Two pipelines, component by component: a component on both sides is diffed as a model of its
    own (its config's causes, named ``component: …``, its notes added to ``notes``); one on one side
    only is added or removed whole."""
    sides = ({c.name: c.checkpoint for c in a.checkpoint.components if c.checkpoint is not None},
             {c.name: c.checkpoint for c in b.checkpoint.components if c.checkpoint is not None})
    causes: list[Cause] = []
    for name in sorted(set(sides[0]) | set(sides[1])):
        x, y = sides[0].get(name), sides[1].get(name)
        if x is not None and y is not None:
            sub = diff_reports(build_report(x), build_report(y))
            notes += [f"{name}: {note}" for note in sub.notes if sub.causes]
            causes += [Cause(f"{name}.{c.key}", f"{name}: {c.label}", c.delta,
                             tuple(Item(f"{name}.{i.tensor}", i.count, i.formula, i.delta) for i in c.items))
                       for c in sub.causes if c.delta or c.items]
        else:
            present = x if x is not None else y
            assert present is not None
            count = build_report(present).summary.parameters
            delta = count if x is None else -count
            causes.append(Cause(f"{name}.component", f"{name}: component {'added' if x is None else 'removed'}",
                                delta, (Item(name, 1, f"{'added' if x is None else 'removed'} {count:,} parameters",
                                             delta),)))
    return tuple(causes)


def _role_causes(a: Report, b: Report) -> tuple[Cause, ...]:
    """Two diffusers models (UNets, VAEs, DiT transformers): no language-model cause applies (no
    vocabulary, no layer stack of one shape), so the gap is explained block by block: each role's
    added, removed and reshaped tensors, exactly. The config keys that differ are the notes."""
    ta = {t.info.name: t for t in a.tensors if t.place.kind == "parameter"}
    tb = {t.info.name: t for t in b.tensors if t.place.kind == "parameter"}
    by_role: dict[str, list[Item]] = defaultdict(list)
    for name in sorted(ta.keys() | tb.keys(), key=natural_key):
        x, y = ta.get(name), tb.get(name)
        delta = (y.info.numel if y else 0) - (x.info.numel if x else 0)
        if x is not None and y is not None and x.info.shape == y.info.shape:
            continue
        formula = (f"added {list(y.info.shape)}" if x is None and y is not None else
                   f"removed {list(x.info.shape)}" if y is None and x is not None else
                   f"{list(x.info.shape)} → {list(y.info.shape)}" if x is not None and y is not None else "")
        role = (y if y is not None else x).place.role  # type: ignore[union-attr]
        by_role[role].append(Item(name, 1, formula, delta))
    causes = []
    for role, items in sorted(by_role.items(), key=lambda kv: role_group(kv[0])):
        delta = sum(i.delta for i in items)
        kinds = [(sum(i.formula.startswith(word) for i in items), word) for word in ("removed", "added")]
        kinds.append((len(items) - kinds[0][0] - kinds[1][0], "reshaped"))
        what = ", ".join(f"{count} {word}" for count, word in kinds if count)
        causes.append(Cause(f"role.{role}", f"{role}: tensors {what}", delta,
                            tuple(sorted(items, key=lambda i: -abs(i.delta)))))
    return tuple(causes)


def _config_changes(a: Report, b: Report) -> list[str]:
    """The config keys two diffusers models differ in (their own, not diffusers' ``_`` keys)."""
    ra, rb = a.checkpoint.config or {}, b.checkpoint.config or {}
    keys = sorted(k for k in ra.keys() | rb.keys() if not k.startswith("_") and ra.get(k) != rb.get(k))
    if not keys:
        return []
    shown = "; ".join(f"{k} {ra.get(k)!r} → {rb.get(k)!r}"[:160] for k in keys[:12])
    return [f"config changes: {shown}" + (f" … and {len(keys) - 12} more" if len(keys) > 12 else "") +
            "; the causes are each block's tensors"]


def _whole_causes(a: Report, b: Report) -> tuple[Cause, ...]:
    """A pipeline against one model: no layer of one is a layer of the other, so each side is taken
    whole (every component of the pipeline, the model as one part) and nothing is matched."""
    causes: list[Cause] = []
    for side, sign in ((a, -1), (b, 1)):
        verb = "removed" if sign < 0 else "added"
        if _separate(side):
            parts = [(c.name, build_report(c.checkpoint).summary.parameters) for c in side.checkpoint.components
                     if c.checkpoint is not None]
        else:
            parts = [("model", side.summary.parameters)]
        for name, count in parts:
            causes.append(Cause(f"{name}.component", f"{name}: {verb} whole", sign * count,
                                (Item(name, 1, f"{verb} {count:,} parameters", sign * count),)))
    return tuple(causes)


def _separate(report: Report) -> bool:
    """Whether a side is a repo whose components are models of their own (a diffusers pipeline)."""
    kind = repos.kind_of(report.checkpoint)
    return kind is not None and kind.separate


def _one_pipeline_note(a: Report, b: Report) -> str:
    pipe, model = (a, b) if _separate(a) else (b, a)
    kind = repos.kind_of(pipe.checkpoint)
    classes = set(model.config.architectures)
    match = next((c.name for c in pipe.checkpoint.components if c.class_name in classes and c.checkpoint), None)
    def spec(c: Checkpoint) -> str:  # what to type for it: a folder's path, else its label (repo id)
        return c.provenance.location if c.provenance.root else c.label

    hint = (f"; `inspect diff {spec(pipe.checkpoint)}/{match} {spec(model.checkpoint)}` compares its {match} "
            "with the model" if match else "; `inspect diff PIPELINE/COMPONENT MODEL` compares one component")
    words = kind.described if kind is not None else "repo of components"
    return (f"a {words} and one model: compared as wholes (each component and the model added or "
            "removed whole)" + hint)


def _partial_rotary(c: ModelConfig) -> float:
    value = c.raw.get("partial_rotary_factor", 1.0)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 1.0


def _same_layout(a: Report, b: Report) -> bool:
    ta, tb = a.config.model_type, b.config.model_type
    if ta and tb and (ta == tb or (ta in LLAMA_LIKE and tb in LLAMA_LIKE)):
        return True
    la = {layer_suffix(t) for t in a.tensors if t.place.layer == 0}
    lb = {layer_suffix(t) for t in b.tensors if t.place.layer == 0}
    return bool(la) and len(la & lb) >= 0.5 * max(len(la), len(lb))


def _role_deltas(a: Report, b: Report) -> tuple[RoleDelta, ...]:
    ra = {r.role: r.parameters for r in a.summary.by_role}
    rb = {r.role: r.parameters for r in b.summary.by_role}

    order = {r: i for i, r in enumerate(ROLE_ORDER)}
    keys = sorted(set(ra) | set(rb), key=lambda r: order.get(r, 99))
    return tuple(RoleDelta(r, ra.get(r, 0), rb.get(r, 0)) for r in keys if ra.get(r, 0) or rb.get(r, 0))


def _changes(a: Report, b: Report) -> tuple[Change, ...]:
    """Added, removed, reshaped and re-typed tensors, collapsed over layer runs."""
    if b is a:  # one report both sides: every tensor is itself
        return ()
    ta = {t.info.name: t for t in a.tensors}
    tb = {t.info.name: t for t in b.tensors}
    # (kind, role, name or stack, the name inside its layer or None, shapes, dtypes) → layers:
    # keyed on the parts, not on a written pattern, so a name that reads like one stays apart
    rows: dict[tuple[str, str, str, str | None, object, object, object, object], list[int | None]] = \
        defaultdict(list)

    def key(t: Tensor) -> tuple[str, str | None, int | None]:
        if t.place.stack is not None and t.place.layer is not None:
            return t.place.stack, layer_suffix(t), t.place.layer
        return t.info.name, None, None

    # the names both hold with the same shape and dtype first, in C (a tensor is a pair of records: its
    # shape and dtype compared as a pair; one object on both sides where one report is diffed with itself)
    same = {name for name, x in ta.items() if (y := tb.get(name)) is not None
            and (x is y or (x.info.shape == y.info.shape and x.info.dtype == y.info.dtype))}
    for name in (ta.keys() | tb.keys()) - same if len(same) < len(ta) or len(ta) != len(tb) else ():
        x, y = ta.get(name), tb.get(name)
        if x is not None and y is not None:
            if x.info.shape != y.info.shape:
                kind = "reshaped"
            elif x.info.dtype != y.info.dtype:
                kind = "retyped"
            else:
                continue
        else:
            kind = "added" if x is None else "removed"
        t = y if y is not None else x
        assert t is not None
        head, inside, layer = key(t)
        rows[(kind, t.place.role, head, inside,
              x.info.shape if x else None, y.info.shape if y else None,
              x.info.dtype if x else None, y.info.dtype if y else None)].append(layer)
    out = []
    for (kind, role, pattern, inside, sa, sb, da, db), layers in rows.items():
        if inside is not None:  # every entry is in a layer of the stack named by pattern
            numbers = sorted(i for i in layers if i is not None)
            span = f"{numbers[0]}–{numbers[-1]}" if len(numbers) == numbers[-1] - numbers[0] + 1 and len(numbers) > 1 \
                else ",".join(map(str, numbers)) if len(numbers) <= 6 else f"{len(numbers)} layers"
            pattern = f"{pattern}.{{{span}}}.{inside}" if len(numbers) > 1 else f"{pattern}.{numbers[0]}.{inside}"
        out.append(Change(kind, role, pattern, len(layers), sa, sb, da, db))  # type: ignore[arg-type]
    order = {"removed": 0, "added": 1, "reshaped": 2, "retyped": 3}
    out.sort(key=lambda c: (order[c.kind], role_group(c.role), natural_key(c.name)))
    return tuple(out)


#: the conditions ``--fail-if`` gates on
FAIL_IF: Final[tuple[str, ...]] = ("params", "dtypes", "shapes", "values", "any")


def parse_gates(text: str | None, *, values: bool = False) -> list[str]:
    """``--fail-if``'s comma-separated conditions, each one of ``FAIL_IF``; ``values`` (a tensor's sampled
    bytes changed) only where the values are read (``--values``)."""
    gates = [g.strip() for g in (text or "").split(",") if g.strip()]
    unknown = [g for g in gates if g not in FAIL_IF]
    if unknown:
        raise UsageError(f"⟨fail_if⟩: unknown condition {unknown[0]!r}", hint="use " + ", ".join(FAIL_IF))
    if "values" in gates and not values:
        raise UsageError("⟨fail_if⟩ values needs ⟨values⟩: the tensors' bytes are read only then",
                         hint="inspect diff A B --values --fail-if values")
    return gates


def gates_hit(result: Diff, gates: list[str], values: ValueDiff | None = None) -> list[str]:
    """The gates a model diff trips: its parameter count, a dtype, a tensor's presence or shape, and with
    ``values`` a tensor whose sampled bytes differ (``any`` then counts it too)."""
    changed = values is not None and values.count("changed") > 0
    triggered = {
        "values": changed,
        "params": result.delta != 0,
        "dtypes": any(c.kind == "retyped" or (c.dtype_a and c.dtype_b and c.dtype_a != c.dtype_b)
                      for c in result.changes) or {dt for dt, x, _ in result.dtypes if x} != {
                          dt for dt, _, y in result.dtypes if y},
        "shapes": any(c.kind in ("added", "removed", "reshaped") for c in result.changes),
        "any": not result.identical or changed,
    }
    return [g for g in gates if triggered[g]]
