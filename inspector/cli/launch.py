"""The console script's first module: the entry-point tricks, and nothing else.

It imports nothing heavy: a plain ``inspect ORG/NAME`` (only output flags) starts its Hub read on
a thread (``opening.ReadAhead``) before typer, rich and the commands are imported, so that their
import overlaps the first round trips; ``inspect MODEL --json`` (a Hub repo, a path or an alias), what
scripts send most, is answered without typer at all (``quick``, the twin of the typer command, held equal
to it by a test). The process ends without tearing down the interpreter.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from inspector import pause
from inspector.cli.opening import ReadAhead


def entry() -> NoReturn:
    """The console script. Ends the process without tearing down the interpreter: freeing
    DeepSeek-V3's ~100,000 header records one by one takes longer than the rest of the exit.
    Output is flushed first; nothing of ours relies on finalizers."""
    # deferred: 4 ms at import (inspector.cli.boundary)
    from inspector.cli.boundary import take_global_options

    pause.for_the_process()  # before the read-ahead's thread begins (inspector.pause)
    sys.argv[1:] = take_global_options(sys.argv[1:])  # --quiet and --no-color, wherever they are written
    ReadAhead.start(sys.argv[1:])
    code = quick(sys.argv[1:])
    if code is None:
        # deferred: 59 ms at import (inspector.cli.commands)
        from inspector.cli.commands import run

        code = run(None)
    # deferred: 3 ms at import (inspector.render.streams)
    from inspector.render.streams import flush

    flush()
    os._exit(code)


def quick(args: list[str]) -> int | None:
    """``inspect [show] MODEL --json`` without typer and click (about 70 ms of a cold run's CPU), in the
    same error boundary: MODEL a Hub repo whose read ``ReadAhead`` began, a path that exists or a bundled
    alias; ``inspect diff A B --json`` for two paths or aliases; and ``inspect --version``. None for any
    other command line (the typer commands answer it). The twin of ``commands.show`` and ``commands.diff``
    for those forms and of the root callback for the last: a test runs both on the same command lines and
    compares exit code, stdout and stderr."""
    if args == ["--version"]:  # the root option typer's callback answers (``commands._version_callback``)
        # deferred: 3 ms at import (inspector.cli.boundary, inspector.render.streams)
        from inspector.cli.boundary import version_text
        from inspector.render.streams import out

        out(version_text())
        return 0
    if len(args) == 4 and args[0] == "diff" and args[3] == "--json" and all(map(_local_or_alias, args[1:3])):
        # deferred: 4 ms at import (inspector.cli.boundary)
        from inspector.cli.boundary import guarded

        return guarded(args, lambda: _diff_json(args[1], args[2]))
    rest = args[1:] if args[:1] == ["show"] else args
    if not (len(rest) == 1 or (len(rest) == 2 and rest[1] == "--json")) or rest[0].startswith("-") \
            or not (ReadAhead.started(args) or _local_or_alias(rest[0])):
        return None
    # deferred: 4 ms at import (inspector.cli.boundary)
    from inspector.cli.boundary import guarded

    return guarded(args, lambda: _show(rest[0], as_json=len(rest) == 2))


#: the typer app's commands (a test holds this to ``commands.app``): a first word that names one is that
#: command, never a model, even where a folder of that name exists
COMMANDS: frozenset[str] = frozenset({"show", "diff", "compare", "estimate", "train", "plan", "audit", "lineage",
                                      "save", "aliases"})


def _local_or_alias(model: str) -> bool:
    """A path that exists (not a Hugging Face cache root, which ``show`` lists) or a bundled alias, that
    names no command and is no option."""
    if model in COMMANDS or model.startswith("-"):
        return False
    # deferred: 22 ms at import (inspector.api)
    from inspector import api

    if os.path.exists(model):
        return not api.is_cache_root(model)
    return api.is_alias(model)


def _show(model: str, *, as_json: bool) -> int:
    """``commands.show`` for ``MODEL`` and ``MODEL --json`` and nothing else (the table without typer and
    click: 0.19 -> 0.13 s of a bundled model's CPU, measured for issue 54)."""
    # deferred: 31 ms at import (inspector.api, inspector.cli.opening, inspector.model, inspector.render.views)
    from inspector import api
    from inspector.cli.opening import hub_options, open_any
    from inspector.model import Alternatives
    from inspector.render import views

    form = views.Format.JSON if as_json else views.Format.TABLE
    target = views.output_target(form, None, model=model, conflicts=False)
    hub = hub_options(None, None, False)
    checkpoint = open_any(model, None, hub)
    if isinstance(checkpoint, Alternatives):  # a repo of several GGUF files: its listing, as the command draws it
        # deferred: 55 ms at import (inspector.cli.serving)
        from inspector.cli.serving import file_listing

        file_listing(model, checkpoint, None, hub, form, False, None, None)
        return 0
    shown = api.inspect(checkpoint, tensors=False, collapse=False, formula=False, summary=not as_json)
    views.emit(shown, form, view=views.View(all_shards=False), wide=False, target=target)
    return 0


def _diff_json(a: str, b: str) -> int:
    """``commands.diff`` for ``diff A B --json`` and nothing else (no gate: exit 0)."""
    # deferred: 27 ms at import (inspector.api, inspector.cli.opening, inspector.render.views)
    from inspector import api
    from inspector.cli.opening import hub_options, open_models
    from inspector.render import views

    form = views.Format.JSON
    target = views.output_target(form, None)
    hub = hub_options(None, None, False)
    difference = api.diff(*open_models([a, b], hub), values=False, sample_bytes="1024", exact=False, hub=hub)
    views.emit(difference, form, view=views.View(all_changes=False), wide=False, target=target)
    return 0
