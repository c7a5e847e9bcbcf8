"""64-bit offsets: tensors past 2^31 elements, where int32 offset arithmetic overflows
(docs/hazards.md, hazard 8). GPU only, memory permitting; recorded as a case."""

from __future__ import annotations

import pytest
import torch

from suite.plugin.context import BACKEND
from suite.session import results

ELEMENTS = 2**31 + 4099  # past the int32 range, not a multiple of any block


@pytest.mark.kernels("vector_add_int64")
def test_vector_add_past_2_to_the_31(request: pytest.FixtureRequest) -> None:
    backend = request.config.stash[BACKEND]
    if backend.device == "cpu":
        pytest.skip("needs a GPU: the interpreter would allocate 2^31 elements in host memory")
    free, _ = torch.cuda.mem_get_info()
    need = 4 * ELEMENTS * 2  # x, y, out and torch's x + y, fp16
    if free < need * 1.1:
        pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    from kernels.vector_add_int64 import vector_add_int64

    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(ELEMENTS, device="cuda", dtype=torch.float16, generator=gen)
    y = torch.randn(ELEMENTS, device="cuda", dtype=torch.float16, generator=gen)
    out = torch.full_like(x, float("nan"))
    vector_add_int64(x, y, out)
    expected = x + y  # fp16 add computed in fp32 and rounded once, as the kernel does
    mismatched = int((out != expected).sum()) if not torch.equal(out, expected) else 0
    tail = out[-5:].tolist()
    request.node.user_properties.append((results.CASES_PROPERTY, [{
        "kernel": "vector_add_int64", "dtype": "fp16", "shape": {"N": ELEMENTS}, "layout": "contiguous",
        "values": "normal", "seed": 0, "outcome": "passed" if mismatched == 0 else "failed",
        "error_ratio": 0.0 if mismatched == 0 else "inf", "outputs": {}, "duration_s": 0.0,
        "message": None if mismatched == 0 else f"{mismatched} elements differ from torch's x + y",
        "nodeid": request.node.nodeid, "repro": f"pytest {request.node.nodeid} --backend={backend.name}"}]))
    assert mismatched == 0, f"{mismatched} of {ELEMENTS} elements differ from torch's x + y; last five: {tail}"
