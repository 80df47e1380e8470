"""The drawings of the HTML reports (``render.html``), as SVG text computed here: a squarified
treemap, a waterfall, bars on one scale, a budget bar and a memory-against-context curve; and the
things every part of a report shares: the escaping of untrusted text (``esc``, the one sanitiser then
HTML escaping) and a page's name for its model. The drawings read the typed documents of
``inspector/results/``: mypy holds every key read here to the document's type.

Every figure is drawn to scale from the document's own numbers, and each drawn part carries its
figure in a ``data-`` attribute, so a browser test can check the picture against the numbers.
"""

from __future__ import annotations

import colorsys
import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from inspector.analysis.facts.roles import ROLE_ORDER
from inspector.render.text import natural_key, sanitize

if TYPE_CHECKING:
    from inspector.results.common import Named
    from inspector.results.compare import CompareModel
    from inspector.results.estimate import FitDoc
    from inspector.results.show import RoleRow, TensorRow

#: the drawings' size (SVG user units)
TREEMAP_W: Final = 1000.0
TREEMAP_H: Final = 560.0
WATER_W: Final = 1000.0
WATER_H: Final = 380.0
#: at most this many tensor rectangles in a treemap (the rest of a block summed into one)
MAX_LEAVES: Final = 3000

#: the colours of the budget bar's engine terms
CYCLE: Final = ("#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#86bcb6", "#f1ce63", "#a0cbe8", "#d37295",
                "#fabfd2", "#b6992d", "#499894", "#e49444")
_RANGE: Final = re.compile(r"\{(\d+)[–-](\d+)\}")


# --- text and numbers ----------------------------------------------------------------------


def esc(text: object) -> str:
    """Untrusted text as inert HTML text or attribute value: the one sanitiser, then escaping."""
    return html.escape(sanitize(str(text)), quote=True)


def short(value: int, unit: str = "") -> str:
    for size, mark in ((10**12, " T"), (10**9, " B"), (10**6, " M"), (10**3, " K")):
        if abs(value) >= size:
            return f"{value / size:.2f}{mark}{unit}"
    return f"{value:,}{' ' + unit if unit else ''}"


def gib(value: int) -> str:
    return f"{value / 2**30:,.2f} GiB"


# --- the documents ---------------------------------------------------------------------------


def label_of(doc: Named) -> str:
    """What a page calls a model: its label, else its repo id."""
    model = doc["model"]
    return model["label"] or model["repo_id"] or "model"


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


def _hue_colour(i: int) -> str:
    """The i-th colour of the role palette: hues a golden angle apart, in three lightness bands, so
    neighbours in the role order (attn.q, attn.k …) never look alike."""
    hue = (i * 137.50776405) % 360 / 360
    light, sat = (0.45, 0.55, 0.65)[i % 3], (0.62, 0.50, 0.70)[(i // 3) % 3]
    r, g, b = colorsys.hls_to_rgb(hue, light, sat)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


#: one colour per role, the same on every page (issue 41: roles took colours from a cycle of 12, so Mixtral's
#: moe.expert.up was drawn in embedding's colour; issue 52: golden-angle hues drew moe.expert.gate 3.0 ΔE00
#: from attn.q). Chosen greedily from an sRGB grid (lightness 30-80, chroma >= 20; greys for buffer and
#: other) so that roles drawn together (one model's roles, and the roles a family of models holds) are at
#: least ~14 CIEDE2000 apart; tests/test_html.py measures every bundled model's palette.
ROLE_COLOURS: Final[dict[str, str]] = {
    "embedding": "#0022ee", "position_embedding": "#88cc00", "token_type_embedding": "#00aa88",
    "patch_embedding": "#ee4488", "cls_token": "#ccaa88", "conv_stem": "#444466", "attn.q": "#ee6622",
    "attn.k": "#66ccee", "attn.v": "#ee88ee", "attn.qkv": "#6688ee", "attn.kv": "#ee4466", "attn.o": "#006644",
    "attn.other": "#eeaa66", "attn.cross": "#aa6666", "linear_attn.in": "#aaccaa", "linear_attn.conv": "#664466",
    "linear_attn.state": "#2266aa", "linear_attn.out": "#666600", "ssm.in": "#882200", "ssm.conv": "#228800",
    "ssm.state": "#448888", "ssm.out": "#cc0022", "mlp.gate": "#eeaaaa", "mlp.up": "#aa0044",
    "mlp.gate_up": "#668866", "mlp.down": "#664400", "moe.router": "#aa88aa", "moe.expert.gate": "#aaaa66",
    "moe.expert.up": "#aa8866", "moe.expert.gate_up": "#00cc66", "moe.expert.down": "#aa6600",
    "moe.expert": "#666688", "moe.shared.gate": "#ee44aa", "moe.shared.up": "#aaaaee", "moe.shared.down": "#ee2222",
    "moe.shared": "#aa66ee", "norm": "#aa8800", "lm_head": "#aa44aa", "mtp": "#00cccc", "pooler": "#666622",
    "head": "#0066aa", "vision": "#aa2200", "projector": "#448800", "audio": "#0088aa",
    "unet.down.resnet": "#22aa88", "unet.down.attn": "#8888cc", "unet.mid.resnet": "#aa22aa",
    "unet.mid.attn": "#cc0000", "unet.up.resnet": "#008800", "unet.up.attn": "#886688", "unet.sampler": "#ee8888",
    "dit.block": "#008888", "diffusion.time": "#ee00ee", "vae.encoder": "#aa6622", "vae.decoder": "#eeaa22",
    "vae.quant": "#88aa66", "buffer": "#8c8c8c", "other": "#5a5a5a",
}


def role_colour(role: str, palette: dict[str, str]) -> str:
    """The role's colour, noted in ``palette`` (the page's legend); a role outside the table (a newer
    document) takes the next colour no role of the table has."""
    if role not in palette:
        palette[role] = ROLE_COLOURS.get(role) or _hue_colour(len(ROLE_ORDER) + sum(
            1 for k in palette if k not in ROLE_COLOURS))
    return palette[role]


def role_palette(roles: Iterable[str]) -> dict[str, str]:
    """The legend of the roles present, in the table's order."""
    palette: dict[str, str] = {}
    order = {r: i for i, r in enumerate(ROLE_ORDER)}
    for role in sorted(set(roles), key=lambda r: (order.get(r, len(order)), r)):
        role_colour(role, palette)
    return palette


def _block_of(name: str) -> str:
    """A collapsed tensor name's layer block: ``model.layers.{0–31}`` for ``model.layers.{0–31}.mlp…``."""
    m = _RANGE.search(name)
    return name[: m.end()] if m else "outside layer blocks"


def _elements(t: TensorRow) -> int:
    shape = t["shape"]
    dims = [d for d in shape]
    return math.prod(dims) * max(1, t["count"])


def treemap(by_role: list[RoleRow], tensors: list[TensorRow]) -> tuple[str, dict[str, str]]:
    """The parameters as nested rectangles: role (area = the role's parameters) → layer block →
    tensor (each as a share of its role by its elements; colour = role, dtype on hover). Roles with no parameters
    (buffers, quantisation scales alone) have no area and are listed under the map instead."""
    roles = [(r, r["parameters"]) for r in by_role if r["parameters"] > 0]
    total = sum(p for _, p in roles)
    palette = role_palette(r["role"] for r, _ in roles)
    if total == 0:
        return "<p class=\"note\">No parameters to draw.</p>\n", palette
    rects = squarify([p for _, p in roles], 0, 0, TREEMAP_W, TREEMAP_H)
    by_role_tensors: dict[str, list[TensorRow]] = {}
    for t in tensors:
        by_role_tensors.setdefault(t["role"], []).append(t)
    budget = max(1, MAX_LEAVES // max(1, len(roles)))
    out = [f"<svg id=\"treemap\" viewBox=\"0 0 {TREEMAP_W:g} {TREEMAP_H:g}\" width=\"{TREEMAP_W:g}\" "
           f"height=\"{TREEMAP_H:g}\" role=\"img\" aria-label=\"parameters by role, layer block and tensor\">"]
    for (role, params), (x, y, w, h) in zip(roles, rects, strict=True):
        name = role["role"]
        out.append(f"<g class=\"role-group\" data-role=\"{esc(name)}\">")
        members = [t for t in by_role_tensors.get(name, []) if t["kind"] == "parameter"] or \
            by_role_tensors.get(name, [])
        blocks: dict[str, list[TensorRow]] = {}
        for t in members:
            blocks.setdefault(_block_of(t["name"]), []).append(t)
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
                    dtype = t["dtype"]
                    tip = (f"{t['name']} {json.dumps(t['shape'])} {dtype}"
                           f"{' ×' + str(t['count']) if t['count'] > 1 else ''}: "
                           f"{_elements(t):,} elements")
                else:
                    tip = f"{len(rest):,} more tensors of {block}"
                out.append(f"<rect class=\"leaf\" data-role=\"{esc(name)}\" x=\"{lx:.4f}\" y=\"{ly:.4f}\" "
                           f"width=\"{lw:.4f}\" height=\"{lh:.4f}\" fill=\"{role_colour(name, palette)}\" "
                           f"stroke=\"#ffffff\" stroke-width=\"0.5\"><title>{esc(tip)}</title></rect>")
        share = params / total
        out.append(f"<rect class=\"role\" data-role=\"{esc(name)}\" data-parameters=\"{params}\" x=\"{x:.4f}\" "
                   f"y=\"{y:.4f}\" width=\"{w:.4f}\" height=\"{h:.4f}\" fill=\"none\" stroke=\"#1d2330\" "
                   f"stroke-width=\"1.5\"><title>{esc(name)}: {params:,} parameters ({share:.2%})</title></rect>")
        if w > 60 and h > 28:
            out.append(f"<text x=\"{x + 4:.1f}\" y=\"{y + 14:.1f}\" font-weight=\"600\">{esc(name)}</text>"
                       f"<text x=\"{x + 4:.1f}\" y=\"{y + 27:.1f}\">{short(params)} · {share:.1%}</text>")
        out.append("</g>")
    out.append("</svg>\n")
    return "".join(out), palette


#: the legend's cell: wide enough for the longest role name (``moe.expert.gate_up``) at 12 px
LEGEND_CELL: Final = 166.0


def legend(palette: Mapping[str, str]) -> str:
    """The colour key, every entry of ``palette`` (as many lines as it takes), drawn as SVG (the
    page's policy admits no style attributes)."""
    if not palette:
        return ""
    per_line = int(TREEMAP_W // LEGEND_CELL)
    tall = 22 * ((len(palette) + per_line - 1) // per_line)
    out = [f"<svg class=\"legend-svg\" viewBox=\"0 0 {TREEMAP_W:g} {tall}\" width=\"{TREEMAP_W:g}\" "
           f"height=\"{tall}\">"]
    for i, (key, fill) in enumerate(palette.items()):
        x, y = (i % per_line) * LEGEND_CELL, (i // per_line) * 22
        out.append(f"<g class=\"legend-entry\" data-key=\"{esc(key)}\" data-colour=\"{fill}\">"
                   f"<rect x=\"{x:g}\" y=\"{y + 5}\" width=\"12\" height=\"12\" fill=\"{fill}\"/>"
                   f"<text x=\"{x + 16:g}\" y=\"{y + 15}\">{esc(key)}</text></g>")
    out.append("</svg>\n")
    return "".join(out)


# --- diff ---------------------------------------------------------------------------------------


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
           f"<text x=\"4\" y=\"{base_y + 4:.1f}\">{short(floor)}</text>",
           f"<text x=\"4\" y=\"{ypos(high) + 4:.1f}\">{short(high)}</text>"]

    def bar(i: int, lo: int, hi: int, cls: str, fill: str, label: str, value: int, tip: str) -> None:
        x = left + i * slot + (slot - width) / 2
        y1, y2 = ypos(max(lo, hi)), ypos(min(lo, hi))
        out.append(f"<rect class=\"{cls}\" data-value=\"{value}\" x=\"{x:.3f}\" y=\"{y1:.4f}\" "
                   f"width=\"{width:.3f}\" height=\"{y2 - y1:.4f}\" fill=\"{fill}\"><title>{esc(tip)}</title></rect>")
        sign = "+" if cls == "step" and value > 0 else ""
        out.append(f"<text x=\"{x + width / 2:.1f}\" y=\"{y1 - 4:.1f}\" text-anchor=\"middle\">"
                   f"{sign}{short(value)}</text>")
        words = label if len(label) <= 22 else label[:21] + "…"
        out.append(f"<text x=\"{x + width / 2:.1f}\" y=\"{base_y + 16:.1f}\" text-anchor=\"middle\">"
                   f"{esc(words)}</text>")

    bar(0, floor, start, "total start", "#4e79a7", start_label, start, f"{start_label}: {start:,}")
    for i, (label, delta) in enumerate(steps, start=1):
        lo = running[i - 1]
        bar(i, lo, lo + delta, "step", "#2e8b57" if delta >= 0 else "#c0392b", label, delta,
            f"{label}: {delta:+,} ({running[i - 1]:,} → {running[i]:,})")
    bar(bars - 1, floor, end, "total end", "#4e79a7", end_label, end, f"{end_label}: {end:,}")
    out.append("</svg>\n")
    return "".join(out)


# --- compare ------------------------------------------------------------------------------------


def compare_bars(models: list[CompareModel]) -> tuple[str, dict[str, str]]:
    """One bar per model on one scale (the largest model's parameters fill the width), split by
    role; the colour key of the roles."""
    roles: list[str] = []
    for m in models:
        for r in m["parameters_by_role"]:
            if r not in roles:
                roles.append(r)
    palette = role_palette(roles)
    biggest = max((m["totals"]["parameters"] for m in models), default=1) or 1
    row_h, left, width = 34.0, 230.0, TREEMAP_W - 300
    height = row_h * len(models) + 30
    out = [f"<svg id=\"compare-bars\" viewBox=\"0 0 {TREEMAP_W:g} {height:g}\" width=\"{TREEMAP_W:g}\" "
           f"height=\"{height:g}\" role=\"img\" aria-label=\"parameters by role, one bar per model\">"]
    for i, m in enumerate(models):
        y = 10 + i * row_h
        label = label_of(m)
        total = m["totals"]["parameters"]
        out.append(f"<text x=\"0\" y=\"{y + 17:.1f}\">{esc(label if len(label) <= 34 else label[:33] + '…')}</text>")
        x = left
        for role in roles:
            value = m["parameters_by_role"].get(role)  # absent: the model has no such role
            if value is None or value <= 0:
                continue
            w = width * value / biggest
            out.append(f"<rect class=\"part\" data-model=\"{i}\" data-role=\"{esc(role)}\" data-value=\"{value}\" "
                       f"x=\"{x:.4f}\" y=\"{y:.1f}\" width=\"{w:.4f}\" height=\"{row_h - 10:.1f}\" "
                       f"fill=\"{role_colour(role, palette)}\">"
                       f"<title>{esc(label)}: {esc(role)} {value:,}</title></rect>")
            x += w
        out.append(f"<text x=\"{x + 4:.1f}\" y=\"{y + 17:.1f}\">{short(total)}</text>")
    out.append("</svg>\n")
    return "".join(out), palette



# --- estimate -----------------------------------------------------------------------------------


def budget_bar(fit: FitDoc) -> str:
    """The device's memory as one bar: weights, KV cache, each engine term, what is left, and what
    the engine holds back (vLLM's 1 − utilization). The parts sum to the budget; when they do not
    fit, the bar is as long as the need and the budget is marked on it."""
    budget = fit["budget_bytes"]
    usable = fit["usable_bytes"] or budget
    parts = [("weights", fit["weights_bytes"], "#4e79a7"),
             ("KV cache", fit["kv_bytes"], "#f28e2b")]
    parts += [(t["name"], t["bytes"], CYCLE[i % len(CYCLE)])
              for i, t in enumerate(fit["terms"]) if t["bytes"]]
    return memory_bar(parts, budget, usable, "budget-bar", "the device's memory",
                      held_back="held back (1 − utilization)")


def memory_bar(parts: list[tuple[str, int, str]], budget: int, usable: int, ident: str, what: str, *,
               held_back: str = "") -> str:
    """Memory as one stacked bar of named parts against a budget: when they fit, what is left (and what
    is held back, ``budget − usable``) completes it; when not, the bar is as long as the need, the budget
    and the usable line marked on it. A key under it, four to a line."""
    parts = list(parts)
    used = sum(v for _, v, _ in parts)
    if used <= usable:  # the parts fill the budget: what is used, what is left, what is kept back
        parts.append(("free", usable - used, "#e8ecf2"))
        if usable < budget:
            parts.append((held_back or "held back", budget - usable, "#bab0ac"))
    whole = max(budget, used)
    left, width, h = 0.0, TREEMAP_W, 46.0
    tall = 46 + 62 + 18 * ((len(parts) + 3) // 4)
    out = [f"<svg id=\"{esc(ident)}\" viewBox=\"0 0 {TREEMAP_W:g} {tall}\" width=\"{TREEMAP_W:g}\" "
           f"height=\"{tall}\" role=\"img\" aria-label=\"{esc(what)}\" data-budget=\"{budget}\" "
           f"data-width=\"{width:g}\">"]
    x = left
    for name, value, colour in parts:
        w = width * value / whole
        out.append(f"<rect class=\"part\" data-name=\"{esc(name)}\" data-bytes=\"{value}\" x=\"{x:.5f}\" y=\"10\" "
                   f"width=\"{w:.5f}\" height=\"{h:g}\" fill=\"{colour}\" stroke=\"#ffffff\" stroke-width=\"0.5\">"
                   f"<title>{esc(name)}: {value:,} B ({gib(value)})</title></rect>")
        if w > 7 * len(name) + 8:
            out.append(f"<text x=\"{x + 4:.1f}\" y=\"30\">{esc(name)}</text>"
                       f"<text x=\"{x + 4:.1f}\" y=\"44\">{gib(value)}</text>")
        x += w
    if usable < budget and used > usable:
        ux = width * usable / whole
        out.append(f"<line x1=\"{ux:.2f}\" y1=\"4\" x2=\"{ux:.2f}\" y2=\"{h + 16:g}\" stroke=\"#8a5300\" "
                   f"stroke-dasharray=\"4 3\"/><text x=\"{max(150.0, ux):.1f}\" y=\"{h + 42:g}\" "
                   f"text-anchor=\"end\">usable {gib(usable)}</text>")
    for i, (name, value, colour) in enumerate(parts):  # the key, four to a line
        kx, ky = (i % 4) * 250.0, h + 62 + (i // 4) * 18
        out.append(f"<rect x=\"{kx:g}\" y=\"{ky - 10:g}\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
                   f"<text x=\"{kx + 16:g}\" y=\"{ky:g}\">{esc(name)} {gib(value)}</text>")
    bx = width * budget / whole
    out.append(f"<line x1=\"{bx:.2f}\" y1=\"4\" x2=\"{bx:.2f}\" y2=\"{h + 16:g}\" stroke=\"#c0392b\" "
               "stroke-width=\"2\"/>"
               f"<text x=\"{min(bx, width - 4):.1f}\" y=\"{h + 28:g}\" text-anchor=\"end\">budget "
               f"{gib(budget)}</text>")
    out.append("</svg>\n")
    return "".join(out)


def layout_bars(rows: list[tuple[str, int, int | None]], width: float = TREEMAP_W) -> str:
    """One bar a layout that fits, in the plan's order: its label (GPUs, type, TP/PP/EP), its KV pool per
    GPU (the headroom for sequences), and the sequences that fit; at most 24 rows."""
    rows = rows[:24]
    if not rows:
        return ""
    most = max((kv for _, kv, _ in rows), default=1) or 1
    label_w, row_h = 300.0, 20.0
    tall = row_h * len(rows) + 24
    out = [f"<svg id=\"plan-layouts\" viewBox=\"0 0 {width:g} {tall:g}\" width=\"{width:g}\" height=\"{tall:g}\" "
           "role=\"img\" aria-label=\"layouts that fit, by KV pool per GPU\">"]
    for i, (label, kv, seqs) in enumerate(rows):
        y = i * row_h + 4
        w = (width - label_w - 200) * kv / most
        out.append(f"<text x=\"0\" y=\"{y + 13:g}\">{esc(label)}</text>"
                   f"<rect class=\"layout\" data-kv=\"{kv}\" x=\"{label_w:g}\" y=\"{y:g}\" width=\"{w:.3f}\" "
                   f"height=\"{row_h - 6:g}\" fill=\"#4e79a7\"><title>{esc(label)}: {kv:,} B KV pool</title></rect>"
                   f"<text x=\"{label_w + w + 6:.1f}\" y=\"{y + 13:g}\">{gib(kv)}"
                   + (f" · {seqs:,} sequences" if seqs is not None else "") + "</text>")
    out.append(f"<text x=\"{label_w:g}\" y=\"{tall - 4:g}\" class=\"axis\">KV pool per GPU: what is left for "
               "sequences after the weights and the engine's terms</text></svg>\n")
    return "".join(out)


def context_curve(fit: FitDoc) -> str:
    """Memory per device against context (from the fit's own points), the usable line, and the
    largest context that fits."""
    points = [(p["context"], p["total_bytes"]) for p in fit["curve"]]
    if len(points) < 2:
        return ""
    usable = fit["usable_bytes"] or fit["budget_bytes"]
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
           f"<text x=\"{left + 4}\" y=\"{py(usable) - 4:.2f}\">usable {gib(usable)}</text>",
           f"<path d=\"{path}\" fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\"/>",
           f"<text x=\"4\" y=\"{py(0) + 4:.2f}\">0</text>",
           f"<text x=\"4\" y=\"{py(ymax / 1.05) + 4:.2f}\">{gib(int(ymax / 1.05))}</text>",
           f"<text x=\"{left}\" y=\"{h - 8}\">context 0</text>",
           f"<text x=\"{w - 20}\" y=\"{h - 8}\" text-anchor=\"end\">{xmax:,} tokens</text>"]
    most = fit["max_context"]
    if isinstance(most, int) and most > 0:
        out.append(f"<line x1=\"{px(most):.2f}\" y1=\"16\" x2=\"{px(most):.2f}\" y2=\"{py(0):.2f}\" "
                   "stroke=\"#2e8b57\" stroke-dasharray=\"3 3\"/>"
                   f"<text x=\"{px(most) - 4:.2f}\" y=\"30\" text-anchor=\"end\">largest context {most:,}</text>")
    out.append("</svg>\n")
    return "".join(out)

