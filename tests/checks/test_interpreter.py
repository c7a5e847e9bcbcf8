"""What real kernels do that Triton's CPU interpreter lacked (suite/checks/interpreter.py): each runs and gives the GPU's
answer, or fails naming what is missing and what to do."""

from __future__ import annotations

import os

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice

from suite import compat
from suite.checks import interpreter

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter only")


@triton.jit
def unary(x_ptr, out_ptr, n, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    if WHICH == 0:
        y = libdevice.rsqrt(x)
    elif WHICH == 1:
        y = libdevice.tanh(x)
    elif WHICH == 2:
        y = libdevice.erf(x)
    elif WHICH == 3:
        y = libdevice.pow(x, 1.5)
    elif WHICH == 4:
        y = libdevice.isnan(x).to(tl.float32)
    elif WHICH == 5:
        y = libdevice.fast_expf(x)
    else:
        y = cuda_libdevice.rsqrt(x)  # the vendor's module, called directly
    tl.store(out_ptr + offs, y, mask=mask)


REFERENCES = {0: torch.rsqrt, 1: torch.tanh, 2: torch.erf, 3: lambda x: x ** 1.5, 4: lambda x: torch.isnan(x).float(),
              5: torch.exp, 6: torch.rsqrt}


@pytest.mark.parametrize("which", sorted(REFERENCES))
def test_libdevice_functions_compute_what_the_gpu_library_does(which):
    assert compat.applied("interpreter-libdevice")
    x = torch.linspace(0.1, 3.0, 37, dtype=torch.float32)
    x[5] = float("nan")
    out = torch.empty_like(x)
    unary[(1,)](x, out, 37, WHICH=which, BLOCK=64)
    expected = REFERENCES[which](x.double()).float()
    assert torch.allclose(out, expected, rtol=2e-6, atol=0, equal_nan=True), (out - expected).abs().max()


@triton.jit
def scalar_to(x_ptr, out_ptr, n, eps, offset, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + eps.to(tl.float32) + offset.to(tl.float32), mask=mask)


def test_a_float_scalar_argument_is_an_fp32_scalar_as_on_a_gpu():
    x = torch.zeros(8)
    out = torch.empty_like(x)
    scalar_to[(1,)](x, out, 8, 1e-5, 0.1, BLOCK=8)
    # The GPU passes Python floats as fp32: 0.1 becomes 0.100000001490116...
    assert torch.equal(out, torch.full((8,), float(torch.tensor(1e-5) + torch.tensor(0.1))))


@triton.jit
def flagged_double(x_ptr, out_ptr, n, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if flag:
        x = x * 2.0
    tl.store(out_ptr + offs, x, mask=mask)


def test_a_bool_argument_is_a_runtime_flag_as_on_a_gpu():
    """A Python bool passed as a run-time argument (bitsandbytes' 32-bit optimizers pass one) failed as a bare
    `ValueError: numpy data itemsize (32 bits) exceeds dtype primitive_bitwidth (1 bits) for triton type int1`
    (issue 62, item 4); compiled Triton takes it as an i1 scalar."""
    x = torch.arange(4.0)
    out = torch.empty_like(x)
    flagged_double[(1,)](x, out, 4, True, BLOCK=8)
    assert torch.equal(out, x * 2)
    flagged_double[(1,)](x, out, 4, False, BLOCK=8)
    assert torch.equal(out, x)


@triton.jit
def bf16_constant(out_ptr, value: tl.constexpr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), value, dtype=tl.bfloat16))


@pytest.mark.parametrize("value", [1.00415, 1.0 + 2**-8, -3.1415926, 65504.0])
def test_bf16_constants_round_to_nearest_even(value):
    out = torch.empty(4, dtype=torch.bfloat16)
    bf16_constant[(1,)](out, value, BLOCK=4)
    assert torch.equal(out, torch.full((4,), value, dtype=torch.float32).to(torch.bfloat16))


@triton.jit
def fp16_tanh(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.tanh(tl.load(x_ptr + offs)))


@triton.jit
def bessel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, libdevice.j0(tl.load(x_ptr + offs)))


def test_what_the_interpreter_cannot_run_is_named_with_what_to_do():
    x = torch.ones(4, dtype=torch.float16)
    with pytest.raises(Exception) as err:
        fp16_tanh[(1,)](x, x, BLOCK=4)
    gap = interpreter.gap_in(err.value)
    assert gap is not None and "libdevice.tanh got fp16: the GPU's libdevice takes fp32 or fp64" in str(gap)
    with pytest.raises(Exception) as err:
        bessel[(1,)](x.float(), x.float(), BLOCK=4)
    gap = interpreter.gap_in(err.value)
    assert gap is not None and "libdevice.j0 has no interpreter version" in str(gap)
    assert "--backend=cuda" in str(gap) and "KnownIssue(backend='interpret'" in str(gap)


@triton.jit
def inline_asm_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


def test_what_triton_s_own_interpreter_lacks_is_a_gap_too():
    """inline_asm raises NotImplementedError inside Triton's interpreter: named as what the interpreter lacks (the
    case fails as 'interpreter', with the advice), not as a bug of the kernel."""
    x = torch.ones(4)
    with pytest.raises(Exception) as err:
        inline_asm_copy[(1,)](x, x, BLOCK=4)
    gap = interpreter.gap_in(err.value)
    assert gap is not None and "inline_asm not supported in interpreter mode" in str(gap)
    assert "--backend=cuda" in str(gap)
    assert interpreter.gap_in(NotImplementedError("a launcher's own")) is None  # only the interpreter's
