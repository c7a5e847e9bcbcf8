"""The toolchain gate (--retune-check, reports/gate.py): a cached autotune winner that loses to another config on the
toolchain at hand is flagged, with the time it loses, and `compare` calls it a regression; a winner within its
timings' spread never is. Proven on real tuning measurements (the shipped H100 and H200 caches' timings of every
config) with a planted slow winner, and on the command line."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

from reports import gate
from suite.checks import autotune
from tests.conftest import ROOT, run_python
from tests.report_helpers import cli, retune_check

CACHES = ROOT / "hardware_profiles" / "autotune"
AA = ROOT / "evidence" / "driver-validation" / "aa-1"


def _cache(name: str) -> autotune.Cache:
    data = json.loads((CACHES / name).read_text())
    return autotune.Cache(CACHES / name, data["arch"], data.get("profile"), data["entries"], data["tuning_runs"], "ok")


def _slowest_ok(entry: dict) -> dict:
    return max((t for t in entry["tried"] if t["status"] == "ok"), key=lambda t: t["median_ms"])


def test_an_a_a_check_is_silent_and_a_planted_slow_winner_is_flagged_with_the_time_it_loses() -> None:
    """A/A: the shipped H100 cache checked against its own timings of every config (the same toolchain): no
    winner loses. Planted: the same cache with one winner replaced by that entry's slowest config: exactly that
    one is flagged, with its loss."""
    shipped = _cache("sm_90.json")
    timed = list(shipped.entries.values())
    assert len(timed) > 100
    assert [g for g in autotune.gate_records(shipped, timed) if g["loses"]] == []

    planted = copy.deepcopy(shipped)
    key, entry = next((k, e) for k, e in planted.entries.items() if e["kernel"] == "matmul")
    slow = _slowest_ok(entry)
    entry["config"] = slow["config"]
    losing = [g for g in autotune.gate_records(planted, timed) if g["loses"]]
    assert [(g["kernel"], g["dtype"], g["shape"]) for g in losing] == [("matmul", entry["dtype"], entry["shape"])]
    [g] = losing
    best = min((t for t in entry["tried"] if t["status"] == "ok"), key=lambda t: t["median_ms"])
    assert g["cached_ms"] == slow["median_ms"] and g["best_ms"] == best["median_ms"]
    assert g["loss"] == round(slow["median_ms"] / best["median_ms"], 4) > 1.05
    assert f"loses {slow['median_ms'] - best['median_ms']:.4f} ms" in gate.text(g)


def test_a_winner_within_its_timings_spread_or_the_margin_is_not_flagged_and_one_that_no_longer_runs_is() -> None:
    best = {"median_ms": 1.0, "iqr_ms": 0.01}
    assert not gate.loses({"median_ms": 1.04, "iqr_ms": 0.01}, best)  # under 5%
    assert not gate.loses({"median_ms": 1.10, "iqr_ms": 0.2}, best)  # inside the spread
    assert gate.loses({"median_ms": 1.10, "iqr_ms": 0.01}, best)
    shipped = _cache("sm_90.json")
    entry = copy.deepcopy(next(iter(shipped.entries.values())))
    for t in entry["tried"]:
        if t["config"] == entry["config"]:
            t.update(status="error", reason="OutOfResources: shared memory")
    [g] = autotune.gate_records(shipped, [entry])
    assert g["loses"] and g["cached_ms"] is None and "OutOfResources" in gate.text(g)


def test_the_h100_winners_checked_against_h200_timings() -> None:
    """Real measurements on other hardware: the H100's cached winners judged by the H200's timings of every config
    (each cache's tuning run timed all of them). Some H100 winners lose there, which is why the H200 has its own
    cache; the gate says which and by how much."""
    h100, h200 = _cache("sm_90.json"), _cache("sm_90.h200_sxm.json")
    records = autotune.gate_records(h100, h200.entries.values())
    assert len(records) > 100
    losing = [g for g in records if g["loses"]]
    assert losing and all(g["loss"] is None or g["loss"] > 1.05 for g in losing)
    assert all(not g["loses"] for g in records if g["cached_config"] == g["best_config"])


def _with_check(src: Path, dst: Path, entries: list[dict]) -> Path:
    data = json.loads(gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes())
    data["autotune"]["check"] = {"cache": "hardware_profiles/autotune/sm_90.json", "margin": gate.MARGIN,
                                 "entries": entries}
    dst.write_text(json.dumps(data))
    return dst


def test_compare_fails_a_candidate_whose_cached_winner_loses_and_passes_an_a_a_check(tmp_path, capsys) -> None:
    """On the committed H100 A/A pair (no regression between them): the candidate with a check in which every
    winner holds passes; with the planted slow winner it is a regression, exit 1, named in the verdict."""
    base, cand = sorted(AA.glob("run-*.json*"))
    shipped = _cache("sm_90.json")
    timed = list(shipped.entries.values())
    held = _with_check(cand, tmp_path / "held.json", autotune.gate_records(shipped, timed))
    code, out, err = cli(capsys, "compare", base, held, "--json")
    result = json.loads(out)
    assert code == 0 and result["autotune_losses"] == [] and result["autotune_checked"] == len(timed), out + err
    planted = copy.deepcopy(shipped)
    entry = next(e for e in planted.entries.values() if e["kernel"] == "matmul")
    entry["config"] = _slowest_ok(entry)["config"]
    losing = _with_check(cand, tmp_path / "losing.json", autotune.gate_records(planted, timed))
    code, out, err = cli(capsys, "compare", base, losing, "--out", tmp_path / "cmp.md")
    assert code == 1, out + err
    text = (tmp_path / "cmp.md").read_text()
    assert "1 cached autotune winner(s) lose on the candidate toolchain (matmul" in text
    assert "Autotune winners that lose on the candidate" in text


def test_retune_check_is_a_usage_error_on_the_interpreter_and_with_retune(tmp_path) -> None:
    for extra, expected in ((["--retune-check=matmul"], "--retune-check times configs on a GPU"),
                            (["--retune-check", "--retune=matmul"], "cannot be used with --retune"),
                            (["--retune-check=nosuch"], "no kernel named 'nosuch'")):
        proc = run_python("pytest", "suite/test_kernels.py", "-p", "no:cacheprovider", f"--results-dir={tmp_path}",
                          *extra, timeout=300)
        assert proc.returncode == 4 and expected in proc.stdout + proc.stderr, (extra, proc.stdout[-1500:],
                                                                              proc.stderr[-1500:])


def test_retune_check_times_into_a_copy_records_the_losers_and_never_writes_the_shipped_cache(tmp_path):
    """The --retune-check path of the run (suite/plugin/hooks.py, _retune) with a timer that makes vector_add fp32's
    cached winners the slowest of their configs (a planted slow winner; the GPU's timer replaced, as no GPU is
    here): exactly those entries lose, the run file records them, the shipped cache file is byte for byte as it
    was, and the timings went to a copy in the results directory."""
    slow = {json.dumps(e["config"], sort_keys=True) for e in autotune.load(CACHES / "sm_90.json", "sm_90").entries.values()
            if e["kernel"] == "vector_add" and e["dtype"] == "fp32"}

    def timer(dtype, config):
        planted = dtype == "fp32" and json.dumps(config, sort_keys=True) in slow
        return [(2.0 if planted else 1.0) + 0.001 * i for i in range(10)]

    done = retune_check(tmp_path, timer)  # tests/report_helpers.py
    assert done.shipped_path.read_bytes() == done.before
    assert (done.results_dir / "retune-check-sm_90.json").exists()
    check, ours = done.check, done.ours
    losing = [g for g in check["entries"] if g["loses"]]
    assert len(check["entries"]) == len(ours) and check["margin"] == gate.MARGIN
    assert {(g["dtype"], json.dumps(g["shape"])) for g in losing} == {
        (e["dtype"], json.dumps(e["shape"])) for e in ours if e["dtype"] == "fp32"}
    assert all(g["loss"] > 1.9 for g in losing)
