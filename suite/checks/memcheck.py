"""Memory checking: every lane a mask enables must address an element of the tensor its pointer came from.

**On the CPU interpreter (every case, on by default).** The interpreter's loads and stores are host code, so
the exact addresses of every launch can be checked before memory is touched. At each launch the checker notes
the tensor arguments (their data pointers, shapes, strides and element sizes); before each load, store and
atomic it takes the addresses of the lanes the mask enables and checks that they all lie on elements of one
argument tensor (the one most of them lie in: "the tensor the pointer came from"). A lane outside it (past an
end, before the start, in the padding between the rows of a strided tensor, or in another tensor) stops the
launch with :class:`MemoryViolation`, which names the kernel, the operation, the argument, the lane, its element
offset and the program, before the bad access happens. The value checks and output guard regions cannot see a
masked-off lane that is loaded and masked again at the store; a GPU may fault on it, read another tensor, or
(AMD buffer loads under pipelining) return memory instead of ``other``.

A kernel whose tests made no interpreted launch (a GPU backend, or a spec whose ``run`` launches nothing) is
counted as *unchecked*, never as checked.

**On GPU runners (``--memcheck``).** The run re-executes itself under the vendor's checker:
``compute-sanitizer --tool memcheck`` on NVIDIA (with ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``, or a stray read lands
inside torch's cached pool and goes unseen), Triton's AddressSanitizer build on AMD (``TRITON_ENABLE_ASAN=1``,
xnack+). A finding ends the case like a GPU fault; its report is attached to the case from the checker's log.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from suite.checks import barriers
from suite.session import stash

SANITIZER_ENV = "SUITE_MEMCHECK_LOG_DIR"  # set in a run re-executed under the GPU checker


class MemoryViolation(Exception):  # noqa: N818 - it names the finding
    """A lane enabled by its mask addresses memory outside the tensor its pointer came from."""


class DataRace(MemoryViolation):
    """Within one program, an element one lane stores and another lane loads or stores, with no barrier between
    (see :class:`Races`)."""


_SUITE_DIR = str(Path(__file__).resolve().parents[1]).replace("\\", "/") + "/"  # its hooks are not the kernel's lines
RACE_ENV = "SUITE_RACE_CHECK"  # "0" turns the race check off (to time it); unset or "1": on with the memory check


@dataclass
class Region:
    """One tensor argument of a launch: where its elements are."""

    name: str
    base: int  # address of element 0
    itemsize: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    numel: int
    contiguous: bool
    group: str = ""  # the races' key: the first of the arguments whose memory overlaps this one's (aliases: one)

    def extent(self) -> tuple[int, int]:
        """The bytes [lo, hi) its elements span."""
        lo = sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides, strict=True)) * self.itemsize
        hi = (sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides, strict=True)) + 1) * self.itemsize
        return self.base + lo, self.base + hi

    def describe(self) -> str:
        layout = "" if self.contiguous else f", strides {self.strides}"
        return f"argument {self.name!r} (shape {self.shape}{layout}, {self.itemsize}-byte elements)"

    def contains(self, addrs: np.ndarray, size: int) -> np.ndarray:
        """Whether each address (uint64) starts an access of ``size`` bytes that lies on one of the elements."""
        rel = (addrs - np.uint64(self.base)).view(np.int64)  # addresses below base wrap to negative
        if self.numel == 0:
            return np.zeros(rel.shape, dtype=bool)
        if size != self.itemsize:  # accessed as another type: the bytes must lie inside the tensor's extent
            lo = sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides, strict=True)) * self.itemsize
            hi = (sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides, strict=True)) + 1) * self.itemsize
            return (rel >= lo) & (rel + size <= hi)
        ok = (rel >= 0) & (rel % size == 0)
        offset = rel // size
        if self.contiguous:
            return ok & (offset < self.numel)
        # A strided tensor (padded rows, a transposed view): peel the offset into indices, largest stride first.
        for n, s in sorted(((n, s) for n, s in zip(self.shape, self.strides, strict=True) if s > 0 and n > 1),
                           key=lambda d: -d[1]):
            index = offset // s
            ok &= index < n
            offset = offset - np.minimum(index, n - 1) * s
        return ok & (offset == 0)

    def offset_text(self, addr: int, size: int) -> str:
        rel = addr - self.base
        if rel < 0:
            return f"{-rel / self.itemsize:g} element(s) before its start"
        if rel % self.itemsize:
            return f"misaligned: byte {rel} ({self.itemsize}-byte elements)"
        element = rel // self.itemsize
        if self.contiguous and element >= self.numel:
            return f"element {element}, {element - self.numel + 1} past its last ({self.numel} elements)"
        return f"element offset {element}, not an element of the tensor (padding or past the end)"


@dataclass
class Launch:
    kernel: str
    regions: list[Region]


EVERY_LANE = -1  # the lane of a one-element load: every thread of the program makes it


class _Access:
    """One load, store or atomic of a region in the current program and barrier interval: its enabled lanes'
    addresses, each lane's position in the block (None: every lane, in order; ``EVERY_LANE``: a one-element load,
    which every thread makes), the block's shape, a store's values (the interpreter's array, read only if another
    store lands on one of its elements), and where in the kernel it was (code object and line)."""

    __slots__ = ("op", "kind", "addrs", "lanes", "shape", "code", "line", "span", "values", "bits", "spread")

    def __init__(self, op: str, addrs: np.ndarray, lanes: np.ndarray | None, shape: tuple[int, ...], code: Any,
                 line: int, values: Any = None, kind: str = "") -> None:
        self.op, self.addrs, self.lanes, self.shape, self.code, self.line = op, addrs, lanes, shape, code, line
        self.kind = kind or op  # an atomic's operation: add, max, xchg, cas, ...
        self.span: tuple[int, int] | None = None  # its lowest and highest address, once asked
        self.values, self.bits = values, None
        self.spread = False  # a one-element load: a write of more than one element has followed it

    def lane_array(self) -> np.ndarray:
        return self.lanes if self.lanes is not None else np.arange(self.addrs.size)

    def range(self) -> tuple[int, int]:
        if self.span is None:
            self.span = (int(self.addrs.min()), int(self.addrs.max()))
        return self.span

    def value_bits(self) -> np.ndarray:
        """Each enabled lane's stored value as its bits (int64): two lanes store the same value where these agree."""
        if self.bits is None and self.values is None:  # not seen: taken as different from every other value
            self.bits = -1 - np.arange(self.addrs.size, dtype=np.int64) - (id(self) % (1 << 40) << 20)
        if self.bits is None:
            data = np.asarray(self.values)
            if data.dtype == np.bool_:
                data = data.view(np.uint8)
            data = np.broadcast_to(data, self.shape if self.shape else (1,)).reshape(-1)
            if self.lanes is not None:
                data = data[self.lanes]
            unsigned = np.ascontiguousarray(data).view(np.dtype(f"u{data.dtype.itemsize}"))
            self.bits = unsigned.astype(np.int64)
        return self.bits


class Races:
    """Races the interpreter cannot show. It runs a program's lanes as one (numpy over the whole block), so an
    element that one lane stores and another lane loads is read in program order there; on a GPU the lanes are
    threads of different warps, unordered without a barrier, and the load may see either value. Within one program
    and between two barriers (``tl.debug_barrier()``, or a reduction or scan the compiler keeps: across warps Triton
    lowers one through shared memory with a barrier, see :class:`ReductionBarriers`; a new program starts afresh), an
    element one lane stores and another lane loads, stores or updates atomically is a race, whichever comes first;
    so is one two lanes of one store store with different values (a colliding scatter), and one a lane updates
    atomically while another loads or stores it. Two atomics are not a race; two lanes storing the same value are not
    either. A lane is the element's position in the access's block tensor (flat index): conservative, as a GPU may
    give two positions to one thread (a layout choice the interpreter cannot see); a one-element load (a scalar, or a
    block of one) is every lane's, as every thread of the program makes it, while a one-element store or atomic is
    lane 0's (Triton has thread 0 make it). Only regions written in the interval are compared (each write with the
    region's earlier accesses, each later load with its writes). What is kept costs time (a look up the stack, and
    arrays the interpreter would free), so past a launch's first program, loads of a tensor that no program of the
    launch has written yet are not kept: the first program sees every pair, and a later one every pair in a tensor
    the launch writes (a tensor first written by a later program is compared from that write on)."""

    def __init__(self) -> None:
        self.touched: dict[str, list[_Access]] = {}
        self.stored: set[str] = set()  # regions stored to or updated atomically in this interval
        self.written: set[str] = set()  # the regions this launch has written, in any program
        self.programs = 0  # programs of this launch begun
        self.user_code: dict[Any, bool] = {}
        self.depth = 0  # how far up the stack the kernel's frame was last time, and its code and its callee's
        self.depth_codes: tuple[Any, Any] = (None, None)
        self.barriers = barriers.Barriers()  # which reductions order, as compiled (what it read, kept)
        # One-element loads in this interval, and their races with one-element writes (thread 0's) that stand only
        # once a write of more than one element follows the load: its value may then reach other threads' writes.
        self.lone_loads: list[_Access] = []
        self.pending: list[tuple] = []

    def reset(self) -> None:
        if self.touched:
            self.touched = {}
            self.stored = set()
        if self.lone_loads:
            self.lone_loads, self.pending = [], []

    def new_launch(self) -> None:
        self.reset()
        self.written, self.programs = set(), 0

    def new_program(self) -> None:
        self.reset()
        self.programs += 1

    def access(self, launch: Launch, op: str, region: Region, addrs: np.ndarray, lanes: np.ndarray | None,
               shape: tuple[int, ...], program: Any, values: Any = None, kind: str = "") -> None:
        key = region.group or region.name  # arguments whose memory overlaps are one
        if op == "load" and self.programs > 1 and key not in self.written:
            return  # an input, as far as this launch has shown: its loads race with nothing
        if op != "load":
            self.written.add(key)
        code, line = self._where()
        if op == "load" and addrs.size == 1 and int(np.prod(shape, dtype=np.int64)) <= 1:
            lanes = np.array([EVERY_LANE])  # a one-element load: every thread of the program makes it
        new = _Access(op, addrs, lanes, shape, code, line, values, kind)
        if new.kind in _WRITES_A_VALUE and addrs.size > 1:
            collision = _collision(new)
            if collision is not None:
                raise DataRace(_collision_message(launch, region, program(), new, *collision))
        if op != "load" and _elements(shape) > 1 and self.lone_loads:
            self._spread(new)
        elif lanes is not None and lanes.size == 1 and lanes[0] == EVERY_LANE:
            self.lone_loads.append(new)
        seen = self.touched.get(key)
        if seen is None:
            self.touched[key] = [new]
            if op != "load":
                self.stored.add(key)
            return
        if op != "load" or key in self.stored:
            for old in seen:
                rule = _pair_rule(new, old)
                if rule is None:
                    continue
                race = _first_race(new, old, values=rule)
                if race is None:
                    continue
                load = _lone_pair(new, old)
                if load is not None and not load.spread:  # thread 0's write, every thread's load: see _spread
                    self.pending.append((load, launch, region, program(), new, old, race))
                    continue
                raise DataRace(_race_message(launch, region, program(), new, old, *race))
            if op != "load":
                self.stored.add(key)
        seen.append(new)

    def _spread(self, write: _Access) -> None:
        """A write of more than one element: what every thread loaded before it may reach other threads' elements
        here, so a one-element load's race with thread 0's write of the element stands (before, the only thread
        whose values were written was thread 0, which made its load and its write in order)."""
        for load in self.lone_loads:
            load.spread = True
        if self.pending:
            _, launch, region, program, new, old, race = self.pending[0]
            raise DataRace(_race_message(launch, region, program, new, old, *race) + (
                f"; the load's value may reach this write of {_elements(write.shape)} elements at {_at(write)}, "
                f"which other threads make"))

    def _where(self) -> tuple[Any, int]:
        """(code, line) of the kernel making this access: the innermost frame outside Triton and this suite. The
        frame's depth is remembered: the next access from the same place costs one look."""
        if self.depth:
            try:
                frame = sys._getframe(self.depth)
            except ValueError:
                frame = None
            if frame is not None and frame.f_code is self.depth_codes[0] and \
                    sys._getframe(self.depth - 1).f_code is self.depth_codes[1]:
                return frame.f_code, frame.f_lineno
        frame, depth, inner = sys._getframe(2), 2, None
        while frame is not None:
            code = frame.f_code
            user = self.user_code.get(code)
            if user is None:
                name = code.co_filename.replace("\\", "/")
                user = not ("/triton/" in name or "/numpy/" in name or name.startswith(_SUITE_DIR))
                self.user_code[code] = user
            if user:
                self.depth, self.depth_codes = depth, (code, inner)
                return code, frame.f_lineno
            frame, depth, inner = frame.f_back, depth + 1, code
        return None, 0


def _counts_at(old: list[np.ndarray], new: list[np.ndarray]) -> np.ndarray:
    """For each row of ``new`` (columns of equal length), how many rows of ``old`` equal it in every column."""
    k = old[0].size
    if len(old) == 1:
        _, inverse = np.unique(np.concatenate([old[0], new[0]]), return_inverse=True)
    else:
        rows = np.stack([np.concatenate([o, n]) for o, n in zip(old, new, strict=True)], axis=1)
        _, inverse = np.unique(rows, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    return np.bincount(inverse[:k], minlength=int(inverse.max()) + 1)[inverse[k:]]


_WRITES_A_VALUE = {"store", "xchg", "cas"}  # what stays is the value the last of them wrote
_COMMUTING = {"add", "fadd", "max", "min", "umax", "umin", "and", "or", "xor"}  # atomics whose order changes nothing


def _elements(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _lone_pair(new: _Access, old: _Access) -> _Access | None:
    """The one-element load of a pair of a one-element load (every thread's) and a one-element write (thread 0's),
    else None."""
    for load, write in ((new, old), (old, new)):
        if load.op == "load" and load.lanes is not None and load.lanes.size == 1 and load.lanes[0] == EVERY_LANE \
                and write.op != "load" and _elements(write.shape) == 1:
            return load
    return None


def _pair_rule(new: _Access, old: _Access) -> bool | None:
    """How two accesses of one region are compared: None, never (two loads; two atomics of one commuting operation,
    such as two atomic adds); False, an element accessed by two lanes races; True, it races where the two write
    different values (two stores; two atomic exchanges or compare-and-swaps)."""
    if new.op == "load" and old.op == "load":
        return None
    if new.op == "atomic" and old.op == "atomic":
        if new.kind == old.kind:
            return None if new.kind in _COMMUTING else True
        return False  # an atomic add and an atomic max of one element: their order decides the result
    return new.op == "store" and old.op == "store"


def _first_race(new: _Access, old: _Access, values: bool = False) -> tuple[int, int, int, int] | None:
    """(address, new's lane, old's lane, how many elements race) where an address of ``new`` is one of ``old``'s
    accessed by another lane (and, with ``values``, written with another value); None where there is none."""
    if old.addrs.size == 0 or new.addrs.size == 0:
        return None
    (lo, hi), (new_lo, new_hi) = old.range(), new.range()
    if new_hi < lo or new_lo > hi:
        return None
    old_addrs, new_addrs = old.addrs.view(np.int64), new.addrs.view(np.int64)
    old_lanes, new_lanes = old.lane_array().astype(np.int64), new.lane_array().astype(np.int64)
    at = _counts_at([old_addrs], [new_addrs])  # old's accesses of each new access's element
    if not at.any():
        return None
    others = at - _counts_at([old_addrs, old_lanes], [new_addrs, new_lanes])  # ... by another lane
    if values and others.any():  # two lanes writing the same value is no race
        old_bits, new_bits = old.value_bits(), new.value_bits()
        others = others - _counts_at([old_addrs, old_bits], [new_addrs, new_bits]) + \
            _counts_at([old_addrs, old_lanes, old_bits], [new_addrs, new_lanes, new_bits])
    bad = others > 0
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    addr, lane = int(new.addrs[i]), int(new_lanes[i])
    there = np.flatnonzero((old.addrs == new.addrs[i]) & (old_lanes != lane))
    if values:
        there = there[old.value_bits()[there] != new.value_bits()[i]]
    return addr, lane, int(old_lanes[there[0]]), int(np.unique(new.addrs[bad]).size)


def _collision(new: _Access) -> tuple[int, int, int, int] | None:
    """(address, a lane, another lane, how many elements) where two lanes of one store (or atomic exchange) write
    different values into one element; None where none does."""
    addrs = new.addrs.view(np.int64)
    if addrs.size < 2 or bool((np.diff(addrs) > 0).all()):
        return None  # increasing: no element twice
    bits = new.value_bits()
    order = np.lexsort((bits, addrs))
    a, b = addrs[order], bits[order]
    same = a[1:] == a[:-1]
    if not same.any():
        return None
    bad = same & (b[1:] != b[:-1])
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    lanes = new.lane_array()
    first, second = sorted((int(lanes[order[i]]), int(lanes[order[i + 1]])))
    return int(new.addrs[order[i]]), first, second, int(np.unique(a[1:][bad]).size)


def _element_text(region: Region, addr: int) -> str:
    """'element (i, j)' of ``region`` that ``addr`` starts (an address the region holds)."""
    offset = (addr - region.base) // region.itemsize
    index = [0] * len(region.shape)
    for dim in sorted((d for d, s in enumerate(region.strides) if s > 0 and region.shape[d] > 1),
                      key=lambda d: -region.strides[d]):
        index[dim], offset = divmod(offset, region.strides[dim])
    return f"element {tuple(index)}"


def _lane_text(access: _Access, flat: int) -> str:
    if flat == EVERY_LANE:
        return "every lane (a one-element load: every thread of the program makes it)"
    index = tuple(int(i) for i in np.unravel_index(flat, access.shape)) if access.shape else ()
    return f"lane {index} of block {tuple(access.shape)}"


def _at(access: _Access) -> str:
    file, line = getattr(access.code, "co_filename", "?"), access.line
    function = getattr(access.code, "co_name", "?")
    try:
        shown = os.path.relpath(file)
        file = file if shown.startswith("..") else shown
    except ValueError:
        pass
    return f"line {line} of {function} ({file}:{line})"


_DOES = {"load": "loads it", "store": "stores it", "atomic": "updates it atomically"}


def _does(access: _Access) -> str:
    return _DOES[access.op] + (f" (atomic_{access.kind})" if access.op == "atomic" else "")


def _race_message(launch: Launch, region: Region, program: Any, new: _Access, old: _Access, addr: int, new_lane: int,
                  old_lane: int, count: int) -> str:
    where = f" in program {program}" if program is not None else ""
    element = _element_text(region, addr)
    first, then = old, new
    ops = {old.op, new.op}
    either = ("the load may see either value" if "load" in ops else
              "either may land last" if "atomic" in ops else "the last store may be either")
    return (f"data race in kernel {launch.kernel}{where}: {region.describe()} at {element}: "
            f"{_lane_text(first, old_lane)} {_does(first)} at {_at(first)}, and {_lane_text(then, new_lane)} "
            f"{_does(then)} at {_at(then)}, with no tl.debug_barrier() between; {count} element(s) so in this "
            f"access. On a GPU these lanes run unordered (different warps), so {either}; the interpreter runs the "
            f"block as one and cannot show it. A lane is the element's position in the block (docs/memory-checking.md, "
            f"'Races')")


def _collision_message(launch: Launch, region: Region, program: Any, new: _Access, addr: int, lane: int, other: int,
                       count: int) -> str:
    where = f" in program {program}" if program is not None else ""
    verb, what = ("store", "store") if new.op == "store" else ("write", f"atomic_{new.kind}")
    return (f"data race in kernel {launch.kernel}{where}: {region.describe()} at {_element_text(region, addr)}: "
            f"{_lane_text(new, lane)} and {_lane_text(new, other)} both {verb} it, different values, in one {what} "
            f"at {_at(new)}; {count} element(s) so in this access. On a GPU these lanes run unordered, so which value "
            f"stays is not determined; the interpreter stores lane by lane and keeps the last. A lane is the "
            f"element's position in the block (docs/memory-checking.md, 'Races')")


def _regions(arg_names: list[str], args: list[Any], kwargs: dict[str, Any]) -> list[Region]:
    found: list[Region] = []

    def add(name: str, value: Any) -> None:
        if isinstance(value, tuple):
            for i, v in enumerate(value):
                add(f"{name}[{i}]", v)
            return
        base = getattr(value, "base", None)
        if base is not None and hasattr(value, "block_shape") and hasattr(base, "data_ptr"):  # a TensorDescriptor
            add(f"{name}.base", base)
            return
        if not hasattr(value, "data_ptr"):
            return
        tensor = getattr(value, "base", value) if type(value).__name__ == "TensorWrapper" else value
        found.append(Region(name, int(tensor.data_ptr()), tensor.element_size(), tuple(tensor.shape),
                            tuple(tensor.stride()), tensor.numel(), tensor.is_contiguous()))

    for i, value in enumerate(args):
        add(arg_names[i] if i < len(arg_names) else f"arg{i}", value)
    for name, value in kwargs.items():
        add(name, value)
    return found


def _grouped(regions: list[Region]) -> list[Region]:
    """Each region's ``group``: the name of the first region of the arguments whose memory overlaps it (a tensor
    passed twice, two views of one storage), so that the races compare their accesses as one tensor's."""
    spans = sorted(((*r.extent(), i) for i, r in enumerate(regions) if r.numel), key=lambda t: (t[0], t[2]))
    group, end = None, -1
    for lo, hi, i in spans:
        if group is None or lo >= end:
            group, end = regions[i].name, hi
        else:
            end = max(end, hi)
        regions[i].group = group
    return regions


class Seen:
    """What the loads and the stores (atomics included) of one launch touched, as the interpreter's hooks saw them
    (addresses of the host memory the interpreter runs on: on the CPU, the tensors' own). Filled while it is the
    checker's ``seen`` (:func:`observing`). Kept as each access's start address and size, not byte by byte: a
    matmul's loads expanded to every byte and made distinct took half again its run's time on the interpreter."""

    def __init__(self) -> None:
        self._parts: dict[str, list[tuple[np.ndarray, int]]] = {"load": [], "store": []}
        self._sorted: dict[tuple[str, int], np.ndarray] = {}

    def add(self, op: str, starts: np.ndarray, size: int) -> None:
        kind = "load" if op == "load" else "store"
        self._parts[kind].append((starts, size))
        self._sorted = {k: v for k, v in self._sorted.items() if k[0] != kind}

    def mark(self, op: str, base: int, flags: Any) -> None:
        """Set ``flags[i]`` (a bool tensor over the bytes from address ``base``) for each byte ``op`` touched."""
        import torch

        n = int(flags.numel())
        for starts, size in self._parts[op]:
            offsets = starts.astype(np.int64) - base  # host addresses are far below 2**63
            for k in range(size):
                at = offsets[(offsets >= -k) & (offsets < n - k)] + k
                if at.size:
                    flags[torch.from_numpy(at).to(flags.device)] = True

    def touched(self, op: str, addrs: np.ndarray) -> np.ndarray:
        """Whether each address (uint64) lies in some access of ``op``: the last access starting at or below it,
        of each size, covers it or none does (sizes are one per group: an access covering the address starts no
        earlier than size - 1 bytes below it)."""
        hit = np.zeros(addrs.shape, dtype=bool)
        for size in {z for _, z in self._parts[op]}:
            key = (op, size)
            if key not in self._sorted:
                self._sorted[key] = np.sort(np.concatenate([s for s, z in self._parts[op] if z == size]))
            starts = self._sorted[key]
            i = np.searchsorted(starts, addrs, side="right") - 1
            ok = i >= 0
            hit[ok] |= (addrs[ok] - starts[i[ok]]) < size
        return hit


class Checker:
    """The interpreter's memory checker; one per process, installed by :func:`install`."""

    def __init__(self, races: bool = True) -> None:
        self.launch: Launch | None = None
        self.scope: str | None = None  # the kernel spec whose case is running
        self.launches: Counter[str] = Counter()
        self.memory_ops: Counter[str] = Counter()
        self.grid_idx = lambda: None
        self.races = Races() if races else None
        self.seen: Seen | None = None  # where a caller watches what a launch touches (:func:`observing`)

    def begin(self, kernel: str, arg_names: list[str], args: list[Any], kwargs: dict[str, Any]) -> None:
        self.launch = Launch(kernel, _grouped(_regions(arg_names, args, kwargs)))
        if self.races is not None:
            self.races.new_launch()
        if self.scope is not None:
            self.launches[self.scope] += 1

    def end(self) -> None:
        self.launch = None
        if self.races is not None:
            self.races.reset()

    def barrier(self) -> None:
        """``tl.debug_barrier()`` or a reduction: what the lanes did before is ordered before what comes next."""
        if self.races is not None:
            self.races.reset()

    def new_program(self) -> None:
        """A new program of the launch: races between programs are not this check's."""
        if self.races is not None:
            self.races.new_program()

    def check(self, op: str, ptrs: Any, mask: Any, values: Any = None, kind: str = "") -> None:
        launch = self.launch
        if launch is None:
            return
        if self.scope is not None:
            self.memory_ops[self.scope] += 1
        addrs = np.asarray(ptrs.data)
        if addrs.dtype != np.uint64:
            addrs = addrs.astype(np.uint64)
        enabled = addrs.reshape(-1)
        lanes = None
        if mask is not None:
            m = np.asarray(mask.data)
            if m.shape != addrs.shape:
                m = np.broadcast_to(m, addrs.shape)
            if not m.all():
                lanes = np.flatnonzero(m)
                enabled = enabled[lanes]
        if enabled.size == 0:
            return
        element = ptrs.get_element_ty()
        size = max(1, element.primitive_bitwidth // 8)
        if self.seen is not None:
            self.seen.add(op, enabled, size)
        best, best_ok, best_count = None, None, -1
        for i, region in enumerate(launch.regions):
            ok = region.contains(enabled, size)
            count = int(ok.sum())
            if count == enabled.size:
                if i:  # the next access most likely hits the same tensor: look there first
                    launch.regions.insert(0, launch.regions.pop(i))
                if self.races is not None:
                    self.races.access(launch, op, region, enabled, lanes, addrs.shape, self.grid_idx,
                                      values.data if values is not None else None, kind)
                return
            if count > best_count:
                best, best_ok, best_count = region, ok, count
        bad = np.flatnonzero(~best_ok) if best is not None and best_count > 0 else np.arange(enabled.size)
        raise MemoryViolation(self._message(op, launch, addrs.shape, lanes, enabled, bad, size, best, best_count))

    def _message(self, op: str, launch: Launch, shape: tuple[int, ...], lanes: np.ndarray | None,
                 enabled: np.ndarray, bad: np.ndarray, size: int, home: Region | None, home_count: int) -> str:
        first = int(bad[0])
        lane = int(lanes[first]) if lanes is not None else first
        index = tuple(int(i) for i in np.unravel_index(lane, shape)) if shape else ()
        addr = int(enabled[first])
        verb = {"load": "reads", "store": "writes", "atomic": "updates"}[op]
        program = self.grid_idx()
        where = f" in program {program}" if program is not None else ""
        if home is None or home_count == 0:
            nearest = min(launch.regions, key=lambda r: abs(addr - r.base), default=None)
            target = (f"an address in no tensor argument (nearest: {nearest.describe()}, "
                      f"{nearest.offset_text(addr, size)})") if nearest else "an address in no tensor argument"
        else:
            others = [r for r in launch.regions if r is not home and bool(r.contains(np.array([addr], np.uint64),
                                                                                      size)[0])]
            inside = f", inside {others[0].describe()} instead" if others else ""
            target = f"{home.describe()} at {home.offset_text(addr, size)}{inside}"
        enabled_by = "enabled by its mask" if lanes is not None else "every lane enabled"
        return (f"out-of-bounds {op} in kernel {launch.kernel}{where}: lane {index} of block {tuple(shape)} "
                f"({enabled_by}) {verb} {target}; {bad.size} of {enabled.size} enabled lanes are outside the tensor")


def active() -> Checker | None:
    """This process's checker once installed (kept in the session's state, suite/session/stash.py)."""
    return stash.session().checker


def install() -> Checker:
    """Hook the interpreter (TRITON_INTERPRET=1): launches note their tensors, memory operations are checked."""
    if active() is not None:
        return active()
    from suite import compat

    compat.require("memcheck-hooks")  # a Triton that moved what this hooks: a usage error naming the patch
    from triton.runtime import interpreter as interp

    races = os.environ.get(RACE_ENV, "1")
    if races not in ("0", "1"):
        raise pytest.UsageError(f"{RACE_ENV}={races!r}: must be 1 (check for races, the default) or 0 (off, to time "
                                f"it)")
    checker = Checker(races=races == "1")
    builder_cls, executor = interp.InterpreterBuilder, interp.GridExecutor
    checker.grid_idx = lambda: getattr(interp.interpreter_builder, "grid_idx", None)
    load, store = builder_cls.create_masked_load, builder_cls.create_masked_store
    rmw, cas = builder_cls.create_atomic_rmw, builder_cls.create_atomic_cas
    init_args, call = executor._init_args_hst, executor.__call__

    # Keyword arguments pass through: tensor-descriptor loads and stores arrive here with cache modifiers.
    def create_masked_load(self, ptrs, mask, other, *rest, **kw):
        checker.check("load", ptrs, mask)
        return load(self, ptrs, mask, other, *rest, **kw)

    def create_masked_store(self, ptrs, value, mask, *rest, **kw):
        checker.check("store", ptrs, mask, value)
        return store(self, ptrs, value, mask, *rest, **kw)

    def create_atomic_rmw(self, op, ptr, val, mask, *rest):
        checker.check("atomic", ptr, mask, val, getattr(op, "name", str(op)).rsplit(".", 1)[-1].lower())
        return rmw(self, op, ptr, val, mask, *rest)

    def create_atomic_cas(self, ptr, cmp, val, *rest):
        checker.check("atomic", ptr, None, val, "cas")
        return cas(self, ptr, cmp, val, *rest)

    def _init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        checker.begin(getattr(self.fn, "__name__", "kernel"), list(self.arg_names), list(args_hst), kwargs_hst)
        return args_hst, kwargs_hst

    def __call__(self, *args, **kwargs):
        try:
            return call(self, *args, **kwargs)
        finally:
            checker.end()

    set_grid_idx, create_barrier = builder_cls.set_grid_idx, builder_cls.create_barrier

    def noting_set_grid_idx(self, x, y, z):
        checker.new_program()  # nothing it does races with another program's lanes (not checked here)
        return set_grid_idx(self, x, y, z)

    def noting_create_barrier(self, *args, **kw):
        checker.barrier()
        return create_barrier(self, *args, **kw)

    reduce_scan = interp.ReduceScanOpInterface.apply

    def ordering_reduce_scan(self, input):  # noqa: A002 - Triton's name, which suite/compat.py checks
        # Across warps, a reduction or scan goes through shared memory with a barrier (bar.sync), where the compiler
        # keeps it: not one whose result is unused, nor one hoisted out of a loop (suite/checks/barriers.py). Judged
        # once, at the outermost call (Triton's apply calls itself again with a tuple).
        races = checker.races
        if reducing[0] == 0 and races is not None and races.barriers.kept(sys._getframe(1)):
            checker.barrier()
        reducing[0] += 1
        try:
            return reduce_scan(self, input)
        finally:
            reducing[0] -= 1

    reducing = [0]
    builder_cls.set_grid_idx, builder_cls.create_barrier = noting_set_grid_idx, noting_create_barrier
    interp.ReduceScanOpInterface.apply = ordering_reduce_scan
    builder_cls.create_masked_load, builder_cls.create_masked_store = create_masked_load, create_masked_store
    builder_cls.create_atomic_rmw, builder_cls.create_atomic_cas = create_atomic_rmw, create_atomic_cas
    executor._init_args_hst, executor.__call__ = _init_args_hst, __call__
    stash.session().checker = checker
    return checker


@contextlib.contextmanager
def observing() -> Iterator[Seen | None]:
    """What the launches inside load and store (a :class:`Seen`), where the interpreter's hooks are installed; None
    elsewhere (a GPU: nothing sees a kernel's accesses). The outermost call observes; one inside it yields None."""
    checker = active()
    if checker is None or checker.seen is not None:
        yield None
        return
    checker.seen = seen = Seen()
    try:
        yield seen
    finally:
        checker.seen = None


@contextlib.contextmanager
def scope(kernel: str) -> Iterator[None]:
    """Count the launches and memory operations inside as kernel ``kernel``'s."""
    checker = active()
    if checker is None:
        yield
        return
    outer, checker.scope = checker.scope, kernel
    try:
        yield
    finally:
        checker.scope = outer


def take_counts() -> dict[str, dict[str, int]] | None:
    """Per kernel, the launches and memory operations checked since the last call (a test's share)."""
    checker = active()
    if checker is None or not (checker.launches or checker.memory_ops):
        return None
    out = {k: {"launches": checker.launches[k], "memory_ops": checker.memory_ops[k]}
           for k in set(checker.launches) | set(checker.memory_ops)}
    checker.launches.clear()
    checker.memory_ops.clear()
    return out


def violation_in(exc: BaseException) -> MemoryViolation | None:
    """The MemoryViolation behind ``exc`` (the interpreter wraps what a kernel raises in InterpreterError)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, MemoryViolation):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


# --- GPU runners: the vendor's checker ------------------------------------------------------------------------

def sanitizer_environment(family: str, log_dir: str) -> dict[str, str]:
    """What a run under the vendor's memory checker needs in its environment."""
    env = {SANITIZER_ENV: log_dir}
    if family == "nvidia":
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    else:  # Triton's own AMD ASan test sets these
        env.update(TRITON_ENABLE_ASAN="1", HSA_XNACK="1", HSA_DISABLE_FRAGMENT_ALLOCATOR="1",
                   PYTORCH_NO_HIP_MEMORY_CACHING="1")
    return env


def find_compute_sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and Path(root, "bin", "compute-sanitizer").is_file():
            return str(Path(root, "bin", "compute-sanitizer"))
    return None


def reexec_command(family: str, argv: list[str], log_dir: str) -> list[str]:
    """The command that reruns this pytest invocation under the vendor's memory checker."""
    python = [sys.executable, "-m", "pytest", *argv]
    if family != "nvidia":
        return python  # ASan is compiled into the kernels (TRITON_ENABLE_ASAN): no wrapper
    sanitizer = find_compute_sanitizer()
    if sanitizer is None:
        raise FileNotFoundError("--memcheck on NVIDIA needs compute-sanitizer (CUDA toolkit): not on PATH nor in "
                                "$CUDA_HOME/bin or /usr/local/cuda/bin")
    return [sanitizer, "--tool", "memcheck", "--target-processes", "all", "--print-limit", "64",
            "--log-file", str(Path(log_dir) / "memcheck.%p.log"), *python]


def reexec(family: str, argv: list[str]) -> None:
    """Replace this process with the same run under the vendor's memory checker (never returns)."""
    log_dir = tempfile.mkdtemp(prefix="suite-memcheck-")
    env = {**os.environ, **sanitizer_environment(family, log_dir)}
    command = reexec_command(family, argv, log_dir)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(command[0], command, env)


def sanitizer_report(offset: dict[str, int] | None = None, wait_s: float = 0.0) -> str | None:
    """New findings in this process's compute-sanitizer log since the last call, or None. The checker writes its
    log from its own process: after a fault, ``wait_s`` gives it time to arrive."""
    log_dir = os.environ.get(SANITIZER_ENV)
    if not log_dir:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        found = _read_report(log_dir, offset)
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def _read_report(log_dir: str, offset: dict[str, int] | None) -> str | None:
    offset = offset if offset is not None else stash.session().sanitizer_log_offset
    text = ""
    for path in sorted(Path(log_dir).glob("memcheck.*.log")):  # %p may name the checker's process, not this one
        try:
            with path.open("r", encoding="utf-8", errors="replace") as f:
                f.seek(offset.get(str(path), 0))
                text += f.read()
                offset[str(path)] = f.tell()
        except OSError:
            continue
    return parse_report(text)


def parse_report(text: str) -> str | None:
    """The first findings of a compute-sanitizer log excerpt, one line each, or None."""
    lines = [ln.removeprefix("=========").strip() for ln in text.splitlines()]
    starts = [i for i, ln in enumerate(lines) if ln.startswith(("Invalid", "Uninitialized", "Race", "Barrier",
                                                                "Program hit", "Malloc/Free"))]
    if not starts:
        return None
    shown = ["; ".join(ln for ln in lines[i:i + 5] if ln) for i in starts[:3]]
    more = f" (and {len(starts) - 3} more reports)" if len(starts) > 3 else ""
    return "compute-sanitizer: " + " | ".join(shown) + more


def all_reports(log_dir: str) -> list[str]:
    """Every finding in the checker's logs, one line each (the controller, at the end of a --memcheck run)."""
    found = []
    for path in sorted(Path(log_dir).glob("memcheck.*.log")):
        lines = [ln.removeprefix("=========").strip() for ln in path.read_text(errors="replace").splitlines()]
        found += ["; ".join(ln for ln in lines[i:i + 3] if ln) for i, ln in enumerate(lines) if ln.startswith("Invalid")]
    return found


