"""Input builders for kernel specs: seeded, layout-aware, value-class-aware. Part of the spec API.

A spec's ``make_inputs(case, device)`` typically reads::

    gen = inputs.generator(case)                       # seeded by the case: a rerun draws the same numbers
    x = inputs.place(inputs.values((m, n), case, gen), case, device, case.layout)

``values`` draws float64 numbers of the case's value class (normal, large, negative, special) on the CPU, so every
backend sees the same numbers for one seed; ``place`` casts them to the case's dtype and lays them out on the device
(contiguous, padded_rows, transposed); ``rows`` is the two together for an [M, N] input.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from kernels.spec import DTYPES, Case

_DRAW_DEVICE = "cpu"


@contextlib.contextmanager
def drawn_on(device: str) -> Iterator[None]:
    """Draw inputs on ``device`` instead of the CPU, for full-size benchmark inputs (hundreds
    of millions of values drawn on the CPU take minutes). Every factory call of a spec's
    make_inputs lands there too; the values differ from a CPU draw of the same seed."""
    global _DRAW_DEVICE
    old = _DRAW_DEVICE
    _DRAW_DEVICE = device
    try:
        with torch.device(device):
            yield
    finally:
        _DRAW_DEVICE = old


def generator(case: Case) -> torch.Generator:
    gen = torch.Generator(device=_DRAW_DEVICE)
    gen.manual_seed(case.seed)
    return gen


def values(shape: tuple[int, ...], case: Case, gen: torch.Generator) -> torch.Tensor:
    """Float64 values of the case's value class, on the CPU (built there so every
    backend sees the same numbers for the same seed)."""
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    kind = case.values
    if kind == "normal":
        return x
    if kind == "large":
        # Large but representable in every float dtype under test, sums included.
        return x * 1000.0 + 3000.0
    if kind == "negative":
        # Far enough below zero that exp() underflows unless the row max is subtracted.
        return -x.abs() * 4.0 - 100.0
    if kind == "special":
        flat = x.reshape(-1)
        n = flat.numel()
        if n:
            idx = torch.randperm(n, generator=gen, device=gen.device)[: max(1, n // 16)]
            specials = torch.tensor([float("inf"), float("-inf"), float("nan")], dtype=torch.float64)
            flat[idx] = specials[torch.arange(idx.numel()) % 3]
        return x
    raise ValueError(f"unknown value class {kind!r}")


def place(x64: torch.Tensor, case: Case, device: str, layout: str | None = None) -> torch.Tensor:
    """Cast to the case dtype and lay out on the device.

    ``padded_rows`` gives a 2-D tensor a row stride larger than its width;
    ``transposed`` stores the matrix column-major (a transposed view).
    """
    layout = layout or "contiguous"
    dtype = DTYPES[case.dtype]
    x = x64.to(dtype)
    if layout == "contiguous" or x.dim() < 2:
        return x.to(device).contiguous()
    rows, cols = x.shape[-2], x.shape[-1]
    if layout == "padded_rows":
        pad = 13  # odd, so rows are not aligned to any block
        buf = torch.full((*x.shape[:-1], cols + pad), float("nan"), dtype=dtype, device=device)
        buf[..., :cols] = x.to(device)
        return buf[..., :cols]
    if layout == "transposed":
        return x.transpose(-1, -2).contiguous().to(device).transpose(-1, -2)
    raise ValueError(f"unknown layout {layout!r} (rows={rows})")


def rows(case: Case, device: str, gen: torch.Generator) -> torch.Tensor:
    """The usual row-major [M, N] input: the case's value class, dtype and layout."""
    return place(values((case.shape["M"], case.shape["N"]), case, gen), case, device, case.layout)
