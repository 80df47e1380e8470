"""Hostile inputs, round six (issue 66): a model card's YAML nested without end, the declared bases read under
one budget, big JSON under its element count, names no file system or Hub holds, listings whose hashes lie,
a header of a distinct pattern a tensor. Each case: its documented exit code and one line; bounds as counts,
bytes and requests, and (in a child process) memory."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from test_lineage_hostile import _model  # a small model written by the safetensors library, with its card

from inspector.errors import EXIT_INVALID, EXIT_NOT_FOUND, EXIT_USAGE


def _one_line(err: str) -> bool:
    lines = [line for line in err.splitlines() if line.strip()]
    return 1 <= len(lines) <= 2 and lines[0].startswith("Error:") and "Traceback" not in err


# --- a card's YAML nested without end -------------------------------------------------------------------------

DEEP_CARDS = {
    "flow": b"---\nbase_model: " + b"[" * 600 + b"]" * 600 + b"\n---\n",  # 1.2 KB
    "mapping": b"---\nbase_model: " + b"{a: " * 600 + b"1" + b"}" * 600 + b"\n---\n",
    "block": b"---\n" + b"".join(b" " * i + b"- \n" for i in range(0, 1200, 2)) + b"---\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP_CARDS))
def test_a_card_nested_without_end_declares_nothing(shape: str) -> None:
    """PyYAML's composer recurses a level a node: 600 levels of ``[`` in a 1 KB card raised RecursionError out of
    ``lineage`` (exit 70). The loader counts the depth as it composes and stops at MAX_YAML_DEPTH."""
    from inspector.analysis.comparison.lineage import front_matter
    from inspector.safeio import MAX_YAML_DEPTH, parse_yaml

    assert front_matter(DEEP_CARDS[shape]) == {}
    nested = "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)  # within the cap: read as it is
    assert json.dumps(parse_yaml(f"a: {nested}", "x")) == f'{{"a": {nested}}}'


def test_a_card_with_a_character_yaml_refuses_declares_nothing() -> None:
    """Found by the fuzz stage's card kind: PyYAML's reader refuses a control character as the loader is made,
    before any node is read (it escaped the loader's error handling: exit 70)."""
    from inspector.analysis.comparison.lineage import front_matter

    assert front_matter(b"---\nbase_model: org/a\x1b[31m\n---\n") == {}


@pytest.mark.parametrize("shape", sorted(DEEP_CARDS))
def test_lineage_of_a_model_whose_card_nests_without_end(cli, tmp_path: Path, shape: str) -> None:
    """Locally: no base declared (the card is unreadable), so the usage error that says so, one line."""
    folder = _model(tmp_path / "m", card=DEEP_CARDS[shape])
    result = cli("lineage", str(folder))
    assert result.code == EXIT_USAGE and "declares no base" in result.err and _one_line(result.err), result.err


def test_lineage_over_the_hub_of_a_card_that_nests_without_end(cli, tmp_path: Path, online: None) -> None:
    """The same card served by the test Hub: the card is read by range and declares nothing."""
    from hubserver import HubServer

    folder = _model(tmp_path / "m", card=DEEP_CARDS["flow"])
    with HubServer() as server:
        server.add_files("acme/deep", {f.name: f.read_bytes() for f in folder.iterdir()})
        result = cli("lineage", "acme/deep", "--endpoint", server.url)
    assert result.code == EXIT_USAGE and "declares no base" in result.err and _one_line(result.err), result.err


def test_a_recursion_error_is_never_an_internal_error(tmp_path: Path) -> None:
    """The boundary's belt: a RecursionError raised anywhere in a command is exit 4 with one line, not 70."""
    import subprocess
    import sys

    plant = tmp_path / "sitecustomize.py"
    plant.write_text("import inspector.api as a\n"
                     "def deep(*args, **kwargs):\n    return deep(*args, **kwargs)\n"
                     "a.inspect = deep\n")
    import os

    done = subprocess.run([sys.executable, "-m", "inspector", "llama3-8b"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=False)
    assert done.returncode == EXIT_INVALID, done.stderr[-500:]
    assert _one_line(done.stderr) and "nested too deep" in done.stderr


# --- names no file system or Hub holds ------------------------------------------------------------------------

LONG = "A" * 300


@pytest.mark.parametrize("args", [
    [LONG], ["estimate", LONG], ["audit", LONG], ["lineage", LONG, "llama3-8b"], ["compare", LONG, "llama3-8b"],
    ["diff", "llama3-8b", LONG], [f"some/dir/{LONG}/x"], [f"org/g:{'x' * 100_000}"],
])
def test_a_path_component_past_name_max_is_not_found_not_a_crash(cli, args: list[str]) -> None:
    """A component over 255 bytes (NAME_MAX) made the operating system answer "File name too long": exit 70
    in show, estimate, audit, lineage and compare. Now the name is looked at before the file system sees it."""
    result = cli(*args)
    assert result.code in (EXIT_NOT_FOUND, EXIT_USAGE, 5), result.err  # 5: offline, the Hub unreachable
    assert _one_line(result.err) and "internal error" not in result.err, result.err
    assert len(result.err) < 3000


@pytest.mark.parametrize("name", ["org/tiny\n", "org/x.", "org/x-", "org/a--b", "org/a..b", "org/x.git",
                                  ".org/x", "org/" + "x" * 97])
def test_a_name_the_hubs_syntax_refuses_sends_nothing(cli, online: None, name: str) -> None:
    """huggingface_hub's validate_repo_id: parts start and end with a letter, digit or ``_``, no ``--`` or ``..``,
    no ``.git`` at the end, at most 96 characters; matched whole (``org/tiny\\n`` passed ``$``, then raised
    InvalidURL with --revision: exit 70). The early read sent 5 requests for ``org/x.``."""
    from hubserver import HubServer

    with HubServer() as server:
        for extra in ([], ["--revision", "main"]):
            result = cli(name, "--endpoint", server.url, *extra)
            # 3 where the name reads as a path (a leading "."): not found, and no request either
            assert result.code in (EXIT_USAGE, EXIT_NOT_FOUND) and _one_line(result.err), result.err
        assert server.requests() == []


def test_the_repo_id_rule_matches_huggingface_hubs() -> None:
    """The one syntax check against huggingface_hub's own validator, on the edges of the rule."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    from inspector.safeio import is_repo_id

    for name in ["org/x", "org/x.y", "o/x_", "org/x-1", "org/tiny\n", "org/x.", "org/x-", "org/a--b", "org/a..b",
                 "org/x.git", "org/" + "x" * 96, "org/" + "x" * 97, "a/b/c", "org/x y"]:
        try:
            validate_repo_id(name)
            theirs = True
        except HFValidationError:
            theirs = False
        assert is_repo_id(name) == theirs, name


def test_a_listed_file_name_past_name_max_is_refused() -> None:
    from inspector.errors import InvalidCheckpointError
    from inspector.safeio import relative_name

    with pytest.raises(InvalidCheckpointError, match="longer than 255 bytes"):
        relative_name("dir/" + "x" * 256 + ".safetensors", "listing")
    assert relative_name("dir/" + "x" * 243 + ".safetensors", "listing")  # 255 bytes: held


# --- big JSON under its byte budget: bounded by the values it holds ---------------------------------------------

def _with_document(folder: Path, name: str, raw: bytes) -> Path:
    from helpers import tiny_llama, write_layout

    config, entries = tiny_llama()
    write_layout(folder / "model.safetensors", entries)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / name).write_bytes(raw)
    return folder


def _over_values(name: str) -> bytes:
    """A document of ``[]`` one list past its name's budget of values, inside its bytes."""
    from inspector.safeio import document_budget

    budget = document_budget(name)
    raw = b"[" + b"[]," * budget.values + b"[]]"
    assert len(raw) <= budget.bytes
    return raw


DOCUMENTS = ["config.json", "model.safetensors.index.json", "tokenizer_config.json", "generation_config.json",
             "adapter_config.json"]


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_document_of_empty_lists_is_refused_by_its_values(tmp_path: Path, name: str) -> None:
    """A 63 MiB file of ``[]`` under the 64 MiB byte budget exited 0 at 1.9–2.1 GB. Each document now has a
    budget of bytes and values by its name (safeio.DOCUMENT_BUDGETS), counted before parsing: exit 4, one line
    naming the file, the process under 500 MB (measured in a child process)."""
    from helpers import measured

    raw = _over_values(name)
    got = measured(str(_with_document(tmp_path / "m", name, raw)), "--json")
    assert got["code"] == EXIT_INVALID, got["stderr"]
    assert _one_line(got["stderr"]) and name in got["stderr"] and "JSON values" in got["stderr"], got["stderr"]
    assert got["peak_mb"] < 500, got


def test_sixty_three_mib_of_a_config_is_refused_by_its_bytes(tmp_path: Path) -> None:
    from helpers import measured

    raw = b"[" + b"[]," * (21 << 20) + b"[]]"  # 63 MiB
    got = measured(str(_with_document(tmp_path / "m", "config.json", raw)))
    assert got["code"] == EXIT_INVALID and "over the 4,194,304-byte budget" in got["stderr"], got["stderr"]
    assert got["peak_mb"] < 500, got


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json", "model.safetensors.index.json"])
def test_an_over_budget_document_over_the_hub_is_refused_and_never_cached(tmp_path: Path, online: None,
                                                                          name: str) -> None:
    """The header cache kept the 63 MiB document, so every later run cost 2.1 GB again: now it is refused before
    anything is cached, and a second run asks the Hub again (nothing kept for the repo)."""
    from hubserver import HubServer

    from inspector.sources.header_cache import HeaderCache

    raw = _over_values(name)
    folder = _with_document(tmp_path / "m", name, raw)
    with HubServer() as server:
        server.add_files("acme/lists", {f.name: f.read_bytes() for f in folder.iterdir()})
        import subprocess
        import sys

        for _ in range(2):
            done = subprocess.run([sys.executable, "-m", "inspector", "acme/lists", "--endpoint", server.url],
                                  capture_output=True, text=True, timeout=120, check=False,
                                  env={**__import__("os").environ, "HF_HUB_OFFLINE": "0"})
            assert done.returncode == EXIT_INVALID and _one_line(done.stderr), done.stderr
            assert name in done.stderr
        assert not HeaderCache(endpoint=server.url).holds("acme/lists")


def test_real_documents_sit_inside_their_budgets() -> None:
    """Real files from fixtures/realdata (their SOURCE.txt names each) and the bundled snapshots pass."""
    from inspector.safeio import check_document

    root = Path(__file__).resolve().parent.parent
    seen = 0
    for path in [*root.glob("fixtures/realdata/*/*.json"), *root.glob("inspector/snapshots/*/*.json")]:
        if path.name.endswith(".json") and path.name != "manifest.json":
            check_document(path.read_bytes(), path.name, str(path))
            seen += 1
    assert seen >= 20


def test_a_listing_of_empty_lists_or_of_too_many_files_is_refused(online: None) -> None:
    """A 32 MiB listing of ``[]`` cost 1.0 GB parsed; 860,342 one-name files 17 s. Now the values are counted
    before parsing (transport.LISTING_VALUES) and the files (hub.MAX_LISTED_FILES)."""
    from inspector.errors import InspectorError
    from inspector.safeio import parse_json_object
    from inspector.sources.hub import MAX_LISTED_FILES, repo_files
    from inspector.sources.transport import LISTING_VALUES, Hub, HubOptions

    with pytest.raises(InspectorError, match="JSON values"):
        parse_json_object(b'{"sha": "' + b"0" * 40 + b'", "x": [' + b"[]," * LISTING_VALUES + b"[]]}", "listing",
                          max_values=LISTING_VALUES)
    many = {"sha": "0" * 40, "siblings": [{"rfilename": f"f{i}"} for i in range(MAX_LISTED_FILES + 1)]}
    with pytest.raises(InspectorError, match=f"more than the {MAX_LISTED_FILES:,}"):
        repo_files(Hub(HubOptions(endpoint="http://127.0.0.1:9")), many, "acme/x")


# --- the declared bases read under one budget ---------------------------------------------------------------------


def _declaring(folder: Path, bases: list[str]) -> Path:
    card = ("---\nbase_model:\n" + "".join(f"- {b}\n" for b in bases) + "---\n").encode()
    return _model(folder, card=card)


def test_eleven_declared_bases_are_ten_read_and_one_named(cli, tmp_path: Path) -> None:
    """A card may declare more bases than a run compares (MAX_CANDIDATES, 10): it was a usage error the user did
    not make (exit 2), and read none. Now the first ten are tried and the eleventh named as not read."""
    from inspector.api_lineage import MAX_CANDIDATES

    folder = _declaring(tmp_path / "m", [f"org/m{i}" for i in range(MAX_CANDIDATES + 1)])
    result = cli("lineage", str(folder), "--json")
    assert result.code == 0, result.err
    rows = result.json()["candidates"]
    assert [r["model"] for r in rows] == [f"org/m{i}" for i in range(MAX_CANDIDATES + 1)]
    assert all("could not be read" in r["why"] for r in rows[:MAX_CANDIDATES])  # offline here: each tried
    assert rows[-1]["why"].startswith(f"not read: a run compares at most {MAX_CANDIDATES} candidates")


def _base_repo(server, repo: str, tensors: int) -> int:
    """A base of ``tensors`` small tensors, each in a layer of its own; its header's bytes."""
    from inspector.formats.safetensors import encode_header

    entries = [(f"model.layers.{i}.mlp.up_proj.weight", "F32", (2,)) for i in range(tensors)]
    blob, data = encode_header(entries)
    server.add_files(repo, {"model.safetensors": blob + b"\0" * data,
                            "config.json": json.dumps({"model_type": "llama"}).encode()})
    return len(blob)


def test_the_declared_bases_share_one_header_budget(cli, tmp_path: Path, online: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Three declared bases each as big as the run's budget allows once: one 300,000-tensor header a base cost
    23.5 s and 404 MB for one, 50 s and 774 MB for three, as each had a budget of its own. Now the first is read,
    the second refused while it is read (the Hub's reads within what is left), the third not opened."""
    from hubserver import HubServer

    import inspector.api_lineage as run_module

    with HubServer() as server:
        sizes = [_base_repo(server, f"acme/b{i}", 3_000) for i in range(3)]
        folder = _declaring(tmp_path / "m", ["acme/b0", "acme/b1", "acme/b2"])
        model_header = int.from_bytes((folder / "model.safetensors").read_bytes()[:8], "little") + 8
        monkeypatch.setattr(run_module, "RUN_HEADER_BUDGET", model_header + sizes[0] + sizes[1] // 2)
        result = cli("lineage", str(folder), "--json", "--endpoint", server.url)
        read = [r.path for r in server.requests("GET") if r.path.endswith("model.safetensors")]
    assert result.code == 0, result.err
    rows = {r["model"]: r for r in result.json()["candidates"]}
    assert rows["acme/b0"]["checkpoint"] is not None
    assert "what the run has left of its headers' budget" in rows["acme/b1"]["why"]
    assert "budget" in rows["acme/b2"]["why"], rows["acme/b2"]["why"]
    # the third base: its first bytes, read early at the branch (one bounded range), then refused
    assert sum("/acme/b2/" in p for p in read) <= 1, read


def test_the_declared_bases_share_one_deadline(cli, tmp_path: Path, online: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten slow declared bases each had a Hub deadline of their own (83–97 s in all). Now the run has one: the
    bases after it passes are named as not read, and never asked for (counted in requests, not timed)."""
    from hubserver import HubServer

    monkeypatch.setenv("INSPECTOR_HUB_DEADLINE", "2")
    with HubServer() as server:
        for i in range(10):
            _base_repo(server, f"acme/s{i}", 10)
        server.state.latency = 0.25
        folder = _declaring(tmp_path / "m", [f"acme/s{i}" for i in range(10)])
        result = cli("lineage", str(folder), "--json", "--endpoint", server.url)
        asked = {r.path.split("/")[3] if r.path.startswith("/api/") else r.path.split("/")[2]
                 for r in server.requests()}
    assert result.code == 0, result.err
    rows = result.json()["candidates"]
    late = [r for r in rows if "deadline" in (r["why"] or "")]
    assert late and late[-1]["model"] == "acme/s9", [r["why"] for r in rows]
    assert "s9" not in asked, asked


# --- hashes from a listing never taken alone when --exact reads bytes ---------------------------------------------


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two models of the same names and shapes, every element of one tensor changed (a fine-tune's shape)."""
    a = _model(tmp_path / "a", seed=1)
    b = tmp_path / "b"
    b.mkdir()
    rng = np.random.default_rng(1)
    up = rng.normal(0, 0.02, (64, 32)).astype(np.float32)
    save_file({"model.layers.0.mlp.up_proj.weight": up + np.float32(0.01) * rng.normal(0, 1, up.shape).astype(
        np.float32), "model.layers.0.input_layernorm.weight": np.ones(32, np.float32)}, str(b / "model.safetensors"))
    (b / "config.json").write_bytes((a / "config.json").read_bytes())
    return a, b


def test_exact_does_not_take_a_lying_listing_alone(cli, tmp_path: Path, online: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint that names B's weight file with A's sha256: lineage said "identical, no tensor byte read" even
    with --exact, while diff --values found the tensor changed. With --exact the values decide and the listing
    is named wrong; without it the listing is the Hub's proof, as documented (docs/lineage.md)."""
    from hubserver import HubServer, VFile

    a, b = _pair(tmp_path)
    with HubServer() as server:
        for repo, folder in (("acme/a", a), ("acme/b", b)):
            server.add_files(repo, {f.name: VFile(f.stat().st_size, f.read_bytes(), f.suffix == ".safetensors")
                                    for f in folder.iterdir()})
        honest = server.state.repos["acme/a"].resolve("main").files["model.safetensors"].etag
        siblings = [{"rfilename": n, "size": f.size, **({"lfs": {"sha256": honest, "size": f.size}} if f.lfs else {})}
                    for n, f in sorted(server.state.repos["acme/b"].resolve("main").files.items())]
        server.state.listing_patch["acme/b"] = {"siblings": siblings}
        exact = cli("lineage", "acme/b", "acme/a", "--exact", "--json", "--endpoint", server.url)
        # a fresh header cache: a cached repo keeps no listing hashes yet (issue 69), which would hide the claim
        import huggingface_hub.constants as constants

        monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "home2"))
        trusting = cli("lineage", "acme/b", "acme/a", "--json", "--endpoint", server.url).json()
    assert trusting["candidates"][0]["relation"] == "identical"
    assert exact.code == 0, exact.err
    row = exact.json()["candidates"][0]
    assert row["relation"] != "identical" and row["tensors_changed"] >= 1, row
    assert "the listing is wrong" in row["why"], row["why"]
    assert exact.json()["bytes_read"] > 0


def test_exact_counts_the_bytes_it_hashes(cli, tmp_path: Path) -> None:
    """Local copies hashed whole: bytes_read was 0 and the line said "no tensor byte read"; now the hashed bytes
    are counted, each file's size once a side (os.stat)."""
    a = _model(tmp_path / "a", seed=3)
    b = tmp_path / "b"
    b.mkdir()
    for f in a.iterdir():
        (b / f.name).write_bytes(f.read_bytes())
    doc = cli("lineage", str(b), str(a), "--exact", "--json").json()
    assert doc["candidates"][0]["relation"] == "identical"
    assert doc["bytes_read"] >= 2 * (a / "model.safetensors").stat().st_size


# --- the rule: every parser of untrusted text has a depth or size cap ------------------------------------------------

#: each place that turns text or bytes from outside into objects, and the cap it holds (a name its source must
#: use): a new parser is added here with its cap, or the rule below fails
PARSERS: dict[tuple[str, str], str] = {
    ("inspector/safeio.py", "parse_json_plain"): "_depth_within",  # json.loads: depth after, values before
    ("inspector/safeio.py", "_msgspec_decode"): "msgspec",  # its caller, parse_json, checks _depth_within
    ("inspector/safeio.py", "parse_yaml"): "max_depth",  # the composer's depth, counted as it composes
    ("inspector/safeio.py", "Capped"): "max_depth",  # parse_yaml's loader
    # a safetensors header: at most MAX_HEADER_BYTES (read_header_length), a parse nested too deep refused by name
    ("inspector/formats/safetensors.py", "_decode_entries"): "RecursionError",
    ("inspector/formats/safetensors.py", "_canonical_metadata"): "RecursionError",
    ("inspector/formats/safetensors.py", "_find_duplicates"): "RecursionError",
    # a torch pickle: scanned opcode by opcode first (pickle_scan: its stack and memo bounded), its objects walked
    # within MAX_DEPTH after; the unpickler itself builds no class a state dict does not need, and keeps a stack
    ("inspector/formats/torch_unpickle.py", "StateDictUnpickler"): "find_class",
    ("inspector/formats/torch_pickle.py", "_RestrictedData"): "find_class",  # data pickles: no class built
}
PARSING_CALLS = {("json", "loads"), ("json", "load"), ("yaml", "load"), ("yaml", "safe_load"), ("yaml", "full_load"),
                 ("yaml", "unsafe_load"), ("pickle", "loads"), ("pickle", "load"), ("marshal", "loads"),
                 ("tomllib", "loads"), ("ast", "literal_eval"), ("json", "decode"), ("json", "JSONDecoder")}
PARSING_BASES = {"Unpickler", "SafeLoader", "Loader", "FullLoader", "BaseLoader", "JSONDecoder", "Decoder"}


def parser_sites(path: Path, text: str) -> list[tuple[str, str]]:
    """(the file, the function or class) of every parse of outside text in ``text``: a call of a parsing
    function, a subclass of a parsing class."""
    sites = []
    tree = ast.parse(text)
    for scope in ast.walk(tree):
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(scope, ast.ClassDef) and any(
                (b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")) in PARSING_BASES
                for b in scope.bases):
            sites.append((str(path), scope.name))
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
                if (name, node.func.attr) in PARSING_CALLS:
                    sites.append((str(path), scope.name))
    return sorted(set(sites))



def test_every_parser_of_outside_text_has_its_cap() -> None:
    """Every place the package parses text or bytes from outside is in PARSERS, and its source uses the cap named
    there (a parse nested without end raised RecursionError out of lineage: exit 70)."""
    root = Path(__file__).resolve().parent.parent
    found: set[tuple[str, str]] = set()
    for path in sorted((root / "inspector").rglob("*.py")):
        text = path.read_text()
        for file, scope in parser_sites(path.relative_to(root), text):
            found.add((file, scope))
    unknown = found - set(PARSERS)
    assert not unknown, f"parsers with no cap named in PARSERS: {sorted(unknown)}"
    for (file, scope), cap in PARSERS.items():
        tree = ast.parse((root / file).read_text())
        node = next(n for n in ast.walk(tree) if getattr(n, "name", None) == scope)
        assert cap in ast.unparse(node), (file, scope, cap)


def test_the_parser_rule_catches_a_planted_parser() -> None:
    planted = "import json\nimport yaml\ndef read(raw):\n    return json.loads(raw)\n" \
              "class L(yaml.SafeLoader):\n    pass\n"
    assert parser_sites(Path("inspector/planted.py"), planted) == [("inspector/planted.py", "L"),
                                                                   ("inspector/planted.py", "read")]


# --- classification whose cost does not grow with distinct name patterns -------------------------------------------


def _runs_inside_parts(names: list[str]) -> list[tuple[str, str]]:
    """Pairs of names that differ only in a run of two or more digits inside one part: each real name with a run
    appended to (and set inside) each of its parts, once as ``12`` and once as ``98765``."""
    pairs = []
    for name in names:
        parts = name.split(".")
        for i, part in enumerate(parts):
            if part.isdigit():
                continue
            for where in (len(part), len(part) // 2):
                a, b = ([*parts[:i], part[:where] + run + part[where:], *parts[i + 1:]] for run in ("12", "98765"))
                pairs.append((".".join(a), ".".join(b)))
    return pairs


def test_runs_of_digits_inside_a_part_read_alike_to_the_tables() -> None:
    """The rule the shared answers rest on (roles._RUNS): every run of two or more digits inside a part reads the
    same to the kind and role tables, as the tables say it (``_kind_and_role_plain``: each row's regex searched in
    the name), over every bundled snapshot's names with runs set into each part."""
    from test_roles import _bundled_names

    from inspector.analysis.facts import roles

    names = sorted({n for ns in _bundled_names().values() for n in ns[:400]})
    pairs = _runs_inside_parts(names)
    assert len(pairs) > 20_000
    differ = [(a, b) for a, b in pairs if roles._kind_and_role_plain(a) != roles._kind_and_role_plain(b)]
    assert differ == []


def test_names_that_differ_in_a_run_share_the_classifiers_answer_and_stay_exact() -> None:
    """``layers.N.mlp.wN`` (a header whose every tensor holds its own run, in its own layer): 38 µs a tensor read, a
    table search a name. Now the table is searched once a digit key (counted, not timed), and every answer is the
    plain classifier's."""
    from inspector.analysis.facts import roles

    names = [f"model.layers.{i}.mlp.w{i}.weight" for i in range(20_000)]
    names += [f"blk{i}.layers.{i}.mlp.fc{i}.bias" for i in range(3_000)]  # a run before the layer: not shared
    names += [f"model.layers.{i}.mlp.w1.weight" for i in range(10)]  # a one-digit run keeps its own role
    calls = 0
    real = roles._fast_entry

    def counted(name: str, key: bytes) -> object:
        nonlocal calls
        calls += 1
        return real(name, key)

    for memo in (roles._FAST, roles._SHAPES, roles._NUMBERS):
        memo.clear()
    roles._fast_entry = counted  # type: ignore[assignment]
    try:
        got = roles.classify_all(names)
    finally:
        roles._fast_entry = real
    assert got == [roles.classify_plain(n) for n in names]
    assert got[0].role == "other" and got[-1].role == "mlp.gate"
    # 20,000 names of five digit keys searched once a key (and once a one-digit run); the 3,000 whose run sits in
    # the layer stack each searched (the stack's text is theirs)
    assert calls <= 5 * 2 + 3_000 + 10, calls


# --- a symlinked snapshot folder heals online as the other damaged entries do ---------------------------------------


def test_a_cache_entry_that_is_a_link_out_is_read_again_online_and_replaced(cli, tmp_path: Path, online: None) -> None:
    """A header-cache snapshot folder planted as a symbolic link out of the cache failed online (exit 4: "points
    outside") where every other damaged entry is read again. Now it is taken as absent, read from the Hub, and the
    link replaced by the fresh snapshot (what it pointed to untouched); a later offline run reads that."""
    from hubserver import HubServer

    from inspector.sources.header_cache import HeaderCache

    folder = _model(tmp_path / "m")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the cache's")
    with HubServer() as server:
        sha = server.add_files("acme/linked", {f.name: f.read_bytes() for f in folder.iterdir()})
        cache = HeaderCache(endpoint=server.url)
        entry = cache._repo("acme/linked") / "snapshots" / sha
        entry.parent.mkdir(parents=True)
        entry.symlink_to(elsewhere, target_is_directory=True)
        cache.set_ref("acme/linked", "main", sha)
        first = cli("acme/linked", "--json", "--endpoint", server.url)
        assert first.code == 0, first.err
        assert not entry.is_symlink() and entry.is_dir()
        assert (elsewhere / "keep.txt").read_text() == "not the cache's"
        again = cli("acme/linked", "--json", "--endpoint", server.url, "--offline")
    assert again.code == 0, again.err
    assert again.json()["totals"]["parameters"] == first.json()["totals"]["parameters"] == 64 * 32 + 32


def test_a_header_of_more_layers_than_any_model_is_refused(cli, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Two headers of 350,000 one-tensor layers cost a plain diff 17 s and 783 MB (measured, bench_hostile): each
    layer is a record in the structure, the collapse and the pairing. Past MAX_LAYERS (131,072; real models name a
    few hundred) the header is refused by name, one line, exit 4; at it, read (here with the cap made 100)."""
    from helpers import write_layout

    import inspector.analysis.facts.stats as stats

    monkeypatch.setattr(stats, "MAX_LAYERS", 100)
    for n, code in ((100, 0), (101, EXIT_INVALID)):
        folder = tmp_path / str(n)
        write_layout(folder / "model.safetensors", [(f"model.layers.{i}.mlp.w{i}.weight", "F32", (1,))
                                                    for i in range(n)])
        result = cli(str(folder), "--json")
        assert result.code == code, result.err
        if code:
            assert _one_line(result.err) and "names 101 layers, more than the 100" in result.err, result.err
        else:
            assert result.json()["totals"]["tensors"] == 100
