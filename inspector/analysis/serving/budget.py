"""What the user says a run has, read strictly: a GPU budget (``H100``, ``80GB``, ``2xA100-80GB``), counts
(``8k``, ``1M``), whole numbers and fractions. Each is read exactly (no float arithmetic on what was typed), refused
past ``MAX_DIGITS`` digits, and a bad one is a usage error naming the option."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, TypeVar

from inspector.analysis.serving.engines import GPUS, closest_gpus, named_gpu
from inspector.errors import UsageError

#: a memory size's units. ``GB`` is read as the vendors sell a device's memory: a "24 GB" RTX 4090 holds 24 GiB
#: (24,563 MiB as CUDA reports it), an "80 GB" H100 80 GiB (81,090 MiB); read as 10**9 bytes, ``--gpu 24GB``
#: was a 22.35 GiB budget beside ``RTX4090``'s 23.99 (issue 67). So are KB, MB and TB
_UNITS: Final = {"": 1, "b": 1, "kb": 2**10, "mb": 2**20, "gb": 2**30, "tb": 2**40,
                 "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30,
                 "t": 2**40}
#: the most memory one device is taken to have (1 PiB): an absurd budget is a usage error, not a fit
MAX_DEVICE_BYTES: Final = 1 << 50
_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*(?:[x×*]\s*(\d+))?\s*$", re.ASCII)
_COUNT: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$", re.ASCII)
_WHOLE: Final = re.compile(r"^\s*(\d+)\s*$", re.ASCII)
_FRACTION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*$", re.ASCII)
#: the most digits a number option is read with (before and after the point together): 10^18 is past
#: every count and size this tool takes, and a longer string is refused before any arithmetic on it
MAX_DIGITS: Final = 18


def _shown(text: str) -> str:
    """An option's text as an error repeats it: at most 24 characters."""
    return repr(text if len(text) <= 24 else text[:21] + "...")


def _exact(digits: str, text: str, option: str) -> Fraction:
    """``12``, ``1.5``: the decimal's exact value (no float, so no overflow or rounding), refused past
    ``MAX_DIGITS`` digits."""
    if sum(c.isdigit() for c in digits) > MAX_DIGITS:
        raise UsageError(f"{option}: {_shown(text)} has more than {MAX_DIGITS} digits; no such figure is meant",
                         hint="for example 8192, 8k, 24GiB")
    return Fraction(digits)


@dataclass(frozen=True, slots=True)
class Budget:
    per_device: int
    devices: int
    #: the named GPU (``--gpu H100``), whose capacity is ``per_device``
    gpu: str | None = None


def parse_budget(text: str, option: str = "⟨gpu⟩") -> Budget:
    """``24GiB``, ``80GiBx2``, ``141GiBx8``, ``16GB`` (GB as the vendors sell memory: GiB; a bare ``G`` too), or
    a named GPU: ``H100``, ``A100-40GB``, ``L4x2`` (its capacity as CUDA reports it, ``engines.GPUS``)."""
    named = named_gpu(text) if option == "⟨gpu⟩" else None
    if named is not None:
        gpu, devices = named
        if not 1 <= devices <= 4096:
            raise UsageError(f"{option}: {_shown(text)} is not 1 to 4,096 devices")
        return Budget(gpu.bytes, devices, gpu.name)
    m = _SIZE.match(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        close = closest_gpus(text) if option == "⟨gpu⟩" else []
        raise UsageError(f"{option}: cannot read {_shown(text)} as a memory size or a GPU name",
                         hint=f"did you mean {' or '.join(close)}? (or a size: 24GiB)" if close else
                         "for example 24GiB, 80GiBx2, 16GB, or a GPU: " + ", ".join(GPUS))
    if not unit:  # "24" is 24 GiB to one reader and 24 bytes to another: say which
        raise UsageError(f"{option}: {_shown(text)} has no unit",
                         hint=f"write it with one: {m.group(1)}GiB (or GB, as a card's memory is sold) or "
                              f"{m.group(1)}B (bytes)")
    devices = int(_exact(m.group(3) or "1", text, option))
    per_device = int(_exact(m.group(1), text, option) * _UNITS[unit])
    if per_device <= 0 or not 1 <= devices <= 4096:
        raise UsageError(f"{option}: {_shown(text)} is not a positive size on 1 to 4,096 devices")
    if per_device > MAX_DEVICE_BYTES:
        raise UsageError(f"{option}: {_shown(text)} is over {MAX_DEVICE_BYTES // 2**40:,} TiB a device; no device "
                         "holds that",
                         hint="for example 80GiB, 141GiBx8")
    return Budget(per_device, devices)


W = TypeVar("W", bound=str)


def parse_word(text: str, words: tuple[W, ...], option: str) -> W:
    """One of ``words``, given in any case, or a usage error naming ``option`` and the words it takes."""
    word = text.lower()
    for known in words:
        if known == word:
            return known
    raise UsageError(f"{option}: unknown {word!r}", hint="use " + ", ".join(words))


def parse_whole(text: str | int, option: str) -> int:
    """A whole number as ASCII digits (``8``; not ``+8``, ``1_6`` or another script's digits), at most
    ``MAX_DIGITS`` of them; its range is the caller's to check."""
    shown = str(text)
    m = _WHOLE.match(shown)
    if m is None:
        raise UsageError(f"{option}: cannot read {_shown(shown)} as a whole number", hint="for example 8")
    return int(_exact(m.group(1), shown, option))


def parse_fraction(text: str | float, option: str) -> float:
    """A decimal as ASCII digits and a point (``0.95``), at most ``MAX_DIGITS`` digits, read exactly
    then as the nearest float (a number a library caller passes, as it is); its range is the caller's
    to check."""
    if isinstance(text, int | float):
        return float(text)
    shown = str(text)
    m = _FRACTION.match(shown)
    if m is None:
        raise UsageError(f"{option}: cannot read {_shown(shown)} as a decimal number", hint="for example 0.95")
    return float(_exact(m.group(1), shown, option))


def parse_count(text: str, option: str) -> int:
    """``8192``, ``8k`` (8,192), ``128k`` (131,072), ``1M`` (1,048,576): k and M are binary, as
    context lengths are quoted."""
    m = _COUNT.match(text)
    if m is None:
        raise UsageError(f"{option}: cannot read {_shown(text)} as a number", hint="for example 8192, 8k, 128k, 1M")
    value = int(_exact(m.group(1), text, option) * {"": 1, "k": 1024, "m": 1024**2}[m.group(2).lower()])
    if value < 1:
        raise UsageError(f"{option} must be positive")
    return value
