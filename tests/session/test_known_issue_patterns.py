"""Issue 39: a known issue covers the failure it describes, not every failure of its kernel and dtype.

A known issue used to match on kernel, dtype, backend and test alone, and stopped its test at the first failing case:
a second, different bug of the same kernel and dtype was hidden, and the cases after the first failure never ran.
An entry's ``failure_pattern`` (a regular expression over the failure message) says what fails; any other failure
fails the run, and cases keep running past the ones it covers. The kernels are in
tests/fixtures/known_issue_kernels.py.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import re

import pytest

from kernels.spec import DTYPES, KnownIssue, SpecError
from kernels.vector_add import SPEC as VECTOR_ADD
from suite.checks import ordinary
from suite.session import known_issues

KERNELS = "--kernel-module=tests/fixtures/known_issue_kernels.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}
ENTRY = {"id": "x", "backend": "interpret", "arch": "*", "triton": ">=3.0,<4", "kernel": "matmul", "dtype": "bf16",
         "reason": "r", "link": "https://example.invalid/1"}


def test_a_second_bug_under_a_known_issue_fails_and_the_other_cases_run_on(run_suite):
    run = run_suite("suite/test_kernels.py", KERNELS, "--kernels=known_nan_add,known_nan_and_sub_add", "-n", "0",
                    env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    tests = {t["nodeid"].split("[")[1].rsplit("-", 1)[0]: t for t in data["tests"]}
    known = tests["known_nan_add"]
    assert known["outcome"] == "xfailed" and known["known_issue"] == "nan-for-large-x", known
    cases = [c for c in data["cases"] if c["kernel"] == "known_nan_add"]
    # The first case ('large') fails as the issue describes (recorded as xfailed); the other cases ran on after it
    # (they used to be skipped).
    [failed] = [c for c in cases if c["outcome"] == "xfailed"]
    assert failed["values"] == "large" and "NaN where the reference is not" in failed["message"], failed
    assert len([c for c in cases if c["outcome"] == "passed"]) >= 10, [c["values"] for c in cases]

    other = tests["known_nan_and_sub_add"]
    assert other["outcome"] == "failed", other
    assert "out: error " in other["message"] and "values=negative" in other["message"], other["message"]
    assert ("(not the failure known issue nan-for-large-x-2 describes: its failure_pattern 'NaN where the reference "
            "is not' does not describe every problem here") in other["message"], other["message"]
    # Line by line, but for its figures and how the run was started, an ordinary wrong value's message as
    # suite/checks/ordinary.py writes them: what a failure_pattern must not be found in.
    spec = dataclasses.replace(VECTOR_ADD, name="known_nan_and_sub_add", value_classes=("normal", "large", "negative"))
    written = {_shape(line) for text in ordinary.messages(spec, ["fp32"], ["interpret"],
                                                          module="tests/fixtures/known_issue_kernels.py")
               for line in text.splitlines()}
    for line in other["message"].splitlines()[:3]:
        assert _shape(line) in written, (line, sorted(w for w in written if w[:8] == _shape(line)[:8]))


def test_a_known_issue_excuses_only_the_problem_it_describes(run_suite):
    """Element 0 NaN (the issue) and every other element 1.5x its answer, in one output of one case: the pattern was
    found in the case's whole message, so the second bug passed as known. Each problem is matched on its own now."""
    run = run_suite("suite/test_kernels.py", KERNELS, "--kernels=known_nan_and_scaled_add", "-n", "0",
                    "-k", "test_matches_reference", env=FAST_SHRINK)
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert "NaN where the reference is not" in test["message"] and "elements over" in test["message"], test
    assert "does not describe every problem here" in test["message"], test["message"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_known_issue_of_the_worst_element_does_not_excuse_a_second_bug_under_it(run_suite):
    """Element 0 stored as 1e6 (the issue, described by its got) and every other element 1.0001x its answer, always
    far under the first error: an output's over-the-bound problem was its worst element alone, so the second bug
    passed as known (xfail). Each element over the bound is a problem of its own now, and the test fails."""
    run = run_suite("suite/test_kernels.py", KERNELS, "--kernels=known_worst_and_scaled_add", "-n", "0",
                    "-k", "test_matches_reference", env=FAST_SHRINK)
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert "elements over" in test["message"], test["message"]
    assert "does not describe every problem here" in test["message"], test["message"]
    assert run.returncode == 1, run.output[-3000:]


@pytest.mark.parametrize("kernel", ["known_nan_first_and_odd_add", "known_flush_and_scaled_add"])
def test_a_pattern_of_the_first_element_or_of_the_output_excuses_no_other_element(run_suite, kernel):
    """A known issue describing the first NaN (NaN at odd elements too), or the flush words a failure adds (1e-30 at
    about 1% of the elements too): a NaN problem named its first element alone, and the flush words were added to
    every element's problem, so the second bug passed as known (xfail). Each NaN is a problem of its own now, and the
    flush words are said of a flushed element alone: the test fails."""
    run = run_suite("suite/test_kernels.py", KERNELS, f"--kernels={kernel}", "-n", "0",
                    "-k", "test_matches_reference", env=FAST_SHRINK)
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert "does not describe every problem here" in test["message"], test["message"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_pattern_of_where_the_case_is_alone_describes_no_problem(run_suite):
    """x - y past element 0 under a known issue whose pattern names only the case's dims past 1: held at load to
    ordinary wrong values of the smallest shape, and matched after each case's line, it excused every wrong case
    past N=1 (the test an expected failure). A pattern found in an ordinary wrong value of the problem's own case
    describes no problem now, and the test fails."""
    run = run_suite("suite/test_kernels.py", KERNELS, "--kernels=known_dims_only_add", "-n", "0",
                    "-k", "test_matches_reference", env=FAST_SHRINK)
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert "elements over" in test["message"], test["message"]
    assert "does not describe every problem here" in test["message"], test["message"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_known_issue_never_excuses_a_broken_spec(run_suite):
    """A spec that hands its kernel one subnormal among normals (a broken spec) under a known issue whose pattern is
    that message: matched per problem, the broken spec passed as the platform's bug. It fails now."""
    run = run_suite("suite/test_kernels.py", KERNELS, "--kernels=known_broken_spec_add", "-n", "0",
                    "-k", "test_matches_reference", env=FAST_SHRINK)
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert "broken spec: kernel spec 'known_broken_spec_add': the case's value class is 'subnormal'" in \
        test["message"], test["message"]
    assert run.returncode == 1, run.output[-3000:]


def _shape(line: str) -> str:
    """A message's line without its figures and launcher."""
    line = re.sub(r"^reproduce with: .*? (?='?suite/)", "reproduce with: L ", line)
    return re.sub(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", "N", line)


def test_covers_searches_the_failure_message():
    issue = known_issues.KnownIssue(**ENTRY, failure_pattern=r"c: error \S+ at \(\d+, \d+\) is \S+x the bound")
    assert issue.covers("matmul[bf16] {'M': 3}\nc: error 4.1e+10 at (0, 1) is 3.2e+12x the bound 1.3e-02; 9 of 9 ...")
    assert not issue.covers("c: 3 of 9 elements never written (they still hold the poison; first at (0, 1))")


@pytest.mark.parametrize("pattern", ["", ".*", "x|", "(NaN)?"])
def test_a_known_issue_that_would_match_every_failure_is_refused(tmp_path, pattern):
    """'' (the default), '.*', 'x|': a pattern that matches the empty string is found in any message, and a kernel
    1.5x wrong passed as '3 known issues'. Refused, in the file (naming it and the entry) and in a module's spec."""
    path = tmp_path / "known.json"
    entry = {**ENTRY, "id": "anything"} | ({"failure_pattern": pattern} if pattern else {})
    path.write_text(json.dumps({"known_issues": [entry]}))
    with pytest.raises(known_issues.KnownIssueError) as err:
        known_issues.load(path)
    assert f"{path}: known_issues[0] ('anything'): field 'failure_pattern' " in str(err.value), str(err.value)
    assert "it would match every failure; give a regular expression of what fails" in str(err.value), str(err.value)
    with pytest.raises(SpecError, match=r"known_issues'.*\('k'\): failure_pattern .* matches the empty string, so it "
                                        r"matches every failure"):
        VECTOR_ADD.__class__(**{**VECTOR_ADD.__dict__, "known_issues": (
            KnownIssue(id="k", reason="r", link="", failure_pattern=pattern),)})


@pytest.mark.parametrize("kernel", ["*", "?*", "[a-z]*"])
def test_a_known_issue_of_any_kernel_is_refused(tmp_path, kernel):
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_issues": [{**ENTRY, "kernel": kernel, "failure_pattern": "NaN"}]}))
    with pytest.raises(known_issues.KnownIssueError) as err:
        known_issues.load(path)
    assert f"{path}: known_issues[0] ('x'): field 'kernel' {kernel!r} matches any kernel" in str(err.value)
    path.write_text(json.dumps({"known_issues": [{**ENTRY, "kernel": "liger_*", "failure_pattern": "NaN"}]}))
    assert known_issues.load(path)[0].kernel == "liger_*"  # a pattern of some kernels is a name


def test_the_shipped_known_issues_say_what_fails(monkeypatch):
    """The shipped file, and every known issue the shipped kernels, the examples and the fixtures declare, load: each
    with a pattern of what fails."""
    import importlib
    from pathlib import Path

    assert all(issue.failure_pattern for issue in known_issues.load()), known_issues.load()
    from kernels import registry

    registry.load_builtin()
    for name in ("_REGISTRY", "_WHERE", "_LOADED"):  # this test's registrations are its own
        monkeypatch.setattr(registry, name, type(getattr(registry, name))(getattr(registry, name)))
    for name, where in list(registry._WHERE.items()):  # what another test of this process loaded: loaded again here
        if not where.startswith("kernels/"):
            registry._REGISTRY.pop(name, None)
            registry._WHERE.pop(name)
    registry._LOADED.clear()
    root = Path(__file__).resolve().parents[2]
    examples = sorted(str(p.relative_to(root)) for p in (root / "examples").glob("*.py"))
    for module in (*examples, "tests/fixtures/bring_your_own.py", "tests/fixtures/known_issue_kernels.py",
                   "tests/fixtures/tinyquant_specs.py"):
        library = {"examples/liger_kernel.py": "liger_kernel", "examples/flag_gems.py": "flag_gems"}.get(module)
        if library and importlib.util.find_spec(library) is None:
            continue
        registry.load_module(str(root / module))
    declared = [k for spec in registry.all_specs() for k in spec.known_issues]
    assert declared and all(k.failure_pattern for k in declared), declared
    # None is found in an ordinary wrong-value message of its kernel, nor names every kernel (issue 61, item 3).
    specs = registry.all_specs()
    where = {s.name: registry.where(s.name) for s in specs}
    known_issues.check_kernels(known_issues.load(), [s.name for s in specs], list(DTYPES), known_issues.DEFAULT_PATH)
    ordinary.check_file(known_issues.load(), known_issues.DEFAULT_PATH, specs, where=where)
    ordinary.check_modules(specs, where=where)


def test_a_failure_pattern_that_is_no_regular_expression_is_refused(tmp_path):
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_issues": [{**ENTRY, "failure_pattern": "dot x("}]}))
    with pytest.raises(known_issues.KnownIssueError) as err:
        known_issues.load(path)
    assert f"{path}: known_issues[0]: field 'failure_pattern' is not a regular expression: 'dot x('" in str(err.value)
    with pytest.raises(SpecError, match=r"known_issues'.*\('k'\): failure_pattern is not a regular expression"):
        VECTOR_ADD.__class__(**{**VECTOR_ADD.__dict__, "known_issues": (
            KnownIssue(id="k", reason="r", link="", failure_pattern="dot x("),)})


def _builtin_specs():
    from kernels import registry

    registry.load_builtin()
    return registry.all_specs()


def _file_entry(tmp_path, **change):
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_issues": [{**ENTRY, "failure_pattern": "NaN where the reference is not",
                                                  **change}]}))
    return path


@pytest.mark.parametrize("pattern", [
    ".",  # any character: every message has one
    "matmul",  # the kernel's own name: every message begins with the case line
    r"matmul\[bf16\]",  # the case line's prefix
    "reproduce with",  # every message ends with the reproduction line
    r"[\s\S]", "(?s).", r"\b",
    r"error \S+ at \S+ is \S+x the bound",  # an ordinary wrong value, whatever the bug
    # Anchored at a problem's ends: found in no whole message, and in each problem a known issue is matched against
    r"\Ac: ", r"^c: error", r"elements over$", r"over\Z", r"\A\w+:", r"\ARuntimeError",
])
def test_a_pattern_that_an_ordinary_wrong_value_meets_is_refused(tmp_path, pattern):
    """Issue 61, item 3: a failure_pattern found in an ordinary wrong-value message of its kernel (the kernel's name,
    '.', the reproduction line) would take any wrong result for the bug it describes. Refused, in the file (naming
    the file, the entry and why) and in a module (naming the module, the kernel and the entry)."""
    specs = _builtin_specs()
    path = _file_entry(tmp_path, failure_pattern=pattern)
    with pytest.raises(known_issues.KnownIssueError) as err:
        ordinary.check_file(known_issues.load(path), path, specs)
    text = str(err.value)
    assert f"{path}: known_issues[0] ('x'): field 'failure_pattern' {pattern!r} is found in an ordinary wrong-value " \
           f"message of kernel 'matmul'" in text, text
    assert "give what this bug's failure says and a wrong value's does not" in text, text
    matmul = next(s for s in specs if s.name == "matmul")
    spec = dataclasses.replace(matmul, known_issues=(KnownIssue(id="k", reason="r", link="", dtype="bf16",
                                                                failure_pattern=pattern),))
    with pytest.raises(known_issues.KnownIssueError) as err:
        ordinary.check_modules([spec], where={"matmul": "kernels/matmul.py"})
    text = str(err.value)
    assert (f"kernels/matmul.py: kernel 'matmul' known_issues[0] ('k'): failure_pattern {pattern!r} is found in an "
            f"ordinary wrong-value message of kernel 'matmul'") in text, text


@pytest.mark.parametrize("kernel", ["?*?", "[a-z]?*", "[a-u]*", "*_*", "*ma*"])
def test_a_kernel_glob_of_any_name_is_refused(tmp_path, kernel):
    """'?*?' matches every registered kernel (each name has two characters), '*_*' most: a pattern of kernels keeps
    three characters of their name in a row."""
    path = _file_entry(tmp_path, kernel=kernel)
    with pytest.raises(known_issues.KnownIssueError) as err:
        known_issues.load(path)
    assert f"{path}: known_issues[0] ('x'): field 'kernel' {kernel!r} keeps " in str(err.value), str(err.value)
    assert "a pattern of kernels keeps at least 3 characters of their name in a row" in str(err.value)


def test_a_kernel_glob_that_matches_every_registered_kernel_is_refused(tmp_path):
    path = _file_entry(tmp_path, kernel="liger_*")
    with pytest.raises(known_issues.KnownIssueError) as err:
        known_issues.check_kernels(known_issues.load(path), ["liger_a", "liger_b"], list(DTYPES), path)
    assert (f"{path}: known_issues[0] ('x'): field 'kernel' 'liger_*' matches every registered kernel (all 2)"
            in str(err.value)), str(err.value)
    known_issues.check_kernels(known_issues.load(path), ["liger_a", "liger_b", "matmul"], list(DTYPES), path)


def test_a_pattern_of_what_the_bug_says_is_accepted(tmp_path):
    specs = _builtin_specs()
    for pattern in ("NaN where the reference is not", r"on the interpreter this kernel did bf16 arithmetic",
                    r"\(got -?0\.0, reference", "property 'scaled_exactly' does not hold"):
        path = _file_entry(tmp_path, failure_pattern=pattern, kernel="matmul*")
        known_issues.check_kernels(known_issues.load(path), [s.name for s in specs], list(DTYPES), path)
        ordinary.check_file(known_issues.load(path), path, specs)


def test_a_broad_pattern_in_the_file_is_a_usage_error(run_suite, tmp_path):
    path = _file_entry(tmp_path, failure_pattern="matmul")
    run = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", f"--known-issues={path}")
    assert run.returncode == 4, run.output[-3000:]
    assert "INTERNALERROR" not in run.output, run.output[-3000:]
    assert (f"--known-issues: {path}: known_issues[0] ('x'): field 'failure_pattern' 'matmul' is found in an ordinary "
            f"wrong-value message of kernel 'matmul'") in run.output, run.output[-3000:]


def _properties_verdict(exc: BaseException, pattern: str) -> str:
    """What the hook makes of a test_properties failure ``exc`` under a known issue of ``pattern``: its outcome."""
    from types import SimpleNamespace

    from suite.plugin import hooks

    issue = known_issues.KnownIssue(**{**ENTRY, "kernel": "vector_add", "dtype": "fp32", "failure_pattern": pattern})
    item = SimpleNamespace(originalname="test_properties",
                           callspec=SimpleNamespace(params={"kernel_dtype": (VECTOR_ADD, "fp32", issue)}))
    report = SimpleNamespace(wasxfail="known issue x", outcome="skipped", longrepr=None)
    hooks._fail_unless_known(item, SimpleNamespace(when="call", excinfo=SimpleNamespace(value=exc)), report)
    return report.outcome


def _property_failure(detail: str, line: str = "pytest x --repro=N=4123;seed=7") -> BaseException:
    from suite.checks.caseloop import fail

    body = f"property 'batch_invariant' does not hold for vector_add[fp32] {{\"N\": 3}}\n{detail}"
    try:
        fail(f"{body}\nreproduce with: {line}\n(shrinking stopped; the first failing case: --repro=N=4123)", [body])
    except pytest.fail.Exception as exc:
        return exc
    raise AssertionError("fail() did not raise")


def test_a_property_failure_is_matched_by_its_problems_not_its_reproduction_lines():
    """A property's failure is excused only where the issue describes the problem (its first line and detail): a
    pattern found in the reproduction line or the shrinking note alone (the first failing case was N=4123, the one
    shown N=3) used to keep the xfail, matched against the whole message."""
    wrong = _property_failure("row 1 differs from the single-row run")
    assert _properties_verdict(wrong, r"N=4123") == "failed"
    assert _properties_verdict(wrong, r"row \d+ differs from the single-row run") == "skipped"  # still the xfail
    # Hypothesis's distinct failures: each must be described (by the issue, or one of a group's entries)
    other = _property_failure("out: 2 NaN where the reference is not")
    group = builtins.BaseExceptionGroup("Hypothesis found 2 distinct failures.", [wrong, other])
    assert _properties_verdict(group, r"row \d+ differs") == "failed"
    assert _properties_verdict(group, r"row \d+ differs|NaN where the reference is not") == "skipped"
    # A failure that carries no problems (a benchmark's) is one problem: its whole text, as before.
    assert known_issues.problems_of(RuntimeError("slower than the ceiling")) == ["slower than the ceiling"]


def test_a_second_bug_whose_ratio_ties_the_known_ones_is_found_among_thousands(run_suite):
    """0 at every even element (the known issue) and twice the answer at element 1 (not described: the same error
    ratio as a 0 there): with 2501 elements over, 256 of them spread over their ranks missed element 1 in 3 of 6
    seeds tried, and this case (seed 2) passed as known. Up to tolerance.OVER_SAMPLE = 4096 elements over are each a
    problem now: it fails."""
    run = run_suite("suite/test_kernels.py", KERNELS, "--kernels=known_past_the_sample_add", "-n", "0",
                    "--repro=N=5000;layout=contiguous;values=normal;seed=2")
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert "does not describe every problem here" in test["message"], test["message"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_known_issue_of_unwritten_elements_excuses_no_wrong_written_one(run_suite):
    """The last element never written (the known issue) and twice the answer at element 0: an output with unwritten
    elements was judged by them alone, so the second bug passed as known. The written elements are judged too."""
    run = run_suite("suite/test_kernels.py", KERNELS, "--kernels=known_unwritten_and_2x_add", "-n", "0",
                    "-k", "test_matches_reference", env=FAST_SHRINK)
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert "and where written: error" in test["message"], test["message"]
    assert "does not describe every problem here" in test["message"], test["message"]
    # the case the issue does not describe is recorded, and listed, as failed (it read XFAILED beside FAILED)
    assert [c["outcome"] for c in run.run_data()["cases"] if c["outcome"] != "passed"] == ["failed"]
    assert "FAILED case known_unwritten_and_2x_add[fp32]" in run.output and "XFAILED case" not in run.output
    assert run.returncode == 1, run.output[-3000:]
