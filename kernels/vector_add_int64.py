"""Vector add with 64-bit offsets: correct past 2^31 elements, where int32 offsets wrap."""

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from kernels.registry import register
from kernels.spec import signature
from kernels.vector_add import SPEC as VECTOR_ADD
from kernels.vector_add import launch


@triton.jit
def vector_add_int64_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # pid * BLOCK_SIZE in int32 wraps once it passes 2^31: widen before multiplying.
    offsets = tl.program_id(axis=0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    # Upcast before arithmetic: the interpreter does bf16 arithmetic on bit patterns.
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add_int64(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor | None = None,
                     config: dict | None = None) -> torch.Tensor:
    """out = x + y for contiguous 1-D tensors of any length, 2^31 elements and more included."""
    return launch(vector_add_int64_kernel, "vector_add_int64", x, y, out, config)


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    # n_elements is i64: Triton passes an integer argument of 2^31 or more as i64, and so compiles it.
    return signature(vector_add_int64_kernel, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}",
                                               "n_elements": "i64"}, {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 1024)})


# Inputs, reference, cost model and configs are vector_add's: only the offsets differ.
SPEC = register(dataclasses.replace(
    VECTOR_ADD,
    name="vector_add_int64",
    description="out = x + y, elementwise, 1-D, int64 offsets (lengths past 2^31; tested here at normal sizes)",
    run=lambda inp, out, cfg: vector_add_int64(inp["x"], inp["y"], out["out"], cfg),
    # One element past a block, and a length of one.
    examples=({"shape": {"N": 1025}, "values": "normal", "seed": 1}, {"shape": {"N": 1}, "values": "special", "seed": 2}),
    compile_signature=_signature,
    jit_fn=vector_add_int64_kernel,
))
