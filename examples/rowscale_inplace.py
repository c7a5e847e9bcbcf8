"""rowscale_inplace: x[i, j] = x[i, j] * w[j] + 1.0, in place, through @triton.autotune.

    pytest --kernel-module=examples/rowscale_inplace.py --kernels=rowscale_inplace -n 2
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, signature

BIAS = 1.0


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 4, "BLOCK_N": 32}, num_warps=2),
        triton.Config({"BLOCK_M": 8, "BLOCK_N": 64}, num_warps=4),
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 128}, num_warps=4),
    ],
    key=["M", "N"],
)
@triton.jit
def rowscale_kernel(x_ptr, w_ptr, M, N, stride_m, stride_n, bias, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < M
    col_mask = cols < N
    mask = row_mask[:, None] & col_mask[None, :]
    ptrs = x_ptr + rows[:, None] * stride_m + cols[None, :] * stride_n
    # fp32 math: fp16 or bf16 products and sums would round at every step
    x = tl.load(ptrs, mask=mask).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask).to(tl.float32)
    y = x * w[None, :] + bias
    tl.store(ptrs, y.to(x_ptr.dtype.element_ty), mask=mask)


def rowscale_(x: torch.Tensor, w: torch.Tensor, bias: float = BIAS) -> None:
    """x <- x * w[None, :] + bias, in place. The autotuner picks BLOCK_M/BLOCK_N; the grid reads them from meta."""
    M, N = x.shape
    inputs.require_dense("rowscale_", "w", w)  # w[j] is read at w_ptr + j
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    rowscale_kernel[grid](x, w, M, N, x.stride(0), x.stride(1), bias)


def make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    x = inputs.rows(case, device, gen)  # [M, N] in the case's layout
    w = inputs.place(inputs.values((case.shape["N"],), case, gen), case, device)
    return {"x": x, "w": w}


def reference(inp: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    return {"x_out": inp["x"].double() * inp["w"].double()[None, :] + BIAS}


def magnitude(inp: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # x * w + 1 cancels where x * w is near -1: bound the roundings by the size of the terms, not of the result.
    return {"x_out": (inp["x"].double() * inp["w"].double()[None, :]).abs() + abs(BIAS)}


def compile_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(rowscale_kernel,
                     {"x_ptr": f"*{dtype}", "w_ptr": f"*{dtype}", "M": "i32", "N": "i32",
                      "stride_m": "i32", "stride_n": "i32", "bias": "fp32"},
                     {"BLOCK_M": meta.get("BLOCK_M", 4), "BLOCK_N": meta.get("BLOCK_N", 32)})


SPEC = register(KernelSpec(
    name="rowscale_inplace",
    description="x[i, j] = x[i, j] * w[j] + 1, in place, through @triton.autotune; any strides",
    dims=(Dim("M", interpret_max=40, gpu_max=8192, blocks=(4, 8, 16)),
          Dim("N", interpret_max=300, gpu_max=8192, blocks=(32, 64, 128))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows", "transposed"),
    value_classes=("normal", "large", "negative", "special"),
    make_inputs=make_inputs,
    outputs=("x_out",),
    make_outputs=lambda inp, case: {"x_out": torch.empty_like(inp["x"])},
    initial_outputs={"x_out": "x"},  # x_out starts as a copy of x; the kernel updates it in place
    run=lambda inp, out, cfg: rowscale_(out["x_out"], inp["w"], BIAS),
    reference=reference,
    tolerance=Tolerance(magnitude=magnitude),
    flops=lambda case: 2.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: (2.0 * case.shape["M"] + 1.0) * case.shape["N"] * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: inp["x"].mul(inp["w"]).add_(BIAS),
    benchmark_shapes=({"M": 8192, "N": 8192},),
    paths=(paths.block_loop("M", paths.meta("BLOCK_M", 4), "the grid's rows of programs")
           + paths.block_loop("N", paths.meta("BLOCK_N", 32), "the grid's columns of programs")),
    batch_dim="M", batch_inputs=("x",), batch_outputs=("x_out",),  # rows are independent; w is shared
    jit_fn=rowscale_kernel,  # no configs, no default_config: the autotuner's configs are used for every family
    compile_signature=compile_signature,
))
