"""The reference test's end (suite/checks/reference_loop.py, ReferenceLoop.finish): every end-of-test rule is judged
whatever another rule found, each failing one is said, and a known issue's cases or a too-large case never switch a
rule off. Each rule fires alone, then with each other rule present, and with a known issue's cases beside it."""

from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import pytest

from kernels.spec import Case, Dim
from suite.checks import launches
from suite.checks.reference_loop import Passed, ReferenceLoop
from suite.session import known_issues

# What each rule's failure says (a fragment of its message).
SAYS = {
    "nothing_compared": "had no element in any of the",
    "unreachable": "declared path(s) ['tail'] are taken by no case",
    "never_launched": "launched a @triton.jit function",
    "one_program": "ran a grid of one program",
    "loose": "the tolerance would pass a result off by 50%",
    "contract": "the launcher accepted a layout the spec did not declare",
}


def _loop(fire: set[str], known: bool = False, too_large: bool = False, split: int = 1,
          last: bool = False) -> ReferenceLoop:
    """A ReferenceLoop at its end, its passed cases made so that exactly the rules in ``fire`` fail."""
    loop = object.__new__(ReferenceLoop)
    loop.spec = SimpleNamespace(name="k", outputs=("out", "other"), untested_reason=None,
                                dims=(Dim("N", interpret_max=4096),), jit_kernels=lambda: ())
    loop.dtype, loop.split, loop.last = "fp32", split, last
    loop.backend = SimpleNamespace(name="interpret", family="interpret")
    loop.coverage = SimpleNamespace(unreachable=["tail"] if "unreachable" in fire else [], stopped_by=None)
    loop.records, loop.too_large = [], ["k[fp32] N=9: too large"] if too_large else []
    loop.vendor_sensitive = []
    p = Passed(cases=3, elements=30, judged=3)
    p.launched.update({} if "never_launched" in fire else {"kern": 3})
    p.compared.update(out=30, other=0 if "nothing_compared" in fire else 30)
    p.widest.update(kern=1 if "one_program" in fire else 4)
    p.loose[:] = ["k[fp32] N=1: loose"] * 3 if "loose" in fire else []
    loop.passed = p
    loop.contract_failure = ("k[fp32] N=5\nthe launcher accepted a layout the spec did not declare, restride "
                             "'broadcast' (x), and its result is wrong" if "contract" in fire else None)
    issue = SimpleNamespace(id="issue-1", failure_pattern="out: error", as_record=dict)
    loop.known_issue = issue if known else None
    loop.known = [({"outcome": "failed"}, "k[fp32] N=2\nout: error 3x the bound")] if known else []
    return loop


@pytest.fixture(autouse=True)
def _no_launch_state(monkeypatch):
    monkeypatch.setattr(launches, "take_launched", dict)
    monkeypatch.setattr(launches, "take_widest", lambda: {})


def _failure(loop: ReferenceLoop) -> str:
    with pytest.raises(pytest.fail.Exception) as err:
        loop.finish(searched=True)
    return str(err.value)


@pytest.mark.parametrize("fire", [{a} for a in SAYS] + [{a, b} for a, b in itertools.combinations(SAYS, 2)],
                         ids=lambda fire: "+".join(sorted(fire)))
def test_every_rule_that_fails_is_said_whatever_else_fired(fire):
    message = _failure(_loop(fire))
    for rule, says in SAYS.items():
        assert (says in message) == (rule in fire), (rule, message)


@pytest.mark.parametrize("rule", list(SAYS))
def test_a_known_issues_cases_never_switch_a_rule_off(rule):
    message = _failure(_loop({rule}, known=True))  # a failure, never the known issue's xfail
    assert SAYS[rule] in message and "1 case(s) failed as known issue issue-1 describes" in message, message


@pytest.mark.parametrize("rule", list(SAYS))
def test_a_case_too_large_never_switches_a_rule_off(rule):
    with pytest.warns(UserWarning, match="1 case\\(s\\) not run, too large"):
        message = _failure(_loop({rule}, too_large=True))
    assert SAYS[rule] in message, message


def test_all_rules_at_once():
    message = _failure(_loop(set(SAYS), known=True, too_large=True))
    assert all(says in message for says in SAYS.values()), message


def test_with_no_rule_failing_the_known_issue_and_then_the_skips_decide():
    with pytest.raises(known_issues.KnownIssueFailure, match="known issue issue-1: 1 case"):
        _loop(set(), known=True).finish(searched=True)
    _loop(set()).finish(searched=True)  # nothing to say: the test passes
    nothing_ran = _loop(set(), too_large=True)
    nothing_ran.passed = Passed()
    with pytest.raises(pytest.skip.Exception, match="not run: all 1 case"):
        nothing_ran.finish(searched=True)


def test_a_part_judges_the_whole_only_as_the_last_part_to_finish():
    _loop(set(SAYS), split=3, last=False).finish(searched=True)  # another part will judge the whole
    message = _failure(_loop(set(SAYS), split=3, last=True))
    assert all(says in message for says in SAYS.values()), message


def test_a_parts_tallies_add_up_in_the_last_part():
    first, second = Passed(), Passed()
    first.add(Case("k", "fp32", {"N": 4}, "contiguous", "normal", 0),
              SimpleNamespace(elements=4, compared={"out": 4}, loose=None, checks=[]))
    first.launched, first.widest = {}, {"kern": 1}
    second.launched, second.widest = {"kern": 2}, {"kern": 3, "other": 1}
    second.compared["out"] = 6
    second.cases, second.elements, second.judged = 1, 6, 1
    second.loose.append("k[fp32] N=6: loose")
    first.merge(second.state())
    assert (first.cases, first.elements, first.launched, first.judged) == (2, 10, {"kern": 2}, 2)
    assert first.widest == {"kern": 3, "other": 1} and first.compared == {"out": 10}
    assert first.loose == ["k[fp32] N=6: loose"]



def test_a_split_test_judges_launches_and_grids_over_its_parts(run_suite, tmp_path):
    """A durations file that splits a test in two: the kernel that never launched and the kernel whose every launch
    ran one program fail as they do whole (each part alone saw only its share; the last part judges the whole)."""
    import json

    ref = "suite/test_kernels.py::test_matches_reference"
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"parts": {f"{ref}[{k}-fp32]": 2 for k in ("never_launched_add", "one_program_add")},
                                 "tests": {}}))
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/thin_specs.py",
                    "--kernels=never_launched_add,one_program_add", "-n", "0",
                    env={"SUITE_TEST_COSTS": str(costs), "SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"]: t for t in run.run_data()["tests"]}
    assert sorted(tests) == [f"{ref}[{k}-fp32-part{i}of2]" for k in ("never_launched_add", "one_program_add")
                             for i in (1, 2)], sorted(tests)
    failed = {n.split("[")[1].split("-")[0]: t["message"] for n, t in tests.items() if t["outcome"] == "failed"}
    assert set(failed) == {"never_launched_add", "one_program_add"}, tests  # one part each: the last to finish
    assert "launched a @triton.jit function" in failed["never_launched_add"], failed
    assert "ran a grid of one program" in failed["one_program_add"], failed
    assert run.returncode == 1, run.output[-3000:]


def test_a_known_issue_excuses_its_cases_and_never_the_config_search(run_suite):
    """Cases that meet the known issue (a NaN at element 0 where N % 3 == 0) are excused; the one wrong config of
    eight, which the drawn cases never sampled, is still searched for and fails the test (it was an xfail)."""
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/thin_specs.py",
                    "--kernels=autotuned_one_wrong_known_add", "-n", "0", env={"SUITE_SHRINK_SECONDS": "3"})
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert 'with config {"BLOCK": 256, "num_stages": 3, "num_warps": 4}: out: error ' in test["message"], test
    assert run.returncode == 1, run.output[-3000:]


def test_the_kernel_that_launched_is_the_specs_own(run_suite):
    """A helper kernel launched in every case (it zero-fills the output, torch's answer is copied in): 'the kernel
    launched' was met by any launch, and the test passed with the spec's kernel never run."""
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/own_kernel.py",
                    "--kernels=helper_filled_add,own_add,namesake_add", "-n", "0", env={"SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in run.run_data()["tests"]}
    assert tests["own_add"]["outcome"] == "passed", tests["own_add"]
    message = tests["helper_filled_add"]["message"] or ""
    assert tests["helper_filled_add"]["outcome"] == "failed", tests["helper_filled_add"]
    # Judged in each case now (suite/checks/last_writer.py), before the test's end could say it.
    assert re.search(r"broken spec: the case launched \S*zero_fill, none of them the spec's own kernel\(s\) "
                     r"kernels\.vector_add\.vector_add_kernel", message), message
    # A kernel of another module named as the spec's own is not the spec's own: matched by module and name.
    namesake = tests["namesake_add"]
    assert namesake["outcome"] == "failed" and "none of them the spec's own kernel(s)" in namesake["message"], namesake
    assert run.returncode == 1, run.output[-3000:]


def test_the_specs_own_kernel_wrote_an_output(run_suite):
    """The spec's kernel launched on tensors of its own in every case; a helper kernel and torch wrote the output:
    the kernel launched, and nothing it wrote was checked."""
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/own_kernel.py",
                    "--kernels=own_on_the_side_add", "-n", "0", env={"SUITE_SHRINK_SECONDS": "3"})
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    # Judged in each case now (suite/checks/last_writer.py): the helper's zeros and torch's answer came after it.
    assert re.search(r"broken spec: output 'out': \d+ of \d+ element\(s\) changed after the last launch of "
                     r"vector_add_kernel", test["message"]), test


def test_a_value_class_declared_but_never_built_is_a_broken_spec(run_suite):
    """A spec that lists 'subnormal' but draws randn whatever the class: a kernel that flushes subnormals passed,
    recorded as tested with them (issue 61, item 7)."""
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/own_kernel.py",
                    "--kernels=values_ignored_add", "-n", "0", env={"SUITE_SHRINK_SECONDS": "3"})
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    [case] = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert case["values"] == "subnormal" and case["failure"] == "spec", case
    assert case["message"].startswith("broken spec: kernel spec 'values_ignored_add': the case's value class is "
                                      "'subnormal', yet no input holds a subnormal value"), case["message"]


def test_the_values_judged_are_the_last_the_specs_kernel_left(run_suite):
    """A wrong kernel (x - y) whose launcher makes the judged values right: torch writing after it, it launched with
    every lane masked or on the output's int32 bits, used on the tiny cases only, or writing the head of an output
    whose tail torch wrote first. Each passed while the rule was 'the kernel received the output'; each fails now in
    its cases (suite/checks/last_writer.py), and vector_add as it ships still passes."""
    names = ["own_then_torch_add", "own_masked_add", "own_int32_view_add", "own_on_tiny_only_add", "torch_first_add"]
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/own_kernel.py",
                    f"--kernels={','.join(names)},own_add", "-n", "0", "-k", "test_matches_reference",
                    env={"SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in run.run_data()["tests"]}
    assert tests["own_add"]["outcome"] == "passed", tests["own_add"]
    why = {"own_then_torch_add": "changed after the last launch of wrong_add_kernel",
           "own_masked_add": "changed after the last launch of wrong_add_kernel",
           "own_int32_view_add": "changed after the last launch of wrong_add_kernel",
           "own_on_tiny_only_add": "changed after the last launch of wrong_add_kernel",
           "torch_first_add": "were written by torch or another kernel before or between the launches"}
    for name in names:
        assert tests[name]["outcome"] == "failed", tests[name]
        assert why[name] in tests[name]["message"], (name, tests[name]["message"])
        assert "Every value a case judges must be the spec's own kernel's" in tests[name]["message"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_test_skipped_as_not_checkable_after_some_cases_still_judges_them(run_suite, tmp_path):
    """A test not split whose large cases meet a construct the interpreter cannot check: its small cases each launched
    one program, and the test was skipped with the end-of-test rules never judged. And a split test whose last part
    is not checkable, with a declared path no case can take: the path was listed only by the search, which ran only
    where no part failed or was skipped. Both fail now, the skip said beside the first."""
    import json

    ref = "suite/test_kernels.py::test_matches_reference"
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"parts": {f"{ref}[unreachable_path_gap_last_add-fp32]": 2}, "tests": {}}))
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/thin_specs.py",
                    "--kernels=one_program_gap_late_add,unreachable_path_gap_last_add", "-n", "0",
                    env={"SUITE_TEST_COSTS": str(costs), "SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1]: t for t in run.run_data()["tests"]}
    late = tests["one_program_gap_late_add-fp32]"]
    assert late["outcome"] == "failed", late
    assert "ran a grid of one program" in late["message"], late
    assert "not checkable on the interpreter" in late["message"], late
    path = tests["unreachable_path_gap_last_add-fp32-part2of2]"]
    assert path["outcome"] == "failed", path
    assert "declared path(s) ['beyond'] are taken by no case" in path["message"], path
    assert run.returncode == 1, run.output[-3000:]


def test_a_value_class_is_what_reaches_the_kernel(run_suite):
    """A kernel that flushes subnormals and turns NaN into 0, under specs whose subnormal or special cases hand it
    little or nothing of the class: each passed while the rule was 'some float input of make_inputs holds one such
    value' (tests/fixtures/value_class_kernels.py); each fails now, naming what the kernel received."""
    names = ["one_subnormal_add", "unreceived_subnormal_add", "bits_subnormal_add", "inf_only_special_add",
             "one_inf_special_add"]
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/value_class_kernels.py",
                    f"--kernels={','.join(names)}", "-n", "0", "-k", "test_matches_reference",
                    env={"SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in run.run_data()["tests"]}
    assert sorted(tests) == sorted(names), tests
    why = {"one_subnormal_add": r"yet 1 of the \d+ float input element\(s\) not 0 its own kernel's launches "
                                r"(?:loaded|received) are subnormal",
           "unreceived_subnormal_add": r"yet 0 of the \d+ float input element\(s\)",
           "bits_subnormal_add": r"yet 0 of the \d+ float input element\(s\)",
           "inf_only_special_add": r"yet 0 NaN and \d+ inf among",
           "one_inf_special_add": r"yet 0 NaN and 1 inf among"}
    for name in names:
        assert tests[name]["outcome"] == "failed", tests[name]
        assert re.search(why[name], tests[name]["message"]), (name, tests[name]["message"])
        assert "The class is what reaches the kernel" in tests[name]["message"], tests[name]["message"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_value_class_is_counted_again_where_a_tensor_changed_between_launches_and_zeros_are_not_counted(run_suite):
    """The drawn inputs' clones handed to a flushing kernel once with n=0, then scaled in place out of the subnormal
    range and handed over again: it passed, the class counted as the clones were first received; it fails now. A
    right add handed a zeroed workspace 32 times its inputs failed as a broken spec (the zeros took the subnormal
    share below 1/16); it passes now (tests/fixtures/value_class_kernels.py)."""
    names = ["flushed_after_first_subnormal_add", "workspace_subnormal_add"]
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/value_class_kernels.py",
                    f"--kernels={','.join(names)}", "-n", "0", "-k", "test_matches_reference",
                    env={"SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in run.run_data()["tests"]}
    flushed = tests["flushed_after_first_subnormal_add"]
    assert flushed["outcome"] == "failed", flushed
    assert re.search(r"yet \d+ of the \d+ float input element\(s\) not 0", flushed["message"]), flushed["message"]
    assert "The class is what reaches the kernel" in flushed["message"], flushed["message"]
    assert tests["workspace_subnormal_add"]["outcome"] == "passed", tests["workspace_subnormal_add"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_returned_output_is_memory_the_specs_kernel_wrote_as_it_left_it(run_suite):
    """make_outputs=None: a wrong kernel (x - y) into the launcher's own tensor, then torch's answer copied into it,
    returned as a tensor of torch's, or written between the kernel's launches. Each passed while returned outputs
    were not watched; each fails now (suite/checks/last_writer.py: ReturnedWatch). The right kernel's own tensor
    passes, as does torch's sum of the kernel's partials declared as host_epilogue, but not where the kernel wrote
    nothing."""
    names = ["ret_copy_add", "ret_new_add", "ret_between_add", "ret_epilogue_idle_add"]
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/own_kernel.py",
                    f"--kernels={','.join(names)},ret_own_add,ret_epilogue_add", "-n", "0", "-k",
                    "test_matches_reference", env={"SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in run.run_data()["tests"]}
    assert tests["ret_own_add"]["outcome"] == "passed", tests["ret_own_add"]
    assert tests["ret_epilogue_add"]["outcome"] == "passed", tests["ret_epilogue_add"]
    why = {"ret_copy_add": "changed after the last launch of wrong_add_kernel that received it",
           "ret_new_add": "the tensor returned is not memory that a launch of wrong_add_kernel received",
           "ret_between_add": "were written by torch or another kernel between the launches of wrong_add_kernel",
           "ret_epilogue_idle_add": "is declared finished by torch from the kernel's writes (host_epilogue), but"}
    for name in names:
        assert tests[name]["outcome"] == "failed", tests[name]
        assert why[name] in tests[name]["message"], (name, tests[name]["message"])
        assert "broken spec: " in tests[name]["message"]
    assert run.returncode == 1, run.output[-3000:]


def test_a_returned_output_torch_wrote_before_the_kernel_must_be_stored_by_it(run_suite):
    """make_outputs=None: torch's answer in the launcher's tensor before the first launch of the (wrong) kernel that
    receives it; the kernel then writes only the first half, or only reads it. Both passed while a returned output was
    judged by the bits the launches changed; on the interpreter every store is seen, and both fail now naming the
    elements no launch of the kernel stored to, while the right kernel's own tensor still passes."""
    names = ["ret_before_half_add", "ret_before_read_add"]
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/own_kernel.py",
                    f"--kernels={','.join(names)},ret_own_add", "-n", "0", "-k", "test_matches_reference",
                    env={"SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in run.run_data()["tests"]}
    assert tests["ret_own_add"]["outcome"] == "passed", tests["ret_own_add"]
    for name in names:
        assert tests[name]["outcome"] == "failed", tests[name]
        assert re.search(r"element\(s\) no launch of wrong_add_kernel stored to", tests[name]["message"]), (
            name, tests[name]["message"])
    assert run.returncode == 1, run.output[-3000:]


def test_a_value_class_counts_only_what_the_kernel_loads(run_suite):
    """A kernel that flushes subnormals runs on copies scaled out of their range while the drawn inputs are handed
    over too, never loaded: as an argument it ignores, or in a launch with n=0 (a tail past the n elements of a buffer
    the kernel loads counts: a tensor is counted whole where any element of it is loaded, as a gather's table is).
    Each passed while the class was counted on what the kernel received; on the interpreter each fails now, counted
    on what it loaded (tests/fixtures/value_class_kernels.py)."""
    names = ["unloaded_arg_subnormal_add", "unloaded_n0_subnormal_add"]
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/value_class_kernels.py",
                    f"--kernels={','.join(names)}", "-n", "0", "-k", "test_matches_reference",
                    env={"SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in run.run_data()["tests"]}
    for name in names:
        assert tests[name]["outcome"] == "failed", tests[name]
        assert re.search(r"yet 0 of the \d+ float input element\(s\) not 0 its own kernel's launches loaded",
                         tests[name]["message"]), (name, tests[name]["message"])
    assert run.returncode == 1, run.output[-3000:]


def test_a_split_test_whose_last_part_is_not_checkable_still_judges_the_earlier_parts(run_suite, tmp_path):
    """The last part of a split test skipped as not checkable (a construct the interpreter evaluates otherwise) at
    its first case: the first part's cases each launched one program, which the end of the test fails. The end was
    never judged then (the run ended UNCHECKED, the one-program grid unsaid); it is judged now over the parts that
    ran, and the skip is said beside it."""
    import json

    ref = "suite/test_kernels.py::test_matches_reference"
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"parts": {f"{ref}[one_program_gap_last_add-fp32]": 2}, "tests": {}}))
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/thin_specs.py",
                    "--kernels=one_program_gap_last_add", "-n", "0",
                    env={"SUITE_TEST_COSTS": str(costs), "SUITE_SHRINK_SECONDS": "3"})
    tests = {t["nodeid"].split("-")[-1]: t for t in run.run_data()["tests"]}
    assert tests["part1of2]"]["outcome"] == "passed", tests
    last = tests["part2of2]"]
    assert last["outcome"] == "failed", last
    assert "ran a grid of one program" in last["message"], last
    assert "not checkable on the interpreter" in last["message"], last
    assert run.returncode == 1, run.output[-3000:]
