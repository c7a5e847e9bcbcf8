"""A failure whose shrinking ran out of time is reported as the plain failure it is, never as a flaky test."""

from __future__ import annotations

from tests.conftest import ROOT

LINE = "    y = x * w[None, :] + bias\n"


def test_shrink_deadline_reports_the_failure_not_a_flaky_test(run_suite, tmp_path):
    """examples/rowscale_inplace.py (in place, @triton.autotune, 2-D) with its bias dropped past the first column: with
    too little time to shrink, Hypothesis's replay of its smallest failing case used to pass untested and read as
    FlakyFailure. (Past the first column: a case of one column passes, so shrinking does not end at the smallest
    case. 0.2 s: the whole shrink to {"M": 1, "N": 2} takes about 2 s here, so the deadline falls inside it.)"""
    source = (ROOT / "examples" / "rowscale_inplace.py").read_text()
    assert source.count(LINE) == 1, "examples/rowscale_inplace.py no longer has the line this test plants into"
    planted = tmp_path / "rowscale_bug.py"
    planted.write_text(source.replace(LINE, "    y = x * w[None, :] + tl.where(cols[None, :] > 0, 0.0, bias)\n"))
    run = run_suite("suite/test_kernels.py", f"--kernel-module={planted}", "--kernels=rowscale_inplace", "-k", "fp32",
                    env={"SUITE_SHRINK_SECONDS": "0.2"})
    assert run.returncode == 1, run.output[-3000:]
    assert "Flaky" not in run.output and "unreliable" not in run.output, run.output[-3000:]
    assert "x the bound" in run.output and "reproduce with: pytest" in run.output
    assert "shrinking stopped after 0.2 s" in run.output, run.output[-3000:]


LEAKY_LINE = "    y = tl.where(x >= 0, x, x * slope)\n"


def test_a_failure_at_the_smallest_case_stops_shrinking_at_once(run_suite, tmp_path):
    """examples/leaky_relu.py rounding through fp16 fails at N=1, the least N can be: nothing smaller can fail, so
    the test ends there instead of drawing and shrinking other cases for the whole budget (311 launches and 45 s
    of a 120 s budget before; the case, its 20 reruns and Hypothesis's replay now)."""
    source = (ROOT / "examples" / "leaky_relu.py").read_text()
    assert source.count(LEAKY_LINE) == 1, "examples/leaky_relu.py no longer has the line this test plants after"
    planted = tmp_path / "leaky_fp16.py"
    planted.write_text(source.replace(LEAKY_LINE, LEAKY_LINE + "    y = y.to(tl.float16)\n"))
    run = run_suite("suite/test_kernels.py", f"--kernel-module={planted}", "--kernels=leaky_relu", "-k", "fp32",
                    env={"SUITE_SHRINK_SECONDS": "600"})
    assert run.returncode == 1, run.output[-3000:]
    assert 'leaky_relu[fp32] {"N": 1} contiguous normal seed=0' in run.output, run.output[-3000:]
    assert "shrinking stopped" not in run.output
    data = run.run_data()
    launches = data["memcheck"]["kernels"]["leaky_relu"]["launches"]
    assert launches <= 30, f"{launches} launches: shrinking went on past the smallest case"


def _budget(seconds: float = 30.0):
    from kernels.spec import Case
    from suite.checks.caseloop import ShrinkBudget

    budget = ShrinkBudget(seconds, {"M": 1, "N": 1})
    return budget, lambda m, n: Case("k", "fp32", {"M": m, "N": n}, "contiguous", "normal", 0)


def test_shrinking_ends_when_every_dim_is_at_its_floor():
    budget, case = _budget()
    budget.failed(case(4, 1), {}, "line-4-1")
    assert not budget.expired() and not budget.skip(case(2, 1))
    budget.failed(case(1, 1), {}, "line-1-1")
    assert budget.expired() and budget.skip(case(2, 1)) and not budget.skip(case(4, 1))  # a failing case still runs
    assert budget.note("line-1-1") == ""


def test_the_deadlines_note_names_the_first_case_only_where_it_is_another():
    budget, case = _budget(seconds=0.0)
    budget.failed(case(7, 3), {}, "line-7-3")
    budget.started -= 1.0
    assert budget.expired()
    assert budget.note("line-7-3") == ("\n(shrinking stopped after 0 s; this is the smallest failing case found by "
                                       "then.)")
    assert budget.note("line-5-3").endswith("The first failing case: line-7-3)")


def test_the_floor_is_the_least_choice_or_minimum_and_a_raised_batch():
    from kernels.registry import get, load_builtin
    from suite.checks.caseloop import dim_floor

    load_builtin()
    spec = get("softmax")
    floor = dim_floor(spec)
    assert floor == {d.name: min(d.choices) if d.choices else d.min for d in spec.dims}
    if spec.batch_dim:
        assert dim_floor(spec, batch_least=2)[spec.batch_dim] == max(2, floor[spec.batch_dim])
