"""Running real kernels on Triton's CPU interpreter (``TRITON_INTERPRET=1``, Triton 3.6): what it lacks, filled in
where the GPU's meaning is clear, and said plainly where it is not.

Installed once per process when the backend is the interpreter (``install``), before any kernel runs:

- **Float scalar arguments** are fp32 scalars on a GPU (``eps.to(tl.float32)`` is legal there); the interpreter
  passed the Python float through, which has no ``.to``. They become fp32 scalars here too. **Bool arguments** (a
  run-time flag, as bitsandbytes' optimizers pass one) are i1 scalars on a GPU; the interpreter failed on them
  (``numpy data itemsize (32 bits) exceeds ... int1``). They become i1 scalars here too.
- **libdevice** (``triton.language.extra.libdevice``: ``rsqrt``, ``tanh``, ``erf``, ...) is a set of stubs that the
  GPU compiler replaces by the vendor's library; the interpreter called the stubs, which return None (and the
  vendors' own modules, ``triton.language.extra.cuda.libdevice``, refused to run). Each function here computes with
  numpy, in the argument's dtype, and takes fp32 or fp64 as the GPU's library does. A function without an
  interpreter version raises :class:`InterpreterGap` naming it.
- **bf16 constants** (``tl.full(..., dtype=tl.bfloat16)``, ``x_bf16 * 2.0``) failed for want of a bf16 constant
  maker; they are rounded to nearest even, as on a GPU.
- **Version-specific gaps** (integer masks that Triton 3.9's core refuses, Triton 3.6's ``int()`` of a one-element
  array that numpy 2.4 refuses) are patched in suite/compat.py, which registers every patch of Triton's internals.
- **bf16** is kept as uint16 bit patterns, on which Triton 3.6's interpreter computed (triton #4972; docs/hazards.md,
  hazard 1), and which it truncated from fp32: bf16 arithmetic, conversions, ``tl.dot`` and reductions are computed as
  compiled Triton computes them, in fp32 rounded to nearest even (suite/checks/interpreter_bf16.py).
- **float -> fp8 conversions** are rounded wrongly by Triton 3.6's interpreter (its ``_convert_float`` drops the
  carry into the exponent: fp32 126.5 becomes 64 in e4m3fn, not 128; ties round away from even). Not patched over
  either: where the installed interpreter's conversion is wrong (:func:`fp8_conversion_error`, probed once), the
  conversions a case ran are noted, and a failing case names the interpreter's limit instead of a tolerance hint.

- **Python ``and``/``or``/``not`` and chained comparisons on block tensors** (suite/checks/semantic_gaps.py) are
  evaluated as Python evaluates them (a block tensor is always true: ``a and b`` is ``b``), where compiled Triton
  computes them elementwise. Not patched over (a rewrite of the kernel's source would test the rewrite): each launch's
  function (and the functions it calls) is read before it runs, with the launch's constexpr arguments (a branch they
  rule out is not run, nor read), and one that uses a construct the installed interpreter gets wrong
  (:func:`misevaluated`, probed once) raises :class:`SemanticGap`, naming the construct, function, file and line: the
  case is not checkable here, neither failed nor passed.

``@triton.autotune`` kernels are handled in suite/checks/launches.py (they run a chosen config and time nothing), on every
backend.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from suite.checks import interpreter_bf16
from suite.session import stash

# bf16 computed as compiled Triton computes it (suite/checks/interpreter_bf16.py)
BF16_PATCHES = ("interpreter-bf16-casts", "interpreter-bf16-arithmetic", "interpreter-bf16-dot",
                "interpreter-bf16-reductions")


class InterpreterGap(Exception):  # noqa: N818 - it names the finding
    """A construct the CPU interpreter cannot run; the message says what and what to do."""


class SemanticGap(InterpreterGap):
    """A construct the interpreter evaluates differently from compiled Triton (suite/checks/semantic_gaps.py): the
    kernel is not checkable on the interpreter; raised before the launch runs."""


ADVICE = ("run this kernel on a GPU (--backend=cuda or --backend=rocm), or declare a KnownIssue(backend='interpret', "
          "...) in its spec; see docs/adding-a-kernel.md, 'The interpreter'")

# libdevice functions by name; the rounding-mode variants (_rn, _rz, ...) and the fast_ ones compute the same here.
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), "exp": np.exp, "exp2": np.exp2,
    "exp10": lambda x: np.power(x.dtype.type(10), x), "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt,
    "rcbrt": lambda x: 1 / np.cbrt(x), "rcp": lambda x: 1 / x, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x), "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "erf": np.vectorize(math.erf, otypes=[float]),
    "erfc": np.vectorize(math.erfc, otypes=[float]), "lgamma": np.vectorize(math.lgamma, otypes=[float]),
    "tgamma": np.vectorize(math.gamma, otypes=[float]), "saturatef": lambda x: np.clip(x, 0, 1),
    "normcdf": lambda x: 0.5 * (1 + np.vectorize(math.erf, otypes=[float])(x / math.sqrt(2))),
}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "div": np.divide, "add": np.add, "sub": np.subtract, "mul": np.multiply, "pow": np.power, "powf": np.power,
    "fmod": np.fmod, "remainder": np.remainder, "fmax": np.fmax, "fmin": np.fmin, "atan2": np.arctan2,
    "hypot": np.hypot, "copysign": np.copysign, "nextafter": np.nextafter, "fdim": lambda a, b: np.maximum(a - b, 0),
    "fast_dividef": np.divide,
}
_TERNARY = {"fma": lambda a, b, c: a * b + c}
_PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinited": np.isfinite, "finitef": np.isfinite,
               "signbit": np.signbit}


def _base_name(name: str) -> str:
    for suffix in ("_rn", "_rz", "_rd", "_ru"):
        name = name.removesuffix(suffix)
    name = name.removeprefix("fast_")
    return {"expf": "exp", "logf": "log", "log2f": "log2", "log10f": "log10", "sinf": "sin", "cosf": "cos",
            "tanf": "tan", "tanhf": "tanh", "exp10f": "exp10", "powf": "pow", "dividef": "div", "powi": "pow"}.get(name,
                                                                                                            name)


def libdevice(name: str, args: tuple) -> Any:
    """The interpreter's version of ``libdevice.<name>(*args)``."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle, interpreter_semantic

    base = _base_name(name)
    fn = _UNARY.get(base) or _BINARY.get(base) or _TERNARY.get(base) or _PREDICATES.get(base)
    if fn is None:
        raise InterpreterGap(f"libdevice.{name} has no interpreter version here (Triton's interpreter runs the "
                             f"libdevice stubs, which return None): {ADVICE}")
    tensors = [a if isinstance(a, tl.tensor) else interpreter_semantic.to_tensor(a) for a in args]
    floats = [t for t in tensors if t.dtype.scalar.is_floating()]
    dtype = (floats or tensors)[0].dtype.scalar
    if dtype not in (tl.float32, tl.float64):
        raise InterpreterGap(f"libdevice.{name} got {dtype}: the GPU's libdevice takes fp32 or fp64 (the compile fails "
                             f"there too); convert first, e.g. x.to(tl.float32)")
    for _ in range(2):  # twice: the arguments broadcast before the first takes its final shape take it too
        for i in range(1, len(tensors)):
            tensors[0], tensors[i] = interpreter_semantic.broadcast_impl_value(tensors[0], tensors[i])
    np_dtype = np.float32 if dtype == tl.float32 else np.float64
    data = fn(*[t.handle.data.astype(np_dtype) for t in tensors])
    out_dtype = tl.int32 if base in _PREDICATES else dtype
    data = np.asarray(data).astype(np.int32 if base in _PREDICATES else np_dtype)
    shape = tensors[0].shape
    ty = tl.block_type(out_dtype, shape) if shape else out_dtype
    return tl.tensor(TensorHandle(data, out_dtype), ty)


def _bf16_bits(value: float) -> np.ndarray:
    """``value`` rounded to bf16 (nearest even), as the uint16 bit pattern the interpreter stores bf16 in. Through fp32,
    as the GPU builder's get_bf16 takes a C float."""
    with np.errstate(over="ignore"):
        return interpreter_bf16.round_fp32(np.array([value], dtype=np.float32))


def _taken(counts: Counter[str]) -> Counter[str]:
    """What ``counts`` held, which it holds no more."""
    seen = Counter(counts)
    counts.clear()
    return seen


def take_fp8_casts() -> Counter[str]:
    """The float -> fp8 conversions run since the last call, 'src->dst' -> count; and forget them."""
    return _taken(stash.session().fp8_casts)


@functools.cache
def fp8_conversion_error() -> str | None:
    """What the installed interpreter's fp32 -> fp8 conversion gets wrong (probed once: 126.5 to e4m3fn and e5m2,
    which round up into the next power of two, converted as ``x.to(tl.float8e4nv)`` converts, against torch's), or
    None where it is right."""
    import torch
    import triton.language as tl
    from triton.runtime import interpreter

    for tl_dtype, torch_dtype in ((tl.float8e4nv, torch.float8_e4m3fn), (tl.float8e5, torch.float8_e5m2)):
        got = interpreter._convert_float(np.array([126.5], dtype=np.float32), tl.float32, tl_dtype,
                                         interpreter._ir.ROUNDING_MODE.RTNE)  # what x.to(fp8) asks for
        got_value = torch.tensor(np.asarray(got).view(np.uint8)).view(torch_dtype).float().item()
        want = torch.tensor([126.5]).to(torch_dtype).float().item()
        if got_value != want:
            return f"fp32 126.5 becomes {got_value:g} in {tl_dtype}, not {want:g}"
    return None


def fp8_note(seen: Counter[str]) -> str:
    """What to tell the author of a case that failed after float -> fp8 conversions on an interpreter that rounds
    them wrongly; "" where it ran none or the interpreter's conversion is right."""
    wrong = fp8_conversion_error() if seen else None
    if not wrong:
        return ""
    casts = ", ".join(f"{cast} x{n}" for cast, n in seen.most_common(4))
    return (f"\nnote: on the interpreter this kernel converted floats to fp8 ({casts}), and the interpreter converted "
            f"fp32 to fp8 wrongly: its conversion drops the carry into the exponent ({wrong}; docs/hazards.md, hazard 14): the "
            f"result above may be the interpreter's, not the kernel's (no tolerance fixes that). Run this case on a GPU "
            f"(--backend=cuda or --backend=rocm), or declare a KnownIssue(backend='interpret', failure_pattern='the "
            f"interpreter converted fp32 to fp8', ...) in the spec and check it on a GPU")


@functools.cache
def misevaluated() -> dict[str, str]:
    """The constructs of suite/checks/semantic_gaps.py that the installed interpreter evaluates differently from
    compiled Triton, each with what it gave (probed once: suite/checks/_interpreter_probe.py, one launch of 8 lanes).
    Triton 3.6.0: all four; 3.9.0: ``and``, ``or``, ``not`` (it rewrites chained comparisons)."""
    import torch

    from suite.checks import _interpreter_probe as probe

    out = torch.full((4 * probe.LANES,), -1, dtype=torch.int32)
    checker = stash.session().checker
    outer = checker.scope if checker is not None else None
    if checker is not None:
        checker.scope = None  # the probe's launch is no kernel's
    try:
        probe.semantic_probe[(1,)](out)
    finally:
        if checker is not None:
            checker.scope = outer
    wrong = {}
    for row, construct in zip(out.view(4, probe.LANES).tolist(), probe.EXPECTED, strict=True):
        if row != probe.EXPECTED[construct]:
            wrong[construct] = (f"for x = 0..7 it gave {row} for `{probe.SOURCE[construct]}`, not "
                                f"{probe.EXPECTED[construct]}")
    return wrong


def semantic_gap(fn: Any, args: tuple = (), kwargs: dict[str, Any] | None = None) -> SemanticGap | None:
    """Why jitted function ``fn`` (or one it calls), launched with ``args`` and ``kwargs``, is not checkable on this
    interpreter, or None. The launch's constexpr arguments decide its ``if``s on them (a branch no launch of these
    values takes is compiled nowhere, and not run here) and name the functions passed as constexprs."""
    from suite.checks import semantic_gaps

    gaps = semantic_gaps.find(fn, semantic_gaps.launch_constants(fn, args, kwargs or {}))
    if not gaps:
        return None
    wrong = misevaluated()
    found = [g for g in gaps if g.construct in wrong]
    if not found:
        return None
    first = found[0]
    more = f" (and {len(found) - 1} more: {', '.join(f'{g.construct} at line {g.line}' for g in found[1:4])})" \
        if len(found) > 1 else ""
    import triton

    return SemanticGap(
        f"not checkable on the interpreter: {first.describe()}{more}\n`{first.source}`: Triton {triton.__version__}'s "
        f"interpreter evaluates it as Python does, where a block tensor is always true ({wrong[first.construct]}); "
        f"{semantic_gaps.COMPILED[first.construct]}. The kernel was not run here: check it on a GPU "
        f"(--backend=cuda or --backend=rocm); docs/checks.md, 'Constructs the interpreter evaluates differently'")


def install() -> None:
    """Fill in the interpreter's gaps (see the module docstring), once per process; TRITON_INTERPRET=1 must be set."""
    from suite import compat

    patches = ("interpreter-float-scalars", "interpreter-bf16-constants", "interpreter-libdevice",
               "interpreter-fp8-notes", "interpreter-semantic-gaps", *BF16_PATCHES)
    if compat.applied(*patches):
        return
    import triton.language as tl
    import triton.language.extra.libdevice as stubs
    from triton.runtime import interpreter

    for name in patches:
        compat.require(name)  # a Triton that moved what these patches touch: a usage error naming the patch
    compat.install_interpreter_fixes()  # the gaps of particular Triton versions (suite/compat.py)
    original_cvt = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, bool):  # the JIT passes a Python bool as an i1 scalar (the interpreter made it an int32)
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.bool_), tl.int1), tl.int1)
        if isinstance(arg, float):  # the JIT passes a Python float as an fp32 scalar
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return original_cvt(arg)

    interpreter._implicit_cvt = implicit_cvt
    interpreter.InterpreterBuilder.get_bf16 = lambda self, value: interpreter.TensorHandle(_bf16_bits(value),
                                                                                        tl.bfloat16)
    _route_libdevice_stubs(stubs)
    _route_vendor_libdevice()
    interpreter_bf16.install()
    fp_to_fp = interpreter.InterpreterBuilder.create_fp_to_fp

    @functools.wraps(fp_to_fp)
    def noting_fp_to_fp(self, src, dst_type, *rest):
        dst, source = dst_type.scalar, src.dtype.scalar
        if dst.is_fp8() and not source.is_fp8():
            stash.session().fp8_casts[f"{source}->{dst}"] += 1
        return fp_to_fp(self, src, dst_type, *rest)

    interpreter.InterpreterBuilder.create_fp_to_fp = noting_fp_to_fp
    run = interpreter.InterpretedFunction.run

    def checked_run(self, *args, **kwargs):
        if getattr(self.fn, "__module__", None) != "suite.checks._interpreter_probe" and \
                (gap := semantic_gap(self, args, kwargs)):
            raise gap
        return run(self, *args, **kwargs)

    interpreter.InterpretedFunction.run = checked_run
    compat.mark_applied(*patches)


def _route_libdevice_stubs(stubs: Any) -> None:
    """Give each libdevice stub a body that calls :func:`libdevice`. The stub functions themselves are changed (not
    the module's names), so a kernel that imported ``rsqrt`` from the module before this ran reaches it too."""
    import inspect

    stubs.__dict__["_suite_libdevice"] = libdevice
    for name, stub in list(vars(stubs).items()):
        if not inspect.isfunction(stub) or stub.__module__ != stubs.__name__ or name.startswith("_"):
            continue
        namespace: dict[str, Any] = {}
        exec(f"def {name}(*args, _semantic=None):\n    return _suite_libdevice({name!r}, args)\n", {}, namespace)
        stub.__code__ = namespace[name].__code__
        stub.__defaults__, stub.__kwdefaults__ = None, {"_semantic": None}


def _route_vendor_libdevice() -> None:
    """The same for the vendors' own libdevice modules (``triton.language.extra.cuda.libdevice``, ``...hip...``), whose
    functions are builtins that refuse to run outside a compile ("Did you forget to add @triton.jit ?"). Each keeps
    its closure (the wrapped function) and computes through :func:`libdevice` instead."""
    import importlib

    import triton.language.core as core

    core.__dict__["_suite_libdevice"] = libdevice
    for vendor in ("cuda", "hip"):
        try:
            module = importlib.import_module(f"triton.language.extra.{vendor}.libdevice")
        except ImportError:
            continue
        for name, builtin in list(vars(module).items()):
            if not (callable(builtin) and getattr(builtin, core.TRITON_BUILTIN, False)
                    and getattr(builtin, "__code__", None) is not None and builtin.__code__.co_freevars == ("fn",)):
                continue
            namespace: dict[str, Any] = {}
            exec(f"def outer(fn):\n    def {name}(*args, **kwargs):\n        return _suite_libdevice({name!r}, args) "
                 f"if fn is not None else None\n    return {name}\n", {}, namespace)
            builtin.__code__ = namespace["outer"](None).__code__


def gap_in(exc: BaseException) -> InterpreterGap | None:
    """The InterpreterGap behind ``exc`` (the interpreter wraps what a kernel raises in InterpreterError)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, InterpreterGap):
            return exc
        if isinstance(exc, NotImplementedError) and _raised_by_triton_interpreter(exc):
            return InterpreterGap(f"Triton's CPU interpreter says: {exc} ({ADVICE})")
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _raised_by_triton_interpreter(exc: BaseException) -> bool:
    """Raised inside Triton's own interpreter (``inline_asm``, ``extern_elementwise``, ...): what it lacks, not a
    bug of the kernel."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith("triton/runtime/interpreter.py"):
            return True
        tb = tb.tb_next
    return False
