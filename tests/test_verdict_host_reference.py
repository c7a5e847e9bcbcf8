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
