"""attention's warp-specialized configs under a nightly's load, against the same kernel's other configs.

The two-H200 nightly saw attention[bf16] {"B": 8, "H": 28, "S": 4096, "D": 64, "CAUSAL": 0} under
{"BLOCK_M": 128, "BLOCK_N": 64, "WS": 1, "num_stages": 2, "num_warps": 4} give 634,880 NaN once; alone, 30 reruns
passed. This runs that case (several seeds) through tests/fixtures/attention_ws.py (attention as it shipped with WS
configs) many times per config while the GPU is loaded (the caller starts the load: the nightly profile of other
kernels with 15 workers), and counts the launches with any NaN and the worst error against a float32 SDPA reference.

    python evidence/nightly/scripts/ws_load.py --seconds 240 --out $OUT/ws_load.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.fixtures.attention_ws import attention  # noqa: E402

CONFIGS = {
    "ws_128x64_s2": {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2, "WS": 1},
    "ws_128x128_s2": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "num_stages": 2, "WS": 1},
    "ws_128x64_s3": {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3, "WS": 1},
    "plain_64x64_s3": {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3},
    "plain_128x64_s3_w8": {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=240.0, help="time to spend, shared by the configs in rounds")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dev = "cuda"
    shape = (8, 28, 4096, 64)
    cases = []
    for seed in range(args.seeds):
        gen = torch.Generator(device=dev).manual_seed(seed)
        q, k, v = (torch.randn(shape, generator=gen, device=dev, dtype=torch.bfloat16) for _ in range(3))
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
        cases.append((q, k, v, ref))
    stats = {name: {"config": cfg, "launches": 0, "nan_launches": 0, "nan_elements_max": 0, "worst_abs_error": 0.0,
                    "first_nan_at_s": None} for name, cfg in CONFIGS.items()}
    out = torch.empty(shape, device=dev, dtype=torch.bfloat16)
    start = time.monotonic()
    rounds = 0
    while time.monotonic() - start < args.seconds:
        rounds += 1
        for name, cfg in CONFIGS.items():
            for q, k, v, ref in cases:
                out.fill_(0)
                attention(q, k, v, False, out, cfg)
                torch.cuda.synchronize()
                s = stats[name]
                s["launches"] += 1
                nan = int(torch.isnan(out).sum())
                if nan:
                    s["nan_launches"] += 1
                    s["nan_elements_max"] = max(s["nan_elements_max"], nan)
                    if s["first_nan_at_s"] is None:
                        s["first_nan_at_s"] = round(time.monotonic() - start, 1)
                else:
                    s["worst_abs_error"] = max(s["worst_abs_error"], float((out.float() - ref).abs().max()))
        if rounds % 20 == 0:
            print(f"{time.monotonic() - start:6.0f} s, round {rounds}: "
                  + ", ".join(f"{n} {s['nan_launches']}/{s['launches']}" for n, s in stats.items()), flush=True)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "triton": __import__("triton").__version__, "shape": shape, "seconds": args.seconds, "rounds": rounds,
              "configs": stats}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for n, s in stats.items():
        print(f"{n}: NaN in {s['nan_launches']} of {s['launches']} launches (max {s['nan_elements_max']} elements); "
              f"worst error otherwise {s['worst_abs_error']:.3g}")


if __name__ == "__main__":
    main()
