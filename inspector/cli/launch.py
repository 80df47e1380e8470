"""The console script's first module: the entry-point tricks, and nothing else.

It imports nothing heavy: a plain ``inspect ORG/NAME`` (only output flags) starts its Hub read on
a thread (``opening.ReadAhead``) before typer, rich and the commands are imported, so that their
import overlaps the first round trips. The process ends without tearing down the interpreter.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn


def entry() -> NoReturn:
    """The console script. Ends the process without tearing down the interpreter: freeing
    DeepSeek-V3's ~100,000 header records one by one takes longer than the rest of the exit.
    Output is flushed first; nothing of ours relies on finalizers."""
    # Header records are small immutable tuples with no reference cycles: the cyclic collector
    # would only rescan them, about a sixth of the time on DeepSeek-V3's 91,991 tensors.
    gc.disable()
    from inspector.cli.opening import ReadAhead

    ReadAhead.start(sys.argv[1:])
    from inspector.cli.commands import run

    code = run(None)
    from inspector.render.streams import flush

    flush()
    os._exit(code)
