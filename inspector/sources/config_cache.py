"""The on-disk figure store: what transformers made of a config, kept between runs.

``$HF_HOME/inspector/configs/<key>.json``, one small JSON file per config (``analysis.facts.config.figure_key``),
written atomically through the path guard. A broken or unreadable entry is a miss; a read-only cache
only costs time.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from inspector.errors import InspectorError
from inspector.safeio import inside, parse_json_object, read_regular, write_atomic

#: an entry is a few hundred bytes; anything much larger is not ours
ENTRY_BUDGET: Final = 64 * 1024


class DiskFigureStore:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder

    def _root(self) -> Path:
        if self.folder is None:
            # deferred: 1 ms at import (huggingface_hub)
            from huggingface_hub import constants

            self.folder = Path(constants.HF_HOME) / "inspector" / "configs"
        return self.folder

    def get(self, key: str) -> Mapping[str, object] | None:
        try:
            return parse_json_object(read_regular(inside(self._root(), f"{key}.json", "config cache"), ENTRY_BUDGET),
                                     "config cache")
        except (OSError, InspectorError):
            return None

    def put(self, key: str, value: Mapping[str, object]) -> None:
        with contextlib.suppress(OSError, InspectorError, TypeError, ValueError):
            write_atomic(self._root(), f"{key}.json", json.dumps(value, default=str).encode(), "config cache")
