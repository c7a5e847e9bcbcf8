"""SwiGLU: out = silu(a) * b, elementwise over [M, N]; fp32 math inside.

a and b are separate [M, N] tensors, each with its own row stride. A fused [M, 2N] up-projection is
passed as its two halves, a = h[:, :N] and b = h[:, N:]: views with row stride 2N, no copy.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels._tiles import rows_launch, rows_spec_fields
from kernels.registry import register
from kernels.spec import DTYPES, Case, KernelSpec, Tolerance, signature


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, out_ptr, n_rows, n_cols, a_row_stride, b_row_stride, out_row_stride,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    a = tl.load(a_ptr + rows[:, None] * a_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + rows[:, None] * b_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    # sigmoid from exp(-|a|) <= 1: a / (1 + exp(-a)) would overflow exp for a < -88 and flush silu(a) to 0
    # where it is still representable.
    e = tl.exp(-tl.abs(a))
    sigmoid = tl.where(a >= 0, 1.0, e) / (1.0 + e)
    out = a * sigmoid * b
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], out.to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, config: dict | None = None) -> torch.Tensor:
    """silu(a) * b for 2-D a and b of one shape, each with unit column stride (halves of one [M, 2N] tensor work)."""
    if a.dim() != 2 or a.shape != b.shape or a.stride(1) != 1 or b.stride(1) != 1:
        raise ValueError(f"swiglu takes 2-D a and b of one shape with unit column stride, got {tuple(a.shape)} "
                         f"stride {a.stride()} and {tuple(b.shape)} stride {b.stride()}")
    n_rows, n_cols = a.shape
    out = torch.empty((n_rows, n_cols), dtype=a.dtype, device=a.device) if out is None else out
    inputs.require_rows("swiglu", "out", out, written=True)
    grid, launch = rows_launch(n_rows, n_cols, config)
    swiglu_kernel[grid](a, b, out, n_rows, n_cols, a.stride(0), b.stride(0), out.stride(0), **launch)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, n = case.shape["M"], case.shape["N"]
    a, b = inputs.values((m, n), case, gen), inputs.values((m, n), case, gen)
    if case.layout == "fused_halves":
        # One [M, 2N] projection output, split into views: rows of stride 2N, b starting N elements in.
        h = inputs.place(torch.cat([a, b], dim=1), case, device)
        return {"a": h[:, :n], "b": h[:, n:]}
    return {"a": inputs.place(a, case, device, case.layout), "b": inputs.place(b, case, device, case.layout)}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    a = inputs["a"].double()
    return {"out": a * torch.sigmoid(a) * inputs["b"].double()}


# GPUs' exp flushes results below fp32's smallest normal to zero (seen on sm_90): sigmoid(a) is then off by up to
# that, times |a * b| in the output, which can lie above the smallest bf16 subnormal (the bf16 output's own floor).


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # exp(-a) is off by about |a| roundoffs (GPUs' exp2-based exp); sigmoid passes that on damped by sigmoid(-a).
    a = inputs["a"].double()
    return {"out": ref["out"].abs() * (1.0 + a.abs() * torch.sigmoid(-a))}


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(swiglu_kernel, {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n_rows": "i32",
                                     "n_cols": "i32", "a_row_stride": "i32", "b_row_stride": "i32",
                                     "out_row_stride": "i32"},
                     {"BLOCK_M": meta.get("BLOCK_M", 4), "BLOCK_N": meta.get("BLOCK_N", 1024)})


SPEC = register(KernelSpec(
    name="swiglu",
    description="out = silu(a) * b, elementwise over [M, N]; a and b separate row-strided tensors or halves of one",
    **rows_spec_fields(),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows", "fused_halves"),
    value_classes=("normal", "large", "negative", "special", "subnormal"),
    make_inputs=_make_inputs,
    outputs=("out",),
    make_outputs=lambda inp, case: {"out": torch.empty(inp["a"].shape, dtype=inp["a"].dtype, device=inp["a"].device)},
    run=lambda inp, out, cfg: swiglu(inp["a"], inp["b"], out["out"], cfg),
    reference=_reference,
    tolerance=Tolerance(magnitude=_magnitude),
    # exp, add, divide, multiply.
    flops=lambda case: 5.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: 3.0 * case.shape["M"] * case.shape["N"] * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.nn.functional.silu(inp["a"]) * inp["b"],
    benchmark_shapes=({"M": 8192, "N": 8192}, {"M": 16384, "N": 14336}),
    # silu(a) * b down in the fp32 subnormals (exp(a) ~ e^-100); halves of one tensor one column past a tile.
    examples=({"shape": {"M": 5, "N": 65}, "values": "negative", "seed": 1},
              {"shape": {"M": 9, "N": 129}, "layout": "fused_halves", "values": "special", "seed": 2}),
    compile_signature=_signature,
    batch_dim="M", batch_inputs=("a", "b"), batch_outputs=("out",),
    jit_fn=swiglu_kernel,
))
