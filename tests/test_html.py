"""The HTML reports (--format html), opened in a real browser: Debian's chromium, driven by
playwright (its own browser download is never used). Each page's screenshot is kept in
.test-artifacts/html/ (CI keeps that folder).

Expected figures come from outside this project: llama3-8b's and llama2-7b's parameter counts are the
Hub API's (fixtures/reference.json), the role parameters are the real config's shapes, the budget is
the one given on the command line, the H100's capacity is vLLM's log (fixtures/vllm/receipts.json).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXTURES, ref, save_real

from inspector.errors import UsageError
from inspector.sources.bundled import all_aliases

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / ".test-artifacts" / "html"
BROWSER_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]


def _chromium() -> str | None:
    return os.environ.get("INSPECTOR_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        if os.environ.get("INSPECTOR_REQUIRE_BROWSER"):  # .ci/run installs chromium and sets this
            pytest.fail("INSPECTOR_REQUIRE_BROWSER is set but no chromium was found")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=BROWSER_FLAGS)
        yield b
        b.close()


class Opened:
    """A report open in a fresh page, with everything the page tried to do recorded."""

    def __init__(self, browser: Any, path: Path, name: str) -> None:
        self.context = browser.new_context(viewport={"width": 1150, "height": 900})
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", dialog)
        self.url = path.resolve().as_uri()
        started = time.perf_counter()
        self.page.goto(self.url, wait_until="load")
        self.seconds = time.perf_counter() - started
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def quiet(self) -> None:
        """Nothing left the page, nothing ran that should not, nothing complained."""
        assert self.requests == [self.url]
        assert self.dialogs == []
        assert self.errors == []
        assert self.console == []  # a blocked script, style or image would be a CSP error here

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        self.context.close()


def report(cli, tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / f"{name}.html"
    result = cli(*args, "--format", "html", "-o", str(out))
    assert result.code == 0, result.err
    return out


def llama3_roles() -> dict[str, int]:
    """Meta-Llama-3-8B's parameters by role from its real config.json (hidden 4,096, 32 layers, 32
    heads, 8 KV heads of 128, MLP 14,336, vocab 128,256, untied)."""
    cfg = json.loads((FIXTURES / "snapshot-configs" / "meta-llama__Meta-Llama-3-8B.json").read_text()) \
        if (FIXTURES / "snapshot-configs" / "meta-llama__Meta-Llama-3-8B.json").exists() else None
    h, layers, mlp, vocab, kv = 4096, 32, 14336, 128256, 8 * 128
    if cfg is not None:
        assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"], cfg["vocab_size"]) == \
            (h, layers, mlp, vocab)
    return {"embedding": vocab * h, "lm_head": vocab * h, "attn.q": layers * h * h, "attn.o": layers * h * h,
            "attn.k": layers * kv * h, "attn.v": layers * kv * h, "mlp.gate": layers * mlp * h,
            "mlp.up": layers * mlp * h, "mlp.down": layers * h * mlp, "norm": (2 * layers + 1) * h}


def test_show_headline_and_treemap_areas(cli, tmp_path: Path, browser) -> None:
    with Opened(browser, report(cli, tmp_path, "show", "llama3-8b"), "show-llama3-8b") as page:
        page.quiet()
        assert page.page.inner_text("#headline-parameters") == f"{ref('llama3-8b.parameters'):,}"
        areas = page.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('rect.role')]
            .map(r => { const b = r.getBBox(); return [r.getAttribute('data-role'), b.width * b.height]; }))""")
        roles = llama3_roles()
        assert sum(roles.values()) == ref("llama3-8b.parameters")
        assert set(areas) == set(roles)
        whole = sum(areas.values())
        for role, params in roles.items():  # each role's share of the map is its share of the parameters
            assert areas[role] / whole == pytest.approx(params / sum(roles.values()), rel=0.01), role
        # the filter box hides the rows that do not match
        page.page.fill("#filter", "mlp.up")
        visible = page.page.evaluate("() => [...document.querySelectorAll('#tensor-list tbody tr')]"
                                     ".filter(r => !r.hidden).map(r => r.cells[0].textContent)")
        assert visible == ["model.layers.{0–31}.mlp.up_proj.weight"]
        assert page.page.inner_text("#filter-count") == "1"


def test_diff_waterfall_sums_to_the_gap(cli, tmp_path: Path, browser) -> None:
    with Opened(browser, report(cli, tmp_path, "diff", "diff", "llama2-7b", "llama3-8b"), "diff-llama2-llama3") as page:
        page.quiet()
        gap = ref("llama3-8b.parameters") - ref("llama2-7b.parameters")  # the Hub API's two counts
        drawn = page.page.evaluate("""() => {
            const bars = [...document.querySelectorAll('#waterfall rect')];
            const h = r => r.getBBox().height;
            const steps = bars.filter(r => r.classList.contains('step'));
            const start = bars.find(r => r.classList.contains('start'));
            const end = bars.find(r => r.classList.contains('end'));
            return {values: steps.map(r => Number(r.getAttribute('data-value'))),
                    signed: steps.map(r => Math.sign(Number(r.getAttribute('data-value'))) * h(r)),
                    start: h(start), end: h(end),
                    table: [...document.querySelectorAll('#causes tr.cause')].map(r => Number(r.dataset.delta))};
        }""")
        assert len(drawn["values"]) >= 3  # vocabulary, MLP width, KV heads
        assert sum(drawn["values"]) == gap and sum(drawn["table"]) == gap
        # and in pixels: the steps climb from A's bar to B's
        assert sum(drawn["signed"]) == pytest.approx(drawn["end"] - drawn["start"], abs=0.01)
        assert page.page.inner_text("#headline-gap") == f"{gap:,}"


@pytest.mark.parametrize(("name", "args", "budget"), [
    ("estimate-24gib", ("llama3-8b", "--gpu", "24GiB"), 24 * 2**30),
    ("estimate-h100", ("llama3-8b", "--gpu", "H100", "--utilization", "0.95"), None),
])
def test_fit_bar_parts_sum_to_the_budget(cli, tmp_path: Path, browser, name: str, args: tuple[str, ...],
                                         budget: int | None) -> None:
    with Opened(browser, report(cli, tmp_path, name, "estimate", *args), name) as page:
        page.quiet()
        bar = page.page.evaluate("""() => {
            const svg = document.getElementById('budget-bar');
            const parts = [...svg.querySelectorAll('rect.part')];
            return {budget: Number(svg.dataset.budget), width: Number(svg.dataset.width),
                    bytes: parts.map(r => Number(r.dataset.bytes)), names: parts.map(r => r.dataset.name),
                    pixels: parts.map(r => r.getBBox().width)};
        }""")
        if budget is None:  # vLLM's log of the H100-80GB: 79.19 GiB of device memory
            receipts = json.loads((FIXTURES / "vllm" / "receipts.json").read_text())
            assert bar["budget"] / 2**30 == pytest.approx(receipts["gpu_total_gib"], abs=0.005)
            assert "held back (1 − utilization)" in bar["names"]
        else:
            assert bar["budget"] == budget
        assert sum(bar["bytes"]) == bar["budget"]
        assert sum(bar["pixels"]) == pytest.approx(bar["width"], abs=0.01)
        assert bar["names"][:2] == ["weights", "KV cache"]
        assert bar["bytes"][0] == ref("llama3-8b.bytes")
        curve = page.page.evaluate("() => document.querySelector('#context-curve path').getAttribute('d')")
        assert curve.count("L") >= 10


def test_compare_bars_are_the_totals(cli, tmp_path: Path, browser) -> None:
    with Opened(browser, report(cli, tmp_path, "compare", "compare", "llama2-7b", "llama3-8b"), "compare") as page:
        page.quiet()
        drawn = page.page.evaluate("""() => {
            const out = {};
            for (const r of document.querySelectorAll('#compare-bars rect.part')) {
                const m = r.dataset.model;
                out[m] = out[m] || {value: 0, width: 0};
                out[m].value += Number(r.dataset.value); out[m].width += r.getBBox().width;
            }
            return out;
        }""")
        a, b = ref("llama2-7b.parameters"), ref("llama3-8b.parameters")
        assert (drawn["0"]["value"], drawn["1"]["value"]) == (a, b)
        assert drawn["0"]["width"] / drawn["1"]["width"] == pytest.approx(a / b, rel=1e-4)  # one scale


HOSTILE = {
    "script": "<script>alert(1)</script>",
    "img": "<img src=x onerror=alert(2)>",
    "link": "javascript:alert(3)",
    "style": "</style><script>alert(4)</script>",
    "json": "</script><script>alert(5)</script>",
}


def _hostile(folder: Path, width: int) -> Path:
    folder.mkdir()
    tensors = {f"model.{text}.weight": ("F32", (width, 4)) for text in HOSTILE.values()}
    tensors["model.layers.0.mlp.up_proj.weight"] = ("F32", (width, 4))
    save_real(folder / "model.safetensors", tensors, metadata={"format": "pt", "note": HOSTILE["style"]})
    (folder / "config.json").write_text(json.dumps({
        "architectures": [HOSTILE["img"]], "model_type": HOSTILE["style"], "hidden_size": 4,
        "num_hidden_layers": 1, "torch_dtype": HOSTILE["script"], "vocab_size": 8}))
    return folder


def test_hostile_names_render_as_text_and_run_nothing(cli, tmp_path: Path, browser) -> None:
    a, b = _hostile(tmp_path / "a", 2), _hostile(tmp_path / "b", 3)
    pages = [("hostile-show", ("show", str(a))), ("hostile-diff", ("diff", str(a), str(b))),
             ("hostile-estimate", ("estimate", str(a), "--gpu", "1GiB"))]
    for name, args in pages:
        path = report(cli, tmp_path, name, *args)
        with Opened(browser, path, name) as page:
            page.quiet()
            text = page.page.inner_text("body")
            if name != "hostile-estimate":  # the estimate names no tensor
                for hostile in HOSTILE.values():
                    assert hostile in text, (name, hostile)  # shown, as text
            found = page.page.evaluate("""() => ({
                scripts: document.scripts.length,
                active: document.querySelectorAll('img, iframe, object, embed, a[href], [src], [onerror], [onload], '
                                                   + '[onclick], [href^="javascript"]').length,
                styles: document.querySelectorAll('style').length,
                data: JSON.parse(document.getElementById('inspector-data').textContent)})""")
            assert found["scripts"] == 2 and found["active"] == 0 and found["styles"] == 1
            assert found["data"]["schema_version"] == 2  # the embedded JSON survived whole
        raw = path.read_text()
        assert "<script>alert" not in raw and "<img" not in raw and "</style><script>" not in raw


def test_deepseek_v3_opens_fast_and_small(cli, tmp_path: Path, browser) -> None:
    path = report(cli, tmp_path, "deepseek", "deepseek-v3")
    assert path.stat().st_size < 5 * 1024**2
    with Opened(browser, path, "show-deepseek-v3") as page:
        page.quiet()
        assert page.seconds < 3.0
        shown = page.page.inner_text("#headline-tensors")
        assert shown == f"{ref('deepseek-v3.tensors'):,}"


def test_the_page_embeds_the_json_it_was_drawn_from(cli, tmp_path: Path) -> None:
    path = report(cli, tmp_path, "show", "llama3-8b")
    raw = path.read_text()
    m = re.search(r'<script type="application/json" id="inspector-data">(.*?)</script>', raw, re.S)
    assert m is not None
    embedded = json.loads(m.group(1))
    assert embedded == cli("llama3-8b", "--json", "--tensors", "--collapse").json()
    assert not re.search(r"(?:src|href)\s*=", raw)  # nothing to fetch, nothing to follow
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', raw)
    assert policy is not None and "default-src 'none'" in policy.group(1) and "unsafe" not in policy.group(1)


def test_output_file_rules(cli, tmp_path: Path) -> None:
    mine = tmp_path / "notes.html"
    mine.write_text("my notes")
    refused = cli("llama3-8b", "--format", "html", "-o", str(mine))
    assert refused.code == 2 and "not a report this tool wrote" in refused.err
    assert mine.read_text() == "my notes"  # never a user's file
    out = tmp_path / "r.html"
    assert cli("llama3-8b", "--format", "html", "-o", str(out)).code == 0
    assert cli("estimate", "llama3-8b", "--format", "html", "-o", str(out)).code == 0  # a report of ours: replaced
    assert "Memory" in out.read_text() or "Figures" in out.read_text()
    assert cli("llama3-8b", "--json", "-o", str(tmp_path / "x.json")).code == 2
    assert cli("audit", "llama3-8b", "--format", "html").code == 2
    assert cli("llama3-8b", "--format", "html", "--tensors").code == 2
    several = tmp_path / "quants"  # one model in several GGUF files: the page needs one named
    several.mkdir()
    for name in ("ggml-vocab-aquila.gguf", "ggml-vocab-baichuan.gguf"):
        shutil.copy(ROOT / ".test-inputs" / "llama-cpp-vocab" / name, several / name)
    refused = cli(str(several), "--format", "html")
    assert refused.code == 2 and f"inspect {several}/ggml-vocab-aquila.gguf --format html" in refused.err
    to_stdout = cli("diff", "llama2-7b", "llama3-8b", "--format", "html")
    assert to_stdout.code == 0 and to_stdout.out.startswith("<!DOCTYPE html>")


def test_the_library_draws_the_same_pages(cli) -> None:
    """``to_text`` draws from the same renderer table as the CLI: each format, byte for byte."""
    import inspector

    for result, line in [
        (inspector.inspect("llama3-8b"), ["llama3-8b"]),
        (inspector.diff("llama2-7b", "llama3-8b"), ["diff", "llama2-7b", "llama3-8b"]),
        (inspector.compare("llama2-7b", "gpt2"), ["compare", "llama2-7b", "gpt2"]),
        (inspector.estimate("gpt2", gpu="8GiB"), ["estimate", "gpt2", "--gpu", "8GiB"]),
        (inspector.train("gpt2", method="lora"), ["train", "gpt2", "--method", "lora"]),
        (inspector.plan("gpt2", gpus="L4"), ["plan", "gpt2", "--gpu", "L4"]),
    ]:
        for fmt in ("html", "markdown", "json"):
            assert inspector.to_text(result, fmt) == cli(*line, "--format", fmt).out, (line, fmt)
    audit = inspector.audit("gpt2")
    assert inspector.to_text(audit, "markdown") == cli("audit", "gpt2", "--format", "markdown").out
    with pytest.raises(inspector.InspectorError, match="not an audit"):
        inspector.to_text(audit, "html")


def test_every_result_type_has_a_renderer_for_every_format_it_is_drawn_in() -> None:
    """The one table: each result type of the library has a row, table and JSON for every one, and a
    format a row leaves out is refused before any read with the formats that are drawn."""
    from inspector import results
    from inspector.render import views

    kinds = {v for v in vars(results).values() if isinstance(v, type) and hasattr(v, "to_dict")}
    assert kinds == set(views.RENDERERS)
    assert all({views.Format.TABLE, views.Format.JSON} <= set(formats) for formats in views.RENDERERS.values())
    with pytest.raises(UsageError, match="draws a model, a diff"):
        views.check_format(results.CacheResult, views.Format.HTML)


def test_names_that_do_not_collapse_keep_the_page_small(cli, tmp_path: Path) -> None:
    """30,000 tensors with no repeated layer (no row collapses): the page lists 10,000 and says so."""
    from inspector.formats.safetensors import encode_header

    folder = tmp_path / "flat"
    folder.mkdir()
    blob, data = encode_header([(f"w{i:05d}.weight", "F32", (2,)) for i in range(30_000)], {"format": "pt"})
    (folder / "model.safetensors").write_bytes(blob + bytes(data))
    page = cli(str(folder), "--format", "html").out
    assert page.count("<tr data-name=") == 10_000
    assert "the page lists the first 10,000 of 30,000 tensor rows" in page
    assert 'id="headline-parameters" data-value="60000"' in page  # 30,000 × 2, all of them counted
    assert len(page.encode()) < 5 * 1024**2


def test_output_dash_is_stdout_and_special_files_are_usage_errors(cli, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: `-o -` wrote a file named "-"; `-o` on a FIFO or /dev/null exited 4 rather than 2."""
    from inspector import errors

    monkeypatch.chdir(tmp_path)
    r = cli("llama3-8b", "--format", "html", "-o", "-")
    assert r.code == 0 and r.out.startswith("<!DOCTYPE html>") and not (tmp_path / "-").exists()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/null"):
        r = cli("llama3-8b", "--format", "html", "-o", target)
        assert r.code == errors.EXIT_USAGE and "not a regular file" in r.err, target


def test_train_and_plan_pages(cli, browser: Any, tmp_path: Path) -> None:
    """The train and plan pages open with nothing leaving them and nothing complaining; their headlines
    are the JSON documents' figures."""
    train = report(cli, tmp_path, "train-qlora", "train", "llama3-8b", "--method", "qlora", "--gpu", "RTX4090",
                   "--checkpointing")
    doc = cli("train", "llama3-8b", "--method", "qlora", "--gpu", "RTX4090", "--checkpointing", "--json").json()
    with Opened(browser, train, "train-qlora") as opened:
        opened.quiet()
        assert opened.page.text_content("#headline-verdict") == "fits"
        assert opened.page.get_attribute("#headline-trainable", "data-value") == str(doc["trainable_parameters"])
        assert opened.page.locator("#train-terms tbody tr").count() == len(doc["terms"])
    plan = report(cli, tmp_path, "plan", "plan", "qwen2.5-7b", "--gpu", "H100", "--max-gpus", "8")
    doc = cli("plan", "qwen2.5-7b", "--gpu", "H100", "--max-gpus", "8", "--json").json()
    with Opened(browser, plan, "plan") as opened:
        opened.quiet()
        valid = sum(1 for x in doc["layouts"] if x["valid"])
        assert opened.page.locator("#plan-valid tbody tr").count() == valid
        assert opened.page.locator("#plan-refused tbody tr").count() == len(doc["layouts"]) - valid
        assert "28 attention heads are not divisible by 8" in (opened.page.text_content("#plan-refused") or "")


def test_the_lineage_page(cli, browser: Any, tmp_path: Path) -> None:
    """fixtures/lineage's fine-tune against its base and another initialisation (transformers wrote all three):
    the page opens quietly, its verdict is the JSON's, one row a candidate, one a tensor not equal to the base."""
    import shutil

    args = ("lineage", "fixtures/lineage/finetune", "fixtures/lineage/base", "fixtures/lineage/other")
    page = report(cli, tmp_path, "lineage", *args)
    doc = cli(*args, "--json").json()
    assert doc["verdict"] == "finetune"
    with Opened(browser, page, "lineage") as opened:
        opened.quiet()
        assert "is a fine-tune of fixtures/lineage/base" in (opened.page.text_content("#lineage-verdict") or "")
        assert opened.page.locator("#lineage-candidates tbody tr").count() == len(doc["candidates"])
        changed = [t for t in doc["candidates"][0]["tensors"] if t["relation"] not in ("equal", "constant")]
        assert opened.page.locator("#lineage-tensors tbody tr").count() == len(changed) > 0
    evil = tmp_path / HOSTILE["script"].replace("/", "_")
    shutil.copytree(ROOT / "fixtures" / "lineage" / "finetune", evil)
    page = report(cli, tmp_path, "lineage-hostile", "lineage", str(evil), "fixtures/lineage/base")
    with Opened(browser, page, "lineage-hostile") as opened:
        opened.quiet()
        assert HOSTILE["script"].replace("/", "_") in opened.page.inner_text("body")
    assert "<script>alert" not in page.read_text()


def test_moe_and_dense_compare_has_a_legend_entry_and_its_own_colour_for_every_role(cli, tmp_path: Path,
                                                                                  browser) -> None:
    """Issue 41: the compare legend showed 9 of 14 roles and Mixtral's moe.expert.up took embedding's colour
    (a cycle of 12), so Mixtral read as 'mostly embedding'. Every role drawn has a legend entry, each role
    one colour, no colour two roles; the roles drawn are those of the JSON document with parameters; the
    page names Mixtral's active parameters (12.9 B active of 46.7 B: Mistral AI's Mixtral announcement)."""
    import inspector

    models = ("mixtral-8x7b", "llama3-8b", "deepseek-v3")
    doc = inspector.compare(*models).to_dict()
    expected = {role for m in doc["models"] for role, value in m["parameters_by_role"].items() if value}
    with Opened(browser, report(cli, tmp_path, "compare-moe", "compare", *models), "compare-moe") as page:
        page.quiet()
        drawn = page.page.evaluate("""() => [...document.querySelectorAll('#compare-bars rect.part')]
            .map(r => [r.dataset.role, r.getAttribute('fill')])""")
        legend = page.page.evaluate("""() => [...document.querySelectorAll('.legend-entry')]
            .map(g => [g.dataset.key, g.dataset.colour, g.querySelector('rect').getAttribute('fill'),
                       g.getBoundingClientRect().width > 0])""")
        text = page.page.inner_text("body")
    assert {role for role, _ in drawn} == expected
    keys = {key: colour for key, colour, _, _ in legend}
    assert set(keys) == expected and len(legend) == len(expected)
    assert all(colour == fill and shown for _, colour, fill, shown in legend)
    assert len(set(keys.values())) == len(keys)  # no colour for two roles
    assert all(keys[role] == fill for role, fill in drawn)  # each bar part in its role's legend colour
    assert "active parameters per token" in text and "12,879,925,248" in text


def test_show_treemap_colours_roles_with_a_full_legend(cli, tmp_path: Path, browser) -> None:
    """The treemap was one flat colour for a single-dtype model (coloured by dtype): its leaves take
    their role's colour, and the legend lists every role drawn."""
    with Opened(browser, report(cli, tmp_path, "show-mixtral", "mixtral-8x7b"), "show-mixtral") as page:
        page.quiet()
        leaves = page.page.evaluate("""() => [...document.querySelectorAll('#treemap rect.leaf')]
            .map(r => [r.dataset.role, r.getAttribute('fill')])""")
        legend = page.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.legend-entry')]
            .map(g => [g.dataset.key, g.dataset.colour]))""")
    assert {role for role, _ in leaves} == set(legend)
    assert all(legend[role] == fill for role, fill in leaves)
    assert len(set(legend.values())) == len(legend) >= 8


def test_a_missing_or_renamed_field_fails_instead_of_drawing_a_zero(tmp_path: Path) -> None:
    """Issue 41: the pages read the documents through helpers that gave 0, "" or {} for a missing key, so
    a renamed field drew a zero-height bar and nothing failed. Issue 49: the pages read the typed documents
    (``inspector/results/``), so a key the document does not have, or a figure used as another type, is a
    mypy error before anything runs (a planted page shows it); at run time a missing key still raises, and
    the HTML modules read no field with a default."""
    import copy
    import re

    from helpers import mypy_on_planted

    import inspector
    from inspector.render import html as html_mod
    from inspector.render import svg

    doc = inspector.inspect("llama3-8b").to_dict()
    assert "Parameters" in html_mod.show_html(doc)
    renamed = copy.deepcopy(doc)
    renamed["totals"]["params"] = renamed["totals"].pop("parameters")
    with pytest.raises(KeyError):
        html_mod.show_html(renamed)
    for module in (html_mod, svg):
        source = Path(module.__file__).read_text()
        assert not re.search(r"\.get\(\s*[\"']", source), module.__name__  # no field read by .get("key")
    said = mypy_on_planted("inspector/render/_planted_page.py",
                           "from inspector.results.show import ShowDoc\n\n\n"
                           "def page(doc: ShowDoc) -> str:\n"
                           "    return f\"{doc['totals']['params']:,}\" + doc['totals']['bytes']\n", tmp_path)
    assert 'TypedDict "TotalsDoc" has no key "params"' in said, said
    assert 'Unsupported operand types for + ("str" and "int")' in said, said


def test_estimate_figures_are_labelled_in_words_not_json_keys(cli) -> None:
    """Every figure the analysis names has one label (``FIGURE_LABELS``), used by the table, the JSON
    document's ``label`` and the page; no JSON key is shown as a row's label."""
    from inspector.results.estimate import FIGURE_LABELS

    names = set()
    for path in (ROOT / "inspector" / "analysis").rglob("*.py"):
        names |= set(re.findall(r'Figure\(\s*"([a-z_]+)"', path.read_text()))
    assert names and names <= set(FIGURE_LABELS), names - set(FIGURE_LABELS)
    page = cli("estimate", "llama3-8b", "--gpu", "24GiB", "--format", "html").out
    table = page[page.index('id="figures"'):]
    table = table[:table.index("</table>")]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table)
    assert "weights, as stored" in cells and "KV cache per token" in cells
    assert not [c for c in cells if re.fullmatch(r"[a-z]+(_[a-z]+)+", c)]


# --- role colours that can be told apart (issue 52) ---------------------------------------------------------

def _lab(hexs: str) -> tuple[float, float, float]:
    """sRGB (D65) → CIELAB, IEC 61966-2-1's transfer curve and CIE 1976 L*a*b*."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(hexs[i:i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def ciede2000(one: tuple[float, float, float], two: tuple[float, float, float]) -> float:
    """ΔE00 as Sharma, Wu and Dalal write it out ("The CIEDE2000 color-difference formula: implementation
    notes, supplementary test data, and mathematical observations", Color Res. Appl. 30, 2005, eq. 1-19)."""
    import math

    (l1, a1, b1), (l2, a2, b2) = one, two
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    dh = 0.0 if c1p * c2p == 0 else (h2p - h1p if abs(h2p - h1p) <= 180 else
                                      h2p - h1p - 360 if h2p - h1p > 180 else h2p - h1p + 360)
    d_l, d_c = l2 - l1, c2p - c1p
    d_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_bar, cp_bar = (l1 + l2) / 2, (c1p + c2p) / 2
    h_bar = h1p + h2p if c1p * c2p == 0 else ((h1p + h2p) / 2 if abs(h1p - h2p) <= 180 else
                                              (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2)
    t = (1 - 0.17 * math.cos(math.radians(h_bar - 30)) + 0.24 * math.cos(math.radians(2 * h_bar))
         + 0.32 * math.cos(math.radians(3 * h_bar + 6)) - 0.20 * math.cos(math.radians(4 * h_bar - 63)))
    theta = 30 * math.exp(-(((h_bar - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(cp_bar ** 7 / (cp_bar ** 7 + 25 ** 7))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    s_c, s_h = 1 + 0.045 * cp_bar, 1 + 0.015 * cp_bar * t
    r_t = -math.sin(math.radians(2 * theta)) * r_c
    return math.sqrt((d_l / s_l) ** 2 + (d_c / s_c) ** 2 + (d_h / s_h) ** 2 + r_t * (d_c / s_c) * (d_h / s_h))


def test_the_colour_difference_is_sharmas() -> None:
    """The formula against the paper's own test pairs (Table 1: pairs 1, 7, 17, 25 and 34)."""
    for one, two, expected in [((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
                               ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
                               ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
                               ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
                               ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082)]:
        assert ciede2000(one, two) == pytest.approx(expected, abs=1e-4)


#: the least CIEDE2000 difference between two roles drawn on one page (around 10 and up two colours are
#: told apart at a glance on a chart; moe.expert.gate and attn.q were 3.0 apart)
LEAST_APART = 12.0


@pytest.mark.parametrize("alias", [a.name for a in all_aliases()])
def test_roles_drawn_together_are_told_apart(alias: str) -> None:
    from inspector.analysis.facts.report import build_report
    from inspector.render.svg import role_palette
    from inspector.sources.resolve import open_checkpoint

    roles = sorted({t.place.role for t in build_report(open_checkpoint(alias)).tensors})
    palette = role_palette(roles)
    labs = {role: _lab(colour) for role, colour in palette.items()}
    closest = min((ciede2000(labs[x], labs[y]), x, y) for i, x in enumerate(roles) for y in roles[i + 1:])
    assert closest[0] >= LEAST_APART, closest


def test_every_role_has_its_own_colour() -> None:
    from inspector.analysis.facts.roles import ROLE_ORDER
    from inspector.render.svg import ROLE_COLOURS

    assert set(ROLE_COLOURS) == set(ROLE_ORDER)
    assert len(set(ROLE_COLOURS.values())) == len(ROLE_COLOURS)


# --- pictures where people would rather look (issue 52) -----------------------------------------------------

@pytest.mark.parametrize("args", [
    {"method": "lora", "gpu": "RTX4090"},
    {"method": "full", "gpu": "H100x8", "zero": 3},
    {"method": "qlora", "gpu": "RTX4090", "checkpointing": True},
    {"method": "full", "gpu": "H100", "batch": 8, "seq": 4096},
])
def test_the_train_bar_is_the_peak_it_reports(args: dict) -> None:
    """The stacked bar per GPU sums, part by part, to the total the JSON reports (the peak rule's parts),
    and the budget it is drawn against is the JSON's."""
    import inspector

    done = inspector.train("llama3-8b", **args)
    doc = done.to_dict()
    page = inspector.to_text(done, "html")
    bar = page.split('<svg id="train-bar"', 1)[1].split("</svg>", 1)[0]
    found = re.findall(r'class="part" data-name="([^"]+)" data-bytes="(\d+)"', bar)
    parts = {name: int(value) for name, value in found}
    assert sum(v for k, v in parts.items() if k != "free") == doc["total"]
    assert f'data-budget="{doc["budget_bytes"]}"' in page
    assert "optimizer_states" not in page.split('<table id="train-terms">', 1)[1].split("</table>", 1)[0]


def test_the_plan_page_draws_the_layouts_that_fit_and_says_yes_or_no() -> None:
    import inspector

    done = inspector.plan("llama3-70b", gpu="H100,L40S", max_gpus=4)
    doc = done.to_dict()
    page = inspector.to_text(done, "html")
    fitting = [r for r in doc["layouts"] if r["valid"] and r["fits"]]
    drawn = re.findall(r'class="layout" data-kv="(\d+)"', page)
    assert [int(kv) for kv in drawn] == [r["kv_pool_bytes"] for r in fitting][:24]
    table = page.split('<table id="plan-valid">', 1)[1].split("</table>", 1)[0]
    assert ">True<" not in table and ">False<" not in table and ">yes<" in table


def _screenshot_reports() -> dict[str, list[str]]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_screenshots", Path(__file__).resolve().parent.parent
                                                  / "scripts" / "make_screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.REPORTS)


@pytest.mark.parametrize(("name", "args"), sorted(_screenshot_reports().items()))
def test_every_page_of_the_docs_opens_quietly_and_is_drawn(cli, tmp_path: Path, browser, name: str,
                                                           args: list[str]) -> None:
    """Issue 52: each HTML page the docs show (docs/html.md) opens in chromium without a request, error or
    console message, and the test draws its screenshot: to .test-artifacts/html always, and over
    docs/screenshots/NAME.png with INSPECTOR_UPDATE_DOCS=1 (as the docs' examples are regenerated)."""
    from inspector.safeio import write_atomic

    page_file = report(cli, tmp_path, name, *args)
    docs = Path(__file__).resolve().parent.parent / "docs"
    assert f"screenshots/{name}.png" in (docs / "html.md").read_text()
    with Opened(browser, page_file, f"docs-{name}") as opened:
        opened.quiet()
        png = opened.page.screenshot()
    assert png.startswith(b"\x89PNG")
    if os.environ.get("INSPECTOR_UPDATE_DOCS"):
        write_atomic(docs / "screenshots", f"{name}.png", png, "screenshot")
    assert (docs / "screenshots" / f"{name}.png").is_file()


def test_no_code_block_of_the_docs_site_is_clipped(browser, tmp_path: Path) -> None:
    """Issue 52 ("code blocks are clipped"): every code block of the built docs site that is wider than an
    800-pixel page can be scrolled to its end (overflow auto or scroll on the block or its <pre>)."""
    import subprocess
    import sys

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(site)], check=True,
                   cwd=Path(__file__).resolve().parent.parent, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    context = browser.new_context(viewport={"width": 800, "height": 900})
    page = context.new_page()
    wide = 0
    try:
        for html in [*sorted(site.glob("*/index.html")), site / "index.html"]:
            page.goto(html.as_uri(), wait_until="load")
            blocks = page.evaluate("""() => Array.from(document.querySelectorAll('pre > code')).map(c => [
                c.scrollWidth > c.clientWidth,
                ['auto', 'scroll'].includes(getComputedStyle(c).overflowX) ||
                ['auto', 'scroll'].includes(getComputedStyle(c.parentElement).overflowX)])""")
            wide += sum(1 for too_wide, _ in blocks if too_wide)
            assert all(scrolls for too_wide, scrolls in blocks if too_wide), html
    finally:
        context.close()
    assert wide > 0  # the check saw blocks wider than the page (the README's tables are)
