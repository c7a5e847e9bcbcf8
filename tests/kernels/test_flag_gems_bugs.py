"""FlagGems 5.0.2's bugs that examples/flag_gems.py meets (docs/third-party.md, FlagGems' bugs the example meets):
the reproductions without the suite's checks (evidence/flag-gems-bugs/) show them on the interpreter, and the
example's inputs meet all three, each ending as its own known issue in every dtype."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow
pytest.importorskip("flag_gems", reason="flag-gems is not installed: pip install --no-deps flag-gems==5.0.2")


def _repro(name: str) -> str:
    proc = subprocess.run([sys.executable, f"evidence/flag-gems-bugs/{name}_repro.py"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_topk_reads_strided_rows_n_apart_and_returns_its_fills_for_minus_inf():
    strided, neg_inf = _repro("topk").splitlines()
    assert strided == ("strided rows: flag_gems [[5.0, 4.0], [11.0, 10.0], [17.0, 16.0], [23.0, 22.0]] torch [[5.0, "
                       "4.0], [15.0, 14.0], [25.0, 24.0], [35.0, 34.0]]"), strided
    assert neg_inf.startswith("-inf row: flag_gems [[2.0, 1.0, -3.4028234663852886e+38, -3.4028234663852886e+38, "
                              "-3.4028234663852886e+38]] [[2, 0, -2147483648, -2147483648, 0]] torch [[2.0, 1.0, -inf, "
                              "-inf, -inf]]"), neg_inf


def test_the_bf16_column_scan_rounds_twice_past_its_first_part_and_the_row_scan_once():
    column, row = _repro("cumsum").splitlines()
    assert column.startswith("column scan: rows 0-1023 0, rows 1024-4999 1493 of 7952 elements"), column
    assert row.startswith("row scan: rows 0-1023 0, rows 1024-4999 0 of 7952 elements"), row


def test_the_example_meets_each_bug_as_its_known_issue(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernel-module=examples/flag_gems.py", "--kernels=fg_topk,fg_cumsum",
                    "-n", "0")
    assert run.returncode == 0, run.output[-3000:]
    met = {}
    for case in run.run_data()["cases"]:
        if case["outcome"] == "xfailed":
            message = case["message"]
            issue = ("row-stride" if "out-of-bounds load in kernel topk_stage1_kernel" in message else
                     "neg-inf" if "indices out of range" in message or "an index repeats" in message else
                     "cumsum-bf16" if case["kernel"] == "fg_cumsum" else message)
            met.setdefault(issue, set()).add(case["dtype"])
        else:
            assert case["outcome"] == "passed", case
    assert met == {"row-stride": {"fp32", "fp16", "bf16"}, "neg-inf": {"fp32", "fp16", "bf16"},
                   "cumsum-bf16": {"bf16"}}, met
