"""Tries against the round's rules: a returned output stored by the spec's kernel (r_*), a value class counted on
what the kernel loads (v_*), a known issue matched per element over the bound (k_*). Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/adv61-tries-2/tries.py \
        --kernels='t2_*' -q -p no:xdist -k test_matches_reference --no-results
Round 2 adds 43 tries (r_ 9-20, v_ 6-20, k_ 5-20); k_any_element and k_any_count need TRIES_REFUSED=1 and -k.
Outcomes before (b0122dc's suite/) and after are in README.md.
"""
from __future__ import annotations

import dataclasses
import os

import torch
import triton
import triton.language as tl

from kernels.registry import register
from kernels.spec import KnownIssue
from kernels.vector_add import SPEC as VA
from tests.fixtures.own_kernel import _ONE, _wrong, _wrong_signature, wrong_add_kernel
from tests.fixtures.value_class_kernels import _ONE as _VONE
from tests.fixtures.value_class_kernels import _scaled_signature, scaled_flush_add


def _c(i):
    return i["x"].contiguous(), i["y"].contiguous()


# --- returned outputs (make_outputs=None), the wrong kernel x - y ---------------------------------------------------
def r_tail_before(i, o):  # torch's answer, the kernel writes all but the last element
    x, y = _c(i); out = x + y; _wrong(x, -y, out, n=out.numel() - 1); return {"out": out}


def r_n0(i, o):  # torch's answer, the kernel launched on it with n=0
    x, y = _c(i); out = x + y; _wrong(x, y, out, n=0); return {"out": out}


def r_rewrite_same(i, o):  # torch's answer, the kernel loads it and stores it back (x - 0 over itself)
    x, y = _c(i); out = x + y; _wrong(out, torch.zeros_like(out), out); return {"out": out}


def r_neg_y(i, o):  # launder: -y computed by torch, the wrong kernel computes x - (-y) into its own tensor
    x, y = _c(i); out = torch.empty_like(x); _wrong(x, -y, out); return {"out": out}


def r_answer_as_x(i, o):  # launder: torch's answer as x, zeros as y, into an empty tensor
    x, y = _c(i); out = torch.empty_like(x); _wrong(x + y, torch.zeros_like(y), out); return {"out": out}


def r_big_buffer(i, o):  # a 2n buffer: torch's answer in the tail, the kernel writes the head, tail returned
    x, y = _c(i); n = x.numel(); buf = torch.cat([torch.empty_like(x), x + y])
    _wrong(x, y, buf, n=n); return {"out": buf[n:]}


def r_view_other_storage(i, o):  # the kernel writes a clone; torch's answer returned under the clone's view? no:
    x, y = _c(i); out = x + y; tmp = out.clone(); _wrong(x, -y, tmp); return {"out": out}


def r_right_inplace(i, o):  # right: out starts as a clone of x, the kernel adds y in place (read-modify-write)
    x, y = _c(i); out = x.clone(); _wrong(out, -y, out); return {"out": out}


for name, fn in (("r_tail_before", r_tail_before), ("r_n0", r_n0), ("r_rewrite_same", r_rewrite_same),
                 ("r_neg_y", r_neg_y), ("r_answer_as_x", r_answer_as_x), ("r_big_buffer", r_big_buffer),
                 ("r_view_other_storage", r_view_other_storage), ("r_right_inplace", r_right_inplace)):
    register(dataclasses.replace(VA, name="t2_" + name, run=lambda inp, out, cfg, fn=fn: fn(inp, out),
                                 make_outputs=None, jit_fn=wrong_add_kernel, compile_signature=_wrong_signature,
                                 default_config={}, configs={}, description="try", layouts=("contiguous",), **_ONE))


# --- value classes: the kernel flushes subnormals; the launcher keeps the drawn values from being loaded ----------
UP = 2.0 ** 64


def _k(x, y, out, ws, n, scale, flush=True):
    scaled_flush_add[(triton.cdiv(max(n, 1), 64),)](x, y, out, ws, n, scale, BLOCK=64, FLUSH=flush)


def v_ws_is_x_and_y(i, o):  # both drawn tensors as ws (never loaded)
    x, y = i["x"] * UP, i["y"] * UP; _k(x, y, o["out"], torch.cat([i["x"], i["y"]]), x.numel(), 1 / UP)


def v_one_loaded(i, o):  # the drawn x loaded in one element only (a launch with n=1), the rest scaled copies
    _k(i["x"], i["y"], torch.empty_like(o["out"]), i["x"], 1, 1.0); v_ws_is_x_and_y(i, o)


def v_loaded_unused(i, o):  # the drawn x loaded as x (whole) in a launch whose result is thrown away
    _k(i["x"], i["y"], torch.empty_like(o["out"]), i["x"], i["x"].numel(), 1.0); v_ws_is_x_and_y(i, o)


def v_interleaved(i, o):  # drawn and scaled interleaved in one buffer, the kernel loads the scaled half (stride)
    x = torch.stack([i["x"] * UP, i["x"]], 1).reshape(-1); n = i["x"].numel()
    _k(x[::2], i["y"] * UP, o["out"], x, n, 1 / UP)


def v_right_scaled_own(i, o):  # right: the kernel computes on the drawn values (no flush)
    n = i["x"].numel()
    scaled_flush_add[(triton.cdiv(n, 64),)](i["x"], i["y"], o["out"], i["x"], n, 1.0, BLOCK=64, FLUSH=False)


for name, fn in (("v_ws_is_x_and_y", v_ws_is_x_and_y), ("v_one_loaded", v_one_loaded),
                 ("v_loaded_unused", v_loaded_unused), ("v_interleaved", v_interleaved),
                 ("v_right_scaled_own", v_right_scaled_own)):
    register(dataclasses.replace(VA, name="t2_" + name, run=lambda inp, out, cfg, fn=fn: fn(inp, out),
                                 value_classes=("normal", "subnormal"), jit_fn=scaled_flush_add,
                                 compile_signature=_scaled_signature, description="try", **_VONE))


# --- known issues: element 0 (described) and a second bug under it -------------------------------------------------
@triton.jit
def two_bugs(x_ptr, y_ptr, out_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    if KIND == 0:
        w = tl.where(offs % 97 == 5, v * 1.01, v)  # second bug in about 1% of the elements
    elif KIND == 1:
        w = tl.where(offs == n - 1, v * 1.5, v)  # in the last element alone
    elif KIND == 2:
        w = tl.where(offs % 2 == 1, 0.0, v)  # 0 at odd elements: got 0.0, as the pattern words it
    else:
        w = v
    tl.store(out_ptr + offs, tl.where(offs == 0, 0.0, w), mask=mask)  # the known issue: 0 at element 0


def _two(kind):
    def run(inp, out, cfg):
        n = inp["x"].numel()
        two_bugs[(triton.cdiv(n, 64),)](inp["x"], inp["y"], out["out"], n, KIND=kind, BLOCK=64)
    return run


for name, kind in (("k_one_percent", 0), ("k_last_only", 1), ("k_zero_odd", 2), ("k_right_but_first", 3)):
    register(dataclasses.replace(
        VA, name="t2_" + name, run=_two(kind), jit_fn=None, compile_signature=None, default_config={}, configs={},
        dtypes=("fp32",), examples=(), properties=(), benchmark_shapes=(), batch_dim=None, batch_inputs=(),
        batch_outputs=(), paths=(), value_classes=("normal",), layouts=("contiguous",), description="try",
        known_issues=(KnownIssue(id="zero-at-first-" + name, backend="interpret", dtype="fp32",
                                 failure_pattern=r"at \(0,\) is \S+ the bound \S+ \(got 0\.0, reference ",
                                 reason="planted", link="evidence/adv61-tries-2/tries.py"),)))


# === Round 2: tries to 20 per rule ====================================================================================
# --- R (returned outputs stored by the spec's kernel), 12 more: tries 9-20 ---------------------------------------------
@triton.jit
def acc_add(x_ptr, y_ptr, out_ptr, n, ATOMIC: tl.constexpr, BLOCK: tl.constexpr):
    """out += x + y, as a read-modify-write (ATOMIC=False) or an atomic add: an accumulate-into kernel."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    if ATOMIC:
        tl.atomic_add(out_ptr + offs, v, mask=mask)
    else:
        tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + v, mask=mask)


@triton.jit
def sparse_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out += x where x is not 0 (an in-place update that skips elements it would not change)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    keep = mask & (x != 0.0)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=keep) + x, mask=keep)


@triton.jit
def copy_helper(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def _acc_signature(dtype, meta):
    from kernels.spec import signature

    return signature(acc_add, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32"},
                     {"ATOMIC": 0, "BLOCK": 64})


def _sparse_signature(dtype, meta):
    from kernels.spec import signature

    return signature(sparse_add, {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32"}, {"BLOCK": 64})


def _gather_signature(dtype, meta):
    from kernels.spec import signature

    return signature(gather_flush_add, {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "idx_ptr": "*i32",
                                        "out_ptr": f"*{dtype}", "n": "i32"}, {"BLOCK": 64})


def _acc(x, y, out, atomic=False, n=None):
    n = x.numel() if n is None else n
    acc_add[(triton.cdiv(max(n, 1), 64),)](x, y, out, n, ATOMIC=atomic, BLOCK=64)


def _copy(src, dst, n=None):
    n = src.numel() if n is None else n
    copy_helper[(triton.cdiv(max(n, 1), 64),)](src, dst, n, BLOCK=64)


def r_atomic_add_zero(i, o):  # launder: torch's answer, the kernel atomically adds 0 + 0 to it
    x, y = _c(i); out = x + y; z = torch.zeros_like(x); _acc(z, z, out, atomic=True); return {"out": out}


def r_rmw_add_zero(i, o):  # launder: torch's answer, the kernel adds 0 + 0 to it (load, add, store)
    x, y = _c(i); out = x + y; z = torch.zeros_like(x); _acc(z, z, out); return {"out": out}


def r_low_byte(i, o):  # torch's answer; the kernel rewrites the low byte of each element only (a uint8 view)
    x, y = _c(i); out = x + y; b = out.view(torch.uint8)[::4]
    _wrong(b, torch.zeros_like(b), b); return {"out": out}


def r_gap_between_halves(i, o):  # torch's answer; two launches store [0, h) and [h + 1, n): element h is torch's
    x, y = _c(i); out = x + y; n = x.numel(); h = n // 2
    _wrong(x, -y, out, n=h)
    if n > h + 1:
        _wrong(x[h + 1:], -y[h + 1:], out[h + 1:])
    return {"out": out}


def r_other_kernel_copies(i, o):  # a helper (not the spec's) copies torch's answer in; the spec's kernel with n=0
    x, y = _c(i); out = torch.empty_like(x); _copy(x + y, out); _acc(x, y, out, n=0); return {"out": out}


def r_second_launch_copies(i, o):  # the wrong kernel's answer, then a second own launch copies torch's answer over
    x, y = _c(i); out = torch.empty_like(x); _wrong(x, y, out); _wrong(x + y, torch.zeros_like(x), out)
    return {"out": out}


def r_right_accumulate(i, o):  # right: zeros by torch, the kernel adds x + y into them (read-modify-write)
    x, y = _c(i); out = torch.zeros_like(x); _acc(x, y, out); return {"out": out}


def r_right_atomic(i, o):  # right: zeros by torch, the kernel atomically adds x + y into them
    x, y = _c(i); out = torch.zeros_like(x); _acc(x, y, out, atomic=True); return {"out": out}


def r_right_two_launches(i, o):  # right: two launches, each one half
    x, y = _c(i); out = torch.zeros_like(x); n = x.numel(); h = n // 2
    _acc(x[:h], y[:h], out[:h]); _acc(x[h:], y[h:], out[h:]); return {"out": out}


def r_right_strided(i, o):  # right: the kernel writes every other element of a 2n buffer, returned as that view
    x, y = _c(i); buf = torch.zeros(2 * x.numel(), dtype=x.dtype); v = buf[::2]
    _acc(x, y, v); return {"out": v}


def r_right_padded(i, o):  # right: a buffer 64 elements longer, written whole, returned without its padding
    x, y = _c(i); n = x.numel(); xp = torch.cat([x, torch.zeros(64)]); yp = torch.cat([y, torch.zeros(64)])
    buf = torch.zeros(n + 64); _acc(xp, yp, buf); return {"out": buf[:n]}


def r_right_sparse_inplace(i, o):  # right: out = a clone of x, the kernel adds y only where y is not 0
    x, y = _c(i); out = x.clone(); n = x.numel()
    sparse_add[(triton.cdiv(max(n, 1), 64),)](y, out, n, BLOCK=64); return {"out": out}


for name, fn, jit in (("r_atomic_add_zero", r_atomic_add_zero, acc_add), ("r_rmw_add_zero", r_rmw_add_zero, acc_add),
                      ("r_low_byte", r_low_byte, wrong_add_kernel),
                      ("r_gap_between_halves", r_gap_between_halves, wrong_add_kernel),
                      ("r_other_kernel_copies", r_other_kernel_copies, acc_add),
                      ("r_second_launch_copies", r_second_launch_copies, wrong_add_kernel),
                      ("r_right_accumulate", r_right_accumulate, acc_add), ("r_right_atomic", r_right_atomic, acc_add),
                      ("r_right_two_launches", r_right_two_launches, acc_add),
                      ("r_right_strided", r_right_strided, acc_add), ("r_right_padded", r_right_padded, acc_add),
                      ("r_right_sparse_inplace", r_right_sparse_inplace, sparse_add)):
    sig = {wrong_add_kernel: _wrong_signature, acc_add: _acc_signature, sparse_add: _sparse_signature}[jit]
    register(dataclasses.replace(VA, name="t2_" + name, run=lambda inp, out, cfg, fn=fn: fn(inp, out),
                                 make_outputs=None, jit_fn=jit, compile_signature=sig,
                                 default_config={}, configs={}, description="try", layouts=("contiguous",), **_ONE))


# --- V (value classes counted on what is loaded), 15 more: tries 6-20 -------------------------------------------------
@triton.jit
def gather_flush_add(x_ptr, y_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[idx[i]] = x[idx[i]] + y[idx[i]]: a gather and a scatter (right: idx is a permutation)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    j = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + j, tl.load(x_ptr + j, mask=mask) + tl.load(y_ptr + j, mask=mask), mask=mask)


def _scaled(i, o):  # the computation on copies scaled out of the subnormal range (the kernel's flush never meets them)
    _k(i["x"] * UP, i["y"] * UP, o["out"], torch.zeros(1), i["x"].numel(), 1 / UP)


def v_masked_grid(i, o):  # the drawn x and y handed over in a grid of 8 programs with n=0 (every lane masked off)
    scaled_flush_add[(8,)](i["x"], i["y"], torch.empty_like(o["out"]), i["x"], 0, 1.0, BLOCK=64, FLUSH=True)
    _scaled(i, o)


def v_first_byte(i, o):  # the drawn x and y loaded one byte per element (uint8 views, stride 4), then scaled copies
    xb, yb = i["x"].contiguous().view(torch.uint8)[::4], i["y"].contiguous().view(torch.uint8)[::4]
    scaled_flush_add[(triton.cdiv(xb.numel(), 64),)](xb, yb, torch.empty_like(xb), xb, xb.numel(), 1.0, BLOCK=64,
                                                     FLUSH=False)
    _scaled(i, o)


def v_int_bits(i, o):  # the drawn x and y loaded whole as int32 bits, then scaled copies
    xi, yi = i["x"].contiguous().view(torch.int32), i["y"].contiguous().view(torch.int32)
    scaled_flush_add[(triton.cdiv(xi.numel(), 64),)](xi, yi, torch.empty_like(xi), xi, xi.numel(), 1.0, BLOCK=64,
                                                     FLUSH=False)
    _scaled(i, o)


def v_other_kernel_loads(i, o):  # a helper (not the spec's) loads the drawn x and y whole
    _copy(i["x"].contiguous(), torch.empty(i["x"].numel())); _copy(i["y"].contiguous(), torch.empty(i["x"].numel()))
    _scaled(i, o)


def v_half_loaded(i, o):  # the drawn x and y loaded in their first half only (a launch with n // 2), then scaled
    n = i["x"].numel()
    _k(i["x"], i["y"], torch.empty_like(o["out"]), i["x"], max(n // 2, 1), 1.0); _scaled(i, o)


def v_every_64th(i, o):  # the drawn x and y loaded at every 64th element (strided views), then scaled copies
    xs, ys = i["x"].reshape(-1)[::64], i["y"].reshape(-1)[::64]
    _k(xs, ys, torch.empty_like(xs), xs, xs.numel(), 1.0); _scaled(i, o)


def v_flushed_clone(i, o):  # torch flushes the subnormals of clones, which the kernel loads
    tiny = torch.finfo(torch.float32).tiny
    x, y = i["x"].clone(), i["y"].clone(); x[x.abs() < tiny] = 0; y[y.abs() < tiny] = 0
    _k(x, y, o["out"], x, x.numel(), 1.0)


def v_flush_between(i, o):  # clones loaded in one element (n=1), then flushed in place by torch, then loaded whole
    tiny = torch.finfo(torch.float32).tiny
    x, y = i["x"].contiguous().clone(), i["y"].contiguous().clone()
    _k(x, y, torch.empty_like(o["out"]), x, 1, 1.0)
    x[x.abs() < tiny] = 0; y[y.abs() < tiny] = 0; _k(x, y, o["out"], x, x.numel(), 1.0)


def v_sign_floor(i, o):  # torch replaces each subnormal by the smallest normal of its sign in clones, loaded
    tiny = torch.finfo(torch.float32).tiny
    x, y = i["x"].clone(), i["y"].clone()
    for t in (x, y):
        t[(t.abs() < tiny) & (t != 0)] = torch.sign(t[(t.abs() < tiny) & (t != 0)]) * tiny
    _k(x, y, o["out"], x, x.numel(), 1.0)


def v_right_halves(i, o):  # right: two launches, each one half, into the output
    x, y, out = i["x"].contiguous(), i["y"].contiguous(), o["out"].view(-1); n = x.numel(); h = n // 2
    if h:
        _k(x[:h], y[:h], out[:h], x, h, 1.0, flush=False)
    _k(x[h:], y[h:], out[h:], x, n - h, 1.0, flush=False)


def v_right_inplace(i, o):  # right: torch copies x into the output, the kernel adds y into it in place
    out = o["out"].view(-1); out.copy_(i["x"].reshape(-1)); y = i["y"].contiguous()
    _acc(y, torch.zeros_like(y), out)


def v_right_gather(i, o):  # right: a gather and scatter through a permutation, into the output
    x, y = i["x"].contiguous(), i["y"].contiguous(); n = x.numel()
    idx = torch.randperm(n, generator=torch.Generator().manual_seed(n)).to(torch.int32)
    gather_flush_add[(triton.cdiv(max(n, 1), 64),)](x, y, idx, o["out"], n, BLOCK=64)


def v_right_zero_ws(i, o):  # right: a zeroed workspace loaded too (zeros are no value of a class)
    n = i["x"].numel(); ws = torch.zeros(n)
    _k(ws, ws, torch.empty_like(ws), ws, n, 1.0, flush=False)
    _k(i["x"], i["y"], o["out"], ws, n, 1.0, flush=False)


def v_right_contiguous_copy(i, o):  # right: torch's contiguous copies of the drawn inputs loaded
    x, y = i["x"].contiguous().clone(), i["y"].contiguous().clone()
    _k(x, y, o["out"], x, x.numel(), 1.0, flush=False)


def v_right_spare_programs(i, o):  # right: twice the programs needed, the spare ones masked off whole
    n = i["x"].numel()
    scaled_flush_add[(2 * triton.cdiv(max(n, 1), 64),)](i["x"], i["y"], o["out"], i["x"], n, 1.0, BLOCK=64,
                                                         FLUSH=False)


for name, fn in (("v_masked_grid", v_masked_grid), ("v_first_byte", v_first_byte), ("v_int_bits", v_int_bits),
                 ("v_other_kernel_loads", v_other_kernel_loads), ("v_half_loaded", v_half_loaded),
                 ("v_every_64th", v_every_64th), ("v_flushed_clone", v_flushed_clone),
                 ("v_flush_between", v_flush_between), ("v_sign_floor", v_sign_floor),
                 ("v_right_halves", v_right_halves), ("v_right_inplace", v_right_inplace),
                 ("v_right_gather", v_right_gather), ("v_right_zero_ws", v_right_zero_ws),
                 ("v_right_contiguous_copy", v_right_contiguous_copy), ("v_right_spare_programs", v_right_spare_programs)):
    jits = {"v_right_gather": gather_flush_add, "v_right_inplace": acc_add}
    register(dataclasses.replace(VA, name="t2_" + name, run=lambda inp, out, cfg, fn=fn: fn(inp, out),
                                 value_classes=("normal", "subnormal"), jit_fn=jits.get(name, scaled_flush_add),
                                 compile_signature={gather_flush_add: _gather_signature, acc_add: _acc_signature}.get(
                                     jits.get(name), _scaled_signature), description="try",
                                 **_VONE))


# --- K (a known issue matched per element over the bound), 16 more: tries 5-20 ----------------------------------------
@triton.jit
def known_and_more(x_ptr, y_ptr, out_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """KIND picks the described bug (at element 0 unless said) and the second one beside it."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    nan = float("nan")
    inf = float("inf")
    if KIND == 4:  # NaN at 0 (described) and at every odd element
        w = tl.where((offs == 0) | (offs % 2 == 1), nan, v)
    elif KIND == 5:  # inf at 0 (described), -inf at element 3
        w = tl.where(offs == 0, inf, tl.where(offs == 3, -inf, v))
    elif KIND == 6:  # NaN at 0 (described), 1.01x at about 1% of the elements
        w = tl.where(offs == 0, nan, tl.where(offs % 97 == 5, v * 1.01, v))
    elif KIND == 7:  # inf at 0 (described), NaN at element 1
        w = tl.where(offs == 0, inf, tl.where(offs == 1, nan, v))
    elif KIND == 8:  # 0 at even elements (described: got 0.0), 1.5x at element 1 where n > 520 (over 256 over)
        w = tl.where(offs % 2 == 0, 0.0, tl.where((offs == 1) & (n > 520), v * 1.5, v))
    elif KIND == 9:  # subnormal results flushed (described by the flush words), 1e-30 at about 1% of the elements
        w = tl.where(offs % 97 == 5, 1.0e-30, tl.where(tl.abs(v) < 1.1754943508222875e-38, 0.0, v))
    elif KIND == 10:  # 0 at 0 (described), every element 1 ulp up (a bias)
        w = tl.where(offs == 0, 0.0, v + tl.abs(v) * 1.1920928955078125e-07)
    elif KIND == 11:  # 0 at 0 (described), 100x at element 1 (the worst is elsewhere)
        w = tl.where(offs == 0, 0.0, tl.where(offs == 1, v * 100.0, v))
    elif KIND == 12:  # 0 at 0 (described), 1.5x at element 1 where n < 8
        w = tl.where(offs == 0, 0.0, tl.where((offs == 1) & (n < 8), v * 1.5, v))
    elif KIND == 13:  # 0 at 0 (described), -0.0 at odd elements
        w = tl.where(offs == 0, 0.0, tl.where(offs % 2 == 1, -0.0, v))
    elif KIND == 14:  # 0 at 0, NaN at element 1: both described (two issues)
        w = tl.where(offs == 0, 0.0, tl.where(offs == 1, nan, v))
    elif KIND == 15:  # subnormal results flushed (described), nothing else (right but for it)
        w = tl.where(tl.abs(v) < 1.1754943508222875e-38, 0.0, v)
    else:  # 0 at 0 alone (described): right but for it
        w = tl.where(offs == 0, 0.0, v)
    if KIND == 3:  # element 0 (described) and the last never written
        tl.store(out_ptr + offs, w, mask=mask & (offs != 0) & (offs != n - 1))
    else:
        tl.store(out_ptr + offs, w, mask=mask)


def _more(kind):
    def run(inp, out, cfg):
        n = inp["x"].numel()
        known_and_more[(triton.cdiv(n, 64),)](inp["x"], inp["y"], out["out"], n, KIND=kind, BLOCK=64)
    return run


_ZERO0 = r"at \(0,\) is \S+ the bound \S+ \(got 0\.0, reference "
_FLUSH = r"subnormal results stored as 0, flushed to zero"
for name, kind, patterns, classes in (
        ("k_nan_first_and_odd", 4, [r"NaN where the reference is not \(first at \(0,\)\)"], ("normal",)),
        ("k_inf_first_and_3", 5, [r"infinities differ \(first at \(0,\): got inf"], ("normal",)),
        ("k_unwritten_first_and_last", 3, [r"elements never written \(they still hold the poison; first at \(0,\)"],
         ("normal",)),
        ("k_nan_first_and_values", 6, [r"NaN where the reference is not \(first at \(0,\)\)"], ("normal",)),
        ("k_inf_first_and_nan", 7, [r"infinities differ \(first at \(0,\): got inf"], ("normal",)),
        ("k_past_the_sample", 8, [r"\(got 0\.0, reference "], ("normal",)),
        ("k_flush_words", 9, [_FLUSH], ("subnormal",)),
        ("k_bias_under", 10, [_ZERO0], ("normal",)),
        ("k_worst_elsewhere", 11, [_ZERO0], ("normal",)),
        ("k_small_cases_only", 12, [_ZERO0], ("normal",)),
        ("k_negative_zero", 13, [r"\(got 0\.0, reference "], ("normal",)),
        ("k_zero_anywhere_odd", 13, [r"\(got -?0\.0, reference "], ("normal",)),
        ("k_two_issues_both", 14, [_ZERO0, r"NaN where the reference is not \((first )?at \(1,\)\)"], ("normal",)),
        ("k_right_but_flush", 15, [_FLUSH], ("subnormal",)),
        # A pattern refused at load stops the whole module: these two run alone (TRIES_REFUSED=1).
        *((("k_any_element", 16, [r"at \(\d+,\) is \S+ the bound"], ("normal",)),
           ("k_any_count", 16, [r"\d+ of \d+ elements over"], ("normal",))) if os.environ.get("TRIES_REFUSED") else ())):
    register(dataclasses.replace(
        VA, name="t2_" + name, run=_more(kind), jit_fn=None, compile_signature=None, default_config={}, configs={},
        dtypes=("fp32",), examples=(), properties=(), benchmark_shapes=(), batch_dim=None, batch_inputs=(),
        batch_outputs=(), paths=(), value_classes=classes, layouts=("contiguous",), description="try",
        known_issues=tuple(KnownIssue(id=f"{name}-{j}", backend="interpret", dtype="fp32", failure_pattern=p,
                                      reason="planted", link="evidence/adv61-tries-2/tries.py")
                           for j, p in enumerate(patterns))))
