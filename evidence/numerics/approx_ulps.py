"""Measure, on an NVIDIA GPU, how far Triton's fp32 approximate operations land from the correctly rounded result.

For each of tl.exp2, tl.exp, tl.sqrt, tl.math.rsqrt, tl.log2 and x / y this compiles one small Triton kernel (the PTX
instruction it emits is read from the compiled kernel and recorded), runs it over inputs, and compares each result
with the float64 result rounded to fp32 (for tl.exp: with 2^fl(x * log2 e), the product Triton emits before
ex2.approx, the centre suite/checks/numerics_envelope.py uses). The distance is counted in fp32 ulps (steps between
adjacent floats, by their ordered bit patterns). Unary operations run over every fp32 bit pattern of their domain
(exhaustive); the division over random pairs. Only inputs and results that are finite normal floats count (the
instructions flush subnormals: .ftz).

Run on a CUDA machine: OUT=/some/dir python evidence/numerics/approx_ulps.py   (writes $OUT/approx_ulps.json)
The figures are a measured worst case over the inputs tried, not a bound: the division is sampled.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time

import torch
import triton
import triton.language as tl

OPS = ("exp2", "exp", "sqrt", "rsqrt", "log2", "div")
CHUNK = int(os.environ.get("APPROX_CHUNK", 1 << 27))
DEV = os.environ.get("APPROX_DEVICE", "cuda")  # "cpu" with TRITON_INTERPRET=1: a dry run of this script
LOG2E32 = torch.tensor(math.log2(math.e), dtype=torch.float32).item()  # what fp32 holds of log2(e)


@triton.jit
def unary(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    if OP == 0:
        y = tl.exp2(x)
    elif OP == 1:
        y = tl.exp(x)
    elif OP == 2:
        y = tl.sqrt(x)
    elif OP == 3:
        y = tl.math.rsqrt(x)
    else:
        y = tl.log2(x)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def divide(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, x / y, mask=m)


def ordered(v: torch.Tensor) -> torch.Tensor:
    """fp32 -> int64 whose order is the floats' order and whose difference counts ulps."""
    i = v.view(torch.int32).to(torch.int64)
    return torch.where(i < 0, -(i & 0x7FFFFFFF), i)


def normal(v: torch.Tensor) -> torch.Tensor:
    a = v.abs()
    return torch.isfinite(v) & (a >= torch.finfo(torch.float32).tiny)


class Tally:
    def __init__(self, op: str):
        self.op, self.count, self.max_ulps, self.worst = op, 0, 0, None
        self.hist = [0] * 6  # 0, 1, 2, 3, 4, more ulps
        self.max_abs = 0.0

    def add(self, args: tuple[torch.Tensor, ...], out: torch.Tensor, ref: torch.Tensor, exact: torch.Tensor):
        keep = normal(out) & normal(ref)
        for a in args:
            keep &= normal(a)
        if not bool(keep.any()):
            return
        d = (ordered(out) - ordered(ref)).abs()
        d = torch.where(keep, d, torch.zeros_like(d))
        self.count += int(keep.sum())
        counts = torch.bincount(d[keep].clamp(max=5), minlength=6).tolist()
        self.hist = [h + c for h, c in zip(self.hist, counts)]
        self.max_abs = max(self.max_abs, float(torch.where(keep, (out.double() - exact).abs(), 0).max()))
        top = int(d.max())
        if top > self.max_ulps or self.worst is None:
            k = int(d.argmax())
            self.max_ulps = max(top, self.max_ulps)
            self.worst = {"args": [float(a[k]) for a in args], "args_hex": [hex(int(a[k].view(torch.int32)) & 0xFFFFFFFF) for a in args],
                          "result": float(out[k]), "correctly_rounded": float(ref[k]), "ulps": top}

    def report(self) -> dict:
        return {"compared": self.count, "max_ulps": self.max_ulps, "histogram_0_1_2_3_4_more": self.hist,
                "max_abs_error": self.max_abs, "worst": self.worst}


def ptx_instruction(compiled, pattern: str) -> list[str]:
    if DEV == "cpu":
        return ["(interpreter)"]
    return sorted(set(re.findall(pattern, compiled.asm["ptx"])))


def run_unary(op: str, code: int, patterns: torch.Tensor, tally: Tally, insns: dict):
    x = patterns.view(torch.float32)
    out = torch.empty_like(x)
    k = unary[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), OP=code, BLOCK=1024)
    insns.setdefault(op, ptx_instruction(k, r"\b(?:ex2|sqrt|rsqrt|lg2|div|rcp)\.[a-z0-9.]+"))
    xd = x.double()
    if op == "exp2":
        exact = torch.exp2(xd)
        ref = exact.float()
    elif op == "exp":
        exact = torch.exp2((x * LOG2E32).double())  # fp32 product, as emitted
        ref = exact.float()
    elif op == "sqrt":
        exact = torch.sqrt(xd)
        ref = exact.float()
    elif op == "rsqrt":
        exact = 1.0 / torch.sqrt(xd)
        ref = exact.float()
    else:
        exact = torch.log2(xd)
        ref = exact.float()
    tally.add((x,), out, ref, exact)


def main() -> int:
    out_dir = os.environ.get("OUT", ".")
    dev = torch.cuda.get_device_name() if DEV == "cuda" else "cpu (interpreter dry run)"
    start = time.time()
    tallies = {op: Tally(op) for op in OPS}
    insns: dict[str, list[str]] = {}
    positive_end = 0x7F800000  # +inf's pattern: every positive finite float below it
    stride = int(os.environ.get("APPROX_STRIDE", CHUNK))  # a dry run samples chunks
    for lo in range(0, positive_end, stride):
        hi = min(lo + CHUNK, positive_end)
        pos = torch.arange(lo, hi, dtype=torch.int32, device=DEV)
        neg = pos | torch.tensor(-(1 << 31), dtype=torch.int32, device=DEV)
        for op, code in (("exp2", 0), ("exp", 1)):
            run_unary(op, code, pos, tallies[op], insns)
            run_unary(op, code, neg, tallies[op], insns)
        run_unary("sqrt", 2, pos, tallies["sqrt"], insns)
        run_unary("rsqrt", 3, pos, tallies["rsqrt"], insns)
        # log2's result near x = 1 is small and its error absolute (lg2.approx): ulps counted away from [0.5, 2)
        xs = pos.view(torch.float32)
        far = pos[(xs < 0.5) | (xs >= 2.0)]
        run_unary("log2", 4, far, tallies["log2"], insns)
        print(f"unary: {hi / positive_end:.0%} of the positive patterns, {time.time() - start:.0f} s", flush=True)
    gen = torch.Generator(device=DEV).manual_seed(20261129)
    pairs = 0
    for _ in range(int(os.environ.get("APPROX_DIV_CHUNKS", 16))):
        bits = torch.randint(0x00800000, positive_end, (2, CHUNK // 2), dtype=torch.int32, device=DEV, generator=gen)
        signs = torch.randint(0, 2, (2, CHUNK // 2), dtype=torch.int32, device=DEV, generator=gen) << 31
        xy = (bits | signs).view(torch.float32)
        x, y = xy[0].contiguous(), xy[1].contiguous()
        out = torch.empty_like(x)
        k = divide[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
        insns.setdefault("div", ptx_instruction(k, r"\b(?:div|rcp)\.[a-z0-9.]+"))
        exact = x.double() / y.double()
        tallies["div"].add((x, y), out, exact.float(), exact)
        pairs += x.numel()
    print(f"division: {pairs} pairs, {time.time() - start:.0f} s", flush=True)
    result = {"format": 1, "device": dev, "torch": torch.__version__, "triton": triton.__version__,
              "driver_cuda": torch.version.cuda, "seconds": round(time.time() - start, 1),
              "inputs": {"exp2, exp": "every finite fp32 bit pattern, both signs",
                         "sqrt, rsqrt": "every positive finite fp32 bit pattern",
                         "log2": "every positive finite fp32 bit pattern outside [0.5, 2)",
                         "div": f"{pairs} random pairs, bit patterns uniform over the normal floats, random signs"},
              "counted": "inputs and results that are finite normal fp32 (subnormals flushed by .ftz not counted)",
              "instructions": insns, "ops": {op: t.report() for op, t in tallies.items()}}
    with open(os.path.join(out_dir, "approx_ulps.json"), "w") as f:
        json.dump(result, f, indent=1)
    for op, t in tallies.items():
        r = t.report()
        print(f"{op:6s} {' '.join(insns.get(op, [])):40s} compared {r['compared']:>11d}  max {r['max_ulps']} ulp  "
              f"hist {r['histogram_0_1_2_3_4_more']}  max abs {r['max_abs_error']:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
