"""``--numerics=PROFILE`` beyond tl.dot: tl.fma fused as the target's instruction, tl.sum in the target's order.

The planted cases are tests/fixtures/numerics_elementwise.py's: ``two_product`` (right only with a fused fma),
``fma_cancel`` (right only with two roundings), ``exact_int_sum`` (right in NVIDIA's reduction order, wrong in a
64-lane AMD wavefront's). The model's pieces are held to exact arithmetic, to a literal simulation of the DPP
instructions gfx942's code runs, and to the layouts and shuffle sequences Triton 3.6.0 compiles on the CPU.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from suite.checks import interpreter_bf16, numerics, numerics_reduce
from tests.conftest import SuiteRun, start_suite_run

FIXTURE = "--kernel-module=tests/fixtures/numerics_elementwise.py"
KERNELS = ("two_product", "fma_cancel", "exact_int_sum")


def _suite(tmp_path_factory, profile: str | None) -> SuiteRun:
    flags = (f"--numerics={profile}",) if profile else ()
    return start_suite_run("suite/test_kernels.py", FIXTURE, f"--kernels={','.join(KERNELS)}", "-n", "0", *flags,
                           results_dir=tmp_path_factory.mktemp(profile or "plain") / "runs",
                           env={"SUITE_SHRINK_SECONDS": "3"})


def _outcomes(run: SuiteRun) -> dict[str, str]:
    data = run.run_data()
    seen: dict[str, set[str]] = {}
    for t in data["tests"]:
        seen.setdefault(t["nodeid"].split("[")[1].rsplit("-", 1)[0], set()).add(t["outcome"])
    return {k: "failed" if "failed" in v else "passed" for k, v in seen.items()}


def _message(run: SuiteRun, kernel: str) -> str:
    return next(c["message"] for c in run.run_data()["cases"] if c["kernel"] == kernel and c["outcome"] == "failed")


@pytest.mark.parametrize("profile, want", [
    (None, {"two_product": "failed", "fma_cancel": "passed", "exact_int_sum": "passed"}),
    ("h100_sxm", {"two_product": "passed", "fma_cancel": "failed", "exact_int_sum": "passed"}),
    ("mi300x", {"two_product": "passed", "fma_cancel": "failed", "exact_int_sum": "failed"}),
])
def test_the_planted_kernels_fail_where_the_model_says(tmp_path_factory, profile, want):
    run = _suite(tmp_path_factory, profile)
    assert _outcomes(run) == want, run.output[-3000:]
    numerics_record = run.run_data()["environment"].get("numerics")
    if profile is None:
        assert numerics_record is None
        return
    assert numerics_record["parts"] == ["dot", "fma", "reduce order", "envelopes", "fp8 conversion"]
    assert any(m.startswith("tl.fma fp32: ") for m in numerics_record["modelled"])
    vendor_fma = "fma.rn.f32" if profile == "h100_sxm" else "v_fmac_f32"
    assert f"the case ran tl.fma fp32 fused ({vendor_fma}, one rounding)" in _message(run, "fma_cancel")
    if profile == "mi300x":
        assert "the case ran tl.sum fp32 in gfx942's order (64 lanes a warp, 1 warp)" in _message(run, "exact_int_sum")
        from reports import schema_check

        schema = json.loads(open("reports/schema/run.schema.json").read())
        assert not list(schema_check.problems(run.run_data(), schema))
        bad = run.run_data()
        bad["environment"]["numerics"]["parts"] = ["dot", "fma", "tl.sum"]
        assert list(schema_check.problems(bad, schema))


def _exact(a: float, b: float, c: float, round_to: type) -> float:
    """a * b + c rounded once to nearest even in ``round_to`` (np.float32 or np.float16), decided exactly."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    near = round_to(float(exact))
    cands = {near, np.nextafter(near, round_to(np.inf)), np.nextafter(near, round_to(-np.inf))}
    bits = np.uint32 if round_to is np.float32 else np.uint16
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(bits)) & 1))


def _ties(dtype, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Operands where two roundings and one differ: products on (or next to) a tie, nudged by a tiny addend."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    c = (a.astype(np.float64) * b * rng.choice([1e-9, -1e-9, 1e-3, 1.0], n)).astype(dtype)
    half = np.finfo(dtype).nmant // 2 + 1
    a[:4] = b[:4] = dtype(1 + 2.0**-half)  # (1 + 2**-h)**2 = 1 + 2**(1-h) + 2**-2h: a tie below
    c[:4] = dtype(2.0**-40) * np.array([1, -1, 2**8, -(2**8)], dtype)
    return a, b, c


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fma_rounds_once_in_its_type(dtype):
    a, b, c = _ties(dtype, 300, 5)
    name = "fp32" if dtype is np.float32 else "fp16"
    for vendor in ("nvidia", "amd"):
        got = numerics.fma_fused(a, b, c, name, vendor)
        want = np.array([_exact(float(x), float(y), float(z), dtype) for x, y, z in zip(a, b, c, strict=True)],
                        dtype=dtype)
        assert got.dtype == dtype and np.array_equal(got, want)
    with np.errstate(all="ignore"):
        twice = a * b + c  # the plain interpreter's: differs at the planted ties
    assert not np.array_equal(twice, want)


def test_bf16_fma_rounds_once_on_nvidia_and_twice_on_amd():
    rng = np.random.default_rng(7)
    n = 4000
    x, y, z = (interpreter_bf16.narrow(rng.standard_normal(n).astype(np.float32) * s) for s in (1, 1, 2.0**-20))
    x[:2] = y[:2] = interpreter_bf16.narrow(np.float32(1 + 2**-4))  # the product 1 + 2**-3 + 2**-8: a bf16 tie
    z[:2] = interpreter_bf16.narrow(np.array([2.0**-40, -(2.0**-40)], np.float32))  # moved off it, not in fp32
    fx, fy, fz = (interpreter_bf16.widen(v).astype(np.float64) for v in (x, y, z))
    nvidia = numerics.fma_fused(x, y, z, "bf16", "nvidia")
    amd = numerics.fma_fused(x, y, z, "bf16", "amd")
    once = np.array([interpreter_bf16.narrow(np.float64(_exact_value(p, q, r)))
                     for p, q, r in zip(fx, fy, fz, strict=True)], dtype=np.uint16)
    twice = interpreter_bf16.round_fp32(np.array([_exact(p, q, r, np.float32) for p, q, r in zip(fx, fy, fz,
                                                                                               strict=True)]))
    assert np.array_equal(nvidia, once) and np.array_equal(amd, twice)
    assert nvidia[0] != amd[0] and nvidia[1] == amd[1]  # fp32 rounds onto the tie, then bf16 rounds it to even
    assert 2 < int((nvidia != amd).sum()) < n // 20  # the two vendors differ, rarely (bf16 ties fp32 rounded onto)


def _exact_value(a: float, b: float, c: float) -> float:
    """a * b + c for bf16 operands: exact in fp64 unless the terms lie 37 bits apart, then rounded to odd there."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    near = float(exact)
    if Fraction(near) != exact and int(np.array(near).view(np.int64)) % 2 == 0:
        near = float(np.nextafter(near, np.inf if Fraction(near) < exact else -np.inf))
    return near


# --- the reduction order --------------------------------------------------------------------------------------------


def _dpp_wavefront(v: np.ndarray) -> np.float32:
    """gfx942's full-wavefront sum as its code runs it (Triton 3.6.0's AMDGCN): v_add_f32_dpp row_shr:8, 4, 2, 1 with
    bound_ctrl (a lane reading before its row's start reads 0); v_mov_b32_dpp row_bcast:15 row_mask:0xa into a copy
    (rows 1 and 3 get the previous row's lane 15, rows 0 and 2 keep their own), added; v_add_f32_dpp row_bcast:31
    (rows 2 and 3 get lane 31, rows 0 and 1 read 0); v_readlane 63."""
    v = v.astype(np.float32).copy()
    lane = np.arange(64)
    for shift in (8, 4, 2, 1):
        src = np.where(lane % 16 >= shift, v[np.maximum(lane - shift, 0)], np.float32(0))
        v = src + v
    copy = np.where((lane // 16) % 2 == 1, v[(lane // 16 - 1).clip(0) * 16 + 15], v)
    v = copy + v
    v = np.where(lane >= 32, v[31], np.float32(0)) + v
    return v[63]


def test_the_amd_wavefront_order_is_the_dpp_sequence():
    rng = np.random.default_rng(11)
    for trial in range(300):
        lanes = (rng.standard_normal(64) * 10.0 ** rng.integers(-3, 8, 64)).astype(np.float32)
        if trial % 3 == 0:
            lanes[rng.integers(0, 64, 4)] = np.float32(2**24) * np.array([1, -1, 1, -1], np.float32)
        got = numerics_reduce.ordered_sum(lanes, 0, "fp32", "amd", 64, 1, False)  # one element a lane
        assert got.view(np.uint32) == _dpp_wavefront(lanes).view(np.uint32), trial
    # and NVIDIA's order is not it: the same planted row differs
    row = np.zeros(64, np.float32)
    row[[0, 8, 16]] = 2.0**24, 1.0, -(2.0**24)
    assert numerics_reduce.ordered_sum(row, 0, "fp32", "nvidia", 32, 2, False) == 1.0
    assert numerics_reduce.ordered_sum(row, 0, "fp32", "amd", 64, 1, False) == _dpp_wavefront(row) == 0.0


def test_a_thread_adds_its_elements_in_order_first():
    x = np.zeros(128, np.float32)
    x[[0, 2, 3]] = 2.0**24, 1.0, 1.0  # one thread's (four a lane): 2**24 + 0 + 1 + 1 loses both; a tree keeps 2
    assert numerics_reduce.ordered_sum(x, 0, "fp32", "nvidia", 32, 1, False) == 2.0**24
    assert np.sum(x) == 2.0**24 + 2  # numpy's pairwise order keeps them: the model is not numpy's


@pytest.mark.parametrize("keep", [False, True])
def test_ordered_sum_keeps_the_interpreters_shapes(keep):
    x = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    for axis in (0, 1, None):
        got = numerics_reduce.ordered_sum(x, axis, "fp32", "amd", 64, 4, keep)
        want = np.sum(x, axis=axis, keepdims=keep)
        assert np.shape(got) == np.shape(want) and np.array_equal(got, want)  # small integers: any order is exact
    assert numerics_reduce.ordered_sum(np.arange(3, dtype=np.int32), 0, "int32", "amd", 64, 4, keep) is None
    assert numerics_reduce.ordered_sum(np.ones(6, np.float32), 0, "fp32", "amd", 64, 4, keep) is None  # not Triton's


# Layouts and shuffle sequences Triton 3.6.0 compiles for a row sum (shape, dtype, num_warps), read on the CPU.
TARGETS = ("sm_80", "sm_90", "gfx90a", "gfx942")  # every arch --numerics models
SHAPES = [((1, 1024), "fp32", 4), ((16, 64), "fp32", 4), ((4, 256), "fp16", 4), ((2, 128), "fp32", 1),
          ((1, 1024), "fp16", 8)]
_STEP = {"16": 16, "8": 8, "4": 4, "2": 2, "1": 1, "SWAP,16": 16, "row_shr:8": 8, "row_shr:4": 4, "row_shr:2": 2,
         "row_shr:1": 1, "row_bcast:15": 16, "row_bcast:31": 32, "quad_perm:[2,3,0,1]": 2, "quad_perm:[1,0,3,2]": 1}


def _compiled(shape: tuple[int, int], dtype: str, num_warps: int, target: str) -> dict[str, list[int]]:
    """One row-sum kernel compiled for ``target``: its blocked layout and the lane strides before shared memory.
    Run in a process without TRITON_INTERPRET (``_compile_all``), where @triton.jit is Triton's compiler's."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    @triton.jit
    def row_sums(x, o, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
        r = tl.arange(0, BM)
        tl.store(o + r, tl.sum(tl.load(x + r[:, None] * N + tl.arange(0, BN)[None, :]), axis=1))

    gpu = GPUTarget("cuda", int(target[3:]), 32) if target.startswith("sm_") else GPUTarget("hip", target, 64)
    source = ASTSource(row_sums, {"x": f"*{dtype}", "o": f"*{dtype}", "N": "constexpr", "BM": "constexpr",
                                  "BN": "constexpr"}, constexprs={"N": shape[1], "BM": shape[0], "BN": shape[1]},
                       attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
    kernel = triton.compile(source, target=gpu, options={"num_warps": num_warps})
    blocked = re.search(r"#ttg.blocked<\{sizePerThread = \[(\d+), (\d+)\], threadsPerWarp = \[(\d+), (\d+)\], "
                        r"warpsPerCTA = \[(\d+), (\d+)\]", kernel.asm["ttgir"])
    spt, tpw, wpc = ([int(blocked.group(i)), int(blocked.group(i + 1))] for i in (1, 3, 5))
    asm = kernel.asm.get("ptx") or kernel.asm["amdgcn"]
    lanes_part = re.split(r"st\.shared|ds_write", asm)[0]
    steps = re.findall(r"shfl\.sync\.bfly\.b32\s+\S+, \S+, (\d+)|swizzle\((SWAP,16)\)|(row_shr:\d|row_bcast:\d+|"
                       r"quad_perm:\[2,3,0,1\]|quad_perm:\[1,0,3,2\])", lanes_part)
    return {"spt": spt, "tpw": tpw, "wpc": wpc, "steps": [_STEP[next(g for g in s if g)] for s in steps]}


def _key(shape, dtype, num_warps, target) -> str:
    return f"{shape[0]}x{shape[1]} {dtype} {num_warps} {target}"


def _compile_all() -> None:
    print(json.dumps({_key(*c, t): _compiled(*c, t) for c in SHAPES for t in TARGETS}))


@pytest.fixture(scope="module")
def compiled() -> dict[str, dict[str, list[int]]]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", "from tests.checks import test_numerics_elementwise as t; "
                           "t._compile_all()"], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape, dtype, num_warps", SHAPES)
def test_the_layout_and_lane_order_are_what_triton_compiles(compiled, shape, dtype, num_warps, target):
    seen = compiled[_key(shape, dtype, num_warps, target)]
    spt, tpw, wpc, steps = seen["spt"], seen["tpw"], seen["wpc"], seen["steps"]
    warp, vendor = (32, "nvidia") if target.startswith("sm_") else (64, "amd")
    itemsize = 4 if dtype == "fp32" else 2
    assert numerics_reduce.Layout.blocked(shape, itemsize, warp, num_warps) == (spt, tpw, wpc)
    layout = numerics_reduce.Layout.of(shape, 1, itemsize, warp, num_warps)
    lane_steps = list(numerics_reduce.strides(layout.lanes, vendor))
    rows_per_thread = max(1, shape[0] // (tpw[0] * wpc[0]))  # each row a thread holds repeats the sequence
    want = lane_steps * rows_per_thread
    # With one warp nothing goes through shared memory, and a last shuffle moves the sums to the threads that store
    # them (no add): the reduction's are the first ones.
    assert steps[:len(want)] == want and (num_warps == 1 or len(steps) == len(want)), (steps, lane_steps)
