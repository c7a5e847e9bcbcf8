"""The memory checker: exact lane-by-lane checks of interpreted loads and stores, the unchecked list, and the
GPU wrappers' commands. Planted bugs are in tests/fixtures/planted_bugs.py (and tests/checks/test_mutations.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from suite.checks import memcheck

PLANTED = "--kernel-module=tests/fixtures/planted_bugs.py"


def region(t: torch.Tensor, name: str = "x") -> memcheck.Region:
    return memcheck._regions([name], [t], {})[0]


def addresses(t: torch.Tensor, offsets: list[int]) -> np.ndarray:
    return np.array([t.data_ptr() + o * t.element_size() for o in offsets], dtype=np.uint64)


def test_contiguous_tensor_elements_and_nothing_else():
    t = torch.zeros(10)
    r = region(t)
    assert r.contains(addresses(t, [0, 9]), 4).tolist() == [True, True]
    assert r.contains(addresses(t, [-1, 10]), 4).tolist() == [False, False]
    misaligned = np.array([t.data_ptr() + 2], dtype=np.uint64)
    assert not r.contains(misaligned, 4)[0]


def test_padded_rows_exclude_the_padding_and_transposed_views_include_every_element():
    buf = torch.zeros(3, 8)
    padded = buf[:, :5]  # rows of 5 elements, 8 apart
    r = region(padded)
    inside = [0, 4, 8, 12, 16, 20]
    padding = [5, 7, 13, 21]
    assert r.contains(addresses(padded, inside), 4).all()
    assert not r.contains(addresses(padded, padding), 4).any()
    assert not r.contains(addresses(padded, [24]), 4)[0]  # past the last row
    transposed = torch.zeros(4, 6).t()
    assert region(transposed).contains(addresses(transposed, list(range(24))), 4).all()
    assert not region(transposed).contains(addresses(transposed, [24]), 4)[0]


def test_an_access_of_another_width_must_lie_inside_the_tensor_bytes():
    t = torch.zeros(4, dtype=torch.float32)
    r = region(t)
    bytes_ = np.array([t.data_ptr() + i for i in (0, 15)], dtype=np.uint64)
    assert r.contains(bytes_, 1).tolist() == [True, True]
    assert not r.contains(np.array([t.data_ptr() + 16], dtype=np.uint64), 1)[0]


def test_planted_out_of_bounds_load_fails_as_a_memory_finding(run_suite):
    run = run_suite("suite/test_kernels.py", PLANTED, "--kernels=planted_vector_add_dropped_load_mask",
                    env={"SUITE_SHRINK_SECONDS": "3"})
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    [case] = [c for c in data["cases"] if c["outcome"] == "failed"]
    assert case["failure"] == "memory"
    assert case["message"].startswith("out-of-bounds load in kernel vector_add_dropped_load_mask")
    assert "argument 'x_ptr'" in case["message"] and "past its last" in case["message"]
    assert data["memcheck"]["mode"] == "interpreter"
    assert data["memcheck"]["kernels"]["planted_vector_add_dropped_load_mask"]["launches"] > 0


def test_without_the_checker_the_same_bug_passes(run_suite):
    """What makes the check worth having: value checks and guard regions alone let this bug through."""
    run = run_suite("suite/test_kernels.py", PLANTED, "--kernels=planted_vector_add_dropped_load_mask",
                    "--no-memcheck")
    assert run.returncode == 0, run.output[-3000:]
    assert "memory check: off (--no-memcheck)" in run.output


def test_a_kernel_the_checker_never_saw_launch_is_listed_unchecked(run_suite):
    run = run_suite("suite/test_kernels.py", PLANTED, "--kernels=unlaunched_vector_add,vector_add", "-k", "fp32")
    assert run.returncode == 0, run.output[-3000:]
    mem = run.run_data()["memcheck"]
    assert list(mem["unchecked"]) == ["unlaunched_vector_add"]
    assert "vector_add" in mem["kernels"] and "unlaunched_vector_add" not in mem["kernels"]
    said = " ".join(run.output.split())  # the summary's line, wrapped to the terminal's width
    assert "unchecked: unlaunched_vector_add (its cases launched no kernel through the interpreter)" in said


def test_gpu_memcheck_command_and_environment(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "compute-sanitizer"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    command = memcheck.reexec_command("nvidia", ["--backend=cuda", "-n", "2"], "/logs")
    assert command[:3] == [str(fake), "--tool", "memcheck"]
    assert command[-5:] == ["-m", "pytest", "--backend=cuda", "-n", "2"]
    assert "/logs/memcheck.%p.log" in command
    assert memcheck.sanitizer_environment("nvidia", "/logs")["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    amd = memcheck.sanitizer_environment("amd", "/logs")
    assert amd["TRITON_ENABLE_ASAN"] == "1" and amd["HSA_XNACK"] == "1"
    assert memcheck.reexec_command("amd", ["--backend=rocm"], "/logs")[1:] == ["-m", "pytest", "--backend=rocm"]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(memcheck.Path, "is_file", lambda self: False)
    with pytest.raises(FileNotFoundError, match="compute-sanitizer"):
        memcheck.reexec_command("nvidia", [], "/logs")


def test_sanitizer_reports_are_read_once_per_process(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv(memcheck.SANITIZER_ENV, str(tmp_path))
    log = tmp_path / f"memcheck.{os.getpid()}.log"
    log.write_text("========= COMPUTE-SANITIZER\n")
    offsets: dict[str, int] = {}
    assert memcheck.sanitizer_report(offsets) is None
    with log.open("a") as f:
        f.write("========= Invalid __global__ read of size 4 bytes\n=========     at vector_add_kernel+0x1e0\n"
                "=========     by thread (64,0,0) in block (0,0,0)\n=========     Address 0x7f00 is out of bounds\n")
    report = memcheck.sanitizer_report(offsets)
    assert report.startswith("compute-sanitizer: Invalid __global__ read of size 4 bytes; at vector_add_kernel")
    assert memcheck.sanitizer_report(offsets) is None  # read once


def test_what_a_launch_touched_is_every_byte_of_its_accesses_and_no_other():
    """memcheck.Seen keeps each access's start and size; marking bytes and asking for addresses give what expanding
    every access to its bytes gives (accesses of two sizes, overlapping, at the buffer's edges and outside it)."""
    import numpy as np
    import torch

    from suite.checks import memcheck

    rng = np.random.default_rng(7)
    base = 1 << 20
    seen = memcheck.Seen()
    expanded = {"load": set(), "store": set()}
    for op, size in [("load", 4), ("store", 2), ("load", 2), ("atomic_add", 4), ("store", 4)]:
        starts = (base - 8 + rng.integers(0, 80, 30)).astype(np.uint64)
        seen.add(op, starts, size)
        kind = "load" if op == "load" else "store"
        expanded[kind] |= {int(s) + k for s in starts for k in range(size)}
    for kind in ("load", "store"):
        flags = torch.zeros(64, dtype=torch.bool)
        seen.mark(kind, base, flags)
        assert set(torch.nonzero(flags).flatten().tolist()) == {a - base for a in expanded[kind] if 0 <= a - base < 64}
        addrs = np.arange(base - 16, base + 96, dtype=np.uint64)
        assert seen.touched(kind, addrs).tolist() == [int(a) in expanded[kind] for a in addrs]
