"""Where a checkpoint came from: a re-upload, a fine-tune, a merge, a quantisation, an adapter, or none
of them, decided from evidence read cheapest first (``inspect lineage``).

1. **Files**: a Hub listing (and the HF cache's blob names) carry each LFS file's sha256; the model's
   weight files all found among a candidate's prove a re-upload with no tensor byte read.
2. **Structure**: tensors aligned by name and shape as ``diff`` aligns them (GGUF names through
   gguf-py's map); fewer than half aligned is a different architecture, and no value is read.
3. **Values, sampled**: the same element ranges of each aligned tensor on both sides (``plan``: four
   ranges of 256 elements, start, middle, end and one drawn from the name; a tensor of at most 1,024
   elements whole), decoded to float64 (GGML blocks by gguf-py's own dequantisers), related
   tensor by tensor (``relate``): *equal*, *quantised from* (within the quantisation's own bound),
   *changed* (related: correlated, or a small change of a constant tensor), *unrelated*, *constant*
   (the same constant on both sides, as two fresh initialisations' norms are: no evidence either
   way), *incomparable* (with why). With two or more candidates a tensor equal to none of them is
   fitted as ``w1·A + w2·B`` (``blend``): a linear or task-arithmetic merge, its weights reported.
4. **A verdict** per candidate and overall (``verdict_of``), with its evidence counted. Sampled evidence
   is never called proof: "equal in every sampled element".

Pure: the ranges to read go out (``Pick``), the bytes come back in; ``api.lineage`` reads them.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, get_args

from inspector.analysis.comparison.samples import is_bnb4, unit
from inspector.analysis.facts.packing import is_packed
from inspector.analysis.facts.report import Report
from inspector.errors import InvalidCheckpointError
from inspector.model import ADAPTER_CONFIG, Checkpoint, TensorInfo, natural_key
from inspector.safeio import is_repo_id, parse_yaml

if TYPE_CHECKING:
    from inspector.analysis.comparison.samples import Values

Relation = Literal["identical", "finetune", "merge", "quantized", "adapter", "unrelated", "different-architecture",
                   "unknown"]
RELATIONS: Final[tuple[str, ...]] = get_args(Relation)
#: how one tensor of the model relates to a candidate's
#: the relations a model card may name (its ``base_model_relation``, the Hub's words)
CardRelation = Literal["adapter", "merge", "quantized", "finetune"]
Kind = Literal["equal", "quantized", "changed", "unrelated", "blended", "constant", "incomparable"]
#: the relations that name a candidate as where the model came from, closest first
DERIVED: Final[tuple[Relation, ...]] = ("identical", "quantized", "adapter", "finetune", "merge")

#: a changed tensor is related to the candidate's when the sampled values correlate at least this much
#: (two independent draws of 256 or more values: |r| < 0.2 but for a chance below 10^-3)
RELATED_R: Final = 0.2
#: … or, where one side is constant (a norm's ones), when ‖m − c‖ ≤ this × ‖c‖
RELATED_CHANGE: Final = 0.5
#: a tensor's values fit a blend when every residual is within this many units of the stored dtype's
#: last place (the merge's own arithmetic and its rounding to the stored dtype)
BLEND_ULPS: Final = 8
#: a share of the model's tensors at least this large must align by name and shape, or the
#: architectures differ
ALIGNED_SHARE: Final = 0.5

#: half a unit in the last place, relative to the value, of each float dtype (round to nearest), and the
#: smallest step near zero (its subnormals): the bound of a cast to it
HALF_ULP: Final[Mapping[str, tuple[float, float]]] = {
    "F64": (2.0**-53, 2.0**-1075), "F32": (2.0**-24, 2.0**-150), "F16": (2.0**-11, 2.0**-25),
    "BF16": (2.0**-8, 2.0**-134), "F8_E4M3": (2.0**-4, 2.0**-10), "F8_E5M2": (2.0**-3, 2.0**-17),
}


# --- what the model declares ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Declared:
    """The bases a model declares, each with where it says so, and the relation the card names."""

    bases: tuple[tuple[str, str], ...]  # (repo id, where it is declared)
    relation: CardRelation | None = None  # the card's base_model_relation
    unnamed: tuple[str, ...] = ()  # declared without a repo id (a GGUF's base named only by its name)

    @property
    def first(self) -> str | None:
        return self.bases[0][0] if self.bases else None



def _repo_id(value: str) -> bool:
    """A Hub repo id as a card's base_model names it (``org/name`` by ``safeio.is_repo_id``; a legacy bare ``name``
    is not taken: it would be read as a bundled alias or a path). Opened as a Hub address (``hf://``), never as
    a local path."""
    return "/" in value and is_repo_id(value)


_HF_URL = re.compile(r"^https?://(?:www\.)?huggingface\.co/([A-Za-z0-9][A-Za-z0-9._-]{0,95}/"
                     r"[A-Za-z0-9][A-Za-z0-9._-]{0,95})/?$")
#: the most bytes of a README read for its front matter, and the most bases taken from it
CARD_BYTES: Final = 64 * 1024
MAX_DECLARED: Final = 16


def front_matter(card: bytes) -> Mapping[str, object]:
    """A model card's YAML front matter (``---`` … ``---`` at its start), parsed safely (``safeio.parse_yaml``:
    no object is built from a tag, the depth capped); {} where it has none, it is not a mapping or not
    readable."""
    text = card[:CARD_BYTES].decode("utf-8", "replace").lstrip("\ufeff")
    if not text.startswith("---"):
        return {}
    end = re.search(r"^(---|\.\.\.)\s*$", text[3:], re.MULTILINE)
    if end is None:
        return {}
    try:
        doc = parse_yaml(text[3:3 + end.start()], "README.md front matter")
    except InvalidCheckpointError:
        return {}
    return doc if isinstance(doc, dict) else {}


def declared_bases(checkpoint: Checkpoint, card: bytes | None) -> Declared:
    """What a model says it came from: its card's ``base_model`` (a string or a list, and
    ``base_model_relation``), an adapter's ``base_model_name_or_path``, a GGUF's ``general.base_model.N.*``."""
    found: list[tuple[str, str]] = []
    unnamed: list[str] = []
    relation: CardRelation | None = None
    if card is not None:
        meta = front_matter(card)
        value = meta.get("base_model")
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        found += [(n.strip(), "README.md base_model") for n in names[:MAX_DECLARED]
                  if isinstance(n, str) and len(n) <= 200 and _repo_id(n.strip())]
        rel = meta.get("base_model_relation")
        relation = next((r for r in get_args(CardRelation) if r == rel), None)
    adapter = checkpoint.side.json.get(ADAPTER_CONFIG)
    base = adapter.get("base_model_name_or_path") if adapter is not None else None
    if isinstance(base, str) and len(base) <= 200 and _repo_id(base):
        found.append((base, f"{ADAPTER_CONFIG} base_model_name_or_path"))
    for h in checkpoint.headers:
        if h.format != "gguf":
            continue
        for i in range(MAX_DECLARED):
            key = f"general.base_model.{i}."
            url, name = h.metadata.get(key + "repo_url"), h.metadata.get(key + "name")
            hit = _HF_URL.match(url) if isinstance(url, str) else None
            if hit and _repo_id(hit.group(1)):
                found.append((hit.group(1), f"GGUF {key}repo_url"))
            elif isinstance(name, str) and name:
                unnamed.append(f"{name} (GGUF {key}name, no Hub repo named)")
    unique: dict[str, tuple[str, str]] = {}
    for base in found:  # each base once, where it is first declared
        unique.setdefault(base[0].lower(), base)
    return Declared(tuple(unique.values()), relation, tuple(unnamed))


# --- structure -----------------------------------------------------------------------------------


def fingerprint(report: Report) -> str:
    """A structural fingerprint: sha256 of the sorted tensor names and shapes (not dtypes: a quantised copy
    keeps its source's), first 16 hex digits."""
    lines = sorted(f"{t.info.name}:{','.join(map(str, t.info.shape))}" for t in report.tensors)
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def aligned(model: Report, candidate: Report) -> list[tuple[int, TensorInfo]]:
    """(index of the model's tensor, the candidate's tensor of the same name and shape), in the model's order; a
    bitsandbytes 4-bit weight aligns with the candidate's weight of its name and element count."""
    theirs = {t.info.name: t.info for t in candidate.tensors}
    mine = {t.info.name: t.info for t in model.tensors}
    out = []
    for i, t in enumerate(model.tensors):
        other = theirs.get(t.info.name)
        if other is not None and (other.shape == t.info.shape or (
                is_bnb4(mine, t.info) and not is_bnb4(theirs, other) and other.numel == t.info.numel)):
            out.append((i, other))
    return out


def packed(model: Report, candidate: Report) -> list[tuple[int, str]]:
    """The model's packed linear weights (GPTQ's and AWQ's ``qweight``, compressed-tensors' ``weight_packed``)
    whose module the candidate holds unpacked: (index, the candidate's weight name). They are not dequantised
    here (``Kind`` ``incomparable``): they pack along the input axis, a column of the candidate's weight, which
    would cost a request an element's row. (bitsandbytes' 4-bit weights pack along the row: those are decoded.)"""
    theirs = {t.info.name for t in candidate.tensors}
    out = []
    for i, t in enumerate(model.tensors):
        name = t.info.name
        module = name.rsplit(".", 1)[0] + ".weight"
        if is_packed(name) and module in theirs:
            out.append((i, module))
    return out


@dataclass(frozen=True, slots=True)
class Structure:
    """The model's tensors against a candidate's: aligned by name and shape, packed weights whose module it holds,
    and the model's tensors that count (its quantisation companions, scales and zero points, aside)."""

    aligned: int
    packed: int
    counted: int

    @property
    def same(self) -> bool:
        """At least ``ALIGNED_SHARE`` of the model's tensors are the candidate's, as they are or packed."""
        return self.aligned + self.packed >= ALIGNED_SHARE * max(1, self.counted)


def structure(model: Report, candidate: Report) -> Structure:
    counted = sum(1 for t in model.tensors if t.place.kind != "quant")
    return Structure(len(aligned(model, candidate)), len(packed(model, candidate)), counted)


# --- relating one tensor -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Related:
    """One model tensor against one candidate's, from the sampled elements."""

    kind: Kind
    elements: int  # sampled elements compared
    why: str = ""
    correlation: float | None = None
    max_abs: float | None = None  # the largest |m − c| of one value


def quantisation_bound(dtype: str, source: Values) -> Values | None:
    """How far a value stored as ``dtype`` may lie from the value it was made from, element by element:
    half a unit in the last place for a float cast (``HALF_ULP``); for a GGML block type of b bits a weight
    (gguf-py's block size and bytes), 2 / (2^⌊b⌋ − 1) of the block's largest |value|, twice the half step of a
    uniform quantiser of that many bits (Q8_0: 0.0078, Q4_K: 0.13, Q2_K: 0.67) with the block scale's own
    F16 rounding inside it. None where the dtype is not one we bound."""
    # deferred: 51 ms at import (numpy)
    import numpy as np

    if dtype in HALF_ULP:
        rel, floor = HALF_ULP[dtype]
        return np.abs(source) * rel * (1 + 1e-9) + floor
    u = unit(dtype)
    if u is None or u[0] == 1 or len(source) % u[0]:
        return None
    per, size = u
    bits = math.floor(size * 8 / per)
    blocks = np.abs(source).reshape(-1, per).max(axis=1)
    scale = 2.0 / (2**bits - 1) * (1 + 2.0**-10)
    return np.repeat(blocks * scale, per) + HALF_ULP["F16"][1]


def _bits(dtype: str) -> float:
    u = unit(dtype)
    return 64.0 if u is None else u[1] * 8 / u[0]


def relate(m_dtype: str, m: Values, c_dtype: str, c: Values, bound: Values | None = None) -> Related:
    """One tensor: the model's sampled values ``m`` against the candidate's ``c`` (the same elements); ``bound``:
    each value's own quantisation bound where its source gave one (bitsandbytes' 4-bit weight)."""
    # deferred: 50 ms at import (numpy)
    import numpy as np

    n = len(m)
    if len(c) != n or n == 0:
        return Related("incomparable", 0, "nothing sampled" if n == 0 else "the samples differ in length")
    finite = bool(np.isfinite(m).all() and np.isfinite(c).all())
    equal = finite and bool(np.array_equal(m, c))
    if equal:
        constant = bool(m.size and m.min() == m.max())
        return Related("constant" if constant else "equal", n,
                       "the same constant in every sampled element: no evidence" if constant else "")
    if not finite:
        return Related("incomparable", n, "a sampled value is not finite")
    delta = np.abs(m - c)
    largest = float(delta.max())
    if bound is not None or (m_dtype != c_dtype and _bits(m_dtype) <= _bits(c_dtype)):  # fewer bits: made from it?
        bound = bound if bound is not None else quantisation_bound(m_dtype, c)
        if bound is not None and bool((delta <= bound).all()):
            return Related("quantized", n, f"within {m_dtype}'s bound", _correlation(m, c), largest)
    r = _correlation(m, c)
    norm_c = float(np.linalg.norm(c))
    small = norm_c > 0 and float(np.linalg.norm(m - c)) <= RELATED_CHANGE * norm_c
    related = (r is not None and r >= RELATED_R) or (r is None and small)
    return Related("changed" if related else "unrelated", n, "" if related else "the values share nothing", r,
                   largest)


def _correlation(m: Values, c: Values) -> float | None:
    # deferred: 50 ms at import (numpy)
    import numpy as np

    sm, sc = float(m.std()), float(c.std())
    if sm == 0 or sc == 0:
        return None
    return float(np.clip(np.mean((m - m.mean()) * (c - c.mean())) / (sm * sc), -1.0, 1.0))


def blend(m_dtype: str, m: Values, a: Values, b: Values) -> tuple[float, float] | None:
    """The weights (w1, w2) with m = w1·a + w2·b in every sampled element, within ``BLEND_ULPS`` units of
    the model dtype's last place; None where no such pair exists, or a and b do not tell the two apart
    (equal, or one a multiple of the other)."""
    # deferred: 50 ms at import (numpy)
    import numpy as np

    if len(a) != len(m) or len(b) != len(m) or len(m) < 2:
        return None
    basis = np.stack([a, b], axis=1)
    if np.linalg.matrix_rank(basis) < 2:
        return None
    (w1, w2), *_ = np.linalg.lstsq(basis, m, rcond=None)
    residual = np.abs(m - basis @ np.array([w1, w2]))
    rel, floor = HALF_ULP.get(m_dtype, (None, None)) if m_dtype in HALF_ULP else (None, None)
    if rel is None or floor is None:
        return None
    scale = np.abs(w1 * a) + np.abs(w2 * b) + np.abs(m)
    if not bool((residual <= BLEND_ULPS * 2 * rel * scale + floor).all()):
        return None
    if min(abs(w1), abs(w2)) < 1e-3:
        return None  # one parent alone: that is equality or a rescale, not a blend
    return float(w1), float(w2)


# --- a candidate's verdict -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Counts:
    """A candidate's evidence, tensor by tensor."""

    compared: int = 0
    packed: int = 0  # packed linear weights (GPTQ, AWQ, bitsandbytes 4-bit) not dequantised
    equal: int = 0
    quantized: int = 0
    changed: int = 0
    unrelated: int = 0
    blended: int = 0
    constant: int = 0
    incomparable: int = 0

    @property
    def informative(self) -> int:
        return self.equal + self.quantized + self.changed + self.unrelated + self.blended

    @property
    def related(self) -> int:
        return self.equal + self.quantized + self.changed + self.blended


def count(kinds: Sequence[Kind], packed: int = 0) -> Counts:
    tally = {k: sum(1 for x in kinds if x == k) for k in get_args(Kind)}
    return Counts(len(kinds) - tally["incomparable"], packed, tally["equal"], tally["quantized"], tally["changed"],
                  tally["unrelated"], tally["blended"], tally["constant"], tally["incomparable"])


def verdict_of(c: Counts, *, same_tensors: bool) -> tuple[Relation, str]:
    """A candidate's relation from its tensors' evidence, and why in words. ``same_tensors``: both hold the
    same tensors (names, shapes and dtypes)."""
    if c.informative == 0:
        return "unknown", ("no tensor held evidence: every compared tensor was a constant both sides share, or "
                           "none could be compared" if c.compared else "no tensor could be compared")
    sampled = f"{c.informative:,} tensors sampled"
    if c.unrelated * 2 > c.informative or c.related == 0:
        return "unrelated", f"{c.unrelated:,} of {sampled} share nothing with it"
    if c.equal == c.informative and same_tensors:
        return "identical", f"equal in every sampled element of {sampled}"
    if c.packed and c.equal + c.quantized == c.informative:
        return "quantized", (f"{c.packed:,} linear weights packed (GPTQ, AWQ or bitsandbytes) and not dequantised "
                             f"here; the verdict rests on the {sampled} stored unpacked: {c.equal:,} equal in every "
                             f"sampled element" + (f", {c.quantized:,} within a quantisation bound" if c.quantized
                                                   else ""))
    if c.equal + c.quantized == c.informative and c.quantized:
        return "quantized", (f"{c.quantized:,} of {sampled} are its values within the stored type's quantisation "
                             f"bound, {c.equal:,} equal")
    if c.equal == c.informative:
        return "finetune", f"equal in every sampled element of {sampled}, but the tensors differ in number or dtype"
    return "finetune", (f"{c.changed + c.unrelated:,} of {sampled} changed, {c.equal:,} equal in every sampled "
                        "element" + (f", {c.quantized:,} within a quantisation bound" if c.quantized else ""))


def layer_spans(layers: Sequence[int]) -> str:
    """``0, 1, 2, 5`` → ``0–2, 5``."""
    spans: list[tuple[int, int]] = []
    for v in sorted(set(layers)):
        if spans and v == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], v)
        else:
            spans.append((v, v))
    return ", ".join(f"{a}–{b}" if b > a else f"{a}" for a, b in spans)


def ordered(names: Sequence[str]) -> list[str]:
    return sorted(set(names), key=natural_key)
