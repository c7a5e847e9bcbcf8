"""The property test's loop (suite/test_properties.py) and its checks: run-to-run determinism, batch invariance and
each kernel's own properties (rows sum to one, causality, dropout statistics, ...), over drawn cases.

Determinism and batch invariance are findings per kernel and backend: recorded in the run file either way, and a
failure only where the kernel's spec claims them. A property that broke while checking a case (a launch that raised,
a memory violation) fails the test and is recorded as stopped, never as holding."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import settings

from kernels.spec import Case, KernelSpec
from reports.failure_kinds import FailureKind as K
from suite.checks import autotune, interpreter, memcheck, returned
from suite.checks.caseloop import CaseLoop, Rate, fail, intermittent_text
from suite.checks.harness import guard_violations, launch, prepare_outputs, synchronize
from suite.workers import crash, gpu_share, timing

FINDINGS = "suite_finding_records"


def same_bits(a, b) -> bool:
    """Bitwise equality, NaN payloads included."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:
        view = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}[a.element_size()]
        import torch

        return torch.equal(a.contiguous().view(getattr(torch, view)), b.contiguous().view(getattr(torch, view)))
    return bool((a == b).all())


def draw_inputs(spec: KernelSpec, case: Case, backend) -> dict:
    """The case's inputs; drawing them out of memory is judged as a launch's is (suite/workers/gpu_share.py)."""
    with timing.phase("inputs"):
        return alone_on_oom(lambda: spec.make_inputs(case, backend.device), backend, case, "drawing the inputs: ")


def alone_on_oom(run, backend, case: Case, what: str = ""):
    """``run()`` through the one out-of-memory path (suite/workers/gpu_share.py: alone_on_oom): out of memory alone
    too, not run (TooLarge, MemoryHeld: counted and listed there) or the kernel's own failure (KernelOutOfMemory).
    A memory violation or an interpreter gap is a verdict already, never retried."""
    try:
        return gpu_share.alone_on_oom(run, backend.device, case, what,
                                      passthrough=(memcheck.MemoryViolation, interpreter.InterpreterGap))
    except gpu_share.NotRun as verdict:
        raise verdict.raised() from None


def make_runner(spec: KernelSpec, case: Case, backend, config: dict | None = None):
    """``run(inputs)``: one launch on fresh outputs, guarded and poisoned (or filled with their declared initial
    values) as in the reference test; a store into a guard region raises MemoryViolation, as the memory checker
    does."""
    config = config if config is not None else autotune.choose_config(spec, case.dtype, case.shape, backend)

    def attempt(inputs: dict) -> tuple[dict, list]:
        try:
            outputs, guards = prepare_outputs(spec, inputs, case)
            with timing.phase("launch"):
                launch(spec, inputs, outputs, config)
                synchronize(backend.device)
        except Exception as exc:
            if violation := memcheck.violation_in(exc):
                raise violation from None
            if gap := interpreter.gap_in(exc):
                raise gap from None
            if crash.note_launch_error(exc, backend.device, case) == K.FAULT:
                raise crash.CaseAborted(f"{case}: {type(exc).__name__}: {exc}") from None
            raise
        return outputs, guards

    def run(inputs: dict) -> dict:
        with crash.watchdog(case), memcheck.scope(spec.name):
            outputs, guards = alone_on_oom(lambda: attempt(inputs), backend, case)
        if out_of_bounds := guard_violations(guards):
            raise memcheck.MemoryViolation("; ".join(out_of_bounds))
        if returned.returns_outputs(spec):  # the launcher's own tensors: a buffer it reuses is compared as it was
            return {name: t.clone() for name, t in outputs.items()}
        return outputs

    return run


class _Agreed:
    """The inputs of a case and the outputs two runs on them agreed on bitwise (check_determinism), for the
    batch-invariance check of the same case and config that follows: a third run on the same inputs would give the
    same outputs, so it is not made. Taken once; any other case or config finds nothing."""

    key: tuple | None = None
    kept: tuple[dict, dict] | None = None

    @classmethod
    def put(cls, case: Case, config: dict | None, kept: tuple[dict, dict] | None) -> None:
        cls.key, cls.kept = ((case, repr(config)), kept) if kept is not None else (None, None)

    @classmethod
    def take(cls, case: Case, config: dict | None) -> tuple[dict, dict] | None:
        found = cls.kept if cls.key == (case, repr(config)) else None
        cls.key, cls.kept = None, None
        return found


def check_determinism(spec: KernelSpec, case: Case, backend, config: dict | None = None) -> str | None:
    _Agreed.put(case, config, None)
    inputs = draw_inputs(spec, case, backend)
    run = make_runner(spec, case, backend, config)
    first, second = run(inputs), run(inputs)
    diff = [name for name in first if not same_bits(first[name], second[name])]
    if diff:
        return f"outputs {diff} differ bitwise between two runs on the same inputs"
    _Agreed.put(case, config, (inputs, first))
    return None


def check_batch_invariance(spec: KernelSpec, case: Case, backend, config: dict | None = None) -> str | None:
    rows = case.shape[spec.batch_dim]
    part = max(1, rows // 2)
    run = make_runner(spec, case, backend, config)
    if agreed := _Agreed.take(case, config):
        inputs, full = agreed
    else:
        inputs = draw_inputs(spec, case, backend)
        full = run(inputs)
    sliced = {k: (v[:part] if k in spec.batch_inputs else v) for k, v in inputs.items()}
    small = run(sliced)
    diff = [name for name in spec.batch_outputs if not same_bits(full[name][:part], small[name])]
    if not diff:
        return None
    return (f"the first {part} of {rows} along {spec.batch_dim} differ bitwise when run as a batch of {part}: outputs "
            f"{diff}; {where_bits_differ(diff[0], full[diff[0]][:part], small[diff[0]], part)}")


def where_bits_differ(name: str, whole, part_run, part: int) -> str:
    """Where ``part_run`` (the half batch's output) differs bitwise from ``whole`` (the whole batch's first part):
    how many elements, the first, and how many of them the half batch never wrote (they hold the poison: a grid or
    mask that follows the batch size, more often than an order of summation)."""
    from suite.checks.harness import same_bits_at, unwritten

    if whole.shape != part_run.shape or whole.dtype != part_run.dtype:
        return f"{name}: shape or dtype differ ({tuple(whole.shape)} {whole.dtype} against {tuple(part_run.shape)} " \
               f"{part_run.dtype})"
    differ = ~same_bits_at(whole, part_run)
    count = int(differ.sum())
    first = tuple(int(i) for i in differ.nonzero()[0]) if count else ()
    never = int((differ & unwritten(part_run)).sum())
    text = f"{name}: {count} element(s) differ, first at {first}"
    if never:
        text += (f", {never} of them never written in the batch of {part} (they still hold the poison: a grid or "
                 f"mask that follows the batch size?)")
    return text


def checked_alone_on_oom(fn, spec: KernelSpec, case: Case, backend, config: dict | None):
    """``fn(spec, case, backend, config)``, a property's check, run again alone on out of memory anywhere in it (a
    property that draws its own inputs, its comparisons): see alone_on_oom."""
    return alone_on_oom(lambda: fn(spec, case, backend, config), backend, case)


def checks_for(spec: KernelSpec):
    out = [("deterministic", spec.deterministic, check_determinism)]
    if spec.batch_dim:
        out.append(("batch_invariant", spec.batch_invariant, check_batch_invariance))
    for prop in spec.properties:
        out.append((prop.name, True, lambda s, case, backend, config=None, prop=prop:
                    prop.check(case, backend.device, make_runner(s, case, backend, config))))
    return out


def raised(exc: BaseException) -> str:
    """What an exception says, as a failure's one message: its type and text (at most 2000 characters); its frames,
    which hold the case's tensors, are let go."""
    exc.__traceback__ = None
    return f"{type(exc).__name__}: {exc}".strip()[:2000]


@dataclass
class Failure:
    """A case a property check failed on (or that broke while checking it): what to rerun, and what was said."""

    case: Case
    name: str
    fn: object
    config: dict
    what: str  # the failure's first line
    detail: str
    line: str  # the reproduction line
    rate: Rate | None = None  # how often it was wrong, where its runs were counted
    sep: str = "\n"  # between what and detail

    def body(self) -> str:
        return f"{self.what}{self.sep}{self.detail}"




class PropertyLoop(CaseLoop):
    """test_properties' cases: every property of ``checks_for`` on each drawn case (its batch at least 2)."""

    def __init__(self, kernel_dtype: Any, request: Any, ctx: Any) -> None:
        super().__init__(kernel_dtype, request, ctx, batch_least=2)  # check() raises a batch to 2
        spec, backend = self.spec, self.backend
        self.findings: dict[str, dict] = {
            name: {"kernel": spec.name, "dtype": self.dtype, "backend": backend.name, "arch": backend.arch,
                   "property": name, "claimed": claimed, "holds": True, "cases_checked": 0, "message": None,
                   "repro": None}
            for name, claimed, _ in checks_for(spec)}
        self.failures: list[Failure] = []  # every failure of a claimed property, or a case that broke, in order
        self.repeating = bool(ctx.options.repro) and ctx.options.repro_runs > 1  # --repro-runs counts the runs itself

    def config_for(self, case: Case) -> dict:
        return self.forced or autotune.choose_config(self.spec, case.dtype, case.shape, self.backend)

    def wrong_again(self, f: Failure) -> bool:
        """One more run of the failed property on the failed case: wrong (or broken) again?"""
        try:
            return checked_alone_on_oom(f.fn, self.spec, f.case, self.backend, self.forced) is not None
        except (memcheck.MemoryViolation, interpreter.InterpreterGap):
            return True
        except Exception as exc:  # noqa: BLE001 - it raised again: broken again
            exc.__traceback__ = None
            return True

    def rerun_rate(self, f: Failure, rate: Rate) -> Rate:
        """``rate`` plus ``reruns`` more runs of the failed property on the failed case."""
        return Rate(rate.wrong + sum(self.wrong_again(f) for _ in range(self.reruns)), rate.runs + self.reruns)

    def verdict(self, f: Failure, rate: Rate) -> None:
        """The failure as it was where every run was wrong; else an intermittent one (in the finding too), which
        from now on fails as found without running again while every other case passes untested."""
        if not rate.intermittent:
            fail(f"{f.body()}\n({rate.text()})\nreproduce with: {f.line}", [f.body()])
        finding = self.findings[f.name]
        finding.update(intermittent=rate.record(), repro=rate.repro(f.line)[1])
        if finding["message"] and not finding["holds"]:
            finding["message"] = f"intermittent ({rate.text()}): {finding['message']}"[:2000]
        self.stick(f.case, intermittent_text(f.what, rate, f.config, f.detail, f.line), [f.body()])

    def failed(self, f: Failure) -> None:
        self.failures.append(f)
        if len(self.failures) == 1 and not self.repeating:  # the test's first failure: how often is it wrong?
            f.rate = self.rerun_rate(f, Rate(1, 1))
            self.shrink.restart_clock()
            if f.rate.intermittent:
                self.verdict(f, f.rate)
        fail(f"{f.body()}\nreproduce with: {f.line}{self.shrink.note(f.line)}", [f.body()])

    def check(self, case: Case) -> None:
        spec = self.spec
        if spec.batch_dim and case.shape.get(spec.batch_dim, 0) < 2:
            case = Case(case.kernel, case.dtype, {**case.shape, spec.batch_dim: 2}, case.layout, case.values, case.seed)
        if self.replaying(case):
            return
        try:
            for name, claimed, fn in checks_for(spec):
                self.check_property(case, name, claimed, fn)
        finally:
            _Agreed.put(case, None, None)  # the case's tensors are not kept past its properties (GPU memory)
        earlier = next((f for f in self.failures if f.case == case), None)
        if earlier is not None and not self.repeating:  # wrong before, right now (Hypothesis's replay of it, say)
            self.verdict(earlier, self.rerun_rate(earlier, Rate((earlier.rate or Rate(1, 1)).wrong,
                                                                (earlier.rate or Rate(1, 1)).runs + 1)))

    def check_property(self, case: Case, name: str, claimed: bool, fn) -> None:
        """One property on one case: its finding updated; a failure of a claimed one, or a case that broke while
        checking it, fails the test; not run for memory held by others, or not checkable here, said."""
        finding = self.findings[name]
        broke = None  # why the case broke while checking the property: failed after the except, so no chain shows
        began = time.perf_counter()
        try:
            with timing.phase("property"):  # the property's own comparisons (its launches count as launch)
                try:
                    message = checked_alone_on_oom(fn, self.spec, case, self.backend, self.forced)
                finally:  # each property's own time, its draws and launches included (the run file's findings)
                    finding["seconds"] = round(finding.get("seconds", 0.0) + time.perf_counter() - began, 4)
        except gpu_share.MemoryHeld as held:  # not run: other processes held the GPU's memory, or too large
            line = self.config_line(case, self.config_for(case))
            gpu_share.share().note_repro(case, line)
            warnings.warn(f"(checking {name!r}) {str(held)[:600]}\nreproduce with: {line}", UserWarning, stacklevel=1)
            return
        except interpreter.SemanticGap as gap:  # not checkable on the interpreter: neither holds nor fails
            finding.update(stopped=f"{case}: {gap}"[:2000])
            pytest.skip(f"{gap}\n{case}")
        except (memcheck.MemoryViolation, interpreter.InterpreterGap) as problem:
            what = "the interpreter cannot run this: " if isinstance(problem, interpreter.InterpreterGap) else ""
            broke = f"{what}{problem}"
        except Exception as exc:  # noqa: BLE001 - a launch that raised (a compile or interpreter error) or the
            # property's own code: one failure, one message, as the reference test gives it, never a traceback
            broke = raised(exc)
        if broke is not None:
            cfg = self.config_for(case)
            line = self.config_line(case, cfg)
            self.shrink.failed(case, cfg, line)
            # Not a verdict on the property: the summary says it was stopped, never that it holds.
            finding.update(stopped=f"{case}: {broke}"[:2000], repro=line)
            self.failed(Failure(case, name, fn, cfg, f"{case} (checking {name!r})", broke, line, sep=": "))
        finding["cases_checked"] += 1
        if message is None:
            return
        cfg = self.config_for(case)
        line = self.config_line(case, cfg)
        if finding["holds"]:
            finding.update(holds=False, message=f"{case}: {message}"[:2000], repro=line)
        if claimed:
            self.shrink.failed(case, cfg, line)
            self.failed(Failure(case, name, fn, cfg, f"property {name!r} does not hold for {case}", message, line))

    def run(self) -> None:
        if self.ctx.options.repro:
            self.run_repro(self.repro_case(), self.ctx.options.repro_runs)
            return
        run = self.given(self.strategy(), self.check, f"properties-{self.spec.name}-{self.dtype}")
        run = self.with_examples(self.settings_for(max(2, settings.default.max_examples // 2))(run))
        why = self.drive(run)
        if why is not None:
            self.unreliable(why)

    def run_repro(self, case: Case, runs: int) -> None:
        if runs == 1:
            self.check(case)
            return
        wrong = 0
        for _ in range(runs):  # --repro-runs
            try:
                self.check(case)
            except pytest.fail.Exception:
                wrong += 1
        if wrong:
            self.verdict(self.failures[0], Rate(wrong, runs))

    def unreliable(self, why: str) -> None:
        """A failure that did not happen again when Hypothesis replayed it: the first failure's verdict."""
        if self.sticky is not None:
            fail(self.sticky[1], self.sticky_problems)
        if not self.failures:
            fail(f"intermittent: a failure of this test did not happen again when its case ran again ({why})")
        first = self.failures[0]
        if first.rate is None or first.rate.intermittent:
            self.verdict(first, first.rate or self.rerun_rate(first, Rate(1, 1)))
        fail(f"{first.body()}\n({first.rate.text()} of this case; another failure did not happen again: {why})\n"
             f"reproduce with: {first.line}", [first.body()])
