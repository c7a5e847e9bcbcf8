"""A worker's one-time GPU start-up, done while it waits for its first test.

An xdist worker's first test used to pay, inside its "inputs" phase, for what every process does once on a GPU:
creating the CUDA context, loading Triton's driver and the input generator's kernels (about 2.4 s on an H100 with
16 workers starting at once; ``suite/workers/timing.py`` showed it in the first test of every worker). A worker now starts
that work in a thread as soon as it is configured, while it collects and waits for the controller to hand it tests;
the first test waits for the thread (``wait``), so no test's phases count it and nothing runs on the GPU twice at once.

Then the objects the worker's start-up made (torch, Triton, Hypothesis and the suite imported, the tests collected:
about 200,000 objects) are moved out of the cyclic garbage collector's sight (``gc.freeze``): a GPU worker collects
its garbage after every test (suite/workers/gpu_share.py: ``end_of_test`` frees what the test held for the GPU's other
workers), and a full collection walked them all each time (0.1-0.3 s a test), as did every automatic one.
"""

from __future__ import annotations

import gc
import threading

from suite.session import stash


def start(device: str) -> None:
    """Begin the start-up work for ``device`` (a CUDA or ROCm device; torch names both 'cuda'). The thread is kept in
    the session's state (suite/session/stash.py) until ``wait`` joins it."""
    state = stash.session()
    if state.warmup is not None or not device.startswith("cuda"):
        return
    state.warmup = threading.Thread(target=_warm, args=(device,), name="suite-warmup", daemon=True)
    state.warmup.start()


def _warm(device: str) -> None:
    try:
        import torch

        from kernels import inputs

        dev = torch.device(device)
        torch.empty(1, device=dev)
        for kind in (inputs._NORMAL, inputs._BITS):  # the two draws the inputs use
            inputs._draw(0, 0, kind, (1024,), dev)
        torch.cuda.synchronize(dev)
    except Exception:  # noqa: BLE001 - the first test meets the same error in its own phase and reports it
        pass


def wait() -> None:
    """Before the first test: the start-up work is done (a no-op after it, and where none was started)."""
    state = stash.session()
    if state.warmup is not None:
        state.warmup.join()
        state.warmup = None
        gc.freeze()  # start-up's objects live as long as the worker: no collection need walk them again
