"""The autotune gate (--retune-check, reports/gate.py) on what the timer or the toolchain gets wrong: a kernel x dtype
of which every config fails on the new toolchain was dropped ("0 now lose"); a winner timed NaN was not flagged; a
0 ms timing raised ZeroDivisionError at session start. Each is flagged now, with what is wrong, and compare calls
it a regression."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

from reports import gate
from suite.checks import autotune
from tests.conftest import ROOT
from tests.report_helpers import cli, make_run, write

CACHES = ROOT / "hardware_profiles" / "autotune"


def _check(tmp_path, timer):
    """hooks._retune's --retune-check of vector_add against a copy of the shipped H100 cache, the GPU's timer
    replaced by ``timer(dtype, config) -> samples`` (raising: a config that fails to launch)."""
    from suite.plugin import hooks
    from suite.tools import bench, compile_matrix

    shipped_path = tmp_path / "sm_90.json"
    shipped_path.write_bytes((CACHES / "sm_90.json").read_bytes())
    shipped = autotune.load(shipped_path, "sm_90")

    class Timer:
        def __init__(self, backend):
            pass

        def __call__(self, spec, dtype, shape, config):
            return timer(dtype, config)

    backend = SimpleNamespace(name="cuda", arch="sm_90", sm_count=132, family="nvidia", warp_size=32, device="cpu",
                              device_name="fake", details={}, supports=lambda dtype: True)
    results_dir = tmp_path / "runs"
    results_dir.mkdir()
    run_file = SimpleNamespace(data={"autotune": {}})
    ctx = SimpleNamespace(backend=backend, cache=shipped, run_file=run_file, retuned=[],
                          options=SimpleNamespace(retune=None, retune_check=("vector_add",), results_dir=results_dir))
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    orig = bench.ConfigTimer, compile_matrix.compile_all
    bench.ConfigTimer, compile_matrix.compile_all = Timer, lambda *a, **k: [{"status": "ok"}]
    try:
        hooks._retune(config, ctx)
    finally:
        bench.ConfigTimer, compile_matrix.compile_all = orig
    ours = [e for e in shipped.entries.values() if e["kernel"] == "vector_add"]
    return run_file.data["autotune"]["check"]["entries"], ours


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
