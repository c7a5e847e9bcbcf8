"""On a GPU (NVIDIA or AMD): Triton's tl.sum and tl.fma against --numerics' model of them, bit for bit.

Run from the repository root: `python evidence/numerics/gpu_check_reduce.py [OUT_DIR]` (default $OUT, else .). The
model is suite/checks/numerics_reduce.py (the reduction order over the assumed layout) and numerics.fma_fused; the
vendor is the GPU's (torch.version.hip: AMD, 64-lane wavefronts; else NVIDIA, 32 lanes). Row sums of several shapes,
dtypes and num_warps on values that make the order visible (wide magnitudes, cancelling pairs), and elementwise fmas
on operands next to rounding ties. Writes gpu_check_reduce.json (format 2; per case: what, dtype, shape, num_warps,
seed, the elements where the model differs from the GPU, those where the plain interpreter does (numpy's pairwise sum,
bf16 folded in halves; a * b + c rounded twice), sha256 of the GPU's and the model's output) and prints one summary
line: a case the plain interpreter gets right already shows nothing of the model. A case that differs says
the layout or order assumed is not the one this GPU's Triton compiled: the model's order is then an approximation for
that case, which docs/checks.md says it may be.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from suite.checks import interpreter_bf16, numerics, numerics_reduce  # noqa: E402


@triton.jit
def row_sums(x_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr):
    r, c = tl.arange(0, BM), tl.arange(0, BN)
    tl.store(o_ptr + r, tl.sum(tl.load(x_ptr + r[:, None] * BN + c[None, :]), axis=1))


@triton.jit
def fmas(a_ptr, b_ptr, c_ptr, o_ptr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + i, tl.fma(tl.load(a_ptr + i), tl.load(b_ptr + i), tl.load(c_ptr + i)))


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: a smoke test under TRITON_INTERPRET=1, no evidence
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
SUMS = [(bm, bn, w) for bm, bn in ((1, 256), (1, 1024), (4, 256), (16, 64), (2, 2048), (8, 128)) for w in (1, 4, 8)]


def _values(seed: int, shape: tuple[int, int], dtype: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * torch.exp2(torch.randint(-8, 9, shape, generator=gen))
    big = torch.randint(0, shape[1], (shape[0], 4), generator=gen)
    x.scatter_(1, big, torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64).expand(shape[0], 4) * 2.0**12)
    return x.to(DTYPES[dtype])


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.cpu().contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32).numpy()


def _interp(t: torch.Tensor) -> np.ndarray:
    """The tensor as the interpreter holds it (bf16 as bits)."""
    return _bits(t).view(np.uint16) if t.dtype == torch.bfloat16 else t.cpu().numpy()


def plain_sum(x: np.ndarray, dtype: str) -> np.ndarray:
    """The plain interpreter's row sum (Triton's np.sum; bf16 folded in fp32 rounded each step, interpreter_bf16)."""
    if dtype == "bf16":
        return interpreter_bf16.fold(x, 1, np.add)
    return np.sum(x, axis=1).astype(x.dtype)


def plain_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: str) -> np.ndarray:
    """The plain interpreter's tl.fma: a * b, then + c, each rounded (bf16 in fp32, then to bf16)."""
    with np.errstate(all="ignore"):
        if dtype == "bf16":
            w = interpreter_bf16.widen
            return interpreter_bf16.round_fp32(w(a) * w(b) + w(c))
        return a * b + c


def sum_case(seed: int, bm: int, bn: int, dtype: str, vendor: str, warps: int):
    """A row-sum case's input and the model's and the plain interpreter's outputs, on the CPU."""
    x = _values(seed, (bm, bn), dtype)
    held = _interp(x)
    warp = 64 if vendor == "amd" else 32
    return x, numerics_reduce.ordered_sum(held, 1, dtype, vendor, warp, warps, False), plain_sum(held, dtype)


def fma_case(dtype: str, vendor: str):
    """The fma case's operands and the model's and the plain interpreter's outputs, on the CPU."""
    gen = torch.Generator().manual_seed(1000)
    a, b = (torch.randn(4096, generator=gen).to(DTYPES[dtype]) for _ in range(2))
    c = (-(a.double() * b.double()) * (1 + torch.randn(4096, generator=gen, dtype=torch.float64) * 1e-3))
    c = c.to(DTYPES[dtype])
    held = [_interp(t) for t in (a, b, c)]
    return (a, b, c), numerics.fma_fused(*held, dtype, vendor), plain_fma(*held, dtype)


def _flat_bits(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values).reshape(-1).view(like.dtype)


def _record(what: str, dtype: str, shape, warps: int, seed: int, gpu: torch.Tensor, model: np.ndarray,
            plain: np.ndarray) -> dict:
    got = _bits(gpu).reshape(-1)
    want, interp = _flat_bits(model, got), _flat_bits(plain, got)
    return {"what": what, "dtype": dtype, "shape": list(shape), "num_warps": warps, "seed": seed,
            "differing": int((got != want).sum()), "interpreter_differing": int((got != interp).sum()),
            "gpu_sha256": hashlib.sha256(got.tobytes()).hexdigest(),
            "model_sha256": hashlib.sha256(want.tobytes()).hexdigest()}


def main(out: Path) -> int:
    vendor = "amd" if torch.version.hip else "nvidia"
    cases = []
    for dtype in DTYPES:
        for seed, (bm, bn, w) in enumerate(SUMS):
            x, model, plain = sum_case(seed, bm, bn, dtype, vendor, w)
            o = torch.empty(bm, dtype=x.dtype, device=DEVICE)
            row_sums[(1,)](x.to(DEVICE), o, BM=bm, BN=bn, num_warps=w)
            cases.append(_record("tl.sum", dtype, (bm, bn), w, seed, o, model, plain))
        (a, b, c), model, plain = fma_case(dtype, vendor)
        o = torch.empty_like(a, device=DEVICE)
        fmas[(4096 // 256,)](a.to(DEVICE), b.to(DEVICE), c.to(DEVICE), o, BLOCK=256)
        cases.append(_record("tl.fma", dtype, (4096,), 4, 1000, o, model, plain))
    same = sum(c["differing"] == 0 for c in cases)
    told = sum(c["interpreter_differing"] > 0 for c in cases)
    where = torch.cuda.get_device_name() if DEVICE == "cuda" else "the CPU interpreter (a smoke test, no evidence)"
    summary = (f"{same} of {len(cases)} cases bit-identical on {where} ({vendor}), triton {triton.__version__}; "
               f"the plain interpreter differs from the GPU in {told} of {len(cases)}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check_reduce.json").write_text(json.dumps({"format": 2, "vendor": vendor, "summary": summary,
                                                           "cases": cases}, indent=1))
    print(summary)
    for c in cases:
        if c["differing"]:
            print(f"  differs: {c['what']} {c['dtype']} {c['shape']} num_warps={c['num_warps']}: {c['differing']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "."))))
