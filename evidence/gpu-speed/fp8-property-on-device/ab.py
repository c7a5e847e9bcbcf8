"""fp8_quant_rowwise's dequantized_error property: the check before (x, q and scale copied to the host, float64 there;
kernels/fp8.py at 4f23133, copied below as ``before``) against the shipped one (float64 on the device, 2**24 elements
of rows at a time), on the same cases on this GPU, back to back: their time, and the same verdict on the right
quantization and on a planted one (an element two fp8 codes off, near the last row, past the first block).

    python evidence/gpu-speed/fp8-property-on-device/ab.py [OUT.json]   (from the repository root, on a CUDA GPU)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for kernels
from kernels import fp8, inputs  # noqa: E402
from kernels.spec import DTYPES, Case  # noqa: E402


def before(case: Case, device: str, run) -> str | None:
    """kernels/fp8.py's _check_dequantized at 4f23133, unchanged."""
    inputs = fp8._quant_inputs(case, device)
    out = run(inputs)
    dtype = DTYPES[case.dtype]
    info = torch.finfo(dtype)
    x = inputs["x"].double().cpu()
    q, scale = out["q"].double().cpu(), out["scale"].double().cpu()[:, None]
    err = (q * scale - x).abs()
    bound = (info.eps / 2) * x.abs() * (1 + 2.0**-20) + scale * info.tiny * info.eps / 2
    if bool((err > bound).any()):
        idx = tuple(int(i) for i in (err > bound).nonzero()[0])
        return f"dequantized {(q * scale)[idx].item()!r} vs x {x[idx].item()!r} at {idx}: beyond half an fp8 ulp"
    top = q.abs().gather(1, x.abs().argmax(dim=1, keepdim=True))
    short = (top != info.max) & (x.abs().amax(dim=1, keepdim=True) > 0)  # an all-zero row stays zero
    if bool(short.any()):
        row = int(short.nonzero()[0][0])
        return f"row {row}: largest |x| quantized to {top[row].item()!r}, not {case.dtype} max {info.max}"
    return None


def launcher(planted: tuple[int, int] | None):
    """The shipped kernel at its default config; ``planted``: that element of q moved two fp8 codes afterwards."""
    config = fp8.QUANT_SPEC.default_config_for("nvidia")

    def run(inputs):
        case_out = {"q": torch.empty(inputs["x"].shape, dtype=inputs["fp8"].dtype, device=inputs["x"].device),
                    "scale": torch.empty(inputs["x"].shape[0], dtype=torch.float32, device=inputs["x"].device)}
        fp8.fp8_quant_rowwise(inputs["x"], inputs["fp8"].dtype, case_out, config)
        if planted is not None:
            bits = case_out["q"].view(torch.uint8)
            r, c = planted
            code = int(bits[r, c])
            bits[r, c] = code + 2 if code % 128 < 100 else code - 2
        return case_out
    return run


DEVICE = "cuda"
SIZES = ((8192, 65535), (2048, 16384))  # the nightly's largest fp8_quant_rowwise case, and the ci profile's


def timed(check, case, run) -> tuple[float, str | None]:
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    verdict = check(case, DEVICE, run)
    sync()
    return time.perf_counter() - t0, verdict


def main() -> int:
    inputs.set_draw_device(DEVICE)  # as a test session does: inputs drawn on the GPU
    rows = []
    for m, k in SIZES:
        case = Case.parse(fp8.QUANT_SPEC.name, "fp8e4nv", f"M={m},K={k};layout=bf16;values=normal;seed=11")
        fp8._check_dequantized(case, DEVICE, launcher(None))  # the kernel compiled, the allocator warm
        for label, planted in (("right", None), ("planted", (m - 3, 7))):
            run = launcher(planted)
            old_s, old_v = timed(before, case, run)
            new = [timed(fp8._check_dequantized, case, run) for _ in range(3 if planted is None else 1)]
            same = all(v == old_v for _, v in new)
            rows.append({"M": m, "K": k, "quantization": label, "before_s": round(old_s, 3),
                         "on_device_s": [round(s, 3) for s, _ in new], "ratio": round(old_s / min(s for s, _ in new), 1),
                         "same_verdict": same, "verdict": old_v})
            print(f"M={m} K={k} {label}: before {old_s:.2f} s, on the device {', '.join(f'{s:.3f}' for s, _ in new)} s "
                  f"({rows[-1]['ratio']}x); same verdict: {same} ({old_v})", flush=True)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            gpu = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
            json.dump({"gpu": gpu, "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0 if all(r["same_verdict"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
