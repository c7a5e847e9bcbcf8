"""Every place the suite reaches into Triton's internals (and three of Hypothesis's), in one registry, each with the
Triton versions it applies to and a check that its targets are still there, in the shape the patch relies on.

Triton's runtime, interpreter and knobs are not a stable API: a release that renames ``InterpreterBuilder.
create_masked_load`` or drops ``knobs.runtime.jit_cache_hook`` would otherwise show up as a wrong verdict (a kernel
failing with an AttributeError, a run that times nothing) instead of what it is. So:

- each patch is a :class:`Patch` here: its name, the suite module that applies it, the targets it touches (module,
  attribute, the leading parameters it calls or replaces with), the Triton versions it applies to, and why;
- at session start (``suite/plugin/context.py``) :func:`verify` checks every patch that applies to the installed Triton
  and the run's backend; a target that is missing or has another shape is a usage error naming the patch, the
  target and the Triton version, before the first test;
- a module applying a patch calls :func:`require` first (the same check, for a process that did not verify);
- ``tests/session/test_compat.py`` runs every check on the installed Triton and plants breaks.

The patches of this module's own (the interpreter's version-specific gaps) are applied by
:func:`install_interpreter_fixes`, from ``suite/checks/interpreter.py``; the others stay where they are used and are
registered here by name. What the suite relies on of Hypothesis's internals is used here only (:func:`add_digest`,
:func:`forced_seed`, :func:`fixed_constants`), registered the same way.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ALL_BACKENDS = ("interpret", "cuda", "rocm")


class PatchBroken(pytest.UsageError):
    """A patch's target is not in the installed Triton as the patch expects: the suite cannot run on it."""


@dataclass(frozen=True)
class Target:
    """One attribute of Triton that a patch replaces, wraps or calls. ``attribute`` is dotted below the module
    (``InterpreterBuilder.create_masked_load``). ``parameters``: the leading parameter names the patch relies on
    (a callable's; ``None`` in it: any name at that position), ``None`` for an attribute that only has to exist.
    ``optional``: the attribute may be absent (the patch adds it), but where present it must have that shape."""

    module: str
    attribute: str
    parameters: tuple[str | None, ...] | None = None
    optional: bool = False

    def name(self) -> str:
        return f"{self.module}.{self.attribute}"

    def resolve(self) -> Any:
        obj: Any = importlib.import_module(self.module)
        for part in self.attribute.split("."):
            obj = getattr(obj, part)
        return obj

    def problem(self) -> str | None:
        try:
            obj = self.resolve()
        except ImportError as exc:
            return f"{self.module} does not import ({exc})"
        except AttributeError:
            if self.optional:
                return None
            return f"{self.name()} is missing"
        if self.parameters is None:
            return None
        if not callable(obj):
            return f"{self.name()} is not callable (a {type(obj).__name__})"
        try:
            params = list(inspect.signature(obj).parameters.values())
        except (TypeError, ValueError):
            return f"{self.name()} has no inspectable signature"
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        leading = positional[:len(self.parameters)]
        wanted = list(self.parameters)
        if len(leading) < len(wanted) or any(w not in (None, n) for w, n in zip(wanted, leading, strict=True)):
            expected = ", ".join(w or "_" for w in self.parameters)
            return f"{self.name()} takes ({', '.join(positional)}), the patch expects it to begin with ({expected})"
        return None


@dataclass(frozen=True)
class Patch:
    name: str
    where: str  # the suite module applying it
    purpose: str
    targets: tuple[Target, ...]
    triton: str = ">=3.6"  # the Triton versions it is applied on (a packaging specifier)
    backends: tuple[str, ...] = ALL_BACKENDS
    extra_check: Callable[[], str | None] | None = field(default=None, compare=False)
    package: str = "triton"  # whose internals: "triton", or "hypothesis" (any version: the check says if it fits)

    def applies(self, triton_version: str | None = None, backend: str | None = None) -> bool:
        if self.package != "triton":
            return backend is None or backend in self.backends
        version = Version((triton_version or installed_triton()).split("+")[0])
        # A nightly or release candidate (3.10.0.dev..., 3.10.0rc1) is the version it will be, not left out.
        in_range = SpecifierSet(self.triton).contains(version, prereleases=True)
        return in_range and (backend is None or backend in self.backends)

    def check(self) -> list[str]:
        """What is wrong with the installed Triton for this patch (nothing: it can be applied)."""
        problems = [p for t in self.targets if (p := t.problem())]
        if not problems and self.extra_check is not None and (p := self.extra_check()):
            problems.append(p)
        return problems


def installed_triton() -> str:
    import triton

    return triton.__version__


INTERP = "triton.runtime.interpreter"
CORE = "triton.language.core"
SEMANTIC = "triton.language.semantic"
BUILDER = "InterpreterBuilder"
BF16 = "suite/checks/interpreter_bf16.py"


def _bf16_stored_as_bits() -> str | None:
    """The bf16 patches read and write bf16 as the interpreter stores it: uint16 bit patterns."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    try:
        stored = interpreter._get_np_dtype(tl.bfloat16)
    except (AttributeError, KeyError) as exc:
        return f"triton.runtime.interpreter._get_np_dtype(tl.bfloat16) fails ({exc!r})"
    return None if stored == np.uint16 else (f"triton.runtime.interpreter stores bf16 as {stored}, not as uint16 bit "
                                             f"patterns: the bf16 patches would read its values as bits")


def _vendor_libdevice_shape() -> str | None:
    """The vendors' libdevice functions are builtins closing over the stub (``fn``): the patch swaps their code."""
    import triton.language.core as core

    if not hasattr(core, "TRITON_BUILTIN"):
        return "triton.language.core.TRITON_BUILTIN is missing"
    try:
        module = importlib.import_module("triton.language.extra.cuda.libdevice")
    except ImportError:
        return None
    fn = getattr(module, "rsqrt", None)
    if fn is None or getattr(getattr(fn, "__code__", None), "co_freevars", None) != ("fn",):
        return ("triton.language.extra.cuda.libdevice.rsqrt is no longer a builtin closing over its stub (fn): the "
                "patch that routes it to the interpreter's libdevice cannot swap its code")
    return None


def _stub_shape() -> str | None:
    """libdevice stubs are plain functions of the module taking ``_semantic``: the patch gives them a body."""
    module = importlib.import_module("triton.language.extra.libdevice")
    fn = getattr(module, "rsqrt", None)
    if not inspect.isfunction(fn):
        return "triton.language.extra.libdevice.rsqrt is not a plain function (the stub the patch gives a body)"
    return None


PATCHES: tuple[Patch, ...] = (
    Patch("interpreter-float-scalars", "suite/checks/interpreter.py",
          "a Python float kernel argument becomes an fp32 scalar, as on a GPU (it has .to there); a bool an i1 scalar",
          (Target(INTERP, "_implicit_cvt", ("arg",)), Target(INTERP, "TensorHandle", ("data", "dtype"))),
          backends=("interpret",)),
    Patch("interpreter-bf16-constants", "suite/checks/interpreter.py",
          "bf16 constants rounded to nearest even (Triton 3.6 has no get_bf16; 3.9's truncates)",
          (Target(INTERP, f"{BUILDER}.get_bf16", ("self", "value"), optional=True),), backends=("interpret",)),
    Patch("interpreter-bf16-casts", BF16,
          "bf16 conversions as compiled Triton does them: bf16 -> fp32 exact (and on through fp32), to bf16 rounded "
          "to nearest even (fp64 once; integers through fp32), a NaN quiet, rtz truncating (the interpreter truncated "
          "fp32 and converted other types with astype on the uint16 bit patterns, hazard 1)",
          (Target(INTERP, f"{BUILDER}.cast_impl", ("self", "src", "dst_type")),
           Target(INTERP, f"{BUILDER}.create_fp_to_fp", ("self", "src", "dst_type", "rounding_mode")),
           Target(INTERP, "_ir.ROUNDING_MODE.RTZ"), Target(INTERP, "TensorHandle", ("data", "dtype"))),
          backends=("interpret",), extra_check=_bf16_stored_as_bits),
    Patch("interpreter-bf16-arithmetic", BF16,
          "binary, unary, fma and clamp operations on bf16 computed in fp32 and rounded to bf16 (nearest even), "
          "comparisons giving bools, as compiled Triton computes them (the interpreter computed on the uint16 bit "
          "patterns, triton #4972, hazard 1)",
          (Target(INTERP, f"{BUILDER}.binary_op", ("self", "lhs", "rhs", "op")),
           Target(INTERP, f"{BUILDER}.unary_op", ("self", "arg", "op")),
           Target(INTERP, f"{BUILDER}.create_fma", ("self", "x", "y", "z")),
           Target(INTERP, f"{BUILDER}.create_clampf", ("self", "arg", "lo", "hi", "propagate_nans")),
           Target(INTERP, f"{BUILDER}.create_erf", ("self", "arg")),
           Target(INTERP, f"{BUILDER}.create_rsqrt", ("self", "arg"))),
          backends=("interpret",), extra_check=_bf16_stored_as_bits),
    Patch("interpreter-bf16-dot", BF16,
          "tl.dot of bf16 operands widened exactly to fp32, multiplied and accumulated in fp32, as the GPUs' matrix "
          "units do (the interpreter multiplied the uint16 bit patterns)",
          (Target(INTERP, f"{BUILDER}.create_dot", ("self", "a", "b", "d")),),
          backends=("interpret",), extra_check=_bf16_stored_as_bits),
    Patch("interpreter-bf16-reductions", BF16,
          "tl.sum, tl.cumsum and tl.cumprod of bf16 added (multiplied) in fp32 and rounded to bf16 at every step, "
          "and bf16 min/max/argmin/argmax comparing values (the interpreter summed and compared the uint16 bits)",
          (Target(INTERP, "ReduceOps.sum", ("self", "input")),
           Target(INTERP, "ReduceOps.min_max", ("self", "input", "val_reduce_op", "idx_reduce_op")),
           Target(INTERP, "ReduceOps.to_tensor", ("self", "ret", "dtype")),
           Target(INTERP, "ScanOps.cumsum", ("self", "input")), Target(INTERP, "ScanOps.cumprod", ("self", "input"))),
          backends=("interpret",), extra_check=_bf16_stored_as_bits),
    Patch("interpreter-numerics-dot", "suite/checks/numerics.py",
          "--numerics=PROFILE: tl.dot of floating operands computed through mmasim's model of the profile's matrix "
          "instruction, and the interpreter's dot options (default fp32 input precision, allowed precisions, fp8 "
          "max_num_imprecise_acc) the target's; tl.fma fused as the target's instruction; tl.sum of floats in the "
          "target's reduction order (the launch's num_warps read for its layout); the approximate fp32 instructions' "
          "results counted, and moved to their error envelope's ends where a case is judged close to its bound; "
          "float -> OCP fp8 conversions as the target's compiled code converts, fp8 -> float exactly",
          (Target(INTERP, f"{BUILDER}.create_dot", ("self", "a", "b", "d", "input_precision", "max_num_imprecise_acc")),
           Target(INTERP, "interpreter_builder"), Target(INTERP, "InterpreterOptions"),
           Target("triton.language.semantic", "TritonSemantic.dot"),
           Target(INTERP, f"{BUILDER}.create_fma", ("self", "x", "y", "z")),
           Target(INTERP, "ReduceOps.sum", ("self", "input")), Target(INTERP, "InterpretedFunction.run", ("self",)),
           *(Target(INTERP, f"{BUILDER}.{name}", ("self", "arg")) for name in
             ("create_exp", "create_exp2", "create_sqrt", "create_rsqrt", "create_log", "create_log2")),
           Target(INTERP, f"{BUILDER}.create_fdiv", ("self", "lhs", "rhs")),
           Target(INTERP, f"{BUILDER}.create_fp_to_fp", ("self", "src", "dst_type", "rounding_mode")),
           Target(INTERP, "_ir.ROUNDING_MODE.RTZ"), Target(INTERP, "TensorHandle", ("data", "dtype"))),
          backends=("interpret",)),
    Patch("interpreter-fp8-notes", "suite/checks/interpreter.py",
          "notes the float -> fp8 conversions a case ran, where the interpreter's own conversion is wrong",
          (Target(INTERP, f"{BUILDER}.create_fp_to_fp", ("self", "src", "dst_type")),
           Target(INTERP, "_convert_float", ("input", "input_dtype", "output_dtype")),
           Target(INTERP, "_ir.ROUNDING_MODE.RTNE")), backends=("interpret",)),
    Patch("interpreter-semantic-gaps", "suite/checks/interpreter.py",
          "a launch whose function uses Python and/or/not or a chained comparison on block tensors, which the "
          "interpreter evaluates as Python does, stops before it runs, as not checkable there",
          (Target(INTERP, "InterpretedFunction.run", ("self",)),), backends=("interpret",)),
    Patch("interpreter-libdevice", "suite/checks/interpreter.py",
          "libdevice functions computed with numpy (the interpreter runs stubs that return None)",
          (Target("triton.language.extra.libdevice", "rsqrt"), Target(INTERP, "interpreter_semantic"),
           Target(INTERP, "interpreter_semantic.broadcast_impl_value", ("lhs", "rhs")),
           Target(INTERP, "interpreter_semantic.to_tensor")),
          backends=("interpret",), extra_check=lambda: _stub_shape() or _vendor_libdevice_shape()),
    Patch("interpreter-bool-masks", "suite/compat.py",
          "load/store/atomic masks passed to the interpreter's C++ core as numpy bool (Triton 3.9's nanobind core "
          "rejects the integer masks its own splat of a scalar comparison makes; 3.6's read them as nonzero)",
          (Target(INTERP, f"{BUILDER}.create_masked_load", ("self", "ptrs", "mask", "other")),
           Target(INTERP, f"{BUILDER}.create_masked_store", ("self", "ptrs", "value", "mask")),
           Target(INTERP, f"{BUILDER}.create_atomic_rmw", ("self", None, "ptr", "val", "mask")),
           Target(INTERP, "TensorHandle", ("data", "dtype"))),
          # 3.6's core reads integer masks as nonzero (checked); 3.9's refuses them (checked); 3.7 and 3.8 are not
          # checked, and bool masks mean the same to both cores.
          triton=">=3.7", backends=("interpret",)),
    Patch("interpreter-index-numpy24", "suite/compat.py",
          "a scalar tensor used as an index or loop bound (range(0, K, BLOCK_K)) converted with int(data.squeeze()), "
          "as Triton 3.9 does: Triton 3.6's int(data) on a one-element array is an error from numpy 2.4 on",
          (Target(INTERP, "_patch_lang_tensor", ("tensor", "scope")),
           Target(INTERP, "_LangPatchScope.set_attr", ("self", "obj", "name", "value"))),
          # 3.9 squeezes (checked); 3.7 and 3.8 are not checked, and the squeeze is what 3.9 does.
          triton="<3.9", backends=("interpret",)),
    Patch("interpreter-patch-once", "suite/compat.py",
          "triton.language patched once per launch: the interpreter re-patches every builtin of tl, tl.core, "
          "tl.math and tl.tensor (inspect.getmembers over each) at every call of a @triton.jit helper from a "
          "kernel, for every program, to the same values as before (about 1 ms a call: 17% of layernorm_backward's "
          "launch time); a helper whose module holds a language module not patched yet in the launch patches it, "
          "once",
          (Target(INTERP, "_patch_lang", ("fn",)), Target(INTERP, "GridExecutor.__call__", ("self",)),
           Target(INTERP, "InterpretedFunction.__call__", ("self",)), Target(INTERP, "_LangPatchScope.restore")),
          extra_check=lambda: _module_reads(INTERP, "patch_scope = _patch_lang(self.fn)", "patch_scope.restore()",
                                            "        _patch_lang(self.fn)\n"),
          backends=("interpret",)),
    Patch("interpreter-lazy-tuple-types", "suite/compat.py",
          "a triton.language tuple's type built when it is first read, not with every tuple: every tensor the "
          "interpreter makes, for every operation of every program, builds a tuple of its shape, whose type (a "
          "tuple_type naming each element's type) nothing reads on the interpreter; building it was about a fifth "
          "of a launch's time (the same type, from the same values, when it is read)",
          (Target(CORE, "tuple.__init__", ("self", "args", "type")), Target(CORE, "_type_for_tuple_values", ("values",)),
           Target(CORE, "tuple_type", ("types",))),
          extra_check=lambda: _reads(CORE, "tuple.__init__", "self.type = _type_for_tuple_values(self.values)"),
          backends=("interpret",)),
    Patch("interpreter-np-dtype-cache", "suite/compat.py",
          "the numpy dtype of a Triton type looked up once: the interpreter's _get_np_dtype builds its table of 18 "
          "types at every call (for every splat, cast and load of every program: about 8% of a launch's time); the "
          "same answer, from the same function, once per type",
          (Target(INTERP, "_get_np_dtype", ("tt_dtype",)),),
          extra_check=lambda: _reads(INTERP, "_get_np_dtype", "return np_types[tt_dtype.element_ty]"),
          backends=("interpret",)),
    Patch("interpreter-unasserted-overflow", "suite/compat.py",
          "no integer-overflow condition built where nothing asserts it: for every integer +, - and * of every "
          "program the semantic layer recomputes the operation in int64 and compares it with the type's range "
          "(eight more operations), only to hand the result to device_assert, which returns at once unless the "
          "options' debug is on, and the interpreter's are never on (InterpreterOptions.debug); about a quarter of "
          "a launch's time. With debug on, Triton's own check runs",
          (Target(SEMANTIC, "TritonSemantic.binary_op_sanitize_overflow_impl", ("self", "lhs", "rhs", "binary_op")),
           Target(SEMANTIC, "TritonSemantic.device_assert", ("self", "cond", "msg")),
           Target(INTERP, "InterpreterOptions.debug"), Target(INTERP, BUILDER)),
          extra_check=lambda: (_reads(SEMANTIC, "TritonSemantic.device_assert", "if not self.builder.options.debug:")
                               or _reads(SEMANTIC, "TritonSemantic.binary_op_sanitize_overflow_impl",
                                         "self.device_assert(cond, msg, None)")),
          backends=("interpret",)),
    Patch("memcheck-hooks", "suite/checks/memcheck.py",
          "the interpreter's memory checker: every load, store and atomic checked against the launch's tensors",
          (Target(INTERP, f"{BUILDER}.create_masked_load", ("self", "ptrs", "mask", "other")),
           Target(INTERP, f"{BUILDER}.create_masked_store", ("self", "ptrs", "value", "mask")),
           Target(INTERP, f"{BUILDER}.create_atomic_rmw", ("self", None, "ptr", "val", "mask")),
           Target(INTERP, f"{BUILDER}.create_atomic_cas", ("self", "ptr", "cmp", "val")),
           Target(INTERP, "GridExecutor._init_args_hst", ("self", "args_dev", "kwargs")),
           Target(INTERP, "GridExecutor.__call__", ("self",)), Target(INTERP, "interpreter_builder"),
           Target(INTERP, f"{BUILDER}.set_grid_idx", ("self", "x", "y", "z")),
           Target(INTERP, f"{BUILDER}.create_barrier", ("self",)),
           Target(INTERP, "ReduceScanOpInterface.apply", ("self", "input"))),
          backends=("interpret",)),
    Patch("launch-interception", "suite/checks/launches.py",
          "launches recorded (outputs seen, signatures) and @triton.autotune made to run the case's config",
          (Target("triton.runtime.jit", "JITFunction.run", ("self",)),
           Target(INTERP, "InterpretedFunction.run", ("self",)),
           Target("triton.runtime.autotuner", "Autotuner.run", ("self",)),
           Target("triton.runtime.autotuner", "Heuristics.run", ("self",)),
           Target("triton.runtime.autotuner", "Autotuner.__init__", ("self", "fn", "arg_names", "configs")))),
    Patch("do-bench-counting", "suite/checks/autotune.py",
          "every triton.testing.do_bench call outside a declared benchmark counts as tuning (a normal run times "
          "nothing; the wrapper passes every argument on)", (Target("triton.testing", "do_bench", ("fn",)),),
          backends=("cuda", "rocm")),
    Patch("bench-do-bench", "suite/tools/bench.py",
          "benchmark samples from triton.testing.do_bench(fn, warmup=, rep=, return_mode='all')",
          (Target("triton.testing", "do_bench", ("fn", "warmup", "rep", "grad_to_none", "quantiles",
                                                  "return_mode")),), backends=("cuda", "rocm")),
    Patch("loaded-registers-cache", "suite/tools/loaded_registers.py",
          "a kernel's JIT cache swapped for an empty one (JITFunction.device_caches of create_binder) for one launch, "
          "and the variants it compiled loaded (CompiledKernel._init_handles) to read their registers and spills",
          (Target("triton.runtime.jit", "JITFunction.create_binder", ("self",)),
           Target("triton.compiler.compiler", "CompiledKernel._init_handles", ("self",))),
          backends=("cuda", "rocm")),
    Patch("hypothesis-add-digest", "suite/compat.py",
          "each kernel x dtype test draws its own derandomized cases: Hypothesis's function_digest, which seeds them, "
          "also hashes a function's _hypothesis_internal_add_digest (add_digest)",
          (Target("hypothesis.internal.reflection", "function_digest", ("function",)),),
          extra_check=lambda: _reads("hypothesis.internal.reflection", "function_digest",
                                     "_hypothesis_internal_add_digest"), package="hypothesis"),
    Patch("hypothesis-force-seed", "suite/compat.py",
          "the parts of a split test seed their draws from --hypothesis-seed where one is given "
          "(hypothesis.core.global_force_seed, forced_seed)",
          (Target("hypothesis.core", "global_force_seed"),), package="hypothesis"),
    Patch("hypothesis-no-local-constants", "suite/compat.py",
          "derandomized draws that depend on nothing but the test: Hypothesis mixes the literal constants of every "
          "local module in sys.modules into its draws, so what a process had imported before a test (an xdist "
          "worker's history) could change the test's cases; the suite gives it none (fixed_constants)",
          (Target("hypothesis.internal.conjecture.providers", "_get_local_constants", ()),
           Target("hypothesis.internal.conjecture.providers", "Constants"),
           Target("hypothesis.internal.conjecture.providers", "CONSTANTS_CACHE.cache")),
          package="hypothesis"),
    Patch("timing-knobs-hooks", "suite/workers/timing.py",
          "Triton's compiles timed and counted (compilation listener, JIT cache and post-compile hooks)",
          (Target("triton.knobs", "compilation.listener"), Target("triton.knobs", "runtime.jit_cache_hook"),
           Target("triton.knobs", "runtime.jit_post_compile_hook"))),
)

BY_NAME = {p.name: p for p in PATCHES}


def _message(broken: Iterable[tuple[Patch, list[str]]], triton_version: str) -> str:
    broken = list(broken)
    packages = sorted({p.package for p, _ in broken}, reverse=True)
    names = " and ".join(f"Triton {triton_version}" if pkg == "triton" else
                         f"Hypothesis {importlib.import_module('hypothesis').__version__}" for pkg in packages)
    lines = [f"{names} lacks what the suite's patches of its internals need (suite/compat.py):"]
    for patch, problems in broken:
        applied = f"applied on Triton {patch.triton}" if patch.package == "triton" else "Hypothesis's internals"
        lines.append(f"  patch {patch.name!r} ({patch.where}: {patch.purpose}; {applied}):")
        lines += [f"    {p}" for p in problems]
    advice = ["a Triton it supports, 3.6.0 to 3.9.0 (requirements/ci.txt: 3.6.0; requirements/ci-newest.txt: 3.9.0)"
              if pkg == "triton" else "the Hypothesis requirements/ci.txt pins" for pkg in packages]
    lines.append(f"Run the suite with {' and '.join(advice)}, or update the patch and its entry in suite/compat.py "
                 f"for this version.")
    return "\n".join(lines)


def _reads(module: str, function: str, name: str) -> str | None:
    """A problem where ``module.function``'s source no longer mentions ``name`` (the private name a patch sets)."""
    try:
        source = inspect.getsource(functools.reduce(getattr, function.split("."), importlib.import_module(module)))
    except (ImportError, AttributeError, OSError, TypeError) as exc:
        return f"{module}.{function}'s source cannot be read ({exc})"
    return None if name in source else f"{module}.{function} no longer reads {name}"


def _module_reads(module: str, *lines: str) -> str | None:
    """A problem where ``module``'s source (as installed, whatever has been patched since) lacks one of ``lines``:
    what a patch relies on being called where it is (a launch patching the language and restoring it, a helper's
    call patching it)."""
    try:
        source = inspect.getsource(importlib.import_module(module))
    except (ImportError, OSError, TypeError) as exc:
        return f"{module}'s source cannot be read ({exc})"
    missing = [line.strip() for line in lines if line not in source]
    return f"{module} no longer has {', '.join(map(repr, missing))}" if missing else None


@functools.cache
def _hypothesis_checked() -> None:
    require("hypothesis-add-digest")
    require("hypothesis-force-seed")


def add_digest(function: Callable[..., Any], key: str) -> None:
    """Hypothesis derandomizes ``function``'s draws from its source and ``key`` (patch 'hypothesis-add-digest'): the
    generic tests share one function, so without the key every kernel x dtype would draw the same cases."""
    _hypothesis_checked()
    function._hypothesis_internal_add_digest = key.encode()  # type: ignore[attr-defined]


def fixed_constants() -> None:
    """Hypothesis draws constants found in the process's local modules (patch 'hypothesis-no-local-constants'): from
    now on it finds none, in this process, so the same test draws the same cases whatever was imported before it."""
    if applied("hypothesis-no-local-constants"):
        return
    require("hypothesis-no-local-constants")
    from hypothesis.internal.conjecture import providers

    none = providers.Constants()
    original = providers._get_local_constants

    def no_local_constants() -> Any:
        return none

    no_local_constants.__wrapped__ = original  # type: ignore[attr-defined]
    providers._get_local_constants = no_local_constants
    providers.CONSTANTS_CACHE.cache.clear()  # choices cached from constants found before
    mark_applied("hypothesis-no-local-constants")


def forced_seed() -> int | None:
    """The seed ``--hypothesis-seed`` forces on every test, if given (patch 'hypothesis-force-seed')."""
    _hypothesis_checked()
    from hypothesis import core

    return core.global_force_seed


def require(name: str) -> Patch:
    """The patch ``name``, checked against the installed Triton; raises :class:`PatchBroken` naming it."""
    patch = BY_NAME[name]
    if problems := patch.check():
        raise PatchBroken(_message([(patch, problems)], installed_triton()))
    return patch


def verify(backend: str) -> list[Patch]:
    """Check every patch that applies to the installed Triton and ``backend``; the patches that apply. Raises
    :class:`PatchBroken` naming every broken one."""
    version = installed_triton()
    applying = [p for p in PATCHES if p.applies(version, backend)]
    broken = [(p, problems) for p in applying if (problems := p.check())]
    if broken:
        raise PatchBroken(_message(broken, version))
    return applying


# --- the interpreter's version-specific gaps, patched here ----------------------------------------------------

# The patches applied in this process, by name: Triton's classes are patched for the whole process, so this is the
# process's record (every module that patches asks here), not a run's state.
_applied: set[str] = set()


def applied(*names: str) -> bool:
    """Whether every patch named was applied in this process."""
    return set(names) <= _applied


def mark_applied(*names: str) -> None:
    _applied.update(names)


def install_interpreter_fixes() -> list[str]:
    """Apply the interpreter patches of this module that apply to the installed Triton (once per process); their
    names."""
    fixes = {"interpreter-bool-masks": _bool_masks, "interpreter-index-numpy24": _index_squeezes,
             "interpreter-patch-once": _patch_once, "interpreter-lazy-tuple-types": _lazy_tuple_types,
             "interpreter-np-dtype-cache": _np_dtype_cache, "interpreter-unasserted-overflow": _unasserted_overflow}
    for name, apply in fixes.items():
        if name not in _applied and BY_NAME[name].applies():
            require(name)
            apply()
            _applied.add(name)
    return sorted(_applied)


def as_bool_mask(mask: Any) -> Any:
    """A mask handle whose data is numpy bool. The interpreter splats a scalar comparison (``valid = t != -100``,
    then ``(cols < n) & valid``) into the comparison operands' integer dtype, so a mask of tl.int1 can hold 0/1
    integers; Triton 3.6's C++ load read any nonzero as set, 3.9's raises "mask has unsupported dtype"."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if mask is None or mask.data.dtype == np.bool_:
        return mask
    return TensorHandle(np.asarray(mask.data) != 0, tl.int1)


def _bool_masks(setter: Callable[[Any, str, Any], None] = setattr) -> None:
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    load, store, rmw = builder.create_masked_load, builder.create_masked_store, builder.create_atomic_rmw

    @functools.wraps(load)
    def create_masked_load(self, ptrs, mask, other, *rest, **kw):
        return load(self, ptrs, as_bool_mask(mask), other, *rest, **kw)

    @functools.wraps(store)
    def create_masked_store(self, ptrs, value, mask, *rest, **kw):
        return store(self, ptrs, value, as_bool_mask(mask), *rest, **kw)

    @functools.wraps(rmw)
    def create_atomic_rmw(self, op, ptr, val, mask, *rest, **kw):
        return rmw(self, op, ptr, val, as_bool_mask(mask), *rest, **kw)

    setter(builder, "create_masked_load", create_masked_load)
    setter(builder, "create_masked_store", create_masked_store)
    setter(builder, "create_atomic_rmw", create_atomic_rmw)


def scalar_index(data: Any) -> int:
    """What Triton 3.9's interpreter takes as a scalar tensor's ``__index__``: its one element."""
    return int(data.squeeze())


def _index_squeezes(setter: Callable[[Any, str, Any], None] = setattr) -> None:
    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor

    @functools.wraps(original)
    def _patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: scalar_index(self.handle.data))

    setter(interpreter, "_patch_lang_tensor", _patch_lang_tensor)


class _LazyTupleType:
    """A triton.language tuple's ``type``, built from its values when first read and kept (a non-data descriptor:
    what the tuple's own code assigns to ``self.type`` is the instance's, and read from then on)."""

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        import triton.language.core as core

        built = obj.__dict__["type"] = core._type_for_tuple_values(obj.values)
        return built


def _lazy_tuple_types(setter: Callable[[Any, str, Any], None] = setattr) -> None:
    """Patch 'interpreter-lazy-tuple-types': ``tuple.__init__`` as Triton's, but the type of a tuple given none is
    built when read (:class:`_LazyTupleType`)."""
    import triton.language.core as core

    original = core.tuple.__init__

    @functools.wraps(original)
    def __init__(self, args, type=None):  # noqa: A002 - Triton's parameter name
        self.values = [i for i in args]
        if isinstance(type, core.tuple_type):
            self.type = type
        elif type is not None:  # make_template in ASTFunction.deserialize may pass a list/tuple
            self.type = core.tuple_type(type)

    setter(core.tuple, "type", _LazyTupleType())
    setter(core.tuple, "__init__", __init__)


def _np_dtype_cache(setter: Callable[[Any, str, Any], None] = setattr) -> None:
    """Patch 'interpreter-np-dtype-cache': ``_get_np_dtype`` answered from a cache keyed by the scalar type (a block's
    answer is its element type's, in Triton's function too); a type it does not know still raises, uncached."""
    import triton.language as tl
    from triton.runtime import interpreter

    original = interpreter._get_np_dtype
    cache: dict[tuple[type, str], Any] = {}

    @functools.wraps(original)
    def _get_np_dtype(tt_dtype):
        scalar = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
        key = (type(scalar), scalar.name)
        found = cache.get(key)
        if found is None:
            found = cache[key] = original(scalar)
        return found

    setter(interpreter, "_get_np_dtype", _get_np_dtype)


def _unasserted_overflow(setter: Callable[[Any, str, Any], None] = setattr) -> None:
    """Patch 'interpreter-unasserted-overflow': the overflow check of an integer operation returns at once where its
    only effect, ``device_assert``, would (an interpreter builder whose options' debug is off); elsewhere it is
    Triton's."""
    from triton.language.semantic import TritonSemantic
    from triton.runtime import interpreter

    original = TritonSemantic.binary_op_sanitize_overflow_impl

    @functools.wraps(original)
    def binary_op_sanitize_overflow_impl(self, lhs, rhs, binary_op):
        builder = self.builder
        if isinstance(builder, interpreter.InterpreterBuilder) and not builder.options.debug:
            return None
        return original(self, lhs, rhs, binary_op)

    setter(TritonSemantic, "binary_op_sanitize_overflow_impl", binary_op_sanitize_overflow_impl)


class _LaunchPatches:
    """The language modules the launch in progress patched (none outside a launch)."""

    def __init__(self) -> None:
        self.starting = False  # GridExecutor.__call__ entered, its own _patch_lang not yet called
        self.langs: frozenset[int] | None = None


class _KeptScope:
    """What a helper's call gets instead of a new scope: the launch's patches stand, nothing to restore."""

    def restore(self) -> None:
        pass


def _lang_modules(fn: Callable[..., Any]) -> frozenset[int]:
    import triton.language as tl

    return frozenset(id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core))


def _patch_once(setter: Callable[[Any, str, Any], None] = setattr) -> _LaunchPatches:
    """Patch 'interpreter-patch-once': within a launch, a @triton.jit helper's call patches the language only where
    its module holds a language module (tl, tl.core) not patched yet in this launch (Triton's own tl.sum and
    tl.zeros hold tl.core, a kernel module mostly tl alone): once, and left patched, as the interpreter leaves every
    helper's patches. The launch's own patching and its restore at the end are as before. The state, for tests."""
    from triton.runtime import interpreter

    state = _LaunchPatches()
    original_patch, original_call = interpreter._patch_lang, interpreter.GridExecutor.__call__

    langs_of: dict[Any, frozenset[int]] = {}  # per function: its globals' language modules (read once)

    @functools.wraps(original_patch)
    def _patch_lang(fn):
        langs = langs_of.get(fn)
        if langs is None:
            langs = langs_of[fn] = _lang_modules(fn)
        if state.starting:  # the launch's own: patched and restored by GridExecutor.__call__
            state.starting = False
            scope = original_patch(fn)
            state.langs = langs
            return scope
        if state.langs is None:  # outside a launch
            return original_patch(fn)
        if langs <= state.langs:
            return _KeptScope()
        scope = original_patch(fn)  # never restored, as the interpreter's own helper calls are not
        state.langs |= langs
        return scope

    @functools.wraps(original_call)
    def __call__(self, *args, **kwargs):
        state.starting, state.langs = True, None
        try:
            return original_call(self, *args, **kwargs)
        finally:
            state.starting, state.langs = False, None

    setter(interpreter, "_patch_lang", _patch_lang)
    setter(interpreter.GridExecutor, "__call__", __call__)
    return state
