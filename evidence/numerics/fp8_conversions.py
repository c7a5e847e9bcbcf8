"""Compare float -> fp8 conversions on an NVIDIA GPU with the suite's model (suite/checks/numerics_fp8.py), bit for bit,
on every input: every fp32 bit pattern (2**32), every fp16 and every bf16 one.

- sm_90 (the GPU's own): ``x.to(tl.float8e4nv)`` and ``x.to(tl.float8e5)`` compiled for the GPU; the PTX
  instruction each used is read from the compiled kernel and recorded.
- sm_80 (fp8e5 only: Triton refuses fp8e4nv there): the instruction text of its conversion (the inline PTX blocks
  Triton emits for an sm_80 target, its registers renamed: ``SM80_ASM``) runs on this GPU through
  ``tl.inline_asm_elementwise``: sm_80's integer routines and ``cvt.rz.f16.f32`` are plain PTX that any
  later GPU runs the same way.

Each comparison records how many inputs differ, the NaN bytes the GPU stored, the first differences, and a sample of
random inputs with the GPU's bytes that tests/checks/test_numerics_fp8.py replays against the model on the CPU.

Run on a CUDA machine: OUT=/some/dir python evidence/numerics/fp8_conversions.py   (writes $OUT/fp8_conversions.json)
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from suite.checks import numerics_fp8 as model  # noqa: E402

CHUNK = 1 << 30
SAMPLE = 1024
TL = {"fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5}
# sm_80's conversion text as Triton 3.6.0 emits it, compiled on a CPU-only machine (``sm80_blocks``; on a machine with a
# newer GPU, Triton 3.6.0 emitted sm_90's cvt for an sm_80 target, which ptxas refused). tests/checks/test_numerics_fp8.py
# holds this to what the installed Triton emits.
SM80_ASM = {
    "rz": "cvt.rz.f16.f32 $0, $1;",
    "fp16": "\n".join([
        "{",
        ".reg .b32 a<2>;",
        "and.b32 a0, $1, 0xfffefffe;",
        "and.b32 a1, $2, 0xfffefffe;",
        "add.u32 a0, a0, 0x00800080;",
        "add.u32 a1, a1, 0x00800080;",
        "prmt.b32 $0, a0, a1, 0x7531;",
        "}",
    ]),
    "bf16": "\n".join([
        "{",
        ".reg .u32 sign, sign<2>, nosign, nosign<2>;",
        ".reg .u32 fp8_min, fp8_max, rn_;",
        "mov.u32 fp8_min, 0x38003800;",
        "mov.u32 fp8_max, 0x57e057e0;",
        "mov.u32 rn_, 0x00100010;",
        "and.b32 sign0, $1, 0x80008000;",
        "and.b32 sign1, $2, 0x80008000;",
        "prmt.b32 sign, sign0, sign1, 0x7531;",
        "and.b32 nosign0, $1, 0x7fff7fff;",
        "and.b32 nosign1, $2, 0x7fff7fff;",
        ".reg .u32 nosign_0_<2>, nosign_1_<2>;",
        "and.b32 nosign_0_0, nosign0, 0xffff0000;",
        "max.u32 nosign_0_0, nosign_0_0, 0x38000000;",
        "min.u32 nosign_0_0, nosign_0_0, 0x57e00000;",
        "and.b32 nosign_0_1, nosign0, 0x0000ffff;",
        "max.u32 nosign_0_1, nosign_0_1, 0x3800;",
        "min.u32 nosign_0_1, nosign_0_1, 0x57e0;",
        "or.b32 nosign0, nosign_0_0, nosign_0_1;",
        "and.b32 nosign_1_0, nosign1, 0xffff0000;",
        "max.u32 nosign_1_0, nosign_1_0, 0x38000000;",
        "min.u32 nosign_1_0, nosign_1_0, 0x57e00000;",
        "and.b32 nosign_1_1, nosign1, 0x0000ffff;",
        "max.u32 nosign_1_1, nosign_1_1, 0x3800;",
        "min.u32 nosign_1_1, nosign_1_1, 0x57e0;",
        "or.b32 nosign1, nosign_1_0, nosign_1_1;",
        "add.u32 nosign0, nosign0, rn_;",
        "add.u32 nosign1, nosign1, rn_;",
        "sub.u32 nosign0, nosign0, 0x38003800;",
        "sub.u32 nosign1, nosign1, 0x38003800;",
        "shl.b32 nosign0, nosign0, 3;",
        "shl.b32 nosign1, nosign1, 3;",
        "prmt.b32 nosign, nosign0, nosign1, 0x7531;",
        "or.b32 $0, nosign, sign;",
        "}",
    ]),
}
TORCH_SRC = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@triton.jit
def convert(x_ptr, y_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m).to(DST), mask=m)


@triton.jit
def small(x_ptr, y_ptr, DST: tl.constexpr):
    offs = tl.arange(0, 128)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(DST))


def sm80_blocks(src: str) -> list[str]:
    """The inline PTX blocks of sm_80's ``src`` -> fp8e5 conversion, as Triton 3.6 emits them, registers renamed to
    $0 (the output) and $1, $2 (the inputs), in order."""
    sig = {"x_ptr": f"*{src}", "y_ptr": "*fp8e5", "DST": "constexpr"}
    ptx = triton.compile(ASTSource(fn=small, signature=sig, constexprs={"DST": tl.float8e5}),
                         target=GPUTarget("cuda", 80, 32), options={"num_warps": 4}).asm["ptx"]
    blocks = re.findall(r"// begin inline asm\n(.*?)// end inline asm", ptx, re.S)
    out = []
    for block in blocks:
        if "ld.global" in block or "st.global" in block:
            continue
        text = "\n".join(line.strip() for line in block.strip().splitlines())
        regs = list(dict.fromkeys(re.findall(r"%r[sd]?\d+", text)))
        last = text.replace("}", "").strip().splitlines()[-1]
        dest = re.findall(r"%r[sd]?\d+", last)[0]
        ins = [r for r in regs if r != dest]
        for i, reg in enumerate([dest, *ins]):
            text = re.sub(re.escape(reg) + r"\b", f"${i}", text)
        out.append(text)
    return out


@triton.jit
def sm80_fp16_to_e5(x_ptr, y_ptr, n, ASM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.inline_asm_elementwise(ASM, "=r,r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(y_ptr + offs, y, mask=m)


@triton.jit
def sm80_fp32_to_e5(x_ptr, y_ptr, n, RZ: tl.constexpr, ASM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    h = tl.inline_asm_elementwise(RZ, "=h,r", [x], dtype=tl.float16, is_pure=True, pack=1)
    y = tl.inline_asm_elementwise(ASM, "=r,r,r", [h], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(y_ptr + offs, y, mask=m)


def inputs(src: str, start: int, stop: int) -> torch.Tensor:
    """The inputs whose bit patterns are start .. stop - 1, as ``src`` values on the GPU."""
    width = 32 if src == "fp32" else 16
    bits = torch.arange(start, stop, dtype=torch.int64, device="cuda")
    bits = torch.where(bits >= 1 << (width - 1), bits - (1 << width), bits)  # two's complement of the same bits
    return bits.to(torch.int32 if width == 32 else torch.int16).view(TORCH_SRC[src])


def source_bits(x: torch.Tensor) -> torch.Tensor:
    """The inputs' bit patterns as non-negative int64."""
    width = x.element_size() * 8
    raw = x.view(torch.int32 if width == 32 else torch.int16).to(torch.int64)
    return raw & ((1 << width) - 1)


def modelled(x: torch.Tensor, src: str, dst: str, arch: str) -> torch.Tensor:
    if arch == "sm_80":
        if src == "bf16":
            return model.sm80_e5_from_bf16_bits(source_bits(x).to(torch.int32))
        if src == "fp16":
            return model.sm80_e5_from_fp16_bits(source_bits(x).to(torch.int32))
        return model.sm80_e5_from_fp16_bits(model.fp16_bits_rz(x))
    return model.rne_satfinite(x.float(), dst, "nvidia")


def compare(arch: str, src: str, dst: str, asm: dict[str, str]) -> dict:
    total = 1 << (32 if src == "fp32" else 16)
    differ = nan_differ = 0
    nan_bytes: set[int] = set()
    first: list[list[str]] = []
    sample: list[list[str]] = []
    gen = torch.Generator(device="cpu").manual_seed(1)
    start_t = time.perf_counter()
    for start in range(0, total, CHUNK):
        stop = min(total, start + CHUNK)
        x = inputs(src, start, stop)
        got = torch.empty(x.numel(), dtype=torch.uint8, device="cuda")
        grid = (triton.cdiv(x.numel(), 1024),)
        if arch == "sm_90":
            convert[grid](x, got.view(model.OCP_TORCH[dst]), x.numel(), DST=TL[dst], BLOCK=1024)
        elif src == "fp32":
            sm80_fp32_to_e5[grid](x, got.view(torch.int8), x.numel(), RZ=asm["rz"], ASM=asm["fp16"], BLOCK=1024)
        else:
            sm80_fp16_to_e5[grid](x, got.view(torch.int8), x.numel(), ASM=asm[src], BLOCK=1024)
        want = modelled(x, src, dst, arch)
        isnan = torch.isnan(x.float())
        bad = got != want
        differ += int(bad.sum())
        nan_differ += int((bad & isnan).sum())
        nan_bytes |= set(torch.unique(got[isnan]).tolist())
        idx = torch.nonzero(bad).flatten()[:10 - len(first)].tolist() if len(first) < 10 else []
        xb = source_bits(x)
        first += [[hex(int(xb[i])), hex(int(got[i])), hex(int(want[i]))] for i in idx]
        picks = torch.randint(0, x.numel(), (max(1, SAMPLE * x.numel() // total),), generator=gen).to("cuda")
        sample += [[hex(int(b)), hex(int(g))] for b, g in zip(xb[picks].tolist(), got[picks].tolist(), strict=True)]
        del x, got, want, isnan, bad, xb
    return {"arch": arch, "src": src, "dst": dst, "inputs": total, "differ": differ, "differ_at_nan": nan_differ,
            "nan_bytes": sorted(hex(b) for b in nan_bytes), "first_differences": first,
            "seconds": round(time.perf_counter() - start_t, 1), "sample": sample}


def main() -> None:
    out_dir = Path(os.environ.get("OUT", "."))
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp8e4nv", "n": "i32", "DST": "constexpr", "BLOCK": "constexpr"}
    instructions = {}
    for src in ("fp32", "fp16", "bf16"):
        for dst in TL:
            sig.update(x_ptr=f"*{src}", y_ptr=f"*{dst}")
            ptx = triton.compile(ASTSource(fn=convert, signature=sig, constexprs={"DST": TL[dst], "BLOCK": 1024}),
                                 target=GPUTarget("cuda", 90, 32)).asm["ptx"]
            instructions[f"sm_90 {src}->{dst}"] = sorted(set(re.findall(r"cvt\.rn\.satfinite\.\w+\.\w+", ptx)))
    asm = SM80_ASM
    record = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "sm_90_instructions": instructions, "sm_80_asm": asm, "results": []}
    for arch, dsts in (("sm_90", ("fp8e4nv", "fp8e5")), ("sm_80", ("fp8e5",))):
        for src in ("fp16", "bf16", "fp32"):
            for dst in dsts:
                try:
                    res = compare(arch, src, dst, asm)
                except Exception as exc:  # noqa: BLE001 - recorded, and the other comparisons still run
                    res = {"arch": arch, "src": src, "dst": dst, "error": repr(exc)[:2000], "differ": None,
                           "differ_at_nan": None, "nan_bytes": [], "inputs": 0, "seconds": 0, "sample": []}
                print(f"{arch} {src}->{dst}: {res['differ']} of {res['inputs']} differ ({res['differ_at_nan']} at "
                      f"NaN inputs); NaN bytes {res['nan_bytes']}; {res['seconds']} s", flush=True)
                record["results"].append(res)
    (out_dir / "fp8_conversions.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
