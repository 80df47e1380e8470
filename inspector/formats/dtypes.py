"""THE dtype table: every reader and every user-facing dtype name derives from it.

One row per stored element type, in the safetensors reference's ``Dtype`` declaration order
(``safetensors/src/tensor.rs``, ``Dtype`` and ``Dtype::bitsize``: 22 dtypes). Each row says its size
in bits, torch's name for it (``torch.<name>``, pickled by name by ``torch.save``; numpy's too where
numpy has the type) and, where torch has one, the legacy typed storage class that older
``torch.save`` files name (``torch.FloatStorage`` …). Sub-byte dtypes (F4, F6_*) are stored packed:
a tensor of n elements takes n × bits / 8 bytes, which must be a whole number.

GGUF's GGML types are gguf-py's table (``formats/gguf.py``), not ours.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Dtype(NamedTuple):
    name: str  # the safetensors name
    bits: int
    torch: str | None  # torch's dtype name
    storage: str | None = None  # torch's legacy typed storage class, if it has one


TABLE: Final[tuple[Dtype, ...]] = (
    Dtype("BOOL", 8, "bool", "BoolStorage"),
    Dtype("F4", 4, "float4_e2m1fn_x2"),  # float4 e2m1 (MXFP4/NVFP4 payloads)
    Dtype("F6_E2M3", 6, None),
    Dtype("F6_E3M2", 6, None),
    Dtype("U8", 8, "uint8", "ByteStorage"),
    Dtype("I8", 8, "int8", "CharStorage"),
    Dtype("F8_E5M2", 8, "float8_e5m2"),
    Dtype("F8_E4M3", 8, "float8_e4m3fn"),
    Dtype("F8_E8M0", 8, "float8_e8m0fnu"),  # the scale format of MX block formats
    Dtype("F8_E4M3FNUZ", 8, "float8_e4m3fnuz"),
    Dtype("F8_E5M2FNUZ", 8, "float8_e5m2fnuz"),
    Dtype("I16", 16, "int16", "ShortStorage"),
    Dtype("U16", 16, "uint16"),
    Dtype("F16", 16, "float16", "HalfStorage"),
    Dtype("BF16", 16, "bfloat16", "BFloat16Storage"),
    Dtype("I32", 32, "int32", "IntStorage"),
    Dtype("U32", 32, "uint32"),
    Dtype("F32", 32, "float32", "FloatStorage"),
    Dtype("C64", 64, "complex64", "ComplexFloatStorage"),
    Dtype("F64", 64, "float64", "DoubleStorage"),
    Dtype("I64", 64, "int64", "LongStorage"),
    Dtype("U64", 64, "uint64"),
)

#: safetensors dtype → bits per element
DTYPE_BITS: Final[dict[str, int]] = {d.name: d.bits for d in TABLE}
#: safetensors dtype → torch's name for it
SAFETENSORS_TO_TORCH: Final[dict[str, str]] = {d.name: d.torch for d in TABLE if d.torch}
#: torch's dtype names (and config.json's ``torch_dtype`` aliases) → safetensors dtype
TORCH_TO_SAFETENSORS: Final[dict[str, str]] = {
    **{d.torch: d.name for d in TABLE if d.torch}, "half": "F16", "float": "F32", "double": "F64",
}
#: torch's legacy typed storage classes → safetensors dtype
TORCH_STORAGES: Final[dict[str, str]] = {d.storage: d.name for d in TABLE if d.storage}

#: the dtype names a user types for a what-if (``estimate --dtype``) or a KV cache (``--kv-dtype``),
#: each with its bits per element; one list for both options
USER_DTYPE_BITS: Final[dict[str, float]] = {
    "fp32": 32, "f32": 32, "fp16": 16, "f16": 16, "bf16": 16,
    "fp8": 8, "f8": 8, "int8": 8, "i8": 8, "int4": 4, "i4": 4, "fp4": 4, "nf4": 4,
    # llama.cpp's KV cache types (--cache-type-k/-v), bits per value with the block scales: bytes per
    # block × 8 / values per block, as gguf-py's GGML_QUANT_SIZES gives them (a test checks each)
    "q8_0": 8.5, "q5_1": 6, "q5_0": 5.5, "q4_1": 5, "q4_0": 4.5, "iq4_nl": 4.5,
}
#: the same names, as bytes per element (a KV cache entry)
USER_DTYPE_BYTES: Final[dict[str, float]] = {name: bits / 8 for name, bits in USER_DTYPE_BITS.items()}


def dtype_sort_key(dtype: str) -> tuple[int, str]:
    """Order dtypes from widest to narrowest, then by name (for tables; unknown dtypes last)."""
    return (-DTYPE_BITS.get(dtype, 0), dtype)


def element_bytes(dtype: str) -> float:
    """Bytes per element of a known safetensors dtype (fractional for sub-byte types)."""
    return DTYPE_BITS[dtype] / 8
