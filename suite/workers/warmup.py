"""A worker's one-time GPU start-up, done while it loads its kernels, collects and waits for its first test.

An xdist worker's first test used to pay, inside its "inputs" phase, for what every process does once on a GPU:
creating the CUDA context, loading Triton's driver and the input generator's kernels (about 2.4 s on an H100 with
16 workers starting at once; ``suite/workers/timing.py`` showed it in the first test of every worker). A worker now does
that work in a thread, so no test's phases count it and nothing runs on the GPU twice at once; the first test waits
for the thread (``wait``).

The thread starts creating the CUDA context at once: 16 processes creating theirs together took 1.9-2.5 s each on an
H100 (0.36 s for one alone), time the driver spends, not the worker's CPU, so it runs while the worker goes on
importing torch and Triton and loading its kernels. On an NVIDIA worker it starts before torch is imported (``start``
with ``driver=True``, once the worker is pinned to its GPU): the CUDA driver's primary context of the worker's device,
which torch's runtime then uses as its own, is made through the driver library itself; elsewhere the thread starts once
torch has resolved the backend, and torch makes the context. Once the worker has imported its kernels
(``kernels_loaded``), a second thread compiles the input generator's two kernels (``_compile_draws``: Triton's compile
needs the GPU's arch, not its context). The first thread, its context made, waits for that (it imports no kernel
module before then, so the two never wait on each other's imports) and draws with the two kernels, which by then are
only loaded and launched. When the
start-up began, had its context and ended goes to the first test's report (``STARTUP_PROPERTY``) and from there into
the run file's timeline.

Then the objects the worker's start-up made (torch, Triton, Hypothesis and the suite imported, the tests collected:
about 200,000 objects) are moved out of the cyclic garbage collector's sight (``gc.freeze``): a GPU worker collects
its garbage after every test (suite/workers/gpu_share.py: ``end_of_test`` frees what the test held for the GPU's other
workers), and a full collection walked them all each time (0.1-0.3 s a test), as did every automatic one.
"""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from typing import Any

from suite.session import stash

STARTUP_PROPERTY = "suite_startup"  # user property of a worker's first test: its start-up's times (seconds since epoch)


class Startup:
    """One worker's GPU start-up: the thread, the go-ahead to use the kernels, and its times."""

    def __init__(self, device: str, driver: bool = False) -> None:
        self.device, self.driver = device, driver
        self.loaded = threading.Event()  # the kernels are imported and the generator's compiled: the draws may run
        self.compiler: threading.Thread | None = None  # the thread that compiles the input generator's kernels
        self.times: dict[str, float] = {"began": time.time()}
        self.thread = threading.Thread(target=self.run, name="suite-warmup", daemon=True)

    def run(self) -> None:
        try:
            if self.driver:
                _primary_context()
            _warm(self.device, self.loaded, self.times)
        finally:
            self.times["ended"] = time.time()


def start(device: str, driver: bool = False) -> None:
    """Begin the start-up work for ``device`` (a CUDA or ROCm device; torch names both 'cuda'); ``driver``: an NVIDIA
    GPU, whose context the CUDA driver library makes before torch is imported. Kept in the session's state
    (suite/session/stash.py) until ``wait`` joins it."""
    state = stash.session()
    if state.warmup is not None or not device.startswith("cuda"):
        return
    state.warmup = Startup(device, driver)
    state.warmup.thread.start()


def _primary_context(library: str = "libcuda.so.1") -> bool:
    """The CUDA driver's primary context of device 0 (the worker's GPU, as its visible-devices variable shows it),
    made and kept: torch's runtime takes the same context when it starts. False where the driver would not."""
    try:
        lib = ctypes.CDLL(library)  # ctypes lets the GIL go during each call: the worker's imports go on
        device, context = ctypes.c_int(0), ctypes.c_void_p()
        return (lib.cuInit(0) == 0 and lib.cuDeviceGet(ctypes.byref(device), 0) == 0
                and lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0)
    except (OSError, AttributeError):
        return False


def kernels_loaded() -> None:
    """The worker has imported its kernels: the input generator's kernels are compiled (in a thread of their own), and
    then the start-up may draw with them."""
    startup = stash.session().warmup
    if startup is None or startup.loaded.is_set() or startup.compiler is not None:
        return
    startup.compiler = threading.Thread(target=_compile_draws, args=(startup,), name="suite-warmup-compile",
                                        daemon=True)
    startup.compiler.start()


def _compile_draws(startup: Startup) -> None:
    """Triton's compile of the input generator's two kernels, as ``kernels.inputs.draw_into`` launches them for the
    start-up's draws (the same arguments, so the same kernel variants), without launching them."""
    try:
        import torch

        from kernels import inputs

        for kind in (inputs._NORMAL, inputs._BITS):
            inputs._draw_kernel.warmup(torch.int64, 1024, 0, 0, inputs._DOMAIN, KIND=kind, BLOCK=inputs.DRAW_BLOCK,
                                       num_warps=4, grid=(1,))
        startup.times["compiled"] = time.time()
    except Exception:  # noqa: BLE001 - the draws compile them then, and meet any error there
        pass
    finally:
        startup.loaded.set()


def _warm(device: str, loaded: threading.Event, times: dict[str, float]) -> None:
    try:
        import torch

        dev = torch.device(device)
        torch.empty(1, device=dev)  # the CUDA context
        times["context"] = time.time()
        loaded.wait()
        from kernels import inputs

        for kind in (inputs._NORMAL, inputs._BITS):  # the two draws the inputs use
            inputs._draw(0, 0, kind, (1024,), dev)
        torch.cuda.synchronize(dev)
    except Exception:  # noqa: BLE001 - the first test meets the same error in its own phase and reports it
        pass


def wait() -> dict[str, Any] | None:
    """Before the first test: the start-up work is done (a no-op after it, and where none was started). Its times, for
    the first test's report: when it began, had its context, had compiled the generator's kernels and ended, and how
    long the test waited for it."""
    state = stash.session()
    startup = state.warmup
    if startup is None:
        return None
    waited = time.time()
    if startup.compiler is not None:
        startup.compiler.join()
    startup.loaded.set()  # whatever the worker did not say, the thread must not wait for it now
    startup.thread.join()
    state.warmup = None
    gc.freeze()  # start-up's objects live as long as the worker: no collection need walk them again
    return {**startup.times, "waited_s": round(time.time() - waited, 3)}
