"""Helpers for the harness's own tests: running the suite in a subprocess."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import durations, forkserver

ROOT = Path(__file__).resolve().parent.parent


class SuiteRun:
    def __init__(self, proc: subprocess.CompletedProcess, results_dir: Path) -> None:
        self.returncode = proc.returncode
        self.output = proc.stdout + proc.stderr
        self.results_dir = results_dir

    def run_files(self) -> list[Path]:
        return sorted(self.results_dir.glob("run-*.json"))

    def run_data(self) -> dict:
        files = self.run_files()
        assert len(files) == 1, f"expected one run file in {self.results_dir}, found {files}\n{self.output[-3000:]}"
        return json.loads(files[0].read_text())


# Whole runs of several processes that take 5 s or more each on a 2-core machine (installs into fresh virtual
# environments, sharded, crashing and hanging multi-worker runs, the guide's command sequences, planted bugs that
# Hypothesis has to search for): off `pytest tests`, on with `-m slow`; .ci/run runs them in a step of their own.
SLOW = "slow"
SLOW_ARGS = "tests -m slow -n auto"
SLOW_RUN = f"pytest {SLOW_ARGS}"  # as a command: slow_run(), with pytest as this run was started
SLOW_OFF = pytest.StashKey[bool]()


def _deselects_slow(config: pytest.Config) -> bool:
    """Only for a run that names no test (a node id runs as asked) and selects no marks of its own."""
    return (config.option.markexpr or "").strip() == "not perf" and not any("::" in a for a in config.args)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The harness's own tests run on the interpreter wherever they run (several launch Triton on CPU tensors in
    this process); a test that needs a GPU starts its own suite run with --backend=cuda."""
    if getattr(config.option, "backend", None) == "auto":
        config.option.backend = "interpret"
    # The suite runs these tests start (in subprocesses of their own making too) print reproduction lines starting
    # with pytest, as typed where the environment is active, not with this harness run's own launcher, which the
    # suite's plugin notes for its own workers; tests of the launcher set or clear SUITE_LAUNCHER themselves.
    os.environ["SUITE_LAUNCHER"] = "pytest"
    _share_bytecode(config)
    config.addinivalue_line("markers", f"{SLOW}: a whole run of several processes, 5 s or more on a 2-core machine "
                                       f"(off by default: {SLOW_RUN})")
    if _deselects_slow(config):
        config.option.markexpr = f"not perf and not {SLOW}"
        config.stash[SLOW_OFF] = True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest module first (tests/durations.py), so that the last tests a worker takes are short ones; every xdist
    worker sorts its collection the same way, as xdist requires."""
    keys = [(item.nodeid.split("::")[0], item.get_closest_marker(SLOW) is not None) for item in items]
    items[:] = [items[i] for i in durations.order(keys, durations.load())]


def _pycache_dirs() -> set[Path]:
    """The checkout's ``__pycache__`` directories, outside virtual environments and git's own."""
    found = set()
    for dirpath, dirnames, _ in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not d.startswith((".venv", ".git")) and d not in ("venv", "build")]
        if os.path.basename(dirpath) == "__pycache__":
            found.add(Path(dirpath))
            dirnames.clear()
    return found


def _share_bytecode(config: pytest.Config) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (machines that keep bytecode out of source trees), each suite run these
    tests start would compile the suite's modules and pytest would rewrite their asserts anew, in every one of its
    processes: about 0.4 s of CPU per process, a quarter of the harness's time on a 2-core machine. Instead the
    runs (and this run's workers) write bytecode, and the ``__pycache__`` directories this run created in the
    checkout are removed at its end: the tree is left as it was found. (A PYTHONPYCACHEPREFIX would keep it out of
    the tree, but every process would then compile torch's thousands of modules anew.) Set once, by the process
    that starts the others."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    before = _pycache_dirs()
    del os.environ["PYTHONDONTWRITEBYTECODE"]

    def remove_new() -> None:
        for path in _pycache_dirs() - before:
            shutil.rmtree(path, ignore_errors=True)

    config.add_cleanup(remove_new)


def slow_run() -> str:
    """The command that runs the slow tests, started as this run was (``.venv/bin/python -m pytest`` where README's
    quick start ran it without the environment active: a bare ``pytest`` there is another environment's or none)."""
    from suite.session.options import detected_launcher

    return f"{detected_launcher()} {SLOW_ARGS}"


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """One line naming what was left out (under xdist the workers deselect: no count here), within 100 columns
    where the interpreter's path is short (a checkout's .venv/bin/python)."""
    if config.stash.get(SLOW_OFF, False):
        terminalreporter.write_line(f"slow tests left out (.ci/run runs them): {slow_run()}")


def start_suite_run(*args: str, results_dir: Path, env: dict | None = None, timeout: int = 600) -> SuiteRun:
    """Run pytest on the suite in a fresh process from the repository root, its run file under ``results_dir``; for
    a run that several tests read (a module-scoped fixture), where ``run_suite`` gives each test its own."""
    if not any(a.startswith("--backend") for a in args):  # the same backend on a GPU machine as on a laptop
        args = ("--backend=interpret", *args)
    argv = ["-p", "no:cacheprovider", f"--results-dir={results_dir}", *args]
    # This process may have TRITON_INTERPRET set by the plugin; the child chooses its own backend (and inherits
    # SUITE_LAUNCHER=pytest, set in pytest_configure above). Forked from a process that imported torch already,
    # where the environment allows (tests/forkserver.py).
    proc = forkserver.run_python_module("pytest", argv, ROOT, {**forkserver.child_env(), **(env or {})}, timeout)
    return SuiteRun(proc, results_dir)


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A directory that ``make`` fills once per harness run, however many of its xdist workers ask for it: the first
    to ask makes it, holding a lock, and the others wait for it and read what it made. A module-scoped fixture alone
    is made again on each worker that runs one of its module's tests, and xdist hands a module's tests to several
    workers where they are few and slow (the slow tests). Where ``make`` raises, nothing is kept: the next to ask
    makes it again."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's, which holds each worker's own
    path = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not (base / f"{name}.made").exists():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
            make(path)
            (base / f"{name}.made").touch()
    return path


def run_python(module: str, *args: str, cwd: Path = ROOT, env: dict | None = None,
               timeout: float | None = None) -> subprocess.CompletedProcess:
    """``python -m module ARGS`` in ``cwd``, as ``subprocess.run(..., capture_output=True, text=True)`` returns it:
    forked from this process's server where the environment allows (tests/forkserver.py), which saves a fresh
    interpreter's import of torch, numpy and pytest (about 2 s of CPU) per run. ``env``: this process's environment
    where None, as with subprocess.run."""
    return forkserver.run_python_module(module, list(args), Path(cwd), dict(os.environ) if env is None else env,
                                        timeout)


@pytest.fixture
def run_suite(tmp_path):
    """Run pytest on the suite in a fresh process from the repository root."""

    def run(*args: str, results_dir: Path | None = None, env: dict | None = None, timeout: int = 600) -> SuiteRun:
        return start_suite_run(*args, results_dir=results_dir or tmp_path / "runs", env=env, timeout=timeout)

    return run
