"""Self-contained HTML reports (``--format html``) for show, diff, compare and estimate.

Each page is drawn from the command's JSON document (the same typed document ``--json`` prints,
``inspector/results/``, read by its keys as mypy checks them, and embedded in the page as
``<script type="application/json" id="inspector-data">``), by hand-written SVG (``render.svg``):
no charting library, no script from elsewhere, no font, no request. Why not a charting
library: the ones that draw a treemap or a waterfall (plotly, vega) run in the browser from a
bundle of 1-4 MB that would have to be inlined in every page, and would draw from data at view time,
so the page would show nothing without scripts; SVG computed here is a few kilobytes, exact (the
areas are the figures) and visible with scripts off.

Safety: every string from a checkpoint goes through ``text.sanitize`` and then HTML escaping
(``svg.esc``); the embedded JSON has ``<``, ``>`` and ``&`` as JSON escapes, so it cannot close its
script element; a Content-Security-Policy allows exactly the page's one style block and one script
(by hash) and no connection, frame, image or font from anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from inspector.render.svg import compare_bars, esc, gib, label_of, legend, treemap, waterfall

if TYPE_CHECKING:
    from inspector.results.common import ModelDoc
    from inspector.results.compare import CompareDoc
    from inspector.results.diff import AdapterDiffDoc, CauseItem, DiffDoc, ValueRow, ValuesDoc
    from inspector.results.show import ShowDoc, TensorRow

GENERATOR: Final = "inspector html report"
#: at most this many rows in a tensor list or a list of changed tensors
MAX_ROWS: Final = 10000

STYLE: Final = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d5dae3;--bg:#fff;--soft:#f4f6f9;--up:#2e8b57;--down:#c0392b}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);
margin:0 auto;max-width:1100px;padding:24px}
h1{font-size:20px;margin:0 0 4px;word-break:break-all}h2{font-size:16px;margin:28px 0 8px}
.sub{color:var(--muted);margin:0 0 16px;word-break:break-word}
.figures{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.figure{background:var(--soft);border-radius:6px;padding:8px 14px;min-width:150px}
.figure .k{color:var(--muted);font-size:12px}.figure .v{font-size:20px;font-variant-numeric:tabular-nums}
.figure .u{color:var(--muted);font-size:12px}
table{border-collapse:collapse;margin:6px 0;width:100%}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;background:var(--soft)}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.name{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
svg{display:block;max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#1d2330}
.legend{display:flex;flex-wrap:wrap;gap:10px;margin:6px 0;font-size:12px}
.legend span{display:inline-flex;align-items:center;gap:4px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px}
.note{color:var(--muted);font-size:12px;margin:4px 0}.warn{color:#8a5300}
.up{color:var(--up)}.down{color:var(--down)}
input[type=search]{width:100%;padding:6px 8px;font-size:14px;border:1px solid var(--line);border-radius:4px}
details{margin:4px 0}summary{cursor:pointer}
footer{color:var(--muted);font-size:12px;margin-top:32px}
.verdict{font-weight:600;color:#8a5300}
table.heat{width:auto}table.heat td{width:10px;height:14px;padding:0;border:1px solid var(--bg)}
table.heat th{font-weight:400;font-size:12px;white-space:nowrap}
.heat-changed{background:var(--down)}.heat-same{background:#cfe8d8}.heat-none{background:var(--soft)}
"""

#: the page's one script: the tensor list's filter box (the page is complete without it)
SCRIPT: Final = """
(function(){
  var box=document.getElementById('filter');
  if(!box){return;}
  var rows=document.querySelectorAll('#tensor-list tbody tr');
  var shown=document.getElementById('filter-count');
  box.addEventListener('input',function(){
    var q=box.value.toLowerCase(),n=0;
    for(var i=0;i<rows.length;i++){
      var hit=rows[i].getAttribute('data-name').indexOf(q)>=0;
      rows[i].hidden=!hit;if(hit){n++;}
    }
    shown.textContent=n.toLocaleString('en-US');
  });
})();
"""



# --- the page ----------------------------------------------------------------------------------


def page(title: str, subtitle: str, body: Iterable[str], doc: Mapping[str, object]) -> str:
    """A whole report: head with its policy, the body's sections, the JSON it was drawn from."""
    script_hash = _hash(SCRIPT)
    style_hash = _hash(STYLE)
    policy = ("default-src 'none'; img-src data:; connect-src 'none'; font-src 'none'; frame-src 'none'; "
              f"base-uri 'none'; form-action 'none'; style-src '{style_hash}'; script-src '{script_hash}'")
    data = json.dumps(doc, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return "".join((
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n",
        f"<meta name=\"generator\" content=\"{GENERATOR}\">\n",
        "<meta name=\"referrer\" content=\"no-referrer\">\n",
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n",
        f"<title>{esc(title)}</title>\n<style>{STYLE}</style></head>\n<body>\n",
        f"<h1>{esc(title)}</h1>\n<p class=\"sub\">{subtitle}</p>\n",
        *body,
        "<footer>Drawn by inspector from the JSON document below (schema_version ",
        esc(str(doc["schema_version"])),
        "); every figure is counted from the files' headers and config.</footer>\n",
        f"<script type=\"application/json\" id=\"inspector-data\">{data}</script>\n",
        f"<script>{SCRIPT}</script>\n</body></html>\n",
    ))


def is_report(head: bytes) -> bool:
    """Whether a file's first bytes are one of these reports (``-o`` replaces only those)."""
    return f"<meta name=\"generator\" content=\"{GENERATOR}\">".encode() in head[:2048]


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _n(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else (
        "unknown" if value is None else esc(value))


def gib_or_unknown(value: int | None) -> str:
    return "unknown" if value is None else gib(value)


def gib_figure(key: str, value: int, unit: str, ident: str = "") -> str:
    """A size as a person reads it (GiB), the exact bytes on hover and in ``data-value``."""
    attr = f" id=\"{ident}\"" if ident else ""
    return (f"<div class=\"figure\"><div class=\"k\">{esc(key)}</div><div class=\"v\"{attr} data-value=\"{value}\" "
            f"title=\"{value:,} bytes\">{gib(value)}</div><div class=\"u\">{unit}</div></div>")


def figure(key: str, value: object, unit: str, ident: str = "") -> str:
    attr = f" id=\"{ident}\"" if ident else ""
    data = f" data-value=\"{value}\"" if isinstance(value, int) and not isinstance(value, bool) else ""
    return (f"<div class=\"figure\"><div class=\"k\">{esc(key)}</div><div class=\"v\"{attr}{data}>{_n(value)}</div>"
            f"<div class=\"u\">{unit}</div></div>")


def table(head: Sequence[str], rows: Iterable[Sequence[object]], numeric: Iterable[int] = (),
           ident: str = "") -> str:
    nums = set(numeric)
    attr = f' id="{ident}"' if ident else ""
    out = [f"<table{attr}><thead><tr>"]
    out += [("<th class=\"n\">" if i in nums else "<th>") + f"{esc(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(
            f"<td class=\"n\">{_n(v)}</td>" if i in nums else f"<td>{esc(v if v is not None else '')}</td>"
            for i, v in enumerate(row)) + "</tr>")
    out.append("</tbody></table>\n")
    return "".join(out)


def note_lines(notes: Iterable[object], css: str = "note") -> str:
    return "".join(f"<p class=\"{css}\">{esc(n)}</p>\n" for n in notes)


def origin(model: ModelDoc) -> str:
    rev = model["revision"]
    where = model["path"] or model["repo_id"]
    return " · ".join(x for x in (model["origin"], model["format"], where,
                                  f"revision {rev[:12]}" if rev else "") if x)


# --- show ---------------------------------------------------------------------------------------


def show_html(doc: ShowDoc) -> str:
    """``inspect MODEL --format html``: headline figures, the treemap, the tables, the tensor list."""
    model = doc["model"]
    totals = doc["totals"]
    config = doc["config"]
    body = ["<div class=\"figures\">",
            figure("Parameters", totals["parameters"], "logical count: weights of the model",
                    "headline-parameters"),
            figure("Bytes", totals["bytes"], f"{gib(totals['bytes'])} of tensor data",
                    "headline-bytes"),
            figure("Tensors", totals["tensors"], f"in {totals['shards']:,} file(s)",
                    "headline-tensors"),
            figure("Hub total", totals["hub_total"], "every element, as the Hub's page counts"),
            "</div>\n"]
    arch = ", ".join(config["architectures"])
    facts = [(k, config[k]) for k in ("model_type", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
                                          "intermediate_size", "vocab_size", "max_position", "dtype")
             if config[k] is not None]
    if arch or facts:
        body.append("<p class=\"note\">" + esc(arch) + (" · " if arch and facts else "") +
                    " · ".join(f"{esc(k)} {_n(v)}" for k, v in facts) + "</p>\n")
    components = doc["components"] if doc["components"] is not None else []
    if components:
        body.append("<h2>Components</h2>\n")
        body.append(table(("component", "class", "tensors", "parameters", "bytes", "dtype"),
                           ((c["name"], c["class"] or "",
                             c["tensors"] or "—",
                             c["parameters"] if c["tensors"] else "no weights",
                             c["bytes"] if c["tensors"] else "",
                             ", ".join(c["dtypes"]))
                            for c in components), numeric=(2, 3, 4), ident="components"))
    by_role = doc["by_role"]
    tensors = doc["tensors"] if doc["tensors"] is not None else []
    svg, palette = treemap(by_role, tensors)
    body += ["<h2>Where the parameters are</h2>\n",
             "<p class=\"note\">Area: parameters (each role's rectangle is its share of the total). Inside a "
             "role: its layer blocks, then its tensors; colour: role. Hover for names and counts.</p>\n",
             svg, legend(palette)]
    empty = [r for r in by_role if r["parameters"] == 0]
    if empty:
        body.append(note_lines([f"not drawn (no parameters): {r['role']} {r['tensors']:,} "
                            f"tensor(s), {r['bytes']:,} B" for r in empty]))
    total = max(1, totals["parameters"])
    body += ["<h2>By role</h2>\n", table(
        ("role", "tensors", "parameters", "share", "bytes"),
        ((r["role"], r["tensors"], r["parameters"],
          f"{r['parameters'] / total:.2%}", r["bytes"]) for r in by_role),
        numeric=(1, 2, 4), ident="by-role")]
    body += ["<h2>By dtype</h2>\n", table(
        ("dtype", "tensors", "elements", "of which parameters", "bytes"),
        ((d["dtype"], d["tensors"], d["elements"], d["parameters"],
          d["bytes"]) for d in doc["by_dtype"]), numeric=(1, 2, 3, 4), ident="by-dtype")]
    groups = doc["layer_groups"]
    if groups:
        body += ["<h2>Layer blocks</h2>\n", table(
            ("stack", "layers", "tensors each", "parameters each", "bytes each"),
            ((g["stack"], f"{g['first']}–{g['last']} ×{g['count']}",
              g["tensors_each"], g["parameters_each"], g["bytes_each"])
             for g in groups), numeric=(2, 3, 4))]
    tok = doc["tokenizer"]
    if tok is not None:
        body += ["<h2>Tokenizer</h2>\n", table(("figure", "value"), (
            (k, json.dumps(v) if isinstance(v, list | dict) else v) for k, v in tok.items()
            if (v is not None and not isinstance(v, list | dict)) or (isinstance(v, list) and v)))]
    body.append(_tensor_list(tensors, totals["tensors"]))
    notes = doc["notes"]
    if isinstance(notes, list) and notes:
        body += ["<h2>Notes</h2>\n", note_lines(notes)]
    return page(label_of(doc), esc(origin(model)), body, doc)


#: a tensor list this long or shorter is shown open; a longer one behind its summary line
OPEN_ROWS: Final = 300


def _tensor_list(tensors: list[TensorRow], count: int) -> str:
    if not tensors:
        return ""
    rows = tensors[:MAX_ROWS]
    out = ["<h2>Tensors</h2>\n",
           f"<p class=\"note\">{len(tensors):,} rows for {count:,} tensors (repeated layers and experts as one "
           f"row, ×count){'; the first ' + format(MAX_ROWS, ',') + ' shown' if len(tensors) > MAX_ROWS else ''}. "
           "Filter: <span id=\"filter-count\">" + f"{len(rows):,}</span> shown.</p>\n",
           f"<details{' open' if len(rows) <= OPEN_ROWS else ''}><summary>the list</summary>\n",
           "<input type=\"search\" id=\"filter\" placeholder=\"filter tensor names\" aria-label=\"filter\">\n",
           "<table id=\"tensor-list\"><thead><tr><th>name</th><th>shape</th><th>dtype</th><th class=\"n\">count</th>"
           "<th>role</th><th>file</th></tr></thead><tbody>"]
    for t in rows:
        name = t["name"]
        out.append(f"<tr data-name=\"{esc(name.lower())}\"><td class=\"name\">{esc(name)}</td>"
                   f"<td>{esc(json.dumps(t['shape']))}</td><td>{esc(t['dtype'])}</td>"
                   f"<td class=\"n\">{_n(t['count'] or 1)}</td><td>{esc(t['role'])}</td>"
                   f"<td>{esc(t['file'] or '')}</td></tr>")
    out.append("</tbody></table></details>\n")
    return "".join(out)


# --- diff ---------------------------------------------------------------------------------------


def diff_html(doc: DiffDoc) -> str:
    """``inspect diff A B --format html``: the waterfall of causes, each cause's arithmetic, the
    role and dtype tables and the changed tensors (a PEFT adapter's check is ``adapter_html``)."""
    a, b = doc["a"], doc["b"]
    la, lb = label_of(a), label_of(b)
    pa, pb = a["parameters"], b["parameters"]
    causes = doc["causes"]
    steps = [(c["label"] or c["cause"], c["delta"]) for c in causes]
    residual = doc["residual"]
    if residual:
        steps.append(("other changes", residual))
    gap = pb - pa
    body = ["<div class=\"figures\">", figure("A: parameters", pa, esc(la)), figure("B: parameters", pb, esc(lb)),
            figure("Gap", gap, "B − A, explained below", "headline-gap"),
            figure("Bytes gap", doc["delta"]["bytes"], "B − A, tensor data"), "</div>\n"]
    values = doc["values"] if "values" in doc and isinstance(doc["values"], dict) else None
    changed = values["counts"]["changed"] if values is not None else 0
    if doc["identical"] is True:
        body.append("<p>The two models hold the same tensors.</p>\n" if not changed else
                    f"<p class=\"verdict\">The two models hold the same tensors (names, shapes, dtypes); the values "
                    f"of {changed:,} tensor{'s' if changed != 1 else ''} differ in the sampled bytes "
                    "(<a href=\"#values\">below</a>).</p>\n")
    body += ["<h2>From A to B, cause by cause</h2>\n",
             waterfall(pa, pb, steps, "A", "B"),
             f"<p class=\"note\">{_n(pa)} {' '.join(f'{d:+,}' for _, d in steps)} = {_n(pb)}</p>\n"]
    rows: list[str] = ["<table id=\"causes\"><thead><tr><th>cause</th><th class=\"n\">parameters</th>"
                       "<th>arithmetic</th></tr></thead><tbody>"]
    for c in causes:
        items = c["items"]
        arithmetic = "<br>".join(_arithmetic(i) for i in items)
        rows.append(f"<tr class=\"cause\" data-delta=\"{c['delta']}\">"
                    f"<td>{esc(c['label'])}</td>"
                    f"<td class=\"n\">{c['delta']:+,}</td><td class=\"name\">{arithmetic}</td></tr>")
    if residual:
        items = doc["residual_items"]
        rows.append(f"<tr class=\"cause\" data-delta=\"{residual}\"><td>other changes</td><td class=\"n\">"
                    f"{residual:+,}</td><td class=\"name\">" + "<br>".join(_arithmetic(i) for i in items) +
                    "</td></tr>")
    rows.append(f"<tr><th>gap</th><th class=\"n\">{gap:+,}</th><th></th></tr></tbody></table>\n")
    body += rows
    body += ["<h2>Parameters by role</h2>\n", table(
        ("role", "A", "B", "delta"), ((r["role"], r["a"], r["b"],
                                     f"{r['delta']:+,}") for r in doc["roles"]),
        numeric=(1, 2, 3))]
    body += ["<h2>Elements by dtype</h2>\n", table(
        ("dtype", "A", "B"), ((r["dtype"], r["a"], r["b"])
                              for r in doc["dtypes"]), numeric=(1, 2))]
    changes = doc["changes"]
    if changes:
        body += ["<h2>Changed tensors</h2>\n", table(
            ("change", "tensor", "count", "A", "B"),
            ((c["kind"], c["name"], c["count"],
              f"{json.dumps(c['shape_a'])} {c['dtype_a']}" if c["shape_a"] is not None else "—",
              f"{json.dumps(c['shape_b'])} {c['dtype_b']}" if c["shape_b"] is not None else "—")
             for c in changes[:MAX_ROWS]), numeric=(2,), ident="changes")]
    if values is not None:
        body += _values_section(values)
    notes = doc["notes"]
    if isinstance(notes, list) and notes:
        body += ["<h2>Notes</h2>\n", note_lines(notes)]
    return page(f"{la} → {lb}",
                f"A: {esc(origin(a['model']))}<br>B: {esc(origin(b['model']))}",
                body, doc)


#: as the table and markdown name them (``render.diff.VALUES_LISTED``, ``VALUES_NAMED``)
_VALUES_LISTED: Final = 40


def _values_section(values: ValuesDoc) -> list[str]:
    """``diff --values``: its summary and counts, a heat map of the changed tensors by role and layer,
    and the changed and incomparable tensors by name (as many as the table names)."""
    tensors = values["tensors"]
    counts = values["counts"]
    out = ["<h2 id=\"values\">Values</h2>\n",
           "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in values["summary"]) + "</ul>\n",
           "<p class=\"note\">" + esc(", ".join(f"{count:,} {verdict}" for verdict, count in counts.items() if count))
           + f"; sampled {values['sample_bytes']:,} B a tensor</p>\n"]
    out.append(_value_heat_map(tensors))
    named = [t for t in tensors if t["verdict"] in ("changed", "incomparable")][:_VALUES_LISTED]
    if named:
        out.append(table(("tensor", "verdict", "max |Δ|", "of max |A|", "why"),
                          ((t["name"], t["verdict"], _sig(t["max_abs_delta"]),
                            _percent(t["relative_delta"]), t["why"]) for t in named),
                          numeric=(2, 3), ident="value-changes"))
    return out


def _sig(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else "—"


def _percent(value: object) -> str:
    return f"{value * 100:.3g} %" if isinstance(value, float) else "—"


def _value_heat_map(tensors: list[ValueRow]) -> str:
    """One row a role, one cell a layer: changed (any tensor of the role in that layer), the same, or none."""
    layers = sorted({t["layer"] for t in tensors if t["layer"] is not None})
    if not layers or len(layers) > 512:
        return ""
    cells: dict[tuple[str, int], bool] = {}
    for t in tensors:
        if t["layer"] is None:
            continue
        key = (t["role"], t["layer"])
        cells[key] = cells.get(key, False) or t["verdict"] == "changed"
    roles = sorted({role for role, _ in cells})
    rows = []
    for role in roles:
        tds = "".join(
            "<td class=\"heat-none\"></td>" if (role, i) not in cells else
            f"<td class=\"heat-{'changed' if cells[(role, i)] else 'same'}\" title=\"{esc(role)} layer {i}: "
            f"{'changed' if cells[(role, i)] else 'same in the sampled bytes'}\"></td>" for i in layers)
        rows.append(f"<tr><th>{esc(role)}</th>{tds}</tr>")
    return (f"<p class=\"note\">changed tensors (red) by role, one row a role, one cell a layer "
            f"({layers[0]}–{layers[-1]})</p>\n<table id=\"value-heat\" class=\"heat\"><tbody>" + "".join(rows)
            + "</tbody></table>\n")


def _arithmetic(item: CauseItem) -> str:
    """One tensor's part of a cause: its formula (per tensor), times the tensors it holds for."""
    count = item["count"]
    times = f"{count} × " if count > 1 else ""
    return (f"{esc(item['tensor'])}{' ×' + str(count) if count > 1 else ''}: {times}"
            f"{esc(item['formula'])} = {item['delta']:+,}")


def adapter_html(doc: AdapterDiffDoc) -> str:
    """A PEFT adapter checked against its base: its parameters and share of the base, each adapted
    module with its LoRA arithmetic, and every problem found."""
    base, adapter = doc["base"], doc["adapter"]
    problems = doc["problems"]
    share = doc["share_of_base"]
    body = ["<div class=\"figures\">",
            figure("Adapter parameters", doc["parameters"],
                    f"{share:.4%} of the base" if isinstance(share, float) else "", "headline-parameters"),
            figure("Base parameters", base["parameters"], esc(label_of(base))),
            figure("Rank", doc["rank"], f"alpha {_n(doc['alpha'])} · {esc(doc['peft_type'])}"),
            figure("Problems", len(problems), "none: it matches its base" if not problems else "listed below",
                    "headline-problems"), "</div>\n",
            note_lines([f"target modules: {', '.join(doc['target_modules'])}",
                    f"base_model_name_or_path: {doc['base_model_name_or_path'] or 'not given'}"])]
    if problems:
        body += ["<h2>Problems</h2>\n", note_lines(problems, "note warn")]
    body += ["<h2>Adapted modules</h2>\n", table(
        ("module", "layers", "rank", "lora_A", "lora_B", "base weight", "parameters", "arithmetic"),
        ((m["module"], m["layers"], m["rank"], json.dumps(m["lora_a"]),
          json.dumps(m["lora_b"]), json.dumps(m["base_shape"]), m["parameters"],
          m["formula"]) for m in doc["modules"]), numeric=(1, 2, 6), ident="modules")]
    other = doc["other"]
    if other:
        body += ["<h2>Other tensors</h2>\n", table(("tensor", "parameters"), (
            (o["tensor"], o["parameters"]) for o in other), numeric=(1,))]
    return page(f"{label_of(adapter)} on {label_of(base)}",
                f"adapter: {esc(origin(adapter['model']))}<br>"
                f"base: {esc(origin(base['model']))}",
                body, doc)


# --- compare ------------------------------------------------------------------------------------


def compare_html(doc: CompareDoc) -> str:
    """``inspect compare --format html``: one bar per model on one scale, split by role, and the table."""
    models = doc["models"]
    bars, palette = compare_bars(models)
    heads = ["", *(label_of(m) for m in models)]
    rows = [[r["label"], *(v if v is not None else "—" for v in r["values"])]
            for r in doc["rows"]]
    body = ["<h2>Parameters by role, one scale</h2>\n", bars, legend(palette),
            "<h2>Side by side</h2>\n",
            table(heads, rows, numeric=range(1, len(heads)), ident="compare-table")]
    return page("compare: " + " · ".join(label_of(m) for m in models), f"{len(models)} models", body, doc)
