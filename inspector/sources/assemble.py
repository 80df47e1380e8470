"""The one assembly of a checkpoint's parts, for every source: which index, which weight files,
which shards an index names, small JSON documents.

The local folder, the HF cache and the Hub list their files and call these; none has a rule of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from inspector import repos
from inspector.errors import RAISE, HeaderError, InvalidCheckpointError, NotFoundError, ProblemSink, SeveralFiles
from inspector.formats.gguf import check_split, split_parts
from inspector.formats.registry import NOT_WEIGHTS, SAFETENSORS, reader_named, readers, weight_suffixes
from inspector.model import (
    SIDE_FILES,
    Checkpoint,
    Component,
    Composition,
    FileEntry,
    Phase,
    Problems,
    Progress,
    Provenance,
    SideFiles,
    WeightFile,
    natural_key,
)
from inspector.repos import Listed, RepoKind
from inspector.safeio import check_document, parse_document, parse_json, relative_name

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

#: the weight files diffusers and transformers load by default from a component folder (a variant,
#: ``diffusion_pytorch_model.fp16.safetensors``, only when asked for)
DEFAULT_WEIGHTS: Final = ("diffusion_pytorch_model.safetensors", "model.safetensors")
#: the small files beside the weights that describe the tokenizer, chat template and generation
#: defaults (``analysis.facts.tokenizer`` reads them); tokenizer.json only up to ``TOKENIZER_JSON_BUDGET``
TOKENIZER_FILES: Final = ("tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
                          "chat_template.json", "chat_template.jinja")
TOKENIZER_JSON: Final = "tokenizer.json"
#: tokenizer.json is read for the vocabulary size from a folder when it is at most this big; never
#: from the Hub (Llama 3's is 9 MB, Qwen3's 11 MB, Gemma 3's 33 MB: megabytes fetched for one figure,
#: against "headers only"): there the size is the lower bound tokenizer_config.json's added tokens give
TOKENIZER_JSON_BUDGET: Final = 40 * 1024 * 1024


def json_object(raw: bytes | str, name: str, field: str | None = None) -> dict[str, Any]:
    """A small JSON file of a checkpoint (config, index, side file) that must be an object: the one
    bounded loader, within the budget of a document of its name (``safeio.parse_document``)."""
    return parse_document(raw, name, field or name)


def pick_index(names: Iterable[str]) -> str | None:
    """The safetensors index of a folder or repo: ``model.safetensors.index.json``, else the first
    other top-level ``*.safetensors.index.json`` (one rule for every source)."""
    top = sorted(n for n in names if "/" not in n and n.endswith(".safetensors.index.json"))
    return "model.safetensors.index.json" if "model.safetensors.index.json" in top else (top[0] if top else None)


def weight_files(names: Iterable[str], where: str) -> list[str]:
    """The top-level weight files to count, without an index: those of the first format in the
    registry's order that the folder has (safetensors, then GGUF, then torch pickles; trainer state
    saved beside the weights is not a state dict of the model). Several files of a format whose
    files are alternatives (GGUF: one model in several quantisations) are never added up: the
    caller is asked to name one."""
    top = sorted((n for n in names if "/" not in n and not n.startswith(NOT_WEIGHTS)), key=natural_key)
    for reader in readers():  # in the registry's order of preference
        found = [n for n in top if n.endswith(reader.suffixes)]
        if reader.alternatives:  # one model a file, or a split model's parts (named by its first)
            found = list(dict.fromkeys((split_parts(n) or [n])[0] for n in found))
        if len(found) > 1 and reader.alternatives:
            shown = ", ".join(found[:6]) + (" …" if len(found) > 6 else "")
            raise SeveralFiles(f"{where}: {len(found)} {reader.name.upper()} files ({shown}), usually one model in "
                               "several quantisations: name one", found, where, hint=f"inspect {where}/{found[0]}")
        if found:
            return split_set(found[0], top, where) if reader.alternatives else found
    return []


def split_set(name: str, available: Iterable[str], where: str) -> list[str]:
    """The files one model ``name`` is read from: itself, or every part of the split model it is a part of
    (``formats.gguf.split_parts``), as llama.cpp loads them; a part that is not there is an invalid checkpoint
    naming it (a part read alone was half a model: half its parameters, "tied embeddings")."""
    parts = split_parts(name)
    if parts is None:
        return [name]
    have = set(available)
    missing = [p for p in parts if p not in have]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise InvalidCheckpointError(
            f"{where}: {name} is one of the {len(parts)} parts of a split GGUF model; {missing[0]}{more} is not here",
            hint="llama.cpp loads every part together: download all of them")
    return parts


def index_shards(index: Mapping[str, Any], available: Iterable[str], where: str, index_name: str | None,
                 problems: ProblemSink = RAISE) -> list[str]:
    """The shards an index names, in natural order; an invalid weight_map or a named shard that
    is not available is an invalid checkpoint (``inspect audit`` lists every such problem: its
    collecting sink asks for the names whether present or not)."""

    weight_map = index.get("weight_map")
    # every value a string: the set of their types, in C (a parsed index holds plain str, never a subclass)
    if not isinstance(weight_map, dict) or not set(map(type, weight_map.values())) <= {str}:
        raise InvalidCheckpointError(f"{where}: {index_name or 'the index'} has no valid weight_map")
    names = sorted((relative_name(v, f"{where}: {index_name or 'the index'}: weight_map")
                    for v in set(weight_map.values())), key=natural_key)  # 163 names, not 91,991 entries
    have = set(available)
    missing = [n for n in names if n not in have]
    if missing and not problems.collects:
        raise InvalidCheckpointError(
            f"{where}: the index names {len(missing)} shard(s) it does not have, first {missing[0]!r}",
            hint="`inspect audit` lists every inconsistency",
        )
    return names


# --- the one assembly --------------------------------------------------------------------------------

T = TypeVar("T")


class Source(Protocol):
    """A folder or a repo at one commit, as the assembly sees it: its listing, small files whole,
    weight files through their format's reader, and a way to run many reads."""

    @property
    def where(self) -> str:
        """The folder or repo id, for messages."""
        ...

    @property
    def remote(self) -> bool:
        """Whether every read is a round trip (the index's hints then size the first reads)."""
        ...

    @property
    def problems(self) -> ProblemSink:
        """Where this run's readers send what they could read past (``errors.ProblemSink``)."""
        ...

    def small(self, name: str) -> bytes:
        """A small file (config, index, side file) whole, within the JSON budget."""
        ...

    def prefetch(self, names: list[str]) -> None:
        """These small files will be asked for: a remote source starts them at once."""
        ...

    def read_file(self, name: str, *, first: int | None) -> WeightFile:
        """One weight file's records, through ``Reader.read`` over a byte source of its own."""
        ...

    def each(self, read: Callable[[str], T], names: list[str]) -> list[T]:
        """``read`` over ``names``, results in order (concurrently where the source pays round trips)."""
        ...


@dataclass(frozen=True, slots=True)
class Parts:
    """What the assembly read of a folder or repo: everything a Checkpoint holds but where it came from."""

    index: dict[str, Any] | None
    index_name: str | None
    index_error: str | None
    headers: tuple[WeightFile, ...]
    errors: tuple[HeaderError, ...]
    config: dict[str, Any] | None
    side: dict[str, dict[str, Any]]
    #: the small files read, as read (a header snapshot keeps them)
    stored: dict[str, bytes]
    #: a multi-component repo's parts: each as its index lists it, with what was read there (None: no weights)
    components: tuple[tuple[Listed, Parts | None], ...] = ()
    composition: Composition | None = None  # the kind and index the components came from


class Prefixed:
    """One folder of a source as a source of its own (a pipeline's ``unet/``): names relative to
    the folder; weight files keep their full path in the records."""

    def __init__(self, source: Source, folder: str) -> None:
        self.source, self.prefix = source, folder + "/"
        self.where = f"{source.where}/{folder}"
        self.remote = source.remote
        self.problems = source.problems

    def small(self, name: str) -> bytes:
        return self.source.small(self.prefix + name)

    def prefetch(self, names: list[str]) -> None:
        self.source.prefetch([self.prefix + n for n in names])

    def read_file(self, name: str, *, first: int | None) -> WeightFile:
        return self.source.read_file(self.prefix + name, first=first)

    def each(self, read: Callable[[str], T], names: list[str]) -> list[T]:
        return self.source.each(read, names)


def folders(files: Mapping[str, int | None]) -> dict[str, dict[str, int | None]]:
    """Every top-level folder's files, named relative to it, in one pass over the listing (a
    component's folder is one name: 4,000 components each scanning the whole listing once took
    6.8 s)."""
    out: dict[str, dict[str, int | None]] = {}
    for name, size in files.items():
        folder, slash, rest = name.partition("/")
        if slash:
            out.setdefault(folder, {})[rest] = size
    return out


#: the first read of a pipeline component's weights (no index says its header's size): diffusion
#: headers are larger than a language model's (SD-1.5's UNet 84 kB, SDXL's about 200 kB), and a short
#: first read costs a second round trip through the CDN redirect (issue 39)
COMPONENT_FIRST_READ: Final = 256 * 1024
#: components of a remote pipeline read at once (each then shares the repo's pool of range requests):
#: the threads one run starts for components, however many are listed
COMPONENT_WORKERS: Final = 8


def prefixed(header: WeightFile, component: str) -> WeightFile:
    """A component's records with every tensor named ``component.name`` (the whole repo's view)."""
    return replace(header, tensors=tuple(t._replace(name=f"{component}.{t.name}") for t in header.tensors))


def stored_files(parts: Parts) -> dict[str, bytes]:
    """Every small file the assembly read, components' included under their folder (``unet/config.json``):
    what a header snapshot stores so that the same assembly can read it again."""
    out = dict(parts.stored)
    for listed, part in parts.components:
        if part is not None:
            out.update({f"{listed.folder}/{n}": raw for n, raw in stored_files(part).items()})
    return out


def small_files(parts: Parts) -> dict[str, bytes]:
    """The tokenizer, chat-template and generation files the assembly read (``Checkpoint.side.raw``)."""
    return {n: raw for n, raw in parts.stored.items() if n in TOKENIZER_FILES or n == TOKENIZER_JSON}


def checkpoint_of(parts: Parts, *, label: str, provenance: Provenance, files: tuple[FileEntry, ...]) -> Checkpoint:
    """The checkpoint an assembly read: its headers, config and index, the small files beside them and
    what the audit's sink collected, with its components."""
    return with_components(Checkpoint(
        label=label, provenance=provenance, headers=parts.headers, config=parts.config, index=parts.index,
        files=files, side=SideFiles(parts.index_name, parts.side, small_files(parts)),
        problems=Problems(parts.errors, parts.index_error)), parts)


def with_components(base: Checkpoint, parts: Parts) -> Checkpoint:
    """``base`` (the repo's checkpoint) with its components, each a checkpoint of its own with its own
    config, index and files, labelled ``repo/component``."""
    if not parts.components:
        return base
    out = []
    below: dict[str, list[FileEntry]] = {}
    for f in base.files:  # each component's files, in one pass
        folder, slash, _ = f.path.partition("/")
        if slash:
            below.setdefault(folder, []).append(f)
    for listed, part in parts.components:
        name, sub = listed.folder, None
        if part is not None:
            sub = replace(base, label=f"{base.label}/{name}",
                          provenance=replace(base.provenance, location=f"{base.provenance.location}/{name}", notes=()),
                          headers=part.headers, config=part.config, index=part.index,
                          side=SideFiles(part.index_name, part.side, small_files(part)),
                          problems=Problems(part.errors, part.index_error),
                          files=tuple(below.get(name, ())), components=(), composition=None)
        out.append(Component(name, listed.library, listed.class_name, sub))
    return replace(base, components=tuple(out), composition=parts.composition)


def assemble(source: Source, files: Mapping[str, int | None], *, only: str | None = None,
             progress: Progress | None = None, depth: int = 0) -> Parts:
    """The one assembly of a checkpoint from a folder or repo listing (``files``: every file with its
    size): the index (``pick_index``) and the shards it names, else the weight files of the first
    format the listing has (``weight_files``); each shard's records; config.json and the side files.
    ``only``: one weight file (one GGUF of several). The source's sink decides what a problem does
    (``errors.ProblemSink``): the audit's collects header errors, a broken index and missing shards,
    and has top-level safetensors files the index does not name read too."""
    top = {p for p in files if "/" not in p}
    index_name = pick_index(top)
    if only is None and index_name is None and depth == 0 and \
            (composite := _composite(source, files, top, progress=progress)) is not None:
        return composite
    smalls = [n for n in ("config.json", *SIDE_FILES, *TOKENIZER_FILES) if n in files]
    size = files.get(TOKENIZER_JSON) if TOKENIZER_JSON in files else None
    if size is not None and not source.remote and size <= TOKENIZER_JSON_BUDGET and depth == 0:
        smalls.append(TOKENIZER_JSON)
    source.prefetch(smalls + ([index_name] if index_name else []))
    index_raw = source.small(index_name) if index_name else None
    index: dict[str, Any] | None = None
    index_error: str | None = None
    try:
        index = json_object(index_raw, index_name or "index", f"{source.where}: {index_name}") \
            if index_raw is not None else None
        shards = _shards(source, files, top, index, index_name, only)
    except SeveralFiles as several:
        several.listing = dict(files)  # what `--files` lists, with nothing read
        raise
    except InvalidCheckpointError as exc:
        if index_raw is None:
            raise
        index, index_error = None, source.problems.index(exc)
        shards = _shards(source, files, top, None, None, only)
    if source.problems.collects:  # the audit reports shards the index does not name, and does not read missing ones
        shards = sorted({*(s for s in shards if s in files), *(p for p in top if p.endswith(".safetensors"))},
                        key=natural_key)
    first_reads = _first_reads(source, index, shards, depth)
    done = 0
    if progress:
        progress(Phase.HEADERS, 0, len(shards))

    def read(name: str) -> WeightFile | HeaderError:
        nonlocal done
        try:
            result: WeightFile | HeaderError = source.read_file(name, first=first_reads.get(name))
        except HeaderError as exc:
            result = source.problems.header(exc)
        done += 1  # each's reads may run on threads: the count only feeds a progress bar
        if progress:
            progress(Phase.HEADERS, done, len(shards))
        return result

    results = source.each(read, shards)
    stored = {n: source.small(n) for n in smalls}
    for n, raw in stored.items():  # every document within its budget before it is parsed, kept or cached
        check_document(raw, n, f"{source.where}: {n}")
    if index_raw is not None and index_name:
        stored[index_name] = index_raw
    headers = tuple(r for r in results if isinstance(r, WeightFile))
    config = _config(stored, headers, source.where)
    parts = Parts(
        index=index, index_name=index_name, index_error=index_error, headers=headers,
        errors=tuple(r for r in results if isinstance(r, HeaderError)), config=config,
        side={n: json_object(stored[n], n, f"{source.where}: {n}") for n in SIDE_FILES if n in stored},
        stored=stored,
    )
    joined = next((k for k in repos.kinds() if not k.whole and k.index_file in top), None)
    if only is None and depth == 0 and joined is not None:
        parts = _joined(source, files, parts, joined)
    return parts


def _config(stored: Mapping[str, bytes], headers: tuple[WeightFile, ...], where: str) -> dict[str, Any] | None:
    """The model's config.json, else the one its one weight file carries (GGUF metadata; a split model's, in its
    first part, read beside every part's tensors, each part held to the split's rule)."""
    split = len(headers) > 1 and split_parts(headers[0].file) == [h.file for h in headers]
    if split:
        check_split(list(headers))
    if "config.json" in stored:
        return json_object(stored["config.json"], "config.json", f"{where}: config.json")
    if not (len(headers) == 1 or split) or (reader := reader_named(headers[0].format)) is None:
        return None
    return reader.config(replace(headers[0], tensors=tuple(t for h in headers for t in h.tensors)) if split
                         else headers[0])


def _has_weights(names: Iterable[str]) -> bool:
    suffixes = tuple(s for r in readers() for s in r.suffixes)
    return any(n.endswith(suffixes) and not n.startswith(NOT_WEIGHTS) for n in names)


def _component(source: Source, sub: Mapping[str, int | None], folder: str) -> Parts | None:
    """What a component folder holds (``sub``: its files), read as its library loads it by default;
    None without weights."""
    top = {p for p in sub if "/" not in p}
    if pick_index(top) is None and not _has_weights(top):
        return None
    only = None
    if pick_index(top) is None:
        default = [n for n in DEFAULT_WEIGHTS if n in top]
        variants = sorted(n for n in top if n.endswith(".safetensors"))
        only = default[0] if default else (variants[0] if len(variants) > 1 else None)
    return assemble(Prefixed(source, folder), sub, only=only, depth=1)


def _each_component(source: Source, files: Mapping[str, int | None], listed: list[Listed]) -> list[Parts | None]:
    """Every component read, in order; from a remote source all at once on threads of their own (each
    component's small files and headers then share the source's pool), so a pipeline costs the round
    trips of one component, not of each in turn."""
    below = folders(files)
    if not source.remote or len(listed) < 2:
        return [_component(source, below.get(c.folder, {}), c.folder) for c in listed]
    # deferred: 5 ms at import (concurrent.futures)
    from concurrent.futures import ThreadPoolExecutor

    workers = min(len(listed), COMPONENT_WORKERS)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="inspector-component") as pool:
        return list(pool.map(lambda c: _component(source, below.get(c.folder, {}), c.folder), listed))


#: the most folders with weights a remote pipeline's listing may have for their reads to start beside
#: the index's (``_whole``); past it, only the folders the index lists are read
MAX_EARLY_COMPONENTS: Final = 16


def _early_components(source: Source, below: Mapping[str, Mapping[str, int | None]]
                      ) -> tuple[dict[str, Future[Parts | None]], ThreadPoolExecutor] | None:
    """The reads of every folder with weights in a remote pipeline's listing, started before
    model_index.json is in: a folder's read (``_component``) depends on its files alone, and diffusers
    pipelines list every such folder, so the components cost no round trip after the index's (SD-1.5:
    3 round trips → 2). None for a local source, or a listing of more than ``MAX_EARLY_COMPONENTS``
    such folders (the index then decides what is read)."""
    if not source.remote:
        return None
    weighty = [name for name, sub in below.items()
               if (top := [p for p in sub if "/" not in p]) and (pick_index(top) is not None or _has_weights(top))]
    if not weighty or len(weighty) > MAX_EARLY_COMPONENTS:
        return None
    # deferred: 5 ms at import (concurrent.futures)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=min(len(weighty), COMPONENT_WORKERS),
                              thread_name_prefix="inspector-component")
    return {name: pool.submit(_component, source, below[name], name) for name in weighty}, pool


def _composite(source: Source, files: Mapping[str, int | None], top: set[str], *,
               progress: Progress | None) -> Parts | None:
    """A repo whose index names the folders that hold its weights (``repos``): a kind whose components are the
    repo (a diffusers pipeline), or one whose components join a top level with no weights of its own (a
    sentence-transformers model whose transformer is a folder, ``0_Transformer/``, as 1.x saved it). None: read
    the top level as usual (a joining kind's components join it at the end of the assembly)."""
    kind = next((k for k in repos.kinds() if k.index_file in top), None)
    if kind is None:
        return None
    if kind.whole:
        return _whole_if_any(source, files, top, kind, progress=progress)
    if _has_weights(top):
        return None
    parts = _joined(source, files, Parts(None, None, None, (), (), None, {}, {}), kind)
    if not parts.headers:
        return None
    # the repo's config is the first component's that has one (the transformer's)
    config = next((p.config for _, p in parts.components if p is not None and p.config is not None), None)
    return replace(parts, config=config)


def _whole_if_any(source: Source, files: Mapping[str, int | None], top: set[str], kind: RepoKind, *,
                  progress: Progress | None) -> Parts | None:
    """A folder with a whole-repo kind's index is what its library loads from it: weight files beside it
    (SD-1.5's v1-5-pruned*.safetensors) are single-file alternatives, not part of it. None when no
    component has weights but the top level has (those are read)."""
    try:
        return _whole(source, files, kind, progress=progress)
    except NotFoundError:
        if not _has_weights(top):
            raise
        return None


def _listed(source: Source, kind: RepoKind) -> tuple[bytes, list[Listed], str | None]:
    """A kind's index as read, the components it lists and the class it names."""
    raw = source.small(kind.index_file)
    check_document(raw, kind.index_file, f"{source.where}: {kind.index_file}")
    index = parse_json(raw, f"{source.where}: {kind.index_file}")
    return raw, kind.components(index, source.where), kind.class_name(index)


def _whole(source: Source, files: Mapping[str, int | None], kind: RepoKind, *, progress: Progress | None) -> Parts:
    """A repo that is its components (a diffusers pipeline): each component with weights read on its own; the
    whole repo's records are every component's, named ``component.tensor``."""
    below = folders(files)
    early = _early_components(source, below)
    try:
        raw, listed, cls_name = _listed(source, kind)
        if early is None:
            read = _each_component(source, files, listed)
        else:  # each listed folder's read, started early, taken in the index's order (its error, if any)
            read = [early[0][c.folder].result() if c.folder in early[0] else
                    _component(source, below.get(c.folder, {}), c.folder) for c in listed]
    finally:
        if early is not None:  # a folder the index does not list is read and set aside
            early[1].shutdown(wait=True)
    headers: list[WeightFile] = []
    errors: list[HeaderError] = []
    for done, (c, part) in enumerate(zip(listed, read, strict=True)):
        if part is not None:
            headers += [prefixed(h, c.folder) for h in part.headers]
            errors += part.errors
        if progress:
            progress(Phase.COMPONENTS, done + 1, len(listed))
    if all(p is None for p in read):
        raise NotFoundError(f"{source.where}: a {kind.described} ({kind.index_file}) whose components hold no weight "
                            "files this tool reads", hint="each component folder needs its .safetensors (or torch) "
                            "files")
    return Parts(index=None, index_name=None, index_error=None, headers=tuple(headers), errors=tuple(errors),
                 config=None, side={}, stored={kind.index_file: raw}, components=tuple(zip(listed, read, strict=True)),
                 composition=Composition(kind.name, cls_name))


def _joined(source: Source, files: Mapping[str, int | None], parts: Parts, kind: RepoKind) -> Parts:
    """A repo whose components join the model at its top level (a sentence-transformers model: a Dense head's
    weights join the transformer's)."""
    raw, listed, cls_name = _listed(source, kind)
    below = folders(files)
    read = [_component(source, below.get(c.folder, {}), c.folder) for c in listed]
    headers = list(parts.headers)
    for c, part in zip(listed, read, strict=True):
        if part is not None:
            headers += [prefixed(h, c.folder) for h in part.headers]
    return replace(parts, headers=tuple(headers), components=tuple(zip(listed, read, strict=True)),
                   composition=Composition(kind.name, cls_name),
                   stored={**parts.stored, kind.index_file: raw},
                   errors=parts.errors + tuple(e for p in read if p is not None for e in p.errors))


def _shards(source: Source, files: Mapping[str, int | None], top: set[str], index: Mapping[str, Any] | None,
            index_name: str | None, only: str | None) -> list[str]:
    where = source.where
    if only is not None:
        if only not in files:
            raise NotFoundError(f"{where}: no file {only!r} at this revision")
        return split_set(only, files, where)
    if index is not None:
        return index_shards(index, files, where, index_name, source.problems)
    names = weight_files(top, where)
    if names or source.problems.collects:
        return names
    others = sorted(p for p in files if p.endswith(weight_suffixes()))
    if others:
        raise InvalidCheckpointError(
            f"{where}: no weight files this tool reads (safetensors, GGUF or torch); it holds "
            f"{', '.join(others[:3])}{' …' if len(others) > 3 else ''}",
            hint="convert the checkpoint to safetensors, or look for a safetensors revision of it")
    raise NotFoundError(f"{where}: no weight files (safetensors, GGUF or torch) here")


def _first_reads(source: Source, index: Mapping[str, Any] | None, shards: list[str], depth: int) -> dict[str, int]:
    """Bytes to ask for first, per remote shard: as the index suggests; a pipeline component's
    unindexed weights, ``COMPONENT_FIRST_READ``; else (a local file, a lone file) the reader's own."""
    if not source.remote:
        return {}
    hints = first_read_hints(index)
    if depth > 0:
        hints.update({n: COMPONENT_FIRST_READ for n in shards if n not in hints and n.endswith(SAFETENSORS.suffixes)})
    return hints


def first_read_hints(index: Mapping[str, Any] | None) -> dict[str, int]:
    """Bytes to ask for first, per shard: the header's likely size from the tensor names the index
    places there (the reader's default for a shard no index describes)."""
    names: dict[str, list[str]] = {}
    weight_map = (index or {}).get("weight_map")
    for tensor, shard in (weight_map.items() if isinstance(weight_map, dict) else ()):
        if isinstance(shard, str):
            names.setdefault(shard, []).append(tensor)
    return {shard: SAFETENSORS.estimate(tensors) for shard, tensors in names.items() if shard.endswith(
        SAFETENSORS.suffixes)}
