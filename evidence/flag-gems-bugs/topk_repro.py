"""FlagGems 5.0.2's topk on strided rows and on rows with -inf, against torch.topk: no suite checks.

    TRITON_INTERPRET=1 python evidence/flag-gems-bugs/topk_repro.py   # from the repository root
    python evidence/flag-gems-bugs/topk_repro.py                      # on a GPU
"""
import os
import sys
import warnings

import torch

warnings.filterwarnings("ignore", message=r"\[device_info\]")  # FlagGems' fallbacks where torch sees no GPU
if os.environ.get("TRITON_INTERPRET") == "1":  # FlagGems imports only on a GPU: the suite's import hook adapts it
    sys.path.insert(0, os.getcwd())
    from suite.checks import libraries
    libraries.install()
import flag_gems.ops as fg  # noqa: E402

dev = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
inf = float("inf")
x = torch.arange(40.0, device=dev).reshape(4, 10)[:, :6]  # 4 rows of 6, sliced from rows of 10 (strides (10, 1))
print("strided rows: flag_gems", fg.topk(x, 2, -1)[0].tolist(), "torch", torch.topk(x, 2).values.tolist())
x = torch.tensor([[1.0, -inf, 2.0, -inf, -inf, -inf, -inf, -inf]], device=dev)  # 2 entries above -inf, k = 5
values, indices = fg.topk(x, 5, -1)
print("-inf row: flag_gems", values.tolist(), indices.tolist(), "torch", torch.topk(x, 5).values.tolist(),
      torch.topk(x, 5).indices.tolist())
