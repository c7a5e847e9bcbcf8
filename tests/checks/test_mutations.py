"""The classic Triton bugs, planted into the shipped kernels' own source (in a copy of the repository), each fail
the default interpreter run with a message that names the out-of-bounds access or the config.

Each mutation is a one-line edit of kernels/vector_add.py, kernels/matmul.py or the tile order matmul calls
(kernels/_tiles.py); the test asserts that the edit
applies exactly once, so a change to the kernel that removes the planted line fails here rather than passing.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import ROOT, run_python

COPIED = ("conftest.py", "pyproject.toml", "suite", "kernels", "hardware_profiles", "reports")

MUTATIONS = {
    "vector_add: load mask dropped": (
        "vector_add", "x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)",
        "x = tl.load(x_ptr + offsets).to(tl.float32)", ["out-of-bounds load", "'x_ptr'"]),
    "vector_add: < turned into <= in a load mask": (
        "vector_add", "x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)",
        "x = tl.load(x_ptr + offsets, mask=offsets <= n_elements).to(tl.float32)", ["out-of-bounds load", "past its last"]),
    "vector_add: wrong program index": (
        "vector_add", "pid = tl.program_id(axis=0)", "pid = tl.program_id(axis=0) // 2",
        ["never written"]),
    "matmul: load mask dropped": (
        "matmul", "a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)",
        "a = tl.load(a_ptrs)", ["out-of-bounds load", "'a_ptr'"]),
    "matmul: < turned into <= in a load mask": (
        "matmul", "a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)",
        "a = tl.load(a_ptrs, mask=(offs_m[:, None] <= M) & (offs_k[None, :] < k_left), other=0.0)",
        ["out-of-bounds load", "'a_ptr'"]),
    "matmul: wrong group index": (
        "matmul", "first_pid_m = group_id * GROUP_M", "first_pid_m = group_id", ["with config", "GROUP_M"], "_tiles"),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    for name in COPIED:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, root / name)
    return root


# Hypothesis has to search three parts of the matmul test for a shape past one group: a whole run of 10-25 s.
SLOW_MUTATIONS = {"matmul: wrong group index"}


@pytest.mark.parametrize("what", [pytest.param(w, marks=pytest.mark.slow) if w in SLOW_MUTATIONS else w
                                  for w in sorted(MUTATIONS)])
def test_planted_kernel_bug_fails_the_default_run(pristine, tmp_path, what):
    kernel, line, planted, words, *where = MUTATIONS[what]
    repo = tmp_path / "repo"
    shutil.copytree(pristine, repo)
    source = repo / "kernels" / f"{where[0] if where else kernel}.py"  # the tile order is matmul's shared helper
    text = source.read_text()
    assert text.count(line) == 1, f"{source.name} no longer has the line this mutation plants into: {line!r}"
    source.write_text(text.replace(line, planted))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["SUITE_SHRINK_SECONDS"] = "3"
    proc = run_python("pytest", "-p", "no:cacheprovider", "--no-results", "-q", "suite/test_kernels.py",
                      f"--kernels={kernel}", "-k", "fp32", cwd=repo, env=env, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, f"{what}: the planted bug passed\n{output[-3000:]}"
    for word in words:
        assert word in output, f"{what}: {word!r} not in the failure\n{output[-3000:]}"
    assert "reproduce with: pytest" in output
