"""A float64 reference that runs out of memory on the GPU is computed on the host (suite/checks/host_reference.py;
issue 49, item 16). The GPU's path needs a GPU (tests/fixtures/gpu_reference_oom.py, run with --backend=cuda); here,
what the host path does with what it is given."""

from __future__ import annotations

import os

import torch

from kernels.spec import Case
from kernels.vector_add import SPEC as VECTOR_ADD
from suite.checks import host_reference


def _finish(inputs, ref):
    return ref, {"seen_on": {k: v.device.type for k, v in inputs.items() if isinstance(v, torch.Tensor)}}


def test_a_reference_out_of_memory_on_the_gpu_is_computed_on_the_host():
    case = Case(kernel="vector_add", dtype="fp32", shape={"N": 5})
    inputs = {"x": torch.ones(5), "y": torch.full((5,), 2.0), "n": 5}
    ref, seen = host_reference.on_host(VECTOR_ADD, case, inputs, "cuda", _finish)
    assert torch.equal(ref["out"], torch.full((5,), 3.0, dtype=torch.float64)) and ref["out"].device.type == "cpu"
    assert seen == {"seen_on": {"x": "cpu", "y": "cpu"}}
    # not a GPU: nothing to move (the interpreter's reference ran on the host already)
    assert host_reference.on_host(VECTOR_ADD, case, inputs, "cpu", _finish) is None


def test_a_reference_the_host_cannot_compute_either_leaves_the_out_of_memory_stop():
    import dataclasses

    def broken(inp, case):
        raise RuntimeError("needs the GPU")

    spec = dataclasses.replace(VECTOR_ADD, reference=broken)
    case = Case(kernel="vector_add", dtype="fp32", shape={"N": 5})
    assert host_reference.on_host(spec, case, {"x": torch.ones(5)}, "cuda", _finish) is None


def test_a_host_reference_runs_with_a_quarter_of_the_cores_and_gives_the_threads_back(monkeypatch):
    """A worker's share of the cores is one thread where 64 workers share 64 cores; a host reference of 34 GB took
    130 s so. It runs with a quarter of the cores (at least the worker's own), and the worker's count comes back."""
    import os

    seen = []

    def counting(inp, case):
        seen.append(torch.get_num_threads())
        return {"out": inp["x"].double() + inp["y"].double()}

    import dataclasses

    spec = dataclasses.replace(VECTOR_ADD, reference=counting)
    case = Case(kernel="vector_add", dtype="fp32", shape={"N": 5})
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        host_reference.on_host(spec, case, {"x": torch.ones(5), "y": torch.ones(5), "n": 5}, "cuda", _finish)
        assert seen == [16] and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def _shared_gpu(monkeypatch, tmp_path, total_gib: float = 140, workers: int = 16) -> None:
    """A GPU of ``total_gib`` shared by ``workers`` workers, played on the CPU: a real lock file, its memory faked."""
    from suite.workers import gpu_share

    fd = os.open(tmp_path / "gpu.lock", os.O_CREAT | os.O_RDWR)
    monkeypatch.setattr(gpu_share.share(), "fd", fd)
    monkeypatch.setattr(gpu_share.share(), "workers", workers)
    monkeypatch.setattr(gpu_share, "mem_info", lambda device: (2**30, int(total_gib * 2**30)))


def test_a_reference_too_large_beside_other_workers_is_worth_running_alone_only_where_it_fits(monkeypatch, tmp_path):
    from suite.workers import gpu_share

    _shared_gpu(monkeypatch, tmp_path)
    assert gpu_share.worth_alone("cuda", 40 * 2**30) and gpu_share.worth_alone("cuda", 0)
    # past the GPU less the other 15 workers' contexts: only the host can compute it
    assert not gpu_share.worth_alone("cuda", 131 * 2**30)
    monkeypatch.setattr(gpu_share.share(), "exclusive", True)  # alone already: nothing more to free
    assert not gpu_share.worth_alone("cuda", 40 * 2**30)
    monkeypatch.setattr(gpu_share.share(), "exclusive", False)
    monkeypatch.setattr(gpu_share.share(), "workers", 1)  # no other worker to wait for
    assert not gpu_share.worth_alone("cuda", 40 * 2**30)


def test_a_reference_out_of_memory_beside_other_workers_runs_the_case_again_alone_before_the_host(monkeypatch,
                                                                                                   tmp_path):
    """A four-H200 nightly's cross_entropy 8192 x 262144 ran out of memory for its float64 reference beside the GPU's
    other 15 workers and went to the host: 96 s for the reference and 78 s reading it back chunk by chunk over 12
    configs, the run's last 60 s spent on that one test. Alone on the GPU it takes seconds: the case stops out of
    memory (the test runs it again alone, suite/workers/gpu_share.py: run_with_retry), and only a case alone, or one
    whose footprint the GPU cannot hold, goes to the host."""
    import dataclasses

    from suite.checks import harness
    from suite.session.backend import resolve
    from suite.workers import gpu_share

    def reference(inp, case):
        if not hosted:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB (planted: the float64 "
                                         "reference beside other workers)")
        return {"out": inp["x"].double() + inp["y"].double()}

    hosted: list = []

    def on_host(spec, case, inputs, device, finish):
        hosted.append(case)
        return finish(inputs, spec.reference(inputs, case))

    spec = dataclasses.replace(VECTOR_ADD, reference=reference)
    case = Case.parse("vector_add", "fp32", "N=300;seed=3")
    monkeypatch.setattr(host_reference, "on_host", on_host)
    _shared_gpu(monkeypatch, tmp_path)
    shared = harness.run_case(spec, case, resolve("interpret"), {})
    assert shared.failure == "oom" and "computing the float64 reference" in shared.error and not hosted, shared.error
    monkeypatch.setattr(gpu_share.share(), "exclusive", True)  # the test's retry: alone, it goes to the host
    alone = harness.run_case(spec, case, resolve("interpret"), {})
    assert alone.passed and hosted == [case], alone.error
