"""``--numerics=PROFILE``: the interpreter's tl.dot computed as the profile's GPU computes it (suite/checks/numerics.py).

The planted case is tests/fixtures/numerics_dots.py's ``subnormal_dot``: a right fp16 dot whose second operand is
subnormal, which passes modelled as an H100 or an MI300X and fails modelled as an MI250X GCD, the message naming
CDNA2's flush. The model's pieces are held to mmasim's own instruction models and to exact arithmetic.
"""

from __future__ import annotations

import json
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from suite.checks import numerics
from suite.session import numerics_table, options
from tests.conftest import SuiteRun, start_suite_run

FIXTURE = "--kernel-module=tests/fixtures/numerics_dots.py"


def _suite(tmp_path_factory, profile: str) -> SuiteRun:
    return start_suite_run("suite/test_kernels.py", FIXTURE, "--kernels=subnormal_dot,xf32_dot", "-n", "0",
                           f"--numerics={profile}", results_dir=tmp_path_factory.mktemp(profile) / "runs",
                           env={"SUITE_SHRINK_SECONDS": "3"})


@pytest.fixture(scope="module")
def mi250x(tmp_path_factory) -> SuiteRun:
    return _suite(tmp_path_factory, "mi250x_gcd")


@pytest.mark.parametrize("profile", ["h100_sxm", "mi300x"])
def test_subnormal_operands_pass_where_kept(tmp_path_factory, profile):
    run = _suite(tmp_path_factory, profile)
    assert run.returncode == 0, run.output[-3000:]
    data = run.run_data()
    assert data["environment"]["numerics"]["profile"] == profile
    assert f"VERDICT: PASSED: modelled as {profile};" in run.output
    assert "ran on" not in run.output.split("verdict")[-1]


def test_subnormal_operands_fail_where_flushed(mi250x):
    assert mi250x.returncode == 1, mi250x.output[-3000:]
    data = mi250x.run_data()
    numerics_record = data["environment"]["numerics"]
    assert (numerics_record["profile"], numerics_record["arch"]) == ("mi250x_gcd", "gfx90a")
    outcomes = {t["nodeid"].split("[")[1].rsplit("-", 1)[0]: t["outcome"] for t in data["tests"]}
    assert outcomes == {"subnormal_dot": "failed", "xf32_dot": "passed"}, outcomes
    failed = [c for c in data["cases"] if c["kernel"] == "subnormal_dot" and c["outcome"] == "failed"]
    assert failed and "fp16 subnormal operands flushed by CDNA2's matrix cores (gfx90a)" in failed[0]["message"]
    assert "VERDICT: FAILED: modelled as mi250x_gcd;" in mi250x.output


def test_the_run_file_with_numerics_meets_the_schema(mi250x):
    from reports import schema_check

    schema = json.loads(open("reports/schema/run.schema.json").read())
    assert not list(schema_check.problems(mi250x.run_data(), schema))
    bad = mi250x.run_data()
    bad["environment"]["numerics"]["vendor"] = "intel"
    assert list(schema_check.problems(bad, schema))


def _exact_fma(a: float, b: float, c: float) -> np.float32:
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    lo = np.float32(float(exact))  # nearest fp64, then the two fp32 neighbours decided exactly
    cands = {lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))}
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(np.uint32)) & 1))
    return best


def test_fp32_fma_rounds_once():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(400).astype(np.float32)
    b = rng.standard_normal(400).astype(np.float32)
    c = (rng.standard_normal(400) * 1e-4).astype(np.float32)
    # Ties of the two-rounding path: a product exactly between two fp32 values, nudged by a tiny addend.
    a[:2], b[:2], c[:2] = np.float32(1 + 2**-12), np.float32(1 + 2**-12), np.float32(2**-60)
    got = numerics.fma_fp32(a, b, c)
    want = np.array([_exact_fma(float(x), float(y), float(z)) for x, y, z in zip(a, b, c, strict=True)],
                    dtype=np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    twice = (a.astype(np.float64) * b + c).astype(np.float32)  # rounded twice: differs at the planted ties
    assert not np.array_equal(twice.view(np.uint32), want.view(np.uint32))


def test_a_whole_tile_equals_mmasims_instruction_over_k_in_order():
    import mmasim.nv_ptx as nv

    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    c = rng.standard_normal((64, 32)).astype(np.float32)
    got = numerics.Numerics("h100_sxm", numerics_table.MODELS["sm_90"]).dot(a, "fp16", b, "fp16", c, "ieee", 0)
    wgmma, acc = nv.WGMMA("Hopper", "m64n32k16.f32.f16.f16"), torch.from_numpy(c)
    for k in range(0, 64, 16):
        acc = wgmma(torch.from_numpy(a[:, k:k + 16]), torch.from_numpy(b[k:k + 16]), acc)
    assert np.array_equal(got, acc.numpy())
    assert not np.array_equal(got, (a.astype(np.float32) @ b.astype(np.float32) + c))  # not numpy's sum


def _signed_error(arch: str, k: int, tf32_exact: bool) -> float:
    rng = np.random.default_rng(1)
    a = (np.abs(rng.standard_normal((16, k))) + 0.5).astype(np.float32)
    b = (np.abs(rng.standard_normal((k, 16))) + 0.5).astype(np.float32)
    if tf32_exact:
        a, b = ((x.view(np.int32) >> 13 << 13).view(np.float32) for x in (a, b))
    model = numerics_table.MODELS[arch]
    out = numerics.Numerics(arch, model).dot(a, "fp32", b, "fp32", np.zeros((16, 16), np.float32),
                                             model.default_fp32, 0)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return float(((out - ref) / ref).mean())


def test_xf32_on_gfx942_is_biased_low():
    # gfx942's default fp32 dot (XF32) truncates its operands: on positive operands every product is low.
    assert _signed_error("gfx942", 64, False) < -5e-4 and _signed_error("gfx942", 1024, False) < -5e-4
    assert abs(_signed_error("gfx90a", 1024, False)) < 1e-7  # gfx90a's IEEE dot: no bias
    # On operands TF32 holds exactly, the sums' rounding alone: sm_90's truncated sums drift low with K.
    assert _signed_error("sm_90", 4096, True) < 10 * _signed_error("sm_90", 64, True) < 0


def test_the_option_refuses_what_it_cannot_model():
    with pytest.raises(pytest.UsageError, match=r"--numerics=h100: no such hardware profile \(did you mean "
                                                r"h100_sxm\?\): the modelled ones are .*mi250x_gcd.*mi300x"):
        options.parse_numerics("h100")
    with pytest.raises(pytest.UsageError, match=r"mi355x \(gfx950\) is not modelled: CDNA4 \(gfx950\) matrix "
                                                r"cores: no public bit-accurate model"):
        options.parse_numerics("mi355x")
    assert options.parse_numerics("mi300x") == "mi300x"
    from suite.plugin import context

    with pytest.raises(pytest.UsageError, match=r"--numerics=h100_sxm: models a GPU's arithmetic on Triton's CPU "
                                                r"interpreter only; this run's backend is cuda"):
        context._numerics(SimpleNamespace(name="cuda"), "h100_sxm")


def test_what_the_model_cannot_compute_is_refused():
    model = numerics.Numerics("mi250x_gcd", numerics_table.MODELS["gfx90a"])
    a = np.ones((16, 16), np.float32)
    with pytest.raises(numerics.NotModelled, match="tf32x3"):
        model.dot(a, "fp32", a, "fp32", np.zeros((16, 16), np.float32), "tf32x3", 0)
    with pytest.raises(numerics.NotModelled, match="float16 accumulator"):
        model.dot(a.astype(np.float16), "fp16", a.astype(np.float16), "fp16", np.zeros((16, 16), np.float16),
                  "ieee", 0)


def test_a_flush_outside_the_subnormal_class_leaves_no_empty_detail():
    # Under mi250x_gcd a flushed dot fails cases of any value class; the tolerance's flush remark then has no
    # note of its own (the modelled GPU's note follows it) and must not end in an empty "flushed to zero: )".
    from suite.checks.tolerance import check_output

    ref = torch.full((8,), 3e-6, dtype=torch.float64)
    ref[0] = 1.0
    out = ref.to(torch.float16)
    out[1:] = 0.0
    check = check_output("c", out, ref, ref.abs(), reduction_length=16, safety=2.0)
    assert not check.passed and "7 of them subnormal results stored as 0, flushed to zero)" in check.detail
    assert ": )" not in check.detail
    noted = check_output("c", out, ref, ref.abs(), reduction_length=16, safety=2.0, keep_subnormals=True,
                         flush_note="whose")
    assert "flushed to zero: whose)" in noted.detail
