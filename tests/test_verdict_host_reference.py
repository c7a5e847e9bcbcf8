"""A float64 reference that runs out of memory on the GPU is computed on the host (suite/checks/host_reference.py;
issue 49, item 16). The GPU's path needs a GPU (tests/fixtures/gpu_reference_oom.py, run with --backend=cuda); here,
what the host path does with what it is given."""

from __future__ import annotations

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
