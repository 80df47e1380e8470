"""Issue 52's gates: one top-level ``fits`` (true, false or null) in the JSON of ``estimate``, ``train`` and
``plan``, ``--fail-if nofit`` on each (exit 1 and the verdict on stderr unless it fits; an unknown fit
fails closed), ``.fits`` on every fit-bearing result, and one spelling of the GPU in the library (``gpu=``).

Whether each case fits is decided here by arithmetic written out from published figures, not by our
output: the parameter counts of fixtures/reference.json (the model cards' and the headers' counts), two
bytes a BF16 weight, and the ZeRO paper's 16 bytes a parameter for mixed-precision Adam (Rajbhandari et
al. 2020, section 3.1: 2 + 2 + 4 + 4 + 4)."""

from __future__ import annotations

import json

import pytest
from helpers import ref

import inspector
from inspector.errors import UsageError

GIB = 2**30
RTX4090 = 24 * GIB  # the catalogue's RTX 4090: 24 GiB (NVIDIA's data sheet: 24 GB GDDR6X)
H100 = 80 * GIB


def test_the_cases_are_what_the_arithmetic_says() -> None:
    """The premises of the tests below, from the published counts alone."""
    assert 2 * ref("llama3-70b.parameters") > RTX4090  # 70B's BF16 weights alone pass a 4090
    assert 16 * ref("llama3-8b.parameters") > RTX4090  # full fine-tuning with Adam: 128 GB of model states
    # Llama 3 8B on an H100 at 8k: BF16 weights and 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes a token
    assert 2 * ref("llama3-8b.parameters") + 8192 * 32 * 8 * 128 * 2 * 2 < 0.9 * H100 - 4 * GIB


@pytest.mark.parametrize(("args", "fits"), [
    (["estimate", "llama3-70b", "--gpu", "RTX4090"], False),
    (["estimate", "llama3-8b", "--gpu", "H100", "--context", "8192"], True),
    (["train", "llama3-8b", "--method", "full", "--gpu", "RTX4090"], False),
    (["train", "llama3-8b", "--method", "lora", "--gpu", "H100"], True),
    (["plan", "llama3-70b", "--gpu", "L4", "--max-gpus", "2"], False),
    (["plan", "llama3-8b", "--gpu", "H100", "--max-gpus", "1"], True),
])
def test_one_fits_key_and_the_nofit_gate(cli, args: list[str], fits: bool) -> None:
    plain = cli(*args, "--json")
    assert plain.code == 0, plain.err  # without the gate the answer is not an error
    doc = plain.json()
    assert doc["fits"] is fits
    if args[0] == "estimate":
        assert doc["fit"]["fits"] is fits  # the one key says what the fit object says
    if args[0] == "plan":
        assert any(row["fits"] for row in doc["layouts"]) is fits
    gated = cli(*args, "--json", "--fail-if", "nofit")
    assert gated.code == (0 if fits else 1)
    assert json.loads(gated.out)["fits"] is fits  # the document is still written whole
    lines = gated.err.strip().splitlines()
    if fits:
        assert lines == []
    else:
        assert lines[-1].startswith("--fail-if nofit: ")
        assert ("does not fit" in lines[-1]) or ("no layout" in lines[-1])


def test_an_unknown_fit_fails_closed(cli, tmp_path) -> None:
    """A checkpoint whose KV cache cannot be sized (no config.json): its fit is unknown, and the gate
    exits 1 saying so rather than letting a CI job pass on a figure nobody knows."""
    from helpers import save_real

    save_real(tmp_path / "model.safetensors", {"model.layers.0.self_attn.q_proj.weight": ("F16", (8, 8))})
    plain = cli("estimate", str(tmp_path), "--gpu", "H100", "--json")
    assert plain.code == 0 and plain.json()["fits"] is None
    gated = cli("estimate", str(tmp_path), "--gpu", "H100", "--fail-if", "nofit")
    assert gated.code == 1
    assert gated.err.strip().splitlines()[-1].startswith("--fail-if nofit: fit unknown: ")


@pytest.mark.parametrize("args", [
    ["estimate", "llama3-8b", "--fail-if", "nofit"],  # no budget to judge against
    ["train", "llama3-8b", "--fail-if", "nofit"],
    ["estimate", "llama3-8b", "--gpu", "H100", "--fail-if", "params"],  # diff's condition, not a fit's
    ["plan", "llama3-8b", "--fail-if", "nofit,bogus"],
])
def test_gate_usage_errors(cli, args: list[str]) -> None:
    done = cli(*args)
    assert done.code == 2
    assert done.out == ""
    assert done.err.startswith("Error: --fail-if")


def test_the_library_spells_the_gpu_one_way_and_every_result_has_fits() -> None:
    estimate = inspector.estimate("llama3-70b", gpu="RTX4090")
    train = inspector.train("llama3-8b", method="full", gpu="RTX4090")
    plan = inspector.plan("llama3-8b", gpu="H100", max_gpus=1)
    assert (estimate.fits, train.fits, plan.fits) == (False, False, True)
    assert estimate.fits is estimate.to_dict()["fits"]
    assert estimate.gates_hit(["nofit"]) == ["nofit"] and plan.gates_hit(["nofit"]) == []
    assert inspector.estimate("llama3-8b").fits is None  # no budget
    older = inspector.plan("llama3-8b", gpus="H100", max_gpus=1)  # the older spelling still taken
    assert older.to_dict() == plan.to_dict()
    with pytest.raises(UsageError):
        inspector.plan("llama3-8b", gpu="H100", gpus="L4")


# --- spellings people use for a GPU (issue 52) -----------------------------------------------------------

@pytest.mark.parametrize(("text", "name", "devices"), [
    ("8xA100", "A100-80GB", 8), ("A100x8", "A100-80GB", 8), ("8 × H100", "H100-80GB", 8), ("RTX 4090", "RTX4090", 1),
    ("4090", "RTX4090", 1), ("rtx4090", "RTX4090", 1), ("rtx_4090", "RTX4090", 1), ("RTX 4090 x 2", "RTX4090", 2),
    ("H100 SXM", "H100-80GB", 1), ("a100-40gb x4", "A100-40GB", 4), ("l4x2", "L4", 2),
])
def test_gpu_spellings_name_the_catalogues_gpu(text: str, name: str, devices: int) -> None:
    """Each spelling reads as the catalogue's own name does (the same capacity, devices and name)."""
    from inspector.analysis.serving.budget import parse_budget
    from inspector.analysis.serving.engines import GPUS

    budget = parse_budget(text)
    canonical = next(g for g in GPUS.values() if g.name == name)
    assert (budget.per_device, budget.devices, budget.gpu) == (canonical.bytes, devices, name)


@pytest.mark.parametrize("text", ["24", "x8", "8x", "RTX 5090", "A100x0", "0xA100", "8xA100x2", "a" * 200])
def test_what_names_no_gpu_is_refused(text: str) -> None:
    from inspector.analysis.serving.budget import parse_budget

    with pytest.raises(UsageError):
        parse_budget(text)


def test_the_cli_takes_a_gpu_as_people_write_it(cli) -> None:
    spelled = cli("estimate", "llama3-8b", "--gpu", "RTX 4090", "--json")
    canonical = cli("estimate", "llama3-8b", "--gpu", "RTX4090", "--json")
    assert spelled.code == canonical.code == 0
    assert spelled.json() == canonical.json()
    eight = cli("train", "llama3-8b", "--gpu", "8xA100", "--zero", "3", "--json")
    assert eight.code == 0 and (eight.json()["gpus"], eight.json()["gpu"]) == (8, "A100-80GB")


# --- diff --values gated (issue 52: --fail-if any exited 0 with four tensors changed) -------------------

def _two_checkpoints(tmp_path, change: bool):  # type: ignore[no-untyped-def]
    """The same tensors written twice by safetensors' own writer; one value of one tensor changed in B."""
    import numpy as np
    from safetensors.numpy import save_file

    tensors = {f"model.layers.{i}.mlp.up_proj.weight": np.arange(64, dtype=np.float32).reshape(8, 8) + i
               for i in range(4)}
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
    save_file(tensors, str(a / "model.safetensors"))
    if change:
        tensors["model.layers.2.mlp.up_proj.weight"] = tensors["model.layers.2.mlp.up_proj.weight"].copy()
        tensors["model.layers.2.mlp.up_proj.weight"][3, 5] = -1.0
    save_file(tensors, str(b / "model.safetensors"))
    return str(a), str(b)


@pytest.mark.parametrize("change", [True, False])
@pytest.mark.parametrize("gate", ["values", "any"])
def test_diff_values_gate(cli, tmp_path, change: bool, gate: str) -> None:
    a, b = _two_checkpoints(tmp_path, change)
    done = cli("diff", a, b, "--values", "--fail-if", gate, "--json")
    assert done.code == (1 if change else 0), done.err
    changed = [t["name"] for t in done.json()["values"]["tensors"] if t["verdict"] == "changed"]
    assert changed == (["model.layers.2.mlp.up_proj.weight"] if change else [])
    plain = cli("diff", a, b, "--fail-if", gate)  # without --values, any sees no difference in structure
    assert plain.code == (2 if gate == "values" else 0)


def test_the_values_gate_needs_values(cli) -> None:
    done = cli("diff", "llama3-8b", "llama3-8b", "--fail-if", "values")
    assert done.code == 2 and "--values" in done.err


@pytest.mark.parametrize(("args", "first"), [
    (["estimate", "llama3-70b", "--gpu", "RTX4090"], "does not fit: "),
    (["estimate", "llama3-8b", "--gpu", "H100"], "fits: "),
    (["train", "llama3-8b", "--method", "full", "--gpu", "RTX4090"], "does not fit: "),
    (["plan", "llama3-8b", "--gpu", "H100", "--max-gpus", "1"], "1 × H100-80GB"),
])
def test_the_verdict_is_the_first_line(cli, args: list[str], first: str) -> None:
    """Issue 52: estimate's verdict was on line 34 of 134; each fit-bearing table now starts with it."""
    done = cli(*args)
    assert done.code == 0
    lines = [line for line in done.out.splitlines() if line.strip()]
    verdict = next(i for i, line in enumerate(lines) if line.startswith(first))
    assert verdict <= 1, lines[:5]  # plan names the model and engine on its line 0, the answer on line 1


# --- the next knob (issues 50 and 52): what makes a training step fit ----------------------------------------

@pytest.mark.parametrize("args", [
    ["llama3-8b", "--gpu", "RTX4090"],
    ["llama3-8b", "--method", "full", "--gpu", "H100x4"],
    ["llama3-8b", "--gpu", "RTX4090", "--seq", "8192", "--batch", "4"],
])
def test_each_suggestion_is_what_its_command_line_gives(cli, args: list[str]) -> None:
    """A suggestion promises a figure; running the command line it names gives that figure, and fits."""
    done = cli("train", *args, "--json")
    assert done.code == 0
    doc = done.json()
    assert doc["fits"] is False
    suggestions = doc["suggestions"]
    assert suggestions, "a step that does not fit gets at least one way to fit"
    for s in suggestions:
        again = cli("train", *args, *s["change"].split(), "--json")
        assert again.code == 0, (s, again.err)
        assert (again.json()["fits"], again.json()["total"]) == (True, s["total"]), s
        assert s["total"] <= s["budget_bytes"] == doc["budget_bytes"]
    table = cli("train", *args)
    assert table.out.splitlines()[1].startswith("what makes it fit: " + suggestions[0]["change"] + ":")


def test_no_suggestion_where_it_fits_or_has_no_budget(cli) -> None:
    assert cli("train", "llama3-8b", "--method", "qlora", "--gpu", "H100", "--json").json()["suggestions"] == []
    assert cli("train", "llama3-8b", "--json").json()["suggestions"] == []


def test_quiet_says_nothing_but_errors(cli) -> None:
    """``--quiet`` (or ``-q``, anywhere on the line): the answer on stdout and the exit code, no diagnostics
    (the gate's verdict line, warnings); an error is still said."""
    loud = cli("estimate", "llama3-70b", "--gpu", "RTX4090", "--fail-if", "nofit", "--json")
    for quiet in (["--quiet"], ["-q"]):
        done = cli(*quiet, "estimate", "llama3-70b", "--gpu", "RTX4090", "--fail-if", "nofit", "--json")
        assert (done.code, done.out, done.err) == (1, loud.out, "")
    failed = cli("estimate", "llama3-8b", "--gpu", "bogus", "-q")
    assert failed.code == 2 and failed.err.startswith("Error: ")


@pytest.mark.parametrize("args", [
    ["llama3-70b", "--gpu", "H100"],
    ["llama3-8b", "--gpu", "RTX4090", "--context", "65536"],
    ["mixtral-8x7b", "--gpu", "A100-80GB"],
])
def test_each_estimate_suggestion_is_what_its_command_line_gives(cli, args: list[str]) -> None:
    """estimate's next knob: a shorter context, an 8-bit KV cache, plan's first layout of more of the same GPU;
    each suggestion, run as the command line it names, fits with the memory per device it promised."""
    done = cli("estimate", *args, "--json")
    assert done.code == 0
    doc = done.json()
    assert doc["fits"] is False and doc["suggestions"]
    for s in doc["suggestions"]:
        again = cli("estimate", *args, *s["change"].split(), "--json")
        assert again.code == 0, (s, again.err)
        assert (again.json()["fits"], again.json()["fit"]["total_bytes"]) == (True, s["total"]), s


@pytest.mark.parametrize("args", [
    ["llama3-70b", "--gpu", "L4", "--max-gpus", "2"],
    ["deepseek-v3", "--gpu", "H100"],
])
def test_plans_suggestion_is_what_its_command_line_gives(cli, args: list[str]) -> None:
    """plan's next knob: where no layout of the GPUs considered fits, the GPU count that would, as plan
    itself ranks the layouts up to 64 GPUs; run, the command line fits with its first layout's figure."""
    done = cli("plan", *args, "--json")
    doc = done.json()
    assert doc["fits"] is False and len(doc["suggestions"]) == 1
    s = doc["suggestions"][0]
    again = cli("plan", *args, *s["change"].split(), "--json")
    assert again.code == 0 and again.json()["fits"] is True
    first = next(r for r in again.json()["layouts"] if r["valid"] and r["fits"])
    assert first["total_bytes"] == s["total"]
    assert cli("plan", "llama3-8b", "--gpu", "H100", "--json").json()["suggestions"] == []


def test_a_smaller_quantisation_of_the_same_folder_is_suggested(cli, tmp_path) -> None:
    """A GGUF file that does not fit: the largest smaller file of its folder that fits is named, with what it
    needs, and estimating that file gives that figure (two files gguf-py wrote, F32 and F16 of one model)."""
    import numpy as np
    from helpers import model_gguf

    for name, dtype in (("tiny-F32.gguf", np.float32), ("tiny-F16.gguf", np.float16)):
        model_gguf(tmp_path / name, dtype)
    done = cli("estimate", str(tmp_path / "tiny-F32.gguf"), "--gpu", "120MiB", "--json")
    doc = done.json()
    assert doc["fits"] is False
    use = [s for s in doc["suggestions"] if s["change"].startswith("use ")]
    assert [s["change"] for s in use] == [f"use {tmp_path / 'tiny-F16.gguf'}"]
    again = cli("estimate", str(tmp_path / "tiny-F16.gguf"), "--gpu", "120MiB", "--json").json()
    assert (again["fits"], again["fit"]["total_bytes"]) == (True, use[0]["total"])


@pytest.mark.parametrize("command", [["estimate", "llama3-8b", "--gpu", "RTX4090"],
                                     ["train", "llama3-8b", "--gpu", "RTX4090"],
                                     ["plan", "llama3-8b", "--gpu", "H100,L4", "--max-gpus", "3"]])
def test_the_long_prose_is_behind_explain(cli, command: list[str]) -> None:
    """Issue 52: the how and sources prose behind --explain; the table without it is the answer and its
    figures, and says how to see the rest; --json keeps everything either way."""
    short, long = cli(*command), cli(*command, "--explain")
    assert short.code == long.code == 0
    assert len(short.out.splitlines()) < len(long.out.splitlines())
    if command[0] != "plan":
        assert "--explain" in short.out.splitlines()[-1]
    assert cli(*command, "--json").out == cli(*command, "--json", "--explain").out


def test_a_suggested_file_name_passes_the_sanitiser(cli, tmp_path) -> None:
    """A file name from a folder's listing reaches the table's suggestion line: its control characters shown
    as escapes, never written to the terminal."""
    import numpy as np
    from helpers import model_gguf

    model_gguf(tmp_path / "big-F32.gguf", np.float32)
    model_gguf(tmp_path / "evil\x1b[31m-F16.gguf", np.float16)
    out = cli("estimate", str(tmp_path / "big-F32.gguf"), "--gpu", "120MiB").out
    assert "what makes it fit: use " in out
    assert "\x1b" not in out and "\\x1b" in out
