"""What a library's launchers do that the suite could not express (issue 51, item 5): several known issues of one
kernel x dtype x test, each with its own failure_pattern; one launcher dispatching to several autotuned kernels
with different settings; integer outputs where ties are legal (topk's indices)."""

from __future__ import annotations

from suite.session import known_issues

KNOWN = "--kernel-module=tests/fixtures/known_issue_kernels.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}


def _entry(id: str, pattern: str) -> known_issues.KnownIssue:  # noqa: A002 - the entry's field
    return known_issues.KnownIssue(id=id, backend="interpret", arch="*", triton=">=3.0", kernel="k", dtype="fp32",
                                   reason=f"reason {id}", link=f"link-{id}", failure_pattern=pattern)


def test_every_known_issue_of_a_kernel_dtype_and_test_is_read():
    entries = [_entry("nan", r"NaN where"), _entry("error", r"out: error"), _entry("other-dtype", "")]
    entries[2] = known_issues.KnownIssue(**{**entries[2].as_record(), "dtype": "fp16"})
    found = known_issues.find(entries, "interpret", "interpreter", "3.6.0", "k", "fp32")
    assert found.covers("out: 1 NaN where the reference is not") and found.covers("out: error 3.0 at (1,) is 4x")
    assert not found.covers("out: 2 of 9 elements never written")
    assert found.which("out: error 3.0 at (1,)").id == "error" and found.id == "nan + error"
    assert found.as_record()["failure_pattern"] == "nan: NaN where | error: out: error"
    one = known_issues.find(entries, "interpret", "interpreter", "3.6.0", "k", "fp16")
    assert one is entries[2]  # one entry: itself, as before


def test_a_kernel_with_two_bugs_each_a_known_issue_is_expected_to_fail(run_suite):
    run = run_suite("suite/test_kernels.py", KNOWN, "--kernels=known_two_bugs_add", "-n", "0", env=FAST_SHRINK)
    assert run.returncode == 0, run.output[-3000:]
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "xfailed" and test["known_issue"] == "nan-for-large-x-3 + sub-for-negative-x", test
    failed = {c["values"]: c["message"] for c in run.run_data()["cases"] if c["outcome"] == "xfailed"}
    assert set(failed) == {"large", "negative"}, failed
