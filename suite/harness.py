"""Running one case: build inputs, poison outputs, launch, compare with the reference."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from kernels.spec import Case, KernelSpec
from suite import autotune, crash
from suite.results import json_number
from suite.tolerance import DOT_OPERAND_ROUNDOFF, Comparison, compare

INT_POISON = -94  # fits every integer dtype, int8 masks included


def poison(outputs: dict[str, torch.Tensor]) -> None:
    """Fill outputs so that an element the kernel never wrote cannot pass."""
    for t in outputs.values():
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        else:
            t.fill_(INT_POISON)


GUARD_ELEMENTS = 4096


def guard(outputs: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, int]]:
    """Move each contiguous output into the middle of a larger poisoned buffer, so that a
    store past either end (a dropped mask) lands in a guard region that is checked."""
    guards = {}
    for name, t in outputs.items():
        if not t.is_contiguous() or t.numel() == 0:
            continue
        buf = torch.empty(t.numel() + 2 * GUARD_ELEMENTS, dtype=t.dtype, device=t.device)
        poison({"buf": buf})
        outputs[name] = buf[GUARD_ELEMENTS:GUARD_ELEMENTS + t.numel()].view(t.shape)
        guards[name] = (buf, t.numel())
    return guards


def guard_violations(guards: dict[str, tuple[torch.Tensor, int]]) -> list[str]:
    problems = []
    for name, (buf, n) in guards.items():
        for where, region in (("before", buf[:GUARD_ELEMENTS]), ("past the end of", buf[GUARD_ELEMENTS + n:])):
            touched = ~torch.isnan(region) if region.dtype.is_floating_point else region != INT_POISON
            if touched.any():
                problems.append(f"{int(touched.sum())} elements written {where} output {name!r} (out-of-bounds store)")
    return problems


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@dataclass
class CaseResult:
    case: Case
    passed: bool
    error_ratio: float
    comparisons: list[Comparison] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    failure: str | None = None  # fault | oom, where the launch itself broke

    def message(self) -> str:
        if self.error:
            return self.error
        return "; ".join(c.detail for c in self.comparisons if not c.passed) or "ok"


def operand_roundoff(spec: KernelSpec, backend: Any) -> float:
    if spec.tolerance.uses_dot:
        return DOT_OPERAND_ROUNDOFF.get(backend.profile.fp32_dot_precision, 0.0)
    return 0.0


def run_case(spec: KernelSpec, case: Case, backend: Any, config: dict | None = None,
             inputs: dict[str, torch.Tensor] | None = None) -> CaseResult:
    """Run one case; ``inputs`` when the caller has already built them for this case."""
    start = time.perf_counter()
    if config is None:
        config = autotune.config_for(spec, case.dtype, case.shape, backend)
    try:
        with crash.watchdog(case):
            if inputs is None:
                inputs = spec.make_inputs(case, backend.device)
            outputs = spec.make_outputs(inputs, case)
            guards = guard(outputs)
            poison(outputs)
            spec.run(inputs, outputs, config)
            synchronize(backend.device)
    except Exception as exc:  # a compile or launch failure is a result, not a harness crash
        error = f"{type(exc).__name__}: {exc}".strip()[:2000]
        failure = crash.note_launch_error(exc, backend.device, case)
        exc.__traceback__ = None  # its frames hold the case's tensors
    else:
        error = None
    if error is not None:
        if failure == "fault":
            error = (f"GPU fault: {error} (the GPU context of this process is unusable; the rest of the run goes "
                     f"on in a fresh worker process)")
        elif failure == "oom":
            inputs = outputs = guards = None
            crash.free_memory(backend.device)
            error = f"out of memory: {error}"
        return CaseResult(case, False, float("inf"), error=error, duration_s=time.perf_counter() - start,
                          failure=failure)
    out_of_bounds = guard_violations(guards)
    if out_of_bounds:
        return CaseResult(case, False, float("inf"), error="; ".join(out_of_bounds),
                          duration_s=time.perf_counter() - start)
    try:
        ref = spec.reference(inputs, case)
        mags = spec.tolerance.magnitude(inputs, ref) if spec.tolerance.magnitude else {}
    except torch.OutOfMemoryError as exc:
        error = f"out of memory computing the float64 reference: {exc}"[:2000]
        exc.__traceback__ = None
        inputs = outputs = guards = None
        crash.free_memory(backend.device)
        return CaseResult(case, False, float("inf"), error=error, duration_s=time.perf_counter() - start, failure="oom")
    # An fp32 dot rounds its operands to TF32/XF32 where the arch does so by default.
    operand_u = operand_roundoff(spec, backend) if case.dtype == "fp32" else 0.0
    comparisons = [
        compare(name, outputs[name], ref[name], mags.get(name), reduction_length=spec.tolerance.reduction(case),
                safety=spec.tolerance.safety, operand_u=operand_u, accumulator=spec.tolerance.accumulator)
        for name in ref
    ]
    ratio = max((c.error_ratio for c in comparisons), default=0.0)
    return CaseResult(case, all(c.passed for c in comparisons), ratio, comparisons,
                      duration_s=time.perf_counter() - start)


def record(result: CaseResult, nodeid: str, repro: str) -> dict[str, Any]:
    return {
        **result.case.as_record(),
        "outcome": "passed" if result.passed else "failed",
        "error_ratio": json_number(result.error_ratio),
        "outputs": {c.output: {"error_ratio": json_number(c.error_ratio), "max_abs_error": json_number(c.max_abs_error)}
                    for c in result.comparisons},
        "message": None if result.passed else result.message()[:2000],
        **({"failure": result.failure} if result.failure else {}),
        "duration_s": round(result.duration_s, 4),
        "nodeid": nodeid,
        "repro": repro,
    }
