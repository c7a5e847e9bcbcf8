"""The spec's own code as a case runs it: a layout or value class it declares but did not build, and a function of it
that raised.

**Layouts declared, never built.** ``kernels.inputs.place`` builds the layouts ``padded_rows`` (a row stride past the
row's width) and ``transposed`` (column-major). A case in one of them whose tensor inputs are all contiguous,
although at least one of them has a shape the layout would make strided (more than one row; for ``transposed``,
more than one column too), ran on inputs make_inputs built as if the layout were ``contiguous``: a kernel that
hard-codes the row stride passes, and the case is recorded as a layout it never was. It is a broken spec
(:func:`unbuilt_layout`). A spec's own layout names (``bshd``, ``transposed_a``) mean what its make_inputs makes of
them, and are not judged.

**The spec's functions that raise.** make_inputs, make_outputs, ``torch_fallback`` and ``CodePath.taken`` are the
spec's code: an exception from one of them is the spec's to fix, never the kernel's wrong result, and it is said
in one line naming the function, the exception and where the spec's code raised it (:func:`call`), not as a
traceback of the suite. An out-of-memory error (a case too large for the GPU) and a GPU fault stay what they are.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from suite.workers import crash

BUILT_LAYOUTS = ("padded_rows", "transposed")  # the non-contiguous layouts kernels.inputs.place builds


class SpecRaised(Exception):  # noqa: N818 - it names the finding
    """A function of the spec raised; the message names the spec, the function and the exception."""


def _strided_in(shape: tuple[int, ...], case: Any, layout: str) -> bool:
    """Whether ``kernels.inputs.place`` lays a tensor of ``shape`` out non-contiguously in ``layout``."""
    from kernels import inputs

    try:
        probe = inputs.place(torch.empty(shape, dtype=torch.float64, device="meta"), case, "meta", layout)
    except Exception:  # noqa: BLE001 - a shape or dtype the probe cannot build: not judged
        return False
    return not probe.is_contiguous()


# The value classes kernels.inputs builds whose presence an input shows by itself: a subnormal element of a float
# input, a non-finite one. Other classes ('large', 'negative', a spec's own names) are not judged.
BUILT_VALUES = {
    "subnormal": "no input holds a subnormal value (0 < |x| < the smallest normal of its dtype)",
    "special": "no input holds inf or NaN",
}
# The least share of the float elements the spec's own kernel receives that must be of the class: kernels.inputs makes
# every element of a subnormal draw subnormal, and about one in 16 of a special draw inf, -inf or NaN (at least one);
# a special case needs max(1, elements // SPECIAL_SHARE) of them, where a draw of 1/16 falls short with odds below
# 1e-7. One subnormal among normals, or one NaN, passed: a kernel that flushes or mishandles nearly all of them too.
SUBNORMAL_SHARE = 16
SPECIAL_SHARE = 128
# From this many float elements on, a special case's kernel must receive both NaN and an infinity: a draw of
# kernels.inputs misses either with odds below 1e-9 there (inf alone passed a kernel that turns NaN into 0).
BOTH_SPECIALS_FROM = 1024


def _holds(values: str, t: torch.Tensor) -> bool:
    if not t.dtype.is_floating_point or t.numel() == 0:
        return False
    if values == "special":
        return not bool(torch.isfinite(t).all())
    size = t.detach().abs()
    return bool(((size > 0) & (size < torch.finfo(t.dtype).tiny)).any())


def unbuilt_values(spec: Any, case: Any, built: dict) -> str | None:
    """Why the case's inputs are not of the value class it declares: a case of class 'subnormal' none of whose float
    inputs holds a subnormal, or 'special' none of which holds inf or NaN (make_inputs drew normal numbers whatever
    the class: a kernel that flushes subnormals, or mishandles NaN, passed, recorded as tested with them), or None.
    Judged on make_inputs' dict where the spec's own kernel never launched (a torch_fallback case); else
    :func:`unreceived_values` judges what its launches received."""
    if case.values not in BUILT_VALUES:
        return None
    tensors = [t for t in built.values() if isinstance(t, torch.Tensor) and t.dtype.is_floating_point and t.numel()]
    if not tensors or any(_holds(case.values, t) for t in tensors):
        return None
    return (f"kernel spec {spec.name!r}: the case's value class is {case.values!r}, yet {BUILT_VALUES[case.values]}: "
            f"make_inputs ignored case.values, so the case ran on other values and would be recorded as a class it "
            f"never was. Draw the inputs with kernels.inputs.values (or inputs.rows), which build the class, or leave "
            f"{case.values!r} out of the spec's value_classes (docs/checks.md)")


@dataclass
class Received:
    """The float elements the spec's own kernels' launches loaded, counted at each launch from the values it started
    with (so a launcher that flushes or replaces the inputs first is seen): per tensor (its memory, shape, strides and
    dtype), (elements, not zero, subnormal, NaN, inf). On the interpreter, where a hook sees every ``tl.load``
    (memcheck.Seen), a tensor counts only where an own launch loaded some element of it (a drawn tensor handed over
    as an argument the kernel never loads, or with n=0, shows no class to it; a gather's table, whose few rows the
    kernel loads, counts whole), each element by the class it held when received and at each launch that loaded it
    (the lesser stands). Where nothing sees the loads (a GPU), every element a launch received counts, once, as first received,
    counted again where someone else changed its counts since the last own launch that received it left them (the
    smaller counts stand). Exact zeros are no value of a class (a zeroed workspace, padding): the shares are of the
    elements not zero. ``own``: the spec's kernel keys (launches.kernel_key); empty: every launch counts. ``floor``:
    the case dtype's smallest normal, where it is a float dtype."""

    values: str
    own: set[str]
    floor: float = 0.0
    launches: int = 0
    tensors: dict[tuple, tuple[int, ...]] = field(default_factory=dict)  # key -> (storage, counts...)
    left: dict[tuple, tuple[int, ...]] = field(default_factory=dict)  # key -> counts the last own launch left
    integers: int = 0  # elements of integer tensors received (a float input handed over as its bits)
    hooked: bool = False  # an own launch's loads were seen: the class is counted over what was loaded
    # Where the loads are seen: key -> (storage, per-element flags (5, n) as loaded, which elements were loaded).
    loaded: dict[tuple, tuple[int, torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    _pending: list[list[tuple[tuple, Any, torch.Tensor]]] = field(default_factory=list)

    @staticmethod
    def _ident(t: Any) -> tuple:
        return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)

    def is_own(self, key: str) -> bool:
        return not self.own or key in self.own

    def _flags(self, t: Any) -> torch.Tensor:
        """(elements, not zero, subnormal, NaN, inf) per element of ``t``, flattened, as bools."""
        x = t.detach().to(torch.float64 if t.dtype == torch.float64 else torch.float32).reshape(-1)
        size = x.abs()
        floor = max(self.floor, float(torch.finfo(t.dtype).tiny))
        return torch.stack([torch.ones_like(x, dtype=torch.bool), x != 0, (size > 0) & (size < floor),
                            torch.isnan(x), torch.isinf(x)])

    def _counts(self, t: Any) -> tuple[int, ...]:
        return tuple(int(v) for v in self._flags(t).sum(1).tolist())  # summed where t lives: five numbers cross

    def note(self, key: str, tensors: list[Any]) -> None:
        if not self.is_own(key):
            return
        self.launches += 1
        pending = []
        for t in tensors:
            if not isinstance(t, torch.Tensor) or not t.numel():
                continue
            ident = self._ident(t)
            # Per element only where a hook can see the loads (the interpreter, on host memory): on a GPU no launch's
            # loads are seen, and a (5, n) copy to the host at every launch took its cases' launch time up 8-fold.
            if t.device.type == "cpu":
                pending.append((ident, t, self._flags(t) if t.dtype.is_floating_point else None))
            if not t.dtype.is_floating_point:
                if ident not in self.tensors:
                    self.integers += t.numel()
                    self.tensors[ident] = (int(t.untyped_storage().data_ptr()), 0, 0, 0, 0, 0)
                continue
            if ident in self.tensors:
                if ident in self.left and (now := self._counts(t)) != self.left[ident]:  # changed by someone else
                    storage, *was = self.tensors[ident]
                    self.tensors[ident] = (storage, *(min(a, b) for a, b in zip(was, now, strict=True)))
                continue
            self.tensors[ident] = (int(t.untyped_storage().data_ptr()), *self._counts(t))
        self._pending.append(pending)

    def after(self, key: str, tensors: list[Any], seen: Any = None) -> None:
        """After an own launch: the counts it left in the float tensors it received; with ``seen`` (memcheck.Seen,
        the outermost own launch's loads), the elements it loaded, by the class they held when it began."""
        if not self.is_own(key):
            return
        pending = self._pending.pop() if self._pending else []
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.numel() and t.dtype.is_floating_point:
                self.left[self._ident(t)] = self._counts(t)
        if seen is None:
            return
        self.hooked = True
        for ident, t, flags in pending:  # host tensors only (note): the addresses the interpreter loaded from
            hit = torch.from_numpy(seen.touched("load", element_addresses(t)))
            storage = int(t.untyped_storage().data_ptr())
            if flags is None:
                flags = torch.ones((1, t.numel()), dtype=torch.bool)
            _, was, before = self.loaded.get(ident, (storage, flags.clone(), torch.zeros_like(hit)))
            was[:, hit] &= flags[:, hit]
            self.loaded[ident] = (storage, was, before | hit)

    def counted(self, outputs: set[int], hooked: bool = False) -> tuple[int, int, int, int, int]:
        """(elements, not zero, subnormal, NaN, inf) over the float tensors received (``hooked``: loaded), but those
        in ``outputs``' storages."""
        totals = [0, 0, 0, 0, 0]
        if hooked:
            for ident, (storage, flags, hit) in self.loaded.items():
                if storage not in outputs and ident[3].is_floating_point and bool(hit.any()):
                    totals = [a + b for a, b in zip(totals, flags.sum(1).tolist(), strict=True)]
            return tuple(totals)
        for storage, *counts in self.tensors.values():
            if storage not in outputs:
                totals = [a + b for a, b in zip(totals, counts, strict=True)]
        return tuple(totals)

    def loaded_integers(self) -> int:
        """Integer elements an own launch loaded (where the loads are seen)."""
        return sum(hit.numel() for ident, (_, _, hit) in self.loaded.items()
                   if not ident[3].is_floating_point and bool(hit.any()))


def element_addresses(t: torch.Tensor) -> Any:
    """The address of each element of ``t`` (flattened, as uint64 numpy): where a load of it starts."""
    import numpy as np

    offsets = torch.zeros((), dtype=torch.int64)
    for d, (n, step) in enumerate(zip(t.shape, t.stride(), strict=True)):
        shape = [1] * t.dim()
        shape[d] = n
        offsets = offsets + torch.arange(n, dtype=torch.int64).view(shape) * step
    start = int(t.data_ptr())
    return (offsets.reshape(-1).numpy() * t.element_size() + start).astype(np.uint64)


def received(spec: Any, case: Any, own: set[str]) -> Received | None:
    """A :class:`Received` for a case whose value class is judged by what its kernel receives, else None."""
    if case.values not in BUILT_VALUES:
        return None
    from kernels.spec import DTYPES

    dtype = DTYPES.get(case.dtype)
    floor = float(torch.finfo(dtype).tiny) if dtype is not None and dtype.is_floating_point else 0.0
    return Received(case.values, set(own), floor)


def unreceived_values(spec: Any, case: Any, got: Received | None, outputs: dict) -> str | None:
    """Why the spec's own kernel did not receive the case's value class (see :class:`Received`), or None: a
    'subnormal' case whose kernel received fewer than 1/SUBNORMAL_SHARE of its float elements not 0 subnormal, a
    'special' case fewer than max(1, elements // SPECIAL_SHARE) inf or NaN (or, from BOTH_SPECIALS_FROM elements,
    not both), or no float element but 0 at all (inputs handed over as integer bits). ``outputs``' elements are not
    inputs: their storages are left out, but those the spec starts from an input (initial_outputs). None where the own kernel
    never launched (:func:`unbuilt_values` judges make_inputs' dict then)."""
    if got is None or not got.launches:
        return None
    left_out = {int(t.untyped_storage().data_ptr()) for name, t in outputs.items()
                if isinstance(t, torch.Tensor) and name not in spec.initial_outputs}
    floats, elements, sub, nan, inf = got.counted(left_out, got.hooked)
    integers = got.loaded_integers() if got.hooked else got.integers
    got_ = "loaded" if got.hooked else "received"  # the interpreter sees the loads; a GPU run, what was handed over
    head = f"kernel spec {spec.name!r}: the case's value class is {case.values!r}, yet "
    tail = (f". The class is what reaches the kernel: a launcher that flushes, replaces or leaves out the drawn "
            f"values tests other values, recorded as this class. Draw the inputs the kernel receives with "
            f"kernels.inputs.values (or inputs.rows), which build the class, or leave {case.values!r} out of the "
            f"spec's value_classes (docs/checks.md, Value classes built)")
    if not elements and not floats and not integers and all(
            t.numel() == 0 for t in outputs.values() if isinstance(t, torch.Tensor)):
        return None  # an empty case (no element in, none out) has no class to build; "nothing compared" judges it
    if not elements:
        ints = f" ({integers} integer element(s): float values handed over as their bits?)" if integers else ""
        what = f"{floats} float input element(s), every one 0" if floats else f"no float input{ints}"
        return (head + f"the {got.launches} launch(es) of its own kernel(s) {got_} {what}, so the "
                f"class cannot be seen in what the kernel ran on" + tail)
    if case.values == "subnormal":
        if sub * SUBNORMAL_SHARE >= elements:
            return None
        return (head + f"{sub} of the {elements} float input element(s) not 0 its own kernel's launches {got_} are "
                f"subnormal (0 < |x| < the smallest normal of the case dtype or of the tensor's own); at least "
                f"1/{SUBNORMAL_SHARE} of them must be" + tail)
    need = max(1, elements // SPECIAL_SHARE)
    both = elements < BOTH_SPECIALS_FROM or (nan and inf)
    if nan + inf >= need and both:
        return None
    return (head + f"{nan} NaN and {inf} inf among the {elements} float input element(s) not 0 its own kernel's "
            f"launches {got_}; a special case must hand it at least max(1, elements // {SPECIAL_SHARE}) = {need} of them"
            f", and both NaN and an infinity from {BOTH_SPECIALS_FROM} elements on" + tail)


def unbuilt_layout(spec: Any, case: Any, built: dict) -> str | None:
    """Why the case's inputs are not in the layout it declares (see the module docstring), or None."""
    if case.layout not in BUILT_LAYOUTS:
        return None
    tensors = {name: t for name, t in built.items() if isinstance(t, torch.Tensor)}
    if any(not t.is_contiguous() for t in tensors.values()):
        return None
    could = [name for name, t in tensors.items() if t.dim() >= 2 and _strided_in(tuple(t.shape), case, case.layout)]
    if not could:
        return None
    return (f"kernel spec {spec.name!r}: the case's layout is {case.layout!r}, yet every input make_inputs returned is "
            f"contiguous (input(s) {could} have shapes that layout makes strided): make_inputs ignored case.layout, so "
            f"the case ran on contiguous inputs and would be recorded as a layout it never was. Build the inputs "
            f"with kernels.inputs.place(..., case.layout) (or inputs.rows), or leave {case.layout!r} out of the "
            f"spec's layouts (docs/checks.md)")


def _where(exc: BaseException) -> str:
    """' (at FILE:LINE)': the last frame of the traceback outside the suite's own code, where the spec raised."""
    suite_dir = str(Path(__file__).resolve().parent.parent)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(suite_dir)
              and "site-packages" not in f.filename and not f.filename.startswith("<")]
    if not frames:
        return ""
    path = frames[-1].filename
    try:
        path = str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        pass
    return f" (at {path}:{frames[-1].lineno})"


def describe(spec: Any, what: str, exc: BaseException) -> str:
    """One line: the spec's function ``what`` raised ``exc`` (``spec``: the spec or its name)."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:300] + " ..."
    return f"kernel spec {getattr(spec, 'name', spec)!r}: its {what} raised {type(exc).__name__}: {text}{_where(exc)}"


def call(spec: Any, what: str, fn: Callable, *args: Any) -> Any:
    """``fn(*args)``, a function of the spec (named ``what`` in a failure); SpecRaised naming it where it raises.
    Out of memory and GPU faults are raised as they are (a case too large, a poisoned context)."""
    try:
        return fn(*args)
    except torch.OutOfMemoryError:
        raise
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        if crash.OOM_ERRORS.search(text) or crash.STICKY_ERRORS.search(text):
            raise
        message = describe(spec, what, exc)
        exc.__traceback__ = None  # its frames hold the case's tensors
        raise SpecRaised(message) from None
