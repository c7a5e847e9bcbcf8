"""GELU, tanh approximation, elementwise over a 2-D tensor with any row stride; fp32 math inside."""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels._tiles import rows_launch, rows_spec_fields
from kernels.registry import register
from kernels.spec import DTYPES, Case, KernelSpec, Tolerance, signature


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One grid dimension, column blocks varying fastest: programs launched one after another read neighbouring
    # memory (with rows fastest they jump a row apart; an H100 measured a flat 1-D launch 0.5-1% faster).
    col_blocks = tl.cdiv(n_cols, BLOCK_N)
    pid = tl.program_id(0)
    rows = ((pid // col_blocks) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid % col_blocks) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    z = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2 / pi) * (x + 0.044715 x^3)
    # 0.5 * x * (1 + tanh(z)) == x * sigmoid(2z): no cancellation in 1 + tanh(z) for negative x, and
    # no libdevice tanh, which not every backend provides.
    y = x / (1.0 + tl.exp(-2.0 * z))
    tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu(x: torch.Tensor, out: torch.Tensor | None = None, config: dict | None = None) -> torch.Tensor:
    """GELU (tanh approximation) of a 2-D tensor with unit column stride; out may be any such view."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"gelu takes a 2-D tensor with unit column stride, got {tuple(x.shape)} stride {x.stride()}")
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device) if out is None else out
    inputs.require_rows("gelu", "out", out, written=True)
    (row_blocks, col_blocks), launch = rows_launch(n_rows, n_cols, config)
    gelu_kernel[(row_blocks * col_blocks,)](x, out, n_rows, n_cols, x.stride(0), out.stride(0), **launch)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    return {"x": inputs.rows(case, device, inputs.generator(case))}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    return {"y": torch.nn.functional.gelu(inputs["x"].double(), approximate="tanh")}


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # The terms of 0.5 * x * (1 + tanh z), plus the rounding of z (about |z|-sized) through d tanh/dz = 1 - tanh^2.
    x = inputs["x"].double()
    c = math.sqrt(2.0 / math.pi)
    t = torch.tanh(c * (x + 0.044715 * x**3))
    z_mag = c * (x.abs() + 0.044715 * x.abs() ** 3)
    return {"y": 0.5 * x.abs() * (1.0 + t.abs() + 4.0 * (1.0 - t * t) * z_mag)}


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(gelu_kernel, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "n_rows": "i32", "n_cols": "i32",
                                   "x_row_stride": "i32", "y_row_stride": "i32"},
                     {"BLOCK_M": meta.get("BLOCK_M", 4), "BLOCK_N": meta.get("BLOCK_N", 1024)})


SPEC = register(KernelSpec(
    name="gelu",
    description="y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise, 2-D with row strides",
    **rows_spec_fields(),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "special", "subnormal"),
    make_inputs=_make_inputs,
    outputs=("y",),
    make_outputs=lambda inp, case: {"y": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device)},
    run=lambda inp, out, cfg: gelu(inp["x"], out["y"], cfg),
    reference=_reference,
    tolerance=Tolerance(magnitude=_magnitude),
    # x^3, the polynomial, exp, the add and the divide.
    flops=lambda case: 9.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: 2.0 * case.shape["M"] * case.shape["N"] * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.nn.functional.gelu(inp["x"], approximate="tanh"),
    benchmark_shapes=({"M": 8192, "N": 8192}, {"M": 16384, "N": 16384}),
    # Tails where exp(-2z) overflows fp32 (x/inf must give -0, not NaN); one past a tile, padded rows.
    examples=({"shape": {"M": 5, "N": 65}, "values": "negative", "seed": 1},
              {"shape": {"M": 9, "N": 129}, "layout": "padded_rows", "values": "special", "seed": 2}),
    compile_signature=_signature,
    batch_dim="M", batch_inputs=("x",), batch_outputs=("y",),
    jit_fn=gelu_kernel,
))
