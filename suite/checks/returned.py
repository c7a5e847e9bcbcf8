"""Outputs a launcher allocates itself and ``run`` returns (``KernelSpec(make_outputs=None)``).

Many libraries' launchers allocate their outputs (``c = torch.empty(...); kernel[grid](a, b, c); return c``). A
spec can test such a launcher as it is: ``make_outputs=None``, and ``run`` returns the outputs (a dict name ->
tensor, or a tensor / tuple of tensors in the order of the spec's ``outputs``). The suite then compares what was
returned, as for any output, but two checks of suite-allocated outputs cannot exist for that memory:

- the guard regions: the suite cannot put poisoned memory around a tensor it did not allocate, so a store past an
  end is not seen there. On the interpreter the memory checker still stops every store outside the tensor it came
  from (suite/checks/memcheck.py), on every case; on a GPU only a ``--memcheck`` run sees it;
- the never-written check: the launcher's ``torch.empty`` holds whatever memory it got, not the poison, so an
  element the kernel skips shows only where that memory differs from the reference.

Each case of such a spec records both as ``unchecked`` in the run file, and the summary names them per kernel:
they are never counted as passed. Everything else applies as usual: inputs compared with their snapshot after every
launch, the reference's checks, the tolerance, a run that launched no kernel, properties (which rerun the launcher).

The precision is the case's, not the launcher's: a float output narrower than the case dtype (less precision, or
less range: fp16 for an fp32 or a bf16 case) is judged at the case dtype's rounding and range, never at its own
looser bound, unless its tolerance declares that narrower dtype as the design (``Tolerance(output_dtype=...)``, a
quantizer's fp8 output): see :func:`judged_dtype`. (An output the spec's ``make_outputs`` allocates has the dtype the
spec chose.)
"""

from __future__ import annotations

from typing import Any

UNCHECKED = (
    "guard regions (no poisoned memory around outputs the launcher allocated: an out-of-bounds store is seen by "
    "the interpreter's memory checker, on a GPU only under --memcheck)",
    "never-written elements (the launcher's outputs start as whatever memory torch.empty got, not the poison)",
)


def returns_outputs(spec: Any) -> bool:
    """Whether ``spec.run`` returns the outputs its launcher allocates."""
    return spec.make_outputs is None


def unchecked(spec: Any) -> list[str]:
    """The checks that cannot apply to the outputs of ``spec``: empty where the suite allocates them."""
    return list(UNCHECKED) if returns_outputs(spec) else []


def collect(spec: Any, value: Any) -> tuple[dict[str, Any], str | None]:
    """The declared outputs in what ``run`` returned, by name: (outputs, None), or ({}, why they cannot be)."""
    declared = list(spec.outputs)
    form = (f"with make_outputs=None, run returns the outputs: a dict of {declared}, "
            + ("a tensor" if len(declared) == 1 else f"or a tuple of {len(declared)} tensors in that order"))
    if hasattr(value, "untyped_storage"):
        value = (value,)
    if isinstance(value, dict):
        got = dict(value)
        if set(got) != set(declared):
            return {}, f"run returned outputs {list(got)}, the spec declares {declared} ({form})"
    elif isinstance(value, (tuple, list)):
        if len(value) != len(declared):
            return {}, f"run returned {len(value)} value(s), the spec declares {len(declared)} output(s) {declared} ({form})"
        got = dict(zip(declared, value, strict=True))
    else:
        return {}, f"run returned {type(value).__name__} ({form})"
    if bad := [k for k, v in got.items() if not hasattr(v, "untyped_storage")]:
        return {}, f"run returned non-tensor output(s) {bad} ({form})"
    return got, None


def summary_lines(cases: list[dict]) -> list[str]:
    """The summary's lines for kernels whose cases record unchecked checks: one per set of such checks."""
    found: dict[tuple[str, ...], set[str]] = {}
    for c in cases:
        if c.get("unchecked"):
            found.setdefault(tuple(c["unchecked"]), set()).add(c["kernel"])
    return [f"UNCHECKED for outputs the launcher allocates and run returns (make_outputs=None) in "
            f"{', '.join(sorted(kernels))}: " + "; ".join(what) for what, kernels in sorted(found.items())]


def judged_dtype(spec: Any, case_dtype: str, out: Any, tolerance: Any) -> tuple[Any, str]:
    """(the dtype whose rounding and range an output is held to where not its own, what a failure then says), or
    (None, ""): an output the launcher allocated that is narrower than the case dtype (or than the tolerance's
    declared ``output_dtype``) is judged at that dtype, never at its own looser bound."""
    import torch

    from kernels.spec import DTYPES

    if not returns_outputs(spec) or not out.dtype.is_floating_point:
        return None, ""
    declared = tolerance.output_dtype
    floor = DTYPES[declared or case_dtype]
    if not floor.is_floating_point or not _narrower(out.dtype, floor, torch):
        return None, ""
    own, held = (str(d).replace("torch.", "") for d in (out.dtype, floor))
    if declared:
        return floor, (f" (the launcher returned {own}, narrower than the {declared} this output's tolerance declares "
                       f"(output_dtype): judged at {declared}'s rounding and range)")
    return floor, (f" (the launcher allocated this output as {own}, narrower than the case's {case_dtype} ({held}): "
                   f"it is judged at {case_dtype}'s rounding and range, not its own. A launcher returns its output in "
                   f"the case's precision; where a narrower output is its design (a quantizer), its tolerance says "
                   f"so: Tolerance(output_dtype=...))")


def _narrower(dtype: Any, than: Any, torch: Any) -> bool:
    """Less precision or less range than ``than``: fp16 against fp32, and against bf16 (fp16's range is smaller)."""
    mine, theirs = torch.finfo(dtype), torch.finfo(than)
    return mine.eps > theirs.eps or mine.max < theirs.max
