"""What every repo kind is: the ``RepoKind`` base its kinds subclass, and the record of one listed component."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

#: the kind of a repo read as one model (no index of components)
MODEL: Final = "model"
#: a component's folder as an index may name it: one path segment, no dots first
FOLDER: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True, slots=True)
class Listed:
    """One component as its repo's index lists it: its folder, the library that loads it and its class (each
    None where the index does not say)."""

    folder: str
    library: str | None
    class_name: str | None


@dataclass(frozen=True, slots=True)
class RepoKind(ABC):
    """What a multi-component repo is: the index it is read from and what follows from it. A kind is a subclass
    that reads its index (``components``, ``index_of``; ``class_name``, ``note``, ``no_tokens`` where it has
    them), made once with its facts:

    - ``name``: ``Checkpoint.kind`` and the JSON's ``model.kind`` (``pipeline``);
    - ``index_file``: the top-level file that makes a repo this kind (``model_index.json``);
    - ``described``: the kind in words, a noun that takes an ``s`` for more than one (``diffusers pipeline``);
    - ``whole``: the components are the repo, and weight files at its top level are alternatives, not read (a
      diffusers pipeline's single-file checkpoints); False: the components join a model at the top level, if any;
    - ``separate``: each component is a model of its own, diffed and estimated one by one, never as one stack;
    - ``top``: the components table's name and library for tensors at the repo's top level (None: not shown).
    """

    name: str
    index_file: str
    described: str
    whole: bool
    separate: bool
    top: tuple[str, str] | None = None

    @abstractmethod
    def components(self, index: object, where: str) -> list[Listed]:
        """The components the parsed index lists, in its order, each folder once; an ``InvalidCheckpointError``
        naming ``where`` for an index that is not one, or lists more than the kind's bound."""

    @abstractmethod
    def index_of(self, class_name: str | None, components: Sequence[Listed]) -> object:
        """The index written back from what was read of it (a header snapshot stores it), which ``components``
        reads as ``components``."""

    def class_name(self, index: object) -> str | None:
        """The class the index names for the whole repo (``StableDiffusionPipeline``), or None."""
        return None

    def note(self, class_name: str | None) -> str | None:
        """What ``inspect`` says of a repo of this kind, or None."""
        return None

    def no_tokens(self) -> str | None:
        """Why the repo as a whole has no per-token figures (KV cache, FLOPs per token), or None."""
        return None
