"""Round six, rule E again (a magnitude loose where the reference is zero, now judged in every case however few its
zeros): tries to pass a relu wrong where its answer is 0 under a magnitude written for it, and right kernels whose
magnitudes might now fail as broken specs. Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/adv61-tries/f_zero_small.py \
        --kernels='a61f_*' -n 2 -k test_matches_reference --no-results -rA
Each try's outcome (before and after FEWEST_ZEROS) is in README.md.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.spec import KernelSpec, Tolerance
from tests.fixtures.false_passes import _RELU

U = 1.0 / (4 * 2.0 ** -24)  # a magnitude of U: a bound of about 1 at a zero reference (fp32, safety 4, length 1)


@triton.jit
def relu_f(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    out = tl.maximum(x, 0.0)
    if MODE == 1:  # unclamped at element 0 alone, in cases of 32 or more elements
        if n >= 32:
            out = tl.where(offs == 0, x, out)
    if MODE == 2:  # unclamped at element 0 alone, any size
        out = tl.where(offs == 0, x, out)
    if MODE == 3:  # unclamped where n < 8
        if n < 8:
            out = x
    if MODE == 4:  # unclamped where n == 1
        if n == 1:
            out = x
    if MODE == 5:  # unclamped where 2 <= n <= 3
        if (n >= 2) & (n <= 3):
            out = x
    if MODE == 6:  # unclamped in the first quarter of the elements
        out = tl.where(offs * 4 < n, x, out)
    if MODE == 7:  # unclamped at the last element alone
        out = tl.where(offs == n - 1, x, out)
    if MODE == 8:  # unclamped where n < 16, and 1% leak elsewhere
        if n < 16:
            out = x
        else:
            out = tl.where(x > 0, x, 0.01 * x)
    if MODE == 9:  # unclamped at even elements where n < 16
        if n < 16:
            out = tl.where(offs % 2 == 0, x, out)
    if MODE == 10:  # unclamped at every third element, any size
        out = tl.where(offs % 3 == 0, x, out)
    if MODE == 11:  # half the answer where it is 0: -x/2 where x < 0 (wrong sign and size), n < 16
        if n < 16:
            out = tl.where(x > 0, x, -0.5 * x)
    tl.store(out_ptr + offs, out, mask=mask)


def _run(mode):
    def run(inp, out, cfg):
        inputs.require_dense("a61f", "x", inp["x"])  # the contract probe's layouts refused: the rule alone judged
        n = inp["x"].numel()
        relu_f[(triton.cdiv(n, 64),)](inp["x"], out["out"], n, BLOCK=64, MODE=mode)
    return run


def _mag(where):
    """A magnitude of |reference|, and 1e30 at the zeros ``where(ref, n)`` picks."""
    def mag(inp, ref):
        r = ref["out"]
        pick = (r == 0) & where(r, r.numel())
        return {"out": torch.where(pick, torch.full_like(r, 1e30), r.abs())}
    return mag


def _idx(r):
    return torch.arange(r.numel(), device=r.device)


def _first_zeros(r, count):
    zero = r == 0
    return zero & (torch.cumsum(zero.long(), 0) <= count)


TRIES = {
    # wrong kernels, magnitudes written for them
    "first_large": (1, _mag(lambda r, n: (_idx(r) == 0) & (n >= 32))),
    "first_any": (2, _mag(lambda r, n: _idx(r) == 0)),
    "small_lt8": (3, _mag(lambda r, n: torch.full_like(r, n < 8, dtype=torch.bool))),
    "n_is_1": (4, _mag(lambda r, n: torch.full_like(r, n == 1, dtype=torch.bool))),
    "n_2_3": (5, _mag(lambda r, n: torch.full_like(r, 2 <= n <= 3, dtype=torch.bool))),
    "first_quarter": (6, _mag(lambda r, n: _idx(r) * 4 < n)),
    "last_only": (7, _mag(lambda r, n: _idx(r) == n - 1)),
    "small_and_leak": (8, _mag(lambda r, n: torch.full_like(r, n < 16, dtype=torch.bool))),
    "even_small": (9, _mag(lambda r, n: (_idx(r) % 2 == 0) & (n < 16))),
    "every_third": (10, _mag(lambda r, n: _idx(r) % 3 == 0)),
    "half_answer_small": (11, _mag(lambda r, n: torch.full_like(r, n < 16, dtype=torch.bool))),
    # loose at fewer than half of each case's zeros, whatever their count (z zeros: (z - 1) // 2 loose)
    "under_half_count": (10, lambda inp, ref: {"out": torch.where(
        _first_zeros(ref["out"], (int((ref["out"] == 0).sum()) - 1) // 2), 1e30, ref["out"].abs())}),
    # just under half the scale at zeros of small cases (below the rule's fraction)
    "under_scale_small": (3, lambda inp, ref: {"out": torch.where(
        (ref["out"] == 0) & (ref["out"].numel() < 8), 0.49 * U * float(ref["out"].abs().max()), ref["out"].abs())}),
    # loose in small cases through the reduction length (no magnitude): judged by another rule
    "reduction_small": (3, "reduction_small"),
    # the magnitude loose at zeros of small cases, given through output_tolerances
    "output_tolerances_small": (3, "output_tolerances_small"),
    # the reference's zeros as -0.0 in small cases, 1e30 there
    "negzero_small": (3, "negzero_small"),
    # right kernels (must pass): magnitudes that are legitimately large somewhere
    "right_mag_abs_x": (0, lambda inp, ref: {"out": inp["x"].double().abs()}),
    "right_mag_tiny_at_zero": (0, _mag(lambda r, n: torch.zeros_like(r, dtype=torch.bool))),
    "right_mag_scale_small": (0, lambda inp, ref: {"out": torch.where(
        ref["out"] == 0, 0.4 * U * float(ref["out"].abs().max()), ref["out"].abs())}),
    "right_mag_huge_small": (0, _mag(lambda r, n: torch.full_like(r, n < 8, dtype=torch.bool))),
}
for name, (mode, magnitude) in TRIES.items():
    extra = {}
    if magnitude == "reduction_small":
        tolerance = Tolerance(reduction=lambda case: 10**30 if case.shape["N"] < 8 else 1)
    elif magnitude == "output_tolerances_small":
        tolerance = Tolerance()
        extra = {"output_tolerances": {"out": Tolerance(magnitude=_mag(
            lambda r, n: torch.full_like(r, n < 8, dtype=torch.bool)))}}
    elif magnitude == "negzero_small":
        tolerance = Tolerance(magnitude=_mag(lambda r, n: torch.full_like(r, n < 8, dtype=torch.bool)))
        extra = {"reference": lambda inp, case: {"out": torch.where(inp["x"] > 0, inp["x"].double(), -0.0)}}
    else:
        tolerance = Tolerance(magnitude=magnitude)
    register(KernelSpec(name="a61f_" + name, description="try", tolerance=tolerance,
                        **{**_RELU, "run": _run(mode), **extra}))
