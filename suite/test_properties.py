"""Properties beyond the reference: run-to-run determinism, batch invariance, and each
kernel's own properties (rows sum to one, causality, dropout statistics, ...).

Determinism and batch invariance are findings per kernel and backend: recorded in the
run file either way, and a failure only where the kernel's spec claims them.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import example, given, settings

from kernels.spec import Case, KernelSpec
from suite import compat
from suite.checks import autotune, interpreter, memcheck
from suite.checks.harness import guard_violations, launch, prepare_outputs, synchronize
from suite.checks.strategies import case_strategy
from suite.plugin.context import CONTEXT
from suite.session import options
from suite.test_kernels import ShrinkBudget, repro_case, repro_line, shrink_seconds
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
    need = -1
    with timing.phase("inputs"):
        try:
            with gpu_share.share().case(backend.device):
                return spec.make_inputs(case, backend.device)
        except Exception as exc:
            if crash.note_launch_error(exc, backend.device, case) != "oom":
                raise
            need = gpu_share.footprint(exc, backend.device)
            exc.__traceback__ = None
        gpu_share.share().retried += 1
        try:
            with gpu_share.share().alone(backend.device, need):
                inputs = spec.make_inputs(case, backend.device)
        except Exception as exc:
            if crash.note_launch_error(exc, backend.device, case) != "oom":
                raise
            need = max(need, gpu_share.footprint(exc, backend.device))
            exc.__traceback__ = None
            failure, message = gpu_share.judge_oom_alone(backend.device, f"drawing the inputs: {type(exc).__name__}: "
                                                                         f"{exc}", need)
            if failure == "oom_held":
                gpu_share.share().held += 1
                raise gpu_share.MemoryHeld(f"{case}: {message}") from None
            raise crash.CaseAborted(f"{case}: {message}") from None
        gpu_share.share().retried_passed += 1
        return inputs


def make_runner(spec: KernelSpec, case: Case, backend, config: dict | None = None):
    """``run(inputs)``: one launch on fresh outputs, guarded and poisoned (or filled with their declared initial
    values) as in the reference test; a store into a guard region raises MemoryViolation, as the memory checker
    does."""
    config = config if config is not None else autotune.choose_config(spec, case.dtype, case.shape, backend)

    def attempt(inputs: dict) -> tuple[dict, list]:
        outputs, guards = prepare_outputs(spec, inputs, case)
        with timing.phase("launch"):
            launch(spec, inputs, outputs, config)
            synchronize(backend.device)
        return outputs, guards

    def run(inputs: dict) -> dict:
        with crash.watchdog(case), memcheck.scope(spec.name):
            need = -1  # out of memory: the case's footprint (suite/workers/gpu_share.py)
            try:
                with gpu_share.share().case(backend.device):
                    outputs, guards = attempt(inputs)
            except Exception as exc:
                if violation := memcheck.violation_in(exc):
                    raise violation from None
                if gap := interpreter.gap_in(exc):
                    raise gap from None
                failure = crash.note_launch_error(exc, backend.device, case)
                if failure == "fault":
                    raise crash.CaseAborted(f"{case}: {type(exc).__name__}: {exc}") from None
                if failure != "oom":
                    raise
                need = gpu_share.footprint(exc, backend.device)
                exc.__traceback__ = None  # its frames hold this launch's outputs
            if need >= 0:  # other workers' cases may hold the memory: again with the GPU to this one
                gpu_share.share().retried += 1
                try:
                    with gpu_share.share().alone(backend.device, need):
                        outputs, guards = attempt(inputs)
                except Exception as exc:
                    if crash.note_launch_error(exc, backend.device, case) == "oom":
                        need = max(need, gpu_share.footprint(exc, backend.device))
                        exc.__traceback__ = None
                        failure, message = gpu_share.judge_oom_alone(backend.device, f"{type(exc).__name__}: {exc}",
                                                                     need)
                        if failure == "oom_held":
                            gpu_share.share().held += 1
                            raise gpu_share.MemoryHeld(f"{case}: {message}") from None
                        raise crash.CaseAborted(f"{case}: {message}") from None
                    raise
                gpu_share.share().retried_passed += 1
        if out_of_bounds := guard_violations(guards):
            raise memcheck.MemoryViolation("; ".join(out_of_bounds))
        return outputs

    return run


def check_determinism(spec: KernelSpec, case: Case, backend, config: dict | None = None) -> str | None:
    inputs = draw_inputs(spec, case, backend)
    run = make_runner(spec, case, backend, config)
    first, second = run(inputs), run(inputs)
    diff = [name for name in first if not same_bits(first[name], second[name])]
    return f"outputs {diff} differ bitwise between two runs on the same inputs" if diff else None


def check_batch_invariance(spec: KernelSpec, case: Case, backend, config: dict | None = None) -> str | None:
    rows = case.shape[spec.batch_dim]
    part = max(1, rows // 2)
    inputs = draw_inputs(spec, case, backend)
    run = make_runner(spec, case, backend, config)
    full = run(inputs)
    sliced = {k: (v[:part] if k in spec.batch_inputs else v) for k, v in inputs.items()}
    small = run(sliced)
    diff = [name for name in spec.batch_outputs if not same_bits(full[name][:part], small[name])]
    return (f"the first {part} of {rows} rows differ bitwise when run as a batch of {part}: outputs {diff}"
            if diff else None)


def checks_for_oom(exc: BaseException, backend, case: Case) -> bool:
    return crash.note_launch_error(exc, backend.device, case) == "oom"


def checked_alone_on_oom(fn, spec: KernelSpec, case: Case, backend, config: dict | None):
    """``fn(spec, case, backend, config)``, a property's check; run out of memory anywhere in it (a property that
    draws its own inputs, its comparisons), it runs again with the GPU to itself, and out of memory there too it
    is judged by its footprint (suite/workers/gpu_share.py): too large, or not run. Never a failure of the kernel."""
    try:
        return fn(spec, case, backend, config)
    except gpu_share.MemoryHeld:  # judged already (its inputs' draw)
        raise
    except Exception as exc:  # noqa: BLE001 - anything else goes on as it is
        if not checks_for_oom(exc, backend, case):
            raise
        need = gpu_share.footprint(exc, backend.device)
        exc.__traceback__ = None
    crash.free_memory(backend.device)
    gpu_share.share().retried += 1
    try:
        with gpu_share.share().alone(backend.device, need):
            message = fn(spec, case, backend, config)
    except gpu_share.MemoryHeld:
        raise
    except Exception as exc:  # noqa: BLE001
        if not checks_for_oom(exc, backend, case):
            raise
        need = max(need, gpu_share.footprint(exc, backend.device))
        exc.__traceback__ = None
        failure, text = gpu_share.judge_oom_alone(backend.device, f"{type(exc).__name__}: {exc}", need)
        if failure == "oom_held":
            gpu_share.share().held += 1
            raise gpu_share.MemoryHeld(f"{case}: {text}") from None
        raise crash.CaseAborted(f"{case}: {text}") from None
    gpu_share.share().retried_passed += 1
    return message


def checks_for(spec: KernelSpec):
    out = [("deterministic", spec.deterministic, check_determinism)]
    if spec.batch_dim:
        out.append(("batch_invariant", spec.batch_invariant, check_batch_invariance))
    for prop in spec.properties:
        out.append((prop.name, True, lambda s, case, backend, config=None, prop=prop:
                    prop.check(case, backend.device, make_runner(s, case, backend, config))))
    return out


def test_properties(kernel_dtype, request: pytest.FixtureRequest) -> None:
    spec, dtype, _ = kernel_dtype
    config = request.config
    ctx = config.stash[CONTEXT]
    backend = ctx.backend
    findings: dict[str, dict] = {
        name: {"kernel": spec.name, "dtype": dtype, "backend": backend.name, "arch": backend.arch, "property": name,
               "claimed": claimed, "holds": True, "cases_checked": 0, "message": None, "repro": None}
        for name, claimed, _ in checks_for(spec)}
    request.node.user_properties.append((FINDINGS, list(findings.values())))

    shrink = ShrinkBudget(shrink_seconds(ctx.profile))

    def check(case: Case) -> None:
        if spec.batch_dim and case.shape.get(spec.batch_dim, 0) < 2:
            case = Case(case.kernel, case.dtype, {**case.shape, spec.batch_dim: 2}, case.layout, case.values, case.seed)
        if shrink.skip(case):
            return
        for name, claimed, fn in checks_for(spec):
            try:
                with timing.phase("property"):  # the property's own comparisons (its launches count as launch)
                    message = checked_alone_on_oom(fn, spec, case, backend, ctx.options.config)
            except gpu_share.MemoryHeld as held:  # not run: other processes held the GPU's memory
                warnings.warn(f"(checking {name!r}) {str(held)[:600]}", UserWarning, stacklevel=1)
                continue
            except (memcheck.MemoryViolation, interpreter.InterpreterGap) as problem:
                cfg = ctx.options.config or autotune.choose_config(spec, case.dtype, case.shape, backend)
                line = repro_line(request, case, options.config_args(spec, cfg, backend.family))
                shrink.failed(case, cfg, line)
                what = "the interpreter cannot run this: " if isinstance(problem, interpreter.InterpreterGap) else ""
                # Not a verdict on the property: the summary says it was stopped, never that it holds.
                findings[name].update(stopped=f"{case}: {what}{problem}"[:2000], repro=line)
                pytest.fail(f"{case} (checking {name!r}): {what}{problem}\nreproduce with: {line}{shrink.note()}",
                            pytrace=False)
            finding = findings[name]
            finding["cases_checked"] += 1
            if message is None:
                continue
            cfg = ctx.options.config or autotune.choose_config(spec, case.dtype, case.shape, backend)
            line = repro_line(request, case, options.config_args(spec, cfg, backend.family))
            if finding["holds"]:
                finding.update(holds=False, message=f"{case}: {message}"[:2000], repro=line)
            if claimed:
                shrink.failed(case, cfg, line)
                pytest.fail(f"property {name!r} does not hold for {case}\n{message}\nreproduce with: {line}"
                            f"{shrink.note()}", pytrace=False)

    if ctx.options.repro:
        check(repro_case(spec, dtype, ctx.options.repro))
        return
    current = settings.default
    compat.add_digest(check, f"properties-{spec.name}-{dtype}")
    run = settings(current, max_examples=max(2, current.max_examples // 2))(
        given(case_strategy(spec, dtype, backend.name, large=ctx.large_shapes))(check))
    for ex in reversed(spec.examples):
        run = example(Case(kernel=spec.name, dtype=dtype, **ex))(run)
    run()

