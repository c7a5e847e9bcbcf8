"""The case watchdog (--case-timeout) counts a case's own time, not the time it waits for its GPU.

Seen on an H100 with 16 workers: two workers ran a hung kernel while a third waited to run an out-of-memory case
alone; the cases queued behind them waited for the GPU's lock past their timeout, and clean layernorm and softmax
cases were reported as hung kernels. Here a process holds the GPU's lock (suite/workers/gpu_share.py) for longer than the
timeout while a case waits for it."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from suite.workers import crash

ROOT = Path(__file__).resolve().parent.parent.parent

CASE = textwrap.dedent("""
    import os, sys
    from kernels.spec import Case
    from suite.workers import crash
    from suite.workers import gpu_share
    if sys.argv[2] == "planted":  # the bug: waiting for the GPU counted as the case's time
        import contextlib
        crash.not_counted = contextlib.nullcontext
    crash.process().timeout_s = 1.0
    share = gpu_share.Share()
    share.fd = os.open(sys.argv[1] + ".lock", os.O_CREAT | os.O_RDWR)
    share.gate = os.open(sys.argv[1] + ".gate", os.O_CREAT | os.O_RDWR)
    print("waiting", flush=True)
    with crash.watchdog(Case("vector_add", "fp32", {"N": 1})):
        with getattr(share, sys.argv[3])("cpu"):  # case: shared, as every case; alone: an out-of-memory retry
            pass
    print("case done")
""")


@pytest.mark.parametrize("how", ["case", "alone"])
@pytest.mark.parametrize("variant", ["fixed", "planted"])
def test_waiting_for_the_gpu_is_not_the_case_s_time(tmp_path, variant, how):
    stem = tmp_path / "gpu"
    with open(f"{stem}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another worker's case (a hung kernel) holds the GPU for 2.5 s
        proc = subprocess.Popen([sys.executable, "-c", CASE, str(stem), variant, how], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout.readline().strip() == "waiting"  # torch imported: the case starts now
        time.sleep(2.5)
        fcntl.flock(held, fcntl.LOCK_UN)
    out, _ = proc.communicate(timeout=60)
    if variant == "fixed":
        assert proc.returncode == 0 and "case done" in out, out
    else:
        assert proc.returncode == crash.EXIT_TIMEOUT and "ran longer than --case-timeout=1 s" in out, out


def test_the_case_s_own_time_still_counts_around_a_wait(tmp_path):
    """Paused, not reset: time before and after the wait adds up to the timeout."""
    code = textwrap.dedent("""
        import time
        from kernels.spec import Case
        from suite.workers import crash
        crash.process().timeout_s = 1.0
        with crash.watchdog(Case("vector_add", "fp32", {"N": 1})):
            time.sleep(0.6)
            with crash.not_counted():
                time.sleep(1.5)
            time.sleep(0.6)
        print("case done")
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == crash.EXIT_TIMEOUT, proc.stdout + proc.stderr
