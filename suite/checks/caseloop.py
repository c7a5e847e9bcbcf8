"""A test's life over its cases: what it keeps from case to case and the steps it takes, as one class.

``CaseLoop`` holds what every generic test keeps over its cases (the kernel x dtype and its known issue, the shrink
budget, the intermittent case once found, the reruns that measure how often a case is wrong) and the steps the
reference test (suite/checks/reference_loop.py) and the property test (suite/checks/property_loop.py) share: drawing
cases with Hypothesis, replaying an intermittent case as found, reproduction lines. The test functions in
suite/test_kernels.py and suite/test_properties.py only build a loop, run it and hand its records to pytest.

Hypothesis derandomizes a test's draws from the source of the function it is given (and a key,
``compat.add_digest``): the function each loop hands it is a two-line ``drawn`` that calls the loop's own ``check``,
so that changing how a case is checked never changes which cases are drawn.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import example, given, seed, settings
from hypothesis.errors import Flaky

from kernels.spec import Case, KernelSpec
from reports.failure_kinds import FailureKind as K
from suite import compat
from suite.checks.strategies import VALIDATION_SEED, case_strategy
from suite.session import options

# How long Hypothesis may shrink a failing case, per profile (env SUITE_SHRINK_SECONDS overrides): past it the
# smallest failing case found so far is reported (with the first one), instead of minutes of interpreted launches.
SHRINK_SECONDS = {"dev": 30.0, "ci": 30.0, "validation": 30.0, "nightly": 120.0}

# A case's runs end early at a failure that is not a wrong value: the case is aborted, never called intermittent.
ABORTING = (K.FAULT, K.OOM, K.OOM_HELD, K.SPEC, K.INTERPRETER, K.TOO_LARGE)
# --repro-runs suggested for an intermittent case: enough runs to see it wrong at least once with this probability,
# were it wrong at the rate measured.
REPRO_CONFIDENCE = 0.99


def shrink_seconds(profile: str) -> float:
    raw = os.environ.get("SUITE_SHRINK_SECONDS")
    return float(raw) if raw else SHRINK_SECONDS.get(profile, 60.0)


class ShrinkBudget:
    """After the first failure, shrinking may go on for ``seconds``; past that, every case that has not failed
    passes untested, so Hypothesis stops and replays its smallest failing one. Every case that failed still
    runs: Hypothesis's final replay may pick any of them, and a replay that passed would read as a flaky test.

    A failing case whose every dim is at its ``floor`` (the least the dim can be: nothing smaller can fail) ends
    shrinking at once, as the deadline would: Hypothesis would otherwise go on drawing and shrinking other cases
    for the whole budget, each a launch."""

    def __init__(self, seconds: float, floor: dict[str, int] | None = None) -> None:
        self.seconds = seconds
        self.floor = floor or {}
        self.started: float | None = None
        self.first: str | None = None  # the first failing case's reproduction line
        self.best: Case | None = None  # the latest failing case (Hypothesis only moves to simpler ones)
        self.failing: list[Case] = []
        self.config: dict | None = None
        self.smallest = False  # a failing case with every dim at its floor was found

    def failed(self, case: Case, config: dict, repro: str) -> None:
        if self.started is None:
            self.started, self.first = time.monotonic(), repro
        self.best, self.config = case, dict(config)
        if case not in self.failing:
            self.failing.append(case)
        if self.floor and all(case.shape.get(name, least) <= least for name, least in self.floor.items()):
            self.smallest = True

    def out_of_time(self) -> bool:
        return self.started is not None and time.monotonic() - self.started > self.seconds

    def expired(self) -> bool:
        return self.smallest or self.out_of_time()

    def skip(self, case: Case) -> bool:
        return self.expired() and case not in self.failing

    def restart_clock(self) -> None:
        """Reruns that measured how often a case is wrong are not shrinking's time."""
        if self.started is not None:
            self.started = time.monotonic()

    def note(self, repro: str | None = None) -> str:
        """Why the reported case may not be the smallest: shrinking ran out of time (and, where it is another
        case than ``repro``, the first failing one's reproduction line); nothing where it reached the floor."""
        if self.smallest or not self.out_of_time():
            return ""
        first = "" if self.first == repro else f" The first failing case: {self.first}"
        return (f"\n(shrinking stopped after {self.seconds:g} s; this is the smallest failing case found by "
                f"then.{first})")


def dim_floor(spec: KernelSpec, batch_least: int = 0) -> dict[str, int]:
    """The least each dim of ``spec`` can be (its smallest choice, else its minimum); the batch dim at least
    ``batch_least``, where a test raises it to that."""
    floor = {d.name: min(d.choices) if d.choices else d.min for d in spec.dims}
    if spec.batch_dim in floor:
        floor[spec.batch_dim] = max(floor[spec.batch_dim], batch_least)
    return floor


@dataclass
class Rate:
    """How many of a case's runs gave a wrong result."""

    wrong: int
    runs: int

    @property
    def intermittent(self) -> bool:
        return 0 < self.wrong < self.runs

    def text(self) -> str:
        return f"wrong in {self.wrong} of {self.runs} runs"

    def runs_to_try(self) -> int:
        if self.wrong <= 0:
            return self.runs
        if self.wrong >= self.runs:
            return 1
        return max(2, math.ceil(math.log(1 - REPRO_CONFIDENCE) / math.log(1 - self.wrong / self.runs)))

    def record(self) -> dict:
        return {"wrong": self.wrong, "runs": self.runs}

    def repro(self, line: str) -> tuple[str, str]:
        """(the reproduction line's lead-in, the line with --repro-runs)."""
        tries = self.runs_to_try()
        return (f"reproduce with (intermittent: {self.text()}; try --repro-runs={tries})",
                f"{line} --repro-runs={tries}")


def intermittent_text(what: str, rate: Rate, config: dict | None, detail: str, line: str) -> str:
    """The failure of an intermittent case: what, how often it was wrong and under which config, one wrong run's
    detail, and a reproduction line that runs the case often enough."""
    lead, again = rate.repro(line)
    under = f" under config {json.dumps(config, sort_keys=True)}" if config else ""
    return f"{what}\nintermittent: {rate.text()} of this case{under}; one wrong run:\n{detail}\n{lead}: {again}"


def flaky_summary(exc: BaseException) -> str:
    """Hypothesis's complaint about an unreliable test, as one line without its class name or tracebacks."""
    text = str(exc).splitlines()[0] if str(exc).strip() else "a failure did not happen again"
    return text.replace(type(exc).__name__, "").strip()


def fail(text: str, problems: list[str] | None = None) -> None:
    """Fail the test with ``text``; ``problems``: each problem of it on its own, without reproduction lines and
    notes, which a known issue's pattern must describe one by one (suite/plugin/hooks.py). None: the text is one."""
    try:
        pytest.fail(text, pytrace=False)
    except pytest.fail.Exception as exc:
        if problems is not None:
            exc.problems = list(problems)  # read by suite/session/known_issues.py: problems_of
        raise


class CaseLoop:
    """One kernel x dtype's test over its cases. Subclasses give ``check(case)`` (one case, classified: it returns
    when the case passed, fails the test otherwise) and what the test concludes (``finish``)."""

    def __init__(self, kernel_dtype: Any, request: pytest.FixtureRequest, ctx: Any, batch_least: int = 0) -> None:
        self.spec, self.dtype, self.known_issue = kernel_dtype
        self.request = request
        self.ctx = ctx
        self.backend = ctx.backend
        self.forced: dict | None = ctx.options.config
        self.shrink = ShrinkBudget(shrink_seconds(ctx.profile), dim_floor(self.spec, batch_least))
        self.reruns = options.intermittent_runs()
        # The intermittent case once found, and its failure: it alone fails from then on, every other case passes
        # untested, so that Hypothesis's shrinking and replay see one failure that always happens.
        self.sticky: tuple[Case, str] | None = None
        self.sticky_problems: list[str] | None = None  # the sticky failure's problems (fail's ``problems``)

    # --- reproduction lines ---------------------------------------------------------------------------------------
    def repro_line(self, case: Case, extra_args: list[str] | tuple[str, ...] = ()) -> str:
        prefix = options.repro_prefix(self.ctx, self.request.node.nodeid)
        return " ".join(shlex.quote(p) for p in [*prefix, *extra_args, f"--repro={case.spec_string()}"])

    def config_line(self, case: Case, config: dict) -> str:
        """The reproduction line of ``case`` under ``config``."""
        return self.repro_line(case, options.config_args(self.spec, config, self.backend.family))

    def repro_case(self) -> Case:
        """The case ``--repro`` names, which must be one of this kernel's (the test fails saying why not)."""
        case = Case.parse(self.spec.name, self.dtype, self.ctx.options.repro)
        try:
            self.spec.check_case(case)
        except ValueError as exc:
            fail(f"--repro={self.ctx.options.repro}: {exc}")
        return case

    # --- the intermittent case ------------------------------------------------------------------------------------
    def replaying(self, case: Case) -> bool:
        """Whether ``case`` is not to be checked: once an intermittent case is found, it fails as found and every
        other case passes untested; past the shrink budget, every case that never failed passes untested."""
        if self.sticky is not None:
            if case == self.sticky[0]:
                fail(self.sticky[1], self.sticky_problems)
            return True
        return self.shrink.skip(case)

    def stick(self, case: Case, text: str, problems: list[str] | None = None) -> None:
        self.sticky = (case, text)
        self.sticky_problems = problems
        fail(text, problems)

    # --- drawing cases --------------------------------------------------------------------------------------------
    def strategy(self):
        return case_strategy(self.spec, self.dtype, self.backend.name, large=self.ctx.large_shapes)

    def with_examples(self, run: Callable[[], None]) -> Callable[[], None]:
        for ex in reversed(self.spec.examples):
            run = example(Case(kernel=self.spec.name, dtype=self.dtype, **ex))(run)
        return run

    def drive(self, run: Callable[[], None]) -> str | None:
        """Run Hypothesis's test; a failure that did not happen again when Hypothesis replayed it (Flaky) is never a
        flaky-test dump: its one-line summary is returned for ``unreliable`` to judge."""
        try:
            run()
        except Flaky as exc:
            return flaky_summary(exc)
        return None

    @staticmethod
    def given(strategy, check: Callable[[Case], None], key: str):
        """``check`` under Hypothesis, drawing from ``strategy``, derandomized by ``key`` and the source below."""

        def drawn(case: Case) -> None:
            check(case)

        compat.add_digest(drawn, key)
        return given(strategy)(drawn)

    @staticmethod
    def seeded(run: Callable[[], None], value: int | None) -> Callable[[], None]:
        return run if value is None else seed(value)(run)

    def validation_seed(self) -> int | None:
        return VALIDATION_SEED if self.ctx.profile == "validation" else None

    def settings_for(self, max_examples: int):
        return settings(settings.default, max_examples=max_examples)
