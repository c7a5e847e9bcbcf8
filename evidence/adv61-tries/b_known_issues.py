"""Rule B (a known issue excuses only the problems it describes): tries to pass a wrong kernel under a known issue
whose pattern was written for it. One try a run (a refused pattern is a usage error that stops the module):
    A61B_TRY=<name> python -m pytest suite/test_kernels.py --backend=interpret \
        --kernel-module=evidence/adv61-tries/b_known_issues.py --kernels='a61b_*' -q -p no:xdist \
        -k test_matches_reference --no-results
(run_b.sh runs each). Each try's outcome (before and after the round's fixes) is in README.md.
"""
from __future__ import annotations

import dataclasses
import os

import triton
import triton.language as tl

from kernels.registry import register
from kernels.spec import KnownIssue
from kernels.vector_add import SPEC as VA
from tests.fixtures.own_kernel import _ONE


@triton.jit
def b_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    out = x + y
    if MODE == 0:  # wrong everywhere
        out = x - y
    if MODE == 1:  # right at element 0 only
        out = tl.where(offs == 0, x + y, x - y)
    if MODE == 2:  # NaN where x > 1000 (described) and 0 where x < -50 (not described)
        out = tl.where(x > 1000.0, float("nan"), out)
        out = tl.where(x < -50.0, 0.0, out)
    if MODE == 3:  # 0 where x < -50 (described) and 0.1% off everywhere (under the worst error)
        out = tl.where(x < -50.0, 0.0, out * 1.001)
    if MODE == 4:  # NaN where x > 1000 (described) and NaN where x < -50 (a second bug, NaN too)
        out = tl.where((x > 1000.0) | (x < -50.0), float("nan"), out)
    if MODE == 5:  # NaN where x > 1000 (described), x - y where x < -50
        out = tl.where(x > 1000.0, float("nan"), out)
        out = tl.where(x < -50.0, x - y, out)
    tl.store(out_ptr + offs, out, mask=mask)


def _run(mode):
    def run(inp, out, cfg):
        n = inp["x"].numel()
        b_kernel[(triton.cdiv(n, 64),)](inp["x"], inp["y"], out["out"], n, BLOCK=64, MODE=mode)
    return run


# name -> (mode, pattern(s))
TRIES = {
    "seed_digits": (0, r"seed=\d{3,}"),  # 1 the case line's seed alone
    "dims_not_one": (1, r'"N": (\d{2,}|[2-9])'),  # 2 the case line's dims alone (right at N=1)
    "layout_word": (0, r"contiguous|negative|normal"),  # 3 the case line's layout/value class
    "dtype_bracket": (0, r"\[fp32\] \{"),  # 4 the case line's head
    "describes_nan_second_nan": (4, r"NaN where the reference is not"),  # 5 a second bug that is NaN too
    "worst_only": (3, r"\(got 0\.0, reference "),  # 6 a second bug under the described worst error
    "nan_and_undescribed_zero": (2, r"NaN where the reference is not"),  # 7 the planted two-bug case
    "nan_and_wrong_values": (5, r"NaN where the reference is not"),  # 8 NaN described, x - y not
    "case_insensitive_nan": (0, r"(?i)nan"),  # 9 'nan' in any case
    "elements_over": (0, r"\d+ of \d+ elements over"),  # 10 the count of an error over its bound
    "ratio_range": (0, r"is \d\.\d+e\+0[5-9]x the bound"),  # 11 a range of ratios
    "got_negative": (0, r"\(got -"),  # 12 a negative result
    "broken_spec": (0, r"broken spec|error"),  # 13 'error' (any wrong value)
    "two_entries_seed": (2, (r"NaN where the reference is not", r"seed=\d{3,}")),  # 14 a second entry, the seed
    "any_exponent": (0, r"e[-+]\d\d"),  # 15 any figure in exponent form
    "lookahead": (0, r"(?=.*bound)"),  # 16 empty-width, found anywhere 'bound' is
    "repro_option": (0, r"--backend=interpret"),  # 17 the reproduction line (not matched against)
    "json_brace_close": (0, r'\d\} contiguous'),  # 18 the end of the dims and the layout
    "seed_and_output": (0, r"(?s)seed=\d{4,}.*\nout: "),  # 19 a big seed and the output's name
    "dims_and_output": (1, r'(?s)"N": (\d{2,}|[2-9])\}.*\nout: error'),  # 20 dims past 1 and any error
    "output_name_line_start": (0, r"(?m)^out: error"),  # 21 an error at a line's start (anchored in problems)
    "big_n_and_error": (1, r'(?s)"N": \d{3,}.*error'),  # 22 three-digit N and any error
}

_try = os.environ.get("A61B_TRY", "")
for name, (mode, patterns) in TRIES.items():
    if _try and name != _try:
        continue
    pats = (patterns,) if isinstance(patterns, str) else patterns
    issues = tuple(KnownIssue(id=f"a61b-{name}-{k}", backend="interpret", dtype="fp32", failure_pattern=p,
                              reason="try", link="evidence/adv61-tries/README.md") for k, p in enumerate(pats))
    register(dataclasses.replace(VA, name="a61b_" + name, run=_run(mode), known_issues=issues, jit_fn=None,
                                 compile_signature=None, description="try", **_ONE))
