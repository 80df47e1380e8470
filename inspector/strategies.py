"""The one shape of a registry of strategies: the built-in ones, in order, and those a module of its own adds with
``register``; read by name as a mapping. Engines, repo kinds, optimizers, fine-tuning methods, precisions and loss
kernels are each one ``Registry``; the CLI's choices and help and the JSON Schemas read them when asked, so a
strategy registered from outside is there without a word changed elsewhere."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


S = TypeVar("S", bound=Named)


class Registry(Mapping[str, S]):
    """Strategies by name: the built-in ones first, then those registered, in order. Registering a name twice
    replaces it; the built-in ones cannot be unregistered."""

    __slots__ = ("_built_in", "_items")

    def __init__(self, built_in: Iterable[S]) -> None:
        self._items: dict[str, S] = {s.name: s for s in built_in}
        self._built_in = frozenset(self._items)

    def __getitem__(self, name: str) -> S:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._items))  # a snapshot: registering while iterating changes nothing seen

    def __len__(self) -> int:
        return len(self._items)

    def register(self, strategy: S) -> None:
        """Add a strategy (from a module of its own outside the package, say)."""
        self._items[strategy.name] = strategy

    def unregister(self, name: str) -> None:
        """Remove a strategy ``register`` added; the built-in ones stay."""
        if name not in self._built_in:
            self._items.pop(name, None)

    def names(self) -> tuple[str, ...]:
        return tuple(self._items)

