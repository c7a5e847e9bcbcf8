"""``--numerics``: the approximate fp32 instructions' error envelopes, and the cases whose verdict flips inside them.

Triton 3.6.0 lowers ``tl.exp2``, ``tl.exp``, ``tl.sqrt``, ``tl.math.rsqrt`` and ``/`` of fp32 to approximate
instructions on NVIDIA (``ex2.approx``, ``sqrt.approx``, ``rsqrt.approx``, ``div.full``), and the exponentials,
square roots and logarithms to ``v_exp_f32``, ``v_sqrt_f32``, ``v_rsq_f32``, ``v_log_f32`` on AMD (docs/hazards.md's
table; the bounds and their sources in suite/session/numerics_table.py's ``APPROX``). The interpreter computes them
as numpy does (correctly rounded, or nearly): the GPU's results may be anywhere within the bound of those.

Under a model, the builder's functions for these operations count what a case ran (``take_used``); a case judged
close to its bound runs again at the envelope's ends (``End``): every fp32 result of the named operations moved its
bound's ulps down, every one up, and each element a sign of its own (drawn from a fixed seed). Each end is computed
from the float64 result rounded to fp32 (for ``tl.exp`` on NVIDIA from ``2^fl(x * log2 e)``, the product Triton
emits before ``ex2.approx``; on AMD from both that and ``exp(x)``, the envelope spanning the two). Results the
instruction gives exactly (``2^0 = 1``, zeros, infinities, NaN) stay. fp16, bf16 and fp64 results are not moved
(the instructions are fp32's; Triton's fp16 exponentials round an fp32 result, whose ulps fp16's rounding mostly
absorbs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from suite.session import stash
from suite.session.numerics_table import APPROX, APPROX_NAMES

ENDS = ("down", "up", "mixed")  # every result down, every result up, a sign per element
SEED = 20261129  # the mixed end's signs: fixed, so that a run repeats


@dataclasses.dataclass
class End:
    """One end of the envelope: which way the results move, and which operations move (None: all of them)."""

    way: str
    only: frozenset[str] | None = None
    calls: int = 0  # calls moved so far: the mixed end's signs differ from call to call


def _correct(name: str, args: tuple[np.ndarray, ...], vendor: str) -> tuple[np.ndarray, np.ndarray]:
    """The low and high centres of the envelope for ``name`` on fp32 arguments, each rounded to fp32: for
    ``tl.exp`` on NVIDIA ``2^fl(x * log2 e)`` (the product Triton emits before ``ex2.approx``), on AMD both that and
    ``exp(x)`` (whether LLVM's lowering rounds the product is not read here)."""
    with np.errstate(all="ignore"):
        x = [np.asarray(a, dtype=np.float64) for a in args]
        if name == "create_exp":
            exact = np.exp(x[0]).astype(np.float32)
            emitted = np.exp2((np.float32(x[0]) * np.float32(np.log2(np.e))).astype(np.float64)).astype(np.float32)
            if vendor == "nvidia":
                return emitted, emitted
            return np.minimum(exact, emitted), np.maximum(exact, emitted)
        value = {"create_exp2": lambda: np.exp2(x[0]), "create_sqrt": lambda: np.sqrt(x[0]),
                 "create_rsqrt": lambda: 1.0 / np.sqrt(x[0]), "create_fdiv": lambda: x[0] / x[1],
                 "create_log2": lambda: np.log2(x[0]), "create_log": lambda: np.log(x[0])}[name]()
        rounded = value.astype(np.float32)
        return rounded, rounded


def _exact(name: str, args: tuple[np.ndarray, ...], out: np.ndarray) -> np.ndarray:
    """Where the instruction's result is exact: not finite, zero, and 2^+-0 = 1 (PTX ISA's table for ex2)."""
    keep = ~np.isfinite(out) | (out == 0)
    if name in ("create_exp", "create_exp2"):
        keep |= np.asarray(args[0]) == 0
    return keep


def moved(name: str, args: tuple[np.ndarray, ...], out: np.ndarray, ulps: int, end: End, vendor: str) -> np.ndarray:
    """``out`` (the interpreter's fp32 result of ``name``) at ``end`` of ``vendor``'s envelope of ``ulps`` ulps."""
    low, high = _correct(name, args, vendor)
    low, high = np.broadcast_to(low, out.shape), np.broadcast_to(high, out.shape)
    if end.way == "down":
        up = np.zeros(out.shape, dtype=bool)
    elif end.way == "up":
        up = np.ones(out.shape, dtype=bool)
    else:
        up = np.random.default_rng([SEED, end.calls]).random(out.shape) < 0.5
    end.calls += 1
    result = np.where(up, high, low).astype(np.float32)
    toward = np.where(up, np.float32(np.inf), np.float32(-np.inf))
    for _ in range(ulps):
        result = np.nextafter(result, toward).astype(np.float32)
    return np.where(_exact(name, args, out) | ~np.isfinite(result), out, result).astype(np.float32)


def take_used() -> dict[str, int]:
    """The approximate operations (their builder names) the case ran on fp32 since the last call, and forget them."""
    seen = dict(stash.session().numerics_approx)
    stash.session().numerics_approx.clear()
    return seen


@contextlib.contextmanager
def at(end: End) -> Iterator[End]:
    """Run what is inside with the approximate operations' results at ``end`` of their envelopes."""
    session = stash.session()
    before, session.numerics_end = session.numerics_end, end
    try:
        yield end
    finally:
        session.numerics_end = before


def describe(vendor: str, profile: str, names: list[str]) -> str:
    """'tl.exp within mi300x's v_exp_f32 bound of 2 ulp' for each of ``names``, joined."""
    return " and ".join(f"{APPROX_NAMES[n]} within {profile}'s {APPROX[vendor][n].instruction} bound of "
                        f"{APPROX[vendor][n].ulps} ulp" for n in names)


def install(vendor: str, setter: Any) -> None:
    """Wrap the interpreter builder's functions for the vendor's approximate operations: count each fp32 call, and
    at an end of the envelope (``at``) move its results."""
    from triton.runtime import interpreter

    cls = interpreter.InterpreterBuilder
    for name, approx in APPROX[vendor].items():
        setter(cls, name, _wrapped(name, getattr(cls, name), approx.ulps, vendor, interpreter.TensorHandle))


def _wrapped(name: str, original: Callable, ulps: int, vendor: str, handle: type) -> Callable:
    @functools.wraps(original)
    def approximate(self, *args):
        out = original(self, *args)
        data = out.data
        if not (isinstance(data, np.ndarray) and data.dtype == np.float32):
            return out
        session = stash.session()
        session.numerics_approx[name] += 1
        end = session.numerics_end
        if end is None or (end.only is not None and name not in end.only):
            return out
        values = tuple(a.data for a in args)
        return handle(moved(name, values, data, ulps, end, vendor), out.dtype.scalar)

    return approximate
