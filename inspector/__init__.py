"""inspector: what is inside a Hugging Face checkpoint, from its headers alone.

The library (``inspector.api``), one function per command, each returning a typed result whose
``to_dict()`` is the command's ``--json`` document::

    import inspector

    inspector.inspect("meta-llama/Meta-Llama-3-8B").parameters        # 8030261248
    inspector.diff("llama2-7b", "llama3-8b").to_dict()["delta"]       # the gap, cause by cause
    inspector.compare("llama3-8b", "mistral-7b").to_dict()
    inspector.estimate("llama3-8b", context="8k", gpu="24GiB").fit    # fits, largest context
    inspector.audit("./my-checkpoint").ok
    inspector.to_text(inspector.inspect("llama3-8b"), "html")       # the page --format html writes
    inspector.inspect("org/private", hub=inspector.HubOptions(token="hf_…", endpoint="https://mirror"))

Errors are the classes of ``inspector.errors`` (``InspectorError`` and its kin, each with the CLI's
exit code). The names are imported on first use, so ``import inspector`` costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = [
    "Alternatives",
    "Audit",
    "Checkpoint",
    "ComparisonResult",
    "Difference",
    "EstimateResult",
    "FileListing",
    "FilesResult",
    "HubOptions",
    "Inspection",
    "InspectorError",
    "LineageResult",
    "PlanResult",
    "TrainResult",
    "__version__",
    "audit",
    "compare",
    "diff",
    "estimate",
    "files",
    "inspect",
    "lineage",
    "list_files",
    "open_any",
    "open_model",
    "plan",
    "to_text",
    "train",
]

if TYPE_CHECKING:
    from inspector.api import (
        audit,
        compare,
        diff,
        files,
        inspect,
        lineage,
        open_any,
        open_model,
        to_text,
    )
    from inspector.api_fit import estimate, list_files, plan
    from inspector.api_train import train
    from inspector.errors import InspectorError
    from inspector.model import Alternatives, Checkpoint
    from inspector.results import (
        Audit,
        ComparisonResult,
        Difference,
        EstimateResult,
        FileListing,
        FilesResult,
        Inspection,
        LineageResult,
        PlanResult,
        TrainResult,
    )
    from inspector.sources.transport import HubOptions


def __getattr__(name: str) -> object:
    """The public names, imported when first used (the console script imports this package first)."""
    if name == "InspectorError":
        # deferred: 1 ms at import (inspector.errors)
        from inspector.errors import InspectorError

        return InspectorError
    if name in ("Checkpoint", "Alternatives"):
        # deferred: 16 ms at import (inspector.model)
        from inspector import model

        return getattr(model, name)
    if name == "HubOptions":
        # deferred: 15 ms at import (inspector.sources.transport)
        from inspector.sources.transport import HubOptions

        return HubOptions
    if name == "train":
        # deferred: 24 ms at import (inspector.api_train)
        from inspector import api_train

        return api_train.train
    if name in ("estimate", "list_files", "plan"):
        # deferred: 26 ms at import (inspector.api_fit)
        from inspector import api_fit

        return getattr(api_fit, name)
    if name in __all__:
        # deferred: 24 ms at import (inspector.api, inspector.results)
        from inspector import api, results

        return getattr(api, name) if hasattr(api, name) else getattr(results, name)
    raise AttributeError(f"module 'inspector' has no attribute {name!r}")
