"""Fused cross-entropy forward and backward over wide vocabularies: one row per program, an online
logsumexp over vocabulary blocks, then a second pass that writes the gradient.

Contract (reduction 'none' with a per-row upstream gradient; fp32 compute, loss and lse in fp32):
- valid row r (target t != ignore_index, 0 <= t < V): ``lse = logsumexp(x_r)``, ``loss[r] = lse - x[r, t]``,
  ``grad[r, j] = (exp(x[r, j] - lse) - [j == t]) * grad_loss[r]``, stored in the logits dtype;
- ignored row (t == ignore_index, -100): ``loss = 0`` and ``grad = 0`` exactly, whatever the logits (they
  are not read; torch's autograd gives NaN gradients for an ignored row holding a NaN logit);
- a target outside [0, V) other than ignore_index is a caller error: nothing is read out of bounds and the
  row's loss is NaN;
- -inf logits are allowed (probability 0; a -inf target logit gives loss +inf; an all -inf row gives NaN);
  a NaN logit makes the row's loss and gradient NaN; +inf logits are outside the contract (NaN here,
  where torch.logsumexp returns inf).
For torch's reduction='mean': pass ``grad_loss = g / n_valid`` and take ``loss.sum() / n_valid``, n_valid
being the number of rows whose target is not ignore_index.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, Dim, KernelSpec, Tolerance, next_power_of_2, signature

IGNORE_INDEX = -100


@triton.jit
def cross_entropy_kernel(logits_ptr, target_ptr, grad_loss_ptr, loss_ptr, lse_ptr, grad_ptr, logits_row_stride,
                         grad_row_stride, n_cols, ignore_index, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = logits_ptr + row * logits_row_stride
    grad_row = grad_ptr + row * grad_row_stride
    target = tl.load(target_ptr + row)
    # Ignored rows read nothing: every logits load below is masked with `valid`.
    valid = target != ignore_index
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=(cols < n_cols) & valid, other=-float("inf")).to(tl.float32)
        # tl.max ignores NaN on every backend; a NaN still reaches s through exp() below.
        m_new = tl.maximum(m, tl.max(x, axis=0))
        # While every logit seen is -inf, shift by 0: exp(-inf - -inf) would be NaN.
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - shift) + tl.sum(tl.exp(x - shift), axis=0)
        m = m_new
    lse = m + tl.log(s)
    in_range = valid & (target >= 0) & (target < n_cols)
    x_target = tl.load(x_row + target, mask=in_range, other=float("nan")).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - x_target, 0.0))
    tl.store(lse_ptr + row, tl.where(valid, lse, 0.0))
    g = tl.load(grad_loss_ptr + row).to(tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=(cols < n_cols) & valid, other=-float("inf")).to(tl.float32)
        grad = (tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * g
        tl.store(grad_row + cols, tl.where(valid, grad, 0.0).to(grad_ptr.dtype.element_ty), mask=cols < n_cols)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, grad_loss: torch.Tensor,
                  out: dict[str, torch.Tensor] | None = None, config: dict | None = None) -> dict[str, torch.Tensor]:
    """Per-row loss, lse (fp32) and the logits gradient of [M, V] logits with unit column stride."""
    if logits.dim() != 2 or logits.stride(1) != 1:
        raise ValueError(f"cross_entropy takes 2-D logits with unit column stride, got {tuple(logits.shape)} "
                         f"stride {logits.stride()}")
    n_rows, n_cols = logits.shape
    if target.shape != (n_rows,) or grad_loss.shape != (n_rows,):
        raise ValueError(f"cross_entropy: target {tuple(target.shape)} and grad_loss {tuple(grad_loss.shape)} "
                         f"must be ({n_rows},)")
    for name, t in (("target", target), ("grad_loss", grad_loss)):
        inputs.require_dense("cross_entropy", name, t)  # read at target_ptr + row
    if out is None:
        out = {"loss": torch.empty(n_rows, dtype=torch.float32, device=logits.device),
               "lse": torch.empty(n_rows, dtype=torch.float32, device=logits.device),
               "grad": torch.empty((n_rows, n_cols), dtype=logits.dtype, device=logits.device)}
    inputs.require_dense("cross_entropy", "out['loss']", out["loss"])
    inputs.require_dense("cross_entropy", "out['lse']", out["lse"])
    inputs.require_rows("cross_entropy", "out['grad']", out["grad"], written=True)
    cfg = config or {}
    block = cfg.get("BLOCK_SIZE") or min(triton.next_power_of_2(n_cols), 4096)
    options = {k: cfg[k] for k in ("num_warps", "num_stages") if k in cfg}
    options.setdefault("num_warps", min(max(block // 256, 1), 8))
    cross_entropy_kernel[(n_rows,)](logits, target, grad_loss, out["loss"], out["lse"], out["grad"], logits.stride(0),
                                    out["grad"].stride(0), n_cols, IGNORE_INDEX, BLOCK_SIZE=block, **options)
    return out


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    """Logits of the value class; "masked" sets about 1/8 of the logits to -inf, "nan" one logit in
    rows 1 mod 3. Targets from the seed, the first row on the last column and the second on column 0;
    about a quarter of the rows, and every row 2 mod 4, are ignored, never the first."""
    gen = inputs.generator(case)
    m, v = case.shape["M"], case.shape["V"]
    special = case.values in ("masked", "nan")
    x = inputs.values((m, v), Case(case.kernel, case.dtype, case.shape, values="normal") if special else case, gen)
    if case.values == "masked":
        x[gen.uniform((m, v), x.device) < 0.125] = -math.inf
    elif case.values == "nan":
        rows = torch.arange(1, m, 3, device=x.device)
        x[rows, gen.integers(0, v, (len(rows),), x.device)] = math.nan
    dev = x.device  # every factory call names it: benchmarks draw under another default device
    target = gen.integers(0, v, (m,), dev)
    target[:2] = torch.tensor([v - 1, 0], device=dev)[:m]
    ignored = (gen.uniform((m,), dev) < 0.25) | (torch.arange(m, device=dev) % 4 == 2)
    ignored[0] = False  # a case of one row has a row the kernel computes
    target[ignored] = IGNORE_INDEX
    grad_loss = gen.normal((m,), dev).to(torch.float32)
    return {"logits": inputs.place(x, case, device, case.layout), "target": target.to(device),
            "grad_loss": grad_loss.to(device)}


def _parts(inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    x = inputs["logits"].double()
    valid = inputs["target"] != IGNORE_INDEX
    target = torch.where(valid, inputs["target"], 0)
    lse = torch.logsumexp(x, dim=-1)
    prob = torch.exp(x - lse[:, None])
    return x, valid, target, lse, prob


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    x, valid, target, lse, prob = _parts(inputs)
    onehot = torch.nn.functional.one_hot(target, x.shape[1]).double()
    grad = (prob - onehot) * inputs["grad_loss"].double()[:, None]
    loss = lse - x.gather(1, target[:, None])[:, 0]
    return {"loss": torch.where(valid, loss, 0.0), "lse": torch.where(valid, lse, 0.0),
            "grad": torch.where(valid[:, None], grad, 0.0)}


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # An absolute error e in lse (from the fp32 sum of V terms, plus the rounding of |lse| and |x|)
    # moves the loss by e and every probability by about prob * e.
    x, valid, target, lse, prob = _parts(inputs)
    spread = 1.0 + lse.abs()
    x_target = x.gather(1, target[:, None])[:, 0].abs()
    grad = prob * (spread[:, None] + x.abs()) * inputs["grad_loss"].double().abs()[:, None]
    return {"loss": torch.where(valid, spread + x_target, 0.0), "lse": torch.where(valid, spread, 0.0),
            "grad": torch.where(valid[:, None], grad, 0.0)}


def _torch_baseline(inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    logits = inputs["logits"].detach().requires_grad_()
    loss = torch.nn.functional.cross_entropy(logits, inputs["target"], reduction="none", ignore_index=IGNORE_INDEX)
    loss.backward(inputs["grad_loss"].to(loss.dtype))
    return logits.grad


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    return signature(cross_entropy_kernel, {"logits_ptr": f"*{dtype}", "target_ptr": "*i64", "grad_loss_ptr": "*fp32",
                                            "loss_ptr": "*fp32", "lse_ptr": "*fp32", "grad_ptr": f"*{dtype}",
                                            "logits_row_stride": "i32", "grad_row_stride": "i32", "n_cols": "i32",
                                            "ignore_index": "i32"}, {"BLOCK_SIZE": meta.get("BLOCK_SIZE", 4096)})


def _configs(family: str) -> tuple[dict, ...]:
    stages = (1, 2) if family == "amd" else (2, 3)
    return tuple({"BLOCK_SIZE": b, "num_warps": w, "num_stages": s} for b in (2048, 4096, 8192) for w in (8, 16)
                 for s in stages)

SPEC = register(KernelSpec(
    name="cross_entropy",
    description="fused cross-entropy: per-row loss and lse, and the logits gradient, online logsumexp over V",
    dims=(Dim("M", interpret_max=6, gpu_max=2048, nightly_max=8192, blocks=(1,)),
          Dim("V", interpret_max=3000, gpu_max=131072, nightly_max=262144, blocks=(256, 4096))),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "masked", "nan", "subnormal"),
    make_inputs=_make_inputs,
    outputs=("loss", "lse", "grad"),
    make_outputs=lambda inp, case: {
        "loss": torch.empty(inp["logits"].shape[0], dtype=torch.float32, device=inp["logits"].device),
        "lse": torch.empty(inp["logits"].shape[0], dtype=torch.float32, device=inp["logits"].device),
        "grad": torch.empty(inp["logits"].shape, dtype=inp["logits"].dtype, device=inp["logits"].device)},
    run=lambda inp, out, cfg: cross_entropy(inp["logits"], inp["target"], inp["grad_loss"], out, cfg),
    reference=_reference,
    tolerance=Tolerance(reduction=lambda case: case.shape["V"], magnitude=_magnitude, safety=4.0),
    flops=lambda case: 8.0 * case.shape["M"] * case.shape["V"],
    min_bytes=lambda case: case.shape["M"] * (2.0 * case.shape["V"] * DTYPES[case.dtype].itemsize + 8 + 4 + 4 + 4),
    torch_baseline=_torch_baseline,
    default_config={"nvidia": {}, "amd": {"num_stages": 2}, "interpret": {"BLOCK_SIZE": 256}},
    paths=paths.block_loop("V", lambda case, cfg: int(cfg.get("BLOCK_SIZE") or min(next_power_of_2(case.shape["V"]), 4096))),
    configs={"interpret": tuple({"BLOCK_SIZE": b} for b in (64, 128, 512)), "nvidia": _configs("nvidia"),
             "amd": _configs("amd")},
    benchmark_shapes=({"M": 4096, "V": 32768}, {"M": 4096, "V": 131072}, {"M": 1024, "V": 262144}),
    # "large" logits (spread ~1000) across many blocks, where a missing online rescale is off by far;
    # one column; -inf logits (an all -inf row, -inf targets) in ragged padded rows; NaN rows.
    examples=({"shape": {"M": 6, "V": 2049}, "values": "large", "seed": 1},
              {"shape": {"M": 4, "V": 1}, "values": "masked", "seed": 3},
              {"shape": {"M": 6, "V": 257}, "layout": "padded_rows", "values": "masked", "seed": 2},
              {"shape": {"M": 5, "V": 700}, "values": "nan", "seed": 4}),
    compile_signature=_signature,
    batch_dim="M", batch_inputs=("logits", "target", "grad_loss"), batch_outputs=("loss", "lse", "grad"),
    jit_fn=cross_entropy_kernel,
))
