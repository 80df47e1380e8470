"""``inspect lineage``'s answer: each candidate's relation to the model from the evidence ``lineage`` reads
and relates, the merge found across candidates, and the overall verdict (pure: ``api.lineage`` reads).

Order of evidence, each only where the one before did not decide: an adapter is checked against the
candidate as peft would load it (no value read); equal file hashes prove a re-upload (no tensor byte
read); too few tensors aligned is another architecture (no value read); then the sampled values,
tensor by tensor, and across candidates the blends of two of them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final

from inspector.analysis.checks.audit import Finding
from inspector.analysis.comparison.adapter import adapter_config, diff_adapter
from inspector.analysis.comparison.lineage import (
    DERIVED,
    Counts,
    Declared,
    Kind,
    Related,
    Relation,
    aligned,
    blend,
    count,
    fingerprint,
    layer_spans,
    ordered,
    packed,
    relate,
    structure,
    verdict_of,
)
from inspector.analysis.comparison.samples import Pick
from inspector.analysis.facts.report import Report
from inspector.model import Checkpoint

if TYPE_CHECKING:
    from inspector.analysis.comparison.samples import Values

#: a tensor's relations, best evidence first (of the row mappings tried, the best is kept)
_BEST: Final[tuple[Kind, ...]] = ("equal", "quantized", "changed", "constant", "unrelated", "incomparable")
#: the verdicts that are no relation, in the order the overall verdict prefers them
_APART: Final[tuple[Relation, ...]] = ("unrelated", "different-architecture", "unknown")


@dataclass(frozen=True, slots=True)
class Seen:
    """One candidate as ``api.lineage`` read it: its report (None where it could not be read, and why), where
    the model declares it (None: passed by the user), how many of the model's weight files its listing
    holds by hash (None where either side's hashes are unknown), and its sampled values by pick (one array a
    row mapping tried: a GGUF's q and k rows as stored and as llama.cpp reorders them)."""

    label: str
    report: Report | None
    declared: str | None = None
    problem: str | None = None
    files: tuple[int, int] | None = None
    samples: Mapping[int, tuple[Values, ...]] = field(default_factory=dict)
    #: what the listings' sha256 claimed where ``--exact`` did not take them alone (a side it could not hash): the
    #: values decide, and a claim of identical files the bytes contradict is named
    listed: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class TensorEvidence:
    name: str
    role: str
    layer: int | None
    kind: Kind
    why: str = ""
    correlation: float | None = None
    max_abs: float | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate's relation to the model, and the evidence counted."""

    label: str
    checkpoint: Checkpoint | None
    declared: str | None  # where the model declares it; None: passed by the user
    relation: Relation
    why: str
    files: tuple[int, int] | None  # (weight files found by hash, the model's weight files)
    aligned: int  # the model's tensors it holds by name and shape
    counts: Counts
    changed_roles: tuple[str, ...] = ()
    changed_layers: tuple[int, ...] = ()
    weight: float | None = None  # a merge's parent: its weight (the median over the blended tensors)
    fingerprint: str | None = None
    tensors: tuple[TensorEvidence, ...] = ()

    @property
    def layers(self) -> str:
        return layer_spans(self.changed_layers)


@dataclass(frozen=True, slots=True)
class Lineage:
    model: Report
    verdict: Relation
    base: str | None
    parents: tuple[str, ...]
    declared: Declared
    declared_matches: bool | None
    candidates: tuple[Candidate, ...]
    sampled: int  # the model's tensors sampled
    tensor_bytes_read: tuple[int, int]  # (the model's, every candidate's together)
    requests: int
    evidence: tuple[str, ...]
    fingerprint: str = ""


def assess(model: Report, picks: Sequence[Pick], values: Mapping[int, Values], seen: Sequence[Seen],
           declared: Declared, *, bounds: Mapping[int, Values] | None = None, read: tuple[int, int] = (0, 0),
           requests: int = 0) -> Lineage:
    """The answer from what was read: ``values`` the model's sampled values by pick number, ``bounds`` their own
    quantisation bounds where their source gives them (bitsandbytes' 4-bit weights)."""
    relations = [_relate_all(model, picks, values, s, bounds or {}) for s in seen]
    weights = _blends(model, picks, values, seen, relations)
    candidates = [_candidate(model, picks, s, rel) for s, rel in zip(seen, relations, strict=True)]
    parents = _parents(relations, candidates)
    if len(parents) >= 2:
        for i in parents:
            w = [x for x in weights.get(i, []) if x is not None]
            candidates[i] = _as_parent(candidates[i], statistics.median(w) if w else None, relations[i])
    verdict, base = _overall(candidates, parents)
    matches = _declared_matches(declared, candidates)
    out = Lineage(model, verdict, base, tuple(candidates[i].label for i in parents), declared, matches,
                  tuple(candidates), len(picks), read, requests, (), fingerprint(model))
    return _with_evidence(out)


def needs_values(model: Report, candidate: Report, files: tuple[int, int] | None) -> bool:
    """Whether this candidate is decided only by sampled values: not by the adapter check, its files'
    hashes, or too few tensors aligned (``_candidate`` decides those first, in that order)."""
    if adapter_config(model) is not None or (files is not None and files[1] and files[0] == files[1]):
        return False
    return structure(model, candidate).same


#: ``--fail-if``'s conditions: the model is unrelated to every candidate (or that is not known), it is not
#: identical to one, its declared base is not borne out
GATES: Final[tuple[str, ...]] = ("unrelated", "changed", "declared")


def gates_hit(lin: Lineage, gates: Sequence[str]) -> list[str]:
    """The conditions ``lin`` trips; each fails closed (a verdict not known trips ``unrelated`` and ``changed``)."""
    hit = {"unrelated": lin.verdict in _APART, "changed": lin.verdict != "identical",
           "declared": bool(lin.declared.bases) and lin.declared_matches is not True}
    return [g for g in gates if hit[g]]


def declared_findings(lin: Lineage) -> list[Finding]:
    """The audit's findings on the declared base (``audit --lineage``): ``lineage.declared-base`` where the
    evidence contradicts it, ``lineage.declared-unread`` where it could not be decided."""
    where = "; ".join(f"{b} ({w})" for b, w in lin.declared.bases)
    if lin.declared_matches is False:
        found = "; ".join(f"{c.label}: {c.relation}" for c in lin.candidates if c.declared)
        closer = f" (it is {lin.verdict} of {lin.base})" if lin.base else ""
        return [Finding("lineage.declared-base", "warning",
                        f"declares {where}, which the sampled values contradict: {found}{closer}")]
    if lin.declared_matches is None and lin.declared.bases:
        why = "; ".join(f"{c.label}: {c.why}" for c in lin.candidates if c.declared)
        return [Finding("lineage.declared-unread", "info", f"declares {where}; not decided: {why}")]
    return []


def _relate_all(model: Report, picks: Sequence[Pick], values: Mapping[int, Values], s: Seen,
                bounds: Mapping[int, Values]) -> dict[int, tuple[Related, int]]:
    """Each pick's best relation to this candidate, and which row mapping gave it."""
    if s.report is None:
        return {}
    pairs = dict(aligned(model, s.report))
    out: dict[int, tuple[Related, int]] = {}
    for k, pick in enumerate(picks):
        m = values.get(k)
        options = s.samples.get(k)
        info = model.tensors[pick.index].info
        other = pairs.get(pick.index)
        if other is None:
            continue
        if m is None or not options:
            out[k] = (Related("incomparable", 0, f"{info.dtype} and {other.dtype}: not read as numbers here"), 0)
            continue
        tried = [(relate(info.dtype, m, other.dtype, c, bounds.get(k)), j) for j, c in enumerate(options)]
        out[k] = min(tried, key=lambda x: _BEST.index(x[0].kind))
    return out


def _blends(model: Report, picks: Sequence[Pick], values: Mapping[int, Values], seen: Sequence[Seen],
            relations: list[dict[int, tuple[Related, int]]]) -> dict[int, list[float | None]]:
    """Across candidates: each pick equal to none of them fitted as a blend of two (in order of the
    candidates); both parents' relation for it becomes ``blended``. The weights found, by candidate."""
    weights: dict[int, list[float | None]] = {}
    if len(seen) < 2:
        return weights
    for k, pick in enumerate(picks):
        m = values.get(k)
        having = [i for i, rel in enumerate(relations) if k in rel and rel[k][0].kind in ("changed", "unrelated")]
        if m is None or len(having) < 2 or any(k in rel and rel[k][0].kind in ("equal", "quantized", "constant")
                                               for rel in relations):
            continue
        dtype = model.tensors[pick.index].info.dtype
        for x, i in enumerate(having):
            found = None
            for j in having[x + 1:]:
                a, b = seen[i].samples[k][relations[i][k][1]], seen[j].samples[k][relations[j][k][1]]
                w = blend(dtype, m, a, b)
                if w is not None:
                    found = (j, w)
                    break
            if found is not None:
                j, (wa, wb) = found
                for who, w_ in ((i, wa), (j, wb)):
                    old = relations[who][k][0]
                    relations[who][k] = (Related("blended", old.elements, f"w = {w_:.4g} in a blend of two candidates",
                                                 old.correlation, old.max_abs), relations[who][k][1])
                    weights.setdefault(who, []).append(w_)
                break
    return weights


def _candidate(model: Report, picks: Sequence[Pick], s: Seen, rel: dict[int, tuple[Related, int]]) -> Candidate:
    if s.report is None:
        return Candidate(s.label, None, s.declared, "unknown", s.problem or "it could not be read", None, 0, Counts())
    theirs = s.report
    fp = fingerprint(theirs)
    if adapter_config(model) is not None:
        return _adapter(model, s, fp)
    shape = structure(model, theirs)
    if s.files is not None and s.files[1] and s.files[0] == s.files[1]:
        return Candidate(s.label, theirs.checkpoint, s.declared, "identical",
                         f"every weight file's sha256 ({s.files[1]:,}) is one of its files'",
                         s.files, shape.aligned, Counts(), fingerprint=fp)
    if not shape.same:
        return Candidate(s.label, theirs.checkpoint, s.declared, "different-architecture",
                         f"{shape.aligned + shape.packed:,} of the model's {shape.counted:,} tensors are in it by "
                         "name and shape", s.files, shape.aligned, Counts(), fingerprint=fp)
    tensors = _evidence(model, picks, rel) + _packed_evidence(model, theirs)
    counts = count([t.kind for t in tensors if not t.why.startswith(_PACKED)],
                   sum(1 for t in tensors if t.why.startswith(_PACKED)))
    same = {(t.info.name, t.info.shape, t.info.dtype) for t in model.tensors} == {
        (t.info.name, t.info.shape, t.info.dtype) for t in theirs.tensors}
    relation, why = verdict_of(counts, same_tensors=same)
    changed = [t for t in tensors if t.kind in ("changed", "unrelated")]
    if changed and s.listed is not None and s.listed[1] and s.listed[0] == s.listed[1]:
        why = (f"{why}; the listing's sha256 named every weight file ({s.listed[1]:,}) one of its files', and the "
               "bytes read differ: the listing is wrong")
    return Candidate(s.label, theirs.checkpoint, s.declared, relation, why, s.files, shape.aligned, counts,
                     tuple(ordered([t.role for t in changed])),
                     tuple(sorted({t.layer for t in changed if t.layer is not None})), None, fp, tensors)


def _evidence(model: Report, picks: Sequence[Pick], rel: dict[int, tuple[Related, int]]) -> tuple[TensorEvidence, ...]:
    out = []
    for k, (r, _) in sorted(rel.items()):
        info, place = model.tensors[picks[k].index]
        out.append(TensorEvidence(info.name, place.role, place.layer, r.kind, r.why, r.correlation, r.max_abs))
    return tuple(out)


_PACKED = "packed"


def _packed_evidence(model: Report, theirs: Report) -> tuple[TensorEvidence, ...]:
    out = []
    for i, module in packed(model, theirs):
        info, place = model.tensors[i]
        out.append(TensorEvidence(info.name, place.role, place.layer, "incomparable",
                                  f"{_PACKED} ({info.dtype} {list(info.shape)}) for {module}: not dequantised here"))
    return tuple(out)


def _adapter(model: Report, s: Seen, fp: str) -> Candidate:
    assert s.report is not None
    checked = diff_adapter(s.report, model)
    if checked.problems:
        return Candidate(s.label, s.report.checkpoint, s.declared, "different-architecture",
                         f"the adapter does not fit it as peft would load it: {checked.problems[0].text}", s.files,
                         0, Counts(), fingerprint=fp)
    return Candidate(s.label, s.report.checkpoint, s.declared, "adapter",
                     f"an adapter of {len(checked.modules):,} module kinds whose every shape fits it", s.files,
                     len(checked.modules), Counts(), fingerprint=fp)


def _parents(relations: list[dict[int, tuple[Related, int]]], candidates: list[Candidate]) -> list[int]:
    """The candidates a merge took tensors from: part of a blend, or the only candidate a tensor equals."""
    parents = []
    for i, rel in enumerate(relations):
        if candidates[i].relation in ("identical", "adapter") or not rel:
            continue
        blended = any(r.kind == "blended" for r, _ in rel.values())
        only = any(r.kind == "equal" and all(other.get(k, (Related("incomparable", 0), 0))[0].kind != "equal"
                                             for j, other in enumerate(relations) if j != i)
                   for k, (r, _) in rel.items())
        if blended or only:
            parents.append(i)
    return parents


def _as_parent(c: Candidate, weight: float | None, rel: dict[int, tuple[Related, int]]) -> Candidate:
    blended = sum(1 for r, _ in rel.values() if r.kind == "blended")
    equal = sum(1 for r, _ in rel.values() if r.kind == "equal")
    why = (f"a parent of the merge: {blended:,} tensors blended from it" + (f" (w = {weight:.4g})" if weight is not None
                                                                         else "") + f", {equal:,} equal to it")
    return replace(c, relation="merge", why=why, weight=weight)


def _overall(candidates: Sequence[Candidate], parents: Sequence[int]) -> tuple[Relation, str | None]:
    if len(parents) >= 2:
        return "merge", None
    derived = [c for c in candidates if c.relation in DERIVED]
    if derived:
        best = min(derived, key=lambda c: (DERIVED.index(c.relation), -c.counts.equal,
                                           -(c.counts.equal + c.counts.quantized)))
        return best.relation, best.label
    for relation in _APART:
        if any(c.relation == relation for c in candidates):
            return relation, None
    return "unknown", None


def _declared_matches(declared: Declared, candidates: Sequence[Candidate]) -> bool | None:
    """Whether the evidence bears out a declared base: true when one is derived from (or a parent of) the
    model, false when every declared base read is unrelated or another architecture (or the model came from
    another candidate instead), None when there is none or none could be decided."""
    names = {b.lower() for b, _ in declared.bases}
    if not names:
        return None
    mine = [c for c in candidates if c.label.lower() in names]
    if any(c.relation in DERIVED for c in mine):
        return True
    if mine and all(c.relation in ("unrelated", "different-architecture") for c in mine):
        return False
    return None


def _with_evidence(lin: Lineage) -> Lineage:
    """The answer's lines in words: the verdict and its evidence, then the declared base's check."""
    lines = []
    by_label = {c.label: c for c in lin.candidates}
    if lin.verdict == "merge":
        parts = ", ".join(f"{p}" + (f" (w = {w:.4g})" if (w := by_label[p].weight) is not None else "")
                          for p in lin.parents)
        lines.append(f"a merge of {parts}")
    elif lin.base is not None:
        c = by_label[lin.base]
        lines.append(c.why)
        if c.changed_roles and c.relation == "finetune":
            where = f" in layer{'s' if len(c.changed_layers) > 1 else ''} {c.layers}" if c.changed_layers else ""
            lines.append("changed: " + ", ".join(c.changed_roles) + where)
    else:
        lines += [f"{c.label}: {c.relation}: {c.why}" for c in lin.candidates]
    d = lin.declared
    if d.bases:
        where = "; ".join(f"{b} ({w})" for b, w in d.bases)
        named = {c.label.lower() for c in lin.candidates}
        verdict = {True: "the evidence bears it out", False: "the evidence contradicts it",
                   None: "not decided" if any(b.lower() in named for b, _ in d.bases) else
                   "not checked (not among the candidates)"}[lin.declared_matches]
        lines.append(f"declares {where}: {verdict}")
    lines += [f"declares {u}" for u in d.unnamed]
    return replace(lin, evidence=tuple(lines))

