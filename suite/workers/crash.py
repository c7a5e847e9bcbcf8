"""Surviving what GPU runners throw at the suite: each worker pinned to one GPU, faults, OOM and hangs.

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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reports.failure_kinds import FailureKind
from suite.session import stash, terminal

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


# Set by the controller for its workers (suite/workers/gpu_share.py reads it): how many workers share each GPU.
SHARE_ENV = "SUITE_WORKERS_PER_GPU"


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

    def start_case(self, case: Any, extra_args: Sequence[str] = ()) -> None:
        repro = " ".join(shlex.quote(p) for p in [*self.repro_prefix, *extra_args, f"--repro={case.spec_string()}"])
        self.case = {**case.as_record(), "repro": repro, "started": time.time()}
        self._write(None)

    def end_test(self) -> None:
        self.nodeid, self.case = None, None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path.with_suffix(".gpu").unlink(missing_ok=True)

    def _write(self, failure: str | None) -> None:
        if self.path is None or self.nodeid is None:
            return
        data = {"nodeid": self.nodeid, "case": self.case, "failure": failure, "pid": os.getpid()}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.path)

    def mark(self, failure: str) -> None:
        self._write(failure)

    # What the worker waits for, or that it runs alone on its GPU (suite/workers/gpu_share.py), in a file of its own
    # beside the journal: written when such a state begins, removed when it ends normally, left where a stop (Ctrl-C,
    # a time limit) ended it, so that an interrupted run file says where each unfinished test stood.
    def gpu_state(self, what: str | None) -> None:
        if self.path is None:
            return
        path = self.path.with_suffix(".gpu")
        if what is None:
            path.unlink(missing_ok=True)
            return
        tmp = path.with_suffix(".gputmp")
        tmp.write_text(json.dumps({"nodeid": self.nodeid, "what": what, "since": time.time()}), encoding="utf-8")
        os.replace(tmp, path)


def read_gpu_state(directory: str | None, worker_id: str) -> dict[str, Any] | None:
    """A worker's GPU state as :meth:`Journal.gpu_state` left it, or None."""
    if not directory:
        return None
    try:
        data = json.loads((Path(directory) / f"{worker_id}.gpu").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


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


class Process:
    """This process's part in crash isolation, in one place: the in-flight journal, the case timeout,
    whether the GPU context is poisoned, and (single-process runs) who records a hung case and how the
    user is told before the process ends."""

    def __init__(self) -> None:
        self.journal = Journal(None, "main")
        self.poisoned: str | None = None  # why this process's GPU context is unusable, once it is
        self.timeout_s: float = 0.0
        self.on_timeout: Callable[[str], None] | None = None
        self.announce: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
        # Controller: tests whose worker ended itself after recording them (a fault): xdist's report that the worker
        # "crashed while running" them is the same failure, not a second one.
        self.replaced_after: set[str] = set()


def process() -> Process:
    """This process's part in crash isolation (kept in the session's state, suite/session/stash.py)."""
    state = stash.session()
    if state.process is None:
        state.process = Process()
    return state.process


def pin_worker(workerinput: dict[str, Any]) -> None:
    """Worker: see only the GPU the controller gave it, before the GPU runtime starts; keep a journal."""
    gpu = workerinput.get("suite_gpu")
    if gpu is not None:
        os.environ[workerinput["suite_gpu_variable"]] = gpu
    os.environ[SHARE_ENV] = str(workerinput.get("suite_workers_per_gpu", 1))
    process().journal = Journal(workerinput.get("suite_journal_dir"), workerinput["workerid"])


class watchdog:
    """``with watchdog(case):`` ends the process if the case outlives ``timeout_s``: a hung GPU
    kernel cannot be interrupted any other way. The journal says which case it was. Time the case spends waiting
    for its GPU (:func:`not_counted`: another worker's case holds it, perhaps one that hangs) is not counted."""


    def __init__(self, case: Any, repro_args: Sequence[str] = (), hung: str = "a hung kernel") -> None:
        self.case = case
        self.repro_args = repro_args
        self.hung = hung  # what was running: the launch's kernel, or the spec's reference
        self.timer: threading.Timer | None = None
        self.left = 0.0  # seconds of the timeout not yet used
        self.armed_at = 0.0
        self.outer: watchdog | None = None

    def __enter__(self) -> None:
        process().journal.start_case(self.case, self.repro_args)
        self.outer, stash.session().watchdog = stash.session().watchdog, self
        if process().timeout_s > 0:
            self.left = process().timeout_s
            self._arm()

    def __exit__(self, *exc: object) -> None:
        stash.session().watchdog = self.outer
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _arm(self) -> None:
        self.armed_at = time.monotonic()
        self.timer = threading.Timer(self.left, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def pause(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
            self.left = max(0.0, self.left - (time.monotonic() - self.armed_at))

    def resume(self) -> None:
        if process().timeout_s > 0 and self.timer is None:
            self._arm()

    def _fire(self) -> None:
        message = (f"timeout: case {self.case} ran longer than --case-timeout={process().timeout_s:g} s "
                   f"({self.hung}); the process was ended")
        process().journal.mark(message)
        if process().on_timeout is not None:
            try:
                process().on_timeout(message)
            except Exception:  # noqa: BLE001 - exiting matters more than recording here
                pass
        try:
            process().announce(f"\nsuite: {message} (exit code {EXIT_TIMEOUT})")
        except Exception:  # noqa: BLE001
            pass
        REAL_EXIT(EXIT_TIMEOUT)


# os._exit as the process started with it: the suite's own ends of a process (a hung case, a poisoned context, a
# worker done) call it; os._exit itself is guarded while a test runs (guard_exit).
REAL_EXIT = os._exit


class KernelExited(Exception):  # noqa: N818 - it names the finding
    """os._exit called while a test ran (by a launcher, a reference or a spec's own code): the case's failure."""


def _guarded_exit(status: int) -> None:
    """os._exit while the suite's test runs, on its main thread: raised instead of ending the process (which would
    end the run at once with the status given, 0 included: a run that 'passed'), so the case fails naming it.
    Elsewhere (another thread, between tests) the process ends as asked."""
    if threading.current_thread() is threading.main_thread() and process().journal.nodeid:
        raise KernelExited(f"os._exit({status!r}) was called while the case ran (by the kernel's launcher, its "
                           f"reference or the spec's own code): it would have ended the whole run at once with exit "
                           f"status {status!r}; a kernel module must not end the process")
    REAL_EXIT(status)


def guard_exit() -> None:
    """os._exit guarded for the rest of the process (see _guarded_exit)."""
    os._exit = _guarded_exit


@contextmanager
def not_counted() -> Iterator[None]:
    """Time that is not the running case's: waiting for its GPU while other workers' cases hold it. Without this, a
    case queued behind a neighbour's hung kernel (which holds its GPU until its own watchdog ends it) timed out too,
    and a clean kernel was reported as hung (seen on an H100 with 16 workers)."""
    dogs = []
    dog = stash.session().watchdog
    while dog is not None:
        dogs.append(dog)
        dog = dog.outer
    for dog in dogs:
        dog.pause()
    try:
        yield
    finally:
        for dog in dogs:
            dog.resume()


def classify(exc: BaseException, device: str) -> FailureKind | None:
    """FAULT when the error left the GPU context unusable, OOM for out of memory, else None.
    A fault is confirmed by probing the device: every call fails on a poisoned context."""
    text = f"{type(exc).__name__}: {exc}"
    if OOM_ERRORS.search(text) and not STICKY_ERRORS.search(text):
        return FailureKind.OOM
    if not device.startswith("cuda"):
        return FailureKind.FAULT if STICKY_ERRORS.search(text) else None
    import torch

    try:
        torch.cuda.synchronize()
        probe = torch.ones(1, device=device)
        if float((probe + 1).item()) != 2.0:
            return FailureKind.FAULT
    except Exception:  # noqa: BLE001 - any error here means the context is gone
        return FailureKind.FAULT
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


def note_launch_error(exc: BaseException, device: str, case: Any) -> FailureKind | None:
    """Classify a failed launch (see :func:`classify`) and mark a poisoned context; the caller drops
    its tensors and calls :func:`free_memory` after an OOM."""
    failure = classify(exc, device)
    if failure == FailureKind.FAULT:
        detail = f"{type(exc).__name__}: {exc}".strip()
        process().poisoned = f"{case}: {detail[:300]}"
    return failure


# --- the pytest hooks of crash isolation ----------------------------------------------------------
# Worker side: journal each test, hand a poisoned context to the controller, end the worker after its
# reports went out. Controller side: pin each worker to a GPU, free the GPU of a worker that ended,
# and turn a dead worker's journal into the record of the case it was running (see lost_case).

POISONED_PROPERTY = "suite_worker_replaced"


def _context(config: Any) -> Any:
    return config.stash.get(stash.CONTEXT, None)


def _pinning(config: Any) -> Any:
    """The controller's Pinning: made before its workers start, also where the context is built after."""
    return config.stash.get(stash.PINNING, None)


def pytest_configure(config: Any) -> None:
    config.stash[stash.SESSION] = stash.session()  # the session's state, in the stash from here on
    process().config = config  # for the hooks below that pytest calls without it
    guard_exit()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: Any) -> None:
    """A GPU fault ends its worker by design, and xdist stops replacing workers after 4 crashes per worker:
    unless --max-worker-restart is given, allow many (a run cut short is marked incomplete anyway)."""
    if hasattr(config.option, "maxworkerrestart") and config.option.maxworkerrestart is None:
        config.option.maxworkerrestart = "1000"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller: pin each worker to one GPU and tell it where to keep its in-flight journal."""
    pin = _pinning(node.config)
    if pin is None:
        return
    gpu = assign(pin.gpus, list(pin.assigned.values()))
    if gpu is not None:
        pin.assigned[node.gateway.id] = gpu
    node.workerinput["suite_gpu"] = gpu
    node.workerinput["suite_gpu_variable"] = pin.gpu_variable
    node.workerinput["suite_journal_dir"] = pin.journal_dir
    workers = node.config.option.numprocesses if isinstance(node.config.option.numprocesses, int) else 1
    node.workerinput["suite_workers_per_gpu"] = -(-workers // max(1, len(pin.gpus)))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Controller: a worker ended (or died): its GPU is free for the worker that replaces it. One that died before
    any test of its own reported (its options, a plugin, an import, its collection) stops the run at once with its
    error: every worker replacing it would die the same way (xdist would start up to --max-worker-restart of them)."""
    pin = _pinning(node.config)
    if pin is None:
        return
    pin.assigned.pop(node.gateway.id, None)
    if error is not None and node.gateway.id not in pin.reported:
        raise pytest.exit(startup_death(node.gateway.id, error), returncode=(
            pytest.ExitCode.USAGE_ERROR if "UsageError" in str(error) else pytest.ExitCode.INTERNAL_ERROR))


def startup_death(worker: str, error: Any) -> str:
    """The line that stops a run whose worker died at start-up: its own error, as the worker's traceback ends."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    # pytest's argument parser ends with its "error:" line, then the rootdir it chose; an exception, with its own.
    last = next((line for line in reversed(lines) if ": error: " in line), lines[-1] if lines else str(error))
    if last.split(": ", 1)[0].endswith("UsageError"):
        last = "usage error: " + last.split(": ", 1)[1]
    if "unrecognized arguments: --" in last:
        last += (" (the suite's options are known once its conftest.py loads; given as '--option VALUE', a VALUE "
                 "that is a directory by then is taken for a test path and another rootdir: write --option=VALUE)")
    if last == "Not properly terminated":
        last = "it ended without saying why (a crash, a kill, or os._exit before its session)"
    return f"xdist worker {worker} died while starting, before any test: {last}"


def pytest_runtest_logreport(report: Any) -> None:
    """Controller: a worker a report came from got past its start-up; a test after which its worker ends itself
    (a poisoned GPU context) is noted, so that xdist's crash report of it counts as no second failure."""
    if report.when == "call" and dict(getattr(report, "user_properties", ()) or ()).get(POISONED_PROPERTY):
        process().replaced_after.add(report.nodeid)
    node = getattr(report, "node", None)
    pin = _pinning(node.config) if node is not None and hasattr(node, "gateway") else None
    if pin is not None:
        pin.reported.add(node.gateway.id)


def pytest_runtest_setup(item: Any) -> None:
    ctx = _context(item.config)
    if ctx is not None:
        from suite.session.options import repro_prefix

        process().journal.start_test(item.nodeid, repro_prefix(ctx, item.nodeid))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: Any, call: Any):
    """Worker side: a poisoned GPU context goes to the controller with the test's report. A case that ended its test
    (CaseAborted: a fault, out of memory, a broken spec) is one short message, the case, what broke and its
    reproduction line, never the traceback through the suite's own test source (about 150 lines of it)."""
    if call.when == "call" and process().poisoned:
        item.user_properties.append((POISONED_PROPERTY, process().poisoned))
    report = yield
    if call.when == "call" and call.excinfo is not None and isinstance(call.excinfo.value, CaseAborted) \
            and report.failed:
        report.longrepr = str(call.excinfo.value)
    elif call.when == "call" and call.excinfo is not None and report.failed and \
            (short := spec_code_failure(call.excinfo.value, call.excinfo.tb)) is not None:
        report.longrepr = short
    return report


SUITE_DIR = Path(__file__).resolve().parents[1]


def _library(filename: str) -> bool:
    """A file of Python itself or of an installed package (torch, triton, Hypothesis, pytest), not a kernel module."""
    path = os.path.abspath(filename)
    roots = {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return "site-packages" in path or "dist-packages" in path or filename.startswith("<") or any(
        path.startswith(os.path.join(r, "lib")) for r in roots)


def spec_code_failure(exc: BaseException, tb: Any) -> str | None:
    """A short message for an error the suite did not catch that a spec's own code raised (a tolerance's reduction, a
    make_inputs helper): the spec's function, where, and the error, instead of a traceback through the suite's own
    test source whose tail the run file kept. None where the error is not the spec's (raised in the suite itself,
    or in a library the suite called)."""
    if not isinstance(exc, Exception):
        return None
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    suite = [i for i, (code, _) in enumerate(frames) if Path(code.co_filename).resolve().is_relative_to(SUITE_DIR)]
    if not suite or suite[-1] == len(frames) - 1:
        return None
    code, line = frames[suite[-1] + 1]  # the function the suite called last: the spec's, unless a library's
    if _library(code.co_filename):
        return None
    try:
        where = os.path.relpath(code.co_filename)
    except ValueError:
        where = code.co_filename
    where = code.co_filename if where.startswith("..") else where
    name = getattr(code, "co_qualname", code.co_name)
    notes = [n for n in getattr(exc, "__notes__", []) or [] if n.startswith("Failing test case")]
    text = (f"broken spec: {name}() ({where}:{line}), the spec's own code, raised {type(exc).__name__}: {exc}"
            .strip()[:2000])
    return "\n".join([text, *notes])


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: Any) -> tuple[str, str, str] | None:
    """Controller: xdist's report that a worker "crashed while running" a test the worker recorded (as failed) before
    ending itself on purpose counts as nothing more: one failure, counted once."""
    if getattr(report, "when", None) == "???" and report.nodeid in process().replaced_after:
        return "", "", ""
    return None


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    """After a test's reports went out: a worker whose GPU context is poisoned ends itself (xdist starts a
    fresh one for the rest); a single process stops the run, since every later test would fail."""
    process().journal.end_test()
    if not process().poisoned:
        return
    config = getattr(process(), "config", None)
    if config is not None and hasattr(config, "workerinput"):
        sys.stdout.flush()
        sys.stderr.flush()
        REAL_EXIT(EXIT_POISONED)
    ctx = _context(config) if config is not None else None
    if ctx is not None and ctx.session is not None:
        ctx.session.shouldstop = (f"GPU context poisoned by {process().poisoned}; every later test would fail: run "
                                  f"with -n 1 (or -n auto) so a fresh worker process takes over")


def pytest_unconfigure(config: Any) -> None:
    """Controller: the workers' in-flight journals are read; remove their directory."""
    pin = _pinning(config)
    if pin is not None and pin.journal_dir and not hasattr(config, "workerinput"):
        import shutil

        shutil.rmtree(pin.journal_dir, ignore_errors=True)


def lost_case(journal_dir: str | None, worker: str | None) -> tuple[FailureKind, str, dict | None]:
    """Controller, for a test whose worker died without reporting it: (kind, what happened, the case it was
    running, from the worker's journal). kind is TIMEOUT when the watchdog ended it, else CRASH."""
    entry = read_journal(journal_dir, worker) if worker else None
    entry = entry or {}
    failure = entry.get("failure") or (f"worker {worker} died during this test with no report (a segfault, an "
                                       f"abort, or killed); see the worker's output above")
    return (FailureKind.TIMEOUT if failure.startswith("timeout") else FailureKind.CRASH), failure, entry.get("case")


def announce_past_capture(config: Any) -> Callable[[str], None]:
    """A writer to the real stderr even while pytest captures output (a line printed from the watchdog thread
    just before ``os._exit`` would otherwise vanish with the capture buffer)."""

    def announce(line: str) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            try:
                capman.suspend_global_capture(in_=False)
            except Exception:  # noqa: BLE001 - best effort: the process is about to end
                pass
        sys.stderr.write(terminal.visible(line) + "\n")  # a case's line may hold a path's escape sequence
        sys.stderr.flush()

    return announce
