"""On a CUDA GPU (sm_90: H100/H200): Triton's tl.dot against --numerics' model of the same GPU, bit for bit.

Run from the repository root: `python evidence/numerics/gpu_check.py [OUT_DIR]` (default $OUT, else .). mmasim is
installed from the wheel beside this script into a temporary directory (pip --no-deps) unless it is importable: it is
pure Python over torch; its C++ FMA (built with ninja at import) is not needed, the suite's model puts a stand-in in
its place. Writes gpu_check.json (format 2, per case: dtype, tile, K, the operands' seed, differing elements and the
sha256 of the GPU's and the model's fp32 output) and prints one summary line. The operands are drawn on the CPU from
the case's seed (``operands``), so tests/checks/test_numerics_gpu_evidence.py replays recorded cases without a GPU.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
if importlib.util.find_spec("mmasim") is None:
    site = tempfile.mkdtemp(prefix="mmasim-")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", site,
                    str(HERE / "wheels" / "mmasim-2.1.1-py3-none-any.whl")], check=True)
    sys.path.insert(0, site)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from suite.checks import numerics  # noqa: E402
from suite.session import numerics_table  # noqa: E402


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def operands(seed: int, dtype: str, bm: int, bn: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A case's operands, on the CPU, from its seed alone."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(bm, k, generator=gen).to(DTYPES[dtype])
    b = torch.randn(k, bn, generator=gen).to(DTYPES[dtype])
    return a, b


def _interpreter_values(t: torch.Tensor) -> np.ndarray:
    """The operand as the interpreter holds it (bf16 as its bits)."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def model_output(active: numerics.Numerics, dtype: str, a: torch.Tensor, b: torch.Tensor, bk: int) -> np.ndarray:
    """The kernel's tile as the model computes it: one tl.dot per BK of K onto the accumulator, in order."""
    a_np, b_np = _interpreter_values(a), _interpreter_values(b)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], bk):
        acc = active.dot(a_np[:, k0:k0 + bk], dtype, b_np[k0:k0 + bk], dtype, acc, active.model.default_fp32, 0)
    return acc


def digest(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float32).tobytes()).hexdigest()


def main() -> None:
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "."))
    cap = torch.cuda.get_device_capability()
    arch = f"sm_{cap[0]}{cap[1]}"
    model = numerics_table.model_for(arch)
    if model is None:
        sys.exit(f"{arch} ({torch.cuda.get_device_name()}) is not modelled")
    active = numerics.Numerics("h200_sxm" if "H200" in torch.cuda.get_device_name() else "h100_sxm", model)
    cases, start = [], time.time()
    for dtype in DTYPES:
        for bm, bn, bk in ((64, 64, 16), (64, 64, 32), (128, 64, 64), (64, 128, 32), (16, 16, 16)):
            for k in (16, 64, 256, 1024, 4096):
                if k % bk or time.time() - start > 420:
                    continue
                seed = len(cases) + 1
                a, b = operands(seed, dtype, bm, bn, k)
                c = torch.empty(bm, bn, device="cuda")
                dot_kernel[(1,)](a.cuda(), b.cuda(), c, k, BM=bm, BN=bn, BK=bk)
                got, want = c.cpu().numpy(), model_output(active, dtype, a, b, bk)
                differ = int((got.view(np.uint32) != want.view(np.uint32)).sum())
                cases.append({"dtype": dtype, "tile": [bm, bn, bk], "K": k, "seed": seed, "differing": differ,
                              "elements": bm * bn, "max_abs_diff": float(np.abs(got - want).max()),
                              "gpu_sha256": digest(got), "model_sha256": digest(want)})
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = (f"{sum(c['differing'] == 0 for c in cases)} of {len(cases)} cases bit-identical on "
               f"{torch.cuda.get_device_name()} ({arch}), triton {triton.__version__}, torch {torch.__version__}")
    (out_dir / "gpu_check.json").write_text(json.dumps({"format": 2, "arch": arch, "profile": active.profile,
                                                        "summary": summary, "cases": cases}, indent=1))
    print(summary)


if __name__ == "__main__":
    main()
