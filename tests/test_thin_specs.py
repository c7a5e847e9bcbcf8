"""Issue 49: runs that passed although the spec checked less than it claimed, or the kernel was not what ran.

The kernels are in tests/fixtures/thin_specs.py (each with a spec of its own; never a shipped kernel). Each test
runs the suite on the planted spec and sees the run fail (exit 1) with a message naming what was not checked.
"""

from __future__ import annotations

import re

THIN = "--kernel-module=tests/fixtures/thin_specs.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}


def _tests(run) -> dict[str, dict]:
    return {t["nodeid"].split("[")[1].rsplit("-", 1)[0]: t for t in run.run_data()["tests"]}


def test_a_layout_declared_but_never_built_is_a_broken_spec(run_suite):
    """make_inputs ignored case.layout: the padded_rows and transposed cases ran on contiguous inputs, where a kernel
    that hard-codes the row stride is right, and passed as those layouts."""
    run = run_suite("suite/test_kernels.py", THIN, "--kernels=layout_ignored_double,layout_built_double", "-n", "0",
                    env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    tests = _tests(run)
    assert tests["layout_built_double"]["outcome"] == "passed", tests["layout_built_double"]
    assert tests["layout_ignored_double"]["outcome"] == "failed", tests["layout_ignored_double"]
    [failed] = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert failed["failure"] == "spec" and failed["layout"] in ("padded_rows", "transposed"), failed
    assert failed["message"].startswith(f"broken spec: kernel spec 'layout_ignored_double': the case's layout is "
                                        f"{failed['layout']!r}, yet every input make_inputs returned is contiguous"), \
        failed["message"]
    assert "make_inputs ignored case.layout" in failed["message"]
    assert "BROKEN SPEC layout_ignored_double[fp32]" in run.output, run.output[-3000:]


def test_the_specs_own_code_that_raises_is_a_broken_spec_named_in_one_line(run_suite):
    """make_inputs and make_outputs that raised were recorded as the kernel's wrong result; torch_fallback and
    CodePath.taken that raised printed a traceback of the suite, hundreds of lines long."""
    run = run_suite("suite/test_kernels.py", THIN, "--kernels=raising_make_inputs,raising_make_outputs,"
                    "raising_torch_fallback,raising_path", "-n", "0", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    tests = _tests(run)
    assert len(tests) == 4 and all(t["outcome"] == "failed" for t in tests.values()), tests
    fixture = "tests/fixtures/thin_specs.py"
    expected = {
        "raising_make_inputs": "its make_inputs raised ValueError: no draw for N=",
        "raising_make_outputs": "its make_outputs raised TypeError: ",
        "raising_torch_fallback": "its torch_fallback raised AttributeError: 'dict' object has no attribute 'N'",
        "raising_path": "its CodePath 'n_bits'.taken raised AttributeError: 'Case' object has no attribute 'shapes'",
    }
    cases = {c["kernel"]: c for c in run.run_data()["cases"] if c["outcome"] == "failed"}
    for kernel, what in expected.items():
        case = cases[kernel]
        assert case["failure"] == "spec", case
        assert case["message"].startswith(f"broken spec: kernel spec {kernel!r}: {what}"), (kernel, case["message"])
        assert f"(at {fixture}:" in case["message"] and "\n" not in case["message"], (kernel, case["message"])
        assert case["message"] in tests[kernel]["message"], (kernel, tests[kernel]["message"])
        assert f"BROKEN SPEC {kernel}[fp32]" in run.output, run.output[-3000:]
    assert "Traceback" not in run.output and "suite/checks/reach.py" not in run.output, run.output[-6000:]


def test_a_test_none_of_whose_cases_launched_the_kernel_fails(run_suite):
    """torch_fallback true for every case: each case passed as declared, the Triton kernel never ran."""
    run = run_suite("suite/test_kernels.py", THIN, "--kernels=never_launched_add", "-n", "0", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "failed", test
    assert re.match(r"never_launched_add\[fp32\]: none of the \d+ case\(s\) launched a @triton.jit function",
                    test["message"]), test["message"]
    assert "torch_fallback covered every one, so the kernel was never tested" in test["message"], test["message"]


def test_every_config_of_an_autotuned_kernel_runs_at_least_once(run_suite):
    """One wrong config of eight: the ci profile's cases sampled five of them, never BLOCK=256, and the run passed."""
    run = run_suite("suite/test_kernels.py", THIN, "--kernels=autotuned_one_wrong_add,autotuned_add", "-n", "0",
                    env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    tests = _tests(run)
    assert tests["autotuned_add"]["outcome"] == "passed", tests["autotuned_add"]
    message = tests["autotuned_one_wrong_add"]["message"]
    assert 'with config {"BLOCK": 256, "num_stages": 3, "num_warps": 4}: out: error ' in message, message
    assert '--config={"BLOCK":256,"num_stages":3,"num_warps":4}' in message, message
    right = next(c for c in data["coverage"] if c["kernel"] == "autotuned_add")
    assert len(right["configs"]) == 8, right  # every config of the eight ran


def test_a_kernel_whose_every_launch_ran_one_program_fails(run_suite):
    """A plain BLOCK key (matched to no dim) of 4096 over N <= 3000: every case ran one program, and a program index
    never scaled by the block passed."""
    run = run_suite("suite/test_kernels.py", THIN, "--kernels=one_program_add,vector_add", "-n", "0", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    tests = {t["nodeid"].split("[")[1][:-1]: t for t in run.run_data()["tests"]}
    assert [k for k, t in tests.items() if t["outcome"] != "passed"] == ["one_program_add-fp32"], tests
    message = tests["one_program_add-fp32"]["message"]
    assert re.match(r"one_program_add\[fp32\]: every launch of add_unscaled in the \d+ case\(s\) ran a grid of one "
                    r"program, so a program index never scaled by the block", message), message
    assert "a plain BLOCK key is matched to no dim" in message, message
