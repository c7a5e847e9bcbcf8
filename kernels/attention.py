"""Flash-attention forward: online softmax over key blocks, fp32 accumulation, causal or not.

q, k, v and the output are [B, H, S, D] of any strides (the ``bshd`` layout stores them as
[B, S, H, D], as a fused QKV projection leaves them). The Dim ``CAUSAL`` (0 or 1) picks the
mask, so a benchmark shape or a reproduction line names it; the inputs carry it as a 0-d
CPU tensor ``causal`` because the tolerance magnitude and the torch baseline see inputs only.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
import triton
import triton.language as tl

from kernels import inputs, paths
from kernels.registry import register
from kernels.spec import DTYPES, Case, CodePath, Dim, KernelSpec, Property, Tolerance, amd_options, cdiv, signature


@triton.jit
def _online_softmax(qk, m_i, l_i, qk_scale, keep, MASKED: tl.constexpr):
    """One key block's probabilities p (base 2, the scale folded in), the factor alpha that rescales the running
    sums to the new row maximum, the new maximum and the new sum; MASKED blocks drop the logits not in ``keep``."""
    if MASKED:
        qk = tl.where(keep, qk * qk_scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
    else:
        # The scale commutes with the max (it is positive), so it folds into one multiply-add per logit.
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    return p, alpha, m_new, l_i * alpha + tl.sum(p, 1)


@triton.jit
def _attention_block(acc, l_i, m_i, q, k_base, v_base, offs_m, start_n, S, qk_scale, stride_ks, stride_kd, stride_vs,
                     stride_vd, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_D: tl.constexpr):
    """One key block of the online softmax; MASKED blocks may cross S or the causal diagonal."""
    cols = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    k_ptrs = k_base + cols[:, None] * stride_ks + offs_d[None, :] * stride_kd
    v_ptrs = v_base + cols[:, None] * stride_vs + offs_d[None, :] * stride_vd
    if MASKED:
        k = tl.load(k_ptrs, mask=cols[:, None] < S, other=0.0)
    else:
        k = tl.load(k_ptrs)
    qk = tl.dot(q, tl.trans(k))
    keep = cols[None, :] < S
    if CAUSAL:
        keep = keep & (cols[None, :] <= offs_m[:, None])
    # Key 0 is kept for every row (padding rows included), so m_new is finite from the first block on.
    p, alpha, m_new, l_i = _online_softmax(qk, m_i, l_i, qk_scale, keep, MASKED)
    if MASKED:
        v = tl.load(v_ptrs, mask=cols[:, None] < S, other=0.0)
    else:
        v = tl.load(v_ptrs)
    # P is rounded to the input dtype so the second dot runs on tensor cores / MFMA too.
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, S, sm_scale,
                         stride_qb, stride_qh, stride_qs, stride_qd, stride_kb, stride_kh, stride_ks, stride_kd,
                         stride_vb, stride_vh, stride_vs, stride_vd, stride_ob, stride_oh, stride_os, stride_od,
                         CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    # Query blocks in reverse: under a causal mask the last blocks have the most keys, so they start first
    # and the short ones fill the tail of the grid.
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    bh = tl.program_id(1)
    # Batch and head offsets in int64: B * H * S * D passes 2**31 long before one head does.
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    q_base = q_ptr + b * stride_qb + h * stride_qh
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh
    o_base = o_ptr + b * stride_ob + h * stride_oh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :] * stride_qd, mask=offs_m[:, None] < S, other=0.0)
    # exp2 is the native instruction on both vendors: fold log2(e) into the scale once.
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    # Key blocks wholly inside S and (causal) wholly at or before this block's first query need no mask;
    # the rest, up to S or (causal) this block's last query, do. Blocks past that are never loaded.
    hi = tl.minimum(S, (start_m + 1) * BLOCK_M) if CAUSAL else S
    lo = tl.minimum(S, start_m * BLOCK_M + 1) if CAUSAL else S
    full = (lo // BLOCK_N) * BLOCK_N
    for start_n in range(0, full, BLOCK_N):
        acc, l_i, m_i = _attention_block(acc, l_i, m_i, q, k_base, v_base, offs_m, start_n, S, qk_scale, stride_ks,
                                         stride_kd, stride_vs, stride_vd, False, CAUSAL, BLOCK_N, BLOCK_D)
    for start_n in range(full, hi, BLOCK_N):
        acc, l_i, m_i = _attention_block(acc, l_i, m_i, q, k_base, v_base, offs_m, start_n, S, qk_scale, stride_ks,
                                         stride_kd, stride_vs, stride_vd, True, CAUSAL, BLOCK_N, BLOCK_D)
    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_os + offs_d[None, :] * stride_od, out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < S)

DEFAULTS = {
    # One default for sm_80..sm_100: fp32 at D=128 must fit sm_80's 163 KB. On an H100 (bf16, D=128, S=4096)
    # it ran 363/408 TFLOP/s causal/not; (64, 64, 4, 3) ran 417/449 but needs 181 KB in fp32 on sm_80.
    "nvidia": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 3},
    "amd": {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "num_stages": 1},
    # BLOCK_M != BLOCK_N on purpose: the causal loop bound must not assume they match.
    "interpret": {"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1},
}


# No warp-specialized configs: Triton 3.6's automatic warp specialization on sm_90 returned NaN for this kernel's
# descriptor variant (3 stages always; 2 stages once in a two-H200 nightly, under load), and Triton documents it as
# Blackwell-only (docs/hazards.md, row 20). The variant is kept for reproducing it: tests/fixtures/attention_ws.py.


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, out: torch.Tensor | None = None,
              config: dict | None = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(D), causal mask if asked) v for [B, H, S, D] tensors of one dtype."""
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape or not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"attention takes q, k, v of one [B, H, S, D] shape and dtype, got {tuple(q.shape)} {q.dtype}, "
                         f"{tuple(k.shape)} {k.dtype}, {tuple(v.shape)} {v.dtype}")
    batch, heads, seq, head_dim = q.shape
    if head_dim < 16 or head_dim & (head_dim - 1):
        raise ValueError(f"attention: head dim must be a power of two >= 16 (one tl.dot tile), got {head_dim}")
    o = torch.empty((batch, heads, seq, head_dim), dtype=q.dtype, device=q.device) if out is None else out
    cfg = {**DEFAULTS["nvidia"], **(config or {})}
    grid = (triton.cdiv(seq, cfg["BLOCK_M"]), batch * heads)
    attention_fwd_kernel[grid](q, k, v, o, heads, seq, 1.0 / math.sqrt(head_dim), *q.stride(), *k.stride(), *v.stride(),
                               *o.stride(), CAUSAL=bool(causal), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                               BLOCK_D=head_dim, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                               **amd_options(cfg))
    return o


def _make_inputs(case: Case, device: str) -> dict[str, torch.Tensor]:
    gen = inputs.generator(case)
    b, h, s, d = (case.shape[n] for n in ("B", "H", "S", "D"))
    tensors = {}
    for name in ("q", "k", "v"):
        x = inputs.values((b, h, s, d), case, gen)
        if case.layout == "bshd":
            tensors[name] = inputs.place(x.transpose(1, 2).contiguous(), case, device).transpose(1, 2)
        elif case.layout == "contiguous":
            tensors[name] = inputs.place(x, case, device)
        else:
            raise ValueError(f"attention: unknown layout {case.layout!r}")
    # On the CPU even where benchmarks draw inputs on the device: reading a device flag would synchronize.
    return {**tensors, "causal": torch.tensor(case.shape["CAUSAL"], device="cpu")}


def _future(x: torch.Tensor) -> torch.Tensor:
    """True where a key comes after its query, for [..., S, S] scores."""
    n = x.shape[-1]
    return torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)


def _probabilities(q: torch.Tensor, k: torch.Tensor, causal: bool) -> torch.Tensor:
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(s.masked_fill(_future(s), float("-inf")) if causal else s, dim=-1)


def _reference(inputs: dict[str, torch.Tensor], case: Case) -> dict[str, torch.Tensor]:
    return {"out": _probabilities(inputs["q"], inputs["k"], bool(inputs["causal"])) @ inputs["v"].double()}


def _reduction(seq: int, head_dim: int) -> int:
    # Rounding gathers over D terms in q k^T and S terms in the softmax sum and in P V.
    return seq + head_dim


def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    causal = bool(inputs["causal"])
    pv = _probabilities(q, k, causal) @ v.double().abs()
    # An error e in a logit moves the output by up to 2 e (|P| |V|); e is relative to the logit's size
    # scale * |q| |k| (dot rounding, and exp2's argument after the max is subtracted).
    logits = (q.double().abs() @ k.double().abs().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    logits = logits.masked_fill(_future(logits), 0.0) if causal else logits
    amplification = 1.0 + 4.0 * logits.amax(dim=-1, keepdim=True)
    # P rounded to fp16/bf16 for the P V dot costs its unit roundoff on |P| |V|; the rule scales the
    # magnitude by sqrt(K) * u(fp32), so that term enters divided by it.
    u_p = 0.0 if q.dtype == torch.float32 else torch.finfo(q.dtype).eps / 2
    u_p_scaled = u_p / (math.sqrt(_reduction(q.shape[-2], q.shape[-1])) * 2.0**-24)
    return {"out": pv * (amplification + u_p_scaled)}


def _check_causal_prefix(case: Case, device: str, run) -> str | None:
    """Rows 0..cut of a causal output must not see keys/values after cut: change those, compare bitwise.

    Bitwise, not within rounding: a masked logit becomes -inf before any arithmetic, so its weight is
    exactly 0 and 0 * v adds an exact zero to each row; each row's max, sum and dot ignore the other
    rows. The new values are finite (0 * inf would be NaN even for a correct mask)."""
    case = replace(case, shape={**case.shape, "CAUSAL": 1})
    seq = case.shape["S"]
    if seq < 2:
        return None
    cut = case.seed % (seq - 1)
    before = run(_make_inputs(case, device))["out"]
    inputs = _make_inputs(case, device)
    gen = torch.Generator(device="cpu").manual_seed(case.seed + 1)
    for name in ("k", "v"):
        tail = inputs[name][:, :, cut + 1:]
        tail.copy_((torch.randn(tail.shape, generator=gen, dtype=torch.float64) * 8.0).to(tail.dtype))
    after = run(inputs)["out"]
    a, b = before[:, :, : cut + 1], after[:, :, : cut + 1]
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    if bool(same.all()):
        return None
    idx = tuple(int(i) for i in (~same).nonzero()[0])
    return (f"causal (CAUSAL=1) prefix changed with keys/values after position {cut} of S={seq}: {int((~same).sum())} of "
            f"{a.numel()} elements differ; first at [b, h, s, d]={idx}: {a[idx].item()!r} -> {b[idx].item()!r}")


def _unmasked_blocks(case: Case, cfg: dict) -> bool:
    """Whether the last query block (the one with the most keys) has a key block that needs no mask."""
    seq, block_m, block_n = case.shape["S"], int(cfg.get("BLOCK_M", 64)), int(cfg.get("BLOCK_N", 32))
    lo = min(seq, (cdiv(seq, block_m) - 1) * block_m + 1) if case.shape["CAUSAL"] else seq
    return lo >= block_n


def _flops(case: Case) -> float:
    b, h, s, d = (case.shape[n] for n in ("B", "H", "S", "D"))
    return 4.0 * b * h * s * s * d * (0.5 if case.shape["CAUSAL"] else 1.0)


def _signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    types = {**{n: f"*{dtype}" for n in ("q_ptr", "k_ptr", "v_ptr", "o_ptr")}, "H": "i32", "S": "i32", "sm_scale": "fp32",
             **{f"stride_{t}{a}": "i32" for t in "qkvo" for a in "bhs"}}
    # Contiguous head dims: the launch specializes the unit stride to the constant 1.
    unit = {f"stride_{t}d": 1 for t in "qkvo"}
    return signature(attention_fwd_kernel, types, {**unit, "CAUSAL": bool(meta.get("CAUSAL", True)), "BLOCK_M": meta["BLOCK_M"],
                                                   "BLOCK_N": meta["BLOCK_N"], "BLOCK_D": meta.get("BLOCK_D", 128)})


SPEC = register(KernelSpec(
    name="attention",
    description="flash-attention forward, online softmax, fp32 accumulation, causal or not, head dim 64/128",
    dims=(Dim("B", interpret_max=2, gpu_max=4, nightly_max=8), Dim("H", interpret_max=2, gpu_max=8, nightly_max=32),
          Dim("S", interpret_max=100, gpu_max=1100, nightly_max=4500, blocks=(16, 32, 64, 128)),
          Dim("D", interpret_max=128, gpu_max=128, choices=(64, 128)),
          Dim("CAUSAL", interpret_max=1, gpu_max=1, choices=(0, 1), min=0)),
    dtypes=("fp32", "fp16", "bf16"),
    layouts=("contiguous", "bshd"),
    value_classes=("normal",),
    make_inputs=_make_inputs,
    outputs=("out",),
    make_outputs=lambda inp, case: {"out": torch.empty(inp["q"].shape, dtype=inp["q"].dtype, device=inp["q"].device)},
    run=lambda inp, out, cfg: attention(inp["q"], inp["k"], inp["v"], bool(inp["causal"]), out["out"], cfg),
    reference=_reference,
    tolerance=Tolerance(reduction=lambda case: _reduction(case.shape["S"], case.shape["D"]), magnitude=_magnitude,
                        uses_dot=True),
    flops=_flops,
    min_bytes=lambda case: 4.0 * case.shape["B"] * case.shape["H"] * case.shape["S"] * case.shape["D"]
    * DTYPES[case.dtype].itemsize,
    torch_baseline=lambda inp: torch.nn.functional.scaled_dot_product_attention(inp["q"], inp["k"], inp["v"],
                                                                                is_causal=bool(inp["causal"])),
    default_config=DEFAULTS,
    paths=(*paths.block_loop("S", lambda case, cfg: int(cfg["BLOCK_N"]), "the loop over key blocks"),
           CodePath("unmasked_key_blocks", "some key blocks lie wholly inside S and before the causal diagonal: "
                    "they skip the mask", lambda case, cfg: _unmasked_blocks(case, cfg)),
           CodePath("query_blocks", "S spans several query blocks (causal: blocks past the diagonal are skipped)",
                    lambda case, cfg: cdiv(case.shape["S"], int(cfg["BLOCK_M"])) > 1)),
    configs={
        "interpret": tuple({"BLOCK_M": m, "BLOCK_N": n, "num_warps": 4, "num_stages": 1}
                           for m, n in ((16, 16), (32, 16), (16, 32))),
        "nvidia": tuple({"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}
                        for bm, bn, w, s in ((64, 32, 4, 3), (64, 64, 4, 3), (128, 64, 8, 2), (64, 64, 4, 2),
                                             (128, 64, 8, 3), (128, 128, 8, 2), (128, 32, 4, 3), (64, 128, 4, 2),
                                             (128, 128, 8, 3), (128, 64, 8, 4), (64, 64, 4, 4))),
        "amd": tuple({"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s, "waves_per_eu": we,
                      "matrix_instr_nonkdim": nk}
                     for bm, bn, w, s, we, nk in ((128, 32, 4, 1, 2, 16), (128, 64, 4, 1, 2, 16), (64, 64, 4, 1, 0, 32),
                                                  (128, 64, 8, 2, 0, 16))),
    },
    benchmark_shapes=({"B": 4, "H": 32, "S": 4096, "D": 128, "CAUSAL": 1}, {"B": 4, "H": 32, "S": 4096, "D": 128, "CAUSAL": 0}),
    # A single key (S=1); one row past a tile; the causal diagonal across a BLOCK_M != BLOCK_N split.
    examples=({"shape": {"B": 1, "H": 1, "S": 1, "D": 64, "CAUSAL": 1}, "seed": 0},
              {"shape": {"B": 1, "H": 2, "S": 33, "D": 128, "CAUSAL": 0}, "layout": "bshd", "seed": 1},
              {"shape": {"B": 2, "H": 1, "S": 47, "D": 64, "CAUSAL": 1}, "seed": 2}),
    properties=(Property("causal_prefix", "a causal output row does not change when keys/values after it change "
                         "(bitwise)", _check_causal_prefix),),
    compile_signature=_signature,
    batch_dim="B", batch_inputs=("q", "k", "v"), batch_outputs=("out",),
    jit_fn=attention_fwd_kernel,
))
