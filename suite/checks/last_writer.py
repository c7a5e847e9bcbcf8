"""Who wrote the values a case judges: the spec's own kernel, or something after it or beside it.

A launcher could hand its outputs to the spec's own kernel and then overwrite them (torch's ``copy_``, a correct
helper kernel), launch the own kernel on none of their elements (``n=0``, an empty grid, every lane masked, an empty
view), or let torch write part of an output before the own kernel runs and never touch it again. Each case's
launch watches its outputs (:class:`Watch`): at every launch of one of the spec's own kernels (any ``@triton.jit``
function, where the spec declares none) the outputs' bits are compared with a snapshot taken after the last launch
of it, before and after the launch; each element remembers who changed it last (nobody, the own kernel, or anyone
else). After the run:

- an element changed after the own kernel's last launch fails (the values judged are not the kernel's);
- an element whose last change was not the own kernel's fails (torch or a helper wrote it before the own kernel, or
  between its launches, and it never wrote it again);
- an output with elements that the own kernel's launches left entirely unchanged fails (unless the spec starts it
  from a declared value, ``initial_outputs``: an accumulating kernel may add nothing).

An element the own kernel leaves as the suite left it (the poison, or the declared initial value) is nobody's
change: the never-written check judges the poison (an integer kernel may write the poison's value rightly). The
bits are compared, so a NaN written over the poison's NaN is a change. Snapshots are of the declared outputs only,
one copy and one byte of state per element, on the outputs' device (on the host where the device has no room).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

NOBODY, OWN, OTHER = 0, 1, 2
_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """``t`` as integers of its element size (NaN payloads compared exactly); complex as its real pairs."""
    if t.is_complex():
        t = torch.view_as_real(t)
    view = _INT_VIEW.get(t.element_size())
    return t.view(view) if view is not None and t.dtype != view else t


def _copy(t: torch.Tensor) -> torch.Tensor:
    try:
        return _bits(t).clone()
    except torch.OutOfMemoryError:
        return _bits(t).to("cpu", copy=True)


@dataclass
class _Out:
    tensor: torch.Tensor
    snap: torch.Tensor
    last: torch.Tensor  # NOBODY / OWN / OTHER per element
    own_changed: bool = False
    after: int = 0  # elements changed after the own kernel's last launch (judged at the end)


@dataclass
class Watch:
    """The outputs of one launch and who changed each element last (see the module's docstring). ``own``: the
    kernel keys (launches.kernel_key) of the spec's own kernels; empty where the spec declares none (every launch
    counts as its own). ``initial``: outputs the suite starts from a declared value."""

    outputs: dict[str, torch.Tensor]
    own: set[str]
    initial: set[str] = field(default_factory=set)
    own_launches: int = 0
    _outs: dict[str, _Out] = field(default_factory=dict)
    _depth: int = 0

    def __post_init__(self) -> None:
        for name, t in self.outputs.items():
            if isinstance(t, torch.Tensor) and t.numel():
                snap = _copy(t)
                self._outs[name] = _Out(t, snap, torch.zeros(t.shape, dtype=torch.uint8, device=snap.device))

    def is_own(self, key: str) -> bool:
        return not self.own or key in self.own

    @staticmethod
    def _changed(out: _Out) -> torch.Tensor:
        return _bits(out.tensor).to(out.snap.device) != out.snap

    def before(self, key: str, tensors: list[torch.Tensor] = ()) -> bool:  # noqa: ARG002 - ReturnedWatch's
        """Before a launch of ``key``: what changed since the last snapshot was someone else's. Whether to call
        :meth:`after` once the launch returns (an own kernel's outermost launch)."""
        if not self.is_own(key) or self._depth:
            return False
        self._depth += 1
        for out in self._outs.values():
            changed = self._changed(out)
            out.last[changed] = OTHER
            out.snap.copy_(_bits(out.tensor))
        return True

    def after(self, seen: object = None) -> None:  # noqa: ARG002 - ReturnedWatch's
        """After an own kernel's launch: what changed is its."""
        self._depth -= 1
        self.own_launches += 1
        for out in self._outs.values():
            changed = self._changed(out)
            if bool(changed.any()):
                out.own_changed = True
                out.last[changed] = OWN
                out.snap.copy_(_bits(out.tensor))

    def problems(self, kernels: str, all_poison: frozenset[str] = frozenset()) -> list[str]:
        """After the run: each output whose judged values are not all the own kernel's, saying why (``kernels``
        names the spec's own kernels). Empty where no own kernel launched (launches.py's rules say so).
        ``all_poison``: outputs that still hold the poison in every element, where the never-written check fails
        them anyway: an output the own kernel changed nowhere is left to it there (a kernel that stores no lane of
        a small case is the kernel's bug, and says so), and judged here only where the poison cannot tell."""
        if not self.own_launches:
            return []
        found = []
        for name, out in self._outs.items():
            after = int(self._changed(out).sum())
            others = int((out.last == OTHER).sum())
            n = out.tensor.numel()
            if after:
                found.append(f"output {name!r}: {after} of {n} element(s) changed after the last launch of {kernels} "
                             f"(by torch or another kernel): the values judged are not the kernel's")
            elif others:
                found.append(f"output {name!r}: {others} of {n} element(s) were written by torch or another kernel "
                             f"before or between the launches of {kernels}, and never by it after: the values judged "
                             f"there are not the kernel's")
            elif not out.own_changed and name not in self.initial and name not in all_poison:
                found.append(f"output {name!r}: the {self.own_launches} launch(es) of {kernels} changed none of its "
                             f"{n} element(s) (an empty grid, n=0, every lane masked, or the output handed over as "
                             f"another tensor)")
        return found


def message(problems: list[str], returned: bool = False) -> str:
    """The case's failure for ``problems`` (Watch.problems, or ReturnedWatch.problems where ``returned``)."""
    if returned:
        return ("broken spec: " + "; ".join(problems) + ". Every value a case judges must be the spec's own "
                "kernel's: return the tensors its launches wrote, as they left them; where torch finishes an output "
                "from the kernel's writes by design (a sum of its partials), declare it with the reason: "
                "host_epilogue={'<output>': '<why>'} (docs/checks.md)")
    return ("broken spec: " + "; ".join(problems) + ". Every value a case judges must be the spec's own kernel's, "
            "written by its launches with nothing written after them: let the kernel write every element of the "
            "suite's outputs (a cast or a fill done by torch afterwards tests torch; where the launcher's own tensors "
            "are the result, test them as they are: make_outputs=None and run returns them), start an accumulating "
            "output from a declared value (initial_outputs) instead of filling it in the launcher, or declare every "
            "kernel that writes an output in jit_fn / jit_fns (docs/checks.md)")


# --- outputs the launcher allocates and returns (make_outputs=None) ------------------------------------------------

def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under ``t``, as bytes."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def _extent(t: torch.Tensor) -> tuple[int, int]:
    """The bytes [lo, hi) of its storage that ``t`` spans (negative strides included)."""
    size = t.element_size()
    low = high = t.storage_offset()
    for n, step in zip(t.shape, t.stride(), strict=True):
        if n > 1:
            (low, high) = (low + (n - 1) * step, high) if step < 0 else (low, high + (n - 1) * step)
    return low * size, (high + 1) * size


def _positions(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """The byte offsets into its storage of every byte of ``t``'s elements."""
    size = t.element_size()
    start = torch.zeros(1, dtype=torch.int64, device=device).expand(t.shape) if t.dim() else torch.zeros(
        (), dtype=torch.int64, device=device)
    for d, (n, step) in enumerate(zip(t.shape, t.stride(), strict=True)):
        shape = [1] * t.dim()
        shape[d] = n
        start = start + torch.arange(n, device=device).view(shape) * step
    start = (start.reshape(-1) + t.storage_offset()) * size
    return (start[:, None] + torch.arange(size, device=device)[None, :]).reshape(-1)


@dataclass
class _Storage:
    data: torch.Tensor  # the storage's bytes (a live view)
    snap: torch.Tensor  # its bytes after the last launch of an own kernel that received it
    last: torch.Tensor  # NOBODY / OWN / OTHER per byte, from the first own launch that received it on
    reached: torch.Tensor  # the bytes some own launch's tensor arguments spanned
    stored: torch.Tensor  # the bytes an own launch stored to (where the interpreter's hooks saw its stores)


@dataclass
class ReturnedWatch:
    """Who wrote the outputs a launcher allocates and ``run`` returns (make_outputs=None), which the suite cannot
    hand over or poison: at each outermost launch of one of the spec's own kernels, every storage its tensor
    arguments lie in is compared with its snapshot (bytes changed since are someone else's), then again after the
    launch (bytes changed are the kernel's), and snapshotted. After the run each returned output must lie in bytes
    some own launch's arguments spanned (a tensor torch made, or that the kernel never received, is not the
    kernel's), hold there exactly what the last own launch that received it left, and no byte an own launch did not
    write last. What torch wrote before the first own launch that received the storage is not seen (nothing tells
    a launcher's torch.zeros from an answer), nor whether an own launch wrote an output at all (a store of the value
    already there changes nothing): an output of such a spec is not checked for never-written elements
    (suite/checks/returned.py). ``host_epilogue``: outputs the spec declares torch finishes from the kernel's writes
    (KernelSpec.host_epilogue): those need only that the own launches wrote something."""

    own: set[str]
    host_epilogue: set[str] = field(default_factory=set)
    own_launches: int = 0
    blind: int = 0  # own launches whose stores nothing saw (a GPU): the never-stored rule is not applied
    _storages: dict[int, _Storage] = field(default_factory=dict)
    _current: list[tuple[int, int, int]] = field(default_factory=list)
    _depth: int = 0

    def is_own(self, key: str) -> bool:
        return not self.own or key in self.own

    def before(self, key: str, tensors: list[torch.Tensor] = ()) -> bool:
        if not self.is_own(key) or self._depth:
            return False
        self._depth += 1
        self._current = []
        for t in tensors:
            if not isinstance(t, torch.Tensor) or not t.numel():
                continue
            ptr = int(t.untyped_storage().data_ptr())
            got = self._storages.get(ptr)
            data = _bytes(t)
            if got is None or got.data.numel() != data.numel():
                snap = _copy(data)
                got = self._storages[ptr] = _Storage(data, snap, torch.zeros_like(snap),
                                                     torch.zeros_like(snap, dtype=torch.bool),
                                                     torch.zeros_like(snap, dtype=torch.bool))
            else:
                changed = data.to(got.snap.device) != got.snap
                got.last[changed] = OTHER
                got.snap.copy_(data)
            low, high = _extent(t)
            self._current.append((ptr, max(low, 0), high))
        return True

    def after(self, seen: object = None) -> None:
        """After an own launch: what changed is its; with ``seen`` (memcheck.Seen), the bytes it stored."""
        self._depth -= 1
        self.own_launches += 1
        self.blind += seen is None
        for ptr in {p for p, _, _ in self._current}:
            got = self._storages[ptr]
            changed = got.data.to(got.snap.device) != got.snap
            got.last[changed] = OWN
            got.snap.copy_(got.data)
            if seen is not None and got.data.device.type == "cpu":
                seen.mark("store", int(got.data.data_ptr()), got.stored)
            elif seen is not None:
                self.blind += 1  # the interpreter ran on a host copy: its addresses are not this memory's
        for ptr, low, high in self._current:
            self._storages[ptr].reached[low:high] = True

    def problems(self, outputs: dict[str, torch.Tensor], kernels: str) -> list[str]:
        """After the run: each returned output whose values are not the own kernel's, saying why."""
        if not self.own_launches:
            return []
        found = []
        wrote = any(bool((s.last == OWN).any()) for s in self._storages.values())
        for name, t in outputs.items():
            if not isinstance(t, torch.Tensor) or not t.numel():
                continue
            if name in self.host_epilogue:
                if not wrote:
                    found.append(f"output {name!r} is declared finished by torch from the kernel's writes "
                                 f"(host_epilogue), but the {self.own_launches} launch(es) of {kernels} wrote nothing")
                continue
            got = self._storages.get(int(t.untyped_storage().data_ptr()))
            at = _positions(t, got.snap.device) if got is not None else None
            if got is None or not bool(got.reached[at].all()):
                found.append(f"output {name!r}: the tensor returned is not memory that a launch of {kernels} "
                             f"received (torch made it, or the kernel wrote another tensor)")
                continue
            size, n = t.element_size(), t.numel()
            after = int((_bits_at(t, got) != got.snap[at]).view(n, size).any(1).sum())
            others = int((got.last[at] == OTHER).view(n, size).any(1).sum())
            if after:
                found.append(f"output {name!r}: {after} of {n} element(s) changed after the last launch of "
                             f"{kernels} that received it (by torch or another kernel): the values judged are not "
                             f"the kernel's")
            elif others:
                found.append(f"output {name!r}: {others} of {n} element(s) were written by torch or another "
                             f"kernel between the launches of {kernels}, and never by it after: the values judged "
                             f"there are not the kernel's")
            elif not self.blind and (unstored := int((~got.stored[at]).view(n, size).any(1).sum())):
                found.append(f"output {name!r}: {unstored} of {n} element(s) no launch of {kernels} stored to: "
                             f"they hold what the memory held before its first launch that received it (torch's "
                             f"writes, or what the allocator left), which the kernel only read or left alone")
        return found


def _bits_at(t: torch.Tensor, got: _Storage) -> torch.Tensor:
    return got.data.to(got.snap.device)[_positions(t, got.snap.device)]
