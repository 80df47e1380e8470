"""Adding a repo kind is one module: a subclass of ``repos.base.RepoKind`` made once with its facts, registered with
``repos.register`` (a built-in one adds its line to ``repos._BUILT_IN`` instead), nothing else (issue 49).

The toy kind below lives in a temporary module the test writes (never in the package): a ``bundle.json`` at the
top of a folder lists the folders that hold its weights (``{"class": ..., "parts": [{"folder", "class"}]}``); the
bundle is its parts, so a weight file beside the index is not read. It is seen wherever a repo kind shows: the
folder, a header snapshot saved from it and the test Hub; one part read alone (``FOLDER/part``); every output
format of ``inspect``; the JSON Schema the schema script generates; ``inspect show --help``; and a hostile index
refused in one line. The expected counts are the tensors the test writes with safetensors' own ``save_file``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import generated_schemas, help_with_strategy, toy_strategy
from hubserver import HubServer
from jsonschema import Draft202012Validator
from safetensors.numpy import save_file

from inspector import repos

TOY_MODULE = '''
from inspector.errors import InvalidCheckpointError
from inspector.repos.base import FOLDER, Listed, RepoKind


class Bundle(RepoKind):
    __slots__ = ()

    def components(self, index, where):
        parts = index.get("parts") if isinstance(index, dict) else None
        if not isinstance(parts, list) or len(parts) > 16:
            raise InvalidCheckpointError(f"{where}: bundle.json: not a list of at most 16 parts")
        out = []
        for p in parts:
            folder = p.get("folder") if isinstance(p, dict) else None
            if not isinstance(folder, str) or not FOLDER.match(folder):
                raise InvalidCheckpointError(f"{where}: bundle.json: a part that is not one folder")
            out.append(Listed(folder, "toylib", p.get("class") if isinstance(p.get("class"), str) else None))
        return out

    def class_name(self, index):
        return index.get("class") if isinstance(index, dict) and isinstance(index.get("class"), str) else None

    def index_of(self, class_name, components):
        return {"class": class_name, "parts": [{"folder": c.folder, "class": c.class_name} for c in components]}

    def note(self, class_name):
        return f"a toy bundle ({class_name}): its parts' tensors, named part.tensor"



KIND = Bundle(name="bundle", index_file="bundle.json", described="toy bundle", whole=True, separate=False)
'''

#: what the test writes: each part's tensors (name → shape), float32
PARTS = {"encoder": {"embed.weight": (10, 8), "layer.0.weight": (8, 8), "layer.0.bias": (8,)},
         "decoder": {"proj.weight": (4, 8)}}
ELEMENTS = {part: sum(int(np.prod(shape)) for shape in tensors.values()) for part, tensors in PARTS.items()}


@pytest.fixture
def toy(tmp_path: Path):
    with toy_strategy(tmp_path / "toymod", "toyrepo", TOY_MODULE, repos, "KIND") as folder:
        yield folder


def _bundle(root: Path) -> Path:
    root.mkdir()
    (root / "bundle.json").write_text(json.dumps({"class": "ToyPair", "parts": [
        {"folder": "encoder", "class": "ToyEncoder"}, {"folder": "decoder", "class": "ToyDecoder"}]}))
    for part, tensors in PARTS.items():
        (root / part).mkdir()
        save_file({n: np.zeros(s, dtype=np.float32) for n, s in tensors.items()},
                  str(root / part / "model.safetensors"))
    # beside the index: the bundle is its parts, so this file is not read (as SD-1.5's single-file checkpoints)
    save_file({"stray": np.zeros((1000,), dtype=np.float32)}, str(root / "single.safetensors"))
    return root


def test_a_repo_kind_registered_from_outside_reads_through_every_source(toy: Path, tmp_path: Path, online,
                                                                          cli) -> None:
    import inspector
    from inspector.analysis.facts.stats import summarize

    folder = _bundle(tmp_path / "bundle")
    seen = {"folder": inspector.open_model(str(folder))}
    saved = cli("save", str(folder), "-o", str(tmp_path / "snap"))
    assert saved.code == 0, saved.err
    seen["snapshot"] = inspector.open_model(str(tmp_path / "snap"))
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with HubServer() as server:
        server.add_files("acme/bundle", files)
        hub = inspector.HubOptions(endpoint=server.url, timeout=5, use_cache=False)
        seen["hub"] = inspector.open_model("acme/bundle", hub=hub)
        assert not any(r.path.endswith("single.safetensors") for r in server.requests("GET"))
        # one part alone, with its own records (``org/name/part``, as a pipeline's component)
        part = inspector.open_model("acme/bundle/decoder", hub=hub)
    for where, checkpoint in seen.items():
        assert checkpoint.kind == "bundle" and checkpoint.composite_class == "ToyPair", where
        assert [(c.name, c.library, c.class_name) for c in checkpoint.components] == [
            ("encoder", "toylib", "ToyEncoder"), ("decoder", "toylib", "ToyDecoder")], where
        s = summarize(checkpoint)
        assert s.parameters == sum(ELEMENTS.values()) and s.tensors == 4, where  # the stray file unread
        assert {t.name for t in checkpoint.tensors()} == {f"{p}.{n}" for p, ts in PARTS.items() for n in ts}, where
    assert part.label == "acme/bundle/decoder" and summarize(part).parameters == ELEMENTS["decoder"]


def test_a_repo_kind_shows_in_every_format_the_schema_and_help(toy: Path, tmp_path: Path, cli) -> None:
    folder = _bundle(tmp_path / "bundle")
    for fmt in ("table", "markdown", "html", "json"):
        out = tmp_path / f"show.{fmt}"
        r = cli(str(folder), "--format", fmt, *(["-o", str(out)] if fmt == "html" else []))
        assert r.code == 0, (fmt, r.err)
        text = out.read_text() if fmt == "html" else r.out
        assert "ToyEncoder" in text and "ToyDecoder" in text and "a toy bundle (ToyPair)" in text, fmt

    doc = cli(str(folder), "--json").json()
    assert doc["model"]["kind"] == "bundle"
    assert {c["name"]: c["parameters"] for c in doc["components"]} == ELEMENTS
    # the schema script reads the registry: with the toy registered, its name is in the enum and the document
    # validates
    made = generated_schemas()
    assert "bundle" in made["show"]["properties"]["model"]["properties"]["kind"]["enum"]
    Draft202012Validator(made["show"]).validate(doc)

    # --help lists the repo kinds registered when the CLI is imported (a fresh process, as a plugin would run)
    shown = help_with_strategy(toy, "toyrepo", "from inspector import repos; repos.register(toyrepo.KIND)", "show",
                               tmp_path)
    assert "a toy bundle, bundle.json" in " ".join(shown.split()), shown


def test_a_hostile_index_of_a_registered_kind_is_refused_in_one_line(toy: Path, tmp_path: Path, cli) -> None:
    folder = _bundle(tmp_path / "bundle")
    (folder / "bundle.json").write_text(json.dumps({"parts": [{"folder": "../../etc"}]}))
    r = cli(str(folder))
    assert r.code == 4 and "bundle.json: a part that is not one folder" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) <= 2, r.err  # the error and at most its hint


def test_without_the_kind_the_same_folder_is_one_model(tmp_path: Path, cli) -> None:
    """Unregistered, bundle.json is nobody's index: the folder's top-level weight file is the model (what the
    registry changes is the only difference)."""
    folder = _bundle(tmp_path / "bundle")
    doc = cli(str(folder), "--json").json()
    assert doc["model"]["kind"] == "model" and doc["totals"]["parameters"] == 1000 and doc["components"] is None
