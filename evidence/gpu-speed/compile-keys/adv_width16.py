"""A launcher taking a width divisible by 16 for dense rows (adv_strides.py's g_width16_only) under 23 names, each
name its own ci draws: how often a test's draws meet it (not shipped; --kernel-module, --kernels='*16*')."""
import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.spec import Dim, KernelSpec


@triton.jit
def _k(x_ptr, out_ptr, N, stride_xm, stride_om, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=cols < N)
        tl.store(out_ptr + row * stride_om + cols, x * 2.0, mask=cols < N)


def _run(inp, out, cfg):
    x, y = inp["x"], out["out"]
    m, n = x.shape
    _k[(m,)](x, y, n, n if n % 16 == 0 else x.stride(0), y.stride(0), BLOCK=16)


NAMES = [f"w16_{i}" for i in range(16)] + ["width16_rows", "width16_dense", "dense16_double", "wide16_double",
                                           "width16_taken_dense", "rows16_double", "stride16_double"]
for i in NAMES:  # each name its own ci draws
    register(KernelSpec(
        name=i, description="width16", dims=(Dim("M", interpret_max=8, gpu_max=8),
                                                     Dim("N", interpret_max=40, gpu_max=40, blocks=(16,))),
        dtypes=("fp32",), no_subnormals="x",
        make_inputs=lambda case, device: {"x": inputs.rows(case, device, inputs.generator(case))},
        make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device)},
        run=_run, reference=lambda inp, case: {"out": inp["x"].double() * 2.0}, outputs=("out",)))
