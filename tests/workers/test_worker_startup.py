"""An xdist worker that dies while starting (its options, a plugin, an import) stops the run at once with its own
error, instead of xdist replacing it up to --max-worker-restart times (1000 in the suite) and ending with "no tests
ran"."""

from __future__ import annotations

import time

from suite.workers import crash

PLANTED = (
    "import pytest\n"
    "def pytest_configure(config):\n"
    "    if hasattr(config, 'workerinput'):\n"
    "        raise pytest.UsageError('--planted=1: a worker that cannot start')\n")


def test_a_worker_that_dies_at_start_up_stops_the_run_with_its_error(run_suite, tmp_path):
    (tmp_path / "startup_death.py").write_text(PLANTED)
    began = time.time()
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-n", "2", "-p", "startup_death",
                    env={"PYTHONPATH": str(tmp_path)}, timeout=120)
    assert res.returncode == 4, res.output[-3000:]  # a usage error, as the worker's own was
    assert "died while starting, before any test: usage error: --planted=1: a worker that cannot start" in res.output
    assert "replacing crashed worker" not in res.output, res.output[-3000:]
    assert "INTERNALERROR" not in res.output
    assert time.time() - began < 100
    assert not res.run_files()  # no test ran: no run file


def test_the_start_up_line_names_the_error():
    assert crash.startup_death("gw3", "Not properly terminated") == (
        "xdist worker gw3 died while starting, before any test: it ended without saying why (a crash, a kill, or "
        "os._exit before its session)")
    tb = "Traceback (most recent call last):\n  File x\nModuleNotFoundError: No module named 'nope'\n"
    assert crash.startup_death("gw0", tb).endswith("before any test: ModuleNotFoundError: No module named 'nope'")


def test_an_option_value_the_workers_cannot_parse_stops_the_run(run_suite, tmp_path):
    """'--results-dir DIR' (a space, not '='): the controller creates DIR, and each worker then takes DIR for a test
    path, another rootdir without the suite's conftest.py, and fails to parse --results-dir."""
    res = run_suite("-n", "2", "--results-dir", str(tmp_path / "new-dir"), "-k", "vector_add-fp32", timeout=120)
    assert res.returncode == 4, res.output[-3000:]
    assert "died while starting, before any test: -c: error: unrecognized arguments: --results-dir" in res.output
    assert "write --option=VALUE" in res.output and "replacing crashed worker" not in res.output
