"""The cyclic collector paused while many records are built: the one place that touches ``gc``.

Header records are small immutable tuples with no reference cycles; the collector would only rescan
them, over and over as they accumulate (DeepSeek-V3's 91,991 tensors: about 40 % of a parse, a sixth
of a whole run). The pause is taken at the two entry points and nowhere below them:

* the console script (``cli.launch.entry``): ``for_the_process``, before its Hub read begins on a
  thread; the process ends with ``os._exit``, so nothing resumes it;
* the library (``inspector.api``): each public function that opens or analyses a model runs under
  ``paused``, which nests and gives back the state it found.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off inside, as it was after. Nests; also a decorator (a fresh pause per call)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def for_the_process() -> None:
    """The collector off until the process ends (the console script, which ends with ``os._exit``)."""
    gc.disable()
