"""Softmax's own properties (kernels/softmax_online.py: rows_sum_to_one, shift_invariant), computed in float64 on
the case's device, fail the kernels they exist for and pass the right one (tests/fixtures/softmax_properties.py)."""

from __future__ import annotations

import re

import torch

from kernels.softmax_online import _row_chunks

FIXTURE = "--kernel-module=tests/fixtures/softmax_properties.py"


def test_each_property_fails_its_planted_softmax(run_suite):
    run = run_suite("suite/test_properties.py", FIXTURE,
                    "--kernels=softmax_props_right,softmax_props_no_max,softmax_props_scaled", "-n", "0")
    assert run.returncode == 1, run.output[-3000:]
    outcomes = {t["nodeid"].split("[")[1][:-1]: t["outcome"] for t in run.run_data()["tests"]}
    assert outcomes == {"softmax_props_right-fp32": "passed", "softmax_props_no_max-fp32": "failed",
                        "softmax_props_scaled-fp32": "failed"}, outcomes
    assert re.search(r"softmax\(x \+ c\) differs from softmax\(x\) at \(\d+, \d+\) \(c = [+-]256\): nan vs ",
                     run.output), run.output[-3000:]
    assert re.search(r"row \d+ sums to 1\.0099\d* \(\|sum - 1\| = 1\.000e-02 > [0-9.e-]+\); \d+ of \d+ defined rows",
                     run.output), run.output[-3000:]


def test_row_chunks_cover_every_row_once_in_bounded_pieces():
    for rows, cols in ((1, 1), (7, 3), (1024, 262144), (5, 1 << 25), (300, 70000)):
        chunks = _row_chunks(rows, cols)
        covered = torch.cat([torch.arange(rows)[c] for c in chunks])
        assert torch.equal(covered, torch.arange(rows)), (rows, cols)
        assert all((c.stop - c.start) * cols <= max(cols, 1 << 24) for c in chunks), (rows, cols)
