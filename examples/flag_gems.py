"""Specs for eight LLM workhorse ops of the real FlagGems package (``pip install --no-deps flag-gems==5.0.2
sqlalchemy==2.0.44 pyyaml==6.0.3``): softmax, layer_norm, rms_norm, rotary embedding (standard and interleaved),
cumsum, embedding, topk and cross_entropy_loss.

    pytest --backend=interpret --kernel-module=examples/flag_gems.py --kernels='fg_*'

Nothing of FlagGems is copied here: each spec's ``run`` calls FlagGems' own launcher (``flag_gems.ops.softmax``,
``flag_gems.fused.apply_rotary_pos_emb``, ...), which allocates its outputs and launches FlagGems' kernels; ``run``
returns those outputs (``make_outputs=None``), so the guard regions and the never-written check do not apply to them
(recorded as unchecked) and the interpreter's memory checker alone sees a store past their end.

Inputs are drawn as FlagGems' users pass them. The other launchers call ``.contiguous()`` on their inputs or pass
their strides (rotary), and their specs draw contiguous ones; topk's does neither, and its rows are also drawn sliced
from a wider buffer
(``padded_rows``) and as masked logits (``masked``: entries at -inf, some rows with fewer than K above -inf);
cumsum is drawn along either dim (FlagGems' row scan and its column scan). Three of FlagGems' bugs are met there
and declared as known issues, each with a reproduction without the suite (docs/third-party.md): topk reads rows N
apart whatever their stride; topk returns its fills (-3.4e38, an index past the row or -2147483648) for a row's
-inf entries; the bf16 column scan rounds twice past 4096 rows.

FlagGems as it ships cannot be imported without a GPU, and its launch cache and tuner would take launches out of
the suite's hands: the suite changes six things of its runtime (never a kernel or a launcher) when it is imported,
named in the session header and the run file (suite/checks/libraries.py, docs/third-party.md).

What the interpreter cannot check here: FlagGems' cross-entropy kernels build masks with Python ``and``/``not`` on
tensors, which Triton 3.6's interpreter evaluates as Python does (``a and b`` is ``b``, ``not t`` is False), so their
masks are dropped there; compiled, Triton lowers them elementwise. The suite finds the construct in the kernel's
source and does not run fg_cross_entropy's tests on the interpreter ("not checkable"): the run ends UNCHECKED (exit
6) naming its three dtypes as never checked. The known issues declared with the spec describe the read past the row
it would fail with, should it run there; on a GPU the spec is checked as any other.
"""

from __future__ import annotations

import importlib
import math
import warnings
from importlib import metadata

import torch

from kernels import inputs
from kernels.registry import register
from kernels.spec import (
    DTYPES,
    FAMILIES,
    Case,
    CodePath,
    Dim,
    IndexOutput,
    KernelSpec,
    KnownIssue,
    Property,
    Tolerance,
    autotune_config_space,
)

FLAG_GEMS_VERSION = "5.0.2"
try:
    _installed = metadata.version("flag-gems")
except metadata.PackageNotFoundError:
    raise ModuleNotFoundError(f"examples/flag_gems.py needs flag-gems=={FLAG_GEMS_VERSION}: pip install --no-deps "
                              f"flag-gems=={FLAG_GEMS_VERSION} sqlalchemy==2.0.44 pyyaml==6.0.3 (its other "
                              f"dependencies, torch, numpy and packaging, are already here)") from None
if _installed != FLAG_GEMS_VERSION:
    raise ImportError(f"examples/flag_gems.py calls flag-gems {FLAG_GEMS_VERSION}'s launchers; found flag-gems "
                      f"{_installed}: pip install --no-deps flag-gems=={FLAG_GEMS_VERSION}")

# FlagGems' device_info warns three times at import where torch sees no GPU (its fallbacks are what run here).
warnings.filterwarnings("ignore", message=r"\[device_info\] Failed to get", category=UserWarning)
import flag_gems  # noqa: E402,F401 - after the version check; the suite's import hook adapts its runtime
from flag_gems import fused as fg_fused  # noqa: E402
from flag_gems import ops as fg_ops  # noqa: E402

# The modules (flag_gems.ops.rms_norm is also the name of a function there).
fg_layernorm = importlib.import_module("flag_gems.ops.layernorm")
fg_rms = importlib.import_module("flag_gems.ops.rms_norm")

ROWS = Dim("M", interpret_max=4, gpu_max=4096, nightly_max=16384, blocks=(1,))  # a program per row
FLOATS = ("fp32", "fp16", "bf16")


def _rows(case: Case, device: str, gen, cols: str = "N") -> torch.Tensor:
    return inputs.place(inputs.values((case.shape["M"], case.shape[cols]), case, gen), case, device)


def _vector(case: Case, device: str, gen, n: int, scale: float = 0.5, shift: float = 1.0) -> torch.Tensor:
    return inputs.place(torch.randn(n, generator=gen, dtype=torch.float64) * scale + shift, case, device)


def _tuned(*kernels) -> dict:
    """The configs of FlagGems' @triton.autotune kernels a launcher runs (its tune_configs.yaml), for every family:
    the suite runs them in turn (one kernel's as they are, several's each named by its kernel)."""
    space = autotune_config_space(*kernels)
    return {"configs": {family: space for family in FAMILIES}, "default_config": {family: dict(space[0])
                                                                                  for family in FAMILIES}}


def _bytes(*factors: float):
    return lambda case: factors[0] * case.shape["M"] * case.shape[list(case.shape)[1]] * DTYPES[case.dtype].itemsize


# --- softmax over the last dim: flag_gems.ops.softmax (softmax_kernel_inner, one row per program) -----------------

def _softmax_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    return {"out": torch.softmax(inp["x"].double(), dim=-1)}


def _softmax_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    # exp(x - max) is off by about |x - max| units of roundoff.
    x = inp["x"].double()
    t = (x - x.max(dim=-1, keepdim=True).values).abs()
    return {"out": ref["out"].abs() * (1.0 + torch.where(torch.isfinite(t), t, 0.0))}


register(KernelSpec(
    name="fg_softmax",
    description="FlagGems softmax over the last dim (flag_gems.ops.softmax)",
    dims=(ROWS, Dim("N", interpret_max=1100, gpu_max=16384, nightly_max=32768, blocks=(16, 128, 1024))),
    dtypes=FLOATS,
    value_classes=("normal", "large", "negative"),
    make_inputs=lambda case, device: {"x": _rows(case, device, inputs.generator(case))},
    outputs=("out",),
    make_outputs=None,
    run=lambda inp, out, cfg: fg_ops.softmax(inp["x"], -1),
    reference=_softmax_reference,
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], magnitude=_softmax_magnitude, safety=8.0),
    flops=lambda case: 5.0 * case.shape["M"] * case.shape["N"],
    min_bytes=_bytes(2.0),
    torch_baseline=lambda inp: torch.softmax(inp["x"], dim=-1),
    benchmark_shapes=({"M": 4096, "N": 4096},),
    batch_dim="M", batch_inputs=("x",), batch_outputs=("out",),
))


# --- layer_norm: flag_gems.ops.layer_norm -> (y, mean, rstd); three kernels by row width -------------------------

LN_EPS = 1e-5


def _ln_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    n = case.shape["N"]
    return {"x": _rows(case, device, gen), "w": _vector(case, device, gen, n), "b": _vector(case, device, gen, n,
                                                                                               shift=0.0)}


def _ln_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    x = inp["x"].double()
    mean = x.mean(dim=-1)
    rstd = torch.rsqrt(((x - mean[:, None]) ** 2).mean(dim=-1) + LN_EPS)
    y = (x - mean[:, None]) * rstd[:, None] * inp["w"].double() + inp["b"].double()
    return {"y": y, "mean": mean, "rstd": rstd}


def _ln_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    # The mean of a row that cancels is small against its terms; y's terms are |x - mean| * rstd * |w| and |b|.
    x = inp["x"].double()
    rstd = ref["rstd"][:, None]
    xhat = (x - ref["mean"][:, None]).abs() * rstd
    return {"mean": x.abs().mean(dim=-1),
            "y": (xhat + 1.0 + x.abs() * rstd) * inp["w"].double().abs() + inp["b"].double().abs()}


register(KernelSpec(
    name="fg_layer_norm",
    description="FlagGems layer_norm over the last dim, with weight and bias: y, and the row mean and rstd it saves",
    # N <= 128: several rows a program; N <= 4096: a row a program; wider: the looping kernel.
    dims=(ROWS, Dim("N", interpret_max=4400, gpu_max=16384, nightly_max=32768, blocks=(128, 4096))),
    dtypes=FLOATS,
    value_classes=("normal", "large", "negative"),
    make_inputs=_ln_inputs,
    outputs=("y", "mean", "rstd"),
    make_outputs=None,
    run=lambda inp, out, cfg: fg_ops.layer_norm(inp["x"], [inp["x"].shape[-1]], inp["w"], inp["b"], LN_EPS),
    reference=_ln_reference,
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], magnitude=_ln_magnitude, safety=8.0),
    flops=lambda case: 8.0 * case.shape["M"] * case.shape["N"],
    min_bytes=_bytes(2.0),
    benchmark_shapes=({"M": 4096, "N": 4096},),
    batch_dim="M", batch_inputs=("x",), batch_outputs=("y", "mean", "rstd"),
    # Three @triton.autotune kernels, each with configs of its own (warps; the loop's TILE_N and warps): every
    # config names each kernel's settings, and every config of each runs.
    **_tuned(fg_layernorm.layer_norm_persistent_kernel_multiline, fg_layernorm.layer_norm_persistent_kernel,
             fg_layernorm.layer_norm_loop_kernel),
))


# --- rms_norm: flag_gems.ops.rms_norm_forward -> (y, inv_rms) --------------------------------------------------------

RMS_EPS = 1e-6


def _rms_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    return {"x": _rows(case, device, gen), "w": _vector(case, device, gen, case.shape["N"])}


def _rms_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    x = inp["x"].double()
    rstd = torch.rsqrt((x * x).mean(dim=-1) + RMS_EPS)
    return {"y": x * rstd[:, None] * inp["w"].double(), "inv_rms": rstd}


register(KernelSpec(
    name="fg_rms_norm",
    description="FlagGems rms_norm forward: y = x * rstd * w, and the rstd it saves",
    dims=(ROWS, Dim("N", interpret_max=4400, gpu_max=16384, nightly_max=32768, blocks=(128, 4096))),
    dtypes=FLOATS,
    value_classes=("normal", "large", "negative"),
    make_inputs=_rms_inputs,
    outputs=("y", "inv_rms"),
    make_outputs=None,
    run=lambda inp, out, cfg: fg_ops.rms_norm_forward(inp["x"], [inp["x"].shape[-1]], inp["w"], RMS_EPS),
    reference=_rms_reference,
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], safety=8.0),
    flops=lambda case: 4.0 * case.shape["M"] * case.shape["N"],
    min_bytes=_bytes(2.0),
    benchmark_shapes=({"M": 4096, "N": 4096},),
    batch_dim="M", batch_inputs=("x",), batch_outputs=("y", "inv_rms"),
    **_tuned(fg_rms.rms_norm_loop_kernel),  # rows up to 4096 wide take rms_norm_kernel, not autotuned
))


# --- rotary embedding: flag_gems.fused.apply_rotary_pos_emb (q, k by token, head, head_dim; cos/sin by position) ---

def _rope_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    t, d = case.shape["T"], case.shape["D"]
    q = inputs.place(inputs.values((t, 4, d), case, gen), case, device)
    k = inputs.place(inputs.values((t, 2, d), case, gen), case, device)
    angle = torch.rand((t + 3, d // 2), generator=gen, dtype=torch.float64) * 6.283185307179586
    positions = torch.randint(0, t + 3, (t,), generator=gen)
    return {"q": q, "k": k, "cos": inputs.place(torch.cos(angle), case, device),
            "sin": inputs.place(torch.sin(angle), case, device), "positions": positions.to(device)}


def _rope_reference(interleaved: bool):
    def reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
        pos = inp["positions"].long()
        cos, sin = inp["cos"].double()[pos][:, None, :], inp["sin"].double()[pos][:, None, :]
        out = {}
        for name in ("q", "k"):
            x = inp[name].double()
            if interleaved:  # pairs (x[2i], x[2i+1]) rotate by angle i
                even, odd = x[..., 0::2], x[..., 1::2]
                y = torch.stack((even * cos - odd * sin, odd * cos + even * sin), dim=-1).flatten(-2)
            else:  # halves (x[i], x[i + d/2]) rotate by angle i
                half = x.shape[-1] // 2
                lo, hi = x[..., :half], x[..., half:]
                y = torch.cat((lo * cos - hi * sin, hi * cos + lo * sin), dim=-1)
            out[f"{name}_embed"] = y
        return out
    return reference


def _rope_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    # Each element is a sum of two products that may cancel: bound by the sizes of its terms.
    out = {}
    for name in ("q", "k"):
        x = inp[name].double().abs()
        pair = torch.cat((x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]), dim=-1)
        swapped = x.view(*x.shape[:-1], -1, 2).flip(-1).flatten(-2)
        out[f"{name}_embed"] = x + torch.maximum(pair, swapped)
    return out


for _interleaved in (False, True):
    register(KernelSpec(
        name="fg_rotary_interleaved" if _interleaved else "fg_rotary",
        description="FlagGems rotary embedding of q and k at given positions ("
                    + ("interleaved pairs" if _interleaved else "rotate-half") + "), out of place",
        dims=(Dim("T", interpret_max=5, gpu_max=4096, nightly_max=16384, blocks=(1,)),
              Dim("D", choices=(16, 64, 96, 128))),
        dtypes=FLOATS,
        value_classes=("normal", "large"),
        make_inputs=_rope_inputs,
        outputs=("q_embed", "k_embed"),
        make_outputs=None,
        run=lambda inp, out, cfg, _i=_interleaved: fg_fused.apply_rotary_pos_emb(
            inp["q"], inp["k"], inp["cos"], inp["sin"], inp["positions"], rotary_interleaved=_i),
        reference=_rope_reference(_interleaved),
        tolerance=Tolerance(magnitude=_rope_magnitude),
        flops=lambda case: 6.0 * case.shape["T"] * 6 * case.shape["D"],
        min_bytes=lambda case: 12.0 * case.shape["T"] * case.shape["D"] * DTYPES[case.dtype].itemsize,
        benchmark_shapes=({"T": 4096, "D": 128},),
    ))


# --- cumsum along either dim: flag_gems.ops.cumsum ----------------------------------------------------------------
# FlagGems scans the last dim with a row kernel and any other dim with a column scan (scan_then_fan): users pass
# both (cumsum(x, dim=0) of a [tokens, features] tensor), so the case draws the dim. The scanned length is always N:
# DIM=1 scans the rows of an [M, N] tensor, DIM=0 the columns of an [N, M] one.

def _cumsum_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    # the dim travels as a 0-d input: run sees the inputs, not the case
    x = _rows(case, device, inputs.generator(case))
    return {"x": x if case.shape["DIM"] == 1 else x.T.contiguous(), "dim": torch.tensor(case.shape["DIM"])}


def _cumsum_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    return {"out": torch.cumsum(inp["x"].double().abs(), dim=_scanned(inp))}


def _scanned(inp: dict) -> int:
    return int(inp["dim"])


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.flatten().clone(memory_format=torch.contiguous_format).view(torch.uint8)


def _cumsum_batch_invariant(case: Case, device: str, run) -> str | None:
    """The first half of the M lines FlagGems does not scan across, run alone, gives the same bits: rows for DIM=1,
    columns for DIM=0 (the suite's own batch check slices dim 0, which DIM=0 scans)."""
    inp = _cumsum_inputs(case, device)
    part = max(1, case.shape["M"] // 2)
    lines = (slice(None), slice(0, part)) if case.shape["DIM"] == 0 else (slice(0, part),)
    whole = run(inp)["out"][lines]
    half = run({**inp, "x": inp["x"][lines].contiguous()})["out"]
    if whole.shape == half.shape and torch.equal(_bits(whole), _bits(half)):
        return None
    return f"the first {part} of {case.shape['M']} unscanned lines differ bitwise when run alone"


register(KernelSpec(
    name="fg_cumsum",
    description="FlagGems cumsum along either dim of a matrix (flag_gems.ops.cumsum: its row and column scans)",
    # A column longer than 4096 is scanned in 4096-element parts (scan_then_fan's BLOCK_SIZE): past one part on the
    # interpreter too. M=1 with DIM=0 is a single column, which FlagGems scans as a row.
    dims=(ROWS, Dim("N", interpret_max=4400, gpu_max=65536, nightly_max=262144, blocks=(1024, 4096)),
          Dim("DIM", choices=(0, 1))),
    dtypes=FLOATS,
    value_classes=("normal", "negative"),
    make_inputs=_cumsum_inputs,
    outputs=("out",),
    make_outputs=None,
    run=lambda inp, out, cfg: fg_ops.cumsum(inp["x"], dim=_scanned(inp)),
    reference=lambda inp, case: {"out": torch.cumsum(inp["x"].double(), dim=_scanned(inp))},
    tolerance=Tolerance(reduction=lambda case: case.shape["N"], magnitude=_cumsum_magnitude),
    flops=lambda case: 1.0 * case.shape["M"] * case.shape["N"],
    min_bytes=_bytes(2.0),
    torch_baseline=lambda inp: torch.cumsum(inp["x"], dim=_scanned(inp)),
    benchmark_shapes=({"M": 4096, "N": 4096, "DIM": 1}, {"M": 4096, "N": 4096, "DIM": 0}),
    paths=(CodePath("column_scan", "DIM=0 on two or more columns: the column scan (scan_then_fan)",
                    lambda case, cfg: case.shape["DIM"] == 0 and case.shape["M"] > 1),
           CodePath("column_scan_parts", "a column scan past one 4096-element part: the parts' sums scanned and added",
                    lambda case, cfg: case.shape["DIM"] == 0 and case.shape["M"] > 1 and case.shape["N"] > 4096),
           CodePath("row_scan_tiles", "a row scan past 16384 elements: block sums, their scan, then the blocks",
                    lambda case, cfg: case.shape["DIM"] == 1 and case.shape["N"] > 16384,
                    applies=lambda dtype, family: family != "interpret")),
    properties=(Property("unscanned_lines_alone", "the first half of the lines not scanned across, run alone, gives the "
                         "same bits", _cumsum_batch_invariant),),
    known_issues=(KnownIssue(
        id="flag-gems-cumsum-bf16-column-parts", dtype="bf16",
        reason="FlagGems' column scan rounds a bf16 result twice: past 4096 elements a column is scanned in 1024-element "
               "parts, scan_part_sum_abc_kernel stores each part's own prefix sums in the bf16 output, and "
               "add_base_sum_abc_kernel loads them back and adds the earlier parts' sum (flag_gems/ops/cumsum.py), so "
               "every element past the first part carries a bf16 rounding of its part's prefix on top of its own: off "
               "by several bounds where the column's sum cancels. The row scan and columns up to 4096 round once "
               "(docs/third-party.md has a reproduction without the suite).",
        # an error over the bound past the first 1024-element part of a column (DIM=0) longer than 4096, and at most
        # what a second bf16 rounding of a part's prefix (at most the magnitude, cumsum |x|) gives: 2**-8 over the
        # bound's 4 * sqrt(N) * 2**-24 and a quarter for its own rounding, under 257x (a value 50% off is far more)
        failure_pattern=r'"N": (?:409[7-9]|4[1-9]\d\d|[5-9]\d{3}|\d{5,}), "DIM": 0\} .*\nout: error \S+ at '
                        r"\((?:102[4-9]|10[3-9]\d|1[1-9]\d\d|[2-9]\d{3}|\d{5,}), \d+\) is "
                        r"(?:\d{1,2}(?:\.\d+)?|1\d\d|2[0-4]\d|25\d)x the bound",
        link="docs/third-party.md#flaggems-cumsum-bf16-column-scan"),),
))


# --- embedding: flag_gems.ops.embedding (rows of the table gathered by index, exactly) ------------------------------

def _embedding_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    v, n = case.shape["V"], case.shape["N"]
    table = inputs.place(inputs.values((v, case.shape["D"]), case, gen), case, device)
    return {"table": table, "indices": torch.randint(0, v, (n,), generator=gen).to(device)}


register(KernelSpec(
    name="fg_embedding",
    description="FlagGems embedding lookup: out[i] = table[indices[i]]",
    dims=(Dim("N", interpret_max=40, gpu_max=16384, blocks=(1,)), Dim("V", interpret_max=50, gpu_max=32000, blocks=(1,),
                                                                     one_block="a table row is not a block"),
          Dim("D", interpret_max=600, gpu_max=8192, blocks=(128, 512))),
    dtypes=FLOATS,
    value_classes=("normal", "special"),
    make_inputs=_embedding_inputs,
    outputs=("out",),
    make_outputs=None,
    run=lambda inp, out, cfg: fg_ops.embedding(inp["table"], inp["indices"]),
    reference=lambda inp, case: {"out": inp["table"].double()[inp["indices"].long()]},
    tolerance=Tolerance(safety=1.0),
    min_bytes=lambda case: 2.0 * case.shape["N"] * case.shape["D"] * DTYPES[case.dtype].itemsize,
    benchmark_shapes=({"N": 16384, "V": 32000, "D": 4096},),
    nonfinite_reference=("special",),
))


# --- topk along the last dim (largest, sorted): flag_gems.ops.topk -> (values, indices) ------------------------------

def _topk_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    """Rows of the case's value class and layout; "masked" rows are logits with masked entries at -inf, as top-k
    sampling after a mask passes them: about half the rows keep fewer than K finite entries, a quarter K to 2K - 1,
    the others up to 3 in 4."""
    gen = inputs.generator(case)
    m, n, k = case.shape["M"], case.shape["N"], case.shape["K"]
    masked = case.values == "masked"
    x = inputs.values((m, n), Case(case.kernel, case.dtype, case.shape, values="normal") if masked else case, gen)
    if masked:
        share = gen.uniform((m, 1), x.device)
        keep = torch.where(share < 0.5, gen.integers(0, k, (m, 1), x.device),
                           torch.where(share < 0.75, gen.integers(k, 2 * k, (m, 1), x.device),
                                       (gen.uniform((m, 1), x.device) * 0.75 * n).long()))
        rank = gen.uniform((m, n), x.device).argsort(dim=-1).argsort(dim=-1)  # a random order of each row's entries
        x[rank >= keep] = -math.inf
    # k travels as a 0-d input: run sees the inputs, not the case
    return {"x": inputs.place(x, case, device, case.layout), "k": torch.tensor(k)}


def _topk_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    top = torch.topk(inp["x"].double(), case.shape["K"], dim=-1)
    return {"values": top.values, "indices": top.indices}


register(KernelSpec(
    name="fg_topk",
    description="FlagGems topk along the last dim (largest, sorted): the values, and their indices compared up to ties",
    # Rows under 1024 are chunked by 256, longer ones by 1024; each chunk's top k, then the top k of those.
    dims=(ROWS, Dim("N", interpret_max=600, gpu_max=65536, nightly_max=131072, min=8, blocks=(256, 1024)),
          Dim("K", choices=(1, 5, 8))),
    dtypes=FLOATS,
    # Rows as users pass them: a slice of a wider buffer (padded_rows), and masked logits (-inf).
    layouts=("contiguous", "padded_rows"),
    value_classes=("normal", "large", "negative", "masked"),
    nonfinite_reference=("masked",),  # a row with fewer than K finite entries: its top K holds -inf
    make_inputs=_topk_inputs,
    outputs=("values", "indices"),
    make_outputs=None,
    run=lambda inp, out, cfg: fg_ops.topk(inp["x"], int(inp["k"]), -1),
    reference=_topk_reference,
    # the values are copies of inputs: exact; the indices: any index of an equal element (bf16 rows tie often)
    tolerance=Tolerance(safety=1.0),
    index_outputs={"indices": IndexOutput(source="x")},
    min_bytes=_bytes(1.0),
    benchmark_shapes=({"M": 4096, "N": 4096, "K": 8},),
    batch_dim="M", batch_inputs=("x",), batch_outputs=("values", "indices"),
    # Not drawn: FlagGems' topk reads x as contiguous; tried once per test as undeclared (the known issue below).
    refused_layouts={"aligned_slice": "FlagGems' topk reads x as contiguous (known issue flag-gems-topk-contiguous-x)"},
    known_issues=(
        *(KnownIssue(
            id=f"flag-gems-topk-row-stride-{test}-{dtype}", backend="interpret", dtype=dtype, test=test,
            reason="FlagGems' topk ignores the input's row stride: topk_stage1_kernel reads row r at 'x_ptr + r * N' "
                   "(flag_gems/ops/topk.py, 'x_ptr += cur_batch * N + chunk_offset') and its launcher does not call "
                   ".contiguous(), so rows sliced from a wider buffer (padded_rows) are read from the wrong place: "
                   "the padding and the rows before. The interpreter's memory checker names the read; on a GPU the "
                   "values are wrong (docs/third-party.md has a reproduction without the suite).",
            # a read outside the input's rows, the input's row stride not its width (strided rows): its strides named
            failure_pattern=r"out-of-bounds load in kernel topk_stage1_kernel .* argument 'x_ptr' \(shape \(\d+, "
                            r"(\d+)\), strides \((?!\1,)\d+, 1\), \d-byte elements\),? (at )?element offset \d+, "
                            r"not an element of the tensor \(padding or past the end\)",
            link="docs/third-party.md#flaggems-topk-row-stride")
          for dtype in FLOATS for test in ("test_matches_reference", "test_properties")),
        *(KnownIssue(
            id=f"flag-gems-topk-neg-inf-{dtype}", dtype=dtype,
            reason="FlagGems' topk fills masked lanes and the entries it has taken with the dtype's lowest finite "
                   "value (topk_stage1_kernel, topk_stage2_kernel: _get_finfo_val, and index INT32_MIN in stage 2), "
                   "which ranks above -inf: in a row with fewer than K entries above -inf it returns those fills "
                   "(an index past the row, a repeated one or -2147483648; -3.4e38 or NaN for -inf) where torch "
                   "returns the -inf entries (docs/third-party.md has a reproduction without the suite).",
            # the fills' indices: a masked lane's past the row, stage 2's INT32_MIN, or a taken entry's again; and
            # the fills' values where torch returns -inf: the dtype's lowest finite value, or NaN in a case of
            # masked rows (each output's problem is matched on its own, after the case's line; each element of it
            # too, worded "at" where the message says "first at")
            failure_pattern=r"indices out of range \[0, \d+\) along dim 1 of 'x' \(first at \(\d+, \d+\): "
                            r"(-2147483648|\d+)\)|an index repeats along dim 1|values: \d+ infinities differ "
                            r"\((first )?at \(\d+, \d+\): got (-3\.4028234663852886e\+38|-65504\.0|"
                            r"-3\.3895313892515355e\+38), expected -inf\)|"
                            r" masked seed=\d+\nvalues: \d+ NaN where the reference is not \(",
            link="docs/third-party.md#flaggems-topk-and--inf")
          for dtype in FLOATS),
        KnownIssue(
            id="flag-gems-topk-contiguous-x",
            reason="flag_gems.ops.topk hands x to topk_stage1_kernel without reading its strides (row r at x_ptr + r * N) "
                   "and takes any x: a sliced, padded or broadcast x is read at the wrong addresses (past the row, on "
                   "the interpreter's memory check) and the top k are of other values (docs/third-party.md, FlagGems).",
            # the contract probe's finding: x re-laid (any row stride but N), and wrong on it
            failure_pattern=r"restride '(aligned_slice|unaligned_slice|broadcast)' .*: x\), and is wrong on it",
            link="docs/third-party.md"),
    ),
))


# --- cross_entropy_loss, mean over the rows: flag_gems.fused.cross_entropy_loss ------------------------------------

def _ce_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    m, c = case.shape["M"], case.shape["C"]
    return {"logits": _rows(case, device, gen, "C"), "target": torch.randint(0, c, (m,), generator=gen).to(device)}


def _ce_reference(inp: dict, case: Case) -> dict[str, torch.Tensor]:
    x = inp["logits"].double()
    loss = torch.logsumexp(x, dim=-1) - x.gather(1, inp["target"].long()[:, None])[:, 0]
    return {"loss": loss.mean()}


def _ce_magnitude(inp: dict, ref: dict) -> dict[str, torch.Tensor]:
    x = inp["logits"].double()
    size = 1.0 + torch.logsumexp(x, dim=-1).abs() + x.gather(1, inp["target"].long()[:, None])[:, 0].abs()
    return {"loss": size.mean()}


register(KernelSpec(
    name="fg_cross_entropy",
    description="FlagGems cross_entropy_loss over class indices, reduction 'mean'",
    dims=(ROWS, Dim("C", interpret_max=3000, gpu_max=131072, nightly_max=262144, blocks=(1024,))),
    dtypes=FLOATS,
    value_classes=("normal", "large"),
    make_inputs=_ce_inputs,
    outputs=("loss",),
    make_outputs=None,
    run=lambda inp, out, cfg: fg_fused.cross_entropy_loss(inp["logits"], inp["target"]),
    reference=_ce_reference,
    tolerance=Tolerance(reduction=lambda case: case.shape["C"], magnitude=_ce_magnitude),
    flops=lambda case: 4.0 * case.shape["M"] * case.shape["C"],
    min_bytes=_bytes(1.0),
    benchmark_shapes=({"M": 4096, "C": 32768},),
    known_issues=tuple(KnownIssue(
        id=f"flag-gems-ce-python-and-{test}-{dtype}", backend="interpret", dtype=dtype, test=test,
        reason="Not checkable on the interpreter: FlagGems' celoss_indices_kernel builds its masks with Python "
               "'and'/'not' on tensors (flag_gems/fused/cross_entropy_loss.py line 42, 'ignore_mask = not (tgt == "
               "ignore_index) and tgt_mask'; line 50, 'inp_mask = offset_c[:, None] < C and offset_d[None, :] < D'). "
               "Compiled, Triton lowers them elementwise; Triton 3.6's interpreter evaluates them as Python does "
               "('a and b' is b, 'not t' is False), so the class bound is dropped and the kernel reads past the "
               "row's last class. Outside the suite, without FlagGems: TRITON_INTERPRET=1, a kernel storing "
               "'(offs < 2) and (offs < 6)' over tl.arange(0, 8) writes 6 Trues where a GPU writes 2 "
               "(docs/third-party.md). Check this kernel on a GPU.",
        # what it fails with: the read past the row that the dropped 'offset_c < C' would have masked
        failure_pattern=r"out-of-bounds load in kernel celoss_indices_kernel .* reads argument 'inp_ptr'",
        link="docs/third-party.md#what-the-interpreter-cannot-check")
        for dtype in FLOATS for test in ("test_matches_reference", "test_properties")),
))
