"""The session's state, in one place: the keys of pytest's stash (``config.stash``) and the one object that holds what
a process of the suite keeps for the length of a run (:class:`Session`). Every module can import this one, since it
imports nothing of the suite's (the modules that build the state and the ones that read it would otherwise import
each other)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest


class Session:
    """What one process of the suite keeps while it runs, in one object: in ``config.stash[SESSION]`` from
    ``pytest_configure`` on, and reached through :func:`session` by the code that pytest calls without a config (the
    harness inside a test, Triton's hooks, timer threads). Each field is made by the module that owns its type, on
    first use; a fresh process (an xdist worker) starts with a fresh one."""

    def __init__(self) -> None:
        self.clock: Any = None  # workers.timing.Clock: the running test's time by phase, its compiles and cache hits
        self.compile_depth: list[int] = []  # workers.timing: the clock depth of each compile in progress
        self.process: Any = None  # workers.crash.Process: in-flight journal, case timeout, a poisoned GPU context
        self.watchdog: Any = None  # workers.crash.watchdog: the innermost watchdog of the running case
        self.share: Any = None  # workers.gpu_share.Share: the GPU's lock and the out-of-memory retries of this test
        self.warmup: Any = None  # workers.warmup.Startup: the GPU start-up thread and its times, until joined
        self.parts_dir: str | None = None  # workers.parts: the rendezvous directory of a run without xdist
        self.lookup: Any = None  # checks.autotune.Lookup: the run's autotune lookup and what it counted this test
        self.purposes: list[str] = ["tuning"]  # checks.autotune: what a do_bench call is for (innermost last)
        self.compile_child: Any = None  # tools.compile_matrix: the process compiling what needs a process of its own
        self.checker: Any = None  # checks.memcheck.Checker: the interpreter's memory checker and its counts
        self.sanitizer_log_offset: dict[str, int] = {}  # checks.memcheck: how far the GPU checker's logs were read
        self.fp8_casts: Counter[str] = Counter()  # checks.interpreter: float -> fp8 conversions the running case ran
        self.numerics: Any = None  # checks.numerics.Numerics: the GPU arithmetic --numerics models, if any
        self.numerics_flushes: Counter[str] = Counter()  # checks.numerics: what the model flushed in the running case
        self.numerics_ran: Counter[str] = Counter()  # checks.numerics: the modelled fma and sums the running case ran
        self.numerics_approx: Counter[str] = Counter()  # checks.numerics_envelope: approximate ops the case ran
        self.numerics_end: Any = None  # checks.numerics_envelope.End: the envelope's end the case runs at, if any
        self.untuned: dict[str, int] = {}  # checks.launches: autotuned kernels that ran their first config only
        self.timer: Any = None  # tools.bench.Timer: the benchmarks' timer (its L2-flush buffer allocated once)
        self.cycles_per_ms: float | None = None  # tools.bench: the GPU's spin rate, measured once for planted delays
        self.launches = threading.local()  # checks.launches: the running spec's launch record and config, per thread


_session = Session()  # the one module-level reference: this process's Session


def session() -> Session:
    """This process's :class:`Session`."""
    return _session


SESSION = pytest.StashKey[Session]()  # this process's Session, stored by suite.workers.crash's pytest_configure
CONTEXT = pytest.StashKey["SuiteContext"]()  # suite.plugin.context.SuiteContext: built once in pytest_configure
BACKEND = pytest.StashKey()  # the chosen Backend (also context.backend), read by tests
PINNING = pytest.StashKey["Pinning"]()  # suite.plugin.context.Pinning: the controller's GPUs and workers' journals
DEFERRED = pytest.StashKey[bool]()  # an xdist controller whose context is built once its workers have started
# suite.workers.bytecode: the controller's PYTHONDONTWRITEBYTECODE and PYTHONPYCACHEPREFIX before its workers started
SAVED_ENV = pytest.StashKey[dict]()
# suite.checks.tampering.Snapshot: the suite's own checking code as it was before any kernel module was imported
CHECKS_SNAPSHOT = pytest.StashKey()
