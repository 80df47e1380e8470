"""A sentence-transformers model: ``modules.json`` lists its modules in order, the transformer at the top level
(``path: ""``) or, as sentence-transformers 1.x saved it, in a folder of its own; the others (pooling, a Dense
head, normalisation) in folders whose weights join the transformer's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from inspector.errors import InvalidCheckpointError
from inspector.repos.base import FOLDER, Listed, RepoKind
from inspector.safeio import relative_name

#: the most modules a ``modules.json`` may list (sentence-transformers models have 2 to 5); past it, a
#: named refusal
MAX_MODULES: Final = 1024
INDEX: Final = "modules.json"


class SentenceTransformer(RepoKind):
    __slots__ = ()

    def components(self, index: object, where: str) -> list[Listed]:
        """The modules in folders of their own, each folder once however often it is listed (a hostile index
        named one folder 10,000 times); the library is the type's first dotted word, the class its last."""
        if not isinstance(index, list):
            raise InvalidCheckpointError(f"{where}: {INDEX} is not a list of modules")
        if len(index) > MAX_MODULES:
            raise InvalidCheckpointError(f"{where}: {INDEX} lists {len(index):,} modules, over the "
                                         f"{MAX_MODULES:,} this tool reads")
        out = []
        seen: set[str] = set()
        for entry in index:
            path = entry.get("path") if isinstance(entry, dict) else None
            kind = entry.get("type") if isinstance(entry, dict) else None
            if not isinstance(path, str) or (kind is not None and not isinstance(kind, str)):
                raise InvalidCheckpointError(f"{where}: {INDEX}: a module without a path")
            if path in ("", "."):
                continue  # the transformer: the repo's own top level
            if not FOLDER.match(path):
                relative_name(path, f"{where}: {INDEX}: path")
                raise InvalidCheckpointError(f"{where}: {INDEX}: module path {path[:80]!r} is not one folder")
            if path in seen:
                continue
            seen.add(path)
            library, _, cls = kind.rpartition(".") if kind else ("", "", "")
            out.append(Listed(path, library.split(".")[0] or None, cls or None))
        return out

    def class_name(self, index: object) -> str | None:
        return "SentenceTransformer"

    def index_of(self, class_name: str | None, components: Sequence[Listed]) -> object:
        return [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                *({"idx": i, "name": c.folder, "path": c.folder,
                   "type": f"{c.library or 'sentence_transformers'}.{c.class_name or 'Module'}"}
                  for i, c in enumerate(components, start=1))]


SENTENCE: Final = SentenceTransformer(name="modules", index_file=INDEX, described="sentence-transformers model",
                                      whole=False, separate=False, top=("transformer", "transformers"))
