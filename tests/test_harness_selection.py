"""The harness's slow tests (tests/conftest.py): `pytest tests` leaves them out and says so in one line with the
command that runs them; `-m slow` runs them alone; a node id runs as asked."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, SLOW_RUN

FILE = "tests/test_mutations.py"
SLOW_ID = "test_planted_kernel_bug_fails_the_default_run[matmul: wrong group index]"


def _collect(*args: str) -> tuple[str, list[str]]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout, [line for line in proc.stdout.splitlines() if line.startswith(FILE + "::")]


def test_the_default_run_leaves_the_slow_tests_out_and_names_the_command():
    out, ids = _collect(FILE)
    assert ids and f"{FILE}::{SLOW_ID}" not in ids, ids
    assert f"slow tests not run (marked slow: whole runs of several processes): {SLOW_RUN} runs them; .ci/run does" \
        in out, out


def test_m_slow_runs_the_slow_tests_alone_and_a_node_id_runs_as_asked():
    out, ids = _collect(FILE, "-m", "slow")
    assert ids == [f"{FILE}::{SLOW_ID}"], ids
    assert "slow tests not run" not in out
    out, ids = _collect(f"{FILE}::{SLOW_ID}")
    assert ids == [f"{FILE}::{SLOW_ID}"], ids
