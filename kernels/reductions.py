"""Row reductions of [M, N] (N >= 1): row_sum, row_max, row_argmax; one row per program, looped over
column blocks, fp32 compute.

Contract, the same on every backend (and torch's, which the float64 references implement):
- row_sum: fp32 accumulation, output in the input dtype; IEEE: NaN if the row has a NaN or both +inf and
  -inf, else +-inf if it has one.
- row_max: NaN if the row has a NaN (torch.amax propagates NaN); an all -inf row gives -inf; exact.
- row_argmax (int64): the first NaN if the row has one, else the first index of the maximum (torch's
  tie rule); an all -inf row gives 0.
Where Triton 3.6 differs, which is why the kernels do not use tl.max / tl.argmax / tl.maximum on NaN:
- tl.max ignores NaN: the interpreter uses np.nanmax, GPUs a maxnum tree; with -inf padding lanes an
  all-NaN row even gives -inf. torch gives NaN.
- tl.argmax / tl.max(return_indices=True): the interpreter uses np.argmax (first NaN wins, like torch);
  GPUs combine with ``a > b``, false for NaN, so the index a NaN row gets depends on the reduction tree.
- tl.maximum (PropagateNan.NONE, maxnumf): the interpreter's np.maximum propagates NaN, a GPU's maxnum
  returns the other operand.
So max and argmax track NaN explicitly: per-lane running maxima are updated with ``x > best`` (false for
NaN, so no NaN reaches a cross-lane tl.max) and a NaN flag; ties keep the earlier index per lane
(strict >), and across lanes the smallest index among the winners is taken.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, next_power_of_2, signature


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    x_row = x_ptr + tl.program_id(0).to(tl.int64) * x_row_stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


@triton.jit
def row_max_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    x_row = x_ptr + tl.program_id(0).to(tl.int64) * x_row_stride
    best = tl.full([BLOCK_SIZE], -float("inf"), dtype=tl.float32)
    nan_seen = tl.zeros([BLOCK_SIZE], dtype=tl.int32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        nan_seen = tl.maximum(nan_seen, (x != x).to(tl.int32))
        best = tl.where(x > best, x, best)
    row_max = tl.where(tl.max(nan_seen, axis=0) > 0, float("nan"), tl.max(best, axis=0))
    tl.store(out_ptr + tl.program_id(0), row_max.to(out_ptr.dtype.element_ty))


@triton.jit
def row_argmax_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    x_row = x_ptr + tl.program_id(0).to(tl.int64) * x_row_stride
    # Start from the first block: padding lanes hold -inf with indices >= n_cols, so they lose every
    # tie against a real column, also in an all -inf row.
    best_idx = tl.arange(0, BLOCK_SIZE)
    best = tl.load(x_row + best_idx, mask=best_idx < n_cols, other=-float("inf")).to(tl.float32)
    for start in range(BLOCK_SIZE, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        # A lane's first NaN is final; otherwise a NaN or a strictly larger value replaces the best.
        take = (best == best) & ((x > best) | (x != x))
        best = tl.where(take, x, best)
        best_idx = tl.where(take, cols, best_idx)
    lane_nan = best != best
    nan_lanes = tl.max(lane_nan.to(tl.int32), axis=0)
    row_max = tl.max(tl.where(lane_nan, -float("inf"), best), axis=0)
    winner = tl.where(nan_lanes > 0, lane_nan, best == row_max)
    tl.store(out_ptr + tl.program_id(0), tl.min(tl.where(winner, best_idx, 2147483647), axis=0).to(tl.int64))


KERNELS = {"row_sum": row_sum_kernel, "row_max": row_max_kernel, "row_argmax": row_argmax_kernel}


def row_reduce(op: str, x: torch.Tensor, out: torch.Tensor | None = None, config: dict | None = None) -> torch.Tensor:
    """``op`` ("row_sum", "row_max", "row_argmax") over the last dim of a 2-D tensor with unit column stride."""
    if x.dim() != 2 or x.stride(1) != 1 or x.shape[1] < 1:
        raise ValueError(f"{op} takes a 2-D tensor with N >= 1 and unit column stride, got {tuple(x.shape)} {x.stride()}")
    n_rows, n_cols = x.shape
    if out is None:
        out = torch.empty(n_rows, dtype=torch.int64 if op == "row_argmax" else x.dtype, device=x.device)
    inputs.require_dense(op, "out", out)
    cfg = config or {}
    block = cfg.get("BLOCK_SIZE") or min(triton.next_power_of_2(n_cols), 4096)
    options = {k: cfg[k] for k in ("num_warps", "num_stages") if k in cfg}
    options.setdefault("num_warps", min(max(block // 256, 1), 8))
    KERNELS[op][(n_rows,)](x, out, x.stride(0), n_cols, BLOCK_SIZE=block, **options)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, n = case.shape["M"], case.shape["N"]
    if case.values != "ties":
        return {"x": inputs.rows(case, device, gen)}
    # Small integers: every row has ties at its maximum. Rows 1 mod 4 are all -inf; rows 2 mod 4
    # hold +inf twice; rows 3 mod 4 hold NaN twice.
    x = gen.integers(-3, 4, (m, n)).double()
    x[1::4] = -math.inf
    for row, special in ((2, math.inf), (3, math.nan)):
        cols = gen.integers(0, n, (2,), x.device)
        x[row::4, cols] = special
    return {"x": inputs.place(x, case, device, case.layout)}


def _reference(op: str):
    def reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
        x = inputs["x"].double()
        has_nan = x.isnan().any(dim=-1)
        if op == "row_sum":
            return {"out": x.sum(dim=-1)}
        if op == "row_max":
            return {"out": torch.where(has_nan, math.nan, x.nan_to_num(nan=-math.inf).amax(dim=-1))}
        # argmax of an integer tensor returns the first maximal index: the first NaN here.
        first_nan = x.isnan().to(torch.int32).argmax(dim=-1)
        return {"out": torch.where(has_nan, first_nan, x.nan_to_num(nan=-math.inf).argmax(dim=-1)).double()}
    return reference


def _magnitude(op: str):
    def magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if op == "row_sum":
            return {"out": inputs["x"].double().abs().sum(dim=-1)}
        # max and argmax are exact: the bound is a millionth of an ulp of the result. A fixed magnitude (2**-20) did
        # that for results near 1 only: on subnormal rows (drawn by default) it passed a result off by 50%.
        return {"out": ref["out"].double().abs()}
    return magnitude


def _signature(op: str):
    def sig(dtype: str, meta: dict) -> tuple[dict, dict]:
        out = "*i64" if op == "row_argmax" else f"*{dtype}"
        return signature(KERNELS[op], {"x_ptr": f"*{dtype}", "out_ptr": out, "x_row_stride": "i32", "n_cols": "i32"},
                         {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 4096)})
    return sig


def _configs(family: str) -> tuple[dict, ...]:
    stages = (1, 2) if family == "amd" else (2, 3)
    return tuple({"BLOCK_SIZE": b, "num_warps": w, "num_stages": s}
                 for b in (1024, 4096) for w in (4, 8, 16) for s in stages)


def _spec(op: str, description: str, flops_per_element: float, torch_baseline) -> KernelSpec:
    out_bytes = (lambda case: 8) if op == "row_argmax" else (lambda case: DTYPES[case.dtype].itemsize)
    return register(KernelSpec(
        name=op,
        description=description,
        dims=(Dim("M", interpret_max=8, gpu_max=4096, nightly_max=16384, blocks=(1,)),
              Dim("N", interpret_max=2100, gpu_max=65536, nightly_max=262144, blocks=(128, 1024, 4096))),
        dtypes=("fp32", "fp16", "bf16"),
        layouts=("contiguous", "padded_rows"),
        value_classes=("normal", "large", "negative", "special", "ties"),
        make_inputs=_make_inputs,
        outputs=("out",),
        make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape[0], device=inp["x"].device,
                                                               dtype=torch.int64 if op == "row_argmax" else inp["x"].dtype)},
        run=lambda inp, out, cfg: row_reduce(op, inp["x"], out["out"], cfg),
        reference=_reference(op),
        tolerance=Tolerance(reduction=(lambda case: case.shape["N"]) if op == "row_sum" else (lambda case: 1),
                            magnitude=_magnitude(op), safety=4.0 if op == "row_sum" else 2.0**-20),
        flops=lambda case: flops_per_element * case.shape["M"] * case.shape["N"],
        min_bytes=lambda case: case.shape["M"] * (case.shape["N"] * DTYPES[case.dtype].itemsize + out_bytes(case)),
        torch_baseline=torch_baseline,
        default_config={"nvidia": {}, "amd": {"num_stages": 2}, "interpret": {"BLOCK_SIZE": 128}},
        paths=paths.block_loop("N", lambda case, cfg: int(cfg.get("BLOCK_SIZE") or min(next_power_of_2(case.shape["N"]),
                                                                                        4096))),
        configs={"interpret": tuple({"BLOCK_SIZE": b} for b in (32, 64, 256)), "nvidia": _configs("nvidia"),
                 "amd": _configs("amd")},
        benchmark_shapes=({"M": 4096, "N": 4096}, {"M": 16384, "N": 16384}, {"M": 256, "N": 262144}),
        # Ties, -inf rows, +inf twice and NaN twice in ragged multi-block padded rows; one column (rows
        # of a lone integer, -inf, +inf and NaN); inf/NaN scattered across block boundaries.
        examples=({"shape": {"M": 8, "N": 259}, "layout": "padded_rows", "values": "ties", "seed": 1},
                  {"shape": {"M": 4, "N": 1}, "values": "ties", "seed": 2},
                  {"shape": {"M": 5, "N": 1025}, "values": "special", "seed": 5}),
        compile_signature=_signature(op),
        batch_dim="M", batch_inputs=("x",), batch_outputs=("out",),
        jit_fn=KERNELS[op],
    ))


ROW_SUM = _spec("row_sum", "row sum of [M, N], fp32 accumulation, output in the input dtype", 1.0,
                lambda inp: inp["x"].sum(dim=-1))
ROW_MAX = _spec("row_max", "row max of [M, N], NaN-propagating like torch.amax", 1.0, lambda inp: inp["x"].amax(dim=-1))
ROW_ARGMAX = _spec("row_argmax", "row argmax of [M, N] (int64): first NaN, else first maximal index", 2.0,
                   lambda inp: inp["x"].argmax(dim=-1))
