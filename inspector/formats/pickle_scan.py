"""A pickle read as opcodes, never run: the globals it names and the work it would ask for.

Python's ``pickletools.genops`` decodes each opcode and its argument without building anything. A
symbolic stack follows what the opcodes push (strings and memo entries are tracked, everything else
is an unknown value), so ``STACK_GLOBAL``'s module and name are found even when they come from the
memo; ``GLOBAL`` and ``INST`` carry theirs inline; ``EXT1/2/4`` name a global through copyreg's
extension registry, which is refused (a state dict never uses it). Every global is listed with the
verdict the caller's rule gives it (an inventory, as the Hub's pickle scan shows one), including
those met before a parse error.

Budgets are checked as the opcodes go by, before anything is unpickled: opcodes, memo entries, open
marks (nesting), the bytes of an integer. A pickle over any of them is refused by name.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from collections.abc import Callable
from typing import Final, NamedTuple

from inspector.errors import PickleError
from inspector.model import Import

#: The budgets are sized from torch.save's own output at 100,000 tensors, a state dict (3.2 million
#: opcodes, 800,000 memo entries, 2,010 values on the stack and 3 marks at most, 30.4 MB of
#: containers) and an AdamW training checkpoint of 25,000 parameters (3.1 million, 700,000, 2,025,
#: 30.0 MB; torch 2.13, measured). The scan takes about 0.5-1 us an opcode on a 2-core CI machine
#: (measured: 8.1 million NONE refused in 4.7 s, 6.3 million list opcodes in 6.5 s), so the opcode
#: budget bounds a scan's time; the scan's memo takes about 70 MB a million entries
MAX_OPCODES: Final = 8_000_000
MAX_MEMO: Final = 2_000_000
MAX_MARKS: Final = 10_000
#: the most values on the pickle machine's stack at once: pickle batches APPENDS and SETITEMS by 1,000
#: items (pickle.py's _BATCHSIZE), so a state dict's stack holds a few thousand; 20 MB of NONE under
#: one MARK once held 20 million (and 3 GB once walked)
MAX_STACK: Final = 1_000_000
MAX_INT_BYTES: Final = 1024
#: the memory the containers a pickle builds would take when unpickled, estimated from its opcodes
#: (CPython's sizes: an empty set 216 bytes, a dict 64, a list 56, a tuple 40 + 8 an item; a set's
#: item about 32, a dict's 24, a list's 8); the 100,000 tensors above price at 30.4 MB. 4 MB of EMPTY_SET
#: opcodes once built 1.5 GB of sets (issue 40); 3.9 million lists under the former 256 MiB peaked at
#: 307 MB unpickled and walked, over the 300 MB a refusal may take
MAX_CONTAINER_BYTES: Final = 128 * 1024 * 1024
#: what each container-building opcode costs: (the container, each item it takes from the stack)
_COSTS: Final = {"EMPTY_SET": (216, 0), "FROZENSET": (216, 32), "EMPTY_DICT": (64, 0), "DICT": (64, 12),
                 "EMPTY_LIST": (56, 0), "LIST": (56, 8), "TUPLE": (40, 8), "TUPLE1": (48, 0), "TUPLE2": (56, 0),
                 "TUPLE3": (64, 0), "ADDITEMS": (0, 32), "SETITEM": (0, 24), "SETITEMS": (0, 12), "APPEND": (0, 8),
                 "APPENDS": (0, 8)}

_STRINGS: Final = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
                             "SHORT_BINSTRING"})
_PUTS: Final = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GETS: Final = frozenset({"GET", "BINGET", "LONG_BINGET"})
_MARK: Final = object()


class _Effect(NamedTuple):
    """One opcode's stack effect as ``pickletools`` states it, and what it costs when unpickled (a
    tuple, unpacked at once in the scan's loop: its time is per opcode)."""

    pushes: int
    pops: int  # the items it takes below the mark (or all it takes, without a mark)
    to_mark: bool  # takes the items above the topmost mark, and the mark
    price: int  # bytes of the container it builds with one item (or none); -1: builds no container
    per_item: int  # bytes each further item it takes from above a mark adds


def _effect(opcode: pickletools.OpcodeInfo) -> _Effect:
    before = opcode.stack_before
    to_mark = pickletools.markobject in before
    pops = before.index(pickletools.markobject) if to_mark else len(before)
    if opcode.name not in _COSTS:
        return _Effect(len(opcode.stack_after), pops, to_mark, -1, 0)
    build, per_item = _COSTS[opcode.name]  # CPython's container, and each item at least once (max(taken, 1))
    return _Effect(len(opcode.stack_after), pops, to_mark, build + per_item, per_item)


#: the opcodes the scan follows by their stack effect alone, by opcode; the others have their own step
_SPECIAL: Final = frozenset({"GLOBAL", "INST", "STACK_GLOBAL", "EXT1", "EXT2", "EXT4", "MARK", "MEMOIZE", "STOP",
                             "PROTO"}) | _STRINGS | _PUTS | _GETS
_EFFECTS: Final = {op: _effect(op) for op in pickletools.opcodes if op.name not in _SPECIAL}


class _Stack:
    """The pickle machine's stack as far as this scan needs it: strings, marks, and unknowns."""

    def __init__(self) -> None:
        self.items: list[object] = []
        self.marks = 0

    def push(self, value: object) -> None:
        self.items.append(value)
        if value is _MARK:
            self.marks += 1

    def pop(self) -> object:
        if not self.items:
            return None
        value = self.items.pop()
        if value is _MARK:
            self.marks -= 1
        return value

    def pop_mark(self) -> int:
        """Pop to the topmost mark; the items above it (a SETITEMS' keys and values count two each)."""
        count = 0
        while self.items:
            if self.pop() is _MARK:
                return count
            count += 1
        return count

    def take(self, to_mark: bool, pops: int) -> int:
        """What an opcode takes: the items above the topmost mark and the mark (when ``to_mark``), then
        ``pops`` items; how many it took from above a mark (0 for a fixed arity)."""
        taken = self.pop_mark() if to_mark else 0
        for _ in range(pops):
            self.pop()
        return taken

    def top(self) -> object:
        return self.items[-1] if self.items else None


class _Scan:
    """One pickle's opcodes, as far as the scan follows them."""

    def __init__(self, where: str, file: str, allowed: Callable[[str, str], bool], imports: list[Import]) -> None:
        self.where, self.file, self.allowed, self.imports = where, file, allowed, imports
        self.stack = _Stack()
        self.memo: dict[int, object] = {}

    def refuse(self, rule: str, message: str) -> PickleError:
        return PickleError(rule, f"{self.where}: {message}", self.file, imports=tuple(self.imports))

    def over_stack(self) -> PickleError:
        return self.refuse("pickle-budget", f"more than {MAX_STACK:,} values on its stack at once")

    def add(self, module: object, name: object) -> None:
        m = module if isinstance(module, str) else "?"
        n = name if isinstance(name, str) else "?"
        ok = isinstance(module, str) and isinstance(name, str) and self.allowed(m, n)
        self.imports.append(Import(self.where, m[:200], n[:200], ok))

    def step(self, name: str, arg: object) -> None:
        stack = self.stack
        if name == "PROTO":
            if isinstance(arg, int) and arg > pickle.HIGHEST_PROTOCOL:
                raise self.refuse("pickle-invalid", f"pickle protocol {arg}: no such protocol (the highest is "
                                                    f"{pickle.HIGHEST_PROTOCOL})")
        elif name in ("GLOBAL", "INST"):
            module, _, attr = str(arg).partition(" ")
            self.add(module, attr)
            if name == "INST":
                stack.pop_mark()
            stack.push(None)
        elif name == "STACK_GLOBAL":
            top, below = stack.pop(), stack.pop()  # the name, then the module under it
            self.add(below, top)
            stack.push(None)
        elif name in ("EXT1", "EXT2", "EXT4"):
            self.imports.append(Import(self.where, "copyreg extension", str(arg), False))
            stack.push(None)
        elif name == "MARK":
            stack.push(_MARK)
            if stack.marks > MAX_MARKS:
                raise self.refuse("pickle-budget", f"more than {MAX_MARKS:,} nested marks")
        elif name in _STRINGS:
            stack.push(arg if isinstance(arg, str) else None)
        elif name in _PUTS or name == "MEMOIZE":
            self.memo[len(self.memo) if name == "MEMOIZE" else int(str(arg))] = stack.top()
            if len(self.memo) > MAX_MEMO:
                raise self.refuse("pickle-budget", f"more than {MAX_MEMO:,} memo entries")
        elif name in _GETS:
            stack.push(self.memo.get(int(str(arg))))


def scan_pickle(stream: io.BytesIO, where: str, file: str, allowed: Callable[[str, str], bool],
                imports: list[Import]) -> None:
    """Read one pickle from ``stream`` (up to its STOP), appending each global it names to
    ``imports``. Raises ``PickleError`` (with the imports so far) on a parse error or a budget."""
    scan = _Scan(where, file, allowed, imports)
    effects, stack, items = _EFFECTS, scan.stack, scan.stack.items
    ops, most_ops, built, most_built, int_bits = 0, MAX_OPCODES, 0, MAX_CONTAINER_BYTES, 8 * MAX_INT_BYTES
    most_stack = MAX_STACK
    try:
        for opcode, arg, _ in pickletools.genops(stream):
            ops += 1
            if ops > most_ops:
                raise scan.refuse("pickle-budget", f"more than {MAX_OPCODES:,} opcodes")
            effect = effects.get(opcode)
            if effect is None:
                if opcode.name == "STOP":
                    return
                scan.step(opcode.name, arg)
                if len(items) > most_stack:
                    raise scan.over_stack()
                continue
            # an opcode followed by its stack effect alone, written out here with the budgets in locals:
            # the scan's time is per opcode, and 4 MB of EMPTY_SET is 1.2 million of them (issue 40)
            pushes, pops, to_mark, price, per_item = effect
            if arg.__class__ is int and arg.bit_length() > int_bits:
                raise scan.refuse("pickle-budget", f"an integer of more than {MAX_INT_BYTES:,} bytes")
            if to_mark or pops:
                taken = stack.take(to_mark, pops)
                if taken > 1 and price >= 0:
                    price += per_item * (taken - 1)
            if pushes:
                items.extend((None,) * pushes)
                if len(items) > most_stack:
                    raise scan.over_stack()
            if price >= 0:
                built += price
                if built > most_built:
                    raise scan.refuse("pickle-budget", f"builds containers of more than {MAX_CONTAINER_BYTES:,} "
                                                       "bytes when unpickled (sets, dicts, lists, tuples)")
    except PickleError:
        raise
    except Exception as exc:  # genops' own decoding errors: a bad opcode, a cut argument, a huge text int
        text = str(exc)
        cut = "remain" in text or "exhausted" in text or "but only" in text
        raise scan.refuse("pickle-truncated" if cut else "pickle-invalid",
                          f"does not parse ({type(exc).__name__}: {text[:80]})") from None
    raise scan.refuse("pickle-truncated", "ends before its STOP opcode")
