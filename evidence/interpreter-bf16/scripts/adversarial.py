"""Wrong bf16 kernels, each trying to pass on the interpreter (scratch, not part of the project)."""

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from kernels.matmul import SPEC as MATMUL
from kernels.registry import register
from kernels.spec import Dim, KernelSpec, Tolerance
from kernels.vector_add import SPEC as VECTOR_ADD


@triton.jit
def ew(x_ptr, y_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if MODE == 0:  # right: bf16 add, no upcast
        out = x + y
    elif MODE == 1:  # stored through fp16
        out = (x.to(tl.float32) + y.to(tl.float32)).to(tl.float16).to(tl.bfloat16)
    elif MODE == 2:  # truncating store
        out = (x.to(tl.float32) + y.to(tl.float32)).to(tl.bfloat16, fp_downcast_rounding="rtz")
    elif MODE == 3:  # manual truncation through the bits
        s = x.to(tl.float32) + y.to(tl.float32)
        out = (s.to(tl.int32, bitcast=True) >> 16).to(tl.int16).to(tl.bfloat16, bitcast=True)
    elif MODE == 4:  # y with its low mantissa bits dropped
        yb = (y.to(tl.int16, bitcast=True) & -16).to(tl.bfloat16, bitcast=True)
        out = x + yb
    elif MODE == 5:  # subnormal inputs flushed
        tiny = 1.1754943508222875e-38
        out = tl.where(tl.abs(x) < tiny, 0.0, x) + tl.where(tl.abs(y) < tiny, 0.0, y)
    elif MODE == 6:  # NaN replaced by 0
        s = x + y
        out = tl.where(s != s, 0.0, s)
    elif MODE == 7:  # clamped to fp16's range
        out = tl.clamp((x + y).to(tl.float32), -65504.0, 65504.0)
    elif MODE == 8:  # through an integer
        out = (x + y).to(tl.int32).to(tl.bfloat16)
    elif MODE == 9:  # x read as fp16 bits
        xh = x.to(tl.int16, bitcast=True).to(tl.float16, bitcast=True)
        out = xh.to(tl.float32) + y.to(tl.float32)
    elif MODE == 10:  # sum rounded to bf16 twice (extra bf16 intermediate): x + y - 0 + 0 in bf16 steps
        out = ((x + y) * 1.0 + 0.0)
    elif MODE == 11:  # adds the output's own (poisoned) contents
        out = tl.load(out_ptr + offs, mask=mask) + x + y
    elif MODE == 12:  # add in fp32 of the operands rounded to bf16 again: x + y + tiny bias of half a bf16 ulp
        s = x.to(tl.float32) + y.to(tl.float32)
        out = s * 1.00390625
    elif MODE == 13:  # add of x and y where y < 0 uses |y|
        out = x + tl.abs(y)
    else:  # 14: accumulated with a bf16 atomic add into a zeroed output
        tl.store(out_ptr + offs, tl.zeros_like(x), mask=mask)
        tl.atomic_add(out_ptr + offs, x, mask=mask)
        out = tl.load(out_ptr + offs, mask=mask) + y
    tl.store(out_ptr + offs, out, mask=mask)


@triton.jit
def ew_lanes(x_ptr, y_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if MODE == 0:  # every other element never written
        mask = mask & (offs % 2 == 0)
    out = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, out, mask=mask)


def _ew(mode: int, kernel=ew, floor_grid: bool = False):
    def run(inp, out, cfg):
        n = inp["x"].numel()
        grid = (max(n // 64, 1),) if floor_grid else (triton.cdiv(n, 64),)
        kernel[grid](inp["x"], inp["y"], out["out"], n, MODE=mode, BLOCK=64)
    return run


COMMON = dict(dtypes=("bf16",), properties=(), benchmark_shapes=(), batch_dim=None, batch_inputs=(), batch_outputs=(),
              jit_fn=None, compile_signature=None, known_issues=())
EW = {0: "right bf16 add", 1: "through fp16", 2: "rtz store", 3: "bit truncation", 4: "y low bits dropped",
      5: "subnormals flushed", 6: "NaN to 0", 7: "fp16 range clamp", 8: "through int32", 9: "x as fp16 bits",
      10: "extra bf16 roundings", 11: "reads the output", 12: "x 1.0039", 13: "abs(y)", 14: "bf16 atomic add"}
for mode, what in EW.items():
    register(dataclasses.replace(VECTOR_ADD, name=f"adv_ew{mode}", run=_ew(mode), description=what, **COMMON))
register(dataclasses.replace(VECTOR_ADD, name="adv_ew_half_lanes", run=_ew(0, ew_lanes), description="half lanes",
                             **COMMON))
register(dataclasses.replace(VECTOR_ADD, name="adv_ew_floor_grid", run=_ew(1, ew_lanes, floor_grid=True),
                             description="grid floor", **COMMON))


@triton.jit
def max_bits(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    xi = x.to(tl.int16, bitcast=True)
    yi = y.to(tl.int16, bitcast=True)
    tl.store(out_ptr + offs, tl.where(xi > yi, x, y), mask=mask)


register(dataclasses.replace(
    VECTOR_ADD, name="adv_max_bits", description="max by comparing the bits as int16",
    run=lambda inp, out, cfg: max_bits[(triton.cdiv(inp["x"].numel(), 64),)](inp["x"], inp["y"], out["out"],
                                                                             inp["x"].numel(), BLOCK=64),
    reference=lambda inp, case: {"out": torch.maximum(inp["x"].double(), inp["y"].double())}, **COMMON))


@triton.jit
def rowsum(x_ptr, out_ptr, n, BLOCK: tl.constexpr, UPCAST: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    if UPCAST:
        s = tl.sum(x.to(tl.float32), 0)
    else:
        s = tl.sum(x, 0)  # a bf16 reduction
    tl.store(out_ptr + row, s)


def _rowsum(upcast):
    def run(inp, out, cfg):
        m, n = inp["x"].shape
        rowsum[(m,)](inp["x"], out["out"], n, BLOCK=triton.next_power_of_2(n), UPCAST=upcast)
    return run


def _rows_inputs(case, device):
    from kernels import inputs
    gen = inputs.generator(case)
    return {"x": inputs.place(inputs.values((case.shape["M"], case.shape["N"]), case, gen), case, device)}


for name, upcast in (("adv_sum_bf16", False), ("adv_sum_fp32", True)):
    register(dataclasses.replace(
        VECTOR_ADD, name=name, description="row sums of x",
        dims=(Dim("M", interpret_max=8, gpu_max=8, blocks=(1,)), Dim("N", interpret_max=2048, gpu_max=2048, blocks=(128,))),
        value_classes=("normal", "negative"), make_inputs=_rows_inputs,
        make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape[0], dtype=inp["x"].dtype)},
        run=_rowsum(upcast), reference=lambda inp, case: {"out": inp["x"].double().sum(dim=1)},
        tolerance=Tolerance(reduction=lambda case: case.shape["N"],
                            magnitude=lambda inp, ref: {"out": inp["x"].double().abs().sum(dim=1)}),
        paths=(), torch_baseline=None, flops=lambda case: 1.0, min_bytes=lambda case: 1.0,
        batch_dim=None, **{k: v for k, v in COMMON.items() if k != "batch_dim"}))


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
       BK: tl.constexpr, MODE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if MODE == 6:  # starts from the output's contents
        acc = tl.load(c_ptr + rm[:, None] * scm + rn[None, :] * scn, mask=(rm[:, None] < M) & (rn[None, :] < N),
                      other=0.0).to(tl.float32)
    k_blocks = tl.cdiv(K, BK)
    if MODE == 4:  # the last K block skipped
        k_blocks = K // BK
    for kb in range(0, k_blocks):
        k = kb * BK + rk
        a = tl.load(a_ptr + rm[:, None] * sam + k[None, :] * sak, mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + k[:, None] * sbk + rn[None, :] * sbn, mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        if MODE == 11:  # the K tail padded with 1.0 instead of 0
            a = tl.load(a_ptr + rm[:, None] * sam + k[None, :] * sak, mask=(rm[:, None] < M) & (k[None, :] < K),
                        other=1.0)
            b = tl.load(b_ptr + k[:, None] * sbk + rn[None, :] * sbn, mask=(k[:, None] < K) & (rn[None, :] < N),
                        other=1.0)
        if MODE == 1:  # the dot in fp16
            acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc)
        elif MODE == 2:  # the accumulator rounded to bf16 at every K step
            acc = tl.dot(a, b, acc).to(tl.bfloat16).to(tl.float32)
        elif MODE == 10:  # a bf16 accumulator, added in bf16
            acc = (acc.to(tl.bfloat16) + tl.dot(a, b).to(tl.bfloat16)).to(tl.float32)
        elif MODE == 8:  # a's low mantissa bits dropped
            a = (a.to(tl.int16, bitcast=True) & -8).to(tl.bfloat16, bitcast=True)
            acc = tl.dot(a, b, acc)
        else:
            acc = tl.dot(a, b, acc)
    c_ptrs = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    if MODE == 5:  # stored through fp16
        tl.store(c_ptrs, acc.to(tl.float16).to(tl.bfloat16), mask=cmask)
    elif MODE == 9:  # truncating store
        tl.store(c_ptrs, acc.to(tl.bfloat16, fp_downcast_rounding="rtz"), mask=cmask)
    else:
        tl.store(c_ptrs, acc.to(tl.bfloat16), mask=cmask)


def _mm(mode: int):
    def run(inp, out, cfg):
        a, b, c = inp["a"], inp["b"], out["c"]
        m, k = a.shape
        n = b.shape[1]
        bm, bn, bk = 16, 16, 16
        grid_n = triton.cdiv(n, bn)
        if mode == 3 and grid_n > 1:  # the last column of tiles skipped
            grid_n -= 1
        mm[(triton.cdiv(m, bm), grid_n)](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                         c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk, MODE=mode)
    return run


MM = {0: "right", 1: "dot in fp16", 2: "acc rounded to bf16 per K step", 3: "last tile column skipped",
      4: "last K block skipped", 5: "stored through fp16", 6: "starts from the output", 8: "a's low bits dropped",
      9: "rtz store", 10: "bf16 accumulator", 11: "K tail padded with 1"}
for mode, what in MM.items():
    register(dataclasses.replace(MATMUL, name=f"adv_mm{mode}", run=_mm(mode), description=what, paths=(),
                                 jit_fns=(), **COMMON))
