"""The controller's child that compiles its workers' sources (suite/workers/bytecode.py: ``Prefill``): the paths on
stdin, one a line, compiled where this process's imports would read them (``PYTHONPYCACHEPREFIX``), spread over the
cores. It imports nothing of the suite's: its own start-up is on the controller's way to starting its workers."""

from __future__ import annotations

import compileall
import os
import sys
from concurrent.futures import ProcessPoolExecutor


def compile_sources(files: list[str], processes: int | None = None) -> int:
    """Compile ``files``, one chunk per process; a file already up to date is left as it is. How many failed."""
    if not files:
        return 0
    processes = max(1, min(processes or os.cpu_count() or 1, len(files) // 16 or 1))
    if processes == 1:
        return sum(not _compile_one(f) for f in files)
    with ProcessPoolExecutor(processes) as pool:
        return sum(not ok for ok in pool.map(_compile_one, files, chunksize=max(1, len(files) // (4 * processes))))


def _compile_one(path: str) -> bool:
    return bool(compileall.compile_file(path, quiet=2))


if __name__ == "__main__":
    raise SystemExit(1 if compile_sources([line.strip() for line in sys.stdin if line.strip()]) else 0)
