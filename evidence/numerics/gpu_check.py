"""On a CUDA GPU (sm_90: H100/H200): Triton's tl.dot against --numerics' model of the same GPU, bit for bit.

Run from the repository root: `python evidence/numerics/gpu_check.py [OUT_DIR]` (default $OUT, else .). mmasim is
installed from the wheel beside this script into a temporary directory (pip --no-deps): it is pure Python over torch;
its C++ FMA (built with ninja at import) is not needed, the suite's model puts a stand-in in its place. Writes
gpu_check.json (per case: dtype, tile, K, differing elements) and prints one summary line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
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


def main() -> None:
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "."))
    cap = torch.cuda.get_device_capability()
    arch = f"sm_{cap[0]}{cap[1]}"
    model = numerics_table.model_for(arch)
    if model is None:
        sys.exit(f"{arch} ({torch.cuda.get_device_name()}) is not modelled")
    active = numerics.Numerics("h200_sxm" if "H200" in torch.cuda.get_device_name() else "h100_sxm", model)
    torch.manual_seed(0)
    cases, start = [], time.time()
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        name = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
        for bm, bn, bk in ((64, 64, 16), (64, 64, 32), (128, 64, 64), (64, 128, 32), (16, 16, 16)):
            for k in (16, 64, 256, 1024, 4096):
                if k % bk or time.time() - start > 420:
                    continue
                a = torch.randn(bm, k, device="cuda").to(dtype)
                b = torch.randn(k, bn, device="cuda").to(dtype)
                c = torch.empty(bm, bn, device="cuda")
                dot_kernel[(1,)](a, b, c, k, BM=bm, BN=bn, BK=bk)
                a_np = a.float().cpu().numpy() if dtype != torch.bfloat16 else a.cpu().view(torch.int16).numpy().view(np.uint16)
                b_np = b.float().cpu().numpy() if dtype != torch.bfloat16 else b.cpu().view(torch.int16).numpy().view(np.uint16)
                if dtype == torch.float16:
                    a_np, b_np = a.cpu().numpy(), b.cpu().numpy()
                acc = np.zeros((bm, bn), np.float32)
                for k0 in range(0, k, bk):
                    acc = active.dot(a_np[:, k0:k0 + bk], name, b_np[k0:k0 + bk], name, acc,
                                     model.default_fp32, 0)
                got = c.cpu().numpy()
                differ = int((got.view(np.uint32) != acc.view(np.uint32)).sum())
                cases.append({"dtype": name, "tile": [bm, bn, bk], "K": k, "differing": differ,
                              "elements": bm * bn, "max_abs_diff": float(np.abs(got - acc).max())})
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = (f"{sum(c['differing'] == 0 for c in cases)} of {len(cases)} cases bit-identical on "
               f"{torch.cuda.get_device_name()} ({arch}), triton {triton.__version__}, torch {torch.__version__}")
    (out_dir / "gpu_check.json").write_text(json.dumps({"summary": summary, "cases": cases}, indent=1))
    print(summary)


if __name__ == "__main__":
    main()
