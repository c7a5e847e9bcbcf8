"""An inf where the reference is finite says overflow, and which dtype's range (suite/checks/overflow.py): an
fp16-intermediate bug was caught only by the `large` value class, and its message said "infinities differ" alone.
The planted kernels are tests/fixtures/overflow_kernels.py; one suite run holds them."""

from __future__ import annotations

import pytest
import torch

from suite.checks import overflow
from suite.checks.tolerance import check_output
from tests.conftest import SuiteRun, start_suite_run

FIXTURE = "--kernel-module=tests/fixtures/overflow_kernels.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> SuiteRun:
    return start_suite_run("suite/test_kernels.py", FIXTURE, "--kernels=ratio_fp16_product,square_fp16,ratio_fp32",
                           "-n", "0", results_dir=tmp_path_factory.mktemp("overflow") / "runs",
                           env={"SUITE_SHRINK_SECONDS": "3"})


def _cases(run: SuiteRun, kernel: str) -> list[dict]:
    return [c for c in run.run_data()["cases"] if c["kernel"] == kernel]


def test_an_fp16_product_that_overflows_on_the_large_class_says_so(run):
    outcomes = {t["nodeid"].split("[")[1].rstrip("]"): t["outcome"] for t in run.run_data()["tests"]}
    assert outcomes == {"ratio_fp16_product-fp32": "failed", "ratio_fp16_product-fp16": "failed",
                        "square_fp16-fp32": "failed", "ratio_fp32-fp32": "passed", "ratio_fp32-fp16": "passed"}, \
        run.output[-3000:]
    for dtype in ("fp32", "fp16"):
        failed = [c for c in _cases(run, "ratio_fp16_product") if c["outcome"] == "failed" and c["dtype"] == dtype]
        assert failed and all(c["values"] == "large" for c in failed), failed
        message = failed[0]["message"]
        # the reference, a few thousand, fits every candidate: the candidates are named, fp16's range first
        assert "inf where the reference is finite (max " in message, message
        assert ("an intermediate overflowed fp16's range (65504), bf16's range (3.38953e+38) or fp32's range "
                "(3.40282e+38)? (which dtype held it cannot be known from the output)") in message, message
    assert all(c["outcome"] == "passed" for c in _cases(run, "ratio_fp16_product") if c["values"] == "normal")


def test_a_reference_beyond_a_dtypes_range_names_that_dtype(run):
    failed = [c for c in _cases(run, "square_fp16") if c["outcome"] == "failed"]
    assert failed, run.output[-3000:]
    assert ("an intermediate overflowed fp16's range (65504)? (the reference is beyond it; else bf16's range "
            "(3.38953e+38) or fp32's range (3.40282e+38))") in failed[0]["message"], failed[0]["message"]


def test_a_passing_kernel_and_other_wrong_values_say_no_overflow():
    ref = torch.tensor([3000.0, -2.0, float("inf"), 5.0], dtype=torch.float64)
    args = dict(reduction_length=1, safety=4.0)
    assert check_output("out", ref.float(), ref, None, **args).passed
    for wrong in ([4500.0, -2.0, float("inf"), 5.0],      # 1.5x
                  [3000.0, -2.0, float("-inf"), 5.0],     # the wrong infinity where the reference is inf
                  [3000.0, float("nan"), float("inf"), 5.0],  # NaN
                  [3000.0, -2.0, 65504.0, 5.0]):          # finite where the reference is inf
        check = check_output("out", torch.tensor(wrong), ref, None, **args)
        assert not check.passed and "overflow" not in check.detail, check.detail
    # an inf of either sign where the reference is finite does
    for got in (float("inf"), float("-inf")):
        check = check_output("out", torch.tensor([got, -2.0, float("inf"), 5.0]), ref, None, **args)
        assert "1 inf where the reference is finite (max 3e+03): an intermediate overflowed" in check.detail, \
            check.detail


def test_the_candidates():
    assert overflow.candidates(()) == [torch.float16, torch.bfloat16, torch.float32]
    assert overflow.candidates((torch.float64, torch.int32)) == [torch.float16, torch.bfloat16, torch.float32,
                                                                 torch.float64]
    assert overflow.candidates((torch.float8_e4m3fn,))[0] == torch.float8_e4m3fn
    # the widest range the reference is beyond: fp16's at 7.1e4, fp8e4nv's at 500 (an fp8 case); the wider after it
    assert "an intermediate overflowed fp16's range (65504)? (the reference is beyond it; else bf16's" in \
        overflow.note(1, 7.1e4, ())
    assert "an intermediate overflowed fp8e4nv's range (448)? (the reference is beyond it; else fp16's range (65504)," \
        in overflow.note(2, 500.0, (torch.float8_e4m3fn,))
    assert overflow.note(1, 1e39, ()).endswith("an intermediate overflowed fp32's range (3.40282e+38)?")
    assert overflow.note(1, 1e39, (torch.float64,)).endswith(
        "an intermediate overflowed fp32's range (3.40282e+38)? (the reference is beyond it; else fp64's range "
        "(1.79769e+308))")


def test_a_known_issue_may_describe_an_overflow_and_no_ordinary_wrong_value_is_one():
    """suite/checks/ordinary.py: the overflow note is a failure of its own (as 'NaN where the reference is not' is), not
    an ordinary wrong value: no ordinary message carries it, and a known issue's pattern may describe it."""
    from kernels.vector_add import SPEC as VECTOR_ADD
    from suite.checks import ordinary

    messages = list(ordinary.messages(VECTOR_ADD, list(VECTOR_ADD.dtypes), ["interpret", "cuda"]))
    assert messages and not any("overflow" in m or "inf where the reference is finite" in m for m in messages)
    for pattern in (r"an intermediate overflowed fp16's range \(65504\)", r"inf where the reference is finite"):
        assert ordinary.too_broad(pattern, [VECTOR_ADD], "vector_add", "*", "*") is None, pattern


def test_an_inf_where_the_reference_is_small_may_be_a_division_by_zero():
    assert overflow.note(1, 0.0, ()).endswith("(which dtype held it cannot be known from the output; or a division by 0)")
    assert "division" not in overflow.note(1, 3000.0, ())
