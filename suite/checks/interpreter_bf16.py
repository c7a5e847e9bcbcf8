"""bf16 on Triton's CPU interpreter as compiled Triton computes it on NVIDIA and AMD GPUs.

Triton 3.6's interpreter keeps a bf16 tensor as the uint16 bit patterns numpy has no float type for, and then
computes on the bits: ``x * y``, ``tl.exp(x)``, ``tl.fma``, ``tl.clamp``, ``tl.dot`` and ``tl.sum`` of bf16 were
garbage (triton #4972); fp32 -> bf16 truncated where a GPU rounds to nearest even, and fp64, fp16 and integers were
converted to bf16 (and back) by ``astype`` on the bit patterns. Compiled Triton extends bf16 to fp32 to compute and
rounds the result back to nearest even; its matrix units multiply bf16 operands exactly and accumulate in fp32. The
patches here (registered in suite/compat.py, installed by suite/checks/interpreter.py) do the same:

- **conversions** (``interpreter-bf16-casts``): bf16 -> fp32 exactly (the 16 bits above 16 zero bits), and to other
  types through that fp32; fp32 -> bf16 to nearest even, overflowing to inf as rounding gives, a NaN a quiet NaN
  (0x7FFF, the NaN an H200 stores, evidence/interpreter-bf16/); fp64 -> bf16 rounded once (to odd in fp32 first, so
  the second rounding is exact); integers through fp32 (rounded twice above 2**24, as torch does);
  ``fp_downcast_rounding='rtz'`` truncates.
- **arithmetic** (``interpreter-bf16-arithmetic``): every binary (+, -, *, /, %, min, max), unary (exp, log, sqrt,
  sin, ..., erf, rsqrt), fma and clamp on bf16 operands computed in fp32 and rounded to bf16; comparisons give bools.
  An fp32 fma of bf16 operands is exact up to its one fp32 rounding, then rounded to bf16 (torch's CPU model); an H200's
  ``fma.rn.bf16`` rounds once: a bf16 ulp apart where the exact product lies on a bf16 tie that the addend moves off
  (0.27% of random operands, evidence/interpreter-bf16/).
- **dot** (``interpreter-bf16-dot``): bf16 operands widened exactly, multiplied and accumulated in fp32 (the
  accumulator's dtype).
- **reductions and scans** (``interpreter-bf16-reductions``): a bf16 ``tl.sum`` adds in fp32 and rounds to bf16 at
  every step, in a tree (element i with i + n/2, as a warp's butterfly pairs lanes; a GPU whose threads hold several
  elements adds those in order first, so its result can differ by an ulp or so); a bf16 scan (``tl.associative_scan``
  with ``tl.standard._sum_combine`` or ``_prod_combine``) does the same in element order; a bf16 min/max/argmin/argmax
  compares the values, not the bits. (``tl.max``, ``tl.min``, ``tl.cumsum`` and ``tl.cumprod`` widen bf16 to fp32
  themselves.)

Select (``tl.where``), loads, stores, reshapes and ``abs`` move the bits, which was already right. bf16 atomics are
refused by the interpreter's core ("Unsupported data type"): an error, never a wrong result.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

# The NaN compiled Triton's fp32 -> bf16 conversion stored for every NaN on an H200 (evidence/interpreter-bf16/).
QUIET_NAN = 0x7FFF


def widen(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns as the fp32 values they are: exact, the 16 bits above 16 zero bits."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_fp32(values: Any) -> np.ndarray:
    """fp32 values rounded to bf16, to nearest even, as uint16 bit patterns; a NaN becomes the quiet NaN."""
    x = np.asarray(values, dtype=np.float32)
    u = x.view(np.uint32)
    # Adding 0x7FFF and the kept part's lowest bit carries into it past half and at an odd tie: nearest even. A carry
    # out of the mantissa is the exponent's (up to inf); only NaNs, handled below, could wrap.
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(QUIET_NAN), rounded)


def _fp32_toward_zero(values: np.ndarray) -> np.ndarray:
    """fp64 values as fp32, truncated toward zero (infinities and NaNs kept)."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        t = x.astype(np.float32)
    past = np.abs(t.astype(np.float64)) > np.abs(x)  # rounded away from zero (an overflow to inf included)
    return np.where(past, np.nextafter(t, np.float32(0)), t)


def _fp32_to_odd(values: np.ndarray) -> np.ndarray:
    """fp64 values as fp32, rounded to odd (truncated, the last bit set where that lost anything): a later rounding
    to bf16, 16 bits shorter, then rounds as one rounding of the fp64 value would."""
    x = np.asarray(values, dtype=np.float64)
    t = _fp32_toward_zero(x)
    with np.errstate(invalid="ignore"):
        inexact = t.astype(np.float64) != x
    return (t.view(np.uint32) | inexact.astype(np.uint32)).view(np.float32)


def narrow(values: Any) -> np.ndarray:
    """Values of any numpy float, integer or bool dtype as bf16 bit patterns, rounded to nearest even: fp32 and fp16
    once; fp64 once (through round-to-odd); integers through fp32, as compiled Triton converts them."""
    x = np.asarray(values)
    if x.dtype == np.float64:
        return round_fp32(_fp32_to_odd(x))
    return round_fp32(x.astype(np.float32))


def truncate(values: Any) -> np.ndarray:
    """fp32 or fp64 values as bf16 bit patterns, rounded toward zero (``fp_downcast_rounding='rtz'``); a NaN becomes
    the quiet NaN."""
    x = np.asarray(values)
    t = _fp32_toward_zero(x) if x.dtype == np.float64 else x.astype(np.float32)
    return np.where(np.isnan(t), np.uint16(QUIET_NAN), (t.view(np.uint32) >> 16).astype(np.uint16))


def bf16_test() -> Callable[[Any], bool]:
    """Whether an interpreter TensorHandle holds bf16 values (as uint16 bits; Triton's own comparisons of bf16 left
    their bool results typed as bf16): a function asked at every operation the interpreter builds, so its numpy
    dtype is asked first (a float's fails there) and the types it compares with are looked up once."""
    uint16 = np.dtype(np.uint16)

    def holds_bf16(handle: Any) -> bool:
        return handle.data.dtype == uint16 and handle.dtype.name == "bf16"

    return holds_bf16


def _handle(bits: np.ndarray) -> Any:
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    return TensorHandle(bits, tl.bfloat16)


def _computed(result: np.ndarray) -> Any:
    """An operation's fp32 result on bf16 operands: rounded to bf16, or, from a comparison, bools typed as such."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if result.dtype == np.bool_:
        return TensorHandle(result, tl.int1)
    return _handle(round_fp32(result))


def install(setter: Callable[[Any, str, Any], None] = setattr) -> None:
    """Apply the four patches (see the module docstring); the caller requires and marks them (suite/compat.py)."""
    _casts(setter)
    _arithmetic(setter)
    _dot(setter)
    _reductions(setter)


def _casts(setter: Callable[[Any, str, Any], None]) -> None:
    holds_bf16 = bf16_test()
    import triton.language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    cast_impl, fp_to_fp = builder.cast_impl, builder.create_fp_to_fp
    rtz = interpreter._ir.ROUNDING_MODE.RTZ

    @functools.wraps(cast_impl)
    def bf16_cast_impl(self, src, dst_type):
        dst = dst_type.scalar.name
        if holds_bf16(src):
            if dst != "bf16":  # bf16 -> fp32 exactly; anything else through that fp32
                wide = interpreter.TensorHandle(widen(src.data), tl.float32)
                return wide if dst == "fp32" else cast_impl(self, wide, dst_type)
        elif dst == "bf16":
            return _handle(narrow(src.data))
        return cast_impl(self, src, dst_type)

    @functools.wraps(fp_to_fp)
    def bf16_fp_to_fp(self, src, dst_type, rounding_mode, *rest, **kwargs):
        if dst_type.scalar.name == "bf16" and src.dtype.scalar.name in ("fp32", "fp64"):
            return _handle(truncate(src.data) if rounding_mode == rtz else narrow(src.data))
        return fp_to_fp(self, src, dst_type, rounding_mode, *rest, **kwargs)

    setter(builder, "cast_impl", bf16_cast_impl)
    setter(builder, "create_fp_to_fp", bf16_fp_to_fp)


def _arithmetic(setter: Callable[[Any, str, Any], None]) -> None:
    holds_bf16 = bf16_test()
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    binary_op, unary_op, fma = builder.binary_op, builder.unary_op, builder.create_fma
    clampf, erf, rsqrt = builder.create_clampf, builder.create_erf, builder.create_rsqrt

    @functools.wraps(binary_op)
    def bf16_binary_op(self, lhs, rhs, op):
        if holds_bf16(lhs) and holds_bf16(rhs):
            with np.errstate(all="ignore"):
                return _computed(op(widen(lhs.data), widen(rhs.data)))
        return binary_op(self, lhs, rhs, op)

    @functools.wraps(unary_op)
    def bf16_unary_op(self, arg, op):
        if holds_bf16(arg):
            with np.errstate(all="ignore"):
                return _computed(np.asarray(op(widen(arg.data))))
        return unary_op(self, arg, op)

    @functools.wraps(fma)
    def bf16_fma(self, x, y, z):
        if holds_bf16(x) and holds_bf16(y) and holds_bf16(z):
            with np.errstate(all="ignore"):  # the product of two bf16 values is exact in fp32: one fp32 rounding
                return _computed(widen(x.data) * widen(y.data) + widen(z.data))
        return fma(self, x, y, z)

    @functools.wraps(clampf)
    def bf16_clampf(self, arg, lo, hi, propagate_nans):
        if holds_bf16(arg) and holds_bf16(lo) and holds_bf16(hi):
            return _computed(np.clip(widen(arg.data), widen(lo.data), widen(hi.data)))
        return clampf(self, arg, lo, hi, propagate_nans)

    @functools.wraps(erf)
    def bf16_erf(self, arg):
        if not holds_bf16(arg):
            return erf(self, arg)
        return _computed(np.array([math.erf(v) for v in widen(arg.data).ravel().tolist()],
                                  dtype=np.float32).reshape(arg.data.shape))

    @functools.wraps(rsqrt)
    def bf16_rsqrt(self, arg):
        if holds_bf16(arg):
            with np.errstate(all="ignore"):
                return _computed(np.float32(1) / np.sqrt(widen(arg.data)))
        return rsqrt(self, arg)

    for name, fn in (("binary_op", bf16_binary_op), ("unary_op", bf16_unary_op), ("create_fma", bf16_fma),
                     ("create_clampf", bf16_clampf), ("create_erf", bf16_erf), ("create_rsqrt", bf16_rsqrt)):
        setter(builder, name, fn)


def _dot(setter: Callable[[Any, str, Any], None]) -> None:
    holds_bf16 = bf16_test()
    import triton.language as tl
    from triton.runtime import interpreter

    create_dot = interpreter.InterpreterBuilder.create_dot

    @functools.wraps(create_dot)
    def bf16_dot(self, a, b, d, *rest, **kwargs):
        if holds_bf16(a) and holds_bf16(b):  # exact products, accumulated in the accumulator's fp32
            a = interpreter.TensorHandle(widen(a.data), tl.float32)
            b = interpreter.TensorHandle(widen(b.data), tl.float32)
        return create_dot(self, a, b, d, *rest, **kwargs)

    setter(interpreter.InterpreterBuilder, "create_dot", bf16_dot)


def fold(bits: np.ndarray, axis: int | None, op: Callable[[np.ndarray, np.ndarray], np.ndarray],
         keep_dims: bool = False) -> np.ndarray:
    """bf16 values (bits) reduced along ``axis`` (None: all) with ``op`` computed in fp32 and rounded to bf16 at every
    step, in a tree: element i with element i + n/2, then again over the first half, as a GPU's butterfly of lanes
    pairs them (Triton's block dims are powers of two; an odd one out is carried to the next level)."""
    bits = np.asarray(bits, dtype=np.uint16)
    acc = np.moveaxis(bits.reshape(-1) if axis is None else bits, 0 if axis is None else axis, 0)
    with np.errstate(all="ignore"):
        while len(acc) > 1:
            half = len(acc) // 2
            paired = round_fp32(op(widen(acc[:half]), widen(acc[half:2 * half])))
            acc = np.concatenate([paired, acc[2 * half:]]) if len(acc) % 2 else paired
    acc = acc[0].copy()
    if keep_dims:
        acc = acc.reshape((1,) * bits.ndim) if axis is None else np.expand_dims(acc, axis)
    return acc


def scan(bits: np.ndarray, axis: int, op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The running results of ``op`` along ``axis`` in element order, computed in fp32, every one rounded to bf16."""
    moved = np.moveaxis(np.asarray(bits, dtype=np.uint16), axis, 0)
    out = moved.copy()
    with np.errstate(all="ignore"):
        for i in range(1, len(moved)):
            out[i] = round_fp32(op(widen(out[i - 1]), widen(moved[i])))
    return np.moveaxis(out, 0, axis)


def _reductions(setter: Callable[[Any, str, Any], None]) -> None:
    holds_bf16 = bf16_test()
    import triton.language as tl
    from triton.runtime import interpreter

    reduce_ops, scan_ops = interpreter.ReduceOps, interpreter.ScanOps
    total, min_max = reduce_ops.sum, reduce_ops.min_max
    cumsum, cumprod = scan_ops.cumsum, scan_ops.cumprod

    @functools.wraps(total)
    def bf16_sum(self, input):  # noqa: A002 - Triton's parameter name
        if not holds_bf16(input.handle):
            return total(self, input)
        return self.to_tensor(fold(input.handle.data, self.axis, np.add, self.keep_dims), input.dtype)

    @functools.wraps(min_max)
    def bf16_min_max(self, input, val_reduce_op, idx_reduce_op=None):  # noqa: A002
        value = input[0] if isinstance(input, tuple) else input
        if not holds_bf16(value.handle):
            return min_max(self, input, val_reduce_op, idx_reduce_op)
        wide = widen(value.handle.data)
        found = []
        if val_reduce_op:  # a value of the input: exact back in bf16
            found.append(self.to_tensor(round_fp32(val_reduce_op(wide, axis=self.axis, keepdims=self.keep_dims)),
                                        value.dtype))
        if idx_reduce_op:
            found.append(self.to_tensor(idx_reduce_op(wide, axis=self.axis, keepdims=self.keep_dims), tl.int32))
        if not found:
            return min_max(self, input, val_reduce_op, idx_reduce_op)  # Triton's own error
        return tuple(found) if len(found) == 2 else found[0]

    def scanning(original: Callable[..., Any], op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Any:
        @functools.wraps(original)
        def bf16_scan(self, input):  # noqa: A002
            if not holds_bf16(input.handle):
                return original(self, input)
            return [self.to_tensor(scan(input.handle.data, self.axis, op), input.dtype)]

        return bf16_scan

    setter(reduce_ops, "sum", bf16_sum)
    setter(reduce_ops, "min_max", bf16_min_max)
    setter(scan_ops, "cumsum", scanning(cumsum, np.add))
    setter(scan_ops, "cumprod", scanning(cumprod, np.multiply))
