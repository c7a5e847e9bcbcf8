"""``--numerics=PROFILE``: the interpreter's ``tl.dot`` computed as the profile's GPU computes it.

Without it, the interpreter multiplies with numpy: exact products summed in fp32 in numpy's order, whatever the
target (an fp32 dot in IEEE, nothing flushed). Under a model (suite/session/numerics_table.py: which archs, which
instruction per operand type, with the sources) every ``tl.dot`` of floating operands goes through the bit-accurate
model of the target's matrix instruction in mmasim 2.1.1 (arXiv 2511.10909), over K in Triton's order onto the
accumulator the kernel gave it:

- fp16, bf16, fp8 and TF32/XF32 operands: mmasim's model of the instruction (its fused dot-product width, its
  truncation and rounding of the sum, CDNA2's flushes of fp16/bf16 subnormals), applied to the whole M x N tile at
  once (the arithmetic is per output element; M and N only say how many instructions run side by side);
- fp32 operands in ``ieee``: an fp32 FMA chain over K in order (``fma.rn.f32`` on NVIDIA, the f32 MFMA on AMD, whose
  mmasim model is the same chain), each FMA rounded once (exact: the fp64 sum of the exact product and the addend
  rounded to odd, then to fp32);
- the input precision of an fp32 dot that names none is the target's (TF32 on NVIDIA, XF32 on gfx942, IEEE on
  gfx90a), and a precision the target's Triton refuses (``tf32`` on gfx90a) is refused as Triton refuses it;
- sm_90 fp8 dots promote their accumulator as Triton does (``max_num_imprecise_acc``, the module table's note).

mmasim's package imports a C++ FMA (``mmasim.arithmetic.fma``, built with torch's cpp_extension and ninja at import)
that only its fp32/fp64 instructions use; the FMA chain here is the suite's own, so where that module is not
imported yet a stand-in that refuses to run takes its place, and mmasim needs no compiler (``_mmasim``).

Not modelled (a dot the model cannot compute raises NotModelled, naming it): ``tf32x3``/``bf16x3``/``bf16x6``, an
fp16 accumulator, integer dots (they are exact on every target and run as before).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
import types
from typing import Any

import numpy as np
import torch

from suite.checks import interpreter_bf16, numerics_envelope, numerics_fast, numerics_fp8, numerics_reduce
from suite.session import stash
from suite.session.numerics_table import FMA, PARTS, Model

TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
                "fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2, "fp8e4b8": torch.float8_e4m3fnuz,
                "fp8e5b16": torch.float8_e5m2fnuz}
SUBNORMAL_BELOW = {"fp16": 2.0**-14, "bf16": 2.0**-126}
FP8_NAMES = {t: name for name, t in TORCH_DTYPES.items() if name.startswith("fp8")}


class NotModelled(Exception):  # noqa: N818 - it names what the model lacks
    """A dot the active model cannot compute: the case fails naming it, never computed some other way."""


def _mmasim() -> types.ModuleType:
    """mmasim, imported with a stand-in for its C++ FMA where that is not imported yet (module docstring)."""
    name = "mmasim.arithmetic.fma"
    if name not in sys.modules:
        importlib.import_module("mmasim.arithmetic")
        stand_in = types.ModuleType(name, "stand-in: the suite computes fp32 FMA chains itself")

        class MMA_FMA:  # noqa: N801 - mmasim's name
            def __call__(self, *args: Any) -> Any:
                raise NotModelled("mmasim's C++ FMA is not loaded here; fp32 ieee dots use the suite's FMA chain")

            dpa = __call__

        stand_in.MMA_FMA = MMA_FMA
        sys.modules[name] = stand_in
    importlib.import_module("mmasim.nv_ptx")
    importlib.import_module("mmasim.amd")
    return sys.modules["mmasim"]


def fma_to_odd(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` in fp64 rounded to odd, elementwise, for operands of at most 26 significant bits (fp32, fp16,
    bf16): the product is exact in fp64, the sum is computed exactly as fp64 sum and error (TwoSum) and rounded to
    odd, which a second rounding to any format at least 2 bits shorter rounds as one rounding of the exact value
    would."""
    with np.errstate(all="ignore"):
        p = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
        c64 = np.asarray(c, dtype=np.float64)
        s = p + c64
        virtual = s - c64
        err = (p - virtual) + (c64 - (s - virtual))
        odd = (s.view(np.int64) & 1).astype(bool)
        bump = np.isfinite(s) & (err != 0) & ~odd
        toward = np.where(err > 0, np.inf, -np.inf)
        return np.where(bump, np.nextafter(s, toward), s)


def fma_fp32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fp32 ``a * b + c`` rounded once to nearest even, elementwise (``fma.rn.f32``, ``v_fma_f32``)."""
    with np.errstate(all="ignore"):
        return fma_to_odd(a, b, c).astype(np.float32)


def fma_fused(x: np.ndarray, y: np.ndarray, z: np.ndarray, dtype: str, vendor: str) -> np.ndarray | None:
    """``tl.fma(x, y, z)`` as the vendor's compiled code computes it (Triton 3.6.0's output for sm_80, sm_90, gfx90a
    and gfx942, numerics_table.FMA): fp32 and fp16 rounded once to their own type (``fma.rn.f32``/``.f16``,
    ``v_fmac_f32``/``v_fma_f16``); bf16 rounded once to bf16 on NVIDIA (``fma.rn.bf16``), and on AMD widened to fp32,
    fused there (``v_fmac_f32``) and rounded to bf16, twice. Values as the interpreter holds them (bf16 as bits);
    None for a type not modelled here (fp64: the interpreter's two roundings stay)."""
    with np.errstate(all="ignore"):
        if dtype == "fp32":
            return fma_fp32(x, y, z)
        if dtype == "fp16":
            return fma_to_odd(x, y, z).astype(np.float16)  # numpy rounds fp64 to fp16 once, to nearest even
        if dtype == "bf16":
            a, b, c = (interpreter_bf16.widen(v) for v in (x, y, z))
            if vendor == "nvidia":
                return interpreter_bf16.narrow(fma_to_odd(a, b, c))
            return interpreter_bf16.round_fp32(fma_fp32(a, b, c))
    return None


def fma_chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``c + a @ b`` as a chain of fp32 FMAs over K in order, for every output element at once."""
    acc = np.array(c, dtype=np.float32, copy=True)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for k in range(a32.shape[1]):
        acc = fma_fp32(a32[:, k:k + 1], b32[k:k + 1, :], acc)
    return acc


@dataclasses.dataclass
class Numerics:
    """The active model: the profile it stands for and its arch's table entry."""

    profile: str
    model: Model

    num_warps: int = 4  # the running launch's (Triton's default where it names none): the reduction's layout

    def record(self) -> dict[str, Any]:
        return {"profile": self.profile, "arch": self.model.arch, "vendor": self.model.vendor,
                "model": f"mmasim 2.1.1 {self.model.mmasim_arch}", "parts": list(PARTS),
                "modelled": self.model.modelled()}

    def fma(self, x: np.ndarray, y: np.ndarray, z: np.ndarray, dtype: str) -> np.ndarray | None:
        out = fma_fused(x, y, z, dtype, self.model.vendor)
        if out is not None:
            stash.session().numerics_ran[f"tl.fma {dtype} fused ({FMA[self.model.vendor][dtype]})"] += 1
        return out

    def sum(self, data: np.ndarray, axis: int | None, dtype: str, keep_dims: bool) -> np.ndarray | None:
        out = numerics_reduce.ordered_sum(data, axis, dtype, self.model.vendor, self.model.warp_size, self.num_warps,
                                          keep_dims)
        if out is not None:
            stash.session().numerics_ran[f"tl.sum {dtype} in {self.model.arch}'s order ({self.model.warp_size} lanes "
                                         f"a warp, {self.num_warps} warp{'s' if self.num_warps != 1 else ''})"] += 1
        return out

    def to_fp8(self, values: np.ndarray, src: str, dst: str, rtz: bool) -> np.ndarray:
        """Float values converted to an fp8 type as the target's compiled code converts them (uint8 bits)."""
        m = self.model
        if rtz:
            raise NotModelled(f"{src} -> {dst} rounded toward zero on {m.arch} is not modelled (to nearest even is)")
        out = numerics_fp8.convert(values, src, dst, m.arch, m.vendor)
        if isinstance(out, str):
            raise NotModelled(out)
        session = stash.session()
        session.numerics_ran[f"{src} -> {dst} as {m.arch} converts ({numerics_fp8.HOW[(m.arch, dst)]})"] += 1
        if m.vendor == "amd" and src == "fp16" and dst == "fp8e4nv":
            nan = int(numerics_fp8.amd_fp16_e4m3_nan(torch.from_numpy(np.asarray(values, dtype=np.float32))).sum())
            if nan:
                session.numerics_flushes[f"fp16 values between 464 and 480 converted to fp8e4nv as NaN by "
                                         f"{m.arch}'s conversion (Triton 3.6.0's integer code; 448 on sm_90)"] += nan
        return out

    @functools.cached_property
    def _ops(self) -> dict[str, Any]:
        return {}

    def op(self, instruction: str) -> Any:
        """mmasim's model of one instruction, built once."""
        if instruction not in self._ops:
            mmasim = _mmasim()
            m = self.model
            if m.family == "mfma":
                self._ops[instruction] = mmasim.amd.MFMA(m.mmasim_arch, instruction)
            elif m.family == "wgmma":
                self._ops[instruction] = mmasim.nv_ptx.WGMMA(m.mmasim_arch, instruction)
            else:
                self._ops[instruction] = mmasim.nv_ptx.MMA(m.mmasim_arch, instruction)
        return self._ops[instruction]

    def dot(self, a: np.ndarray, a_type: str, b: np.ndarray, b_type: str, acc: np.ndarray, precision: str,
            imprecise: int) -> np.ndarray:
        """``acc + a @ b`` for 2-D operands (values as the interpreter holds them) as the modelled GPU computes it."""
        m = self.model
        if acc.dtype != np.float32:
            raise NotModelled(f"tl.dot with a {acc.dtype} accumulator on {m.arch}: only fp32 accumulators are modelled")
        if a_type == "fp32" and b_type == "fp32":
            if precision not in ("ieee", "tf32"):
                raise NotModelled(f"tl.dot input_precision={precision!r} on {m.arch} is not modelled")
            if precision == "ieee":
                return fma_chain(a, b, acc)
            if "tf32" not in m.instructions:
                raise NotModelled(f"tl.dot input_precision='tf32' on {m.arch}: the target has no TF32 instruction")
            return self._run(m.instructions["tf32"], torch.from_numpy(a), torch.from_numpy(b), acc)
        ta, tb = _operand(a, a_type), _operand(b, b_type)
        if a_type in m.fp8_upcast or b_type in m.fp8_upcast:
            ta, tb, a_type, b_type = ta.to(torch.float16), tb.to(torch.float16), "fp16", "fp16"
        key = a_type if a_type == b_type else f"{a_type}*{b_type}"
        if key not in m.instructions:
            raise NotModelled(f"tl.dot of {a_type} x {b_type} on {m.arch}: no instruction in the model's table")
        if a_type in m.flushes:
            self._note_flush(a_type, ta, tb)
        instruction = m.instructions[key]
        if a_type.startswith("fp8") and m.family == "wgmma" and imprecise <= a.shape[1]:
            return self._promoted(instruction, ta, tb, acc, max(imprecise, 1))
        return self._run(instruction, ta, tb, acc)

    def _run(self, instruction: str, a: torch.Tensor, b: torch.Tensor, acc: np.ndarray) -> np.ndarray:
        return numerics_fast.run(self.op(instruction), a, b, acc)

    def _promoted(self, instruction: str, a: torch.Tensor, b: torch.Tensor, acc: np.ndarray, every: int) -> np.ndarray:
        """sm_90 fp8: a fresh partial accumulator per ``every`` elements of K (whole instructions), added to the fp32
        accumulator with an fp32 add (Triton's WGMMA.cpp)."""
        k_step = self.op(instruction).k
        total, start, k = np.array(acc, dtype=np.float32, copy=True), 0, a.shape[1]
        zero = np.zeros_like(total)
        while start < k:
            taken = 0
            stop = start
            while stop < k:
                stop += k_step
                taken += k_step
                if taken >= every:
                    break
            partial = self._run(instruction, a[:, start:stop], b[start:stop, :], zero)
            with np.errstate(all="ignore"):
                total = (total + partial).astype(np.float32)
            start = stop
        return total

    def _note_flush(self, dtype: str, a: torch.Tensor, b: torch.Tensor) -> None:
        below = SUBNORMAL_BELOW[dtype]
        flushed = sum(int(((t != 0) & (t.float().abs() < below)).sum()) for t in (a, b))
        if flushed:
            stash.session().numerics_flushes[self.model.flushes[dtype]] += flushed


def _operand(values: np.ndarray, dtype: str) -> torch.Tensor:
    """The interpreter's operand as a torch tensor of its own dtype (bf16 and fp8 are held as their bits)."""
    if dtype == "bf16":
        return torch.from_numpy(interpreter_bf16.widen(values)).to(torch.bfloat16)
    if dtype.startswith("fp8"):
        return torch.from_numpy(np.ascontiguousarray(values).view(np.uint8)).view(TORCH_DTYPES[dtype])
    if dtype not in TORCH_DTYPES:
        raise NotModelled(f"tl.dot operand type {dtype} is not modelled")
    return torch.from_numpy(np.ascontiguousarray(values))


def _precision(value: Any) -> str:
    """Triton's INPUT_PRECISION enum as its lowercase name ('tf32', 'ieee', 'tf32x3', ...)."""
    return str(getattr(value, "name", value)).split(".")[-1].lower()


def take_flushes() -> dict[str, int]:
    """What the model flushed since the last call (what -> operands), and forget it."""
    seen = dict(stash.session().numerics_flushes)
    stash.session().numerics_flushes.clear()
    return seen


def take_ran() -> dict[str, int]:
    """The modelled operations other than tl.dot the case ran since the last call (what -> times), and forget them."""
    seen = dict(stash.session().numerics_ran)
    stash.session().numerics_ran.clear()
    return seen


def flush_note(seen: dict[str, int], ran: dict[str, int] | None = None) -> str:
    """The failure message's note on what the modelled GPU's matrix cores flushed in the case, and on the modelled
    fma and reduction order it ran ("" for nothing)."""
    active = stash.session().numerics
    if active is None:
        return ""
    note = ""
    flushed = {why: n for why, n in seen.items() if why in active.model.flushes.values()}
    if flushed:
        what = "; ".join(f"{why} ({n} operand element{'s' if n != 1 else ''})" for why, n in flushed.items())
        note += (f"\nnote: modelled as {active.profile} ({active.model.arch}): {what}. This is the modelled GPU's "
                 f"arithmetic (--numerics), not the kernel's bug alone: the kernel's result depends on subnormal "
                 f"tl.dot operands that GPU flushes to zero (docs/hazards.md)")
    if converted := {why: n for why, n in seen.items() if why not in flushed}:
        what = "; ".join(f"{why} ({n} element{'s' if n != 1 else ''})" for why, n in converted.items())
        note += (f"\nnote: modelled as {active.profile} ({active.model.arch}): {what}. This is the modelled GPU's "
                 f"compiled conversion (--numerics), not the kernel's bug alone: the kernel's result depends on "
                 f"values that GPU converts otherwise (docs/hazards.md, fp8 conversions, per target)")
    if ran:
        what = "; ".join(f"{why} x{n}" for why, n in ran.items())
        note += (f"\nnote: modelled as {active.profile} ({active.model.arch}), the case ran {what}: its result is "
                 f"that GPU's rounding and order (--numerics), which the plain interpreter's arithmetic (an fma's "
                 f"two roundings, numpy's pairwise sum, its own fp8 rounding) need not match (docs/hazards.md)")
    return note


def install(active: Numerics, setter: Any = setattr) -> None:
    """Route the interpreter's tl.dot through ``active`` and give its options the target's dot defaults; once per
    process (the caller requires the patch, suite/compat.py)."""
    from triton.runtime import interpreter

    from suite.session import options as options_mod

    stash.session().numerics = active
    model = active.model
    builder = interpreter.interpreter_builder
    default = options_mod.f32_default() or model.default_fp32
    builder.options = dataclasses.replace(builder.options, default_dot_input_precision=default,
                                          allowed_dot_input_precisions=model.allowed_fp32,
                                          max_num_imprecise_acc_default=model.imprecise_acc_default)
    create_dot = interpreter.InterpreterBuilder.create_dot

    @functools.wraps(create_dot)
    def modelled_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        a_type, b_type = a.dtype.name, b.dtype.name
        if not (a.dtype.is_floating() and b.dtype.is_floating()):
            return create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
        precision, imprecise = _precision(input_precision), int(max_num_imprecise_acc or 0)
        if a.data.ndim == 2:
            out = active.dot(a.data, a_type, b.data, b_type, d.data, precision, imprecise)
        else:
            out = np.stack([active.dot(a.data[i], a_type, b.data[i], b_type, d.data[i], precision, imprecise)
                            for i in range(a.data.shape[0])])
        return interpreter.TensorHandle(out, d.dtype.scalar)

    setter(interpreter.InterpreterBuilder, "create_dot", modelled_dot)
    _install_elementwise(active, setter)
    _install_fp8(active, setter)
    numerics_envelope.install(model.vendor, setter)


def _install_elementwise(active: Numerics, setter: Any) -> None:
    """Route tl.fma and tl.sum through ``active``, and keep the running launch's num_warps for the sum's layout."""
    from triton.runtime import interpreter

    create_fma, reduce_sum = interpreter.InterpreterBuilder.create_fma, interpreter.ReduceOps.sum
    run = interpreter.InterpretedFunction.run

    @functools.wraps(create_fma)
    def modelled_fma(self, x, y, z):
        dtype = z.dtype.scalar.name
        if x.dtype.scalar.name == y.dtype.scalar.name == dtype:
            out = active.fma(x.data, y.data, z.data, dtype)
            if out is not None:
                return interpreter.TensorHandle(out, z.dtype.scalar)
        return create_fma(self, x, y, z)

    @functools.wraps(reduce_sum)
    def modelled_sum(self, input):  # noqa: A002 - Triton's parameter name
        out = active.sum(input.handle.data, self.axis, input.dtype.scalar.name, self.keep_dims)
        return reduce_sum(self, input) if out is None else self.to_tensor(out, input.dtype)

    @functools.wraps(run)
    def launched(self, *args, **kwargs):
        for arg in (*args, *kwargs.values()):  # an fp8 tensor of a type the target's Triton refuses
            name = FP8_NAMES.get(getattr(arg, "dtype", None))
            if name and (why := numerics_fp8.unsupported(active.model.arch, name)):
                raise NotModelled(why)
        before, active.num_warps = active.num_warps, int(kwargs.get("num_warps") or 4)
        try:
            return run(self, *args, **kwargs)
        finally:
            active.num_warps = before

    setter(interpreter.InterpreterBuilder, "create_fma", modelled_fma)
    setter(interpreter.ReduceOps, "sum", modelled_sum)
    setter(interpreter.InterpretedFunction, "run", launched)


def _install_fp8(active: Numerics, setter: Any) -> None:
    """Route float <-> OCP fp8 conversions through ``active``: to fp8 as the target's compiled code converts
    (suite/checks/numerics_fp8.py), from fp8 exactly (sm_90 decodes exactly: an H200 for every code, the shipped
    fp8_codes kernel; gfx90a and gfx942 their LLVM IR, evidence/numerics/amd_fp8_ir.py)."""
    from triton.runtime import interpreter

    fp_to_fp = interpreter.InterpreterBuilder.create_fp_to_fp
    rtz = interpreter._ir.ROUNDING_MODE.RTZ

    @functools.wraps(fp_to_fp)
    def modelled_fp_to_fp(self, src, dst_type, rounding_mode=None, *rest, **kwargs):
        source, dest = src.dtype.scalar.name, dst_type.scalar.name
        if not (source.startswith("fp8") or dest.startswith("fp8")):
            return fp_to_fp(self, src, dst_type, rounding_mode, *rest, **kwargs)
        arch = active.model.arch
        for fp8 in (source, dest):
            if why := numerics_fp8.unsupported(arch, fp8):
                raise NotModelled(why)
        if dest in numerics_fp8.OCP_MAX and not source.startswith("fp8"):
            bits = active.to_fp8(src.data, source, dest, rounding_mode == rtz)
            return interpreter.TensorHandle(bits.astype(np.uint8), dst_type.scalar)
        if source in numerics_fp8.OCP_MAX and dest in ("fp32", "fp16", "bf16"):
            wide = numerics_fp8.decode(src.data, source)
            data = interpreter_bf16.narrow(wide) if dest == "bf16" else wide.astype(np.float16 if dest == "fp16"
                                                                                    else np.float32)
            return interpreter.TensorHandle(data, dst_type.scalar)
        # Never the interpreter's own fp8 rounding (it drops the carry into the exponent, hazard 14).
        raise NotModelled(f"{source} -> {dest} on {arch} is not modelled (to and from fp8e4nv and fp8e5, with fp32, "
                          f"fp16 and bf16, are)")

    setter(interpreter.InterpreterBuilder, "create_fp_to_fp", modelled_fp_to_fp)
