"""The TMA configs of matmul and fp8_scaled_matmul (tiles.matmul_descriptor_kernel), checked offline.

When no drawn case takes a declared code path, the suite searches for a case and config that do and runs them: a
path the spec declares reachable must be reachable with a config that fits the GPU. So every TMA config must
compile and fit sm_90 (the arch with TMA) at every dtype whose cases the spec says take the descriptor path. On an
H100 the fp32 matmul path was reached with a config whose fp32 tiles needed 426 KB of shared memory; this test
compiles what that run launched, with no GPU.
"""

from __future__ import annotations

import pytest

import hardware_profiles
from kernels import fp8, matmul
from kernels.spec import Case
from suite import compile_matrix as cm

SM90 = ("cuda", "sm_90", 32)
# Shapes whose every leading dimension is a multiple of 16 bytes at any dtype: the descriptor's own alignment rule
# holds, so the path is decided by the config and the dtype alone.
ALIGNED = {"M": 64, "N": 64, "K": 64}


def _descriptor_path(spec):
    return next(p for p in spec.paths if p.name == "descriptor")


@pytest.mark.parametrize("spec", [matmul.SPEC, fp8.MATMUL_SPEC], ids=lambda s: s.name)
def test_every_tma_config_fits_sm90_where_the_descriptor_path_is_declared(spec):
    path = _descriptor_path(spec)
    tma = [dict(c) for c in spec.configs["nvidia"] if c.get("TMA")]
    assert tma, f"{spec.name}: no TMA config in the nvidia family"
    checked = []
    profile = hardware_profiles.representative(SM90[1])
    for dtype in (d for d in spec.dtypes if profile.supports(d)):
        case = Case(spec.name, dtype, dict(ALIGNED), spec.layouts[0], "normal", 0)
        for cfg in tma:
            if not path.taken(case, cfg):
                continue
            records = cm.compile_all(spec, dtype, cfg, SM90)
            descriptor = [r for r in records if r["function"] == "matmul_descriptor_kernel"]
            assert descriptor and descriptor[0]["status"] != "skipped", (dtype, cfg, records)
            failed = [r for r in records if r["status"] == "failed"]
            assert not failed, (f"{spec.name}[{dtype}] config {cfg}: the descriptor path is declared taken, but "
                                f"{failed[0]['function']} does not fit sm_90: {failed[0]['error']}")
            checked.append((dtype, cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]))
    assert checked, f"{spec.name}: no dtype takes the descriptor path with any TMA config"


def test_fp32_operands_stay_on_the_pointer_kernel():
    """fp32 tiles of the TMA configs do not fit, so fp32 never takes the descriptor path, on paper or at launch."""
    import torch

    from kernels.tiles import descriptor_ok

    path = _descriptor_path(matmul.SPEC)
    case = Case("matmul", "fp32", dict(ALIGNED), "contiguous", "normal", 0)
    assert not any(path.taken(case, c) for c in matmul.SPEC.configs["nvidia"] if c.get("TMA"))
    a, b, c = (torch.empty(64, 64, dtype=torch.float32) for _ in range(3))
    assert not descriptor_ok(a, b, c)
    assert descriptor_ok(a.half(), b.half(), c.half())
