"""The activations and the logits of a training step, per GPU: what autograd keeps for the backward pass, layer
by layer from the architecture (Korthikanti et al. 2022, §4, written out for RMSNorm, gated MLPs, grouped-query
attention and a flash/SDPA kernel), as torch keeps it under each precision, each adapter and each MoE layout, held
to torch's own saved tensors (tests/test_activations.py); and the loss over the vocabulary, by the loss kernel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from inspector.analysis.facts.report import Report
from inspector.analysis.structure.architecture import Architecture
from inspector.analysis.structure.mixers import MIXERS
from inspector.analysis.training.experts import Wrapped
from inspector.analysis.training.lora import Adapted
from inspector.analysis.training.losses import Head
from inspector.analysis.training.stages import head_bytes as stage_head_bytes
from inspector.analysis.training.stages import head_formula, rows, rows_words, sp_tokens

if TYPE_CHECKING:
    from inspector.analysis.training.options import TrainOptions


# --- activations and logits --------------------------------------------------------------------------

ACTIVATION_SOURCE: Final = ("Korthikanti et al. 2022 §4 (the tensors each layer keeps for its backward pass), for "
                            "transformers' Llama-family layers with a flash/SDPA attention kernel")


@dataclass(frozen=True, slots=True)
class Widths:
    """A layer's widths the activation formula reads."""

    hidden: int
    q: int  # heads × key width
    k: int  # KV heads × key width
    v: int  # KV heads × value width
    o: int  # heads × value width
    heads: int
    mlp: int  # elements the MLP keeps per token (gate, activation, up, product; × experts a token visits)
    down: int = 0  # the down projection's input width of a dense MLP (0 for a mixture of experts)
    qk_norm: bool = False  # RMSNorms on the queries and keys (Qwen3, OLMo2, Gemma 3)


def _mlp_elements(report: Report, moe: bool) -> int | None:
    """Elements a token's MLP keeps for the backward pass: a gated MLP its gate and up projections'
    outputs, the activation's and their product (4 × width); a plain MLP the first projection's output
    and the activation's (2 × width); a mixture of experts that × experts a token visits, plus each
    visited expert's copy of the token and its output (kept to weigh it by the router: 2 × hidden), and a
    shared expert (measured on transformers 5's fused experts: Mixtral, Qwen3-MoE)."""
    c = report.config
    roles = {r.role for r in report.summary.by_role}
    gated = bool(roles & {"mlp.gate", "mlp.gate_up", "moe.expert.gate", "moe.expert.gate_up"})
    per = 4 if gated else 2
    if not moe:
        return per * c.intermediate_size if c.intermediate_size else None
    width, k = c.moe.moe_intermediate_size or c.intermediate_size, c.moe.experts_per_token
    if not width or not k or not c.hidden_size:
        return None
    shared = _shared_width(report)
    return k * (per * width + 2 * c.hidden_size) + per * shared + (c.moe.num_experts or 0)


def _shared_width(report: Report) -> int:
    raw = report.config.raw
    for key in ("shared_expert_intermediate_size",):
        value = raw.get(key)
        if type(value) is int and value > 0:
            return value
    n = report.config.moe.shared_experts or 0
    return n * (report.config.moe.moe_intermediate_size or 0)


def layer_bytes(w: Widths, a: int, adapters: int = -1) -> int:
    """Bytes one layer keeps per token (``a``: bytes of an activation element): two RMSNorms (the fp32
    input, the normalised and the output), attention (q, k and v for the kernel, its output and the
    output projection's contiguous copy, a float32 log-sum-exp per head) and the MLP.

    ``adapters`` ≥ 0: a frozen base under peft's LoRA, and the bytes a token its adapters keep in the layer. A
    frozen weight needs no copy of its input, so the norms' normalised inputs (their weights' gradients), the
    linear layers' inputs (the norms' outputs, the output projection's copy, a dense MLP's down-projection input)
    are not kept (measured: torch's saved tensors, tests/test_activations.py)."""
    norms = 2 * (4 * w.hidden + 2 * a * w.hidden)
    attention = a * (w.q + w.k + w.v) + 2 * a * w.o + 4 * w.heads
    full = norms + attention + a * w.mlp + _qk_norm_bytes(w, a)
    if adapters < 0:
        return full
    return full - a * (4 * w.hidden + w.o + w.down) + adapters


def compiled_layer_bytes(w: Widths, a: int) -> int:
    """Bytes one layer keeps per token when the layer is compiled (torch.compile; AOTAutograd's min-cut partitioner,
    inductor's, decides what the backward keeps and what it recomputes): the layer's input, the normalised inputs
    of attention and MLP, the output projection's output (to recompute the residual sum), two float32 rsqrt,
    q, k and v after the rotary embedding, the log-sum-exp, attention's output and its contiguous copy, and the
    MLP's gate, up and product; the norms' float32 copies and the activation's output are recomputed. Measured:
    the partitioner's forward outputs on transformers' Llama layers, exact on four shapes in bf16 and fp32
    (tests/test_compile.py)."""
    return 4 * a * w.hidden + 8 + a * (w.q + w.k + w.v) + 4 * w.heads + 2 * a * w.o + 3 * a * w.down


def compile_refusal(widths: Sequence[Widths]) -> str | None:
    """Why a compiled layer's activations are not known for these layers (None where they are): the formula was
    measured on dense gated MLPs without query/key norms."""
    for w in widths:
        if not w.down or w.mlp != 4 * w.down:
            return "compiled: measured for dense gated MLPs (SwiGLU) only, not a mixture of experts or a plain MLP"
        if w.qk_norm:
            return "compiled: not measured with query and key norms"
    return None


def _qk_norm_bytes(w: Widths, a: int) -> int:
    """RMSNorms on the queries and keys keep their float32 input and the normalised input (their weights'
    gradients) over every query and key element: (4 + a) × (q + k) bytes a token (measured, Qwen3-MoE)."""
    return (4 + a) * (w.q + w.k) if w.qk_norm else 0


def _amp_layer_bytes(w: Widths, a: int, adapters: int = -1) -> int:
    """Bytes one layer keeps per token under torch autocast over float32 weights (measured structure, torch's saved
    tensors: tests/test_activations.py): the residual stream and both RMSNorms in float32 (their input and the
    normalised input, 8·h each), autocast's 16-bit cast of the norm's output for each linear that reads it (q, k, v
    and a gated MLP's gate and up: 5·a·h), attention's query twice and key and value, the log-sum-exp, and the MLP.
    A frozen base (``adapters`` ≥ 0) keeps neither the normalised inputs nor those casts nor the down input; the
    adapters keep their own 16-bit casts."""
    reads = 5 if w.down else 4
    full = (2 * 8 * w.hidden + reads * a * w.hidden + a * (2 * w.q + w.k + w.v) + 4 * w.heads + a * w.mlp
            + _qk_norm_bytes(w, 4))
    if adapters < 0:
        return full
    return full - 8 * w.hidden - reads * a * w.hidden - a * w.down + adapters


def adapter_activation_bytes(adapted: Sequence[Adapted | Wrapped], rank: int, layers: int, element: int = 4) -> int:
    """Bytes a token the adapters of one layer keep, on average over ``layers``: peft runs a float32 adapter on a
    16-bit base by casting the layer's input to float32 (``_cast_input_dtype``: lora_A saves that copy for its
    weight's gradient) and lora_B saves lora_A's float32 output: 4 × (in + r) a linear layer adapted. (Fused
    experts' wrapped parameters see only their routed tokens: not counted.) Under autocast (``element`` 2) the
    copies are the 16-bit casts autocast makes for the adapters' matmuls."""
    linear = [x for x in adapted if isinstance(x, Adapted) and not x.embedding and x.role != "lm_head"]
    return element * sum(x.shape[1] + rank for x in linear) // max(1, layers)


def widths_of(arch: Architecture, report: Report) -> tuple[list[Widths], str | None]:
    """The widths of every layer that runs on the training tokens (decoder and encoder stacks; a vision
    or audio tower runs on images and sounds this estimate has no size for); why not, when a layer's
    kind or a width is unknown."""
    c = report.config
    qk = {t.place.layer for t in report.tensors if t.info.name.endswith((".q_norm.weight", ".k_norm.weight"))}
    out = []
    for stack in arch.stacks:
        if stack.kind not in ("decoder", "encoder"):
            continue
        for layer in stack.layers:
            kinds = {m.kind for m in layer.mixers}
            if any(not MIXERS[k].attends for k in kinds):
                return [], (f"layer {layer.index} of the {stack.kind} is {'+'.join(sorted(kinds))}: the formula covers "
                            "attention and MLP layers, not state-space or linear-attention ones")
            mixer = next(m for m in layer.mixers if MIXERS[m.kind].caches)
            att = mixer.attention
            if att is None or att.heads is None or att.key_dim is None or att.value_dim is None or not c.hidden_size:
                return [], "the config gives no heads or head width"
            kv = att.kv_heads if att.kv_heads is not None else att.heads
            mlp = _mlp_elements(report, layer.mlp.kind == "moe")
            if mlp is None:
                return [], "the config gives no MLP width (intermediate_size)"
            if MIXERS[mixer.kind].latent:  # MLA keeps its up-projected keys and values per head
                kv = att.heads
            out.append(Widths(c.hidden_size, att.heads * att.key_dim, kv * att.key_dim, kv * att.value_dim,
                               att.heads * att.value_dim, att.heads, mlp,
                               0 if layer.mlp.kind == "moe" else c.intermediate_size or 0, layer.index in qk))
    if not out:
        return [], "no attention layers in the headers to size"
    return out, None


@dataclass(frozen=True, slots=True)
class Alive:
    """Activation bytes alive at the three points where a training step can peak."""

    at_loss: int  # while the loss runs: every layer's saved set (checkpointing: each input; offloading: none)
    in_layer: int  # during the top layer's backward: the above + the layer recomputed or brought back
    at_end: int  # during the first layer's backward, the last: that layer's set alone


def alive(arch: Architecture, report: Report, o: TrainOptions, half: int, batch: int, seq: int,
          adapters: int = -1) -> Alive | None:
    """``adapters``: a token's bytes of the adapters in a layer, where a frozen base runs them (else -1)."""
    widths, why = widths_of(arch, report)
    if why is not None or (o.step.compile and compile_refusal(widths) is not None):
        return None
    tokens = batch * seq
    per_layer = _per_layer(widths, o, half, adapters)
    final_norm = 4 * widths[0].hidden + 2 * half * widths[0].hidden
    if o.step.offload_activations:  # every saved tensor on the CPU; the backward brings back one layer's at a time
        kept = final_norm
    elif o.step.checkpointing:  # each layer's input kept (float32 under autocast), one layer recomputed at a time
        kept = len(widths) * (4 if o.autocast else half) * widths[0].hidden + final_norm
    else:
        return Alive(tokens * (sum(per_layer) + final_norm), tokens * (sum(per_layer) + final_norm),
                     tokens * per_layer[0])
    return Alive(tokens * kept, tokens * (kept + max(per_layer)), tokens * per_layer[0])


def activation_bytes(arch: Architecture, report: Report, o: TrainOptions, half: int, batch: int,
                      seq: int, adapters: int = -1) -> int | None:
    """The most activation bytes alive at once (``Alive.in_layer``)."""
    a = alive(arch, report, o, half, batch, seq, adapters)
    return None if a is None else a.in_layer


def _per_layer(widths: Sequence[Widths], o: TrainOptions, half: int, adapters: int) -> list[int]:
    """What each layer keeps for the backward, a token: compiled, under autocast or eager."""
    return [compiled_layer_bytes(w, half) if o.step.compile else
            (_amp_layer_bytes if o.autocast else layer_bytes)(w, half, adapters) for w in widths]


def activations_term(arch: Architecture, report: Report, o: TrainOptions, half: int,
                 adapters: int = -1) -> tuple[int, str, str | None]:
    widths, why = widths_of(arch, report)
    if why is None and o.step.compile:
        why = compile_refusal(widths)
    if why is not None:
        return 0, "", why
    n, length = rows(o.stage, o.batch, o.seq)
    value = activation_bytes(arch, report, o, half, n, sp_tokens(length, o.shard.sp), adapters) or 0
    w = widths[0]
    per = (_amp_layer_bytes if o.autocast else layer_bytes)(w, half, adapters)
    frozen = (f" − a frozen base's inputs {half}·(4·h + o + down {w.down:,}) + the float32 adapters' "
              f"{adapters:,} B (their inputs' float32 copies and lora_A's outputs)") if adapters >= 0 else ""
    layer = (f"per layer and token: norms 2 × (4·h + {2 * half}·h) + attention {half}·(q {w.q:,} + k {w.k:,} + "
             f"v {w.v:,}) + {2 * half}·o {w.o:,} + 4·heads {w.heads} + MLP {half} × {w.mlp:,}{frozen} = {per:,} B")
    if o.autocast:
        layer = (f"per layer and token under autocast: float32 norms 2 × 8·h + 16-bit casts of their outputs "
                 f"{5 if w.down else 4} × {half}·h + attention {half}·(2·q {w.q:,} + k {w.k:,} + v {w.v:,}) + "
                 f"4·heads {w.heads} + MLP {half} × {w.mlp:,}"
                 + (" − the frozen base's saves + the adapters' 16-bit casts" if adapters >= 0 else "")
                 + f" = {per:,} B")
    if o.step.compile:
        layer = (f"per layer and token, compiled: {4 * half}·h {w.hidden:,} (input, both normalised inputs, the output "
                 f"projection's output) + 8 (two rsqrt) + {half}·(q {w.q:,} + k {w.k:,} + v {w.v:,}) + 4·heads "
                 f"{w.heads} + {2 * half}·o {w.o:,} + {3 * half}·MLP width {w.down:,} (gate, up, product) = "
                 f"{compiled_layer_bytes(w, half):,} B (AOTAutograd's min-cut partitioner)")
    tokens = rows_words(o.stage, o.batch, o.seq) + (f" ÷ SP {o.shard.sp}" if o.shard.sp > 1 else "")
    if o.step.checkpointing:
        return value, (f"{tokens} × ({len(widths)} layers × {half}·h {w.hidden:,} (each layer's input) + one layer "
                       f"recomputed + final norm); {layer}"), None
    return value, f"{tokens} × ({len(widths)} layers + final norm); {layer}", None


def _vocabulary(report: Report) -> int:
    """Rows of the output layer (its own, or the tied embedding's): the real, padded vocabulary."""
    for role in ("lm_head", "embedding"):
        rows = [t.info.shape[0] for t in report.tensors if t.place.role == role and t.place.kind == "parameter"
                and len(t.info.shape) == 2 and t.place.layer is None]
        if rows:
            return rows[0]
    return report.config.vocab_size or 0


def head_bytes(report: Report, o: TrainOptions, n: int, length: int, half: int) -> int:
    """The output layer's loss at its peak for ``n`` sequences of ``length`` tokens, by the loss kernel."""
    vocab = _vocabulary(report)
    return stage_head_bytes(o.stage, Head(n * length, vocab, report.config.hidden_size or 0, half,
                                          o.step.compile)) if vocab else 0


def logits_term(report: Report, o: TrainOptions) -> tuple[int, str]:
    vocab = _vocabulary(report)
    if not vocab:
        return 0, "none: no output layer over a vocabulary"
    half = o.precision_kind.activation_bytes
    n, length = rows(o.stage, o.batch, o.seq)
    length = sp_tokens(length, o.shard.sp)
    words = rows_words(o.stage, o.batch, o.seq) + (f" ÷ SP {o.shard.sp}" if o.shard.sp > 1 else "")
    head = Head(n * length, vocab, report.config.hidden_size or 0, half, o.step.compile, words)
    return stage_head_bytes(o.stage, head), head_formula(o.stage, head)
