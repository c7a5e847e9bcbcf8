"""Tiled matmul with grouped program ordering for L2 reuse and fp32 accumulation."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels._tiles import descriptor_fields, descriptor_matmul, descriptor_ok, descriptor_path, grouped_tile
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, amd_options, signature


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
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
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


DEFAULTS = {
    "nvidia": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    "amd": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 2},
    "interpret": {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4, "num_warps": 4, "num_stages": 1},
}


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, config: dict | None = None) -> torch.Tensor:
    """C = A @ B for 2-D A (M x K) and B (K x N) of any strides; C has A's dtype."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul takes (M, K) @ (K, N), got {tuple(a.shape)} @ {tuple(b.shape)}")
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device) if out is None else out
    cfg = {**DEFAULTS["nvidia"], **(config or {})}
    if cfg.pop("TMA", 0) and descriptor_ok(a, b, c):
        descriptor_matmul(a, b, c, cfg)
        return c
    grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], **amd_options(cfg))
    return c


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, n, k = case.shape["M"], case.shape["N"], case.shape["K"]
    a_layout = "transposed" if case.layout in ("transposed_a", "transposed_ab") else "contiguous"
    b_layout = "transposed" if case.layout in ("transposed_b", "transposed_ab") else "contiguous"
    return {"a": inputs.place(inputs.values((m, k), case, gen), case, device, a_layout),
            "b": inputs.place(inputs.values((k, n), case, gen), case, device, b_layout)}


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"c": inputs["a"].double().abs() @ inputs["b"].double().abs()}


def _descriptor_case(case: Case, cfg: dict) -> bool:
    """Whether the case's launch takes the descriptor kernel (see tiles.descriptor_ok)."""
    if not cfg.get("TMA"):
        return False
    n, k, size = case.shape["N"], case.shape["K"], DTYPES[case.dtype].itemsize
    b_rows = case.layout in ("contiguous", "transposed_a")
    return descriptor_path(case.layout in ("contiguous", "transposed_b"), k, n if b_rows else k, n, size)


DESCRIPTOR = descriptor_fields(_descriptor_case, None, b_k_major=False, scaled=False)


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    ints = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    types = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}", **{n: "i32" for n in ints}}
    # Row-major operands: the launch specializes unit strides to the constant 1, and so must we.
    unit = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
    return signature(matmul_kernel, types, {**unit, **{k: meta[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}})

SPEC = register(KernelSpec(
    name="matmul",
    description="C = A @ B, tiled, grouped ordering, fp32 accumulation, any M/N/K and strides",
    dims=(Dim("M", interpret_max=80, gpu_max=1024, nightly_max=4096, blocks=(32, 64, 128)),
          Dim("N", interpret_max=80, gpu_max=1024, nightly_max=4096, blocks=(32, 64, 128)),
          Dim("K", interpret_max=100, gpu_max=2048, nightly_max=8192, blocks=(32, 64))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "transposed_a", "transposed_b", "transposed_ab"),
    value_classes=("normal", "special"),
    make_inputs=_make_inputs,
    outputs=("c",),
    make_outputs=lambda inp, case: {"c": torch.empty((inp["a"].shape[0], inp["b"].shape[1]), dtype=inp["a"].dtype,
                                                     device=inp["a"].device)},
    run=lambda inp, out, cfg: matmul(inp["a"], inp["b"], out["c"], cfg),
    reference=lambda inp, case: {"c": inp["a"].double() @ inp["b"].double()},
    tolerance=Tolerance(reduction=lambda case: case.shape["K"], magnitude=_magnitude, uses_dot=True),
    flops=lambda case: 2.0 * case.shape["M"] * case.shape["N"] * case.shape["K"],
    min_bytes=lambda case: (case.shape["M"] * case.shape["K"] + case.shape["K"] * case.shape["N"]
                            + case.shape["M"] * case.shape["N"]) * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.matmul(inp["a"], inp["b"]),
    default_config=DEFAULTS,
    configs={
        # Small tiles and groups, so that the interpreter's small shapes span several groups and K steps.
        "interpret": (*({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": 4, "num_stages": 1}
                        for bm, bn, bk, g in ((16, 16, 16, 2), (16, 32, 8, 3), (32, 16, 16, 1))),
                      {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2, "num_warps": 4, "num_stages": 1, "TMA": 1}),
        # TMA: the persistent descriptor kernel (tiles.matmul_descriptor_kernel), TMA loads on sm_90 and later.
        "nvidia": (*({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s}
                     for bm, bn, bk, w, s in ((128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (64, 128, 32, 4, 4),
                                              (128, 128, 32, 4, 4), (256, 128, 64, 8, 3), (128, 256, 64, 8, 4),
                                              (256, 128, 64, 8, 4), (128, 128, 64, 4, 4), (256, 128, 32, 8, 4))),
                   *({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": w, "num_stages": s, "TMA": 1}
                     for bm, bn, bk, g, w, s in ((128, 256, 64, 8, 8, 3), (128, 256, 64, 4, 8, 3), (128, 128, 64, 8, 8, 4),
                                                 (256, 128, 64, 8, 8, 3), (64, 128, 64, 8, 4, 4)))),
        # AMD: waves_per_eu (occupancy hint), matrix_instr_nonkdim (16x16 or 32x32 MFMA), kpack (k-packing).
        "amd": tuple({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s,
                      "waves_per_eu": we, "matrix_instr_nonkdim": nk, "kpack": kp}
                     for bm, bn, bk, w, s, we, nk, kp in ((128, 128, 64, 8, 2, 0, 16, 1), (256, 256, 32, 8, 2, 2, 16, 2),
                                                          (128, 128, 32, 4, 2, 2, 32, 1), (64, 128, 64, 4, 1, 0, 16, 2))),
    },
    benchmark_shapes=({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192}),
    paths=(*paths.grouped_grid("M", paths.meta("BLOCK_M", 128)), *paths.block_loop("K", paths.meta("BLOCK_K", 64)),
           paths.block_loop("M", paths.meta("BLOCK_M", 128))[1], paths.block_loop("N", paths.meta("BLOCK_N", 128))[1],
           DESCRIPTOR["path"]),
    compile_signature=_signature,
    jit_fns=DESCRIPTOR["jit_fns"], jit_fn_used=DESCRIPTOR["jit_fn_used"],
    batch_dim="M", batch_inputs=("a",), batch_outputs=("c",), strided_outputs=True,
    jit_fn=matmul_kernel,
))
