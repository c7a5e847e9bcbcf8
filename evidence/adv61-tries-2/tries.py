"""Tries against the round's rules: a returned output stored by the spec's kernel (r_*), a value class counted on
what the kernel loads (v_*), a known issue matched per element over the bound (k_*). Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/adv61-tries-2/tries.py \
        --kernels='t2_*' -q -p no:xdist -k test_matches_reference --no-results
Outcomes before (b0122dc's suite/) and after are in README.md.
"""
from __future__ import annotations

import dataclasses

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


def _k(x, y, out, ws, n, scale):
    scaled_flush_add[(triton.cdiv(max(n, 1), 64),)](x, y, out, ws, n, scale, BLOCK=64, FLUSH=True)


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
