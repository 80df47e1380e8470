"""Weight-file formats behind one small protocol, so sources only serve bytes.

A reader says how many leading bytes of a file it needs, given what it has read so far, and turns
those bytes into a ``Header`` of records. The local reader, the Hub fetch plan and the header
snapshots call it; none of them knows a format's byte layout. Adding a format means a reader here,
its name patterns in the role table and its type table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

from inspector.formats.safetensors import MAX_HEADER_BYTES, PREFIX_BYTES, Header, parse_header, read_header_length


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

    def config(self, header: Header) -> dict[str, Any] | None:
        """config.json's figures when the file carries its own (GGUF metadata), else None."""
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

    def config(self, header: Header) -> dict[str, Any] | None:
        return None


@dataclass(frozen=True, slots=True)
class Gguf:
    """llama.cpp's GGUF: magic, version, counts, metadata, tensor infos, padding, data
    (``ggufread.py`` parses). The header's length is not stored up front, so reads grow (doubling)
    until the tensor infos are whole."""

    name: str = "gguf"
    suffixes: tuple[str, ...] = (".gguf",)
    max_header: int = 128 * 1024 * 1024  # a 262k-token vocabulary with merges is about 20 MB
    default_first_read: int = 64 * 1024

    def first_read(self, hint: int | None) -> int:
        return max(64, min(hint or self.default_first_read, self.max_header))

    def need(self, prefix: bytes | bytearray, *, file: str, file_size: int | None) -> int:
        from inspector.formats.gguf import GgufError, Incomplete, parse_gguf

        try:
            header, _, _ = parse_gguf(prefix, file=file, file_size=None)
        except Incomplete as more:
            if file_size is not None and len(prefix) >= file_size:
                raise GgufError("gguf-truncated", f"the file ends at byte {file_size:,}, inside its header",
                                file) from None
            want = max(more.need, 2 * len(prefix))
            if more.need > self.max_header:
                raise GgufError("gguf-header-too-large", f"the header needs more than {self.max_header:,} bytes",
                                file) from None
            return min(want, self.max_header, file_size) if file_size is not None else min(want, self.max_header)
        return header.data_start if file_size is None else min(header.data_start, file_size)

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> Header:
        from inspector.formats.gguf import GgufError, Incomplete, parse_gguf

        try:
            return parse_gguf(blob, file=file, file_size=file_size)[0]
        except Incomplete:
            raise GgufError("gguf-truncated", "the header ends early", file) from None

    def config(self, header: Header) -> dict[str, Any] | None:
        from inspector.formats.gguf import gguf_config, parse_gguf

        _, metadata, _ = parse_gguf(header.raw, file=header.file)
        return gguf_config(metadata, {t.name for t in header.tensors})


SAFETENSORS: Final = Safetensors()
GGUF: Final = Gguf()
READERS: Final[tuple[Reader, ...]] = (SAFETENSORS, GGUF)


def reader_for(path: str) -> Reader | None:
    return next((r for r in READERS if path.endswith(r.suffixes)), None)


def reader_named(name: str) -> Reader | None:
    return next((r for r in READERS if r.name == name), None)
