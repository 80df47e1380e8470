"""PyTorch pickles (``pytorch_model.bin``, ``.pth``, ``.pt``) read without torch, nothing executed.

Two layouts (torch.serialization):

* **zip** (torch ≥ 1.6): an archive with ``<prefix>/data.pkl``, one entry ``<prefix>/data/<key>`` per
  storage and ``<prefix>/byteorder``; only the directory and ``data.pkl`` are read.
* **legacy**: a magic-number pickle, a protocol-version pickle, a sys-info pickle, the state-dict
  pickle, a pickle of storage keys, then each storage as an 8-byte element count and its bytes.

The state-dict pickle is loaded by a restricted unpickler: ``find_class`` answers only the globals a
state dict needs (``torch._utils._rebuild_tensor_v2`` and its kin, storage classes, dtypes,
``collections.OrderedDict``) with stand-ins of ours that record shapes, dtypes, storages and offsets.
Any other global (``os.system``, ``builtins.exec``, ``posix.system``, ``subprocess.Popen`` …) is refused
before anything is called: the file is an invalid checkpoint naming the global (the Hub's pickle
scanning reports the same globals). A storage shared by several names (tied weights) counts its bytes
once.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, Final

from inspector.errors import PickleError
from inspector.formats.pickle_scan import scan_pickle
from inspector.formats.torch_unpickle import (
    StandInTensor,
    StateDictUnpickler,
    allowed_global,
    element_bytes,
    no_global,
    state_dict_records,
    unpickle,
)
from inspector.model import Import, TensorInfo, WeightFile
from inspector.safeio import open_regular

LEGACY_MAGIC: Final = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL: Final = 1001  # torch.serialization.PROTOCOL_VERSION
MAX_PICKLE: Final = 64 * 1024 * 1024  # the largest pickle read: a 100,000-tensor data.pkl is ~20 MB
#: every pickle of one archive together (data.pkl and the others scanned for the inventory)
MAX_PICKLES: Final = 2 * MAX_PICKLE
#: the most a compressed zip entry may expand: torch.save writes its entries stored (uncompressed); a
#: re-zipped checkpoint's data.pkl deflates about 5:1. A 19.7 kB archive once expanded to 3.75 GB
MAX_RATIO: Final = 100

def read_torch(path: Path, name: str) -> WeightFile:
    """The tensors of a PyTorch pickle file, header-like: shapes, dtypes, byte spans per storage."""
    fd = open_regular(path)
    with open(fd, "rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(0)
        return read_torch_stream(fh, name, size)


#: entries that make a zip a TorchScript archive (with a ``code/`` folder): what torch.load dispatches
#: to torch.jit.load
TORCHSCRIPT_ENTRIES: Final = ("constants.pkl", "attributes.pkl", "model.json")


def _read_zip(fh: Any, name: str, size: int) -> WeightFile:
    imports: list[Import] = []
    try:
        archive = zipfile.ZipFile(fh)
        infos = archive.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise PickleError("zip.duplicate-entry", f"two zip entries named {twice!r}: torch.load reads the first, "
                                                     "Python's zipfile the last; refusing to guess", name)
        if infos and min(i.header_offset for i in infos) != 0:
            raise PickleError("polyglot", "the zip archive does not start at byte 0 (data before its first entry): "
                                          "readers disagree on such a file", name)
        if any(n.startswith("MAR-INF/") for n in names):
            raise PickleError("torchserve", "a TorchServe model archive (MAR-INF/): it carries handler code to run; "
                                            "not read as a state dict", name)
        if not names:
            raise PickleError("zip-no-data-pkl", "an empty zip: not a torch checkpoint", name)
        # torch.load's reader takes the archive's folder from its first entry and reads <folder>/data.pkl
        prefix = names[0].split("/", 1)[0] + "/" if "/" in names[0] else ""
        pkl = prefix + "data.pkl"
        entries = {i.filename: i for i in infos}
        pickles = [i for i in infos if i.filename.endswith(".pkl")]
        for info in pickles:
            _check_expansion(info, name)
        if sum(i.file_size for i in pickles) > MAX_PICKLES:
            raise PickleError("pickle-too-large", f"its pickles declare {sum(i.file_size for i in pickles):,} bytes "
                                                  f"together, over the {MAX_PICKLES:,}-byte budget", name)
        for other in sorted(n for n in names if n.endswith(".pkl") and n != pkl):  # every pickle, for the inventory
            if entries[other].file_size <= MAX_PICKLE:
                _scan_all(_read_entry(archive, entries[other], name), other, name, allowed_global, imports)
        script = next((n for n in names if n.rsplit("/", 1)[-1] in TORCHSCRIPT_ENTRIES or "/code/" in n
                       or n.startswith("code/")), None)
        if script is not None:
            raise PickleError("torchscript", f"a TorchScript archive ({script}): torch.load hands it to "
                                             "torch.jit.load, which runs its code; not read as a state dict", name,
                              hint="load it only if you trust its author", imports=tuple(imports))
        if pkl not in entries:
            raise PickleError("zip-no-data-pkl", f"no {pkl} (the folder of the archive's first entry): not a torch "
                                                 "checkpoint", name, imports=tuple(imports))
        if entries[pkl].file_size > MAX_PICKLE:
            raise PickleError("pickle-too-large", f"data.pkl is {entries[pkl].file_size:,} bytes", name)
        data = _read_entry(archive, entries[pkl], name)
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError, OSError, ValueError,
            struct.error) as exc:  # unknown versions and compression methods, encryption, bad CRC, truncation
        raise PickleError("zip-invalid", f"not a readable zip ({type(exc).__name__}: {str(exc)[:80]})",
                          name, imports=tuple(imports)) from None
    _scan_all(data, pkl, name, allowed_global, imports)
    sizes = {n[len(prefix) + len("data/"):]: i.file_size for n, i in entries.items() if n.startswith(prefix + "data/")}
    offsets = {n[len(prefix) + len("data/"):]: i.header_offset for n, i in entries.items()
               if n.startswith(prefix + "data/")}
    records = unpickle(data, name, imports)
    return _header(records, name, size, sizes, offsets, "pytorch zip", imports=imports)


def _check_expansion(info: zipfile.ZipInfo, file: str) -> None:
    """A compressed entry that declares more than ``MAX_RATIO`` times its compressed bytes is refused
    before a byte of it is inflated."""
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > MAX_RATIO * max(info.compress_size, 1) + 65536:
        raise PickleError("zip-bomb", f"{info.filename} declares {info.file_size:,} bytes from "
                                      f"{info.compress_size:,} compressed (over {MAX_RATIO}:1); torch.save stores its "
                                      "entries uncompressed: refusing to inflate it", file)


def _read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: str) -> bytes:
    """An entry's bytes, inflated a chunk at a time and cut off past its declared size (never past
    ``MAX_PICKLE``), whatever its local header claims."""
    limit = min(info.file_size, MAX_PICKLE)
    out = bytearray()
    with archive.open(info) as stream:
        while len(out) <= limit:
            chunk = stream.read(min(1 << 20, limit + 1 - len(out)))
            if not chunk:
                break
            out += chunk
    if len(out) > limit:
        raise PickleError("zip-bomb", f"{info.filename} inflates past its declared {info.file_size:,} bytes", file)
    return bytes(out)


def _scan_all(data: bytes, where: str, file: str, allowed: Any, imports: list[Import]) -> None:
    """Scan one pickle for the inventory; refuse the file if it names a global ``allowed`` refuses."""
    try:
        scan_pickle(io.BytesIO(data), where, file, allowed, imports)
    except PickleError:
        _refuse_unsafe(imports, file)  # a global met before the parse error is the reason given
        raise
    _refuse_unsafe(imports, file)


def _refuse_unsafe(imports: list[Import], file: str) -> None:
    bad = next((i for i in imports if not i.allowed), None)
    if bad is not None:
        raise PickleError("unsafe-global", f"{bad.pickle} calls {bad.module}.{bad.name}, which a state dict never "
                                           "needs; refusing it (nothing was run)", file,
                          hint="load it only if you trust its author; convert it to safetensors",
                          imports=tuple(imports))


#: legacy streams: the first read, then four times more each time the pickles run past it
LEGACY_FIRST_READ: Final = 64 * 1024


def _read_legacy(fh: Any, name: str, size: int) -> WeightFile:
    """The pickles sit before the storages: read 64 kB, then four times more (to MAX_PICKLE) only while
    the pickles run past what was read; something else is refused from its first bytes."""
    want = LEGACY_FIRST_READ
    while True:
        fh.seek(0)
        head = fh.read(min(size, want))
        try:
            header = _parse_legacy(head, name, size)
        except PickleError as exc:
            if exc.rule == "pickle-truncated" and len(head) < min(size, MAX_PICKLE):
                want *= 4
                continue
            _refuse_polyglot(fh, name, exc.imports)  # the format confusion is the first thing to say
            raise
        _refuse_polyglot(fh, name, header.imports)
        return header


def _refuse_polyglot(fh: Any, name: str, imports: tuple[tuple[str, str, str, bool], ...]) -> None:
    """A legacy stream with a zip archive in it: torch.load decides on the first four bytes and runs
    the legacy pickles; a zip reader (a scanner among them) finds the archive."""
    if zipfile.is_zipfile(fh):
        raise PickleError("polyglot", "a legacy pickle stream with a zip archive in it: torch.load runs the "
                                      "legacy pickles (its first bytes decide), a zip reader sees the archive",
                          name, imports=imports)


def _legacy_magic(stream: io.BytesIO, name: str) -> None:
    """The stream's first pickle must be torch's legacy magic number."""
    try:
        magic = _RestrictedData(stream, name).load()
    except PickleError:
        raise
    except Exception:  # an unknown protocol, say: not torch's magic number
        magic = None
    if magic != LEGACY_MAGIC:
        raise PickleError("not-torch", "neither a torch zip archive nor a legacy torch pickle", name)


def _parse_legacy(head: bytes, name: str, size: int) -> WeightFile:
    imports: list[Import] = []
    where = ("legacy magic number", "legacy protocol", "legacy sys info", "legacy state dict", "legacy storage keys")
    stream = io.BytesIO(head)
    try:
        for i, label in enumerate(where):
            start = stream.tell()
            scan_pickle(stream, label, name, allowed_global if i == 3 else no_global, imports)
            if i == 0:
                stream.seek(start)
                _legacy_magic(stream, name)
    except PickleError as exc:
        _refuse_unsafe(imports, name)  # a global met before the parse error is the reason given
        if exc.rule == "pickle-invalid" and not imports:
            raise PickleError("not-torch", "neither a torch zip archive nor a legacy torch pickle", name) from None
        raise
    _refuse_unsafe(imports, name)
    stream.seek(0)
    try:
        _RestrictedData(stream, name).load()  # the magic number, checked above
        if _RestrictedData(stream, name).load() != LEGACY_PROTOCOL:
            raise PickleError("legacy-protocol", f"the legacy protocol version is not {LEGACY_PROTOCOL} "
                                                 "(torch.load refuses any other)", name, imports=tuple(imports))
        _RestrictedData(stream, name).load()  # the sys info: plain data
        unpickler = StateDictUnpickler(stream, name)
        obj = unpickler.load()
        keys = _RestrictedData(stream, name).load()
        records = state_dict_records(obj)
    except PickleError:
        raise
    except Exception as exc:
        raise PickleError("legacy-invalid", f"the pickles do not load ({type(exc).__name__}: {str(exc)[:80]})",
                          name, imports=tuple(imports)) from None
    sizes: dict[str, int] = {}
    offsets: dict[str, int] = {}
    position = stream.tell()
    for key in keys if isinstance(keys, list) else []:
        ref = unpickler.refs.get(str(key))
        if ref is None or ref.numel is None:
            raise PickleError("storage-missing", f"storage {str(key)[:40]} is not described by the pickle", name)
        nbytes = ref.numel * element_bytes(ref.dtype, name)
        if position + 8 <= len(head):  # torch checks each storage's own size record against the pickle's
            (recorded,) = struct.unpack_from("<q", head, position)
            if recorded * element_bytes(ref.dtype, name) != nbytes:
                raise PickleError("storage-size-record", f"storage {key}: the pickle says {ref.numel:,} elements, "
                                                         f"its size record {recorded:,} (torch.load refuses this)",
                                  name)
        offsets[str(key)] = position + 8
        sizes[str(key)] = nbytes
        position += 8 + nbytes
    if position < size:
        raise PickleError("polyglot", f"{size - position:,} bytes after the last storage (byte {position:,}): data "
                                      "appended to a legacy stream, which torch.load never reads", name,
                          imports=tuple(imports))
    return _header(records, name, size, sizes, offsets, "pytorch legacy", expected_end=position, imports=imports)


class _RestrictedData(pickle.Unpickler):
    """Plain data only (numbers, strings, lists, dicts): no global at all."""

    def __init__(self, stream: Any, file: str) -> None:
        super().__init__(stream)
        self.file = file

    def find_class(self, module: str, name: str) -> Any:
        raise PickleError("unsafe-global", f"the pickle calls {module}.{name}; refusing it (nothing was run)",
                          self.file)


#: top-level keys of a training checkpoint that hold the model's state dict, and those that hold
#: training state (optimizer moments, schedulers, EMA copies), reported apart, never counted
MODEL_KEYS: Final = ("state_dict", "model_state_dict", "model_state", "model", "module", "net", "network")
TRAINING_KEYS: Final = ("optimizer", "optimizer_state", "optimizer_state_dict", "optim", "opt", "scheduler",
                        "lr_scheduler", "scheduler_state", "ema", "ema_state_dict", "model_ema", "scaler",
                        "amp", "grad_scaler")


def _split_training_state(records: list[tuple[str, StandInTensor]]
                          ) -> tuple[list[tuple[str, StandInTensor]], dict[str, str]]:
    """A training checkpoint (``{model_state, optimizer_state, step}``): the model's tensors, with the
    model key dropped from their names, and a line for each part left out with its element count."""
    tops = {n.split(".", 1)[0] for n, _ in records}
    model = [k for k in MODEL_KEYS if k in tops]
    if not model or not tops - {model[0]} or not (tops - {model[0]}) <= set(TRAINING_KEYS):
        return records, {}
    kept = [(n.split(".", 1)[1] if "." in n else n, t) for n, t in records if n.split(".", 1)[0] == model[0]]
    notes: dict[str, str] = {}
    for top in sorted(tops - {model[0]}):
        part = [t for n, t in records if n.split(".", 1)[0] == top]
        elements = sum(_numel(t.shape) for t in part)
        notes[f"not counted: {top}"] = (f"{elements:,} elements in {len(part):,} tensors of training state "
                                        f"(the model is {model[0]!r})")
    return kept, notes


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _header(records: list[tuple[str, StandInTensor]], name: str, size: int, sizes: dict[str, int],
            offsets: dict[str, int], kind: str, expected_end: int | None = None,
            imports: list[Import] | None = None) -> WeightFile:
    records, apart = _split_training_state(records)
    tensors: list[TensorInfo] = []
    seen: set[str] = set()
    views: dict[tuple[str, int, tuple[int, ...], str], str] = {}
    aliases: list[str] = []
    shared = 0
    for tensor_name, t in records:
        esize = element_bytes(t.dtype, name)
        numel = _numel(t.shape)
        if t.ref.key not in sizes:
            raise PickleError("storage-missing", f"tensor {tensor_name[:80]!r}: its storage {t.ref.key[:40]} is "
                                                 "not in the file", name)
        limit = sizes[t.ref.key]
        if t.ref.numel is not None:  # torch reads the storage the pickle declares from the record
            declared = t.ref.numel * element_bytes(t.ref.dtype, name)
            if declared > limit:
                raise PickleError("storage-size-record", f"storage {t.ref.key[:40]}: the pickle declares "
                                                         f"{t.ref.numel:,} elements, the file holds {limit:,} bytes "
                                                         "(torch.load refuses this)", name)
            limit = declared
        if (t.offset + numel) * esize > limit:
            raise PickleError("storage-overrun", f"tensor {tensor_name[:80]!r} reaches past the end of its storage",
                              name)
        view = (t.ref.key, t.offset, t.shape, t.dtype)
        if view in views:  # another name for the very same tensor (sd["a"] = sd["b"]): counted once
            aliases.append(f"{tensor_name} = {views[view]}")
            continue
        views[view] = tensor_name
        begin = offsets.get(t.ref.key, 0) + t.offset * esize
        if t.ref.key in seen:  # another view of a storage already counted: bytes counted once
            shared += 1
            end = begin
        else:
            seen.add(t.ref.key)
            end = begin + sizes[t.ref.key]
        tensors.append(TensorInfo(tensor_name, t.dtype, t.shape, begin, end, name, numel))
    metadata = {"format": kind, **apart}
    if shared:
        metadata["shared storages"] = f"{shared} tensor(s) share a storage with another: bytes counted once"
    if aliases:
        metadata["same tensor, several names"] = (f"{len(aliases)} name(s) of a tensor already counted, not counted "
                                                  "again: " + "; ".join(aliases[:8])
                                                  + (" …" if len(aliases) > 8 else ""))
    if expected_end is not None and expected_end > size:
        raise PickleError("storage-past-end", f"the storages end at byte {expected_end:,} but the file has "
                                              f"{size:,}", name)
    data_length = sum(sizes.values())
    # the storages are scattered through the archive: no one data block, nothing a prefix can rebuild
    return WeightFile(file=name, format="torch", tensors=tuple(tensors), metadata=metadata, file_size=size,
                      data_start=None, data_length=data_length, imports=tuple(imports or ()))


class RangeFile(io.RawIOBase):
    """A read-only, seekable file over ``fetch(start, length) -> bytes`` (a source's byte ranges),
    reading ahead ``block`` bytes a time and keeping what it fetched: zipfile then finds the end of
    central directory, the directory and ``data.pkl`` in a handful of range requests."""

    def __init__(self, fetch: Any, size: int, block: int = 64 * 1024) -> None:
        super().__init__()
        self.fetch, self.size, self.block = fetch, size, block
        self.pos = 0
        self.chunks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        self.pos = max(0, min(self.pos, self.size))
        return self.pos

    def _chunk(self, index: int) -> bytes:
        if index not in self.chunks:
            start = index * self.block
            self.chunks[index] = bytes(self.fetch(start, min(self.block, self.size - start)))
        return self.chunks[index]

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        out = bytearray()
        while self.pos < end:
            index, within = divmod(self.pos, self.block)
            piece = self._chunk(index)[within:within + end - self.pos]
            if not piece:
                break
            out += piece
            self.pos += len(piece)
        return bytes(out)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def read_torch_stream(fh: Any, name: str, size: int) -> WeightFile:
    """As ``read_torch``, over any seekable binary file object (a ``RangeFile`` for a remote file).
    Zip or legacy is decided as torch.load decides it: by the first four bytes."""
    fh.seek(0)
    lead = fh.read(4)
    fh.seek(0)
    if lead == b"PK\x03\x04":
        return _read_zip(fh, name, size)
    return _read_legacy(fh, name, size)
