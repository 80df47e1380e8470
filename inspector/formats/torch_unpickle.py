"""A state-dict pickle turned into tensor records without running it: a restricted unpickler whose ``find_class``
answers only the globals a state dict needs (``torch._utils._rebuild_tensor_v2`` and its kin, storage classes,
dtypes, ``collections.OrderedDict``) with stand-ins that record shapes, dtypes, storages and offsets, and refuses
every other global before anything is called; then a bounded walk of what it loaded to the named tensors.
``torch_pickle`` reads the two file layouts and calls ``unpickle``."""

from __future__ import annotations

import io
import pickle
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, Final

from inspector.errors import PickleError
from inspector.formats.dtypes import DTYPE_BITS, TORCH_STORAGES, TORCH_TO_SAFETENSORS
from inspector.model import Import

#: torch's untyped storage (torch ≥ 2.0 for dtypes without a typed storage class): sized in bytes
UNTYPED: Final = "untyped"


def element_bytes(dtype: str, file: str) -> int:
    """Bytes per element as torch stores them; only whole-byte dtypes have a torch storage."""
    if dtype == UNTYPED:
        return 1
    bits = DTYPE_BITS.get(dtype, 0)
    if bits % 8 or not bits:
        raise PickleError("storage-type", f"dtype {dtype}: not a whole number of bytes per element", file)
    return bits // 8


class _StandIn:
    """What our stand-ins share: a pickle may not set state on them (``BUILD``), as it could on an
    object of its choosing."""

    def __setstate__(self, state: object) -> None:
        raise pickle.UnpicklingError("a pickle setting state on a tensor, storage or dtype")


class _Storage(_StandIn):
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class _Ref(_StandIn):
    """A storage as a persistent id names it: its key, dtype and size in elements."""

    def __init__(self, key: str, dtype: str, numel: int | None) -> None:
        self.key, self.dtype, self.numel = key, dtype, numel


class StandInTensor(_StandIn):
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


def _tensor(storage: _Ref, storage_offset: Any, size: Any, stride: Any, dtype: str) -> StandInTensor:
    if type(storage_offset) is not int or storage_offset < 0:
        raise pickle.UnpicklingError(f"a storage offset that is not a non-negative int: {str(storage_offset)[:40]}")
    shape = _dims(size, "size")
    if len(_dims(stride, "stride")) != len(shape):
        raise pickle.UnpicklingError("a tensor whose stride and size differ in length")
    return StandInTensor(storage, storage_offset, shape, dtype)


def _rebuild_tensor(storage: Any, storage_offset: int, size: Any, stride: Any, *rest: Any) -> StandInTensor:
    """``torch._utils._rebuild_tensor_v2`` (and v1): the dtype is the typed storage's."""
    if not isinstance(storage, _Ref):
        raise pickle.UnpicklingError("a tensor whose storage is not a persistent storage")
    if storage.dtype == UNTYPED:
        raise pickle.UnpicklingError("an untyped storage without a dtype")
    return _tensor(storage, storage_offset, size, stride, storage.dtype)


def _rebuild_tensor_v2(storage: Any, storage_offset: int, size: Any, stride: Any, requires_grad: Any,
                       backward_hooks: Any, *rest: Any) -> StandInTensor:
    """``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks[,
    metadata])``: its six arguments, as torch requires them."""
    return _rebuild_tensor(storage, storage_offset, size, stride)


def _rebuild_tensor_v3(storage: Any, storage_offset: int, size: Any, stride: Any, requires_grad: Any = None,
                       hooks: Any = None, dtype: Any = None, *rest: Any) -> StandInTensor:
    """``torch._utils._rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype,
    metadata)``: what ``torch.save`` writes for dtypes with no typed storage class (uint16/32/64, the
    float8 types): an untyped storage sized in bytes, and the dtype beside it."""
    if not isinstance(storage, _Ref) or not isinstance(dtype, _Storage):
        raise pickle.UnpicklingError("_rebuild_tensor_v3 without a persistent storage and a dtype")
    return _tensor(storage, storage_offset, size, stride, dtype.dtype)


def _rebuild_parameter(data: Any, *rest: Any) -> Any:
    return data


_ALLOWED: Final[dict[tuple[str, str], Any]] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): OrderedDict,
    ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
}


def allowed_global(module: str, name: str) -> bool:
    """The one rule for the globals a state dict may name (the unpickler's ``find_class`` and the
    opcode scan's inventory both ask it)."""
    return (module, name) in _ALLOWED \
        or (module == "torch" and (name in TORCH_STORAGES or name in TORCH_TO_SAFETENSORS)) \
        or (module, name) in (("torch.storage", "UntypedStorage"), ("torch", "UntypedStorage"))


def no_global(module: str, name: str) -> bool:
    return False


class StateDictUnpickler(pickle.Unpickler):
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


#: the most tensors one pickle may name
MAX_TENSORS: Final = 10_000_000


def _key(key: object) -> str:
    if isinstance(key, int) and key.bit_length() > 128:
        raise pickle.UnpicklingError("a state-dict key that is an integer of more than 128 bits")
    text = key if isinstance(key, str) else repr(key) if isinstance(key, int | float | bool | None) else \
        type(key).__name__
    return text[:1000]


#: the deepest a tensor may sit in a state dict (a nested training checkpoint is a few levels)
MAX_DEPTH: Final = 1000
#: the most non-empty containers the walk enters: torch.save of a 25,000-parameter AdamW training
#: checkpoint (model, optimizer state, param groups) holds 25,008 (one state dict a parameter; measured)
MAX_CONTAINERS: Final = 1_000_000

_CONTAINERS: Final = (dict, list, tuple)


def _items(container: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> Iterator[tuple[Any, Any]]:
    return iter(container.items()) if isinstance(container, dict) else enumerate(container)


def state_dict_records(obj: Any) -> list[tuple[str, StandInTensor]]:
    """The tensors of a (possibly nested) state dict, as ``a.b.c`` names, in order. A container
    reached a second time (the memo lets a pickle share one: 63 nested pairs of one tuple are 2^63
    paths over 63 objects) is refused, as is nesting deeper than ``MAX_DEPTH`` and entering more than
    ``MAX_CONTAINERS``. Depth first over each container's own iterator: what is held at once is one
    iterator a level, and a name is made only for a tensor or a container entered, never for the
    scalars (millions of ``None`` in a list cost a type test each). Empty containers are not entered."""
    if isinstance(obj, StandInTensor):
        return [("", obj)]
    if not isinstance(obj, _CONTAINERS):
        raise pickle.UnpicklingError(f"the pickle holds a {type(obj).__name__}, not a state dict")
    out: list[tuple[str, StandInTensor]] = []
    seen: set[int] = {id(obj)}
    walk: list[tuple[str, Iterator[tuple[Any, Any]]]] = [("", _items(obj))]
    while walk:
        prefix, items = walk[-1]
        for key, value in items:
            if isinstance(value, StandInTensor):
                out.append((f"{prefix}{_key(key)}.".rstrip("."), value))
                if len(out) > MAX_TENSORS:
                    raise pickle.UnpicklingError(f"more than {MAX_TENSORS:,} tensors")
            elif isinstance(value, _CONTAINERS) and value:
                if id(value) in seen:
                    raise pickle.UnpicklingError("a container reached by two paths (a shared-reference bomb or a "
                                                 "cycle)")
                if len(walk) > MAX_DEPTH:
                    raise pickle.UnpicklingError(f"containers nested more than {MAX_DEPTH:,} deep")
                seen.add(id(value))
                if len(seen) > MAX_CONTAINERS:
                    raise pickle.UnpicklingError(f"more than {MAX_CONTAINERS:,} containers")
                walk.append((f"{prefix}{_key(key)}.", _items(value)))
                break
        else:
            walk.pop()
    return out


def unpickle(data: bytes, name: str, imports: list[Import]) -> list[tuple[str, StandInTensor]]:
    try:
        return state_dict_records(StateDictUnpickler(io.BytesIO(data), name).load())
    except PickleError:
        raise
    except Exception as exc:  # whatever a hostile pickle makes the unpickler or the walk raise
        raise PickleError("pickle-invalid", f"data.pkl does not load ({type(exc).__name__}: {str(exc)[:80]})",
                          name, imports=tuple(imports)) from None
