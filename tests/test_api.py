"""The library API: ``import inspector`` gives what the CLI gives, typed, with ``to_dict()`` equal to
the CLI's ``--json`` document of the same command. Expected figures are published counts
(fixtures/reference.json names their sources)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ref
from hubserver import HubServer

import inspector
from inspector import errors
from inspector.sources.bundled import ALIASES, bundled_path


def test_import_inspector_then_inspect_in_a_fresh_process() -> None:
    code = "import inspector; r = inspector.inspect('llama3-8b'); print(r.parameters)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(ref("llama3-8b.parameters"))  # 8,030,261,248: the Hub's count


def test_import_inspector_imports_nothing_heavy() -> None:
    code = "import sys, inspector; print(sorted(m for m in sys.modules if m.startswith('inspector')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.replace("'", '"')) == ["inspector"]


def test_public_names_are_listed_and_typed() -> None:
    assert (Path(inspector.__file__).parent / "py.typed").is_file()
    for name in inspector.__all__:
        assert getattr(inspector, name) is not None, name
    with pytest.raises(AttributeError):
        _ = inspector.no_such_name  # type: ignore[attr-defined]


def test_diff_delta_is_the_published_gap() -> None:
    doc = inspector.diff("llama2-7b", "llama3-8b").to_dict()
    delta = doc["delta"]
    assert isinstance(delta, dict)
    # Llama-3-8B's 8,030,261,248 less Llama-2-7B's 6,738,415,616 (both the Hub's own counts)
    assert delta["parameters"] == ref("llama3-8b.parameters") - ref("llama2-7b.parameters") == 1_291_845_632


@pytest.mark.parametrize(("args", "call"), [
    (["llama3-8b", "--json"], lambda: inspector.inspect("llama3-8b")),
    (["gpt2", "--json", "--tensors", "--collapse", "--formula"],
     lambda: inspector.inspect("gpt2", tensors=True, collapse=True, formula=True)),
    (["diff", "llama2-7b", "llama3-8b", "--json"], lambda: inspector.diff("llama2-7b", "llama3-8b")),
    (["compare", "llama3-8b", "mistral-7b", "gpt2", "--json"],
     lambda: inspector.compare("llama3-8b", "mistral-7b", "gpt2")),
    (["estimate", "llama3-8b", "--gpu", "24GiB", "--context", "8k", "--json"],
     lambda: inspector.estimate("llama3-8b", gpu="24GiB", context="8k")),
    (["audit", "llama3-8b", "--json"], lambda: inspector.audit("llama3-8b")),
])
def test_to_dict_is_the_clis_json(cli, args, call) -> None:
    result = cli(*args)
    assert result.code == 0, result.err
    assert call().to_dict() == result.json()


def test_an_estimate_with_a_fit_and_an_audit() -> None:
    est = inspector.estimate("llama3-8b", gpu="24GiB", context="8k")
    assert est.fit is not None and est.fit.fits
    kv = est.estimate.kv.per_token
    assert kv.value == ref("llama3-8b.kv_bytes_per_token")
    assert inspector.audit("llama3-8b").ok


def test_errors_are_the_typed_exceptions_of_the_cli() -> None:
    with pytest.raises(errors.NotFoundError) as caught:
        inspector.inspect("no-such-alias-or-path")
    assert caught.value.exit_code == errors.EXIT_NOT_FOUND
    with pytest.raises(errors.UsageError):
        inspector.estimate("llama3-8b", gpu="24 bananas")
    with pytest.raises(errors.UsageError):
        inspector.compare("llama3-8b")


def test_a_hub_repo_through_the_test_server(online: None, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    a = ALIASES["llama3-8b"]
    with HubServer() as server:
        server.add_snapshot(a.repo_id, bundled_path(a))
        r = inspector.inspect(a.repo_id, hub=inspector.HubOptions(endpoint=server.url))
        assert r.parameters == ref("llama3-8b.parameters")
        assert r.checkpoint.provenance.origin == "hub" and r.to_dict()["model"]["origin"] == "hub"
        assert any(req.path.endswith(".safetensors") and req.range for req in server.requests("GET"))


def test_a_json_show_imports_only_what_it_draws() -> None:
    """`inspect MODEL --json` of a bundled model imports no HTML page renderer, no config-formula
    check and no rich (issue 39: start-up; the page module and the formula were imported for every
    run). Read from the child process's own sys.modules after the command."""
    code = ("import sys; from inspector.cli.commands import run; code = run(['llama3-8b', '--json']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('inspector', 'rich')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1].replace("'", '"')))
    assert "inspector.render.output" in loaded  # the JSON document's builder: it is drawn
    assert not loaded & {"inspector.render.html", "inspector.render.svg", "inspector.analysis.facts.formula",
                         "inspector.analysis.training.train", "inspector.analysis.serving.plan",
                         "inspector.analysis.serving.fit", "inspector.analysis.serving.engines", "rich"}, loaded


def test_every_library_function_reaches_the_hub_through_one_options_record() -> None:
    """Issue 40: endpoint, token and offline ran through 38 signatures. Each public function that opens a
    model takes one ``hub: HubOptions`` (the record huggingface_hub's endpoint, token and offline switch
    live in, with the transport's limits) and none of the three loose parameters."""
    import inspect as introspect

    import inspector.api as api

    for name in ("open_model", "inspect", "diff", "compare", "estimate", "audit", "train", "plan", "files", "save"):
        params = introspect.signature(getattr(inspector, name) if name != "save" else api.save).parameters
        assert "hub" in params and not {"endpoint", "token", "offline", "on_wait"} & set(params), name
    assert inspector.HubOptions(token="x").token == "x"
