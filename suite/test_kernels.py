"""Device-generic tests: every registered kernel x dtype, cases drawn by Hypothesis.

Parametrized by the plugin (``kernel_dtype``) from the kernel registry; adding a
kernel is adding a module under kernels/, not editing this file.
"""

from __future__ import annotations

import os
import shlex
import time
import warnings
import zlib

import pytest
from hypothesis import example, given, seed, settings

from kernels.spec import Case
from suite import compat
from suite.checks import autotune, launches, reach
from suite.checks.harness import CaseResult, record, run_case
from suite.checks.strategies import VALIDATION_SEED, case_strategy
from suite.plugin.context import CONTEXT
from suite.plugin.recorder import KNOWN_PROPERTY
from suite.session import options, results
from suite.workers import crash, gpu_share, parts


def repro_line(request: pytest.FixtureRequest, case: Case, extra_args: list[str] | tuple[str, ...] = ()) -> str:
    ctx = request.config.stash[CONTEXT]
    parts = [*options.repro_prefix(ctx, request.node.nodeid), *extra_args, f"--repro={case.spec_string()}"]
    return " ".join(shlex.quote(p) for p in parts)


def case_repro(request: pytest.FixtureRequest, spec, result: CaseResult) -> str:
    ctx = request.config.stash[CONTEXT]
    return repro_line(request, result.case, options.config_args(spec, result.config, ctx.backend.family))


def repro_case(spec, dtype: str, repro: str) -> Case:
    """The case ``--repro`` names, which must be one of this kernel's (the test fails saying why not)."""
    case = Case.parse(spec.name, dtype, repro)
    try:
        spec.check_case(case)
    except ValueError as exc:
        pytest.fail(f"--repro={repro}: {exc}", pytrace=False)
    return case


def forced_config(request: pytest.FixtureRequest) -> dict | None:
    return request.config.stash[CONTEXT].options.config


# How long Hypothesis may shrink a failing case, per profile (env SUITE_SHRINK_SECONDS overrides): past it the
# smallest failing case found so far is reported (with the first one), instead of minutes of interpreted launches.
SHRINK_SECONDS = {"dev": 30.0, "ci": 30.0, "validation": 30.0, "nightly": 120.0}


def shrink_seconds(profile: str) -> float:
    raw = os.environ.get("SUITE_SHRINK_SECONDS")
    return float(raw) if raw else SHRINK_SECONDS.get(profile, 60.0)


class ShrinkBudget:
    """After the first failure, shrinking may go on for ``seconds``; past that, every case that has not failed
    passes untested, so Hypothesis stops and replays its smallest failing one. Every case that failed still
    runs: Hypothesis's final replay may pick any of them, and a replay that passed would read as a flaky test."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started: float | None = None
        self.first: str | None = None  # the first failing case's reproduction line
        self.best: Case | None = None  # the latest failing case (Hypothesis only moves to simpler ones)
        self.failing: list[Case] = []
        self.config: dict | None = None

    def failed(self, case: Case, config: dict, repro: str) -> None:
        if self.started is None:
            self.started, self.first = time.monotonic(), repro
        self.best, self.config = case, dict(config)
        if case not in self.failing:
            self.failing.append(case)

    def expired(self) -> bool:
        return self.started is not None and time.monotonic() - self.started > self.seconds

    def skip(self, case: Case) -> bool:
        return self.expired() and case not in self.failing

    def note(self) -> str:
        if not self.expired():
            return ""
        return (f"\n(shrinking stopped after {self.seconds:g} s; this is the smallest failing case found by then. The "
                f"first failing case: {self.first})")


def test_matches_reference(kernel_dtype, request: pytest.FixtureRequest) -> None:
    """The kernel's outputs lie within the tolerance rule's bound of the float64 reference, under its own config
    and the others each case samples; every output element was written; NaN/inf appear exactly where the
    reference has them; every declared code path was exercised."""
    spec, dtype, known_issue = kernel_dtype
    part, split = getattr(kernel_dtype, "part", 0), getattr(kernel_dtype, "parts", 1)  # suite/workers/parts.py
    ctx = request.config.stash[CONTEXT]
    backend = ctx.backend
    records: list[dict] = []
    request.node.user_properties.append((results.CASES_PROPERTY, records))
    if known_issue:
        request.node.user_properties.append((KNOWN_PROPERTY, known_issue.as_record()))
    coverage = reach.Coverage(spec, dtype, backend.family)
    request.node.user_properties.append((reach.COVERAGE_PROPERTY, [coverage.record()]))
    last_failure: list[dict] = []
    forced = forced_config(request)
    if forced is not None and (problem := options.config_problem(spec, forced)):
        pytest.fail(f"--config: {problem}", pytrace=False)
    every_config = ctx.large_shapes and backend.name != "interpret"  # nightly on a GPU: the whole config space
    shrink = ShrinkBudget(shrink_seconds(ctx.profile))
    too_large: list[str] = []
    last = bool(ctx.options.repro)  # a part that adds up every part's coverage (a --repro case is a test of its own)
    elements = [0, 0]  # cases passed, and the output elements they compared
    launches.take_untuned()

    def fail_if_nothing_compared() -> None:
        if elements[0] and not elements[1]:
            pytest.fail(f"{spec.name}[{dtype}]: all {elements[0]} case(s) had empty outputs (no element), so nothing "
                        f"was compared and the test proves nothing: the dims allow only empty tensors here (give a "
                        f"Dim sizes above 0), or make_outputs returns empty tensors", pytrace=False)

    def warn_untuned() -> None:
        for name, count in sorted(launches.take_untuned().items()):
            warnings.warn(f"{spec.name}[{dtype}]: autotuned kernel {name} ran the first of its {count} configs in "
                          f"every case: the spec's configs name none of its parameters, so its other configs were "
                          f"never run. List it in jit_fn/jit_fns (the spec then takes its configs), or give "
                          f"configs=autotune_configs({name})", UserWarning, stacklevel=1)

    def fail_if_too_large() -> None:
        if too_large:
            pytest.fail(f"{len(too_large)} case(s) too large for this GPU (out of memory with the GPU to themselves; "
                        f"not a wrong result): lower the dims' gpu_max for this GPU or run on a larger one.\n"
                        f"{too_large[0]}", pytrace=False)

    # Parts (suite/workers/parts.py): with the same cases drawn in every part, each runs those at its positions; with random
    # draws, each part draws its own share of the budget. (Kept out of ``drawn``: Hypothesis seeds a derandomized
    # run from the test function's source, so the draws stay those of the whole test as it was.)
    same_draws = split > 1 and (settings.default.derandomize or ctx.profile == "validation")
    position = iter(range(1 << 62))

    def check(case: Case, configs: list[dict] | None = None) -> None:
        if configs is None and split > 1:  # a drawn case (the path search and --repro pass their configs)
            at = next(position)
            if shrink.started is None and (same_draws or at < len(spec.examples)) and not parts.owns(at, part, split):
                return  # another part's case
        if shrink.skip(case):
            return
        if configs is None:
            primary = forced or autotune.choose_config(spec, case.dtype, case.shape, backend)
            configs = [primary] + ([] if forced else reach.extra_configs(spec, case, backend.family, primary,
                                                                          every_config))
            if shrink.config is not None and shrink.config not in configs:  # keep testing the config that failed
                configs.append(shrink.config)
        result = gpu_share.run_with_retry(lambda: run_case(spec, case, backend, configs[0],
                                                           extra_configs=configs[1:]), backend.device)
        line = case_repro(request, spec, result)
        rec = record(result, request.node.nodeid, line)
        if result.failure == "too_large":  # not the kernel's fault: recorded, and the other cases still run
            records.append(rec)
            too_large.append(f"{case}: {result.message()}\nreproduce with: {line}")
            return
        if result.failure == "oom_held":  # other processes held the memory: not run, counted in gpu_share
            warnings.warn(f"{case}: {result.message()[:600]}", UserWarning, stacklevel=1)
            return
        if result.passed:
            if not last_failure:  # passes seen while shrinking a failure are not cases of the run
                elements[0] += 1
                elements[1] += result.elements
                records.append(rec)
                coverage.add(case, result.ran, result.skipped_configs)
            return
        last_failure[:] = [rec]
        shrink.failed(case, result.config, line)
        # Shrinking would only repeat these; and a known issue's first failing case is all its xfail needs.
        if result.failure in ("fault", "oom", "spec", "interpreter") or known_issue:
            if known_issue:  # its paths were never going to be taken: the kernel's reach leaves this dtype out
                coverage.stopped_by = f"known issue {known_issue.id}"
            raise crash.CaseAborted(f"{case}\n{result.message()}\nreproduce with: {line}")
        pytest.fail(f"{case}\n{result.message()}\nreproduce with: {line}{shrink.note()}", pytrace=False)

    try:
        if ctx.options.repro:
            case = repro_case(spec, dtype, ctx.options.repro)
            check(case, [forced or autotune.choose_config(spec, case.dtype, case.shape, backend)])
            fail_if_too_large()
            fail_if_nothing_compared()
            return
        strategy = case_strategy(spec, dtype, backend.name, large=ctx.large_shapes)

        def drawn(case: Case) -> None:
            check(case)

        compat.add_digest(drawn, f"{spec.name}-{dtype}")
        run = given(strategy)(drawn)
        if split > 1 and not same_draws:
            run = settings(settings.default, max_examples=-(-settings.default.max_examples // split))(run)
            if (forced_seed := compat.forced_seed()) is not None:
                run = seed(zlib.crc32(f"{forced_seed}-part{part}".encode()))(run)
        for ex in reversed(spec.examples):
            run = example(Case(kernel=spec.name, dtype=dtype, **ex))(run)
        if ctx.profile == "validation":
            run = seed(VALIDATION_SEED)(run)
        failed = True
        try:
            run()
            failed = False
        finally:
            if split > 1:  # the last part to finish adds up every part's coverage
                last, failed = parts.finish(request.config, request.node.nodeid, part, coverage, failed)
        if forced is None and not failed and (split == 1 or last):
            reach_missing_paths(spec, backend, strategy, coverage, check)
        fail_if_too_large()
        fail_if_nothing_compared()
    finally:
        warn_untuned()
        # Hypothesis replays the minimal failing example last: record that one only.
        records.extend(last_failure)
        request.node.user_properties[:] = [p for p in request.node.user_properties if p[0] != reach.COVERAGE_PROPERTY]
        if split == 1 or last:  # a part's coverage is recorded once, added up, by the last part
            request.node.user_properties.append((reach.COVERAGE_PROPERTY, [coverage.record()]))


def reach_missing_paths(spec, backend, strategy, coverage: reach.Coverage, check) -> None:
    """Run a case for each declared path the drawn cases missed; fail for a path no allowed case reaches."""
    pool = [spec.default_config_for(backend.family), *reach.config_space(spec, backend.family)]
    for path in coverage.missing():
        found = reach.find_case(strategy, path, pool)
        if found is None:
            coverage.unreachable.append(path.name)
            continue
        case, config = found
        coverage.searched.append(path.name)
        check(case, [config])
    if coverage.unreachable:
        pytest.fail(f"{spec.name}: declared path(s) {coverage.unreachable} are taken by no case the dims allow on "
                    f"{backend.name} with any {backend.family} config; widen the dims, add a config, or drop the "
                    f"path", pytrace=False)
