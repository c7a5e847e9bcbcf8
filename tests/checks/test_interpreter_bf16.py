"""bf16 on the CPU interpreter as compiled Triton computes it (suite/checks/interpreter_bf16.py): each patched
operation run in a tiny kernel and compared bit for bit with torch's own bf16 arithmetic on the CPU, which computes
in fp32 and rounds to nearest even, as compiled Triton does; a NaN compared as a NaN (its bits are the GPU's quiet
NaN here, torch's canonical one there)."""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from suite.checks import interpreter_bf16

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter only")

TIE_DOWN, TIE_UP = 1.00390625, 1.01171875  # 1 + 2**-8 and 1 + 3 * 2**-8: halfway, to 1.0 and to 1.015625 (even)
SUBNORMAL = 2.0 ** -133  # bf16's smallest subnormal (fp32's exponent range, 7 mantissa bits)
# fp32 values whose rounding to bf16 has an edge: ties both ways, either sign, just off a tie, bf16's largest finite
# value, the fp32 values that round to inf, infinities, zeros, subnormals and their ties, NaN.
FP32_EDGES = [TIE_DOWN, TIE_UP, -TIE_DOWN, -TIE_UP, 1.0 + 2.0 ** -8 + 2.0 ** -23, 1.0 + 2.0 ** -8 - 2.0 ** -23,
              3.3895313892515355e38, 3.3961775292304630e38, 3.4028234663852886e38, -3.4028234663852886e38,
              math.inf, -math.inf, 0.0, -0.0, SUBNORMAL, 1.5 * SUBNORMAL, 2.5 * SUBNORMAL, -2.5 * SUBNORMAL,
              0.5 * SUBNORMAL, 0.75 * SUBNORMAL, 2.0 ** -149, 1.1754943508222875e-38, 1.00415, -3.1415926, 65504.0,
              math.nan, -math.nan]


def _fp32(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


def random_fp32(n: int, seed: int) -> torch.Tensor:
    """fp32 values from random bit patterns: every exponent, subnormals, infinities and NaNs among them."""
    bits = np.random.default_rng(seed).integers(0, 2 ** 32, size=n, dtype=np.uint64).astype(np.uint32)
    return torch.from_numpy(bits.view(np.float32).copy())


def random_bf16(n: int, seed: int, finite: bool = True) -> torch.Tensor:
    bits = np.random.default_rng(seed).integers(0, 2 ** 16, size=n, dtype=np.uint32).astype(np.uint16)
    values = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)
    return torch.where(values.isfinite(), values, 1.0) if finite else values


def assert_same_bits(got: torch.Tensor, want: torch.Tensor, zero_sign: bool = True) -> None:
    """Bit for bit, except that a NaN need only be a NaN (and, without ``zero_sign``, a zero a zero)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = want.isnan()
    assert torch.equal(got.isnan(), nan), (got[got.isnan() != nan], want[got.isnan() != nan])
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    same = got.view(ints) == want.view(ints)
    if not zero_sign:
        same |= (got == 0) & (want == 0)
    wrong = ~same & ~nan
    assert not wrong.any(), (f"{int(wrong.sum())} of {got.numel()} differ: got {got[wrong][:6].tolist()}, want "
                             f"{want[wrong][:6].tolist()} (from position {int(wrong.nonzero()[0])})")


# --- conversions ----------------------------------------------------------------------------------------------------

@triton.jit
def convert(x_ptr, out_ptr, n, DST: tl.constexpr, RTZ: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if RTZ:
        y = x.to(DST, fp_downcast_rounding="rtz")
    else:
        y = x.to(DST)
    tl.store(out_ptr + offs, y, mask=mask)


TL = {torch.bfloat16: tl.bfloat16, torch.float32: tl.float32, torch.float16: tl.float16, torch.float64: tl.float64,
      torch.int32: tl.int32, torch.int64: tl.int64, torch.int8: tl.int8}


def run_convert(x: torch.Tensor, dst: torch.dtype, rtz: bool = False) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=dst)
    block = 1024
    convert[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), DST=TL[dst], RTZ=rtz, BLOCK=block)
    return out


def test_fp32_to_bf16_rounds_to_nearest_even_as_torch_does():
    """Ties to even both ways (1.00390625 -> 1.0, 1.01171875 -> 1.015625), negative ties, overflow to inf as rounding
    gives (fp32's largest value is past bf16's last tie), subnormals and their ties, NaN a NaN; and random bits."""
    for x in (_fp32(FP32_EDGES), random_fp32(20000, seed=1)):
        assert_same_bits(run_convert(x, torch.bfloat16), x.to(torch.bfloat16))
    got = run_convert(_fp32([TIE_DOWN, TIE_UP, 3.4028234663852886e38]), torch.bfloat16)
    assert got.tolist() == [1.0, 1.015625, math.inf]


def test_fp32_to_bf16_rtz_truncates():
    x = torch.cat([_fp32(FP32_EDGES), random_fp32(4096, seed=2)])
    want = (x.view(torch.int32) >> 16).to(torch.int16).view(torch.bfloat16)
    want[x.isnan()] = math.nan  # a NaN whose payload is in the cut-off bits only stays a NaN, not inf
    got = run_convert(x, torch.bfloat16, rtz=True)
    assert_same_bits(got, want)
    assert run_convert(_fp32([TIE_UP, 3.4028234663852886e38]), torch.bfloat16, rtz=True).tolist() == [
        1.0078125, 3.3895313892515355e38]  # toward zero: down, and the largest finite value, not inf


def test_bf16_to_fp32_is_exact_for_every_bit_pattern():
    every = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    got = run_convert(every, torch.float32)
    assert_same_bits(got, every.float())
    finite = every.isfinite()
    assert torch.equal(got.view(torch.int32)[finite] & 0xFFFF, torch.zeros_like(got.view(torch.int32)[finite]))


def _exact_bf16(value: float) -> float:
    """``value`` rounded once to bf16, to nearest even, by exact arithmetic (finite, in bf16's normal range)."""
    exponent = math.frexp(value)[1] - 1  # value = m * 2**exponent, 1 <= |m| < 2
    ulp = Fraction(2) ** (exponent - 7)
    q, r = divmod(Fraction(value), ulp)
    if r > ulp / 2 or (r == ulp / 2 and q % 2):
        q += 1
    return float(q * ulp)


def test_fp64_to_bf16_rounds_once():
    """1 + 2**-8 + 2**-30 is just past a bf16 tie: rounded once it goes up; through fp32 (which torch does) it would
    become the tie and go down to even."""
    values = [1.0 + 2.0 ** -8 + 2.0 ** -30, -(1.0 + 2.0 ** -8 + 2.0 ** -30), 1.0 + 2.0 ** -8, 3.0 + 2.0 ** -6,
              1e-30, -2.5e30, 0.1, 1.0 / 3.0]
    rng = np.random.default_rng(3)
    values += (rng.standard_normal(2000) * np.exp2(rng.integers(-120, 120, 2000))).tolist()
    got = run_convert(torch.tensor(values, dtype=torch.float64), torch.bfloat16)
    assert got.float().tolist() == [_exact_bf16(v) for v in values]
    assert got[0].item() == 1.0078125 and torch.tensor(values[0], dtype=torch.float64).to(torch.bfloat16) == 1.0
    specials = torch.tensor([math.inf, -math.inf, math.nan, 1e300, -1e300, 1e-300, -1e-300, 0.0, -0.0],
                            dtype=torch.float64)
    assert_same_bits(run_convert(specials, torch.bfloat16),
                     torch.tensor([math.inf, -math.inf, math.nan, math.inf, -math.inf, 0.0, -0.0, 0.0, -0.0],
                                  dtype=torch.bfloat16))


def test_fp16_and_integers_to_bf16_through_fp32_as_torch_does():
    """fp16 -> fp32 is exact, so one rounding; integers are rounded to fp32 first (2**24 + 1 becomes 2**24), as torch
    converts them."""
    halves = torch.cat([torch.tensor([65504.0, -65504.0, 6.1e-5, 5.96e-8, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, math.inf,
                                      math.nan], dtype=torch.float16),
                        random_bf16(4096, seed=4).to(torch.float16)])
    assert_same_bits(run_convert(halves, torch.bfloat16), halves.to(torch.bfloat16))
    ints = torch.tensor([257, 259, -771, 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 31 - 1, -2 ** 31, 0, 1, -1], dtype=torch.int32)
    assert_same_bits(run_convert(ints, torch.bfloat16), ints.to(torch.bfloat16))
    assert run_convert(ints, torch.bfloat16)[:2].tolist() == [256.0, 260.0]
    wide = torch.tensor([2 ** 40 + 2 ** 32, -(2 ** 62) - 1, 12345678901], dtype=torch.int64)
    assert_same_bits(run_convert(wide, torch.bfloat16), wide.to(torch.bfloat16))


@pytest.mark.parametrize("dst", [torch.float16, torch.float64, torch.int32, torch.int8])
def test_bf16_to_other_types_goes_through_its_exact_fp32(dst):
    x = random_bf16(4096, seed=5)
    if not dst.is_floating_point:  # in range, where the conversion is defined
        info = torch.iinfo(dst)
        x = torch.where((x > info.min) & (x < info.max), x, 3.5).to(torch.bfloat16)
    else:
        x = torch.cat([x, torch.tensor([math.inf, -math.inf, math.nan, 2.0 ** -133, -0.0], dtype=torch.bfloat16)])
    assert_same_bits(run_convert(x, dst), x.float().to(dst))
    # Triton's language routes bf16 -> anything but fp32 through fp32 itself; the builder's own cast, which another
    # Triton could reach directly, goes through the exact fp32 too.
    from triton.runtime.interpreter import TensorHandle, interpreter_builder

    handle = TensorHandle(x.view(torch.int16).numpy().view(np.uint16).copy(), tl.bfloat16)
    direct = interpreter_builder.cast_impl(handle, TL[dst])
    assert_same_bits(torch.from_numpy(np.asarray(direct.data).copy()), x.float().to(dst))


# --- arithmetic -----------------------------------------------------------------------------------------------------

@triton.jit
def arithmetic(x_ptr, y_ptr, z_ptr, out_ptr, cmp_ptr, quotient_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + 0 * n + offs, x + y, mask=mask)
    tl.store(out_ptr + 1 * n + offs, x - y, mask=mask)
    tl.store(out_ptr + 2 * n + offs, x * y, mask=mask)
    tl.store(out_ptr + 3 * n + offs, tl.minimum(x, y), mask=mask)  # these three widen bf16 to fp32 themselves
    tl.store(out_ptr + 4 * n + offs, tl.maximum(x, y), mask=mask)
    tl.store(out_ptr + 6 * n + offs, tl.clamp(x, -tl.abs(y), tl.abs(y)), mask=mask)
    tl.store(out_ptr + 5 * n + offs, tl.fma(x, y, z), mask=mask)
    tl.store(out_ptr + 7 * n + offs, -x, mask=mask)
    tl.store(out_ptr + 8 * n + offs, tl.where(x < y, x, z), mask=mask)
    tl.store(out_ptr + 9 * n + offs, x * 3.0 + y, mask=mask)  # a bf16 constant
    tl.store(cmp_ptr + 0 * n + offs, (x < y).to(tl.int8), mask=mask)
    tl.store(cmp_ptr + 1 * n + offs, (x == y).to(tl.int8), mask=mask)
    tl.store(cmp_ptr + 2 * n + offs, (x >= z).to(tl.int8), mask=mask)
    tl.store(cmp_ptr + 3 * n + offs, ((x < y) & (y != z)).to(tl.int8), mask=mask)
    tl.store(quotient_ptr + offs, x / y, mask=mask)  # bf16 / bf16 is fp32 in Triton


def run_arithmetic(x, y, z):
    n = x.numel()
    out = torch.empty(10 * n, dtype=torch.bfloat16)
    cmp = torch.empty(4 * n, dtype=torch.int8)
    quotient = torch.empty(n, dtype=torch.float32)
    arithmetic[(1,)](x, y, z, out, cmp, quotient, n, BLOCK=triton.next_power_of_2(n))
    return out.view(10, n), cmp.view(4, n), quotient


def torch_arithmetic(x, y, z):
    """What compiled Triton computes, in torch's CPU bf16 arithmetic (fp32, then rounded to nearest even)."""
    fma = (x.float() * y.float() + z.float()).to(torch.bfloat16)  # the product of two bf16 values is exact in fp32
    out = torch.stack([x + y, x - y, x * y, torch.minimum(x, y), torch.maximum(x, y), fma,
                       torch.clamp(x, -y.abs(), y.abs()), -x, torch.where(x < y, x, z),
                       x * torch.tensor(3.0, dtype=torch.bfloat16) + y])
    cmp = torch.stack([x < y, x == y, x >= z, (x < y) & (y != z)]).to(torch.int8)
    return out, cmp, x.float() / y.float()


def _bf16(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bfloat16)


def edge_operands():
    """Operands whose results have an edge: ties to even both ways (1 + 2**-8 -> 1.0; 1.0078125 + 2**-8 ->
    1.015625), their negatives, overflow to inf, inf - inf, NaN, subnormal sums and products, exact cancellation."""
    x = _bf16([1.0, 1.0078125, -1.0, -1.0078125, 3.3895e38, math.inf, math.nan, 2.0 ** -130, 2.0 ** -133, 3.0,
               -0.0, 2.0 ** -126, 1.5, -2.0 ** 100])
    y = _bf16([2.0 ** -8, 2.0 ** -8, -2.0 ** -8, -2.0 ** -8, 3.3895e38, math.inf, 1.0, 2.0 ** -133, 0.5, -3.0,
               0.0, 2.0 ** -2, 1.0 + 2.0 ** -7, 2.0 ** 100])
    z = _bf16([1.0, -1.0, 2.0 ** -9, 0.0, -math.inf, math.nan, 2.0, -2.0 ** -133, 2.0 ** -140, 1e-3, 0.0, 1.0,
               -2.25, 3.0])
    return x, y, z


@pytest.mark.parametrize("operands", ["edges", "random"])
def test_bf16_arithmetic_is_fp32_rounded_to_nearest_even_as_torch(operands):
    if operands == "edges":
        x, y, z = edge_operands()
    else:
        x, y, z = (random_bf16(512, seed=s, finite=False) for s in (6, 7, 8))
    got, got_cmp, got_quotient = run_arithmetic(x, y, z)
    want, want_cmp, want_quotient = torch_arithmetic(x, y, z)
    for name, g, w in zip(("add", "sub", "mul", "minimum", "maximum", "fma", "clamp", "neg", "where", "x*3+y"),
                          got, want, strict=True):
        try:  # min/max/clamp are the interpreter's fp32 ones (Triton widens bf16 for them): -0.0 and 0.0 tie there
            assert_same_bits(g, w, zero_sign=name not in ("minimum", "maximum", "clamp"))
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
    assert torch.equal(got_cmp, want_cmp)
    assert_same_bits(got_quotient, want_quotient)


def test_ties_round_to_even_in_arithmetic():
    x, y, _ = edge_operands()
    got, _, _ = run_arithmetic(x, y, x)
    assert got[0][:4].tolist() == [1.0, 1.015625, -1.0, -1.015625]  # x + y at the four ties
    assert got[0][4].item() == math.inf and got[0][5].item() == math.inf  # overflow to inf; inf + inf
    assert math.isnan(got[1][5].item()) and got[1][4].item() == 0.0  # inf - inf; bf16's largest minus itself
    assert got[2][7].item() == 0.0 and got[2][8].item() == 0.0  # 2**-130 * 2**-133 underflows; 2**-133 * 0.5 ties to 0


@triton.jit
def reductions(x_ptr, sum_ptr, scanned_ptr, widened_ptr, extremes_ptr, argmax_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(sum_ptr, tl.sum(x, 0))  # a bf16 reduction: Triton's language widens it only with dtype=
    tl.store(scanned_ptr + offs, tl.associative_scan(x, 0, tl.standard._sum_combine))
    tl.store(scanned_ptr + BLOCK + offs, tl.associative_scan(x, 0, tl.standard._prod_combine))
    tl.store(widened_ptr + offs, tl.cumsum(x, 0))  # tl.cumsum and tl.cumprod widen bf16 to fp32 themselves
    tl.store(widened_ptr + BLOCK + offs, tl.cumprod(x, 0))
    tl.store(extremes_ptr, tl.reduce(x, 0, tl.standard._elementwise_max))  # a bf16 max, not widened first
    tl.store(extremes_ptr + 1, tl.reduce(x, 0, tl.standard._elementwise_min))
    tl.store(argmax_ptr, tl.argmax(x, 0))


def tree(x: torch.Tensor, op) -> torch.Tensor:
    """``op`` over ``x`` (a power of two long) in a tree: element i with i + n/2, each result rounded to bf16."""
    while len(x) > 1:
        half = len(x) // 2
        x = op(x[:half].float(), x[half:].float()).to(torch.bfloat16)
    return x


def running(x: torch.Tensor, op, dtype: torch.dtype) -> torch.Tensor:
    """The running results of ``op`` over ``x`` in element order, each rounded to ``dtype``."""
    out = [x[0].to(dtype)]
    for v in x[1:]:
        out.append(op(out[-1].float(), v.float()).to(dtype))
    return torch.stack(out)


def test_bf16_reductions_and_scans_round_at_every_step():
    """tl.sum and a scan of bf16 add (multiply) in fp32 and round to bf16 at every step, as a bf16 combine does on a
    GPU: the sum in a tree (a warp's butterfly), the scan in element order; the bits are never summed. tl.cumsum and
    tl.cumprod widen to fp32 first. A max of negative values compares values, not bits."""
    x = torch.cat([_bf16([1.0, 2.0 ** -8, 2.0 ** -8, -3.0, 1.0078125]), random_bf16(27, seed=9) * 0.01]).to(
        torch.bfloat16)
    x[7] = -12.5
    total, scanned = torch.empty(1, dtype=torch.bfloat16), torch.empty(64, dtype=torch.bfloat16)
    widened, extremes = torch.empty(64, dtype=torch.bfloat16), torch.empty(2, dtype=torch.bfloat16)
    argmax = torch.empty(1, dtype=torch.int32)
    reductions[(1,)](x, total, scanned, widened, extremes, argmax, BLOCK=32)
    add, mul = (lambda a, b: a + b), (lambda a, b: a * b)
    assert_same_bits(scanned[:32], running(x, add, torch.bfloat16))
    assert_same_bits(scanned[32:], running(x, mul, torch.bfloat16))
    assert_same_bits(total, tree(x, add))
    assert scanned[2].item() == 1.0  # 1 + 2**-8 is a tie to 1.0, twice: the 2**-8s are lost in bf16, in this order
    assert_same_bits(widened[:32], running(x, add, torch.float32).to(torch.bfloat16))
    assert_same_bits(widened[32:], running(x, mul, torch.float32).to(torch.bfloat16))
    assert widened[2].item() == 1.0078125  # in fp32 they are kept
    assert x.max() > 0 > x.min()  # compared as bits, a negative value would be the largest
    assert extremes.tolist() == [x.max().item(), x.min().item()] and argmax.item() == int(x.float().argmax())
    # 1 + 2**-8 ties to 1.0: in element order at every step, so the scan stays 1.0; in the tree once, the first pair
    # (the 2**-8s pair up exactly), so the sum is 1 + 30 * 2**-8; kept in fp32 and rounded once, both would be 1.125
    steps = torch.tensor([1.0] + [2.0 ** -8] * 31, dtype=torch.bfloat16)
    reductions[(1,)](steps, total, scanned, widened, extremes, argmax, BLOCK=32)
    assert scanned[31].item() == 1.0 and total.item() == 1.1171875 and widened[31].item() == 1.125


# --- dot ------------------------------------------------------------------------------------------------------------

@triton.jit
def bf16_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BLOCK_K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BLOCK_K)
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def run_dot(a, b, block_k=16):
    c = torch.empty(a.shape[0], b.shape[1])
    bf16_dot[(1,)](a, b, c, M=a.shape[0], N=b.shape[1], K=a.shape[1], BLOCK_K=block_k)
    return c


def test_bf16_dot_multiplies_exactly_and_accumulates_in_fp32():
    """Products of bf16 operands are exact in fp32 and so, here, is every partial sum: the result is torch.matmul of
    the fp32-widened operands bit for bit. Rounding a product or a partial sum to bf16 would lose the low bits these
    sums need (1 + 2**-8 + ...)."""
    rng = np.random.default_rng(10)
    a = torch.from_numpy(rng.integers(-8, 9, (16, 64)).astype(np.float32)).to(torch.bfloat16)
    b = torch.from_numpy(rng.integers(-8, 9, (64, 16)).astype(np.float32) * 2.0 ** -8 + 1.0).to(torch.bfloat16)
    assert torch.equal(a.float(), a.float().to(torch.bfloat16).float())  # the operands are what was meant
    want = torch.matmul(a.float(), b.float())
    assert_same_bits(run_dot(a, b), want)
    assert not torch.equal(want.to(torch.bfloat16).float(), want)  # a bf16 result would differ


def test_bf16_dot_of_random_operands_is_the_fp32_matmul():
    a, b = torch.randn(32, 64).to(torch.bfloat16), torch.randn(64, 32).to(torch.bfloat16)
    torch.testing.assert_close(run_dot(a, b, block_k=32), torch.matmul(a.float(), b.float()), rtol=2e-6, atol=2e-6)


# --- operations Triton 3.6's language refuses on bf16, reached on the builder ---------------------------------------

def test_unary_operations_on_bf16_are_fp32_rounded():
    """tl.exp, tl.sqrt, tl.erf, ... refuse bf16 in Triton 3.6's language (as its compiler does), so no kernel reaches
    the builder's unary operations with bf16 here; a Triton that lets them through gets fp32 rounded to bf16."""
    from triton.runtime.interpreter import TensorHandle, interpreter_builder

    x = torch.cat([_bf16([1.0, -2.5, 0.5, 0.0, -0.0, math.inf, -math.inf, math.nan, 2.0 ** -133, 88.5]),
                   random_bf16(256, seed=11)])
    handle = TensorHandle(x.view(torch.int16).numpy().view(np.uint16).copy(), tl.bfloat16)
    wide = x.float()
    cases = {"exp": (lambda: interpreter_builder.create_exp(handle), torch.exp(wide)),
             "log": (lambda: interpreter_builder.create_log(handle), torch.log(wide)),
             "sqrt": (lambda: interpreter_builder.create_sqrt(handle), torch.sqrt(wide)),
             "sin": (lambda: interpreter_builder.create_sin(handle), torch.sin(wide)),
             "floor": (lambda: interpreter_builder.create_floor(handle), torch.floor(wide)),
             "erf": (lambda: interpreter_builder.create_erf(handle), torch.erf(wide)),
             "rsqrt": (lambda: interpreter_builder.create_rsqrt(handle), torch.rsqrt(wide))}
    for name, (compute, want) in cases.items():
        out = compute()
        assert out.dtype == tl.bfloat16 and out.data.dtype == np.uint16, name
        got = torch.from_numpy(out.data.view(np.int16).copy()).view(torch.bfloat16)
        try:  # libm and torch may differ in an fp32 ulp; then, near a bf16 tie, in a bf16 ulp
            torch.testing.assert_close(got, want.to(torch.bfloat16), rtol=2 ** -8, atol=0, equal_nan=True)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None


# --- the numerics alone ----------------------------------------------------------------------------------------------

def test_the_rounding_helpers_alone():
    """The numpy functions the patches use: round_fp32 against torch over every exponent; widen exact."""
    x = random_fp32(200000, seed=12).numpy()
    want = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    got = interpreter_bf16.round_fp32(x)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan]) and (got[nan] == interpreter_bf16.QUIET_NAN).all()
    every = np.arange(2 ** 16, dtype=np.uint32).astype(np.uint16)
    finite = np.isfinite(interpreter_bf16.widen(every))
    assert np.array_equal(interpreter_bf16.round_fp32(interpreter_bf16.widen(every))[finite], every[finite])
