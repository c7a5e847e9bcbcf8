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
    the class: a kernel that flushes subnormals, or mishandles NaN, passed, recorded as tested with them), or None."""
    if case.values not in BUILT_VALUES:
        return None
    tensors = [t for t in built.values() if isinstance(t, torch.Tensor) and t.dtype.is_floating_point and t.numel()]
    if not tensors or any(_holds(case.values, t) for t in tensors):
        return None
    return (f"kernel spec {spec.name!r}: the case's value class is {case.values!r}, yet {BUILT_VALUES[case.values]}: "
            f"make_inputs ignored case.values, so the case ran on other values and would be recorded as a class it "
            f"never was. Draw the inputs with kernels.inputs.values (or inputs.rows), which build the class, or leave "
            f"{case.values!r} out of the spec's value_classes (docs/checks.md)")


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
