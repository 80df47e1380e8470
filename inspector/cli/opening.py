"""How the command line opens models: the one resolver with the CLI's Hub options and a progress
bar (``open_model``), several at once (``open_models``), and the read that a plain ``inspect ORG/NAME``
starts before typer is imported (``ReadAhead``). Imports nothing heavy at module level."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from inspector.safeio import is_repo_id

if TYPE_CHECKING:
    from concurrent.futures import Future

    from inspector.model import Alternatives, Checkpoint, Phase, Progress
    from inspector.sources.transport import HubOptions


def say(message: str) -> None:
    """One line of diagnostics on stderr, sanitised, never interpreted as markup."""
    # deferred: 4 ms at import (inspector.render.streams)
    from inspector.render.streams import say as say_line

    say_line(message)


def hub_options(endpoint: str | None, token: str | None, offline: bool) -> HubOptions:
    """The one ``HubOptions`` of a run, from ``--endpoint``, ``--token`` and ``--offline``: told in words
    on stderr when a read waits for the server."""
    # deferred: 11 ms at import (inspector.sources.transport)
    from inspector.sources.transport import HubOptions

    return HubOptions(endpoint=endpoint, token=token, offline=True if offline else None, on_wait=say)


def open_model(model: str, revision: str | None, hub: HubOptions, *, lenient: bool = False) -> Checkpoint:
    """Open MODEL from wherever it is (the one resolver), with a progress bar on a terminal for
    many-shard Hub repos. ``lenient``: for the audit, problems are collected, not raised. One model in several
    files (GGUF quantisations) is a usage error naming them; ``open_any`` answers it instead."""
    return load(model, revision, hub, lenient=lenient)


def open_any(model: str, revision: str | None, hub: HubOptions) -> Checkpoint | Alternatives:
    """``api.open_any`` with the run's ``HubOptions`` and a progress bar: a ``Checkpoint``, or a folder's or repo's
    several model files as ``Alternatives``. A read begun before the command line was parsed (``ReadAhead``) is
    taken over when it is this one."""
    early = ReadAhead.take_over(model)
    if early is not None and revision is None and hub == hub_options(None, None, False):
        with ProgressBar() as bar:
            return early.result(bar)
    return load_any(model, revision, hub)


def load_any(model: str, revision: str | None, hub: HubOptions, *,
             relay: Progress | None = None) -> Checkpoint | Alternatives:
    """``api.open_any`` with the run's ``HubOptions``; ``relay`` takes the progress instead of a bar of its own."""
    # deferred: 23 ms at import (inspector.api)
    from inspector import api

    if relay is not None:
        return api.open_any(model, revision=revision, hub=hub, progress=relay)
    with ProgressBar() as bar:
        return api.open_any(model, revision=revision, hub=hub, progress=bar)


def load(model: str, revision: str | None, hub: HubOptions, *, lenient: bool = False,
         relay: Progress | None = None) -> Checkpoint:
    """``api.open_model`` with the run's ``HubOptions``; ``relay`` takes the progress (phase, done, total)
    instead of a bar of its own."""
    # deferred: 23 ms at import (inspector.api)
    from inspector import api

    if relay is not None:
        return api.open_model(model, revision=revision, hub=hub, lenient=lenient, progress=relay)
    with ProgressBar() as bar:  # drawn only once a Hub read of many headers reports progress
        return api.open_model(model, revision=revision, hub=hub, lenient=lenient, progress=bar)


def open_models(models: list[str], hub: HubOptions) -> list[Checkpoint]:
    """Several models read at once (two Hub repos cost the round trips of one): both sides of a
    diff, the columns of a compare. No progress bar, as several cannot share the terminal; the
    first model's error is the one reported when several fail."""
    # deferred: 7 ms at import (concurrent.futures)
    from concurrent.futures import ThreadPoolExecutor

    def quiet(phase: str, done: int, total: int) -> None:
        return None

    distinct = list(dict.fromkeys(models))  # a model named twice (diff A A) is read once: one object for both
    with ThreadPoolExecutor(max_workers=max(1, len(distinct)), thread_name_prefix="inspector-read") as pool:
        futures = {m: pool.submit(load, m, None, hub, relay=quiet) for m in distinct}
        return [futures[m].result() for m in models]


class ReadAhead:
    """``inspect ORG/NAME`` (or ``inspect show ORG/NAME``) with only output flags: the read starts
    on a thread before typer is imported, so that the imports of typer and the commands overlap the
    first round trips. ``open_any`` takes it over; the read, its errors and its progress bar are
    the same as when it starts there. Anything else on the command line (a revision, an endpoint, a
    token, --offline, another command, a path that exists) and nothing starts early."""

    FLAGS = frozenset({"--json", "--tensors", "--collapse", "--shards", "--formula", "--wide"})
    _current: tuple[list[str], ReadAhead] | None = None

    def __init__(self, spec: str) -> None:
        # deferred: 28 ms at import (concurrent.futures, inspector.sources.early)
        from concurrent.futures import Future  # (with logging: 6 ms a local run does not spend)

        from inspector.sources.early import begin

        self.spec = spec
        self.target: Progress | None = None
        self.future: Future[Checkpoint | Alternatives] = Future()
        begin(spec, hub_options(None, None, False))  # its requests out first; the imports below overlap them
        threading.Thread(target=self._read, name="inspector-early-read", daemon=True).start()

    @classmethod
    def start(cls, args: list[str]) -> None:
        """Start the read for ``args`` (the command line after the program name) when it is a plain
        ``inspect ORG/NAME``; nothing when this command line's read has started already."""
        if cls._current is not None and cls._current[0] == args:
            return
        cls._current = None
        rest = args[1:] if args[:1] == ["show"] else args
        if (rest and "/" in rest[0] and is_repo_id(rest[0]) and set(rest[1:]) <= cls.FLAGS
                and not os.path.exists(rest[0])):
            cls._current = (list(args), cls(rest[0]))

    @classmethod
    def started(cls, args: list[str]) -> bool:
        """Whether the read for this command line has begun (and not been taken over)."""
        return cls._current is not None and cls._current[0] == args

    @classmethod
    def take_over(cls, spec: str) -> ReadAhead | None:
        """The read begun for ``spec``, once: a second open of the same model reads again."""
        current, cls._current = cls._current, None
        return current[1] if current is not None and current[1].spec == spec else None

    def _progress(self, phase: Phase, done: int, total: int) -> None:
        if self.target is not None:
            self.target(phase, done, total)

    def _read(self) -> None:
        try:
            self.future.set_result(load_any(self.spec, None, hub_options(None, None, False), relay=self._progress))
        except BaseException as exc:  # handed to the main thread, raised there
            self.future.set_exception(exc)

    def result(self, bar: Progress) -> Checkpoint | Alternatives:
        self.target = bar
        return self.future.result()


def _progress_bars_disabled() -> bool:
    # deferred: 5 ms at import (huggingface_hub, inspector.render.streams)
    from huggingface_hub import constants

    from inspector.render.streams import is_quiet

    return bool(constants.HF_HUB_DISABLE_PROGRESS_BARS) or is_quiet()


class ProgressBar:
    """A rich progress bar on stderr that names its phase: ``listing`` (a spinner while the Hub lists
    the repo), ``headers n/N``, ``components n/N``, ``tensor data`` (bytes); a counted phase is drawn
    from 8 steps (a repo of many shards, a deep scan). Transient, and silent when stderr is not a
    terminal or huggingface_hub's progress bars are off."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Any:
        # deferred: 4 ms at import (inspector.render.streams)
        from inspector.render.streams import stderr_is_terminal

        if not stderr_is_terminal() or _progress_bars_disabled():
            return None
        return self.update

    def update(self, phase: str, done: int, total: int) -> None:
        listing = phase == "listing"
        if self.bar is None:
            if not listing and total < 8:
                return
            # deferred: 38 ms at import (rich.progress, inspector.render.output)
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

            from inspector.render.output import console

            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                console=console(stderr=True), transient=True)
            self.task = self.bar.add_task(str(phase), total=None)
            self.bar.start()
        if listing:
            self.bar.update(self.task, description=str(phase), completed=0, total=None, visible=True)
        else:
            self.bar.update(self.task, description=str(phase), completed=done, total=total, visible=total >= 8)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
