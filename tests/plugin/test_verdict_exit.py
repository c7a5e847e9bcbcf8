"""The verdict's first word agrees with the run's exit code, for every combination of outcomes (issue 49, item 15).

pytest decides the exit code from the tests' reports (1 where any failed, a strict known issue's test that passed
included; 2 where the run was interrupted); the verdict reads the run file (suite/plugin/glance.py). A known issue's
test that passed was once counted as failed by the verdict alone, a strict XPASS was "NOTHING RAN" with exit 1, and
an interrupted run read "PASSED ... the run did not finish". Here every combination of outcomes goes through the
recorder's outcome of each report (suite/plugin/recorder.py: outcome_of), pytest's own exit code (run for real, in
process, on tests that end each way) and the suite's (glance.exit_status), and the verdict's first word must agree.
"""

from __future__ import annotations

import itertools
import textwrap

import pytest

from suite.plugin import glance
from suite.plugin.recorder import outcome_of

# One test per way a test can end, as pytest runs it; the name says which.
TESTS = textwrap.dedent("""
    import pytest

    @pytest.fixture
    def broken_setup():
        raise RuntimeError("planted: a fixture that fails")

    @pytest.fixture
    def broken_teardown():
        yield
        raise RuntimeError("planted: a teardown that fails")

    def test_passed():
        pass

    def test_failed():
        assert False

    def test_error(broken_setup):
        pass

    @pytest.mark.xfail(strict=False, reason="known issue k")
    def test_xfailed():
        assert False

    @pytest.mark.xfail(strict=False, reason="known issue k")
    def test_xpassed():
        pass

    @pytest.mark.xfail(strict=True, reason="known issue k")
    def test_xpassed_strict():
        pass

    def test_skipped():
        pytest.skip("not supported here")

    def test_teardown_error(broken_teardown):
        pass

    def test_interrupted():
        raise KeyboardInterrupt
""")
KINDS = ("passed", "failed", "error", "xfailed", "xpassed", "xpassed_strict", "skipped", "teardown_error",
         "interrupted")


class Recorder:
    """The run file's tests as the suite's recorder records them (call reports, and setups that did not pass)."""

    def __init__(self) -> None:
        self.tests: list[dict] = []
        self.interrupted = False

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            name = report.nodeid.split("::")[-1]
            self.tests.append({"nodeid": f"suite/test_kernels.py::test_matches_reference[k_{name}-fp32]",
                               "outcome": outcome_of(report), "message": "Skipped: not supported here",
                               "known_issue": "k" if "x" in name.split("_")[1] else None})

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        self.interrupted = True


def real_run(tmp_path, kinds: tuple[str, ...]) -> tuple[dict, int]:
    """pytest, in this process, on the tests of ``kinds``: (the run file's data, pytest's exit code)."""
    (tmp_path / "test_ends.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    rec = Recorder()
    ids = [f"{tmp_path / 'test_ends.py'}::test_{k}" for k in kinds]
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--import-mode=importlib", "-c",
                        str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), *ids], plugins=[rec])
    status = "interrupted" if rec.interrupted else "complete"
    return {"tests": rec.tests, "status": status}, int(code)


def agree(data: dict, pytest_code: int) -> tuple[str, int]:
    code = glance.exit_status(data, pytest_code)
    lines = glance.verdict_lines(data, "r.json", 80, exitstatus=code)
    word = lines[0].removeprefix("VERDICT: ").split(":")[0]
    assert word == glance.verdict_state(data, code), lines
    assert code in glance.EXIT_CODES[word], (word, code, lines)
    return word, code


def model(kinds: tuple[str, ...]) -> int:
    """pytest's exit code for tests ending as ``kinds`` (checked against pytest itself below)."""
    if "interrupted" in kinds:
        return 2
    if {"failed", "error", "xpassed_strict", "teardown_error"} & set(kinds):
        return 1
    return 0


@pytest.mark.parametrize("kinds", [(k,) for k in KINDS] + [KINDS[:7], ("passed", "xpassed", "skipped"),
                                                           ("xfailed", "teardown_error"), ("passed", "interrupted")],
                         ids=lambda kinds: "+".join(kinds))
def test_the_verdict_agrees_with_pytests_own_exit_code(tmp_path, kinds):
    """Run for real: pytest's exit code is the model's, and the verdict's word agrees with the run's code."""
    data, code = real_run(tmp_path, kinds)
    assert code == model(kinds), (kinds, code, data)
    word, final = agree(data, code)
    expected = {2: "INTERRUPTED", 1: "FAILED"}.get(code) or (
        "PASSED" if {"passed", "xfailed", "xpassed"} & set(kinds) else "NOTHING RAN")
    assert word == expected, (kinds, word, data)


def _record(kind: str, i: int) -> dict:
    outcome = {"xpassed_strict": "xpassed-strict", "teardown_error": "passed"}.get(kind, kind)
    return {"nodeid": f"suite/test_kernels.py::test_matches_reference[k{i}_{kind}-fp32]", "outcome": outcome,
            "message": "Skipped: not supported", "known_issue": "k" if kind.startswith("x") else None}


def test_every_combination_of_outcomes_gives_a_verdict_that_agrees_with_the_exit_code():
    """Every subset of the ways a test ends (2**9 runs): the first word agrees with the exit code, and a known issue
    a run did not meet (xpassed) reads as one it met (xfailed): a verdict does not depend on the draw."""
    for n in range(len(KINDS) + 1):
        for kinds in itertools.combinations(KINDS, n):
            tests = [_record(k, i) for i, k in enumerate(kinds) if k != "interrupted"]
            data = {"tests": tests, "status": "interrupted" if "interrupted" in kinds else "complete"}
            word, code = agree(data, model(kinds))
            if "xpassed" in kinds and "xfailed" not in kinds:  # the same run had its draw met the issue
                met = [_record("xfailed", i) if k == "xpassed" else _record(k, i)
                       for i, k in enumerate(kinds) if k != "interrupted"]
                assert agree({**data, "tests": met}, model(kinds)) == (word, code), kinds


def test_an_interrupted_run_says_so_first_and_names_what_it_left():
    tests = [_record("passed", i) for i in range(3)] + [_record("failed", 9)]
    data = {"tests": tests, "status": "interrupted", "cases": [{"kernel": "attention"}],
            "unfinished": [{"nodeid": "suite/test_kernels.py::test_matches_reference[attention-fp32]",
                            "worker": "gw0", "began_s": 1.0, "running_s": 30.0}]}
    lines = glance.verdict_lines(data, "r.json", 100, exitstatus=2, not_started=4)
    text = " ".join(" ".join(lines).split())
    assert text.startswith("VERDICT: INTERRUPTED: the run did not finish (5 tests unfinished or never started); 1 "
                           "of the 4 tests that ended failed"), lines
    assert "unfinished 1 test running when it stopped: attention[fp32] 4 tests never started" in text, lines
    # -x stops the run after a failure: pytest's exit code is 1, and the verdict's word is FAILED
    assert glance.verdict_lines(data, "r.json", 100, exitstatus=1)[0].startswith("VERDICT: FAILED: 1 of 4 tests "
                                                                                 "failed"), lines


def test_a_known_issue_the_run_did_not_meet_is_named_not_failed():
    tests = [_record("passed", 0), {**_record("xpassed", 1), "known_issue": "torchao-even-k"}]
    lines = glance.verdict_lines({"tests": tests, "status": "complete"}, "r.json", 100, exitstatus=0)
    assert lines[0] == "VERDICT: PASSED: 1 of 2 tests passed", lines
    text = " ".join(" ".join(lines).split())
    assert "known torchao-even-k: k1_xpassed[fp32] (test_matches_reference): not met in this run" in text, lines


def test_cases_the_suite_left_unrun_are_named_in_the_verdict():
    """A nightly on four H100s read 'PASSED: 212 of 220 tests passed; 8 not run' while 4 cases had not run: 2 out of
    memory although they fit the GPU, 2 too large (the suite's own float64 reference). The verdict counts them in its
    first line and names them."""
    data = {"tests": [_record("passed", 0)], "status": "complete", "cases": [{"kernel": "attention"}],
            "gpu_share": {"too_large": 2, "oom_held": 2, "too_large_cases": [
                {"kernel": "attention", "dtype": "fp32", "case": 'attention[fp32] {"B": 8, "H": 23, "S": 4500} '
                                                                 'contiguous normal seed=3', "footprint_gib": 27.8},
                {"kernel": "attention", "dtype": "fp32", "case": 'attention[fp32] {"B": 7, "H": 31, "S": 4500} '
                                                                 'contiguous large seed=9', "footprint_gib": 33.0}]}}
    lines = glance.verdict_lines(data, "r.json", 80, exitstatus=0)
    assert lines[0] == "VERDICT: PASSED: 1 of 1 test passed; 4 cases not run", lines
    text = " ".join(" ".join(lines).split())
    assert 'not run 2 cases, too large for this GPU' in text and \
           'attention[fp32] {"B": 8, "H": 23, "S": 4500} needs 27.8 GiB' in text, lines
    assert "2 cases, out of memory although they fit the GPU: other processes held its memory" in text, lines
    assert len(lines) <= glance.MAX_TOTAL and all(len(line) <= 80 for line in lines), lines
    # One case met by two tests (the reference test and the properties test, once per property) is counted once: the
    # run file lists each case once; the counts are of meetings.
    data["gpu_share"].update(too_large=3, too_large_cases=data["gpu_share"]["too_large_cases"][:1], oom_held=5,
                             held_cases=[{"kernel": "row_sum", "dtype": "fp16", "case": 'row_sum[fp16] {"M": 8734} '
                                          'contiguous special seed=6', "footprint_gib": 59.1, "repro": "r"}])
    lines = glance.verdict_lines(data, "r.json", 80, exitstatus=0)
    assert lines[0] == "VERDICT: PASSED: 1 of 1 test passed; 2 cases not run", lines
    text = " ".join(" ".join(lines).split())
    assert "not run 1 case, too large" in text and "1 case, out of memory although it fits the GPU" in text, lines


def test_a_skip_with_a_case_names_its_reason_and_never_mangles_a_reproduction_line():
    """A test whose every case was too large was skipped with the case and its reproduction line; the verdict, which
    takes each test's dtype out of its reason to group alike ones, printed '[attention-the dtype]'."""
    message = ("Skipped: not run: all 1 case(s) too large for this GPU (out of memory with the GPU to themselves; not "
               "a wrong result): lower the dims' gpu_max for this GPU or run on a larger one.\n"
               'attention[fp32] {"B": 8} contiguous normal seed=3: not run: too large for this GPU (80 GiB)\n'
               "reproduce with: pytest 'suite/test_kernels.py::test_matches_reference[attention-fp32]' "
               "'--repro=B=8;layout=contiguous;values=normal;seed=3'")
    test = {"nodeid": "suite/test_kernels.py::test_matches_reference[attention-fp32]", "outcome": "skipped",
            "message": message, "known_issue": None}
    lines = glance.verdict_lines({"tests": [test], "status": "complete"}, "r.json", 120, exitstatus=0)
    text = " ".join(" ".join(lines).split())
    assert "the dtype]" not in text and "attention[the dtype]" not in text, lines
    assert ("not run 1 test, not run: all 1 case(s) too large for this GPU (out of memory with the GPU to "
            "themselves; not a wrong result): lower the dims' gpu_max for this GPU or run on a larger one.: "
            "attention[fp32]") in text, lines


def test_a_kernel_never_checked_exits_6_and_one_part_not_checkable_is_enough():
    """Nothing failed, and a kernel x dtype's value test was skipped as not checkable on the interpreter for a reason
    its author can remove: UNCHECKED, exit 6 (it ended PASSED, exit 0). A split test with one part not checkable
    left that part's cases, and the test's end where it was the last part, unchecked: the same."""
    ref = "suite/test_kernels.py::test_matches_reference"
    gap = "Skipped: k[fp32] {}: not checkable on the interpreter: Python `and` on block tensors in k at k.py:3"
    whole = {"tests": [{"nodeid": f"{ref}[k-fp32]", "outcome": "skipped", "message": gap},
                       {"nodeid": f"{ref}[j-fp32]", "outcome": "passed"}], "status": "complete"}
    assert agree(whole, 0) == ("UNCHECKED", 6)
    parts = {"tests": [{"nodeid": f"{ref}[k-fp32-part1of3]", "outcome": "passed"},
                       {"nodeid": f"{ref}[k-fp32-part2of3]", "outcome": "passed"},
                       {"nodeid": f"{ref}[k-fp32-part3of3]", "outcome": "skipped", "message": gap}],
             "status": "complete"}
    assert agree(parts, 0) == ("UNCHECKED", 6)
    assert glance.never_checked(parts) == ["k[fp32]: not checkable on the interpreter: Python `and` on block tensors "
                                           "in k at k.py:3"]
    platform = {"tests": [{"nodeid": f"{ref}[k-fp8e4nv]", "outcome": "skipped",
                           "message": "Skipped: fp8e4nv is not supported on interpreter"},
                          {"nodeid": f"{ref}[j-fp32]", "outcome": "passed"}], "status": "complete"}
    assert agree(platform, 0) == ("PASSED", 0)  # a platform that cannot run it is not the author's to fix
