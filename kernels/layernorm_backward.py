"""LayerNorm backward: dx per row, dweight/dbias by a deterministic two-stage reduction (no atomics).

Rows that fit the config's block (BLOCK_N >= N) take two launches: one program per row group reads x and dy
once, BLOCK_M rows at a time, writes dx and its group's row of [ROW_GROUPS, N] fp32 partial sums of dw and db;
then a fixed-order sum over the groups. Wider rows take three: per-row coefficients of dx; dx with the partial
sums, each program owning one row group and one column block; the same final sum.

A row's dx is bitwise the same whatever the batch (``batch_invariant``): the kernels that compute it take the row
count and the rows per group, which follow M, as plain runtime integers (``do_not_specialize``). Triton's JIT would
otherwise compile a variant per value class (a multiple of 16, or 1): on sm_90 at N=257 with BLOCK_M=1 and 8 warps,
rows_per_group=16 (M=1981, ROW_GROUPS=132) makes the first row tile's loads 16-byte aligned, the coalescing pass
gives x and dy two columns per thread instead of one, and the row sums behind dx add in another order than at
rows_per_group=8 (M=990). dweight and dbias are sums over the batch and depend on it by definition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import (
    DTYPES,
    Case,
    CodePath,
    Dim,
    JitKernel,
    KernelSpec,
    Tolerance,
    cdiv,
    next_power_of_2,
    signature,
    split_config,
)

EPS = 1e-5  # of the forward whose statistics the inputs stand for


@triton.jit
def layernorm_bwd_coeff_kernel(x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, c1_ptr, c2_ptr, x_row_stride, dy_row_stride,
                               n_cols, BLOCK_N: tl.constexpr):
    # c1 = mean(xhat * w * dy), c2 = mean(w * dy): dx = rstd * (w * dy - xhat * c1 - c2).
    row = tl.program_id(0).to(tl.int64)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    acc1 = tl.zeros([BLOCK_N], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        wdy = w * dy
        acc1 += tl.where(mask, (x - mean) * rstd * wdy, 0.0)
        acc2 += wdy
    tl.store(c1_ptr + row, tl.sum(acc1, axis=0) / n_cols)
    tl.store(c2_ptr + row, tl.sum(acc2, axis=0) / n_cols)


# n_rows and rows_per_group follow M: never specialized, so every batch size runs one compiled kernel (above).
@triton.jit(do_not_specialize=["n_rows", "rows_per_group"])
def layernorm_bwd_kernel(x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, c1_ptr, c2_ptr, dw_part_ptr, db_part_ptr,
                         x_row_stride, dy_row_stride, dx_row_stride, n_rows, n_cols, rows_per_group,
                         BLOCK_N: tl.constexpr):
    group = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_N], dtype=tl.float32)
    first = group * rows_per_group
    for row in range(first, tl.minimum(first + rows_per_group, n_rows)):
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        xhat = (x - mean) * rstd
        dx = (w * dy - (xhat * tl.load(c1_ptr + row) + tl.load(c2_ptr + row))) * rstd
        tl.store(dx_ptr + row * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat
        db += dy
    tl.store(dw_part_ptr + group * n_cols + cols, dw, mask=mask)
    tl.store(db_part_ptr + group * n_cols + cols, db, mask=mask)


@triton.jit(do_not_specialize=["n_rows", "rows_per_group"])  # one compiled kernel for every M (above)
def layernorm_bwd_fused_kernel(x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_part_ptr, db_part_ptr,
                               x_row_stride, dy_row_stride, dx_row_stride, n_rows, n_cols, rows_per_group,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Rows that fit one block (BLOCK_N >= n_cols): x and dy are read once, BLOCK_M rows at a time; the row
    # coefficients, dx and this group's dw/db partial sums all come from the registers.
    group = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_N], dtype=tl.float32)
    first = group * rows_per_group
    last = tl.minimum(first + rows_per_group, n_rows)
    # The next row tile's x and dy are loaded before this one's reductions, so their loads are in flight
    # while this tile waits on its sums (one row tile in registers alone leaves the memory system idle).
    rows = first + tl.arange(0, BLOCK_M)
    mask = (rows < last)[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0)
    dy = tl.load(dy_ptr + rows[:, None] * dy_row_stride + cols[None, :], mask=mask, other=0.0)
    for start in range(first, last, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        row_mask = rows < last
        mask = row_mask[:, None] & col_mask[None, :]
        next_rows = rows + BLOCK_M
        next_mask = (next_rows < last)[:, None] & col_mask[None, :]
        next_x = tl.load(x_ptr + next_rows[:, None] * x_row_stride + cols[None, :], mask=next_mask, other=0.0)
        next_dy = tl.load(dy_ptr + next_rows[:, None] * dy_row_stride + cols[None, :], mask=next_mask, other=0.0)
        mean = tl.load(mean_ptr + rows, mask=row_mask, other=0.0)
        rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
        dy32 = dy.to(tl.float32)
        xhat = tl.where(mask, (x.to(tl.float32) - mean[:, None]) * rstd[:, None], 0.0)
        wdy = w[None, :] * dy32
        c1 = tl.sum(xhat * wdy, axis=1) / n_cols
        c2 = tl.sum(wdy, axis=1) / n_cols
        dx = (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
        tl.store(dx_ptr + rows[:, None] * dx_row_stride + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += tl.sum(dy32 * xhat, axis=0)
        db += tl.sum(dy32, axis=0)
        x = next_x
        dy = next_dy
    tl.store(dw_part_ptr + group * n_cols + cols, dw, mask=col_mask)
    tl.store(db_part_ptr + group * n_cols + cols, db, mask=col_mask)


@triton.jit
def layernorm_bwd_reduce_kernel(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_groups, n_cols, BLOCK_G: tl.constexpr,
                                BLOCK_C: tl.constexpr):
    # A [BLOCK_G, BLOCK_C] tile of the partial sums per step: BLOCK_G groups' loads in flight at once (one group
    # row per step left this launch latency-bound, as long as the fused kernel at some shapes). The order of the
    # additions is fixed by the tile: the same bits on every run.
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < n_cols
    dw = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    for start in range(0, n_groups, BLOCK_G):
        groups = start + tl.arange(0, BLOCK_G)
        mask = (groups < n_groups)[:, None] & col_mask[None, :]
        offsets = groups[:, None].to(tl.int64) * n_cols + cols[None, :]
        dw += tl.load(dw_part_ptr + offsets, mask=mask, other=0.0)
        db += tl.load(db_part_ptr + offsets, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=col_mask)


# The final reduction's tile, the same for every config (measured on an H100: 64 x 32 at 4 warps sums 132-1024
# groups of 8192 columns in 11-51 us, where one group row per step took 0.18-1.4 ms).
REDUCE_TILE = {"BLOCK_G": 64, "BLOCK_C": 32, "num_warps": 4}


class Plan(NamedTuple):
    block: int  # BLOCK_N
    fused: bool  # the row fits the block: the fused kernel
    block_m: int  # rows per step of the fused kernel (1 for the three-launch path)
    groups: int
    rows_per_group: int


def plan(n_rows: int, n_cols: int, meta: Mapping[str, Any]) -> Plan:
    """How a launch with config ``meta`` tiles [n_rows, n_cols]: what the launcher runs and the code paths read. At
    most ROW_GROUPS row groups, each a whole number of BLOCK_M row tiles, none empty (every row of the partial
    buffers is written)."""
    block = min(int(meta.get("BLOCK_N", 1024)), next_power_of_2(n_cols))
    fused = block >= n_cols
    block_m = int(meta.get("BLOCK_M", 1)) if fused else 1
    rows_per_group = cdiv(cdiv(n_rows, min(int(meta.get("ROW_GROUPS", 128)), n_rows)), block_m) * block_m
    return Plan(block, fused, block_m, cdiv(n_rows, rows_per_group), rows_per_group)


def layernorm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
                       out: dict[str, torch.Tensor] | None = None, config: dict | None = None) -> dict[str, torch.Tensor]:
    """Gradients of LayerNorm (2-D x, unit column stride) from the forward's fp32 mean and rstd: dx, dweight, dbias."""
    if x.dim() != 2 or x.stride(1) != 1 or dy.shape != x.shape or dy.stride(1) != 1:
        raise ValueError(f"layernorm_backward takes 2-D x and dy of one shape with unit column stride, got "
                         f"{tuple(x.shape)} stride {x.stride()} and {tuple(dy.shape)} stride {dy.stride()}")
    n_rows, n_cols = x.shape
    if out is None:
        out = {"dx": torch.empty_like(x, memory_format=torch.contiguous_format),
               "dweight": torch.empty(n_cols, dtype=weight.dtype, device=x.device),
               "dbias": torch.empty(n_cols, dtype=weight.dtype, device=x.device)}
    for name, t in (("weight", weight), ("mean", mean), ("rstd", rstd), ("out['dweight']", out["dweight"]),
                    ("out['dbias']", out["dbias"])):
        inputs.require_dense("layernorm_backward", name, t)  # indexed by column or row alone
    inputs.require_rows("layernorm_backward", "out['dx']", out["dx"], written=True)
    meta, options = split_config(config or {})
    block, fused, block_m, groups, rows_per_group = plan(n_rows, n_cols, meta)
    options.setdefault("num_warps", min(max(block * block_m // 256, 1), 8))
    col_blocks = triton.cdiv(n_cols, block)
    f32 = dict(dtype=torch.float32, device=x.device)
    dw_part, db_part = torch.empty((groups, n_cols), **f32), torch.empty((groups, n_cols), **f32)
    if fused:
        layernorm_bwd_fused_kernel[(groups,)](x, dy, out["dx"], weight, mean, rstd, dw_part, db_part, x.stride(0),
                                             dy.stride(0), out["dx"].stride(0), n_rows, n_cols, rows_per_group,
                                             BLOCK_M=block_m, BLOCK_N=block, **options)
    else:
        c1, c2 = torch.empty(n_rows, **f32), torch.empty(n_rows, **f32)
        layernorm_bwd_coeff_kernel[(n_rows,)](x, dy, weight, mean, rstd, c1, c2, x.stride(0), dy.stride(0), n_cols,
                                              BLOCK_N=block, **options)
        layernorm_bwd_kernel[(groups, col_blocks)](x, dy, out["dx"], weight, mean, rstd, c1, c2, dw_part, db_part,
                                                   x.stride(0), dy.stride(0), out["dx"].stride(0), n_rows, n_cols,
                                                   rows_per_group, BLOCK_N=block, **options)
    layernorm_bwd_reduce_kernel[(triton.cdiv(n_cols, REDUCE_TILE["BLOCK_C"]),)](
        dw_part, db_part, out["dweight"], out["dbias"], groups, n_cols, **REDUCE_TILE)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, n = case.shape["M"], case.shape["N"]
    x = inputs.place(inputs.values((m, n), case, gen), case, device, case.layout)
    dy = inputs.place(torch.randn((m, n), generator=gen, dtype=torch.float64), case, device, case.layout)
    w = inputs.place(torch.randn(n, generator=gen, dtype=torch.float64) * 0.5 + 1.0, case, device)
    # The forward's statistics: exact (float64, of x as stored) and then rounded to fp32, as a forward would save them.
    x64 = x.double()
    mean = x64.mean(dim=-1)
    rstd = 1.0 / torch.sqrt(((x64 - mean[:, None]) ** 2).mean(dim=-1) + EPS)
    return {"x": x, "dy": dy, "weight": w, "mean": mean.float(), "rstd": rstd.float()}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    # The closed form in float64, from the same (fp32) mean and rstd the kernel is given.
    x, dy, w = inputs["x"].double(), inputs["dy"].double(), inputs["weight"].double()
    mean, rstd = inputs["mean"].double()[:, None], inputs["rstd"].double()[:, None]
    xhat = (x - mean) * rstd
    wdy = w * dy
    c1 = (xhat * wdy).mean(dim=-1, keepdim=True)
    c2 = wdy.mean(dim=-1, keepdim=True)
    return {"dx": (wdy - xhat * c1 - c2) * rstd, "dweight": (dy * xhat).sum(dim=0), "dbias": dy.sum(dim=0)}


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # Reductions differ per output (dx over N, dw and db over M), so sqrt(length) is folded in here (reduction=1).
    x, dy, w = inputs["x"].double(), inputs["dy"].double(), inputs["weight"].double()
    mean, rstd = inputs["mean"].double()[:, None], inputs["rstd"].double()[:, None]
    m, n = x.shape
    xhat = (x.abs() + mean.abs()) * rstd  # x - mean cancels for rows with a large offset
    wdy = (w * dy).abs()
    c1 = (xhat * wdy).mean(dim=-1, keepdim=True)
    c2 = wdy.mean(dim=-1, keepdim=True)
    return {"dx": rstd * (wdy + math.sqrt(n) * (xhat * c1 + c2)),
            "dweight": math.sqrt(m) * (dy.abs() * xhat).sum(dim=0), "dbias": math.sqrt(m) * dy.abs().sum(dim=0)}


def _torch_baseline(inp: dict[str, torch.Tensor]):
    # aten wants mean/rstd in the accumulation type: fp32 on GPUs, the input dtype on the CPU.
    stats = torch.float32 if inp["x"].is_cuda else inp["x"].dtype
    return torch.ops.aten.native_layer_norm_backward(
        inp["dy"], inp["x"], inp["x"].shape[-1:], inp["mean"].to(stats), inp["rstd"].to(stats), inp["weight"],
        inp["weight"], [True, True, True])


def _plan(case: Case, cfg: dict) -> Plan:
    return plan(case.shape["M"], case.shape["N"], cfg)


def _types(dtype: str) -> dict[str, str]:
    return {"x_ptr": f"*{dtype}", "dy_ptr": f"*{dtype}", "dx_ptr": f"*{dtype}", "w_ptr": f"*{dtype}",
            **{p: "*fp32" for p in ("mean_ptr", "rstd_ptr", "c1_ptr", "c2_ptr", "dw_part_ptr", "db_part_ptr")},
            **{i: "i32" for i in ("x_row_stride", "dy_row_stride", "dx_row_stride", "n_rows", "n_cols",
                                  "rows_per_group")}}


def _fused_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    types = {k: v for k, v in _types(dtype).items() if k not in ("c1_ptr", "c2_ptr")}
    return signature(layernorm_bwd_fused_kernel, types, {"BLOCK_M": meta.get("BLOCK_M", 1),
                                                         "BLOCK_N": meta.get("BLOCK_N", 1024)})


def _wide_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(layernorm_bwd_kernel, _types(dtype), {"BLOCK_N": meta.get("BLOCK_N", 1024)})


def _coeff_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(layernorm_bwd_coeff_kernel, _types(dtype), {"BLOCK_N": meta.get("BLOCK_N", 1024)})


def _reduce_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    types = {"dw_part_ptr": "*fp32", "db_part_ptr": "*fp32", "dw_ptr": f"*{dtype}", "db_ptr": f"*{dtype}",
             "n_groups": "i32", "n_cols": "i32"}
    return signature(layernorm_bwd_reduce_kernel, types, {k: REDUCE_TILE[k] for k in ("BLOCK_G", "BLOCK_C")})


SPEC = register(KernelSpec(
    name="layernorm_backward",
    description="LayerNorm backward: dx, and dweight/dbias by per-row-group fp32 partials and a fixed-order reduction",
    dims=(Dim("M", interpret_max=24, gpu_max=2048, nightly_max=8192, blocks=(4, 64)),
          Dim("N", interpret_max=400, gpu_max=8192, nightly_max=16384, blocks=(128, 1024))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "special"),
    make_inputs=_make_inputs,
    outputs=("dx", "dweight", "dbias"),
    make_outputs=lambda inp, case: {
        "dx": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device),
        "dweight": torch.empty(inp["x"].shape[1], dtype=inp["x"].dtype, device=inp["x"].device),
        "dbias": torch.empty(inp["x"].shape[1], dtype=inp["x"].dtype, device=inp["x"].device)},
    run=lambda inp, out, cfg: layernorm_backward(inp["dy"], inp["x"], inp["weight"], inp["mean"], inp["rstd"], out, cfg),
    reference=_reference,
    tolerance=Tolerance(reduction=lambda case: 1, magnitude=_magnitude, safety=8.0),
    # xhat, w*dy, two row dot products, dx, and the dw and db accumulations.
    flops=lambda case: 12.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: ((3.0 * case.shape["M"] * case.shape["N"] + 3 * case.shape["N"]) * DTYPES[case.dtype].itemsize
                            + 8.0 * case.shape["M"]),
    torch_baseline=_torch_baseline,
    # ROW_GROUPS x column blocks programs: about one wave of SMs/CUs even when N is a single block.
    # Rows up to 8192 wide take the fused kernel (32 KB of fp32 per row over 16 warps).
    default_config={"nvidia": {"BLOCK_N": 8192, "BLOCK_M": 1, "ROW_GROUPS": 264, "num_warps": 16},
                    "amd": {"BLOCK_N": 8192, "BLOCK_M": 1, "ROW_GROUPS": 304, "num_warps": 16, "num_stages": 2},
                    "interpret": {"BLOCK_N": 128, "ROW_GROUPS": 4}},
    paths=(CodePath("fused", "the row fits the block: x and dy are read once, BLOCK_M rows at a time",
                    lambda case, cfg: _plan(case, cfg).fused),
           CodePath("partial_row_tile", "the last tile of BLOCK_M rows is cut by M",
                    lambda case, cfg: _plan(case, cfg).fused and case.shape["M"] % _plan(case, cfg).block_m != 0),
           *paths.block_loop("N", lambda case, cfg: _plan(case, cfg).block),
           CodePath("several_rows_per_group", "a row group sums more than one row's weight gradient",
                    lambda case, cfg: _plan(case, cfg).rows_per_group > 1),
           CodePath("several_row_groups", "the final reduction adds more than one row group's partial sums",
                    lambda case, cfg: _plan(case, cfg).groups > 1),
           CodePath("ragged_last_group", "the last row group holds fewer rows than the others: its loop stops at M",
                    lambda case, cfg: _plan(case, cfg).groups * _plan(case, cfg).rows_per_group > case.shape["M"])),
    # The fused kernel for rows up to BLOCK_N wide, in tiles of BLOCK_M rows (the register file bounds the
    # tile: 8192 x 1 or 1024 x 8 over 8-16 warps), and the three-launch one.
    configs={"interpret": (*({"BLOCK_N": b, "ROW_GROUPS": g} for b, g in ((16, 7), (32, 2))),
                           {"BLOCK_N": 512, "BLOCK_M": 2, "ROW_GROUPS": 3}, {"BLOCK_N": 512, "BLOCK_M": 4, "ROW_GROUPS": 7}),
             "nvidia": (*({"BLOCK_N": n, "BLOCK_M": m, "ROW_GROUPS": g, "num_warps": w}
                          for n, m in ((8192, 1), (4096, 1), (4096, 2), (2048, 4), (1024, 8))
                          for g in (132, 264, 528) for w in (8, 16)),
                        {"BLOCK_N": 1024, "ROW_GROUPS": 128, "num_warps": 8},
                        {"BLOCK_N": 2048, "ROW_GROUPS": 256, "num_warps": 8}),
             "amd": (*({"BLOCK_N": n, "BLOCK_M": m, "ROW_GROUPS": g, "num_warps": w, "num_stages": 2}
                       for n, m in ((8192, 1), (4096, 1), (2048, 2), (1024, 4)) for g in (304, 608) for w in (8, 16)),
                     *({"BLOCK_N": b, "ROW_GROUPS": g, "num_warps": w, "num_stages": s}
                       for b in (1024, 2048) for g in (128, 304) for w in (4, 8) for s in (1, 2)))},
    benchmark_shapes=({"M": 8192, "N": 8192}, {"M": 4096, "N": 4096}, {"M": 32768, "N": 1024}),
    # One row per group, a ragged last group, and a column block of one.
    examples=({"shape": {"M": 3, "N": 129}, "values": "normal", "seed": 1},
              {"shape": {"M": 23, "N": 257}, "layout": "padded_rows", "values": "large", "seed": 2}),
    compile_signature=_fused_signature,
    # The wide path's two kernels and the reduction that both paths end with.
    jit_fns=(JitKernel(layernorm_bwd_kernel, _wide_signature), JitKernel(layernorm_bwd_coeff_kernel, _coeff_signature),
             JitKernel(layernorm_bwd_reduce_kernel, _reduce_signature, options={"num_warps": REDUCE_TILE["num_warps"]})),
    batch_dim="M", batch_inputs=("x", "dy", "mean", "rstd"), batch_outputs=("dx",),
    jit_fn=layernorm_bwd_fused_kernel,
))
