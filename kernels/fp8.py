"""FP8: row-wise quantization with a per-row fp32 scale, and the scaled matmul that consumes it.

Case.dtype is the fp8 flavour (fp8e4nv: OCP e4m3fn, max 448, NVIDIA and gfx950; fp8e4b8: e4m3fnuz,
max 240, gfx942), so the suite's dtype gating runs each flavour where the profile has it. The
high-precision side is the layout: the input dtype of the quantization (``bf16``, ``fp16``,
``fp32``; ``bf16_padded_rows`` strides the rows) and the output dtype of the matmul (``bf16``,
``fp16``; B is K-major as ``torch._scaled_mm`` wants it, ``bf16_b_rowmajor`` stores it N-major,
``bf16_a_padded_rows`` gives A a row stride wider than K). The Case default ``contiguous`` means
``bf16``. The fp8 dtype rides in the quantization's inputs as an empty tensor ``fp8`` because the
torch baseline sees inputs only.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels._tiles import descriptor_fields, descriptor_matmul, descriptor_ok, descriptor_path, grouped_tile
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Property, Tolerance, row_chunks, signature

# Largest finite value per flavour. Taken from the table, not torch.finfo, so the reference
# (which uses torch.finfo) checks it: a scale for the wrong flavour is silently wrong (triton #6542).
FP8_MAX = {torch.float8_e4m3fn: 448.0, torch.float8_e4m3fnuz: 240.0, torch.float8_e5m2: 57344.0,
           torch.float8_e5m2fnuz: 57344.0}


@triton.jit
def fp8_quant_rowwise_kernel(x_ptr, q_ptr, scale_ptr, K, stride_xm, stride_xk, stride_qm, stride_qk,
                             FP8_MAX: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    q_row = q_ptr + row * stride_qm
    amax = tl.zeros([BLOCK_K], dtype=tl.float32)
    for start in range(0, K, BLOCK_K):
        cols = start + tl.arange(0, BLOCK_K)
        # The row is read twice: kept in L2 for the second read (evict_last), let go after it (evict_first).
        x = tl.load(x_row + cols * stride_xk, mask=cols < K, other=0.0, eviction_policy="evict_last")
        amax = tl.maximum(amax, tl.abs(x.to(tl.float32)))
    amax = tl.max(amax, axis=0)
    # IEEE division (plain fp32 "/" is approximate on NVIDIA), so scale and quotient match torch's bit for
    # bit. An all-zero row keeps scale 1: its values quantize to zero either way.
    scale = tl.where(amax > 0, tl.math.div_rn(amax, FP8_MAX), 1.0)
    tl.store(scale_ptr + row, scale)
    for start in range(0, K, BLOCK_K):
        cols = start + tl.arange(0, BLOCK_K)
        x = tl.load(x_row + cols * stride_xk, mask=cols < K, other=0.0, eviction_policy="evict_first").to(tl.float32)
        tl.store(q_row + cols * stride_qk, tl.math.div_rn(x, scale).to(q_ptr.dtype.element_ty), mask=cols < K,
                 eviction_policy="evict_first")


@triton.jit
def fp8_scaled_matmul_kernel(a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        # Hopper's fp8 MMA keeps about 14 bits of its running sum (Triton's sm_90 default lets it run over
        # all of K); adding each partial product of at most 128 into the fp32 accumulator keeps fp32 accumulation.
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=min(BLOCK_K, 128))
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    a_scale = tl.load(a_scale_ptr + offs_m, mask=offs_m < M, other=0.0)
    b_scale = tl.load(b_scale_ptr + offs_n, mask=offs_n < N, other=0.0)
    c = acc * a_scale[:, None] * b_scale[None, :]
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c.to(c_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def fp8_quant_rowwise(x: torch.Tensor, fp8_dtype: torch.dtype, out: dict[str, torch.Tensor] | None = None,
                      config: dict | None = None) -> dict[str, torch.Tensor]:
    """q = x / scale in fp8 with scale = amax(|row|) / fp8_max per row; returns {"q", "scale"}."""
    if x.dim() != 2 or fp8_dtype not in FP8_MAX:
        raise ValueError(f"fp8_quant_rowwise takes a 2-D tensor and an fp8 dtype, got {tuple(x.shape)}, {fp8_dtype}")
    m, k = x.shape
    if out is None:
        out = {"q": torch.empty((m, k), dtype=fp8_dtype, device=x.device),
               "scale": torch.empty(m, dtype=torch.float32, device=x.device)}
    inputs.require_dense("fp8_quant_rowwise", "out['scale']", out["scale"])
    cfg = {"BLOCK_K": 1024, "num_warps": 4, **(config or {})}
    fp8_quant_rowwise_kernel[(m,)](x, out["q"], out["scale"], k, x.stride(0), x.stride(1), out["q"].stride(0),
                                   out["q"].stride(1), FP8_MAX=FP8_MAX[fp8_dtype], BLOCK_K=cfg["BLOCK_K"],
                                   num_warps=cfg["num_warps"])
    return out


MATMUL_DEFAULTS = {
    "nvidia": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    "amd": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 2},
    "interpret": {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4, "num_warps": 4, "num_stages": 1},
}


# A TMA config's tiles are the descriptor kernel's. Operands TMA cannot take (a leading dimension not a multiple of
# 16 bytes) run the pointer kernel, whose loads then go byte by byte through registers: with a TMA config's tiles
# (128 x 128 x 256, 8 warps, 3 stages) it spilled 2-3 KB a thread on sm_90 and took ptxas 5-7 s to build. Those
# launches take these tiles instead, which build in under a second and do not spill.
UNALIGNED = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 4, "num_stages": 2}


def launched_config(config: dict, descriptor: bool) -> dict:
    """The config a launch with ``config`` runs: a TMA config on operands the descriptor kernel cannot take
    (``descriptor`` false) runs the pointer kernel with UNALIGNED tiles."""
    if config.get("TMA") and not descriptor:
        return {**{k: v for k, v in config.items() if k != "TMA"}, **UNALIGNED}
    return config


def fp8_scaled_matmul(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor,
                      out: torch.Tensor | None = None, out_dtype: torch.dtype = torch.bfloat16,
                      config: dict | None = None) -> torch.Tensor:
    """C = (a * a_scale[:, None]) @ (b * b_scale[None, :]) for fp8 a (M x K), b (K x N); fp32 scales."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype or a.dtype not in FP8_MAX:
        raise ValueError(f"fp8_scaled_matmul takes fp8 (M, K) @ (K, N), got {tuple(a.shape)} {a.dtype} @ "
                         f"{tuple(b.shape)} {b.dtype}")
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=out_dtype, device=a.device) if out is None else out
    inputs.require_dense("fp8_scaled_matmul", "a_scale", a_scale)  # read at a_scale_ptr + row
    inputs.require_dense("fp8_scaled_matmul", "b_scale", b_scale)  # read at b_scale_ptr + column
    cfg = {**MATMUL_DEFAULTS["nvidia"], **(config or {})}
    if cfg.get("TMA") and descriptor_ok(a, b, c):
        descriptor_matmul(a, b, c, {k: v for k, v in cfg.items() if k != "TMA"}, a_scale, b_scale)
        return c
    cfg = launched_config(cfg, descriptor=False)
    grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    fp8_scaled_matmul_kernel[grid](a, b, c, a_scale, b_scale, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                   c.stride(0), c.stride(1), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                                   BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"],
                                   num_stages=cfg["num_stages"])
    return c


def quantize_rowwise_reference(x: torch.Tensor, fp8_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's own fp32 division and fp8 cast (round to nearest even), scale from torch.finfo."""
    x32 = x.float()
    amax = x32.abs().amax(dim=-1, keepdim=True)
    scale = torch.where(amax > 0, amax / torch.finfo(fp8_dtype).max, torch.ones_like(amax))
    return (x32 / scale).to(fp8_dtype), scale.squeeze(-1)


def _high_precision(layout: str) -> str:
    """The layout's high-precision dtype name; the Case default "contiguous" is bf16."""
    name = "bf16" if layout == "contiguous" else layout.split("_")[0]
    if name not in ("bf16", "fp16", "fp32"):
        raise ValueError(f"fp8: unknown layout {layout!r}")
    return name


def _quant_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    x64 = inputs.values((case.shape["M"], case.shape["K"]), case, inputs.generator(case))
    layout = "padded_rows" if case.layout.endswith("padded_rows") else "contiguous"
    x = inputs.place(x64, replace(case, dtype=_high_precision(case.layout)), device, layout)
    return {"x": x, "fp8": torch.empty(0, dtype=DTYPES[case.dtype], device=device)}


def _quant_reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    q, scale = quantize_rowwise_reference(inputs["x"].cpu(), inputs["fp8"].dtype)
    return {"q": q.double(), "scale": scale.double()}


# Elements of x the dequantization check takes at once (128 MiB per float64 tensor, five of them alive), on the device
# the kernel ran on. Checked whole on the host, the nightly's cases up to 8192 x 65536 took this property 94-113 s of
# a test: copies to the host and float64 arithmetic on a CPU that 16 workers of one GPU share.
CHECK_ELEMENTS = 1 << 24


def _check_dequantized(case: Case, device: str, run) -> str | None:
    """q * scale is within half an fp8 ulp of x (relative for normals, absolute at the subnormal step)
    and each row's largest |x| quantizes to +-fp8_max: the flavour's full range is used. In float64 on the device
    (IEEE arithmetic: the host's verdict, bit for bit), a block of rows at a time."""
    inputs = _quant_inputs(case, device)
    out = run(inputs)
    fp8 = DTYPES[case.dtype]
    info = torch.finfo(fp8)
    for block in row_chunks(*inputs["x"].shape, elements=CHECK_ELEMENTS):
        first = block.start
        x = inputs["x"][block].double()
        q, scale = out["q"][block].double(), out["scale"][block].double()[:, None]
        err = (q * scale - x).abs()
        bound = (info.eps / 2) * x.abs() * (1 + 2.0**-20) + scale * info.tiny * info.eps / 2
        beyond = err > bound
        if bool(beyond.any()):
            r, c = (int(i) for i in beyond.nonzero()[0])
            return (f"dequantized {(q[r, c] * scale[r, 0]).item()!r} vs x {x[r, c].item()!r} at {(first + r, c)}: "
                    f"beyond half an fp8 ulp")
        top = q.abs().gather(1, x.abs().argmax(dim=1, keepdim=True))
        short = (top != info.max) & (x.abs().amax(dim=1, keepdim=True) > 0)  # an all-zero row stays zero
        if bool(short.any()):
            row = int(short.nonzero()[0][0])
            return f"row {first + row}: largest |x| quantized to {top[row].item()!r}, not {case.dtype} max {info.max}"
    return None


def _quant_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    types = {"x_ptr": "*bf16", "q_ptr": f"*{dtype}", "scale_ptr": "*fp32",
             **{n: "i32" for n in ("K", "stride_xm", "stride_xk", "stride_qm", "stride_qk")}}
    # Rows of unit column stride: the launch specializes those strides to the constant 1.
    return signature(fp8_quant_rowwise_kernel, types, {"stride_xk": 1, "stride_qk": 1, "FP8_MAX": FP8_MAX[DTYPES[dtype]],
                                                       "BLOCK_K": meta.get("BLOCK_K", 1024)})

QUANT_SPEC = register(KernelSpec(
    name="fp8_quant_rowwise", strided_outputs=True,
    description="row-wise fp8 quantization of a bf16/fp16/fp32 matrix with a per-row fp32 scale (amax / fp8_max)",
    dims=(Dim("M", interpret_max=12, gpu_max=2048, nightly_max=8192, blocks=(1,)),
          Dim("K", interpret_max=300, gpu_max=16384, nightly_max=65536, blocks=(64, 1024))),
    dtypes=("fp8e4nv", "fp8e4b8"),
    layouts=("bf16", "fp16", "fp32", "bf16_padded_rows"),
    value_classes=("normal", "large", "negative"),
    make_inputs=_quant_inputs,
    outputs=("q", "scale"),
    make_outputs=lambda inp, case: {"q": torch.empty(inp["x"].shape, dtype=inp["fp8"].dtype, device=inp["x"].device),
                                    "scale": torch.empty(inp["x"].shape[0], dtype=torch.float32, device=inp["x"].device)},
    run=lambda inp, out, cfg: fp8_quant_rowwise(inp["x"], inp["fp8"].dtype, out, cfg),
    reference=_quant_reference,
    # Exact: the same IEEE fp32 division and round-to-nearest-even cast as torch's.
    tolerance=Tolerance(safety=0.0),
    flops=lambda case: 3.0 * case.shape["M"] * case.shape["K"],
    min_bytes=lambda case: case.shape["M"] * (case.shape["K"] * (DTYPES[_high_precision(case.layout)].itemsize + 1) + 4.0),
    torch_baseline=lambda inp: quantize_rowwise_reference(inp["x"], inp["fp8"].dtype),
    default_config={"nvidia": {"BLOCK_K": 1024, "num_warps": 4}, "amd": {"BLOCK_K": 1024, "num_warps": 4},
                    "interpret": {"BLOCK_K": 64, "num_warps": 4}},
    configs={f: tuple({"BLOCK_K": b, "num_warps": w} for b in (512, 1024, 2048) for w in (4, 8)) for f in ("nvidia", "amd")},
    paths=paths.block_loop("K", paths.meta("BLOCK_K", 1024)),
    benchmark_shapes=({"M": 8192, "K": 8192}, {"M": 16384, "K": 4096}),
    properties=(Property("dequantized_error", "q * scale within half an fp8 ulp of x; row amax maps to fp8 max",
                         _check_dequantized),),
    compile_signature=_quant_signature,
    batch_dim="M", batch_inputs=("x",), batch_outputs=("q", "scale"),
    jit_fn=fp8_quant_rowwise_kernel,
))


def _matmul_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    """fp8 operands quantized by the torch reference: A per row, B per column (rows of B^T)."""
    _high_precision(case.layout)
    gen = inputs.generator(case)
    m, n, k = case.shape["M"], case.shape["N"], case.shape["K"]
    fp8 = DTYPES[case.dtype]
    a_q, a_scale = quantize_rowwise_reference(inputs.values((m, k), case, gen), fp8)
    bt_q, b_scale = quantize_rowwise_reference(inputs.values((n, k), case, gen), fp8)
    b_q = bt_q.t().contiguous() if case.layout.endswith("b_rowmajor") else bt_q.to(device).t()
    # a_padded_rows: A's row stride is wider than K (NaN in the padding), so a launch that passes K for it reads
    # the wrong rows, and the padding.
    a = inputs.place(a_q, case, device, "padded_rows" if case.layout.endswith("a_padded_rows") else "contiguous")
    return {"a": a, "a_scale": a_scale.to(device), "b": b_q.to(device), "b_scale": b_scale.to(device)}


def _dequantized(inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    return (inputs["a"].double() * inputs["a_scale"].double()[:, None],
            inputs["b"].double() * inputs["b_scale"].double()[None, :])


# fp8 x fp8 products are exact in fp32, but Hopper's fp8 MMA sums them keeping about 13 bits: on an H100
# the error inside one BLOCK_K chunk reached 2.6e-4 of sum |a| |b| (K=128), far above fp32's sqrt(K) * 2^-24.
# Charged on every arch (a spec's tolerance does not know the arch), so it is loose where MMA sums in fp32.
FP8_MMA_ROUNDOFF = 2.0**-12


def _matmul_magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    a, b = _dequantized(inputs)
    k = max(a.shape[1], 1)
    # The rule scales the magnitude by sqrt(K) * u(fp32); the MMA term enters divided by it.
    return {"c": (a.abs() @ b.abs()) * (1.0 + FP8_MMA_ROUNDOFF / (k**0.5 * 2.0**-24))}


def _scaled_mm_baseline(inp: dict[str, torch.Tensor]) -> torch.Tensor:
    # torch._scaled_mm wants B column-major and row-wise scales with a bf16 output; the copy for an
    # N-major B is part of what the baseline pays.
    b = inp["b"] if inp["b"].stride(0) == 1 else inp["b"].t().contiguous().t()
    return torch._scaled_mm(inp["a"], b, scale_a=inp["a_scale"][:, None], scale_b=inp["b_scale"][None, :],
                            out_dtype=torch.bfloat16)


def _matmul_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    ints = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")
    types = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*bf16", "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32",
             **{n: "i32" for n in ints}}
    # A row-major and B K-major (the main layouts), C row-major: the launch specializes unit strides to the
    # constant 1, and so must we (without, every config compiles to a kernel that never runs, and spills).
    unit = {"stride_ak": 1, "stride_bk": 1, "stride_cn": 1}
    return signature(fp8_scaled_matmul_kernel, types, {**unit, **{k: meta[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K",
                                                                                      "GROUP_M")}})

def _descriptor_case(case: Case, cfg: dict) -> bool:
    """Whether the case's launch takes the descriptor kernel (see tiles.descriptor_ok): A is row-major; B is
    K-major except in the ``b_rowmajor`` layouts."""
    if not cfg.get("TMA"):
        return False
    n, k = case.shape["N"], case.shape["K"]
    b_lead = n if case.layout.endswith("b_rowmajor") else k
    a_lead = k + inputs.PADDED_ROWS if case.layout.endswith("a_padded_rows") else k
    return descriptor_path(True, a_lead, b_lead, n, 1, DTYPES[_high_precision(case.layout)].itemsize)


def _launched(case: Case, cfg: dict) -> dict:
    return launched_config(cfg, _descriptor_case(case, cfg))


DESCRIPTOR = descriptor_fields(_descriptor_case, "bf16", b_k_major=True, scaled=True)


MATMUL_SPEC = register(KernelSpec(
    name="fp8_scaled_matmul", strided_outputs=True,
    description="C = (Aq * sa) @ (Bq * sb): fp8 operands through tl.dot, fp32 accumulation, row/column scales, bf16/fp16 out",
    dims=(Dim("M", interpret_max=80, gpu_max=1024, nightly_max=4096, blocks=(32, 64, 128)),
          Dim("N", interpret_max=80, gpu_max=1024, nightly_max=4096, blocks=(32, 64, 128)),
          Dim("K", interpret_max=100, gpu_max=2048, nightly_max=8192, blocks=(32, 64, 128))),
    dtypes=("fp8e4nv", "fp8e4b8"),
    layouts=("bf16", "fp16", "bf16_b_rowmajor", "bf16_a_padded_rows"),
    value_classes=("normal",),
    make_inputs=_matmul_inputs,
    outputs=("c",),
    make_outputs=lambda inp, case: {"c": torch.empty((inp["a"].shape[0], inp["b"].shape[1]), device=inp["a"].device,
                                                     dtype=DTYPES[_high_precision(case.layout)])},
    run=lambda inp, out, cfg: fp8_scaled_matmul(inp["a"], inp["a_scale"], inp["b"], inp["b_scale"], out["c"],
                                                out["c"].dtype, cfg),
    reference=lambda inp, case: {"c": _dequantized(inp)[0] @ _dequantized(inp)[1]},
    tolerance=Tolerance(reduction=lambda case: case.shape["K"], magnitude=_matmul_magnitude, uses_dot=True),
    flops=lambda case: 2.0 * case.shape["M"] * case.shape["N"] * case.shape["K"],
    min_bytes=lambda case: (case.shape["M"] * case.shape["K"] + case.shape["K"] * case.shape["N"]
                            + 4.0 * (case.shape["M"] + case.shape["N"])
                            + case.shape["M"] * case.shape["N"] * DTYPES[_high_precision(case.layout)].itemsize),
    torch_baseline=_scaled_mm_baseline,
    default_config=MATMUL_DEFAULTS,
    # The tiles the launch runs (GROUP_M is 8 in every config and in UNALIGNED).
    paths=(*paths.grouped_grid("M", lambda case, cfg: int(_launched(case, cfg).get("BLOCK_M", 128))),
           *paths.block_loop("K", lambda case, cfg: int(_launched(case, cfg).get("BLOCK_K", 128))),
           DESCRIPTOR["path"]),
    configs={
        # TMA: the persistent descriptor kernel (tiles.matmul_descriptor_kernel); BLOCK_K 256 still promotes the
        # fp8 products to the fp32 accumulator every 128.
        "nvidia": (*({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s}
                     for bm, bn, bk, w, s in ((128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (128, 128, 64, 4, 4),
                                              (64, 128, 128, 4, 4))),
                   UNALIGNED,  # what TMA configs run on operands TMA cannot take: compiled and checked with the rest
                   *({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s, "TMA": 1}
                     for bm, bn, bk, w, s in ((128, 128, 128, 8, 4), (128, 128, 256, 8, 3), (128, 128, 128, 8, 3),
                                              (64, 128, 128, 4, 4)))),
        "amd": tuple({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s}
                     for bm, bn, bk, w, s in ((128, 128, 64, 8, 2), (256, 256, 64, 8, 2), (128, 128, 128, 4, 2))),
    },
    benchmark_shapes=({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192}),
    compile_signature=_matmul_signature,
    jit_fns=DESCRIPTOR["jit_fns"], jit_fn_used=DESCRIPTOR["jit_fn_used"],
    batch_dim="M", batch_inputs=("a", "a_scale"), batch_outputs=("c",),
    jit_fn=fp8_scaled_matmul_kernel,
))
