"""Repo kinds: a repo whose index names the folders its weights live in (a diffusers pipeline, a
sentence-transformers model), one module each behind ``base.RepoKind``, found by the index file it is read from.

A repo without such an index is one ``model`` (``Checkpoint.kind``). Adding a kind is a module here (its index
file, how the index lists its components with its bounds, how the components join the repo, what is said of it)
and its line in ``_BUILT_IN``, or ``register`` from outside; the assembly, header snapshots, the report, diff,
estimate, the JSON Schema and ``inspect show --help`` ask the registry, never the index's file name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from inspector.repos.base import FOLDER, MODEL, Listed, RepoKind
from inspector.repos.pipeline import PIPELINE
from inspector.repos.sentence import SENTENCE
from inspector.strategies import Registry

if TYPE_CHECKING:
    from inspector.model import Checkpoint

_BUILT_IN: Final = (PIPELINE, SENTENCE)
#: the kinds by their name (``Checkpoint.kind``)
KINDS: Final[Registry[RepoKind]] = Registry(_BUILT_IN)
register = KINDS.register
unregister = KINDS.unregister


def kinds() -> Iterator[RepoKind]:
    """Every kind, built-in first: the order an assembly tries their index files in."""
    return iter(tuple(KINDS.values()))


def kind_of(checkpoint: Checkpoint) -> RepoKind | None:
    """A checkpoint's kind (None: one model)."""
    return KINDS.get(checkpoint.kind)


def index_files() -> tuple[str, ...]:
    """Every kind's index file (configs, in a repo's listing; stored whole in a header snapshot)."""
    return tuple(k.index_file for k in kinds())


def names() -> tuple[str, ...]:
    """Every value ``Checkpoint.kind`` takes: ``model`` and each kind's name (the JSON Schema's enum)."""
    return (MODEL, *KINDS)


__all__ = ["FOLDER", "KINDS", "MODEL", "Listed", "RepoKind", "index_files", "kind_of", "kinds", "names",
           "register", "unregister"]
