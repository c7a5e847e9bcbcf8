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

A cold cache (a fresh runner) still left each of the 16 workers of an H100 runner compiling the same ~1400 sources
at once (their start-up 6.2-6.9 s against 4.1 s warm, README's command on an H100): the controller now compiles the
sources a worker imports once, spread over the machine's cores, before it starts them (``prefill``). What a worker
imports is listed in ``bytecode_modules.txt`` beside this file (paths under their ``sys.path`` entry, written by
``python -m suite.workers.bytecode --write-manifest``); a listed file this machine lacks is passed over and one the
list lacks is compiled by the worker that imports it, as before, so a list out of date costs time, never a result.
A fingerprint of the listed files (path, size, time) in the cache says the prefill is done; a warm run only checks
it.

``SUITE_BYTECODE_DIR`` names the directory (default: ``$XDG_CACHE_HOME/triton-portability/bytecode``, else
``~/.cache/triton-portability/bytecode``); set empty, workers start as the environment says. The controller's own
environment is put back when its run ends.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from suite.session import stash

DIR_ENV = "SUITE_BYTECODE_DIR"
_OFF = "PYTHONDONTWRITEBYTECODE"
_PREFIX = "PYTHONPYCACHEPREFIX"
MANIFEST = Path(__file__).with_name("bytecode_modules.txt")
_ROOT = Path(__file__).resolve().parents[2]  # the checkout, where ``-m suite.workers.prefill`` is found
DONE = "prefilled"  # the fingerprint of the last complete prefill, in the cache directory
PREFILL_WAIT_S = 60.0  # at most this long before the workers start; they compile what is left themselves


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
    config.stash[stash.PREFILL] = prefill(where)


def sources(manifest: Path = MANIFEST, roots: list[str] | None = None) -> list[Path]:
    """The manifest's files found on this machine, each under the first ``sys.path`` entry that holds it (the
    checkout's own modules under the working directory, ``''`` on ``sys.path``)."""
    try:
        listed = [line.strip() for line in manifest.read_text().splitlines()]
    except OSError:
        return []
    dirs = [Path(r or os.getcwd()) for r in (sys.path if roots is None else roots)]
    dirs = [d for d in dict.fromkeys(dirs) if d.is_dir()]
    found = []
    for rel in listed:
        if not rel or rel.startswith("#"):
            continue
        for d in dirs:
            if (d / rel).is_file():
                found.append(d / rel)
                break
    return found


def fingerprint(files: list[Path]) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        digest.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


class Prefill:
    """The listed sources compiled into ``where`` by a child process that spreads them over the cores
    (``suite/workers/prefill.py``)."""

    def __init__(self, where: Path, files: list[Path]) -> None:
        self.where, self.began = where, time.monotonic()
        self.stamp = fingerprint(files)
        self.proc: subprocess.Popen | None = None
        self.took: float | None = None  # seconds from its start to its end, once waited for
        if not files or _read(where / DONE) == self.stamp:
            return  # nothing listed here, or done already: a warm run only checks
        env = {**os.environ, _PREFIX: str(where), _OFF: "1"}  # the child's own imports write nothing (compileall does)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "suite.workers.prefill"], env=env, cwd=_ROOT,
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
            self.proc.stdin.write("\n".join(map(str, files)) + "\n")
            self.proc.stdin.close()
        except OSError:
            self.proc = None  # the workers compile their sources as before

    def wait(self, timeout: float = PREFILL_WAIT_S) -> float | None:
        """Until the child is done (or ``timeout`` has passed: it goes on beside the workers); the seconds it took,
        None where there was none to wait for."""
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout=max(0.0, timeout - (time.monotonic() - self.began)))
        except subprocess.TimeoutExpired:
            return None
        if self.proc.returncode in (0, 1):  # 1: a listed source did not compile (its importer will say why)
            _write(self.where / DONE, self.stamp)
        self.proc = None
        self.took = round(time.monotonic() - self.began, 3)
        return self.took


def prefill(where: Path) -> Prefill:
    """Begin compiling the sources a worker imports into ``where`` (a directory the suite owns)."""
    return Prefill(where, sources())


def wait_for_prefill(config: Any) -> float | None:
    """The controller, before xdist starts its workers: the prefill done (at most PREFILL_WAIT_S)."""
    job = config.stash.get(stash.PREFILL, None)
    return job.wait() if job is not None else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    except OSError:
        pass


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


# What a worker imports, for the manifest: the suite's plugin and its kernels, collected as a GPU run collects, and
# Triton's GPU drivers (which a CPU machine imports only when asked).
_WORKER_IMPORTS = ("torch", "triton", "triton.backends.nvidia.driver", "triton.backends.nvidia.compiler",
                   "triton.backends.amd.driver", "triton.backends.amd.compiler", "numpy", "hypothesis", "tabulate")


def imported_sources() -> list[str]:
    """The ``.py`` files this process has imported, each relative to the ``sys.path`` entry it came from (the
    standard library left out: its bytecode ships with Python)."""
    import sysconfig

    stdlib = {Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")}
    roots = sorted({Path(p or os.getcwd()).resolve() for p in sys.path if Path(p or os.getcwd()).is_dir()},
                   key=lambda p: -len(p.parts))
    out = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        path = Path(file).resolve()
        if not path.is_file():  # a module object named after a file it is not (torch.ops: '_ops.py')
            continue
        for root in roots:
            if path.is_relative_to(root):
                if root not in stdlib:
                    out.add(path.relative_to(root).as_posix())
                break
    return sorted(out)


def write_manifest(path: Path = MANIFEST) -> int:
    """Collect the suite as a worker does (in this process), import what a GPU worker adds, and list the sources."""
    import importlib

    import pytest

    code = pytest.main(["-q", "--co", "-p", "no:cacheprovider", "--no-results", "-p", "no:randomly"])
    if code not in (0, 5):
        raise SystemExit(f"--write-manifest: collecting the suite failed (pytest exit {code})")
    for name in _WORKER_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a backend this machine's Triton lacks is left out
            pass
    files = imported_sources()
    path.write_text("# What a worker imports (suite/workers/bytecode.py: prefill); written by\n"
                    "# python -m suite.workers.bytecode --write-manifest\n" + "\n".join(files) + "\n")
    return len(files)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-manifest"]:
        raise SystemExit("usage: python -m suite.workers.bytecode --write-manifest")
    print(f"{write_manifest()} sources listed in {MANIFEST}")
