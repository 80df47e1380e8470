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

EXIT_OK = 0
EXIT_RESULT = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_INVALID = 4
EXIT_NETWORK = 5
EXIT_INTERNAL = 70


class InspectorError(Exception):
    """Base of every error the library raises on purpose."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(InspectorError):
    exit_code = EXIT_USAGE


class SeveralFiles(UsageError):
    """Several weight files that must not be added up (one model in several GGUF quantisations)."""

    def __init__(self, message: str, files: list[str], where: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.files = files
        self.where = where


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
