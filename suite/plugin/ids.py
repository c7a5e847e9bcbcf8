"""Test ids as the suite prints them, also in a run started from another directory (``triton-portability`` from
one's own repository, whose rootdir is the installed suite's directory): pytest would print the progress lines and
its short test summary relative to the current directory (``../.venv/lib/python3.11/site-packages/triton_portability/
_root/suite/test_kernels.py::...``); they read ``suite/test_kernels.py::...`` instead, as the reproduction lines do,
and ``triton-portability`` takes them as they are (suite/__main__.py). Loaded by suite/__main__.py's runner only."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.invocation_params.dir == config.rootpath:
        return
    config.cwd_relative_nodeid = lambda nodeid: nodeid  # type: ignore[method-assign]  # ids relative to the rootdir
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:  # the progress lines' file names, relative to the rootdir too
        reporter.startpath = config.rootpath
