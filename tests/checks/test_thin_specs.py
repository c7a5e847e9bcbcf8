"""Issue 49: runs that passed although the spec checked less than it claimed, or the kernel was not what ran.

The kernels are in tests/fixtures/thin_specs.py (each with a spec of its own; never a shipped kernel). Each test
runs the suite on the planted spec and sees the run fail (exit 1) with a message naming what was not checked.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import start_suite_run

THIN = "--kernel-module=tests/fixtures/thin_specs.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}
# Every spec of thin_specs.py in one run, the planted ones and the right ones beside them (each test reads its own)
KERNELS = ("layout_ignored_double", "layout_built_double", "raising_make_inputs", "raising_make_outputs",
           "raising_torch_fallback", "raising_path", "never_launched_add", "declared_untested_add",
           "autotuned_one_wrong_add", "autotuned_add", "one_program_add")


@pytest.fixture(scope="module")
def thin_run(tmp_path_factory):
    return start_suite_run("suite/test_kernels.py", THIN, f"--kernels={','.join(KERNELS)}", "-n", "0",
                           results_dir=tmp_path_factory.mktemp("thin"), env=FAST_SHRINK)


def _tests(run) -> dict[str, dict]:
    return {t["nodeid"].split("[")[1].rsplit("-", 1)[0]: t for t in run.run_data()["tests"]}


def _failed_cases(run, kernel: str) -> list[dict]:
    return [c for c in run.run_data()["cases"] if c["outcome"] == "failed" and c["kernel"] == kernel]


def test_the_run_of_the_planted_specs_fails_and_the_right_ones_pass(thin_run):
    assert thin_run.returncode == 1, thin_run.output[-3000:]
    tests = _tests(thin_run)
    assert sorted(tests) == sorted(KERNELS), sorted(tests)
    outcomes = {k: t["outcome"] for k, t in tests.items()}
    right = ("layout_built_double", "autotuned_add")
    expected = {k: "passed" if k in right else "failed" for k in KERNELS}
    assert outcomes == {**expected, "declared_untested_add": "skipped"}, outcomes


def test_a_layout_declared_but_never_built_is_a_broken_spec(thin_run):
    """make_inputs ignored case.layout: the padded_rows and transposed cases ran on contiguous inputs, where a kernel
    that hard-codes the row stride is right, and passed as those layouts."""
    run = thin_run
    tests = _tests(run)
    assert tests["layout_built_double"]["outcome"] == "passed", tests["layout_built_double"]
    assert tests["layout_ignored_double"]["outcome"] == "failed", tests["layout_ignored_double"]
    [failed] = _failed_cases(run, "layout_ignored_double")
    assert failed["failure"] == "spec" and failed["layout"] in ("padded_rows", "transposed"), failed
    assert failed["message"].startswith(f"broken spec: kernel spec 'layout_ignored_double': the case's layout is "
                                        f"{failed['layout']!r}, yet every input make_inputs returned is contiguous"), \
        failed["message"]
    assert "make_inputs ignored case.layout" in failed["message"]
    assert "BROKEN SPEC layout_ignored_double[fp32]" in run.output, run.output[-3000:]


def test_the_specs_own_code_that_raises_is_a_broken_spec_named_in_one_line(thin_run):
    """make_inputs and make_outputs that raised were recorded as the kernel's wrong result; torch_fallback and
    CodePath.taken that raised printed a traceback of the suite, hundreds of lines long."""
    run = thin_run
    tests = _tests(run)
    fixture = "tests/fixtures/thin_specs.py"
    expected = {
        "raising_make_inputs": "its make_inputs raised ValueError: no draw for N=",
        "raising_make_outputs": "its make_outputs raised TypeError: ",
        "raising_torch_fallback": "its torch_fallback raised AttributeError: 'dict' object has no attribute 'N'",
        "raising_path": "its CodePath 'n_bits'.taken raised AttributeError: 'Case' object has no attribute 'shapes'",
    }
    for kernel, what in expected.items():
        [case] = _failed_cases(run, kernel)
        assert case["failure"] == "spec", case
        assert case["message"].startswith(f"broken spec: kernel spec {kernel!r}: {what}"), (kernel, case["message"])
        assert f"(at {fixture}:" in case["message"] and "\n" not in case["message"], (kernel, case["message"])
        assert case["message"] in tests[kernel]["message"], (kernel, tests[kernel]["message"])
        assert f"BROKEN SPEC {kernel}[fp32]" in run.output, run.output[-3000:]
    assert "Traceback" not in run.output and "suite/checks/reach.py" not in run.output, run.output[-6000:]


def test_a_test_none_of_whose_cases_launched_the_kernel_fails(thin_run):
    """torch_fallback true for every case: each case passed as declared, the Triton kernel never ran."""
    test = _tests(thin_run)["never_launched_add"]
    assert test["outcome"] == "failed", test
    assert re.match(r"never_launched_add\[fp32\]: none of the \d+ case\(s\) launched a @triton.jit function",
                    test["message"]), test["message"]
    assert "torch_fallback covered every one, so the kernel was never tested" in test["message"], test["message"]
    declared = _tests(thin_run)["declared_untested_add"]  # the spec says why: not tested, never passed
    assert declared["outcome"] == "skipped", declared
    assert re.search(r"not tested: none of the \d+ case\(s\) of declared_untested_add\[fp32\] launched a "
                     r"@triton.jit function \(a torch path tested on purpose\)", declared["message"]), declared


def test_every_config_of_an_autotuned_kernel_runs_at_least_once(thin_run):
    """One wrong config of eight: the ci profile's cases sampled five of them, never BLOCK=256, and the run passed."""
    data = thin_run.run_data()
    tests = _tests(thin_run)
    assert tests["autotuned_add"]["outcome"] == "passed", tests["autotuned_add"]
    message = tests["autotuned_one_wrong_add"]["message"]
    assert 'with config {"BLOCK": 256, "num_stages": 3, "num_warps": 4}: out: error ' in message, message
    assert '--config={"BLOCK":256,"num_stages":3,"num_warps":4}' in message, message
    right = next(c for c in data["coverage"] if c["kernel"] == "autotuned_add")
    assert len(right["configs"]) == 8, right  # every config of the eight ran


def test_a_kernel_whose_every_launch_ran_one_program_fails(thin_run):
    """A plain BLOCK key (matched to no dim) of 4096 over N <= 3000: every case ran one program, and a program index
    never scaled by the block passed."""
    message = _tests(thin_run)["one_program_add"]["message"]
    assert re.match(r"one_program_add\[fp32\]: every launch of add_unscaled in the \d+ case\(s\) ran a grid of one "
                    r"program, so a program index never scaled by the block", message), message
    assert "a plain BLOCK key is matched to no dim" in message, message


TAMPERING = "--kernel-module=tests/fixtures/tampering_kernels.py"
PLANTED = "--kernel-module=tests/fixtures/planted_bugs.py"


@pytest.mark.parametrize("tamper, changed", [
    ("draws", "kernels.inputs.Stream (replaced)"),
    ("spec", "kernel spec 'planted_softmax_max_identity_zero' (registered by tests/fixtures/planted_bugs.py) (its "
             "field(s) run changed)"),
    ("isfinite", "torch.isfinite (replaced, by a function of tests/fixtures/tampering_kernels.py)"),
], ids=["draws", "spec", "isfinite"])
def test_a_kernel_module_that_changes_what_the_checks_depend_on_is_refused(run_suite, tamper, changed):
    """Zeroed draws, another module's spec rewritten, torch.isfinite patched: each made planted_bugs.py's softmax pass
    with nothing reported."""
    run = run_suite("suite/test_kernels.py", PLANTED, TAMPERING, "--kernels=planted_softmax_max_identity_zero,"
                    "tamper_add", "-n", "0", env={"TAMPER": tamper})
    assert run.returncode == 4, run.output[-3000:]
    assert (f"--kernel-module=tests/fixtures/tampering_kernels.py: importing it changed the suite's own checking "
            f"code: {changed}. ") in run.output, run.output[-3000:]


def test_the_snapshot_sees_the_spec_api_registered_specs_and_torch():
    import dataclasses

    import torch

    from kernels import inputs, registry
    from kernels.spec import Tolerance
    from kernels.vector_add import SPEC as VECTOR_ADD
    from suite.checks import tampering

    registry.register(VECTOR_ADD)
    snapshot = tampering.Snapshot()
    assert snapshot.changes() == []
    saved = (inputs.values, inputs._NORMAL_SCALE, torch.isnan, torch.Tensor.__eq__, VECTOR_ADD.tolerance)
    try:
        inputs.values = lambda *a, **k: None
        inputs._NORMAL_SCALE = 0.0
        torch.isnan = lambda t: t != t
        torch.Tensor.__eq__ = lambda a, b: True
        object.__setattr__(VECTOR_ADD, "tolerance", Tolerance(safety=2.0))
        inputs.set_draw_device("cpu")  # the process's own state: not a change
        found = snapshot.changes()
    finally:
        inputs.values, inputs._NORMAL_SCALE, torch.isnan, torch.Tensor.__eq__ = saved[:4]
        object.__setattr__(VECTOR_ADD, "tolerance", saved[4])
    assert "kernels.inputs.values (replaced, by a function of tests/checks/test_thin_specs.py)" in found, found
    assert "kernels.inputs._NORMAL_SCALE (replaced)" in found, found
    assert "torch.isnan (replaced, by a function of tests/checks/test_thin_specs.py)" in found, found
    assert "torch.Tensor.__eq__ (replaced, by a function of tests/checks/test_thin_specs.py)" in found, found
    assert "kernel spec 'vector_add' (registered by kernels/vector_add.py) (its field(s) tolerance changed)" in found
    assert len(found) == 5, found
    assert snapshot.changes() == []
    # A spec replaced in the registry; one registered since the last look is watched from then on.
    registry._REGISTRY["vector_add"] = dataclasses.replace(VECTOR_ADD)
    try:
        assert snapshot.changes() == ["kernel spec 'vector_add' (registered by kernels/vector_add.py) (replaced in "
                                      "the registry)"]
    finally:
        registry._REGISTRY["vector_add"] = VECTOR_ADD
