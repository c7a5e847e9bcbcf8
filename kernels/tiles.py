"""Shared pieces of the kernels that tile the same way: helpers, never whole kernels.

- ``grouped_tile``: the grouped (L2-friendly) tile order of the matmul kernels, one ``@triton.jit`` helper that
  ``matmul`` and ``fp8_scaled_matmul`` call, so a fix to the order reaches both.
- ``rows_launch`` and ``rows_spec_fields``: the [M, N] tiling of the row-strided elementwise kernels (``gelu``,
  ``swiglu``): the launch grid from a config, and the spec fields that describe that tiling (dimensions, configs,
  the code paths it has), so the two specs cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from kernels import paths
from kernels.spec import Dim, next_power_of_2, split_config


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


# (BLOCK_M, BLOCK_N) tiles the GPU config spaces of the row-strided elementwise kernels try, each with 4 and 8 warps.
ROW_TILES = ((1, 1024), (2, 1024), (4, 1024), (4, 512), (8, 512), (1, 4096))


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
    gpu_space = tuple({"BLOCK_M": m, "BLOCK_N": n, "num_warps": w} for m, n in ROW_TILES for w in (4, 8))
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
