"""Softmax's own properties (kernels/softmax_online.py: rows_sum_to_one, shift_invariant), computed in float64 on
the case's device, fail the kernels they exist for and pass the right one (tests/fixtures/softmax_properties.py)."""

from __future__ import annotations

import re

import pytest
import torch

from kernels import softmax_online, spec

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
    # Each property's own time is in the run file (which property a long properties test spends it in)
    data = run.run_data()
    right = {f["property"]: f for f in data["findings"] if f["kernel"] == "softmax_props_right"}
    assert set(right) == {"deterministic", "batch_invariant", "rows_sum_to_one", "shift_invariant"}, right
    assert all(f["seconds"] > 0 and f["cases_checked"] > 0 for f in right.values()), right
    [test] = [t for t in data["tests"] if "softmax_props_right" in t["nodeid"]]
    assert sum(f["seconds"] for f in right.values()) <= test["duration_s"], (right, test["duration_s"])


@pytest.mark.parametrize("row_chunks", [spec.row_chunks, softmax_online._row_chunks], ids=["spec", "softmax_online"])
def test_row_chunks_cover_every_row_once_in_bounded_pieces(row_chunks):
    """The public helper (fp8's property) and softmax's own copy (its file's bytes are its tuned configs' hash)."""
    for rows, cols in ((1, 1), (7, 3), (1024, 262144), (5, 1 << 25), (300, 70000)):
        chunks = row_chunks(rows, cols)
        covered = torch.cat([torch.arange(rows)[c] for c in chunks])
        assert torch.equal(covered, torch.arange(rows)), (rows, cols)
        assert all((c.stop - c.start) * cols <= max(cols, 1 << 24) for c in chunks), (rows, cols)


def test_the_summary_names_a_slow_properties_tests_time_by_property():
    from suite.plugin import summary

    node = "suite/test_properties.py::test_properties[softmax_online-fp32]"
    data = {"tests": [{"nodeid": node, "duration_s": 48.8, "timing": {"property_s": 39.1}}],
            "findings": [{"kernel": "softmax_online", "dtype": "fp32", "property": p, "seconds": s}
                         for p, s in (("deterministic", 9.5), ("shift_invariant", 20.25), ("rows_sum_to_one", 3.0))]
            + [{"kernel": "softmax_online", "dtype": "fp16", "property": "shift_invariant", "seconds": 99.0}]}
    lines = summary.timing_lines(data)
    assert (f"  slow: {node} 48.8 s (property 39.1); by property: shift_invariant 20.2 s, deterministic 9.5 s, "
            "rows_sum_to_one 3.0 s") in lines, lines
    assert summary.property_seconds(data, "suite/test_kernels.py::test_matches_reference[softmax_online-fp32]") == ""
