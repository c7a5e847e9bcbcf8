"""The harness's slow tests (tests/conftest.py): `pytest tests` leaves them out and says so in one line with the
command that runs them; `-m slow` runs them alone; a node id runs as asked."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, SLOW_ARGS

FILE = "tests/checks/test_mutations.py"
SLOW_ID = "test_planted_kernel_bug_fails_the_default_run[matmul: wrong group index]"


def _path_without_this_environment() -> str:
    """PATH as a shell has it where README's quick start runs: this interpreter's directory is not on it."""
    here = Path(sys.executable).parent.resolve()
    return os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p).resolve() != here)


def _collect(*args: str) -> tuple[str, list[str]]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"},
                               "PATH": _path_without_this_environment()})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout, [line for line in proc.stdout.splitlines() if line.startswith(FILE + "::")]


def test_the_default_run_leaves_the_slow_tests_out_and_names_the_command():
    out, ids = _collect(FILE)
    assert ids and f"{FILE}::{SLOW_ID}" not in ids, ids
    line = next((ln for ln in out.splitlines() if ln.startswith("slow tests left out")), None)
    assert line is not None, out
    # Started as README's quick start does (the venv's interpreter by path, nothing activated), the command names
    # that interpreter as typed from the repository root, and what starts it runs from a shell without the venv.
    command = line.split(": ", 1)[1]
    assert command.endswith(f" -m pytest {SLOW_ARGS}"), line
    launcher = command.removesuffix(f" {SLOW_ARGS}")
    assert launcher != "python -m pytest" and shlex.split(launcher)[0] in (sys.executable, _typed(sys.executable)), line
    assert len(line) <= 100 or len(sys.executable) > 40, (len(line), line)
    version = subprocess.run(f"{launcher} --version", shell=True, cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "PATH": _path_without_this_environment()})
    assert version.returncode == 0 and "pytest" in version.stdout + version.stderr, version


def test_m_slow_runs_the_slow_tests_alone_and_a_node_id_runs_as_asked():
    out, ids = _collect(FILE, "-m", "slow")
    assert ids == [f"{FILE}::{SLOW_ID}"], ids
    assert "slow tests left out" not in out
    out, ids = _collect(f"{FILE}::{SLOW_ID}")
    assert ids == [f"{FILE}::{SLOW_ID}"], ids


def _typed(path: str) -> str:
    relative = os.path.relpath(os.path.abspath(path), ROOT)
    return os.path.abspath(path) if relative.startswith("..") else relative
