"""A float64 reference too large for the GPU, computed on the host instead (issue 49: a nightly called attention
B=8, H=23, S=4500 "too large for this GPU" where what did not fit was the suite's own 27.8 GiB float64 reference,
not the case).

The reference runs on copies of the case's inputs in host memory; the comparison then reads it a chunk at a time
onto the GPU (suite/checks/tolerance.py), so the whole float64 reference never needs the GPU's memory. Only on a GPU
and only after the reference ran out of memory there: where the host cannot compute it either (its own memory, a
reference that needs the GPU), the case goes on as before (run again alone, then judged by its footprint)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernels.spec import Case, KernelSpec
from suite.workers import crash

# (ref, mags) from the host's inputs and the reference's raw result: the harness's own checks of the reference.
Finish = Callable[[dict, Any], tuple[dict, dict]]


def on_host(spec: KernelSpec, case: Case, inputs: dict, device: str, finish: Finish) -> tuple[dict, dict] | None:
    """(reference, magnitudes) computed from host copies of ``inputs``, or None: not a GPU, or the host failed too
    (any error: the GPU's out-of-memory stop stands)."""
    if not device.startswith("cuda"):
        return None
    crash.free_memory(device)  # what the failed reference held on the GPU
    try:
        host = {k: v.detach().cpu() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        return finish(host, spec.reference(host, case))
    except Exception:  # noqa: BLE001 - the GPU's out-of-memory error is what the case reports then
        return None
    except MemoryError:
        return None
