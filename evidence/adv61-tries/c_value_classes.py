"""Rule C (a value class is judged on what reaches the spec's own kernel): tries to pass a kernel that flushes
subnormal x (or turns NaN x into 0), or to make a right spec fail. Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/adv61-tries/c_value_classes.py \
        --kernels='a61c_*' -q -p no:xdist -k test_matches_reference --no-results
Each try's outcome (before and after the round's fixes) is in README.md.
"""
from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from kernels.registry import register
from kernels.spec import signature
from kernels.vector_add import SPEC as VA
from tests.fixtures.own_kernel import _ONE

TINY = 1.1754943508222875e-38
UP = 2.0 ** 64


@triton.jit
def add_fl(x_ptr, y_ptr, out_ptr, junk_ptr, n, scale, BLOCK: tl.constexpr, NAN0: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if NAN0:
        x = tl.where(x != x, 0.0, x)  # BUG: NaN x taken as 0
    else:
        x = tl.where(tl.abs(x) < 1.1754943508222875e-38, 0.0, x)  # BUG: subnormal x flushed
    tl.store(out_ptr + offs, (x + tl.load(y_ptr + offs, mask=mask)) * scale, mask=mask)


def _sig(dtype, meta):
    return signature(add_fl, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}",
                              "junk_ptr": f"*{dtype}", "n": "i32", "scale": "fp32"}, {"BLOCK": 64, "NAN0": 0})


def _k(x, y, out, n=None, scale=1.0, junk=None, nan0=False):
    n = x.numel() if n is None else n
    add_fl[(triton.cdiv(max(n, 1), 64),)](x, y, out, x if junk is None else junk, n, scale, BLOCK=64, NAN0=nan0)


def _scaled(i):
    return i["x"] * UP, i["y"] * UP


def c_plain(i, o):  # 0 the flushing kernel as it is: must fail (the bug the class exists for)
    _k(i["x"], i["y"], o)


def c_scaled_only(i, o):  # 1 scaled copies only: the kernel never sees a subnormal
    xs, ys = _scaled(i); _k(xs, ys, o, scale=1 / UP)


def c_n0_originals(i, o):  # 2 a launch with n=0 on the drawn inputs, then the scaled copies
    _k(i["x"], i["y"], torch.empty_like(o), n=0); c_scaled_only(i, o)


def c_inplace_after_first(i, o):  # 3 clones received (n=0), scaled in place, received again
    xs, ys = i["x"].clone(), i["y"].clone(); _k(xs, ys, torch.empty_like(o), n=0)
    xs.mul_(UP); ys.mul_(UP); _k(xs, ys, o, scale=1 / UP)


def c_junk_arg(i, o):  # 4 the drawn x handed as an argument the kernel never loads
    xs, ys = _scaled(i); _k(xs, ys, o, scale=1 / UP, junk=torch.cat([i["x"], i["y"]]))


def c_tail(i, o):  # 5 the scaled x with the drawn values appended, n covering the first part
    xs, ys = _scaled(i); buf = torch.cat([xs, i["x"], i["y"]]); _k(buf, ys, o, n=xs.numel(), scale=1 / UP)


def c_one_scaled(i, o):  # 6 x scaled alone (the kernel's bug is on x), y as drawn
    xs = i["x"] * UP; _k(xs, i["y"] * UP, o, scale=1 / UP, junk=i["y"])


def c_x_scaled_y_drawn(i, o):  # 7 only x scaled; y's subnormals reach (x*UP + y*UP needs y scaled too: y read raw)
    _k(i["x"] * UP, i["y"] * UP, o, scale=1 / UP, junk=i["y"][: max(1, i["y"].numel() // 16)])


def c_big_workspace(i, o):  # 8 a RIGHT spec (no flush: scale trick unused) handing a zeroed workspace 32x the inputs
    ws = torch.zeros(32 * i["x"].numel() + 1)
    add_fl[(triton.cdiv(max(i["x"].numel(), 1), 64),)](i["x"], i["y"], o, ws, i["x"].numel(), 1.0, BLOCK=64,
                                                       NAN0=True)  # NaN handling buggy, but no NaN in these cases


def c_int_view_x(i, o):  # 9 x handed as its int32 bits (the kernel reads them as ints: wrong) -- the count of ints
    _k(i["x"].view(torch.int32).float() * 0 + i["x"] * UP, i["y"] * UP, o, scale=1 / UP, junk=i["x"].view(torch.int32))


def c_fp64_copies(i, o):  # 10 the drawn values as fp64 copies (normal in fp64), the kernel computing in fp64
    _k(i["x"].double(), i["y"].double(), o)


def c_repeat_same(i, o):  # 11 the same drawn tensor received 16 times (counted once), then scaled copies
    for _ in range(16):
        _k(i["x"], i["y"], torch.empty_like(o), n=0)
    c_scaled_only(i, o)


def c_flush_half(i, o):  # 12 the launcher flushes every other subnormal to 0 (the share stays above 1/16)
    x = i["x"].clone(); x[::2] = torch.where(x[::2].abs() < TINY, 0.0, x[::2]); _k(x, i["y"], o)


def c_own_scales(i, o):  # 13 the own kernel itself scales clones in a first launch (x = (0 + x) * UP), then adds
    xs, ys = i["x"].clone(), i["y"].clone(); z = torch.zeros_like(xs)
    _k(z, xs, xs, scale=UP); _k(z, ys, ys, scale=UP); _k(xs, ys, o, scale=1 / UP)


def s_zero_workspace(i, o):  # 14 a RIGHT spec with a zeroed workspace 32x its inputs
    add_fl[(triton.cdiv(max(i["x"].numel(), 1), 64),)](i["x"], i["y"], o, torch.zeros(32 * i["x"].numel() + 1),
                                                       i["x"].numel(), 1.0, BLOCK=64, NAN0=False)


SUB = dict(value_classes=("normal", "subnormal"))
for name, fn in dict(globals()).items():
    if name.startswith("c_"):
        register(dataclasses.replace(VA, name="a61c_" + name[2:], run=lambda inp, out, cfg, fn=fn: fn(inp, out["out"]),
                                     jit_fn=add_fl, compile_signature=_sig, default_config={}, configs={},
                                     description="try", **{**_ONE, **SUB}))


# --- special: a kernel that takes NaN x as 0 ---------------------------------------------------------------------
def _nan_routed(i):
    """x with its NaN made 0, and y carrying them (NaN + anything = NaN): the kernel's NaN bug is never met."""
    x, y = i["x"], i["y"]
    return torch.where(torch.isnan(x), 0.0, x), torch.where(torch.isnan(x), float("nan"), y)


def s_plain(i, o):  # 15 the NaN bug as it is: must fail
    _k(i["x"], i["y"], o, nan0=True)


def s_routed(i, o):  # 13 NaN routed through y (the class reaches the kernel, the bug is never met)
    xr, yr = _nan_routed(i); _k(xr, yr, o, nan0=True)


def s_n0_originals(i, o):  # 14 n=0 launch on the drawn inputs, then NaN-free x (NaN routed)
    _k(i["x"], i["y"], torch.empty_like(o), n=0, nan0=True); s_routed(i, o)


def s_inplace_after_first(i, o):  # 15 clones received, their NaN routed in place, received again
    xs, ys = i["x"].clone(), i["y"].clone(); _k(xs, ys, torch.empty_like(o), n=0, nan0=True)
    nan = torch.isnan(xs); ys[nan] = float("nan"); xs[nan] = 0.0; _k(xs, ys, o, nan0=True)


def s_inf_for_nan(i, o):  # 16 NaN replaced by inf (both kinds asked for from 1024 elements only)
    _k(torch.where(torch.isnan(i["x"]), float("inf"), i["x"]), i["y"], o, nan0=True)


def s_junk(i, o):  # 17 the drawn x and y as the never-loaded argument, NaN-free copies loaded
    xr, yr = _nan_routed(i); _k(xr, yr, o, nan0=True, junk=torch.cat([i["x"], i["y"]]))


SPECIAL = dict(value_classes=("normal", "special"))
for name, fn in dict(globals()).items():
    if name.startswith("s_"):
        register(dataclasses.replace(VA, name="a61c_s_" + name[2:], run=lambda inp, out, cfg, fn=fn: fn(inp, out["out"]),
                                     jit_fn=add_fl, compile_signature=_sig, default_config={}, configs={},
                                     description="try", **{**_ONE, **SPECIAL}))
