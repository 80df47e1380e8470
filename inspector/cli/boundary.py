"""The command line's error boundary, typer-free: the one place that turns an exception into
``Error: …`` (and, with ``--json``, a JSON error document) and an exit code, and the table that words
the library's parameters as this command line's flags. Both the typer commands (``commands.run``) and
the console script's quick path for ``inspect ORG/NAME --json`` (``launch.quick``) run inside it; both
answer ``--version`` with ``version_text``."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable

from inspector import __version__
from inspector.errors import EXIT_INTERNAL, EXIT_INVALID, InspectorError
from inspector.render import streams

#: the library's parameters, as this command line spells them: the one table the error boundary words
#: a library error with (``⟨engine⟩ …`` → ``--engine …``); a test holds every marked parameter here
FLAGS: dict[str, str] = {
    "alpha": "--alpha", "batch": "--batch", "context": "--context", "deep": "--deep", "dtypes": "--dtype",
    "engine": "--engine", "exact": "--exact", "fail_if": "--fail-if", "force": "--force", "fsdp": "--fsdp",
    "gpu": "--gpu", "gpus": "--gpu", "kv_dtype": "--kv-dtype", "max_gpus": "--max-gpus", "method": "--method",
    "modeling": "--modeling", "nodes": "--nodes", "objective": "--objective", "offload": "--offload",
    "optimizer": "--optimizer", "overhead": "--overhead", "pipeline": "--pipeline", "precision": "--precision",
    "rank": "--rank", "revision": "--revision", "sample_bytes": "--sample-bytes", "seq": "--seq",
    "targets": "--targets", "token": "--token", "utilization": "--utilization", "values": "--values",
    "zero": "--zero", "experts": "--experts", "stage": "--stage", "loss": "--loss", "generations": "--generations",
    "completion_len": "--completion-len", "beta": "--beta", "rollout_memory": "--rollout-memory", "sp": "--sp",
    "freeze": "--freeze", "optimizer_in_backward": "--optimizer-in-backward",
    "offload_activations": "--offload-activations", "compile": "--compile",
}


#: options of the whole command line, taken out wherever they are written (before ``--``)
QUIET: tuple[str, ...] = ("--quiet", "-q")
NO_COLOR = "--no-color"


def take_global_options(args: list[str]) -> list[str]:
    """``args`` without ``--quiet``/``-q`` (no diagnostics on stderr: warnings, notes, a gate's verdict,
    progress; errors are still said) and ``--no-color`` (as the ``NO_COLOR`` variable: no colours), each
    applied to the process; the rest, in order, for the commands."""
    end = args.index("--") if "--" in args else len(args)
    head, tail = args[:end], args[end:]
    if any(a in QUIET for a in head):
        streams.be_quiet()
    if NO_COLOR in head:
        os.environ["NO_COLOR"] = "1"  # read by rich when a console is made, after this
    return [a for a in head if a not in QUIET and a != NO_COLOR] + tail


def guarded(args: list[str], body: Callable[[], int]) -> int:
    """``body()``'s exit code, or the exit code of the exception it raised, said on stderr (and as a
    JSON document on stdout when ``args`` ask for JSON); a traceback only with INSPECTOR_DEBUG/HF_DEBUG."""
    debug = bool(os.environ.get("INSPECTOR_DEBUG") or os.environ.get("HF_DEBUG"))
    try:
        return body()
    except InspectorError as exc:
        if debug:
            streams.debug_traceback()
        return fail(*exc.worded(FLAGS), exc.exit_code, json_errors=wants_json(args))
    except KeyboardInterrupt:
        streams.say("Interrupted.")
        return 130
    except BrokenPipeError:
        return 0
    except RecursionError:  # every parser caps its depth (tests/test_layers.py); a belt for what slips past
        if debug:
            streams.debug_traceback()
        return fail("an input is nested too deep to read (the interpreter's recursion limit was reached)",
                    "the file is broken or hostile; if it is an ordinary one, report it with INSPECTOR_DEBUG=1",
                    EXIT_INVALID, json_errors=wants_json(args))
    except Exception as exc:
        if debug:
            streams.debug_traceback()
        return fail(f"internal error: {type(exc).__name__}: {exc}",
                    "this is a bug; run again with INSPECTOR_DEBUG=1 for a traceback and report it", EXIT_INTERNAL,
                    json_errors=wants_json(args))


def fail(message: str, hint: str | None, code: int, *, json_errors: bool = False) -> int:
    """``Error: …`` and ``hint: …`` on stderr as plain, sanitised text; with ``--json``, the same as a
    JSON document on stdout."""
    streams.error(message, hint)
    if json_errors:
        streams.error_json(message, hint, code)
    return code


def wants_json(args: list[str]) -> bool:
    """Whether the command line asks for JSON (``--json``, ``--format json``, ``--format=json``)."""
    return "--json" in args or "--format=json" in args or any(
        a == "--format" and b == "json" for a, b in itertools.pairwise(args))


def version_text() -> str:
    """What ``inspect --version`` prints, by the typer option and by the quick path alike."""
    return f"inspect {__version__}\n"
