"""The tolerance rule: error against a float64 reference, bounded by the reduction length.

For each output element the bound is
    safety * ((operand_u + sqrt(K) * u_acc) * mag + u_out * |ref|) + tiny_out
(tiny_out: SUBNORMAL_STEPS of the output dtype's smallest subnormal, or fp32's smallest normal where fp32 compute may
flush)
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
from kernels._validation import DEFAULT_SAFETY, LOOSEST_DTYPE_FRACTION, LOOSEST_FRACTION
from suite.checks import overflow

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
# The absolute floor, in steps of the output dtype's smallest subnormal. Every rounding in the subnormal range is
# absolute (up to half a step, whatever the value), and a product's later factors scale an earlier one's: rmsnorm's
# x * rstd * weight on fp32 subnormals was 1.6 steps off the float64 reference on an H200. Four steps is still far
# below the subnormal values drawn (kernels/inputs.py, spread over all their binades), so a flush to zero fails.
SUBNORMAL_STEPS = 4


@dataclass
class OutputCheck:
    output: str
    passed: bool
    error_ratio: float  # max |out - ref| / bound over finite elements; inf when a special value is wrong
    max_abs_error: float
    detail: str
    # Each problem of a failing output on its own, named by the output ("out: 1 NaN where the reference is not
    # ..."): a known issue describes problems one by one (suite/session/known_issues.py). Empty: the detail is one.
    problems: tuple[str, ...] = ()
    # The reduction length the bound was given, and over the finite elements with a bound above 0: the sum of
    # (out - ref) / bound, the sum of it signed by the reference (positive: away from zero) and how many they were.
    # The signed-drift rule reads them across a test's cases (suite/checks/drift.py).
    reduction_length: int = 1
    drift: tuple[float, float, int] = (0.0, 0.0, 0)


def unit_roundoff(dtype: torch.dtype) -> float:
    if dtype in UNIT_ROUNDOFF:
        return UNIT_ROUNDOFF[dtype]
    if dtype.is_floating_point:
        return float(torch.finfo(dtype).eps) / 2
    return 0.0


def bound(ref: torch.Tensor, mag: torch.Tensor, out_dtype: torch.dtype, reduction_length: int, *,
          safety: float, operand_u: float = 0.0, accumulator: str = "fp32",
          keep_subnormals: bool = False) -> torch.Tensor:
    u_out = unit_roundoff(out_dtype)
    u_acc = ACCUMULATOR_ROUNDOFF[accumulator]
    # Absolute floor: a few of the output dtype's smallest subnormal, but no finer than fp32's smallest
    # normal where the compute is fp32, since GPUs may flush fp32 subnormals to zero (seen on
    # the H100: exp() results below 1.2e-38 stored as 0 in a bf16 output). Not in a case of the subnormal value
    # class (``keep_subnormals``): there a flush fails, and the message says whose (suite/checks/flushes.py).
    if not out_dtype.is_floating_point:
        tiny = 0.0
    else:
        tiny = SUBNORMAL_STEPS * float(torch.finfo(out_dtype).tiny * torch.finfo(out_dtype).eps)
        if accumulator == "fp32" and out_dtype.itemsize <= 4 and not keep_subnormals:
            tiny = max(tiny, float(torch.finfo(torch.float32).tiny))
    k = max(int(reduction_length), 1)
    return safety * ((operand_u + math.sqrt(k) * u_acc) * mag.abs() + u_out * ref.abs()) + tiny


def loose_bound(ref: torch.Tensor, mag: torch.Tensor | None, out_dtype: torch.dtype, reduction_length: int, *,
                safety: float, operand_u: float = 0.0, accumulator: str = "fp32",
                device: torch.device | None = None) -> str | None:
    """Why this tolerance would pass a wrong answer, None where it would not, or "" where there is nothing to judge (an
    integer or empty output, a reference of zeros). Wrong answers: an element off by LOOSEST_FRACTION of its
    reference at the output's largest finite |reference|; with a magnitude, such an element at half or more of
    the elements whose reference is not zero (a magnitude loose everywhere but there); without one, where the safety
    is above the default, an elementwise result (a reduction length of 1) off by LOOSEST_DTYPE_FRACTION in this
    output's dtype (dtype_safety={'bf16': 100}). The absolute floor is left out: it is the dtype's own. A magnitude
    that is not finite counts as 0, as in check_output. Judged on ``device`` (the output's; the reference's where
    None) in chunks, as check_output compares: a reference computed on the host (suite/checks/host_reference.py) of
    2 billion elements took minutes on a worker's one thread."""
    if not out_dtype.is_floating_point or ref.numel() == 0:
        return ""
    device = ref.device if device is None else device
    at, scale = _largest_finite(ref, device)
    if scale == 0.0:
        return ""
    idx = _unravel(at, ref.shape)
    if mag is None:
        term = scale
    else:
        term = float(torch.broadcast_to(mag.detach(), ref.shape)[idx].to(torch.float64).abs().nan_to_num(posinf=0.0,
                                                                                                          nan=0.0))
    k = max(int(reduction_length), 1)
    u_acc, u_out = ACCUMULATOR_ROUNDOFF[accumulator], unit_roundoff(out_dtype)
    allowed = safety * ((operand_u + math.sqrt(k) * u_acc) * term + u_out * scale)
    if allowed < LOOSEST_FRACTION * scale:
        if mag is not None:
            return _loose_at_most(ref, mag, out_dtype, k, safety=safety, operand_u=operand_u, u_acc=u_acc,
                                  device=device)
        elementwise = safety * (operand_u + u_acc + u_out)
        if safety <= DEFAULT_SAFETY or elementwise < LOOSEST_DTYPE_FRACTION:
            return None
        dtype = str(out_dtype).replace("torch.", "")
        return (f"its safety {safety:g} gives an output of {dtype} a bound of {elementwise:.3g}x |reference| even "
                f"at a reduction length of 1, so an elementwise result off by {elementwise:.0%} would pass; a safety "
                f"above the default {DEFAULT_SAFETY:g} must keep safety * (operand_u + u_acc + u_out) below "
                f"{LOOSEST_DTYPE_FRACTION:g} in each dtype (for {dtype}: a safety below "
                f"{LOOSEST_DTYPE_FRACTION / (operand_u + u_acc + u_out):.3g})")
    return (f"the bound at the output's largest |reference| ({scale:.4g} at {idx}) is {allowed:.4g}, {allowed / scale:.3g}"
            f"x it, so a result off by {LOOSEST_FRACTION:.0%} there would pass (safety {safety:g}, reduction length "
            f"{k:g}, magnitude {term:.4g}, output {str(out_dtype).replace('torch.', '')}); the bound "
            f"safety * ((operand_u + sqrt(K) * u_acc) * magnitude + u_out * |reference|) must stay below "
            f"{LOOSEST_FRACTION:g}x |reference| there")


# The fewest elements (with a reference not zero) whose bounds say whether a magnitude is loose at most of an output;
# an output with fewer is not judged by that rule (its largest |reference| still is).
FEWEST_JUDGED = 8
# Where the reference is zero, every case is judged however few its zeros: a relu unclamped only in the cases of
# fewer than 16 elements (under 8 zeros) passed while this was FEWEST_JUDGED; measured, no shipped output's or
# example's magnitude is loose at any zero of any case (evidence/adv61-tries/README.md, round six).
FEWEST_ZEROS = 1


def _largest_finite(ref: torch.Tensor, device: torch.device) -> tuple[int, float]:
    """(flat index, value) of the first largest finite |ref|, in chunks on ``device``; (0, 0.0) where none is above 0."""
    best, at = 0.0, 0
    for s, e in _chunks(ref.numel()):
        r = _flat(ref, s, e, device)
        size = torch.where(torch.isfinite(r), r.abs(), torch.zeros_like(r))
        top = size.max()
        value, first = read_back([top, _first_index(size == top)])
        if value > best:  # strictly: the first chunk holding the largest keeps it
            best, at = value, s + int(first)
    return at, best


def _loose_at_most(ref: torch.Tensor, mag: torch.Tensor, out_dtype: torch.dtype, k: int, *, safety: float,
                   operand_u: float, u_acc: float, device: torch.device | None = None) -> str | None:
    """Why a magnitude would pass a result off by LOOSEST_FRACTION at half or more of the output's elements whose
    reference is finite and not zero (the largest |reference| alone judged one point: a magnitude loose everywhere
    but there passed); None, or "" for an output with fewer than FEWEST_JUDGED such elements: not judged. In chunks,
    as check_output compares. Where the reference is zero: :func:`loose_at_zero`."""
    u_out = unit_roundoff(out_dtype)
    mag = torch.broadcast_to(mag.detach(), ref.shape)
    judged = loose = 0
    first: tuple[int, float, float, float] | None = None
    device = ref.device if device is None else device
    for s, e in _chunks(ref.numel()):
        r, m = _flat(ref, s, e, device), _flat(mag, s, e, device).abs().nan_to_num(posinf=0.0, nan=0.0)
        size = r.abs()
        counted = torch.isfinite(r) & (size > 0)
        allowed = safety * ((operand_u + math.sqrt(k) * u_acc) * m + u_out * size)
        over = counted & (allowed >= LOOSEST_FRACTION * size)
        counted_n, over_n = (int(v) for v in read_back([counted.sum(), over.sum()]))  # one read a chunk
        judged += counted_n
        if over_n:
            if first is None:
                at = int(over.nonzero()[0, 0])
                first = (s + at, float(r[at]), float(m[at]), float(allowed[at]))
            loose += over_n
    if judged < FEWEST_JUDGED:  # too few to tell most of an output from a few of its elements
        return ""
    if first is None or 2 * loose < judged:  # half or more: a minority is an ill-conditioned few, half is not
        return None
    at, r0, m0, a0 = first
    return (f"the bound is at least {LOOSEST_FRACTION:g}x |reference| at {loose} of the {judged} elements whose "
            f"reference is not zero (first at {_unravel(at, ref.shape)}: reference {r0:.4g}, magnitude {m0:.4g}, "
            f"bound {a0:.4g}; safety {safety:g}, reduction length {k:g}, output "
            f"{str(out_dtype).replace('torch.', '')}), so a result off by {LOOSEST_FRACTION:.0%} at each of them would "
            f"pass; the bound must stay below {LOOSEST_FRACTION:g}x |reference| at most of an output's elements, not "
            f"only at its largest |reference|")


def loose_at_zero(ref: torch.Tensor, mag: torch.Tensor | None, out_dtype: torch.dtype, reduction_length: int, *,
                  safety: float, operand_u: float = 0.0, accumulator: str = "fp32",
                  device: torch.device | None = None) -> str | None:
    """Why a magnitude would pass a result of LOOSEST_FRACTION of the output's scale (its largest finite
    |reference|) at half or more of the elements whose reference is zero (FEWEST_ZEROS of them at least): a relu
    that never clamps passed under a magnitude huge there alone. None where it would not, or where there is nothing
    to judge (no magnitude, an integer output, a reference of zeros). Unlike the elements with a reference, one case
    loose here is a broken spec (suite/checks/harness.py): measured, no shipped output's magnitude is loose where
    its reference is zero in any case, and the test-wide rule (every case loose) let a case with fewer than
    FEWEST_JUDGED zeros, judged tight, pass a relu that never clamps in all the others."""
    if mag is None or not out_dtype.is_floating_point or ref.numel() == 0:
        return None
    device = ref.device if device is None else device
    scale = _largest_finite(ref, device)[1]
    if scale == 0.0:
        return None
    k = max(int(reduction_length), 1)
    u_acc = ACCUMULATOR_ROUNDOFF[accumulator]
    mag = torch.broadcast_to(mag.detach(), ref.shape)
    zeros = loose = 0
    first: tuple[int, float, float] | None = None
    for s, e in _chunks(ref.numel()):
        r, m = _flat(ref, s, e, device), _flat(mag, s, e, device).abs().nan_to_num(posinf=0.0, nan=0.0)
        zero = r == 0
        over = zero & (safety * (operand_u + math.sqrt(k) * u_acc) * m >= LOOSEST_FRACTION * scale)
        zero_n, over_n = (int(v) for v in read_back([zero.sum(), over.sum()]))
        zeros += zero_n
        if over_n:
            if first is None:
                at = int(over.nonzero()[0, 0])
                first = (s + at, float(m[at]), float(safety * (operand_u + math.sqrt(k) * u_acc) * m[at]))
            loose += over_n
    if zeros < FEWEST_ZEROS or first is None or 2 * loose < zeros:
        return None
    at, m0, a0 = first
    return (f"the bound is at least {LOOSEST_FRACTION:g}x the output's largest |reference| ({scale:.4g}) at "
            f"{loose} of the {zeros} elements whose reference is zero (first at {_unravel(at, ref.shape)}: "
            f"magnitude {m0:.4g}, bound {a0:.4g}; safety {safety:g}, reduction length {k:g}, output "
            f"{str(out_dtype).replace('torch.', '')}), so any result of that size where the answer is 0 would "
            f"pass there (a relu that never clamps); where the reference is 0 the bound must stay below "
            f"{LOOSEST_FRACTION:g}x the output's scale at most of those elements, in every case")


def with_reference_where(unwritten: torch.Tensor, out: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """``out`` with the reference, in the output's dtype, where ``unwritten``: the written elements judged alone."""
    return torch.where(unwritten.to(out.device), ref.detach().to(out.device, out.dtype), out.detach())


def beside_unwritten(never: OutputCheck, written: OutputCheck) -> OutputCheck:
    """The failure of an output with elements never written (``never``), with what its written elements' own check
    (``written``) found wrong, if anything: its message after the unwritten one, its problems after theirs."""
    if written.passed:
        return never
    rest = written.detail.split(": ", 1)[1] if written.detail.startswith(f"{written.output}: ") else written.detail
    return OutputCheck(never.output, False, math.inf, math.inf, f"{never.detail}; and where written: {rest}",
                       (*(never.problems or (never.detail,)), *(written.problems or (written.detail,))))


def check_output(name: str, out: torch.Tensor, ref: torch.Tensor, mag: torch.Tensor | None, *, reduction_length: int,
                 safety: float, operand_u: float = 0.0, accumulator: str = "fp32",
                 unwritten: torch.Tensor | None = None, judged_as: torch.dtype | None = None,
                 judged_why: str = "", keep_subnormals: bool = False, flush_note: str = "",
                 held_in: tuple[torch.dtype, ...] = ()) -> OutputCheck:
    """Check one output against its reference. An element the kernel never wrote (``unwritten``: it still holds
    the poison) fails; NaN passes only where the reference is NaN; infinities must match exactly (a reference
    beyond the output dtype's range is expected to round to inf). ``judged_as``: the dtype whose rounding and range
    the output is held to where not its own (an output narrower than its case, suite/checks/returned.py), and
    ``judged_why`` what a failure then adds. ``keep_subnormals``: the bound's floor is the output dtype's smallest
    subnormal, even where the compute is fp32 (a case of the subnormal value class), and ``flush_note`` says whose
    flush a result stored as 0 where the reference is subnormal may be (suite/checks/flushes.py). ``held_in``: the
    case's dtypes (its inputs' and outputs'), which an inf where the reference is finite may have overflowed, with
    fp16, bf16 and fp32 (suite/checks/overflow.py)."""
    if out.shape != ref.shape:
        return OutputCheck(name, False, math.inf, math.inf, f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    if unwritten is not None and bool(unwritten.any()):
        head = f"{int(unwritten.sum())} of {out.numel()} elements never written (they still hold the poison; "
        message = f"{name}: {head}first at {_first(unwritten)}. {_UNWRITTEN_HINT})"
        never = OutputCheck(name, False, math.inf, math.inf, message,
                            (message, *(f"{name}: {head}at {_unravel(i, out.shape)})"
                                        for i in _each(unwritten.reshape(-1))[1:])))
        # The written elements are judged too, each problem of theirs one a known issue must describe as well: a
        # known issue of unwritten elements excused twice the answer beside them (evidence/adv-over-sample/).
        written = check_output(name, with_reference_where(unwritten, out, ref), ref, mag,
                               reduction_length=reduction_length, safety=safety, operand_u=operand_u,
                               accumulator=accumulator, judged_as=judged_as, judged_why=judged_why,
                               keep_subnormals=keep_subnormals, flush_note=flush_note, held_in=held_in)
        return beside_unwritten(never, written)
    # Compared where the output lives: a benchmark's outputs have hundreds of millions of elements.
    device = out.device
    if not out.dtype.is_floating_point and not ref.dtype.is_floating_point and not ref.dtype.is_complex:
        # Integers against an integer reference compare as integers: float64 holds 53 bits, so int64 values near
        # 2**60 that differ by one would compare equal there.
        got, want = out.detach().to(device, torch.int64), ref.detach().to(device, torch.int64)
        wrong = got != want
        if wrong.any():
            idx = _first(wrong)
            head = f"{name}: {int(wrong.sum())} of {out.numel()} integers differ ("
            flat_got, flat_want = got.reshape(-1), want.reshape(-1)
            return OutputCheck(name, False, math.inf, float((got - want).abs().max()),
                               f"{head}first at {idx}: got {int(got[idx])}, expected {int(want[idx])})",
                               (f"{head}first at {idx}: got {int(got[idx])}, expected {int(want[idx])})",
                                *(f"{head}at {_unravel(i, out.shape)}: got {int(flat_got[i])}, expected "
                                  f"{int(flat_want[i])})" for i in _each(wrong.reshape(-1))[1:])))
        return OutputCheck(name, True, 0.0, 0.0, f"{name}: ok, exact")
    if not out.dtype.is_floating_point:
        # Integer outputs (indices, masks) against a float reference have no rounding: they match exactly or fail.
        wrong_count, first, got, want, worst = 0, None, 0.0, 0.0, 0.0
        for s, e in _chunks(out.numel()):
            o64, r64 = _flat(out, s, e, device), _flat(ref, s, e, device)
            wrong = ~(o64 == r64)
            if wrong.any():
                if first is None:
                    at = int(wrong.nonzero()[0, 0])
                    first, got, want = s + at, o64[at].item(), r64[at].item()
                wrong_count += int(wrong.sum())
                worst = max(worst, float((o64 - r64).abs().nan_to_num(math.inf).max()))
        if wrong_count:
            return OutputCheck(name, False, math.inf, worst,
                               f"{name}: {wrong_count} of {out.numel()} integers differ (first at "
                               f"{_unravel(first, out.shape)}: got {got:g}, expected {want:g})")
        return OutputCheck(name, True, 0.0, 0.0, f"{name}: ok, exact")
    s_ = _Scan(out, ref, mag, reduction_length, safety, operand_u, accumulator, device, judged_as or out.dtype,
               keep_subnormals)
    problems = []
    # Each element a problem names only its first of is a problem of its own for a known issue to describe (not in
    # the message), worded as the first but "at": a pattern of the first element describes no other.
    each: list[str] = []
    over_said = False
    if s_.bad_nan:
        problems.append(f"{s_.bad_nan} NaN where the reference is not (first at {_unravel(s_.bad_nan_at, out.shape)})")
        each += [f"{s_.bad_nan} NaN where the reference is not (at {_unravel(i, out.shape)})"
                 for i, _, _ in s_.each["bad_nan"] if i != s_.bad_nan_at]
    if s_.missing_nan:
        problems.append(f"{s_.missing_nan} non-NaN where the reference is NaN (first at "
                        f"{_unravel(s_.missing_nan_at, out.shape)})")
        each += [f"{s_.missing_nan} non-NaN where the reference is NaN (at {_unravel(i, out.shape)})"
                 for i, _, _ in s_.each["missing_nan"] if i != s_.missing_nan_at]
    if s_.inf_mismatch:
        problems.append(f"{s_.inf_mismatch} infinities differ (first at {_unravel(s_.inf_at, out.shape)}: got "
                        f"{s_.inf_got}, expected {s_.inf_expected})")
        each += [f"{s_.inf_mismatch} infinities differ (at {_unravel(i, out.shape)}: got {g}, expected {f})"
                 for i, g, f in s_.each["inf"] if i != s_.inf_at]
        if s_.overflowed:
            problems.append(overflow.note(s_.overflowed, s_.overflowed_reference, (*held_in, out.dtype, s_.dtype)))
    if s_.any_finite:
        ratio, max_abs = s_.ratio, s_.max_abs
        if ratio > 1.0:
            flushed = (f" ({s_.flushed} of them subnormal results stored as 0, flushed to zero"
                       f"{': ' + flush_note if flush_note else ''})" if s_.flushed else "")
            hints = ((_MAGNITUDE_HINT if mag is None and s_.within_at_output_scale() else "")
                     + (_FP64_HINT if accumulator == "fp64" and s_.within_with(accumulator="fp32") else ""))
            problems.append(over_bound(s_.worst_err, _unravel(s_.worst_at, out.shape), ratio, s_.worst_bound,
                                       s_.worst_got, s_.worst_ref, s_.over, out.numel()) + hints + flushed)
            # Every element over the bound (the worst too), each a problem of its own for a known issue to describe
            # (not in the message): a second bug under the worst one's size is not excused by a pattern of the
            # worst. Each says what is true of it alone: the flush words only where it is a flushed subnormal.
            tiny = torch.finfo(s_.dtype).tiny
            each += [over_bound(e, _unravel(at, out.shape), r, b, g, f, s_.over, out.numel()) + hints
                     + (flushed if g == 0 and 0 < abs(f) < tiny else "")
                     for r, at, e, b, g, f in s_.sampled]
            over_said = True
    else:
        ratio, max_abs = 0.0, 0.0
    if problems:
        ratio = math.inf if ratio <= 1.0 else ratio
        worst = problems[-1] if over_said else None  # said per element in ``each``
        return OutputCheck(name, False, ratio, max_abs, f"{name}: " + "; ".join(problems) + judged_why,
                           tuple(f"{name}: {p}{judged_why}" for p in [*(p for p in problems if p is not worst),
                                                                      *each]))
    return OutputCheck(name, True, ratio, max_abs, f"{name}: ok, error ratio {ratio:.3g}",
                       reduction_length=int(reduction_length), drift=(s_.signed, s_.away, s_.counted))


def over_bound(err: float, at: tuple[int, ...], ratio: float, bound: float, got: float, ref: float, over: int,
               numel: int) -> str:
    """An output's error over its bound, as a failing case's message says it (suite/checks/ordinary.py says ordinary
    wrong values with it: what a known issue's failure_pattern must not be found in)."""
    return (f"error {err:.3e} at {at} is {ratio:.3g}x the bound {bound:.3e} (got {got!r}, reference {ref!r}); "
            f"{over} of {numel} elements over")


# Elements compared at a time. The comparison works in float64 with a dozen temporaries per element: on a whole
# output of 2**30 elements that was over 60 GiB beside the case's own tensors (the nightly's largest shapes ran out of
# memory on an 80 GB GPU in the suite's own check). In chunks its extra memory stays near 2 GiB whatever the output.
CHUNK_ELEMENTS = 1 << 24
# Elements over the bound kept per output beside the worst, each a problem a known issue must describe: all of them
# up to this many, else this many spread evenly over their ranks by error ratio (the mildest and the worst kept).
OVER_SAMPLE = 4096


def _chunks(n: int) -> list[tuple[int, int]]:
    return [(s, min(s + CHUNK_ELEMENTS, n)) for s in range(0, n, CHUNK_ELEMENTS)] or [(0, 0)]


def _flat(t: torch.Tensor, s: int, e: int, device: torch.device) -> torch.Tensor:
    """Elements [s, e) of ``t`` in row-major order, as float64 on ``device``; a strided tensor larger than a chunk is
    read in place (no contiguous copy of the whole)."""
    t = t.detach()
    if t.is_contiguous():
        return t.reshape(-1)[s:e].to(device, torch.float64)
    if t.numel() <= CHUNK_ELEMENTS:  # one chunk: the whole tensor at once
        return t.to(device, torch.float64).reshape(-1)
    rest, coords = torch.arange(s, e, device=t.device), []
    for size in reversed(t.shape):
        coords.append(rest % size)
        rest = rest // size
    return t[tuple(reversed(coords))].to(device, torch.float64)


def _unravel(flat: int, shape: torch.Size) -> tuple[int, ...]:
    out = []
    for size in reversed(tuple(shape)):
        out.append(flat % size)
        flat //= size
    return tuple(reversed(out))


class _Scan:
    """One pass over an output and its reference in chunks: what is wrong, how often, where first, and the worst
    error against its bound."""

    def __init__(self, out, ref, mag, reduction_length, safety, operand_u, accumulator, device, dtype,
                 keep_subnormals=False) -> None:
        if mag is not None and mag.shape != out.shape:  # a magnitude per row or a scalar: broadcast as a view
            mag = mag.expand(out.shape)
        self.out, self.ref, self.mag, self.device = out, ref, mag, device
        self.dtype = dtype  # whose rounding and range the bound allows: the output's own, or its case's
        self.args = dict(reduction_length=reduction_length, safety=safety, operand_u=operand_u, accumulator=accumulator,
                         keep_subnormals=keep_subnormals)
        self.bad_nan = self.missing_nan = self.inf_mismatch = self.over = self.flushed = self.overflowed = 0
        self.overflowed_reference = 0.0  # the largest |reference| where the output holds inf and it is finite
        self.bad_nan_at = self.missing_nan_at = self.inf_at = self.worst_at = 0
        self.inf_got = self.inf_expected = 0.0
        self.any_finite = False
        self.ratio, self.max_abs = 0.0, 0.0
        self.worst_err = self.worst_bound = self.worst_got = self.worst_ref = 0.0
        self.signed = self.away = 0.0  # sums of (out - ref) / bound, and of it signed by the reference
        self.counted = 0  # the finite elements with a bound above 0 that those sums are over
        self.sampled: list[tuple] = []  # (ratio, at, err, bound, got, ref) of elements over the bound (OVER_SAMPLE)
        # (at, got, reference) of elements with a NaN where the reference has none, the converse, infinities that
        # differ: up to OVER_SAMPLE of each, spread evenly over their positions
        self.each: dict[str, list[tuple]] = {"bad_nan": [], "missing_nan": [], "inf": []}
        for s, e in _chunks(out.numel()):
            self._chunk(s, e)

    def _expected(self, s: int, e: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out64, ref64 = _flat(self.out, s, e, self.device), _flat(self.ref, s, e, self.device)
        mag64 = ref64.abs() if self.mag is None else _flat(self.mag, s, e, self.device)
        if self.dtype != torch.float64:
            # What an exact result rounds to in the output dtype: overflow to inf is then expected.
            rounded = ref64.to(self.dtype).to(torch.float64)
            expected = torch.where(torch.isinf(rounded) & torch.isfinite(ref64), rounded, ref64)
        else:
            expected = ref64
        return out64, expected, mag64

    def _chunk(self, s: int, e: int) -> None:
        if e <= s:
            return
        out64, expected, mag64 = self._expected(s, e)
        ref_nan, out_nan = torch.isnan(expected), torch.isnan(out64)
        bad_nan = out_nan & ~ref_nan
        missing_nan = ref_nan & ~out_nan
        inf_mismatch = ((torch.isinf(expected) | torch.isinf(out64)) & ~ref_nan & ~out_nan) & (out64 != expected)
        finite = torch.isfinite(expected) & torch.isfinite(out64)
        err = (out64 - expected).abs()
        bnd = bound(expected, mag64.nan_to_num(posinf=0.0, neginf=0.0, nan=0.0), self.dtype, **self.args)
        ratios = torch.where(finite, err / bnd, torch.zeros_like(err))
        drifting = finite & (bnd > 0)
        signed = torch.where(drifting, (out64 - expected) / bnd, torch.zeros_like(err))
        inf_first = _first_index(inf_mismatch)
        # Everything a passing chunk needs, read back from the device at once: one wait for the GPU per chunk (with
        # 16 workers on a GPU each wait is its turn), not one per question.
        at = inf_first.reshape(1)
        (n_bad, bad_at, n_missing, missing_at, n_inf, inf_at, inf_got, inf_expected, any_finite, top,
         max_abs, signed_sum, away_sum, counted) = read_back([
            bad_nan.sum(), _first_index(bad_nan), missing_nan.sum(), _first_index(missing_nan), inf_mismatch.sum(),
            inf_first, out64.index_select(0, at), expected.index_select(0, at), finite.any(), ratios.max(),
            torch.where(finite, err, torch.zeros_like(err)).max(), signed.sum(), (signed * expected.sign()).sum(),
            drifting.sum()])
        self.signed += signed_sum
        self.away += away_sum
        self.counted += int(counted)
        for key, mask, count in (("bad_nan", bad_nan, n_bad), ("missing_nan", missing_nan, n_missing),
                                 ("inf", inf_mismatch, n_inf)):
            if count:
                at_ = torch.tensor(_each(mask), dtype=torch.int64, device=mask.device)
                picked = zip((at_ + s).tolist(), out64[at_].tolist(), expected[at_].tolist(), strict=True)
                self.each[key] = _spread([*self.each[key], *picked])
        if n_bad:
            self.bad_nan_at = self.bad_nan_at if self.bad_nan else s + int(bad_at)
            self.bad_nan += int(n_bad)
        if n_missing:
            self.missing_nan_at = self.missing_nan_at if self.missing_nan else s + int(missing_at)
            self.missing_nan += int(n_missing)
        if n_inf:
            if not self.inf_mismatch:
                self.inf_at, self.inf_got, self.inf_expected = s + int(inf_at), inf_got, inf_expected
            self.inf_mismatch += int(n_inf)
            overflowed = torch.isinf(out64) & torch.isfinite(expected)  # an overflow on the way (overflow.py)
            count, largest = read_back([overflowed.sum(), torch.where(overflowed, expected.abs(), 0.0).max()])
            self.overflowed += int(count)
            self.overflowed_reference = max(self.overflowed_reference, largest if count else 0.0)
        if not any_finite:
            return
        self.any_finite = True
        self.max_abs = max(self.max_abs, max_abs)
        if top > 1.0:  # where and how far over: read back from the device only for a chunk that fails
            self.over += int((ratios > 1).sum())
            self._sample(s, ratios, err, bnd, out64, expected)
            self.flushed += int(((ratios > 1) & (out64 == 0) & (expected.abs() < torch.finfo(self.dtype).tiny)).sum())
            if top > self.ratio:  # the first element at the largest ratio, as the message names it
                at = int((ratios == top).nonzero()[0, 0])
                self.worst_at = s + at
                self.worst_err, self.worst_bound = err[at].item(), bnd[at].item()
                self.worst_got, self.worst_ref = out64[at].item(), expected[at].item()
        self.ratio = max(self.ratio, top)

    def _sample(self, s: int, ratios, err, bnd, out64, expected) -> None:
        """Keep up to OVER_SAMPLE elements over the bound, spread evenly over their ranks by ratio."""
        at = (ratios > 1).nonzero().reshape(-1)
        if at.numel() > OVER_SAMPLE:
            order = torch.argsort(ratios[at])
            at = at[order[torch.linspace(0, at.numel() - 1, OVER_SAMPLE, device=at.device).round().long()]]
        picked = zip(*(t.tolist() for t in (ratios[at], at + s, err[at], bnd[at], out64[at], expected[at])),
                     strict=True)
        self.sampled = sorted([*self.sampled, *picked], key=lambda p: p[0])
        if len(self.sampled) > OVER_SAMPLE:
            n = len(self.sampled)
            self.sampled = [self.sampled[round(i * (n - 1) / (OVER_SAMPLE - 1))] for i in range(OVER_SAMPLE)]

    def within_with(self, **args) -> bool:
        """Whether every finite error would pass the bound with ``args`` in place of the rule's own (an fp32
        accumulator for an fp64 output, say). Asked of a failing output only."""
        for s, e in _chunks(self.out.numel()):
            out64, expected, mag64 = self._expected(s, e)
            finite = torch.isfinite(expected) & torch.isfinite(out64)
            wide = bound(expected, mag64.nan_to_num(posinf=0.0, neginf=0.0, nan=0.0), self.dtype,
                         **{**self.args, **args})
            if not bool((torch.where(finite, (out64 - expected).abs(), torch.zeros_like(expected)) <= wide).all()):
                return False
        return True

    def within_at_output_scale(self) -> bool:
        """Whether the errors would pass with every element's magnitude taken as the output's largest |reference|: a
        failure from cancellation (a missing magnitude), not from a wrong value. (Asked of a failing output only:
        its two passes over the chunks cost nothing where everything passes.)"""
        scale = 0.0  # the largest finite |expected|
        for s, e in _chunks(self.out.numel()):
            out64, expected, _ = self._expected(s, e)
            finite = torch.isfinite(expected) & torch.isfinite(out64)
            scale = max(scale, float(torch.where(finite, expected.abs(), torch.zeros_like(expected)).max()))
        for s, e in _chunks(self.out.numel()):
            out64, expected, _ = self._expected(s, e)
            finite = torch.isfinite(expected) & torch.isfinite(out64)
            wide = bound(expected, torch.full_like(expected, scale), self.dtype, **self.args)
            if not bool((torch.where(finite, (out64 - expected).abs(), torch.zeros_like(expected)) <= wide).all()):
                return False
        return True


# What a failure most often is comes first (the kernel's launch or its arithmetic); what loosens the check, last.
_UNWRITTEN_HINT = ("Most often no program reaches them: a grid one program short (n // BLOCK where triton.cdiv(n, BLOCK) "
                   "is meant), a mask or loop bound that stops early, a BLOCK smaller than the row it should cover. "
                   "Only where the kernel reads its output before writing it (in place, accumulating) is the starting "
                   "value missing: declare it in initial_outputs")
_MAGNITUDE_HINT = (" (every error is within the bound measured against the output's largest |reference|. Most often "
                   "this is the kernel's rounding: an intermediate cast or stored through a narrower dtype (fp16, bf16) "
                   "on the way, a low-precision accumulator, or a value read through a wrong mask or offset. Only if "
                   "the output is a difference of larger terms, such as a loss or a gradient, is each element's own "
                   "|reference| too tight a scale: then give Tolerance(magnitude=...): docs/adding-a-kernel.md, "
                   "'Tolerances')")

_FP64_HINT = (" (every error is within the bound of an fp32 accumulator: this output is held to fp64's rounding, the "
              "default for an fp64 case, and a kernel that computes its fp64 cases in fp32 fails here. Only if the "
              "kernel is meant to compute in fp32 does its spec say so: Tolerance(accumulator='fp32'))")


def read_back(values: list[torch.Tensor]) -> list[float]:
    """Single-element tensors' values on the host as floats, one read per device (each read waits for that device's
    queue: with 16 workers on a GPU, its turn)."""
    out: list[float] = [0.0] * len(values)
    by_device: dict[torch.device, list[int]] = {}
    for i, v in enumerate(values):
        by_device.setdefault(v.device, []).append(i)
    for at in by_device.values():
        got = torch.stack([values[i].reshape(()).to(torch.float64) for i in at]).tolist()
        for i, v in zip(at, got, strict=True):
            out[i] = v
    return out


def _first_index(mask: torch.Tensor) -> torch.Tensor:
    """The flat index of ``mask``'s first True element (0 where none), left on the device: argmax gives the first of
    equal maxima."""
    return mask.reshape(-1).to(torch.uint8).argmax()


def _each(mask: torch.Tensor) -> list[int]:
    """The flat indices of ``mask``'s True elements: all up to OVER_SAMPLE, else OVER_SAMPLE spread evenly over
    them (the first and the last kept)."""
    at = mask.reshape(-1).nonzero().reshape(-1)
    if at.numel() > OVER_SAMPLE:
        at = at[torch.linspace(0, at.numel() - 1, OVER_SAMPLE, device=at.device).round().long()]
    return at.tolist()


def _spread(items: list) -> list:
    """At most OVER_SAMPLE of ``items``, spread evenly (the first and the last kept)."""
    if len(items) <= OVER_SAMPLE:
        return items
    n = len(items)
    return [items[round(i * (n - 1) / (OVER_SAMPLE - 1))] for i in range(OVER_SAMPLE)]


def _first(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in mask.nonzero()[0])
