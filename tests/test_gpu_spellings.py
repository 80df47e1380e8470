"""One GPU parser in every command (issue 67): each way people write a GPU and its count names the same GPU and
count in ``estimate``, ``train`` and ``plan`` (``plan --gpu 8xA100`` was refused while the others took it), and
``plan`` answers for the count asked, with the fewest that fit beside it."""

from __future__ import annotations

import pytest

SPELLINGS = [("8xA100", "A100-80GB", 8), ("A100x8", "A100-80GB", 8), ("8 × A100", "A100-80GB", 8),
             ("8xa100-80gb", "A100-80GB", 8), ("2x RTX 4090", "RTX4090", 2), ("RTX 4090", "RTX4090", 1),
             ("4090", "RTX4090", 1), ("rtx_4090", "RTX4090", 1), ("H100", "H100-80GB", 1), ("H100x2", "H100-80GB", 2)]


@pytest.mark.parametrize(("text", "gpu", "count"), SPELLINGS)
def test_each_spelling_is_one_gpu_and_count_in_every_command(cli, text: str, gpu: str, count: int) -> None:
    fit = cli("estimate", "llama3-8b", "--gpu", text, "--json").json()["fit"]
    assert (fit["gpu"], fit["devices"]) == (gpu, count)
    train = cli("train", "llama3-8b", "--gpu", text, "--json").json()
    assert (train["gpu"], train["gpus"]) == (gpu, count)
    plan = cli("plan", "llama3-8b", "--gpu", text, "--json").json()
    assert {row["gpu"] for row in plan["layouts"]} == {gpu}
    if count > 1:  # the count written: the answer is on that many
        assert plan["answer"].startswith(f"{count} × {gpu}"), plan["answer"]


def test_plan_answers_for_the_count_asked_and_names_the_fewest_beside_it(cli) -> None:
    """"TP/PP for a 70B on 8×A100" answered for the fewest GPUs (2). Now the answer is the best layout on eight
    (the plan's own ranking of the eight-GPU rows), and the fewest that fit is said beside it; its rows are the
    plan's rows, not figures of their own."""
    doc = cli("plan", "llama3-70b", "--gpu", "8xA100", "--json").json()
    on_eight = [r for r in doc["layouts"] if r["gpus"] == 8 and r["valid"] and r["fits"]]
    fewest = next(r for r in doc["layouts"] if r["valid"] and r["fits"])
    best = on_eight[0]
    assert doc["answer"].startswith(f"8 × A100-80GB, TP {best['tp']}")
    assert f"the fewest that fit: {fewest['gpus']} × A100-80GB, TP {fewest['tp']}" in doc["answer"]
    assert fewest["gpus"] < 8 and doc["fits"] is True
    plain = cli("plan", "llama3-70b", "--gpu", "A100", "--json").json()
    assert plain["answer"].startswith(f"{fewest['gpus']} × A100-80GB") and "fewest" not in plain["answer"]


def test_a_count_that_cannot_hold_the_model_says_so_and_the_fewest_that_can(cli) -> None:
    doc = cli("plan", "llama3-70b", "--gpu", "2x RTX 4090", "--json").json()
    assert doc["answer"].startswith("no layout of 2 × RTX4090 fits") and "the fewest that fit:" in doc["answer"]
    assert doc["fits"] is False


def test_an_unknown_gpu_or_count_is_one_usage_line(cli) -> None:
    for text in ("8xB999", "0xA100", "9999xH100"):
        result = cli("plan", "llama3-8b", "--gpu", text)
        assert result.code == 2 and result.err.startswith("Error:"), result.err


def _quants(folder):
    """Llama-3-8B's tensor infos in four quantisation mixes, as gguf-py writes them, with room for the data."""
    from helpers import llama3_8b_gguf

    folder.mkdir()
    for main, sensitive in (("Q2_K", "Q4_K"), ("Q4_K", "Q6_K"), ("Q8_0", "Q8_0"), ("F16", "F16")):
        path = llama3_8b_gguf(folder / f"Meta-Llama-3-8B-{main}.gguf", main, sensitive)
        with path.open("r+b") as fh:
            fh.truncate(17_000_000_000)
    return folder


def test_which_quant_fits_is_answered_first(cli, tmp_path) -> None:
    """"Which quant fits 12 GB": the first line names the largest file that fits (its own row's figures: the
    fitting row with the most bytes), in at most 80 columns; the JSON says it as largest_fit; none, said so."""
    folder = _quants(tmp_path / "q")
    doc = cli(str(folder), "--gpu", "12GB", "--json").json()
    fitting = [r for r in doc["files"] if r["fits"]]
    best = max(fitting, key=lambda r: r["bytes"])
    assert doc["largest_fit"] == best["file"] == "Meta-Llama-3-8B-Q8_0.gguf"
    assert len(fitting) == 3  # F16's 16 GB of weights do not fit 12 GiB
    first = cli(str(folder), "--gpu", "12GB").out.splitlines()[0]
    assert first == (f"largest that fits: {best['file']} (Q8_0, {best['needed_bytes'] / 2**30:.2f} GiB, "
                     f"{best['max_context']:,} tokens)")
    assert len(first) <= 80
    none = cli(str(folder), "--gpu", "2GiB")
    assert none.out.splitlines()[0] == "no file fits 1 × 2.00 GiB"
    assert cli(str(folder), "--gpu", "2GiB", "--json").json()["largest_fit"] is None


def test_moe_qlora_names_the_experts_layout_bitsandbytes_quantises(cli) -> None:
    """QLoRA of Mixtral on 24 GB said "113.37 GiB, does not fit" and offered nothing: its experts, fused as
    transformers 5 loads them, are no nn.Linear, so bitsandbytes leaves them 16-bit. Now the change that holds them
    as transformers 4.x did (``--experts separate``: NF4 too) is named with the step it then needs, the same
    figure ``train`` gives with that option; where no change fits, the closest is said as such."""
    import inspector

    doc = cli("train", "mixtral-8x7b", "--method", "qlora", "--gpu", "48GiB", "--json").json()
    assert doc["fits"] is False
    knobs = {k["change"]: k["total"] for k in doc["suggestions"]}
    separate = inspector.train("mixtral-8x7b", method="qlora", gpu="48GiB", experts="separate",
                               checkpointing=True).train
    assert knobs["--experts separate --checkpointing"] == separate.total and separate.fits
    assert separate.total < doc["total"] / 3  # the experts' 16-bit copies were most of the step
    over = cli("train", "mixtral-8x7b", "--method", "qlora", "--gpu", "24GiB")
    second = over.out.splitlines()[1]
    assert second.startswith("no one change makes it fit; the closest: --experts separate"), second


@pytest.mark.parametrize(("command", "text", "near"), [
    ("estimate", "H10", "H100"), ("train", "A10", "A10G"), ("plan", "H10", "H100"), ("estimate", "RTX-409", "RTX4090"),
])
def test_an_unknown_gpu_is_answered_with_the_closest_names(cli, command: str, text: str, near: str) -> None:
    result = cli(command, "llama3-8b", "--gpu", text)
    assert result.code == 2 and "did you mean" in result.err and near in result.err, result.err
