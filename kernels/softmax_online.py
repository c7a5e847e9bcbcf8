"""Online row softmax for rows wider than one block: a running max and rescaled running sum, then a write pass.

A row that fits the config's block takes a one-pass kernel instead: read once, max, sum and write from registers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import (
    DTYPES,
    Case,
    CodePath,
    Dim,
    JitKernel,
    KernelSpec,
    Property,
    Tolerance,
    next_power_of_2,
    signature,
    split_config,
)


@triton.jit
def softmax_one_block_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # A row that fits one block is read once and kept in registers (the online kernel reads it twice).
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_online_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    # Per-lane running max and sum of exp(x - max): no cross-lane reduction inside the loop.
    run_max = tl.full([BLOCK_SIZE], -float("inf"), tl.float32)
    run_sum = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    # The row is read twice: the first pass asks L2 to keep it (evict_last) and the second pass, its last reader,
    # lets it go (evict_first), as do the output's stores, so the second read comes from L2 rather than HBM
    # (measured on an H100 at 4096 x 32768: 78% of the copy's rate without the hints, 88% with them).
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_row + cols, mask=cols < n_cols, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
        new_max = tl.maximum(run_max, x)
        # A lane that has seen only -inf (masked, or a masked-out prefix) subtracts 0: -inf - -inf is NaN.
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - shift) + tl.exp(x - shift)
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    row_sum = tl.sum(run_sum * tl.exp(run_max - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_row + cols, mask=mask, other=-float("inf"), eviction_policy="evict_first").to(tl.float32)
        tl.store(out_row + cols, (tl.exp(x - row_max) / row_sum).to(out_ptr.dtype.element_ty), mask=mask,
                 eviction_policy="evict_first")

def one_block(n_cols: int, meta: dict) -> bool:
    """Whether a row fits the config's block, so that it is read once (softmax_one_block_kernel)."""
    return n_cols <= meta.get("BLOCK_SIZE", 4096)


def softmax_online(x: torch.Tensor, out: torch.Tensor | None = None, config: dict | None = None) -> torch.Tensor:
    """Softmax over the last dim of a 2-D tensor whose rows are unit-stride; rows of any width."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"softmax_online takes a 2-D tensor with unit column stride, got {tuple(x.shape)} stride {x.stride()}")
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device) if out is None else out
    inputs.require_rows("softmax_online", "out", out, written=True)
    meta, options = split_config(config or {})
    block = min(meta.get("BLOCK_SIZE", 4096), triton.next_power_of_2(n_cols))
    options.setdefault("num_warps", 4 if block <= 1024 else 8)
    kernel = softmax_one_block_kernel if one_block(n_cols, meta) else softmax_online_kernel
    kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block, **options)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, n = case.shape["M"], case.shape["N"]
    if case.values != "masked":
        return {"x": inputs.rows(case, device, gen)}
    # An attention-style mask: a -inf prefix of random length (up to all but the last column) per row,
    # so whole blocks are -inf before the first finite value.
    x = torch.randn((m, n), generator=gen, dtype=torch.float64)
    prefix = torch.randint(0, n, (m, 1), generator=gen)
    x[torch.arange(n)[None, :] < prefix] = float("-inf")
    return {"x": inputs.place(x, case, device, case.layout)}


# exp() on GPUs flushes results below fp32's smallest normal to zero (seen on sm_90), so an output computed in
# fp32 may be off by that much: more than the smallest bf16 subnormal, the bf16 output's own floor.


def exp_magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # exp(t) with t = x - max rounded (and GPUs' exp2-based exp) is off by about |t| units of roundoff.
    x = inputs["x"].double()
    t = (x - x.max(dim=-1, keepdim=True).values).abs()
    return {"out": ref["out"].abs() * (1.0 + torch.where(torch.isfinite(t), t, 0.0))}


def _tiny(dtype: torch.dtype) -> float:
    info = torch.finfo(dtype)
    return float(info.tiny) if dtype == torch.float32 else float(info.tiny * info.eps)


def _row_chunks(rows: int, cols: int, elements: int = 1 << 24) -> list[slice]:
    """Row ranges of about ``elements`` elements: a property's float64 work stays on the device, in bounded pieces
    (a nightly case of 1024 x 262144 in float64 is 2 GiB a tensor)."""
    step = max(1, elements // max(1, cols))
    return [slice(r, min(rows, r + step)) for r in range(0, rows, step)]


def rows_sum_to_one(make_inputs: Callable[[Case, str], dict], input: str = "x", output: str = "out",
                    safety: float = 8.0) -> Property:
    """Every row whose softmax is defined (no NaN or +inf, not all -inf) sums to 1 within the output
    dtype's rounding plus an fp32 sum over the row. Computed in float64 on the case's device: no copy to the host,
    which took minutes for a nightly case while the case held its GPU's lock."""

    def check(case: Case, device: str, run: Callable[[dict], dict]) -> str | None:
        inputs = make_inputs(case, device)
        result = run(inputs)[output].detach()
        x_all = inputs[input].detach()
        n = x_all.shape[-1]
        tol = safety * (torch.finfo(result.dtype).eps / 2 + math.sqrt(n) * 2.0**-24) + n * _tiny(result.dtype)
        bad_rows, defined_rows, first = 0, 0, None
        for rows in _row_chunks(x_all.shape[0], n):
            x = x_all[rows]
            defined = ~(torch.isnan(x) | (x == float("inf"))).any(dim=-1) & (x > float("-inf")).any(dim=-1)
            sums = result[rows].to(torch.float64).sum(dim=-1)
            bad = defined & ~((sums - 1.0).abs() <= tol)
            defined_rows += int(defined.sum())
            if bool(bad.any()):
                bad_rows += int(bad.sum())
                if first is None:
                    i = int(bad.nonzero()[0, 0])
                    first = (rows.start + i, float(sums[i]))
        if first is None:
            return None
        i, total = first
        return (f"row {i} sums to {total!r} (|sum - 1| = {abs(total - 1.0):.3e} > {tol:.3e}); "
                f"{bad_rows} of {defined_rows} defined rows")

    return Property("rows_sum_to_one", "each defined row of the output sums to 1 within the dtype's tolerance", check)


def shift_invariant(make_inputs: Callable[[Case, str], dict], input: str = "x", output: str = "out",
                    shift: float = 256.0, safety: float = 8.0) -> Property:
    """softmax(x + c) == softmax(x) for a per-row constant c = +-shift, large enough that exp(x + c)
    overflows or underflows fp32 unless the kernel subtracts the row max. Values are first put on a
    grid coarse enough that x + c is exact in the input dtype, so any difference is the kernel's. Computed in float64
    on the case's device, a piece of rows at a time (as rows_sum_to_one)."""

    def check(case: Case, device: str, run: Callable[[dict], dict]) -> str | None:
        base, moved = make_inputs(case, device), make_inputs(case, device)
        dtype = base[input].dtype
        rows_n, cols = base[input].shape[0], base[input].shape[-1]
        step = shift * float(torch.finfo(dtype).eps)  # one ulp of |x + c| < 2 * shift
        chunks = _row_chunks(rows_n, cols)
        for rows in chunks:
            x = base[input][rows].detach().to(torch.float64)
            finite = torch.isfinite(x)
            count = finite.sum(dim=-1, keepdim=True).clamp(min=1)
            centred = x - torch.where(finite, x, 0.0).sum(dim=-1, keepdim=True) / count
            grid = (centred * max(1.0, step) / step).round().clamp(-shift / (2 * step), shift / (2 * step)) * step
            c = torch.where(torch.arange(rows.start, rows.stop, device=x.device)[:, None] % 2 == 0, shift, -shift)
            values = torch.where(finite, grid, x)
            shifted = values + c
            exact = torch.equal(values.to(dtype).double()[finite], values[finite])
            if not (exact and torch.equal(shifted.to(dtype).double()[finite], shifted[finite])):
                raise AssertionError(f"shift_invariant: x + {shift} is not exact in {dtype}")
            base[input][rows].copy_(values.to(dtype))
            moved[input][rows].copy_(shifted.to(dtype))
        a_all = run(base)[output].detach()
        b_all = run(moved)[output].detach()
        u_out = torch.finfo(dtype).eps / 2
        bad_count, first = 0, None
        for rows in chunks:
            a, b = a_all[rows].to(torch.float64), b_all[rows].to(torch.float64)
            nan_differs = torch.isnan(a) != torch.isnan(b)
            tol = safety * (u_out + math.sqrt(cols) * 2.0**-24) * torch.maximum(a.abs(), b.abs()) + _tiny(dtype)
            bad = nan_differs | (~((a - b).abs() <= tol) & ~(torch.isnan(a) & torch.isnan(b)))
            if bool(bad.any()):
                bad_count += int(bad.sum())
                if first is None:
                    idx = tuple(int(i) for i in bad.nonzero()[0])
                    first = ((rows.start + idx[0], *idx[1:]), b[idx].item(), a[idx].item())
        if first is None:
            return None
        idx, got_b, got_a = first
        c0 = shift if idx[0] % 2 == 0 else -shift
        return (f"softmax(x + c) differs from softmax(x) at {idx} (c = {c0:+g}): "
                f"{got_b!r} vs {got_a!r}; {bad_count} of {a_all.numel()} elements")

    return Property("shift_invariant", f"adding +-{shift:g} to a row leaves its softmax unchanged", check)


def _signature(kernel) -> Callable[[str, dict], tuple[dict, dict]]:
    def make(dtype: str, meta: dict) -> tuple[dict, dict]:
        return signature(kernel, {"out_ptr": f"*{dtype}", "in_ptr": f"*{dtype}", "in_row_stride": "i32",
                                  "out_row_stride": "i32", "n_cols": "i32"}, {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 4096)})
    return make


SPEC = register(KernelSpec(
    name="softmax_online",
    description="row softmax of any width: online running max and rescaled sum over column blocks, then a write pass",
    dims=(Dim("M", interpret_max=8, gpu_max=256, nightly_max=1024, blocks=(1,)),
          Dim("N", interpret_max=3000, gpu_max=65536, nightly_max=262144, blocks=(128, 1024, 4096))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "special", "masked"),
    make_inputs=_make_inputs,
    outputs=("out",),
    make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device)},
    run=lambda inp, out, cfg: softmax_online(inp["x"], out["out"], cfg),
    reference=lambda inp, case: {"out": torch.softmax(inp["x"].double(), dim=-1)},
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], magnitude=exp_magnitude, safety=8.0),
    # Pass 1: max, two exp, multiply-add; pass 2: exp and divide.
    flops=lambda case: 8.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: 2.0 * case.shape["M"] * case.shape["N"] * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.softmax(inp["x"], dim=-1),
    default_config={"nvidia": {"BLOCK_SIZE": 4096, "num_warps": 8},
                    "amd": {"BLOCK_SIZE": 4096, "num_warps": 8, "num_stages": 2},
                    "interpret": {"BLOCK_SIZE": 128}},
    paths=(CodePath("one_block", "the row fits the block: the one-pass kernel reads it once",
                    lambda case, cfg: one_block(case.shape["N"], cfg)),
           *paths.block_loop("N", lambda case, cfg: min(int(cfg.get("BLOCK_SIZE", 4096)), next_power_of_2(case.shape["N"])))),
    configs={"interpret": tuple({"BLOCK_SIZE": b} for b in (32, 64, 512)),
             # Up to 32768: a row that wide still fits the registers of 32 warps, read once.
             "nvidia": (*({"BLOCK_SIZE": b, "num_warps": w} for b in (1024, 2048, 4096, 8192, 16384) for w in (4, 8, 16)),
                        {"BLOCK_SIZE": 16384, "num_warps": 32}, {"BLOCK_SIZE": 32768, "num_warps": 16},
                        {"BLOCK_SIZE": 32768, "num_warps": 32}),
             "amd": tuple({"BLOCK_SIZE": b, "num_warps": w, "num_stages": s}
                          for b in (1024, 2048, 4096, 8192, 16384) for w in (4, 8, 16) for s in (1, 2))},
    benchmark_shapes=({"M": 8192, "N": 8192}, {"M": 4096, "N": 32768}, {"M": 1024, "N": 131072}),
    # A -inf prefix spanning whole blocks; one column past a block; an all-negative padded row; rows with a wide
    # spread, whose smallest outputs are fp32 subnormals (GPUs flush them; the interpreter's bf16 cast mangles them).
    examples=({"shape": {"M": 4, "N": 1100}, "values": "masked", "seed": 3},
              {"shape": {"M": 2, "N": 4097}, "values": "normal", "seed": 1},
              {"shape": {"M": 3, "N": 1025}, "layout": "padded_rows", "values": "negative", "seed": 2},
              {"shape": {"M": 4, "N": 1000}, "values": "large", "seed": 0}),
    properties=(rows_sum_to_one(_make_inputs), shift_invariant(_make_inputs)),
    compile_signature=_signature(softmax_online_kernel),
    jit_fns=(JitKernel(softmax_one_block_kernel, _signature(softmax_one_block_kernel)),),
    batch_dim="M", batch_inputs=("x",), batch_outputs=("out",),
    jit_fn=softmax_online_kernel,
))
