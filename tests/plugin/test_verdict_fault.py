"""A GPU fault in one case is one failure, with one short message, counted once (issue 49, item 17).

On an H100 a device-side assert in one case printed about 150 lines of the suite's own test source, and pytest
counted the test twice (17 failed against the verdict's 13): the worker records the failed test, ends itself (its
GPU context is unusable) and xdist reports the same test again as "crashed while running". On the CPU the fault is
raised as CUDA raises it (tests/fixtures/faulting_kernels.py, zz_fault): the reporting path is the same.
"""

from __future__ import annotations

import re

import pytest

FIXTURE = "--kernel-module=tests/fixtures/faulting_kernels.py"


@pytest.mark.slow
def test_a_gpu_fault_is_one_failure_one_short_message_one_count(run_suite):
    run = run_suite("suite/test_kernels.py", "-n", "1", "-p", "xdist", FIXTURE, "--kernels=zz_fault,vector_add",
                    "-k", "fp32", timeout=300)
    assert run.returncode == 1, run.output[-3000:]
    lines = run.output.rstrip("\n").splitlines()
    assert re.fullmatch(r"=+ 1 failed, 1 passed in .* =+", lines[-1]), "\n".join(lines[-20:])
    assert "VERDICT: FAILED: 1 of 2 tests failed" in run.output, run.output[-3000:]
    failed = [line for line in lines if line.startswith("FAILED suite/")]  # pytest's short summary: once
    assert len(failed) == 1 and "[zz_fault-fp32]" in failed[0], "\n".join(lines[-30:])
    start = next(i for i, line in enumerate(lines) if re.match(r"_+ test_matches_reference\[zz_fault-fp32\] _+", line))
    end = next(i for i, line in enumerate(lines[start + 1:], start + 1) if line.startswith(("____", "====")))
    failure = "\n".join(lines[start:end])
    assert end - start < 15, failure  # the case, the fault, the reproduction line: not the suite's own source
    assert "def test_matches_reference" not in run.output and "GPU fault: RuntimeError: CUDA error: an illegal " \
                                                                "memory access" in failure, failure
    assert "reproduce with: pytest 'suite/test_kernels.py::test_matches_reference[zz_fault-fp32]'" in failure, failure
    data = run.run_data()
    assert [t["outcome"] for t in data["tests"] if "zz_fault" in t["nodeid"]] == ["failed"], data["tests"]
