"""The harness's suite runs, forked from a process that has imported torch already.

A suite run in a fresh process (``python -m pytest ...``) spends about 1.2 s of CPU importing torch, numpy and
pytest before it does anything, and the harness's tests start over a hundred of them: on a 2-core machine that was
about a fifth of the harness's time. So each harness process keeps one server (started on first use) that imports
those three and then waits; each run is a child forked from it, set up as ``python -m pytest`` would be (its
working directory, environment, ``sys.argv``, ``sys.path[0]``, stdin from /dev/null, stdout and stderr to files),
that runs pytest's ``__main__`` (or a script, as ``python SCRIPT`` does: repro.py's reruns, the script's folder
first on the path) and exits the way Python exits (atexit handlers, flushed files, the exit status of ``SystemExit``).
The suite itself, Triton and Hypothesis are imported in the child, as in a fresh process.

The server freezes what it imported (``gc.freeze()``): the objects of torch, numpy and pytest, which never become
garbage, are left out of the child's collections. Without it each run's full collections walked them all again
(pytest's own ``gc.collect()`` as it ends is about 0.2 s of CPU with torch loaded): 25-29% of the CPU time of
``pytest tests/plugin/test_verdicts.py -n 0`` (41.7 s before, 31.4 s after, run back to back on a busy 2-core machine).

What a forked run cannot be is a process started with another interpreter setup: a run whose environment differs
from the server's in anything but the suite's, Triton's and Hypothesis's variables (``SUITE_*``, ``TRITON_*``,
``HYPOTHESIS_*``: read after start-up), e.g. ``PYTHONPATH`` (a planted plugin or ``sitecustomize``) or a variable
torch reads on import, runs in a fresh process as before; so does every run when ``SUITE_HARNESS_FORK=0``.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ENV = "SUITE_HARNESS_FORK"
PRELOAD = ("torch", "numpy", "pytest")
# Variables a forked run may set or change: read by the suite, Triton and Hypothesis after start-up, none of which
# the server imports.
LATE_PREFIXES = ("SUITE_", "TRITON_", "HYPOTHESIS_")
# PYTEST_CURRENT_TEST: the harness's pytest sets it per test, the run's own pytest sets its own; COLUMNS: read when a
# terminal's width is asked (shutil.get_terminal_size), by none of the three on import.
LATE_NAMES = ("PYTEST_CURRENT_TEST", "COLUMNS")

_SERVER = r"""
import gc, json, os, runpy, sys
for name in sys.argv[1].split(","):
    __import__(name)
gc.freeze()
reply = os.fdopen(os.dup(1), "w")
requests = os.fdopen(os.dup(0), "r")
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(devnull, 1)  # nothing but replies on the pipe
child = False
for line in requests:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child = True
        break
    reply.write(json.dumps({"pid": pid}) + "\n")
    reply.flush()
    _, status = os.waitpid(pid, 0)
    reply.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
    reply.flush()
if child:
    requests.close()
    reply.close()
    os.dup2(os.open(req["stdout"], os.O_WRONLY | os.O_TRUNC), 1)
    os.dup2(os.open(req["stderr"], os.O_WRONLY | os.O_TRUNC), 2)
    os.close(devnull)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    if "script" in req:  # `python SCRIPT ARGS`: the script's directory first on the path, as Python puts it
        sys.path[0] = os.path.dirname(os.path.abspath(req["script"]))
        sys.argv = [req["script"], *req["args"]]
        sys.orig_argv = [sys.executable, req["script"], *req["args"]]
        runpy.run_path(req["script"], run_name="__main__")
    else:
        sys.path[0] = req["cwd"]  # what `python -m` puts first
        sys.argv = [sys.argv[0], *req["args"]]
        sys.orig_argv = [sys.executable, "-m", req["module"], *req["args"]]
        runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
"""


def child_env() -> dict[str, str]:
    """This process's environment less TRITON_INTERPRET (the suite's plugin may have set it here; a run chooses its
    own backend): what the server starts with, and what a run's environment is compared with."""
    return {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}


class ForkServer:
    """One per harness process (its tests run one at a time: one run at a time)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.env: dict[str, str] = {}
        self.lock = threading.Lock()
        self.pending = b""
        atexit.register(self.stop)  # once: the server it holds then, if any, ends with the harness process

    def _start(self, cwd: Path) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.env = child_env()
            self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, ",".join(PRELOAD)], cwd=cwd, env=self.env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.pending = b""
        return self.proc

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def fits(self, env: dict[str, str]) -> bool:
        """Whether a run with ``env`` can be forked: it differs from the server's only in late-read variables."""
        if os.environ.get(ENV, "1") == "0":
            return False
        base = self.env or child_env()
        changed = {k for k in base.keys() | env.keys() if base.get(k) != env.get(k)}
        return all(k.startswith(LATE_PREFIXES) or k in LATE_NAMES for k in changed)

    def _reply(self, proc: subprocess.Popen, timeout: float | None) -> dict[str, Any] | None:
        """The server's next reply line, or None where ``timeout`` seconds pass first (read from the pipe's file
        descriptor: a buffered reader could hold the second reply while select waits for more)."""
        fd = proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.pending:
            if deadline is not None:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("the harness's fork server ended (its stderr is the harness's)")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def run(self, module: str, args: list[str], cwd: Path, env: dict[str, str],
            timeout: float | None, script: str | None = None) -> subprocess.CompletedProcess:
        """``python -m module *args`` (or ``python script *args`` where ``script`` is given) in ``cwd`` with ``env``,
        forked; as ``subprocess.run(..., capture_output=True, text=True, timeout=timeout)`` would return (or raise
        ``TimeoutExpired``, the run killed)."""
        cmd = [sys.executable, *((script,) if script else ("-m", module)), *args]
        with self.lock, tempfile.TemporaryDirectory(prefix="harness-run-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            out.touch()
            err.touch()
            proc = self._start(cwd)
            what = {"script": script} if script else {"module": module}
            proc.stdin.write(json.dumps({**what, "args": args, "cwd": str(cwd), "env": env,
                                         "stdout": str(out), "stderr": str(err)}) + "\n")
            proc.stdin.flush()
            pid = self._reply(proc, None)["pid"]
            done = self._reply(proc, timeout)
            if done is None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._reply(proc, None)
                raise subprocess.TimeoutExpired(cmd, timeout, output=out.read_text(errors="replace"),
                                                stderr=err.read_text(errors="replace"))
            return subprocess.CompletedProcess(cmd, done["returncode"], out.read_text(errors="replace"),
                                               err.read_text(errors="replace"))


SERVER = ForkServer()


def run_python_module(module: str, args: list[str], cwd: Path, env: dict[str, str],
                      timeout: float | None = None) -> subprocess.CompletedProcess:
    """``python -m module *args``: forked from the server where it fits (see the module docstring), else a fresh
    process; what ``subprocess.run`` with ``capture_output=True, text=True`` returns."""
    if SERVER.fits(env):
        return SERVER.run(module, args, cwd, env, timeout)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def run_python_script(script: str, args: list[str], cwd: Path, env: dict[str, str],
                      timeout: float | None = None) -> subprocess.CompletedProcess:
    """``python script *args`` in ``cwd`` (``script`` relative to it or absolute): forked from the server where it
    fits, else a fresh process; what ``subprocess.run`` with ``capture_output=True, text=True`` returns."""
    if SERVER.fits(env):
        return SERVER.run("", args, cwd, env, timeout, script=str(Path(cwd, script)))
    return subprocess.run([sys.executable, script, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)
