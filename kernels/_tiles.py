"""Shared pieces of the kernels that tile the same way: helpers, never whole kernels.

- ``grouped_tile``: the grouped (L2-friendly) tile order of the matmul kernels, one ``@triton.jit`` helper that
  ``matmul`` and ``fp8_scaled_matmul`` call, so a fix to the order reaches both.
- ``matmul_descriptor_kernel`` and ``descriptor_matmul``: the persistent tensor-descriptor matmul both matmul
  kernels offer as a config choice (``"TMA": 1``): on sm_90 and later the operands move by TMA; elsewhere
  (sm_80, every AMD target, the interpreter) Triton rewrites the descriptors into pointer loads, so the
  same kernel compiles for every target. Operands that do not meet TMA's alignment rules take the pointer
  kernel instead.
- ``rows_launch`` and ``rows_spec_fields``: the [M, N] tiling of the row-strided elementwise kernels (``gelu``,
  ``swiglu``): the launch grid from a config, and the spec fields that describe that tiling (dimensions, configs,
  the code paths it has), so the two specs cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from kernels import paths
from kernels.spec import DTYPES, CodePath, Dim, JitKernel, next_power_of_2, signature, split_config


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(row-block, column-block) of program ``pid``: GROUP_M row-blocks share each column-block of B while it is
    in L2, the grouped order of Triton's matmul tutorial. The last group may hold fewer row-blocks."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_descriptor_kernel(a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, M, N, K, stride_am, stride_b, stride_cm,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, B_K_MAJOR: tl.constexpr, SCALED: tl.constexpr):
    """C = A @ B (SCALED: times a_scale[:, None] * b_scale[None, :], fp8 products promoted to the fp32
    accumulator every BLOCK_K, at most 128); A row-major, B row-major or (B_K_MAJOR) column-major; fp32
    accumulation. Persistent: each program walks the tiles in grouped order, a grid's width apart. Edges
    need no masks: a descriptor load past the tensor reads zeros and a store past it is dropped."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_K_MAJOR:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_b, 1], block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_b, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0), flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([off_m, k * BLOCK_K])
            if B_K_MAJOR:
                b = b_desc.load([off_n, k * BLOCK_K]).T
            else:
                b = b_desc.load([k * BLOCK_K, off_n])
            if SCALED:
                acc = tl.dot(a, b, acc, max_num_imprecise_acc=min(BLOCK_K, 128))
            else:
                acc = tl.dot(a, b, acc)
        if SCALED:
            rows = off_m + tl.arange(0, BLOCK_M)
            cols = off_n + tl.arange(0, BLOCK_N)
            acc = (acc * tl.load(a_scale_ptr + rows, mask=rows < M, other=0.0)[:, None]
                   * tl.load(b_scale_ptr + cols, mask=cols < N, other=0.0)[None, :])
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


# 8- and 16-bit operands only: the TMA configs' fp32 tiles, with the epilogue's, overflow sm_90's shared memory.
DESCRIPTOR_MAX_ITEMSIZE = 2


def _descriptor_dtype(dtype: str) -> bool:
    return DTYPES[dtype].itemsize <= DESCRIPTOR_MAX_ITEMSIZE


def descriptor_applies(dtype: str, family: str) -> bool:
    """CodePath.applies of the descriptor path: a dtype it takes, on the families whose configs carry TMA ones."""
    return family in ("nvidia", "interpret") and _descriptor_dtype(dtype)


def descriptor_launched(dtype: str, config: Mapping[str, Any]) -> bool:
    """JitKernel.used of the descriptor kernel: a TMA config at a dtype that takes it."""
    return bool(config.get("TMA")) and _descriptor_dtype(dtype)


def _b_k_major(b: torch.Tensor) -> bool:
    return b.stride(1) != 1


def descriptor_ok(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> bool:
    """Whether A, B and C take the descriptor kernel: 8- or 16-bit operands, and TMA's rules: A and C row-major, B
    row- or column-major, every base address and leading stride a multiple of 16 bytes, no leading stride 0 (a
    broadcast operand runs the pointer kernel); and C's rows a multiple of 16 bytes wide: on an H200 a descriptor
    store into rows of fewer (N=1 bf16, rows 16 bytes apart) wrote the rest of each 16 bytes, between the rows of a
    strided C (evidence/reach/h200-final/). A contiguous C's rows are its leading stride, so this changes nothing
    there."""
    def aligned(t: torch.Tensor, leading: int) -> bool:
        return t.data_ptr() % 16 == 0 and leading > 0 and (leading * t.element_size()) % 16 == 0
    k_major = _b_k_major(b)
    return (a.element_size() <= DESCRIPTOR_MAX_ITEMSIZE and a.stride(1) == 1 and c.stride(1) == 1
            and (not k_major or b.stride(0) == 1) and aligned(a, a.stride(0)) and aligned(c, c.stride(0))
            and (c.shape[1] * c.element_size()) % 16 == 0
            and aligned(b, b.stride(1) if k_major else b.stride(0)))


def descriptor_matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, config: dict,
                      a_scale: torch.Tensor | None = None, b_scale: torch.Tensor | None = None) -> None:
    """Launch matmul_descriptor_kernel over one program per SM/CU (at most one per tile)."""
    meta, options = split_config(config)
    m, k = a.shape
    n = b.shape[1]
    b_k_major = _b_k_major(b)
    # Where each program builds its descriptors on the device (128 bytes a program on sm_90).
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=a.device))
    tiles = triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"])
    units = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 4
    scaled = a_scale is not None
    matmul_descriptor_kernel[(max(1, min(units, tiles)),)](
        a, b, c, a_scale if scaled else c, b_scale if scaled else c, m, n, k, a.stride(0),
        b.stride(1) if b_k_major else b.stride(0), c.stride(0), BLOCK_M=meta["BLOCK_M"], BLOCK_N=meta["BLOCK_N"],
        BLOCK_K=meta["BLOCK_K"], GROUP_M=meta.get("GROUP_M", 8), B_K_MAJOR=b_k_major, SCALED=scaled, **options)


def descriptor_fields(taken: Any, out_dtype: str | None, b_k_major: bool, scaled: bool) -> dict[str, Any]:
    """The KernelSpec fields of a matmul spec that offers the descriptor kernel as its TMA configs: the ``descriptor``
    code path (``taken(case, config)`` mirrors the launcher's descriptor_ok), the kernel for the compile matrix (C of
    ``out_dtype``, None: the case dtype; one B orientation), and which dtypes and configs run the pointer kernel
    (``jit_fn``) instead: at fp32, and on operands TMA cannot take (misaligned, transposed A), which the matrix checks
    at fp32 only."""
    def make(dtype: str, meta: dict) -> tuple[dict, dict]:
        types = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{out_dtype or dtype}", "a_scale_ptr": "*fp32",
                 "b_scale_ptr": "*fp32", **{n: "i32" for n in ("M", "N", "K", "stride_am", "stride_b", "stride_cm")}}
        return signature(matmul_descriptor_kernel, types, {**{k: meta[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")},
                                                           "GROUP_M": meta.get("GROUP_M", 8), "B_K_MAJOR": b_k_major,
                                                           "SCALED": scaled})
    return {"path": CodePath("descriptor", "a TMA config on operands that meet TMA's alignment: the persistent "
                                           "descriptor kernel", taken, applies=descriptor_applies),
            "jit_fns": (JitKernel(matmul_descriptor_kernel, make, used=descriptor_launched),),
            "jit_fn_used": lambda dtype, config: not descriptor_launched(dtype, config)}


def descriptor_path(a_rows: bool, a_lead: int, b_lead: int, c_lead: int, itemsize: int,
                    out_itemsize: int | None = None) -> bool:
    """descriptor_ok on paper, for a case's freshly allocated (so aligned) operands: 8- or 16-bit operands, A
    row-major, and the leading dimension (in elements) of A, B and C each a multiple of 16 bytes."""
    return (itemsize <= DESCRIPTOR_MAX_ITEMSIZE and a_rows and (a_lead * itemsize) % 16 == 0 and (b_lead * itemsize) % 16 == 0
            and (c_lead * (out_itemsize or itemsize)) % 16 == 0)


# (BLOCK_M, BLOCK_N) tiles the GPU config spaces of the row-strided elementwise kernels try, each with 4 and 8 warps;
# the widest also with 16 (a program per 8-16 K elements of a wide row streams at the copy's rate).
ROW_TILES = ((1, 1024), (2, 1024), (4, 1024), (4, 512), (8, 512), (1, 4096), (1, 8192), (1, 16384))
WIDE_TILES = ((1, 8192), (1, 16384))


def rows_launch(n_rows: int, n_cols: int, config: dict | None) -> tuple[tuple[int, int], dict[str, Any]]:
    """(grid, launch keywords) of a [n_rows, n_cols] elementwise kernel tiled BLOCK_M x BLOCK_N; BLOCK_N is cut to
    the row's length rounded up to a power of two, and num_warps defaults to 4."""
    meta, options = split_config(config or {})
    block_m, block_n = meta.get("BLOCK_M", 4), min(meta.get("BLOCK_N", 1024), triton.next_power_of_2(n_cols))
    options.setdefault("num_warps", 4)
    grid = (triton.cdiv(n_rows, block_m), triton.cdiv(n_cols, block_n))
    return grid, {"BLOCK_M": block_m, "BLOCK_N": block_n, **options}


def rows_spec_fields() -> dict[str, Any]:
    """The KernelSpec fields of an elementwise kernel launched by ``rows_launch``."""
    gpu_space = (*({"BLOCK_M": m, "BLOCK_N": n, "num_warps": w} for m, n in ROW_TILES for w in (4, 8)),
                 *({"BLOCK_M": m, "BLOCK_N": n, "num_warps": 16} for m, n in WIDE_TILES))
    return {
        "dims": (Dim("M", interpret_max=40, gpu_max=4096, nightly_max=16384, blocks=(4,)),
                 Dim("N", interpret_max=300, gpu_max=8192, nightly_max=16384, blocks=(64, 1024))),
        "default_config": {"nvidia": {"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4},
                           "amd": {"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4},
                           "interpret": {"BLOCK_M": 4, "BLOCK_N": 64}},
        "paths": (*paths.block_loop("N", lambda case, cfg: min(int(cfg.get("BLOCK_N", 1024)),
                                                                next_power_of_2(case.shape["N"]))),
                  paths.block_loop("M", paths.meta("BLOCK_M", 4))[1]),
        "configs": {"interpret": tuple({"BLOCK_M": m, "BLOCK_N": n} for m, n in ((1, 32), (2, 64), (8, 16))),
                    "nvidia": gpu_space, "amd": gpu_space},
    }
