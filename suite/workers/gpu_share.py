"""Workers that share one GPU share its memory, so that one worker's out-of-memory is never another's fault.

Several pytest-xdist workers run on each GPU (see ``workers_per_gpu``). Torch's caching allocator keeps what a
process freed, so without care a worker that ran a large case keeps tens of GiB that the next large case of
another worker needs, and that case fails with an out-of-memory error that says nothing about the kernel. Here:

- **Trim**: after each case a worker that holds more than its share of the GPU (total / workers on it) in torch's
  cache gives the cache back (``torch.cuda.empty_cache``).
- **Retry alone**: every case runs under a shared lock of its GPU (a file lock named by the GPU's UUID, so
  separate suite runs on one GPU take part too). A case that runs out of memory frees what it holds, takes the
  lock exclusively (new cases on that GPU wait; the cases running finish and trim) and runs again. Only an
  out-of-memory error with the GPU to itself is the case's own: it is reported as "too large for this GPU"
  (failure ``too_large``), never as a wrong result.

On the interpreter and with one worker per GPU nothing is locked; an out-of-memory case is still run once more
(after freeing what the process holds) before it is called too large.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from suite.session import stash
from suite.workers import crash

# Workers per GPU that `-n auto` starts (capped by the CPU cores): measured on an H100 with the ci profile
# (README, "Running on a GPU runner").
WORKERS_PER_GPU = 16
SHARE_PROPERTY = "suite_gpu_share"  # a test's out-of-memory retries, for the run file
SHARE_ENV = crash.SHARE_ENV  # set by the controller for its workers: how many share each GPU


class Share:
    def __init__(self) -> None:
        self.fd: int | None = None
        self.gate: int | None = None
        self.depth = 0  # cases entered (nested ones take no second lock)
        self.workers = 1
        self.exclusive = False
        self.retried = 0  # out-of-memory cases this process ran again alone (counted per test)
        self.retried_passed = 0

    def setup(self, device: str) -> None:
        """Open this GPU's lock (a worker on a CUDA/ROCm device, with other workers on the same GPU)."""
        self.workers = max(1, int(os.environ.get(SHARE_ENV, "1") or 1))
        if not device.startswith("cuda") or self.fd is not None:
            return
        import torch

        try:
            uuid = str(torch.cuda.get_device_properties(0).uuid)
        except Exception:  # noqa: BLE001 - no UUID: share a lock per visible-device string
            uuid = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES") or "0"
        stem = Path(tempfile.gettempdir()) / f"suite-gpu-{''.join(c for c in uuid if c.isalnum() or c in '-_')}"
        self.fd = os.open(f"{stem}.lock", os.O_CREAT | os.O_RDWR, 0o666)
        self.gate = os.open(f"{stem}.gate", os.O_CREAT | os.O_RDWR, 0o666)

    def _flock(self, how: int, fd: int | None = None) -> None:
        import fcntl

        fcntl.flock(self.fd if fd is None else fd, how)

    @contextmanager
    def case(self, device: str) -> Iterator[None]:
        """One case's GPU work: shared with the other workers' cases, then the cache trimmed to this worker's
        share. Inside an exclusive section (``alone``) nothing more is taken."""
        if self.exclusive or self.fd is None or self.depth:
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1
            return
        import fcntl

        # Through the gate: a worker waiting to run alone holds it, so new cases wait behind it (flock alone would
        # let a stream of shared holders starve it).
        with crash.not_counted():  # waiting for the GPU is not the case's time (its --case-timeout)
            self._flock(fcntl.LOCK_EX, self.gate)
            try:
                self._flock(fcntl.LOCK_SH)
            finally:
                self._flock(fcntl.LOCK_UN, self.gate)
        self.depth = 1
        try:
            yield
        finally:
            self.depth = 0
            trim(device, self.workers)
            self._flock(fcntl.LOCK_UN)

    @contextmanager
    def alone(self, device: str) -> Iterator[None]:
        """The GPU to this worker: after the cases running on it finish; new ones wait."""
        crash.free_memory(device)
        if self.fd is None or self.exclusive:
            yield
            return
        import fcntl

        held = self.depth > 0  # called inside a case (a property's launch): give its shared lock up first
        if held:
            self._flock(fcntl.LOCK_UN)
        with crash.not_counted():
            self._flock(fcntl.LOCK_EX, self.gate)
        try:
            with crash.not_counted():
                self._flock(fcntl.LOCK_EX)
            self.exclusive = True
            try:
                yield
            finally:
                self.exclusive = False
                crash.free_memory(device)
                self._flock(fcntl.LOCK_SH if held else fcntl.LOCK_UN)
        finally:
            self._flock(fcntl.LOCK_UN, self.gate)

    def take_counts(self) -> dict[str, int] | None:
        counts = {"oom_retried": self.retried, "oom_retried_passed": self.retried_passed}
        self.retried = self.retried_passed = 0
        return counts if counts["oom_retried"] else None


def share() -> Share:
    """This process's share of its GPU (kept in the session's state, suite/session/stash.py)."""
    state = stash.session()
    if state.share is None:
        state.share = Share()
    return state.share


def trim(device: str, workers: int) -> None:
    """Give torch's cache back when this worker holds more than its share of the GPU."""
    if not device.startswith("cuda") or workers <= 1:
        return
    import torch

    try:
        total = torch.cuda.get_device_properties(0).total_memory
        if torch.cuda.memory_reserved() > total / workers:
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass


def too_large_message(device: str, error: str) -> str:
    total = ""
    if device.startswith("cuda"):
        import torch

        try:
            total = f" ({torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)"
        except Exception:  # noqa: BLE001
            pass
    return (f"too large for this GPU{total}: out of memory with the GPU to itself (no other case running); "
            f"not a wrong result. {error}")


def run_with_retry(run: Any, device: str) -> Any:
    """``run()`` -> a result with ``.failure``; an out-of-memory result runs again alone, and one that runs out of
    memory alone too becomes ``too_large``."""
    with share().case(device):
        result = run()
    if getattr(result, "failure", None) != "oom":
        return result
    share().retried += 1
    started = time.monotonic()
    with share().alone(device):
        again = run()
    if again.failure == "oom":
        again.failure = "too_large"
        again.error = too_large_message(device, again.error or "")
    elif again.passed:
        share().retried_passed += 1
    again.note = (again.note or "") + (f"\n(ran again alone after an out-of-memory error with other workers on the "
                                       f"GPU; waited and ran {time.monotonic() - started:.1f} s)")
    return again
