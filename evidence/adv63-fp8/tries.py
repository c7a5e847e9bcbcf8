"""Tries against ``--numerics``' fp8 conversions (suite/checks/numerics_fp8.py): kernels that are wrong on a modelled
target and might pass under its model, right ones that might fail, and runs that might check less than they say.
Each spec is one try; README.md lists them with the profiles each was run under and what the run said. Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/adv63-fp8/tries.py \\
        --kernels='a63_*' -n 2 --no-results -rA --numerics=PROFILE
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.spec import Case, Dim, KernelSpec, Tolerance

BLOCK = 64
NO_PROBE = "the tries' launchers index dense 1-D tensors: the contract probe is not what they try"


@triton.jit
def try_kernel(x_ptr, y_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if MODE == 0:  # fp -> e4m3 -> back
        y = x.to(tl.float8e4nv).to(tl.float32)
    elif MODE == 1:  # fp -> e5m2 -> back
        y = x.to(tl.float8e5).to(tl.float32)
    elif MODE == 2:  # rounding toward zero, which the model does not have
        y = x.to(tl.float8e4nv, fp_downcast_rounding="rtz").to(tl.float32)
    elif MODE == 3:  # int32 -> e4m3 -> back
        y = x.to(tl.float8e4nv).to(tl.float32)
    elif MODE == 4:  # overflow flagged through inf after an e5m2 cast (sm_90 saturates: no inf)
        q = x.to(tl.float8e5).to(tl.float32)
        y = tl.where(q == float("inf"), -1.0, q)
    elif MODE == 5:  # the code's bits, NaN's sign included
        y = x.to(tl.float8e4nv).to(tl.uint8, bitcast=True).to(tl.float32)
    elif MODE == 6:  # clamped first, then cast: right everywhere
        y = tl.clamp(x.to(tl.float32), -448.0, 448.0).to(tl.float8e4nv).to(tl.float32)
    elif MODE == 7:  # bitcast of a byte to e5m2 and decoded: the codes' values, infinities and NaN included
        y = x.to(tl.uint8).to(tl.float8e5, bitcast=True).to(tl.float32)
    elif MODE == 8:  # e4m3 codes decoded
        y = x.to(tl.uint8).to(tl.float8e4nv, bitcast=True).to(tl.float32)
    elif MODE == 9:  # FNUZ e4m3 (gfx942's own), which Triton 3.6's interpreter has no type for
        y = x.to(tl.float8e4b8).to(tl.float32)
    elif MODE == 10:  # fp8e4b15 (NVIDIA's older type; AMD's Triton refuses it), through the interpreter's conversion
        y = x.to(tl.float8e4b15).to(tl.float32)
    else:  # MODE 11: e4m3 to e5m2, fp8 to fp8
        y = x.to(tl.float8e4nv).to(tl.float8e5).to(tl.float32)
    tl.store(y_ptr + offs, y, mask=m)


@triton.jit
def store_kernel(x_ptr, q_ptr, n, BLOCK: tl.constexpr):
    """fp32 stored into an e4m3 pointer without a .to: tl.store converts."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(q_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def _draw(kind):
    def make(case: Case, device: str) -> dict[str, torch.Tensor]:
        gen = inputs.generator(case)
        n = case.shape["N"]
        sign = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0).double()
        if kind == "e4_ties":  # midpoints of neighbouring e4m3 normals: 2**e * (1 + (2m + 1)/16)
            e = torch.randint(-6, 8, (n,), generator=gen).double()
            mm = torch.randint(0, 8, (n,), generator=gen).double()
            x = sign * 2.0**e * (1 + (2 * mm + 1) / 16)
        elif kind == "e5_ties":
            e = torch.randint(-10, 12, (n,), generator=gen).double()
            mm = torch.randint(0, 4, (n,), generator=gen).double()
            x = sign * 2.0**e * (1 + (2 * mm + 1) / 8)
        elif kind == "near_max_fp16":
            x = sign * (torch.rand(n, generator=gen).double() * 79.75 + 400.0)
        elif kind == "near_max_fp32":
            x = sign * (torch.rand(n, generator=gen).double() * 200.0 + 400.0)
        elif kind == "e5_overflow":
            x = sign * (torch.rand(n, generator=gen).double() * 1e5 + 6e4)
        elif kind == "bf16_large":
            x = sign * 2.0 ** torch.randint(15, 20, (n,), generator=gen).double()
        elif kind == "nan":  # NaNs of both signs (copysign: a product with -1 may keep the NaN's sign)
            x = torch.copysign(torch.where(torch.rand(n, generator=gen) < 0.5, float("nan"), 1.0).double(), sign)
        elif kind == "ints":
            x = torch.randint(-600, 600, (n,), generator=gen).double()
        elif kind == "codes":
            x = torch.randint(0, 256, (n,), generator=gen).double()
        elif kind == "fp16_subnormal":
            x = sign * torch.rand(n, generator=gen).double() * 2.0**-8  # e4m3 subnormals (below 2**-6) and fp16's
        else:
            raise ValueError(kind)
        return {"x": x}
    return make


def _inputs(kind, dtype):
    draw = _draw(kind)

    def make(case: Case, device: str) -> dict[str, torch.Tensor]:
        return {"x": inputs.place(draw(case, device)["x"].to(dtype), case, device)}
    return make


def _ref_roundtrip(fp8, saturate=True, bits=False, flag_inf=False):
    def reference(inp, case):
        x = inp["x"].float()
        limit = torch.finfo(fp8).max
        q = (x.clamp(-limit, limit) if saturate else x).to(fp8)
        if bits:
            return {"y": q.view(torch.uint8).double()}
        y = q.double()
        if flag_inf:
            y = torch.where(y == float("inf"), -1.0, y)
        return {"y": y}
    return reference


def _decode(fp8):
    return lambda inp, case: {"y": inp["x"].to(torch.uint8).view(fp8).double()}


def _run(mode):
    def run(inp, out, cfg):
        x, y = inp["x"], out["y"]
        try_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), MODE=mode, BLOCK=BLOCK)
    return run


def _spec(name, description, mode, kind, dtype, reference, nonfinite=False):
    return register(KernelSpec(
        name=name, description=description, dims=(Dim("N", interpret_max=256, gpu_max=4096, blocks=(BLOCK,)),),
        dtypes=({torch.float16: "fp16", torch.float32: "fp32", torch.bfloat16: "bf16", torch.int32: "int32",
                 torch.float64: "fp64"}[dtype],),
        make_inputs=_inputs(kind, dtype), outputs=("y",),
        make_outputs=lambda inp, case: {"y": torch.empty(inp["x"].shape, dtype=torch.float32, device=inp["x"].device)},
        run=_run(mode), reference=reference, tolerance=Tolerance(safety=0.0), default_config={"interpret": {}},
        value_classes=("normal",), no_subnormals="the try draws its own values", no_contract_probe=NO_PROBE,
        nonfinite_reference=("normal",) if nonfinite else ()))


_spec("a63_e4_ties_fp32", "fp32 e4m3 ties: nearest even everywhere", 0, "e4_ties", torch.float32,
      _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_e5_ties_fp32", "fp32 e5m2 ties: nearest even, but half away on sm_80", 1, "e5_ties", torch.float32,
      _ref_roundtrip(torch.float8_e5m2))
_spec("a63_e5_ties_fp16", "fp16 e5m2 ties: half away on sm_80", 1, "e5_ties", torch.float16,
      _ref_roundtrip(torch.float8_e5m2))
_spec("a63_e5_ties_bf16", "bf16 e5m2 ties: half away on sm_80", 1, "e5_ties", torch.bfloat16,
      _ref_roundtrip(torch.float8_e5m2))
_spec("a63_sat_fp16", "fp16 near e4m3's max: NaN on AMD for 464 < |x| < 480", 0, "near_max_fp16", torch.float16,
      _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_sat_fp32", "fp32 near and past e4m3's max: saturating on every target", 0, "near_max_fp32", torch.float32,
      _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_sat_bf16", "bf16 near and past e4m3's max: saturating on every target", 0, "near_max_fp32",
      torch.bfloat16, _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_rtz", "fp32 to e4m3 rounded toward zero: not modelled, must not be computed otherwise (the reference is the "
      "nearest-even round trip, which a silent nearest-even conversion would pass)", 2, "e4_ties", torch.float32,
      _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_int_to_e4", "int32 to e4m3 and back", 3, "ints", torch.int32, _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_fp64_to_e4", "fp64 to e4m3: not modelled", 0, "e4_ties", torch.float64, _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_e5_overflow_flag", "overflow flagged through inf: sm_90 saturates, so it never flags", 4, "e5_overflow",
      torch.float32, _ref_roundtrip(torch.float8_e5m2, saturate=False, flag_inf=True), nonfinite=True)
_spec("a63_nan_bits", "NaN's code bits with torch's sign: sm_90 drops the sign", 5, "nan", torch.float32,
      _ref_roundtrip(torch.float8_e4m3fn, bits=True))
_spec("a63_clamped", "clamped, then cast: right everywhere", 6, "near_max_fp32", torch.float16,
      _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_decode_e5", "every e5m2 code decoded (infinities, NaN)", 7, "codes", torch.int32, _decode(torch.float8_e5m2),
      nonfinite=True)
_spec("a63_decode_e4", "every e4m3 code decoded (NaN)", 8, "codes", torch.int32, _decode(torch.float8_e4m3fn),
      nonfinite=True)
_spec("a63_bf16_large_e5", "bf16 2**15..2**19 to e5m2, saturating: -0.0 from 2**17 on sm_80", 1, "bf16_large",
      torch.bfloat16, _ref_roundtrip(torch.float8_e5m2))
_spec("a63_subnormal_e4", "fp16 values in e4m3's subnormal range", 0, "fp16_subnormal", torch.float16,
      _ref_roundtrip(torch.float8_e4m3fn))


def _store_run(inp, out, cfg):
    x, q = inp["x"], out["q"]
    store_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, q, x.numel(), BLOCK=BLOCK)


register(KernelSpec(
    name="a63_implicit_store", description="fp32 stored into an e4m3 tensor without .to (tl.store converts)",
    dims=(Dim("N", interpret_max=256, gpu_max=4096, blocks=(BLOCK,)),), dtypes=("fp32",),
    make_inputs=_inputs("e4_ties", torch.float32), outputs=("q",),
    make_outputs=lambda inp, case: {"q": torch.empty(inp["x"].shape, dtype=torch.float8_e4m3fn, device=inp["x"].device)},
    run=_store_run, reference=lambda inp, case: {"q": inp["x"].float().to(torch.float8_e4m3fn).double()},
    tolerance=Tolerance(safety=0.0), default_config={"interpret": {}}, value_classes=("normal",),
    no_subnormals="the try draws its own values", no_contract_probe=NO_PROBE))

_spec("a63_fnuz", "fp32 to gfx942's FNUZ e4m3 and back", 9, "e4_ties", torch.float32,
      _ref_roundtrip(torch.float8_e4m3fnuz))

# e4b15 reference: the nearest-even value of its grid (fp8e4b15: bias 15, 3 mantissa bits, no inf/NaN): a silent
# interpreter rounding (it drops the carry) would fail some ties, pass others; the model must refuse it instead.
_spec("a63_e4b15", "fp32 to fp8e4b15 and back: not modelled, refused (AMD's Triton refuses the type)", 10, "e4_ties",
      torch.float32, _ref_roundtrip(torch.float8_e4m3fn))
_spec("a63_fp8_to_fp8", "e4m3 to e5m2 (fp8 to fp8): not modelled, refused", 11, "e4_ties", torch.float32,
      lambda inp, case: {"y": inp["x"].float().to(torch.float8_e4m3fn).to(torch.float8_e5m2).double()})


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def _copy_run(inp, out, cfg):
    x, y = inp["x"], out["y"]
    copy_kernel[(triton.cdiv(x.numel(), BLOCK),)](x.view(torch.float8_e4m3fn), y.view(torch.float8_e4m3fn), x.numel(),
                                                  BLOCK=BLOCK)


register(KernelSpec(
    name="a63_e4_tensor_copy", description="bytes copied as an fp8e4nv tensor, no conversion (sm_80's Triton refuses "
    "the type)", dims=(Dim("N", interpret_max=256, gpu_max=4096, blocks=(BLOCK,)),), dtypes=("uint8",),
    make_inputs=lambda case, device: {"x": inputs.place(torch.randint(0, 256, (case.shape["N"],), generator=inputs.generator(
        case)).to(torch.uint8), case, device)},
    outputs=("y",), make_outputs=lambda inp, case: {"y": torch.empty_like(inp["x"])}, run=_copy_run,
    reference=lambda inp, case: {"y": inp["x"].double()}, tolerance=Tolerance(safety=0.0),
    default_config={"interpret": {}}, value_classes=("normal",), no_contract_probe=NO_PROBE))
