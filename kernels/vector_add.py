"""Vector add: the simplest memory-bound kernel, masked for any length."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, signature, split_config


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    # Upcast before arithmetic: the interpreter does bf16 arithmetic on bit patterns.
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def launch(kernel, name: str, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor | None,
           config: dict | None) -> torch.Tensor:
    """Check the arguments of a 1-D add and launch ``kernel`` (this file's, or vector_add_int64's) over them."""
    if x.shape != y.shape or x.dim() != 1:
        raise ValueError(f"{name} takes two 1-D tensors of one shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    out = torch.empty_like(x) if out is None else out
    for arg, t in (("x", x), ("y", y), ("out", out)):
        inputs.require_dense(name, arg, t)
    meta, options = split_config({"BLOCK_SIZE": 1024, "num_warps": 4, **(config or {})})
    n = x.numel()
    kernel[(triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=meta["BLOCK_SIZE"], **options)
    return out


def vector_add(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor | None = None,
               config: dict | None = None) -> torch.Tensor:
    return launch(vector_add_kernel, "vector_add", x, y, out, config)


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    n = case.shape["N"]
    return {name: inputs.place(inputs.values((n,), case, gen), case, device) for name in ("x", "y")}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    return {"out": inputs["x"].double() + inputs["y"].double()}


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(vector_add_kernel, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}",
                                         "n_elements": "i32"}, {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 1024)})

SPEC = register(KernelSpec(
    name="vector_add",
    description="out = x + y, elementwise, 1-D, any length",
    dims=(Dim("N", interpret_max=5000, gpu_max=1 << 20, nightly_max=1 << 26, blocks=(128, 1024)),),
    dtypes=("fp32", "fp16", "bf16"),
    value_classes=("normal", "large", "negative", "special", "subnormal"),
    make_inputs=_make_inputs,
    outputs=("out",),
    make_outputs=lambda inp, case: {"out": torch.empty_like(inp["x"])},
    run=lambda inp, out, cfg: vector_add(inp["x"], inp["y"], out["out"], cfg),
    reference=_reference,
    tolerance=Tolerance(),
    flops=lambda case: float(case.shape["N"]),
    min_bytes=lambda case: 3.0 * case.shape["N"] * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.add(inp["x"], inp["y"]),
    default_config={"nvidia": {"BLOCK_SIZE": 1024, "num_warps": 4},
                    "amd": {"BLOCK_SIZE": 1024, "num_warps": 4},
                    "interpret": {"BLOCK_SIZE": 128, "num_warps": 4}},
    configs={"interpret": tuple({"BLOCK_SIZE": b} for b in (32, 64, 256)),
             "nvidia": tuple({"BLOCK_SIZE": b, "num_warps": w} for b in (512, 1024, 2048, 4096) for w in (4, 8)),
             "amd": tuple({"BLOCK_SIZE": b, "num_warps": w} for b in (512, 1024, 2048, 4096) for w in (4, 8))},
    benchmark_shapes=({"N": 1 << 24}, {"N": 1 << 28}),
    paths=paths.block_loop("N", paths.meta("BLOCK_SIZE", 1024), "the grid of programs"),
    compile_signature=_signature,
    batch_dim='N', batch_inputs=('x', 'y'), batch_outputs=('out',),
    jit_fn=vector_add_kernel,
))
