"""The console script's first module, and how the command line opens models.

It imports nothing heavy: a plain ``inspect ORG/NAME`` (only output flags) starts its Hub read on
a thread here, before typer, rich and the commands are imported, so that their import overlaps the
first round trips (``ReadAhead``). The commands in ``cli.py`` open models through ``open_model``
(which takes that read over when it is the same one) and ``open_models`` (several at once).
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import threading
from concurrent.futures import Future
from typing import Any, NoReturn

#: a Hub repo id as the read-ahead accepts it (anything else goes through the one resolver first)
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def entry() -> NoReturn:
    """The console script. Ends the process without tearing down the interpreter: freeing
    DeepSeek-V3's ~100,000 header records one by one takes longer than the rest of the exit.
    Output is flushed first; nothing of ours relies on finalizers."""
    # Header records are small immutable tuples with no reference cycles: the cyclic collector
    # would only rescan them, about a sixth of the time on DeepSeek-V3's 91,991 tensors.
    gc.disable()
    ReadAhead.start(sys.argv[1:])
    from inspector.cli.commands import run

    code = run(None)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def say(message: str) -> None:
    """One line of diagnostics on stderr, sanitised, never interpreted as markup."""
    from inspector.render.text import sanitize

    sys.stderr.write(sanitize(message) + "\n")


def open_model(model: str, revision: str | None, endpoint: str | None, token: str | None, offline: bool,
               *, lenient: bool = False) -> Any:
    """Open MODEL from wherever it is (the one resolver), with a progress bar on a terminal for
    many-shard Hub repos. ``lenient``: for the audit, problems are collected, not raised. A read
    begun before the command line was parsed (``ReadAhead``) is taken over when it is this one."""
    early = ReadAhead.take_over(model)
    if early is not None and (revision, endpoint, token, offline, lenient) == (None, None, None, False, False):
        with ProgressBar() as bar:
            return early.result(bar)
    return load(model, revision, endpoint, token, offline, lenient=lenient)


def load(model: str, revision: str | None, endpoint: str | None, token: str | None, offline: bool,
         *, lenient: bool = False, relay: Any = None) -> Any:
    """``open_checkpoint`` with the CLI's Hub options; ``relay`` takes the progress (done, total)
    instead of a bar of its own."""
    from inspector.sources.hub import open_hub
    from inspector.sources.resolve import open_checkpoint

    options = hub_options(endpoint, token, offline)

    def hub(repo_id: str, rev: str | None, lenient: bool, only: str | None) -> Any:
        _quiet_hub_logging()
        if relay is not None:
            return open_hub(repo_id, rev, options=options, progress=relay, lenient=lenient, only=only)
        with ProgressBar() as bar:
            return open_hub(repo_id, rev, options=options, progress=bar, lenient=lenient, only=only)

    return open_checkpoint(model, hub=hub, revision=revision, lenient=lenient)


def open_models(models: list[str], endpoint: str | None, token: str | None, offline: bool) -> list[Any]:
    """Several models read at once (two Hub repos cost the round trips of one): both sides of a
    diff, the columns of a compare. No progress bar, as several cannot share the terminal; the
    first model's error is the one reported when several fail."""
    from concurrent.futures import ThreadPoolExecutor

    def quiet(done: int, total: int) -> None:
        return None

    with ThreadPoolExecutor(max_workers=max(1, len(models)), thread_name_prefix="inspector-read") as pool:
        futures = [pool.submit(load, m, None, endpoint, token, offline, relay=quiet) for m in models]
        return [f.result() for f in futures]


class ReadAhead:
    """``inspect ORG/NAME`` (or ``inspect show ORG/NAME``) with only output flags: the read starts
    on a thread before typer is imported, so that the imports of typer and the commands overlap the
    first round trips. ``open_model`` takes it over; the read, its errors and its progress bar are
    the same as when it starts there. Anything else on the command line (a revision, an endpoint, a
    token, --offline, another command, a path that exists) and nothing starts early."""

    FLAGS = frozenset({"--json", "--tensors", "--collapse", "--shards", "--formula", "--wide"})
    _current: tuple[list[str], ReadAhead] | None = None

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.target: Any = None
        self.future: Future[Any] = Future()
        threading.Thread(target=self._read, name="inspector-early-read", daemon=True).start()

    @classmethod
    def start(cls, args: list[str]) -> None:
        """Start the read for ``args`` (the command line after the program name) when it is a plain
        ``inspect ORG/NAME``; nothing when this command line's read has started already."""
        if cls._current is not None and cls._current[0] == args:
            return
        cls._current = None
        rest = args[1:] if args[:1] == ["show"] else args
        if (rest and _REPO_ID.fullmatch(rest[0]) and set(rest[1:]) <= cls.FLAGS
                and not os.path.exists(rest[0])):
            cls._current = (list(args), cls(rest[0]))

    @classmethod
    def take_over(cls, spec: str) -> ReadAhead | None:
        """The read begun for ``spec``, once: a second open of the same model reads again."""
        current, cls._current = cls._current, None
        return current[1] if current is not None and current[1].spec == spec else None

    def _progress(self, done: int, total: int) -> None:
        if self.target is not None:
            self.target(done, total)

    def _read(self) -> None:
        try:
            self.future.set_result(load(self.spec, None, None, None, False, relay=self._progress))
        except BaseException as exc:  # handed to the main thread, raised there
            self.future.set_exception(exc)

    def result(self, bar: Any) -> Any:
        self.target = bar
        return self.future.result()


def hub_options(endpoint: str | None, token: str | None, offline: bool) -> Any:
    from inspector.sources.hub import HubOptions

    return HubOptions(endpoint=endpoint, token=token, offline=True if offline else None, on_wait=say)


def _quiet_hub_logging() -> None:
    from huggingface_hub.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]


def _progress_bars_disabled() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_DISABLE_PROGRESS_BARS)


class ProgressBar:
    """A rich progress bar on stderr for Hub fetches of many shards; silent when not a terminal."""

    def __enter__(self) -> Any:
        self.bar: Any = None
        if not sys.stderr.isatty() or _progress_bars_disabled():
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from inspector.render.output import console

        def update(done: int, total: int) -> None:
            if total < 8:
                return
            if self.bar is None:
                self.bar = Progress(TextColumn("headers"), BarColumn(), MofNCompleteColumn(),
                                    console=console(stderr=True), transient=True)
                self.bar.start()
                self.task = self.bar.add_task("headers", total=total)
            self.bar.update(self.task, completed=done)

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
