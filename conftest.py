"""Wires the suite's pytest plugin in; everything else lives in suite/."""

pytest_plugins = ["suite.workers.crash", "suite.plugin.hooks"]
