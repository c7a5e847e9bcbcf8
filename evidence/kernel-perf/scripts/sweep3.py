"""H100 sweep (diagnostics, not shipped): attention and fp8 variants (xkernels.py beside this file) against their
torch baselines in one process. Run from the repository root: python evidence/kernel-perf/scripts/sweep3.py.
The rows named "tutorial" timed Triton's own tutorial kernel (python/tutorials/06-fused-attention.py of Triton's
repository at the 3.6 release), copied beside this file as fa36.py for that call and not kept here; without it
those rows are skipped."""
import json, math, os, sys
from pathlib import Path
sys.path[:0] = [".", str(Path(__file__).parent)]
import torch, triton
from triton.testing import do_bench
from kernels import attention as A, fp8 as F
from xkernels import attention_desc_kernel, fp8_ws_kernel
try:
    from fa36 import _attn_fwd as tut_fwd
except ImportError:
    tut_fwd = None

OUT = os.environ.get("OUT", "/tmp")
rows = []
def bench(fn):
    fn(); torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=150, return_mode="median")
def rec(group, name, ms, flops, base_ms, err):
    r = {"group": group, "variant": name, "ms": ms, "tflops": flops / ms / 1e9 if ms else None,
         "vs_torch": base_ms / ms if ms else None, "err": err}
    rows.append(r)
    print(f"{group:34} {name:52} {ms if ms else float('nan'):8.4f} ms {r['tflops'] or 0:7.1f} TF/s {r['vs_torch'] or 0:6.3f}x err={err}", flush=True)

triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
which = sys.argv[1:] or ["attn", "fp8"]
torch.manual_seed(0)
if "attn" in which:
    B, H, S, D = 4, 32, 4096, 128
    for dt in (torch.float16, torch.bfloat16):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dt) for _ in range(3))
        for causal in (0, 1):
            g = f"attn {str(dt)[6:]} causal={causal}"
            flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            base = bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
            rec(g, "torch SDPA", base, flops, base, 0.0)
            def check(o):
                return float((o.float() - ref.float()).abs().max())
            for cfg in ({"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}, {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}):
                try:
                    o = A.attention(q, k, v, bool(causal), config=cfg)
                    rec(g, f"shipped {tuple(cfg.values())}", bench(lambda: A.attention(q, k, v, bool(causal), out=o, config=cfg)), flops, base, check(o))
                except Exception as e:
                    rec(g, f"shipped {tuple(cfg.values())} FAIL {str(e)[:80]}", None, flops, base, None)
            variants = [(False, True, 128, 64, 8, 3), (False, True, 128, 64, 8, 2), (False, True, 64, 64, 4, 3), (False, True, 128, 128, 8, 2),
                        (False, True, 128, 128, 8, 3), (False, True, 64, 128, 4, 2)]
            if not causal:
                variants += [(True, False, 128, 64, 4, 2), (True, False, 128, 128, 4, 2), (True, False, 128, 64, 4, 3), (True, False, 128, 128, 4, 3),
                             (False, False, 128, 64, 8, 3), (False, False, 128, 128, 8, 2)]
            for ws, tail, bm, bn, nw, ns in variants:
                name = f"desc ws={int(ws)} tail={int(tail)} {bm}x{bn} w{nw} s{ns}"
                try:
                    o = torch.empty_like(q)
                    grid = (triton.cdiv(S, bm), B * H)
                    def run():
                        attention_desc_kernel[grid](q, k, v, o, H, S, 1.0 / math.sqrt(D), q.stride(0), q.stride(1), q.stride(2),
                                                    k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
                                                    o.stride(0), o.stride(1), o.stride(2), CAUSAL=bool(causal), BLOCK_M=bm, BLOCK_N=bn,
                                                    BLOCK_D=D, WS=ws, TAIL=tail, num_warps=nw, num_stages=ns)
                    run(); torch.cuda.synchronize()
                    rec(g, name, bench(run), flops, base, check(o))
                except Exception as e:
                    rec(g, name + f" FAIL {str(e).splitlines()[0][:80]}", None, flops, base, None)
            if dt == torch.float16 and tut_fwd is not None:
                for ws, bm, bn, nw, ns in ((False, 128, 64, 8, 3), (False, 128, 128, 8, 3), (False, 128, 64, 4, 3), (False, 128, 128, 8, 2)) + (
                        ((True, 128, 64, 4, 2), (True, 128, 128, 4, 2), (True, 128, 64, 4, 3), (True, 128, 128, 4, 3)) if not causal else ()):
                    name = f"tutorial ws={int(ws)} {bm}x{bn} w{nw} s{ns}"
                    try:
                        o = torch.empty_like(q); M = torch.empty((B, H, S), device="cuda", dtype=torch.float32)
                        grid = (triton.cdiv(S, bm), B * H)
                        def run():
                            tut_fwd[grid](1.0 / math.sqrt(D), M, B, H, q, k, v, o, S, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, FP8_OUTPUT=False,
                                          STAGE=3 if causal else 1, warp_specialize=ws, IS_HOPPER=True, num_warps=nw, num_stages=ns)
                        run(); torch.cuda.synchronize()
                        rec(g, name, bench(run), flops, base, check(o))
                    except Exception as e:
                        rec(g, name + f" FAIL {str(e).splitlines()[0][:80]}", None, flops, base, None)
if "fp8" in which:
    for n in (4096, 8192):
        g = f"fp8 {n}^3"
        a32 = torch.randn(n, n, device="cuda"); bt32 = torch.randn(n, n, device="cuda")
        a, sa = F.quantize_rowwise_reference(a32, torch.float8_e4m3fn)
        bt, sb = F.quantize_rowwise_reference(bt32, torch.float8_e4m3fn)
        b = bt.t()
        flops = 2.0 * n ** 3
        inp = {"a": a, "a_scale": sa, "b": b, "b_scale": sb}
        ref = F._scaled_mm_baseline(inp)
        base = bench(lambda: F._scaled_mm_baseline(inp))
        rec(g, "torch._scaled_mm", base, flops, base, 0.0)
        fast = torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.bfloat16, use_fast_accum=True)
        rec(g, "torch._scaled_mm fast_accum", bench(lambda: torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.bfloat16, use_fast_accum=True)), flops, base,
            float((fast.float() - ref.float()).abs().max() / ref.float().abs().max()))
        def err(c):
            return float((c.float() - ref.float()).abs().max() / ref.float().abs().max())
        cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 256, "GROUP_M": 8, "num_warps": 8, "num_stages": 3, "TMA": 1}
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        F.fp8_scaled_matmul(a, sa, b, sb, c, config=cfg)
        rec(g, "shipped TMA 128x128x256 w8 s3", bench(lambda: F.fp8_scaled_matmul(a, sa, b, sb, c, config=cfg)), flops, base, err(c))
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        for bm, bn, bk, nw, ns, pr, wso, wsi, mult in ((128, 128, 128, 8, 4, 128, False, False, 1), (128, 128, 128, 4, 3, 128, True, False, 1),
                                                      (128, 128, 128, 4, 4, 128, True, False, 1), (128, 128, 128, 4, 3, 128, False, True, 1),
                                                      (128, 128, 256, 4, 3, 128, True, False, 1), (128, 256, 128, 4, 3, 128, True, False, 1),
                                                      (128, 256, 128, 4, 4, 128, True, False, 1), (128, 128, 128, 4, 3, 128, True, False, 2),
                                                      (256, 128, 128, 4, 3, 128, True, False, 1), (128, 128, 128, 4, 3, 2**30, True, False, 1)):
            name = f"ws {bm}x{bn}x{bk} w{nw} s{ns} p{pr if pr < 2**30 else 'none'} wso={int(wso)} wsi={int(wsi)} grid={mult}xSM"
            try:
                c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
                tiles = triton.cdiv(n, bm) * triton.cdiv(n, bn)
                grid = (min(tiles, mult * sms),)
                def run():
                    fp8_ws_kernel[grid](a, b, c, sa, sb, n, n, n, a.stride(0), b.stride(1), c.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                        GROUP_M=8, PROMOTE=pr, WS_OUTER=wso, WS_INNER=wsi, num_warps=nw, num_stages=ns)
                run(); torch.cuda.synchronize()
                rec(g, name, bench(run), flops, base, err(c))
            except Exception as e:
                rec(g, name + f" FAIL {str(e).splitlines()[0][:80]}", None, flops, base, None)
json.dump(rows, open(os.path.join(OUT, f"sweep3-{'-'.join(which)}.json"), "w"), indent=1)
