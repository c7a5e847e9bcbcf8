"""Shipped launchers refuse the layouts their kernels cannot index, with an error naming the argument and its strides.

The contract probe (suite/checks/restride.py) found seven launchers on an H200 that accepted a layout their specs
never declared and computed garbage: a broadcast (stride 0) weight, mean, rstd, target, grad_loss, scale or fp8 code
read at ``ptr + i``, and dropout's mask stored at its logical index into a strided output. Each now raises a
ValueError before launching (kernels.inputs.require_dense / require_rows), which the probe records as a refusal.
No kernel runs here: the refusal comes first.
"""

from __future__ import annotations

import pytest
import torch

from kernels import _tiles, inputs
from kernels.cross_entropy import cross_entropy
from kernels.dropout import dropout
from kernels.fp8 import fp8_quant_rowwise, fp8_scaled_matmul
from kernels.fp8_codes import fp8_codes
from kernels.gelu import gelu
from kernels.layernorm import layernorm
from kernels.layernorm_backward import layernorm_backward
from kernels.reductions import row_reduce
from kernels.rmsnorm import rmsnorm
from kernels.softmax import softmax
from kernels.softmax_online import softmax_online
from kernels.swiglu import swiglu
from kernels.vector_add import vector_add

M, N = 4, 8


def _bcast(t: torch.Tensor) -> torch.Tensor:
    return t[:1].expand_as(t)


def _wide(shape: tuple[int, int], dtype=torch.float32) -> torch.Tensor:
    return torch.zeros(shape[0], shape[1] + 4, dtype=dtype)[:, :shape[1]]


x, w = torch.randn(M, N), torch.randn(N)
f32 = torch.zeros(M)
fp8 = torch.float8_e4m3fn

CASES = {
    "layernorm weight": (lambda: layernorm(x, _bcast(w), w), "weight"),
    "layernorm bias": (lambda: layernorm(x, w, _bcast(w)), "bias"),
    "layernorm y": (lambda: layernorm(x, w, w, out={"y": _bcast(x), "mean": f32, "rstd": f32}), "out['y']"),
    "layernorm_backward mean": (lambda: layernorm_backward(x, x, w, _bcast(f32), f32), "mean"),
    "layernorm_backward rstd": (lambda: layernorm_backward(x, x, w, f32, _bcast(f32)), "rstd"),
    "layernorm_backward weight": (lambda: layernorm_backward(x, x, _bcast(w), f32, f32), "weight"),
    "cross_entropy target": (lambda: cross_entropy(x, _bcast(torch.zeros(M, dtype=torch.int64)), f32), "target"),
    "cross_entropy grad_loss": (lambda: cross_entropy(x, torch.zeros(M, dtype=torch.int64), _bcast(f32)),
                                "grad_loss"),
    "dropout mask": (lambda: dropout(x, 0.5, 1, out={"out": _wide((M, N)), "mask": _wide((M, N), torch.int8)}),
                     "out['mask']"),
    "rmsnorm weight": (lambda: rmsnorm(x, _bcast(w)), "weight"),
    "rmsnorm rstd": (lambda: rmsnorm(x, w, out={"y": torch.empty(M, N), "rstd": _bcast(f32)}), "out['rstd']"),
    "row_sum out": (lambda: row_reduce("row_sum", x, _bcast(f32)), "out"),
    "gelu out": (lambda: gelu(x, _bcast(x)), "out"),
    "softmax out": (lambda: softmax(x, _bcast(x)), "out"),
    "softmax_online out": (lambda: softmax_online(x, _bcast(x)), "out"),
    "swiglu out": (lambda: swiglu(x, x, _bcast(x)), "out"),
    "vector_add y": (lambda: vector_add(w, _bcast(w)), "y"),
    "vector_add out": (lambda: vector_add(w, w, torch.zeros(N, 2)[:, 0]), "out"),
    "fp8_codes codes": (lambda: fp8_codes(_bcast(torch.zeros(N).to(fp8)), torch.zeros(N),
                                          {"decoded": torch.zeros(N), "encoded": torch.zeros(N).to(fp8),
                                           "bits": torch.zeros(N, dtype=torch.int16)}), "codes"),
    "fp8_quant_rowwise scale": (lambda: fp8_quant_rowwise(x, fp8, out={"q": torch.zeros(M, N).to(fp8),
                                                                       "scale": _bcast(f32)}), "out['scale']"),
    "fp8_scaled_matmul a_scale": (lambda: fp8_scaled_matmul(x.to(fp8), _bcast(f32), x.t().to(fp8), f32), "a_scale"),
    "fp8_scaled_matmul b_scale": (lambda: fp8_scaled_matmul(x.to(fp8), f32, x.t().to(fp8), _bcast(f32)), "b_scale"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_launcher_refuses_a_layout_its_kernel_cannot_index_naming_the_argument(name):
    call, argument = CASES[name]
    with pytest.raises(ValueError) as info:
        call()
    text = str(info.value)
    assert f"{argument} must be" in text and "strides" in text and ".contiguous()" in text, text


def test_the_helpers_take_what_the_kernels_index():
    inputs.require_dense("k", "w", w)
    inputs.require_rows("k", "x", _wide((M, N)))  # any row stride
    inputs.require_rows("k", "x", _bcast(x))  # an input's rows may repeat
    inputs.require_rows("k", "y", _wide((M, N)), written=True)
    inputs.require_rows("k", "y", torch.zeros(1, N).expand(1, N), written=True)  # one row: nothing overlaps
    with pytest.raises(ValueError, match=r"k: y must be 2-D with unit column stride and rows that do not overlap"):
        inputs.require_rows("k", "y", _bcast(x), written=True)
    with pytest.raises(ValueError, match=r"k: x must be 2-D with unit column stride and any row stride, got shape "
                                         r"\(8, 4\) strides \(1, 8\)"):
        inputs.require_rows("k", "x", x.t())
    with pytest.raises(ValueError, match=r"k: w must be contiguous \(strides \(1,\) for shape \(8,\)\), got strides "
                                         r"\(0,\)"):
        inputs.require_dense("k", "w", _bcast(w))


def test_a_broadcast_operand_never_takes_the_descriptor_kernel():
    """TMA takes no stride 0: a broadcast A (every row row 0) runs the pointer kernel, which reads its strides."""
    a = torch.zeros(64, 64, dtype=torch.float16)
    b = torch.zeros(64, 64, dtype=torch.float16)
    c = torch.zeros(64, 64, dtype=torch.float16)
    assert _tiles.descriptor_ok(a, b, c)
    assert not _tiles.descriptor_ok(_bcast(a), b, c)


def test_a_strided_output_with_rows_narrower_than_16_bytes_never_takes_the_descriptor_kernel():
    """A descriptor store into C rows of fewer than 16 bytes wrote the rest of each 16 bytes on an H200 (N=1 bf16 in
    rows 16 bytes apart: 14 elements between the rows of a 2-row C): such a C runs the pointer kernel. A C of the same
    rows 16 bytes wide (N=8) still takes the descriptor kernel."""
    a = torch.zeros(2, 64, dtype=torch.bfloat16)
    wide = torch.zeros(2, 8, dtype=torch.bfloat16)
    narrow = wide[:, :1]  # rows 16 bytes apart, 2 bytes wide: an aligned slice
    assert _tiles.descriptor_ok(a, torch.zeros(64, 8, dtype=torch.bfloat16), wide)
    assert not _tiles.descriptor_ok(a, torch.zeros(64, 8, dtype=torch.bfloat16)[:, :1], narrow)
