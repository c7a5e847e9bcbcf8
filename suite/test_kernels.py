"""Device-generic tests: every registered kernel x dtype, cases drawn by Hypothesis.

Parametrized by the plugin (``kernel_dtype``) from the kernel registry; adding a
kernel is adding a module under kernels/, not editing this file.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import example, given, seed

from kernels.spec import Case
from suite import crash, results
from suite.harness import record, run_case
from suite.plugin import BACKEND, KNOWN_PROPERTY, STATE, repro_prefix
from suite.strategies import VALIDATION_SEED, case_strategy


def repro_line(request: pytest.FixtureRequest, case: Case) -> str:
    parts = [*repro_prefix(request.config, request.node.nodeid), f"--repro={case.spec_string()}"]
    return " ".join(shlex.quote(p) for p in parts)


def test_matches_reference(kernel_dtype, request: pytest.FixtureRequest) -> None:
    """The kernel's outputs lie within the tolerance rule's bound of the float64 reference,
    every output element was written, and NaN/inf appear exactly where the reference has them."""
    spec, dtype, known_issue = kernel_dtype
    backend = request.config.stash[BACKEND]
    state = request.config.stash[STATE]
    records: list[dict] = []
    request.node.user_properties.append((results.CASES_PROPERTY, records))
    if known_issue:
        request.node.user_properties.append((KNOWN_PROPERTY, known_issue.as_record()))
    last_failure: list[dict] = []

    def check(case: Case) -> None:
        result = run_case(spec, case, backend)
        line = repro_line(request, case)
        rec = record(result, request.node.nodeid, line)
        if result.passed:
            if not last_failure:  # passes seen while shrinking a failure are not cases of the run
                records.append(rec)
            return
        last_failure[:] = [rec]
        if result.failure in ("fault", "oom"):
            raise crash.CaseAborted(f"{case}\n{result.message()}\nreproduce with: {line}")
        pytest.fail(f"{case}\n{result.message()}\nreproduce with: {line}", pytrace=False)

    repro = request.config.getoption("--repro")
    try:
        if repro:
            check(Case.parse(spec.name, dtype, repro))
            return
        strategy = case_strategy(spec, dtype, backend.name, large=state.large_shapes)
        check._hypothesis_internal_add_digest = f"{spec.name}-{dtype}".encode()
        run = given(strategy)(check)
        for ex in reversed(spec.examples):
            run = example(Case(kernel=spec.name, dtype=dtype, **ex))(run)
        if state.profile == "validation":
            run = seed(VALIDATION_SEED)(run)
        run()
    finally:
        # Hypothesis replays the minimal failing example last: record that one only.
        records.extend(last_failure)
