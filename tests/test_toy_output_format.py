"""Adding an output format is one module: an ``OutputFormat`` registered with ``render.views.register_format``,
nothing else (issue 49).

The toy format below lives in a temporary module the test writes (never in the package): each top-level key of a
result's JSON document on a line of its own, ``key = <the value as JSON>``. It is seen wherever a format shows:
``--format`` of every command and the library's ``to_text``, ``--help`` of each command, and the refusal of an
unknown format, which names it. The expected lines are the command's own ``--json`` document, key by key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import help_with_strategy, toy_strategy

from inspector.render import views

TOY_MODULE = '''
import json

from inspector.render.views import OutputFormat


def lines(doc):
    return "".join(f"{key} = {json.dumps(value, sort_keys=True)}\\n" for key, value in doc.items())


FORMAT = OutputFormat("lines", lines)
'''


class _Formats:  # the views' format functions as the registry protocol toy_strategy drives
    register = staticmethod(views.register_format)
    unregister = staticmethod(views.unregister_format)


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toyformatout", TOY_MODULE, _Formats, "FORMAT") as folder:
        yield folder


def _expected(doc: dict[str, object]) -> str:
    return "".join(f"{key} = {json.dumps(value, sort_keys=True)}\n" for key, value in doc.items())


@pytest.mark.parametrize("args", [["llama3-8b"], ["estimate", "llama3-8b", "--gpu", "H100"],
                                  ["diff", "llama2-7b", "llama3-8b"], ["train", "llama3-8b"], ["audit", "gpt2"]],
                         ids=["show", "estimate", "diff", "train", "audit"])
def test_a_format_registered_from_outside_draws_every_command(toy: Path, cli, args: list[str]) -> None:
    drawn = cli(*args, "--format", "lines")
    assert drawn.code == 0, drawn.err
    document = cli(*args, "--json")
    assert drawn.out == _expected(document.json())


def test_the_library_draws_it_and_help_and_refusals_name_it(toy: Path, cli, tmp_path: Path) -> None:
    import inspector

    result = inspector.inspect("gpt2")
    assert inspector.to_text(result, "lines") == _expected(result.to_dict())
    assert "lines" in views.format_names()
    refused = cli("gpt2", "--format", "nope")
    assert refused.code == 2 and "table, json, markdown, html, lines" in refused.err
    assert cli("gpt2", "--json", "--format", "lines").code == 2  # two formats asked for
    with pytest.raises(ValueError):
        views.register_format(views.OutputFormat("json", lambda doc: ""))  # a built-in name is not replaced

    shown = help_with_strategy(toy, "toyformatout", "from inspector.render import views; "
                               "views.register_format(toyformatout.FORMAT)", "show", tmp_path)
    assert "to a file with -o), lines" in " ".join(shown.split()), shown


def test_without_it_the_format_is_refused(cli) -> None:
    r = cli("gpt2", "--format", "lines")
    assert r.code == 2 and "unknown format 'lines'" in r.err and "use table, json, markdown, html" in r.err


def test_a_format_added_from_outside_never_gets_a_checkpoint_string_raw(toy: Path, cli, tmp_path: Path) -> None:
    """A tensor named with a terminal escape and a bidi override (written by safetensors' own save_file) reaches
    the added format through the one sanitiser: escaped, as every renderer shows it."""
    import numpy as np
    from safetensors.numpy import save_file

    folder = tmp_path / "hostile"
    folder.mkdir()
    save_file({"evil\x1b[2J\u202e.weight": np.zeros((2, 2), dtype=np.float32)}, str(folder / "model.safetensors"))
    drawn = cli(str(folder), "--tensors", "--format", "lines")
    assert drawn.code == 0, drawn.err
    assert "\x1b" not in drawn.out and "\u202e" not in drawn.out
    assert "\\\\x1b[2J\\\\u202e" in drawn.out  # sanitize's escapes, then JSON's backslash for each
