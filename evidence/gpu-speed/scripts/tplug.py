"""Diagnostics only (not shipped): wall-clock marks of the controller's and workers' phases, appended to $TPLUG_FILE.
TPLUG_SLOWEXIT=1: the workers finalize as they did before WorkerExit (for an A/B in one call)."""
import atexit, os, time
T0 = float(os.environ.get("T0") or time.time())
WHO = os.environ.get("PYTEST_XDIST_WORKER", "main")
def mark(what):
    with open(os.environ.get("TPLUG_FILE", "/tmp/tplug.txt"), "a") as f:
        f.write(f"{time.time() - T0:8.3f} {WHO} {what}\n")
mark("plugin-import")
import pytest
@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    mark("configure-last")
    if os.environ.get("TPLUG_SLOWEXIT") == "1" and hasattr(config, "workerinput"):
        import suite.plugin
        suite.plugin.WorkerExit.exit = staticmethod(lambda code: None)
@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session): mark("sessionstart-last")
@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session): mark("collection-finish")
_first = []
def pytest_runtest_setup(item):
    if not _first:
        _first.append(1); mark("first-test-setup")
@pytest.hookimpl(tryfirst=True, specname="pytest_sessionfinish")
def sessionfinish_first(session): mark("sessionfinish-first")
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session): mark("sessionfinish-last")
@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    mark("unconfigure-first"); atexit.register(mark, "atexit")
