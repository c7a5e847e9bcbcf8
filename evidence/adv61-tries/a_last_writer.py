"""Rule A (the values judged are the spec's own kernel's last writes): tries to pass a wrong kernel (x - y, or a
copy) whose launcher makes the judged values right. Run:
    python -m pytest suite/test_kernels.py --backend=interpret --kernel-module=evidence/adv61-tries/a_last_writer.py \
        --kernels='a61a_*' -q -p no:xdist -k test_matches_reference --no-results
Each try's outcome (before and after the round's fixes) is in README.md.
"""
from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from kernels.registry import register
from kernels.vector_add import SPEC as VA
from kernels.vector_add import vector_add
from tests.fixtures.own_kernel import _ONE, _wrong, _wrong_signature, wrong_add_kernel, zero_fill


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _copy(src, out):
    n = src.numel()
    copy_kernel[(triton.cdiv(n, 64),)](src, out, n, BLOCK=64)


def _copy_signature(dtype, meta):
    from kernels.spec import signature

    return signature(copy_kernel, {"src_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32"}, {"BLOCK": 64})


def _ans(i):
    return i["x"] + i["y"]


# --- the suite's outputs (Watch) ---------------------------------------------------------------------------------
SUITE = {
    # 1 torch writes the answer first; the kernel only reads the output (writes a scratch)
    "pre_read_only": lambda i, o: (o["out"].copy_(_ans(i)), _wrong(o["out"], i["y"], torch.empty_like(i["x"]))),
    # 2 the dict entry rebound to torch's answer after the kernel wrote the suite's tensor
    "rebind_dict": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), o.__setitem__("out", _ans(i))),
    # 3 the suite's tensor's storage swapped (set_) for torch's answer after the kernel
    "set_storage": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), o["out"].set_(_ans(i))),
    # 4 .data assigned after the kernel
    "data_assign": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), setattr(o["out"], "data", _ans(i))),
    # 5 torch writes through an as_strided alias of the storage after the kernel
    "alias_after": lambda i, o: (_wrong(i["x"], i["y"], o["out"]),
                                 o["out"].as_strided((o["out"].numel(),), (1,)).copy_(_ans(i).reshape(-1))),
    # 6 the kernel wrong, torch fixes, the kernel launched again with n=0 on it
    "fix_then_n0": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), o["out"].copy_(_ans(i)),
                                 _wrong(i["x"], i["y"], o["out"], n=0)),
    # 7 the inputs changed so the reference matches x - y (y negated in place after the kernel)
    "negate_input": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), i["y"].neg_()),
    # 8 run returns torch's answer though make_outputs is set (the suite's tensor written by the kernel, wrong)
    "return_ignored": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), {"out": _ans(i)})[1],
    # 9 dict cleared and refilled
    "clear_update": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), o.clear(), o.update(out=_ans(i))),
    # 10 the kernel writes out in two launches; torch writes the first half between them, the second launch rewrites
    #    the second half only (the first half's last writer is torch)
    "torch_between": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), o["out"].copy_(_ans(i)),
                                   _wrong(i["x"], i["y"], o["out"], n=min(1, i["x"].numel()))),
    # 11 a helper kernel (not the spec's) writes the answer after the own one
    "helper_after": lambda i, o: (_wrong(i["x"], i["y"], o["out"]), _copy(_ans(i), o["out"])),
    # 12 torch's answer in a scratch; the own kernel is run as a copy of it? no: the own kernel reads the scratch as
    #    x and zeros as y, then x - 0 = the answer (the wrong kernel computes torch's answer)
    "launder": lambda i, o: _wrong(_ans(i), torch.zeros_like(i["y"]), o["out"]),
}
for name, fn in SUITE.items():
    register(dataclasses.replace(VA, name="a61a_" + name, run=lambda inp, out, cfg, fn=fn: fn(inp, out),
                                 jit_fn=wrong_add_kernel, compile_signature=_wrong_signature, default_config={},
                                 configs={}, description="try", **_ONE))

# 13 an own "kernel" that copies: jit_fn declared as a copy kernel, torch computes the answer
register(dataclasses.replace(VA, name="a61a_copy_is_own", run=lambda i, o, cfg: _copy(_ans(i), o["out"]),
                             jit_fn=copy_kernel, compile_signature=_copy_signature, default_config={}, configs={},
                             description="try", **_ONE))
# 14 initial_outputs from an input that torch... the output starts from x; the wrong kernel adds nothing (n=0)
#    and torch adds y in place? (a write after the kernel) -- expected to fail
register(dataclasses.replace(VA, name="a61a_initial_then_torch", initial_outputs={"out": "x"},
                             run=lambda i, o, cfg: (_wrong(i["x"], i["y"], o["out"], n=0), o["out"].add_(i["y"])),
                             jit_fn=wrong_add_kernel, compile_signature=_wrong_signature, default_config={},
                             configs={}, description="try", **_ONE))


# --- returned outputs (ReturnedWatch) ----------------------------------------------------------------------------
def _new(x):
    return torch.empty_like(x)


RET = {
    # 15 torch's answer first, the kernel writes it with n=0 (every lane masked)
    "before_n0": lambda i: (lambda o: (_wrong(i["x"], i["y"], o, n=0), {"out": o})[1])(_ans(i)),
    # 16 the kernel writes o, then torch overwrites through an alias made by torch.as_strided on a clone's storage? no:
    #    torch writes the answer into a second view of the same storage (a different dtype view)
    "view_after": lambda i: (lambda o: (_wrong(i["x"], i["y"], o), o.view(torch.uint8).copy_(_ans(i).view(torch.uint8)),
                                        {"out": o})[2])(_new(i["x"])),
    # 17 a big buffer the kernel receives whole as a dummy argument (so its extent is reached), the answer in its tail
    "dummy_arg_reach": lambda i: (lambda b, n: (b[n:].copy_(_ans(i)), _wrong(i["x"], i["y"], b, n=n),
                                               {"out": b[n:]})[2])(torch.empty(2 * i["x"].numel()), i["x"].numel()),
    # 18 the answer written by torch, then the kernel launched on it with x=answer, y=0 (x - 0: the same bits)
    "rewrite_same": lambda i: (lambda o: (_wrong(o, torch.zeros_like(o), o), {"out": o})[1])(_ans(i)),
    # 19 host_epilogue declared on a plain output (the kernel writes a scratch, torch returns the answer)
    "epilogue_lie": lambda i: (_wrong(i["x"], i["y"], _new(i["x"])), {"out": _ans(i)})[1],
    # 20 the kernel writes o; torch writes the answer into o via a second tensor sharing the storage made with
    #    torch.Tensor().set_() after the launch
    "set_alias_after": lambda i: (lambda o: (_wrong(i["x"], i["y"], o),
                                            torch.empty(0).set_(o.untyped_storage(), 0, o.shape).copy_(_ans(i)),
                                            {"out": o})[2])(_new(i["x"])),
    # 21 the kernel writes o wrongly; torch writes the answer into a fresh tensor placed at the same address? no:
    #    returns o.detach() after torch fixed o through detach (same storage)
    "detach_after": lambda i: (lambda o: (_wrong(i["x"], i["y"], o), o.detach().copy_(_ans(i)), {"out": o})[2])(
        _new(i["x"])),
    # 22 the vector_add (right) kernel of another spec writes the answer after the wrong own kernel
    "other_kernel_after": lambda i: (lambda o: (_wrong(i["x"], i["y"], o), vector_add(i["x"], i["y"], o, {}),
                                               {"out": o})[2])(_new(i["x"])),
}
_RET = dict(make_outputs=None, jit_fn=wrong_add_kernel, compile_signature=_wrong_signature, default_config={},
            configs={}, **_ONE)
for name, fn in RET.items():
    extra = {"host_epilogue": {"out": "torch returns the sum"}} if name == "epilogue_lie" else {}
    register(dataclasses.replace(VA, name="a61a_r_" + name, run=lambda inp, out, cfg, fn=fn: fn(inp),
                                 description="try", **_RET, **extra))
_ = zero_fill

# 23 r_rewrite_same with normal values only (rule C does not apply): what rule A alone says
register(dataclasses.replace(VA, name="a61a_r_rewrite_same_normal", run=lambda inp, out, cfg: RET["rewrite_same"](inp),
                             description="try", value_classes=("normal",), **_RET))
