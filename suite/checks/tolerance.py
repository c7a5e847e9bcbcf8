"""The tolerance rule: error against a float64 reference, bounded by the reduction length.

For each output element the bound is
    safety * ((operand_u + sqrt(K) * u_acc) * mag + u_out * |ref|) + tiny_out
(see kernels.spec.Tolerance). The achieved error over the bound, its maximum over the
output, is the *error ratio*: <= 1 passes, and it is recorded for every case so
numeric drift between vendors shows even when everything passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# A tolerance must fail a result off by this fraction of its reference: a bound at least this share of |reference|
# at the output's largest |reference| passes a relu that returns 1.5x its answer (docs/checks.md, Tolerances).
from kernels._validation import LOOSEST_FRACTION

# Unit roundoff (half an ulp at 1.0) per format.
UNIT_ROUNDOFF = {
    torch.float64: 2.0**-53,
    torch.float32: 2.0**-24,
    torch.float16: 2.0**-11,
    torch.bfloat16: 2.0**-8,
}
# Operand rounding inside an fp32 tl.dot, by the arch's default input precision: both
# operands lose their low mantissa bits (10 kept; the hardware may truncate rather than
# round, so each is off by < 2^-10) and the product by < 2 * 2^-10.
DOT_OPERAND_ROUNDOFF = {"ieee": 0.0, "tf32": 2.0**-9, "xf32": 2.0**-9}
ACCUMULATOR_ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11, "fp64": 2.0**-53}


@dataclass
class OutputCheck:
    output: str
    passed: bool
    error_ratio: float  # max |out - ref| / bound over finite elements; inf when a special value is wrong
    max_abs_error: float
    detail: str


def unit_roundoff(dtype: torch.dtype) -> float:
    if dtype in UNIT_ROUNDOFF:
        return UNIT_ROUNDOFF[dtype]
    if dtype.is_floating_point:
        return float(torch.finfo(dtype).eps) / 2
    return 0.0


def bound(ref: torch.Tensor, mag: torch.Tensor, out_dtype: torch.dtype, reduction_length: int, *,
          safety: float, operand_u: float = 0.0, accumulator: str = "fp32") -> torch.Tensor:
    u_out = unit_roundoff(out_dtype)
    u_acc = ACCUMULATOR_ROUNDOFF[accumulator]
    # Absolute floor: the output dtype's smallest subnormal, but no finer than fp32's smallest
    # normal where the compute is fp32, since GPUs may flush fp32 subnormals to zero (seen on
    # the H100: exp() results below 1.2e-38 stored as 0 in a bf16 output).
    if not out_dtype.is_floating_point:
        tiny = 0.0
    else:
        tiny = float(torch.finfo(out_dtype).tiny * torch.finfo(out_dtype).eps)
        if accumulator == "fp32" and out_dtype.itemsize <= 4:
            tiny = max(tiny, float(torch.finfo(torch.float32).tiny))
    k = max(int(reduction_length), 1)
    return safety * ((operand_u + math.sqrt(k) * u_acc) * mag.abs() + u_out * ref.abs()) + tiny


def loose_bound(ref: torch.Tensor, mag: torch.Tensor | None, out_dtype: torch.dtype, reduction_length: int, *,
                safety: float, operand_u: float = 0.0, accumulator: str = "fp32") -> str | None:
    """Why this tolerance would pass a wrong answer (an element off by LOOSEST_FRACTION of its reference, at the
    output's largest finite |reference|), None where it would not, or "" where there is nothing to judge (an integer
    or empty output, a reference of zeros). The absolute floor is left out: it is the dtype's own. A magnitude that
    is not finite counts as 0, as in check_output."""
    if not out_dtype.is_floating_point or ref.numel() == 0:
        return ""
    ref64 = ref.detach().to(torch.float64)
    size = torch.where(torch.isfinite(ref64), ref64.abs(), torch.zeros_like(ref64))
    idx = _first(size == size.max())
    scale = float(size[idx])
    if scale == 0.0:
        return ""
    if mag is None:
        term = scale
    else:
        term = float(torch.broadcast_to(mag.detach().to(torch.float64), ref.shape)[idx].abs().nan_to_num(posinf=0.0,
                                                                                                           nan=0.0))
    k = max(int(reduction_length), 1)
    u_acc, u_out = ACCUMULATOR_ROUNDOFF[accumulator], unit_roundoff(out_dtype)
    allowed = safety * ((operand_u + math.sqrt(k) * u_acc) * term + u_out * scale)
    if allowed < LOOSEST_FRACTION * scale:
        return None
    return (f"the bound at the output's largest |reference| ({scale:.4g} at {idx}) is {allowed:.4g}, {allowed / scale:.3g}"
            f"x it, so a result off by {LOOSEST_FRACTION:.0%} there would pass (safety {safety:g}, reduction length "
            f"{k:g}, magnitude {term:.4g}, output {str(out_dtype).replace('torch.', '')}); the bound "
            f"safety * ((operand_u + sqrt(K) * u_acc) * magnitude + u_out * |reference|) must stay below "
            f"{LOOSEST_FRACTION:g}x |reference| there")


def check_output(name: str, out: torch.Tensor, ref: torch.Tensor, mag: torch.Tensor | None, *, reduction_length: int,
                 safety: float, operand_u: float = 0.0, accumulator: str = "fp32",
                 unwritten: torch.Tensor | None = None) -> OutputCheck:
    """Check one output against its reference. An element the kernel never wrote (``unwritten``: it still holds
    the poison) fails; NaN passes only where the reference is NaN; infinities must match exactly (a reference
    beyond the output dtype's range is expected to round to inf)."""
    if out.shape != ref.shape:
        return OutputCheck(name, False, math.inf, math.inf, f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    if unwritten is not None and bool(unwritten.any()):
        return OutputCheck(name, False, math.inf, math.inf,
                           f"{name}: {int(unwritten.sum())} of {out.numel()} elements never written (they still hold "
                           f"the poison; first at {_first(unwritten)}. A kernel that reads its output before writing it, "
                           f"in place or accumulating, needs the output's starting value declared in initial_outputs)")
    # Compared where the output lives: a benchmark's outputs have hundreds of millions of elements.
    device = out.device
    if not out.dtype.is_floating_point and not ref.dtype.is_floating_point and not ref.dtype.is_complex:
        # Integers against an integer reference compare as integers: float64 holds 53 bits, so int64 values near
        # 2**60 that differ by one would compare equal there.
        got, want = out.detach().to(device, torch.int64), ref.detach().to(device, torch.int64)
        wrong = got != want
        if wrong.any():
            idx = _first(wrong)
            return OutputCheck(name, False, math.inf, float((got - want).abs().max()),
                               f"{name}: {int(wrong.sum())} of {out.numel()} integers differ (first at {idx}: got "
                               f"{int(got[idx])}, expected {int(want[idx])})")
        return OutputCheck(name, True, 0.0, 0.0, f"{name}: ok, exact")
    out64 = out.detach().to(device, torch.float64)
    ref64 = ref.detach().to(device, torch.float64)
    if not out.dtype.is_floating_point:
        # Integer outputs (indices, masks) have no rounding: they match exactly or fail.
        wrong = ~(out64 == ref64)
        if wrong.any():
            idx = _first(wrong)
            return OutputCheck(name, False, math.inf, float((out64 - ref64).abs().nan_to_num(math.inf).max()),
                              f"{name}: {int(wrong.sum())} of {out.numel()} integers differ (first at {idx}: got "
                              f"{out64[idx].item():g}, expected {ref64[idx].item():g})")
        return OutputCheck(name, True, 0.0, 0.0, f"{name}: ok, exact")
    mag64 = ref64.abs() if mag is None else mag.detach().to(device, torch.float64)
    if out.dtype.is_floating_point and out.dtype != torch.float64:
        # What an exact result rounds to in the output dtype: overflow to inf is then expected.
        rounded = ref64.to(out.dtype).to(torch.float64)
        expected = torch.where(torch.isinf(rounded) & torch.isfinite(ref64), rounded, ref64)
    else:
        expected = ref64
    ref_nan = torch.isnan(expected)
    out_nan = torch.isnan(out64)
    problems = []
    bad_nan = out_nan & ~ref_nan
    if bad_nan.any():
        problems.append(f"{int(bad_nan.sum())} NaN where the reference is not (first at {_first(bad_nan)})")
    missing_nan = ref_nan & ~out_nan
    if missing_nan.any():
        problems.append(f"{int(missing_nan.sum())} non-NaN where the reference is NaN (first at {_first(missing_nan)})")
    ref_inf = torch.isinf(expected)
    out_inf = torch.isinf(out64)
    inf_mismatch = ((ref_inf | out_inf) & ~ref_nan & ~out_nan) & (out64 != expected)
    if inf_mismatch.any():
        idx = _first(inf_mismatch)
        problems.append(f"{int(inf_mismatch.sum())} infinities differ (first at {idx}: got "
                        f"{out64[idx].item()}, expected {expected[idx].item()})")
    finite = torch.isfinite(expected) & torch.isfinite(out64)
    if finite.any():
        err = (out64 - expected).abs()
        bnd = bound(expected, mag64.nan_to_num(posinf=0.0, neginf=0.0, nan=0.0), out.dtype, reduction_length,
                    safety=safety, operand_u=operand_u, accumulator=accumulator)
        ratios = torch.where(finite, err / bnd, torch.zeros_like(err))
        ratio = float(ratios.max())
        max_abs = float(torch.where(finite, err, torch.zeros_like(err)).max())
        if ratio > 1.0:
            idx = _first(ratios == ratios.max())
            problems.append(f"error {err[idx].item():.3e} at {idx} is {ratio:.3g}x the bound {bnd[idx].item():.3e} "
                            f"(got {out64[idx].item()!r}, reference {expected[idx].item()!r}); "
                            f"{int((ratios > 1).sum())} of {out.numel()} elements over"
                            + (_MAGNITUDE_HINT if mag is None and _within_at_output_scale(
                                err, expected, finite, out.dtype, reduction_length, safety, operand_u, accumulator)
                               else ""))
    else:
        ratio, max_abs = 0.0, 0.0
    if problems:
        ratio = math.inf if ratio <= 1.0 else ratio
        return OutputCheck(name, False, ratio, max_abs, f"{name}: " + "; ".join(problems))
    return OutputCheck(name, True, ratio, max_abs, f"{name}: ok, error ratio {ratio:.3g}")


_MAGNITUDE_HINT = (" (every error is within the bound measured against the output's largest |reference|: the tolerance "
                   "has no magnitude, so each element is bounded by its own |reference|, which is too tight where an "
                   "output is a difference of larger terms, such as a loss or a gradient; if so, give "
                   "Tolerance(magnitude=...): docs/adding-a-kernel.md, 'Tolerances')")


def _within_at_output_scale(err: torch.Tensor, expected: torch.Tensor, finite: torch.Tensor, dtype: torch.dtype,
                            reduction_length: int, safety: float, operand_u: float, accumulator: str) -> bool:
    """Whether the errors would pass with every element's magnitude taken as the output's largest |reference|: a
    failure from cancellation (a missing magnitude), not from a wrong value."""
    scale = torch.where(finite, expected.abs(), torch.zeros_like(expected)).max()
    wide = bound(expected, torch.full_like(expected, float(scale)), dtype, reduction_length, safety=safety,
                 operand_u=operand_u, accumulator=accumulator)
    return bool((torch.where(finite, err, torch.zeros_like(err)) <= wide).all())


def _first(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in mask.nonzero()[0])
