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
from suite.tools import compile_matrix as cm

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

    from kernels._tiles import descriptor_ok

    path = _descriptor_path(matmul.SPEC)
    case = Case("matmul", "fp32", dict(ALIGNED), "contiguous", "normal", 0)
    assert not any(path.taken(case, c) for c in matmul.SPEC.configs["nvidia"] if c.get("TMA"))
    a, b, c = (torch.empty(64, 64, dtype=torch.float32) for _ in range(3))
    assert not descriptor_ok(a, b, c)
    assert descriptor_ok(a.half(), b.half(), c.half())


def test_the_descriptor_path_is_declared_only_where_it_exists():
    """CodePath.applies: fp32 matmul and every AMD dtype have no descriptor path (no TMA config takes them), so a run
    there neither counts it nor searches for a case that takes it (the search would fail: no case can)."""
    from suite.checks.reach import Coverage

    def declared(spec, dtype, family):
        return "descriptor" in {p.name for p in Coverage(spec, dtype, family).declared}

    assert declared(matmul.SPEC, "fp16", "nvidia") and declared(matmul.SPEC, "bf16", "interpret")
    assert not declared(matmul.SPEC, "fp32", "nvidia") and not declared(matmul.SPEC, "fp32", "interpret")
    assert not declared(matmul.SPEC, "fp16", "amd") and not declared(fp8.MATMUL_SPEC, "fp8e4b8", "amd")
    assert declared(fp8.MATMUL_SPEC, "fp8e4nv", "nvidia")
    # Every family whose config space holds a TMA config declares the path for some dtype, and no other does.
    for spec in (matmul.SPEC, fp8.MATMUL_SPEC):
        for family, configs in spec.configs.items():
            has_tma = any(c.get("TMA") for c in configs)
            assert has_tma == any(declared(spec, d, family) for d in spec.dtypes), (spec.name, family)


def test_compile_matrix_compiles_each_function_where_it_is_launched():
    """JitKernel.used: at fp32 a TMA config launches the pointer kernel (compiled), not the descriptor kernel (not
    compiled, so its fp32 tiles cannot prune the config); at fp16 the other way round. (Whether the tile then fits
    is the record's verdict: at fp32 most TMA tiles overflow sm_90 in the pointer kernel too.)"""
    tma = next(dict(c) for c in matmul.SPEC.configs["nvidia"] if c.get("TMA"))
    for dtype, launched in (("fp32", "matmul_kernel"), ("fp16", "matmul_descriptor_kernel")):
        records = {r["function"]: r for r in cm.compile_all(matmul.SPEC, dtype, tma, SM90)}
        assert records[launched]["status"] in ("ok", "failed"), (dtype, records[launched])
        other = ({"matmul_kernel", "matmul_descriptor_kernel"} - {launched}).pop()
        assert records[other]["status"] == "skipped" and records[other]["error"] == "not launched with this config"


def test_fp8_tma_configs_on_unaligned_operands_run_the_unaligned_tiles():
    """K = 200: A's rows are not a multiple of 16 bytes, so a TMA config runs the pointer kernel, with UNALIGNED's
    tiles (a TMA config's spilled and took ptxas 5-7 s), and the code paths are read from those tiles: the K loop
    runs twice with BLOCK_K 128 (once with the TMA config's 256). On aligned operands the TMA config's own tiles run
    the descriptor kernel."""
    import test_launch_signature as launches_of

    spec = fp8.MATMUL_SPEC
    tma = next(dict(c) for c in spec.configs["nvidia"] if c.get("TMA") and c["BLOCK_K"] == 256)
    unaligned = Case(spec.name, "fp8e4nv", {"M": 300, "N": 274, "K": 200}, layout="bf16")
    (fn, args), = launches_of.launches(spec, unaligned, tma)
    assert fn is fp8.fp8_scaled_matmul_kernel
    launched = {k: args.get(k) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    assert launched == {k: fp8.UNALIGNED[k] for k in launched}, launched
    k_loop = next(p for p in spec.paths if p.name == "k_loop")
    assert k_loop.taken(unaligned, tma)
    aligned = Case(spec.name, "fp8e4nv", {"M": 256, "N": 256, "K": 512}, layout="bf16")
    (fn, args), = launches_of.launches(spec, aligned, tma)
    assert fn is not fp8.fp8_scaled_matmul_kernel and args["BLOCK_K"] == 256
    aligned_once = Case(spec.name, "fp8e4nv", {"M": 256, "N": 256, "K": 208}, layout="bf16")
    assert not k_loop.taken(aligned_once, tma)  # 208 <= 256 on the descriptor kernel: one pass
