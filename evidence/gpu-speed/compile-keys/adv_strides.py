"""Adversarial stride bugs against the aligned slice's new row strides (not shipped)."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.spec import Dim, KernelSpec


@triton.jit
def dbl(x_ptr, out_ptr, N, sxm, som, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * sxm + cols, mask=cols < N)
        tl.store(out_ptr + row * som + cols, x * 2.0, mask=cols < N)


def up(a, b):
    return -(-a // b) * b


BUGS = {  # name -> (dtype, row stride of x the launcher passes, of out, strided outputs)
    "a_width": ("fp32", lambda sx, n: n, None, False),
    "b_up16": ("fp32", lambda sx, n: up(n, 16), None, False),
    "c_up4": ("fp32", lambda sx, n: up(n, 4), None, False),
    "d_div16_is_dense": ("fp32", lambda sx, n: n if sx % 16 == 0 else sx, None, False),
    "e_nondiv16_is_dense": ("fp32", lambda sx, n: n if sx % 16 else sx, None, False),
    "f_wide_only": ("fp32", lambda sx, n: n if n > 16 else sx, None, False),
    "g_width16_only": ("fp32", lambda sx, n: n if n % 16 == 0 else sx, None, False),
    "h_width_not16_only": ("fp32", lambda sx, n: n if n % 16 else sx, None, False),
    "i_down16": ("fp32", lambda sx, n: sx // 16 * 16, None, False),
    "j_min_up16": ("fp32", lambda sx, n: min(sx, up(n, 16)), None, False),
    "k_fp16_width": ("fp16", lambda sx, n: n, None, False),
    "l_fp16_up16": ("fp16", lambda sx, n: up(n, 16), None, False),
    "m_fp16_up8": ("fp16", lambda sx, n: up(n, 8), None, False),
    "n_bf16_width": ("bf16", lambda sx, n: n, None, False),
    "p_bigpad_only": ("fp32", lambda sx, n: n if sx - n >= 16 else sx, None, False),
    "q_smallpad_only": ("fp32", lambda sx, n: n if sx - n < 16 else sx, None, False),
    "r_out_width": ("fp32", lambda sx, n: sx, lambda so, n: n, True),
    "s_out_up16": ("fp32", lambda sx, n: sx, lambda so, n: up(n, 16), True),
    "t_out_takes_x": ("fp32", lambda sx, n: sx, "x", True),
    "u_up4_plus4": ("fp32", lambda sx, n: up(n + 1, 4), None, False),
    "v_fp16_out_width": ("fp16", lambda sx, n: sx, lambda so, n: n, True),
    "w_div4_is_dense": ("fp32", lambda sx, n: n if sx % 4 == 0 and sx % 16 else sx, None, False),
}


def _make(name, dtype, fx, fo, strided):
    def run(inp, out, cfg):
        x, y = inp["x"], out["out"]
        m, n = x.shape
        sx = fx(x.stride(0), n)
        so = y.stride(0) if fo is None else (sx if fo == "x" else fo(y.stride(0), n))
        dbl[(m,)](x, y, n, sx, so, BLOCK=16)

    register(KernelSpec(
        name=f"adv_{name}", description=f"out = 2 * x, planted stride bug {name}",
        dims=(Dim("M", interpret_max=8, gpu_max=8), Dim("N", interpret_max=40, gpu_max=40, blocks=(16,))),
        dtypes=(dtype,), strided_outputs=strided, no_subnormals="not this fixture's",
        make_inputs=lambda case, device: {"x": inputs.rows(case, device, inputs.generator(case))},
        make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape, dtype=inp["x"].dtype,
                                                           device=inp["x"].device)},
        run=run, reference=lambda inp, case: {"out": inp["x"].double() * 2.0}, outputs=("out",),
    ))


for _n, (_d, _fx, _fo, _s) in BUGS.items():
    _make(_n, _d, _fx, _fo, _s)
