"""mmasim's matrix-instruction arithmetic over a whole tile at once, bit for bit (``--numerics``' speed).

mmasim (suite/checks/numerics.py) computes each fused chunk of K with some thirty float64 torch operations on the
expanded M x N x L operands (frexp, masked assignments, concatenation); a dot of 64 x 64 x 32 takes milliseconds. The
same arithmetic is written here in absolute terms over numpy arrays, with everything that does not depend on the
accumulator (the exact products, their exponents, each chunk's largest exponent) computed once for every chunk of K,
and only what does (the alignment to the accumulator's exponent, the truncation, the rounding) per chunk:

- the products of fp16, bf16, TF32/XF32 and fp8 operands are exact in float64 (at most 11 x 11 significant bits), and
  mmasim's exponent of a product is the sum of its operands' normalised exponents (``e_a + e_b``, the significand
  product in [1, 4)), never the product's own exponent: both are reproduced;
- truncating ``s * 2**(e - e_max + F)`` is truncating ``p * 2**(F - e_max)`` (powers of two, exact); the truncated
  terms are integers below 2**53 whose sum float64 holds exactly, so the order of summation cannot matter;
- the final rounding (truncation to 24 or 14 significant bits, CDNA3's floor to 32 bits then round to nearest even)
  is done on the float64 bits.

Infinities and NaNs need no path of their own: in mmasim a non-finite term makes the fused sum inf or NaN exactly as
IEEE addition of the terms would, and so it does here (the same products, NaN made mmasim's 0x7FFFFFFF; CDNA3's
products beyond fp32's range made inf, CDNA3's fp8 accumulator dropped when far below the products as mmasim drops
it, NaN included). An arithmetic or rounding mode this module does not know is computed by mmasim itself.
tests/checks/test_numerics_fast.py holds every path to mmasim on random and planted tiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

ZERO_PRODUCT_TR = -999  # mmasim's exponent of a zero product in CDNA3's sums
# A tile of at most this many products (M x N x K) is computed for every chunk at once (its arrays stay in cache; a
# larger one goes chunk by chunk, in one buffer: Tile.products)
WHOLE_TILE_MAX = 2**17
CANONICAL_NAN = np.array(0x7FFFFFFF, dtype=np.uint32).view(np.float32)  # the NaN every fused sum returns


def _exponent(x: np.ndarray, e_sub: int) -> np.ndarray:
    """mmasim's ``frexp_and_normalize`` exponent: floor(log2|x|), at least the type's subnormal exponent (zero's)."""
    return np.where(x == 0, e_sub, np.maximum(np.frexp(x)[1] - 1, e_sub))


def _pow2(e: np.ndarray | int) -> np.ndarray:
    return np.ldexp(1.0, np.asarray(e, dtype=np.int32))


def _keep_bits(v: np.ndarray, bits: int, e_sub: int, floor: bool) -> np.ndarray:
    """``v`` cut to ``bits`` significant bits (the leading one included), toward zero or toward -inf, with the
    granularity of the exponent ``e_sub`` below it (mmasim's frexp_and_normalize, then trunc or floor)."""
    unit = _pow2(np.maximum(np.frexp(v)[1] - 1, e_sub) - (bits - 1))
    return (np.floor(v / unit) if floor else np.trunc(v / unit)) * unit


def _chunks(k: int, l_max: int) -> list[tuple[int, int]]:
    step = min(k, l_max)
    return [(i, min(i + step, k)) for i in range(0, k, step)]


class Tile:
    """The operands of one instruction sequence: values and exponents, computed once."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor, e_sub: dict[Any, int]):
        if a.dtype == torch.float32:  # TF32/XF32: mmasim truncates the operands' mantissas to 10 bits
            a = (a.view(torch.int32) >> 13 << 13).view(torch.float32)
            b = (b.view(torch.int32) >> 13 << 13).view(torch.float32)
        self.a = a.double().numpy()
        self.b = b.double().numpy().T.copy()  # N x K
        # int16 holds every exponent here (fp32's -149..127, their sums, the zero markers -999, -132, -133)
        self.ea = _exponent(self.a, e_sub[a.dtype]).astype(np.int16)
        self.eb = _exponent(self.b, e_sub[b.dtype]).astype(np.int16)
        # What needs a pass over the products only where it can happen: a zero product (a zero operand: the product
        # of two nonzero values of at most fp32's range is never 0 in float64) and one beyond fp32's range.
        with np.errstate(all="ignore"):
            top = [float(np.abs(x).max(initial=0.0)) for x in (self.a, self.b)]
        self.zeros = not (bool((self.a != 0).all()) and bool((self.b != 0).all()))
        self.huge = not (np.isfinite(top[0] * top[1]) and top[0] * top[1] < 2.0**128)
        self._p: np.ndarray | None = None
        self._e: np.ndarray | None = None

    def products(self, lo: int, hi: int, zero_e: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact products (M x N x L) and mmasim's exponents of them for K in [lo, hi), a zero product's exponent
        ``zero_e``: in the tile's buffers, overwritten by the next call (a chunk is used up before the next)."""
        shape = (self.a.shape[0], self.b.shape[0], hi - lo)
        if self._p is None or self._p.shape[-1] < hi - lo:  # one buffer for every chunk: no allocation per chunk
            self._p, self._e = np.empty(shape, dtype=np.float64), np.empty(shape, dtype=np.int16)
        p, e = self._p[..., :hi - lo], self._e[..., :hi - lo]
        np.multiply(self.a[:, None, lo:hi], self.b[None, :, lo:hi], out=p)
        np.add(self.ea[:, None, lo:hi], self.eb[None, :, lo:hi], out=e)
        if self.zeros:
            e[p == 0] = zero_e
        return p, e


def t_fdpa(tile: Tile, c: np.ndarray, lo: int, hi: int, F: int, rho: str, e_zero: int) -> np.ndarray:
    """One chunk of mmasim's ``t_fdpa`` (NVIDIA mma/wgmma): products and the accumulator aligned to the largest
    exponent, truncated F bits below it, summed exactly, the sum truncated to fp32 (RZ-FP32) or 14 bits (RZ-E8M13)."""
    p, e = tile.products(lo, hi, e_zero)
    return _t_fdpa_step(p, e.max(axis=-1), c, F, rho, e_zero)


def _t_fdpa_step(p: np.ndarray, e: np.ndarray, c: np.ndarray, F: int, rho: str, e_zero: int) -> np.ndarray:
    """``t_fdpa`` of one chunk's products ``p`` (M x N x L) whose largest exponent is ``e`` (M x N)."""
    c64 = c.astype(np.float64)
    e_c = np.where(c64 == 0, e_zero, _exponent(c64, -126))
    e_max = np.maximum(e, e_c)
    scale = _pow2(F - e_max)
    np.multiply(p, scale[..., None], out=p)  # p is the tile's buffer, used up here
    total = np.trunc(p, out=p).sum(axis=-1) + np.trunc(c64 * scale)
    value = total * _pow2(e_max - F)
    kept = _keep_bits(value, 24 if rho == "RZ-FP32" else 14, -126, floor=False)
    return kept.astype(np.float32) + np.float32(0.0)


def _whole(tile: Tile, step: int, zero_e: int) -> tuple[np.ndarray, np.ndarray]:
    """Every product of the tile and mmasim's exponent of it (``zero_e`` for a zero product), as M x N x chunks x
    step, for K a multiple of ``step``."""
    m, k, n = tile.a.shape[0], tile.a.shape[1], tile.b.shape[0]
    shape = (m, n, k // step, step)
    p = (tile.a[:, None, :] * tile.b[None, :, :]).reshape(shape)
    e = (tile.ea[:, None, :] + tile.eb[None, :, :]).reshape(shape)
    if tile.zeros:
        e[p == 0] = zero_e
    return p, e


def t_fdpa_chunks(tile: Tile, c: np.ndarray, step: int, F: int, rho: str, e_zero: int) -> np.ndarray:
    """Every chunk of ``t_fdpa`` in order, the products and each chunk's largest exponent computed for all chunks at
    once (a small tile: one call per chunk costs more than its arithmetic); the alignment to the accumulator, which
    depends on it, chunk by chunk."""
    p, e = _whole(tile, step, e_zero)
    e = e.max(axis=-1)
    for g in range(p.shape[2]):
        c = _t_fdpa_step(p[:, :, g], e[:, :, g], c, F, rho, e_zero)
        c = np.where(np.isnan(c), CANONICAL_NAN, c)
    return c


def tr_fdpa_chunks(tile: Tile, c: np.ndarray, step: int, F: int, F2: int) -> np.ndarray:
    """Every chunk of ``tr_fdpa`` in order: each chunk's truncated fused sum does not depend on the accumulator, so
    all of them are computed at once and only the add to the accumulator (``_cdna3_finish``) runs chunk by chunk."""
    p, e = _whole(tile, step, ZERO_PRODUCT_TR)
    if tile.huge:
        p = np.where(np.abs(p) >= 2.0**128, p * np.inf, p)
    d, e_dot = _truncated_sum(p, e, F)
    for g in range(p.shape[2]):
        c = _cdna3_finish(d[..., g], e_dot[..., g], c, F, F2, drop_far_c=False)
        c = np.where(np.isnan(c), CANONICAL_NAN, c)
    return c


def _cdna3_finish(d: np.ndarray, e_dot: np.ndarray, c: np.ndarray, F: int, F2: int, drop_far_c: bool) -> np.ndarray:
    """CDNA3's add of the dot's sum to the accumulator: the sum floored F2 + 1 bits below the larger exponent, the
    accumulator F bits below it, their sum floored to F2 + 1 significant bits and rounded to fp32 (RNE)."""
    c64 = c.astype(np.float64)
    e_c = _exponent(c64, -126)
    e_max = np.maximum(e_dot, e_c)
    d = np.floor(d * _pow2(F2 + 1 - e_max)) * _pow2(e_max - F2 - 1)
    c_part = np.floor(c64 * _pow2(F - e_max)) * _pow2(e_max - F)
    if drop_far_c:
        c_part = np.where(e_c < e_max - F - 1, 0.0, c_part)
    return _keep_bits(d + c_part, F2 + 1, -126, floor=True).astype(np.float32)


def _truncated_sum(p: np.ndarray, e: np.ndarray, F: int) -> tuple[np.ndarray, np.ndarray]:
    """mmasim's ``truncated_fused_sum`` in absolute terms: the sum and the largest exponent (-999: all zero); ``e``
    already -999 where a product is zero (Tile.products)."""
    e = e.max(axis=-1).astype(np.int64)
    safe = np.where(e == ZERO_PRODUCT_TR, 0, e)
    np.multiply(p, _pow2(F - safe)[..., None], out=p)  # p is the tile's buffer (or a copy of it), used up here
    return np.trunc(p, out=p).sum(axis=-1) * _pow2(safe - F), e


def tr_fdpa(tile: Tile, c: np.ndarray, lo: int, hi: int, F: int, F2: int) -> np.ndarray:
    """One chunk of mmasim's ``tr_fdpa`` (CDNA3 fp16/bf16/xf32 MFMA)."""
    p, e = tile.products(lo, hi, ZERO_PRODUCT_TR)
    if tile.huge:
        p = np.where(np.abs(p) >= 2.0**128, p * np.inf, p)  # mmasim: a product beyond fp32's range is inf
    d, e_dot = _truncated_sum(p, e, F)
    return _cdna3_finish(d, e_dot, c, F, F2, drop_far_c=False)


def gtr_fdpa(tile: Tile, c: np.ndarray, lo: int, hi: int, F: int, F2: int) -> np.ndarray:
    """One chunk of mmasim's ``gtr_fdpa`` (CDNA3 fp8 MFMA): even and odd products summed apart, then together."""
    p, e = tile.products(lo, hi, ZERO_PRODUCT_TR)
    d_even, e_even = _truncated_sum(p[..., ::2], e[..., ::2], F)
    d_odd, e_odd = _truncated_sum(p[..., 1::2], e[..., 1::2], F)
    e_dot = np.maximum(e_even, e_odd)
    safe = np.where(e_dot == ZERO_PRODUCT_TR, 0, e_dot)
    up, down = _pow2(F - safe), _pow2(safe - F)
    d = np.floor(d_even * up) * down + np.floor(d_odd * up) * down
    return _cdna3_finish(d, e_dot, c, F, F2, drop_far_c=True)


def _flush(x: np.ndarray, keep_sign: bool) -> np.ndarray:
    return np.where(np.abs(x) < np.float32(2.0**-126), x * np.float32(0.0) if keep_sign else np.float32(0.0), x)


def ftz_mul_add(a: torch.Tensor, b: torch.Tensor, c: np.ndarray, P: int) -> np.ndarray:
    """mmasim's ``MMA_FTZ_MUL_ADD`` (CDNA2): subnormal operands flushed to +0, fp32 products, pairwise (P = 2) or
    pair-of-pairs (P = 4) fp32 sums added to the accumulator in K order, every subnormal result flushed."""
    from mmasim.arithmetic.helper import dtype_subnormal_exponent

    def operand(t: torch.Tensor) -> np.ndarray:
        x = t.float().numpy()
        return np.where(np.abs(x) < np.float32(2.0 ** dtype_subnormal_exponent[t.dtype]), np.float32(0.0), x)

    with np.errstate(all="ignore"):  # x + y written y + x: torch keeps the second NaN of two, numpy the first
        p = _flush(operand(b).T[None, :, :] * operand(a)[:, None, :], keep_sign=True)
        s = _flush(p[..., 1::P] + p[..., 0::P], keep_sign=True)
        if P == 4:
            s = _flush(_flush(p[..., 3::P] + p[..., 2::P], keep_sign=True) + s, keep_sign=True)
        acc = _flush(c.astype(np.float32), keep_sign=False)
        for g in range(s.shape[-1]):
            acc = _flush(s[..., g] + acc, keep_sign=True)
    return acc


def run(op: Any, a: torch.Tensor, b: torch.Tensor, acc: np.ndarray) -> np.ndarray:
    """``op(a, b, acc)`` for an mmasim instruction ``op``: computed here where this module knows its arithmetic,
    else by mmasim itself."""
    from mmasim.arithmetic import fdpa
    from mmasim.arithmetic import ftz_mul_add as ftz
    from mmasim.arithmetic.helper import dtype_subnormal_exponent

    arith, c = op.arithmetic_op, np.ascontiguousarray(acc, dtype=np.float32)
    kind = type(arith)
    if kind is ftz.MMA_FTZ_MUL_ADD and a.shape[1] % arith.P == 0:
        return ftz_mul_add(a, b, c, arith.P)
    known = {fdpa.MMA_T_FDPA: ("RZ-FP32", "RZ-E8M13"), fdpa.MMA_TR_FDPA: ("RNE-FP32",),
             fdpa.MMA_GTR_FDPA: ("RNE-FP32",)}
    if (arith.rho in known.get(kind, ()) and getattr(arith, "e_subnormal_a", None) is None
            and a.dtype in dtype_subnormal_exponent and b.dtype in dtype_subnormal_exponent):
        tile = Tile(a, b, dtype_subnormal_exponent)
        k, step = a.shape[1], min(a.shape[1], arith.L_max)
        whole = k % step == 0 and k > step and a.shape[0] * b.shape[1] * k <= WHOLE_TILE_MAX
        with np.errstate(all="ignore"):
            if whole and kind is fdpa.MMA_TR_FDPA:
                return tr_fdpa_chunks(tile, c, step, arith.F, arith.F2)
            if whole and kind is fdpa.MMA_T_FDPA:
                return t_fdpa_chunks(tile, c, step, arith.F, arith.rho, arith.e_zero)
            for lo, hi in _chunks(a.shape[1], arith.L_max):
                if kind is fdpa.MMA_T_FDPA:
                    c = t_fdpa(tile, c, lo, hi, arith.F, arith.rho, arith.e_zero)
                else:
                    c = (tr_fdpa if kind is fdpa.MMA_TR_FDPA else gtr_fdpa)(tile, c, lo, hi, arith.F, arith.F2)
                c = np.where(np.isnan(c), CANONICAL_NAN, c)
        return c
    return op(a, b, torch.from_numpy(c)).numpy()
