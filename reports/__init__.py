"""Portability reports: read run files (JSON written by the suite), render Markdown/HTML/JSON, compare two runs.

This package reads result files only. It never imports kernels, suite, triton or torch, so a report can be built on a
laptop from files copied off the runners: `python -m reports --help` (`python -m triton_portability.reports --help`
from an installed copy).
"""

import os
import shlex
import shutil
import sys
from pathlib import Path

# Where this command line runs: an installed copy holds this package under triton_portability/_root/, where only
# ``python -m triton_portability.reports`` finds it; a checkout's root has ``python -m reports``.
MODULE = "triton_portability.reports" if Path(__file__).resolve().parent.parent.name == "_root" else "reports"


def command(module: str = MODULE, executable: str | None = None) -> str:
    """``python -m module`` with this very interpreter as a person types it from the working directory: ``python``
    where the shell finds that very file by the name (an activated environment), else its path relative to the
    working directory (``.venv/bin/python``), else whole (as suite/session/options.py's typed_command does)."""
    path = executable or sys.executable
    try:
        path = os.path.abspath(path)
        typed = next((name for name in ("python", "python3")
                      if (found := shutil.which(name)) and os.path.abspath(found) == path), None)
        if typed is None:
            typed = os.path.relpath(path)
            typed = path if typed.startswith("..") else typed
    except (OSError, ValueError):  # the working directory is gone, or the path is on another drive
        typed = path
    return shlex.join([typed, "-m", module])
