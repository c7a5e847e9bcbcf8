"""Device-generic tests: every registered kernel x dtype, cases drawn by Hypothesis.

Parametrized by the plugin (``kernel_dtype``) from the kernel registry; adding a
kernel is adding a module under kernels/, not editing this file.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import example, given, seed

from kernels.spec import Case
from suite import crash, options, results
from suite.context import CONTEXT
from suite.harness import CaseResult, record, run_case
from suite.recorder import KNOWN_PROPERTY
from suite.strategies import VALIDATION_SEED, case_strategy


def repro_line(request: pytest.FixtureRequest, case: Case, extra_args: list[str] | tuple[str, ...] = ()) -> str:
    ctx = request.config.stash[CONTEXT]
    parts = [*options.repro_prefix(ctx, request.node.nodeid), *extra_args, f"--repro={case.spec_string()}"]
    return " ".join(shlex.quote(p) for p in parts)


def case_repro(request: pytest.FixtureRequest, spec, result: CaseResult) -> str:
    ctx = request.config.stash[CONTEXT]
    return repro_line(request, result.case, options.config_args(spec, result.config, ctx.backend.family))


def forced_config(request: pytest.FixtureRequest) -> dict | None:
    return request.config.stash[CONTEXT].options.config


def test_matches_reference(kernel_dtype, request: pytest.FixtureRequest) -> None:
    """The kernel's outputs lie within the tolerance rule's bound of the float64 reference,
    every output element was written, and NaN/inf appear exactly where the reference has them."""
    spec, dtype, known_issue = kernel_dtype
    ctx = request.config.stash[CONTEXT]
    backend = ctx.backend
    records: list[dict] = []
    request.node.user_properties.append((results.CASES_PROPERTY, records))
    if known_issue:
        request.node.user_properties.append((KNOWN_PROPERTY, known_issue.as_record()))
    last_failure: list[dict] = []
    config = forced_config(request)
    if config is not None and (problem := options.config_problem(spec, config)):
        pytest.fail(f"--config: {problem}", pytrace=False)

    def check(case: Case) -> None:
        result = run_case(spec, case, backend, config)
        line = case_repro(request, spec, result)
        rec = record(result, request.node.nodeid, line)
        if result.passed:
            if not last_failure:  # passes seen while shrinking a failure are not cases of the run
                records.append(rec)
            return
        last_failure[:] = [rec]
        if result.failure in ("fault", "oom", "spec"):  # shrinking would only repeat it
            raise crash.CaseAborted(f"{case}\n{result.message()}\nreproduce with: {line}")
        pytest.fail(f"{case}\n{result.message()}\nreproduce with: {line}", pytrace=False)

    try:
        if ctx.options.repro:
            case = Case.parse(spec.name, dtype, ctx.options.repro)
            try:
                spec.check_case(case)
            except ValueError as exc:
                pytest.fail(f"--repro={ctx.options.repro}: {exc}", pytrace=False)
            check(case)
            return
        strategy = case_strategy(spec, dtype, backend.name, large=ctx.large_shapes)
        check._hypothesis_internal_add_digest = f"{spec.name}-{dtype}".encode()
        run = given(strategy)(check)
        for ex in reversed(spec.examples):
            run = example(Case(kernel=spec.name, dtype=dtype, **ex))(run)
        if ctx.profile == "validation":
            run = seed(VALIDATION_SEED)(run)
        run()
    finally:
        # Hypothesis replays the minimal failing example last: record that one only.
        records.extend(last_failure)
