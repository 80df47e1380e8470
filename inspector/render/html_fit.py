"""The HTML pages of what it takes to run a model: ``estimate``, ``train`` and ``plan``, on ``html.page`` and its
helpers, drawn from the commands' typed JSON documents (``inspector/results/``) as the other pages are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from inspector.render.html import figure, gib_figure, gib_or_unknown, note_lines, origin, page, table
from inspector.render.svg import budget_bar, context_curve, esc, gib, label_of, layout_bars, memory_bar

if TYPE_CHECKING:
    from inspector.results.common import SuggestionDoc
    from inspector.results.estimate import EstimateDoc
    from inspector.results.plan import LayoutRow, PlanDoc
    from inspector.results.train import TrainDoc


def estimate_html(doc: EstimateDoc) -> str:
    """``inspect estimate --format html``: with --gpu the budget bar and the memory-against-context
    curve; every figure with its formula and source."""
    model = doc["model"]
    fit = doc["fit"]
    body: list[str] = []
    warnings = doc["warnings"]
    if isinstance(warnings, list) and warnings:
        body.append(note_lines([f"warning: {w}" for w in warnings], "note warn"))
    if fit is not None:
        fits = fit["fits"]
        verdict = "fits" if fits is True else "does not fit" if fits is False else "fit unknown"
        gpu = fit["gpu"]
        where = (f"{esc(gpu) + ' · ' if gpu else ''}{fit['devices']} device(s) · "
                 f"{esc(fit['engine'])}")
        budget = fit["budget_bytes"]
        body += ["<div class=\"figures\">",
                 figure("Verdict", verdict, esc(fit["unknown"] or "") if fits is None else
                         f"{gib(fit['total_bytes'])} of {gib(fit['usable_bytes'])} usable",
                         "headline-verdict"),
                 gib_figure("Budget per device", budget, where, "headline-budget"),
                 figure("Largest context", fit["max_context"] if fits is not None else None,
                         f"tokens at batch {fit['batch']}"), "</div>\n"]
        if fits is not None:
            body += _suggestions(doc["suggestions"])
            body += ["<h2>The device's memory</h2>\n", budget_bar(fit)]
            body.append(table(("part", "bytes", "GiB", "how"), [
                ("weights", fit["weights_bytes"], gib(fit["weights_bytes"]),
                 fit["weights_note"] or "as the headers hold them"),
                ("KV cache", fit["kv_bytes"], gib(fit["kv_bytes"]),
                 f"{fit['kv_formula']}; {fit['kv_share']}"),
                *((t["name"], t["bytes"], gib(t["bytes"]),
                   f"{t['formula']} [{t['source']}]") for t in fit["terms"])],
                numeric=(1, 2), ident="fit-table"))
            curve = context_curve(fit)
            if curve:
                body += ["<h2>Memory against context</h2>\n", curve]
        else:
            body.append(note_lines([f"fit unknown: {fit['unknown']}"], "note warn"))
    body += ["<h2>Figures</h2>\n", table(
        ("figure", "value", "unit", "formula", "source"),
        ((f["label"], f["value"], f["unit"], f["formula"],
          f["source"]) for f in doc["figures"]), numeric=(1,), ident="figures")]
    what_if = doc["what_if"]
    if what_if:
        body += ["<h2>Weights in other dtypes</h2>\n", table(
            ("dtype", "bytes", "how"), ((w["dtype"], w["bytes"], w["formula"])
                                        for w in what_if), numeric=(1,))]
    context = doc["context"]
    scope = (f"estimates at context {context:,}, batch {doc['batch']}, KV cache in "
             f"{esc(doc['kv_dtype'])}") if doc["no_tokens"] is None else \
        "weights (a diffusion model decodes no tokens: no KV cache, no per-token FLOPs)"
    return page(label_of(doc), f"{esc(origin(model))}<br>{scope}", body, doc)


def train_html(doc: TrainDoc) -> str:
    """``inspect train --format html``: the verdict, the memory per GPU term by term, the rules of thumb."""
    model = doc["model"]
    fits = doc["fits"]
    budget = doc["budget_bytes"]
    verdict = "no budget" if budget is None else ("fits" if fits is True else "does not fit" if fits is False
                                                  else "fit unknown")
    body = ["<div class=\"figures\">",
            figure("Verdict", verdict, f"{gib(doc['total'])} per GPU" if doc["total"] is not None
                    else "a term is unknown", "headline-verdict"),
            figure("Trainable", doc["trainable_parameters"], esc(doc["method"]),
                    "headline-trainable"),
            figure("GPUs", doc["gpus"], esc(doc["gpu"] or "budget per GPU")), "</div>\n",
            *_suggestions(doc["suggestions"]),
            "<h2>Memory per GPU</h2>\n", _train_bar(doc),
            table(("term", "bytes", "GiB", "how", "source"),
                   ((TERM_WORDS.get(t["name"], t["name"]), t["bytes"],
                     gib(t_bytes) if (t_bytes := t["bytes"]) is not None else "unknown",
                     t["formula"], t["source"]) for t in doc["terms"]),
                   numeric=(1, 2), ident="train-terms"),
            note_lines([f"peak: {doc['peak_rule']}"]),
            "<h2>What others would say</h2>\n",
            table(("who", "bytes", "their rule"), ((t["who"], t["bytes"], t["formula"])
                                                   for t in doc["rules_of_thumb"]), numeric=(1,)),
            note_lines([f"assumes: {a}" for a in doc["assumptions"]])]
    scope = (f"{esc(doc['method'])} · {esc(doc['precision'])} · "
             f"{esc(doc['optimizer'])} · batch {doc['batch']} × {doc['seq']:,}")
    return page(label_of(doc), f"{esc(origin(model))}<br>{scope}", body, doc)


#: a training term's name for people (the JSON's keys are for scripts)
TERM_WORDS: Final = {"weights": "weights", "reference": "reference model",
                     "gradients": "gradients", "optimizer_states": "optimizer states",
                     "master_weights": "fp32 master copy", "activations": "activations", "logits": "logits",
                     "overhead": "outside PyTorch's allocator", "output_gradient": "output layer's gradient"}


def _train_bar(doc: TrainDoc) -> str:
    """The step's peak per GPU as a stacked bar against the budget: the parts the step holds at the moment it
    peaks (``peak``: what it always holds, then that moment's activations, logits and gradients), summing to the
    total; nothing without a budget or a known total."""
    peak, budget = doc["peak"], doc["budget_bytes"]
    if not isinstance(peak, dict) or budget is None:
        return ""
    colours = ("#4e79a7", "#59a14f", "#f28e2b", "#bab0ac", "#e15759", "#76b7b2", "#b07aa1")
    found = [(p["name"], p["bytes"]) for p in peak["parts"]]
    parts = [(TERM_WORDS.get(name, name), value, colours[i % len(colours)])
             for i, (name, value) in enumerate(found) if value > 0]
    return memory_bar(parts, budget, budget, "train-bar", f"the step's peak memory per GPU, at "
                                                          f"{peak['moment']}")


def _suggestions(knobs: list[SuggestionDoc]) -> list[str]:
    """Where it does not fit: each change that makes it fit, with the memory per GPU it then needs."""
    if not knobs:
        return []
    fits = any(k["budget_bytes"] == 0 or k["total"] <= k["budget_bytes"] for k in knobs)
    title = "What makes it fit" if fits else "No one change makes it fit; the closest"
    return [f"<h2>{title}</h2>\n", table(
        ("change", "per GPU", "of"),
        ((k["change"], gib(k["total"]),
          gib(k["budget_bytes"]) if k["budget_bytes"] else "its GPUs") for k in knobs),
        numeric=(1, 2), ident="suggestions")]


def _yes_no(value: object) -> str:
    """A JSON boolean in words (the table drew Python's True and False)."""
    return "yes" if value is True else "no" if value is False else "unknown"


def _layout_words(r: LayoutRow) -> str:
    lay = f"{r['gpus']} × {r['gpu']}, TP {r['tp']}"
    return lay + (f", PP {r['pp']}" if r["pp"] > 1 else "") + (
        f", EP {r['ep']}" if r["ep"] > 1 else "")


def plan_html(doc: PlanDoc) -> str:
    """``inspect plan --format html``: the answer, the valid layouts and the refused ones with their rules."""
    model = doc["model"]
    layouts = doc["layouts"]
    valid = [r for r in layouts if r["valid"] is True]
    refused = [r for r in layouts if r["valid"] is not True]
    body = ["<div class=\"figures\">",
            figure("Answer", doc["answer"], esc(doc["engine"]), "headline-answer"),
            figure("Layouts", len(layouts), f"{len(valid):,} valid"), "</div>\n",
            *_suggestions(doc["suggestions"]),
            "<h2>Layouts that fit, by the KV pool each GPU keeps for sequences</h2>\n",
            layout_bars([(_layout_words(r), kv, r["max_sequences"]) for r in valid
                         if r["fits"] is True and (kv := r["kv_pool_bytes"]) is not None]),
            "<h2>Layouts the engine accepts</h2>\n",
            table(("GPU", "GPUs", "TP", "PP", "EP", "fits", "weights per GPU", "KV pool per GPU", "sequences"),
                   ((r["gpu"], r["gpus"], r["tp"], r["pp"], r["ep"], _yes_no(r["fits"]),
                     gib_or_unknown(r["weights_bytes"]), gib_or_unknown(r["kv_pool_bytes"]),
                     r["max_sequences"])
                    for r in valid), numeric=(1, 2, 3, 4, 8), ident="plan-valid"),
            "<h2>Layouts it refuses</h2>\n",
            table(("GPU", "GPUs", "TP", "PP", "EP", "why"),
                   ((r["gpu"], r["gpus"], r["tp"], r["pp"], r["ep"],
                     "; ".join(r["reasons"])) for r in refused), numeric=(1, 2, 3, 4),
                   ident="plan-refused")]
    scope = f"{esc(doc['engine'])} · {doc['context']:,} tokens a sequence"
    return page(label_of(doc), f"{esc(origin(model))}<br>{scope}", body, doc)
