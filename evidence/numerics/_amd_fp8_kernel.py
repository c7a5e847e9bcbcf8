"""The kernel evidence/numerics/amd_fp8_ir.py compiles (a @triton.jit function must live in a file of its own)."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TL = {"fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5}


@triton.jit
def convert(x_ptr, y_ptr, DST: tl.constexpr):
    offs = tl.arange(0, 64)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(DST))


@triton.jit
def decode(x_ptr, y_ptr):
    offs = tl.arange(0, 64)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def llir(arch: str, src: str, dst: str) -> str:
    """The LLVM IR of a 64-element conversion, one warp of 64 lanes (one element each) for ``arch``: to an fp8 type,
    or from one to fp32."""
    if dst == "fp32":
        source = ASTSource(fn=decode, signature={"x_ptr": f"*{src}", "y_ptr": "*fp32"})
    else:
        source = ASTSource(fn=convert, signature={"x_ptr": f"*{src}", "y_ptr": f"*{dst}", "DST": "constexpr"},
                           constexprs={"DST": TL[dst]})
    return triton.compile(source, target=GPUTarget("hip", arch, 64), options={"num_warps": 1}).asm["llir"]
