"""Properties beyond the reference: run-to-run determinism, batch invariance, and each
kernel's own properties (rows sum to one, causality, dropout statistics, ...).

Determinism and batch invariance are findings per kernel and backend: recorded in the
run file either way, and a failure only where the kernel's spec claims them. A case's
life is suite/checks/property_loop.py's PropertyLoop.
"""

from __future__ import annotations

import pytest

from suite.checks.property_loop import FINDINGS, PropertyLoop
from suite.plugin.context import CONTEXT
from suite.plugin.recorder import KNOWN_PROPERTY


def test_properties(kernel_dtype, request: pytest.FixtureRequest) -> None:
    loop = PropertyLoop(kernel_dtype, request, request.config.stash[CONTEXT])
    if loop.known_issue:  # the run file names the issue this test is expected to fail under, as the reference test's
        request.node.user_properties.append((KNOWN_PROPERTY, loop.known_issue.as_record()))
    request.node.user_properties.append((FINDINGS, list(loop.findings.values())))
    loop.run()
