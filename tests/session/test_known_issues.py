"""Known-issue registry: matching, malformed files, and strictness (a fixed bug fails as XPASS)."""

from __future__ import annotations

import json

import pytest

from suite.session import known_issues

ENTRY = {"id": "x", "backend": "interpret", "arch": "*", "triton": ">=3.0,<4", "kernel": "matmul", "dtype": "bf16",
         "reason": "r", "link": "https://example.invalid/1",
         "failure_pattern": "NaN where the reference is not"}


def write(tmp_path, entries):
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_issues": entries}))
    return path


def test_shipped_registry_loads_and_each_entry_matches_a_failure_not_a_note():
    """The shipped file loads, and each entry says what fails in the failure's own words: an entry that matched a note
    the suite appends to a message (as the interpreter's bf16 entries once did) covered every failure of its kernel
    and dtype, an unwritten tile included."""
    issues = known_issues.load()
    assert all(k.failure_pattern and "note" not in k.failure_pattern for k in issues), issues


def test_matching_by_backend_arch_version_kernel_dtype(tmp_path):
    [issue] = known_issues.load(write(tmp_path, [ENTRY]))
    assert issue.matches("interpret", "interpreter", "3.6.0", "matmul", "bf16")
    assert not issue.matches("cuda", "sm_90", "3.6.0", "matmul", "bf16")
    assert not issue.matches("interpret", "interpreter", "4.1.0", "matmul", "bf16")
    assert not issue.matches("interpret", "interpreter", "3.6.0", "matmul", "fp16")
    assert not issue.matches("interpret", "interpreter", "3.6.0", "matmul", "bf16", test="test_properties")


def test_a_nightly_or_release_candidate_matches_as_the_version_it_will_be(tmp_path):
    [issue] = known_issues.load(write(tmp_path, [ENTRY]))
    assert issue.matches("interpret", "interpreter", "3.6.0rc1", "matmul", "bf16")
    assert issue.matches("interpret", "interpreter", "3.7.0.dev20261101+git5f3e", "matmul", "bf16")
    assert not issue.matches("interpret", "interpreter", "4.1.0.dev1", "matmul", "bf16")


@pytest.mark.parametrize("change, words", [
    ({"dtype": 3}, ["known_issues[0]", "'dtype'"]),
    ({"triton": "three"}, ["known_issues[0]", "'triton'"]),
    ({"colour": "red"}, ["known_issues[0]", "colour"]),
])
def test_malformed_entries_name_file_and_field(tmp_path, change, words):
    path = write(tmp_path, [{**ENTRY, **change}])
    with pytest.raises(known_issues.KnownIssueError) as err:
        known_issues.load(path)
    for word in [str(path), *words]:
        assert word in str(err.value)


def test_invalid_json_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(known_issues.KnownIssueError, match="broken.json: not valid JSON"):
        known_issues.load(path)


def test_a_known_issue_no_case_meets_is_not_met_and_strict_asks_to_be_told(run_suite, tmp_path):
    """A known issue only some shapes meet used to fail the run (XPASS(strict)) whenever the draw met no such shape,
    with the verdict "NOTHING RAN" against exit 1. Not met: the verdict says so and the run passes; with
    --strict-known-issues (to be told when a bug is fixed) the test fails, and the verdict says FAILED."""
    passing = {**ENTRY, "id": "pretend-broken", "kernel": "vector_add", "dtype": "fp32", "failure_pattern": "NaN"}
    entries = f"--known-issues={write(tmp_path, [passing])}"
    run = run_suite("suite/test_kernels.py", "-k", "vector_add-fp32", entries)
    assert run.returncode == 0, run.output[-2000:]
    assert run.run_data()["tests"][0]["outcome"] == "xpassed"
    verdict = " ".join(run.output[run.output.index("VERDICT:"):].split())
    assert verdict.startswith("VERDICT: PASSED: 0 of 1 test passed"), verdict
    assert "known pretend-broken: vector_add[fp32] (test_matches_reference): not met in this run" in verdict, verdict
    run = run_suite("suite/test_kernels.py", "-k", "vector_add-fp32", entries, "--strict-known-issues",
                    results_dir=tmp_path / "strict")
    assert run.returncode == 1, run.output[-2000:]
    assert "XPASS(strict)" in run.output
    assert run.run_data()["tests"][0]["outcome"] == "xpassed-strict"
    assert "VERDICT: FAILED: 1 of 1 test failed" in run.output, run.output[-2000:]


def test_malformed_registry_is_a_usage_error(run_suite, tmp_path):
    run = run_suite("-k", "vector_add-fp32", f"--known-issues={write(tmp_path, [{**ENTRY, 'link': None}])}")
    assert run.returncode == 4
    assert "'link'" in run.output


def test_a_dtype_a_known_issue_stops_is_left_out_of_the_kernels_reach(run_suite):
    """known_bf16_sub_add's bf16 fails every case under its known issue (tests/fixtures/known_issue_kernels.py): its
    paths were never going to be taken, so the summary's reach row counts fp16 alone instead of calling every path
    "not taken"."""
    run = run_suite("suite/test_kernels.py", "--backend=interpret", "--kernel-module=tests/fixtures/known_issue_kernels.py",
                    "--kernels=known_bf16_sub_add", env={"COLUMNS": "200"})  # wide enough for the reach row on one line
    assert run.returncode == 0, run.output[-2000:]
    coverage = {c["dtype"]: c for c in run.run_data()["coverage"]}
    assert coverage["bf16"]["stopped_by"].startswith("known issue sub-for-negative-bf16"), coverage["bf16"]
    assert "stopped_by" not in coverage["fp16"] and not coverage["fp16"]["unexercised"], coverage["fp16"]
    lines = run.output.splitlines()
    header = next(i for i, line in enumerate(lines) if "paths taken" in line)
    row = next(line for line in lines[header:] if line.startswith("| known_bf16_sub_add "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    declared = len(coverage["fp16"]["paths"])
    assert cells[1] == "fp16,bf16 (stopped: known issue)" and cells[3] == f"{declared}/{declared}" and cells[5] == "-", row


def test_a_property_test_xfailed_under_a_known_issue_names_it_in_the_run_file(run_suite, tmp_path):
    """softmax_props_scaled's 'rows_sum_to_one' fails (tests/fixtures/softmax_properties.py: every row sums to 1.01)
    under an entry for test_properties: the test's record names the issue, as a reference test's does, so that the
    report counts it as a known issue and never as a broken property; its report says so on the first screen."""
    entry = {**ENTRY, "id": "scaled-softmax-sums-high", "kernel": "softmax_props_scaled", "dtype": "fp32",
             "test": "test_properties", "failure_pattern": "property 'rows_sum_to_one' does not hold"}
    run = run_suite("suite/test_properties.py", "--kernel-module=tests/fixtures/softmax_properties.py",
                    "--kernels=softmax_props_scaled", f"--known-issues={write(tmp_path, [entry])}")
    assert run.returncode == 0, run.output[-2000:]
    assert "1 xfailed" in run.output, run.output[-2000:]
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "xfailed" and test["known_issue"] == "scaled-softmax-sums-high", test
    from reports.__main__ import main

    assert main(["build", str(run.run_files()[0]), "--out", str(tmp_path / "report")]) == 0
    verdict = (tmp_path / "report" / "report.md").read_text().split("### Kernel x platform")[0]
    assert "Broken" not in verdict and "**Known issues: 1 xfailed test(s)**" in verdict, verdict
    assert ("scaled-softmax-sums-high (softmax_props_scaled fp32 on Triton CPU interpreter (interpreter): 1 xfailed "
            "test)") in verdict, verdict
