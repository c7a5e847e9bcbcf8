"""Seeded dropout on a [M, N] tensor with Triton's Philox generator; outputs the kept values and the mask.

Contract, on every backend:
- element (r, c), logical index i = r * N + c (int64), draws the (i mod 4)-th of the four 32-bit words of
  ``tl.randint4x(seed, i // 4)`` (one Philox call serves four elements), turned into ``u`` in [0, 1) as
  ``tl.rand`` does; so the mask depends on (seed, r, c) only, never on block size, grid or row stride;
- it is kept iff ``u >= p`` (``>=``, not ``>``: u is exactly 0.0 with probability 2**-31, so
  ``>`` would drop elements at p = 0), giving P(keep) = 1 - p; 0 <= p < 1;
- kept: ``out = to_dtype(fp32(x) * scale)`` with ``scale = fp32(1 / (1 - p))`` rounded once on the
  host, and one fp32 multiply (correctly rounded everywhere; a GPU ``/`` is not); to_dtype rounds to
  nearest even;
- dropped: ``out = +0.0`` even where x is inf or NaN (torch's ``x * mask * scale`` gives NaN there);
- ``mask`` is int8, 1 where kept and 0 where dropped.
The mask cannot be computed in torch, so the reference re-runs the kernel for it (which also checks
that a second launch, with another block size, draws the same mask) and checks ``out`` against
``x * mask / (1 - p)`` in float64; the properties below check the mask's statistics.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.spec import DTYPES, Case, CodePath, Dim, KernelSpec, Property, Tolerance, signature


@triton.jit
def dropout_kernel(x_ptr, out_ptr, mask_ptr, x_row_stride, out_row_stride, n_cols, n_elements, p, scale, seed,
                   BLOCK_SIZE: tl.constexpr):
    # One block of the flattened logical index (int64: past 2**31 elements too), so short rows waste
    # no lanes; rows are located through their strides. The block is held as [BLOCK_SIZE // 4, 4]:
    # row i of it is the four elements that share Philox counter i (one call gives four numbers).
    pid = tl.program_id(0).to(tl.int64)
    counters = pid * (BLOCK_SIZE // 4) + tl.arange(0, BLOCK_SIZE // 4)
    lane = tl.arange(0, 4)
    offsets = counters[:, None] * 4 + lane[None, :]
    inside = offsets < n_elements
    r0, r1, r2, r3 = tl.randint4x(seed, counters)
    bits = tl.where(lane[None, :] == 0, r0[:, None],
                    tl.where(lane[None, :] == 1, r1[:, None], tl.where(lane[None, :] == 2, r2[:, None], r3[:, None])))
    keep = tl.random.uint_to_uniform_float(bits) >= p
    tl.store(mask_ptr + offsets, keep.to(tl.int8), mask=inside)
    if (x_row_stride == n_cols) & (out_row_stride == n_cols):
        # Dense rows: the logical index is the address, with no division (each branch keeps its own
        # address pattern, so the dense one stays vectorized).
        x = tl.load(x_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
        tl.store(out_ptr + offsets, tl.where(keep, x * scale, 0.0).to(out_ptr.dtype.element_ty), mask=inside)
    else:
        row = offsets // n_cols
        col = offsets - row * n_cols
        x = tl.load(x_ptr + row * x_row_stride + col, mask=inside, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * out_row_stride + col, tl.where(keep, x * scale, 0.0).to(out_ptr.dtype.element_ty),
                 mask=inside)


def fp32(value: float) -> float:
    """``value`` rounded to the nearest fp32, as a Python float (what the kernel receives exactly)."""
    return float(torch.tensor(value, dtype=torch.float32))


def dropout(x: torch.Tensor, p: float, seed: int, out: dict[str, torch.Tensor] | None = None,
            config: dict | None = None) -> dict[str, torch.Tensor]:
    """Dropout of a 2-D tensor with unit column stride; returns {"out", "mask"} (mask int8, contiguous)."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"dropout takes a 2-D tensor with unit column stride, got {tuple(x.shape)} stride {x.stride()}")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must be in [0, 1), got {p}")
    n_rows, n_cols = x.shape
    if out is None:
        out = {"out": torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device),
               "mask": torch.empty((n_rows, n_cols), dtype=torch.int8, device=x.device)}
    inputs.require_rows("dropout", "out['out']", out["out"], written=True)
    inputs.require_dense("dropout", "out['mask']", out["mask"])  # stored at the logical index
    cfg = {"BLOCK_SIZE": 1024, "num_warps": 4, **(config or {})}
    if cfg["BLOCK_SIZE"] % 4:
        raise ValueError(f"dropout: BLOCK_SIZE must be a multiple of 4 (one Philox call serves 4 elements), "
                         f"got {cfg['BLOCK_SIZE']}")
    grid = (triton.cdiv(n_rows * n_cols, cfg["BLOCK_SIZE"]),)
    dropout_kernel[grid](x, out["out"], out["mask"], x.stride(0), out["out"].stride(0), n_cols, n_rows * n_cols, fp32(p),
                         fp32(1.0 / (1.0 - fp32(p))), int(seed), BLOCK_SIZE=cfg["BLOCK_SIZE"], num_warps=cfg["num_warps"])
    return out


def _case_p(case: Case) -> float:
    return case.shape["P"] / 100.0


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    # p and the Philox seed travel as 0-d tensors so that a property can change them and re-run.
    gen = inputs.generator(case)
    x = inputs.place(inputs.values((case.shape["M"], case.shape["N"]), case, gen), case, device, case.layout)
    # On the CPU even where the inputs are drawn on the device (benchmarks): reading a device scalar would
    # synchronize inside every timed call.
    return {"x": x, "p": torch.tensor(_case_p(case), dtype=torch.float64, device="cpu"),
            "seed": torch.tensor(case.seed, device="cpu")}


def _make_outputs(inputs: dict[str, torch.Tensor], case: Case | None = None) -> dict[str, torch.Tensor]:
    x = inputs["x"]
    return {"out": torch.empty(x.shape, dtype=x.dtype, device=x.device),
            "mask": torch.empty(x.shape, dtype=torch.int8, device=x.device)}


def _run(inputs: dict[str, torch.Tensor], outputs: dict[str, torch.Tensor], config: dict | None) -> None:
    dropout(inputs["x"], float(inputs["p"]), int(inputs["seed"]), outputs, config)


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    p = fp32(float(inputs["p"]))
    second = _make_outputs(inputs)
    second["mask"].fill_(-1)
    dropout(inputs["x"], p, int(inputs["seed"]), second, {"BLOCK_SIZE": 2048})
    mask = second["mask"].to(torch.float64)
    kept = torch.where(mask == 1, inputs["x"].double() / (1.0 - p), 0.0)
    # A mask value other than 0 or 1 becomes NaN, which no output can match.
    return {"out": kept, "mask": torch.where((mask == 0) | (mask == 1), mask, math.nan)}


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # The integer mask must match exactly: a small positive magnitude keeps its bound in (0, 1).
    return {"out": ref["out"].abs(), "mask": torch.full_like(ref["mask"], 2.0**-20)}


def _stat_inputs(case: Case, device: str, p_percent: int | None = None) -> dict[str, torch.Tensor]:
    """The case's inputs, widened to at least 2048 elements for statistical properties."""
    shape = dict(case.shape)
    if p_percent is not None:
        shape["P"] = p_percent
    shape["N"] = max(shape["N"], -(-2048 // shape["M"]))
    return _make_inputs(Case(case.kernel, case.dtype, shape, case.layout, case.values, case.seed), device)


def _same_seed(case: Case, device: str, run) -> str | None:
    # A second launch with another block size on a contiguous copy: the mask depends on (seed, row, col) only.
    inputs = _make_inputs(case, device)
    a = run(inputs)
    b = dropout(inputs["x"].contiguous(), float(inputs["p"]), int(inputs["seed"]), config={"BLOCK_SIZE": 512})
    if not torch.equal(a["mask"], b["mask"]):
        return (f"same seed, block size 512 on a contiguous copy: masks differ in {int((a['mask'] != b['mask']).sum())} "
                "elements (Philox offsets must be logical element indices)")
    if not torch.equal(a["out"].view(torch.uint8), b["out"].view(torch.uint8)):
        return "same seed, block size 512 on a contiguous copy: outputs differ bitwise"
    return None


def _other_seed(case: Case, device: str, run) -> str | None:
    inputs = _stat_inputs(case, device, p_percent=case.shape["P"] or 50)
    a = run(inputs)["mask"].clone()
    inputs["seed"] = inputs["seed"] + 1
    b = run(inputs)["mask"]
    # P(equal) <= (p^2 + (1-p)^2)^n <= 0.82^2048 < 1e-176 for p in [0.1, 0.9].
    return None if not torch.equal(a, b) else f"seeds {case.seed} and {case.seed + 1} drew identical masks"


def _kept_fraction(case: Case, device: str, run) -> str | None:
    inputs = _stat_inputs(case, device)
    p = fp32(float(inputs["p"]))
    mask = run(inputs)["mask"]
    n, kept = mask.numel(), int((mask == 1).sum())
    sigma = math.sqrt(n * p * (1.0 - p))
    if abs(kept - n * (1.0 - p)) > 6.0 * sigma + 2.0:
        return f"kept {kept} of {n} at p={p}: expected {n * (1 - p):.1f} +- {6 * sigma + 2:.1f} (6 sigma + 2)"
    return None


def _scaled_exactly(case: Case, device: str, run) -> str | None:
    inputs = _make_inputs(case, device)
    got = run(inputs)
    scale = fp32(1.0 / (1.0 - fp32(float(inputs["p"]))))
    want = torch.where(got["mask"] == 1, inputs["x"].float() * scale, 0.0).to(got["out"].dtype)
    # Bitwise up to NaN payloads (a GPU may return its canonical NaN); the sign of zero counts.
    same = ((got["out"] == want) & (torch.signbit(got["out"]) == torch.signbit(want))) | (got["out"].isnan() & want.isnan())
    if not bool(same.all()):
        idx = tuple(int(i) for i in (~same).nonzero()[0])
        return (f"{int((~same).sum())} outputs are not to_dtype(fp32(x) * {scale!r}) (kept) or +0.0 (dropped); first at "
                f"{idx}: x={inputs['x'][idx].item()!r} mask={got['mask'][idx].item()} got {got['out'][idx].item()!r}, "
                f"want {want[idx].item()!r}")
    return None


def _p_zero_keeps_all(case: Case, device: str, run) -> str | None:
    inputs = _make_inputs(case, device)
    inputs["p"] = torch.tensor(0.0, dtype=torch.float64)
    got = run(inputs)
    if not bool((got["mask"] == 1).all()):
        return f"p=0 dropped {int((got['mask'] != 1).sum())} of {got['mask'].numel()} elements"
    x = inputs["x"]
    same = (got["out"] == x) | (got["out"].isnan() & x.isnan())
    return None if bool(same.all()) else f"p=0 changed {int((~same).sum())} values (scale must be exactly 1)"


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(dropout_kernel, {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "mask_ptr": "*i8",
                                      "x_row_stride": "i32", "out_row_stride": "i32", "n_cols": "i32",
                                      "n_elements": "i32", "p": "fp32", "scale": "fp32", "seed": "i32"},
                     {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 1024)})

SPEC = register(KernelSpec(
    name="dropout",
    description="seeded Philox dropout of [M, N]: out = x / (1-p) where kept, 0 elsewhere; int8 keep mask",
    dims=(Dim("M", interpret_max=4, gpu_max=4096, nightly_max=16384, blocks=(1,)),
          Dim("N", interpret_max=1100, gpu_max=16384, nightly_max=65536, blocks=(256, 1024)),
          Dim("P", interpret_max=90, gpu_max=90, choices=(0, 10, 50, 90), min=0)),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "special"),
    make_inputs=_make_inputs,
    outputs=("out", "mask"),
    make_outputs=_make_outputs,
    run=_run,
    reference=_reference,
    # fp32 rounding of the scale and of the product, then the output dtype's rounding.
    tolerance=Tolerance(magnitude=_magnitude),
    flops=lambda case: 2.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: case.shape["M"] * case.shape["N"] * (2.0 * DTYPES[case.dtype].itemsize + 1),
    torch_baseline=lambda inp: torch.nn.functional.dropout(inp["x"], float(inp["p"]), training=True),
    default_config={"nvidia": {"BLOCK_SIZE": 1024, "num_warps": 4}, "amd": {"BLOCK_SIZE": 1024, "num_warps": 4},
                    "interpret": {"BLOCK_SIZE": 1024, "num_warps": 4}},
    paths=(CodePath("dense_rows", "rows are contiguous (row stride == N): addresses are the logical index",
                    lambda case, cfg: case.layout == "contiguous"),
           CodePath("strided_rows", "rows are padded: each address goes through the row and column of its index",
                    lambda case, cfg: case.layout == "padded_rows"),
           CodePath("several_programs", "M * N spans more than one block",
                    lambda case, cfg: case.shape["M"] * case.shape["N"] > int(cfg.get("BLOCK_SIZE", 1024))),
           CodePath("block_spans_rows", "a block holds the end of one row and the start of the next",
                    lambda case, cfg: case.shape["M"] > 1 and case.shape["N"] % int(cfg.get("BLOCK_SIZE", 1024)) != 0),
           CodePath("masked_tail", "M * N is not a multiple of the block: the last block is masked",
                    lambda case, cfg: case.shape["M"] * case.shape["N"] % int(cfg.get("BLOCK_SIZE", 1024)) != 0)),
    configs={"interpret": tuple({"BLOCK_SIZE": b} for b in (64, 256, 512)),
             "nvidia": tuple({"BLOCK_SIZE": b, "num_warps": w} for b in (1024, 2048, 4096, 8192) for w in (4, 8, 16)),
             "amd": tuple({"BLOCK_SIZE": b, "num_warps": w, "num_stages": 1} for b in (512, 1024, 2048, 4096)
                          for w in (4, 8))},
    benchmark_shapes=({"M": 8192, "N": 8192, "P": 10}, {"M": 16384, "N": 16384, "P": 50}),
    # p=0 on specials (inf/NaN kept, scaled by exactly 1); p=0.9 on ragged padded rows of specials
    # (dropped NaN/inf must give 0); rows of one element; "large" values at p=0.9 whose scaled
    # value overflows fp16 to inf.
    examples=({"shape": {"M": 3, "N": 257, "P": 0}, "values": "special", "seed": 7},
              {"shape": {"M": 2, "N": 1025, "P": 90}, "layout": "padded_rows", "values": "special", "seed": 1},
              {"shape": {"M": 4, "N": 1, "P": 50}, "seed": 3},
              {"shape": {"M": 2, "N": 300, "P": 90}, "values": "large", "seed": 11}),
    properties=(
        Property("same_seed_same_mask", "one seed gives bitwise the same mask and output with another block size and "
                 "row stride", _same_seed),
        Property("other_seed_other_mask", "seed and seed+1 give different masks (>= 2048 elements, p in [0.1, 0.9])",
                 _other_seed),
        Property("kept_fraction", "the kept count is within 6 sigma + 2 of n(1-p) (>= 2048 elements)", _kept_fraction),
        Property("scaled_exactly", "kept: out == to_dtype(fp32(x) * fp32(1/(1-p))) bitwise; dropped: out == +0.0",
                 _scaled_exactly),
        Property("p_zero_keeps_all", "p = 0 keeps every element and returns x unchanged", _p_zero_keeps_all),
    ),
    compile_signature=_signature,
    # The Philox counter is the absolute element index: the first k rows of a batch draw the same
    # masks run as a batch of k (the suite's batch invariance); a row moved to another index does not.
    batch_dim="M", batch_inputs=("x",), batch_outputs=("out", "mask"),
    jit_fn=dropout_kernel,
))
