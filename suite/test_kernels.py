"""Device-generic tests: every registered kernel x dtype, cases drawn by Hypothesis.

Parametrized by the plugin (``kernel_dtype``) from the kernel registry; adding a
kernel is adding a module under kernels/, not editing this file.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import time
import warnings
import zlib
from dataclasses import dataclass

import pytest
from hypothesis import example, given, seed, settings
from hypothesis.errors import Flaky

from kernels.spec import Case, KernelSpec
from suite import compat
from suite.checks import autotune, launches, reach, spec_code
from suite.checks.harness import CaseResult, record, run_case
from suite.checks.strategies import VALIDATION_SEED, case_strategy, drawn_value_classes
from suite.plugin.context import CONTEXT
from suite.plugin.recorder import KNOWN_PROPERTY
from suite.session import known_issues, options, results
from suite.tools import export
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


# A case's runs end early at a failure that is not a wrong value: the case is aborted, never called intermittent.
ABORTING = ("fault", "oom", "oom_held", "spec", "interpreter", "too_large")
# --repro-runs suggested for an intermittent case: enough runs to see it wrong at least once with this probability,
# were it wrong at the rate measured.
REPRO_CONFIDENCE = 0.99


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


@dataclass
class Wrong:
    """A case that gave a wrong result: the config that was wrong, the failure's detail and whole text, its record,
    and how often it was wrong so far."""

    case: Case
    config: dict
    message: str
    text: str
    rec: dict
    rate: Rate


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
    to_export: list[tuple] = []  # the last failing case (Hypothesis replays the minimal one last), for --export-failures
    forced = forced_config(request)
    if forced is not None and (problem := options.config_problem(spec, forced)):
        pytest.fail(f"--config: {problem}", pytrace=False)
    every_config = ctx.large_shapes and backend.name != "interpret"  # nightly on a GPU: the whole config space
    shrink = ShrinkBudget(shrink_seconds(ctx.profile), dim_floor(spec))
    too_large: list[str] = []
    last = bool(ctx.options.repro)  # a part that adds up every part's coverage (a --repro case is a test of its own)
    elements = [0, 0]  # cases passed, and the output elements they compared
    loose: list[str] = []  # passed cases whose tolerance's magnitude would pass a result off by 50%
    judged = [0]  # passed cases where it could be judged (a reference not all zero)
    launches.take_untuned()
    launches.take_launched()
    launches.take_widest()

    compared: dict[str, int] = {}  # each declared output's elements over the passed cases
    largest: list = [None, -1]  # the passed case with the most output elements, and that count
    smallest: list = [None, -1]  # and with the fewest

    def fail_if_loose_everywhere() -> None:
        if loose and len(loose) == judged[0]:
            pytest.fail(f"broken spec: in every one of the {judged[0]} case(s) the tolerance would pass a result off "
                        f"by 50%, so the cases prove nothing; the first: {loose[0]}", pytrace=False)

    def fail_if_nothing_compared() -> None:
        never = [name for name in spec.outputs if elements[1] and name in compared and not compared[name]]
        if never:
            pytest.fail(f"{spec.name}[{dtype}]: output(s) {never} had no element in any of the {elements[0]} case(s), "
                        f"so they were never compared and prove nothing: make_outputs or the reference gives them "
                        f"empty tensors, or their dims allow only empty sizes here", pytrace=False)
        if elements[0] and not elements[1]:
            pytest.fail(f"{spec.name}[{dtype}]: all {elements[0]} case(s) had empty outputs (no element), so nothing "
                        f"was compared and the test proves nothing: the dims allow only empty tensors here (give a "
                        f"Dim sizes above 0), or make_outputs returns empty tensors", pytrace=False)

    def fail_if_never_launched() -> None:  # a test split into parts: each part's own count cannot judge it
        if elements[1] and split == 1 and not launches.take_launched():
            if spec.untested_reason:  # the spec says why: not tested, never passed
                pytest.skip(f"not tested: none of the {elements[0]} case(s) of {spec.name}[{dtype}] launched a "
                            f"@triton.jit function ({spec.untested_reason})")
            pytest.fail(launches.never_launched(spec.name, dtype, elements[0]), pytrace=False)
        widest = launches.take_widest()
        if elements[1] and split == 1 and (single := launches.one_program_grids(spec, dtype, widest, elements[0])):
            pytest.fail(single, pytrace=False)

    def warn_untuned() -> None:
        coverage.untuned = launches.take_untuned()  # the summary names them (suite/checks/launches.py: untuned_lines)
        for name, count in sorted(coverage.untuned.items()):
            warnings.warn(f"{spec.name}[{dtype}]: autotuned kernel {name} ran the first of its {count} configs in "
                          f"every case: the spec's configs name none of its parameters, so its other configs were "
                          f"never run: {launches.untuned_advice(name)}", UserWarning, stacklevel=1)

    def fail_if_too_large() -> None:
        """Too-large cases are not run (counted and listed in the run file's gpu_share); a test none of whose cases
        could run is skipped, saying why. Never a failure: what does not fit is the suite's draw, not the kernel."""
        if too_large and not elements[0]:
            pytest.skip(f"not run: all {len(too_large)} case(s) too large for this GPU (out of memory with the GPU to "
                        f"themselves; not a wrong result): lower the dims' gpu_max for this GPU or run on a larger "
                        f"one.\n{too_large[0]}")
        if too_large:
            warnings.warn(f"{len(too_large)} case(s) not run, too large for this GPU (not a wrong result); the first: "
                          f"{too_large[0][:600]}", UserWarning, stacklevel=1)

    # Parts (suite/workers/parts.py): with the same cases drawn in every part, each runs those at its positions; with random
    # draws, each part draws its own share of the budget. (Kept out of ``drawn``: Hypothesis seeds a derandomized
    # run from the test function's source, so the draws stay those of the whole test as it was.)
    same_draws = split > 1 and (settings.default.derandomize or ctx.profile == "validation")
    position = iter(range(1 << 62))

    # Cases that gave a wrong result, and how often so far: one wrong once and right since is intermittent.
    wrong_before: list[Wrong] = []
    sticky: list[tuple[Case, str]] = []  # the intermittent case once found, and its failure: it alone fails from then on
    reruns = options.intermittent_runs()
    # Cases that failed as the known issue describes (their record, their text): the other cases run on, and any
    # other failure fails the test (suite/plugin/hooks.py keeps the xfail only for a failure the issue describes).
    known: list[tuple[dict, str]] = []

    def end_known() -> None:
        if known:
            records.extend(known_issues.first_each(known_issue, known)[1:])  # several issues: each one's first case
            coverage.stopped_by = f"known issue {known_issue.id}"  # its dtype's paths were not all reachable
            raise known_issues.KnownIssueFailure(
                f"known issue {known_issue.id}: {len(known)} case(s) failed as it describes (failure_pattern "
                f"{known_issue.failure_pattern!r}); the first:\n{known[0][1]}")

    def run_once(case: Case, configs: list[dict]) -> CaseResult:
        return gpu_share.run_with_retry(lambda: run_case(spec, case, backend, configs[0], extra_configs=configs[1:]),
                                        backend.device, case)

    def measure(case: Case, config: dict, rate: Rate) -> Rate:
        """``rate`` plus ``reruns`` more runs of the case under ``config`` (the one that was wrong), on inputs drawn
        again from its seed; a run that breaks otherwise (a fault, out of memory) ends the count."""
        wrong, runs = rate.wrong, rate.runs
        for _ in range(reruns):
            again = run_once(case, [config])
            if not again.passed and again.failure in ABORTING:
                break
            wrong, runs = wrong + (not again.passed), runs + 1
        return Rate(wrong, runs)

    def fail_intermittent(w: Wrong, rate: Rate) -> None:
        """From now on this case fails as found without running again, and every other case passes untested: so
        Hypothesis's shrinking and replay see one failure that always happens, never a flaky test."""
        text = intermittent_text(str(w.case), rate, w.config, w.message, w.rec["repro"])
        first = wrong_before[0] if wrong_before else w
        if first.case != w.case and first.rate.wrong == first.rate.runs:
            text += (f"\n(the first failing case was wrong in every run, {first.rate.text()}: {first.case}; "
                     f"reproduce with: {first.rec['repro']})")
        rec = {**w.rec, "failure": "intermittent", "intermittent": rate.record(),
               "repro": rate.repro(w.rec["repro"])[1],
               "message": f"intermittent ({rate.text()}): {w.rec['message'] or ''}"[:2000]}
        last_failure[:] = [rec]
        sticky[:] = [(w.case, text)]
        pytest.fail(text, pytrace=False)

    def check(case: Case, configs: list[dict] | None = None, runs: int = 1) -> None:
        if configs is None and split > 1:  # a drawn case (the path search and --repro pass their configs)
            at = next(position)
            if shrink.started is None and (same_draws or at < len(spec.examples)) and not parts.owns(at, part, split):
                return  # another part's case
        if sticky:
            if case == sticky[0][0]:
                pytest.fail(sticky[0][1], pytrace=False)
            return
        if shrink.skip(case):
            return
        if configs is None:
            primary = forced or autotune.choose_config(spec, case.dtype, case.shape, backend)
            configs = [primary] + ([] if forced else reach.extra_configs(spec, case, backend.family, primary,
                                                                          every_config))
            if shrink.config is not None and shrink.config not in configs:  # keep testing the config that failed
                configs.append(shrink.config)
        result = run_once(case, configs)
        repeated: Rate | None = None
        if runs > 1:  # --repro-runs: the case's runs count as its classification
            seen = [result]
            while len(seen) < runs and not (seen[-1].failure in ABORTING and not seen[-1].passed):
                seen.append(run_once(case, configs))
            wrong = [r for r in seen if not r.passed]
            result = next((r for r in wrong if r.failure in ABORTING), wrong[0] if wrong else seen[0])
            repeated = Rate(len(wrong), len(seen))
        line = case_repro(request, spec, result)
        rec = record(result, request.node.nodeid, line)
        if result.failure == "too_large":  # not run, never the kernel's fault: listed, and the other cases still run
            gpu_share.share().note_too_large(case, getattr(result, "footprint", 0), result.message(), line)
            too_large.append(f"{case}: {result.message()}\nreproduce with: {line}")
            return
        if result.failure == "not_checkable":  # a construct the interpreter evaluates otherwise: not run, saying why
            pytest.skip(f"{result.message()}\n{case}\nreproduce with: {line}")
        if result.failure == "oom_held":  # other processes held the memory: not run, counted and listed in gpu_share
            gpu_share.share().note_held(case, getattr(result, "footprint", 0), result.message(), line)
            warnings.warn(f"{case}: {result.message()[:600]}\nreproduce with: {line}", UserWarning, stacklevel=1)
            return
        if result.passed:
            earlier = next((w for w in wrong_before if w.case == case), None)
            if earlier is not None:  # wrong before, right now (Hypothesis's replay of it, say): how often is it wrong?
                rate = measure(case, earlier.config, Rate(earlier.rate.wrong,
                                                          earlier.rate.runs + (earlier.config in result.ran)))
                if rate.intermittent:
                    fail_intermittent(earlier, rate)
                last_failure[:] = [earlier.rec]
                pytest.fail(earlier.text, pytrace=False)  # wrong in every run under its config: the failure as it was
            if not last_failure:  # passes seen while shrinking a failure are not cases of the run
                if largest[0] is None or result.elements > largest[1]:
                    largest[:] = [case, result.elements]
                if smallest[0] is None or result.elements < smallest[1]:
                    smallest[:] = [case, result.elements]
                elements[0] += 1
                elements[1] += result.elements
                for name, n in result.compared.items():
                    compared[name] = compared.get(name, 0) + n
                try:
                    coverage.add(case, result.ran, result.skipped_configs)
                except spec_code.SpecRaised as exc:  # a CodePath's taken raised: the spec's, in one line
                    broken = f"broken spec: {exc}"
                    last_failure[:] = [{**rec, "outcome": "failed", "failure": "spec", "message": broken}]
                    raise crash.CaseAborted(f"{case}\n{broken}\nreproduce with: {line}") from None
                records.append(rec)
                if result.loose != "" and result.elements:
                    judged[0] += 1
                    if result.loose:
                        loose.append(f"{case}: {result.loose}")
            return
        if known_issue and result.failure not in ("fault", "oom") and known_issue.covers(result.message()):
            known.append((rec, f"{case}\n{result.message()}\nreproduce with: {line}"))  # expected: on to the next
            return
        last_failure[:] = [rec]
        if result.failure not in ("spec", "interpreter", "oom", "oom_held", "too_large", "fault"):  # the kernel's findings
            to_export[:] = [(case, dict(result.config), result.message(), line, result.failure)]
        shrink.failed(case, result.config, line)
        # Shrinking would only repeat these.
        if result.failure in ("fault", "oom", "spec", "interpreter"):
            if known_issue and known_issue.covers(result.message()):  # the kernel's reach leaves this dtype out
                coverage.stopped_by = f"known issue {known_issue.id}"
            raise crash.CaseAborted(f"{case}\n{result.message()}\nreproduce with: {line}")
        text = f"{case}\n{result.message()}\nreproduce with: {line}"
        if repeated is None and not wrong_before:  # the test's first wrong result: how often is it wrong?
            repeated = measure(case, result.config, Rate(1, 1))
            if shrink.started is not None:  # the reruns are not shrinking's time
                shrink.started = time.monotonic()
        w = Wrong(case, dict(result.config), result.message(), text, rec, repeated or Rate(1, 1))
        wrong_before.append(w)
        if w.rate.intermittent:
            fail_intermittent(w, w.rate)
        if runs > 1:
            text = f"{case}\n{result.message()}\n({w.rate.text()})\nreproduce with: {line}"
        pytest.fail(f"{text}{shrink.note(line)}", pytrace=False)

    def fail_unreliable(why: str) -> None:
        """Hypothesis found a failure that did not happen again (a safety net: each case that was wrong and then
        right is classified as it happens): the verdict of the test's first wrong case, from its runs."""
        if sticky:
            pytest.fail(sticky[0][1], pytrace=False)
        if not wrong_before:
            pytest.fail(f"intermittent: a failure of this test did not happen again when its case ran again "
                        f"({why})", pytrace=False)
        first = wrong_before[0]
        if first.rate.intermittent:
            fail_intermittent(first, first.rate)
        last_failure[:] = [first.rec]
        pytest.fail(f"{first.text}\n({first.rate.text()} of this case; another failure did not happen again: "
                    f"{why})", pytrace=False)

    try:
        if ctx.options.repro:
            case = repro_case(spec, dtype, ctx.options.repro)
            check(case, [forced or autotune.choose_config(spec, case.dtype, case.shape, backend)],
                  runs=ctx.options.repro_runs)
            fail_if_too_large()
            fail_if_nothing_compared()
            end_known()
            return  # one case proves nothing about a magnitude's looseness (fail_if_loose_everywhere)
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
        unreliable: str | None = None
        try:
            try:
                run()
                failed = False
            except Flaky as exc:  # a safety net: a failure that did not happen again is never a flaky-test dump
                unreliable = flaky_summary(exc)
        finally:
            if split > 1:  # the last part to finish adds up every part's coverage
                last, failed = parts.finish(request.config, request.node.nodeid, part, coverage, failed)
        if unreliable is not None:
            fail_unreliable(unreliable)
        if forced is None and not failed and not known and (split == 1 or last):
            reach_missing_paths(spec, backend, strategy, coverage, check)
            for label, case in reach.find_classes_never_drawn(  # every value class and layout at least once
                    strategy, coverage, drawn_value_classes(spec, dtype, backend.name), spec.layouts, smallest[0]):
                coverage.searched.append(label)
                check(case)
            if largest[0] is not None and (never := reach.configs_never_run(spec, backend.family, coverage)):
                check(largest[0], never)  # every config of the family at least once (suite/checks/reach.py)
        fail_if_too_large()
        fail_if_nothing_compared()
        fail_if_never_launched()
        fail_if_loose_everywhere()
        end_known()
    finally:
        warn_untuned()
        if to_export and ctx.options.export_failures is not None:
            export_failure(spec, backend, ctx.options.export_failures, request.node.nodeid, *to_export[0])
        # Hypothesis replays the minimal failing example last: record that one only (else a known issue's first).
        records.extend(last_failure or [rec for rec, _ in known[:1]])
        if last_failure and not coverage.stopped_by:  # stopped at its first failing case: no later case took a path
            coverage.stopped_by = "a failure"
        request.node.user_properties[:] = [p for p in request.node.user_properties if p[0] != reach.COVERAGE_PROPERTY]
        if split == 1 or last:  # a part's coverage is recorded once, added up, by the last part
            request.node.user_properties.append((reach.COVERAGE_PROPERTY, [coverage.record()]))


def export_failure(spec, backend, directory, nodeid: str, case: Case, config: dict, message: str, line: str,
                   failure: str | None) -> None:
    """--export-failures: the case's folder (suite/tools/export.py), named on the terminal; a case that cannot be
    exported is a warning, never another failure of the test."""
    try:
        folder = export.export_case(spec, case, config, backend, directory, nodeid, message, line, failure)
    except Exception as exc:  # noqa: BLE001 - the test's own failure stands; the export's is said beside it
        warnings.warn(f"--export-failures: {case} could not be exported: {type(exc).__name__}: {exc}", UserWarning,
                      stacklevel=1)
        return
    warnings.warn(f"--export-failures: {case} exported to {folder}; rerun it without the suite: "
                  f"python {folder / 'repro.py'}", UserWarning, stacklevel=1)


def reach_missing_paths(spec, backend, strategy, coverage: reach.Coverage, check) -> None:
    """Run a case for each declared path the drawn cases missed; fail for a path no allowed case reaches."""
    pool = [spec.default_config_for(backend.family), *reach.config_space(spec, backend.family)]
    for path in coverage.missing():
        try:
            found = reach.find_case(strategy, path, pool, spec)
        except spec_code.SpecRaised as exc:  # a CodePath's taken raised: the spec's, in one line
            pytest.fail(f"broken spec: {exc}", pytrace=False)
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
