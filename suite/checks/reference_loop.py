"""The reference test's loop (suite/test_kernels.py): each case's outputs against the float64 reference, under its
own config and the others each case samples, then the test's end: the declared paths, value classes, layouts and
configs no drawn case reached, searched and run; and every end-of-test rule, in ``finish``."""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import seed, settings

from kernels.spec import Case
from reports.failure_kinds import FailureKind as K
from suite import compat
from suite.checks import autotune, drift, launches, ordinary, reach, restride, returned, spec_code
from suite.checks.caseloop import ABORTING, CaseLoop, Rate, fail, intermittent_text
from suite.checks.harness import CaseResult, record, run_case
from suite.checks.strategies import drawn_value_classes
from suite.session import known_issues, options
from suite.workers import crash, gpu_share, parts

# Failures that are the kernel's findings (exported with --export-failures), not the suite's, the spec's or the
# machine's.
NOT_THE_KERNELS = (K.SPEC, K.INTERPRETER, K.OOM, K.OOM_HELD, K.TOO_LARGE, K.FAULT)


def _no_poison(_: Any) -> None:
    """Outputs re-laid only to read their strides (ReferenceLoop.probe_base): nothing to poison."""


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


@dataclass
class Passed:
    """What the passed cases of a test add up to, for the rules its end judges: how many, the output elements they
    compared (each declared output's too), the largest and smallest (by output elements), the tolerance's looseness
    where judged, and what the kernels' launches were (how many, each kernel's widest grid). A test split into parts
    adds up every part's (``state``, ``merge``) in the last part to finish, which judges the whole test."""

    cases: int = 0
    elements: int = 0
    largest: tuple[Case, int] | None = None
    smallest: tuple[Case, int] | None = None
    judged: int = 0  # passed cases where looseness could be judged (a reference not all zero)
    own_wrote: int = 0  # passed cases where a launch of the spec's own kernels received one of the outputs

    def __post_init__(self) -> None:
        self.compared: dict[str, int] = {}
        self.loose: list[str] = []  # passed cases whose tolerance's magnitude would pass a result off by 50%
        self.widest: dict[str, int] = {}  # each kernel launched, with the most programs one of its launches ran
        self.launched: dict[str, int] = {}  # each @triton.jit function the test's cases launched, with its count
        # per output, each passed case's [reduction length, elements, signed sum, away sum] (suite/checks/drift.py)
        self.drift: dict[str, list[list]] = {}
        # Each passed case of this part: the case, the configs it ran, its output elements and whether an aligned
        # slice would re-lay rows of a width divisible by 16 (restride.rows16): the kernel variants compiled
        # already, which the search after the draws and the contract probe run again.
        self.runs: list[tuple[Case, list[dict], int, bool]] = []

    def add(self, case: Case, result: CaseResult) -> None:
        if self.largest is None or result.elements > self.largest[1]:
            self.largest = (case, result.elements)
        if self.smallest is None or result.elements < self.smallest[1]:
            self.smallest = (case, result.elements)
        self.cases += 1
        self.elements += result.elements
        self.runs.append((case, [dict(c) for c in getattr(result, "ran", ())], result.elements,
                          bool(getattr(result, "rows16", False))))
        self.own_wrote += bool(getattr(result, "own_wrote", False))
        for name, n in result.compared.items():
            self.compared[name] = self.compared.get(name, 0) + n
        if result.loose != "" and result.elements:
            self.judged += 1
            if result.loose:
                self.loose.append(f"{case}: {result.loose}")
        drift.points(getattr(result, "checks", ()), self.drift)

    def take_launches(self) -> None:
        """The launches made since the last take (suite/checks/launches.py), added to the test's."""
        for name, count in launches.take_launched().items():
            self.launched[name] = self.launched.get(name, 0) + count
        for name, count in launches.take_widest().items():
            self.widest[name] = max(count, self.widest.get(name, 0))

    def state(self) -> dict[str, Any]:
        return {"cases": self.cases, "elements": self.elements, "judged": self.judged, "own_wrote": self.own_wrote,
                "launched": self.launched,
                "compared": self.compared, "loose": self.loose, "widest": self.widest, "drift": self.drift}

    def merge(self, state: dict[str, Any]) -> None:
        """Another part's ``state`` added to this one (the largest and smallest cases stay this part's own)."""
        for name in ("cases", "elements", "judged", "own_wrote"):
            setattr(self, name, getattr(self, name) + int(state.get(name, 0)))
        for name, count in (state.get("launched") or {}).items():
            self.launched[name] = self.launched.get(name, 0) + int(count)
        for name, n in (state.get("compared") or {}).items():
            self.compared[name] = self.compared.get(name, 0) + int(n)
        self.loose += list(state.get("loose") or [])
        for name, count in (state.get("widest") or {}).items():
            self.widest[name] = max(int(count), self.widest.get(name, 0))
        for name, cases in (state.get("drift") or {}).items():
            self.drift.setdefault(name, []).extend(list(c) for c in cases)


class ReferenceLoop(CaseLoop):
    """test_matches_reference's cases: see the module's docstring."""

    look_failed = ""  # why the last look at a case's inputs was not made (looked)

    def __init__(self, kernel_dtype: Any, request: Any, ctx: Any) -> None:
        super().__init__(kernel_dtype, request, ctx)
        self.part = getattr(kernel_dtype, "part", 0)  # suite/workers/parts.py
        self.split = getattr(kernel_dtype, "parts", 1)
        self.records: list[dict] = []
        self.coverage = reach.Coverage(self.spec, self.dtype, self.backend.family)
        self.last_failure: dict | None = None  # the record of the test's failure (Hypothesis replays the minimal last)
        self.to_export: tuple | None = None  # the last failing case of the kernel's own, for --export-failures
        self.every_config = ctx.large_shapes and self.backend.name != "interpret"  # nightly on a GPU: every config
        self.too_large: list[str] = []
        self.vendor_sensitive: list[str] = []  # passing cases whose verdict an approximate instruction's bound flips
        self.last = bool(ctx.options.repro)  # a part that adds up every part's coverage (a --repro case is its own)
        self.passed = Passed()
        self.contract_failure: str | None = None  # an undeclared layout accepted and wrong (try_contract)
        self.drawing = False  # Hypothesis is drawing the test's cases (reach.Steer chooses what they carry)
        self.steer: reach.Steer | None = None
        # Parts: with the same cases drawn in every part, each runs those at its positions; with random draws, each
        # part draws its own share of the budget.
        self.same_draws = self.split > 1 and (settings.default.derandomize or ctx.profile == "validation")
        self.position = iter(range(1 << 62))
        self.wrong_before: list[Wrong] = []  # cases that gave a wrong result, and how often so far
        # Cases that failed as the known issue describes (their record, their text): the other cases run on, and any
        # other failure fails the test (suite/plugin/hooks.py keeps the xfail only for a failure the issue describes).
        self.known: list[tuple[dict, str]] = []
        # The largest case that met the known issue: (case, output elements, the configs it ran).
        self.known_largest: tuple[Case, int, list[dict]] | None = None
        launches.take_untuned()
        launches.take_launched()
        launches.take_widest()

    # --- one case ------------------------------------------------------------------------------------------------
    def run_once(self, case: Case, configs: list[dict]) -> CaseResult:
        return gpu_share.run_with_retry(
            lambda: run_case(self.spec, case, self.backend, configs[0], extra_configs=configs[1:]),
            self.backend.device, case)

    def measure(self, case: Case, config: dict, rate: Rate) -> Rate:
        """``rate`` plus ``reruns`` more runs of the case under ``config`` (the one that was wrong), on inputs drawn
        again from its seed; a run that breaks otherwise (a fault, out of memory) ends the count."""
        wrong, runs = rate.wrong, rate.runs
        for _ in range(self.reruns):
            again = self.run_once(case, [config])
            if not again.passed and again.failure in ABORTING:
                break
            wrong, runs = wrong + (not again.passed), runs + 1
        return Rate(wrong, runs)

    def fail_intermittent(self, w: Wrong, rate: Rate) -> None:
        """From now on this case fails as found without running again, and every other case passes untested."""
        text = intermittent_text(str(w.case), rate, w.config, w.message, w.rec["repro"])
        first = self.wrong_before[0] if self.wrong_before else w
        if first.case != w.case and first.rate.wrong == first.rate.runs:
            text += (f"\n(the first failing case was wrong in every run, {first.rate.text()}: {first.case}; "
                     f"reproduce with: {first.rec['repro']})")
        self.last_failure = {**w.rec, "failure": str(K.INTERMITTENT), "intermittent": rate.record(),
                             "repro": rate.repro(w.rec["repro"])[1],
                             "message": f"intermittent ({rate.text()}): {w.rec['message'] or ''}"[:2000]}
        self.stick(w.case, text)

    def others_case(self, configs: list[dict] | None) -> bool:
        """A drawn case another part of a split test runs (the path search and --repro pass their configs)."""
        if configs is not None or self.split == 1:
            return False
        at = next(self.position)
        return (self.shrink.started is None and (self.same_draws or at < len(self.spec.examples))
                and not parts.owns(at, self.part, self.split))

    def configs_for(self, case: Case) -> list[dict]:
        """A drawn case's configs: its own (or --config's), a sample of the family's others, the one that failed."""
        spec, backend = self.spec, self.backend
        primary = self.forced or autotune.choose_config(spec, case.dtype, case.shape, backend)
        drawn = self.steer.drawn_as.get(case.spec_string(), case) if self.steer is not None else case
        configs = [primary] + ([] if self.forced else reach.extra_configs(spec, drawn, backend.family, primary,
                                                                           self.every_config))
        if self.shrink.config is not None and self.shrink.config not in configs:  # keep testing the config that failed
            configs.append(self.shrink.config)
        return configs

    def check(self, case: Case, configs: list[dict] | None = None, runs: int = 1) -> None:
        if self.others_case(configs) or self.replaying(case):
            return
        configs = configs if configs is not None else self.configs_for(case)
        result, repeated = self.run_case(case, configs, runs)
        line = self.config_line(case, result.config)
        rec = record(result, self.request.node.nodeid, line)
        if self.not_run(case, result, line):
            return
        if result.passed:
            self.on_passed(case, result, rec, line)
        # A broken spec is the spec's to fix, never a platform's known bug: no pattern excuses one.
        elif (self.known_issue and result.failure not in (K.FAULT, K.OOM, K.SPEC)
              and self.known_issue.covers_all(result.problems(), ordinary.beside)):
            self.known.append((rec, f"{case}\n{result.message()}\nreproduce with: {line}"))  # expected: on to the next
            if self.known_largest is None or result.elements > self.known_largest[1]:
                self.known_largest = (case, result.elements, list(configs))
            if rest := configs[result.configs_run:]:  # the case's other configs are judged all the same
                self.check(case, rest)
        else:
            self.on_failed(case, result, rec, line, repeated, runs)

    def run_case(self, case: Case, configs: list[dict], runs: int) -> tuple[CaseResult, Rate | None]:
        """The case run once, or ``runs`` times (--repro-runs: its runs count as its classification)."""
        result = self.run_once(case, configs)
        if runs == 1:
            return result, None
        seen = [result]
        while len(seen) < runs and not (seen[-1].failure in ABORTING and not seen[-1].passed):
            seen.append(self.run_once(case, configs))
        wrong = [r for r in seen if not r.passed]
        result = next((r for r in wrong if r.failure in ABORTING), wrong[0] if wrong else seen[0])
        return result, Rate(len(wrong), len(seen))

    def not_run(self, case: Case, result: CaseResult, line: str) -> bool:
        """A case the GPU could not run (too large, memory held by others; listed in gpu_share, never the kernel's
        fault) or the interpreter cannot check (the test is skipped, saying why): whether it was one."""
        if result.failure in (K.TOO_LARGE, K.OOM_HELD):  # listed in gpu_share already: its reproduction line
            gpu_share.share().note_repro(case, line)
        if result.failure == K.TOO_LARGE:  # the other cases still run
            self.too_large.append(f"{case}: {result.message()}\nreproduce with: {line}")
            return True
        if result.failure == K.NOT_CHECKABLE:  # a construct the interpreter evaluates otherwise
            pytest.skip(f"{result.message()}\n{case}\nreproduce with: {line}")
        if result.failure == K.OOM_HELD:
            warnings.warn(f"{case}: {result.message()[:600]}\nreproduce with: {line}", UserWarning, stacklevel=1)
            return True
        return False

    def on_passed(self, case: Case, result: CaseResult, rec: dict, line: str) -> None:
        earlier = next((w for w in self.wrong_before if w.case == case), None)
        if earlier is not None:  # wrong before, right now (Hypothesis's replay of it, say): how often is it wrong?
            rate = self.measure(case, earlier.config, Rate(earlier.rate.wrong,
                                                           earlier.rate.runs + (earlier.config in result.ran)))
            if rate.intermittent:
                self.fail_intermittent(earlier, rate)
            self.last_failure = earlier.rec
            fail(earlier.text)  # wrong in every run under its config: the failure as it was
        if self.last_failure is not None:  # passes seen while shrinking a failure are not cases of the run
            return
        self.passed.add(case, result)
        if result.vendor_sensitive:
            self.vendor_sensitive.append(f"{case}: {result.vendor_sensitive}\nreproduce with: {line}")
        try:
            self.coverage.add(case, result.ran, result.skipped_configs, result.restrided, result.rows16)
        except spec_code.SpecRaised as exc:  # a CodePath's taken raised: the spec's, in one line
            broken = f"broken spec: {exc}"
            self.last_failure = {**rec, "outcome": "failed", "failure": str(K.SPEC), "message": broken}
            raise crash.CaseAborted(f"{case}\n{broken}\nreproduce with: {line}") from None
        self.records.append(rec)

    def on_failed(self, case: Case, result: CaseResult, rec: dict, line: str, repeated: Rate | None,
                  runs: int) -> None:
        self.last_failure = rec
        if result.failure not in NOT_THE_KERNELS:  # the kernel's findings
            self.to_export = (case, dict(result.config), result.message(), line, result.failure)
        self.shrink.failed(case, result.config, line)
        if result.failure in (K.FAULT, K.OOM, K.SPEC, K.INTERPRETER):  # shrinking would only repeat these
            # its reach leaves this dtype out
            if self.known_issue and self.known_issue.covers_all(result.problems(), ordinary.beside):
                self.coverage.stopped_by = f"known issue {self.known_issue.id}"
            raise crash.CaseAborted(f"{case}\n{result.message()}\nreproduce with: {line}")
        text = f"{case}\n{result.message()}\nreproduce with: {line}"
        if repeated is None and not self.wrong_before:  # the test's first wrong result: how often is it wrong?
            repeated = self.measure(case, result.config, Rate(1, 1))
            self.shrink.restart_clock()
        w = Wrong(case, dict(result.config), result.message(), text, rec, repeated or Rate(1, 1))
        self.wrong_before.append(w)
        if w.rate.intermittent:
            self.fail_intermittent(w, w.rate)
        if runs > 1:
            text = f"{case}\n{result.message()}\n({w.rate.text()})\nreproduce with: {line}"
        fail(f"{text}{self.shrink.note(line)}")

    def unreliable(self, why: str) -> None:
        """Hypothesis found a failure that did not happen again (a safety net: each case that was wrong and then
        right is classified as it happens): the verdict of the test's first wrong case, from its runs."""
        if self.sticky is not None:
            fail(self.sticky[1])
        if not self.wrong_before:
            fail(f"intermittent: a failure of this test did not happen again when its case ran again ({why})")
        first = self.wrong_before[0]
        if first.rate.intermittent:
            self.fail_intermittent(first, first.rate)
        self.last_failure = first.rec
        fail(f"{first.text}\n({first.rate.text()} of this case; another failure did not happen again: {why})")

    # --- the test ------------------------------------------------------------------------------------------------
    def run(self) -> None:
        """Every case of the test, then what the test concludes (``finish``)."""
        if self.forced is not None and (problem := options.config_problem(self.spec, self.forced)):
            fail(f"--config: {problem}")
        if self.ctx.options.repro:
            case = self.repro_case()
            self.check(case, [self.forced or autotune.choose_config(self.spec, case.dtype, case.shape, self.backend)],
                       runs=self.ctx.options.repro_runs)
            self.finish(searched=False)
            return
        strategy = self.strategy()
        failed, why, skipped = True, None, None
        try:
            self.drawing = True  # the drawn cases carry what Steer chooses; the search's own finds do not
            try:
                why = self.drive(self.hypothesis_run(strategy))
            finally:
                self.drawing = False
            failed = why is not None
        except pytest.skip.Exception as exc:  # a case not checkable here: this part's other cases went unjudged
            skipped = exc
            raise
        finally:
            self.passed.take_launches()
            if self.split > 1:  # the last part to finish adds up every part's coverage and tallies, and judges them
                self.last, failed, others = parts.finish(self.request.config, self.request.node.nodeid, self.part,
                                                         self.coverage, failed, self.passed.state())
                for state in others:
                    self.passed.merge(state)
            if skipped is not None and self.judges_whole:
                self.judge_before_skip(skipped, strategy)
        if why is not None:
            self.unreliable(why)
        # A known issue excuses the cases it describes, nothing else: the search runs whether or not cases met it.
        if self.forced is None and self.judges_whole:
            if not failed:
                self.search(strategy)
            else:  # a part failed or was skipped: no case is searched for, but a path no case can take is said
                self.list_unreachable(strategy)
        self.finish(searched=True)

    def judge_before_skip(self, skipped: BaseException, strategy) -> None:
        """The test (or the last part of a split test to finish) was skipped as not checkable at a case: the
        end-of-test rules are still judged over what every part ran (the earlier parts' tallies, and this part's
        cases before the skip), and a rule that fails fails it, the skip said beside it; else the skip stands. (The
        search, which would meet the construct again, runs no case; a declared path no allowed case takes is still
        listed.)"""
        if self.forced is None:
            self.list_unreachable(strategy)
        failures = self.end_rules(searched=True)
        if failures:
            fail("\n\n".join(failures) + f"\n\n(besides, this part was skipped at a case: {str(skipped)[:2000]})")

    @property
    def judges_whole(self) -> bool:
        """Whether this test (or this part: the last of a split test's to finish) judges the whole test's end."""
        return self.split == 1 or self.last

    def strategy(self):
        """The drawn cases, each with the restride it picks (suite/checks/restride.py): the draws themselves are
        Hypothesis's as before; a restride that meets no tensor of the spec's by its rank is not picked."""
        spec, backend = self.spec, self.backend
        self.steer = reach.Steer(
            spec, self.dtype, backend.family, drawn_value_classes(spec, self.dtype, backend.name),
            self.rank_restrides(),
            primary=lambda case: self.forced or autotune.choose_config(spec, case.dtype, case.shape, backend),
            rows16=lambda case: self.built(case, lambda built: restride.rows16(spec, built)),
            subnormal=(lambda case: self.built(case, lambda built: not spec_code.unbuilt_values(spec, case, built)))
            if restride.subnormals_implied(spec, self.dtype) else None,
            active=lambda: self.drawing and not self.wrong_before and self.last_failure is None
            and self.sticky is None, budget=settings.default.max_examples)
        return super().strategy().map(self.steer)

    def built(self, case: Case, judge) -> bool:
        """``judge`` of the inputs make_inputs builds for ``case`` (False where the spec's code raises: the case
        says so when it runs)."""
        try:
            built = spec_code.call(self.spec, "make_inputs", self.spec.make_inputs, case, self.backend.device)
        except Exception:  # noqa: BLE001 - the spec's code, said by the case that meets it
            return False
        return bool(judge(built))

    def rank_restrides(self) -> restride.Meet | None:
        """What the drawn restrides meet in the spec's cases (restride.Meet: by rank, and the dim each sliced
        tensor's width is), read from one case of each declared layout, its dims of distinct sizes (a rank does not
        hang on the sizes); None, every drawn restride picked, where the spec's code raised on that case (a drawn
        case says what broke)."""
        if getattr(self, "_rank_restrides", False) is not False:
            return self._rank_restrides
        from suite.checks.strategies import dim_max

        spec, sizes = self.spec, iter((3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41))
        shape = {d.name: d.choices[0] if d.choices else max(d.min, min(next(sizes), dim_max(d, self.backend.name,
                                                                                            self.ctx.large_shapes)))
                 for d in spec.dims}
        out: restride.Meet | None = restride.Meet({}, {})
        try:
            for layout in spec.layouts:
                case = Case(kernel=spec.name, dtype=self.dtype, shape=shape, layout=layout)
                built = spec_code.call(spec, "make_inputs", spec.make_inputs, case, self.backend.device)
                made = (spec_code.call(spec, "make_outputs", spec.make_outputs, built, case)
                        if spec.strided_outputs and spec.make_outputs is not None else None)
                out.ranks[layout] = restride.by_rank(spec, built, made)
                out.widths[layout] = restride.width_dims(spec, built, shape)
                del built, made
        except Exception:  # noqa: BLE001 - the spec's code: its drawn cases say what broke, and how
            out = None
        self._rank_restrides = out
        return out

    def hypothesis_run(self, strategy):
        run = self.given(strategy, self.check, f"{self.spec.name}-{self.dtype}")
        if self.split > 1 and not self.same_draws:
            run = self.settings_for(-(-settings.default.max_examples // self.split))(run)
            if (forced_seed := compat.forced_seed()) is not None:
                run = seed(zlib.crc32(f"{forced_seed}-part{self.part}".encode()))(run)
        return self.seeded(self.with_examples(run), self.validation_seed())

    def search(self, strategy) -> None:
        """What no drawn case reached, run: each declared path, each config, each value class, layout and restride,
        each path with each of them."""
        self.reach_missing_paths(strategy)
        # Every config of the family at least once: on the largest passed case, and on the largest case that met
        # the known issue where that one is larger (its other problems judged; suite/session/known_issues.py): a
        # config wrong only on the large cases a known issue also meets was run on a small passed case alone.
        never = reach.configs_never_run(self.spec, self.backend.family, self.coverage)
        if self.passed.largest is not None and never:
            self.check(self.passed.largest[0], never)
        if self.known_largest is not None and (self.passed.largest is None
                                               or self.known_largest[1] > self.passed.largest[1]):
            case, _, ran = self.known_largest
            if rest := [c for c in (never if self.passed.largest is None else reach.config_space(
                    self.spec, self.backend.family)) if c not in ran]:
                self.check(case, rest)
        self.fill(strategy)
        if self.passed.largest is not None:
            self.try_contract(self.passed.largest[0])

    def fill(self, strategy) -> None:
        """What the draws left out, each met at least once, on as few cases as meet it (reach.plan): each declared
        value class and layout no case drew; each drawn restride no case met, and an aligned slice on rows of a
        width divisible by 16 where a passed case has such rows; subnormal inputs (fp32, fp16, bf16) where the spec
        lists none; every declared path with every declared layout, value class and met restride (the crossings).
        Each runs on a case the test passed, with the configs it ran (the kernel variants compiled for it serve
        again: a layout alone may change one), with what it lacked in place of its own; a crossing rides on a case
        another need runs wherever that case takes the path. What cannot be met is recorded with why (not_met)."""
        import dataclasses

        spec, coverage = self.spec, self.coverage
        classes = drawn_value_classes(spec, self.dtype, self.backend.name)
        if self.passed.largest is None:  # no passed case: a class or layout on the smallest case with it
            for label, case in reach.find_classes_never_drawn(strategy, coverage, classes, spec.layouts):
                coverage.searched.append(label)
                self.check(case)
            return
        needs = [reach.Need("values", v) for v in classes if not coverage.values[v]]
        needs += [reach.Need("layout", lay) for lay in spec.layouts if not coverage.layouts[lay]]
        largest = self.passed.largest[0]
        if restride.subnormals_implied(spec, self.dtype) and not coverage.values["subnormal"]:
            case = dataclasses.replace(largest, values="subnormal")
            built = self.looked(case, lambda: spec_code.call(spec, "make_inputs", spec.make_inputs, case,
                                                             self.backend.device))
            if built is None:
                coverage.not_met["values=subnormal"] = f"not looked for: {self.look_failed}"
            elif spec_code.unbuilt_values(spec, case, built):
                coverage.not_met["values=subnormal"] = ("make_inputs ignores case.values (draw the inputs with "
                                                        "kernels.inputs.values), or say why not: no_subnormals")
            else:
                needs.append(reach.Need("values", "subnormal"))
            del built
        elif spec.no_subnormals and self.dtype in restride.SUBNORMAL_DTYPES:
            coverage.not_met["values=subnormal"] = f"no_subnormals: {spec.no_subnormals}"
        meet = self.rank_restrides()
        applies = set().union(*meet.ranks.values()) if meet is not None else set(restride.drawn(spec))
        bases = self.bases()
        wanted_restrides = [r for r in restride.drawn(spec) if coverage.restrides[r]]
        for name in restride.drawn(spec):
            if coverage.restrides[name]:
                continue
            need = reach.Need("restride", name)
            if name in applies and any(self.meets(dataclasses.replace(b.case, restride=name), need) for b in bases):
                needs.append(need)
                wanted_restrides.append(name)
            else:
                coverage.not_met[f"restride={name}"] = "no tensor of the test's cases it applies to"
        if "aligned_slice" in applies and not coverage.sliced16:  # the 16-divisible stride: where rows have it
            needs.append(reach.Need("restride", "aligned_slice", rows16=True))
        if "aligned_slice" in applies and not coverage.plain16:  # and such rows as built, where a case runs anyway
            needs.append(reach.Need("restride", "", rows16=True, rides=True))
        for name, why in spec.refused_layouts.items():
            coverage.not_met[f"restride={name}"] = f"refused by the spec: {why}"
        wanted = [f"layout={lay}" for lay in spec.layouts] + [f"values={v}" for v in classes]
        wanted += [f"restride={r}" for r in restride.drawn(spec) if r in wanted_restrides]
        try:
            crossings, found, rows = reach.crossing_needs(strategy, coverage, wanted)
            order = reach.unique(bases[:-1] + reach.takers(coverage) + bases[-1:] + found)
            planned, _ = reach.plan(coverage, needs + crossings, order, rows, self.meets)
        except spec_code.SpecRaised as exc:
            fail(f"broken spec: {exc}")
        for labels, case, configs in planned:
            coverage.searched.extend(labels)
            self.check(case, configs)
        for need in needs:
            if need.field == "restride" and not need.rows16 and not coverage.restrides[need.value]:
                coverage.not_met[f"restride={need.value}"] = "no tensor of the test's cases it applies to"

    def bases(self) -> list[reach.Base]:
        """The passed cases the search may start from besides the paths' takers, with the configs they ran, in the
        order it tries them (the paths' takers come before the last): the largest whose rows an aligned slice
        re-lays at a width divisible by 16, the largest (what the draws left out runs there where nothing decides
        otherwise: the case taking the most), the smallest."""
        runs = self.passed.runs
        if not runs:
            return []
        largest16 = max((r for r in runs if r[3]), key=lambda r: r[2], default=None)
        picks = [largest16, max(runs, key=lambda r: r[2]), min(runs, key=lambda r: r[2])]
        return [reach.Base(r[0], r[1]) for r in picks if r is not None]

    def looked(self, case: Case, build):
        """``build()``, the inputs (and outputs) of ``case`` built to look at them, no kernel run, through the one
        out-of-memory path (gpu_share.alone_on_oom): out of memory beside other workers, again alone; out of memory
        alone too, None, and ``look_failed`` says why (the case is listed as not run). A nightly's shared H200 failed
        two right specs as "broken spec ... raised OutOfMemoryError" in such a look."""
        try:
            return gpu_share.alone_on_oom(build, self.backend.device, case, "building the case's inputs to look at "
                                          "them: ")
        except gpu_share.NotRun as verdict:
            gpu_share.share().note_repro(case, self.repro_line(case))  # where listed not run: the line that reruns it
            self.look_failed = verdict.text
            return None

    def meets(self, case: Case, need: reach.Need) -> bool:
        """Whether ``case``'s restride re-lays a tensor of it with rows to stride over (``need.rows16``: rows of a
        width divisible by 16), built once per shape and layout."""
        cache = self.__dict__.setdefault("_meets", {})
        ident = (tuple(case.shape.items()), case.layout, case.restride, need.rows16)
        if ident not in cache:
            def build():
                built = spec_code.call(self.spec, "make_inputs", self.spec.make_inputs, case, self.backend.device)
                made = (spec_code.call(self.spec, "make_outputs", self.spec.make_outputs, built, case)
                        if restride.takes_outputs(self.spec, case) and self.spec.make_outputs is not None else None)
                return restride.meets(self.spec, case, built, made, need.rows16)
            cache[ident] = bool(self.looked(case, build))  # out of memory: not met here (another case may)
        return cache[ident]

    def try_contract(self, base: Case) -> None:
        """Once per test, a layout the spec did not declare (restride.probes: the first that meets a tensor with
        rows to stride over) on a case the test passed, under the config it ran (``probe_base``: the kernel
        variant compiled for it serves again, but for what the layout itself changes): accepted, it must be right (a
        wrong result fails, saying how to declare or refuse it); refused (the launcher raised), it is recorded. Only
        tensors make_inputs built contiguous are re-laid: where no passed case meets one, ``base`` (the largest),
        and ``base`` in the spec's first layout where it has a declared layout of its own (padded_rows)."""
        import dataclasses

        if self.spec.no_contract_probe:  # said, so that a run that tried none shows it
            self.coverage.contract = {"tried": "none", "outcome": "not judged",
                                      "detail": f"no_contract_probe: {self.spec.no_contract_probe}"}
        names = restride.probes(self.spec, self.dtype)
        picked = next(([(n, found)] for n in names if (found := self.probe_base(n)) is not None), [])
        bases = [base] + ([dataclasses.replace(base, layout=self.spec.layouts[0])]
                          if base.layout != self.spec.layouts[0] else [])
        tries = picked or [(n, (dataclasses.replace(b, restride=n), None)) for b in bases for n in names]
        for name, (case, config) in tries:
            config = self.forced or config or autotune.choose_config(self.spec, case.dtype, case.shape, self.backend)
            result = self.run_once(case, [config])
            gpu_share.share().note_repro(case, self.config_line(case, result.config))  # where listed not run
            outcome, detail = restride.judge(result, name)
            self.coverage.contract = {"tried": name, "outcome": outcome, "tensors": ", ".join(result.restrided),
                                      **({"detail": detail} if detail else {})}
            if outcome != "none met":
                break
        else:
            return
        if outcome == "wrong":
            self.coverage.contract["outcome"] = "wrong"
            line = self.config_line(case, result.config)
            text = restride.undeclared_text(self.spec, name, result)
            rec = {**record(result, self.request.node.nodeid, line), "message": text[:2000]}
            if (self.known_issue and result.failure not in (K.FAULT, K.OOM)
                    and self.known_issue.covers_all([f"{case}\n{text}"], ordinary.beside)):  # as every case's
                self.known.append((rec, f"{case}\n{text}\nreproduce with: {line}"))  # a library's bug, declared
                return
            self.last_failure = rec
            self.contract_failure = f"{case}\n{text}\nreproduce with: {line}"  # judged in finish, with every rule

    def probe_base(self, name: str, tries: int = 8) -> tuple[Case, dict] | None:
        """The passed case the contract probe of restride ``name`` runs on, and the config it ran first: of those
        that take every declared path the largest passed case takes (the probe keeps its reach) and where ``name``
        re-lays a tensor with rows to stride over (restride.meets), the one where it changes the fewest of the
        classes Triton specializes a kernel on (restride.classes_changed: strides and pointers, against the case as
        it ran), then the largest; ``tries`` cases built at most, the largest first, stopping at one where it
        changes none. None where no passed case meets a tensor."""
        import dataclasses

        runs = [r for r in sorted(self.passed.runs, key=lambda r: -r[2]) if r[1]]

        def paths(case: Case, config: dict) -> set[str]:
            return {p.name for p in self.coverage.declared if reach.taken(p, case, config, self.spec)}

        widest = paths(runs[0][0], runs[0][1][0]) if runs else set()
        best, seen = None, set()
        for case, ran, _, _ in runs:
            if len(seen) >= tries:
                break
            if case.spec_string() in seen or not paths(case, ran[0]) >= widest:
                continue
            seen.add(case.spec_string())
            probe = dataclasses.replace(case, restride=name)

            def classes_changed(case=case, probe=probe) -> int | None:
                """How many value classes the probe's layout changes on ``case``; None where it meets no tensor."""
                built = spec_code.call(self.spec, "make_inputs", self.spec.make_inputs, case, self.backend.device)
                made = (spec_code.call(self.spec, "make_outputs", self.spec.make_outputs, built, case)
                        if self.spec.make_outputs is not None and (restride.takes_outputs(self.spec, probe)
                                                                   or restride.takes_outputs(self.spec, case)) else None)
                if not restride.meets(self.spec, probe, built, made):
                    return None
                changed = restride.classes_changed(restride.inputs(self.spec, case, built)[0],
                                                   restride.inputs(self.spec, probe, built)[0])
                if made is not None:
                    changed += restride.classes_changed(restride.outputs(self.spec, case, dict(made), _no_poison)[0],
                                                        restride.outputs(self.spec, probe, dict(made), _no_poison)[0])
                return changed

            # out of memory looking (alone too): not a base (looked); a nightly's shared H200 failed a right spec here
            found = self.looked(case, lambda f=classes_changed: (f(),))  # a tuple: None inside is "meets nothing"
            changed = found[0] if found is not None else None
            if changed is not None and (best is None or changed < best[0]):
                best = (changed, probe, dict(ran[0]))
            if best is not None and best[0] == 0:
                break
        return None if best is None else (best[1], best[2])

    def reach_missing_paths(self, strategy) -> None:
        """Run a case for each declared path the drawn cases missed; a path no allowed case reaches is listed (unreachable,
        judged in ``finish``)."""
        for path, found in self.missing_paths(strategy):
            if found is None:
                self.coverage.unreachable.append(path.name)
                continue
            case, config = found
            self.coverage.searched.append(path.name)
            self.check(case, [config])

    def list_unreachable(self, strategy) -> None:
        """List each declared path no allowed case reaches, running nothing: where the search does not run (a part
        failed or was skipped as not checkable), a spec whose path no case can take was said by no rule."""
        self.coverage.unreachable.extend(path.name for path, found in self.missing_paths(strategy) if found is None
                                         and path.name not in self.coverage.unreachable)

    def missing_paths(self, strategy):
        """(path, the smallest case and config that take it, or None) for each declared path the cases missed."""
        spec, backend = self.spec, self.backend
        pool = [spec.default_config_for(backend.family), *reach.config_space(spec, backend.family)]
        for path in self.coverage.missing():
            try:
                found = reach.find_case(strategy, path, pool, spec)
            except spec_code.SpecRaised as exc:  # a CodePath's taken raised: the spec's, in one line
                fail(f"broken spec: {exc}")
            yield path, found

    # --- the test's end ------------------------------------------------------------------------------------------
    def finish(self, searched: bool) -> None:
        """Every end-of-test rule, in one place (docs/checks.md). Each rule is judged whatever another found, and
        every one that fails is said, together; only where none failed does the test end as its known issue
        describes (xfail), or as not run (skip: every case too large, or a spec that says why it is not tested).
        A part of a split test judges nothing of the whole unless it is the last part to finish; a --repro case
        (``searched`` False) proves nothing about launches or a magnitude's looseness."""
        self.passed.take_launches()
        self.warn_too_large()
        if self.vendor_sensitive:  # never a failure: the verdict on the GPU is its instruction's (docs/checks.md)
            warnings.warn(f"{len(self.vendor_sensitive)} passing case(s) vendor-sensitive; the first: "
                          f"{self.vendor_sensitive[0][:900]}", UserWarning, stacklevel=1)
        failures = self.end_rules(searched)
        if failures:
            known = (f"\n\n(besides, {len(self.known)} case(s) failed as known issue {self.known_issue.id} "
                     f"describes)" if self.known else "")
            fail("\n\n".join(failures) + known)
        self.end_known()
        self.skip_not_run(searched)

    def end_rules(self, searched: bool) -> list[str]:
        """What each end-of-test rule finds wrong with the whole test (nothing where this part does not judge it)."""
        rules = [self.nothing_compared, self.unreachable_paths] if self.judges_whole else []
        if searched and self.judges_whole:
            rules += [self.never_launched, self.never_wrote, self.one_program, self.loose_everywhere,
                      self.signed_drift, lambda: self.contract_failure]
        return [message for rule in rules if (message := rule())]

    def warn_too_large(self) -> None:
        """Too-large cases are not run (counted and listed in the run file's gpu_share): never a failure, what does
        not fit is the suite's draw, not the kernel."""
        if self.too_large and self.passed.cases:
            warnings.warn(f"{len(self.too_large)} case(s) not run, too large for this GPU (not a wrong result); the "
                          f"first: {self.too_large[0][:600]}", UserWarning, stacklevel=1)

    def skip_not_run(self, searched: bool) -> None:
        """A test none of whose cases could run (all too large) is skipped, saying why; so is one whose cases never
        launched the kernel where the spec says why (untested_reason): not tested, never passed."""
        spec, dtype, p = self.spec, self.dtype, self.passed
        if self.too_large and not p.cases:
            pytest.skip(f"not run: all {len(self.too_large)} case(s) too large for this GPU (out of memory with the "
                        f"GPU to themselves; not a wrong result): lower the dims' gpu_max for this GPU or run on a "
                        f"larger one.\n{self.too_large[0]}")
        if searched and self.judges_whole and p.elements and not self.own_launched() and spec.untested_reason:
            pytest.skip(f"not tested: none of the {p.cases} case(s) of {spec.name}[{dtype}] launched a "
                        f"@triton.jit function ({spec.untested_reason})")

    def nothing_compared(self) -> str | None:
        spec, dtype, p = self.spec, self.dtype, self.passed
        never = [name for name in spec.outputs if p.elements and name in p.compared and not p.compared[name]]
        if never:
            return (f"{spec.name}[{dtype}]: output(s) {never} had no element in any of the {p.cases} case(s), so they "
                    f"were never compared and prove nothing: make_outputs or the reference gives them empty tensors, "
                    f"or their dims allow only empty sizes here")
        if p.cases and not p.elements:
            return (f"{spec.name}[{dtype}]: all {p.cases} case(s) had empty outputs (no element), so nothing was "
                    f"compared and the test proves nothing: the dims allow only empty tensors here (give a Dim sizes "
                    f"above 0), or make_outputs returns empty tensors")
        return None

    def unreachable_paths(self) -> str | None:
        if not self.coverage.unreachable:
            return None
        return (f"{self.spec.name}: declared path(s) {self.coverage.unreachable} are taken by no case the dims allow "
                f"on {self.backend.name} with any {self.backend.family} config; widen the dims, add a config, or drop "
                f"the path")

    def own_launched(self) -> bool:
        """Whether the cases launched one of the spec's own @triton.jit functions (any, where it declares none)."""
        own = {launches.kernel_key(kernel.fn) for kernel in self.spec.jit_kernels()}
        return any(key in own for key in self.passed.launched) if own else bool(self.passed.launched)

    def never_launched(self) -> str | None:
        p, spec = self.passed, self.spec
        if not p.elements or spec.untested_reason or self.own_launched():
            return None
        if not p.launched:
            return launches.never_launched(spec.name, self.dtype, p.cases)
        return launches.never_launched_own(spec.name, self.dtype, p.cases,
                                           sorted(launches.kernel_key(k.fn) for k in spec.jit_kernels()), p.launched)

    def never_wrote(self) -> str | None:
        """The spec's own kernels launched, and in no case did one of their launches receive an output: the outputs
        came from elsewhere (a helper kernel, torch) while the spec's kernel ran beside them."""
        p, spec = self.passed, self.spec
        own = sorted(kernel.name for kernel in spec.jit_kernels())
        if not p.elements or not own or p.own_wrote or not self.own_launched() or returned.returns_outputs(spec):
            return None
        return (f"{spec.name}[{self.dtype}]: the spec's own kernel(s) {own} launched, but in none of the {p.cases} "
                f"case(s) did a launch of them receive an output ({list(spec.outputs)}): the outputs were written by "
                f"other launches or by torch, so the spec's kernel was never checked (docs/checks.md)")

    def one_program(self) -> str | None:
        p = self.passed
        return launches.one_program_grids(self.spec, self.dtype, p.widest, p.cases) if p.elements else None

    def loose_everywhere(self) -> str | None:
        p = self.passed
        if p.loose and len(p.loose) == p.judged:
            return (f"broken spec: in every one of the {p.judged} case(s) the tolerance would pass a result off by "
                    f"50%, so the cases prove nothing; the first: {p.loose[0]}")
        return None

    def signed_drift(self) -> str | None:
        """A one-signed error that grows with the reduction length across the passed cases (suite/checks/drift.py)."""
        return drift.judge(self.spec.name, self.dtype, self.passed.drift)

    def end_known(self) -> None:
        if self.known:
            self.records.extend(known_issues.first_each(self.known_issue, self.known)[1:])  # each issue's first case
            self.coverage.stopped_by = f"known issue {self.known_issue.id}"  # its dtype's paths were not all reachable
            raise known_issues.KnownIssueFailure(
                f"known issue {self.known_issue.id}: {len(self.known)} case(s) failed as it describes "
                f"(failure_pattern {self.known_issue.failure_pattern!r}); the first:\n{self.known[0][1]}")

    def close(self) -> list[tuple[str, Any]]:
        """After the test, passed or not: the untuned kernels warned of, the records kept (Hypothesis replays the
        minimal failing example last: that one only, else a known issue's first), and the coverage to record (a
        part's once, added up, by the last part): the user properties to give the test."""
        self.warn_untuned()
        self.records.extend([self.last_failure] if self.last_failure else [rec for rec, _ in self.known[:1]])
        if self.last_failure and not self.coverage.stopped_by:  # stopped at its first failing case
            self.coverage.stopped_by = "a failure"
        return [(reach.COVERAGE_PROPERTY, [self.coverage.record()])] if self.split == 1 or self.last else []

    def warn_untuned(self) -> None:
        spec, dtype = self.spec, self.dtype
        self.coverage.untuned = launches.take_untuned()  # the summary names them (launches.untuned_lines)
        for name, count in sorted(self.coverage.untuned.items()):
            warnings.warn(f"{spec.name}[{dtype}]: autotuned kernel {name} ran the first of its {count} configs in "
                          f"every case: the spec's configs name none of its parameters, so its other configs were "
                          f"never run: {launches.untuned_advice(name)}", UserWarning, stacklevel=1)
