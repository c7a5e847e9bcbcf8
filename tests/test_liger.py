"""Third-party kernels: Liger-Kernel's (examples/liger_kernel.py, liger-kernel 0.8.5 installed with --no-deps, as
.ci/run does). A numeric bug planted into a copy of Liger's RMSNorm kernel (tests/fixtures/planted_liger.py) fails
with a message naming the output and a reproduction line that reproduces it, while Liger's own kernel passes the
same spec."""

from __future__ import annotations

import os
import shlex

import pytest

from tests.conftest import run_python

pytest.importorskip("liger_kernel", reason="liger-kernel is not installed: pip install --no-deps liger-kernel==0.8.5")

PLANTED = "--kernel-module=tests/fixtures/planted_liger.py"


@pytest.mark.slow
def test_a_bug_planted_in_a_copy_of_liger_rms_norm_fails_and_liger_passes(run_suite):
    run = run_suite("suite/test_kernels.py", PLANTED, "--kernels=liger_rms_norm,planted_liger_rms_norm", "-k", "fp16")
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    outcomes = {t["nodeid"].split("[")[1].rstrip("]"): t["outcome"] for t in data["tests"]}
    assert outcomes == {"liger_rms_norm-fp16": "passed", "planted_liger_rms_norm-fp16": "failed"}, outcomes
    [case] = [c for c in data["cases"] if c["outcome"] == "failed"]
    assert case["message"].startswith("rstd: error ") and "x the bound" in case["message"], case["message"]
    argv = shlex.split(case["repro"])
    assert f"--kernel-module={PLANTED.split('=')[1]}" in argv
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = run_python(*argv, "-p", "no:cacheprovider", "--no-results", env=env, timeout=300)
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout[-3000:]
    assert case["message"].split(" at ")[0] in proc.stdout
