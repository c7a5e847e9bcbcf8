"""FlagGems 5.0.2's bf16 cumsum along dim 0 of a [5000, 2] tensor (its column scan, in 1024-element parts past 4096
rows) against the exact sum rounded once to bf16; its row scan of the same columns beside it: no suite checks.

    TRITON_INTERPRET=1 python evidence/flag-gems-bugs/cumsum_repro.py   # from the repository root
    python evidence/flag-gems-bugs/cumsum_repro.py                      # on a GPU
"""
import os
import sys
import warnings

import torch

warnings.filterwarnings("ignore", message=r"\[device_info\]")  # FlagGems' fallbacks where torch sees no GPU
if os.environ.get("TRITON_INTERPRET") == "1":  # FlagGems imports only on a GPU, and Triton 3.6's interpreter
    sys.path.insert(0, os.getcwd())            # truncates fp32 to bf16: the suite's import hook, and bf16 rounded
    from suite.checks import interpreter, libraries  # as a GPU rounds it
    libraries.install()
    interpreter.install()
import flag_gems.ops as fg  # noqa: E402

dev = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
x = torch.randn(5000, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64).to(torch.bfloat16).to(dev)
exact = torch.cumsum(x.double(), dim=0)
once = exact.to(torch.bfloat16).double()
ulp = (once.abs().clamp(min=2.0**-126).log2().floor() - 7).exp2()  # a bf16 ulp at the result
for name, got in (("column scan", fg.cumsum(x, dim=0)), ("row scan", fg.cumsum(x.T.contiguous(), dim=1).T)):
    off = got.double() != once
    print(f"{name}: rows 0-1023 {int(off[:1024].sum())}, rows 1024-4999 {int(off[1024:].sum())} of "
          f"{off[1024:].numel()} elements not the exact sum rounded once; worst "
          f"{float(((got.double() - exact).abs() / ulp).max()):.1f} ulps")
