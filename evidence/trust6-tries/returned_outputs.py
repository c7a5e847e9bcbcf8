"""Rule 1 tries: returned outputs (make_outputs=None) written by torch after the kernel."""
from __future__ import annotations
import dataclasses, torch, triton, triton.language as tl
from kernels.registry import register
from kernels.vector_add import SPEC as VA
from kernels.spec import signature

@triton.jit
def wrong_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) - tl.load(y_ptr + offs, mask=m), mask=m)  # BUG
def _sig(dtype, meta):
    return signature(wrong_add, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32"}, {"BLOCK": 64})
def run_copy(inp, out, cfg):  # kernel into its own tensor, then torch's answer into the same tensor
    x, y = inp["x"], inp["y"]; o = torch.empty_like(x); n = x.numel()
    wrong_add[(triton.cdiv(n, 64),)](x, y, o, n, BLOCK=64)
    o.copy_(x + y)
    return {"out": o}
def run_new(inp, out, cfg):  # kernel runs, torch's own tensor returned
    x, y = inp["x"], inp["y"]; o = torch.empty_like(x); n = x.numel()
    wrong_add[(triton.cdiv(n, 64),)](x, y, o, n, BLOCK=64)
    return {"out": x + y}
_ONE = dict(dtypes=("fp32",), examples=(), properties=(), benchmark_shapes=(), batch_dim=None, batch_inputs=(),
            batch_outputs=(), paths=(), default_config={}, configs={}, jit_fn=wrong_add, compile_signature=_sig)
register(dataclasses.replace(VA, name="ret_copy", run=run_copy, make_outputs=None, description="a", **_ONE))
register(dataclasses.replace(VA, name="ret_new", run=run_new, make_outputs=None, description="b", **_ONE))
