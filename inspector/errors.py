"""Typed errors, each carrying a message in our own words and an exit code.

The CLI has one place (``cli.main``) that turns these into ``Error: ...`` on stderr.
Exit codes are a contract, documented in ``--help`` and the README:

====  ==========================================================
0     success
1     a result the caller asked to gate on (differences, audit errors)
2     usage: bad arguments or options
3     not found or no access (path, repo, revision, gated repo)
4     invalid checkpoint (corrupt or hostile header, bad index)
5     network fault (timeout, DNS, connection reset, rate limit)
70    internal error (a bug: please report it)
====  ==========================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final

EXIT_OK = 0
EXIT_RESULT = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_INVALID = 4
EXIT_NETWORK = 5
EXIT_INTERNAL = 70


#: a parameter named in an error: ``⟨engine⟩`` or ``⟨gpu=H100x4⟩`` (the name, and a value given to it)
_PARAMETER: Final = re.compile("\u27e8([a-z_]+)(?:=([^\u27e9]*))?\u27e9")


def _library_words(m: re.Match[str]) -> str:
    return m.group(1) if m.group(2) is None else f"{m.group(1)}={m.group(2)}"


class InspectorError(Exception):
    """Base of every error the library raises on purpose.

    A message names the library's parameters, marked ``⟨name⟩`` (or ``⟨name=value⟩``) where it is
    written: ``message`` and ``hint`` read ``engine`` (``gpu=H100x4``); ``worded`` puts another
    name in their place (the CLI's boundary: ``--engine``, ``--gpu H100x4``), from one table."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.template, self.hint_template = message, hint
        self.message = _PARAMETER.sub(_library_words, message)
        self.hint = _PARAMETER.sub(_library_words, hint) if hint is not None else None
        super().__init__(self.message)

    def worded(self, names: Mapping[str, str]) -> tuple[str, str | None]:
        """The message and hint with each parameter called by ``names[parameter]`` (a value after it,
        separated by a space). Every parameter the library marks has a name in the table (a test holds
        it); a marker the table does not know came from outside (a file name, a config value quoted in
        the message) and is left as it was written."""

        def word(m: re.Match[str]) -> str:
            if m.group(1) not in names:
                return m.group(0)
            return names[m.group(1)] if m.group(2) is None else f"{names[m.group(1)]} {m.group(2)}"

        return _PARAMETER.sub(word, self.template), \
            _PARAMETER.sub(word, self.hint_template) if self.hint_template is not None else None


def parameters_named(text: str) -> set[str]:
    """The parameters a message or hint marks (the test of the CLI's table reads the sources with it)."""
    return {m.group(1) for m in _PARAMETER.finditer(text)}


class UsageError(InspectorError):
    exit_code = EXIT_USAGE


class SeveralFiles(UsageError):
    """Several weight files that must not be added up (one model in several GGUF quantisations)."""

    def __init__(self, message: str, files: list[str], where: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.files = files
        self.where = where
        #: set by a source that can read one of the files with what it has already read (a Hub repo:
        #: its listing at the commit), so that N files cost N header reads and no listing each
        self.opener: Callable[[str], object] | None = None
        #: the folder's or repo's files with their sizes, as the source listed them (``--files``)
        self.listing: Mapping[str, int | None] = {}


class NotFoundError(InspectorError):
    """A path, repository, revision or file that does not exist or cannot be reached."""

    exit_code = EXIT_NOT_FOUND


class ConfigOnly(NotFoundError):
    """A Hugging Face cache folder that holds only a model's config files (a config-only download)."""


class AccessError(NotFoundError):
    """The repository exists but the token in use may not read it (gated or private)."""


class InvalidCheckpointError(InspectorError):
    """The bytes or files do not form a valid checkpoint."""

    exit_code = EXIT_INVALID


class NetworkError(InspectorError):
    exit_code = EXIT_NETWORK


class HubUnreachable(NetworkError):
    """No answer at all (timeout, DNS failure, connection refused): the cache may stand in."""


# --- safetensors header rules: one class per rule, as in the Rust reference -------------


class HeaderError(InvalidCheckpointError):
    """A safetensors header breaks one rule of the format. ``rule`` names which."""

    rule = "header"

    def __init__(self, message: str, file: str | None = None, hint: str | None = None) -> None:
        where = f"{file}: " if file else ""
        super().__init__(f"{where}{message}", hint)
        self.file = file


class NotRegularFile(HeaderError):
    """A FIFO, device, socket or folder where a file was expected: never opened for reading."""

    rule = "not-regular-file"


class ShortRead(HeaderError):
    """A byte source gave fewer bytes than the file holds (sources raise their own error first)."""

    rule = "short-read"


class HeaderTooSmall(HeaderError):
    rule = "header-too-small"


class HeaderTooLarge(HeaderError):
    rule = "header-too-large"


class HeaderBeyondFile(HeaderError):
    rule = "header-beyond-file"


class HeaderNotJSON(HeaderError):
    rule = "header-not-json"


class HeaderNotObject(HeaderError):
    rule = "header-not-object"


class InvalidEntry(HeaderError):
    rule = "invalid-entry"


class InvalidMetadata(HeaderError):
    rule = "invalid-metadata"


class DuplicateTensor(HeaderError):
    rule = "duplicate-tensor"


class ShapeOverflow(HeaderError):
    """The product of a shape's dimensions (or its size in bits) overflows 64 bits."""

    rule = "shape-overflow"


class UnknownDtype(HeaderError):
    rule = "unknown-dtype"


class SpanMismatch(HeaderError):
    """``data_offsets`` span differs from elements × dtype size."""

    rule = "span-mismatch"


class OverlappingSpans(HeaderError):
    rule = "overlapping-spans"


class SpanGap(HeaderError):
    """Spans leave a hole: the reference format requires them contiguous from 0."""

    rule = "span-gap"


class DataBeyondFile(HeaderError):
    rule = "data-beyond-file"


class PickleError(HeaderError):
    """A PyTorch pickle the inspector will not read; ``rule`` names why (``unsafe-global`` …)."""

    rule = "pickle"

    def __init__(self, rule: str, message: str, file: str | None = None, hint: str | None = None,
                 imports: tuple[tuple[str, str, str, bool], ...] = ()) -> None:
        super().__init__(message, file, hint)
        self.rule = rule
        #: the globals the file's pickles name, read before the refusal (``model.Import`` rows)
        self.imports = imports


class ProblemSink:
    """Where a read sends a problem it could read past: a header that does not parse, an index that
    is broken, a shard the index names that is not there, tensor data that claims bytes past the end
    of its file. Decided once, where a model is opened (``resolve.open_checkpoint``), and carried by
    the source every reader reads through, never threaded as a flag.

    ``RAISE`` (every command but the audit) raises each at once. ``COLLECT`` (the audit) reads on: a
    header's or the index's error becomes data on the checkpoint (``Checkpoint.problems``), the
    files' ends are left to the audit's own findings (``checked_size`` is None), and every top-level
    weight file is read whether the index names it or not (``collects``)."""

    __slots__ = ("collects",)

    def __init__(self, collects: bool) -> None:
        self.collects = collects

    def __repr__(self) -> str:
        return "COLLECT" if self.collects else "RAISE"

    def header(self, error: HeaderError) -> HeaderError:
        """The error, to keep, when this sink collects; raised otherwise."""
        if not self.collects:
            raise error
        return error

    def index(self, error: InvalidCheckpointError) -> str:
        """The index's error in words, to keep, when this sink collects; raised otherwise."""
        if not self.collects:
            raise error
        return error.message

    def checked_size(self, size: int | None) -> int | None:
        """The file size a reader checks its records against: the file's own, or None when the
        audit checks the end of each file itself (a finding, not an error)."""
        return None if self.collects else size


RAISE: Final = ProblemSink(False)
COLLECT: Final = ProblemSink(True)
