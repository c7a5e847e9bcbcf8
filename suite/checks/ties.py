"""Integer outputs of indices where ties are legal (``KernelSpec.index_outputs``, ``IndexOutput``): topk's or
argmax's indices, where any index of an element equal to the one the reference picked is right (a kernel may keep
the last of equal maxima where torch keeps the first, and low-precision inputs tie often). Compared by what they
select: every index in range, distinct along the dim where the rule says so, and the input gathered at the returned
indices equal, exactly, to the input gathered at the reference's indices. An index compared index by index would
fail a right kernel on every tie."""

from __future__ import annotations

import math
from typing import Any

import torch

from suite.checks.tolerance import OutputCheck, beside_unwritten, with_reference_where


def _at(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in mask.nonzero()[0])


def check_indices(name: str, rule: Any, inputs: dict[str, Any], out: torch.Tensor, ref: torch.Tensor,
                  unwritten: torch.Tensor | None = None) -> OutputCheck:
    """``out`` (indices into ``inputs[rule.source]`` along ``rule.dim``) against the reference's indices, up to
    ties; ``unwritten``: its elements that still hold the poison."""
    def fail(detail: str) -> OutputCheck:
        return OutputCheck(name, False, math.inf, math.inf, f"{name}: {detail}")

    if unwritten is not None and bool(unwritten.any()):
        never = fail(f"{int(unwritten.sum())} of {out.numel()} elements never written (they still hold the poison; "
                     f"first at {_at(unwritten)})")
        if out.shape != ref.shape:
            return never
        # The written indices are judged too (a known issue of unwritten elements excuses nothing else).
        written = check_indices(name, rule, inputs, with_reference_where(unwritten, out, ref), ref)
        return beside_unwritten(never, written)

    source = inputs.get(rule.source)
    if not isinstance(source, torch.Tensor):
        return fail(f"broken spec: index_outputs[{name!r}] names input {rule.source!r}, which make_inputs does not "
                    f"return (inputs: {sorted(inputs)})")
    if out.shape != ref.shape:
        return fail(f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    if out.dtype.is_floating_point:
        return fail(f"broken spec: index_outputs[{name!r}] is a {out.dtype} output, not integer indices")
    got, want = out.detach().to(torch.int64).cpu(), ref.detach().to(torch.int64).cpu()
    src = source.detach().cpu()
    dim = rule.dim % src.dim()
    extent = src.shape[dim]
    bad = (got < 0) | (got >= extent)
    if bad.any():
        at = _at(bad)
        return fail(f"{int(bad.sum())} of {got.numel()} indices out of range [0, {extent}) along dim {dim} of "
                    f"{rule.source!r} (first at {at}: {int(got[at])})")
    if rule.distinct and got.shape[dim] > 1:
        ordered = got.sort(dim=dim).values
        same = ordered.narrow(dim, 1, got.shape[dim] - 1) == ordered.narrow(dim, 0, got.shape[dim] - 1)
        if same.any():
            at = _at(same)
            return fail(f"an index repeats along dim {dim}: {int(ordered[at])} appears more than once in the slice at "
                        f"{at[:dim] + at[dim + 1:]} (the {got.shape[dim]} indices must name different elements)")
    try:
        picked, expected = src.gather(dim, got), src.gather(dim, want)
    except RuntimeError as exc:
        return fail(f"broken spec: index_outputs[{name!r}]: {rule.source!r} cannot be gathered at the indices along "
                    f"dim {dim} ({exc})")
    differ = ~((picked == expected) | (picked.isnan() & expected.isnan()))
    if differ.any():
        at = _at(differ)
        return fail(f"{int(differ.sum())} of {got.numel()} indices select another value than the reference's (first at "
                    f"{at}: index {int(got[at])} selects {float(picked[at])!r}, the reference's index {int(want[at])} "
                    f"selects {float(expected[at])!r}; compared up to ties: any index of an equal element is right)")
    return OutputCheck(name, True, 0.0, 0.0, f"{name}: ok, the same elements as the reference's (up to ties)")
