"""Fused row softmax: one row per program, the whole row in one block."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.softmax_online import exp_magnitude, rows_sum_to_one, shift_invariant
from kernels.spec import DTYPES, Case, CodePath, Dim, KernelSpec, Tolerance, signature


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    # -inf is the identity of max: padding lanes must neither win the max nor add to the sum.
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, (numerator / denominator).to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor, out: torch.Tensor | None = None, config: dict | None = None) -> torch.Tensor:
    """Softmax over the last dim of a 2-D tensor whose rows are unit-stride."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"softmax takes a 2-D tensor with unit column stride, got shape {tuple(x.shape)} stride {x.stride()}")
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device) if out is None else out
    inputs.require_rows("softmax", "out", out, written=True)
    block = triton.next_power_of_2(n_cols)
    num_warps = (config or {}).get("num_warps") or (4 if block <= 2048 else 8 if block <= 8192 else 16)
    softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block, num_warps=num_warps)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    return {"x": inputs.rows(case, device, inputs.generator(case))}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    return {"out": torch.softmax(inputs["x"].double(), dim=-1)}


def _bytes(case: Case) -> float:
    return 2.0 * case.shape["M"] * case.shape["N"] * DTYPES[case.dtype].itemsize


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(softmax_kernel, {"out_ptr": f"*{dtype}", "in_ptr": f"*{dtype}", "in_row_stride": "i32",
                                      "out_row_stride": "i32", "n_cols": "i32"},
                     {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 4096)})

SPEC = register(KernelSpec(
    name="softmax",
    description="row softmax, one row per program (rows up to one block wide)",
    dims=(Dim("M", interpret_max=12, gpu_max=2048, nightly_max=8192, blocks=(1,)),
          Dim("N", interpret_max=1100, gpu_max=16384, nightly_max=32768, blocks=(16, 128, 1024))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "special", "subnormal"),
    make_inputs=_make_inputs,
    outputs=("out",),
    make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device)},
    run=lambda inp, out, cfg: softmax(inp["x"], out["out"], cfg),
    reference=_reference,
    # exp() and the division add a few ulps of fp32 on top of the row sum; exp(x - max) is off by about
    # |x - max| units of roundoff (seen on the H100: 1.15x the plain bound at x - max = -61 in fp32).
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], magnitude=exp_magnitude, safety=8.0),
    flops=lambda case: 5.0 * case.shape["M"] * case.shape["N"],
    min_bytes=_bytes,
    torch_baseline=lambda inp: torch.softmax(inp["x"], dim=-1),
    default_config={"nvidia": {}, "amd": {}},
    configs={"nvidia": tuple({"num_warps": w} for w in (4, 8, 16)), "amd": tuple({"num_warps": w} for w in (4, 8, 16))},
    benchmark_shapes=({"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}, {"M": 16384, "N": 16384}),
    # Padding lanes beside an all-negative row; a row whose outputs underflow below fp32's normals.
    examples=({"shape": {"M": 3, "N": 33}, "values": "negative", "seed": 1},
              {"shape": {"M": 1, "N": 126}, "values": "large", "seed": 0}),
    paths=(CodePath("masked_tail", "N is not a power of two: the row's block has masked lanes",
                    lambda case, cfg: case.shape["N"] & (case.shape["N"] - 1) != 0),),
    compile_signature=_signature,
    properties=(rows_sum_to_one(_make_inputs), shift_invariant(_make_inputs)),
    batch_dim='M', batch_inputs=('x',), batch_outputs=('out',),
    jit_fn=softmax_kernel,
))
