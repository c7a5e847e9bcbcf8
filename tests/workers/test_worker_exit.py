"""xdist workers end at once after their session (suite/plugin/hooks.py: WorkerExit) instead of running Python's
finalization (torch and GPU teardown, 1.7-1.9 s per worker on an H100), and nothing is lost by it."""

from __future__ import annotations

import json

import pytest


def _plugin(tmp_path, keep_finalization: bool):
    """A plugin for the suite's workers: an atexit handler that leaves a file (it runs only if the worker goes
    through Python's finalization); ``keep_finalization`` turns WorkerExit's exit into a no-op (the planted bug:
    workers that linger)."""
    # The plant is made as the plugin loads, before the suite notes its own code (suite/checks/tampering.py): made
    # later, the suite would refuse the run as tampered with, which is not what this test is about.
    (tmp_path / "exit_probe.py").write_text(
        "import atexit, os\n"
        + ("import suite.plugin.hooks\nsuite.plugin.hooks.WorkerExit.exit = staticmethod(lambda code: None)\n"
           if keep_finalization else "") +
        "def pytest_configure(config):\n"
        "    if hasattr(config, 'workerinput'):\n"
        f"        atexit.register(lambda: open(os.path.join({str(tmp_path)!r}, 'finalized-' + "
        "config.workerinput['workerid']), 'w').close())\n")
    return {"PYTHONPATH": str(tmp_path)}


def test_workers_skip_finalization_and_the_run_is_whole(run_suite, tmp_path):
    res = run_suite("suite/test_kernels.py", "-k", "vector_add", "-n", "2", "-p", "exit_probe",
                    env=_plugin(tmp_path, keep_finalization=False), timeout=300)
    assert res.returncode == 0, res.output[-3000:]
    run = res.run_data()
    assert run["status"] == "complete" and run["tests"] and all(t["outcome"] == "passed" for t in run["tests"])
    assert run["timing"]["workers"]["count"] == 2, json.dumps(run["timing"])
    assert not list(tmp_path.glob("finalized-*")), "a worker ran Python's finalization"
    complaints = ("Traceback", "INTERNALERROR", "EOFError", "node down", "crashed", "replacing")
    assert not [c for c in complaints if c in res.output], res.output[-3000:]


@pytest.mark.slow
def test_a_worker_that_finalizes_is_seen(run_suite, tmp_path):
    """Planted: WorkerExit's exit made a no-op; the probe sees both workers finalize."""
    res = run_suite("suite/test_kernels.py", "-k", "vector_add", "-n", "2", "-p", "exit_probe",
                    env=_plugin(tmp_path, keep_finalization=True), timeout=300)
    assert res.returncode == 0, res.output[-3000:]
    assert sorted(p.name for p in tmp_path.glob("finalized-*")) == ["finalized-gw0", "finalized-gw1"]
