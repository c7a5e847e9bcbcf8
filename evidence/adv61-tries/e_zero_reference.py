"""Rule E (a magnitude loose where the reference is zero): tries to pass a relu that is wrong where its answer is 0
under a magnitude written for it. Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/adv61-tries/e_zero_reference.py \
        --kernels='a61e_*' -n 0 -k test_matches_reference --no-results
Each try's outcome (before and after the round's fixes) is in README.md.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.registry import register
from kernels.spec import KernelSpec, Tolerance
from tests.fixtures.false_passes import _RELU

# A magnitude of U gives a bound of about 1 at a zero reference (safety 4, fp32 accumulator, reduction length 1).
U = 1.0 / (4 * 2.0 ** -24)


@triton.jit
def relu_bug(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    out = tl.maximum(x, 0.0)
    if MODE == 1:  # never clamps
        out = x
    if MODE == 2:  # a leak of 1% (a leaky relu for a relu)
        out = tl.where(x > 0, x, 0.01 * x)
    if MODE == 3:  # unclamped for -0.5 < x < 0
        out = tl.where((x > -0.5) & (x < 0), x, out)
    if MODE == 4:  # unclamped where n is odd
        if n % 2 == 1:
            out = x
    if MODE == 5:  # unclamped where n < 16
        if n < 16:
            out = x
    if MODE == 6:  # -0.0 for every 0 (the sign bit set)
        out = tl.where(x > 0, x, -0.0)
    tl.store(out_ptr + offs, out, mask=mask)


def _run(mode):
    def run(inp, out, cfg):
        n = inp["x"].numel()
        relu_bug[(triton.cdiv(n, 64),)](inp["x"], out["out"], n, BLOCK=64, MODE=mode)
    return run


def _at_zero(value):
    """A magnitude of |reference| where it is not 0, ``value(inp, ref)`` where it is."""
    def mag(inp, ref):
        r = ref["out"]
        return {"out": torch.where(r == 0, value(inp, r), r.abs())}
    return mag


def _x(inp):
    return inp["x"].double().abs()


TRIES = {
    # 1 the plain hole the rule closed: 1e30 at every zero reference, a relu that never clamps
    "huge": (1, _at_zero(lambda i, r: torch.full_like(r, 1e30))),
    # 2 inf at zero references (a magnitude not finite counts as 0 in the bound as in the rule)
    "inf": (1, _at_zero(lambda i, r: torch.full_like(r, float("inf")))),
    # 3 NaN at zero references
    "nan": (1, _at_zero(lambda i, r: torch.full_like(r, float("nan")))),
    # 4 negative huge at zero references
    "negative": (1, _at_zero(lambda i, r: torch.full_like(r, -1e30))),
    # 5 exactly the error the kernel makes (|x|), no more: loose only where |x| >= half the largest |reference|
    "local_error": (1, _at_zero(lambda i, r: 1.01 * U * _x(i))),
    # 6 a leaky relu (1%) under a bound of 1.1% of |x| where the answer is 0
    "leak": (2, _at_zero(lambda i, r: 0.011 * U * _x(i))),
    # 7 huge where the reference is 0 and |x| < 0.5 (about 38% of the zeros): the kernel wrong there alone
    "share": (3, _at_zero(lambda i, r: torch.where(_x(i) < 0.5, 1e30, 0.0))),
    # 8 huge at the zeros of the odd-sized cases only (about half the cases loose, not every one)
    "odd_cases": (4, _at_zero(lambda i, r: torch.full_like(r, 1e30 if r.numel() % 2 else 0.0))),
    # 9 huge at the zeros of cases with fewer than 16 elements (fewer than 8 zeros: not judged)
    "small_cases": (5, _at_zero(lambda i, r: torch.full_like(r, 1e30 if r.numel() < 16 else 0.0))),
    # 10 just under half the output's largest |reference| at every zero
    "just_under_half": (1, _at_zero(lambda i, r: torch.full_like(r, 0.49 * U * float(r.abs().max())))),
    # 11 -0.0 written for 0 (a sign only): right? (no magnitude)
    "negzero": (6, None),
    # 12 the magnitude huge at zeros, broadcast from one element
    "broadcast": (1, lambda inp, ref: {"out": torch.full((1,), 1e30, dtype=torch.float64)}),
    # 13 huge at the zeros, and the largest |reference| made huge too (one element of 1e35 in the magnitude there)
    "huge_and_top": (1, _at_zero(lambda i, r: torch.full_like(r, 1e30))),
    # 14 1e30 at the first half of the zeros only (exactly half)
    "half_exactly": (1, lambda inp, ref: {"out": torch.where(
        (ref["out"] == 0) & (torch.cumsum((ref["out"] == 0).long(), 0) <= (ref["out"] == 0).sum() // 2), 1e30,
        ref["out"].abs())}),
    # 15 1e30 at all but one zero
    "all_but_one": (1, lambda inp, ref: {"out": torch.where(
        (ref["out"] == 0) & (torch.cumsum((ref["out"] == 0).long(), 0) > 1), 1e30, ref["out"].abs())}),
    # 16 the bound at the zeros scaled to the error of the kernel and capped under half the scale
    "capped": (1, _at_zero(lambda i, r: torch.minimum(1.01 * U * _x(i), torch.full_like(r, 0.49 * U * float(
        r.abs().max()))))),
    # 17 a leak of 1% under a flat bound of 2% of the scale at the zeros
    "leak_flat": (2, _at_zero(lambda i, r: torch.full_like(r, 0.02 * U * max(float(r.abs().max()), 1e-30)))),
    # 18 the reduction length 10**30 in the cases of odd size alone (no magnitude)
    "odd_reduction": (4, "reduction"),
    # 19 1e30 at the zeros, given through output_tolerances
    "output_tolerances": (1, "output_tolerances"),
    # 20 the reference's zeros written as -0.0, 1e30 there
    "negzero_reference": (1, "negzero_reference"),
}
for name, (mode, magnitude) in TRIES.items():
    extra = {}
    if magnitude is None:
        tolerance = Tolerance()
    elif magnitude == "reduction":
        tolerance = Tolerance(reduction=lambda case: 10**30 if case.shape["N"] % 2 else 1)
    elif magnitude == "output_tolerances":
        tolerance = Tolerance()
        extra = {"output_tolerances": {"out": Tolerance(magnitude=_at_zero(lambda i, r: torch.full_like(r, 1e30)))}}
    elif magnitude == "negzero_reference":
        tolerance = Tolerance(magnitude=_at_zero(lambda i, r: torch.full_like(r, 1e30)))
        extra = {"reference": lambda inp, case: {"out": torch.where(inp["x"] > 0, inp["x"].double(), -0.0)}}
    else:
        tolerance = Tolerance(magnitude=magnitude)
    register(KernelSpec(name="a61e_" + name, description="try", tolerance=tolerance,
                        **{**_RELU, "run": _run(mode), **extra}))
