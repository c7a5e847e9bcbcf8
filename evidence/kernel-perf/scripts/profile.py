"""Kernels for `ncu` to profile (diagnostics, not shipped): each launched a few times, the last launch of each is
what ncu's `-c`/`--launch-skip` picks. What: fp8_scaled_matmul's descriptor kernel at 8192^3 as shipped (the fp8
products promoted to the fp32 accumulator every 128) and the same kernel without the promotion and scales; attention
(fp16, non-causal, 4 x 32 x 4096 x 128) with its WS config, its best pointer config, and torch's SDPA.

    ncu --clock-control none --section ... python evidence/kernel-perf/scripts/profile.py fp8|attention
"""
import sys

import torch
import triton

from kernels import attention as A
from kernels import fp8 as F
from kernels.tiles import descriptor_matmul

what = sys.argv[1]
torch.manual_seed(0)
if what == "fp8":
    n = 8192
    a, sa = F.quantize_rowwise_reference(torch.randn(n, n, device="cuda"), torch.float8_e4m3fn)
    bt, sb = F.quantize_rowwise_reference(torch.randn(n, n, device="cuda"), torch.float8_e4m3fn)
    b = bt.t()
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 256, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    for _ in range(2):
        descriptor_matmul(a, b, c, cfg, sa, sb)  # promoted every 128 (shipped)
    for _ in range(2):
        descriptor_matmul(a, b, c, cfg)  # SCALED=False: no promotion, no scales
    for _ in range(2):
        torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.bfloat16)
else:
    q, k, v = (torch.randn(4, 32, 4096, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    for cfg in ({"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "num_stages": 2, "WS": 1},
                {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}):
        for _ in range(2):
            A.attention(q, k, v, False, o, cfg)
    for _ in range(2):
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
print("profile.py", what, "done")
