"""The HTML pages of what it takes to run a model: ``estimate``, ``train`` and ``plan``, on ``html.page`` and its
helpers, drawn from the commands' JSON documents as the other pages are."""

from __future__ import annotations

from typing import Final

from inspector.render.html import figure, gib_figure, gib_or_unknown, note_lines, origin, page, table
from inspector.render.svg import (
    Doc,
    as_int,
    as_list,
    as_obj,
    as_objs,
    as_str,
    as_strs,
    budget_bar,
    context_curve,
    esc,
    gib,
    label_of,
    layout_bars,
    memory_bar,
    opt_int,
    opt_str,
)


def estimate_html(doc: Doc) -> str:
    """``inspect estimate --format html``: with --gpu the budget bar and the memory-against-context
    curve; every figure with its formula and source."""
    model = as_obj(doc["model"])
    fit = as_obj(doc["fit"]) if doc["fit"] is not None else {}
    body: list[str] = []
    warnings = doc["warnings"]
    if isinstance(warnings, list) and warnings:
        body.append(note_lines([f"warning: {w}" for w in warnings], "note warn"))
    if fit:
        fits = fit["fits"]
        verdict = "fits" if fits is True else "does not fit" if fits is False else "fit unknown"
        gpu = opt_str(fit["gpu"])
        where = (f"{esc(gpu) + ' · ' if gpu else ''}{as_int(fit['devices'])} device(s) · "
                 f"{esc(as_str(fit['engine']))}")
        budget = as_int(fit["budget_bytes"])
        body += ["<div class=\"figures\">",
                 figure("Verdict", verdict, esc(opt_str(fit["unknown"]) or "") if fits is None else
                         f"{gib(as_int(fit['total_bytes']))} of {gib(as_int(fit['usable_bytes']))} usable",
                         "headline-verdict"),
                 gib_figure("Budget per device", budget, where, "headline-budget"),
                 figure("Largest context", fit["max_context"] if fits is not None else None,
                         f"tokens at batch {as_int(fit['batch'])}"), "</div>\n"]
        if fits is not None:
            body += _suggestions(as_objs(doc["suggestions"]))
            body += ["<h2>The device's memory</h2>\n", budget_bar(fit)]
            body.append(table(("part", "bytes", "GiB", "how"), [
                ("weights", as_int(fit["weights_bytes"]), gib(as_int(fit["weights_bytes"])),
                 opt_str(fit["weights_note"]) or "as the headers hold them"),
                ("KV cache", as_int(fit["kv_bytes"]), gib(as_int(fit["kv_bytes"])),
                 f"{as_str(fit['kv_formula'])}; {as_str(fit['kv_share'])}"),
                *((as_str(t["name"]), as_int(t["bytes"]), gib(as_int(t["bytes"])),
                   f"{as_str(t['formula'])} [{as_str(t['source'])}]") for t in as_objs(fit["terms"]))],
                numeric=(1, 2), ident="fit-table"))
            curve = context_curve(fit)
            if curve:
                body += ["<h2>Memory against context</h2>\n", curve]
        else:
            body.append(note_lines([f"fit unknown: {as_str(fit['unknown'])}"], "note warn"))
    body += ["<h2>Figures</h2>\n", table(
        ("figure", "value", "unit", "formula", "source"),
        ((as_str(f["label"]), f["value"], as_str(f["unit"]), as_str(f["formula"]),
          as_str(f["source"])) for f in as_objs(doc["figures"])), numeric=(1,), ident="figures")]
    what_if = as_objs(doc["what_if"])
    if what_if:
        body += ["<h2>Weights in other dtypes</h2>\n", table(
            ("dtype", "bytes", "how"), ((as_str(w["dtype"]), as_int(w["bytes"]), as_str(w["formula"]))
                                        for w in what_if), numeric=(1,))]
    context = as_int(doc["context"])
    scope = (f"estimates at context {context:,}, batch {as_int(doc['batch'])}, KV cache in "
             f"{esc(as_str(doc['kv_dtype']))}") if doc["no_tokens"] is None else \
        "weights (a diffusion model decodes no tokens: no KV cache, no per-token FLOPs)"
    return page(label_of(doc), f"{esc(origin(model))}<br>{scope}", body, doc)


def train_html(doc: Doc) -> str:
    """``inspect train --format html``: the verdict, the memory per GPU term by term, the rules of thumb."""
    model = as_obj(doc["model"])
    fits = doc["fits"]
    budget = doc["budget_bytes"]
    verdict = "no budget" if budget is None else ("fits" if fits is True else "does not fit" if fits is False
                                                  else "fit unknown")
    body = ["<div class=\"figures\">",
            figure("Verdict", verdict, f"{gib(as_int(doc['total']))} per GPU" if doc["total"] is not None
                    else "a term is unknown", "headline-verdict"),
            figure("Trainable", as_int(doc["trainable_parameters"]), esc(as_str(doc["method"])),
                    "headline-trainable"),
            figure("GPUs", as_int(doc["gpus"]), esc(opt_str(doc["gpu"]) or "budget per GPU")), "</div>\n",
            *_suggestions(as_objs(doc["suggestions"])),
            "<h2>Memory per GPU</h2>\n", _train_bar(doc),
            table(("term", "bytes", "GiB", "how", "source"),
                   ((TERM_WORDS.get(as_str(t["name"]), as_str(t["name"])), t["bytes"],
                     gib(t_bytes) if (t_bytes := opt_int(t["bytes"])) is not None else "unknown",
                     as_str(t["formula"]), as_str(t["source"])) for t in as_objs(doc["terms"])),
                   numeric=(1, 2), ident="train-terms"),
            note_lines([f"peak: {as_str(doc['peak_rule'])}"]),
            "<h2>What others would say</h2>\n",
            table(("who", "bytes", "their rule"), ((as_str(t["who"]), t["bytes"], as_str(t["formula"]))
                                                   for t in as_objs(doc["rules_of_thumb"])), numeric=(1,)),
            note_lines([f"assumes: {a}" for a in as_list(doc["assumptions"])])]
    scope = (f"{esc(as_str(doc['method']))} · {esc(as_str(doc['precision']))} · "
             f"{esc(as_str(doc['optimizer']))} · batch {as_int(doc['batch'])} × {as_int(doc['seq']):,}")
    return page(label_of(doc), f"{esc(origin(model))}<br>{scope}", body, doc)


#: a training term's name for people (the JSON's keys are for scripts)
TERM_WORDS: Final = {"weights": "weights", "reference": "reference model",
                     "gradients": "gradients", "optimizer_states": "optimizer states",
                     "master_weights": "fp32 master copy", "activations": "activations", "logits": "logits",
                     "overhead": "outside PyTorch's allocator", "output_gradient": "output layer's gradient"}


def _train_bar(doc: Doc) -> str:
    """The step's peak per GPU as a stacked bar against the budget: the parts the step holds at the moment it
    peaks (``peak``: what it always holds, then that moment's activations, logits and gradients), summing to the
    total; nothing without a budget or a known total."""
    peak, budget = doc["peak"], opt_int(doc["budget_bytes"])
    if not isinstance(peak, dict) or budget is None:
        return ""
    colours = ("#4e79a7", "#59a14f", "#f28e2b", "#bab0ac", "#e15759", "#76b7b2", "#b07aa1")
    found = [(as_str(p["name"]), as_int(p["bytes"])) for p in as_objs(peak["parts"])]
    parts = [(TERM_WORDS.get(name, name), value, colours[i % len(colours)])
             for i, (name, value) in enumerate(found) if value > 0]
    return memory_bar(parts, budget, budget, "train-bar", f"the step's peak memory per GPU, at "
                                                          f"{as_str(peak['moment'])}")


def _suggestions(knobs: list[Doc]) -> list[str]:
    """Where it does not fit: each change that makes it fit, with the memory per GPU it then needs."""
    if not knobs:
        return []
    return ["<h2>What makes it fit</h2>\n", table(
        ("change", "per GPU", "of"),
        ((as_str(k["change"]), gib(as_int(k["total"])),
          gib(as_int(k["budget_bytes"])) if as_int(k["budget_bytes"]) else "its GPUs") for k in knobs),
        numeric=(1, 2), ident="suggestions")]


def _yes_no(value: object) -> str:
    """A JSON boolean in words (the table drew Python's True and False)."""
    return "yes" if value is True else "no" if value is False else "unknown"


def _layout_words(r: Doc) -> str:
    lay = f"{as_int(r['gpus'])} × {as_str(r['gpu'])}, TP {as_int(r['tp'])}"
    return lay + (f", PP {as_int(r['pp'])}" if as_int(r["pp"]) > 1 else "") + (
        f", EP {as_int(r['ep'])}" if as_int(r["ep"]) > 1 else "")


def plan_html(doc: Doc) -> str:
    """``inspect plan --format html``: the answer, the valid layouts and the refused ones with their rules."""
    model = as_obj(doc["model"])
    layouts = as_objs(doc["layouts"])
    valid = [r for r in layouts if r["valid"] is True]
    refused = [r for r in layouts if r["valid"] is not True]
    body = ["<div class=\"figures\">",
            figure("Answer", as_str(doc["answer"]), esc(as_str(doc["engine"])), "headline-answer"),
            figure("Layouts", len(layouts), f"{len(valid):,} valid"), "</div>\n",
            *_suggestions(as_objs(doc["suggestions"])),
            "<h2>Layouts that fit, by the KV pool each GPU keeps for sequences</h2>\n",
            layout_bars([(_layout_words(r), kv, opt_int(r["max_sequences"])) for r in valid
                         if r["fits"] is True and (kv := opt_int(r["kv_pool_bytes"])) is not None]),
            "<h2>Layouts the engine accepts</h2>\n",
            table(("GPU", "GPUs", "TP", "PP", "EP", "fits", "weights per GPU", "KV pool per GPU", "sequences"),
                   ((as_str(r["gpu"]), r["gpus"], r["tp"], r["pp"], r["ep"], _yes_no(r["fits"]),
                     gib_or_unknown(opt_int(r["weights_bytes"])), gib_or_unknown(opt_int(r["kv_pool_bytes"])),
                     r["max_sequences"])
                    for r in valid), numeric=(1, 2, 3, 4, 8), ident="plan-valid"),
            "<h2>Layouts it refuses</h2>\n",
            table(("GPU", "GPUs", "TP", "PP", "EP", "why"),
                   ((as_str(r["gpu"]), r["gpus"], r["tp"], r["pp"], r["ep"],
                     "; ".join(as_strs(r["reasons"]))) for r in refused), numeric=(1, 2, 3, 4),
                   ident="plan-refused")]
    scope = f"{esc(as_str(doc['engine']))} · {as_int(doc['context']):,} tokens a sequence"
    return page(label_of(doc), f"{esc(origin(model))}<br>{scope}", body, doc)
