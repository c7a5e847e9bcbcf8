"""One compile of a kernel variant per run, not one per worker: a lock per compile key, across processes.

Triton's on-disk cache is shared by every process that uses the same directory, but only once an entry is written:
xdist workers that need the same kernel variant at the same time (the parts of a split test start together and
compile the same configs; the 16 workers' start-up builds Triton's driver module and the input generator's two
kernels at the same instant) all miss and all compile it, on a host whose cores are all busy. Here the process
that asks first compiles; the others wait for it, then take its result from the cache (Triton's own lookup, after
the wait: a cache hit).

What is locked, in this process once ``install`` ran (``suite/compat.py`` registers each patch):

- ``triton.compile`` (``triton.compiler.compile``, which the JIT calls, and the compile matrix's ``triton.compile``),
  keyed on what identifies the compile: the source's hash (the function's and its dependencies' source, the
  signature, constants and attributes), the target and the options (``kernel_key``);
- the C modules Triton builds with the host's compiler and keeps in the same cache (its driver module; on Triton 3.6
  a launcher per kernel signature), keyed on their arguments (``module_key``): ``compile_module_from_src`` on Triton
  3.6, ``_compile_so`` on 3.9 (3.7 and 3.8 are not checked: their C modules are built as Triton does).

The lock is an ``flock`` on a file named for the key, under ``suite-compile-locks/`` of Triton's cache directory;
the operating system lets it go when its process ends, so a worker that crashes mid-compile blocks no one. A key is
only an identity for the lock: a different compile that got the same key would wait, then compile (Triton's lookup
decides what is a hit), and one compile that got two keys would be compiled twice, as without the lock. A waiter
holds nothing once the key is let go: every waiter goes on to Triton's lookup at once. A process waits at most
``WAIT_SECONDS``, then compiles itself. A worker's start-up (``suite/workers/warmup.py``: Triton's driver module
and the input generator's two kernels, which all 16 workers need at the same instant) is locked the same way. No lock
where ``fcntl`` is missing (Windows) or the directory cannot be written. ``SUITE_COMPILE_ONCE=0`` turns it off (each
process compiles what it misses, as Triton does).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import os
import time
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no flock, each process compiles what it misses
    fcntl = None  # type: ignore[assignment]

from suite import compat
from suite.workers import timing

ENV = "SUITE_COMPILE_ONCE"
LOCKS = "suite-compile-locks"
WAIT_SECONDS = 600.0  # longer than any one compile seen under a full GPU run's load (about 20 s)
POLL_SECONDS = (0.005, 0.02)  # first and longest sleep between two tries of a held lock

KERNELS = "compile-once-kernels"
MODULES_36 = "compile-once-c-modules-3.6"
MODULES_39 = "compile-once-c-modules-3.9"


def lock_dir() -> str | None:
    """Where the locks live: beside the compiles they guard, in Triton's cache directory."""
    try:
        from triton import knobs

        base = knobs.cache.dir
    except (ImportError, AttributeError):
        return None
    return os.path.join(base, LOCKS) if base else None


class held:
    """``with held(key):`` the first process to ask runs the block holding ``key``; one that finds it held waits
    until it is let go, then runs the block holding nothing (``waited``), at the same time as any other waiter."""

    def __init__(self, key: str, directory: str | None = None) -> None:
        self.key, self.directory = key, directory
        self.fd: int | None = None
        self.waited = False

    def __enter__(self) -> held:
        directory = self.directory or lock_dir()
        if fcntl is None or directory is None:
            return self
        try:
            os.makedirs(directory, exist_ok=True)
            fd = os.open(os.path.join(directory, f"{self.key}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:  # a cache directory this process cannot write: compile unlocked
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the first to ask compiles, holding the key
            self.fd = fd
            return self
        except BlockingIOError:
            pass
        except OSError:  # a file system without flock
            os.close(fd)
            return self
        # Another process holds it: wait until it lets go (a shared lock is granted only then), and hold nothing
        # after. Every waiter goes on at once to Triton's lookup; waiters that held the key in turn took 2.3-8.6 s
        # to get through the 16 workers' start-up (evidence/gpu-speed/readme-command-ab/call4-compile-once/).
        started, pause = time.monotonic(), POLL_SECONDS[0]
        while time.monotonic() - started < WAIT_SECONDS:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except OSError:
                self.waited = True
            time.sleep(pause)
            pause = min(POLL_SECONDS[1], pause * 2)
        os.close(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor lets the lock go
            self.fd = None


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode("utf-8", "backslashreplace")).hexdigest()


def kernel_key(src: Any, target: Any = None, options: Any = None) -> str | None:
    """The lock's key for ``triton.compile(src, target, options)``; None for an IR file's path (not locked)."""
    source_hash = getattr(src, "hash", None)
    if not callable(source_hash):
        return None
    opts = sorted((options or {}).items(), key=lambda kv: str(kv[0])) if isinstance(options, dict) else options
    return _digest("kernel", source_hash(), target, opts)


def module_key(fn: Any, args: tuple, kwargs: dict) -> str:
    """The lock's key for a C module's build: every argument but the temporary path its source was written to."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    except TypeError:
        bound = {"args": args, **kwargs}
    return _digest("module", getattr(fn, "__name__", ""), sorted((k, v) for k, v in bound.items() if k != "src_path"))


def _once(fn: Any, key_of: Any, counted: bool = False) -> Any:
    """``fn`` run under the lock of its key; ``counted``: a wait is noted in the test's timing (``triton_shared``:
    a kernel another worker compiled while this one waited, then found in the cache)."""

    @functools.wraps(fn)
    def once(*args: Any, **kwargs: Any) -> Any:
        key = key_of(args, kwargs)
        if key is None:
            return fn(*args, **kwargs)
        with held(key) as lock:
            if lock.waited and counted:
                timing.clock().shared += 1
            return fn(*args, **kwargs)

    once.suite_compile_once = True
    return once


def _compile_key(args: tuple, kwargs: dict) -> str | None:
    names = ("src", "target", "options")
    given = dict(zip(names, args, strict=False)) | {k: v for k, v in kwargs.items() if k in names}
    return kernel_key(given.get("src"), given.get("target"), given.get("options"))


def _replace(module: str, attribute: str, original: Any, replacement: Any) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return
    if getattr(mod, attribute, None) is original:
        setattr(mod, attribute, replacement)


def install(backend: str) -> bool:
    """Lock this process's compiles (a GPU backend's; the interpreter compiles nothing). Whether they are locked."""
    if backend not in ("cuda", "rocm") or fcntl is None or os.environ.get(ENV, "1").strip() == "0":
        return False
    compat.require(KERNELS)  # Triton moved what this patches: a usage error naming the patch, not unlocked compiles
    import triton.compiler

    if getattr(triton.compiler.compile, "suite_compile_once", False):
        return True
    original = triton.compiler.compile
    locked = _once(original, _compile_key, counted=True)
    for module in ("triton.compiler", "triton.compiler.compiler", "triton"):
        _replace(module, "compile", original, locked)
    version = compat.installed_triton()
    if compat.BY_NAME[MODULES_36].applies(version, backend):
        compat.require(MODULES_36)
        import triton.runtime.build as build

        original = build.compile_module_from_src
        locked = _once(original, lambda a, k, fn=original: module_key(fn, a, k))
        for module in ("triton.runtime.build", "triton.backends.nvidia.driver", "triton.backends.amd.driver"):
            _replace(module, "compile_module_from_src", original, locked)
    elif compat.BY_NAME[MODULES_39].applies(version, backend):
        compat.require(MODULES_39)
        import triton.runtime.build as build

        original = build._compile_so
        build._compile_so = _once(original, lambda a, k, fn=original: module_key(fn, a, k))
    compat.mark_applied(KERNELS)
    return True
