"""Self-contained HTML reports (``--format html``) for show, diff, compare and estimate.

Each page is drawn from the command's JSON document (the same dict ``--json`` prints, embedded in
the page as ``<script type="application/json" id="inspector-data">``), by hand-written SVG computed
here: no charting library, no script from elsewhere, no font, no request. Why not a charting
library: the ones that draw a treemap or a waterfall (plotly, vega) run in the browser from a
bundle of 1-4 MB that would have to be inlined in every page, and would draw from data at view time,
so the page would show nothing without scripts; SVG computed here is a few kilobytes, exact (the
areas are the figures) and visible with scripts off.

Safety: every string from a checkpoint goes through ``text.sanitize`` and then HTML escaping
(``_t``); the embedded JSON has ``<``, ``>`` and ``&`` as JSON escapes, so it cannot close its
script element; a Content-Security-Policy allows exactly the page's one style block and one script
(by hash) and no connection, frame, image or font from anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from inspector.render.text import natural_key, sanitize

Doc = Mapping[str, object]

GENERATOR: Final = "inspector html report"
#: the treemap's and charts' drawing size (SVG user units)
TREEMAP_W: Final = 1000.0
TREEMAP_H: Final = 560.0
#: at most this many tensor rectangles in a treemap, and rows in a tensor list (the rest summed)
MAX_LEAVES: Final = 3000
MAX_ROWS: Final = 20000

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

#: one colour a dtype family (treemap leaves, by-dtype legend), and a fallback cycle
DTYPE_COLOURS: Final = {
    "F32": "#4e79a7", "F64": "#2f4b7c", "BF16": "#59a14f", "F16": "#8cd17d", "F8_E4M3": "#f28e2b",
    "F8_E5M2": "#ffbe7d", "I8": "#e15759", "U8": "#ff9d9a", "I32": "#b07aa1", "U32": "#d4a6c8",
    "I64": "#9d7660", "BOOL": "#bab0ac", "I16": "#79706e", "U16": "#d7b5a6",
}
CYCLE: Final = ("#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#86bcb6", "#f1ce63", "#a0cbe8", "#d37295",
                "#fabfd2", "#b6992d", "#499894", "#e49444")
_RANGE: Final = re.compile(r"\{(\d+)[–-](\d+)\}")


# --- the page ----------------------------------------------------------------------------------


def page(title: str, subtitle: str, body: Iterable[str], doc: Doc) -> str:
    """A whole report: head with its policy, the body's sections, the JSON it was drawn from."""
    script_hash = _hash(SCRIPT)
    style_hash = _hash(STYLE)
    policy = ("default-src 'none'; img-src data:; connect-src 'none'; font-src 'none'; frame-src 'none'; "
              f"base-uri 'none'; form-action 'none'; style-src '{style_hash}'; script-src '{script_hash}'")
    data = json.dumps(doc, ensure_ascii=True, separators=(",", ":"))
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return "".join((
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n",
        f"<meta name=\"generator\" content=\"{GENERATOR}\">\n",
        "<meta name=\"referrer\" content=\"no-referrer\">\n",
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n",
        f"<title>{_t(title)}</title>\n<style>{STYLE}</style></head>\n<body>\n",
        f"<h1>{_t(title)}</h1>\n<p class=\"sub\">{subtitle}</p>\n",
        *body,
        "<footer>Drawn by inspector from the JSON document below (schema_version ",
        _t(str(doc.get("schema_version", ""))),
        "); every figure is counted from the files' headers and config.</footer>\n",
        f"<script type=\"application/json\" id=\"inspector-data\">{data}</script>\n",
        f"<script>{SCRIPT}</script>\n</body></html>\n",
    ))


def is_report(head: bytes) -> bool:
    """Whether a file's first bytes are one of these reports (``-o`` replaces only those)."""
    return f"<meta name=\"generator\" content=\"{GENERATOR}\">".encode() in head[:2048]


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _t(text: object) -> str:
    """Untrusted text as inert HTML text or attribute value: the one sanitiser, then escaping."""
    return html.escape(sanitize(str(text)), quote=True)


def _n(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else (
        "unknown" if value is None else _t(value))


def _short(value: int, unit: str = "") -> str:
    for size, mark in ((10**12, " T"), (10**9, " B"), (10**6, " M"), (10**3, " K")):
        if abs(value) >= size:
            return f"{value / size:.2f}{mark}{unit}"
    return f"{value:,}{' ' + unit if unit else ''}"


def _gib(value: int) -> str:
    return f"{value / 2**30:,.2f} GiB"


def _figure(key: str, value: object, unit: str, ident: str = "") -> str:
    attr = f" id=\"{ident}\"" if ident else ""
    data = f" data-value=\"{value}\"" if isinstance(value, int) and not isinstance(value, bool) else ""
    return (f"<div class=\"figure\"><div class=\"k\">{_t(key)}</div><div class=\"v\"{attr}{data}>{_n(value)}</div>"
            f"<div class=\"u\">{unit}</div></div>")


def _table(head: Sequence[str], rows: Iterable[Sequence[object]], numeric: Iterable[int] = (),
           ident: str = "") -> str:
    nums = set(numeric)
    attr = f' id="{ident}"' if ident else ""
    out = [f"<table{attr}><thead><tr>"]
    out += [("<th class=\"n\">" if i in nums else "<th>") + f"{_t(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(
            f"<td class=\"n\">{_n(v)}</td>" if i in nums else f"<td>{_t(v if v is not None else '')}</td>"
            for i, v in enumerate(row)) + "</tr>")
    out.append("</tbody></table>\n")
    return "".join(out)


def _notes(notes: Iterable[object], css: str = "note") -> str:
    return "".join(f"<p class=\"{css}\">{_t(n)}</p>\n" for n in notes)


# --- reading the documents (typed views of the JSON) --------------------------------------------


def _obj(value: object) -> Doc:
    return value if isinstance(value, Mapping) else {}


def _objs(value: object) -> list[Doc]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _strs(value: object) -> list[str]:
    return [v for v in _list(value) if isinstance(v, str)]


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _label(doc: Doc) -> str:
    model = _obj(doc.get("model"))
    return _str(model.get("label")) or _str(model.get("repo_id")) or "model"


def _origin(model: Doc) -> str:
    rev = _str(model.get("revision"))
    where = _str(model.get("path")) or _str(model.get("repo_id"))
    return " · ".join(x for x in (_str(model.get("origin")), _str(model.get("format")), where,
                                  f"revision {rev[:12]}" if rev else "") if x)


# --- treemap ------------------------------------------------------------------------------------


Rect = tuple[float, float, float, float]


def squarify(sizes: Sequence[float], x: float, y: float, w: float, h: float) -> list[Rect]:
    """Rectangles tiling (x, y, w, h) with areas proportional to ``sizes`` (in their order), laid out
    by the squarified algorithm (Bruls, Huizing and van Wijk, 2000): rows of the largest first, each
    row added to while it makes its worst aspect ratio better."""
    total = sum(sizes)
    out: list[Rect] = [(x, y, 0.0, 0.0)] * len(sizes)
    if total <= 0 or w <= 0 or h <= 0:
        return out
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    order = [i for i in order if sizes[i] > 0]
    scale = w * h / total
    areas = {i: sizes[i] * scale for i in order}

    def worst(row: list[float], side: float) -> float:
        s = sum(row)
        return max(side * side * max(row) / (s * s), s * s / (side * side * min(row)))

    k = 0
    while k < len(order):
        side = min(w, h)
        if side <= 1e-9:  # only rounding is left: the rest have no area
            break
        row = [order[k]]
        k += 1
        while k < len(order) and worst([areas[i] for i in [*row, order[k]]], side) <= \
                worst([areas[i] for i in row], side):
            row.append(order[k])
            k += 1
        s = sum(areas[i] for i in row)
        if w >= h:  # a column on the left
            cw = s / h
            yy = y
            for i in row:
                out[i] = (x, yy, cw, areas[i] / cw)
                yy += areas[i] / cw
            x, w = x + cw, max(0.0, w - cw)
        else:  # a row along the top
            rh = s / w
            xx = x
            for i in row:
                out[i] = (xx, y, areas[i] / rh, rh)
                xx += areas[i] / rh
            y, h = y + rh, max(0.0, h - rh)
    return out


def _colour(key: str, palette: dict[str, str]) -> str:
    if key not in palette:
        palette[key] = DTYPE_COLOURS.get(key) or CYCLE[len([k for k in palette if k not in DTYPE_COLOURS])
                                                         % len(CYCLE)]
    return palette[key]


def _block_of(name: str) -> str:
    """A collapsed tensor name's layer block: ``model.layers.{0–31}`` for ``model.layers.{0–31}.mlp…``."""
    m = _RANGE.search(name)
    return name[: m.end()] if m else "outside layer blocks"


def _elements(t: Doc) -> int:
    shape = t.get("shape")
    dims = [d for d in shape if isinstance(d, int)] if isinstance(shape, list) else []
    return math.prod(dims) * max(1, _int(t.get("count")))


def treemap(by_role: list[Doc], tensors: list[Doc]) -> tuple[str, dict[str, str]]:
    """The parameters as nested rectangles: role (area = the role's parameters) → layer block →
    tensor (each as a share of its role by its elements; colour = dtype). Roles with no parameters
    (buffers, quantisation scales alone) have no area and are listed under the map instead."""
    roles = [(r, _int(r.get("parameters"))) for r in by_role if _int(r.get("parameters")) > 0]
    total = sum(p for _, p in roles)
    palette: dict[str, str] = {}
    if total == 0:
        return "<p class=\"note\">No parameters to draw.</p>\n", palette
    rects = squarify([p for _, p in roles], 0, 0, TREEMAP_W, TREEMAP_H)
    by_role_tensors: dict[str, list[Doc]] = {}
    for t in tensors:
        by_role_tensors.setdefault(_str(t.get("role")), []).append(t)
    budget = max(1, MAX_LEAVES // max(1, len(roles)))
    out = [f"<svg id=\"treemap\" viewBox=\"0 0 {TREEMAP_W:g} {TREEMAP_H:g}\" width=\"{TREEMAP_W:g}\" "
           f"height=\"{TREEMAP_H:g}\" role=\"img\" aria-label=\"parameters by role, layer block and tensor\">"]
    for (role, params), (x, y, w, h) in zip(roles, rects, strict=True):
        name = _str(role.get("role"))
        out.append(f"<g class=\"role-group\" data-role=\"{_t(name)}\">")
        members = [t for t in by_role_tensors.get(name, []) if _str(t.get("kind")) == "parameter"] or \
            by_role_tensors.get(name, [])
        blocks: dict[str, list[Doc]] = {}
        for t in members:
            blocks.setdefault(_block_of(_str(t.get("name"))), []).append(t)
        names = sorted(blocks, key=natural_key)
        sizes = [float(sum(_elements(t) for t in blocks[b])) for b in names]
        for (bx, by, bw, bh), block in zip(squarify(sizes, x, y, w, h), names, strict=True):
            leaves = sorted(blocks[block], key=lambda t: -_elements(t))
            kept, rest = leaves[:budget], leaves[budget:]
            leaf_sizes = [float(_elements(t)) for t in kept] + ([float(sum(_elements(t) for t in rest))]
                                                                 if rest else [])
            for i, (lx, ly, lw, lh) in enumerate(squarify(leaf_sizes, bx, by, bw, bh)):
                if i < len(kept):
                    t = kept[i]
                    dtype = _str(t.get("dtype"))
                    tip = (f"{_str(t.get('name'))} {_str(json.dumps(t.get('shape')))} {dtype}"
                           f"{' ×' + str(_int(t.get('count'))) if _int(t.get('count')) > 1 else ''}: "
                           f"{_elements(t):,} elements")
                else:
                    dtype, tip = "", f"{len(rest):,} more tensors of {block}"
                out.append(f"<rect class=\"leaf\" x=\"{lx:.4f}\" y=\"{ly:.4f}\" width=\"{lw:.4f}\" "
                           f"height=\"{lh:.4f}\" fill=\"{_colour(dtype, palette) if dtype else '#cccccc'}\" "
                           f"stroke=\"#ffffff\" stroke-width=\"0.5\"><title>{_t(tip)}</title></rect>")
        share = params / total
        out.append(f"<rect class=\"role\" data-role=\"{_t(name)}\" data-parameters=\"{params}\" x=\"{x:.4f}\" "
                   f"y=\"{y:.4f}\" width=\"{w:.4f}\" height=\"{h:.4f}\" fill=\"none\" stroke=\"#1d2330\" "
                   f"stroke-width=\"1.5\"><title>{_t(name)}: {params:,} parameters ({share:.2%})</title></rect>")
        if w > 60 and h > 28:
            out.append(f"<text x=\"{x + 4:.1f}\" y=\"{y + 14:.1f}\" font-weight=\"600\">{_t(name)}</text>"
                       f"<text x=\"{x + 4:.1f}\" y=\"{y + 27:.1f}\">{_short(params)} · {share:.1%}</text>")
        out.append("</g>")
    out.append("</svg>\n")
    return "".join(out), palette


def _legend_svg(palette: Mapping[str, str]) -> str:
    """The colour key, drawn as SVG (the page's policy admits no style attributes)."""
    if not palette:
        return ""
    items = list(palette.items())
    width = 110
    out = [f"<svg class=\"legend-svg\" viewBox=\"0 0 {TREEMAP_W:g} 22\" width=\"{TREEMAP_W:g}\" height=\"22\">"]
    for i, (key, colour) in enumerate(items[: int(TREEMAP_W // width)]):
        out.append(f"<rect x=\"{i * width}\" y=\"5\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
                   f"<text x=\"{i * width + 16}\" y=\"15\">{_t(key)}</text>")
    out.append("</svg>\n")
    return "".join(out)


# --- show ---------------------------------------------------------------------------------------


def show_html(doc: Doc) -> str:
    """``inspect MODEL --format html``: headline figures, the treemap, the tables, the tensor list."""
    model = _obj(doc.get("model"))
    totals = _obj(doc.get("totals"))
    config = _obj(doc.get("config"))
    body = ["<div class=\"figures\">",
            _figure("Parameters", _int(totals.get("parameters")), "logical count: weights of the model",
                    "headline-parameters"),
            _figure("Bytes", _int(totals.get("bytes")), f"{_gib(_int(totals.get('bytes')))} of tensor data",
                    "headline-bytes"),
            _figure("Tensors", _int(totals.get("tensors")), f"in {_int(totals.get('shards')):,} file(s)",
                    "headline-tensors"),
            _figure("Hub total", _int(totals.get("hub_total")), "every element, as the Hub's page counts"),
            "</div>\n"]
    arch = ", ".join(_strs(config.get("architectures")))
    facts = [(k, config.get(k)) for k in ("model_type", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
                                          "intermediate_size", "vocab_size", "max_position", "dtype")
             if config.get(k) is not None]
    if arch or facts:
        body.append("<p class=\"note\">" + _t(arch) + (" · " if arch and facts else "") +
                    " · ".join(f"{_t(k)} {_n(v)}" for k, v in facts) + "</p>\n")
    components = _objs(doc.get("components"))
    if components:
        body.append("<h2>Components</h2>\n")
        body.append(_table(("component", "class", "tensors", "parameters", "bytes", "dtype"),
                           ((_str(c.get("name")), _str(c.get("class")),
                             _int(c.get("tensors")) if c.get("tensors") else "—",
                             _int(c.get("parameters")) if c.get("tensors") else "no weights",
                             _int(c.get("bytes")) if c.get("tensors") else "",
                             ", ".join(_strs(c.get("dtypes"))))
                            for c in components), numeric=(2, 3, 4), ident="components"))
    by_role = _objs(doc.get("by_role"))
    tensors = _objs(doc.get("tensors"))
    svg, palette = treemap(by_role, tensors)
    body += ["<h2>Where the parameters are</h2>\n",
             "<p class=\"note\">Area: parameters (each role's rectangle is its share of the total). Inside a "
             "role: its layer blocks, then its tensors; colour: dtype. Hover for names and counts.</p>\n",
             svg, _legend_svg(palette)]
    empty = [r for r in by_role if _int(r.get("parameters")) == 0]
    if empty:
        body.append(_notes([f"not drawn (no parameters): {_str(r.get('role'))} {_int(r.get('tensors')):,} "
                            f"tensor(s), {_int(r.get('bytes')):,} B" for r in empty]))
    total = max(1, _int(totals.get("parameters")))
    body += ["<h2>By role</h2>\n", _table(
        ("role", "tensors", "parameters", "share", "bytes"),
        ((_str(r.get("role")), _int(r.get("tensors")), _int(r.get("parameters")),
          f"{_int(r.get('parameters')) / total:.2%}", _int(r.get("bytes"))) for r in by_role),
        numeric=(1, 2, 4), ident="by-role")]
    body += ["<h2>By dtype</h2>\n", _table(
        ("dtype", "tensors", "elements", "of which parameters", "bytes"),
        ((_str(d.get("dtype")), _int(d.get("tensors")), _int(d.get("elements")), _int(d.get("parameters")),
          _int(d.get("bytes"))) for d in _objs(doc.get("by_dtype"))), numeric=(1, 2, 3, 4), ident="by-dtype")]
    groups = _objs(doc.get("layer_groups"))
    if groups:
        body += ["<h2>Layer blocks</h2>\n", _table(
            ("stack", "layers", "tensors each", "parameters each", "bytes each"),
            ((_str(g.get("stack")), f"{_int(g.get('first'))}–{_int(g.get('last'))} ×{_int(g.get('count'))}",
              _int(g.get("tensors_each")), _int(g.get("parameters_each")), _int(g.get("bytes_each")))
             for g in groups), numeric=(2, 3, 4))]
    tok = _obj(doc.get("tokenizer"))
    if tok:
        body += ["<h2>Tokenizer</h2>\n", _table(("figure", "value"), (
            (k, json.dumps(v) if isinstance(v, list | dict) else v) for k, v in tok.items()
            if (v is not None and not isinstance(v, list | dict)) or (isinstance(v, list) and v)))]
    body.append(_tensor_list(tensors, _int(totals.get("tensors"))))
    notes = doc.get("notes")
    if isinstance(notes, list) and notes:
        body += ["<h2>Notes</h2>\n", _notes(notes)]
    return page(_label(doc), _t(_origin(model)), body, doc)


#: a tensor list this long or shorter is shown open; a longer one behind its summary line
OPEN_ROWS: Final = 300


def _tensor_list(tensors: list[Doc], count: int) -> str:
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
        name = _str(t.get("name"))
        out.append(f"<tr data-name=\"{_t(name.lower())}\"><td class=\"name\">{_t(name)}</td>"
                   f"<td>{_t(json.dumps(t.get('shape')))}</td><td>{_t(_str(t.get('dtype')))}</td>"
                   f"<td class=\"n\">{_n(_int(t.get('count')) or 1)}</td><td>{_t(_str(t.get('role')))}</td>"
                   f"<td>{_t(_str(t.get('file')))}</td></tr>")
    out.append("</tbody></table></details>\n")
    return "".join(out)


# --- diff ---------------------------------------------------------------------------------------


WATER_W: Final = 1000.0
WATER_H: Final = 380.0


def waterfall(start: int, end: int, steps: Sequence[tuple[str, int]], start_label: str, end_label: str) -> str:
    """A waterfall from ``start`` to ``end``: one floating bar per step (its signed height is its
    delta), the totals as bars from the axis. The axis starts below the lowest running total, at a
    round figure, so that the steps are not lost beside the totals (the axis' first figure is shown)."""
    running = [start]
    for _, delta in steps:
        running.append(running[-1] + delta)
    low, high = min(*running, end), max(*running, end)
    span = max(1, high - low)
    floor = max(0, low - span // 2)
    step10 = 10 ** max(0, len(str(max(1, floor))) - 2)
    floor = floor // step10 * step10
    top = high + span // 10
    plot_h, base_y, left = WATER_H - 70, WATER_H - 50, 70.0
    scale = plot_h / max(1, top - floor)
    bars = len(steps) + 2
    slot = (WATER_W - left - 10) / bars
    width = slot * 0.6

    def ypos(value: int) -> float:
        return float(base_y - (value - floor) * scale)

    out = [f"<svg id=\"waterfall\" viewBox=\"0 0 {WATER_W:g} {WATER_H:g}\" width=\"{WATER_W:g}\" "
           f"height=\"{WATER_H:g}\" role=\"img\" aria-label=\"waterfall from A to B\" "
           f"data-scale=\"{scale!r}\" data-floor=\"{floor}\">",
           f"<line x1=\"{left}\" y1=\"{base_y}\" x2=\"{WATER_W - 10}\" y2=\"{base_y}\" stroke=\"#5b6475\"/>",
           f"<text x=\"4\" y=\"{base_y + 4:.1f}\">{_short(floor)}</text>",
           f"<text x=\"4\" y=\"{ypos(high) + 4:.1f}\">{_short(high)}</text>"]

    def bar(i: int, lo: int, hi: int, cls: str, fill: str, label: str, value: int, tip: str) -> None:
        x = left + i * slot + (slot - width) / 2
        y1, y2 = ypos(max(lo, hi)), ypos(min(lo, hi))
        out.append(f"<rect class=\"{cls}\" data-value=\"{value}\" x=\"{x:.3f}\" y=\"{y1:.4f}\" "
                   f"width=\"{width:.3f}\" height=\"{y2 - y1:.4f}\" fill=\"{fill}\"><title>{_t(tip)}</title></rect>")
        sign = "+" if cls == "step" and value > 0 else ""
        out.append(f"<text x=\"{x + width / 2:.1f}\" y=\"{y1 - 4:.1f}\" text-anchor=\"middle\">"
                   f"{sign}{_short(value)}</text>")
        words = label if len(label) <= 22 else label[:21] + "…"
        out.append(f"<text x=\"{x + width / 2:.1f}\" y=\"{base_y + 16:.1f}\" text-anchor=\"middle\">{_t(words)}</text>")

    bar(0, floor, start, "total start", "#4e79a7", start_label, start, f"{start_label}: {start:,}")
    for i, (label, delta) in enumerate(steps, start=1):
        lo = running[i - 1]
        bar(i, lo, lo + delta, "step", "#2e8b57" if delta >= 0 else "#c0392b", label, delta,
            f"{label}: {delta:+,} ({running[i - 1]:,} → {running[i]:,})")
    bar(bars - 1, floor, end, "total end", "#4e79a7", end_label, end, f"{end_label}: {end:,}")
    out.append("</svg>\n")
    return "".join(out)


def diff_html(doc: Doc) -> str:
    """``inspect diff A B --format html``: the waterfall of causes, each cause's arithmetic, the
    role and dtype tables and the changed tensors. A PEFT adapter's check gets its tables."""
    if doc.get("kind") == "adapter":
        return adapter_html(doc)
    a, b = _obj(doc.get("a")), _obj(doc.get("b"))
    la, lb = _label(a), _label(b)
    pa, pb = _int(a.get("parameters")), _int(b.get("parameters"))
    causes = _objs(doc.get("causes"))
    steps = [(_str(c.get("label")) or _str(c.get("cause")), _int(c.get("delta"))) for c in causes]
    residual = _int(doc.get("residual"))
    if residual:
        steps.append(("other changes", residual))
    gap = pb - pa
    body = ["<div class=\"figures\">", _figure("A: parameters", pa, _t(la)), _figure("B: parameters", pb, _t(lb)),
            _figure("Gap", gap, "B − A, explained below", "headline-gap"),
            _figure("Bytes gap", _int(_obj(doc.get("delta")).get("bytes")), "B − A, tensor data"), "</div>\n"]
    if doc.get("identical") is True:
        body.append("<p>The two models hold the same tensors.</p>\n")
    body += ["<h2>From A to B, cause by cause</h2>\n",
             waterfall(pa, pb, steps, "A", "B"),
             f"<p class=\"note\">{_n(pa)} {' '.join(f'{d:+,}' for _, d in steps)} = {_n(pb)}</p>\n"]
    rows: list[str] = ["<table id=\"causes\"><thead><tr><th>cause</th><th class=\"n\">parameters</th>"
                       "<th>arithmetic</th></tr></thead><tbody>"]
    for c in causes:
        items = _objs(c.get("items"))
        arithmetic = "<br>".join(_arithmetic(i) for i in items)
        rows.append(f"<tr class=\"cause\" data-delta=\"{_int(c.get('delta'))}\"><td>{_t(_str(c.get('label')))}</td>"
                    f"<td class=\"n\">{_int(c.get('delta')):+,}</td><td class=\"name\">{arithmetic}</td></tr>")
    if residual:
        items = _objs(doc.get("residual_items"))
        rows.append(f"<tr class=\"cause\" data-delta=\"{residual}\"><td>other changes</td><td class=\"n\">"
                    f"{residual:+,}</td><td class=\"name\">" + "<br>".join(_arithmetic(i) for i in items) +
                    "</td></tr>")
    rows.append(f"<tr><th>gap</th><th class=\"n\">{gap:+,}</th><th></th></tr></tbody></table>\n")
    body += rows
    body += ["<h2>Parameters by role</h2>\n", _table(
        ("role", "A", "B", "delta"), ((_str(r.get("role")), _int(r.get("a")), _int(r.get("b")),
                                     f"{_int(r.get('delta')):+,}") for r in _objs(doc.get("roles"))),
        numeric=(1, 2, 3))]
    body += ["<h2>Elements by dtype</h2>\n", _table(
        ("dtype", "A", "B"), ((_str(r.get("dtype")), _int(r.get("a")), _int(r.get("b")))
                              for r in _objs(doc.get("dtypes"))), numeric=(1, 2))]
    changes = _objs(doc.get("changes"))
    if changes:
        body += ["<h2>Changed tensors</h2>\n", _table(
            ("change", "tensor", "count", "A", "B"),
            ((_str(c.get("kind")), _str(c.get("name")), _int(c.get("count")),
              f"{json.dumps(c.get('shape_a'))} {_str(c.get('dtype_a'))}" if c.get("shape_a") is not None else "—",
              f"{json.dumps(c.get('shape_b'))} {_str(c.get('dtype_b'))}" if c.get("shape_b") is not None else "—")
             for c in changes[:MAX_ROWS]), numeric=(2,), ident="changes")]
    notes = doc.get("notes")
    if isinstance(notes, list) and notes:
        body += ["<h2>Notes</h2>\n", _notes(notes)]
    return page(f"{la} → {lb}", f"A: {_t(_origin(_obj(a.get('model'))))}<br>B: {_t(_origin(_obj(b.get('model'))))}",
                body, doc)


def _arithmetic(item: Doc) -> str:
    """One tensor's part of a cause: its formula (per tensor), times the tensors it holds for."""
    count = _int(item.get("count"))
    times = f"{count} × " if count > 1 else ""
    return (f"{_t(_str(item.get('tensor')))}{' ×' + str(count) if count > 1 else ''}: {times}"
            f"{_t(_str(item.get('formula')))} = {_int(item.get('delta')):+,}")


def adapter_html(doc: Doc) -> str:
    """A PEFT adapter checked against its base: its parameters and share of the base, each adapted
    module with its LoRA arithmetic, and every problem found."""
    base, adapter = _obj(doc.get("base")), _obj(doc.get("adapter"))
    problems = _strs(doc.get("problems"))
    share = doc.get("share_of_base")
    body = ["<div class=\"figures\">",
            _figure("Adapter parameters", _int(doc.get("parameters")),
                    f"{share:.4%} of the base" if isinstance(share, float) else "", "headline-parameters"),
            _figure("Base parameters", _int(base.get("parameters")), _t(_label(base))),
            _figure("Rank", doc.get("rank"), f"alpha {_n(doc.get('alpha'))} · {_t(_str(doc.get('peft_type')))}"),
            _figure("Problems", len(problems), "none: it matches its base" if not problems else "listed below",
                    "headline-problems"), "</div>\n",
            _notes([f"target modules: {', '.join(_strs(doc.get('target_modules')))}",
                    f"base_model_name_or_path: {_str(doc.get('base_model_name_or_path')) or 'not given'}"])]
    if problems:
        body += ["<h2>Problems</h2>\n", _notes(problems, "note warn")]
    body += ["<h2>Adapted modules</h2>\n", _table(
        ("module", "layers", "rank", "lora_A", "lora_B", "base weight", "parameters", "arithmetic"),
        ((_str(m.get("module")), _int(m.get("layers")), _int(m.get("rank")), json.dumps(m.get("lora_a")),
          json.dumps(m.get("lora_b")), json.dumps(m.get("base_shape")), _int(m.get("parameters")),
          _str(m.get("formula"))) for m in _objs(doc.get("modules"))), numeric=(1, 2, 6), ident="modules")]
    other = _objs(doc.get("other"))
    if other:
        body += ["<h2>Other tensors</h2>\n", _table(("tensor", "parameters"), (
            (_str(o.get("tensor")), _int(o.get("parameters"))) for o in other), numeric=(1,))]
    return page(f"{_label(adapter)} on {_label(base)}",
                f"adapter: {_t(_origin(_obj(adapter.get('model'))))}<br>base: {_t(_origin(_obj(base.get('model'))))}",
                body, doc)


# --- compare ------------------------------------------------------------------------------------


def compare_html(doc: Doc) -> str:
    """``inspect compare --format html``: one bar per model on one scale, split by role, and the table."""
    models = _objs(doc.get("models"))
    roles: list[str] = []
    for m in models:
        for r in _obj(m.get("parameters_by_role")):
            if r not in roles:
                roles.append(r)
    palette: dict[str, str] = {}
    biggest = max((_int(_obj(m.get("totals")).get("parameters")) for m in models), default=1) or 1
    row_h, left, width = 34.0, 230.0, TREEMAP_W - 300
    height = row_h * len(models) + 30
    out = [f"<svg id=\"compare-bars\" viewBox=\"0 0 {TREEMAP_W:g} {height:g}\" width=\"{TREEMAP_W:g}\" "
           f"height=\"{height:g}\" role=\"img\" aria-label=\"parameters by role, one bar per model\">"]
    for i, m in enumerate(models):
        y = 10 + i * row_h
        label = _label(m)
        total = _int(_obj(m.get("totals")).get("parameters"))
        out.append(f"<text x=\"0\" y=\"{y + 17:.1f}\">{_t(label if len(label) <= 34 else label[:33] + '…')}</text>")
        x = left
        for role in roles:
            value = _int(_obj(m.get("parameters_by_role")).get(role))
            if value <= 0:
                continue
            w = width * value / biggest
            out.append(f"<rect class=\"part\" data-model=\"{i}\" data-role=\"{_t(role)}\" data-value=\"{value}\" "
                       f"x=\"{x:.4f}\" y=\"{y:.1f}\" width=\"{w:.4f}\" height=\"{row_h - 10:.1f}\" "
                       f"fill=\"{_colour(role, palette)}\"><title>{_t(label)}: {_t(role)} {value:,}</title></rect>")
            x += w
        out.append(f"<text x=\"{x + 4:.1f}\" y=\"{y + 17:.1f}\">{_short(total)}</text>")
    out.append("</svg>\n")
    heads = ["", *(_label(m) for m in models)]
    rows = [[_str(r.get("label")), *(v if v is not None else "—" for v in _list(r.get("values")))]
            for r in _objs(doc.get("rows"))]
    body = ["<h2>Parameters by role, one scale</h2>\n", "".join(out), _legend_svg(palette),
            "<h2>Side by side</h2>\n",
            _table(heads, rows, numeric=range(1, len(heads)), ident="compare-table")]
    return page("compare: " + " · ".join(_label(m) for m in models), f"{len(models)} models", body, doc)


# --- estimate -----------------------------------------------------------------------------------


def budget_bar(fit: Doc) -> str:
    """The device's memory as one bar: weights, KV cache, each engine term, what is left, and what
    the engine holds back (vLLM's 1 − utilization). The parts sum to the budget; when they do not
    fit, the bar is as long as the need and the budget is marked on it."""
    budget = _int(fit.get("budget_bytes"))
    usable = _int(fit.get("usable_bytes")) or budget
    parts = [("weights", _int(fit.get("weights_bytes")), "#4e79a7"),
             ("KV cache", _int(fit.get("kv_bytes")), "#f28e2b")]
    parts += [(_str(t.get("name")), _int(t.get("bytes")), CYCLE[i % len(CYCLE)])
              for i, t in enumerate(_objs(fit.get("terms"))) if _int(t.get("bytes"))]
    used = sum(v for _, v, _ in parts)
    if used <= usable:  # the parts fill the budget: what is used, what is left, what vLLM keeps back
        parts.append(("free", usable - used, "#e8ecf2"))
        if usable < budget:
            parts.append(("held back (1 − utilization)", budget - usable, "#bab0ac"))
    whole = max(budget, used)
    left, width, h = 0.0, TREEMAP_W, 46.0
    tall = 46 + 62 + 18 * ((len(parts) + 3) // 4)
    out = [f"<svg id=\"budget-bar\" viewBox=\"0 0 {TREEMAP_W:g} {tall}\" width=\"{TREEMAP_W:g}\" height=\"{tall}\" "
           f"role=\"img\" aria-label=\"the device's memory\" data-budget=\"{budget}\" data-width=\"{width:g}\">"]
    x = left
    for name, value, colour in parts:
        w = width * value / whole
        out.append(f"<rect class=\"part\" data-name=\"{_t(name)}\" data-bytes=\"{value}\" x=\"{x:.5f}\" y=\"10\" "
                   f"width=\"{w:.5f}\" height=\"{h:g}\" fill=\"{colour}\" stroke=\"#ffffff\" stroke-width=\"0.5\">"
                   f"<title>{_t(name)}: {value:,} B ({_gib(value)})</title></rect>")
        if w > 7 * len(name) + 8:
            out.append(f"<text x=\"{x + 4:.1f}\" y=\"30\">{_t(name)}</text>"
                       f"<text x=\"{x + 4:.1f}\" y=\"44\">{_gib(value)}</text>")
        x += w
    if usable < budget and used > usable:
        ux = width * usable / whole
        out.append(f"<line x1=\"{ux:.2f}\" y1=\"4\" x2=\"{ux:.2f}\" y2=\"{h + 16:g}\" stroke=\"#8a5300\" "
                   f"stroke-dasharray=\"4 3\"/><text x=\"{max(150.0, ux):.1f}\" y=\"{h + 42:g}\" "
                   f"text-anchor=\"end\">usable {_gib(usable)}</text>")
    for i, (name, value, colour) in enumerate(parts):  # the key, four to a line
        kx, ky = (i % 4) * 250.0, h + 62 + (i // 4) * 18
        out.append(f"<rect x=\"{kx:g}\" y=\"{ky - 10:g}\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
                   f"<text x=\"{kx + 16:g}\" y=\"{ky:g}\">{_t(name)} {_gib(value)}</text>")
    bx = width * budget / whole
    out.append(f"<line x1=\"{bx:.2f}\" y1=\"4\" x2=\"{bx:.2f}\" y2=\"{h + 16:g}\" stroke=\"#c0392b\" "
               "stroke-width=\"2\"/>"
               f"<text x=\"{min(bx, width - 4):.1f}\" y=\"{h + 28:g}\" text-anchor=\"end\">budget "
               f"{_gib(budget)}</text>")
    out.append("</svg>\n")
    return "".join(out)


def context_curve(fit: Doc) -> str:
    """Memory per device against context (from the fit's own points), the usable line, and the
    largest context that fits."""
    points = [(_int(p.get("context")), _int(p.get("total_bytes"))) for p in _objs(fit.get("curve"))]
    if len(points) < 2:
        return ""
    usable = _int(fit.get("usable_bytes")) or _int(fit.get("budget_bytes"))
    xmax = max(x for x, _ in points) or 1
    ymax = max(max(y for _, y in points), usable) * 1.05
    w, h, left, bottom = TREEMAP_W, 320.0, 80.0, 40.0
    pw, ph = w - left - 20, h - bottom - 16

    def px(x: int) -> float:
        return left + pw * x / xmax

    def py(y: float) -> float:
        return 16 + ph * (1 - y / ymax)

    path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.2f},{py(y):.2f}" for i, (x, y) in enumerate(points))
    out = [f"<svg id=\"context-curve\" viewBox=\"0 0 {w:g} {h:g}\" width=\"{w:g}\" height=\"{h:g}\" role=\"img\" "
           "aria-label=\"memory against context\">",
           f"<line x1=\"{left}\" y1=\"{py(0):.2f}\" x2=\"{w - 20}\" y2=\"{py(0):.2f}\" stroke=\"#5b6475\"/>",
           f"<line x1=\"{left}\" y1=\"16\" x2=\"{left}\" y2=\"{py(0):.2f}\" stroke=\"#5b6475\"/>",
           f"<line x1=\"{left}\" y1=\"{py(usable):.2f}\" x2=\"{w - 20}\" y2=\"{py(usable):.2f}\" stroke=\"#c0392b\" "
           "stroke-dasharray=\"6 4\"/>",
           f"<text x=\"{left + 4}\" y=\"{py(usable) - 4:.2f}\">usable {_gib(usable)}</text>",
           f"<path d=\"{path}\" fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\"/>",
           f"<text x=\"4\" y=\"{py(0) + 4:.2f}\">0</text>",
           f"<text x=\"4\" y=\"{py(ymax / 1.05) + 4:.2f}\">{_gib(int(ymax / 1.05))}</text>",
           f"<text x=\"{left}\" y=\"{h - 8}\">context 0</text>",
           f"<text x=\"{w - 20}\" y=\"{h - 8}\" text-anchor=\"end\">{xmax:,} tokens</text>"]
    most = fit.get("max_context")
    if isinstance(most, int) and most > 0:
        out.append(f"<line x1=\"{px(most):.2f}\" y1=\"16\" x2=\"{px(most):.2f}\" y2=\"{py(0):.2f}\" "
                   "stroke=\"#2e8b57\" stroke-dasharray=\"3 3\"/>"
                   f"<text x=\"{px(most) - 4:.2f}\" y=\"30\" text-anchor=\"end\">largest context {most:,}</text>")
    out.append("</svg>\n")
    return "".join(out)


def estimate_html(doc: Doc) -> str:
    """``inspect estimate --format html``: with --gpu the budget bar and the memory-against-context
    curve; every figure with its formula and source."""
    model = _obj(doc.get("model"))
    fit = _obj(doc.get("fit"))
    body: list[str] = []
    warnings = doc.get("warnings")
    if isinstance(warnings, list) and warnings:
        body.append(_notes([f"warning: {w}" for w in warnings], "note warn"))
    if fit:
        fits = fit.get("fits")
        verdict = "fits" if fits is True else "does not fit" if fits is False else "fit unknown"
        gpu = _str(fit.get("gpu"))
        where = f"{_t(gpu) + ' · ' if gpu else ''}{_int(fit.get('devices'))} device(s) · {_t(_str(fit.get('engine')))}"
        body += ["<div class=\"figures\">",
                 _figure("Verdict", verdict, _t(_str(fit.get("unknown"))) if fits is None else
                         f"{_gib(_int(fit.get('total_bytes')))} of {_gib(_int(fit.get('usable_bytes')))} usable",
                         "headline-verdict"),
                 _figure("Budget per device", _int(fit.get("budget_bytes")),
                         where,
                         "headline-budget"),
                 _figure("Largest context", fit.get("max_context") if fits is not None else None,
                         f"tokens at batch {_int(fit.get('batch'))}"), "</div>\n"]
        if fits is not None:
            body += ["<h2>The device's memory</h2>\n", budget_bar(fit)]
            body.append(_table(("part", "bytes", "GiB", "how"), [
                ("weights", _int(fit.get("weights_bytes")), _gib(_int(fit.get("weights_bytes"))),
                 _str(fit.get("weights_note")) or "as the headers hold them"),
                ("KV cache", _int(fit.get("kv_bytes")), _gib(_int(fit.get("kv_bytes"))),
                 f"{_int(fit.get('kv_bytes_per_token')):,} B/token × {_int(fit.get('context')):,} × batch "
                 f"{_int(fit.get('batch'))}; {_str(fit.get('kv_share'))}"),
                *((_str(t.get("name")), _int(t.get("bytes")), _gib(_int(t.get("bytes"))),
                   f"{_str(t.get('formula'))} [{_str(t.get('source'))}]") for t in _objs(fit.get("terms")))],
                numeric=(1, 2), ident="fit-table"))
            curve = context_curve(fit)
            if curve:
                body += ["<h2>Memory against context</h2>\n", curve]
        else:
            body.append(_notes([f"fit unknown: {_str(fit.get('unknown'))}"], "note warn"))
    body += ["<h2>Figures</h2>\n", _table(
        ("figure", "value", "unit", "formula", "source"),
        ((_str(f.get("name")), f.get("value"), _str(f.get("unit")), _str(f.get("formula")),
          _str(f.get("source"))) for f in _objs(doc.get("figures"))), numeric=(1,), ident="figures")]
    what_if = _objs(doc.get("what_if"))
    if what_if:
        body += ["<h2>Weights in other dtypes</h2>\n", _table(
            ("dtype", "bytes"), ((_str(w.get("dtype")), _int(w.get("bytes"))) for w in what_if), numeric=(1,))]
    context = _int(doc.get("context"))
    return page(_label(doc), f"{_t(_origin(model))}<br>estimates at context {context:,}, batch "
                f"{_int(doc.get('batch'))}, KV cache in {_t(_str(doc.get('kv_dtype')))}", body, doc)
