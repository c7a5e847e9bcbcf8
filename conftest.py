"""Wires the suite's pytest plugin in; everything else lives in suite/."""

from suite import pycache

pycache.enable()  # before the plugin imports torch: see suite/pycache.py

pytest_plugins = ["suite.crash", "suite.plugin"]
