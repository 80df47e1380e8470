"""PyTorch pickles without torch and without running anything: real legacy files from the lpips wheel,
zip and legacy files built here with the same pickle opcodes torch writes, and hostile pickles whose
reduce would run a command."""

from __future__ import annotations

import io
import os
import pickle
import sys
import types
import zipfile
from collections import OrderedDict
from pathlib import Path

import pytest
from helpers import FIXTURES, ref

from inspector import errors
from inspector.analysis.facts.stats import summarize
from inspector.sources.resolve import open_checkpoint

LPIPS = FIXTURES / "checkpoints" / "lpips-0.1.4"


@pytest.mark.parametrize("net", ["alex", "vgg", "squeeze"])
@pytest.mark.parametrize("version", ["v0.0", "v0.1"])
def test_lpips_legacy_weights_give_the_element_counts(net: str, version: str) -> None:
    c = open_checkpoint(str(LPIPS / version / f"{net}.pth"))
    s = summarize(c)
    assert s.parameters == ref(f"lpips.{net}.parameters")
    assert all(t.shape[0] == 1 and t.shape[2:] == (1, 1) for t in c.tensors())
    assert c.headers[0].metadata["format"] == "pytorch legacy"


def test_lpips_against_torch_where_it_is_installed() -> None:
    torch = pytest.importorskip("torch", reason="the torch extra (CI installs it) gives a second reference")
    for path in sorted(LPIPS.rglob("*.pth")):
        state = torch.load(path, weights_only=True, map_location="cpu")
        ours = {t.name: (t.shape, t.numel) for t in open_checkpoint(str(path)).tensors()}
        assert ours == {k: (tuple(v.shape), v.numel()) for k, v in state.items()}, path


# --- files built with torch's own opcodes, without torch ------------------------------------------------


class _FakeTorch:
    """Modules named like torch's, so pickle writes the same GLOBAL opcodes torch.save writes."""

    def __enter__(self) -> _FakeTorch:
        self.saved = {k: sys.modules.get(k) for k in ("torch", "torch._utils")}
        torch = types.ModuleType("torch")
        utils = types.ModuleType("torch._utils")

        def _rebuild_tensor_v2(*args):  # pragma: no cover - never called: we only pickle it
            raise AssertionError

        _rebuild_tensor_v2.__module__ = "torch._utils"
        _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
        utils._rebuild_tensor_v2 = _rebuild_tensor_v2

        class FloatStorage:
            pass

        class HalfStorage:
            pass

        FloatStorage.__module__ = HalfStorage.__module__ = "torch"
        FloatStorage.__qualname__, HalfStorage.__qualname__ = "FloatStorage", "HalfStorage"
        torch.FloatStorage, torch.HalfStorage, torch._utils = FloatStorage, HalfStorage, utils
        sys.modules["torch"], sys.modules["torch._utils"] = torch, utils
        self.torch = torch
        return self

    def __exit__(self, *exc: object) -> None:
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


class _T:
    def __init__(self, storage: str, kind: type, numel: int, offset: int, shape: tuple[int, ...]) -> None:
        self.storage, self.kind, self.numel, self.offset, self.shape = storage, kind, numel, offset, shape

    def __reduce__(self):
        utils = sys.modules["torch._utils"]
        stride = tuple(int(__import__("math").prod(self.shape[i + 1:])) for i in range(len(self.shape)))
        return (utils._rebuild_tensor_v2, (_Storage(self.storage, self.kind, self.numel), self.offset, self.shape,
                                            stride, False, OrderedDict()))


class _Storage:
    def __init__(self, key: str, kind: type, numel: int) -> None:
        self.key, self.kind, self.numel = key, kind, numel


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", obj.kind, obj.key, "cpu", obj.numel)
        return None


def _state(fake: _FakeTorch) -> OrderedDict:
    f32, f16 = fake.torch.FloatStorage, fake.torch.HalfStorage
    return OrderedDict([
        ("embed.weight", _T("0", f32, 40, 0, (10, 4))),
        ("lm_head.weight", _T("0", f32, 40, 0, (10, 4))),  # tied: the same storage
        ("layers.0.w.weight", _T("1", f16, 12, 0, (3, 4))),
    ])


def write_zip(path: Path) -> Path:
    with _FakeTorch() as fake:
        buf = io.BytesIO()
        _Pickler(buf, protocol=2).dump(_state(fake))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/data/0", b"\0" * 160)
        z.writestr("archive/data/1", b"\0" * 24)
        z.writestr("archive/version", "3\n")
    return path


def write_legacy(path: Path) -> Path:
    with _FakeTorch() as fake:
        buf = io.BytesIO()
        for plain in (0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}):
            pickle.dump(plain, buf, protocol=2)
        _Pickler(buf, protocol=2).dump(_state(fake))
        pickle.dump(["0", "1"], buf, protocol=2)
    for numel, esize in ((40, 4), (12, 2)):
        buf.write(numel.to_bytes(8, "little") + b"\0" * (numel * esize))
    path.write_bytes(buf.getvalue())
    return path


@pytest.mark.parametrize("write", [write_zip, write_legacy])
def test_zip_and_legacy_layouts_count_a_shared_storage_once(tmp_path: Path, write, cli) -> None:
    path = write(tmp_path / "pytorch_model.bin")
    c = open_checkpoint(str(path))
    s = summarize(c)
    # tied: lm_head.weight is the same tensor as embed.weight (one storage, one view), counted once as
    # torch's nn.Module.parameters() counts a tied parameter once; the second name is listed
    assert s.parameters == 40 + 12 and s.bytes == 160 + 24
    assert "lm_head.weight = embed.weight" in c.headers[0].metadata["same tensor, several names"]
    doc = cli(str(path), "--json").json()
    assert doc["totals"]["parameters"] == 52
    # issue 41: a pickle's archive facts were shown as "safetensors metadata: format=pytorch zip"
    assert not [note for note in doc["notes"] if note.startswith("safetensors metadata")]


def test_the_same_state_dict_as_bin_and_safetensors_diffs_as_identical(tmp_path: Path, cli) -> None:
    from helpers import save_real

    write_zip(tmp_path / "bin" / "pytorch_model.bin") if (tmp_path / "bin").mkdir() is None else None
    save_real(tmp_path / "st" / "model.safetensors", {"embed.weight": ("F32", (10, 4)),  # tied lm_head: not stored
                                                      "layers.0.w.weight": ("F16", (3, 4))})
    doc = cli("diff", str(tmp_path / "bin"), str(tmp_path / "st"), "--json").json()
    assert doc["delta"]["parameters"] == 0 and doc["changes"] == []


# --- hostile pickles ------------------------------------------------------------------------------------


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_a_pickle_that_would_run_a_command_is_refused_and_never_runs(tmp_path: Path, cli, layout: str) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"w": _Evil(marker)}, protocol=2)
    path = tmp_path / "evil.bin"
    if layout == "zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", payload)
    else:
        buf = io.BytesIO()
        for plain in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
            pickle.dump(plain, buf, protocol=2)
        buf.write(payload)
        path.write_bytes(buf.getvalue())
    r = cli(str(path))
    assert r.code == errors.EXIT_INVALID and "posix.system" in r.err and "nothing was run" in r.err
    r = cli("audit", str(path), "--json")
    assert r.code == 1
    assert [f["code"] for f in r.json()["findings"]] == ["pickle.unsafe-global"]
    assert not marker.exists()


def test_a_50_mb_bin_through_the_hub_reads_its_directory_and_data_pkl_only(tmp_path: Path, online: None) -> None:
    from hubserver import HubServer, VFile

    from inspector.sources.hub import HubOptions, open_hub

    with _FakeTorch() as fake:
        buf = io.BytesIO()
        big = OrderedDict([("w.weight", _T("0", fake.torch.FloatStorage, 12_500_000, 0, (2500, 5000)))])
        _Pickler(buf, protocol=2).dump(big)
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as z:  # stored, as torch.save writes it
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/data/0", b"\0" * 50_000_000)
        z.writestr("archive/version", "3\n")
    data = path.read_bytes()
    with HubServer() as server:
        server.add_files("acme/bin", {"pytorch_model.bin": VFile(len(data), data, True)})
        c = open_hub("acme/bin", options=HubOptions(endpoint=server.url, timeout=5))
        assert summarize(c).parameters == 12_500_000
        assert len(server.requests("GET")) <= 8
        print(f"requests {len(server.requests('GET'))}, bytes {server.bytes_sent():,}")
        assert server.bytes_sent() <= 1_000_000


def test_every_dtype_torch_save_writes_reads_as_torch_counts_it(tmp_path: Path, cli) -> None:
    """``torch.save`` writes ``_rebuild_tensor_v3`` with an untyped storage for dtypes that have no
    typed storage class (float8, uint16/32/64); the rest through typed storages. Reference: torch's own
    ``numel()`` and ``element_size()`` of what it loads."""
    torch = pytest.importorskip("torch", reason="the torch extra (CI installs it) writes the reference file")
    names = ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "uint16", "uint32", "uint64", "int8", "bool",
             "complex64", "bfloat16")
    state = {n: torch.zeros(3 + i, 7, dtype=getattr(torch, n)) for i, n in enumerate(names)}
    path = tmp_path / "dtypes.pt"
    torch.save(state, path)
    loaded = torch.load(path, weights_only=True)
    expected = {k: (v.numel(), v.numel() * v.element_size()) for k, v in loaded.items()}
    ours = {t.name: (t.numel, t.nbytes) for t in open_checkpoint(str(path)).tensors()}
    assert ours == expected
    audit = cli("audit", str(path), "--json")
    assert audit.code == 0, audit.out
    assert not [f for f in audit.json()["findings"] if "unsafe" in f["code"] or f["severity"] == "error"]


def test_saving_a_folder_of_real_pth_files_is_one_named_refusal_and_writes_nothing(tmp_path: Path, cli) -> None:
    """lpips's .pth files (real, nobody here wrote them) are torch pickles: their records need the
    archive's end, not a prefix, so a header snapshot cannot keep them. The save says so, exit 4,
    and leaves nothing behind (before: "saved N tensor headers", exit 0, and a snapshot that failed
    to open)."""
    out = tmp_path / "out"
    out.mkdir()
    result = cli("save", str(LPIPS / "v0.1"), "-o", str(out / "snap"))
    assert result.code == errors.EXIT_INVALID, result.err
    assert result.err.count("Error:") == 1 and ".pth" in result.err and "nothing was written" in result.err
    assert list(out.iterdir()) == []
