"""Backend choice from the command line: usable backends run, unusable ones are usage errors (exit 4)."""

from __future__ import annotations

import pytest
import torch

CPU_ONLY = torch.version.cuda is None and getattr(torch.version, "hip", None) is None


@pytest.mark.skipif(not CPU_ONLY, reason="checks the messages of a CPU-only torch build")
@pytest.mark.parametrize("backend, words", [
    ("rocm", ["--backend=rocm", "CPU-only build", "no HIP runtime", "--backend=interpret"]),
    ("cuda", ["--backend=cuda", "CPU-only build", "--backend=interpret"]),
])
def test_unavailable_backend_is_a_usage_error(run_suite, backend, words):
    run = run_suite(f"--backend={backend}", "-k", "vector_add-fp32")
    assert run.returncode == 4, run.output[-2000:]
    for word in words:
        assert word in run.output
    assert not run.run_files(), "a usage error must not leave a run file"


def test_gpu_backend_with_interpreter_env_is_refused(run_suite):
    run = run_suite("--backend=cuda", "-k", "vector_add-fp32", env={"TRITON_INTERPRET": "1"})
    assert run.returncode == 4
    assert "TRITON_INTERPRET=1" in run.output


def test_unknown_backend_name(run_suite):
    run = run_suite("--backend=metal")
    assert run.returncode == 4
    assert "invalid choice: 'metal'" in run.output


def test_auto_without_gpu_runs_the_interpreter(run_suite):
    run = run_suite("-k", "vector_add-fp32", "suite/test_kernels.py")
    assert run.returncode == 0, run.output[-3000:]
    assert "portability: backend=interpret" in run.output
    assert run.run_data()["environment"]["backend"] == "interpret"


def test_missing_user_kernel_module(run_suite):
    run = run_suite("--kernel-module=no/such/kernels.py", "-k", "vector_add-fp32")
    assert run.returncode == 4
    assert "no/such/kernels.py" in run.output
