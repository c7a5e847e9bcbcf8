"""Tries against the returned-outputs watch (last_writer.ReturnedWatch): a wrong kernel (x - y) whose launcher
makes the returned values right. Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/trust6-tries/returned_tries.py \
        --kernels='rt_*' -q -p no:xdist -k test_matches_reference
"""
from __future__ import annotations

import dataclasses

import torch
import triton

from kernels.registry import register
from kernels.vector_add import SPEC as VA
from tests.fixtures.own_kernel import _ONE, _wrong, _wrong_signature, zero_fill


def _new(x):
    return torch.empty_like(x)


def t_clone(i):  # the kernel's tensor, cloned after torch fixed it
    o = _new(i["x"]); _wrong(i["x"], i["y"], o); o.copy_(i["x"] + i["y"]); return {"out": o.clone()}


def t_add_out(i):  # torch.add(out=) after the kernel
    o = _new(i["x"]); _wrong(i["x"], i["y"], o); torch.add(i["x"], i["y"], out=o); return {"out": o}


def t_int_view(i):  # the answer's bits through an int32 view after the kernel
    o = _new(i["x"]); _wrong(i["x"], i["y"], o); o.view(torch.int32).copy_((i["x"] + i["y"]).view(torch.int32))
    return {"out": o}


def t_one_elem(i):  # torch fixes element 0 only (N=1 cases are all of it)
    o = _new(i["x"]); _wrong(i["x"], i["y"], o); o.copy_(i["x"] + i["y"]); return {"out": o}


def t_before_n0(i):  # torch's answer first, the kernel launched on it with n=0
    o = i["x"] + i["y"]; _wrong(i["x"], i["y"], o, n=0); return {"out": o}


def t_tail_of_buf(i):  # the kernel writes buf[:n]; torch wrote the answer into buf[n:] before; buf[n:] returned
    n = i["x"].numel(); buf = torch.empty(2 * n, dtype=i["x"].dtype); buf[n:].copy_(i["x"] + i["y"])
    _wrong(i["x"], i["y"], buf); return {"out": buf[n:]}


def t_read_only(i):  # torch's answer, handed to the kernel as an input it reads (it writes a scratch tensor)
    o = i["x"] + i["y"]; _wrong(o, i["y"], _new(o)); return {"out": o}


def t_helper_after(i):  # a helper kernel (not the spec's) zero-fills after the own kernel, torch adds after it
    o = _new(i["x"]); n = o.numel(); _wrong(i["x"], i["y"], o)
    zero_fill[(triton.cdiv(n, 64),)](o, n, BLOCK=64); o.add_(i["x"] + i["y"]); return {"out": o}


def t_reshape_view(i):  # the answer written through a reshaped view after the kernel
    o = _new(i["x"]); _wrong(i["x"], i["y"], o); o.view(-1, 1)[:, 0].copy_(i["x"] + i["y"]); return {"out": o}


def t_second_storage(i):  # the kernel writes o; the answer is returned in a tensor the kernel read, not wrote
    o = _new(i["x"]); s = (i["x"] + i["y"]).clone(); _wrong(s, i["y"], o); return {"out": s}


for name, fn in dict(globals()).items():
    if name.startswith("t_"):
        register(dataclasses.replace(VA, name="rt_" + name[2:], run=lambda inp, out, cfg, fn=fn: fn(inp),
                                     make_outputs=None, jit_fn=__import__("tests.fixtures.own_kernel", fromlist=["x"]
                                                                          ).wrong_add_kernel,
                                     compile_signature=_wrong_signature, default_config={}, configs={},
                                     description="try", **_ONE))
