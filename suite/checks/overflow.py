"""Overflow named in a failure: where a kernel's output holds inf and the reference is finite, a value on the way
went past the range of the dtype it was held in (an fp16 product of two inputs of a few thousand, an exp of a
large argument). The comparison says so, and which range: the dtype the reference itself does not fit in where it
is beyond one (a result of 7.1e4 held in fp16 on the way; the wider ones named after it), else the dtypes a kernel
may hold an intermediate in, the narrowest first, since which one it used cannot be known from its output.
"""

from __future__ import annotations

import torch

# What a kernel may hold an intermediate in besides its case's own dtypes: the narrow float types it casts to, and
# fp32, what Triton computes narrower types in.
HELD_IN = (torch.float16, torch.bfloat16, torch.float32)
NAMES = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.float64: "fp64",
         torch.float8_e4m3fn: "fp8e4nv", torch.float8_e5m2: "fp8e5", torch.float8_e4m3fnuz: "fp8e4b8",
         torch.float8_e5m2fnuz: "fp8e5b16"}


def candidates(dtypes) -> list[torch.dtype]:
    """The float dtypes an intermediate may have overflowed: the float dtypes of ``dtypes`` (the case's inputs and
    outputs), and fp16, bf16 and fp32; by range, the narrowest first."""
    found = {d for d in (*dtypes, *HELD_IN) if d.is_floating_point and not d.is_complex}
    return sorted(found, key=lambda d: (float(torch.finfo(d).max), d.itemsize, str(d)))


def _range(dtype: torch.dtype) -> str:
    return f"{NAMES.get(dtype, str(dtype).removeprefix('torch.'))}'s range ({float(torch.finfo(dtype).max):g})"


def _either(ranges: list[str]) -> str:
    return ranges[0] if len(ranges) == 1 else f"{', '.join(ranges[:-1])} or {ranges[-1]}"


def note(count: int, reference: float, dtypes) -> str:
    """What ``count`` elements holding inf where the reference is finite say, ``reference`` the largest |reference|
    among them: an overflow, and of which dtype's range."""
    held = candidates(dtypes)
    beyond = [d for d in held if float(torch.finfo(d).max) < reference]
    wider = [_range(d) for d in held if float(torch.finfo(d).max) >= reference]
    head = f"{count} inf where the reference is finite (max {reference:.3g}): "
    if beyond:  # the result itself does not fit the widest of them: held in it on the way, most likely
        return head + f"an intermediate overflowed {_range(beyond[-1])}?" + (
            f" (the reference is beyond it; else {_either(wider)})" if wider else "")
    if len(wider) == 1:
        return head + f"an intermediate overflowed {wider[0]}?"
    return head + (f"an intermediate overflowed {_either(wider)}? (which dtype held it cannot be known from the "
                   f"output{'; or a division by 0' if reference < 1 else ''})")
