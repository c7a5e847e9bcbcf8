"""Checking a kernel spec when it is made: every field, with an error that says what would be right.

``KernelSpec.__post_init__`` calls :func:`check_spec`, so a spec built by ``dataclasses.replace`` is
checked too. The first mistake raises :class:`SpecError`, one line naming the module that made the
spec, the spec, the field and the problem. The suite turns it into a usage error (exit 4) when a
kernel module is loaded.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kernels._types import (
    BACKENDS,
    DTYPE_NAMES,
    FAMILIES,
    INTEGER_DTYPES,
    KNOWN_ISSUE_TESTS,
    Case,
    CodePath,
    Dim,
    JitKernel,
    KnownIssue,
    MissingArgument,
    Property,
    Tolerance,
    jit_name,
    split_config,
)

_NAME = re.compile(r"[A-Za-z0-9_.]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXAMPLE_FIELDS = ("shape", "layout", "values", "seed")
_BUILTIN_PROPERTIES = ("deterministic", "batch_invariant")


class SpecError(ValueError):
    """A kernel spec with a mistake in it; the message names the module, the spec, the field and the fix."""


def defining_module() -> str:
    """Where the spec being checked was made: the first frame outside the spec machinery and dataclasses."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        module = frame.f_globals.get("__name__", "")
        if not (filename.startswith("<") or module in ("dataclasses", "kernels.spec", "kernels._types", "kernels._validation",
                                                       "kernels.registry")
                or module.startswith("importlib")):
            path = Path(filename)
            try:
                return str(path.resolve().relative_to(Path.cwd()))
            except ValueError:
                return str(path)
        frame = frame.f_back
    return "<unknown module>"


def check_spec(spec: Any) -> None:
    """Raise SpecError for the first mistake in ``spec`` (a KernelSpec)."""
    where = defining_module()
    label = spec.name if isinstance(spec.name, str) and spec.name else "<unnamed>"

    def fail(field: str, problem: str) -> SpecError:
        return SpecError(f"{where}: kernel spec {label!r}: field {field!r}: {problem}")

    _check_names(spec, fail)
    dim_names = _check_dims(spec.dims, fail)
    dtypes = _check_dtypes(spec.dtypes, fail)
    outputs = _strings(spec.outputs, "outputs", fail, identifiers=True,
                       empty="is empty: declare the names of the outputs make_outputs returns, e.g. outputs=('out',)")
    for name in ("make_inputs", "run", "reference", "flops", "min_bytes"):
        if not callable(getattr(spec, name)):
            raise fail(name, f"must be callable, got {type(getattr(spec, name)).__name__}")
    if spec.make_outputs is not None and not callable(spec.make_outputs):
        raise fail("make_outputs", f"must be callable, or None where run returns the outputs the launcher "
                                   f"allocates, got {type(spec.make_outputs).__name__}")
    if spec.make_outputs is None and spec.initial_outputs:
        raise fail("initial_outputs", f"{sorted(spec.initial_outputs)}: make_outputs is None (run returns the "
                                      f"outputs its launcher allocates), so the suite has no output to start from a "
                                      f"value; give make_outputs and launch on the suite's tensors instead")
    for name in ("torch_baseline", "tune_bucket", "compile_signature", "torch_fallback"):
        value = getattr(spec, name)
        if value is not None and not callable(value):
            raise fail(name, f"must be callable or None, got {type(value).__name__}")
    reason = getattr(spec, "untested_reason", None)
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        raise fail("untested_reason", f"must say why a test whose cases launch no kernel is not tested, got {reason!r}")
    _check_tolerance(spec.tolerance, "tolerance", fail, dtypes)
    tolerances = _mapping(spec.output_tolerances, "output_tolerances", fail, "output -> Tolerance(...)")
    for name, tolerance in tolerances.items():
        if name not in outputs:
            raise fail("output_tolerances", f"{name!r} is not a declared output; outputs: {list(outputs)}")
        _check_tolerance(tolerance, f"output_tolerances[{name!r}]", fail, dtypes)
    _check_initial_outputs(spec.initial_outputs, outputs, fail)
    _check_host_epilogue(spec, outputs, fail)
    _strings(spec.mutable_inputs, "mutable_inputs", fail, identifiers=True)
    layouts = _strings(spec.layouts, "layouts", fail, empty="is empty: name at least one layout, e.g. ('contiguous',)")
    values = _strings(spec.value_classes, "value_classes", fail,
                      empty="is empty: name at least one value class, e.g. ('normal',)")
    for floats_only, what in (("special", "inf, -inf, NaN"), ("subnormal", "values below the smallest normal")):
        if dtypes and all(d in INTEGER_DTYPES for d in dtypes) and floats_only in values:
            raise fail("value_classes", f"{floats_only!r} ({what}) has no values in the integer dtypes "
                                        f"{list(dtypes)}: integer inputs take 'normal', 'large' and 'negative'")
    nonfinite = _strings(spec.nonfinite_reference, "nonfinite_reference", fail)
    if unknown := [v for v in nonfinite if v not in values]:
        raise fail("nonfinite_reference", f"{unknown} are not among value_classes {list(values)}")
    _check_configs(spec, fail)
    _check_one_block(spec, fail)
    for i, shape in enumerate(_tuple(spec.benchmark_shapes, "benchmark_shapes", fail)):
        problems = _shape_problems(shape, dim_names, spec.dims, positive=True)
        if problems:
            raise fail("benchmark_shapes", f"[{i}] {shape!r}: {'; '.join(problems)}")
    for i, example in enumerate(_tuple(spec.examples, "examples", fail)):
        _check_example(spec, i, example, dim_names, layouts, values, fail)
    _check_properties(spec.properties, fail)
    _check_restrides(spec, fail)
    _check_paths(spec.paths, fail)
    _check_path_reads(spec, dim_names, fail)
    if spec.batch_dim is not None:
        if spec.batch_dim not in dim_names:
            raise fail("batch_dim", f"{spec.batch_dim!r} is not a dim; dims: {list(dim_names)}")
        _strings(spec.batch_inputs, "batch_inputs", fail, empty="is empty, but batch_dim is set: name the inputs "
                 "whose dim 0 is the batch")
        batch_outputs = _strings(spec.batch_outputs, "batch_outputs", fail,
                                 empty="is empty, but batch_dim is set: name the outputs whose dim 0 is the batch")
        if unknown := [o for o in batch_outputs if o not in outputs]:
            raise fail("batch_outputs", f"{unknown} are not declared outputs {list(outputs)}")
    elif spec.batch_inputs or spec.batch_outputs:
        raise fail("batch_dim", "is None, but batch_inputs/batch_outputs are set: name the batch dim")
    for name in ("deterministic", "batch_invariant"):
        if not isinstance(getattr(spec, name), bool):
            raise fail(name, f"must be True or False, got {getattr(spec, name)!r}")
    if (spec.jit_fn is None) != (spec.compile_signature is None):
        missing = "compile_signature" if spec.compile_signature is None else "jit_fn"
        raise fail(missing, "is None while the other of jit_fn/compile_signature is set: give both (the compile "
                            "matrix needs the @triton.jit function and its signature) or neither")
    if spec.jit_fn is not None and not hasattr(spec.jit_fn, "arg_names"):
        raise fail("jit_fn", f"must be a @triton.jit function, got {type(spec.jit_fn).__name__}")
    _check_jit_fns(spec, fail)
    _check_constexprs(spec, fail)
    _check_known_issues(spec.known_issues, dtypes, fail)
    _check_index_outputs(spec, outputs, fail)


def _check_names(spec: Any, fail: Callable[[str, str], SpecError]) -> None:
    if not isinstance(spec.name, str) or not _NAME.fullmatch(spec.name):
        raise fail("name", f"{spec.name!r} is not a kernel name: use letters, digits, '_' and '.' (it becomes part "
                           f"of test ids such as 'softmax-fp16')")
    if not isinstance(spec.description, str) or not spec.description.strip():
        raise fail("description", "is empty: say in one line what the kernel computes")


def _tuple(value: Any, field: str, fail: Callable[[str, str], SpecError]) -> tuple:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise fail(field, f"must be a tuple, got {type(value).__name__} {value!r}"
                          + (f" (write ({value!r},) for one)" if isinstance(value, str) else ""))
    return tuple(value)


def _strings(value: Any, field: str, fail: Callable[[str, str], SpecError], identifiers: bool = False,
             empty: str | None = None) -> tuple[str, ...]:
    items = _tuple(value, field, fail)
    if not items and empty:
        raise fail(field, empty)
    for item in items:
        if not isinstance(item, str) or not item or (identifiers and not _IDENTIFIER.fullmatch(item)):
            kind = "Python identifiers" if identifiers else "non-empty strings"
            raise fail(field, f"{item!r} is not a name: entries must be {kind}")
    if dup := sorted({i for i in items if items.count(i) > 1}):
        raise fail(field, f"{dup} appear more than once")
    return items


def _check_dims(dims: Any, fail: Callable[[str, str], SpecError]) -> tuple[str, ...]:
    items = _tuple(dims, "dims", fail)
    if not items:
        raise fail("dims", "is empty: a kernel has at least one dimension, e.g. (Dim('N', interpret_max=5000, "
                           "gpu_max=1 << 20),)")
    names = []
    for dim in items:
        if not isinstance(dim, Dim):
            raise fail("dims", f"entries must be Dim(...), got {type(dim).__name__} {dim!r}")
        if not isinstance(dim.name, str) or not _IDENTIFIER.fullmatch(dim.name):
            raise fail("dims", f"dim name {dim.name!r} must be an identifier such as 'M'")
        names.append(dim.name)
        what = f"dim {dim.name!r}"
        if dim.choices:
            choices = _tuple(dim.choices, f"dims ({what} choices)", fail)
            if not all(_is_int(c) and c >= 0 for c in choices):
                raise fail("dims", f"{what}: choices must be non-negative integers, got {choices!r}")
            if not any(choices):
                raise fail("dims", f"{what}: choices={choices!r} allow only size 0, so every case is empty and "
                                   f"passes with nothing compared; give sizes above 0 (a dim fixed at 0 is not one: "
                                   f"drop it)")
            continue
        if not _is_int(dim.min) or dim.min < 0:
            raise fail("dims", f"{what}: min must be a non-negative integer, got {dim.min!r}")
        for bound in ("interpret_max", "gpu_max"):
            value = getattr(dim, bound)
            if value is None:
                raise fail("dims", f"{what}: {bound} is required (the largest size drawn on the interpreter / on a "
                                   f"GPU), unless the dim has fixed choices=(...)")
            if not _is_int(value) or value < dim.min:
                raise fail("dims", f"{what}: {bound} must be an integer >= min ({dim.min}), got {value!r}")
        if dim.nightly_max is not None and (not _is_int(dim.nightly_max) or dim.nightly_max < dim.min):
            raise fail("dims", f"{what}: nightly_max must be None or an integer >= min ({dim.min}), "
                               f"got {dim.nightly_max!r}")
        for bound in ("interpret_max", "gpu_max", "nightly_max"):
            if getattr(dim, bound) == 0:
                raise fail("dims", f"{what}: {bound}=0 allows only size 0 there, so every case is empty and passes "
                                   f"with nothing compared; give the largest size to draw (min=0 alone lets empty "
                                   f"tensors be drawn among the others)")
        blocks = _tuple(dim.blocks, f"dims ({what} blocks)", fail)
        if not all(_is_int(b) and b > 0 for b in blocks):
            raise fail("dims", f"{what}: blocks must be positive integers, got {blocks!r}")
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise fail("dims", f"dim names {dup} appear more than once")
    return tuple(names)


def _check_dtypes(dtypes: Any, fail: Callable[[str, str], SpecError]) -> tuple[str, ...]:
    items = _strings(dtypes, "dtypes", fail, empty=f"is empty: name at least one of {', '.join(DTYPE_NAMES)}")
    if unknown := [d for d in items if d not in DTYPE_NAMES]:
        raise fail("dtypes", f"{unknown} are not dtype names; use {', '.join(DTYPE_NAMES)}")
    return items


def _mapping(value: Any, field: str, fail: Callable[[str, str], SpecError], what: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise fail(field, f"must be a mapping {what}, got {type(value).__name__} {value!r}")
    return value


def _is_safety(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


# The accumulator's unit roundoff (suite/checks/tolerance.py holds the same): a safety factor whose bound at a
# reduction length of 1 is already half of |reference| would pass a result off by 50% (docs/checks.md, Tolerances).
_ACCUMULATOR_U = {"fp32": 2.0**-24, "fp16": 2.0**-11, "fp64": 2.0**-53}
LOOSEST_FRACTION = 0.5
# Per dtype: a safety factor above the default (DEFAULT_SAFETY, four roundings) must keep the bound of an elementwise
# result (a reduction length of 1) below this share of |reference| in the case's output dtype, so that a kernel off
# by 30% in bf16 cannot pass under dtype_safety={'bf16': 100} (docs/checks.md, Tolerances).
LOOSEST_DTYPE_FRACTION = 0.125
DEFAULT_SAFETY = 4.0


def _too_loose(safety: float, accumulator: str) -> str | None:
    floor = safety * _ACCUMULATOR_U.get(accumulator, 0.0)
    if floor < LOOSEST_FRACTION:
        return None
    return (f"{safety!r} lets a result off by {LOOSEST_FRACTION:.0%} pass: even at a reduction length of 1 the bound "
            f"is safety * u_acc = {floor:.3g}x |reference| ({accumulator} accumulator), and it must stay below "
            f"{LOOSEST_FRACTION:g}x; the rule's other terms need a factor of a few (4, the default; 16 for a rounding "
            f"it does not count)")


def _check_tolerance(tolerance: Any, field: str, fail: Callable[[str, str], SpecError],
                     dtypes: tuple[str, ...] = ()) -> None:
    if not isinstance(tolerance, Tolerance):
        raise fail(field, f"must be a Tolerance(...), got {type(tolerance).__name__}")
    if not callable(tolerance.reduction):
        raise fail(field, "reduction must be callable: case -> the reduction length K (1 for elementwise)")
    if tolerance.magnitude is not None and not callable(tolerance.magnitude):
        raise fail(field, "magnitude must be None or callable: (inputs, reference) -> {output: magnitude}")
    if not _is_safety(tolerance.safety):
        raise fail(field, f"safety must be a finite number >= 0 (0: exact up to the dtype's smallest step), "
                          f"got {tolerance.safety!r}")
    if tolerance.accumulator is not None and (not isinstance(tolerance.accumulator, str)
                                              or tolerance.accumulator not in _ACCUMULATOR_U):
        raise fail(field, f"accumulator must be None (the case's own: fp64 for fp64 cases, else fp32), 'fp32', "
                          f"'fp16' or 'fp64', got {tolerance.accumulator!r}")
    per_dtype = _mapping(tolerance.dtype_safety, f"{field}.dtype_safety", fail, "dtype -> safety, e.g. {'bf16': 16.0}")
    # The safety factor holds every dtype that names no safety of its own, each with its accumulator.
    for accumulator in sorted({tolerance.accumulator_for(d) for d in dtypes if d not in per_dtype}
                              or {tolerance.accumulator_for("fp32")}):
        if problem := _too_loose(tolerance.safety, accumulator):
            raise fail(field, f"safety {problem}")
    for dtype, safety in per_dtype.items():
        if dtype not in dtypes:
            raise fail(field, f"dtype_safety names {dtype!r}, which is not one of the spec's dtypes {list(dtypes)}")
        if not _is_safety(safety):
            raise fail(field, f"dtype_safety[{dtype!r}] must be a finite number >= 0, got {safety!r}")
        if problem := _too_loose(safety, tolerance.accumulator_for(dtype)):
            raise fail(field, f"dtype_safety[{dtype!r}] {problem}")
    if tolerance.output_dtype is not None and tolerance.output_dtype not in DTYPE_NAMES:
        raise fail(field, f"output_dtype must be None or one of {list(DTYPE_NAMES)} (the dtype an output the launcher "
                          f"allocates is meant to have), got {tolerance.output_dtype!r}")
    if not isinstance(tolerance.uses_dot, bool):
        raise fail(field, f"uses_dot must be True or False, got {tolerance.uses_dot!r}")


def _check_initial_outputs(initial: Any, outputs: tuple[str, ...], fail: Callable[[str, str], SpecError]) -> None:
    initial = _mapping(initial, "initial_outputs", fail, "output -> input name or number, e.g. {'dx': 'x'}")
    for name, source in initial.items():
        if name not in outputs:
            raise fail("initial_outputs", f"{name!r} is not a declared output; outputs: {list(outputs)}")
        if isinstance(source, str):
            if not _IDENTIFIER.fullmatch(source):
                raise fail("initial_outputs", f"[{name!r}] = {source!r} is not an input name (an identifier that "
                                              f"make_inputs returns)")
        elif isinstance(source, bool) or not isinstance(source, (int, float)) or not math.isfinite(source):
            raise fail("initial_outputs", f"[{name!r}] = {source!r}: give the name of an input (the output starts as "
                                          f"a copy of it) or a finite number (the output starts filled with it)")


def _check_host_epilogue(spec: Any, outputs: tuple[str, ...], fail: Callable[[str, str], SpecError]) -> None:
    finished = _mapping(spec.host_epilogue, "host_epilogue", fail, "output -> why torch finishes it, e.g. "
                                                                 "{'loss': 'torch sums the kernel's per-block partials'}")
    if finished and spec.make_outputs is not None:
        raise fail("host_epilogue", f"{sorted(finished)}: make_outputs is given, so the kernel writes the suite's "
                                    f"outputs; an output torch finishes is the launcher's own: make_outputs=None and "
                                    f"run returns it")
    for name, why in finished.items():
        if name not in outputs:
            raise fail("host_epilogue", f"{name!r} is not a declared output; outputs: {list(outputs)}")
        if not isinstance(why, str) or not why.strip():
            raise fail("host_epilogue", f"[{name!r}] = {why!r}: say why torch finishes this output from the "
                                        f"kernel's writes (a non-empty string)")


def _check_jit_fns(spec: Any, fail: Callable[[str, str], SpecError]) -> None:
    names = [jit_name(spec.jit_fn)] if spec.jit_fn is not None else []
    for i, kernel in enumerate(_tuple(spec.jit_fns, "jit_fns", fail)):
        if not isinstance(kernel, JitKernel):
            raise fail("jit_fns", f"[{i}] must be JitKernel(fn, signature), got {type(kernel).__name__} {kernel!r}")
        if not hasattr(kernel.fn, "arg_names"):
            raise fail("jit_fns", f"[{i}] fn must be a @triton.jit function (autotuned or not), got "
                                  f"{type(kernel.fn).__name__}")
        if not callable(kernel.signature):
            raise fail("jit_fns", f"[{i}] ({jit_name(kernel.fn)}) signature must be callable (dtype, meta) -> "
                                  f"(signature, constexprs)")
        names.append(jit_name(kernel.fn))
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise fail("jit_fns", f"{dup} appear more than once (jit_fn counts too): name each function once")


def _check_constexprs(spec: Any, fail: Callable[[str, str], SpecError]) -> None:
    """Every tl.constexpr of every jitted function gets a value from its signature for each dtype and family default
    config that launches it: one the signature leaves out (a value a @triton.heuristics computes, a constant the
    launcher passes) would fail the compile matrix on every target. Other errors of a signature are the compile
    matrix's to report."""
    kernels = [("compile_signature", k) for k in spec.jit_kernels()[:1] if spec.jit_fn is not None]
    kernels += [(f"jit_fns[{i}]", k) for i, k in enumerate(spec.jit_fns)]
    configs: dict[str, tuple[str, dict]] = {}  # each distinct default config, with the first family that has it
    for family in FAMILIES:
        configs.setdefault(json.dumps(spec.default_config_for(family), sort_keys=True, default=str),
                           (family, spec.default_config_for(family)))
    for field, kernel in kernels:
        for family, config in configs.values():
            meta, _ = split_config(config)
            for dtype in spec.dtypes:
                if kernel.used is not None and not kernel.used(dtype, config):
                    continue
                try:
                    kernel.signature(dtype, meta)
                except MissingArgument as exc:
                    if exc.constexpr:
                        raise fail(field, f"{exc.kernel}'s tl.constexpr {exc.argument!r} gets no value from the "
                                          f"signature (dtype {dtype!r}, the {family} default config {config}), so the "
                                          f"compile matrix would fail on every target: give it in the signature's "
                                          f"constexprs (the value the launcher passes, or that its @triton.heuristics "
                                          f"computes)") from None
                except Exception:  # noqa: BLE001, S112 - the compile matrix reports a signature that raises
                    continue


def triton_specifier_problem(text: Any) -> str | None:
    """Why ``text`` is not a Triton version specifier such as '>=3.0,<4' ('' means every version), or None."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(text, str):
        return f"must be a string, got {text!r}"
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return f"is not a version specifier: {text!r} (write e.g. '>=3.0,<4', or '' for every version)"
    return None


def pattern_problem(text: Any) -> str | None:
    """Why ``text`` is not a known issue's failure pattern (a regular expression; '' for any failure), or None."""
    if not isinstance(text, str):
        return f"must be a string (a regular expression over the failure message), got {text!r}"
    try:
        re.compile(text)
    except re.error as exc:
        return f"is not a regular expression: {text!r} ({exc})"
    return None


def pattern_matches_anything(text: str) -> str | None:
    """Why a known issue's failure pattern would match every failure ('', '.*', 'x|': it matches the empty string,
    so it is found in any message), or None."""
    if re.search(text, "") is None:
        return None
    return (f"{text!r} matches the empty string, so it matches every failure (a kernel off by 50% would be expected "
            f"too): give a regular expression of what fails, from the failure's message (e.g. 'NaN where the "
            f"reference is not', or 'elements never written')")


def _check_known_issues(issues: Any, dtypes: tuple[str, ...], fail: Callable[[str, str], SpecError]) -> None:
    import fnmatch

    ids = []
    for i, issue in enumerate(_tuple(issues, "known_issues", fail)):
        if not isinstance(issue, KnownIssue):
            raise fail("known_issues", f"[{i}] must be KnownIssue(id=..., reason=..., link=...), got "
                                       f"{type(issue).__name__}")
        where = f"[{i}] ({issue.id!r})"
        for name in ("id", "reason", "link", "backend", "arch", "triton", "dtype", "test", "failure_pattern"):
            if not isinstance(getattr(issue, name), str):
                raise fail("known_issues", f"{where}: {name} must be a string, got {getattr(issue, name)!r}")
        for name in ("id", "reason", "test"):
            if not getattr(issue, name).strip():
                raise fail("known_issues", f"{where}: {name} is empty; say " + {
                    "id": "a unique name", "reason": "what fails and why (the evidence)",
                    "test": "which test it covers, e.g. 'test_matches_reference'"}[name])
        if not fnmatch.filter(BACKENDS, issue.backend):
            raise fail("known_issues", f"{where}: backend {issue.backend!r} matches none of {', '.join(BACKENDS)} "
                                       f"(a name or a glob such as '*')")
        if problem := triton_specifier_problem(issue.triton):
            raise fail("known_issues", f"{where}: triton {problem}")
        if problem := pattern_problem(issue.failure_pattern):
            raise fail("known_issues", f"{where}: failure_pattern {problem}")
        if not fnmatch.filter(KNOWN_ISSUE_TESTS, issue.test):
            raise fail("known_issues", f"{where}: test {issue.test!r} matches none of the tests a known issue can "
                                       f"mark: {', '.join(KNOWN_ISSUE_TESTS)} (those run per kernel and dtype)")
        if not fnmatch.filter(dtypes, issue.dtype):
            raise fail("known_issues", f"{where}: dtype {issue.dtype!r} matches none of the spec's dtypes "
                                       f"{list(dtypes)}")
        if problem := pattern_matches_anything(issue.failure_pattern):
            raise fail("known_issues", f"{where}: failure_pattern {problem}")
        ids.append(issue.id)
    if dup := sorted({i for i in ids if ids.count(i) > 1}):
        raise fail("known_issues", f"ids {dup} appear more than once")


def _check_configs(spec: Any, fail: Callable[[str, str], SpecError]) -> None:
    if not isinstance(spec.default_config, Mapping):
        raise fail("default_config", f"must be a mapping family -> config, got {type(spec.default_config).__name__}")
    if not isinstance(spec.configs, Mapping):
        raise fail("configs", f"must be a mapping family -> tuple of configs, got {type(spec.configs).__name__}")
    for field, families in (("default_config", spec.default_config), ("configs", spec.configs)):
        if unknown := [f for f in families if f not in FAMILIES]:
            raise fail(field, f"unknown vendor family {unknown}; use {', '.join(FAMILIES)}")
    for family, config in spec.default_config.items():
        _check_config(config, f"default_config[{family!r}]", fail)
    for family, configs in spec.configs.items():
        for i, config in enumerate(_tuple(configs, f"configs[{family!r}]", fail)):
            _check_config(config, f"configs[{family!r}][{i}]", fail)


def _check_one_block(spec: Any, fail: Callable[[str, str], SpecError]) -> None:
    """Each dim's largest size reaches past a block along it, else every case is a one-program grid there: on the
    interpreter past the block of the interpreter's default config (a ``BLOCK_<dim>`` key; else the dim's smallest
    declared block, its blocks mixing the interpreter's with the GPUs'); on a GPU past the dim's largest declared
    block and the GPU default configs' ``BLOCK_<dim>``. ``Dim.one_block`` gives the reason a dim may not."""
    interpret = spec.default_config.get("interpret", spec.default_config.get("nvidia", {}))
    for dim in spec.dims:
        if dim.choices or dim.one_block is not None:
            if dim.one_block is not None and (not isinstance(dim.one_block, str) or not dim.one_block.strip()):
                raise fail("dims", f"dim {dim.name!r}: one_block must say why the dim may stay within one block, "
                                   f"got {dim.one_block!r}")
            continue
        key = f"BLOCK_{dim.name}"
        blocks = tuple(dim.blocks)
        on_interpreter = interpret.get(key) if _is_int(interpret.get(key)) else min(blocks, default=None)
        on_gpu = [b for b in (*blocks, *(spec.default_config.get(f, {}).get(key) for f in ("nvidia", "amd")))
                  if _is_int(b)]
        largest_gpu = max(dim.gpu_max, dim.nightly_max or 0)
        for where, size, block in (("interpret_max", dim.interpret_max, on_interpreter),
                                   ("gpu_max" if not dim.nightly_max else "gpu_max and nightly_max", largest_gpu,
                                    max(on_gpu, default=None))):
            if block is not None and size <= block:
                raise fail("dims", f"dim {dim.name!r}: {where}={size} never reaches past one block of {block}, so "
                                   f"every case runs one program along it and a program index that is never scaled "
                                   f"passes; raise {where.split()[0]} past {block}, or give Dim(one_block='why') "
                                   f"where one block along it is the design")


def _check_config(config: Any, field: str, fail: Callable[[str, str], SpecError]) -> None:
    if not isinstance(config, Mapping):
        raise fail(field, f"must be a mapping of meta-parameters and launch options, got {type(config).__name__}")
    for key, value in config.items():
        # a parameter, or one kernel's ('<kernel>.<parameter>': autotune_config_space, several autotuned kernels)
        if not isinstance(key, str) or not all(_IDENTIFIER.fullmatch(part) for part in key.split(".", 1)):
            raise fail(field, f"key {key!r} is not a parameter name (nor '<kernel>.<parameter>')")
        if not isinstance(value, (bool, int, float, str)):
            raise fail(field, f"{key}={value!r}: values must be numbers, booleans or strings")
    for scope in sorted({""} | {key.split(".", 1)[0] + "." for key in config if "." in key}):
        warps = config.get(f"{scope}num_warps")
        if warps is not None and (not _is_int(warps) or warps < 1 or warps & (warps - 1)):
            raise fail(field, f"{scope}num_warps={warps!r} must be a power of two (1, 2, 4, ... 32)")
        stages = config.get(f"{scope}num_stages")
        if stages is not None and (not _is_int(stages) or stages < 0):
            raise fail(field, f"{scope}num_stages={stages!r} must be a non-negative integer")


def _check_example(spec: Any, i: int, example: Any, dim_names: tuple[str, ...], layouts: tuple[str, ...],
                   values: tuple[str, ...], fail: Callable[[str, str], SpecError]) -> None:
    where = f"[{i}]"
    if not isinstance(example, Mapping):
        raise fail("examples", f"{where} must be a mapping with {', '.join(_EXAMPLE_FIELDS)}, got {example!r}")
    if unknown := sorted(set(example) - set(_EXAMPLE_FIELDS)):
        raise fail("examples", f"{where} has unknown field(s) {unknown}; allowed: {', '.join(_EXAMPLE_FIELDS)}")
    if "shape" not in example:
        raise fail("examples", f"{where} has no 'shape'")
    seed = example.get("seed", 0)
    if not _is_int(seed) or seed < 0:
        raise fail("examples", f"{where} seed {seed!r} must be a non-negative integer")
    problems = case_problems(spec, example["shape"], example.get("layout", "contiguous"),
                             example.get("values", "normal"), dim_names=dim_names, layouts=layouts, values=values)
    if problems:
        raise fail("examples", f"{where} {dict(example)!r}: {'; '.join(problems)}")


def _check_named(items: Any, field: str, cls: type, attr: str, signature: str,
                 fail: Callable[[str, str], SpecError], reserved: tuple[str, ...] = ()) -> None:
    """Entries of ``cls`` with an identifier ``name``, a callable ``attr`` and names that appear once."""
    what = cls.__name__.lower().replace("codepath", "path")
    names = []
    for item in _tuple(items, field, fail):
        if not isinstance(item, cls):
            raise fail(field, f"entries must be {cls.__name__}(...), got {type(item).__name__}")
        if not isinstance(item.name, str) or not _IDENTIFIER.fullmatch(item.name):
            raise fail(field, f"{what} name {item.name!r} must be an identifier")
        if item.name in reserved:
            raise fail(field, f"{item.name!r} is a {what} the suite checks itself; name yours otherwise")
        if not callable(getattr(item, attr)):
            raise fail(field, f"{what} {item.name!r}: {attr} must be callable {signature}")
        names.append(item.name)
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise fail(field, f"{what} names {dup} appear more than once")


def _check_properties(properties: Any, fail: Callable[[str, str], SpecError]) -> None:
    _check_named(properties, "properties", Property, "check", "(case, device, run) -> message or None", fail,
                 reserved=_BUILTIN_PROPERTIES)


def _check_paths(paths: Any, fail: Callable[[str, str], SpecError]) -> None:
    _check_named(paths, "paths", CodePath, "taken", "(case, config) -> bool", fail)
    for path in paths:
        if path.applies is not None and not callable(path.applies):
            raise fail("paths", f"path {path.name!r}: applies must be callable (dtype, family) -> bool or None")


def _check_path_reads(spec: Any, dim_names: tuple[str, ...], fail: Callable[[str, str], SpecError]) -> None:
    """A path whose ``taken`` reads a size that is no dim (a dim that is a product of others, ``M = B * S``) raises
    KeyError for every case, which counts as not taken: it would fail every run as unreachable ("widen the dims").
    Probed on one case of the smallest sizes with each family's default config; a key that some config of the spec
    has is a config's, not a dim's."""
    if not dim_names:
        return
    shape = {d.name: (d.choices[0] if d.choices else max(1, d.min)) for d in spec.dims}
    case = Case(kernel=spec.name, dtype=spec.dtypes[0], shape=shape)
    config_keys = {k for f in FAMILIES for c in (spec.configs.get(f) or ()) for k in c}
    config_keys |= {k for c in spec.default_config.values() for k in c}
    for path in spec.paths:
        for family in FAMILIES:
            try:
                path.taken(case, spec.default_config_for(family))
            except KeyError as exc:
                key = exc.args[0] if exc.args else None
                if isinstance(key, str) and key not in dim_names and key not in config_keys:
                    raise fail("paths", f"path {path.name!r}: taken(case, config) reads {key!r}, which is no dim of "
                                        f"the spec (dims: {list(dim_names)}) and no config key, so no case would ever "
                                        f"take it. A size that is a product of dims (M = B * S) is no dim of a case: "
                                        f"compute it from them, e.g. paths.block_loop({key!r}, block_of, size=lambda "
                                        f"case: case.shape['B'] * case.shape['S'])") from None
            except Exception:  # noqa: BLE001, S112 - the run reports a path that raises otherwise
                continue


def _shape_problems(shape: Any, dim_names: tuple[str, ...], dims: Iterable[Any], positive: bool = False) -> list[str]:
    if not isinstance(shape, Mapping):
        return [f"a shape is a mapping {{dim: size}} over {list(dim_names)}, got {shape!r}"]
    problems = []
    if set(shape) != set(dim_names):
        missing, extra = [d for d in dim_names if d not in shape], [d for d in shape if d not in dim_names]
        problems.append(f"dims are {list(dim_names)}" + (f"; missing {missing}" if missing else "")
                        + (f"; unknown {extra}" if extra else ""))
    for dim in dims:
        value = shape.get(dim.name)
        if value is None:
            continue
        if not _is_int(value):
            problems.append(f"{dim.name}={value!r} is not an integer")
        elif dim.choices:
            if value not in dim.choices:
                problems.append(f"{dim.name}={value} is not one of its choices {tuple(dim.choices)}")
        elif value < (max(1, dim.min) if positive else dim.min):
            problems.append(f"{dim.name}={value} is below its minimum {max(1, dim.min) if positive else dim.min}")
    return problems


def _check_restrides(spec: Any, fail: Callable[[str, str], SpecError]) -> None:
    """The fields that say which layouts users pass the launcher takes (suite/checks/restride.py)."""
    for name in _strings(spec.broadcast_inputs, "broadcast_inputs", fail, identifiers=True):
        if name in spec.mutable_inputs:
            raise fail("broadcast_inputs", f"{name!r} is a mutable input: a broadcast input has one row in memory, "
                                           f"which a kernel that writes it cannot keep")
    if not isinstance(spec.strided_outputs, bool):
        raise fail("strided_outputs", f"must be True or False, got {spec.strided_outputs!r}")
    refused = _mapping(spec.refused_layouts, "refused_layouts", fail, "layout -> why the launcher refuses it")
    for layout, why in refused.items():
        if layout not in ("aligned_slice", "permuted", "broadcast"):
            raise fail("refused_layouts", f"{layout!r} is not a layout the suite draws by default; name "
                                          f"'aligned_slice', 'permuted' or 'broadcast'")
        if not isinstance(why, str) or not why.strip():
            raise fail("refused_layouts", f"{layout!r}: say why the launcher refuses it, as a non-empty string")
    for name in ("no_contract_probe", "no_subnormals"):
        why = getattr(spec, name)
        if why is not None and (not isinstance(why, str) or not why.strip()):
            raise fail(name, f"must be None or a non-empty string saying why, got {why!r}")


def case_problems(spec: Any, shape: Any, layout: Any, value_class: Any, *, dim_names: tuple[str, ...] | None = None,
                  layouts: tuple[str, ...] | None = None, values: tuple[str, ...] | None = None) -> list[str]:
    """What does not fit ``spec`` in a case's shape, layout and value class (empty: it fits)."""
    dim_names = dim_names if dim_names is not None else tuple(d.name for d in spec.dims)
    layouts = layouts if layouts is not None else tuple(spec.layouts)
    values = values if values is not None else tuple(spec.value_classes)
    problems = _shape_problems(shape, dim_names, spec.dims)
    if layout not in layouts:
        problems.append(f"layout {layout!r} is not one of {list(layouts)}")
    if value_class not in values:
        problems.append(f"value class {value_class!r} is not one of {list(values)}")
    return problems



def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_index_outputs(spec: Any, outputs: Any, fail: Callable[[str, str], SpecError]) -> None:
    from kernels._types import IndexOutput

    if not isinstance(spec.index_outputs, Mapping):
        raise fail("index_outputs", f"must be a dict output -> IndexOutput(source, dim), got {spec.index_outputs!r}")
    for name, rule in spec.index_outputs.items():
        if name not in outputs:
            raise fail("index_outputs", f"{name!r} is not a declared output {list(outputs)}")
        if not isinstance(rule, IndexOutput) or not isinstance(rule.source, str) or not isinstance(rule.dim, int):
            raise fail("index_outputs", f"{name!r}: must be IndexOutput(source='<input name>', dim=<int>), got {rule!r}")
