"""Adversarial fixtures for the rule 'a known issue excuses only what it describes' (docs/checks.md): vector_add's spec
with one kernel whose per-element bugs are chosen on the host (a code per element), each kernel a known issue.

Codes: 0 right, 1 stores 0.0, 2 stores -0.0, 3 NaN, 4 +inf, 5 -inf, 6 twice the answer, 7 x alone (drops y),
8 the answer times (1 + 2**-20) (about 2x the bound), 9 not written, 10 stores 1.0.
Loaded with --kernel-module=evidence/adv-over-sample/kernels_adv.py (see tries.py).
"""

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from kernels.registry import register
from kernels.spec import KnownIssue
from kernels.vector_add import SPEC as VECTOR_ADD


@triton.jit
def coded_add(x_ptr, y_ptr, code_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    c = tl.load(code_ptr + offs, mask=mask, other=0)
    v = x + y
    v = tl.where(c == 1, 0.0, v)
    # -0.0 by its bits: a constant -0.0 is stored as 0.0 by the interpreter
    v = tl.where(c == 2, (offs * 0 + (-2147483647 - 1)).to(tl.float32, bitcast=True), v)
    v = tl.where(c == 3, float("nan"), v)
    v = tl.where(c == 4, float("inf"), v)
    v = tl.where(c == 5, float("-inf"), v)
    v = tl.where(c == 6, 2.0 * (x + y), v)
    v = tl.where(c == 7, x, v)
    v = tl.where(c == 8, (x + y) * 1.00000095367431640625, v)
    v = tl.where(c == 10, 1.0, v)
    tl.store(out_ptr + offs, v, mask=mask & (c != 9))


def _at(n: int, where) -> list[int]:
    return [i for i in where if i < n]


# Each try: name -> (codes(n, x, y) -> int8 tensor, failure_pattern)
def _fill(n, known, second=(), known_code=1, second_code=2):
    c = torch.zeros(n, dtype=torch.int8)
    for i in known(n):
        c[i] = known_code
    for i in _at(n, second):
        c[i] = second_code
    return c


ALL = range  # every element
NOT_ENDING_0 = lambda n: [i for i in range(n) if i % 10]  # noqa: E731
EVEN = lambda n: range(0, n, 2)  # noqa: E731

ZERO = r"\(got 0\.0, reference "
ONE = r"\(got 1\.0, reference "
NAN = r"NaN where the reference is not"
NAN_POS = r"NaN where the reference is not \((first )?at \(\d*[1-9],\)\)"
ZERO_POS = r"at \(\d*[1-9],\) is .*\(got 0\.0, reference "
INF = r"got inf, expected |\d+ inf where the reference is finite"
UNWRITTEN = r"elements never written"

TRIES = {
    # 0 everywhere (known) and -0.0 at positions whose rank among 5000 exact ties (ratio 2**21) is skipped
    "adv_negzero_skipped": (lambda n, x, y: _fill(n, ALL, (4, 9, 10)), ZERO),
    # the same at ranks the sample keeps (control)
    "adv_negzero_kept": (lambda n, x, y: _fill(n, ALL, (1, 2, 3)), ZERO),
    # 4097 over: the two skipped ranks of a constant array of 4097
    "adv_negzero_4097": (lambda n, x, y: _fill(n, ALL, (688, 3423)), ZERO),
    # 0 everywhere, twice the answer at element 1 (ratio 2**21 * (1 +- 2**-24): not a tie, an end rank)
    "adv_zero_2x_one": (lambda n, x, y: _fill(n, ALL, (1,), second_code=6), ZERO),
    # 1.0 everywhere (known, ratios spread by |1 - r| / |r|), x alone at element 2500 (ratio |y| / |x + y|)
    "adv_one_dropy_one": (lambda n, x, y: _fill(n, ALL, (2500,), known_code=10, second_code=7), ONE),
    # the same, x alone at three elements
    "adv_one_dropy_three": (lambda n, x, y: _fill(n, ALL, (1000, 2000, 3000), known_code=10, second_code=7), ONE),
    # 1.0 everywhere, twice the answer at element 2500 (ratio 2**21, among the 1.0s' spread)
    "adv_one_2x_one": (lambda n, x, y: _fill(n, ALL, (2500,), known_code=10, second_code=6), ONE),
    # 1.0 everywhere, the answer just over its bound (about 2x) at element 2500: the mildest rank
    "adv_one_just_over": (lambda n, x, y: _fill(n, ALL, (2500,), known_code=10, second_code=8), ONE),
    # NaN at positions not ending in 0 (known, a pattern naming positions), NaN at 80: skipped by the spread
    "adv_nanpos_skipped": (lambda n, x, y: _fill(n, NOT_ENDING_0, (80,), known_code=3, second_code=3), NAN_POS),
    # NaN at 10 (kept by the spread): control
    "adv_nanpos_kept": (lambda n, x, y: _fill(n, NOT_ENDING_0, (10,), known_code=3, second_code=3), NAN_POS),
    # NaN at even elements (known) and at element 1: a NaN pattern names no value, so it describes every NaN
    "adv_nan_among_nan": (lambda n, x, y: _fill(n, EVEN, (1,), known_code=3, second_code=3), NAN),
    # NaN at positions not ending in 0 (known) and twice the answer at 80: the over list is whole (1 element)
    "adv_nanpos_2x": (lambda n, x, y: _fill(n, NOT_ENDING_0, (80,), known_code=3, second_code=6), NAN_POS),
    # +inf everywhere (known) and -inf at 3, 8 (positions the spread over 5000 skips)
    "adv_inf_neg_skipped": (lambda n, x, y: _fill(n, ALL, (3, 8), known_code=4, second_code=5), INF),
    # -inf at element 0 (the first, always said): control
    "adv_inf_neg_first": (lambda n, x, y: _fill(n, ALL, (0,), known_code=4, second_code=5), INF),
    # 0 at positions not ending in 0 (known, by position) and 0 at 40: 4501 exact ties, rank of 40 skipped
    "adv_zeropos_skipped": (lambda n, x, y: _fill(n, NOT_ENDING_0, (40,)), ZERO_POS),
    # last element never written (known) and twice the answer at element 1
    "adv_unwritten_2x": (lambda n, x, y: _fill(n, lambda n: [n - 1], (1,), known_code=9, second_code=6),
                         UNWRITTEN),
    # right but for the known bug
    "adv_ok_zero": (lambda n, x, y: _fill(n, ALL), ZERO),
    "adv_ok_one": (lambda n, x, y: _fill(n, ALL, known_code=10), ONE),
    "adv_ok_nanpos": (lambda n, x, y: _fill(n, NOT_ENDING_0, known_code=3), NAN_POS),
    "adv_ok_inf": (lambda n, x, y: _fill(n, ALL, known_code=4), INF),
    "adv_ok_unwritten": (lambda n, x, y: _fill(n, lambda n: [n - 1], known_code=9), UNWRITTEN),
    "adv_ok_zeropos": (lambda n, x, y: _fill(n, NOT_ENDING_0), ZERO_POS),
    # second bug only where N > 4096: -0.0 at skipped ranks there, right-but-for-the-known elsewhere
    "adv_negzero_big_only": (lambda n, x, y: _fill(n, ALL, (4, 9, 10) if n == 5000 else ()), ZERO),
}


def _runner(codes):
    def run(inp, out, cfg):
        x, y = inp["x"], inp["y"]
        n = x.numel()
        c = codes(n, x, y).to(x.device)
        coded_add[(triton.cdiv(n, 64),)](x, y, c, out["out"], n, BLOCK=64)
    return run


for _name, (_codes, _pattern) in TRIES.items():
    register(dataclasses.replace(
        VECTOR_ADD, name=_name, description=f"adversarial: {_name}", dtypes=("fp32",), examples=(), properties=(),
        benchmark_shapes=(), batch_dim=None, batch_inputs=(), batch_outputs=(), paths=(), jit_fn=None,
        compile_signature=None, default_config={}, configs={}, value_classes=("normal",), layouts=("contiguous",),
        run=_runner(_codes),
        known_issues=(KnownIssue(id=f"{_name}-known", backend="interpret", dtype="fp32", failure_pattern=_pattern,
                                 reason="planted", link="evidence/adv-over-sample/kernels_adv.py"),)))
