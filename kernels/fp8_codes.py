"""fp8 conversions, every code of a flavour both ways (the hazard of fp8 special values and rounding).

The flavours differ in what their codes mean: OCP e4m3fn has one NaN pair and no infinities, e5m2 has
infinities, and the FNUZ flavours of gfx942 have no -0 and a single NaN (0x80). Conversions have mapped NaN to
-0 and rounded fp32 -> fp8 other than to nearest even. The kernel decodes all 256 codes to fp32 and encodes,
from fp32: every finite value of the flavour, every midpoint between neighbours (a tie, which must round to the
even code), both zeros and NaN. The reference is torch's conversion. Values beyond the largest finite one are
left out: Triton converts with saturation where torch (e5m2, FNUZ) gives inf or NaN, by design on both sides.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, signature


@triton.jit
def fp8_codes_kernel(codes_ptr, decoded_ptr, values_ptr, encoded_ptr, bits_ptr, n_codes, n_values,
                     BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_codes = offs < n_codes
    codes = tl.load(codes_ptr + offs, mask=in_codes)
    tl.store(decoded_ptr + offs, codes.to(tl.float32), mask=in_codes)
    in_values = offs < n_values
    encoded = tl.load(values_ptr + offs, mask=in_values, other=0.0).to(encoded_ptr.dtype.element_ty)
    tl.store(encoded_ptr + offs, encoded, mask=in_values)
    # The code itself, compared exactly (-1 for NaN, whose sign and payload mean nothing): a value comparison
    # could not tell -0 from +0, nor codes one subnormal step apart.
    back = encoded.to(tl.float32)
    bits = encoded.to(tl.uint8, bitcast=True).to(tl.int16)
    tl.store(bits_ptr + offs, tl.where(back != back, -1, bits), mask=in_values)


def fp8_codes(codes: torch.Tensor, values: torch.Tensor, out: dict[str, torch.Tensor], config: dict | None = None):
    for name, t in (("codes", codes), ("values", values), *((f"out[{k!r}]", v) for k, v in out.items())):
        inputs.require_dense("fp8_codes", name, t)  # every tensor indexed by its logical index
    block = (config or {}).get("BLOCK", 256)
    n = max(codes.numel(), values.numel())
    fp8_codes_kernel[(triton.cdiv(n, block),)](codes, out["decoded"], values, out["encoded"], out["bits"], codes.numel(),
                                               values.numel(), BLOCK=block)


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    fp8 = DTYPES[case.dtype]
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(fp8)
    finite = codes.to(torch.float64)
    finite = finite[torch.isfinite(finite)].unique()  # sorted
    ties = (finite[1:] + finite[:-1]) / 2
    values = torch.cat([finite, ties, torch.tensor([0.0, -0.0, float("nan")], dtype=torch.float64)])
    return {"codes": codes.to(device), "values": values.to(torch.float32).to(device)}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    fp8 = DTYPES[case.dtype]
    encoded = inputs["values"].cpu().to(fp8)
    back = encoded.to(torch.float64)
    bits = encoded.view(torch.uint8).to(torch.int16)
    bits = torch.where(torch.isnan(back), torch.full_like(bits, -1), bits)
    return {"decoded": inputs["codes"].cpu().to(torch.float64), "encoded": back, "bits": bits}


def _make_outputs(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    n, device = inputs["values"].numel(), inputs["values"].device
    return {"decoded": torch.empty(256, dtype=torch.float32, device=device),
            "encoded": torch.empty(n, dtype=DTYPES[case.dtype], device=device),
            "bits": torch.empty(n, dtype=torch.int16, device=device)}


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    types = {"codes_ptr": f"*{dtype}", "decoded_ptr": "*fp32", "values_ptr": "*fp32", "encoded_ptr": f"*{dtype}",
             "bits_ptr": "*i16", "n_codes": "i32", "n_values": "i32"}
    return signature(fp8_codes_kernel, types, {"BLOCK": meta.get("BLOCK", 256)})


SPEC = register(KernelSpec(
    name="fp8_codes",
    description="every fp8 code of the flavour decoded to fp32, and every finite value, tie, zero and NaN encoded",
    dims=(Dim("N", interpret_max=256, gpu_max=256, choices=(256,)),),
    dtypes=("fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16"),
    value_classes=("all_codes",),
    make_inputs=_make_inputs,
    outputs=("decoded", "encoded", "bits"),
    make_outputs=_make_outputs,
    run=lambda inp, out, cfg: fp8_codes(inp["codes"], inp["values"], out, cfg),
    reference=_reference,
    tolerance=Tolerance(safety=0.0),  # exact: a conversion has one right answer
    default_config={"nvidia": {"BLOCK": 256, "num_warps": 4}, "amd": {"BLOCK": 256, "num_warps": 4},
                    "interpret": {"BLOCK": 256}},
    configs={f: tuple({"BLOCK": b, "num_warps": 4} for b in (128, 256, 1024)) for f in ("nvidia", "amd")},
    compile_signature=_signature,
    jit_fn=fp8_codes_kernel,
))
