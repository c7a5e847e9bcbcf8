"""The keys of the session's state in pytest's stash (``config.stash``): one place that every module can import,
since it imports nothing of the suite's (the modules that build the state and the ones that read it would otherwise
import each other)."""

from __future__ import annotations

import pytest

CONTEXT = pytest.StashKey["SuiteContext"]()  # suite.plugin.context.SuiteContext: built once in pytest_configure
BACKEND = pytest.StashKey()  # the chosen Backend (also context.backend), read by tests
PINNING = pytest.StashKey["Pinning"]()  # suite.plugin.context.Pinning: the controller's GPUs and workers' journals
DEFERRED = pytest.StashKey[bool]()  # an xdist controller whose context is built once its workers have started
