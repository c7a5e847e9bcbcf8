"""A failure whose shrinking ran out of time is reported as the plain failure it is, never as a flaky test."""

from __future__ import annotations

from tests.conftest import ROOT

LINE = "    y = x * w[None, :] + bias\n"


def test_shrink_deadline_reports_the_failure_not_a_flaky_test(run_suite, tmp_path):
    """examples/rowscale_inplace.py (in place, @triton.autotune, 2-D) with its bias dropped: with 3 s to shrink,
    Hypothesis's replay of its smallest failing case used to pass untested and read as FlakyFailure."""
    source = (ROOT / "examples" / "rowscale_inplace.py").read_text()
    assert source.count(LINE) == 1, "examples/rowscale_inplace.py no longer has the line this test plants into"
    planted = tmp_path / "rowscale_bug.py"
    planted.write_text(source.replace(LINE, "    y = x * w[None, :]\n"))
    run = run_suite("suite/test_kernels.py", f"--kernel-module={planted}", "--kernels=rowscale_inplace", "-k", "fp32",
                    env={"SUITE_SHRINK_SECONDS": "3"})
    assert run.returncode == 1, run.output[-3000:]
    assert "Flaky" not in run.output and "unreliable" not in run.output, run.output[-3000:]
    assert "x the bound" in run.output and "reproduce with: pytest" in run.output
    assert "shrinking stopped after 3 s" in run.output
