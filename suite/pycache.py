"""Python bytecode for the suite's processes kept in a cache directory where the environment writes none.

Container images often set ``PYTHONDONTWRITEBYTECODE=1`` and ship torch without ``__pycache__``: every Python
process then compiles torch's sources again when it imports it. On the H100 runner image that made ``import
torch`` take 5.4 s of CPU in every process, and 16 xdist workers starting at once spent about 8-10 s of a run
before their first test doing it. Where bytecode writing is off, the suite points Python's bytecode cache at its own
directory (``sys.pycache_prefix``, Python 3.8+) before it imports torch: nothing is written next to any source file
(the reason for the setting), the controller's own imports fill the cache, and the workers it starts (and any
other child process, through ``PYTHONPYCACHEPREFIX``) read it.

``SUITE_PYCACHE``: the directory (default ``$XDG_CACHE_HOME/portability-suite/pycache``, else
``~/.cache/portability-suite/pycache``); ``0`` leaves the environment's choice alone. Python checks each cached
file against its source's modification time and size, as it does in ``__pycache__``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

VARIABLE = "SUITE_PYCACHE"


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "portability-suite" / "pycache"


def enable() -> str | None:
    """Cache bytecode under the suite's directory if this process writes none; the directory, or None."""
    choice = os.environ.get(VARIABLE, "")
    if choice == "0" or not sys.dont_write_bytecode or sys.pycache_prefix:
        return None  # off on request, or Python already writes bytecode somewhere
    path = Path(choice) if choice else default_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK):
            return None
    except OSError:
        return None
    sys.pycache_prefix = str(path)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(path)  # the processes this one starts (workers, children) read it too
    return str(path)
