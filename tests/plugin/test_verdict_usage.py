"""What a run must not blame on a kernel or end with a pass (issue 49, item 22): a TRITON_F32_DEFAULT Triton does not
know is a usage error naming it; os._exit inside a launcher (-n 0) fails its case instead of ending the run with the
status it gave (exit 0: a run that 'passed')."""

from __future__ import annotations

CRASHING = "--kernel-module=tests/fixtures/crashing_kernel.py"


def test_an_unknown_triton_f32_default_is_a_usage_error_naming_it(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernels=matmul", "-k", "fp32", env={"TRITON_F32_DEFAULT": "bogus"})
    assert run.returncode == 4, run.output[-3000:]
    assert ("TRITON_F32_DEFAULT=bogus: not an input precision Triton knows: give one of ieee, tf32, tf32x3, bf16x3, "
            "bf16x6, or unset it") in run.output, run.output[-3000:]
    assert not run.run_files()


def test_os_exit_in_a_launcher_fails_its_case_never_the_run_with_its_status(run_suite):
    run = run_suite("suite/test_kernels.py", CRASHING, "--kernels=zz_exit_zero,zz_crash,vector_add", "-k", "fp32",
                    "-n", "0")
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    assert data["status"] == "complete", data["status"]
    outcomes = {t["nodeid"].rsplit("[", 1)[1].split("-")[0]: t for t in data["tests"]}
    assert outcomes["vector_add"]["outcome"] == "passed", outcomes
    for kernel, status in (("zz_exit_zero", 0), ("zz_crash", 3)):
        assert outcomes[kernel]["outcome"] == "failed", outcomes[kernel]
        assert f"os._exit({status}) was called while the case ran (by the kernel's launcher" in \
            outcomes[kernel]["message"], outcomes[kernel]["message"]
    assert "VERDICT: FAILED: 2 of 3 tests failed" in run.output, run.output[-2000:]


def test_an_error_in_the_specs_own_code_is_a_short_message_naming_its_function(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/broken_spec_code.py",
                    "--kernels=zz_broken_reduction", "-n", "0")
    assert run.returncode == 1, run.output[-3000:]
    lines = run.output.splitlines()
    start = next(i for i, line in enumerate(lines) if "= FAILURES =" in line)
    end = next(i for i, line in enumerate(lines) if "portability summary" in line)
    failure = "\n".join(lines[start:end])
    assert end - start < 10 and "def test_matches_reference" not in run.output, failure
    said = ("broken spec: _reduction_length() (tests/fixtures/broken_spec_code.py:15), the spec's own code, raised "
            "KeyError: 'K'")
    assert said in failure, failure
    [test] = run.run_data()["tests"]
    assert test["message"].startswith(said), test["message"]
