"""Device-generic tests: every registered kernel x dtype, cases drawn by Hypothesis.

Parametrized by the plugin (``kernel_dtype``) from the kernel registry; adding a
kernel is adding a module under kernels/, not editing this file. A case's life, and
every rule the test ends with, is suite/checks/reference_loop.py's ReferenceLoop.
"""

from __future__ import annotations

import warnings

import pytest

from kernels.spec import Case
from suite.checks import reach
from suite.checks.reference_loop import ReferenceLoop
from suite.plugin.context import CONTEXT
from suite.plugin.recorder import KNOWN_PROPERTY
from suite.session import results
from suite.tools import export


def test_matches_reference(kernel_dtype, request: pytest.FixtureRequest) -> None:
    """The kernel's outputs lie within the tolerance rule's bound of the float64 reference, under its own config
    and the others each case samples; every output element was written; NaN/inf appear exactly where the
    reference has them; every declared code path was exercised."""
    ctx = request.config.stash[CONTEXT]
    loop = ReferenceLoop(kernel_dtype, request, ctx)
    properties = request.node.user_properties
    properties.append((results.CASES_PROPERTY, loop.records))
    if loop.known_issue:
        properties.append((KNOWN_PROPERTY, loop.known_issue.as_record()))
    properties.append((reach.COVERAGE_PROPERTY, [loop.coverage.record()]))
    try:
        loop.run()
    finally:
        coverage = loop.close()
        if loop.to_export and ctx.options.export_failures is not None:
            export_failure(loop, ctx.options.export_failures, *loop.to_export)
        properties[:] = [p for p in properties if p[0] != reach.COVERAGE_PROPERTY] + coverage


def export_failure(loop: ReferenceLoop, directory, case: Case, config: dict, message: str, line: str,
                   failure: str | None) -> None:
    """--export-failures: the case's folder (suite/tools/export.py), named on the terminal; a case that cannot be
    exported is a warning, never another failure of the test."""
    try:
        folder = export.export_case(loop.spec, case, config, loop.backend, directory, loop.request.node.nodeid,
                                    message, line, failure,  # the rate the suite measured, where intermittent
                                    intermittent=(loop.last_failure or {}).get("intermittent"))
    except Exception as exc:  # noqa: BLE001 - the test's own failure stands; the export's is said beside it
        warnings.warn(f"--export-failures: {case} could not be exported: {type(exc).__name__}: {exc}", UserWarning,
                      stacklevel=1)
        return
    warnings.warn(f"--export-failures: {case} exported to {folder}; rerun it without the suite: "
                  f"python {folder / 'repro.py'}", UserWarning, stacklevel=1)
