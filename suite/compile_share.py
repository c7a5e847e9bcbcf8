"""One compile per kernel variant per run, however many workers need it: Triton's on-disk cache with a lock per entry.

Triton's cache is shared by every process that uses the same directory, but only once an entry is written: two
workers that need the same kernel variant at the same time (the fp16 reference test and the fp16 property test of
one kernel, handed out together because both are long) both miss and both compile it. With sixteen workers on one
GPU, compiling is most of a cold run's time, so every duplicate costs a core.

The manager (``SharedCompileCache``) is Triton's ``FileCacheManager`` with one change: on a miss for a compiled kernel (the
metadata group that ``triton.compile`` looks up first), the process takes an exclusive ``flock`` on a file in the
entry's directory before compiling, and lets it go once the entry is written (``put_group``). A process that finds
the lock taken waits for it, then reads the entry the other one wrote: a cache hit. The waiting is bounded
(``WAIT_SECONDS``): past it, or when the holder wrote nothing (its compile failed), the waiter compiles itself, as
Triton would have. A process compiles one kernel at a time, so a lock it still holds when it looks up another entry
belongs to a compile that raised: it is let go first, and also after each compile-matrix record, each test phase
and a retune (``release_all``), so an idle process keeps no one waiting. The lock dies with its process (a crashed
worker blocks no one). Where the filesystem cannot lock, Triton's behaviour stays: compile without waiting.

Installed in every process that runs cases (``install``); where ``fcntl`` is missing (Windows) Triton's own manager
stays. ``SUITE_COMPILE_SHARE=0`` turns it off.
"""

from __future__ import annotations

import os
import time
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no flock, Triton's own cache manager
    fcntl = None  # type: ignore[assignment]

from suite import timing

WAIT_SECONDS = 300.0  # longer than any single compile seen under a full GPU run's load (about 20 s)
POLL_SECONDS = 0.05
LOCK_NAME = "compiling.lock"

_held: dict[str, int] = {}  # this process's locks: entry directory -> open file descriptor


def _release(directory: str) -> None:
    fd = _held.pop(directory, None)
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class _NoLocking(Exception):
    """flock failed for a reason other than another process holding the lock (a filesystem without it)."""


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:  # EWOULDBLOCK: held by another process
        return False
    except OSError as exc:  # ENOLCK, ENOSYS, ...: no locking here
        raise _NoLocking(str(exc)) from exc


def release_all() -> None:
    """Let go of every lock this process holds (a compile that raised leaves one)."""
    for directory in list(_held):
        _release(directory)


_manager: Any = None  # the class, made on first use


def _manager_class() -> type:
    """Made on first use: importing triton here, before the backend has set TRITON_INTERPRET, would make
    triton.language's own functions plain JIT functions that an interpreted kernel cannot call."""
    global _manager
    if _manager is not None:
        return _manager
    from triton.runtime.cache import FileCacheManager

    class SharedCompileCache(FileCacheManager):
        """Triton's file cache; a miss on a compiled kernel waits for another process compiling the same one."""

        def get_group(self, filename: str) -> dict[str, str] | None:
            group = super().get_group(filename)
            if not filename.endswith(".json") or not self.cache_dir or (group and filename in group):
                return group
            if self.cache_dir in _held:  # compiling it again after a failure here: the lock is already ours
                return group
            release_all()  # held for an earlier compile that raised
            try:
                fd = os.open(os.path.join(self.cache_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:  # a cache directory this process cannot lock in: compile as Triton would
                return group
            try:
                if not _try_lock(fd):  # another process is compiling this entry: wait for it
                    started = time.monotonic()
                    while not _try_lock(fd):
                        if time.monotonic() - started > WAIT_SECONDS:
                            os.close(fd)
                            return group  # compile it here after all, unlocked
                        time.sleep(POLL_SECONDS)
                    found = super().get_group(filename)
                    if found and filename in found:
                        timing.clock.shared += 1
                        fcntl.flock(fd, fcntl.LOCK_UN)
                        os.close(fd)
                        return found
            except _NoLocking:
                os.close(fd)
                return group
            except BaseException:
                os.close(fd)  # closing drops the lock too
                raise
            _held[self.cache_dir] = fd  # ours to compile; put_group lets it go
            return group

        def put_group(self, filename: str, group: dict[str, str]) -> Any:
            try:
                return super().put_group(filename, group)
            finally:
                if filename.endswith(".json"):
                    _release(self.cache_dir)

    _manager = SharedCompileCache
    return _manager


def install() -> bool:
    """Use the shared cache manager in this process, unless a user chose a manager of their own (kept) or it is off."""
    if fcntl is None or os.environ.get("SUITE_COMPILE_SHARE", "1") == "0":
        return False
    from triton import knobs

    if os.environ.get("TRITON_CACHE_MANAGER"):
        return False
    knobs.cache.manager_class = _manager_class()
    return True
