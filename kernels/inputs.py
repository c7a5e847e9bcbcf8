"""Input builders for kernel specs: seeded, layout-aware, value-class-aware. Part of the spec API.

A spec's ``make_inputs(case, device)`` typically reads::

    gen = inputs.generator(case)                       # seeded by the case: a rerun draws the same numbers
    x = inputs.place(inputs.values((m, n), case, gen), case, device, case.layout)

``values`` draws float64 numbers of the case's value class (normal, large, negative, special, subnormal); ``place`` casts
them to the case's dtype and lays them out on the device (contiguous, padded_rows, transposed); ``rows`` is the two
together for an [M, N] input. ``require_dense`` and ``require_rows`` are for launchers: a clear ValueError for a
tensor laid out in a way the kernel cannot index (a broadcast weight, a sliced output), naming it and what is accepted.

**Integer case dtypes** (int8, uint8, int32, int64): ``values`` draws int64 integers in the dtype's range instead
(:func:`integer_values`), which ``place`` casts exactly: ``normal`` uniform over the whole range (int64: over
[-2**61, 2**61)), ``large`` within 8 of either end, ``negative`` below zero; ``special`` (inf, NaN) has no integer
values and raises. ``place(..., dtype="fp32")`` builds a tensor of another dtype (an int8 matmul's fp32 scales) in
the case's layout.

**The same numbers on every backend, drawn where the case runs.** ``generator(case)`` returns a :class:`Stream`:
counter-based random numbers (Philox4x32-10, the generator of ``tl.randint4x``) keyed by the case's seed. Element
``j`` of a stream's ``i``-th draw is a function of (seed, i, j) alone, so a GPU draws it in a Triton kernel, next to
the kernel under test, and the CPU in numpy, and the two agree bit for bit: the words are integer arithmetic, and
each float64 value is one rounding of an integer (``suite/test_hazards.py`` checks it on every backend's device).
A CUDA and a ROCm run of one case therefore test the same inputs, and an interpreter run of a case printed on a GPU
reproduces its numbers. The suite sets the device for the run (:func:`set_draw_device`); ``values`` and the stream's
``normal``/``uniform``/``integers`` draw there.

A stream is also a CPU ``torch.Generator`` seeded with the case's seed, for specs that call ``torch.randn(...,
generator=gen)``: those numbers come from torch's CPU generator as before (the same on every backend, drawn on the
CPU, so slow for large tensors: draw large tensors with the stream's methods).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np
import torch
import triton
import triton.language as tl
from triton.language.random import philox

from kernels.spec import DTYPES, Case

_DRAW_DEVICE = "cpu"  # where torch.Generator draws land (benchmarks: the device)
_STREAM_DEVICE = "cpu"  # where a stream's draws land when the caller names no device

# Philox counter words 2 and 3 of a stream's draws: the draw's number, and a constant that tl.randint4x (whose words
# 2 and 3 are zero) never uses, so inputs never repeat the random words of a kernel under test seeded alike.
_DOMAIN = 0x1A9B5EED
_NORMAL, _BITS = 0, 1
# A normal draw is the centred sum of four 32-bit uniform words (Irwin-Hall, n = 4): variance 4/12 in units of 2**32,
# so one multiplication by this (exact: sqrt(3) times a power of two) gives unit variance, on [-2 sqrt 3, 2 sqrt 3).
_NORMAL_SCALE = math.sqrt(3.0) * 2.0**-32


@contextlib.contextmanager
def drawn_on(device: str) -> Iterator[None]:
    """Draw everything on ``device``, for full-size benchmark inputs: a stream's draws, and also the factory calls of
    a spec's make_inputs (torch's generator included: hundreds of millions of values drawn on the CPU take minutes;
    those numbers differ from a CPU draw of the same seed)."""
    global _DRAW_DEVICE, _STREAM_DEVICE
    old = _DRAW_DEVICE, _STREAM_DEVICE
    _DRAW_DEVICE = _STREAM_DEVICE = str(device)
    try:
        with torch.device(device):
            yield
    finally:
        _DRAW_DEVICE, _STREAM_DEVICE = old


def set_draw_device(device: str | torch.device) -> None:
    """Streams draw on ``device`` from now on in this process (a test session's backend device)."""
    global _STREAM_DEVICE
    _STREAM_DEVICE = str(device)


class Stream(torch.Generator):
    """A case's random numbers: counter-based draws that are the same on every device (see the module docstring),
    and a CPU ``torch.Generator`` seeded with the case's seed for torch's own random functions."""

    def __new__(cls, seed: int, torch_device: str = "cpu"):
        return super().__new__(cls, device=torch_device)

    def __init__(self, seed: int, torch_device: str = "cpu") -> None:
        self.manual_seed(seed)
        self.seed = int(seed) & (2**64 - 1)
        self.draws = 0

    def _next(self, shape: tuple[int, ...], kind: int, device: str | torch.device | None) -> torch.Tensor:
        self.draws += 1
        return _draw(self.seed, self.draws, kind, tuple(int(s) for s in shape), torch.device(device or _STREAM_DEVICE))

    def normal(self, shape: tuple[int, ...], device: str | torch.device | None = None) -> torch.Tensor:
        """Float64, mean 0, variance 1 (the centred sum of four uniforms: bounded by 2 sqrt 3)."""
        return self._next(shape, _NORMAL, device).double() * _NORMAL_SCALE

    def uniform(self, shape: tuple[int, ...], device: str | torch.device | None = None) -> torch.Tensor:
        """Float64 in [0, 1), 53 random bits each."""
        return (self._next(shape, _BITS, device) >> 10).double() * 2.0**-53

    def integers(self, low: int, high: int, shape: tuple[int, ...],
                 device: str | torch.device | None = None) -> torch.Tensor:
        """Int64 in [low, high) (63 random bits modulo the range: a bias below 2**-40 for ranges under 2**23)."""
        if high <= low:
            raise ValueError(f"integers: empty range [{low}, {high})")
        return self._next(shape, _BITS, device) % (high - low) + low

    def values(self, shape: tuple[int, ...], case: Case, device: str | torch.device | None = None) -> torch.Tensor:
        """Float64 values of the case's value class (see :func:`values`); int64 for an integer case dtype."""
        if is_integer(case.dtype):
            return integer_values(shape, case, lambda lo, hi, n: self.integers(lo, hi, (n,), device))
        return _value_class(self.normal(shape, device), case, self._specials)

    def _specials(self, x: torch.Tensor) -> torch.Tensor:
        # About one element in 16 is inf, -inf or NaN; at least one is, wherever the seed puts it.
        pick = self.integers(0, 48, tuple(x.shape), x.device).reshape(-1)
        if pick.numel():
            pick[self.seed % pick.numel()] = self.seed % 3
        specials = torch.tensor([math.inf, -math.inf, math.nan], dtype=torch.float64, device=x.device)
        special = (pick < 3).reshape(x.shape)
        return torch.where(special, specials[pick.clamp(max=2)].reshape(x.shape), x)


def _value_class(x: torch.Tensor, case: Case, specials) -> torch.Tensor:
    """Standard normal-like ``x`` made into the case's value class; ``specials(x)`` places inf, -inf and NaN."""
    kind = case.values
    if kind == "normal":
        return x
    if kind == "large":
        # Large but representable in every float dtype under test, sums included.
        return x * 1000.0 + 3000.0
    if kind == "negative":
        # Far enough below zero that exp() underflows unless the row max is subtracted.
        return -x.abs() * 4.0 - 100.0
    if kind == "special":
        return specials(x)
    if kind == "subnormal":
        return _subnormal(x, case.dtype)
    raise ValueError(f"unknown value class {kind!r}")


def _subnormal(x: torch.Tensor, dtype: str) -> torch.Tensor:
    """Subnormals of the case dtype, of both signs, spread log-uniformly over its subnormal binades (fp16: 6e-8 to
    6.1e-5; fp32 and bf16: 1e-45 or 9e-41 to 1.2e-38), so that a kernel that flushes them to zero fails: its
    results are subnormal too wherever the kernel keeps them (docs/checks.md, Subnormals)."""
    info = torch.finfo(DTYPES[dtype])
    share = (x.abs() / (2 * math.sqrt(3.0))).clamp(max=1.0)  # |x| < 2 sqrt 3: [0, 1)
    size = info.tiny * 0.9 * torch.exp2(-share * -math.log2(info.eps))
    return torch.where(x < 0, -size, size)


def is_integer(dtype: str) -> bool:
    """Whether the dtype named ``dtype`` (a case dtype such as ``"int8"``) is an integer type."""
    return not DTYPES[dtype].is_floating_point


def integer_values(shape: tuple[int, ...], case: Case, draw) -> torch.Tensor:
    """Int64 integers of the case's value class in the range of its integer dtype; ``draw(low, high, n)`` gives
    ``n`` integers in [low, high)."""
    info = torch.iinfo(DTYPES[case.dtype])
    lo, hi = max(info.min, -(2**61)), min(info.max, 2**61 - 1)
    n = math.prod(shape)
    if case.values == "normal":
        return draw(lo, hi + 1, n).reshape(shape)
    if case.values == "large":  # within 8 of either end: where sums and products overflow
        k = draw(0, 16, n)
        return torch.where(k < 8, lo + k, hi - (k - 8)).reshape(shape)
    if case.values == "negative":
        if lo >= 0:
            raise ValueError(f"value class 'negative' has no {case.dtype} values (the dtype is unsigned): leave it "
                             f"out of the spec's value_classes for {case.dtype}")
        return draw(lo, 0, n).reshape(shape)
    if case.values in ("special", "subnormal"):
        what = "(inf, -inf, NaN)" if case.values == "special" else "(values below the smallest normal)"
        raise ValueError(f"value class {case.values!r} {what} has no {case.dtype} values: integer dtypes take "
                         f"'normal', 'large' and 'negative'")
    raise ValueError(f"unknown value class {case.values!r}")


def generator(case: Case) -> Stream:
    return Stream(case.seed, _DRAW_DEVICE)


def values(shape: tuple[int, ...], case: Case, gen: torch.Generator) -> torch.Tensor:
    """Float64 values of the case's value class: a stream's draw on the run's device (the same numbers on every
    device), or, given a plain ``torch.Generator``, torch's normal numbers on the generator's device."""
    if isinstance(gen, Stream):
        return gen.values(tuple(shape), case)
    if is_integer(case.dtype):
        return integer_values(tuple(shape), case, lambda lo, hi, n: torch.randint(
            lo, hi, (n,), generator=gen, dtype=torch.int64, device=gen.device))

    def specials(x: torch.Tensor) -> torch.Tensor:  # exactly max(1, n // 16) of them, cycling inf, -inf, NaN
        flat = x.reshape(-1)
        n = flat.numel()
        if n:
            idx = torch.randperm(n, generator=gen, device=gen.device)[: max(1, n // 16)]
            specials = torch.tensor([float("inf"), float("-inf"), float("nan")], dtype=torch.float64,
                                    device=gen.device)
            flat[idx] = specials[torch.arange(idx.numel(), device=gen.device) % 3]
        return x

    return _value_class(torch.randn(shape, generator=gen, dtype=torch.float64, device=gen.device), case, specials)


PADDED_ROWS = 13  # the padding of the padded_rows layout, in elements: odd, so rows are aligned to no block


def place(x64: torch.Tensor, case: Case, device: str, layout: str | None = None,
          dtype: str | None = None) -> torch.Tensor:
    """Cast to the case dtype (or ``dtype``, a dtype name) and lay out on the device.

    ``padded_rows`` gives a 2-D tensor a row stride larger than its width (the padding holds NaN, or -94 in an
    integer tensor, 0x5A in a uint8 one); ``transposed`` stores the matrix column-major (a transposed view).
    """
    layout = layout or "contiguous"
    dtype = DTYPES[dtype or case.dtype]
    x = x64.to(device).to(dtype)
    if layout == "contiguous" or x.dim() < 2:
        return x.contiguous()
    rows, cols = x.shape[-2], x.shape[-1]
    if layout == "padded_rows":
        pad = PADDED_ROWS
        fill = float("nan") if dtype.is_floating_point else 0x5A if dtype == torch.uint8 else -94
        buf = torch.full((*x.shape[:-1], cols + pad), fill, dtype=dtype, device=device)
        buf[..., :cols] = x
        return buf[..., :cols]
    if layout == "transposed":
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    raise ValueError(f"unknown layout {layout!r} (rows={rows})")


def require_dense(who: str, name: str, tensor: torch.Tensor) -> None:
    """For a launcher that indexes ``tensor`` by its logical index (``ptr + i``): ValueError unless it is
    contiguous, naming the launcher, the argument, its shape and strides and what is accepted. A broadcast view
    (stride 0), a slice of a wider tensor or a permuted one would be read or written at the wrong addresses."""
    if not tensor.is_contiguous():
        raise ValueError(f"{who}: {name} must be contiguous (strides {_dense_strides(tensor.shape)} for shape "
                         f"{tuple(tensor.shape)}), got strides {tuple(tensor.stride())}; pass {name}.contiguous()")


def require_rows(who: str, name: str, tensor: torch.Tensor, written: bool = False) -> None:
    """For a launcher that passes ``tensor``'s row stride and reads each row as unit-stride: ValueError unless it
    is 2-D with unit column stride; a tensor the kernel writes (``written``) must also have rows that do not
    overlap (row stride at least the width: a broadcast output would have every row written by many programs)."""
    shape, stride = tuple(tensor.shape), tuple(tensor.stride())
    ok = tensor.dim() == 2 and (stride[1] == 1 or shape[1] <= 1)
    if ok and written and shape[0] > 1 and stride[0] < shape[1]:
        ok = False
    if not ok:
        rows = "rows that do not overlap (row stride >= width)" if written else "any row stride"
        raise ValueError(f"{who}: {name} must be 2-D with unit column stride and {rows}, got shape {shape} "
                         f"strides {stride}; pass {name}.contiguous()")


def _dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= max(size, 1)
    return tuple(reversed(out))


def rows(case: Case, device: str, gen: torch.Generator) -> torch.Tensor:
    """The usual row-major [M, N] input: the case's value class, dtype and layout."""
    return place(values((case.shape["M"], case.shape["N"]), case, gen), case, device, case.layout)


# --- the counter-based draw --------------------------------------------------------------------------------------

def _draw(seed: int, draw: int, kind: int, shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """Int64 per element: the centred sum of four words (``_NORMAL``) or 63 random bits (``_BITS``)."""
    n = math.prod(shape)
    if device.type == "cpu" or n == 0:
        return torch.from_numpy(draw_numpy(seed, draw, kind, n)).reshape(shape).to(device)
    out = torch.empty(shape, dtype=torch.int64, device=device)
    draw_into(out, seed, draw, kind)
    return out


DRAW_BLOCK = 1024


def draw_into(out: torch.Tensor, seed: int, draw: int, kind: int) -> None:
    """Write a draw into ``out`` (contiguous int64, on any device) with the Triton kernel: how a GPU run draws its
    inputs (on the CPU under TRITON_INTERPRET too; ``suite/test_hazards.py`` holds it to :func:`draw_numpy`)."""
    n = out.numel()
    if n:
        _draw_kernel[(triton.cdiv(n, DRAW_BLOCK),)](out, n, seed, draw, _DOMAIN, KIND=kind, BLOCK=DRAW_BLOCK,
                                                    num_warps=4)


@triton.jit(do_not_specialize=["n", "seed", "draw", "domain"])
def _draw_kernel(out_ptr, n, seed, draw, domain, KIND: tl.constexpr, BLOCK: tl.constexpr):
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    c0 = idx.to(tl.uint32)
    c1 = (idx >> 32).to(tl.uint32)
    c2 = c0 * 0 + draw.to(tl.uint32)
    c3 = c0 * 0 + domain.to(tl.uint32)
    w0, w1, w2, w3 = philox(seed.to(tl.uint64), c0, c1, c2, c3)
    if KIND == 0:
        v = w0.to(tl.int64) + w1.to(tl.int64) + w2.to(tl.int64) + w3.to(tl.int64) - 8589934592  # 2 * 2**32
    else:
        v = (w0.to(tl.int64) << 31) | (w1 >> 1).to(tl.int64)
    tl.store(out_ptr + idx, v, mask=idx < n)


_U32 = np.uint64(0xFFFFFFFF)


def philox_numpy(seed: int, c0, c1, c2, c3, rounds: int = 10):
    """Philox4x32 as ``triton.language.random.philox`` computes it (key = the seed's low and high words)."""
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    a, b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(rounds):
        p0, p1 = b * c2.astype(np.uint64), a * c0.astype(np.uint64)
        c0, c1, c2, c3 = (((p0 >> np.uint64(32)).astype(np.uint32) ^ c1 ^ np.uint32(k0)), (p0 & _U32).astype(np.uint32),
                          ((p1 >> np.uint64(32)).astype(np.uint32) ^ c3 ^ np.uint32(k1)), (p1 & _U32).astype(np.uint32))
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return c0, c1, c2, c3


def draw_numpy(seed: int, draw: int, kind: int, n: int) -> np.ndarray:
    """What ``_draw_kernel`` writes, computed on the CPU."""
    idx = np.arange(n, dtype=np.uint64)
    c0, c1 = (idx & _U32).astype(np.uint32), (idx >> np.uint64(32)).astype(np.uint32)
    c2, c3 = np.full(n, draw & 0xFFFFFFFF, np.uint32), np.full(n, _DOMAIN, np.uint32)
    w0, w1, w2, w3 = philox_numpy(seed, c0, c1, c2, c3)
    if kind == _NORMAL:
        return w0.astype(np.int64) + w1.astype(np.int64) + w2.astype(np.int64) + w3.astype(np.int64) - (2 << 32)
    return (w0.astype(np.int64) << np.int64(31)) | (w1 >> np.uint32(1)).astype(np.int64)
