"""The signed-drift rule (suite/checks/drift.py): a one-signed error that grows with the reduction length fails the test
at its end, though every case is within its |error| bound.

Planted: tests/fixtures/drift_kernels.py's ``truncating_matmul`` (its fp32 accumulator truncated toward zero at each
k) and ``rounded_up_matmul`` (rounded away from zero) fail; the same loop rounding to nearest passes, on operands of
one sign and of both. The rule's statistics are held to synthetic tests' points: what must pass (noise, a constant
bias, a bias that shrinks, a line through 0, too few cases) and what must fail.
"""

from __future__ import annotations

import random

import pytest
import torch

from suite.checks import drift, tolerance
from suite.checks.reference_loop import Passed
from tests.conftest import SuiteRun, start_suite_run

FIXTURE = "--kernel-module=tests/fixtures/drift_kernels.py"


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> SuiteRun:
    return start_suite_run("suite/test_kernels.py", FIXTURE, "-n", "0", "--kernels=truncating_matmul,rounded_up_matmul,"
                           "rounding_matmul,rounding_matmul_signed", results_dir=tmp_path_factory.mktemp("drift"),
                           env={"SUITE_SHRINK_SECONDS": "3"})


def _outcomes(run: SuiteRun) -> dict[str, tuple[str, str]]:
    return {t["nodeid"].split("[")[1].rsplit("-", 1)[0]: (t["outcome"], t.get("message") or "")
            for t in run.run_data()["tests"]}


def test_a_truncating_accumulator_fails_though_every_case_is_within_the_bound(planted):
    outcomes = _outcomes(planted)
    outcome, message = outcomes["truncating_matmul"]
    assert outcome == "failed", planted.output[-3000:]
    assert "a one-signed error that grows with the reduction length" in message
    assert "output 'c': its error drifts toward -inf" in message
    cases = [c for c in planted.run_data()["cases"] if c["kernel"] == "truncating_matmul"]
    assert cases and all(c["outcome"] == "passed" and c["error_ratio"] < 1 for c in cases), cases  # the bound passes
    outcome, message = outcomes["rounded_up_matmul"]
    assert outcome == "failed" and "its error drifts toward +inf" in message, message


def test_rounding_to_nearest_passes_at_any_length(planted):
    outcomes = _outcomes(planted)
    assert outcomes["rounding_matmul"][0] == "passed", outcomes["rounding_matmul"]
    assert outcomes["rounding_matmul_signed"][0] == "passed", outcomes["rounding_matmul_signed"]


def test_an_output_records_its_signed_error_over_its_bound():
    ref = torch.tensor([1.0, -2.0, 4.0, 0.5], dtype=torch.float64)
    out = torch.nextafter(ref.float(), torch.zeros(4))  # every element one fp32 step toward zero
    check = tolerance.check_output("c", out, ref, None, reduction_length=7, safety=4.0)
    assert check.passed and check.reduction_length == 7
    signed, away, counted = check.drift
    assert counted == 4 and away < signed < 0  # toward zero: three below, one above (the negative element)
    bound = tolerance.bound(ref, ref.abs(), torch.float32, 7, safety=4.0)
    expected = ((out.double() - ref) / bound)
    assert signed == pytest.approx(float(expected.sum())) and away == pytest.approx(float((expected * ref.sign()).sum()))
    nonfinite = tolerance.check_output("c", torch.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0],
                                                                                          dtype=torch.float64),
                                       None, reduction_length=3, safety=4.0)
    assert nonfinite.drift[2] == 1  # the NaN is not counted


def _cases(bias, noise=0.05, n=64, count=16, seed=0, lengths=(2, 100)):
    """A test's points: ``count`` cases at lengths drawn in ``lengths``, each a mean of ``bias(L)`` plus noise."""
    r = random.Random(seed)
    out = []
    for _ in range(count):
        length = r.randint(*lengths)
        m = bias(length) + r.uniform(-noise, noise)
        out.append([length, n, m * n, m * n])
    return out


def test_a_growing_one_signed_mean_fails_either_way():
    assert "toward -inf" in drift.judge_output("c", _cases(lambda k: -0.5 * k / 100))
    assert "toward +inf" in drift.judge_output("c", _cases(lambda k: 0.5 * k / 100))
    # toward zero on both signs: the signed mean is 0, the mean signed by the reference is not
    cases = [[k, n, 0.0, away] for k, n, _, away in _cases(lambda k: -0.5 * k / 100)]
    assert "toward zero" in drift.judge_output("c", cases)


@pytest.mark.parametrize("why, bias, kw", [
    ("no bias", lambda k: 0.0, {}),
    ("a constant bias (XF32's truncated operands)", lambda k: -0.4, {}),
    ("a bias that shrinks with the length", lambda k: -0.5 * (100 - k) / 100, {}),
    ("growing, but below a quarter of the bound", lambda k: -0.2 * k / 100, {}),
    ("a line through 0, from one side to the other", lambda k: 0.8 * (k - 50) / 100, {}),
    ("too few cases", lambda k: -0.5 * k / 100, {"count": drift.FEWEST_CASES - 1}),
    ("lengths too close together", lambda k: -0.5 * k / 100, {"lengths": (60, 100)}),
    ("noise of single elements, as large as a passed case allows", lambda k: 0.0, {"noise": 1.0, "n": 1}),
])
def test_what_is_not_drift_passes(why, bias, kw):
    assert drift.judge_output("c", _cases(bias, **kw)) is None, why


def test_single_element_noise_never_fails():
    # The rule's threshold is statistical: 20000 tests of single-element cases, each mean uniform in the largest range
    # a passed case allows, fail none (a drift of 0.5 on 17 cases of 64 elements is caught: above).
    r = random.Random(7)
    for trial in range(20000):
        count = r.choice((8, 10, 17, 40))
        cases = [[r.randint(2, 100), 1, m, m] for m in (r.uniform(-1, 1) for _ in range(count))]
        assert drift.judge_output("c", cases) is None, (trial, sorted(cases))


def test_the_t_tail_is_students():
    stats = pytest.importorskip("scipy.stats")
    for dof in (1, 2, 3, 7, 8, 30, 61):
        for t in (-2.0, 0.0, 0.7, 3.0, 9.0):
            assert drift.t_tail(t, dof) == pytest.approx(float(stats.t.sf(t, dof)), rel=1e-3, abs=1e-12)


def test_a_split_tests_parts_add_up_their_points():
    first, second = Passed(), Passed()
    first.drift = {"c": _cases(lambda k: -0.5 * k / 100, count=6, seed=1)}
    second.drift = {"c": _cases(lambda k: -0.5 * k / 100, count=6, seed=2)}
    assert drift.judge("m", "fp16", first.drift) is None  # each part alone: too few cases
    first.merge(second.state())
    assert len(first.drift["c"]) == 12 and drift.judge("m", "fp16", first.drift)


def test_one_large_unbiased_case_does_not_outvote_the_others():
    cases = _cases(lambda k: -0.5 * k / 100)
    cases.append([100, 10**7, 0.0, 0.0])
    assert "leaving out the case farthest from the line (+0.000 at length 100)" in drift.judge_output("c", cases)


def test_a_bias_that_starts_at_some_length_fails():
    # A path taken only on long reductions, biased there: no line fits it, the halves' means differ.
    found = drift.judge_output("c", _cases(lambda k: -0.5 if k > 50 else 0.0, count=24, seed=5))
    assert "its error drifts toward -inf from length 50 on" in found, found
    assert drift._step([(float(k), 0.0, 16.0) for k in range(2, 40)], "signed", "down", "up") is None
