"""The safetensors dtypes, sized in bits.

Source: the Rust reference implementation (``safetensors/src/tensor.rs``, ``Dtype`` and
``Dtype::bitsize``), which lists 22 dtypes. Sub-byte dtypes (F4, F6_*) are stored packed:
a tensor of n elements takes n × bits / 8 bytes, which must be a whole number.
"""

from __future__ import annotations

from typing import Final

DTYPE_BITS: Final[dict[str, int]] = {
    # in the reference's ``Dtype`` declaration order: its writer lays tensors out by this order,
    # descending (then by name), so ``header.encode_header`` takes its order from this table
    "BOOL": 8,
    "F4": 4,  # float4 e2m1 (MXFP4/NVFP4 payloads)
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,  # the scale format of MX block formats
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}

#: safetensors dtype → torch's name for it (and numpy's, where numpy has the type): the one map
SAFETENSORS_TO_TORCH: Final[dict[str, str]] = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "F8_E5M2": "float8_e5m2", "F8_E4M3": "float8_e4m3fn",
    "F8_E8M0": "float8_e8m0fnu", "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "I16": "int16", "U16": "uint16", "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32",
    "F32": "float32", "C64": "complex64", "F64": "float64", "I64": "int64", "U64": "uint64",
    "F4": "float4_e2m1fn_x2",
}

# config.json's ``torch_dtype`` / ``dtype`` → the safetensors dtype it stores (the inverse, and
# torch's aliases)
TORCH_TO_SAFETENSORS: Final[dict[str, str]] = {
    **{torch: st for st, torch in SAFETENSORS_TO_TORCH.items()}, "half": "F16", "float": "F32", "double": "F64",
}

# what-if dtypes accepted by ``inspect estimate --dtype`` (name → bits)
WHAT_IF_BITS: Final[dict[str, float]] = {
    "fp32": 32, "f32": 32, "fp16": 16, "f16": 16, "bf16": 16,
    "fp8": 8, "f8": 8, "int8": 8, "i8": 8, "int4": 4, "i4": 4, "fp4": 4, "nf4": 4,
}


def dtype_sort_key(dtype: str) -> tuple[int, str]:
    """Order dtypes from widest to narrowest, then by name: the reference writer's order."""
    return (-DTYPE_BITS.get(dtype, 0), dtype)
