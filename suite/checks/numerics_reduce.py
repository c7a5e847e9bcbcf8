"""``--numerics``: ``tl.sum`` added in the order the modelled GPU's compiled reduction adds.

The interpreter sums a block with ``np.sum`` (pairwise, in numpy's blocks of eight). Compiled Triton 3.6.0 lowers a
reduction (ReduceOpToLLVM) in three steps, over the layout of the reduced tensor:

1. each thread adds the elements it holds, in register order (its ``sizePerThread`` contiguous elements, then its
   repetitions), left to right: ``add.f32``/``v_add_f32`` chains in the compiled code;
2. the lanes along the axis, as a butterfly: NVIDIA ``shfl.sync.bfly`` with strides lanes/2, ..., 1; AMD the same for
   16 and 32 lanes (``ds_swizzle`` SWAP 16, ``row_shr`` 8 and 4, ``quad_perm``), but across a whole 64-lane wavefront
   DPP ``row_shr`` 8, 4, 2, 1 within each row of 16, then ``row_bcast:15`` and ``row_bcast:31`` across the rows
   (strides 8, 4, 2, 1, 16, 32: lane 63's tree, which ``v_readlane`` takes);
3. the warps along the axis through shared memory, as a butterfly again (strides warps/2, ..., 1; NVIDIA shuffles,
   AMD ``quad_perm``/``row_shr``).

The instruction sequences were read from Triton 3.6.0's PTX and AMDGCN for sm_80, sm_90, gfx90a and gfx942, compiled
on the CPU (``triton.compile`` of row sums, fp32/fp16/bf16, 1 to 16 warps). The layout is not read from the kernel's
own compiled code (the interpreter runs the Python): it is Triton's coalesced blocked layout of a load of the same
block (``Layout.of``: per thread ``min(16 bytes, elements / threads)`` contiguous elements along the last dim,
lanes then warps filled from the last dim), which is what a reduction of a loaded row gets; a reduced tensor that
reaches ``tl.sum`` in another layout (after a transpose, a broadcast, a ``tl.dot``) is summed in this layout's order
all the same. tests/checks/test_numerics_reduce.py holds ``Layout.of`` to the layouts Triton compiles. Each add is
the dtype's own rounding (fp16, fp32, fp64; bf16 in fp32 rounded to bf16, one rounding either way).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from suite.checks import interpreter_bf16

VECTOR_BYTES = 16  # the widest load a thread issues: Triton's coalescing gives it at most this many contiguous bytes


@dataclasses.dataclass(frozen=True)
class Layout:
    """How the elements along the reduced axis sit: ``i = rep * (per * lanes * warps) + warp * (per * lanes) +
    lane * per + j``."""

    per: int  # contiguous elements a thread holds (sizePerThread along the axis)
    lanes: int  # lanes along the axis (threadsPerWarp)
    warps: int  # warps along the axis (warpsPerCTA)
    reps: int  # repetitions: the layout's coverage over the axis's length

    @staticmethod
    def blocked(shape: tuple[int, ...], itemsize: int, warp_size: int, num_warps: int
                ) -> tuple[list[int], list[int], list[int]]:
        """Triton's coalesced blocked layout of a ``shape`` block: sizePerThread, threadsPerWarp, warpsPerCTA."""
        rank, numel = len(shape), math.prod(shape)
        spt = [1] * rank
        spt[-1] = max(1, min(VECTOR_BYTES // itemsize, numel // (warp_size * num_warps), shape[-1]))
        tpw, wpc = [1] * rank, [1] * rank
        lanes, warps = warp_size, num_warps
        for d in reversed(range(1, rank)):
            tpw[d] = max(1, min(lanes, shape[d] // spt[d]))
            lanes //= tpw[d]
        tpw[0] = lanes
        for d in reversed(range(1, rank)):
            wpc[d] = max(1, min(warps, shape[d] // (spt[d] * tpw[d])))
            warps //= wpc[d]
        wpc[0] = warps
        return spt, tpw, wpc

    @classmethod
    def of(cls, shape: tuple[int, ...], axis: int, itemsize: int, warp_size: int, num_warps: int) -> Layout | None:
        """The layout along ``axis``; None where the block is not Triton's (a dim not a power of two)."""
        if any(n < 1 or n & (n - 1) for n in shape):
            return None
        spt, tpw, wpc = cls.blocked(shape, itemsize, warp_size, num_warps)
        n = shape[axis]
        per = min(spt[axis], n)  # lanes or warps beyond the axis's length hold copies: the reduction skips them
        lanes = max(1, min(tpw[axis], n // per))
        warps = max(1, min(wpc[axis], n // (per * lanes)))
        return cls(per, lanes, warps, n // (per * lanes * warps))


def strides(count: int, vendor: str) -> tuple[int, ...]:
    """The butterfly's strides over ``count`` lanes or warps, in the order the compiled code adds."""
    if vendor == "amd" and count == 64:
        return (8, 4, 2, 1, 16, 32)
    return tuple(count >> k for k in range(1, count.bit_length()))


def _adder(dtype: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    if dtype in ("fp32", "fp16", "fp64"):
        return np.add
    if dtype == "bf16":
        return lambda x, y: interpreter_bf16.round_fp32(interpreter_bf16.widen(x) + interpreter_bf16.widen(y))
    return None


def _butterfly(acc: np.ndarray, steps: tuple[int, ...], add: Callable) -> np.ndarray:
    index = np.arange(acc.shape[-1])
    for s in steps:
        acc = add(acc, acc[..., index ^ s])
    return acc


def ordered_sum(data: np.ndarray, axis: int | None, dtype: str, vendor: str, warp_size: int,
                num_warps: int, keep_dims: bool) -> np.ndarray | None:
    """``tl.sum(data, axis)`` in the target's order (module docstring); None where it is not modelled (integers,
    a block that is not Triton's)."""
    add = _adder(dtype)
    x = np.asarray(data)
    if add is None or x.ndim == 0:
        return None
    whole, rank = axis is None, x.ndim
    if whole:
        x, axis = x.reshape(-1), 0
    axis = axis % x.ndim
    layout = Layout.of(x.shape, axis, x.dtype.itemsize, warp_size, num_warps)
    if layout is None:
        return None
    moved = np.moveaxis(x, axis, -1)
    lead = moved.shape[:-1]
    parts = moved.reshape(*lead, layout.reps, layout.warps, layout.lanes, layout.per)
    parts = np.moveaxis(parts, -4, -2).reshape(*lead, layout.warps, layout.lanes, layout.reps * layout.per)
    with np.errstate(all="ignore"):
        acc = parts[..., 0]
        for i in range(1, parts.shape[-1]):
            acc = add(acc, parts[..., i])
        acc = _butterfly(acc, strides(layout.lanes, vendor), add)[..., 0]
        acc = _butterfly(acc, strides(layout.warps, vendor), add)[..., 0]
    if keep_dims:
        acc = acc.reshape((1,) * rank) if whole else np.expand_dims(acc, axis)
    return acc
