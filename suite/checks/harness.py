"""Running one case: build inputs, poison outputs, launch, compare with the reference."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from kernels.spec import Case, KernelSpec, Tolerance
from reports.failure_kinds import FailureKind
from suite.checks import (
    autotune,
    deep_stack,
    flushes,
    host_reference,
    interpreter,
    last_writer,
    launches,
    memcheck,
    numerics,
    numerics_envelope,
    returned,
    spec_code,
)
from suite.checks import restride as relayout
from suite.checks.tolerance import _MAGNITUDE_HINT as MAGNITUDE_HINT
from suite.checks.tolerance import DOT_OPERAND_ROUNDOFF, OutputCheck, check_output, loose_at_zero, loose_bound, read_back
from suite.session import options, stash
from suite.session.results import json_number
from suite.workers import crash, gpu_share, timing

INT_POISON = -94  # fits every integer dtype, int8 masks included
# A bool holds one byte that kernels write as 0 or 1; filled through a byte view with neither, an element never
# written is told apart from both values (-94 cast to bool is True, a value a mask kernel writes).
BOOL_POISON = 0x5A
# Every float output starts as a NaN with a payload no arithmetic produces (canonical NaNs have none), so an
# element the kernel never wrote is told apart from a NaN it wrote, also where the reference is NaN. The fp8
# formats with one or two NaN codes (e4m3fn, the FNUZ pair) have no such room: see unwritten().
_POISON_BITS = {torch.float64: 0x7FFCA5A5A5A5A5A5, torch.float32: 0x7FE5A5A5, torch.float16: 0x7E5A,
                torch.bfloat16: 0x7FE5, torch.float8_e5m2: 0x7D}
_INT_VIEW = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def poison(outputs: dict[str, torch.Tensor]) -> None:
    """Fill outputs so that an element the kernel never wrote cannot pass."""
    for t in outputs.values():
        bits = _POISON_BITS.get(t.dtype)
        if bits is not None:
            t.view(_INT_VIEW[t.element_size()]).fill_(bits)
        elif t.dtype == torch.bool:
            t.view(torch.uint8).fill_(BOOL_POISON)
        elif t.dtype.is_floating_point:
            t.fill_(float("nan"))
        else:
            t.fill_(INT_POISON)


def has_distinct_poison(dtype: torch.dtype) -> bool:
    return dtype in _POISON_BITS or not dtype.is_floating_point


def unwritten(t: torch.Tensor) -> torch.Tensor:
    """Where ``t`` still holds the poison. For fp8 formats without a distinct NaN this is every NaN."""
    bits = _POISON_BITS.get(t.dtype)
    if bits is not None:
        return t.view(_INT_VIEW[t.element_size()]) == bits
    if t.dtype == torch.bool:
        return t.view(torch.uint8) == BOOL_POISON
    if t.dtype.is_floating_point:
        return torch.isnan(t)
    return t == INT_POISON


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
    """Stores into the guard regions around each output, counted on the device and read back at once (one wait
    for the GPU, not two per output: with 16 workers on a GPU each wait is its turn)."""
    regions = [(name, where, region) for name, (buf, n) in guards.items()
               for where, region in ((("between the rows of", buf),) if n < 0 else  # a re-laid output's padding
                                     (("before", buf[:GUARD_ELEMENTS]), ("past the end of", buf[GUARD_ELEMENTS + n:])))]
    counts = read_back([(~unwritten(region)).sum() for _, _, region in regions])
    return [f"{int(count)} elements written {where} output {name!r} (out-of-bounds store)"
            for (name, where, _), count in zip(regions, counts, strict=True) if count]


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under ``t`` as bytes (a view, not a copy)."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def same_bits_at(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: the same bit pattern (a NaN equals itself; -0.0 differs from 0.0)."""
    view = _INT_VIEW.get(a.element_size()) if a.dtype != torch.bool else torch.int8
    if view is None:
        return (a == b) | (torch.isnan(a) & torch.isnan(b))
    return a.view(view) == b.view(view)


class InputSnapshot:
    """The inputs as make_inputs built them: a device copy of the storage under each tensor input (its padding
    included), to tell whether a launch or the reference changed any of them, and to put back the ones the spec
    lets the kernel write (``mutable_inputs``). Bytes are compared, so NaN payloads compare as themselves."""

    @torch.no_grad()
    def __init__(self, spec: KernelSpec, inputs: dict) -> None:
        self.tensors = _tensors(inputs)
        if missing := [name for name in spec.mutable_inputs if name not in self.tensors]:
            raise BrokenSpec(f"mutable_inputs names {missing}, but make_inputs returned no such tensor input "
                             f"({sorted(self.tensors)})")
        self.mutable = tuple(spec.mutable_inputs)
        self.copies: dict[int, torch.Tensor] = {}  # storage address -> its bytes as built
        for t in self.tensors.values():
            key = t.untyped_storage().data_ptr()
            if key not in self.copies:
                self.copies[key] = _storage_bytes(t).clone()

    def _was(self, t: torch.Tensor) -> torch.Tensor:
        copy = self.copies[t.untyped_storage().data_ptr()]
        return torch.empty(0, dtype=t.dtype, device=t.device).set_(copy.untyped_storage(), t.storage_offset(),
                                                                   t.shape, t.stride())

    @torch.no_grad()
    def restore(self) -> None:
        """Put the mutable inputs' storages back as they were built."""
        for name in self.mutable:
            t = self.tensors[name]
            _storage_bytes(t).copy_(self.copies[t.untyped_storage().data_ptr()])

    @torch.no_grad()
    def changes(self, allowed: Sequence[str] = ()) -> list[str]:
        """What changed since the inputs were built, input by input: the count and the first changed element, or
        bytes of an input's storage outside its elements (a layout's padding). ``allowed``: inputs that may change
        (a storage that holds one is not searched for bytes outside the others' elements)."""
        problems = []
        nows = {key: _storage_bytes(next(t for t in self.tensors.values() if t.untyped_storage().data_ptr() == key))
                for key in self.copies}
        # Every storage compared on its device and read back at once: one wait for the GPU per check, not one per input.
        same = dict(zip(self.copies, read_back([
            (now == self.copies[key]).all() if now.shape == self.copies[key].shape else torch.tensor(False)
            for key, now in nows.items()]), strict=True))
        for key, copy in self.copies.items():
            if same[key]:
                continue
            on_it = {n: t for n, t in self.tensors.items() if t.untyped_storage().data_ptr() == key}
            now = nows[key]
            found = False
            for name, t in on_it.items():
                if name in allowed or t.numel() == 0:
                    continue
                was = self._was(t)
                differ = ~same_bits_at(t, was)
                if bool(differ.any()):
                    found = True
                    first = tuple(int(i) for i in differ.nonzero()[0])
                    problems.append(f"input {name!r}: {int(differ.sum())} of {t.numel()} elements changed (first at "
                                    f"{first}: was {was[first].item()!r}, now {t[first].item()!r})")
            if not found and not any(n in allowed for n in on_it):
                byte = int((now != copy).nonzero()[0][0])
                problems.append(f"input(s) {sorted(on_it)}: {int((now != copy).sum())} byte(s) of their memory "
                                f"outside their elements changed (first at byte {byte} of the storage, such as a "
                                f"layout's padding between rows)")
        return problems


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@dataclass
class CaseResult:
    case: Case
    passed: bool
    error_ratio: float
    checks: list[OutputCheck] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    failure: FailureKind | None = None  # how the case broke other than by a wrong value (None: passed, or wrong)
    config: dict[str, Any] = field(default_factory=dict)  # the config the outcome is about (the failing one)
    configs_run: int = 1
    skipped_configs: list[str] = field(default_factory=list)  # extra configs this device cannot launch
    ran: list[dict[str, Any]] = field(default_factory=list)  # the configs launched on this case, in order
    elements: int = 0  # output elements compared (0: an empty case, which tests nothing)
    compared: dict[str, int] = field(default_factory=dict)  # the elements of each declared output
    note: str = ""  # what the interpreter did that may explain a failure (see suite/checks/interpreter.py)
    # Why the tolerance's magnitude would pass a result off by 50% here; "": nothing to judge (loose_tolerance).
    loose: str | None = None
    footprint: int = 0  # out of memory: bytes the case needed of the GPU (suite/workers/gpu_share.py: footprint)
    unchecked: list[str] = field(default_factory=list)  # checks that cannot apply to it (suite/checks/returned.py)
    heuristics: dict[str, dict[str, Any]] = field(default_factory=dict)  # what @triton.heuristics computed, per kernel
    # The config each @triton.autotune kernel ran under the config the outcome is about (None: the spec has no
    # autotuned kernel and none ran; {}: it has, and the case launched none of them).
    autotuned: dict[str, dict[str, Any]] | None = None
    # Whether a launch of the spec's own kernels (jit_fn, jit_fns) received one of its outputs, under any config.
    own_wrote: bool = False
    # A cause the suite names for every problem of the case (the interpreter's fp8 rounding, which may have made any
    # value of it wrong): part of ``note``, and carried by each of :meth:`problems`.
    cause: str = ""
    restrided: list[str] = field(default_factory=list)  # the tensors the case's restride re-laid (restride.py)
    rows16: bool = False  # a tensor an aligned slice re-lays has rows of a width divisible by 16 (restride.rows16)
    raised: bool = False  # the launcher raised an error of its own before launching any kernel: it refused the case
    # --numerics: the approximate instructions whose error envelope flips the verdict (never a failure by itself)
    vendor_sensitive: str = ""

    def message(self) -> str:
        if self.error:
            return self.error + self.note
        return ("; ".join(c.detail for c in self.checks if not c.passed) or "ok") + self.note

    def problems(self) -> list[str]:
        """Each problem of a failing case on its own (each output's each problem, or the error) after the case's
        line (a known issue may describe where it fails: a dim, a layout), without the suite's notes but the cause it
        names for all of them (``cause``): what a known issue's pattern must describe, one by one. The
        interpreter's fp8 rounding is such a cause: the note tells the author to declare a known issue of its
        words, and a conversion that drops a carry can make any value of the case wrong."""
        found = [p for c in self.checks if not c.passed for p in (c.problems or (c.detail,))]
        return [f"{self.case}\n{p}{self.cause}" for p in (found or ([self.error] if self.error else []))]


class BrokenSpec(Exception):  # noqa: N818 - it names the finding
    """The kernel's spec, not the kernel, is wrong: the case fails with failure SPEC."""


def operand_roundoff(tolerance: Tolerance, backend: Any) -> float:
    if tolerance.uses_dot:
        return DOT_OPERAND_ROUNDOFF.get(backend.profile.fp32_dot_precision, 0.0)
    return 0.0


def _tensors(values: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {k: v for k, v in values.items() if isinstance(v, torch.Tensor)}


def declared_outputs(spec: KernelSpec, outputs: Any, what: str) -> dict[str, torch.Tensor]:
    """``outputs`` (from make_outputs or the reference) holds exactly the spec's declared outputs, as tensors."""
    if not isinstance(outputs, dict):
        raise BrokenSpec(f"{what} returned {type(outputs).__name__}, not a dict of the declared outputs "
                         f"{list(spec.outputs)}")
    got, declared = list(outputs), list(spec.outputs)
    if set(got) != set(declared):
        missing = [o for o in declared if o not in outputs]
        extra = [o for o in got if o not in spec.outputs]
        raise BrokenSpec(f"{what} returned outputs {got}, the spec declares {declared}"
                         + (f" (missing {missing}: they would never be compared)" if missing else "")
                         + (f" (undeclared {extra})" if extra else ""))
    if bad := [k for k, v in outputs.items() if not isinstance(v, torch.Tensor)]:
        raise BrokenSpec(f"{what} returned non-tensor outputs {bad}")
    return outputs


def prepare_outputs(spec: KernelSpec, inputs: dict, case: Case,
                    met: list[str] | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """The outputs of one launch and their guards: make_outputs' tensors moved between poisoned guard regions, each
    filled with the poison, or with its initial value where the spec declares one (``initial_outputs``). None yet
    where ``run`` returns the outputs its launcher allocates (suite/checks/returned.py): :func:`launch` fills them in."""
    if returned.returns_outputs(spec):
        return {}, {}
    outputs = declared_outputs(spec, spec_code.call(spec, "make_outputs", spec.make_outputs, inputs, case), "make_outputs")
    outputs, changed = relayout.outputs(spec, case, outputs, poison)  # the case's restride, where it takes outputs
    if met is not None:
        met += [f"output {n}" for n in changed if f"output {n}" not in met]
    guards = guard(outputs)
    for name in changed:  # a re-laid output's row padding, poisoned by restride.outputs: checked as a guard region
        if (pad := relayout.padding(outputs[name])) is not None:
            guards[name] = (pad, -1)
    poison(outputs)
    for name, source in spec.initial_outputs.items():
        out = outputs[name]
        if not isinstance(source, str):
            out.fill_(source)
            continue
        if source not in inputs:
            raise BrokenSpec(f"initial_outputs[{name!r}] names input {source!r}, but make_inputs returned "
                             f"{sorted(inputs)}")
        src = inputs[source]
        if not isinstance(src, torch.Tensor) or src.shape != out.shape or src.dtype != out.dtype:
            got = f"{src.dtype} {tuple(src.shape)}" if isinstance(src, torch.Tensor) else type(src).__name__
            raise BrokenSpec(f"initial_outputs[{name!r}]: input {source!r} is {got}, output {name!r} is {out.dtype} "
                             f"{tuple(out.shape)}; an output starts as a copy of an input of its shape and dtype")
        out.copy_(src)
    return outputs, guards


def run_spec(spec: KernelSpec, inputs: dict, outputs: dict, config: dict) -> None:
    """``spec.run`` with ``config``; an autotuned kernel runs that config and times nothing (suite/checks/launches.py)."""
    with launches.chosen(config):
        _take_returned(spec, outputs, deep_stack.call(spec.run, inputs, outputs, config))


def _take_returned(spec: KernelSpec, outputs: dict, value: Any) -> None:
    """Where ``run`` returns the outputs its launcher allocated (make_outputs=None), put them into ``outputs``."""
    if returned.returns_outputs(spec):
        got, problem = returned.collect(spec, value)
        if problem:
            raise BrokenSpec(problem)
        outputs.clear()
        outputs.update(got)


def launch(spec: KernelSpec, inputs: dict, outputs: dict, config: dict, watch: bool = False,
           received: spec_code.Received | None = None,
           attempt: list[launches.Launches] | None = None) -> launches.Launches:
    """``spec.run`` with ``config``: an autotuned kernel runs that config (suite/checks/launches.py); the launches it
    made (also put in ``attempt`` as they are made, for a caller whose launch raised). ``watch``: note who changes
    each output element (suite/checks/last_writer.py; ``seen.watch``); ``received``: count what the spec's own
    kernels receive (suite/checks/spec_code.py)."""
    watcher = None
    if watch and returned.returns_outputs(spec):  # the launcher's own tensors, known once run returns them
        watcher = last_writer.ReturnedWatch(own_keys(spec), set(spec.host_epilogue))
    elif watch and outputs:
        watcher = last_writer.Watch(outputs, own_keys(spec), set(spec.initial_outputs))
    with launches.recording(watcher, received) as seen, launches.chosen(config):
        if attempt is not None:
            attempt.append(seen)
        _take_returned(spec, outputs, deep_stack.call(spec.run, inputs, outputs, config))
    return seen


def own_keys(spec: KernelSpec) -> set[str]:
    """The spec's own @triton.jit functions as launches.kernel_key names them."""
    return {launches.kernel_key(k.fn) for k in spec.jit_kernels()}


def launched_nothing(spec: KernelSpec, case: Case, config: dict, outputs: dict[str, torch.Tensor],
                     seen: launches.Launches) -> str | None:
    """Why a run that launched no @triton.jit function cannot pass, or None: outputs with elements that the launcher
    filled another way (torch for small inputs, say) test the launcher's fallback, never the kernel, unless the spec
    declares that path (``torch_fallback``). A case with no output element has nothing to launch for."""
    if seen.kernels or not any(t.numel() for t in outputs.values()):
        return None
    try:
        if spec.torch_fallback is not None and spec_code.call(spec, "torch_fallback", spec.torch_fallback, case, config):
            return None
    except spec_code.SpecRaised as exc:
        return str(exc)
    declared = ("its torch_fallback does not cover this case" if spec.torch_fallback is not None
                else "the spec declares no torch_fallback")
    return (f"the run launched no @triton.jit function, yet its outputs have elements: the launcher computed them "
            f"another way (a torch path for small inputs?), so the kernel was never tested on this case, and "
            f"{declared}. Launch the kernel for every case, or declare the path: KernelSpec(torch_fallback=lambda "
            f"case, config: ...) true exactly where the launcher skips the kernel")


def unreached_outputs(spec: KernelSpec, outputs: dict[str, torch.Tensor], seen: launches.Launches) -> str | None:
    """Why the run's outputs cannot be checked: an output that no kernel launch received (the launcher allocated its
    own and copied it in), or None. A run that launched nothing is launched_nothing's to report."""
    if not seen.kernels or returned.returns_outputs(spec):  # returned outputs are the launcher's own tensors
        return None
    missed = [name for name in spec.outputs if outputs[name].numel() and not seen.reached(outputs[name])]
    if not missed:
        return None
    kernels = ", ".join(sorted(set(seen.kernels)))
    return (f"output(s) {missed} reached none of the run's {len(seen.kernels)} kernel launch(es) ({kernels}): the "
            f"launcher allocated its own output and the result was copied in, so the poison and guard regions cannot "
            f"see what the kernel wrote. Launch the @triton.jit function on the suite's tensors (outputs[{missed[0]!r}]"
            f"), as the launcher does with the tensors it allocates, or test the launcher as it is: make_outputs=None "
            f"and run returns what it returns")


def not_the_kernels(spec: KernelSpec, outputs: dict[str, torch.Tensor], seen: launches.Launches) -> str | None:
    """Why the values the case would judge are not the spec's own kernel's (suite/checks/last_writer.py), or None:
    written after its last launch, written by another before it and never by it, an output it changed nowhere, or
    a case whose launches (of other kernels) included none of its own."""
    watch = seen.watch
    if watch is None or not seen.kernels or not any(t.numel() for t in outputs.values()):
        return None
    kernels = ", ".join(sorted(k.name for k in spec.jit_kernels())) or "its @triton.jit functions"
    if not watch.own_launches:
        others = ", ".join(sorted(seen.by_kernel) or sorted(set(seen.kernels)))
        own = ", ".join(sorted(watch.own))
        return last_writer.message([f"the case launched {others}, none of them the spec's own kernel(s) {own}"])
    if isinstance(watch, last_writer.ReturnedWatch):
        problems = watch.problems(outputs, kernels)
        return last_writer.message(problems, returned=True) if problems else None
    # Every element still the poison, of a dtype whose poison tells (no value is it, or an integer output, which
    # the never-written check runs again on a second poison): that check judges whether the kernel wrote it.
    all_poison = frozenset(name for name, t in outputs.items()
                           if name not in spec.initial_outputs and t.numel() and has_distinct_poison(t.dtype)
                           and bool(unwritten(t).all()))
    problems = watch.problems(kernels, all_poison)
    return last_writer.message(problems) if problems else None


def check_reference(spec: KernelSpec, case: Case, inputs: dict, outputs: dict[str, torch.Tensor],
                    ref: Any) -> dict[str, torch.Tensor]:
    """The reference is one the outputs can be held to: exactly the declared outputs, of the outputs' shapes, in
    float64/float32 for float outputs, and finite where the inputs are (unless the value class expects otherwise)."""
    ref = declared_outputs(spec, ref, "the reference")
    for name in spec.outputs:
        r, o = ref[name], outputs[name]
        if tuple(r.shape) != tuple(o.shape):
            raise BrokenSpec(f"the reference's {name!r} has shape {tuple(r.shape)}, the output {tuple(o.shape)}")
        if o.dtype.is_floating_point and r.dtype not in (torch.float64, torch.float32):
            raise BrokenSpec(f"the reference's {name!r} is {r.dtype}; compute it in float64 (or float32) so that the "
                             f"tolerance measures the kernel, not the reference")
    floats = [t for t in _tensors(inputs).values() if t.dtype.is_floating_point and t.numel()]
    if case.values not in spec.nonfinite_reference and all(bool(torch.isfinite(t.float()).all()) for t in floats):
        for name in spec.outputs:
            r = ref[name]
            if r.dtype.is_floating_point and not bool(torch.isfinite(r).all()):
                bad = ~torch.isfinite(r)
                first = tuple(int(i) for i in bad.nonzero()[0])
                raise BrokenSpec(
                    f"the reference's {name!r} holds {int(bad.sum())} NaN/inf (first at {first}: "
                    f"{r[first].item()}) although every input is finite (value class {case.values!r}); a NaN "
                    f"reference lets any output pass. Fix the reference, or list {case.values!r} in the spec's "
                    f"nonfinite_reference if the kernel must reproduce it")
    return ref


class _Stop(Exception):  # noqa: N818 - control flow inside run_case
    def __init__(self, result: CaseResult) -> None:
        self.result = result


class _DoesNotFit(Exception):  # noqa: N818 - control flow inside run_case
    """An extra config that this GPU cannot launch (more shared memory than it has): not a wrong result."""


@dataclass
class _CaseState:
    """What one case keeps from one of its configs to the next (run_case): built once, judged once, and what the
    launches said. Emptied (clear) where the case stops out of memory, so that nothing holds its tensors."""

    inputs: dict[str, Any] | None = None  # make_inputs' inputs (or the caller's), drawn once for every config
    snapshot: InputSnapshot | None = None  # the inputs as drawn: restored before each launch, compared after
    ref: dict[str, torch.Tensor] | None = None  # the float64 reference, computed once and checked (check_reference)
    mags: dict[str, torch.Tensor] | None = None  # each output's magnitude for its tolerance (magnitudes)
    compared: dict[str, int] = field(default_factory=dict)  # the elements of each declared output
    # (the outputs' dtypes, loose_tolerance without magnitudes): the spec's own rule, judged once per dtypes
    loose_rule: tuple[tuple, str | None] | None = None
    loose: str | None = None  # loose_tolerance with the magnitudes, the same for every config: judged once
    loose_judged: bool = False  # whether ``loose`` was judged (None is one of its answers)
    loose_zero: str | None = None  # loose_where_zero with the magnitudes: a broken spec in any case
    autotuned: dict[str, dict[str, Any]] | None = None  # the config each @triton.autotune kernel ran, last config's
    heuristics: dict[str, dict[str, Any]] = field(default_factory=dict)  # what @triton.heuristics computed
    own_wrote: bool = False  # a launch of the spec's own kernels received an output (under any config so far)
    restrided: list[str] = field(default_factory=list)  # the tensors the case's restride re-laid (restride.py)
    rows16: bool = False  # restride.rows16 of the inputs as built
    launched: bool = False  # the last launch attempt reached a @triton.jit function (before it raised, if it did)
    undeclared: bool = False  # the contract probe's case: a launcher's own path (no kernel, own copies) is judged

    def clear(self) -> None:
        fresh = _CaseState()
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(fresh, f.name))


def run_case(spec: KernelSpec, case: Case, backend: Any, config: dict | None = None,
             inputs: dict[str, torch.Tensor] | None = None, extra_configs: Sequence[dict] = ()) -> CaseResult:
    """Run one case with ``config`` (the autotune cache's or the family default when None), then with each of
    ``extra_configs`` on the same inputs against the same reference: every config must agree with it, and the
    result names the first that does not. ``inputs`` when the caller has already built them for this case."""
    start = time.perf_counter()
    if config is None:
        config = autotune.choose_config(spec, case.dtype, case.shape, backend)
    configs = [dict(config), *(dict(c) for c in extra_configs)]
    state = _CaseState(inputs=inputs)
    current, default = configs[0], spec.default_config_for(backend.family)
    interpreter.take_fp8_casts()
    numerics.take_flushes()
    numerics.take_ran()
    numerics_envelope.take_used()

    def result(passed: bool, ratio: float, checks=(), error=None, failure=None) -> CaseResult:
        if error is not None and current != default:
            error = f"with config {json.dumps(current, sort_keys=True)}: {error}"
        note = fp8 = ""
        if not passed and failure != FailureKind.SPEC and (fp8 := interpreter.fp8_note(interpreter.take_fp8_casts())):
            note += fp8  # the interpreter's rounding, which no tolerance (magnitude) would fix: no hint at one
            checks = [dataclasses.replace(c, detail=c.detail.replace(MAGNITUDE_HINT, "")) for c in checks]
        if not passed and failure != FailureKind.SPEC:
            note += numerics.flush_note(numerics.take_flushes(), numerics.take_ran())  # the modelled GPU's arithmetic
        heuristics = dict(state.heuristics)
        if not passed:
            note += launches.heuristics_line(heuristics)
        return CaseResult(case, passed, ratio, list(checks), error, time.perf_counter() - start, failure,
                          dict(current), configs_run=configs.index(current) + 1, note=note,
                          unchecked=returned.unchecked(spec), heuristics=heuristics,
                          autotuned=state.autotuned, cause=fp8, restrided=list(state.restrided),
                          rows16=state.rows16)

    worst: CaseResult | None = None
    sensitive = ""
    skipped: list[str] = []
    ran: list[dict] = []
    try:
        for current in configs:
            if current is not configs[0]:
                gpu_share.between_configs()  # a case waiting to run alone waits for one config, not all of them
            try:
                checks = _run_config(spec, case, backend, current, state, result, extra=current is not configs[0])
            except _DoesNotFit as exc:
                skipped.append(f"{json.dumps(current, sort_keys=True)} ({exc})")
                continue
            ran.append(current)
            ratio = max((c.error_ratio for c in checks), default=0.0)
            outcome = result(all(c.passed for c in checks), ratio, checks)
            outcome.vendor_sensitive = _envelope(spec, case, backend, current, state, result, outcome)
            sensitive = sensitive or outcome.vendor_sensitive
            if not outcome.passed:
                if outcome.vendor_sensitive:
                    outcome.note += f"\n{outcome.vendor_sensitive}"
                outcome.ran, outcome.skipped_configs = ran, skipped
                outcome.compared = dict(state.compared)
                outcome.elements = sum(outcome.compared.values())
                if current != default:  # named wherever the reproduction line must carry it (--config)
                    outcome.error = f"with config {json.dumps(current, sort_keys=True)}: {outcome.message()}"
                return outcome
            if worst is None or outcome.error_ratio > worst.error_ratio:
                worst = outcome
    except _Stop as stop:
        stop.result.ran, stop.result.skipped_configs = [*ran, current], skipped
        return stop.result
    worst.configs_run, worst.duration_s = len(ran), time.perf_counter() - start
    worst.compared = dict(state.compared)
    worst.own_wrote = state.own_wrote
    worst.elements = sum(worst.compared.values())
    worst.skipped_configs, worst.ran = skipped, ran
    worst.loose = state.loose
    worst.vendor_sensitive = worst.vendor_sensitive or sensitive
    return worst


ENVELOPE_WINDOW = (0.25, 4.0)  # worst error/bound of the cases run again at the envelope's ends (numerics_envelope)


def _envelope(spec: KernelSpec, case: Case, backend: Any, config: dict, state: _CaseState, result,
              outcome: CaseResult) -> str:
    """Under --numerics, a case that ran an approximate fp32 instruction and is judged on its values within a factor
    of four of its bound (a pass above a quarter of it, a failure below four times it) runs again at its
    envelope's ends (suite/checks/numerics_envelope.py): "vendor-sensitive: ..." where one gives the other verdict,
    naming the operations that do it alone where any does ("each flip it"), else all of them ("together"); "" where
    none does. What the case counted (flushes, the
    modelled operations, fp8 casts) is left as the nominal run left it."""
    used, active = numerics_envelope.take_used(), stash.session().numerics
    low, high = ENVELOPE_WINDOW
    if (active is None or not used or outcome.failure is not None or outcome.error
            or not low <= outcome.error_ratio <= high):
        return ""
    session = stash.session()
    counters = (session.numerics_flushes, session.numerics_ran, session.fp8_casts)
    kept = [dict(c) for c in counters]
    try:
        names = sorted(used)
        flipped = _flips(spec, case, backend, config, state, result, outcome.passed, None, numerics_envelope.ENDS)
        if flipped is None:
            return ""
        way, ratio = flipped
        alone = [n for n in names if len(names) > 1 and _flips(spec, case, backend, config, state, result,
                                                                outcome.passed, frozenset({n}), (way,))]
        culprits = alone or names
    finally:
        for counter, before in zip(counters, kept, strict=True):
            counter.clear()
            counter.update(before)
        numerics_envelope.take_used()
    verb = "flips" if len(culprits) == 1 else "each flip" if alone else "together flip"
    how = {"down": "every result moved down", "up": "every result moved up",
           "mixed": "each result moved a way of its own"}[way]
    return (f"vendor-sensitive: {numerics_envelope.describe(active.model.vendor, active.profile, culprits)} "
            f"{verb} it (at the interpreter's results it "
            f"{'passes' if outcome.passed else 'fails'}, worst error/bound {outcome.error_ratio:.3g}; with {how} "
            f"it {'fails' if outcome.passed else 'passes'}, {ratio:.3g}): its verdict on that GPU is the "
            f"instruction's, not the kernel's alone (docs/checks.md)")


def _flips(spec: KernelSpec, case: Case, backend: Any, config: dict, state: _CaseState, result, passed: bool,
           only: frozenset[str] | None, ways: Sequence[str]) -> tuple[str, float] | None:
    """The first of ``ways`` (envelope ends) at which the case's verdict is not ``passed``, and its worst
    error/bound there; None where none flips it."""
    for way in ways:
        with numerics_envelope.at(numerics_envelope.End(way, only)):
            try:
                checks = _launch_and_check(spec, case, backend, config, state, result, extra=True)
                verdict, ratio = all(c.passed for c in checks), max((c.error_ratio for c in checks), default=0.0)
            except _Stop as stop:
                verdict, ratio = False, stop.result.error_ratio
            except _DoesNotFit:
                continue
        if verdict != passed:
            return way, ratio
    return None


def _run_config(spec: KernelSpec, case: Case, backend: Any, config: dict, state: _CaseState, result,
                extra: bool = False) -> list[OutputCheck]:
    """Launch one config on fresh poisoned, guarded outputs and check them; _Stop with the result where the case
    ends early (a launch that broke, a broken spec, an out-of-bounds access, out of memory anywhere: the input
    draw, the launch, the reference or the comparison's float64 copies); _DoesNotFit for an ``extra`` config the
    device cannot launch (the case's own config must fit: that is a failure)."""
    try:
        return _launch_and_check(spec, case, backend, config, state, result, extra)
    except torch.OutOfMemoryError as exc:  # past the launch: the guards, the snapshot or the comparison
        raise _out_of_memory(exc, "checking the outputs", backend, state, result) from None


def _out_of_memory(exc: BaseException, doing: str, backend: Any, state: _CaseState, result) -> _Stop:
    """The case's stop for an out-of-memory error while ``doing``: its footprint taken while the error's frames still
    hold the case's tensors (suite/workers/gpu_share.py), then everything it holds freed."""
    error = f"out of memory {doing}: {type(exc).__name__}: {exc}"[:2000]
    need = gpu_share.footprint(exc, backend.device)
    exc.__traceback__ = None
    state.clear()
    crash.free_memory(backend.device)
    stopped = result(False, math.inf, error=error, failure=FailureKind.OOM)
    stopped.footprint = need
    return _Stop(stopped)


def _launch_and_check(spec: KernelSpec, case: Case, backend: Any, config: dict, state: _CaseState, result,
                      extra: bool) -> list[OutputCheck]:
    """One config of the case, in its steps: launched on fresh outputs; what the launch did besides its values (a
    checker's report, outputs no launch received, guards, inputs changed); the reference; the spec's own rules that
    read it; then each output against the reference. A step that ends the case raises _Stop with its result."""
    outputs, guards, seen = _launch(spec, case, backend, config, state, result, extra)
    _check_launch(spec, state, outputs, guards, seen, result)
    _reference(spec, case, backend, config, state, outputs, result)
    _check_spec_rules(spec, case, backend, config, state, outputs, seen, result)
    with timing.phase("check"):
        return _check_outputs(spec, case, backend, config, state.inputs, outputs, state.ref, state.mags)


def _launch(spec: KernelSpec, case: Case, backend: Any, config: dict, state: _CaseState, result,
            extra: bool) -> tuple[dict[str, torch.Tensor], dict, launches.Launches]:
    """The case's inputs (drawn and snapshotted once, restored before each launch), fresh poisoned outputs between
    their guards, and the launch of ``config``: (outputs, guards, what the launch received)."""
    try:
        with crash.watchdog(case, options.config_args(spec, config, backend.family)), memcheck.scope(spec.name):
            if state.inputs is None:
                with timing.phase("inputs"):
                    state.inputs = spec_code.call(spec, "make_inputs", spec.make_inputs, case, backend.device)
                if problem := (spec_code.unbuilt_layout(spec, case, state.inputs)
                               or spec_code.unbuilt_values(spec, case, state.inputs) or relayout.unknown(case.restride)):
                    raise BrokenSpec(problem)
                state.rows16 = relayout.rows16(spec, state.inputs)
                state.inputs, state.restrided = relayout.inputs(spec, case, state.inputs)
                state.undeclared = relayout.undeclared(spec, case)
            if state.snapshot is None:
                with timing.phase("inputs"):
                    state.snapshot = InputSnapshot(spec, state.inputs)
            state.snapshot.restore()
            with timing.phase("launch"):
                outputs, guards = prepare_outputs(spec, state.inputs, case, state.restrided)
                got = spec_code.received(spec, case, own_keys(spec))
                attempt: list[launches.Launches] = []
                state.launched = False
                try:
                    seen = launch(spec, state.inputs, outputs, config, watch=True, received=got, attempt=attempt)
                finally:
                    state.launched = bool(attempt and attempt[0].kernels)
                synchronize(backend.device)
            if problem := spec_code.unreceived_values(spec, case, got, outputs):
                raise BrokenSpec(problem)
            if seen.autotuned or launches.may_autotune(spec, config):
                state.autotuned = dict(seen.autotuned)  # this config's launches: what the record says ran
            state.heuristics.update(seen.heuristics)
    except (BrokenSpec, spec_code.SpecRaised) as exc:
        raise _Stop(result(False, math.inf, error=f"broken spec: {exc}", failure=FailureKind.SPEC)) from None
    except Exception as exc:  # a compile or launch failure is a result, not a harness crash
        raise _launch_error(exc, spec, case, backend, state, result, extra) from None
    return outputs, guards, seen


def _launch_error(exc: Exception, spec: KernelSpec, case: Case, backend: Any, state: _CaseState, result,
                  extra: bool) -> _Stop | _DoesNotFit:
    """What a launch that raised ``exc`` was, as the exception that ends it: a memory checker's finding, what the
    interpreter cannot run (or evaluates otherwise), a broken spec, an ``extra`` config that does not fit, else a
    fault, out of memory (its footprint taken first, then its memory freed) or the launch's own error."""
    if violation := memcheck.violation_in(exc):
        exc.__traceback__ = None
        return _Stop(result(False, math.inf, error=str(violation), failure=FailureKind.MEMORY))
    if gap := interpreter.gap_in(exc):
        exc.__traceback__ = None
        if isinstance(gap, interpreter.SemanticGap):  # neither failed nor passed: the test skips, saying why
            return _Stop(result(False, math.inf, error=str(gap), failure=FailureKind.NOT_CHECKABLE))
        return _Stop(result(False, math.inf, error=f"the interpreter cannot run this: {gap}",
                            failure=FailureKind.INTERPRETER))
    if isinstance(exc, launches.NotAnAutotuneConfig):
        return _Stop(result(False, math.inf, error=f"broken spec: {exc}", failure=FailureKind.SPEC))
    if unpassed := launches.unpassed_constexpr(spec, exc):
        exc.__traceback__ = None
        return _Stop(result(False, math.inf, error=f"broken spec: {unpassed}", failure=FailureKind.SPEC))
    if extra and type(exc).__name__ == "OutOfResources":
        exc.__traceback__ = None
        return _DoesNotFit(str(exc).split(".")[0])
    error = f"{type(exc).__name__}: {exc}".strip()[:2000]
    failure = crash.note_launch_error(exc, backend.device, case)
    need = gpu_share.footprint(exc, backend.device) if failure == FailureKind.OOM else 0  # while its frames hold the case
    exc.__traceback__ = None  # its frames hold the case's tensors
    found = memcheck.sanitizer_report(wait_s=5.0 if failure == FailureKind.FAULT else 0.0)
    if failure == FailureKind.FAULT:
        error = (f"GPU fault: {error} (the GPU context of this process is unusable; the rest of the run goes "
                 f"on in a fresh worker process)")
        if found:
            error, failure = f"{found}\n{error}", FailureKind.MEMORY
        elif os.environ.get(memcheck.SANITIZER_ENV):
            error += f" (under --memcheck: the checker's log is in {os.environ[memcheck.SANITIZER_ENV]})"
    if failure == FailureKind.OOM:
        state.clear()
        crash.free_memory(backend.device)
        error = f"out of memory: {error}"
    stopped = result(False, math.inf, error=error, failure=failure)
    stopped.footprint = need
    stopped.raised = failure is None and not state.launched  # the launcher refused it: raised before any kernel
    return _Stop(stopped)


def _check_launch(spec: KernelSpec, state: _CaseState, outputs: dict[str, torch.Tensor], guards: dict,
                  seen: launches.Launches, result) -> None:
    """What the launch did besides its values: a memory checker's report, a declared output no launch received, a
    store into a guard region, an input it changed (restored after)."""
    if found := memcheck.sanitizer_report():
        raise _Stop(result(False, math.inf, error=found, failure=FailureKind.MEMORY))
    if not state.undeclared and (problem := unreached_outputs(spec, outputs, seen)):
        raise _Stop(result(False, math.inf, error=f"broken spec: {problem}", failure=FailureKind.SPEC))
    if problem := not_the_kernels(spec, outputs, seen):
        raise _Stop(result(False, math.inf, error=problem, failure=FailureKind.SPEC))
    out_of_bounds = guard_violations(guards)
    if out_of_bounds:
        raise _Stop(result(False, math.inf, error="; ".join(out_of_bounds), failure=FailureKind.MEMORY))
    state.compared = {name: outputs[name].numel() for name in spec.outputs}
    if own := {launches.kernel_key(kernel.fn) for kernel in spec.jit_kernels()}:  # the spec's own got an output?
        state.own_wrote = state.own_wrote or any(seen.reached_by(own, outputs[name]) for name in spec.outputs)
    with timing.phase("check"):
        clobbered = state.snapshot.changes(allowed=spec.mutable_inputs)
        state.snapshot.restore()
    if clobbered:
        raise _Stop(result(False, math.inf, error=(
            f"the kernel changed its input: {'; '.join(clobbered)}. Only outputs may be written; a kernel that "
            f"works in place starts its output from the input (initial_outputs), and a workspace it may leave "
            f"changed is declared in mutable_inputs")))


def _reference(spec: KernelSpec, case: Case, backend: Any, config: dict, state: _CaseState,
               outputs: dict[str, torch.Tensor], result) -> None:
    """The float64 reference and the outputs' magnitudes, computed once per case (the first config's launch gives
    the outputs its contract is checked against): on the GPU, else on the host where the GPU has not the memory for
    it even alone; a reference that raised, broke its contract or changed its inputs is a broken spec."""
    if state.ref is not None:
        return
    inputs = state.inputs
    try:
        with crash.watchdog(case, options.config_args(spec, config, backend.family), "a hung float64 reference"), \
                timing.phase("reference"):
            state.ref = check_reference(spec, case, inputs, outputs, spec.reference(inputs, case))
            state.mags = magnitudes(spec, inputs, state.ref)
    except torch.OutOfMemoryError as exc:
        # Beside the GPU's other workers: the case runs again alone where it fits (its reference then takes
        # seconds on the GPU; on the host a four-H200 nightly's cross_entropy 8192 x 262144 took 96 s, and
        # reading it back onto the GPU chunk by chunk for each of 12 configs 78 s more). The host is for a
        # reference too large for the GPU even alone.
        if gpu_share.worth_alone(backend.device, gpu_share.footprint(exc, backend.device)):
            raise _out_of_memory(exc, "computing the float64 reference", backend, state, result) from None
        exc.__traceback__ = None  # its frames hold what the reference allocated on the GPU
        with timing.phase("reference"):
            host = host_reference.on_host(spec, case, inputs, backend.device, lambda inp, ref: (
                (checked := check_reference(spec, case, inp, outputs, ref)), magnitudes(spec, inp, checked)))
        if host is None:
            raise _out_of_memory(exc, "computing the float64 reference", backend, state, result) from None
        state.ref, state.mags = host
    except BrokenSpec as exc:
        raise _Stop(result(False, math.inf, error=f"broken spec: {exc}", failure=FailureKind.SPEC)) from None
    except Exception as exc:  # noqa: BLE001 - the spec's own code failed: a broken spec, recorded as such
        exc.__traceback__ = None
        raise _Stop(result(False, math.inf, error=f"broken spec: the reference raised {type(exc).__name__}: "
                                                  f"{exc}"[:2000], failure=FailureKind.SPEC)) from None
    if changed := state.snapshot.changes():
        raise _Stop(result(False, math.inf, failure=FailureKind.SPEC, error=(
            f"broken spec: the reference (or the tolerance's magnitude) changed its inputs: {'; '.join(changed)}. "
            f"It must leave them as built: a float64 input's .double() is the input itself, so an in-place "
            f"operation on it (mul_, +=, copy_) writes the input; compute out of place or on a .clone()")))


def _check_spec_rules(spec: KernelSpec, case: Case, backend: Any, config: dict, state: _CaseState,
                      outputs: dict[str, torch.Tensor], seen: launches.Launches, result) -> None:
    """After the reference's own checks (a spec whose reference is wrong says so first): a launch that computed
    nothing, and the spec's tolerance rule, too loose to fail a wrong answer (a broken spec); where the magnitudes
    make one case loose, noted (state.loose), not failed."""
    if not relayout.undeclared(spec, case) and (problem := launched_nothing(spec, case, config, outputs, seen)):
        raise _Stop(result(False, math.inf, error=f"broken spec: {problem}", failure=FailureKind.SPEC))
    # The spec's own rule (no magnitude) reads only the reference and the outputs' dtypes: judged once per case and
    # dtypes, not once per config (a nightly case runs every config, and each judgement reads the GPU back).
    dtypes = tuple((name, outputs[name].dtype) for name in spec.outputs)
    if state.loose_rule is None or state.loose_rule[0] != dtypes:
        state.loose_rule = (dtypes, loose_tolerance(spec, case, backend, outputs, state.ref, {}))
    if problem := state.loose_rule[1]:
        raise _Stop(result(False, math.inf, error=f"broken spec: {problem}", failure=FailureKind.SPEC))
    if state.mags and not state.loose_judged:  # the same for every config of the case: judged once
        state.loose, state.loose_judged = loose_tolerance(spec, case, backend, outputs, state.ref, state.mags), True
        state.loose_zero = loose_where_zero(spec, case, backend, outputs, state.ref, state.mags)
    if state.loose_zero:  # loose where the reference is 0: a broken spec in any case
        raise _Stop(result(False, math.inf, error=f"broken spec: {state.loose_zero}", failure=FailureKind.SPEC))


def _check_outputs(spec: KernelSpec, case: Case, backend: Any, config: dict, inputs: dict, outputs: dict,
                   ref: dict, mags: dict) -> list[OutputCheck]:
    checks = []
    never = {name: _never_written(spec, inputs, case, config, name, outputs[name], ref[name]) for name in spec.outputs}
    # Which outputs have elements never written, read back at once; an output with none is compared without the mask.
    counts = dict(zip(never, read_back([mask.sum() for mask in never.values()]), strict=True))
    never = {name: mask if counts[name] else None for name, mask in never.items()}
    # the dtypes the case holds values in: what an inf where the reference is finite may have overflowed
    held_in = tuple({t.dtype for t in (*inputs.values(), *outputs.values()) if isinstance(t, torch.Tensor)})
    for name in spec.outputs:
        if name in spec.index_outputs:  # indices where ties are legal: compared by what they select (ties.py)
            from suite.checks.ties import check_indices

            checks.append(check_indices(name, spec.index_outputs[name], inputs, outputs[name], ref[name], never[name]))
            continue
        tol = spec.tolerance_for(name)
        # An fp32 dot rounds its operands to TF32/XF32 where the arch does so by default.
        operand_u = operand_roundoff(tol, backend) if case.dtype == "fp32" else 0.0
        judged_as, why = returned.judged_dtype(spec, case.dtype, outputs[name], tol)
        keep = flushes.keeps_subnormals(case)
        checks.append(check_output(name, outputs[name], ref[name], mags.get(name), reduction_length=tol.reduction(case),
                                   safety=tol.safety_for(case.dtype), operand_u=operand_u,
                                   accumulator=tol.accumulator_for(case.dtype), unwritten=never[name],
                                   judged_as=judged_as, judged_why=why,
                                   keep_subnormals=keep, flush_note=flushes.note(spec, backend, case.dtype) if keep
                                   else "", held_in=held_in))
    return checks


def loose_tolerance(spec: KernelSpec, case: Case, backend: Any, outputs: dict, ref: dict, mags: dict) -> str | None:
    """Why a tolerance of the spec would pass a wrong answer on this case (suite/checks/tolerance.py: loose_bound),
    naming the spec, the field and the output; or None. With ``mags`` empty the rule is judged at magnitude ==
    |reference| (safety and reduction length alone: a broken spec on any case); with the magnitudes, a case may be
    loose where it is ill-conditioned (a layernorm row of one element), and a test fails only where every case is.
    "" where no output could be judged (suite/checks/tolerance.py: loose_bound)."""
    judged = False
    for name in spec.outputs:
        tol = spec.tolerance_for(name)
        operand_u = operand_roundoff(tol, backend) if case.dtype == "fp32" else 0.0
        judged_as, _ = returned.judged_dtype(spec, case.dtype, outputs[name], tol)
        problem = loose_bound(ref[name], mags.get(name), judged_as or outputs[name].dtype, tol.reduction(case),
                              safety=tol.safety_for(case.dtype), operand_u=operand_u,
                              accumulator=tol.accumulator_for(case.dtype), device=outputs[name].device)
        if problem:
            field = f"output_tolerances[{name!r}]" if name in spec.output_tolerances else "tolerance"
            safety = f"dtype_safety[{case.dtype!r}]" if case.dtype in tol.dtype_safety else "safety"
            return (f"kernel spec {spec.name!r}: field {field!r} (its {safety}, reduction, magnitude) is too loose "
                    f"for output {name!r}: {problem} (docs/checks.md, Tolerances)")
        judged = judged or problem is None
    return None if judged else ""


def loose_where_zero(spec: KernelSpec, case: Case, backend: Any, outputs: dict, ref: dict, mags: dict) -> str | None:
    """Why a magnitude of the spec would pass a result of half the output's scale where its reference is zero, in
    this case (suite/checks/tolerance.py: loose_at_zero), naming the spec, the field and the output; or None."""
    for name in spec.outputs:
        tol = spec.tolerance_for(name)
        operand_u = operand_roundoff(tol, backend) if case.dtype == "fp32" else 0.0
        judged_as, _ = returned.judged_dtype(spec, case.dtype, outputs[name], tol)
        if problem := loose_at_zero(ref[name], mags.get(name), judged_as or outputs[name].dtype, tol.reduction(case),
                                    safety=tol.safety_for(case.dtype), operand_u=operand_u,
                                    accumulator=tol.accumulator_for(case.dtype), device=outputs[name].device):
            field = f"output_tolerances[{name!r}]" if name in spec.output_tolerances else "tolerance"
            return (f"kernel spec {spec.name!r}: field {field!r} (its magnitude) is too loose for output {name!r} "
                    f"in this case: {problem} (docs/checks.md, Tolerances)")
    return None


def magnitudes(spec: KernelSpec, inputs: dict, ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each output's magnitude from the tolerance that holds it (none: the bound uses |reference|)."""
    found: dict[int, dict] = {}
    out = {}
    for name in spec.outputs:
        tol = spec.tolerance_for(name)
        if tol.magnitude is None:
            continue
        if id(tol) not in found:
            found[id(tol)] = tol.magnitude(inputs, ref) or {}
        if name in found[id(tol)]:
            out[name] = found[id(tol)][name]
    return out


def _never_written(spec: KernelSpec, inputs: dict, case: Case, config: dict, name: str, out: torch.Tensor,
                   ref: torch.Tensor) -> torch.Tensor:
    """Elements of output ``name`` the kernel did not write. Where the dtype has no distinct poison (e4m3fn,
    FNUZ fp8) and the reference is NaN, a NaN output is ambiguous: the kernel runs again on outputs poisoned
    with zeros, and what is still zero there was not written either. An output that starts from a declared value
    holds no poison: nothing to tell."""
    if name in spec.initial_outputs or returned.returns_outputs(spec):  # no poison to tell by
        return torch.zeros_like(out, dtype=torch.bool)
    mask = unwritten(out)
    if out.dtype == torch.bool:  # a bool reference is 0 or 1, never the poison's byte
        return mask
    if not out.dtype.is_floating_point:
        # Every integer is a value a kernel may write, the poison's too (-94 is 162 in uint8): an element still
        # holding it is run again on outputs holding a second poison, and was not written only if it holds that one
        # there (issue 49, item 18). Where the reference expects the poison the rerun decides too: a launch that
        # writes nothing (n=0) left the poison where the reference happened to be it.
        return mask & (_again(spec, inputs, case, config, INT_POISON + 1, out.device)[name] == int_poison(out.dtype, 1)) \
            if bool(mask.any()) else mask
    if has_distinct_poison(out.dtype) or not bool((mask & torch.isnan(ref.to(out.device))).any()):
        return mask
    return mask & (_again(spec, inputs, case, config, 0, out.device)[name] == 0)


def int_poison(dtype: torch.dtype, plus: int = 0) -> int:
    """The value INT_POISON (+ ``plus``) holds in an integer ``dtype``: -94 in int8, 162 in uint8."""
    return int(torch.tensor(INT_POISON + plus).to(dtype))


def _again(spec: KernelSpec, inputs: dict, case: Case, config: dict, fill: int,
           device: torch.device) -> dict[str, torch.Tensor]:
    """The outputs of one more launch, each starting filled with ``fill`` (but those with an initial value)."""
    again, _ = prepare_outputs(spec, inputs, case)
    for key, t in again.items():
        if key not in spec.initial_outputs:
            t.fill_(fill)
    launch(spec, inputs, again, config)
    synchronize(str(device))
    return again


def record(result: CaseResult, nodeid: str, repro: str) -> dict[str, Any]:
    return {
        **result.case.as_record(),
        "outcome": "passed" if result.passed else "failed",
        "error_ratio": json_number(result.error_ratio),
        "outputs": {c.output: {"error_ratio": json_number(c.error_ratio), "max_abs_error": json_number(c.max_abs_error)}
                    for c in result.checks},
        "message": None if result.passed else result.message()[:2000],
        # the plain string: a worker's records go to the controller through execnet, which takes built-in types only
        **({"failure": str(result.failure)} if result.failure else {}),
        **({"unchecked": result.unchecked} if result.unchecked else {}),
        **({"heuristics": result.heuristics} if result.heuristics else {}),
        **({"autotuned": result.autotuned} if result.autotuned is not None else {}),
        **({"restrided": result.restrided} if result.restrided else {}),
        **({"vendor_sensitive": result.vendor_sensitive} if result.vendor_sensitive else {}),
        "config": result.config,
        "configs_run": result.configs_run,
        "duration_s": round(result.duration_s, 4),
        "nodeid": nodeid,
        "repro": repro,
    }
