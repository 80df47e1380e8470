"""Parameters predicted from config.json alone, beside what the headers hold.

The seeds' closed formula (seed 002: N = 2DV + 4LD² + 2LDI, and the Llama variants of seeds 000,
001 and 003) generalised per role for the families the role table covers:

* Llama-like (Llama 1/2/3, Mistral, Qwen2, Gemma; Mixtral with experts): embedding V·D; q and o
  D·H·d; k and v D·K·d (grouped-query attention); gate, up, down D·I each (× E experts plus the
  E·D router for Mixtral); two RMSNorms D per layer; the final norm D; lm_head V·D unless tied.
  Qwen2 adds q/k/v biases.
* GPT-2: wte V·D, learned positions P·D, per layer two LayerNorms 2·2D, c_attn 3D² + 3D, c_proj
  D² + D, c_fc 4D² + 4D, mlp c_proj 4D² + D; ln_f 2D.
* BERT: word V·D, positions P·D, token types T·D, embedding LayerNorm 2D; per layer q/k/v/o
  4(D² + D), two LayerNorms 4D, intermediate D·I + I, output I·D + D; pooler D² + D.

The context length enters only through learned position embeddings (GPT-2, BERT): RoPE models
(Llama and kin) rotate q and k by position and hold no per-position weights, so their count does
not depend on it. The final norm is the tensor hand formulas drop: seed 001 gives 8,030,257,152 for
Llama-3-8B, 4,096 short of the checkpoint's 8,030,261,248.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from inspector.analysis.facts.config import ModelConfig, config_int
from inspector.analysis.facts.families import FORMULA_LLAMA
from inspector.analysis.facts.report import Report
from inspector.model import Role


@dataclass(frozen=True, slots=True)
class FormulaRow:
    role: str
    formula: str
    predicted: int
    actual: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class FormulaCheck:
    family: str | None  # None: no formula for this model type
    rows: tuple[FormulaRow, ...]
    context_enters: bool
    notes: tuple[str, ...]

    @property
    def predicted(self) -> int:
        return sum(r.predicted for r in self.rows)

    @property
    def actual(self) -> int:
        return sum(r.actual for r in self.rows)


def formula_check(report: Report) -> FormulaCheck:
    c = report.config
    actual = {r.role: r.parameters for r in report.summary.by_role}
    norms_outside = sum(t.info.numel for t in report.tensors
                        if t.place.role == "norm" and t.place.layer is None and t.place.kind == "parameter")
    if c.model_type in FORMULA_LLAMA:
        return _llama(c, actual, norms_outside)
    if c.model_type == "gpt2":
        return _gpt2(c, actual)
    if c.model_type == "bert":
        return _bert(c, actual)
    return FormulaCheck(None, (), False, (f"no closed formula for model type {c.model_type!r}",))


def _llama(c: ModelConfig, actual: Mapping[Role, int], final_norm: int) -> FormulaCheck:
    d, v, n_layers, i = c.hidden_size or 0, c.vocab_size or 0, c.num_layers or 0, c.intermediate_size or 0
    h, k, hd = c.num_heads or 0, c.num_kv_heads or 0, c.head_dim or 0
    bias = c.model_type == "qwen2"
    e = c.moe.num_experts or 0
    rows = [FormulaRow("embedding", f"V·D = {v:,} × {d:,}", v * d, actual.get("embedding", 0))]
    q_extra = " + L·H·d (bias)" if bias else ""
    rows.append(FormulaRow("attn.q", f"L·D·H·d{q_extra}", n_layers * (d * h * hd + (h * hd if bias else 0)),
                           actual.get("attn.q", 0)))
    for role in ("attn.k", "attn.v"):
        rows.append(FormulaRow(role, "L·D·K·d" + (" + L·K·d (bias)" if bias else ""),
                               n_layers * (d * k * hd + (k * hd if bias else 0)), actual.get(role, 0),
                               "K < H: grouped-query attention" if k and k < h else ""))
    rows.append(FormulaRow("attn.o", "L·H·d·D", n_layers * h * hd * d, actual.get("attn.o", 0)))
    if e:
        expert_roles: tuple[Role, ...] = ("moe.expert.gate", "moe.expert.up", "moe.expert.down")
        for role in expert_roles:
            rows.append(FormulaRow(role, "L·E·D·I", n_layers * e * d * i, actual.get(role, 0)))
        rows.append(FormulaRow("moe.router", "L·E·D", n_layers * e * d, actual.get("moe.router", 0)))
    else:
        mlp_roles: tuple[Role, ...] = ("mlp.gate", "mlp.up", "mlp.down")
        for role in mlp_roles:
            rows.append(FormulaRow(role, "L·D·I", n_layers * d * i, actual.get(role, 0)))
    layer_norms = 2 * n_layers * d
    rows.append(FormulaRow("norm", "2·L·D (per layer) + D (final)", layer_norms + d, actual.get("norm", 0),
                           f"hand formulas drop the final norm ({final_norm:,})" if final_norm else ""))
    tied = c.storage.tie_word_embeddings
    rows.append(FormulaRow("lm_head", "0 (tied)" if tied else "V·D", 0 if tied else v * d, actual.get("lm_head", 0)))
    notes = ("RoPE: positions are rotations of q and k, so the context length "
             f"({c.max_position:,}) holds no weights" if c.max_position else "RoPE: no position weights",)
    return FormulaCheck("llama-like", tuple(rows), False, notes)


def _gpt2(c: ModelConfig, actual: Mapping[Role, int]) -> FormulaCheck:
    d, v, n_layers, p = c.hidden_size or 0, c.vocab_size or 0, c.num_layers or 0, c.max_position or 0
    inner = c.intermediate_size or 4 * d
    rows = (
        FormulaRow("embedding", "V·D", v * d, actual.get("embedding", 0)),
        FormulaRow("position_embedding", f"P·D = {p:,} × {d:,}", p * d, actual.get("position_embedding", 0),
                   "learned positions: the context length enters the count"),
        FormulaRow("attn.qkv", "L·(3D² + 3D)", n_layers * (3 * d * d + 3 * d), actual.get("attn.qkv", 0)),
        FormulaRow("attn.o", "L·(D² + D)", n_layers * (d * d + d), actual.get("attn.o", 0)),
        FormulaRow("mlp.up", "L·(D·I + I)", n_layers * (d * inner + inner), actual.get("mlp.up", 0)),
        FormulaRow("mlp.down", "L·(I·D + D)", n_layers * (inner * d + d), actual.get("mlp.down", 0)),
        FormulaRow("norm", "L·4D + 2D", n_layers * 4 * d + 2 * d, actual.get("norm", 0)),
        FormulaRow("lm_head", "0 (tied to wte)", 0, actual.get("lm_head", 0)),
    )
    return FormulaCheck("gpt2", rows, True, ("the causal-mask buffers attn.bias are not parameters",))


def _bert(c: ModelConfig, actual: Mapping[Role, int]) -> FormulaCheck:
    d, v, n_layers, p = c.hidden_size or 0, c.vocab_size or 0, c.num_layers or 0, c.max_position or 0
    i = c.intermediate_size or 0
    types = config_int(c.raw.get("type_vocab_size"), 2)
    rows = (
        FormulaRow("embedding", "V·D", v * d, actual.get("embedding", 0)),
        FormulaRow("position_embedding", f"P·D = {p:,} × {d:,}", p * d, actual.get("position_embedding", 0),
                   "learned positions: the context length enters the count"),
        FormulaRow("token_type_embedding", "T·D", types * d, actual.get("token_type_embedding", 0)),
        FormulaRow("attn.q", "L·(D² + D)", n_layers * (d * d + d), actual.get("attn.q", 0)),
        FormulaRow("attn.k", "L·(D² + D)", n_layers * (d * d + d), actual.get("attn.k", 0)),
        FormulaRow("attn.v", "L·(D² + D)", n_layers * (d * d + d), actual.get("attn.v", 0)),
        FormulaRow("attn.o", "L·(D² + D)", n_layers * (d * d + d), actual.get("attn.o", 0)),
        FormulaRow("mlp.up", "L·(D·I + I)", n_layers * (d * i + i), actual.get("mlp.up", 0)),
        FormulaRow("mlp.down", "L·(I·D + D)", n_layers * (i * d + d), actual.get("mlp.down", 0)),
        FormulaRow("norm", "L·4D + 2D", n_layers * 4 * d + 2 * d, actual.get("norm", 0)),
        FormulaRow("pooler", "D² + D (if kept)", d * d + d if actual.get("pooler") else 0, actual.get("pooler", 0)),
    )
    return FormulaCheck("bert", rows, True, ("position_ids is a buffer, not a parameter",))
