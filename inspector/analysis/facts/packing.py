"""Packed weights: which tensors hold several weights an element (GPTQ/AWQ int32 words, compressed-tensors, MXFP4
blocks, bitsandbytes 4-bit bytes, MLX uint32 words), the bits a quantisation block names, and the logical count
of weights a packed tensor holds. One table of the packing facts; ``roles`` names the tensors' roles."""

from __future__ import annotations

from typing import Final

from inspector.formats.dtypes import DTYPE_BITS

#: leaves of tensors that pack several weights per element: GPTQ/AWQ int32 words (``qweight``),
#: compressed-tensors (``weight_packed``); MXFP4 stores ``*_blocks`` beside ``*_scales``
#: THE table of packed weights: (leaf name, how it packs), each with the quantisation it comes from.
#: A packed weight holds several weights in one stored element; its logical size is the stored
#: elements as ``logical_elements`` counts them.
PACKED_LEAVES: Final = ("qweight", "weight_packed")  # GPTQ/AWQ int32 words; compressed-tensors pack-quantized
PACKED_SUFFIXES: Final = ("_blocks",)  # MXFP4 blocks of two 4-bit values a byte (gpt-oss)
#: dtypes that hold packed integers (a parameter stored so may be packed; float dtypes never are)
PACKING_DTYPES: Final = frozenset({"I32", "U32", "U8", "I8"})


def is_packed(name: str) -> bool:
    """Whether a tensor's name marks a packed weight (``PACKED_LEAVES``, ``PACKED_SUFFIXES``)."""
    leaf = name.rsplit(".", 1)[-1]
    return leaf in PACKED_LEAVES or leaf.endswith(PACKED_SUFFIXES)


def quant_bits(quantization: object) -> int | None:
    """The bits per weight a config's ``quantization_config`` gives (GPTQ/AWQ ``bits``/``w_bit``,
    compressed-tensors' ``num_bits``, bitsandbytes' ``load_in_4bit``/``load_in_8bit``); None when it
    gives none."""
    if not isinstance(quantization, dict):
        return None
    bits = quantization.get("bits") or quantization.get("w_bit")
    groups = quantization.get("config_groups")
    if isinstance(groups, dict):
        for group in groups.values():
            w = group.get("weights") if isinstance(group, dict) else None
            if isinstance(w, dict) and w.get("num_bits"):
                bits = w["num_bits"]
    if quantization.get("load_in_4bit"):
        bits = 4
    elif quantization.get("load_in_8bit"):
        bits = 8
    return bits if type(bits) is int and 0 < bits <= 64 else None


def module_bits(quantization: object, tensor: str, default: int | None) -> int | None:
    """The bits of one module where the quantisation block overrides them per module (mlx-lm writes
    ``"model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 64}`` beside the defaults)."""
    if not isinstance(quantization, dict):
        return default
    override = quantization.get(tensor.rsplit(".", 1)[0])
    bits = override.get("bits") if isinstance(override, dict) else None
    return bits if type(bits) is int and 0 < bits <= 64 else default


#: bits per weight mlx-lm writes (``mlx.core.quantize``: affine mode), each packed into uint32 words
#: (a row of ``in`` weights is ``in × bits / 32`` words; group sizes 32, 64 and 128 keep that whole)
MLX_BITS: Final = (2, 3, 4, 5, 6, 8)


def logical_elements(name: str, dtype: str, bits: int | None, stored: int) -> int:
    """The weights a parameter of ``stored`` elements holds (``stored`` when it is not packed).
    ``bits``: the quantisation's bits per weight from its config, when it gives them."""
    leaf = name.rsplit(".", 1)[-1]
    dtype_bits = DTYPE_BITS.get(dtype, 0)
    if leaf in PACKED_LEAVES and bits and dtype_bits >= bits:
        return stored * (dtype_bits // bits)  # GPTQ/AWQ int32 words of 32/bits values
    if leaf.endswith(PACKED_SUFFIXES) and dtype == "U8":
        return stored * 2  # MXFP4: two 4-bit values per byte
    if leaf == "weight" and dtype == "U8" and bits == 4:
        return stored * 2  # bitsandbytes 4-bit: two values per byte
    if leaf == "weight" and dtype == "U32" and bits in MLX_BITS and stored * 32 % bits == 0:
        return stored * 32 // bits  # MLX (mlx-lm): a row's bits packed end to end in uint32 words
    return stored
