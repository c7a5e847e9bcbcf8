"""LayerNorm forward: one row per program, looped over column blocks, fp32 statistics."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, next_power_of_2, signature

EPS = 1e-5


@triton.jit
def layernorm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_row_stride, y_row_stride,
                         n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    # Two passes over the row (mean, then centred variance): no cancellation for rows
    # with a large offset, which a one-pass E[x^2] - E[x]^2 would suffer. The row is read three times: the
    # first two reads ask L2 to keep it (evict_last), the last read and the stores let it go (evict_first).
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0, eviction_policy="evict_last").to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0, eviction_policy="evict_last").to(tl.float32)
        diff = tl.where(cols < n_cols, x - mean, 0.0)
        acc += diff * diff
    var = tl.sum(acc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
        x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = EPS,
              out: dict[str, torch.Tensor] | None = None, config: dict | None = None) -> dict[str, torch.Tensor]:
    """LayerNorm over the last dim of a 2-D tensor; returns y, mean and rstd (fp32)."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"layernorm takes a 2-D tensor with unit column stride, got {tuple(x.shape)} stride {x.stride()}")
    n_rows, n_cols = x.shape
    if out is None:
        out = {"y": torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device),
               "mean": torch.empty(n_rows, dtype=torch.float32, device=x.device),
               "rstd": torch.empty(n_rows, dtype=torch.float32, device=x.device)}
    for name, t in (("weight", weight), ("bias", bias), ("out['mean']", out["mean"]), ("out['rstd']", out["rstd"])):
        inputs.require_dense("layernorm", name, t)  # indexed by column or row alone
    inputs.require_rows("layernorm", "out['y']", out["y"], written=True)
    cfg = config or {}
    block = cfg.get("BLOCK_SIZE") or min(triton.next_power_of_2(n_cols), 65536 // x.element_size(), 4096)
    num_warps = cfg.get("num_warps") or min(max(block // 256, 1), 8)
    layernorm_fwd_kernel[(n_rows,)](x, out["y"], weight, bias, out["mean"], out["rstd"], x.stride(0),
                                    out["y"].stride(0), n_cols, eps, BLOCK_SIZE=block, num_warps=num_warps)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, n = case.shape["M"], case.shape["N"]
    x = inputs.place(inputs.values((m, n), case, gen), case, device, case.layout)
    w = inputs.place(torch.randn(n, generator=gen, dtype=torch.float64) * 0.5 + 1.0, case, device)
    b = inputs.place(torch.randn(n, generator=gen, dtype=torch.float64), case, device)
    return {"x": x, "weight": w, "bias": b}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    x = inputs["x"].double()
    mean = x.mean(dim=-1)
    var = ((x - mean[:, None]) ** 2).mean(dim=-1)
    rstd = 1.0 / torch.sqrt(var + EPS)
    y = (x - mean[:, None]) * rstd[:, None] * inputs["weight"].double() + inputs["bias"].double()
    return {"y": y, "mean": mean, "rstd": rstd}


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    x = inputs["x"].double()
    spread = x.abs() + ref["mean"].abs()[:, None]
    var = 1.0 / ref["rstd"] ** 2
    # How much rounding in the variance is amplified: large offsets over small spread.
    cond = (spread ** 2).mean(dim=-1) / var
    y_mag = spread * (ref["rstd"] * cond)[:, None] * inputs["weight"].double().abs() + inputs["bias"].double().abs()
    return {"y": y_mag, "mean": x.abs().mean(dim=-1), "rstd": ref["rstd"] * cond}


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(layernorm_fwd_kernel, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "w_ptr": f"*{dtype}",
                                            "b_ptr": f"*{dtype}", "mean_ptr": "*fp32", "rstd_ptr": "*fp32",
                                            "x_row_stride": "i32", "y_row_stride": "i32", "n_cols": "i32",
                                            "eps": "fp32"}, {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 1024)})

SPEC = register(KernelSpec(
    name="layernorm",
    description="LayerNorm forward with weight and bias; mean and rstd in fp32",
    dims=(Dim("M", interpret_max=12, gpu_max=2048, nightly_max=8192, blocks=(1,)),
          Dim("N", interpret_max=1100, gpu_max=16384, nightly_max=65536, blocks=(128, 1024, 4096))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "special", "subnormal"),
    make_inputs=_make_inputs,
    outputs=("y", "mean", "rstd"),
    make_outputs=lambda inp, case: {
        "y": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device),
        "mean": torch.empty(inp["x"].shape[0], dtype=torch.float32, device=inp["x"].device),
        "rstd": torch.empty(inp["x"].shape[0], dtype=torch.float32, device=inp["x"].device)},
    run=lambda inp, out, cfg: layernorm(inp["x"], inp["weight"], inp["bias"], EPS, out, cfg),
    reference=_reference,
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], magnitude=_magnitude, safety=8.0),
    flops=lambda case: 8.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: (2.0 * case.shape["M"] * case.shape["N"] + 2 * case.shape["N"]) * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.nn.functional.layer_norm(inp["x"], inp["x"].shape[-1:], inp["weight"], inp["bias"], EPS),
    default_config={"nvidia": {}, "amd": {}, "interpret": {"BLOCK_SIZE": 256}},
    paths=paths.block_loop("N", lambda case, cfg: int(cfg.get("BLOCK_SIZE") or min(
        next_power_of_2(case.shape["N"]), 65536 // DTYPES[case.dtype].itemsize, 4096))),
    configs={"interpret": tuple({"BLOCK_SIZE": b} for b in (32, 64, 512)),
             "nvidia": tuple({"BLOCK_SIZE": b, "num_warps": w} for b in (1024, 2048, 4096) for w in (4, 8)),
             "amd": tuple({"BLOCK_SIZE": b, "num_warps": w} for b in (1024, 2048, 4096) for w in (4, 8))},
    benchmark_shapes=({"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}),
    compile_signature=_signature,
    batch_dim='M', batch_inputs=('x',), batch_outputs=('y', 'mean', 'rstd'),
    jit_fn=layernorm_fwd_kernel,
))
