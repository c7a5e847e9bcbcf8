"""Rule D (a split test whose last part is skipped as not checkable still judges the earlier parts' tallies): tries
with a test split into parts by a durations file (d_costs.json, SUITE_TEST_COSTS), some parts meeting a construct
the interpreter cannot check (Python `and` on block tensors). Run (run_d.sh):
    SUITE_TEST_COSTS=evidence/adv61-tries/d_costs.json python -m pytest suite/test_kernels.py --backend=interpret \
        --kernel-module=evidence/adv61-tries/d_split_parts.py --kernels='a61d_*' -n 0 -k test_matches_reference
Each try's outcome is in README.md.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import triton
import triton.language as tl

from kernels.registry import register
from kernels.spec import CodePath, Dim
from kernels.vector_add import SPEC as VA


@triton.jit
def d_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, GAP: tl.constexpr, UNSCALED: tl.constexpr):
    if UNSCALED:
        offs = tl.program_id(0) + tl.arange(0, BLOCK)  # BUG: the program index is not scaled by BLOCK
    else:
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if GAP:
        mask = (offs < n) and (offs >= 0)  # not checkable on the interpreter
    else:
        mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _part() -> tuple[int, int]:
    found = re.search(r"-part(\d+)of(\d+)\]", os.environ.get("PYTEST_CURRENT_TEST", ""))
    return (int(found.group(1)), int(found.group(2))) if found else (1, 1)


def _run(gaps: set[int], unscaled: bool, late: int = 0):
    def run(inp, out, cfg):
        n = inp["x"].numel()
        gap = _part()[0] in gaps and n > late
        d_add[(triton.cdiv(n, cfg["BLOCK"]),)](inp["x"], inp["y"], out["out"], n, BLOCK=cfg["BLOCK"], GAP=gap,
                                               UNSCALED=unscaled)
    return run


# A path no case reaches: the grid spanning more than 10**9 programs (never drawn, never searchable).
NEVER = (CodePath("never", "a grid of more than 10**9 programs", lambda case, cfg: case.shape["N"] > 10**12),)
# name -> (parts, gap parts, unscaled, late (gap only where N > late), paths)
TRIES = {
    "u2_last": (2, {2}, True, 0, ()),
    "u2_first": (2, {1}, True, 0, ()),
    "u2_both": (2, {1, 2}, True, 0, ()),
    "u3_last": (3, {3}, True, 0, ()),
    "u3_mid": (3, {2}, True, 0, ()),
    "u3_first_last": (3, {1, 3}, True, 0, ()),
    "u3_first_mid": (3, {1, 2}, True, 0, ()),
    "u3_all": (3, {1, 2, 3}, True, 0, ()),
    "u4_last": (4, {4}, True, 0, ()),
    "u4_mid_last": (4, {2, 4}, True, 0, ()),
    "u1_late": (1, {1}, True, 1000, ()),  # not split: the gap at the large cases only
    "u2_late_last": (2, {2}, True, 1000, ()),  # the last part's large cases only
    "u2_late_first": (2, {1}, True, 1000, ()),
    "r2_last": (2, {2}, False, 0, ()),  # right kernels: UNCHECKED, never FAILED
    "r3_mid": (3, {2}, False, 0, ()),
    "r1_late": (1, {1}, False, 1000, ()),
    "p2_last": (2, {2}, False, 0, NEVER),  # a declared path never reached, the last part not checkable
    "p2_first": (2, {1}, False, 0, NEVER),
    "p3_mid": (3, {2}, False, 0, NEVER),
    "p1_late": (1, {1}, False, 1000, NEVER),
    "up2_last": (2, {2}, True, 0, NEVER),  # both rules
    "p1_none": (1, set(), False, 0, NEVER),  # the path rule alone, no gap, not split
    "u1_none": (1, set(), True, 0, ()),  # the one-program rule alone, no gap, not split
    "p2_none": (2, set(), False, 0, NEVER),  # the path rule, split in two, no gap
}
_COMMON = dict(dtypes=("fp32",), examples=(), properties=(), benchmark_shapes=(), batch_dim=None, batch_inputs=(),
               batch_outputs=(), jit_fn=None, compile_signature=None,
               dims=(Dim("N", interpret_max=3000, gpu_max=1 << 20, blocks=(64,)),))
costs = {"parts": {}, "tests": {}}
for name, (parts, gaps, unscaled, late, paths) in TRIES.items():
    block = {"interpret": {"BLOCK": 4096}} if unscaled else {"interpret": {"BLOCK": 64}}
    register(dataclasses.replace(VA, name="a61d_" + name, run=_run(gaps, unscaled, late), default_config=block,
                                 configs={"interpret": ()}, paths=paths, description="try", **_COMMON))
    if parts > 1:
        costs["parts"][f"suite/test_kernels.py::test_matches_reference[a61d_{name}-fp32]"] = parts
_path = Path(__file__).with_name("d_costs.json")
if not _path.exists() or json.loads(_path.read_text()) != costs:
    _path.write_text(json.dumps(costs, indent=1) + "\n")
