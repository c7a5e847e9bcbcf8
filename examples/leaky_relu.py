"""Leaky ReLU: the complete example of docs/adding-a-kernel.md (the guide shows this file as it is).

    pytest --kernel-module=examples/leaky_relu.py --kernels=leaky_relu
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, signature, split_config

SLOPE = 0.01


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)  # fp32 math: one rounding, at the store, whatever the dtype
    y = tl.where(x >= 0, x, x * slope)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def leaky_relu(x: torch.Tensor, out: torch.Tensor, slope: float = SLOPE, config: dict | None = None) -> None:
    inputs.require_dense("leaky_relu", "x", x)  # element i is at x_ptr + i: a sliced or broadcast x would be misread
    inputs.require_dense("leaky_relu", "out", out)
    meta, options = split_config({"BLOCK": 1024, **(config or {})})  # BLOCK, and launch options such as num_warps
    leaky_relu_kernel[(triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel(), slope, **meta, **options)


def make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    return {"x": inputs.place(inputs.values((case.shape["N"],), case, gen), case, device)}


def reference(inp: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    x = inp["x"].double()
    return {"out": torch.where(x >= 0, x, x * SLOPE)}


def compile_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(leaky_relu_kernel, {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32", "slope": "fp32"},
                     {"BLOCK": meta.get("BLOCK", 1024)})


SPEC = register(KernelSpec(
    name="leaky_relu",
    description="out = x where x >= 0, else 0.01 x; elementwise, any length",
    dims=(Dim("N", interpret_max=5000, gpu_max=1 << 20, blocks=(128, 1024)),),
    dtypes=("fp32", "fp16", "bf16"),
    value_classes=("normal", "large", "negative", "special"),
    make_inputs=make_inputs,
    outputs=("out",),
    make_outputs=lambda inp, case: {"out": torch.empty_like(inp["x"])},
    run=lambda inp, out, cfg: leaky_relu(inp["x"], out["out"], SLOPE, cfg),
    reference=reference,
    tolerance=Tolerance(),  # elementwise: one rounding of the product, plus the output's
    flops=lambda case: float(case.shape["N"]),
    min_bytes=lambda case: 2.0 * case.shape["N"] * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.nn.functional.leaky_relu(inp["x"], SLOPE),
    default_config={"nvidia": {"BLOCK": 1024, "num_warps": 4}, "amd": {"BLOCK": 1024, "num_warps": 4},
                    "interpret": {"BLOCK": 128}},
    configs={"interpret": ({"BLOCK": 64}, {"BLOCK": 256}),
             "nvidia": tuple({"BLOCK": b, "num_warps": w} for b in (512, 1024, 2048) for w in (4, 8)),
             "amd": tuple({"BLOCK": b, "num_warps": w} for b in (512, 1024, 2048) for w in (4, 8))},
    benchmark_shapes=({"N": 1 << 24},),
    paths=paths.block_loop("N", paths.meta("BLOCK", 1024), "the grid of programs"),  # several programs; masked tail
    batch_dim="N", batch_inputs=("x",), batch_outputs=("out",),  # the first k elements do not depend on the rest
    jit_fn=leaky_relu_kernel,
    compile_signature=compile_signature,
))
