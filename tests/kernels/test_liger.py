"""Third-party kernels: Liger-Kernel's (examples/liger_kernel.py, liger-kernel 0.8.5 installed with --no-deps, as
.ci/run does). A numeric bug planted into a copy of Liger's RMSNorm kernel (tests/fixtures/planted_liger.py) fails
with a message naming the output and a reproduction line that reproduces it, while Liger's own kernel passes the
same spec."""

from __future__ import annotations

import os
import shlex

import pytest

from tests.conftest import ROOT, run_python

pytest.importorskip("liger_kernel", reason="liger-kernel is not installed: pip install --no-deps liger-kernel==0.8.5")

PLANTED = "--kernel-module=tests/fixtures/planted_liger.py"


@pytest.mark.slow
def test_a_bug_planted_in_a_copy_of_liger_rms_norm_fails_and_liger_passes(run_suite):
    run = run_suite("suite/test_kernels.py", PLANTED, "--kernels=liger_rms_norm,planted_liger_rms_norm", "-k", "fp16")
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    outcomes = {t["nodeid"].split("[")[1].rstrip("]"): t["outcome"] for t in data["tests"]}
    # Liger's own RMSNorm passes; its known issue (the weight read as contiguous) is declared for every dtype and met
    # where the contract probe passes a broadcast weight, so an fp16 run that never drew one ends xpassed: not failed.
    assert outcomes["planted_liger_rms_norm-fp16"] == "failed", outcomes
    assert outcomes["liger_rms_norm-fp16"] in ("passed", "xpassed"), outcomes
    [case] = [c for c in data["cases"] if c["outcome"] == "failed"]
    assert case["message"].startswith("rstd: error ") and "x the bound" in case["message"], case["message"]
    argv = shlex.split(case["repro"])
    assert f"--kernel-module={PLANTED.split('=')[1]}" in argv
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = run_python(*argv, "-p", "no:cacheprovider", "--no-results", env=env, timeout=300)
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout[-3000:]
    assert case["message"].split(" at ")[0] in proc.stdout


def test_the_swiglu_underflow_is_described_by_what_it_does_not_by_a_range(monkeypatch):
    """Issue 61, item 24: liger_swiglu's known issue (silu(a) is 0 where exp(-a) overflows fp32) named the reference's
    exponents (e-38 to e-45); a draw whose reference is -2.6e-36, an fp32 normal, failed the example on the dev
    profile. What the bug does: an output is 0 where the reference is not, whatever the reference."""
    from kernels import registry
    from suite.session import known_issues

    for name in ("_REGISTRY", "_WHERE", "_LOADED"):  # this test's registrations are its own
        monkeypatch.setattr(registry, name, type(getattr(registry, name))(getattr(registry, name)))
    registry.load_module(str(ROOT / "examples/liger_kernel.py"))
    [issue] = [k for k in known_issues.from_specs([registry.get("liger_swiglu")])
               if k.id == "liger-swiglu-silu-underflow"]
    for reference in ("-2.6e-36", "-7.37e-36", "-1.24e-38", "4.1e-40", "1.3e-30"):
        message = (f"c: error {abs(float(reference)):.3e} at (0, 1) is 3.2e+09x the bound 8.1e-46 (got -0.0, reference "
                   f"{reference}); 1 of 2 elements over")
        assert issue.covers(message), (reference, issue.failure_pattern)
    assert not issue.covers("c: error 3.717e-02 at (5, 1) is 5.19x the bound 7.162e-03 (got 0.4712, reference "
                            "0.5083636455237865); 7 of 4096 elements over")
