"""The suite catches the classic kernel bugs, and its reproduction lines reproduce them.

The broken kernels live in tests/fixtures/planted_bugs.py, outside the shared kernel set.
"""

from __future__ import annotations

import os
import shlex

import pytest

from tests.conftest import run_python

PLANTED = ("planted_softmax_max_identity_zero", "planted_vector_add_dropped_mask", "planted_vector_add_unscaled_offset")


@pytest.mark.slow
def test_planted_bugs_fail_with_working_reproduction_lines(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/planted_bugs.py",
                    "--kernels=" + ",".join(PLANTED))
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    failed = {c["kernel"]: c for c in data["cases"] if c["outcome"] == "failed"}
    assert set(failed) == set(PLANTED)
    assert "out-of-bounds store" in failed["planted_vector_add_dropped_mask"]["message"]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    for kernel, case in failed.items():
        argv = shlex.split(case["repro"])
        assert argv[0] == "pytest"
        proc = run_python(*argv, "-p", "no:cacheprovider", "--no-results", env=env, timeout=300)
        assert proc.returncode == 1, f"{kernel}: reproduction did not fail:\n{proc.stdout[-2000:]}"
        assert "1 failed" in proc.stdout
        assert case["message"].split(" at ")[0].split(" (")[0] in proc.stdout
