"""fp8: the descriptor kernel with one-warp-group tiles and several programs per SM, so one program's promotion
adds overlap another's MMAs (diagnostics)."""
import json, os, sys
sys.path.insert(0, ".")  # run from the repository root
import torch, triton
from triton.testing import do_bench
from kernels import fp8 as F
from kernels.tiles import matmul_descriptor_kernel

OUT = os.environ.get("OUT", "/tmp")
rows = []
triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
sms = torch.cuda.get_device_properties(0).multi_processor_count
torch.manual_seed(0)
for n in (4096, 8192):
    a, sa = F.quantize_rowwise_reference(torch.randn(n, n, device="cuda"), torch.float8_e4m3fn)
    bt, sb = F.quantize_rowwise_reference(torch.randn(n, n, device="cuda"), torch.float8_e4m3fn)
    b = bt.t()
    inp = {"a": a, "a_scale": sa, "b": b, "b_scale": sb}
    ref = F._scaled_mm_baseline(inp)
    base = do_bench(lambda: F._scaled_mm_baseline(inp), warmup=25, rep=150, return_mode="median")
    print(f"fp8 {n}^3 torch._scaled_mm {base:.4f} ms", flush=True)
    for bm, bn, bk, w, s, mult in ((128, 128, 256, 8, 3, 1), (64, 128, 128, 4, 3, 1), (64, 128, 128, 4, 3, 2), (64, 128, 128, 4, 3, 3),
                                  (64, 128, 128, 4, 4, 2), (64, 128, 256, 4, 2, 2), (128, 64, 128, 4, 3, 2), (128, 64, 128, 4, 3, 3),
                                  (64, 256, 128, 4, 3, 1), (64, 256, 128, 4, 2, 2), (128, 128, 128, 8, 2, 2), (64, 64, 128, 4, 4, 4),
                                  (128, 128, 128, 4, 3, 1)):
        name = f"{bm}x{bn}x{bk} w{w} s{s} grid={mult}xSM"
        try:
            c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
            grid = (min(triton.cdiv(n, bm) * triton.cdiv(n, bn), mult * sms),)
            def run():
                matmul_descriptor_kernel[grid](a, b, c, sa, sb, n, n, n, a.stride(0), b.stride(1), c.stride(0), BLOCK_M=bm, BLOCK_N=bn,
                                               BLOCK_K=bk, GROUP_M=8, B_K_MAJOR=True, SCALED=True, num_warps=w, num_stages=s)
            run(); torch.cuda.synchronize()
            err = float((c.float() - ref.float()).abs().max() / ref.float().abs().max())
            ms = do_bench(run, warmup=25, rep=150, return_mode="median")
            rows.append({"n": n, "variant": name, "ms": ms, "vs_torch": base / ms, "err": err})
            print(f"fp8 {n}^3 {name:34} {ms:.4f} ms {2*n**3/ms/1e9:7.1f} TF/s {base/ms:.3f}x err={err:.4f}", flush=True)
        except Exception as e:
            print(f"fp8 {n}^3 {name:34} FAIL {str(e).splitlines()[0][:100]}", flush=True)
json.dump(rows, open(os.path.join(OUT, "sweep4.json"), "w"), indent=1)
