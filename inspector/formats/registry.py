"""The registry of weight-file formats, and the one read loop they share.

A source serves the bytes of one file (``ByteSource``: "give me n bytes at offset o"); a reader turns
them into records (``WeightFile``). No source knows a format's byte layout, and no reader knows where
the bytes come from: the local folder, the HF cache and the Hub all call ``Reader.read`` with a byte
source of their own.

Most formats keep their records in a header at the start of the file (``PrefixReader``): the reader
says how many leading bytes it needs given what it has (``need``), the one loop below asks the source
for them, and ``parse`` makes the records; those leading bytes (``WeightFile.head``) are what a header
snapshot keeps. A format whose records need the end of the file too (a torch zip's directory) reads
through the source as a seekable file, and its records cannot be kept as a prefix (``keeps_head``
False): a snapshot refuses it by name.

Adding a format: a module in this package with a reader, ``register`` it here (or from anywhere, for a
plug-in), its dtype rows in ``dtypes.py`` if it stores safetensors-like dtypes, and its name patterns
in the role table if its tensor names differ. Every suffix check of the package derives from this
registry (``reader_for``, ``weight_suffixes``).
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from inspector.errors import RAISE, ProblemSink, ShortRead
from inspector.formats.safetensors import MAX_HEADER_BYTES, PREFIX_BYTES, parse_header, read_header_length
from inspector.model import WeightFile


class ByteSource(Protocol):
    """One file's bytes, wherever they are."""

    @property
    def size(self) -> int | None:
        """The file's size, when the source knows it (a listing may not)."""
        ...

    @property
    def rereads_cheaply(self) -> bool:
        """True for a local file: reading the start again costs less than joining two reads."""
        ...

    def read(self, start: int, length: int) -> bytes | bytearray:
        """Up to ``length`` bytes at ``start`` (fewer only at the end of the file)."""
        ...

    def read_into(self, buffer: bytearray, start: int, length: int) -> None:
        """As ``read``, appended to ``buffer`` (no copy of what it holds already)."""
        ...


class Reader(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def suffixes(self) -> tuple[str, ...]: ...

    @property
    def max_header(self) -> int:
        """The most bytes this format's records may take to read: a budget, not a guess."""
        ...

    @property
    def keeps_head(self) -> bool:
        """Whether ``parse(record.head)`` gives the records back (a header snapshot can keep them)."""
        ...

    @property
    def alternatives(self) -> bool:
        """Whether several such files in one folder are alternatives (one model in several
        quantisations), never to be added up, rather than shards of one model."""
        ...

    def read(self, source: ByteSource, *, file: str, first: int | None = None, problems: ProblemSink = RAISE,
             prefix: bytes | None = None) -> WeightFile:
        """The file's records from ``source``. ``first``: bytes to ask for first (an estimate from
        the index); ``prefix``: the file's first bytes, already at hand; ``problems``: the run's sink
        (the audit's leaves the end-of-file checks to the audit)."""
        ...

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> WeightFile:
        """Records from bytes ``read`` gathered (for a prefix format: a kept ``head``)."""
        ...

    def config(self, header: WeightFile) -> dict[str, Any] | None:
        """config.json's figures when the file carries its own (GGUF metadata), else None."""
        ...


class PrefixReader:
    """A format whose records sit in the first bytes of the file. Subclasses say how many bytes to
    ask for first (``first_read``), how many are needed given a prefix (``need``) and how to parse
    them (``parse``); ``read`` is the one read loop every source goes through."""

    name: str = ""
    suffixes: tuple[str, ...] = ()
    max_header: int = 0
    keeps_head: bool = True
    alternatives: bool = False

    def first_read(self, hint: int | None) -> int:
        raise NotImplementedError

    def need(self, prefix: bytes | bytearray, *, file: str, file_size: int | None) -> int:
        raise NotImplementedError

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> WeightFile:
        raise NotImplementedError

    def config(self, header: WeightFile) -> dict[str, Any] | None:
        return None

    def session(self, *, file: str, file_size: int | None) -> PrefixSession:
        """The state of one read: by default none (``need`` and ``parse`` see the whole prefix each
        time); a format whose header length is not stored up front parses on where it stopped."""
        return _Stateless(self, file, file_size)

    def read(self, source: ByteSource, *, file: str, first: int | None = None, problems: ProblemSink = RAISE,
             prefix: bytes | None = None) -> WeightFile:
        size = source.size
        session = self.session(file=file, file_size=size)
        if prefix is not None:
            blob: bytes | bytearray = prefix
            asked = len(prefix)
        else:
            asked = self.first_read(first if first is not None else (min(size, 4096) if source.rereads_cheaply
                                                                     and size is not None else None))
            if size is not None:
                asked = min(asked, size)
            blob = source.read(0, asked) if asked else b""
        while True:  # a reader whose header length is not stored up front asks again until it is whole
            total = session.need(blob)
            if len(blob) >= total or (size is not None and len(blob) >= size):
                break
            if len(blob) < asked:  # the source ended before the bytes it was asked for
                raise ShortRead(f"{len(blob):,} of the {asked:,} bytes asked for arrived", file)
            asked = total
            if source.rereads_cheaply and not session.resumes:  # one read from the start: no joining of
                # a few kB and 100 MB (a parse that resumes has used what it holds: only the rest is read)
                blob = source.read(0, total)
            else:  # only the rest, appended: a remote source pays for every byte
                if not isinstance(blob, bytearray):
                    blob = bytearray(blob)
                source.read_into(blob, len(blob), total - len(blob))
        return session.parse(blob, file_size=problems.checked_size(size))


class PrefixSession(Protocol):
    #: whether ``need`` parses on from where the last call stopped (then a read appends the rest)
    resumes: bool

    def need(self, prefix: bytes | bytearray) -> int:
        """The bytes the records need, given the first ``len(prefix)`` (the same prefix, longer, each call)."""
        ...

    def parse(self, blob: bytes | bytearray, *, file_size: int | None) -> WeightFile: ...


class _Stateless:
    resumes = False

    def __init__(self, reader: PrefixReader, file: str, file_size: int | None) -> None:
        self.reader, self.file, self.file_size = reader, file, file_size

    def need(self, prefix: bytes | bytearray) -> int:
        return self.reader.need(prefix, file=self.file, file_size=self.file_size)

    def parse(self, blob: bytes | bytearray, *, file_size: int | None) -> WeightFile:
        return self.reader.parse(blob, file=self.file, file_size=file_size)


class Safetensors(PrefixReader):
    """8-byte little-endian length n, n bytes of JSON, then the data (``safetensors.py`` validates)."""

    name = "safetensors"
    suffixes = (".safetensors",)
    max_header = PREFIX_BYTES + MAX_HEADER_BYTES
    keeps_head = True
    alternatives = False
    unindexed_first_read = 64 * 1024
    #: bytes of header JSON per tensor beyond its name (``{"dtype":"BF16","shape":[14336,4096],
    #: "data_offsets":[…,…]},`` is 60–90 bytes): a little over keeps the first read whole
    entry_overhead = 96

    def first_read(self, hint: int | None) -> int:
        return max(PREFIX_BYTES, min(hint or self.unindexed_first_read, self.max_header))

    def estimate(self, tensor_names: list[str]) -> int:
        """A header's likely size from the tensor names an index places in the file."""
        return PREFIX_BYTES + 64 + sum(len(t) + self.entry_overhead for t in tensor_names)

    def need(self, prefix: bytes | bytearray, *, file: str, file_size: int | None) -> int:
        return PREFIX_BYTES + read_header_length(prefix, file=file, file_size=file_size)

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> WeightFile:
        return parse_header(blob, file=file, file_size=file_size)


class Gguf(PrefixReader):
    """llama.cpp's GGUF: magic, version, counts, metadata, tensor infos, padding, data
    (``gguf.py`` parses). The header's length is not stored up front, so reads grow (doubling)
    until the tensor infos are whole."""

    name = "gguf"
    suffixes = (".gguf",)
    max_header = 128 * 1024 * 1024  # a 262k-token vocabulary with merges is about 20 MB
    keeps_head = True
    alternatives = True
    default_first_read = 64 * 1024

    def first_read(self, hint: int | None) -> int:
        return max(64, min(hint or self.default_first_read, self.max_header))

    def session(self, *, file: str, file_size: int | None) -> PrefixSession:
        return _GgufSession(self.max_header, file, file_size)

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> WeightFile:
        # deferred: 1 ms at import (inspector.formats.gguf)
        from inspector.formats.gguf import GgufError, Incomplete, parse_gguf

        try:
            return parse_gguf(blob, file=file, file_size=file_size)[0]
        except Incomplete:
            raise GgufError("gguf-truncated", "the header ends early", file) from None

    def config(self, header: WeightFile) -> dict[str, Any] | None:
        # deferred: 1 ms at import (inspector.formats.gguf)
        from inspector.formats.gguf import gguf_config, metadata_of

        return gguf_config(metadata_of(header), {t.name for t in header.tensors})


class _GgufSession:
    """One GGUF read: the parse resumes where the last prefix ended (``gguf.GgufScan``); each read
    asks for what the parse needs, at least twice what it has (so a header of n bytes costs about
    log₂ n requests and under 2n bytes)."""

    resumes = True

    def __init__(self, max_header: int, file: str, file_size: int | None) -> None:
        # deferred: 1 ms at import (inspector.formats.gguf)
        from inspector.formats.gguf import GgufScan

        self.scan = GgufScan(file, file_size)
        self.max_header, self.file, self.file_size = max_header, file, file_size

    def need(self, prefix: bytes | bytearray) -> int:
        # deferred: 1 ms at import (inspector.formats.gguf)
        from inspector.formats.gguf import GgufError

        more = self.scan.feed(prefix)
        size = self.file_size
        if more is None:
            start = self.scan.header_end()
            return start if size is None else min(start, size)
        if size is not None and len(prefix) >= size:
            raise GgufError("gguf-truncated", f"the file ends at byte {size:,}, inside its header", self.file)
        want = min(max(more, 2 * len(prefix)), self.max_header)
        return want if size is None else min(want, size)

    def parse(self, blob: bytes | bytearray, *, file_size: int | None) -> WeightFile:
        # deferred: 1 ms at import (inspector.formats.gguf)
        from inspector.formats.gguf import GgufError

        if self.scan.feed(blob) is not None:
            raise GgufError("gguf-truncated", "the header ends early", self.file)
        return self.scan.finish(blob, file_size)[0]


class TorchPickle:
    """PyTorch's ``torch.save`` files, zip or legacy (``torch_pickle.py``): read as a seekable file
    over the source (a zip's directory is at its end), never unpickled with code. The records
    cannot be rebuilt from a prefix: a header snapshot refuses them by name."""

    name = "torch"
    suffixes = (".bin", ".pth", ".pt", ".ckpt", ".jit")  # .jit: TorchScript, named as such by the reader
    max_header = 256 * 1024 * 1024  # the largest data.pkl read
    keeps_head = False
    alternatives = False

    def read(self, source: ByteSource, *, file: str, first: int | None = None, problems: ProblemSink = RAISE,
             prefix: bytes | None = None) -> WeightFile:
        # deferred: 8 ms at import (inspector.errors, inspector.formats.torch_pickle)
        from inspector.errors import InvalidCheckpointError
        from inspector.formats.torch_pickle import RangeFile, read_torch_stream

        if source.size is None:
            raise InvalidCheckpointError(f"{file}: the listing gives no size; a pickle is read from its end")
        return read_torch_stream(RangeFile(source.read, source.size), file, source.size)

    def parse(self, blob: bytes | bytearray, *, file: str, file_size: int | None) -> WeightFile:
        # deferred: 8 ms at import (io, inspector.formats.torch_pickle)
        import io

        from inspector.formats.torch_pickle import read_torch_stream

        return read_torch_stream(io.BytesIO(bytes(blob)), file, len(blob))

    def config(self, header: WeightFile) -> dict[str, Any] | None:
        return None


SAFETENSORS: Final = Safetensors()
GGUF: Final = Gguf()
TORCH: Final = TorchPickle()

#: the formats, in order of preference when a folder holds several kinds of weight file
_READERS: list[Reader] = [SAFETENSORS, GGUF, TORCH]

#: weight files no reader here reads: reported as present, never counted
OTHER_WEIGHT_SUFFIXES: Final = (".h5", ".msgpack", ".ot", ".onnx", ".tflite")
#: pickles Trainer saves beside the weights: not model weights
NOT_WEIGHTS: Final = ("training_args", "optimizer", "scheduler", "rng_state", "trainer_state")


def register(reader: Reader) -> None:
    """Add a format (after the built-in ones in preference). Registering a name twice replaces it."""
    _READERS[:] = [r for r in _READERS if r.name != reader.name] + [reader]


def unregister(name: str) -> None:
    _READERS[:] = [r for r in _READERS if r.name != name or r in (SAFETENSORS, GGUF, TORCH)]


def readers() -> tuple[Reader, ...]:
    return tuple(_READERS)


def reader_for(path: str) -> Reader | None:
    """The reader of a file, by its name's suffix."""
    return next((r for r in _READERS if path.endswith(r.suffixes)), None)


#: the first bytes of each built-in format: GGUF's magic; a zip archive's local header (``torch.save``
#: since PyTorch 1.6); a pickle's PROTO opcode with protocol 2 (``torch.save``'s legacy format)
MAGIC: Final = ((b"GGUF", GGUF), (b"PK\x03\x04", TORCH), (b"\x80\x02", TORCH))


def reader_by_magic(head: bytes) -> Reader | None:
    """The reader of a file whose name says nothing of its format (``checkpoint.pth.tar``, the
    PyTorch examples' convention for a plain ``torch.save`` zip), by its first bytes; None when
    they are none of the built-in formats' (a safetensors file starts with its header's length)."""
    return next((reader for magic, reader in MAGIC if head.startswith(magic)), None)


def reader_named(name: str) -> Reader | None:
    return next((r for r in _READERS if r.name == name), None)


def weight_suffixes() -> tuple[str, ...]:
    """Every suffix of a weight file: the readers' and those of formats no reader reads."""
    return tuple(s for r in _READERS for s in r.suffixes) + OTHER_WEIGHT_SUFFIXES


#: header bytes one repo may yield in all, over the Hub, from the header cache or a snapshot folder (counted
#: after inflating): as much as the largest single header a format allows (GGUF's 128 MiB). DeepSeek-V3's
#: 163 headers are 11.5 MB; 1,000,000 tensors of safetensors header (98 MB) cost 3.4 s of CPU and 535 MB
#: to read as one file, measured, so this is what the budget's worst case costs
REPO_HEADER_BUDGET: Final = 64 * 1024 * 1024


def max_header() -> int:
    """The largest read budget of any registered format (a snapshot's per-file bound)."""
    return max(r.max_header for r in _READERS)
