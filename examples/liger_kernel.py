"""Specs for three kernels of the real Liger-Kernel package (``pip install --no-deps liger-kernel==0.8.5``): RMSNorm
forward, SwiGLU forward and backward, fused cross-entropy.

    pytest --backend=interpret --kernel-module=examples/liger_kernel.py --kernels='liger_*'

Nothing of Liger's code is copied here: each spec launches Liger's own ``@triton.jit`` functions, as Liger's
launchers in ``liger_kernel.ops`` do, but on the suite's tensors. Liger's launchers allocate their outputs
themselves (``torch.empty``), and an output the suite did not allocate has no guard regions and no poison; the
launch arguments and settings below follow liger_kernel/ops/{rms_norm,swiglu,cross_entropy}.py of 0.8.5.

Liger writes two of its results in place: SwiGLU's backward overwrites its inputs ``a`` and ``b`` with their
gradients, and cross-entropy writes the logits' gradient into the logits. Those outputs start as copies of the
inputs (``initial_outputs``); cross-entropy's loss starts at zero, since an ignored row writes no loss.
"""

from __future__ import annotations

from importlib import metadata

import torch
import triton

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, CodePath, Dim, JitKernel, KernelSpec, KnownIssue, Tolerance, signature

LIGER_VERSION = "0.8.5"
try:
    _installed = metadata.version("liger-kernel")
except metadata.PackageNotFoundError:
    raise ModuleNotFoundError(f"examples/liger_kernel.py needs liger-kernel=={LIGER_VERSION}: pip install --no-deps "
                              f"liger-kernel=={LIGER_VERSION} (its dependencies are torch and triton, already here)"
                              ) from None
if _installed != LIGER_VERSION:
    raise ImportError(f"examples/liger_kernel.py launches liger-kernel {LIGER_VERSION}'s kernels with their 0.8.5 "
                      f"arguments; found liger-kernel {_installed}: pip install --no-deps liger-kernel=={LIGER_VERSION}")

from liger_kernel.ops import cross_entropy as liger_ce  # noqa: E402 - after the version check
from liger_kernel.ops import rms_norm as liger_rms  # noqa: E402
from liger_kernel.ops import swiglu as liger_swiglu  # noqa: E402
from liger_kernel.ops.utils import calculate_settings  # noqa: E402

ROWS = Dim("M", interpret_max=8, gpu_max=4096, nightly_max=16384, blocks=(1,))  # a program per row
# RMSNorm's block kernel takes 16 rows a program: M reaches past one such block on the interpreter too.
RMS_ROWS = Dim("M", interpret_max=20, gpu_max=4096, nightly_max=16384, blocks=(16,))


# The warps Liger launches a 4096-wide row with (calculate_settings), which the compile matrix compiles; on the
# interpreter the launcher picks them per row width, as Liger's does.
LIGER_4096_WARPS = {"nvidia": {"num_warps": 8}, "amd": {"num_warps": 8}, "interpret": {}}


def _warps(cfg: dict | None, n_cols: int) -> tuple[int, int]:
    """Liger's block size for a row of n_cols, and its warps unless the config names them."""
    block, warps = calculate_settings(n_cols)
    return block, int((cfg or {}).get("num_warps", warps))


def _row_major(case: Case, device: str, gen: torch.Generator, cols: str) -> torch.Tensor:
    return inputs.place(inputs.values((case.shape["M"], case.shape[cols]), case, gen), case, device)


# --- RMSNorm forward (Llama casting: statistics in fp32, x * rstd rounded to x's dtype, then times w) -------------

RMS_EPS = 1e-6
LLAMA = liger_rms._str_to_casting_mode["llama"]


def rms_norm(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, rstd: torch.Tensor, cfg: dict | None) -> None:
    """liger_kernel.ops.rms_norm.rms_norm_forward on our tensors. A config with BLOCK_ROW takes the block kernel
    (Liger's choice for narrow rows of many-row inputs), else the row kernel."""
    n_rows, n_cols = x.shape
    block, warps = _warps(cfg, n_cols)
    if (cfg or {}).get("BLOCK_ROW"):
        rows = int(cfg["BLOCK_ROW"])
        liger_rms._block_rms_norm_forward_kernel[(triton.cdiv(n_rows, rows),)](
            y, y.stride(0), x, x.stride(0), w, w.stride(0), rstd, rstd.stride(0), n_rows, n_cols, RMS_EPS, 0.0,
            LLAMA, elementwise_affine=True, BLOCK_SIZE=block, BLOCK_ROW=rows, num_warps=warps)
    else:
        liger_rms._rms_norm_forward_kernel[(n_rows,)](
            y, y.stride(0), x, x.stride(0), w, w.stride(0), rstd, rstd.stride(0), n_cols, RMS_EPS, 0.0, LLAMA,
            elementwise_affine=True, BLOCK_SIZE=block, num_warps=warps)


def _rms_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    x = _row_major(case, device, gen, "N")
    w = torch.randn(case.shape["N"], generator=gen, dtype=torch.float64) * 0.5 + 1.0
    return {"x": x, "w": inputs.place(w, case, device)}


def _rms_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    x = inp["x"].double()
    rstd = torch.rsqrt((x * x).mean(dim=-1) + RMS_EPS)
    return {"y": x * rstd[:, None] * inp["w"].double(), "rstd": rstd}


def _rms_signature(kernel: str):
    def make(dtype: str, meta: dict) -> tuple[dict, dict]:
        fn = liger_rms._block_rms_norm_forward_kernel if kernel == "block" else liger_rms._rms_norm_forward_kernel
        types = {"Y_ptr": f"*{dtype}", "X_ptr": f"*{dtype}", "W_ptr": f"*{dtype}", "RSTD_ptr": "*fp32",
                 **{s: "i32" for s in ("Y_row_stride", "X_row_stride", "n_rows", "n_cols")}, "eps": "fp32",
                 "offset": "fp32"}
        # The launch passes unit strides for w and rstd, which the JIT specializes to the constant 1.
        constexprs = {"W_row_stride": 1, "RSTD_row_stride": 1, "casting_mode": LLAMA, "elementwise_affine": True,
                      "BLOCK_SIZE": meta.get("BLOCK_SIZE", 4096)}
        if kernel == "block":  # Liger takes the block kernel only for rows of 256 or fewer
            constexprs.update(BLOCK_SIZE=meta.get("BLOCK_SIZE", 256), BLOCK_ROW=meta.get("BLOCK_ROW", 16))
        return signature(fn, {k: v for k, v in types.items() if k in fn.arg_names}, constexprs)
    return make


register(KernelSpec(
    name="liger_rms_norm",
    description="Liger RMSNorm forward (Llama casting, offset 0): y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps)",
    dims=(RMS_ROWS, Dim("N", interpret_max=600, gpu_max=8192, nightly_max=32768, blocks=(256,))),
    dtypes=("fp32", "fp16", "bf16"),
    value_classes=("normal", "large", "negative"),
    make_inputs=_rms_inputs,
    outputs=("y", "rstd"),
    make_outputs=lambda inp, case: {"y": torch.empty_like(inp["x"]),
                                    "rstd": torch.empty(inp["x"].shape[0], dtype=torch.float32,
                                                        device=inp["x"].device)},
    run=lambda inp, out, cfg: rms_norm(inp["x"], inp["w"], out["y"], out["rstd"], cfg),
    reference=_rms_reference,
    # A sum of squares has no cancellation; x * rstd is rounded to x's dtype before the weight: a second rounding.
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], safety=8.0),
    flops=lambda case: 4.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: (2.0 * case.shape["M"] * case.shape["N"] + case.shape["N"]) * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.nn.functional.rms_norm(inp["x"], inp["x"].shape[-1:], inp["w"], RMS_EPS),
    default_config=LIGER_4096_WARPS,
    configs={"interpret": ({"BLOCK_ROW": 16},), "nvidia": ({"BLOCK_ROW": 16, "num_warps": 8},),
             "amd": ({"BLOCK_ROW": 16, "num_warps": 8},)},
    paths=(CodePath("block_kernel", "Liger's block kernel (16 rows per program) instead of the row kernel",
                    lambda case, cfg: bool(cfg.get("BLOCK_ROW"))),),
    benchmark_shapes=({"M": 4096, "N": 4096}, {"M": 16384, "N": 8192}),
    batch_dim="M", batch_inputs=("x",), batch_outputs=("y", "rstd"),
    jit_fns=(JitKernel(liger_rms._rms_norm_forward_kernel, _rms_signature("row")),
             JitKernel(liger_rms._block_rms_norm_forward_kernel, _rms_signature("block"))),
    known_issues=(KnownIssue(
        id="liger-rms-norm-weight-stride",
        reason="Liger's RMSNorm kernels load W at W_ptr + col, never reading W_row_stride, and its launcher takes any "
               "W: a broadcast weight (w[:1].expand(N), stride 0) is read from its storage as if contiguous, so y "
               "is scaled by the wrong weights (docs/third-party.md, Liger-Kernel).",
        # the contract probe's finding: the broadcast layout (x and w re-laid), and y off the reference
        failure_pattern=(r"restride 'broadcast' .*: x, w\), and is wrong on it: (with config \{[^}]*\}: )?(y: |"
                         r"out-of-bounds load in kernel _(block_)?rms_norm_forward_kernel .* reads argument 'W_ptr')"),
        link="docs/third-party.md"),),
))


# --- SwiGLU forward and backward: c = silu(a) * b; the backward writes da into a and db into b ---------------------

def swiglu(inp: dict, out: dict, cfg: dict | None) -> None:
    """liger_kernel.ops.swiglu.swiglu_forward, then swiglu_backward with in-place gradients (Liger's one-row layout;
    the column-tiled one is taken on Blackwell GPUs only)."""
    a, n_cols = inp["a"], inp["a"].shape[1]
    block, warps = _warps(cfg, n_cols)
    grid = (a.shape[0],)
    liger_swiglu._swiglu_forward_kernel[grid](a, inp["b"], out["c"], out["c"].stride(-2), 1.0, n_cols=n_cols,
                                              BLOCK_SIZE=block, num_warps=warps)
    liger_swiglu._swiglu_backward_kernel[grid](inp["dc"], out["da"], out["db"], inp["dc"].stride(-2), 1.0,
                                               n_cols=n_cols, BLOCK_SIZE=block, num_warps=warps)


def _swiglu_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    return {name: _row_major(case, device, gen, "N") for name in ("a", "b", "dc")}


def _swiglu_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    a, b, dc = (inp[k].double() for k in ("a", "b", "dc"))
    sig = torch.sigmoid(a)
    return {"c": a * sig * b, "da": dc * (a * sig * (1 - sig) + sig) * b, "db": dc * a * sig}


def _swiglu_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    # da sums two terms of opposite sign where a < 0; each term's size bounds the rounding.
    a, b, dc = (inp[k].double() for k in ("a", "b", "dc"))
    sig = torch.sigmoid(a)
    return {"da": (dc * b).abs() * ((a * sig * (1 - sig)).abs() + sig)}


def _swiglu_signature(kernel: str):
    def make(dtype: str, meta: dict) -> tuple[dict, dict]:
        fn = liger_swiglu._swiglu_backward_kernel if kernel == "backward" else liger_swiglu._swiglu_forward_kernel
        ptrs = ("dc_ptr", "a_ptr", "b_ptr") if kernel == "backward" else ("a_ptr", "b_ptr", "c_ptr")
        # n_cols is a constexpr in Liger's kernels: compiled for a 4096-wide row, as the benchmark shape's.
        return signature(fn, {**{p: f"*{dtype}" for p in ptrs}, "stride": "i32", "gate_multiplier": "fp32"},
                         {"n_cols": 4096, "BLOCK_SIZE": meta.get("BLOCK_SIZE", 4096)})
    return make


register(KernelSpec(
    name="liger_swiglu",
    description="Liger SwiGLU: c = silu(a) * b, and its backward in place (da into a, db into b)",
    dims=(ROWS, Dim("N", interpret_max=600, gpu_max=14336, nightly_max=28672, blocks=(256,))),
    dtypes=("fp32", "fp16", "bf16"),
    value_classes=("normal", "large", "negative"),
    make_inputs=_swiglu_inputs,
    outputs=("c", "da", "db"),
    make_outputs=lambda inp, case: {name: torch.empty_like(inp["a"]) for name in ("c", "da", "db")},
    initial_outputs={"da": "a", "db": "b"},
    run=swiglu,
    reference=_swiglu_reference,
    tolerance=Tolerance(),
    output_tolerances={"da": Tolerance(magnitude=_swiglu_magnitude)},
    flops=lambda case: 20.0 * case.shape["M"] * case.shape["N"],
    min_bytes=lambda case: 7.0 * case.shape["M"] * case.shape["N"] * DTYPES[case.dtype].itemsize,
    default_config=LIGER_4096_WARPS,
    benchmark_shapes=({"M": 4096, "N": 4096}, {"M": 8192, "N": 14336}),
    batch_dim="M", batch_inputs=("a", "b", "dc"), batch_outputs=("c", "da", "db"),
    # Not drawn: Liger's kernels step a, b and c (dc, da, db) by one row stride; tried once per test as undeclared.
    refused_layouts={"aligned_slice": "Liger's swiglu kernels step every tensor by one row stride "
                                      "(known issue liger-swiglu-one-row-stride)"},
    jit_fns=(JitKernel(liger_swiglu._swiglu_forward_kernel, _swiglu_signature("forward")),
             JitKernel(liger_swiglu._swiglu_backward_kernel, _swiglu_signature("backward"))),
    known_issues=(KnownIssue(
        id="liger-swiglu-silu-underflow", dtype="fp32",
        reason="Liger computes silu(a) as a * tl.sigmoid(a), and sigmoid as 1 / (1 + exp(-a)): for a < -88.7 exp "
               "overflows fp32 (bf16 has fp32's exponent range, and Liger computes in fp32) and silu(a) becomes 0 "
               "where fp32 still holds it (a = -90, b = 100: c = -0.0 against "
               "-7.37e-36; da and db likewise). Seen on the 'negative' value class (a, b, dc near -100): "
               "--repro='M=1,N=2;layout=contiguous;values=negative;seed=0' gives da 0.0 against -1.24e-38. "
               "torch.nn.functional.silu in fp32 on the CPU flushes the same way; the suite's own swiglu computes "
               "sigmoid from exp(-|a|) and keeps these values.",
        # what the bug does: silu(a) is 0, so an output is (-)0.0 where the reference is not, whatever the reference
        # (a range of its exponents missed a draw whose reference was -2.6e-36, an fp32 normal)
        failure_pattern=r"\(got -?0\.0, reference ",
        link="examples/liger_kernel.py"),
        KnownIssue(
        id="liger-swiglu-silu-underflow-bf16", dtype="bf16",
        reason="liger-swiglu-silu-underflow in bf16: Liger widens a to fp32 for silu, so exp(-a) overflows there for "
               "a < -88.7 alike (bf16 has fp32's exponent range) and silu(a) becomes 0 where the reference is not. "
               "Hidden on the interpreter while it did bf16 arithmetic on bit patterns; seen once it computed bf16 "
               "as a GPU does (docs/checks.md, bf16 on the interpreter): da 0.0 against -3.98e-38.",
        failure_pattern=r"\(got -?0\.0, reference ",
        link="examples/liger_kernel.py"),
        KnownIssue(
        id="liger-swiglu-silu-fp16-rounding", dtype="fp16",
        reason="Liger rounds silu(a) to b's dtype before the product (silu(a_row).cast(b_row.dtype) * b_row): in fp16 a "
               "silu(a) below half of fp16's smallest subnormal (a < -17.5 or so) becomes 0, and c = 0 where silu(a) "
               "* b is an fp16 value (b in the thousands, the 'large' value class): --repro='M=4,N=127;layout="
               "contiguous;values=large;seed=3' gives c -0.0 against -1.61e-06.",
        failure_pattern=r"\(got -?0\.0, reference ",
        link="examples/liger_kernel.py"),
        KnownIssue(
        id="liger-swiglu-one-row-stride",
        reason="Liger's swiglu kernels step a, b and c by one row stride (c's; the backward: dc's for dc, a, b) and "
               "its launcher takes any a and b: a or b with another row stride (a slice of a fused [M, 2N] "
               "projection, a padded row) is read at the wrong rows (docs/third-party.md, Liger-Kernel).",
        # the contract probe's finding: a layout of the three inputs (or outputs) other than c's, and wrong on it
        failure_pattern=r"restride '\w+' .*: (a, b, dc|output c, output da, output db)\), and is wrong on it",
        link="docs/third-party.md"),),
))


# --- Cross-entropy, reduction 'mean': per-row loss / n_valid, gradient in place of the logits ----------------------

IGNORE_INDEX = -100


def cross_entropy(inp: dict, out: dict, cfg: dict | None) -> None:
    """liger_kernel.ops.cross_entropy.cross_entropy_forward (no weight, smoothing, z-loss or softcap; the gradient
    is computed, as in training) on our tensors: the gradient lands in ``grad``, a copy of the logits."""
    logits, target = out["grad"], inp["target"]
    n_rows, n_cols = logits.shape
    n_valid = int((target != IGNORE_INDEX).sum())
    block = min(liger_ce.MAX_FUSED_SIZE, triton.next_power_of_2(n_cols))
    liger_ce.liger_cross_entropy_kernel[(n_rows,)](
        X_ptr=logits, X_stride=logits.stride(-2), Y_ptr=target, Y_stride=target.stride(-1), weight_ptr=None,
        loss_ptr=out["loss"], z_loss_ptr=None, loss_stride=out["loss"].stride(-1), token_accuracy_ptr=None,
        token_accuracy_stride=0, predicted_tokens_ptr=None, predicted_tokens_stride=0, n_cols=n_cols,
        n_non_ignore=n_valid, sum_non_ignore_weight=n_valid, weight_sum=0.0, ignore_index=IGNORE_INDEX,
        lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None, RETURN_Z_LOSS=False,
        RETURN_TOKEN_ACCURACY=False, RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=int((cfg or {}).get("BLOCK_SIZE", block)),
        HAS_WEIGHT=False, HAS_SOFTCAPPING=False, HAS_GRADIENTS=True, num_warps=int((cfg or {}).get("num_warps", 32)))


def _ce_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    """Logits of the value class; targets from the seed, the first row on the last column; about a quarter of the
    rows, and every row 2 mod 4, ignored."""
    gen = inputs.generator(case)
    m, v = case.shape["M"], case.shape["V"]
    target = torch.randint(0, v, (m,), generator=gen)
    target[:1] = v - 1
    target[(torch.rand(m, generator=gen) < 0.25) | (torch.arange(m) % 4 == 2)] = IGNORE_INDEX
    return {"logits": _row_major(case, device, gen, "V"), "target": target.to(device)}


def _ce_parts(inp: dict) -> tuple[torch.Tensor, ...]:
    x = inp["logits"].double()
    valid = inp["target"] != IGNORE_INDEX
    target = torch.where(valid, inp["target"], 0)
    lse = torch.logsumexp(x, dim=-1)
    n_valid = max(int(valid.sum()), 1)
    return x, valid, target, lse, n_valid


def _ce_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    x, valid, target, lse, n_valid = _ce_parts(inp)
    loss = (lse - x.gather(1, target[:, None])[:, 0]) / n_valid
    grad = (torch.exp(x - lse[:, None]) - torch.nn.functional.one_hot(target, x.shape[1]).double()) / n_valid
    return {"loss": torch.where(valid, loss, 0.0), "grad": torch.where(valid[:, None], grad, 0.0)}


def _ce_loss_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    # loss = lse - x[target]: a difference of two larger numbers; an error e in lse moves the loss by e.
    x, valid, target, lse, n_valid = _ce_parts(inp)
    size = (1.0 + lse.abs() + x.gather(1, target[:, None])[:, 0].abs()) / n_valid
    return {"loss": torch.where(valid, size, 0.0)}


def _ce_grad_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    # An error e in lse (or in exp2's argument, which grows with |x - max|) moves each probability by about p * e.
    x, valid, target, lse, n_valid = _ce_parts(inp)
    prob = torch.exp(x - lse[:, None])
    size = (prob * (1.0 + lse.abs()[:, None] + x.abs()) + (ref["grad"] * n_valid).abs()) / n_valid
    return {"grad": torch.where(valid[:, None], size, 0.0)}


def _ce_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    fn = liger_ce.liger_cross_entropy_kernel
    types = {"X_ptr": f"*{dtype}", "Y_ptr": "*i64", "loss_ptr": f"*{dtype}", "X_stride": "i32",
             "token_accuracy_stride": "i32", "predicted_tokens_stride": "i32", "n_cols": "i32", "n_non_ignore": "i32",
             "sum_non_ignore_weight": "i32", "weight_sum": "fp32", "ignore_index": "i32"}
    # None pointers and unit strides are constants of the launch, as the JIT specializes them.
    constexprs = {"Y_stride": 1, "loss_stride": 1, "weight_ptr": None, "z_loss_ptr": None, "token_accuracy_ptr": None,
                  "predicted_tokens_ptr": None,
                  "lse_square_scale": 0.0, "label_smoothing": 0.0, "reduction": "mean", "softcap": None,
                  "RETURN_Z_LOSS": False, "RETURN_TOKEN_ACCURACY": False, "RETURN_PREDICTED_TOKENS": False,
                  "BLOCK_SIZE": meta.get("BLOCK_SIZE", 32768), "HAS_WEIGHT": False, "HAS_SOFTCAPPING": False,
                  "HAS_GRADIENTS": True}
    return signature(fn, types, constexprs)


def _ce_block(case: Case, cfg: dict) -> int:
    return int(cfg.get("BLOCK_SIZE") or min(liger_ce.MAX_FUSED_SIZE, triton.next_power_of_2(case.shape["V"])))


register(KernelSpec(
    name="liger_cross_entropy",
    description="Liger fused cross-entropy, reduction 'mean': per-row loss / n_valid, and the logits' gradient "
                "written in place of the logits",
    dims=(ROWS, Dim("V", interpret_max=3000, gpu_max=131072, nightly_max=262144, blocks=(256, 1024))),
    dtypes=("fp32", "fp16", "bf16"),
    value_classes=("normal", "large"),
    make_inputs=_ce_inputs,
    outputs=("loss", "grad"),
    make_outputs=lambda inp, case: {"loss": torch.empty(inp["logits"].shape[0], dtype=inp["logits"].dtype,
                                                        device=inp["logits"].device),
                                    "grad": torch.empty_like(inp["logits"])},
    initial_outputs={"grad": "logits", "loss": 0.0},
    run=cross_entropy,
    reference=_ce_reference,
    output_tolerances={
        "loss": Tolerance(reduction=lambda case: case.shape["V"], magnitude=_ce_loss_magnitude),
        "grad": Tolerance(reduction=lambda case: case.shape["V"], magnitude=_ce_grad_magnitude)},
    flops=lambda case: 8.0 * case.shape["M"] * case.shape["V"],
    min_bytes=lambda case: case.shape["M"] * (2.0 * case.shape["V"] * DTYPES[case.dtype].itemsize + 8),
    # Liger's warps: 32 on NVIDIA (before Blackwell), 16 on AMD.
    default_config={"nvidia": {"num_warps": 32}, "amd": {"num_warps": 16}, "interpret": {}},
    configs={"interpret": ({"BLOCK_SIZE": 256}, {"BLOCK_SIZE": 1024}), "nvidia": ({"BLOCK_SIZE": 4096, "num_warps": 32},),
             "amd": ({"BLOCK_SIZE": 4096, "num_warps": 16},)},
    paths=paths.block_loop("V", _ce_block),
    benchmark_shapes=({"M": 4096, "V": 32768}, {"M": 4096, "V": 131072}),
    # "large" logits (spread ~1000) over several blocks of a long row, where the online rescale matters.
    examples=({"shape": {"M": 6, "V": 2049}, "values": "large", "seed": 1},),
    # No batch invariance: with reduction 'mean' every row is divided by the batch's count of valid rows.
    jit_fns=(JitKernel(liger_ce.liger_cross_entropy_kernel, _ce_signature),),
))
