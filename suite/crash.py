"""Surviving what GPU runners throw at the suite: one worker per GPU, faults, OOM and hangs.

- **Pinning**: under xdist the controller gives each worker one GPU (round robin over the GPUs it
  sees) and the worker sets CUDA_VISIBLE_DEVICES (NVIDIA) or HIP_VISIBLE_DEVICES (AMD) before the
  GPU runtime starts.
- **Faults**: a kernel fault (illegal memory access, ...) poisons the GPU context of its process
  for good. The harness records the case as failed with its reproduction line, then the worker
  exits after that test's report has gone out; xdist starts a fresh worker for the rest.
- **OOM**: a case that runs out of device memory is recorded as such; memory is freed and the
  next case goes on in the same process (an OOM does not poison the context).
- **Hangs**: each case runs under a watchdog (``--case-timeout``). Before a case starts, the
  worker notes it in an in-flight journal; when the watchdog fires, or the process dies
  outright, the controller reads the journal and records the case with its reproduction line.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Exit codes of a worker that ends itself; the controller's crash report says which.
EXIT_POISONED = 75
EXIT_TIMEOUT = 76

# Errors after which the process's GPU context is unusable (CUDA and HIP wordings).
STICKY_ERRORS = re.compile(r"illegal memory access|illegal address|misaligned address|unspecified launch failure|"
                           r"illegal instruction|device-side assert|hardware exception|hipErrorIllegalAddress|"
                           r"an illegal memory access|context is destroyed|launch failure|memory access fault",
                           re.IGNORECASE)
OOM_ERRORS = re.compile(r"out of memory|OutOfMemoryError|hipErrorOutOfMemory", re.IGNORECASE)


class CaseAborted(BaseException):  # noqa: N818 - not an Exception on purpose
    """Raised by a test for a fault or OOM case: a BaseException, so Hypothesis does not shrink
    (every further case would fail for the same reason, on a poisoned context or a full GPU)."""


# --- pinning --------------------------------------------------------------------------------------

def visibility_variable(family: str, environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    if family == "amd":
        for name in ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
            if env.get(name, "").strip():
                return name
        return "HIP_VISIBLE_DEVICES"
    return "CUDA_VISIBLE_DEVICES"


def visible_gpus(count: int, variable: str, environ: dict[str, str] | None = None) -> list[str]:
    """The device ids a worker may be pinned to, as the variable names them in this process:
    the parent's list where set (ids or UUIDs), else 0..count-1."""
    env = os.environ if environ is None else environ
    listed = [d.strip() for d in env.get(variable, "").split(",") if d.strip()]
    if listed:
        return listed[:count] if count else listed
    return [str(i) for i in range(count)]


def assign(gpus: Sequence[str], taken: Sequence[str]) -> str | None:
    """The GPU with the fewest live workers (the first such): gw0, gw1, ... get GPUs in order, more
    workers than GPUs share them round robin, and a replacement worker (xdist gives it a new id)
    takes the GPU its dead predecessor left."""
    if not gpus:
        return None
    return min(gpus, key=lambda g: (list(taken).count(g), gpus.index(g)))


# --- per-case journal and watchdog ------------------------------------------------------------------

class Journal:
    """What a worker is running now, on disk, so that its death does not lose the case."""

    def __init__(self, directory: str | None, worker_id: str) -> None:
        self.path = Path(directory) / f"{worker_id}.json" if directory else None
        self.nodeid: str | None = None
        self.repro_prefix: list[str] = []
        self.case: dict[str, Any] | None = None

    def start_test(self, nodeid: str, repro_prefix: list[str]) -> None:
        self.nodeid, self.repro_prefix, self.case = nodeid, repro_prefix, None
        self._write(None)

    def repro(self, spec_string: str) -> str:
        return " ".join(shlex.quote(p) for p in [*self.repro_prefix, f"--repro={spec_string}"])

    def start_case(self, case: Any) -> None:
        self.case = {**case.as_record(), "repro": self.repro(case.spec_string()), "started": time.time()}
        self._write(None)

    def end_test(self) -> None:
        self.nodeid, self.case = None, None
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def _write(self, failure: str | None) -> None:
        if self.path is None or self.nodeid is None:
            return
        data = {"nodeid": self.nodeid, "case": self.case, "failure": failure, "pid": os.getpid()}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.path)

    def mark(self, failure: str) -> None:
        self._write(failure)


def read_journal(directory: str | None, worker_id: str) -> dict[str, Any] | None:
    if not directory:
        return None
    path = Path(directory) / f"{worker_id}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    path.unlink(missing_ok=True)
    return data


journal = Journal(None, "main")
poisoned: str | None = None  # why this process's GPU context is unusable, once it is
timeout_s: float = 0.0
on_timeout: Callable[[str], None] | None = None  # single-process runs: record before exiting


class watchdog:
    """``with watchdog(case):`` ends the process if the case outlives ``timeout_s``: a hung GPU
    kernel cannot be interrupted any other way. The journal says which case it was."""

    def __init__(self, case: Any) -> None:
        self.case = case
        self.timer: threading.Timer | None = None

    def __enter__(self) -> None:
        journal.start_case(self.case)
        if timeout_s > 0:
            self.timer = threading.Timer(timeout_s, self._fire)
            self.timer.daemon = True
            self.timer.start()

    def __exit__(self, *exc: object) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def _fire(self) -> None:
        message = (f"timeout: case {self.case} ran longer than --case-timeout={timeout_s:g} s "
                   f"(a hung kernel); the process was ended")
        journal.mark(message)
        print(f"\nsuite: {message}", file=sys.stderr, flush=True)
        if on_timeout is not None:
            try:
                on_timeout(message)
            except Exception:  # noqa: BLE001 - exiting matters more than recording here
                pass
        os._exit(EXIT_TIMEOUT)


def classify(exc: BaseException, device: str) -> str | None:
    """'fault' when the error left the GPU context unusable, 'oom' for out of memory, else None.
    A fault is confirmed by probing the device: every call fails on a poisoned context."""
    text = f"{type(exc).__name__}: {exc}"
    if OOM_ERRORS.search(text) and not STICKY_ERRORS.search(text):
        return "oom"
    if not device.startswith("cuda"):
        return "fault" if STICKY_ERRORS.search(text) else None
    import torch

    try:
        torch.cuda.synchronize()
        probe = torch.ones(1, device=device)
        if float((probe + 1).item()) != 2.0:
            return "fault"
    except Exception:  # noqa: BLE001 - any error here means the context is gone
        return "fault"
    return None


def free_memory(device: str) -> None:
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        try:
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001
            pass


def note_launch_error(exc: BaseException, device: str, case: Any) -> str | None:
    """Classify a failed launch (see :func:`classify`) and mark a poisoned context; the caller drops
    its tensors and calls :func:`free_memory` after an OOM."""
    global poisoned
    failure = classify(exc, device)
    if failure == "fault":
        detail = f"{type(exc).__name__}: {exc}".strip()
        poisoned = f"{case}: {detail[:300]}"
    return failure
