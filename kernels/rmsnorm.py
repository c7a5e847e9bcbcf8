"""RMSNorm forward: one row per program, looped over column blocks, fp32 statistics; rstd is an output."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, next_power_of_2, signature, split_config

EPS = 1e-5


@triton.jit
def rmsnorm_fwd_kernel(x_ptr, y_ptr, w_ptr, rstd_ptr, x_row_stride, y_row_stride, n_cols, eps,
                       BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS, out: dict[str, torch.Tensor] | None = None,
            config: dict | None = None) -> dict[str, torch.Tensor]:
    """RMSNorm over the last dim of a 2-D tensor: y = x / sqrt(mean(x^2) + eps) * weight; returns y and rstd (fp32)."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"rmsnorm takes a 2-D tensor with unit column stride, got {tuple(x.shape)} stride {x.stride()}")
    n_rows, n_cols = x.shape
    if weight.shape != (n_cols,):
        raise ValueError(f"rmsnorm: weight must be of shape ({n_cols},), got {tuple(weight.shape)}")
    inputs.require_dense("rmsnorm", "weight", weight)  # read at w_ptr + column
    if out is None:
        out = {"y": torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device),
               "rstd": torch.empty(n_rows, dtype=torch.float32, device=x.device)}
    inputs.require_dense("rmsnorm", "out['rstd']", out["rstd"])
    inputs.require_rows("rmsnorm", "out['y']", out["y"], written=True)
    meta, options = split_config(config or {})
    block = min(meta.get("BLOCK_SIZE", 4096), triton.next_power_of_2(n_cols), 65536 // x.element_size())
    options.setdefault("num_warps", min(max(block // 256, 1), 8))
    rmsnorm_fwd_kernel[(n_rows,)](x, out["y"], weight, out["rstd"], x.stride(0), out["y"].stride(0), n_cols, eps,
                                  BLOCK_SIZE=block, **options)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, n = case.shape["M"], case.shape["N"]
    if case.values == "small":
        # Mean square about 4e-6, below eps: where the placement of eps decides the result.
        x64 = torch.randn((m, n), generator=gen, dtype=torch.float64) * 2.0**-9
    else:
        x64 = inputs.values((m, n), case, gen)
    w = torch.randn(n, generator=gen, dtype=torch.float64) * 0.5 + 1.0
    return {"x": inputs.place(x64, case, device, case.layout), "weight": inputs.place(w, case, device)}


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    x = inputs["x"].double()
    rstd = 1.0 / torch.sqrt((x * x).mean(dim=-1) + EPS)
    return {"y": x * rstd[:, None] * inputs["weight"].double(), "rstd": rstd}


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(rmsnorm_fwd_kernel, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "w_ptr": f"*{dtype}",
                                          "rstd_ptr": "*fp32", "x_row_stride": "i32", "y_row_stride": "i32",
                                          "n_cols": "i32", "eps": "fp32"}, {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 4096)})


SPEC = register(KernelSpec(
    name="rmsnorm",
    description="RMSNorm forward with weight; rstd in fp32, sum of squares in fp32",
    dims=(Dim("M", interpret_max=12, gpu_max=2048, nightly_max=8192, blocks=(1,)),
          Dim("N", interpret_max=1100, gpu_max=16384, nightly_max=65536, blocks=(256, 1024, 4096))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "special", "small"),
    make_inputs=_make_inputs,
    outputs=("y", "rstd"),
    make_outputs=lambda inp, case: {
        "y": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device),
        "rstd": torch.empty(inp["x"].shape[0], dtype=torch.float32, device=inp["x"].device)},
    run=lambda inp, out, cfg: rmsnorm(inp["x"], inp["weight"], EPS, out, cfg),
    reference=_reference,
    # A sum of squares has no cancellation: |ref| is the magnitude of every term.
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], safety=8.0),
    flops=lambda case: 4.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: ((2.0 * case.shape["M"] * case.shape["N"] + case.shape["N"]) * DTYPES[case.dtype].itemsize
                            + 4.0 * case.shape["M"]),
    torch_baseline=lambda inp: torch.nn.functional.rms_norm(inp["x"], inp["x"].shape[-1:], inp["weight"], EPS),
    default_config={"nvidia": {"BLOCK_SIZE": 4096, "num_warps": 8},
                    "amd": {"BLOCK_SIZE": 4096, "num_warps": 8, "num_stages": 2},
                    "interpret": {"BLOCK_SIZE": 256}},
    paths=paths.block_loop("N", lambda case, cfg: min(int(cfg.get("BLOCK_SIZE", 4096)), next_power_of_2(case.shape["N"]),
                                                       65536 // DTYPES[case.dtype].itemsize)),
    configs={"interpret": tuple({"BLOCK_SIZE": b} for b in (32, 64, 512)),
             "nvidia": tuple({"BLOCK_SIZE": b, "num_warps": w} for b in (1024, 2048, 4096, 8192) for w in (4, 8, 16)),
             "amd": tuple({"BLOCK_SIZE": b, "num_warps": w, "num_stages": s}
                          for b in (1024, 2048, 4096) for w in (4, 8, 16) for s in (1, 2))},
    benchmark_shapes=({"M": 8192, "N": 8192}, {"M": 4096, "N": 4096}, {"M": 16384, "N": 2048}),
    # Rows whose mean square is below eps; one column past a block, with padded rows.
    examples=({"shape": {"M": 5, "N": 300}, "values": "small", "seed": 1},
              {"shape": {"M": 3, "N": 257}, "layout": "padded_rows", "values": "normal", "seed": 2}),
    compile_signature=_signature,
    batch_dim="M", batch_inputs=("x",), batch_outputs=("y", "rstd"),
    jit_fn=rmsnorm_fwd_kernel,
))
