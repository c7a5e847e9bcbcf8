"""Exploration sweep 2 on the GPU: softmax_online L2 reuse, layernorm_backward breakdown and reduction, gelu hints."""
import json, sys, time, traceback
import torch, triton
import triton.language as tl
from triton.testing import do_bench

sys.path.insert(0, ".")
from kernels import registry  # noqa
registry.load_builtin()
from kernels.spec import Case  # noqa
from suite.bench import _copy_ms, COPY_BYTES  # noqa
import kernels.softmax_online as so  # noqa
import kernels.layernorm_backward as lb  # noqa
import kernels.gelu as ge  # noqa
from kernels.tiles import rows_launch  # noqa

copy_gbps = 2 * COPY_BYTES / (_copy_ms("cuda") * 1e-3) / 1e9
print(json.dumps({"copy_gbps": round(copy_gbps, 1), "device": torch.cuda.get_device_name()}), flush=True)
T0 = time.time()


def t(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def line(**kw):
    print(json.dumps(kw), flush=True)


def frac(nbytes, ms):
    return round(nbytes / (ms * 1e-3) / 1e9 / copy_gbps, 4)


# ---------------- softmax_online ----------------
@triton.jit
def so_variant(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr,
               REVERSE: tl.constexpr, HINTS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    run_max = tl.full([BLOCK_SIZE], -float("inf"), tl.float32)
    run_sum = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        if HINTS:
            x = tl.load(in_row + cols, mask=cols < n_cols, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
        else:
            x = tl.load(in_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(run_max, x)
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - shift) + tl.exp(x - shift)
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    row_sum = tl.sum(run_sum * tl.exp(run_max - row_max), axis=0)
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for i in range(0, n_blocks):
        if REVERSE:
            start = (n_blocks - 1 - i) * BLOCK_SIZE
        else:
            start = i * BLOCK_SIZE
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        if HINTS:
            x = tl.load(in_row + cols, mask=mask, other=-float("inf"), eviction_policy="evict_first").to(tl.float32)
            tl.store(out_row + cols, (tl.exp(x - row_max) / row_sum).to(out_ptr.dtype.element_ty), mask=mask,
                     eviction_policy="evict_first")
        else:
            x = tl.load(in_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
            tl.store(out_row + cols, (tl.exp(x - row_max) / row_sum).to(out_ptr.dtype.element_ty), mask=mask)


def softmax_section():
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [(4096, 8), (8192, 8), (8192, 16), (16384, 16), (16384, 32)]
    for (m, n) in ((4096, 32768), (1024, 131072)):
        for dn, dt in dts.items():
            x = torch.randn(m, n, device="cuda", dtype=dt)
            out = torch.empty_like(x)
            ref = torch.softmax(x.float(), -1)
            base = t(lambda: torch.softmax(x, -1))
            nbytes = 2 * m * n * x.element_size()
            line(kernel="softmax_online", dtype=dn, shape=[m, n], variant="torch", ms=round(base, 4), frac=frac(nbytes, base))
            best = {}
            for b, w in cfgs:
                cur = t(lambda: so.softmax_online(x, out, {"BLOCK_SIZE": b, "num_warps": w}))
                line(kernel="softmax_online", dtype=dn, shape=[m, n], variant="current", cfg=[b, w], ms=round(cur, 4),
                     frac=frac(nbytes, cur), speedup=round(base / cur, 3))
                for rev, hints in ((1, 0), (0, 1), (1, 1)):
                    name = f"rev{rev}_hints{hints}"
                    try:
                        fn = lambda: so_variant[(m,)](out, x, x.stride(0), out.stride(0), n, BLOCK_SIZE=b, REVERSE=rev,
                                                      HINTS=hints, num_warps=w)
                        fn()
                        err = (out.float() - ref).abs().max().item()
                        ms = t(fn)
                        line(kernel="softmax_online", dtype=dn, shape=[m, n], variant=name, cfg=[b, w], ms=round(ms, 4),
                             frac=frac(nbytes, ms), speedup=round(base / ms, 3), err=err)
                        if name not in best or ms < best[name][0]:
                            best[name] = (ms, [b, w])
                    except Exception as e:  # noqa
                        line(kernel="softmax_online", variant=name, cfg=[b, w], error=str(e)[:200])
                if "current" not in best or cur < best["current"][0]:
                    best["current"] = (cur, [b, w])
            for k, (ms, c) in best.items():
                line(best=True, kernel="softmax_online", dtype=dn, shape=[m, n], variant=k, cfg=c, ms=round(ms, 4),
                     frac=frac(nbytes, ms), speedup=round(base / ms, 3))
            del x, out, ref
            torch.cuda.empty_cache()


# ---------------- layernorm_backward ----------------
@triton.jit
def ln_reduce2(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_groups, n_cols, BLOCK_G: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < n_cols
    dw = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    for g0 in range(0, n_groups, BLOCK_G):
        g = g0 + tl.arange(0, BLOCK_G)
        m = (g < n_groups)[:, None] & cmask[None, :]
        offs = g[:, None] * n_cols + cols[None, :]
        dw += tl.load(dw_part_ptr + offs, mask=m, other=0.0)
        db += tl.load(db_part_ptr + offs, mask=m, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=cmask)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=cmask)


LN_CFG = {("fp32", 8192, 8192): {'BLOCK_N': 8192, 'BLOCK_M': 1, 'ROW_GROUPS': 132, 'num_warps': 16},
          ("fp32", 4096, 4096): {'BLOCK_N': 4096, 'BLOCK_M': 1, 'ROW_GROUPS': 132, 'num_warps': 16},
          ("fp32", 32768, 1024): {'BLOCK_N': 1024, 'BLOCK_M': 8, 'ROW_GROUPS': 132, 'num_warps': 8},
          ("fp16", 8192, 8192): {'BLOCK_N': 8192, 'BLOCK_M': 1, 'ROW_GROUPS': 132, 'num_warps': 16},
          ("fp16", 4096, 4096): {'BLOCK_N': 4096, 'BLOCK_M': 2, 'ROW_GROUPS': 132, 'num_warps': 16},
          ("fp16", 32768, 1024): {'BLOCK_N': 8192, 'BLOCK_M': 1, 'ROW_GROUPS': 264, 'num_warps': 16},
          ("bf16", 8192, 8192): {'BLOCK_N': 8192, 'BLOCK_M': 1, 'ROW_GROUPS': 132, 'num_warps': 16},
          ("bf16", 4096, 4096): {'BLOCK_N': 1024, 'BLOCK_M': 8, 'ROW_GROUPS': 132, 'num_warps': 16},
          ("bf16", 32768, 1024): {'BLOCK_N': 8192, 'BLOCK_M': 1, 'ROW_GROUPS': 264, 'num_warps': 16}}


def ln_section():
    spec = registry.get("layernorm_backward")
    for (dn, m, n), cfg in LN_CFG.items():
        case = Case("layernorm_backward", dn, {"M": m, "N": n}, "contiguous", "normal", 0)
        inp = spec.make_inputs(case, "cuda")
        outp = spec.make_outputs(inp, case)
        nbytes = spec.min_bytes(case)
        base = t(lambda: spec.torch_baseline(inp))
        whole = t(lambda: spec.run(inp, outp, cfg))
        line(kernel="layernorm_backward", dtype=dn, shape=[m, n], variant="whole", cfg=cfg, ms=round(whole, 4),
             torch_ms=round(base, 4), frac=frac(nbytes, whole), speedup=round(base / whole, 3))
        x, dy, w, mean, rstd = inp["x"], inp["dy"], inp["weight"], inp["mean"], inp["rstd"]
        for groups_cfg in (cfg["ROW_GROUPS"], 264, 528, 1056):
            c2 = dict(cfg, ROW_GROUPS=groups_cfg)
            meta, options = lb.split_config(c2)
            block, fused, block_m, groups, rpg = lb.plan(m, n, meta)
            options.setdefault("num_warps", 8)
            f32 = dict(dtype=torch.float32, device="cuda")
            dw_part, db_part = torch.empty((groups, n), **f32), torch.empty((groups, n), **f32)
            if not fused:
                line(kernel="layernorm_backward", dtype=dn, shape=[m, n], note="not fused", cfg=c2)
                break

            def fused_fn():
                lb.layernorm_bwd_fused_kernel[(groups,)](x, dy, outp["dx"], w, mean, rstd, dw_part, db_part, x.stride(0),
                                                         dy.stride(0), outp["dx"].stride(0), m, n, rpg,
                                                         BLOCK_M=block_m, BLOCK_N=block, **options)
            ms_f = t(fused_fn)
            col_blocks = triton.cdiv(n, block)
            ms_r = t(lambda: lb.layernorm_bwd_reduce_kernel[(col_blocks,)](dw_part, db_part, outp["dweight"], outp["dbias"],
                                                                         groups, n, BLOCK_N=block, **options))
            ref_dw = dw_part.sum(0)
            res = {}
            for bg, bc, nw in ((32, 64, 4), (64, 32, 4), (16, 128, 4), (32, 128, 8)):
                fn = lambda: ln_reduce2[(triton.cdiv(n, bc),)](dw_part, db_part, outp["dweight"], outp["dbias"], groups, n,
                                                              BLOCK_G=bg, BLOCK_C=bc, num_warps=nw)
                fn()
                err = (outp["dweight"].float() - ref_dw).abs().max().item() / ref_dw.abs().max().item()
                res[f"{bg}x{bc}w{nw}"] = (round(t(fn), 4), err)
            best_r = min(v[0] for v in res.values())
            line(kernel="layernorm_backward", dtype=dn, shape=[m, n], groups=groups, fused_ms=round(ms_f, 4),
                 reduce_old_ms=round(ms_r, 4), reduce_new=res, est_new_frac=frac(nbytes, ms_f + best_r),
                 fused_frac=frac(nbytes, ms_f), torch_ms=round(base, 4), est_new_speedup=round(base / (ms_f + best_r), 3))
            del dw_part, db_part
        del inp, outp
        torch.cuda.empty_cache()


# ---------------- gelu ----------------
@triton.jit
def gelu_hint(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              HINT: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    if HINT == 1:
        x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    elif HINT == 2:
        x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0, cache_modifier=".cg").to(tl.float32)
    else:
        x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-2.0 * z))
    if HINT == 1:
        tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")
    elif HINT == 2:
        tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask, cache_modifier=".cs")
    else:
        tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gelu_flat(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = x / (1.0 + tl.exp(-2.0 * z))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu_section():
    cfgs = {(8192, "fp32"): (1, 8192, 16), (16384, "fp32"): (1, 16384, 4), (8192, "fp16"): (1, 8192, 16),
            (16384, "fp16"): (1, 16384, 16), (8192, "bf16"): (1, 16384, 16), (16384, "bf16"): (1, 16384, 16)}
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for (n, dn), (bm, bn, w) in cfgs.items():
        x = torch.randn(n, n, device="cuda", dtype=dts[dn])
        y = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        base = t(lambda: torch.nn.functional.gelu(x, approximate="tanh"))
        cur = t(lambda: ge.gelu(x, y, {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w}))
        line(kernel="gelu", dtype=dn, n=n, variant="current", ms=round(cur, 4), torch_ms=round(base, 4),
             speedup=round(base / cur, 4), frac=frac(nbytes, cur), torch_frac=frac(nbytes, base))
        grid, launch = rows_launch(n, n, {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w})
        for hint in (0, 1, 2):
            ms = t(lambda: gelu_hint[grid](x, y, n, n, x.stride(0), y.stride(0), HINT=hint, **launch))
            line(kernel="gelu", dtype=dn, n=n, variant=f"hint{hint}", ms=round(ms, 4), speedup=round(base / ms, 4),
                 frac=frac(nbytes, ms))
        for blk in (1024, 2048, 4096, 8192):
            for w2 in (4, 8):
                ms = t(lambda: gelu_flat[(triton.cdiv(x.numel(), blk),)](x, y, x.numel(), BLOCK=blk, num_warps=w2))
                line(kernel="gelu", dtype=dn, n=n, variant=f"flat{blk}w{w2}", ms=round(ms, 4), speedup=round(base / ms, 4),
                     frac=frac(nbytes, ms))
        # torch again at the end: the baseline's own drift within the section
        base2 = t(lambda: torch.nn.functional.gelu(x, approximate="tanh"))
        line(kernel="gelu", dtype=dn, n=n, variant="torch_again", ms=round(base2, 4))
        del x, y
        torch.cuda.empty_cache()


for name in sys.argv[1:] or ["ln", "softmax", "gelu"]:
    try:
        {"ln": ln_section, "softmax": softmax_section, "gelu": gelu_section}[name]()
    except Exception:  # noqa
        traceback.print_exc()
    line(section=name, elapsed=round(time.time() - T0, 1))
