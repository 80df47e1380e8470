"""Weight-file formats behind one small protocol, so sources only serve bytes.

A reader says how many leading bytes of a file it needs, given what it has read so far, and turns
those bytes into a ``Header`` of records. The local reader, the Hub fetch plan and the header
snapshots call it; none of them knows a format's byte layout. Adding a format means a reader here,
its name patterns in the role table and its type table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from .header import MAX_HEADER_BYTES, PREFIX_BYTES, Header, parse_header, read_header_length


class Reader(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def suffixes(self) -> tuple[str, ...]: ...

    @property
    def max_header(self) -> int:
        """The most leading bytes this format's header may take: a budget, not a guess."""
        ...

    def first_read(self, hint: int | None) -> int:
        """Bytes to ask for first (``hint``: an estimate from the index, when there is one)."""
        ...

    def need(self, prefix: bytes | bytearray, *, file: str, file_size: int | None) -> int:
        """The total leading bytes needed, given ``prefix`` (at least ``first_read`` bytes, or the
        whole file when it is shorter). Raises the format's error when the prefix is not valid."""
        ...

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> Header:
        """Records from the leading bytes; ``file_size`` None skips the end-of-file checks (lenient)."""
        ...


@dataclass(frozen=True, slots=True)
class Safetensors:
    """8-byte little-endian length n, n bytes of JSON, then the data (``header.py`` validates)."""

    name: str = "safetensors"
    suffixes: tuple[str, ...] = (".safetensors",)
    max_header: int = PREFIX_BYTES + MAX_HEADER_BYTES
    unindexed_first_read: int = 64 * 1024
    #: bytes of header JSON per tensor beyond its name (``{"dtype":"BF16","shape":[14336,4096],
    #: "data_offsets":[…,…]},`` is 60–90 bytes): a little over keeps the first read whole
    entry_overhead: int = 96

    def first_read(self, hint: int | None) -> int:
        return max(PREFIX_BYTES, min(hint or self.unindexed_first_read, self.max_header))

    def estimate(self, tensor_names: list[str]) -> int:
        """A header's likely size from the tensor names an index places in the file."""
        return PREFIX_BYTES + 64 + sum(len(t) + self.entry_overhead for t in tensor_names)

    def need(self, prefix: bytes | bytearray, *, file: str, file_size: int | None) -> int:
        return PREFIX_BYTES + read_header_length(prefix, file=file, file_size=file_size)

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> Header:
        return parse_header(blob, file=file, file_size=file_size)


SAFETENSORS: Final = Safetensors()
READERS: Final[tuple[Reader, ...]] = (SAFETENSORS,)


def reader_for(path: str) -> Reader | None:
    return next((r for r in READERS if path.endswith(r.suffixes)), None)


def reader_named(name: str) -> Reader | None:
    return next((r for r in READERS if r.name == name), None)
