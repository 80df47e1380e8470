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
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from inspector.errors import PickleError
from inspector.formats.dtypes import DTYPE_BITS, TORCH_STORAGES, TORCH_TO_SAFETENSORS
from inspector.model import TensorInfo, WeightFile
from inspector.safeio import open_regular

LEGACY_MAGIC: Final = 0x1950A86A20F9469CFC6C
MAX_PICKLE: Final = 256 * 1024 * 1024

#: torch's untyped storage (torch ≥ 2.0 for dtypes without a typed storage class): sized in bytes
UNTYPED: Final = "untyped"


def _element_bytes(dtype: str, file: str) -> int:
    """Bytes per element as torch stores them; only whole-byte dtypes have a torch storage."""
    if dtype == UNTYPED:
        return 1
    bits = DTYPE_BITS.get(dtype, 0)
    if bits % 8 or not bits:
        raise PickleError("storage-type", f"dtype {dtype}: not a whole number of bytes per element", file)
    return bits // 8


class _Storage:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class _Ref:
    """A storage as a persistent id names it: its key, dtype and size in elements."""

    def __init__(self, key: str, dtype: str, numel: int | None) -> None:
        self.key, self.dtype, self.numel = key, dtype, numel


class _Tensor:
    def __init__(self, ref: _Ref, offset: int, shape: tuple[int, ...], dtype: str) -> None:
        self.ref, self.offset, self.shape, self.dtype = ref, offset, shape, dtype


#: torch's own limit on a tensor's dimensions
MAX_TENSOR_DIMS: Final = 64


def _dims(value: Any, what: str) -> tuple[int, ...]:
    """A size or stride as torch's ``Tensor.set_`` takes it: a tuple of non-negative ints (torch
    refuses floats there, and a negative size)."""
    if not isinstance(value, tuple | list) or len(value) > MAX_TENSOR_DIMS or not all(
            type(d) is int and 0 <= d < 1 << 63 for d in value):
        raise pickle.UnpicklingError(f"a tensor {what} that is not a tuple of non-negative ints: {str(value)[:40]}")
    return tuple(value)


def _tensor(storage: _Ref, storage_offset: Any, size: Any, stride: Any, dtype: str) -> _Tensor:
    if type(storage_offset) is not int or storage_offset < 0:
        raise pickle.UnpicklingError(f"a storage offset that is not a non-negative int: {str(storage_offset)[:40]}")
    shape = _dims(size, "size")
    if len(_dims(stride, "stride")) != len(shape):
        raise pickle.UnpicklingError("a tensor whose stride and size differ in length")
    return _Tensor(storage, storage_offset, shape, dtype)


def _rebuild_tensor(storage: Any, storage_offset: int, size: Any, stride: Any, *rest: Any) -> _Tensor:
    """``torch._utils._rebuild_tensor_v2`` (and v1): the dtype is the typed storage's."""
    if not isinstance(storage, _Ref):
        raise pickle.UnpicklingError("a tensor whose storage is not a persistent storage")
    if storage.dtype == UNTYPED:
        raise pickle.UnpicklingError("an untyped storage without a dtype")
    return _tensor(storage, storage_offset, size, stride, storage.dtype)


def _rebuild_tensor_v3(storage: Any, storage_offset: int, size: Any, stride: Any, requires_grad: Any = None,
                       hooks: Any = None, dtype: Any = None, *rest: Any) -> _Tensor:
    """``torch._utils._rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype,
    metadata)``: what ``torch.save`` writes for dtypes with no typed storage class (uint16/32/64, the
    float8 types): an untyped storage sized in bytes, and the dtype beside it."""
    if not isinstance(storage, _Ref) or not isinstance(dtype, _Storage):
        raise pickle.UnpicklingError("_rebuild_tensor_v3 without a persistent storage and a dtype")
    return _tensor(storage, storage_offset, size, stride, dtype.dtype)


def _rebuild_parameter(data: Any, *rest: Any) -> Any:
    return data


_ALLOWED: Final[dict[tuple[str, str], Any]] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): OrderedDict,
    ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, stream: Any, file: str) -> None:
        super().__init__(stream)
        self.file = file
        self.refs: dict[str, _Ref] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in TORCH_STORAGES:
            return _Storage(TORCH_STORAGES[name])
        if module == "torch" and name in TORCH_TO_SAFETENSORS:
            return _Storage(TORCH_TO_SAFETENSORS[name])
        if (module, name) == ("torch.storage", "UntypedStorage") or (module, name) == ("torch", "UntypedStorage"):
            return _Storage(UNTYPED)
        raise PickleError("unsafe-global", f"the pickle calls {module}.{name}, which a state dict never needs; "
                                           "refusing it (nothing was run)", self.file,
                          hint="load it only if you trust its author; convert it to safetensors")

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise PickleError("persistent-id", f"an unexpected persistent id {str(pid)[:60]!r}", self.file)
        kind, key = pid[1], str(pid[2])
        dtype = kind.dtype if isinstance(kind, _Storage) else None
        if dtype is None:
            raise PickleError("storage-type", f"storage {key}: unknown storage type", self.file)
        numel = pid[4] if len(pid) > 4 and isinstance(pid[4], int) else None
        ref = self.refs.setdefault(key, _Ref(key, dtype, numel))
        return ref


def _state_dict(obj: Any, prefix: str = "") -> Iterator[tuple[str, _Tensor]]:
    """The tensors of a (possibly nested) state dict, as ``a.b.c`` names."""
    if isinstance(obj, _Tensor):
        yield prefix.rstrip("."), obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _state_dict(v, f"{prefix}{k}.")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _state_dict(v, f"{prefix}{i}.")


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
    try:
        archive = zipfile.ZipFile(fh)
        names = [i.filename for i in archive.infolist()]
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise PickleError("zip-duplicate-entry", f"two zip entries named {twice!r}: torch.load reads the first, "
                                                     "Python's zipfile the last; refusing to guess", name)
        script = next((n for n in names if n.rsplit("/", 1)[-1] in TORCHSCRIPT_ENTRIES or "/code/" in n
                       or n.startswith("code/")), None)
        if script is not None:
            raise PickleError("torchscript", f"a TorchScript archive ({script}): torch.load hands it to "
                                             "torch.jit.load, which runs its code; not read as a state dict", name,
                              hint="load it only if you trust its author")
        entries = {i.filename: i for i in archive.infolist()}
        pkl = next((n for n in entries if n.endswith("/data.pkl") or n == "data.pkl"), None)
        if pkl is None:
            raise PickleError("zip-no-data-pkl", "a zip without data.pkl: not a torch checkpoint", name)
        info = entries[pkl]
        if info.file_size > MAX_PICKLE:
            raise PickleError("pickle-too-large", f"data.pkl is {info.file_size:,} bytes", name)
        data = archive.read(pkl)
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError, OSError, ValueError,
            struct.error) as exc:  # unknown versions and compression methods, encryption, truncation
        raise PickleError("zip-invalid", f"not a readable zip ({type(exc).__name__}: {str(exc)[:80]})",
                          name) from None
    prefix = pkl[: -len("data.pkl")]
    sizes = {n[len(prefix) + len("data/"):]: i.file_size for n, i in entries.items() if n.startswith(prefix + "data/")}
    offsets = {n[len(prefix) + len("data/"):]: i.header_offset for n, i in entries.items()
               if n.startswith(prefix + "data/")}
    records = _unpickle(data, name)
    return _header(records, name, size, sizes, offsets, "pytorch zip")


def _read_legacy(fh: Any, name: str, size: int) -> WeightFile:
    """The pickles sit before the storages: read 16 MB, then more (to 256 MB) only if they end later;
    but first the magic number, so that something else costs 64 bytes, not 16 MB."""
    fh.seek(0)
    try:
        magic = _RestrictedData(io.BytesIO(fh.read(64)), name).load()
    except Exception:
        magic = None
    if magic != LEGACY_MAGIC:
        raise PickleError("not-torch", "neither a torch zip archive nor a legacy torch pickle", name)
    want = 16 * 1024 * 1024
    while True:
        fh.seek(0)
        head = fh.read(min(size, want))
        try:
            return _parse_legacy(head, name, size)
        except PickleError as exc:
            if exc.rule != "legacy-invalid" or len(head) >= min(size, MAX_PICKLE):
                raise
            want *= 4


def _parse_legacy(head: bytes, name: str, size: int) -> WeightFile:
    stream = io.BytesIO(head)
    try:
        magic = _RestrictedData(stream, name).load()
    except PickleError:
        raise
    except Exception:
        magic = None
    if magic != LEGACY_MAGIC:
        raise PickleError("not-torch", "neither a torch zip archive nor a legacy torch pickle", name)
    try:
        for _ in range(2):  # the protocol version and the sys info: plain data
            _RestrictedData(stream, name).load()
        unpickler = _Unpickler(stream, name)
        obj = unpickler.load()
        keys = _RestrictedData(stream, name).load()
    except PickleError:
        raise
    except Exception as exc:
        raise PickleError("legacy-invalid", f"the pickles do not load ({type(exc).__name__}: {str(exc)[:80]})",
                          name) from None
    sizes: dict[str, int] = {}
    offsets: dict[str, int] = {}
    position = stream.tell()
    for key in keys if isinstance(keys, list) else []:
        ref = unpickler.refs.get(str(key))
        if ref is None or ref.numel is None:
            raise PickleError("storage-missing", f"storage {key} is not described by the pickle", name)
        nbytes = ref.numel * _element_bytes(ref.dtype, name)
        if position + 8 <= len(head):  # torch checks each storage's own size record against the pickle's
            (recorded,) = struct.unpack_from("<q", head, position)
            if recorded * _element_bytes(ref.dtype, name) != nbytes:
                raise PickleError("storage-size-record", f"storage {key}: the pickle says {ref.numel:,} elements, "
                                                         f"its size record {recorded:,} (torch.load refuses this)",
                                  name)
        offsets[str(key)] = position + 8
        sizes[str(key)] = nbytes
        position += 8 + nbytes
    return _header(list(_state_dict(obj)), name, size, sizes, offsets, "pytorch legacy", expected_end=position)


class _RestrictedData(pickle.Unpickler):
    """Plain data only (numbers, strings, lists, dicts): no global at all."""

    def __init__(self, stream: Any, file: str) -> None:
        super().__init__(stream)
        self.file = file

    def find_class(self, module: str, name: str) -> Any:
        raise PickleError("unsafe-global", f"the pickle calls {module}.{name}; refusing it (nothing was run)",
                          self.file)


def _unpickle(data: bytes, name: str) -> list[tuple[str, _Tensor]]:
    try:
        obj = _Unpickler(io.BytesIO(data), name).load()
    except PickleError:
        raise
    except Exception as exc:
        raise PickleError("pickle-invalid", f"data.pkl does not load ({type(exc).__name__}: {str(exc)[:80]})",
                          name) from None
    return list(_state_dict(obj))


def _header(records: list[tuple[str, _Tensor]], name: str, size: int, sizes: dict[str, int],
            offsets: dict[str, int], kind: str, expected_end: int | None = None) -> WeightFile:
    tensors: list[TensorInfo] = []
    seen: set[str] = set()
    shared = 0
    for tensor_name, t in records:
        esize = _element_bytes(t.dtype, name)
        numel = 1
        for d in t.shape:
            numel *= d
        if t.ref.key not in sizes:
            raise PickleError("storage-missing", f"tensor {tensor_name!r}: its storage {t.ref.key} is not in the "
                                                 "file", name)
        if (t.offset + numel) * esize > sizes[t.ref.key]:
            raise PickleError("storage-overrun", f"tensor {tensor_name!r} reaches past the end of its storage",
                              name)
        begin = offsets.get(t.ref.key, 0) + t.offset * esize
        if t.ref.key in seen:  # shares a storage already counted: tied weights, bytes counted once
            shared += 1
            end = begin
        else:
            seen.add(t.ref.key)
            end = begin + sizes[t.ref.key]
        tensors.append(TensorInfo(tensor_name, t.dtype, t.shape, begin, end, name, numel))
    metadata = {"format": kind}
    if shared:
        metadata["shared storages"] = f"{shared} tensor(s) share a storage with another: bytes counted once"
    if expected_end is not None and expected_end > size:
        raise PickleError("storage-past-end", f"the storages end at byte {expected_end:,} but the file has "
                                              f"{size:,}", name)
    data_length = sum(sizes.values())
    # the storages are scattered through the archive: no one data block, nothing a prefix can rebuild
    return WeightFile(file=name, format="torch", tensors=tuple(tensors), metadata=metadata, file_size=size,
                      data_start=None, data_length=data_length)


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
    """As ``read_torch``, over any seekable binary file object (a ``RangeFile`` for a remote file)."""
    if zipfile.is_zipfile(fh):
        fh.seek(0)
        return _read_zip(fh, name, size)
    fh.seek(0)
    return _read_legacy(fh, name, size)
