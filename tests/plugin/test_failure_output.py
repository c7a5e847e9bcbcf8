"""One failure, one short message, in every test: a launch that raises (here Triton's own error on the interpreter)
reads the same in test_matches_reference and test_properties, with no traceback through the suite's internals and
no Hypothesis advice to decorate the suite's test function."""

from __future__ import annotations

import re

from hypothesis import settings

from suite.checks.strategies import PROFILES


def test_a_launch_that_raises_fails_every_test_with_one_short_message(run_suite):
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", "--no-results",
                    "--kernel-module=tests/fixtures/raising_kernel.py", "--kernels=raising_vector_add",
                    env={"SUITE_SHRINK_SECONDS": "5"})
    assert run.returncode == 1, run.output[-3000:]
    failures = run.output.split("= FAILURES =", 1)[1].split("short test summary info", 1)[0]
    sections = dict(re.findall(r"_{3,} (test_\w+)\[raising_vector_add-fp32\] _{3,}\n(.*?)(?=\n_{3,} |\n=+)", failures,
                               re.S))
    assert set(sections) == {"test_matches_reference", "test_properties"}, failures
    for test, body in sections.items():
        lines = body.strip().splitlines()
        assert len(lines) <= 3, f"{test}: {len(lines)} lines\n{body}"
        assert 'InterpreterError: ValueError("arange\'s range must be a power of 2")' in body, body
        module = "test_kernels" if test == "test_matches_reference" else "test_properties"
        assert lines[-1].startswith(f"reproduce with: pytest 'suite/{module}.py::{test}["), body
    assert "Traceback" not in run.output and "suite/checks/" not in failures and "interpreter.py:" not in failures
    assert "reproduce_failure" not in run.output and "During handling" not in run.output


def test_no_profile_prints_hypothesis_reproduce_failure_blob():
    for name in PROFILES:
        assert settings.get_profile(name).print_blob is False, name


def test_a_failed_test_names_no_path_as_not_taken(run_suite, tmp_path):
    """A reference test stops at its first failing case (then shrinks it): the paths its later cases would have taken
    are unknown, so the reach table counts that dtype as stopped, never its paths as not taken (the summary said
    'not taken: n_loop, n_tail' of a leaky_relu whose fp32 failed at its first case)."""
    from tests.conftest import ROOT

    planted = tmp_path / "leaky_fp16.py"
    planted.write_text((ROOT / "examples" / "leaky_relu.py").read_text().replace(
        "y = tl.where(x >= 0, x, x * slope)", "y = tl.where(x >= 0, x, x * slope).to(tl.float16)"))
    run = run_suite("suite/test_kernels.py", f"--kernel-module={planted}", "--kernels=leaky_relu", "-k", "fp32",
                    env={"COLUMNS": "120"})
    assert run.returncode == 1, run.output[-3000:]
    [coverage] = run.run_data()["coverage"]
    assert coverage["dtype"] == "fp32" and coverage["stopped_by"] == "a failure", coverage
    row = next(ln for ln in run.output.splitlines() if ln.startswith("| leaky_relu | fp32 (stopped: failed)"))
    assert "n_loop" not in row and "n_tail" not in row, row
