"""The run's verdict at a glance (suite/plugin/glance.py): the last lines of a run say what passed, what failed and
where to look, the known issues by name, and what was not run and why; nothing in the summary is wider than the
terminal, no cell is cut and no text repeated."""

from __future__ import annotations

import re

from suite.plugin import fit, glance, summary


def test_the_last_lines_of_a_run_are_its_whole_verdict(run_suite):
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", "--kernel-module=tests/fixtures/planted_bugs.py",
                    "--kernel-module=tests/fixtures/known_issue_kernels.py",
                    "--kernels=planted_vector_add_dropped_mask,dropout,fp8_codes,known_nan_add",
                    "-k", "planted_vector_add_dropped_mask or dropout-bf16 or fp8_codes-fp8e5 or "
                          "test_matches_reference and known_nan_add",
                    env={"SUITE_SHRINK_SECONDS": "3", "COLUMNS": "80", "CI": "true"})
    # CI set, as on a CI runner (GitHub Actions sets it): pytest then prints each failure's whole message in its
    # short summary, not one line cut to the terminal's width
    assert run.returncode == 1, run.output[-3000:]
    lines = run.output.rstrip("\n").splitlines()
    tail = lines[-15:]
    text = "\n".join(tail)
    assert re.fullmatch(r"=+ 2 failed, 2 passed, 4 skipped, \d+ deselected, 1 xfailed in .* =+", tail[-1]), text
    verdict = next(i for i, line in enumerate(tail) if line.startswith("VERDICT: "))
    assert tail[verdict - 1].startswith("=") and " verdict " in tail[verdict - 1], text
    assert tail[verdict].startswith("VERDICT: FAILED: 2 of "), text
    norm = [re.sub(" +", " ", line.strip()) for line in tail[verdict:-1]]
    body = " ".join(norm)
    assert norm[1:4] == ["failed test_matches_reference: planted_vector_add_dropped_mask[fp32]",
                         "test_properties: planted_vector_add_dropped_mask[fp32]",
                         "each failure is above with its message and 'reproduce with:' line"], text
    assert "passed 2 tests: every test of dropout[bf16]" in norm, text
    assert "known nan-for-large-x: known_nan_add[fp32] (test_matches_reference)" in norm, text
    assert "not run 4 tests, the dtype is not supported on interpreter (interpreter profile): " \
           "fp8_codes[fp8e5,fp8e5b16]" in body, text
    assert tail[-2] == f"result file (complete): {run.run_files()[0]}", text  # whole, never wrapped
    assert all(len(line) <= 80 for line in tail[verdict:] if str(run.results_dir) not in line), text
    # pytest's own lists of skipped and expected failures are gone: the verdict says it once
    assert not any(line.startswith(("SKIPPED [", "XFAIL ")) for line in lines), text
    # the summary above: nothing wider than the terminal (a command to copy excepted), no cell cut or repeated
    start = next(i for i, line in enumerate(lines) if "portability summary" in line)
    pytest_summary = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    wide = [line for line in lines[start:pytest_summary]
            if len(line) > 80 and not line.startswith("  pytest ") and "::" not in line]
    # (a command to copy and a line naming a test by its id stay whole; pytest's own short summary is its own)
    assert not wide, "\n".join(wide)
    # each failure once, with its case and reproduction line; Hypothesis's drawn case (not always the case that ran:
    # the properties raise a batch dim) and its explanation (lines of the suite's own code) are left out
    failures = "\n".join(lines[lines.index(next(line for line in lines if "= FAILURES =" in line)):])
    assert failures.count("reproduce with: pytest 'suite/test_properties.py::") == 2, failures  # failure, summary
    assert "Failing test case:" not in failures and "Explanation:" not in failures, failures
    # the summary's list of reproduction lines has the property tests' failures too, not only the cases'
    recap = [line for line in lines if line.startswith(("FAILED ", "XFAILED ")) and " reproduce" in line]
    assert [line.split(":")[0] for line in recap] == [
        "XFAILED case known_nan_add[fp32]", "FAILED case planted_vector_add_dropped_mask[fp32]",
        "FAILED property planted_vector_add_dropped_mask[fp32] deterministic"], "\n".join(recap)
    assert "Skipped: " not in "\n".join(lines[start:])


def _test(nodeid: str, outcome: str, message: str | None = None, known: str | None = None) -> dict:
    return {"nodeid": nodeid, "outcome": outcome, "message": message, "known_issue": known, "duration_s": 0.1}


def test_the_verdict_keeps_to_its_lines_however_many_failed():
    tests = [_test(f"suite/test_kernels.py::test_matches_reference[kernel_number_{i}-fp32]", "failed")
             for i in range(60)]
    tests += [_test(f"suite/test_properties.py::test_properties[kernel_number_{i}-fp16]", "failed") for i in range(60)]
    tests += [_test(f"suite/test_kernels.py::test_matches_reference[skipped_{i}-fp8e5]", "skipped",
                    f"Skipped: fp8e5 is not supported on sm_80 (a100 profile) number {i}") for i in range(30)]
    tests += [_test(f"suite/test_kernels.py::test_matches_reference[k{i}-bf16]", "xfailed", known=f"issue-{i}")
              for i in range(10)]
    tests += [_test("suite/test_kernels.py::test_matches_reference[fine-fp32]", "passed")]
    lines = glance.verdict_lines({"tests": tests, "status": "complete"}, "runs/run-x.json", 80)
    assert len(lines) <= glance.MAX_TOTAL, "\n".join(lines)
    assert all(len(line) <= 80 for line in lines), "\n".join(lines)
    text = "\n".join(lines)
    assert lines[0] == "VERDICT: FAILED: 120 of 161 tests failed; 10 known issues; 30 not run"
    assert "failed   test_matches_reference: kernel_number_0[fp32]" in text
    assert "known    issue-0: k0[bf16]" in text and "more: the result file has them" in text
    assert lines[-1] == "result file (complete): runs/run-x.json"


def test_alike_skips_group_under_one_reason():
    tests = [_test(f"suite/test_kernels.py::test_matches_reference[fp8_codes-{d}]", "skipped",
                   f"Skipped: {d} is not supported on interpreter (interpreter profile)") for d in ("fp8e5", "fp8e4nv")]
    tests += [_test(f"suite/test_compile_matrix.py::test_compiles_on_target[fp8_codes-{t}]", "skipped",
                    f"Skipped: fp8_codes: no declared dtype (fp8e4nv, fp8e5) is supported on {t}")
              for t in ("sm_80", "gfx90a")]
    lines = glance.verdict_lines({"tests": tests, "status": "complete"}, "r.json", 120)
    assert lines[0] == "VERDICT: NOTHING RAN: 0 of 4 tests passed; 4 not run"
    assert lines[1:3] == [
        "  not run  2 tests, no declared dtype is supported on the target: fp8_codes[gfx90a,sm_80]",
        "           2 tests, the dtype is not supported on interpreter (interpreter profile): fp8_codes[fp8e4nv,fp8e5]"]


def test_tables_fit_the_terminal_without_breaking_a_word():
    rows = [["fp8_scaled_matmul", "sm_90", 4, 0, 6, "255 (spills)", "0.12"],
            ["dropout", "gfx90a", 6, 0, 0, 11, "1.00"]]
    headers = ["kernel", "target", "ok", "failed", "skipped", "max regs", "min occupancy"]
    table = fit.fit_table(rows, headers, 80)
    assert max(len(line) for line in table.splitlines()) <= 80, table
    assert "fp8_scaled_matmul" in table and "occupancy" in table and "(spills)" in table
    findings = [["dropout", "bf16", ", ".join(f"property_number_{i}" for i in range(20))]]
    table = fit.fit_table(findings, ["kernel", "dtype", "property findings"], 80)
    assert max(len(line) for line in table.splitlines()) <= 80, table
    assert all(f"property_number_{i}" in table for i in range(20)), table
    stopped = [["broken_store_past_sliced_output", "fp32", "deterministic, batch_invariant: stopped"]]
    table = fit.fit_table(stopped, ["kernel", "dtype", "property findings"], 80)
    assert max(len(line) for line in table.splitlines()) <= 80 and "batch_invariant: stopped" in table, table
    rows[0][0] = "planted_vector_add_dropped_mask_with_a_long_name"  # words alone too wide: broken after a '_'
    table = fit.fit_table(rows, headers, 80)
    assert max(len(line) for line in table.splitlines()) <= 80, table
    assert "| planted_vector_add_" in table, table


def test_a_lint_is_named_once_with_its_targets_and_a_known_issue_marks_its_findings():
    findings = [{"kernel": "fp8_codes", "dtype": "fp8e4b8", "property": "lint:fp8_flavour_unsupported", "kind": "lint",
                 "target": t, "claimed": False, "holds": False, "cases_checked": 0} for t in ("sm_80", "sm_90", "gfx90a")]
    findings += [{"kernel": "dropout", "dtype": "bf16", "property": "scaled_exactly", "claimed": True, "holds": False,
                  "cases_checked": 4}]
    tests = [_test("suite/test_properties.py::test_properties[dropout-bf16]", "xfailed", known="dropout-bf16-planted-rounding")]
    rows = summary.findings_rows(findings, tests)
    assert rows == [["dropout", "bf16", "scaled_exactly: NO (known issue dropout-bf16-planted-rounding)"],
                    ["fp8_codes", "fp8e4b8", "lint:fp8_flavour_unsupported on gfx90a sm_80 sm_90"]]


def test_a_known_issues_worst_error_names_it_and_a_skipped_dtype_says_not_run():
    cases = [{"kernel": "matmul", "dtype": "bf16", "outcome": "xfailed", "error_ratio": 8.11e11}]
    tests = [_test("suite/test_kernels.py::test_matches_reference[matmul-bf16]", "xfailed", known="matmul-bf16-planted"),
             _test("suite/test_kernels.py::test_matches_reference[fp8_codes-fp8e5]", "skipped",
                   "Skipped: fp8e5 is not supported on interpreter (interpreter profile)")]
    rows = summary.case_summary_rows(cases, tests)
    assert rows == [["fp8_codes", "fp8e5", "-", "-", "-", "not run"],
                    ["matmul", "bf16", 0, 0, 1, "8.11e+11 (known issue)"]]
    assert glance.not_run_lines(tests, "test_matches_reference") == [
        "not run: fp8_codes[fp8e5]: the dtype is not supported on interpreter (interpreter profile)"]


def test_what_passed_gives_way_to_the_known_issues_and_the_reasons_not_run():
    tests = [_test(f"suite/test_kernels.py::test_matches_reference[kernel_{i}-{d}]", "passed")
             for i in range(30) for d in ("fp32", "fp16", "bf16")]
    tests += [_test(f"suite/test_kernels.py::test_matches_reference[known_{i}-bf16]", "xfailed", known=f"issue-{i}")
              for i in range(3)]
    tests += [_test(f"suite/test_kernels.py::test_matches_reference[kernel_{i}-fp8e5]", "skipped",
                    f"Skipped: fp8e5 is not supported on interpreter (reason {r})") for r in range(5) for i in range(30)]
    lines = glance.verdict_lines({"tests": tests, "status": "complete"}, "r.json", 80)
    text = "\n".join(lines)
    assert len(lines) <= glance.MAX_TOTAL and all(len(line) <= 80 for line in lines), text
    assert "  passed   90 tests: every test of 90 kernel x dtype pairs of 30 kernels" in lines, text
    assert all(f"issue-{i}: known_{i}[bf16] (test_matches_reference)" in text for i in range(3)), text
    assert text.count("30 tests, the dtype is not supported on interpreter (reason") >= 2, text
    assert "... and 2 more (60 tests): the result file has them" in text, text  # the counts add up to 150


def test_a_test_of_no_kernel_is_named_by_its_function():
    tests = [_test("suite/test_hazards.py::test_inputs_are_the_same_on_every_device[normal]", "failed"),
             _test("suite/test_hazards.py::test_a_grid_past_65535_programs_on_axis_0_runs_every_program", "failed"),
             _test("suite/test_kernels.py::test_matches_reference[softmax-fp32]", "passed")]
    lines = glance.verdict_lines({"tests": tests, "cases": [{"kernel": "softmax"}], "status": "complete"}, "r.json")
    assert lines[1:3] == ["  failed   test_a_grid_past_65535_programs_on_axis_0_runs_every_program",
                          "           test_inputs_are_the_same_on_every_device: [normal]"], lines


def test_the_reach_table_of_every_kernel_fits_eighty_columns():
    """The main command's reach table was 82 columns wide: seven columns, a dtype list without spaces."""
    rows = [["layernorm_backward", "fp32,fp16,bf16", 5, "7/7", "-", "-", "-"],
            ["matmul", "bf16 (stopped: known issue),fp32,fp16", 5, "6/7", "descriptor", "-", "-"],
            ["vector_add_int64", "fp32,fp16,bf16", 4, "2/2", "-", "-", "-"]]
    headers = ["kernel", "dtypes", "configs run", "paths taken", "found by search", "not taken", "configs not fitting"]
    table = fit.fit_table(rows, headers, 80)
    assert max(len(line) for line in table.splitlines()) <= 80, table
    assert "descriptor" in table and "(stopped:" in table, table


def test_what_ran_unchecked_is_its_own_part_of_the_verdict_never_passed():
    """A GPU run without --memcheck: every kernel's memory accesses unchecked, said in the verdict with the option
    that checks them; an autotuned kernel that ran one config; a clean interpreter run says nothing of it."""
    tests = [_test(f"suite/test_kernels.py::test_matches_reference[k{i}-fp16]", "passed") for i in range(5)]
    data = {"tests": tests, "status": "complete",
            "memcheck": {"mode": "off", "kernels": {}, "unchecked": {f"k{i}": "memory checking is off in this run"
                                                                     for i in range(5)}},
            "coverage": [{"kernel": "k1", "dtype": "fp16", "untuned": {"k1_kernel": 4}}]}
    lines = glance.verdict_lines(data, "r.json", 80)
    text = "\n".join(lines)
    assert lines[0] == "VERDICT: PASSED: 5 of 5 tests passed", text
    body = " ".join(" ".join(lines).split())
    assert "unchecked memory accesses of 5 kernels: memory checking is off in this run; --memcheck checks them" in body
    assert "autotuning of k1[fp16]: k1_kernel ran the first of its 4 configs only" in body, text
    assert all(len(line) <= 80 for line in lines[:-1]), text
    label = next(line for line in lines if line.startswith("  unchecked"))
    passed = next(line for line in lines if line.startswith("  passed"))
    assert label.index("memory") == passed.index("5 tests"), text  # one column for every part
    data["memcheck"] = {"mode": "interpreter", "kernels": {"k0": {}}, "unchecked": {}}
    data["coverage"] = []
    assert not any("unchecked" in line for line in glance.verdict_lines(data, "r.json", 80))


def test_vendor_sensitive_cases_are_a_part_of_the_verdict():
    """Under --numerics, a run with 20 cases whose verdict flipped inside h100_sxm's approximate instructions' bounds
    ended "VERDICT: PASSED ..." with nothing more: the cases were named in a warning far above and in the run file
    alone. The verdict names them by kernel x dtype with the profile; a run with none says nothing of it."""
    tests = [_test(f"suite/test_kernels.py::test_matches_reference[k{i}-fp32]", "passed") for i in range(2)]
    cases = ([{"kernel": "k0", "dtype": "fp32", "vendor_sensitive": "vendor-sensitive: tl.exp ..."}] * 3
             + [{"kernel": "k1", "dtype": "fp32", "vendor_sensitive": "vendor-sensitive: `/` ..."}]
             + [{"kernel": "k1", "dtype": "fp32"}])
    data = {"tests": tests, "status": "complete", "cases": cases,
            "environment": {"numerics": {"profile": "h100_sxm"}}}
    lines = glance.verdict_lines(data, "r.json", 80)
    text = "\n".join(lines)
    assert lines[0] == "VERDICT: PASSED: modelled as h100_sxm; 2 of 2 tests passed", text
    body = " ".join(" ".join(lines).split())
    assert "sensitive 4 cases whose verdict flips within h100_sxm's approximate instructions' error bounds: " \
           "k0[fp32] 3, k1[fp32] 1" in body, text
    assert all(len(line) <= 80 for line in lines[:-1]), text
    data["cases"] = [{"kernel": "k1", "dtype": "fp32"}]
    assert not any("sensitive" in line for line in glance.verdict_lines(data, "r.json", 80))
