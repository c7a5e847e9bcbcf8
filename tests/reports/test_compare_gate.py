"""The autotune gate (--retune-check, reports/gate.py) on what the timer or the toolchain gets wrong: a kernel x dtype
of which every config fails on the new toolchain was dropped ("0 now lose"); a winner timed NaN was not flagged; a
0 ms timing raised ZeroDivisionError at session start. Each is flagged now, with what is wrong, and compare calls
it a regression."""

from __future__ import annotations

import json
import math

from reports import gate
from suite.checks import autotune
from tests.conftest import ROOT
from tests.report_helpers import cli, make_run, retune_check, write

CACHES = ROOT / "hardware_profiles" / "autotune"


def _check(tmp_path, timer):
    """--retune-check of vector_add with ``timer`` (tests/report_helpers.py: retune_check): its entries, and
    vector_add's shipped ones."""
    done = retune_check(tmp_path, timer)
    return done.check["entries"], done.ours


def _steady(value: float) -> list[float]:
    return [value + 0.001 * i for i in range(10)]


def test_a_kernel_dtype_of_which_every_config_fails_now_is_flagged_not_dropped(tmp_path):
    def timer(dtype, config):
        if dtype == "fp32":
            raise RuntimeError("PassManager::run failed")  # the new toolchain cannot compile any config of it
        return _steady(1.0)

    entries, ours = _check(tmp_path, timer)
    assert len(entries) == len(ours)  # every cached winner judged, none dropped
    losing = [g for g in entries if g["loses"]]
    assert {g["dtype"] for g in losing} == {"fp32"} and len(losing) == sum(e["dtype"] == "fp32" for e in ours)
    assert all("no config ran on this toolchain" in gate.text(g) for g in losing)


def test_a_zero_ms_timing_is_a_clear_reason_not_a_zero_division(tmp_path):
    entries, ours = _check(tmp_path, lambda dtype, config: [0.0] * 10 if dtype == "fp32" else _steady(1.0))
    losing = [g for g in entries if g["loses"]]
    assert {g["dtype"] for g in losing} == {"fp32"} and len(entries) == len(ours)
    assert all("no config ran on this toolchain" in g["why"] for g in losing)


def test_a_winner_timed_nan_loses():
    shipped_data = json.loads((CACHES / "sm_90.json").read_text())
    shipped = autotune.Cache(CACHES / "sm_90.json", "sm_90", None, shipped_data["entries"],
                             shipped_data["tuning_runs"], "ok")
    entry = json.loads(json.dumps(next(e for e in shipped.entries.values() if e["kernel"] == "matmul")))
    for t in entry["tried"]:
        if t["config"] == entry["config"]:
            t["median_ms"] = math.nan
    [g] = autotune.gate_records(shipped, [entry])
    assert g["loses"] and "not a positive, finite time" in g["why"], g
    assert gate.loses({"median_ms": math.nan, "iqr_ms": 0.0}, {"median_ms": 1.0, "iqr_ms": 0.0})
    assert gate.loses({"median_ms": 0.0, "iqr_ms": 0.0}, {"median_ms": 1.0, "iqr_ms": 0.0})


def test_compare_flags_a_nan_winner_an_older_check_did_not(tmp_path, capsys):
    """A run file whose check recorded a NaN winner as holding (the gate before this rule): compare judges it."""
    base = write(tmp_path / "base.json", make_run(run_id="base-1"))
    cand = make_run(run_id="cand-1", started="2026-11-21T01:00:00+00:00")
    cand["autotune"]["check"] = {"cache": "hardware_profiles/autotune/sm_90.json", "margin": gate.MARGIN, "entries": [
        {"kernel": "matmul", "dtype": "bf16", "shape": {"M": 4096}, "cached_config": {"BLOCK_M": 128},
         "cached_triton": "3.6.0", "best_config": {"BLOCK_M": 64}, "best_ms": 1.0, "best_iqr_ms": 0.01,
         "cached_ms": "nan", "cached_iqr_ms": "nan", "loss": None, "loses": False, "why": None}]}
    code, out, err = cli(capsys, "compare", base, write(tmp_path / "cand.json", cand), "--json")
    result = json.loads(out)
    assert code == 1 and "1 cached autotune winner(s) lose" in result["verdict"], out + err
