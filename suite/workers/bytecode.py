"""Workers' Python bytecode kept between runs where the environment turns bytecode off.

An image that sets ``PYTHONDONTWRITEBYTECODE`` (the GPU runners' image does) makes every process compile the source
of every module it imports, every time: each xdist worker compiled torch's, Hypothesis's, pytest's and the suite's
modules anew (about 2.8 s of one worker's 7-8 s start-up on an H100 runner, ``compile`` in a cProfile of its
collection) and pytest rewrote the asserts of every plugin's modules anew. An xdist controller whose environment sets
it (and sets no ``PYTHONPYCACHEPREFIX``) starts its workers with the bytecode written to, and read from, a cache
directory of the suite's own instead: ``PYTHONPYCACHEPREFIX`` (Python writes nothing beside the sources, in the
checkout or the installed packages, as the variable asked). A run from a fresh cache compiles as before; the next
runs read what it wrote. Where the directory cannot be written, Python compiles as before. The controller's own
imports from then on (torch, Triton and the kernels, which it imports once its workers have started, and which held
back its handing out of tests once the workers started faster than it) read and write the same cache
(``sys.dont_write_bytecode``, ``sys.pycache_prefix``).

A cold cache (a fresh runner) leaves each worker compiling the sources it imports, as every other worker does at the
same time. The controller once compiled them first, spread over the cores (a prefill from a list of the ~1,170
sources a worker imports): back to back on one H200 it saved 0.9 s of a 35 s cold run (2.5%, under the 5% such
start-up machinery must save to stay), and was taken out (evidence/house/startup-ab/).

``SUITE_BYTECODE_DIR`` names the directory (default: ``$XDG_CACHE_HOME/triton-portability/bytecode``, else
``~/.cache/triton-portability/bytecode``); set empty, workers start as the environment says. The controller's own
environment is put back when its run ends.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from suite.session import stash

DIR_ENV = "SUITE_BYTECODE_DIR"
_OFF = "PYTHONDONTWRITEBYTECODE"
_PREFIX = "PYTHONPYCACHEPREFIX"


def cache_dir(env: dict[str, str] | None = None) -> Path | None:
    """Where the workers' bytecode goes; None where the suite leaves it as the environment says (bytecode on, a
    prefix of the caller's own, or SUITE_BYTECODE_DIR set empty)."""
    env = os.environ if env is None else env
    if not env.get(_OFF) or env.get(_PREFIX):
        return None
    if DIR_ENV in env:
        # Absolute: Python would read a relative prefix from each process's working directory at each import.
        return Path(os.path.abspath(Path(env[DIR_ENV]).expanduser())) if env[DIR_ENV].strip() else None
    base = Path(env.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser())
    return base / "triton-portability" / "bytecode"


def share_with_workers(config: Any) -> None:
    """An xdist controller, before its workers start: they write and read their bytecode under ``cache_dir``."""
    where = cache_dir()
    if where is None or stash.SAVED_ENV in config.stash:
        return
    config.stash[stash.SAVED_ENV] = {_OFF: os.environ.get(_OFF), _PREFIX: os.environ.get(_PREFIX),
                                     "sys": (sys.dont_write_bytecode, sys.pycache_prefix)}
    os.environ.pop(_OFF, None)
    os.environ[_PREFIX] = str(where)
    sys.dont_write_bytecode, sys.pycache_prefix = False, str(where)  # this process's imports from now on


def restore(config: Any) -> None:
    """The controller's environment as it was before ``share_with_workers``."""
    saved = config.stash.get(stash.SAVED_ENV, None)
    if saved is None:
        return
    del config.stash[stash.SAVED_ENV]
    sys.dont_write_bytecode, sys.pycache_prefix = saved.pop("sys")
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value

