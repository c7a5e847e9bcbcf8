"""Adversarial bugs against the drawn layouts, the crossings and the contract probe as the draws now carry them (not
shipped): each spec ``adv2_<name>`` is out = 2 * x (or x * w) over [M, N] rows through a right kernel, its
launcher (or a step after the kernel) wrong on one thing alone. Loaded with ``--kernel-module`` on the interpreter,
ci profile; a bug is caught where its test fails. README.md in this folder says what each try is after.
"""
from __future__ import annotations

import dataclasses
import os

import torch
import triton
import triton.language as tl

from kernels import inputs
from kernels.registry import register
from kernels.spec import CodePath, Dim, KernelSpec


@triton.jit
def _dbl(x_ptr, w_ptr, out_ptr, N, sx, sw, so, HAS_W: tl.constexpr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * sx + cols, mask=cols < N)
        if HAS_W:
            x = x * tl.load(w_ptr + row * sw + cols, mask=cols < N)
        else:
            x = x * 2.0
        if MODE == 1:  # NaN and inf read as 0
            x = tl.where(x == x, x, 0.0)
            x = tl.where(tl.abs(x) == float("inf"), 0.0, x)
        if MODE == 2:  # clamped
            x = tl.minimum(tl.maximum(x, -4000.0), 4000.0)
        if MODE == 3:  # the sign lost below -150
            x = tl.where(x < -150.0, -x, x)
        if MODE == 4:  # subnormals flushed
            x = tl.where(tl.abs(x) < 1.1754943508222875e-38, 0.0, x)
        if MODE == 5:  # the last column dropped
            x = tl.where(cols == N - 1, 0.0, x)
        tl.store(out_ptr + row * so + cols, x, mask=cols < N)


PATHS = (
    CodePath("n_loop", "N spans more than one block of 16", lambda case, cfg: case.shape["N"] > 16),
    CodePath("n_tail", "N is no multiple of 16", lambda case, cfg: case.shape["N"] % 16 != 0),
    CodePath("wide_tail", "N above 48 and no multiple of 16 (a path few draws take)",
             lambda case, cfg: case.shape["N"] > 48 and case.shape["N"] % 16 != 0),
    CodePath("many_rows", "M of 7 or more", lambda case, cfg: case.shape["M"] >= 7),
)


def _wide_tail(n: int) -> bool:
    return n > 48 and n % 16 != 0


def _launch(inp, out, sx=None, so=None, sw=None, mode=0):
    x, y = inp["x"], out["out"]
    m, n = x.shape
    w = inp.get("w")
    _dbl[(m,)](x, w if w is not None else x, y, n, x.stride(0) if sx is None else sx,
               (w.stride(0) if sw is None else sw) if w is not None else 0, y.stride(0) if so is None else so,
               HAS_W=w is not None, MODE=mode, BLOCK=16)


# name -> (the launcher, what else the spec says)
def _stride(rule):
    """A launcher passing x's row stride as ``rule(x, n, m)`` says."""
    return lambda inp, out, cfg: _launch(inp, out, sx=rule(inp["x"], inp["x"].shape[1], inp["x"].shape[0]))


def _mode(mode, when):
    """The kernel run in ``mode`` (a wrong result on one value class) where ``when(x)`` holds, else right."""
    return lambda inp, out, cfg: _launch(inp, out, mode=mode if when(inp["x"]) else 0)


def _probe_unaligned(inp, out, cfg, loop_only=False):
    x = inp["x"]
    sx = x.stride(0)
    if not x.is_contiguous() and sx % 4 and (x.shape[1] > 16 or not loop_only):
        sx -= 1  # a stride aligned to nothing mishandled (aligned slices are multiples of 16 bytes)
    _launch(inp, out, sx=sx)


def _probe_broadcast(inp, out, cfg, many_rows_only=False):
    x = inp["x"]
    sx = x.stride(0)
    if sx == 0 and (x.shape[0] >= 7 or not many_rows_only):
        sx = x.shape[1]  # a stride of 0 taken for dense rows
    _launch(inp, out, sx=sx)


def _probe_outputs(inp, out, cfg):
    _launch(inp, out, so=out["out"].shape[1])  # the output taken dense whatever its stride


def _bcast_w(inp, out, cfg):
    _launch(inp, out, sw=inp["x"].shape[1])  # w's row stride taken as its width: wrong where w is broadcast


BUGS = {
    "g_width16": (_stride(lambda x, n, m: n if n % 16 == 0 else x.stride(0)), {}),
    "d_div16_dense": (_stride(lambda x, n, m: n if x.stride(0) % 16 == 0 else x.stride(0)), {}),
    "wide_tail_blind": (_stride(lambda x, n, m: n if _wide_tail(n) else x.stride(0)), {}),
    "many_rows_blind": (_stride(lambda x, n, m: n if m >= 7 else x.stride(0)), {}),
    "contig16_fast": (_mode(5, lambda x: x.is_contiguous() and x.shape[1] % 16 == 0 and x.shape[0] > 1), {}),
    "out_width16": (lambda inp, out, cfg: _launch(inp, out, so=(out["out"].shape[1] if out["out"].shape[1] % 16 == 0
                                                                else out["out"].stride(0))),
                    {"strided_outputs": True}),
    "padded_tail": (_stride(lambda x, n, m: n if n % 16 and x.stride(0) - n == inputs.PADDED_ROWS else x.stride(0)),
                    {}),
    "padded_loop": (_stride(lambda x, n, m: n if n > 16 and x.stride(0) - n == inputs.PADDED_ROWS else x.stride(0)),
                    {}),
    "wide_tail_special": (_mode(1, lambda x: _wide_tail(x.shape[1])), {}),
    "wide_tail_large": (_mode(2, lambda x: _wide_tail(x.shape[1])), {}),
    "many_rows_negative": (_mode(3, lambda x: x.shape[0] >= 7), {}),
    "width1_slice": (_stride(lambda x, n, m: 1 if n == 1 else x.stride(0)), {}),
    "two_rows_slice": (_stride(lambda x, n, m: n if m == 2 else x.stride(0)), {}),
    "tail_slice_negative": (lambda inp, out, cfg: _launch(inp, out, sx=(
        inp["x"].shape[1] if inp["x"].shape[1] % 16 and not inp["x"].is_contiguous()
        and bool((inp["x"][:, :1] < -50).all()) else inp["x"].stride(0))), {}),
    "flush_wide_tail": (_mode(4, lambda x: _wide_tail(x.shape[1])), {"no_subnormals": None}),
    "flush_all": (_mode(4, lambda x: True), {"no_subnormals": None}),
    "probe_unaligned": (_probe_unaligned, {"layouts": ("contiguous",)}),
    "probe_broadcast_b": (_probe_broadcast, {"layouts": ("contiguous",)}),
    "probe_outputs": (_probe_outputs, {"layouts": ("contiguous",)}),
    "probe_unaligned_loop_a": (lambda inp, out, cfg: _probe_unaligned(inp, out, cfg, loop_only=True),
                               {"layouts": ("contiguous",)}),
    "probe_bcast_rows_d": (lambda inp, out, cfg: _probe_broadcast(inp, out, cfg, many_rows_only=True),
                           {"layouts": ("contiguous",)}),
    "bcast_weight": (_bcast_w, {"broadcast_inputs": ("w",)}),
}


def _inputs(case, device, weight):
    gen = inputs.generator(case)
    x = inputs.rows(case, device, gen)
    if not weight:
        return {"x": x}
    w = inputs.place(inputs.values((case.shape["M"], case.shape["N"]), dataclasses.replace(case, values="normal"),
                                   gen), case, device, "contiguous")
    return {"x": x, "w": w}


def _make(name, run, more):
    weight = "broadcast_inputs" in more
    register(KernelSpec(
        name=f"adv2_{name}", description=f"out = 2 * x, planted bug {name}",
        dims=(Dim("M", interpret_max=8, gpu_max=8), Dim("N", interpret_max=70, gpu_max=70, blocks=(16,))),
        dtypes=("fp32",), layouts=more.get("layouts", ("contiguous", "padded_rows")),
        value_classes=("normal", "negative", "special", "large"),
        no_subnormals=more.get("no_subnormals", "not this fixture's"),
        strided_outputs=more.get("strided_outputs", False), broadcast_inputs=more.get("broadcast_inputs", ()),
        make_inputs=lambda case, device: _inputs(case, device, weight),
        make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape, dtype=inp["x"].dtype,
                                                           device=inp["x"].device)},
        run=run, paths=PATHS, outputs=("out",),
        reference=(lambda inp, case: {"out": inp["x"].double() * inp["w"].double()}) if weight
        else (lambda inp, case: {"out": inp["x"].double() * 2.0}),
    ))


# ADV_COPIES=K registers each bug that is no probe's K times more, as adv2_<name>_x1 ... (other names: other draws)
for _n, (_r, _m) in BUGS.items():
    for _i in range(1 + (0 if _n.startswith("probe_") else int(os.environ.get("ADV_COPIES", "0")))):
        _make(_n + (f"_x{_i}" if _i else ""), _r, _m)


@triton.jit
def _dbl3(x_ptr, out_ptr, M, N, s0, s1, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    r = tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + b * s0 + r * s1 + cols, mask=cols < N)
    tl.store(out_ptr + (b * M + r) * N + cols, x * 2.0, mask=cols < N)


def _permuted3d(inp, out, cfg):
    x, y = inp["x"], out["out"]
    bsz, m, n = x.shape
    _dbl3[(bsz, m)](x, y, m, n, m * x.stride(1), x.stride(1), BLOCK=64)  # the batch stride taken as M rows


register(KernelSpec(
    name="adv2_permuted3d", description="out = 2 * x over [B, M, N], the batch stride taken as M rows",
    dims=(Dim("B", interpret_max=4, gpu_max=4), Dim("M", interpret_max=6, gpu_max=6),
          Dim("N", interpret_max=40, gpu_max=40, one_block="one program holds a row")),
    dtypes=("fp32",), no_subnormals="not this fixture's",
    make_inputs=lambda case, device: {"x": inputs.place(inputs.values(
        (case.shape["B"], case.shape["M"], case.shape["N"]), case, inputs.generator(case)), case, device)},
    make_outputs=lambda inp, case: {"out": torch.empty(inp["x"].shape, dtype=inp["x"].dtype, device=inp["x"].device)},
    run=_permuted3d, reference=lambda inp, case: {"out": inp["x"].double() * 2.0}, outputs=("out",),
))
