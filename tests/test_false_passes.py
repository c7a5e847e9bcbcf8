"""Issue 39 (verdicts you can believe): runs that used to pass although the kernel was wrong or never ran.

- A launcher that computes small inputs with torch and never launches its kernel passed (only an "unchecked" line
  mentioned it): a case whose run launched no ``@triton.jit`` function fails unless the spec declares the path
  (``torch_fallback``).
- bool outputs: the poison (-94) is True as a bool, so a right mask kernel failed on its guard regions ("written
  before output") and a True element never written passed where the output has no guard region.

The kernels are in tests/fixtures/false_passes.py.
"""

from __future__ import annotations

import torch

from suite.checks.harness import guard, guard_violations, poison, unwritten

FALSE_PASSES = "--kernel-module=tests/fixtures/false_passes.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}


def _tests(run) -> dict[str, dict]:
    return {t["nodeid"].split("[")[1].rsplit("-", 1)[0]: t for t in run.run_data()["tests"]}


def test_a_launcher_that_never_launches_its_kernel_fails_unless_declared(run_suite):
    run = run_suite("suite/test_kernels.py", FALSE_PASSES, "--kernels=fallback_add,declared_fallback_add", "-n", "0",
                    env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    tests = _tests(run)
    assert tests["declared_fallback_add"]["outcome"] == "passed", tests["declared_fallback_add"]
    assert tests["fallback_add"]["outcome"] == "failed", tests["fallback_add"]
    [failed] = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert failed["kernel"] == "fallback_add" and failed["shape"]["N"] < 64 and failed["failure"] == "spec", failed
    assert failed["message"].startswith("broken spec: the run launched no @triton.jit function, yet its outputs have "
                                        "elements"), failed["message"]
    assert "KernelSpec(torch_fallback=lambda case, config: ...)" in failed["message"]


def test_bool_outputs_poisoned_with_neither_true_nor_false(run_suite):
    run = run_suite("suite/test_kernels.py", FALSE_PASSES, "--kernels=bool_positive,bool_positive_unwritten",
                    "-n", "0", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    tests = _tests(run)
    assert tests["bool_positive"]["outcome"] == "passed", tests["bool_positive"]  # no "written before output"
    assert tests["bool_positive_unwritten"]["outcome"] == "failed", tests["bool_positive_unwritten"]
    [failed] = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert "elements never written (they still hold the poison" in failed["message"], failed["message"]


def test_the_bool_poison_is_a_byte_that_is_neither_value():
    out = {"out": torch.empty(8, dtype=torch.bool)}
    guards = guard(out)
    poison(out)
    assert bool(unwritten(out["out"]).all()) and not guard_violations(guards)
    out["out"][:4] = torch.tensor([True, False, True, False])
    assert unwritten(out["out"]).tolist() == [False] * 4 + [True] * 4
    assert out["out"][:4].tolist() == [True, False, True, False] and not guard_violations(guards)
