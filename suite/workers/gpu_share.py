"""Workers that share one GPU share its memory, so that one worker's out-of-memory is never another's fault.

Several pytest-xdist workers run on each GPU (see ``workers_per_gpu``). Torch's caching allocator keeps what a
process freed, so without care a worker that ran a large case keeps tens of GiB that the next large case of
another worker needs, and that case fails with an out-of-memory error that says nothing about the kernel. Here:

- **Trim**: after each case a worker that holds more than its share of the GPU (total / workers on it) in torch's
  cache gives the cache back (``torch.cuda.empty_cache``), and so does every worker at the end of each test.
- **Retry alone**: every case runs under a shared lock of its GPU (a file lock named by the GPU's UUID, so
  separate suite runs on one GPU take part too). A case that runs out of memory frees what it holds, takes the
  lock exclusively (new cases on that GPU wait; the cases running finish) and runs again.
- **Drain**: the GPU "to itself" means its memory too. A worker that finds the gate taken (someone waits to run
  alone) gives torch's whole cache back, at the end of its case and before it waits at the gate; the worker that
  runs alone then waits (up to ``SUITE_DRAIN_WAIT_S``, 60 s by default, not counted as the case's time) until
  the GPU's free memory covers what the case needs, or stops growing.
- **Off the GPU**: a case gives its lock back while Triton compiles (``compile_event``), between two of its configs
  where a worker waits to run alone (``between_configs``), and while it works on the host (``off_gpu``: a float64
  reference computed there; a case running alone gives the GPU back whole and takes it alone again after), so that
  the GPU's other workers do not wait on work that needs no GPU.
- **Footprint**: an out-of-memory error records what the case itself needed (this process's allocated memory at
  the failure plus the allocation that failed). Run alone and out of memory again, the case is "too large for
  this GPU" only when that footprint exceeds what the GPU can hold beside the other workers' CUDA contexts;
  otherwise, where the free memory did not cover it (as torch's message gives it at the failure, else as free
  after), other processes held the memory (``oom_held``). Either way
  the case is not run, never a failure of the kernel: counted in the run file's ``gpu_share`` (too-large cases
  listed with their footprint and a reproduction line) and in the summary; a test whose every case was too large
  is skipped, saying so. Where the free memory covered the footprint with room to spare, or the footprint cannot be
  told, the error is the kernel's (or its launcher's) own: the case fails (``judge_oom_alone``).

On the interpreter and with one worker per GPU nothing is locked. On the interpreter there is no GPU memory to
share: an out-of-memory case runs once more (after freeing what the process holds, so that a passing error is not
blamed) and, out of memory again, fails as the kernel's own; nothing there is "too large for this GPU".
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reports.failure_kinds import FailureKind
from suite.session import options, stash
from suite.workers import crash, timing

# Workers per GPU that `-n auto` starts (capped by the CPU cores): measured on an H100 with the ci profile
# (README, "Running on a GPU runner").
WORKERS_PER_GPU = 16
SHARE_PROPERTY = "suite_gpu_share"  # a test's out-of-memory retries, for the run file
SHARE_ENV = crash.SHARE_ENV  # set by the controller for its workers: how many share each GPU
GIB = 2**30
# What one other worker's CUDA context (and its kernels' code) keeps on the GPU whatever it frees: a torch 2.11 +
# CUDA 13 process on an H100 held 0.52 GiB after starting its GPU, and idle workers 612-616 MiB in a nightly run
# (evidence/nightly/README.md). A case counts as too large only past the GPU's memory less this for every other
# worker on it.
CONTEXT_BYTES = 640 * 2**20
DRAIN_SETTLE_S = 3.0  # with no known need: free memory that has not grown for this long is all there will be
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


class MemoryHeld(Exception):  # noqa: N818 - it names the finding
    """Out of memory with the GPU to itself for a case that fits it: other processes held the memory (not run)."""


class TooLarge(MemoryHeld):
    """Out of memory with the GPU to itself for a case whose footprint exceeds what the GPU holds (not run)."""


# The too-large cases a run file lists (the count covers them all; so for the cases not run because other processes held
# the memory), and the cases run alone it lists.
TOO_LARGE_LISTED = 100
ALONE_LISTED = 200
ALONE_CASES = "alone_cases"  # the key of that list in the run file's gpu_share and in a test's counts
RUNNING_ALONE = "running alone on its GPU (the GPU's other workers wait at its gate)"


class Share:
    def __init__(self) -> None:
        self.fd: int | None = None
        self.gate: int | None = None
        self.depth = 0  # cases entered (nested ones take no second lock)
        self.workers = 1
        self.exclusive = False
        self.retried = 0  # out-of-memory cases this process ran again alone (counted per test)
        self.retried_passed = 0
        self.held = 0  # out of memory alone, yet the case fits the GPU: other processes held it (not run)
        self.held_cases: list[dict[str, Any]] = []  # those cases, each with its reproduction line
        self.too_large: list[dict[str, Any]] = []  # out of memory alone, past what the GPU holds (not run)
        # This test's too-large cases: a replay of one (Hypothesis replays a case that raised; a case run again to
        # count how often it is wrong) is not run alone again, which would stop the GPU's other workers for nothing.
        self._too_large_now: dict[str, tuple[int, str]] = {}
        self.alone_wait_s = 0.0  # waiting to run alone: for the cases running on the GPU to end, and its memory
        self.alone_s = 0.0  # running alone (the GPU's other workers wait at its gate all the while)
        self.alone_cases: list[dict[str, Any]] = []  # each case run alone in this test: what, how long it waited, ran
        self.device = ""
        self.alone_need = 0  # what the case running alone needs of the GPU's memory (bytes; 0: unknown)
        # This case gave its shared lock back while Triton compiles (``compile_event``) or it works on the host
        # (``off_gpu``).
        self.compiling = False

    def setup(self, device: str) -> None:
        """Open this GPU's lock (a worker on a CUDA/ROCm device, with other workers on the same GPU)."""
        self.workers = options.workers_per_gpu()
        self.device = device
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

    def _flock_waiting(self, how: int, fd: int | None, what: str) -> None:
        """``_flock``, which may block: a wait that does not end at once leaves ``what`` in the worker's GPU state
        (crash.Journal.gpu_state) until it ends, for the run file of a run stopped meanwhile."""
        import fcntl

        try:
            self._flock(how | fcntl.LOCK_NB, fd)
            return
        except BlockingIOError:
            pass
        journal = crash.process().journal
        journal.gpu_state(what)
        self._flock(how, fd)
        journal.gpu_state(None)

    def contended(self) -> bool:
        """Whether the gate is taken: a worker waits to run alone (or, for an instant, passes on to its case)."""
        import fcntl

        if self.gate is None:
            return False
        try:
            fcntl.flock(self.gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self.gate, fcntl.LOCK_UN)
        return False

    def drain(self, device: str) -> None:
        """Give torch's whole cache back, for a worker that waits to run alone."""
        crash.free_memory(device)

    def compile_event(self, started: bool) -> None:
        """A compile needs no GPU: while one runs inside a shared case, the case gives its GPU's shared lock back, so
        that a case waiting to run alone does not wait for it (a nightly case compiles every config of its kernel,
        minutes in all on a busy host, while the GPU's other workers waited behind the gate). It takes the lock again
        through the gate when the compile ends, as a new case does; its tensors stay allocated meanwhile, which the
        case alone's wait for memory counts."""
        if self.fd is None or self.exclusive or not self.depth:
            return
        if started:
            self._give_back()
        else:
            self._take_back()

    def _give_back(self) -> bool:
        """Inside a shared case, give its lock back for work that needs no GPU (``compiling`` says so until
        ``_take_back``); whether it was given back (not where none is held, or it is already)."""
        if self.fd is None or self.exclusive or not self.depth or self.compiling:
            return False
        import fcntl

        self._flock(fcntl.LOCK_UN)
        self.compiling = True
        return True

    def _take_back(self) -> None:
        """The case's shared lock again, through the gate, where ``_give_back`` gave it back."""
        if self.compiling:
            self.compiling = False
            self._enter_shared(self.device)

    def between_configs(self) -> None:
        """A case moves on to its next config: where a worker waits to run alone on this GPU, the case gives its shared
        lock back and takes it again through the gate (after the case alone), so that the wait is one config's, not
        the whole case's (a nightly case runs every config of its kernel: 32 launches and checks of layernorm_backward
        while the GPU's other workers queued at the gate). Its tensors stay allocated meanwhile, as over a compile:
        so not where the waiting case's need (as it published it at the gate) is more than the GPU has free now, which
        the parked tensors would keep it from (in a two-H200 nightly 8 cases of 100-103 GiB were not run, the memory
        held by others)."""
        if self.fd is None or self.exclusive or not self.depth or self.compiling or not self.contended():
            return
        need = self.waiting_need()
        if need and (info := mem_info(self.device)) is not None and info[0] < need + HELD_MARGIN:
            return
        if self._give_back():
            self._take_back()

    @contextmanager
    def off_gpu(self) -> Iterator[None]:
        """Host work inside a case (a float64 reference too large for the GPU, computed on the host): the case gives
        its GPU's shared lock back meanwhile and takes it again through the gate after, as over a compile. In a
        four-GPU nightly one such reference (attention B=8, H=31, S=4500) ran minutes on the host while its worker held
        the lock, a worker waited to run alone behind it, and the GPU's 15 other workers queued at the gate: the GPU
        did nothing for five minutes. Its tensors stay allocated meanwhile, which the case alone's wait for memory
        counts."""
        if self.fd is not None and self.exclusive:
            with self._alone_off_gpu():
                yield
            return
        gave = self._give_back()  # a compile inside that ends takes it again (compile_event)
        try:
            yield
        finally:
            if gave:
                self._take_back()

    @contextmanager
    def _alone_off_gpu(self) -> Iterator[None]:
        """``off_gpu`` for a case running alone: the GPU is given back whole (its lock and gate) while the case works
        on the host, and taken alone again after (the running cases end, their memory given back): host work under
        the lock is what held GPUs at 0% for minutes in the nightly while their other workers waited at the gate."""
        import fcntl

        self._flock(fcntl.LOCK_UN)
        self.publish_need(0)
        self._flock(fcntl.LOCK_UN, self.gate)
        self.exclusive = False
        journal = crash.process().journal
        journal.gpu_state(None)
        try:
            yield
        finally:
            self._take_gate(" again")
            self._take_alone(self.device, " again")
            self.exclusive = True
            journal.gpu_state(RUNNING_ALONE)

    def _take_gate(self, again: str = "") -> None:
        """The gate, to run alone (new cases on this GPU wait behind it), and this case's need published there."""
        import fcntl

        with crash.not_counted(), timing.phase("gpu_wait"):
            self._flock_waiting(fcntl.LOCK_EX, self.gate, f"waiting to run alone{again}, behind another worker that "
                                                          f"waits to run alone on its GPU")
            self.publish_need(self.alone_need)

    def _take_alone(self, device: str, again: str = "") -> None:
        """With the gate held: the lock alone (the running cases end), then the memory the others give back."""
        import fcntl

        with crash.not_counted(), timing.phase("gpu_wait"):
            self._flock_waiting(fcntl.LOCK_EX, None, f"waiting to run alone{again}: for the cases running on its GPU "
                                                     f"to end (held by its workers that wait for nothing)")
            crash.process().journal.gpu_state(f"waiting to run alone{again}: for its GPU's memory to be given back")
            wait_for_memory(device, self.alone_need, self.workers)

    def _enter_shared(self, device: str) -> None:
        """Take the GPU's shared lock through the gate (a worker waiting to run alone holds it, so new holders wait
        behind it: flock alone would let a stream of shared holders starve it)."""
        import fcntl

        with crash.not_counted(), timing.phase("gpu_wait"):
            if self.contended():  # someone waits to run alone: what this worker keeps cached is theirs to use
                self.drain(device)
            self._flock_waiting(fcntl.LOCK_EX, self.gate, "waiting at its GPU's gate (another worker waits to run "
                                                           "alone there)")
            try:
                self._flock_waiting(fcntl.LOCK_SH, None, "waiting at its GPU's gate (another worker runs alone there)")
            finally:
                self._flock(fcntl.LOCK_UN, self.gate)

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

        # Waiting for the GPU is not the case's time (its --case-timeout), and the run's timing shows it apart.
        self._enter_shared(device)
        self.depth = 1
        try:
            yield
        finally:
            self.depth = 0
            self.compiling = False  # a compile that raised ends no compile: its lock is already given back
            if self.contended():
                self.drain(device)
            else:
                trim(device, self.workers)
            self._flock(fcntl.LOCK_UN)

    @contextmanager
    def alone(self, device: str, need: int = 0, case: Any = None) -> Iterator[None]:
        """The GPU to this worker: after the cases running on it finish (new ones wait) and the other workers gave
        their caches back, up to ``need`` bytes free where it is known. ``case``: what runs alone, listed in the run
        file with its wait and its time alone (``alone_cases``: which case held a GPU while its workers waited)."""
        crash.free_memory(device)
        if self.fd is None or self.exclusive:
            yield
            return
        import fcntl

        self.alone_need = need
        held = self.depth > 0  # called inside a case (a property's launch): give its shared lock up first
        if held:
            self._flock(fcntl.LOCK_UN)
            self.compiling = False
        asked = time.monotonic()
        journal = crash.process().journal
        self._take_gate()
        try:
            self._take_alone(device)
            self.exclusive = True
            journal.gpu_state(RUNNING_ALONE)
            began = time.monotonic()
            self.alone_wait_s += began - asked
            try:
                yield
            except KeyboardInterrupt:  # a stop: the state stays, so the run file says where it stood
                raise
            except BaseException:
                journal.gpu_state(None)
                raise
            else:
                journal.gpu_state(None)
            finally:
                self.alone_s += time.monotonic() - began
                if case is not None:
                    self.alone_cases.append({"kernel": getattr(case, "kernel", ""), "dtype": getattr(case, "dtype", ""),
                                             "case": str(case)[:300], "need_gib": round(need / GIB, 2),
                                             "waited_s": round(began - asked, 3),
                                             "alone_s": round(time.monotonic() - began, 3)})
                self.exclusive = False
                crash.free_memory(device)
                self._flock(fcntl.LOCK_SH if held else fcntl.LOCK_UN)
        finally:
            self.publish_need(0)
            self._flock(fcntl.LOCK_UN, self.gate)

    def publish_need(self, need: int) -> None:
        """What the case that holds the gate to run alone needs of the GPU's memory (bytes; 0: none, or unknown),
        written into the gate's file for the GPU's other workers (``waiting_need``)."""
        if self.gate is not None:
            try:
                os.pwrite(self.gate, max(0, int(need)).to_bytes(8, "little"), 0)
            except OSError:
                pass

    def waiting_need(self) -> int:
        """What the case waiting to run alone on this GPU needs, as it published it (0: unknown or none)."""
        if self.gate is None:
            return 0
        try:
            return int.from_bytes(os.pread(self.gate, 8, 0).ljust(8, b"\0"), "little")
        except OSError:
            return 0

    def known_too_large(self, case: Any) -> tuple[int, str] | None:
        """(footprint, message) of a case this test already found too large for the GPU, else None."""
        return self._too_large_now.get(str(case))

    def note_too_large(self, case: Any, need: int, message: str, repro: str) -> None:
        """A case not run, too large for the GPU: counted once per test that met it (each of its retries alone is
        one of these; the run file lists each case once)."""
        if str(case) in self._too_large_now:
            return
        self._too_large_now[str(case)] = (need, message)
        self.too_large.append(_not_run(case, need, message, repro))

    def note_held(self, case: Any, need: int, message: str, repro: str) -> None:
        """A case not run, out of memory alone although it fits the GPU (other processes held the memory), listed with
        its reproduction line (a four-H200 nightly's verdict said "rerun them" naming none); counted where it ran
        alone (run_with_retry, a property's retry)."""
        if all(c["case"] != str(case) for c in self.held_cases):
            self.held_cases.append(_not_run(case, need, message, repro))

    def note_repro(self, case: Any, repro: str) -> None:
        """The reproduction line of ``case``, noted not run without one: a property's retry alone (deep in its draws
        and launches, suite/test_properties.py: alone_on_oom) has no test to build it from; the test that caught it
        gives it here."""
        for listed in (*self.held_cases, *self.too_large):
            if listed["case"] == str(case) and not listed["repro"]:
                listed["repro"] = repro

    def take_counts(self) -> dict[str, Any] | None:
        counts: dict[str, Any] = {"oom_retried": self.retried, "oom_retried_passed": self.retried_passed,
                                  "oom_held": self.held, "too_large": len(self.too_large),
                                  "too_large_cases": self.too_large, "held_cases": self.held_cases,
                                  "alone_wait_s": round(self.alone_wait_s, 3),
                                  "alone_s": round(self.alone_s, 3), ALONE_CASES: self.alone_cases}
        self.retried = self.retried_passed = self.held = 0
        self.alone_wait_s = self.alone_s = 0.0
        self.alone_cases = []
        self.held_cases = []
        self._too_large_now = {}
        self.too_large = []
        return counts if counts["oom_retried"] or counts["too_large"] else None


def _not_run(case: Any, need: int, message: str, repro: str) -> dict[str, Any]:
    """A case not run for memory, as the run file lists it (``too_large_cases``, ``held_cases``)."""
    return {"kernel": getattr(case, "kernel", ""), "dtype": getattr(case, "dtype", ""), "case": str(case),
            "footprint_gib": round(need / GIB, 2), "message": message[:600], "repro": repro}


def between_configs() -> None:
    """This process's share, between two configs of a case (Share.between_configs)."""
    share().between_configs()


def compile_event(started: bool) -> None:
    """timing.COMPILE_LISTENERS' entry: this process's share (Share.compile_event)."""
    share().compile_event(started)


if compile_event not in timing.COMPILE_LISTENERS:  # at import, before the suite's own code is fingerprinted; it does
    timing.COMPILE_LISTENERS.append(compile_event)  # nothing where no case holds a GPU's lock


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


def end_of_test(device: str) -> None:
    """A test is over: what this worker keeps cached goes back (a test that uses no GPU may follow for minutes)."""
    s = share()
    if s.fd is not None and s.workers > 1 and not s.exclusive:
        crash.free_memory(device)


def wait_for_memory(device: str, need: int, workers: int) -> None:
    """With the GPU's lock held alone: wait until its free memory covers ``need`` (bytes; 0 when unknown) or stops
    growing while the other workers give their caches back; at most SUITE_DRAIN_WAIT_S (options.drain_wait_s). Memory
    that stopped growing short of ``need`` is all there will be: a case parked mid-compile keeps its tensors until
    this one is done, so waiting on would stop the GPU's workers for the whole limit and gain nothing."""
    if workers <= 1 or (info := mem_info(device)) is None:
        return
    free, total = info
    if need and need > capacity(total, workers):
        return  # it cannot fit however much the others give back
    start = best_at = time.monotonic()
    best, limit = free, options.drain_wait_s()
    while time.monotonic() - start < limit:
        if need and free >= need + GIB // 4:
            return
        if time.monotonic() - best_at > DRAIN_SETTLE_S:
            return
        time.sleep(0.2)
        free = (mem_info(device) or (0, 0))[0]
        if free > best + 2**26:
            best, best_at = free, time.monotonic()


def mem_info(device: str) -> tuple[int, int] | None:
    """(free, total) bytes of this process's GPU, or None (no GPU)."""
    if not device.startswith("cuda"):
        return None
    import torch

    try:
        return torch.cuda.mem_get_info()
    except Exception:  # noqa: BLE001
        return None


def capacity(total: int, workers: int) -> int:
    """What one case can have of a GPU of ``total`` bytes shared by ``workers``: the rest hold their contexts."""
    return total - max(0, workers - 1) * CONTEXT_BYTES


def requested_bytes(error: str) -> int:
    """The allocation an out-of-memory message says failed ("Tried to allocate 2.00 GiB"), in bytes; 0 if none."""
    found = re.search(r"[Tt]ried to allocate ([0-9.]+) ?(B|KiB|MiB|GiB|TiB)", error or "")
    return int(float(found.group(1)) * _UNITS[found.group(2)]) if found else 0


def allocated_bytes(error: str) -> int:
    """What torch's out-of-memory message says this process had allocated when it failed ("Of the allocated memory
    52.74 GiB is allocated by PyTorch"), in bytes; 0 if it says nothing."""
    found = re.search(r"[Oo]f the allocated memory ([0-9.]+) ?(B|KiB|MiB|GiB|TiB) is allocated by PyTorch", error or "")
    return int(float(found.group(1)) * _UNITS[found.group(2)]) if found else 0


def in_use_bytes(error: str) -> int:
    """What torch's out-of-memory message says this process had in use on the GPU when it failed ("Including
    non-PyTorch memory, this process has 89.03 GiB memory in use"): what it allocated, what its allocator kept reserved
    and could not give back (blocks split among live tensors), and its context; in bytes, 0 if it says nothing."""
    found = re.search(r"this process has ([0-9.]+) ?(B|KiB|MiB|GiB|TiB) memory in use", error or "")
    return int(float(found.group(1)) * _UNITS[found.group(2)]) if found else 0


def free_bytes(error: str) -> int | None:
    """What an out-of-memory message says was free on the GPU when the allocation failed ("GPU 0 has a total capacity
    of 139.80 GiB of which 23.64 GiB is free"), in bytes; None if it says nothing."""
    found = re.search(r"of which ([0-9.]+) ?(B|KiB|MiB|GiB|TiB) is free", error or "")
    return int(float(found.group(1)) * _UNITS[found.group(2)]) if found else None


def footprint(exc: BaseException, device: str) -> int:
    """What a case that ran out of memory needed of the GPU: this process's memory in use at the failure (its
    inputs, outputs, reference, snapshots and the comparison's copies, with what its allocator held reserved among
    them, as torch's message gives it, else as allocated now: call it before the case's tensors are dropped) plus the
    allocation that failed. In use, not only allocated: torch frees its unused cache before it gives up, so what it
    still held reserved was split among live tensors, and the case needs it again alone. A four-H200 nightly's
    row_argmax 16384 x 262143 was run alone once its 100.0 GiB allocated + asked were free, and failed again with
    28.85 GiB free for 32 GiB: not run, though the GPU held 124.9 GiB free after."""
    if held := max(allocated_bytes(str(exc)), in_use_bytes(str(exc))):
        return held + requested_bytes(str(exc))
    held = 0
    if device.startswith("cuda"):
        import torch

        try:
            held = torch.cuda.memory_allocated()
        except Exception:  # noqa: BLE001
            held = 0
    return held + requested_bytes(str(exc))


def gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def too_large_message(device: str, error: str, need: int = 0) -> str:
    total, fits = "", ""
    if info := mem_info(device):
        size, workers = info[1], share().workers
        total = f" ({size / GIB:.0f} GiB)"
        fits = (f" (at most {gib(capacity(size, workers))} beside the other {workers - 1} workers' CUDA contexts)"
                if workers > 1 else "")
    needs = f"; the case needs at least {gib(need)}{fits}" if need else ""
    return (f"not run: too large for this GPU{total}: out of memory with the GPU to itself (no other case "
            f"running){needs}; not a wrong result. {error}")


def held_message(device: str, error: str, need: int) -> str:
    """An out-of-memory error alone for a case that fits the GPU: the memory was held by other processes."""
    info = mem_info(device)
    free = f" ({gib(info[0])} free of {gib(info[1])} now)" if info else ""
    return (f"not run: out of memory although the case needs {gib(need)}, which this GPU holds; other processes "
            f"held the memory{free} after waiting up to {options.drain_wait_s():g} s for them. Not a result of the "
            f"kernel. {error}")


class KernelOutOfMemory(Exception):  # noqa: N818 - it names the finding
    """Out of memory where no sharing explains it (no GPU, a need the free memory held): the kernel's failure."""


# Free memory past the case's need, beyond which an out-of-memory error alone is not the others' memory but the
# kernel's (or its launcher's) own.
HELD_MARGIN = GIB


def kernel_oom_message(device: str, error: str, need: int, free: int | None = None) -> str:
    where = (f"on {device}, where no GPU memory is shared with other workers (the CPU interpreter)" if free is None
             else f"with the GPU to itself and {gib(free)} free, more than the case's footprint ({gib(need)})")
    return (f"out of memory {where}: the kernel's (or its launcher's) own failure, never a case too large for a "
            f"GPU. {error}")


def judge_oom_alone(device: str, error: str, need: int) -> tuple[FailureKind, str]:
    """An out-of-memory error with the GPU to itself: (TOO_LARGE, message) when the case's footprint exceeds what
    the GPU holds; (OOM_HELD, message) when it fits but the free memory did not cover it (other processes held
    it); else (OOM, message), the kernel's own failure: no GPU (the interpreter has no memory to share, so nothing
    there is too large for a GPU), a footprint it cannot tell, or free memory well past the footprint."""
    info = mem_info(device)
    if info is None:
        return FailureKind.OOM, kernel_oom_message(device, error, need)
    free, total = info
    if need and need > capacity(total, share().workers):
        return FailureKind.TOO_LARGE, too_large_message(device, error, need)
    # The free memory when the allocation failed, where torch's message says it: what is free now includes what this
    # case itself held and let go since. A four-H200 nightly failed row_argmax "with 111.8 GiB free, more than the
    # case's footprint (91.9 GiB)" where the message said 23.64 GiB was free for an allocation of 29.39 GiB, other
    # processes (cases parked mid-compile) holding 27 GiB.
    at_failure, asked = free_bytes(error), requested_bytes(error)
    if need and at_failure is not None and asked:
        if at_failure < asked + HELD_MARGIN:
            return FailureKind.OOM_HELD, held_message(device, error, need)
        return FailureKind.OOM, kernel_oom_message(device, error, need, at_failure)
    if need and free < need + HELD_MARGIN:
        return FailureKind.OOM_HELD, held_message(device, error, need)
    return FailureKind.OOM, kernel_oom_message(device, error, need, free)


def worth_alone(device: str, need: int) -> bool:
    """Whether what ran out of memory beside the GPU's other workers may fit with the GPU to itself: a shared GPU,
    this worker not alone on it already, and a footprint of ``need`` bytes within what the GPU holds beside the other
    workers' contexts (0, unknown: worth it). A float64 reference asks this before it goes to the host
    (suite/checks/host_reference.py): on the GPU alone it takes seconds, on the host minutes."""
    s = share()
    if s.fd is None or s.workers <= 1 or s.exclusive or (info := mem_info(device)) is None:
        return False
    return not need or need <= capacity(info[1], s.workers)


class NotRun(Exception):  # noqa: N818 - raised by the one out-of-memory path: it names the verdict
    """Out of memory with the GPU to itself, judged (alone_on_oom): ``failure`` is TOO_LARGE or OOM_HELD (the case is
    not run) or OOM (the kernel's own failure); ``text`` says why, ``need`` is its footprint, ``outcome``
    the last run's returned outcome (None where it raised)."""

    def __init__(self, failure: str, text: str, need: int, outcome: Any = None) -> None:
        super().__init__(text)
        self.failure, self.text, self.need, self.outcome = failure, text, need, outcome

    def raised(self) -> Exception:
        """As the property test raises it: TooLarge, MemoryHeld or KernelOutOfMemory, the case named."""
        kind = {FailureKind.TOO_LARGE: TooLarge, FailureKind.OOM_HELD: MemoryHeld}.get(self.failure, KernelOutOfMemory)
        return kind(self.text)


def _oom_in(attempt: Any, device: str, case: Any, passthrough: tuple[type, ...],
            oom_of: Any) -> tuple[Any, tuple[str, int] | None]:
    """(the outcome, (error, footprint) where ``attempt()`` ran out of memory): raised (an exception crash classifies
    as "oom", its frames let go: they hold the case's tensors), or returned (``oom_of(outcome)``)."""
    try:
        outcome = attempt()
    except passthrough:
        raise
    except Exception as exc:  # noqa: BLE001 - anything but out of memory goes on as it is
        if crash.note_launch_error(exc, device, case) != FailureKind.OOM:
            raise
        need = footprint(exc, device)
        exc.__traceback__ = None
        return None, (f"{type(exc).__name__}: {exc}", need)
    return outcome, oom_of(outcome) if oom_of is not None else None


def alone_on_oom(attempt: Any, device: str, case: Any = None, what: str = "", passthrough: tuple[type, ...] = (),
                 oom_of: Any = None) -> Any:
    """The one out-of-memory path of both generic tests (suite/checks/reference_loop.py through run_with_retry,
    suite/checks/property_loop.py directly): ``attempt()``, shared with the GPU's other workers; out of memory in it
    (raised, or returned: ``oom_of(outcome)`` -> (error, footprint) or None), once more with the GPU to itself and
    its footprint, unless this test found the case too large already; out of memory there too, judged by the
    footprint (judge_oom_alone), counted and recorded here (the test that knows the case's reproduction line adds it:
    Share.note_repro), and raised as NotRun. Exceptions of ``passthrough`` (verdicts made already, deeper) go on as
    they are. Returns the outcome that did not run out of memory."""
    with share().case(device):
        outcome, oom = _oom_in(attempt, device, case, (NotRun, MemoryHeld, KernelOutOfMemory, *passthrough), oom_of)
    if oom is None:
        return outcome
    if case is not None and (known := share().known_too_large(case)) is not None:  # not alone again
        raise NotRun(FailureKind.TOO_LARGE, f"{case}: {known[1]}" if oom_of is None else known[1], known[0], outcome)
    share().retried += 1
    with share().alone(device, oom[1], case):
        again, oom_again = _oom_in(attempt, device, case, (NotRun, MemoryHeld, KernelOutOfMemory, *passthrough),
                                   oom_of)
    if oom_again is None:
        if getattr(again, "passed", True):
            share().retried_passed += 1
        return again
    need = max(oom[1], oom_again[1])
    failure, text = judge_oom_alone(device, f"{what}{oom_again[0]}", need)
    if failure == FailureKind.OOM_HELD:
        share().held += 1
    if failure != FailureKind.OOM:  # listed once each; the test adds the reproduction line
        (share().note_held if failure == FailureKind.OOM_HELD else share().note_too_large)(case, need, text, "")
    raise NotRun(failure, text if oom_of is not None else f"{case}: {text}", need, again)


def run_with_retry(run: Any, device: str, case: Any = None) -> Any:
    """``run()`` -> a result with ``.failure`` (suite/checks/harness.py's CaseResult), through alone_on_oom: an
    out-of-memory result runs again alone; out of memory alone too, the result says the verdict (too_large,
    oom_held, or the kernel's oom) with the footprint, and where it ran again alone, how long it waited and ran."""
    started = time.monotonic()
    alone_before = share().retried
    try:
        result = alone_on_oom(run, device, case, oom_of=_result_oom)
    except NotRun as verdict:
        result = verdict.outcome
        result.failure, result.error, result.footprint = verdict.failure, verdict.text, verdict.need
    if share().retried > alone_before:
        result.note = (result.note or "") + (
            f"\n(ran again alone after an out-of-memory error with other workers on the GPU; waited and ran "
            f"{time.monotonic() - started:.1f} s)" if device.startswith("cuda") else
            "\n(ran again after an out-of-memory error)")
    return result


def _result_oom(result: Any) -> tuple[str, int] | None:
    if getattr(result, "failure", None) != FailureKind.OOM:
        return None
    return result.error or "", getattr(result, "footprint", 0)
