"""Constructs Triton's CPU interpreter evaluates differently from compiled Triton (suite/checks/semantic_gaps.py): found
in the source with their line, flagged only on block tensors, named by the compile matrix's lint, and, on the
interpreter, a case that launches one is not checkable there (skipped, naming it), never failed or passed. Fixture
kernels: tests/fixtures/interpreter_gaps.py."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest
import triton
import triton.language as tl

from kernels import registry
from suite.checks import lints, semantic_gaps
from suite.checks.semantic_gaps import AND, CHAIN, NOT, OR
from tests.fixtures import gap_tries

FIXTURE = "--kernel-module=tests/fixtures/interpreter_gaps.py"


@triton.jit
def _gaps(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = (offs < n) and (offs >= 0)
    b = (offs < n) or (offs >= 4)
    c = not (offs < n)
    d = 0 <= offs < n
    x = tl.load(x_ptr + offs[:, None] + offs[None, :])
    e = (x > 0) and (x < 1)
    tl.store(x_ptr + offs, a & b & c & d & tl.sum(e, axis=1))


@triton.jit
def _no_gaps(x_ptr, n, BLOCK: tl.constexpr, FLAG: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = FLAG and (offs < n)  # a constexpr first: right on the interpreter too
    mask = (pid >= 0) and (offs < n)  # a scalar first, the block last
    if not pid and 0 <= pid < n:  # scalars only
        total = tl.sum(tl.load(x_ptr + offs, mask=mask), axis=0)
        if total > 0 and not total < 1:  # a full reduction is a scalar
            tl.store(x_ptr + offs, total, mask=mask)


@triton.jit
def _helper(offs, n):
    return (offs >= 0) and (offs < n)


@triton.jit
def _calls_helper(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    scalar_ok = _helper(pid, n)  # scalar arguments: no gap
    mask = _helper(tl.arange(0, BLOCK), n)  # block arguments: the helper's `and` is a gap
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0, mask=mask & scalar_ok)


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(semantic_gaps.python_function(fn))
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_each_construct_on_block_tensors_is_found_with_its_line():
    found = {(g.construct, g.line) for g in semantic_gaps.find(_gaps)}
    assert found == {(AND, _line_of(_gaps, "a = ")), (OR, _line_of(_gaps, "b = ")), (NOT, _line_of(_gaps, "c = ")),
                     (CHAIN, _line_of(_gaps, "d = ")), (AND, _line_of(_gaps, "e = "))}
    [gap] = [g for g in semantic_gaps.find(_gaps) if g.construct == NOT]
    assert gap.function == "_gaps" and gap.source == "not (offs < n)"
    assert gap.where() == f"tests/checks/test_semantic_gaps.py:{gap.line}"


def test_scalars_constexprs_and_a_block_last_are_not_gaps():
    assert semantic_gaps.find(_no_gaps) == []


def test_a_jitted_helper_is_followed_with_the_kinds_of_its_arguments():
    [gap] = semantic_gaps.find(_calls_helper)
    assert (gap.construct, gap.function, gap.line) == (AND, "_helper", _line_of(_helper, "return"))


def test_no_shipped_kernel_has_a_gap():
    """Precision: every jitted function of every built-in spec (and the ones they call) reads clean."""
    found = [(spec.name, g.describe()) for spec in registry.all_specs() for k in spec.jit_kernels()
             for g in semantic_gaps.find(k.fn)]
    assert found == []


def test_the_lint_names_construct_function_file_and_line():
    findings = lints.lint_semantic_gaps("k", [_calls_helper, _helper])
    [f] = findings  # one finding per construct and line, however many functions reach it
    assert (f["rule"], f["severity"], f["construct"], f["function"]) == ("interpreter_semantic_gap", "warning", AND,
                                                                         "_helper")
    assert f["file"] == "tests/checks/test_semantic_gaps.py" and f["line"] == _line_of(_helper, "return")
    assert f"_helper at tests/checks/test_semantic_gaps.py:{f['line']}: `(offs >= 0) and (offs < n)`" in f["message"]


# What each supported Triton's interpreter evaluates otherwise than compiled Triton (measured with the probe; 3.9.0
# rewrites chained comparisons into the & of their parts). CI runs this test on both (.ci/run's newest stack).
MISEVALUATED = {"3.6.0": {AND, OR, NOT, CHAIN}, "3.9.0": {AND, OR, NOT}}


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter only")
def test_the_probe_says_what_the_installed_interpreter_gets_wrong():
    from suite.checks import interpreter

    if triton.__version__ not in MISEVALUATED:
        pytest.skip(f"Triton {triton.__version__}'s interpreter was not measured: add its row to MISEVALUATED")
    wrong = interpreter.misevaluated()
    assert set(wrong) == MISEVALUATED[triton.__version__], wrong
    assert wrong[AND].startswith("for x = 0..7 it gave [1, 1, 1, 1, 1, 1, 0, 0]")  # `a and b` is b: x < 6


def test_a_right_kernel_masking_with_and_is_not_checkable_on_the_interpreter(run_suite):
    """Before this check, and_masked_add failed as an out-of-bounds load (the interpreter dropped its mask's first
    term): a right kernel blamed. Now it is not run there, naming `and` and its line; a kernel with `and` on scalars
    only runs and passes."""
    run = run_suite("suite/test_kernels.py", FIXTURE, "--kernels=and_masked_add,helper_and_masked_add,scalar_and_add")
    # Nothing failed, and two kernels were never checked, for a reason their author can remove: never exit 0.
    assert run.returncode == 6, run.output[-3000:]
    verdict = " ".join(run.output[run.output.index("VERDICT:"):].split())
    assert verdict.startswith("VERDICT: UNCHECKED: 1 of 3 tests passed; 2 kernel x dtype pairs never checked"), verdict
    assert "never checked and_masked_add[fp32]: not checkable on the interpreter: Python `and` on block tensors in " \
           "and_masked_add_kernel" in verdict, verdict
    tests = {t["nodeid"].rsplit("[", 1)[1].split("-")[0]: t for t in run.run_data()["tests"]}
    assert tests["scalar_and_add"]["outcome"] == "passed"
    for kernel, function, line in (("and_masked_add", "and_masked_add_kernel",
                                    _fixture_line("mask = (offsets < n_elements) and (offsets >= 0)")),
                                   ("helper_and_masked_add", "_in_bounds",
                                    _fixture_line("return (offsets < n) and (offsets >= 0)"))):
        assert tests[kernel]["outcome"] == "skipped", tests[kernel]
        assert tests[kernel]["message"].splitlines()[0].endswith(
            f"not checkable on the interpreter: Python `and` on block tensors in {function} at "
            f"tests/fixtures/interpreter_gaps.py:{line}"), tests[kernel]["message"]
    assert not [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert "not run 1 test, not checkable on the interpreter: Python `and`" in verdict, verdict


def _fixture_line(text: str) -> int:
    lines = (Path(__file__).parent.parent / "fixtures" / "interpreter_gaps.py").read_text().splitlines()
    return 1 + next(i for i, line in enumerate(lines) if text in line)


def test_helpers_by_keyword_by_tuple_and_by_constexpr_are_read_and_a_branch_no_launch_takes_is_not(run_suite):
    """Issue 61, item 9. Before: the three helper kernels passed on the interpreter, their `and` unread (a helper
    called with keywords was read with no argument kinds, a returned tuple was no block, a constexpr argument named
    no function); debug_and_unmasked_add was not checkable for an `and` under ``if DEBUG:`` that no launch runs,
    hiding its unmasked load, and debug_and_add was not checkable either."""
    helpers = ("kwargs_helper_and_add", "tuple_helper_and_add", "constexpr_helper_and_add")
    run = run_suite("suite/test_kernels.py", FIXTURE, f"--kernels={','.join(helpers)},debug_and_unmasked_add,"
                                                      f"debug_and_add")
    assert run.returncode == 1, run.output[-3000:]
    tests = {t["nodeid"].rsplit("[", 1)[1].split("-")[0]: t for t in run.run_data()["tests"]}
    outcomes = {name: t["outcome"] for name, t in tests.items()}
    assert outcomes == {**dict.fromkeys(helpers, "skipped"), "debug_and_unmasked_add": "failed",
                        "debug_and_add": "passed"}, outcomes
    helper_and = _fixture_line("return (offsets >= 0) and (offsets < n)")
    for kernel, function, line in (("kwargs_helper_and_add", "_nonneg_in_bounds", helper_and),
                                   ("tuple_helper_and_add", "tuple_helper_and_add_kernel",
                                    _fixture_line("mask = above and below")),
                                   ("constexpr_helper_and_add", "_nonneg_in_bounds", helper_and)):
        assert tests[kernel]["message"].splitlines()[0].endswith(
            f"not checkable on the interpreter: Python `and` on block tensors in {function} at "
            f"tests/fixtures/interpreter_gaps.py:{line}"), tests[kernel]["message"]
    [case] = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert case["kernel"] == "debug_and_unmasked_add" and case["failure"] == "memory", case
    assert case["message"].startswith("out-of-bounds load in kernel debug_and_add_kernel"), case["message"]


@pytest.mark.parametrize("which", gap_tries.FOUND)
def test_each_way_tried_to_hide_a_gap_is_read(which):
    """tests/fixtures/gap_tries.py: helpers reached by keyword, alias, constexpr, tuple, partial, lambda, namespace,
    ``*args``; constexpr conditions that make the branch run."""
    found = semantic_gaps.find(gap_tries.hidden, gap_tries.constants(which))
    assert found, which


@pytest.mark.parametrize("which", gap_tries.NOT_RUN)
def test_a_gap_no_launch_runs_is_not_read(which):
    """Branches the launch's constexprs rule out (the compiler does not compile them), and a combine function the
    interpreter calls on scalars. Read without the launch's constants (the lint), every branch counts."""
    assert semantic_gaps.find(gap_tries.hidden, gap_tries.constants(which)) == [], which
    assert semantic_gaps.find(gap_tries.hidden)
