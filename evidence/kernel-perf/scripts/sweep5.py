"""Attention: one warp-specialized loop with every block masked (causal too), against SDPA and the shipped kernels."""
import json, math, os, sys
sys.path[:0] = [".", os.path.dirname(os.path.abspath(__file__))]  # run from the repository root
import torch, triton
from triton.testing import do_bench
from kernels import attention as A
from xkernels import attention_ws_masked_kernel  # beside this file

OUT = os.environ.get("OUT", "/tmp")
rows = []
triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
def bench(fn):
    fn(); torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=150, return_mode="median")
torch.manual_seed(0)
for S_, timed in ((4096, True), (1000, False), (77, False)):
    B, H, S, D = (4, 32, S_, 128) if timed else (2, 4, S_, 128)
    for dt in (torch.float16, torch.bfloat16):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dt) for _ in range(3))
        for causal in (1, 0):
            g = f"S={S} {str(dt)[6:]} causal={causal}"
            flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            base = bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))) if timed else None
            def report(name, o, run):
                err = float((o.float() - ref.float()).abs().max())
                ms = bench(run) if timed else None
                rows.append({"group": g, "variant": name, "ms": ms, "vs_sdpa": base / ms if ms else None, "err": err})
                print(f"{g:28} {name:40} " + (f"{ms:.4f} ms {flops/ms/1e9:6.1f} TF/s {base/ms:.3f}x" if ms else "") + f" err={err:.3g}", flush=True)
            for cfg in ({"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}, {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 4},
                        {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "num_stages": 2, "WS": 1}):
                o = torch.empty_like(q)
                report(f"shipped {tuple(cfg.values())}", A.attention(q, k, v, bool(causal), o, cfg), lambda: A.attention(q, k, v, bool(causal), o, cfg))
            for bm, bn, ns in ((128, 128, 2), (128, 64, 2)):
                o = torch.empty_like(q)
                grid = (triton.cdiv(S, bm), B * H)
                def run():
                    attention_ws_masked_kernel[grid](q, k, v, o, H, S, 1.0 / math.sqrt(D), q.stride(0), q.stride(1), q.stride(2),
                                                     k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
                                                     o.stride(0), o.stride(1), o.stride(2), CAUSAL=bool(causal), BLOCK_M=bm, BLOCK_N=bn,
                                                     BLOCK_D=D, num_warps=4, num_stages=ns)
                try:
                    run(); torch.cuda.synchronize()
                    report(f"ws-masked {bm}x{bn} s{ns}", o, run)
                except Exception as e:
                    print(g, "ws-masked", bm, bn, "FAIL", str(e).splitlines()[0][:100], flush=True)
json.dump(rows, open(os.path.join(OUT, "sweep5.json"), "w"), indent=1)
