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
from typing import Final

from inspector.errors import PickleError
from inspector.model import Import

#: a state dict of 100,000 tensors takes about 2 million opcodes
MAX_OPCODES: Final = 20_000_000
MAX_MEMO: Final = 5_000_000
MAX_MARKS: Final = 10_000
MAX_INT_BYTES: Final = 1024
#: the memory the containers a pickle builds would take when unpickled, estimated from its opcodes
#: (CPython's sizes: an empty set 216 bytes, a dict 64, a list 56, a tuple 40 + 8 an item; a set's
#: item about 32, a dict's 24, a list's 8). A 100,000-tensor state dict builds about 35 MB; 4 MB of
#: EMPTY_SET opcodes once built 1.5 GB of sets (issue 40)
MAX_CONTAINER_BYTES: Final = 256 * 1024 * 1024
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

    def top(self) -> object:
        return self.items[-1] if self.items else None

    def apply(self, opcode: pickletools.OpcodeInfo) -> None:
        """Any other opcode's stack effect, as pickletools states it: what it takes (to its mark, and
        the items below the mark it also takes), then an unknown value for each thing it pushes."""
        self.apply_counting(opcode)

    def apply_counting(self, opcode: pickletools.OpcodeInfo) -> int:
        """``apply``, returning how many items it took from above a mark (0 for a fixed arity)."""
        before = opcode.stack_before
        taken = 0
        if pickletools.markobject in before:
            taken = self.pop_mark()
            for _ in range(before.index(pickletools.markobject)):
                self.pop()
        else:
            for _ in before:
                self.pop()
        for _ in opcode.stack_after:
            self.push(None)
        return taken


class _Scan:
    """One pickle's opcodes, as far as the scan follows them."""

    def __init__(self, where: str, file: str, allowed: Callable[[str, str], bool], imports: list[Import]) -> None:
        self.where, self.file, self.allowed, self.imports = where, file, allowed, imports
        self.stack = _Stack()
        self.memo: dict[int, object] = {}
        self.container_bytes = 0

    def refuse(self, rule: str, message: str) -> PickleError:
        return PickleError(rule, f"{self.where}: {message}", self.file, imports=tuple(self.imports))

    def add(self, module: object, name: object) -> None:
        m = module if isinstance(module, str) else "?"
        n = name if isinstance(name, str) else "?"
        ok = isinstance(module, str) and isinstance(name, str) and self.allowed(m, n)
        self.imports.append(Import(self.where, m[:200], n[:200], ok))

    def step(self, name: str, opcode: pickletools.OpcodeInfo, arg: object) -> None:
        stack = self.stack
        if name in ("GLOBAL", "INST"):
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
        else:
            if isinstance(arg, int) and arg.bit_length() > 8 * MAX_INT_BYTES:
                raise self.refuse("pickle-budget", f"an integer of more than {MAX_INT_BYTES:,} bytes")
            taken = stack.apply_counting(opcode)
            if name in _COSTS:
                build, per_item = _COSTS[name]
                self.container_bytes += build + per_item * max(taken, 1)
                if self.container_bytes > MAX_CONTAINER_BYTES:
                    raise self.refuse("pickle-budget", f"builds containers of more than {MAX_CONTAINER_BYTES:,} "
                                                       "bytes when unpickled (sets, dicts, lists, tuples)")


def scan_pickle(stream: io.BytesIO, where: str, file: str, allowed: Callable[[str, str], bool],
                imports: list[Import]) -> None:
    """Read one pickle from ``stream`` (up to its STOP), appending each global it names to
    ``imports``. Raises ``PickleError`` (with the imports so far) on a parse error or a budget."""
    scan = _Scan(where, file, allowed, imports)
    try:
        for ops, (opcode, arg, _) in enumerate(pickletools.genops(stream), 1):
            if ops > MAX_OPCODES:
                raise scan.refuse("pickle-budget", f"more than {MAX_OPCODES:,} opcodes")
            if opcode.name == "STOP":
                return
            if opcode.name == "PROTO" and isinstance(arg, int) and arg > pickle.HIGHEST_PROTOCOL:
                raise scan.refuse("pickle-invalid", f"pickle protocol {arg}: no such protocol (the highest is "
                                                    f"{pickle.HIGHEST_PROTOCOL})")
            scan.step(opcode.name, opcode, arg)
    except PickleError:
        raise
    except Exception as exc:  # genops' own decoding errors: a bad opcode, a cut argument, a huge text int
        text = str(exc)
        cut = "remain" in text or "exhausted" in text or "but only" in text
        raise scan.refuse("pickle-truncated" if cut else "pickle-invalid",
                          f"does not parse ({type(exc).__name__}: {text[:80]})") from None
    raise scan.refuse("pickle-truncated", "ends before its STOP opcode")
