"""A diffusers pipeline: ``model_index.json`` names each component's folder with its [library, class] pair; each
component is a model of its own (a UNet, a VAE, a text encoder), read as diffusers loads it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from inspector.errors import InvalidCheckpointError
from inspector.repos.base import FOLDER, Listed, RepoKind

#: the most components a pipeline's ``model_index.json`` may list (diffusers pipelines have 3 to 8; the
#: largest known, 12); past it, a named refusal
MAX_COMPONENTS: Final = 4096
INDEX: Final = "model_index.json"


class Pipeline(RepoKind):
    __slots__ = ()

    def components(self, index: object, where: str) -> list[Listed]:
        """Keys starting with ``_`` are the pipeline's own; ``[null, null]`` an absent optional component."""
        if not isinstance(index, dict):
            raise InvalidCheckpointError(f"{where}: {INDEX}: not a JSON object")
        out = []
        for key, value in index.items():
            if key.startswith("_") or not isinstance(value, list) or len(value) != 2:
                continue
            library, cls = value
            if library is None and cls is None:
                continue
            if not all(v is None or isinstance(v, str) for v in (library, cls)) or not FOLDER.match(key):
                raise InvalidCheckpointError(f"{where}: {INDEX}: component {key[:80]!r} is not a folder name "
                                             "with a [library, class] pair")
            out.append(Listed(key, library, cls))
            if len(out) > MAX_COMPONENTS:
                raise InvalidCheckpointError(f"{where}: {INDEX} lists more than {MAX_COMPONENTS:,} components; "
                                             "a diffusers pipeline has a handful (refusing to read them all)")
        return out

    def class_name(self, index: object) -> str | None:
        cls = index.get("_class_name") if isinstance(index, dict) else None
        return cls if isinstance(cls, str) else None

    def index_of(self, class_name: str | None, components: Sequence[Listed]) -> object:
        return {"_class_name": class_name, **{c.folder: [c.library, c.class_name] for c in components}}

    def note(self, class_name: str | None) -> str | None:
        return (f"a diffusers pipeline ({class_name or 'its class not named'}): every component's tensors, named "
                "component.tensor; `inspect REPO/COMPONENT` reads one with its own config")

    def no_tokens(self) -> str | None:
        return "a diffusion pipeline decodes no tokens"


#: whole: SD-1.5's v1-5-pruned*.safetensors beside the index are from_single_file's, not the pipeline's
PIPELINE: Final = Pipeline(name="pipeline", index_file=INDEX, described="diffusers pipeline", whole=True,
                           separate=True)
