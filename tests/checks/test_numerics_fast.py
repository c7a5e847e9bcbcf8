"""suite/checks/numerics_fast.py equals mmasim bit for bit: every instruction --numerics uses, on random tiles whose
values span normal, wide-exponent, subnormal, cancelling, huge (overflowing) and non-finite operands and
accumulators; mmasim stays the oracle."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

from suite.checks import numerics, numerics_fast
from suite.session import numerics_table

KINDS = ("normal", "wide", "subnormal", "cancel", "special", "huge", "tiny", "alternating")
SUBNORMAL = {torch.float16: 2.0**-16, torch.bfloat16: 2.0**-128, torch.float32: 2.0**-130}
HUGE = {torch.float16: 2.0**12, torch.bfloat16: 2.0**120, torch.float32: 2.0**120}
TINY = {torch.bfloat16: 2.0**-70, torch.float32: 2.0**-70}  # normal operands, products below fp32's normals
INSTRUCTIONS = [(arch, key) for arch, model in numerics_table.MODELS.items() for key in model.instructions]


def _types(key: str) -> tuple[torch.dtype, torch.dtype]:
    if key == "tf32":
        return torch.float32, torch.float32
    first, _, second = key.partition("*")
    return numerics.TORCH_DTYPES[first], numerics.TORCH_DTYPES[second or first]


def _draw(rng: np.random.Generator, shape: tuple[int, int], dtype: torch.dtype, kind: str,
          k_axis: int = 1) -> torch.Tensor:
    x = rng.standard_normal(shape)
    if kind == "wide":
        x *= np.exp2(rng.integers(-30, 30, shape))
    elif kind == "subnormal":
        x *= SUBNORMAL.get(dtype, 2.0**-8)
    elif kind == "cancel":
        x = np.round(x * 4) / 4
    elif kind == "huge":
        x *= HUGE.get(dtype, 2.0**6)
    elif kind == "tiny":  # no zero operand: a chunk's largest exponent is its products', below e_zero
        spread = np.exp2(-rng.integers(-5, 11, shape).astype(np.float64)) if dtype in TINY else 1.0
        return torch.from_numpy(x * TINY.get(dtype, 2.0**-7) * spread).to(dtype)
    elif kind == "alternating":  # even K large, odd K small: CDNA3's fp8 sums them apart, then floors the small
        scale = np.where(np.arange(shape[k_axis]) % 2 == 0, 2.0**5, 2.0**-5)
        x *= scale if k_axis == 1 else scale[:, None]
    x[rng.random(shape) < 0.2] = 0.0
    if kind == "special":
        r = rng.random(shape)
        x[r < 0.03], x[(r >= 0.03) & (r < 0.06)], x[(r >= 0.06) & (r < 0.09)] = np.inf, -np.inf, np.nan
    return torch.from_numpy(x).to(dtype)


def _acc(rng: np.random.Generator, kind: str, shape: tuple[int, int]) -> np.ndarray:
    c = (rng.standard_normal(shape) * (rng.random(shape) < 0.7)).astype(np.float32)
    if kind == "special":
        c[0, 0], c[1, 1], c[2, 2], c[3, 3] = np.inf, np.nan, -np.inf, -0.0
    elif kind == "huge":
        c *= np.float32(2.0**125)
    elif kind == "subnormal":
        c *= np.float32(2.0**-140)
    elif kind == "tiny":
        pick = rng.random(shape)  # zero, subnormal and the smallest normals: what CDNA2 flushes, or not
        c = np.where(pick < 0.4, 0.0, c * np.where(pick < 0.7, 2.0**-140, 2.0**-124)).astype(np.float32)
    return c


@pytest.mark.parametrize(("arch", "key"), INSTRUCTIONS, ids=[f"{a}-{k}" for a, k in INSTRUCTIONS])
def test_every_instruction_equals_mmasim_bit_for_bit(arch, key):
    active = numerics.Numerics(arch, numerics_table.MODELS[arch])
    op = active.op(active.model.instructions[key])
    type_a, type_b = _types(key)
    rng = np.random.default_rng(zlib.crc32(f"{arch} {key}".encode()))
    cases = differing = 0
    for kind in KINDS:
        for k in (16, 32, 64):
            a, b = _draw(rng, (16, k), type_a, kind), _draw(rng, (k, 8), type_b, kind, k_axis=0)
            c = _acc(rng, kind, (16, 8))
            want = op(a, b, torch.from_numpy(c.copy())).numpy().view(np.uint32)
            got = numerics_fast.run(op, a, b, c).view(np.uint32)
            cases += 1
            differing += int((want != got).sum())
            assert np.array_equal(want, got), (kind, k, np.argwhere(want != got)[:4])
    assert cases == 3 * len(KINDS) and differing == 0


def test_the_planted_edges_are_reached():
    # The kinds above reach what they claim: products beyond fp32 overflow to inf, opposite infinities and NaN
    # operands give mmasim's NaN, in the fast path as in mmasim.
    for arch in ("sm_90", "gfx942", "gfx90a"):
        active = numerics.Numerics(arch, numerics_table.MODELS[arch])
        op = active.op(active.model.instructions["bf16"])
        a = torch.full((16, 32), 2.0**100, dtype=torch.bfloat16)
        b = torch.full((32, 8), 2.0**100, dtype=torch.bfloat16)
        b[:, 1], b[0, 2], b[0, 3] = -(2.0**100), float("nan"), float("inf")
        b[1, 3] = -float("inf")
        out = numerics_fast.run(op, a, b, np.zeros((16, 8), np.float32))
        assert np.isposinf(out[:, 0]).all() and np.isneginf(out[:, 1]).all(), arch
        assert np.isnan(out[:, 2:4]).all(), arch
        want = op(a, b, torch.zeros(16, 8)).numpy()
        assert np.array_equal(out.view(np.uint32), want.view(np.uint32)), arch


def test_the_known_arithmetic_never_reaches_mmasims_slow_path(monkeypatch):
    from mmasim.arithmetic import fdpa, ftz_mul_add

    def refuse(*args, **kwargs):
        raise AssertionError("mmasim's own arithmetic ran")

    for name in ("t_fdpa", "tr_fdpa", "gtr_fdpa"):
        monkeypatch.setattr(fdpa, name, refuse)
    monkeypatch.setattr(ftz_mul_add, "ftz_add", refuse)
    a = np.ones((16, 32), np.float16)
    for arch, model in numerics_table.MODELS.items():
        out = numerics.Numerics(arch, model).dot(a, "fp16", a.T.copy(), "fp16", np.zeros((16, 16), np.float32),
                                                 "ieee", 0)
        assert (out == 32).all(), arch
