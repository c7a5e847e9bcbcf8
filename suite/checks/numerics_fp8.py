"""``--numerics=PROFILE``: float -> fp8 conversions computed as the profile's compiled code computes them.

Triton 3.6.0's own output for each modelled target (a 64-element ``x.to(tl.float8e4nv)``/``x.to(tl.float8e5)`` per
source type, compiled on the CPU; the instructions and the source of each figure are in docs/hazards.md, "fp8
conversions, per target"):

- **sm_90**: ``cvt.rn.satfinite.e4m3x2.f32``/``.e5m2x2.f32`` (fp16 sources ``.f16x2``; bf16 widened to fp32 first):
  one rounding to nearest even, a finite result beyond the format's largest (and an infinity) saturated to it, every
  NaN stored as 0x7F (its sign dropped). Compared bit for bit with an H200 on every fp32, fp16 and bf16 input
  (evidence/numerics/fp8_conversions.py).
- **gfx90a, gfx942** (OCP types, which they lack in hardware): integer code that rounds to nearest even and
  saturates the same way, a NaN kept with its sign (``0x7F``/``0x7E`` and the sign), but for one window: fp16 to
  fp8e4nv saturates only above 479.75 (fp16 bits ``0x5F7F``), so that an fp16 value strictly between 464 and 480
  rounds up to 480, which e4m3fn encodes as NaN (``0x7F`` and the sign), where sm_90 stores 448. Compared with that
  code's LLVM IR, executed operation by operation (evidence/numerics/amd_fp8_ir.py), on every fp16 and bf16 input and
  on fp32 inputs of every sign and exponent, with the mantissas at and around every rounding boundary.
- **sm_80**: no fp8e4nv (Triton refuses the type there). To fp8e5 there is no ``cvt``: fp32 goes to fp16 rounded
  toward zero (``cvt.rz.f16.f32``), and fp16's bits are rounded half away from zero by an integer add (``and``
  ``0xfffefffe``, ``add 0x00800080``, the high byte kept): two roundings, no saturation (from 61440 up is inf). bf16 goes
  through another integer routine, which clamps its bits to ``[0x3800, 0x57e0]`` before the same half-away rounding:
  values from 2**-15 down are flushed to zero, and it keeps one exponent bit too many, so that from 2**17 up the
  exponent overflows into the sign bit (131072 becomes -0.0). The routines' own instruction text was run on an H200
  beside these translations (the same evidence script).

The interpreter holds fp8 values as their uint8 bits, bf16 as uint16 bits; these functions take and give the same.
A conversion not listed (another fp8 type, fp8 to fp8, an fp64 source or destination, round-toward-zero) and an fp8
type the target's Triton refuses fail the case through :class:`numerics.NotModelled`, never some other rounding
(docs/hazards.md, "fp8 conversions, per target").
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from suite.checks import interpreter_bf16

OCP_MAX = {"fp8e4nv": 448.0, "fp8e5": 57344.0}
OCP_TORCH = {"fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}
# The NaN each target's conversion stores: sm_90's cvt 0x7F for every NaN, its sign dropped (an H200, on every input);
# the AMD integer code 0x7F (e4m3) or 0x7E (e5m2) with the input's sign (its LLVM IR).
NAN_BITS = {"nvidia": {"fp8e4nv": 0x7F, "fp8e5": 0x7F}, "amd": {"fp8e4nv": 0x7F, "fp8e5": 0x7E}}
NAN_SIGNED = {"nvidia": False, "amd": True}
# What each modelled arch runs, as the model's record and the failure note say it.
HOW = {
    ("sm_90", "fp8e4nv"): "cvt.rn.satfinite.e4m3x2: nearest even, saturating, every NaN as 0x7F",
    ("sm_90", "fp8e5"): "cvt.rn.satfinite.e5m2x2: nearest even, saturating, every NaN as 0x7F",
    ("gfx90a", "fp8e4nv"): "integer code, nearest even, saturating (from fp16: NaN for 464 < |x| < 480)",
    ("gfx90a", "fp8e5"): "integer code, nearest even, saturating",
    ("gfx942", "fp8e4nv"): "integer code, nearest even, saturating (from fp16: NaN for 464 < |x| < 480)",
    ("gfx942", "fp8e5"): "integer code, nearest even, saturating",
    ("sm_80", "fp8e5"): "cvt.rz.f16.f32, then half away from zero on fp16's bits; bf16's bits clamped first; "
                        "not saturating",
}


# Shipped fp8 kernels left out of modelled runs, and why (a user's fp8 kernel runs, under every rule).
NOT_RUN = {
    "fp8_scaled_matmul": "not run under --numerics: its interpreter config (kernels/fp8.py's MATMUL_DEFAULTS, GROUP_M 4 "
                         "over at most 3 row blocks, no TMA) reaches neither its several_groups, partial_last_group nor "
                         "descriptor path, and smaller interpreter configs change kernels/fp8.py, which makes both "
                         "sm_90 autotune caches stale until retuned on an H100 and an H200",
}


def amd_fp16_e4m3_nan(x: torch.Tensor) -> torch.Tensor:
    """Where AMD's fp16 -> fp8e4nv code stores a NaN for a finite input: 464 < |x| < 480."""
    mag = x.to(torch.float32).abs()
    return (mag > 464.0) & (mag < 480.0)


def source_as_fp32(values: np.ndarray, src: str) -> np.ndarray:
    """The interpreter's source values as fp32 (exact for fp32, fp16 and bf16 bits)."""
    return interpreter_bf16.widen(values) if src == "bf16" else np.asarray(values).astype(np.float32)


def rne_satfinite(x: torch.Tensor, dst: str, vendor: str) -> torch.Tensor:
    """fp32 values (any device) to ``dst``'s bits: nearest even, saturating finite, a NaN as the vendor stores it."""
    wide = x.to(torch.float32)
    bits = torch.clamp(wide, -OCP_MAX[dst], OCP_MAX[dst]).to(OCP_TORCH[dst]).view(torch.uint8)
    sign = ((wide.view(torch.int32) >> 24) & 0x80).to(torch.uint8) if NAN_SIGNED[vendor] else torch.zeros_like(bits)
    return torch.where(torch.isnan(wide), sign | NAN_BITS[vendor][dst], bits)


def fp16_bits_rz(x: torch.Tensor) -> torch.Tensor:
    """``cvt.rz.f16.f32``: fp32 values to fp16 bits (int32), rounded toward zero, subnormals kept, a NaN as 0x7FFF."""
    wide = x.to(torch.float32)
    half = wide.to(torch.float16)
    bits = half.view(torch.int16).to(torch.int32) & 0xFFFF
    away = half.to(torch.float32).abs() > wide.abs()  # rounded away from zero (an overflow to inf included)
    bits = torch.where(away, bits - 1, bits)  # sign and magnitude: one step of the magnitude toward zero
    return torch.where(torch.isnan(wide), torch.full_like(bits, 0x7FFF), bits)


def sm80_e5_from_fp16_bits(h: torch.Tensor) -> torch.Tensor:
    """sm_80's fp16 -> fp8e5: ``and.b32 0xfffefffe; add.u32 0x00800080``, the high byte of each half (int32 bits in)."""
    return (((h & 0xFFFE) + 0x80) >> 8).to(torch.uint8)


def sm80_e5_from_bf16_bits(b: torch.Tensor) -> torch.Tensor:
    """sm_80's bf16 -> fp8e5: the sign kept; the other bits clamped to [0x3800, 0x57e0], 0x10 added, 0x3800 taken
    away, shifted left by 3, the high byte kept (int32 bits in)."""
    sign = (b >> 8) & 0x80
    mag = torch.clamp(b & 0x7FFF, 0x3800, 0x57E0)
    return ((((mag + 0x10 - 0x3800) << 3) >> 8) & 0xFF | sign).to(torch.uint8)


@functools.cache
def triton_fp8_types(arch: str) -> tuple[str, ...]:
    """The fp8 types the installed Triton compiles for ``arch`` (its backend's ``supported_fp8_dtypes``)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", int(arch.removeprefix("sm_")), 32) if arch.startswith("sm_") else GPUTarget("hip", arch, 64)
    return tuple(make_backend(target).parse_options({}).supported_fp8_dtypes)


def unsupported(arch: str, dtype: str) -> str | None:
    """Why ``arch``'s Triton refuses an fp8 type a kernel uses (a conversion, a bitcast, a decode, a tensor argument),
    or None: the type is not among the backend's supported fp8 types (sm_80: fp8e4b15 and fp8e5 only)."""
    import triton

    if not dtype.startswith("fp8") or dtype in (known := triton_fp8_types(arch)):
        return None
    return (f"Triton {triton.__version__} refuses {dtype} on {arch} ('type {dtype} not supported in this "
            f"architecture'; it takes {', '.join(known)})")


def decode(bits: np.ndarray, src: str) -> np.ndarray:
    """OCP fp8 bits (uint8) as the fp32 values they encode, exactly (a NaN as NaN, e5m2's infinities as inf)."""
    arr = np.ascontiguousarray(np.asarray(bits, dtype=np.uint8))
    return torch.from_numpy(arr).view(OCP_TORCH[src]).to(torch.float32).numpy().reshape(np.shape(bits))


def convert(values: np.ndarray, src: str, dst: str, arch: str, vendor: str) -> np.ndarray | str:
    """The interpreter's ``src`` values converted to ``dst`` (uint8 bits) as ``arch``'s compiled code converts them;
    or a sentence naming why the model has no such conversion."""
    if src not in ("fp32", "fp16", "bf16"):
        return f"{src} -> {dst} on {arch} is not modelled (fp32, fp16 and bf16 sources are)"
    if (arch, dst) not in HOW:
        if why := unsupported(arch, dst):
            return why
        return f"{src} -> {dst} on {arch} is not modelled ({', '.join(sorted({d for _, d in HOW}))} are, on " \
               f"{', '.join(sorted({a for a, _ in HOW}))})"
    arr = np.ascontiguousarray(values)
    if arch == "sm_80":
        if src == "bf16":
            out = sm80_e5_from_bf16_bits(torch.from_numpy(arr.astype(np.uint16).astype(np.int32)))
        elif src == "fp16":
            out = sm80_e5_from_fp16_bits(torch.from_numpy(arr.view(np.uint16).astype(np.int32)))
        else:
            out = sm80_e5_from_fp16_bits(fp16_bits_rz(torch.from_numpy(arr.astype(np.float32))))
    else:
        wide = torch.from_numpy(source_as_fp32(arr, src))
        out = rne_satfinite(wide, dst, vendor)
        if vendor == "amd" and src == "fp16" and dst == "fp8e4nv":
            sign = ((wide.view(torch.int32) >> 24) & 0x80).to(torch.uint8)
            out = torch.where(amd_fp16_e4m3_nan(wide), sign | 0x7F, out)
    return out.numpy().reshape(np.shape(values))  # a 0-d array stays 0-d (ascontiguousarray made it 1-d)
