"""A result that is wrong only sometimes is reported as intermittent, with its rate and a reproduction line that says
how many runs to try: never as Hypothesis's flaky-test error, whose replay passed and left a line that reproduced
nothing.

The kernels live in tests/fixtures/intermittent_kernels.py: one wrong on every 4th launch, one wrong on a single
launch, one always wrong.
"""

from __future__ import annotations

import json
import os
import re
import shlex

import pytest

from tests.conftest import ROOT, SuiteRun, run_python

MODULE = "--kernel-module=tests/fixtures/intermittent_kernels.py"
RATE = re.compile(r"wrong in (\d+) of (\d+) runs")
REPRO = re.compile(r"^reproduce with \(intermittent: wrong in \d+ of \d+ runs; try --repro-runs=(\d+)\): (pytest .*)$",
                   re.MULTILINE)


def suite(results_dir, *args: str, env: dict | None = None) -> SuiteRun:
    """The suite in a process of its own on the interpreter (as tests/conftest.py's run_suite, for a module's
    fixtures)."""
    child_env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "SUITE_INTERMITTENT_RUNS")}
    child_env["COLUMNS"] = "250"  # the summary's INTERMITTENT lines whole, as the tests below read them
    proc = run_python("pytest", "-p", "no:cacheprovider", "--backend=interpret", f"--results-dir={results_dir}", *args,
                      env={**child_env, **(env or {})}, timeout=600)
    return SuiteRun(proc, results_dir)


def never_flaky(run: SuiteRun) -> None:
    """Hypothesis's flaky-test error reaches neither the terminal nor the run file."""
    assert "FlakyFailure" not in run.output and "unreliable results" not in run.output, run.output[-4000:]
    for path in run.run_files():
        assert "FlakyFailure" not in path.read_text()


@pytest.fixture(scope="module")
def intermittent(tmp_path_factory) -> SuiteRun:
    """The reference test of the kernel wrong on every 4th launch."""
    return suite(tmp_path_factory.mktemp("intermittent"), "suite/test_kernels.py", MODULE, "--kernels=zz_intermittent")


def test_a_case_wrong_in_some_runs_is_intermittent_with_its_rate(intermittent) -> None:
    run = intermittent
    assert run.returncode == 1, run.output[-4000:]
    never_flaky(run)
    assert "intermittent: wrong in" in run.output, run.output[-4000:]
    wrong, runs = map(int, RATE.search(run.output).groups())
    assert runs == 21 and 0.1 <= wrong / runs <= 0.45, (wrong, runs)  # 1 run and 20 more; 1 launch in 4 is wrong
    found = REPRO.search(run.output)
    assert found and f"--repro-runs={found.group(1)}" in found.group(2), run.output[-4000:]
    data = run.run_data()
    flaky = [c for c in data["cases"] if c.get("failure") == "intermittent"]
    assert len(flaky) == 1 and flaky[0]["outcome"] == "failed", data["cases"]
    assert flaky[0]["intermittent"] == {"wrong": wrong, "runs": runs}
    assert flaky[0]["repro"] == found.group(2)
    # The summary gives it a line of its own: kernel, dtype, rate, config.
    line = next(t for t in run.output.splitlines() if t.startswith("INTERMITTENT zz_intermittent[fp32]: "))
    assert f"wrong in {wrong} of {runs} runs" in line and 'under config {"BLOCK_SIZE": ' in line, line


def test_the_printed_reproduction_line_fails_again_saying_intermittent(intermittent) -> None:
    found = REPRO.search(intermittent.output)
    assert found, intermittent.output[-4000:]
    argv = shlex.split(found.group(2))
    assert argv[0] == "pytest" and argv[-1].startswith("--repro-runs=")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = run_python(*argv, "-p", "no:cacheprovider", "--no-results", timeout=300, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "1 failed" in out, out[-4000:]
    wrong, runs = map(int, RATE.search(out).groups())
    assert f"intermittent: wrong in {wrong} of {runs} runs" in out and runs == int(found.group(1)) and 0 < wrong < runs
    assert "FlakyFailure" not in out


def test_a_new_intermittent_failure_is_a_regression_named_so(intermittent, tmp_path) -> None:
    base = suite(tmp_path / "base", "suite/test_kernels.py", MODULE, "--kernels=zz_intermittent",
                 env={"ZZ_WRONG_EVERY": "0"})
    assert base.returncode == 0, base.output[-3000:]
    (base_file,), (cand_file,) = base.run_files(), intermittent.run_files()
    proc = run_python("reports", "compare", str(base_file), str(cand_file), "--json", cwd=ROOT, timeout=120)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    rows = {r["kind"]: r for r in result["correctness_regressions"]}
    assert rows["case"]["base"] == "passed" and rows["test"]["base"] == "passed", rows
    for row in rows.values():
        assert RATE.search(row["candidate"]) and row["candidate"].startswith("failed (intermittent: "), row


def test_a_property_wrong_once_is_intermittent_never_flaky(tmp_path) -> None:
    """Batch invariance fails on the one wrong launch; every other run holds, Hypothesis's replay too."""
    run = suite(tmp_path / "runs", "suite/test_properties.py", MODULE, "--kernels=zz_wrong_once",
                env={"SUITE_INTERMITTENT_RUNS": "8"})
    assert run.returncode == 1, run.output[-4000:]
    never_flaky(run)
    assert "intermittent: wrong in 1 of 9 runs" in run.output, run.output[-4000:]
    found = REPRO.search(run.output)
    assert found and "suite/test_properties.py::test_properties[zz_wrong_once-fp32]" in found.group(2)
    finding = next(f for f in run.run_data()["findings"] if f.get("intermittent"))
    assert finding["intermittent"] == {"wrong": 1, "runs": 9} and finding["repro"] == found.group(2)
    assert not finding["holds"] and finding["message"].startswith("intermittent (wrong in 1 of 9 runs)")
    assert f"INTERMITTENT zz_wrong_once[fp32]: property {finding['property']!r} wrong in 1 of 9 runs" in run.output


def test_a_deterministic_wrong_kernel_is_reported_as_before(tmp_path) -> None:
    """Wrong in every run: a plain failure (no rate, no --repro-runs), and --repro-runs counts every run wrong."""
    run = suite(tmp_path / "runs", "suite/test_kernels.py", MODULE, "--kernels=zz_always_wrong")
    assert run.returncode == 1, run.output[-4000:]
    said = ("intermittent:", "(intermittent", "INTERMITTENT", "--repro-runs")  # the module's file name has the word
    assert not any(words in run.output for words in said), run.output[-4000:]
    (case,) = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert "failure" not in case and "intermittent" not in case, case
    assert f"reproduce with: {case['repro']}" in run.output
    argv = shlex.split(case["repro"])
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = run_python(*argv, "--repro-runs=3", "-p", "no:cacheprovider", "--no-results", timeout=300, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "(wrong in 3 of 3 runs)" in out, out[-4000:]
    assert not any(words in out for words in said[:3]), out[-4000:]


def test_the_report_names_an_intermittent_case_with_its_rate(intermittent, tmp_path) -> None:
    (cand_file,) = intermittent.run_files()
    proc = run_python("reports", "build", str(cand_file), "--out", str(tmp_path / "r"), cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (tmp_path / "r" / "report.md").read_text()
    wrong, runs = map(int, RATE.search(intermittent.output).groups())
    assert f"failed (intermittent: wrong in {wrong} of {runs} runs)" in report
    assert "1 intermittent cases" in report  # the verdict's count
    assert f"failed (intermittent: wrong in {wrong} of {runs} runs)" in (tmp_path / "r" / "report.html").read_text()


def test_the_run_file_schema_holds_an_intermittent_case_and_its_counts() -> None:
    import jsonschema

    from reports import schema_check
    from reports.loading import SCHEMA_PATH
    from tests.report_helpers import make_run

    schema = json.loads(SCHEMA_PATH.read_text())
    run = make_run()
    run["cases"][0].update(outcome="failed", failure="intermittent", intermittent={"wrong": 3, "runs": 21})
    assert not list(schema_check.problems(run, schema))
    jsonschema.validate(run, schema)
    run["cases"][0]["intermittent"] = {"wrong": 0, "runs": 21}  # wrong in none of its runs is no intermittent case
    assert {p.path for p in schema_check.problems(run, schema)} == {("cases", 0, "intermittent", "wrong")}
