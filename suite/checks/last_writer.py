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

    def before(self, key: str) -> bool:
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

    def after(self) -> None:
        """After an own kernel's launch: what changed is its."""
        self._depth -= 1
        self.own_launches += 1
        for out in self._outs.values():
            changed = self._changed(out)
            if bool(changed.any()):
                out.own_changed = True
                out.last[changed] = OWN
                out.snap.copy_(_bits(out.tensor))

    def problems(self, kernels: str) -> list[str]:
        """After the run: each output whose judged values are not all the own kernel's, saying why (``kernels``
        names the spec's own kernels). Empty where no own kernel launched (launches.py's rules say so)."""
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
            elif not out.own_changed and name not in self.initial:
                found.append(f"output {name!r}: the {self.own_launches} launch(es) of {kernels} changed none of its "
                             f"{n} element(s) (an empty grid, n=0, every lane masked, or the output handed over as "
                             f"another tensor)")
        return found


def message(problems: list[str]) -> str:
    """The case's failure for ``problems`` (Watch.problems)."""
    return ("broken spec: " + "; ".join(problems) + ". Every value a case judges must be the spec's own kernel's, "
            "written by its launches with nothing written after them: let the kernel write every element of the "
            "suite's outputs (a cast or a fill done by torch afterwards tests torch; where the launcher's own tensors "
            "are the result, test them as they are: make_outputs=None and run returns them), start an accumulating "
            "output from a declared value (initial_outputs) instead of filling it in the launcher, or declare every "
            "kernel that writes an output in jit_fn / jit_fns (docs/checks.md)")
