"""A float64 reference too large for the GPU, computed on the host instead (issue 49: a nightly called attention
B=8, H=23, S=4500 "too large for this GPU" where what did not fit was the suite's own 27.8 GiB float64 reference,
not the case).

The reference runs on copies of the case's inputs in host memory; the comparison then reads it a chunk at a time
onto the GPU (suite/checks/tolerance.py), so the whole float64 reference never needs the GPU's memory. Only on a GPU
and only after the reference ran out of memory there with the GPU to itself, or where alone could not help (its
footprint past the GPU, no other worker on it: suite/workers/gpu_share.py, worth_alone); beside other workers the case
runs again alone first, where its reference takes seconds, not minutes. Where the host cannot compute it either (its
own memory, a reference that needs the GPU), the case goes on as before (judged by its footprint)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from kernels.spec import Case, KernelSpec
from suite.workers import crash, gpu_share

# (ref, mags) from the host's inputs and the reference's raw result: the harness's own checks of the reference.
Finish = Callable[[dict, Any], tuple[dict, dict]]


def on_host(spec: KernelSpec, case: Case, inputs: dict, device: str, finish: Finish) -> tuple[dict, dict] | None:
    """(reference, magnitudes) computed from host copies of ``inputs``, or None: not a GPU, or the host failed too
    (any error: the GPU's out-of-memory stop stands)."""
    if not device.startswith("cuda"):
        return None
    crash.free_memory(device)  # what the failed reference held on the GPU
    # Off the GPU's lock (the GPU's other workers go on meanwhile) and with more of the host's cores than a worker's
    # share: one thread took 130 s for row_max's 16381 x 262144 in a four-GPU nightly.
    with gpu_share.share().off_gpu(), more_threads():
        try:
            host = {k: v.detach().cpu() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
            return finish(host, spec.reference(host, case))
        except Exception:  # noqa: BLE001 - the GPU's out-of-memory error is what the case reports then
            return None
        except MemoryError:
            return None


# A host reference's threads: this share of the process's cores (at least what the worker has): the workers split the
# cores evenly (suite/plugin/hooks.py: share_cpu_threads), but most of them wait on their GPU while one computes this.
HOST_THREADS_SHARE = 4


@contextmanager
def more_threads() -> Iterator[None]:
    """torch's CPU threads raised to a quarter of the cores this process may use, for the block."""
    before = torch.get_num_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    torch.set_num_threads(max(before, cores // HOST_THREADS_SHARE))
    try:
        yield
    finally:
        torch.set_num_threads(before)
