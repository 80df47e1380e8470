"""Exact counts of a checkpoint: by role, by dtype, by layer block, by shard.

What each figure counts:

* ``parameters``: elements of tensors whose kind is ``parameter`` (as stored: a GPTQ ``qweight``
  counts its int32 words; ``estimate`` gives the logical count);
* ``buffer_elements``: elements of saved buffers (``inv_freq``, GPT-2 ``attn.bias``, ``position_ids``);
* ``quant_elements``: elements of quantisation side data (scales, zero points, ``g_idx``);
* ``hub_total``: every element of every tensor, which is what the Hub's model page shows;
* ``bytes``: tensor data bytes, from the headers' offsets (files also hold their headers).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Final, NamedTuple

from inspector.analysis.facts.packing import PACKING_DTYPES
from inspector.analysis.facts.roles import ROLE_ORDER, Placement, classify_all
from inspector.errors import InvalidCheckpointError
from inspector.formats.dtypes import dtype_sort_key
from inspector.model import Checkpoint, Role, TensorInfo, WeightFile, natural_key


class Tensor(NamedTuple):
    """A tensor with its placement: the unit every report is built from."""

    info: TensorInfo
    place: Placement

    @property
    def name(self) -> str:
        return self.info.name


@dataclass(frozen=True, slots=True)
class RoleRow:
    role: Role
    tensors: int
    parameters: int
    quant_elements: int
    buffer_elements: int
    bytes: int
    quant_bytes: int = 0  # of ``bytes``, those of quantisation side data


@dataclass(frozen=True, slots=True)
class DtypeRow:
    dtype: str
    tensors: int
    parameters: int
    elements: int
    bytes: int


@dataclass(frozen=True, slots=True)
class LayerGroup:
    """Consecutive layers of one stack whose tensors have the same names, shapes and dtypes."""

    stack: str
    first: int
    last: int
    tensors_each: int
    parameters_each: int
    bytes_each: int

    @property
    def count(self) -> int:
        """The layers in the group (they are consecutive)."""
        return self.last - self.first + 1

    @property
    def label(self) -> str:
        return self.named(self.stack.rsplit(".", 1)[-1])

    @property
    def full_label(self) -> str:
        """The label with the stack's whole name, for a model of several stacks ending alike (a VLM's
        ``language_model.model.layers`` and ``vision_tower.encoder.layers``)."""
        return self.named(self.stack)

    def named(self, name: str) -> str:
        if self.count == 1:
            return f"{name.removesuffix('s')} {self.first}"
        return f"{name} {self.first}–{self.last} ×{self.count}"


@dataclass(frozen=True, slots=True)
class ShardRow:
    file: str
    size: int | None
    tensors: int
    header_bytes: int
    data_bytes: int


@dataclass(frozen=True, slots=True)
class Summary:
    tensors: int
    parameters: int  # logical: a packed word counts the weights it holds
    stored_elements: int  # the parameters' elements as stored (packed words once); = parameters unless packed
    buffer_elements: int
    quant_elements: int
    hub_total: int
    bytes: int
    by_role: tuple[RoleRow, ...]
    by_dtype: tuple[DtypeRow, ...]
    layer_groups: tuple[LayerGroup, ...]
    shards: tuple[ShardRow, ...]
    outside_layers_parameters: int


_NAME = itemgetter(0)


def placed(tensors: Iterable[TensorInfo]) -> list[Tensor]:
    infos = tensors if isinstance(tensors, list | tuple) else list(tensors)
    # Tensor without its Python-level __new__, in C loops
    return list(map(tuple.__new__, repeat(Tensor), zip(infos, classify_all(list(map(_NAME, infos))), strict=True)))


def stored_elements(info: TensorInfo) -> int:
    """Elements as stored: the product of the shape (a GGUF's shape is its logical one)."""
    n = 1
    for d in info.shape:
        n *= d
    return n


def summarize(checkpoint: Checkpoint) -> Summary:
    tensors = placed(checkpoint.tensors())
    return summarize_tensors(tensors, checkpoint)


#: the most layers (a stack's numbered blocks, every stack together) one model may name: real ones name a few
#: hundred. Each layer costs the structure, the collapse and a diff's pairing a record of its own: two headers of
#: 350,000 one-tensor layers cost a plain diff 17 s and 783 MB (a regular model of as many tensors: 6.5 s, 485 MB);
#: 110,000 such layers (issue 66's header) are read
MAX_LAYERS: Final = 131_072


def summarize_tensors(tensors: list[Tensor], checkpoint: Checkpoint | None = None) -> Summary:
    # role → [tensors, parameters, quant elements, buffer elements, bytes, quant bytes]
    roles: dict[Role, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    # dtype → [tensors, parameters, elements, bytes]
    dtypes: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    # (stack, layer) → its tensors, in order: the layer blocks, gathered in the same pass (``by_layer``)
    cells: dict[tuple[str, int], list[Tensor]] = {}
    cell: list[Tensor] = []
    last_stack: str | None = None
    last_layer: int | None = None
    params = buffers = quant = nbytes = outside = 0
    for t in tensors:  # one pass; records unpacked (a NamedTuple's field by name is a call)
        (_, dtype, _, begin, end, _, n), (kind, role, stack, layer, _) = t
        b = end - begin
        row = roles[role]
        row[0] += 1
        row[4] += b
        d = dtypes[dtype]
        d[0] += 1
        d[2] += n
        d[3] += b
        nbytes += b
        if kind == "parameter":
            params += n
            row[1] += n
            d[1] += n
            if layer is None:
                outside += n
        elif kind == "quant":
            quant += n
            row[2] += n
            row[5] += b
        else:
            buffers += n
            row[3] += n
        if layer is not None and stack is not None:
            if layer == last_layer and stack == last_stack:  # a layer's tensors mostly come together
                cell.append(t)
                continue
            cell = cells.get((stack, layer))  # type: ignore[assignment]
            if cell is None:
                cell = cells[(stack, layer)] = [t]
            else:
                cell.append(t)
            last_stack, last_layer = stack, layer
    if len(cells) > MAX_LAYERS:
        raise InvalidCheckpointError(
            f"the header names {len(cells):,} layers, more than the {MAX_LAYERS:,} this tool reads (real models have a "
            "few hundred); refusing it", hint="the file is damaged or hostile")
    stored = params  # packed words once: only a packing dtype can hold several weights an element
    if not PACKING_DTYPES.isdisjoint(dtypes):
        stored -= sum(info.numel - stored_elements(info) for info, place in tensors
                      if place.kind == "parameter" and info.dtype in PACKING_DTYPES)
    order = {r: i for i, r in enumerate(ROLE_ORDER)}
    by_role = tuple(
        RoleRow(role, *values)
        for role, values in sorted(roles.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    )
    by_dtype = tuple(DtypeRow(dt, *v) for dt, v in sorted(dtypes.items(), key=lambda kv: dtype_sort_key(kv[0])))
    shards: tuple[ShardRow, ...] = ()
    if checkpoint is not None:
        shards = tuple(
            ShardRow(h.file, h.file_size, len(h.tensors), _overhead(h), h.data_length)
            for h in checkpoint.headers
        )
    return Summary(
        tensors=len(tensors),
        parameters=params,
        stored_elements=stored,
        buffer_elements=buffers,
        quant_elements=quant,
        hub_total=stored + buffers + quant,
        bytes=nbytes,
        by_role=by_role,
        by_dtype=by_dtype,
        layer_groups=_collapse(_stacks(cells)),
        shards=shards,
        outside_layers_parameters=outside,
    )


def layer_suffix(t: Tensor) -> str:
    """The tensor's name inside its layer: ``model.layers.3.mlp.up_proj.weight`` → ``mlp.up_proj.weight``."""
    assert t.place.stack is not None and t.place.layer is not None
    return t.name[len(t.place.stack) + len(str(t.place.layer)) + 2 :]


def by_layer(tensors: Iterable[Tensor]) -> dict[str, dict[int, list[Tensor]]]:
    stacks: dict[str, dict[int, list[Tensor]]] = defaultdict(lambda: defaultdict(list))
    for t in tensors:
        if t.place.stack is not None and t.place.layer is not None:
            stacks[t.place.stack][t.place.layer].append(t)
    return stacks


def _stacks(cells: dict[tuple[str, int], list[Tensor]]) -> dict[str, dict[int, list[Tensor]]]:
    """``by_layer``'s answer from the (stack, layer) cells ``summarize_tensors`` gathered."""
    stacks: dict[str, dict[int, list[Tensor]]] = defaultdict(dict)
    for (stack, layer), members in cells.items():
        stacks[stack][layer] = members
    return stacks


def layer_groups(tensors: Iterable[Tensor]) -> tuple[LayerGroup, ...]:
    """Collapse each stack's layers into runs of identical blocks (names, shapes and dtypes)."""
    return _collapse(by_layer(tensors))


_INFO = itemgetter(0)
_DTYPE = attrgetter("dtype")
_SHAPE = attrgetter("shape")


def _collapse(stacks: dict[str, dict[int, list[Tensor]]]) -> tuple[LayerGroup, ...]:
    groups: list[LayerGroup] = []
    for stack, layers in sorted(stacks.items(), key=lambda kv: natural_key(kv[0])):
        run: list[int] = []
        first = _Block([], [], [])
        for index in sorted(layers):
            infos = list(map(_INFO, layers[index]))
            cut = len(stack) + len(str(index)) + 2
            # names inside the layer, dtypes, shapes: compared as three lists (C loops; a header's
            # shapes and dtypes are shared objects, so most comparisons are by identity)
            block = _Block([name[cut:] for name in map(_INFO, infos)], list(map(_DTYPE, infos)),
                           list(map(_SHAPE, infos)))
            if run and index == run[-1] + 1 and block.same_as(first):
                run.append(index)
                continue
            if run:
                groups.append(_group(stack, run, layers[run[0]]))
            run, first = [index], block
        if run:
            groups.append(_group(stack, run, layers[run[0]]))
    return tuple(groups)


class _Block:
    """One layer's tensors as the collapse compares them: their names inside the layer, dtypes and shapes."""

    __slots__ = ("_table", "dtypes", "names", "shapes")

    def __init__(self, names: list[str], dtypes: list[str], shapes: list[tuple[int, ...]]) -> None:
        self.names, self.dtypes, self.shapes = names, dtypes, shapes
        self._table: dict[str, tuple[str, tuple[int, ...]]] | None = None

    def table(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        """name → (dtype, shape), built once (a run's first layer is compared with each layer after it)."""
        if self._table is None:
            self._table = dict(zip(self.names, zip(self.dtypes, self.shapes, strict=True), strict=True))
        return self._table

    def same_as(self, other: _Block) -> bool:
        """The same names, dtypes and shapes, in any order. In the same order unless a layer is split
        across two shards at another place (most of DeepSeek-V3's): then as name → (dtype, shape) tables,
        where names are distinct within each layer (sorting both layers' triples, as this did, was most of
        the collapse's time: 40 ms of DeepSeek-V3's), and sorted where they are not."""
        if self.names == other.names and self.dtypes == other.dtypes and self.shapes == other.shapes:
            return True
        if len(self.names) != len(other.names):
            return False
        mine, theirs = self.table(), other.table()
        if len(mine) == len(self.names) and len(theirs) == len(other.names):
            return mine == theirs
        return sorted(zip(self.names, self.dtypes, self.shapes, strict=True)) == \
            sorted(zip(other.names, other.dtypes, other.shapes, strict=True))


def _group(stack: str, run: list[int], members: list[Tensor]) -> LayerGroup:
    return LayerGroup(
        stack=stack,
        first=run[0],
        last=run[-1],
        tensors_each=len(members),
        parameters_each=sum(t.info.numel for t in members if t.place.kind == "parameter"),
        bytes_each=sum(t.info.nbytes for t in members),
    )


def _overhead(h: WeightFile) -> int:
    """Bytes of the file that are not tensor data: its header, or a pickle archive's directory and pickles."""
    if h.data_start is not None:
        return h.data_start
    return max(0, (h.file_size or 0) - h.data_length)
