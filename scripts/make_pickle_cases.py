"""Hostile PyTorch pickles, one per published bypass class, written opcode by opcode (no torch).

    python scripts/make_pickle_cases.py OUT_FOLDER [--canary PATH]

Each case's payload, if any reader ran it, would create the canary file (``open(CANARY, "w")`` or
``touch CANARY``); the tests (tests/test_pickle_bypasses.py) assert each is refused or reported with
the named rule and that the canary never appears. The classes are those the pickle scanners'
bypass write-ups name (picklescan, fickling, ModelScan advisories and CVE-2025-32434):

- ``missing-blocklist``: a global a blocklist forgets (``runpy._run_code``, ``pydoc.pipe``); we allow,
  we do not block, so any of them is refused;
- ``memo-stack-global``: ``STACK_GLOBAL`` whose module and name come from the memo, not inline;
- ``attribute-walk``: ``builtins.getattr`` on an allowed class to reach something callable;
- ``payload-before-error``: a payload, then bytes that make the rest fail to parse;
- ``extension``: ``EXT1`` naming a global through copyreg's extension registry;
- ``nested-pickle``: ``pickle.loads`` of an inner pickle;
- ``zip-duplicate``: two ``archive/data.pkl`` entries, the malicious one first (torch reads the first,
  Python's zipfile the last);
- ``zip-name-mismatch``: the local header names another file than the central directory;
- ``torchscript``: ``constants.pkl`` and ``code/`` beside ``data.pkl`` (torch.load hands it to
  torch.jit.load);
- ``polyglot-legacy-zip``: a legacy stream whose pickle calls a foreign global, a benign zip appended;
- ``legacy-trailing``: a benign legacy stream with bytes after its last storage;
- ``shared-tuple-bomb``: 63 levels of pairs of one shared tuple (2^63 paths, 63 objects);
- ``self-reference``: a list that contains itself; ``deep-nesting``: 200,000 nested lists;
- ``unhashable-key``: a list as a dict key; ``encrypted-member`` and ``compression-99``: data.pkl flagged
  encrypted, or stored with compression method 99 (the issue's exit-70 cases);
- ``long-int-key``: a 10,800-digit integer as a state-dict key;
- ``build-on-tensor``: ``BUILD`` setting state on a rebuilt tensor;
- ``negative-shape``: a tensor of shape (-15, 4).
"""

from __future__ import annotations

import argparse
import io
import struct
import zipfile
from pathlib import Path

PROTO = b"\x80\x02"
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def s(text: str) -> bytes:
    """SHORT_BINUNICODE / BINUNICODE of ``text``."""
    raw = text.encode()
    return (b"\x8c" + bytes([len(raw)]) if len(raw) < 256 else b"X" + struct.pack("<I", len(raw))) + raw


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def call(module: str, name: str, *args: bytes) -> bytes:
    """``module.name(*args)``: GLOBAL, a tuple of the args, REDUCE."""
    return glob(module, name) + b"(" + b"".join(args) + b"tR"


def touch(canary: Path) -> bytes:
    return call("os", "system", s(f"touch {canary}"))


def tensor(key: str, numel: int, shape: tuple[int, ...]) -> bytes:
    """``torch._utils._rebuild_tensor_v2(storage, 0, shape, stride, False, OrderedDict())``."""
    stride = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        stride[i] = stride[i + 1] * shape[i + 1]

    def ints(values: tuple[int, ...] | list[int]) -> bytes:
        return b"(" + b"".join(b"J" + struct.pack("<i", v) for v in values) + b"t"

    persistent = b"(" + s("storage") + glob("torch", "FloatStorage") + s(key) + s("cpu") + \
        b"J" + struct.pack("<i", numel) + b"tQ"
    return glob("torch._utils", "_rebuild_tensor_v2") + b"(" + persistent + b"K\x00" + ints(shape) + \
        ints(stride) + b"\x89" + glob("collections", "OrderedDict") + b")RtR"


def state_dict(*items: tuple[str, bytes]) -> bytes:
    return glob("collections", "OrderedDict") + b")R" + b"".join(s(k) + v + b"s" for k, v in items)


def torch_zip(pkl: bytes, storages: dict[str, int], extra: dict[str, bytes] | None = None,
              first: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in (first or {}).items():
            z.writestr(name, data)
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        for key, numel in storages.items():
            z.writestr(f"archive/data/{key}", b"\0" * (4 * numel))
        z.writestr("archive/version", "3\n")
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return out.getvalue()


def legacy(pkl: bytes, storages: dict[str, int]) -> bytes:
    import pickle

    buf = io.BytesIO()
    for plain in (LEGACY_MAGIC, 1001, {"protocol_version": 1001, "little_endian": True}):
        pickle.dump(plain, buf, protocol=2)
    buf.write(pkl)
    pickle.dump(list(storages), buf, protocol=2)
    for numel in storages.values():
        buf.write(struct.pack("<q", numel) + b"\0" * (4 * numel))
    return buf.getvalue()


def _patch_entry(archive: bytes, name: str, *, flags: int | None = None, method: int | None = None) -> bytes:
    """The zip with entry ``name``'s general-purpose flags or compression method rewritten in both its
    local header and its central directory record (encryption: flag bit 0; method 99: AES)."""
    data = bytearray(archive)
    raw = name.encode()
    for signature, flag_at, method_at, name_at in ((b"PK\x03\x04", 6, 8, 30), (b"PK\x01\x02", 8, 10, 46)):
        at = data.find(signature)
        while at >= 0:
            if data[at + name_at:at + name_at + len(raw)] == raw:
                if flags is not None:
                    struct.pack_into("<H", data, at + flag_at, flags)
                if method is not None:
                    struct.pack_into("<H", data, at + method_at, method)
            at = data.find(signature, at + 4)
    return bytes(data)


def benign() -> bytes:
    return PROTO + state_dict(("w", tensor("0", 16, (4, 4)))) + b"."


def build_all(out: Path, canary: Path) -> dict[str, tuple[Path, str]]:
    """Write every case under ``out``: name → (file, the rule a refusal or finding names)."""
    out.mkdir(parents=True, exist_ok=True)
    cases: dict[str, tuple[str, bytes, str]] = {}
    evil_sd = PROTO + state_dict(("w", touch(canary))) + b"."
    cases["missing-blocklist"] = ("model.pt", torch_zip(
        PROTO + state_dict(("w", call("runpy", "_run_code", s(f"open({str(canary)!r}, 'w')"), b"}"))) + b".",
        {}), "pickle.unsafe-global")
    memo = PROTO + s("os") + b"q\x01" + s("system") + b"q\x02" + b"0" + b"0" + b"h\x01h\x02\x93" + \
        b"(" + s(f"touch {canary}") + b"tR."
    cases["memo-stack-global"] = ("model.pt", torch_zip(memo, {}), "pickle.unsafe-global")
    walk = PROTO + call("builtins", "getattr", glob("collections", "OrderedDict"), s("__init__")) + b"."
    cases["attribute-walk"] = ("model.pt", torch_zip(walk, {}), "pickle.unsafe-global")
    cases["payload-before-error"] = ("model.bin", legacy(PROTO + touch(canary) + b"\xff\xfe", {}),
                                     "pickle.unsafe-global")
    cases["extension"] = ("model.pt", torch_zip(PROTO + b"\x82\x01" + b"(" + s(f"touch {canary}") + b"tR.", {}),
                          "pickle.unsafe-global")
    inner = PROTO + touch(canary) + b"."
    nested = PROTO + glob("pickle", "loads") + b"(" + b"C" + bytes([len(inner)]) + inner + b"tR."
    cases["nested-pickle"] = ("model.pt", torch_zip(nested, {}), "pickle.unsafe-global")
    cases["zip-duplicate"] = ("model.pt", torch_zip(benign(), {"0": 16}, first={"archive/data.pkl": evil_sd}),
                              "zip.duplicate-entry")
    good = torch_zip(benign(), {"0": 16})
    cases["zip-name-mismatch"] = ("model.pt", good.replace(b"archive/data.pkl", b"archive/data.pkx", 1),
                                  "pickle.zip-invalid")
    cases["torchscript"] = ("model.pt", torch_zip(benign(), {"0": 16}, extra={
        "archive/constants.pkl": PROTO + b"N.", "archive/code/__torch__.py": b"def forward(self): pass\n"}),
        "pickle.torchscript")
    cases["polyglot-legacy-zip"] = ("model.bin", legacy(evil_sd, {}) + good, "pickle.polyglot")
    cases["legacy-trailing"] = ("model.bin", legacy(benign(), {"0": 16}) + b"\0" * 64, "pickle.polyglot")
    nest = tensor("0", 16, (4, 4)) + b"q\x000"  # BINPUT 0, POP: each level leaves the stack as it was
    for i in range(63):
        nest += b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86" + b"q" + bytes([i + 1]) + b"0"
    bomb = PROTO + state_dict(("w", nest + b"h" + bytes([63]))) + b"."
    cases["shared-tuple-bomb"] = ("model.pt", torch_zip(bomb, {"0": 16}), "pickle.pickle-invalid")
    cycle = PROTO + glob("collections", "OrderedDict") + b")R" + s("w") + b"]q\x00h\x00a" + b"s."  # a list in itself
    cases["self-reference"] = ("model.pt", torch_zip(cycle, {}), "pickle.pickle-invalid")
    deep = PROTO + b"]" * 200_000 + b"a" * 199_999 + b"."  # 200,000 nested lists, no marks
    cases["deep-nesting"] = ("model.pt", torch_zip(deep, {}), "pickle.pickle-invalid")
    long_key = PROTO + glob("collections", "OrderedDict") + b")R" + b"L" + b"7" * 10_800 + b"L\n" + \
        tensor("0", 16, (4, 4)) + b"s."
    cases["long-int-key"] = ("model.pt", torch_zip(long_key, {"0": 16}), "pickle.pickle-invalid")
    build = PROTO + state_dict(("w", tensor("0", 16, (4, 4)) + b"}" + s("shape") + s("x") + b"sb")) + b"."
    cases["build-on-tensor"] = ("model.pt", torch_zip(build, {"0": 16}), "pickle.pickle-invalid")
    negative = PROTO + state_dict(("w", tensor("0", 16, (-15, 4)))) + b"."
    cases["negative-shape"] = ("model.pt", torch_zip(negative, {"0": 16}), "pickle.pickle-invalid")
    unhashable = PROTO + b"}" + b"]" + tensor("0", 16, (4, 4)) + b"s."  # a list as a dict key
    cases["unhashable-key"] = ("model.pt", torch_zip(unhashable, {"0": 16}), "pickle.pickle-invalid")
    cases["encrypted-member"] = ("model.pt", _patch_entry(good, "archive/data.pkl", flags=0x1), "pickle.zip-invalid")
    cases["compression-99"] = ("model.pt", _patch_entry(good, "archive/data.pkl", method=99), "pickle.zip-invalid")
    written: dict[str, tuple[Path, str]] = {}
    for name, (file, data, rule) in cases.items():
        folder = out / name
        folder.mkdir(exist_ok=True)
        (folder / file).write_bytes(data)
        written[name] = (folder / file, rule)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--canary", type=Path, default=Path("/tmp/inspector-pickle-canary"))
    args = parser.parse_args()
    for name, (path, rule) in build_all(args.out, args.canary).items():
        print(f"{name:22} {path}  {rule}")


if __name__ == "__main__":
    main()
