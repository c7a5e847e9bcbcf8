"""Exploration sweep on the GPU: variants and configs per kernel, ratios against torch and the copy ceiling."""
import json, statistics, sys, time, traceback
import torch, triton
from triton.testing import do_bench

sys.path.insert(0, ".")
from kernels import registry  # noqa
registry.load_builtin()
get_spec = registry.get
from kernels.spec import Case  # noqa
from suite.bench import _copy_ms, COPY_BYTES  # noqa
import scratch.tma as tma  # noqa

out = []
copy_gbps = 2 * COPY_BYTES / (_copy_ms("cuda") * 1e-3) / 1e9
print(f"copy ceiling {copy_gbps:.0f} GB/s", flush=True)


def t(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def line(**kw):
    out.append(kw)
    print(json.dumps(kw), flush=True)


def spec_sweep(name, dtype, shape, configs, layout="contiguous", variants=None):
    spec = get_spec(name)
    case = Case(name, dtype, shape, layout, "normal", 0)
    inp = spec.make_inputs(case, "cuda")
    outp = spec.make_outputs(inp, case)
    base = t(lambda: spec.torch_baseline(inp))
    nbytes = spec.min_bytes(case)
    best = None
    for cfg in configs:
        try:
            ms = t(lambda: spec.run(inp, outp, cfg))
        except Exception as e:  # noqa
            line(kernel=name, dtype=dtype, shape=shape, config=cfg, error=str(e)[:200])
            continue
        r = dict(kernel=name, dtype=dtype, shape=shape, config=cfg, ms=round(ms, 4), torch_ms=round(base, 4),
                 speedup=round(base / ms, 3), copy_frac=round(nbytes / (ms * 1e-3) / 1e9 / copy_gbps, 3))
        print("  ", json.dumps(r), flush=True)
        if best is None or ms < best["ms"]:
            best = r
    line(best=True, **best)
    del inp, outp
    torch.cuda.empty_cache()


which = sys.argv[1:] or ["gelu", "matmul", "fp8"]
T0 = time.time()
if "gelu" in which:
    cfgs = [{"BLOCK_M": m, "BLOCK_N": n, "num_warps": w} for m, n in ((1, 4096), (1, 8192), (2, 4096), (1, 16384), (4, 2048), (2, 8192))
            for w in (4, 8, 16)]
    for dt in ("fp32", "fp16", "bf16"):
        spec_sweep("gelu", dt, {"M": 16384, "N": 16384}, cfgs)
    print("gelu", time.time() - T0, flush=True)

if "matmul" in which:
    for dt, tdt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        for n in (4096, 8192):
            a = torch.randn(n, n, device="cuda", dtype=tdt)
            b = torch.randn(n, n, device="cuda", dtype=tdt)
            c = torch.empty(n, n, device="cuda", dtype=tdt)
            base = t(lambda: torch.matmul(a, b))
            ref = torch.matmul(a, b)
            from kernels.matmul import matmul
            for cfg in ({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
                        {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}):
                ms = t(lambda: matmul(a, b, c, cfg))
                line(kernel="matmul", variant="pointer", dtype=dt, n=n, config=cfg, ms=round(ms, 4), speedup=round(base / ms, 3))
            for persistent, (bm, bn, bk, w, s) in ((1, (128, 256, 64, 8, 3)), (1, (128, 256, 64, 8, 4)), (1, (128, 128, 64, 8, 4)),
                                                   (1, (128, 128, 128, 8, 3)), (1, (256, 128, 64, 8, 3)), (0, (128, 256, 64, 8, 3)),
                                                   (0, (128, 128, 64, 8, 4))):
                    cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": s, "PERSISTENT": persistent}
                    try:
                        k = tma.mm_tma(a, b, c, cfg)
                        err = (c.float() - ref.float()).abs().max().item()
                        ms = t(lambda: tma.mm_tma(a, b, c, cfg))
                        line(kernel="matmul", variant="tma", dtype=dt, n=n, config=cfg, ms=round(ms, 4), speedup=round(base / ms, 3),
                             spills=k.n_spills, regs=k.n_regs, maxerr=err)
                    except Exception as e:  # noqa
                        line(kernel="matmul", variant="tma", config=cfg, error=str(e)[:300])
            del a, b, c, ref
            torch.cuda.empty_cache()
    print("matmul", time.time() - T0, flush=True)

if "fp8" in which:
    from kernels.fp8 import fp8_scaled_matmul
    for n in (4096, 8192):
        a = (torch.randn(n, n, device="cuda") * 0.5).to(torch.float8_e4m3fn)
        b = (torch.randn(n, n, device="cuda") * 0.5).to(torch.float8_e4m3fn).t().contiguous().t()  # K-major
        sa = torch.rand(n, device="cuda") + 0.5
        sb = torch.rand(n, device="cuda") + 0.5
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        base = t(lambda: torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.bfloat16))
        basefast = t(lambda: torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.bfloat16, use_fast_accum=True))
        ref = torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.float32)
        line(kernel="fp8", n=n, torch_ms=round(base, 4), torch_fast_ms=round(basefast, 4))
        for bm, bn, bk, w, s in ((128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 128, 64, 4, 4), (64, 128, 128, 4, 4),
                                 (128, 128, 128, 4, 4), (64, 256, 128, 4, 3), (128, 64, 128, 4, 4), (128, 128, 128, 8, 4)):
            cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s}
            try:
                ms = t(lambda: fp8_scaled_matmul(a, sa, b, sb, c, torch.bfloat16, cfg))
                line(kernel="fp8", variant="pointer", n=n, config=cfg, ms=round(ms, 4), speedup=round(base / ms, 3))
            except Exception as e:  # noqa
                line(kernel="fp8", variant="pointer", config=cfg, error=str(e)[:300])
            for imprecise, persistent in ((False, 1), (False, 0), (True, 1)):
                if (imprecise or not persistent) and (bm, bn, bk, w, s) not in ((128, 128, 128, 8, 3), (128, 256, 128, 8, 3)):
                    continue
                cfg2 = {**cfg, "PERSISTENT": persistent}
                try:
                    k = tma.mm_tma(a, b, c, cfg2, sa, sb, imprecise)
                    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                    ms = t(lambda: tma.mm_tma(a, b, c, cfg2, sa, sb, imprecise))
                    line(kernel="fp8", variant="tma", imprecise=imprecise, n=n, config=cfg2, ms=round(ms, 4),
                         speedup=round(base / ms, 3), spills=k.n_spills, regs=k.n_regs, relerr=err)
                except Exception as e:  # noqa
                    line(kernel="fp8", variant="tma", config=cfg2, error=str(e)[:300])
        del a, b, c, ref
        torch.cuda.empty_cache()
    print("fp8", time.time() - T0, flush=True)

if "dropout" in which:
    cfgs = [{"BLOCK_SIZE": b, "num_warps": w} for b in (1024, 2048, 4096, 8192) for w in (4, 8, 16)]
    for dt in ("fp16", "fp32"):
        for shp in ({"M": 16384, "N": 16384, "P": 50}, {"M": 8192, "N": 8192, "P": 10}):
            spec_sweep("dropout", dt, shp, cfgs)
    print("dropout", time.time() - T0, flush=True)

if "attention" in which:
    spec = get_spec("attention")
    cfgs = spec.configs["nvidia"]
    for causal in (0, 1):
        spec_sweep("attention", "bf16", {"B": 4, "H": 32, "S": 4096, "D": 128, "CAUSAL": causal}, cfgs)
    print("attention", time.time() - T0, flush=True)

if "layernorm_backward" in which:
    spec = get_spec("layernorm_backward")
    for dt in ("fp16",):
        for shp in ({"M": 8192, "N": 8192}, {"M": 4096, "N": 4096}, {"M": 32768, "N": 1024}):
            spec_sweep("layernorm_backward", dt, shp, [*spec.configs["nvidia"], *({**c, "num_stages": 1} for c in spec.configs["nvidia"][:30:3])])
    print("layernorm_backward", time.time() - T0, flush=True)

if "softmax_online" in which:
    spec = get_spec("softmax_online")
    for dt in ("fp16",):
        spec_sweep("softmax_online", dt, {"M": 4096, "N": 32768}, spec.configs["nvidia"])
    print("softmax_online", time.time() - T0, flush=True)


if "c_mm" in which:
    for dt, tdt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        for n in (4096, 8192):
            a = torch.randn(n, n, device="cuda", dtype=tdt)
            b = torch.randn(n, n, device="cuda", dtype=tdt)
            c = torch.empty(n, n, device="cuda", dtype=tdt)
            base = t(lambda: torch.matmul(a, b))
            for bm, bn, bk, w, s, sub, g in ((128, 256, 64, 8, 3, False, 8), (128, 256, 64, 8, 4, True, 8), (128, 256, 64, 8, 3, True, 8),
                                            (128, 256, 64, 8, 3, False, 4), (128, 256, 64, 8, 3, False, 16), (128, 256, 64, 8, 4, True, 16)):
                cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": s, "SUBTILE": sub, "GROUP_M": g}
                try:
                    k = tma.mm_tma(a, b, c, cfg)
                    ms = t(lambda: tma.mm_tma(a, b, c, cfg))
                    line(kernel="matmul", variant="tma", dtype=dt, n=n, config=cfg, ms=round(ms, 4), speedup=round(base / ms, 3), spills=k.n_spills)
                except Exception as e:  # noqa
                    line(kernel="matmul", variant="tma", config=cfg, error=str(e)[:200])
            del a, b, c
            torch.cuda.empty_cache()
    print("c_mm", time.time() - T0, flush=True)

if "c_fp8" in which:
    for n in (4096, 8192):
        a = (torch.randn(n, n, device="cuda") * 0.5).to(torch.float8_e4m3fn)
        b = (torch.randn(n, n, device="cuda") * 0.5).to(torch.float8_e4m3fn).t().contiguous().t()
        sa = torch.rand(n, device="cuda") + 0.5
        sb = torch.rand(n, device="cuda") + 0.5
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        base = t(lambda: torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.bfloat16))
        ref = torch._scaled_mm(a, b, scale_a=sa[:, None], scale_b=sb[None, :], out_dtype=torch.float32)
        for prec, bm, bn, bk, w, s in ((0, 128, 128, 128, 8, 3), (1, 128, 128, 128, 8, 3), (1, 128, 128, 128, 8, 4), (2, 128, 128, 256, 8, 3),
                                       (1, 128, 256, 128, 8, 3), (2, 128, 256, 256, 8, 2), (1, 128, 128, 256, 8, 3), (0, 128, 128, 128, 4, 3),
                                       (1, 64, 256, 128, 4, 4), (1, 128, 128, 64, 8, 5)):
            cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s, "PREC": prec}
            try:
                k = tma.mm_tma(a, b, c, cfg, sa, sb)
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                ms = t(lambda: tma.mm_tma(a, b, c, cfg, sa, sb))
                line(kernel="fp8", n=n, config=cfg, ms=round(ms, 4), speedup=round(base / ms, 3), spills=k.n_spills, regs=k.n_regs, relerr=err)
            except Exception as e:  # noqa
                line(kernel="fp8", config=cfg, error=str(e)[:200])
        del a, b, c, ref
        torch.cuda.empty_cache()
    print("c_fp8", time.time() - T0, flush=True)
