"""`compare` on run files with timing rounds: the kernel/torch ratio, the platform-wide shift, disturbed and
overlapping measurements, noise floors (recorded, from a file, learned from A/A runs), the fallback for older
files, and --json. Run files are synthetic (tests/report_helpers.py)."""

from __future__ import annotations

import json

import pytest

from reports import noise
from reports.loading import load_runs
from tests.report_helpers import KERNELS, SHAPES, bench, cli, make_run, perf_run, write

A, B = "20261121T010000Z-cuda-sm_90-aaaaaa", "20261121T020000Z-cuda-sm_90-bbbbbb"


def pair(tmp_path, base: dict | None = None, **cand) -> list:
    """Base: an ordinary run; candidate: the same software with perf_run's changes."""
    b = base or perf_run(A, 1)
    c = perf_run(B, 2, **cand)
    return [write(tmp_path / "base.json", b), write(tmp_path / "cand.json", c)]


def section(out: str, title: str) -> str:
    return out.split(f"## {title}")[1].split("\n## ")[0]


def test_identical_software_compares_clean_both_ways(tmp_path, capsys):
    paths = pair(tmp_path)
    for argv in (paths, paths[::-1]):
        code, out, err = cli(capsys, "compare", *argv)
        assert code == 0, out + err
        assert "No regressions" in out and "Platform: no platform-wide shift" in out
        assert f"Method for {len(KERNELS) * len(SHAPES)} benchmark(s): timing rounds" in out


def test_a_slower_kernel_is_a_regression_and_the_reverse_an_improvement(tmp_path, capsys):
    paths = pair(tmp_path, kernel_factor={"softmax": 1.12})
    code, out, _ = cli(capsys, "compare", *paths)
    regressions = section(out, "Speed regressions")
    assert code == 1 and "speed regression(s) (softmax)" in out
    assert regressions.count("| softmax") == len(SHAPES) and "rmsnorm" not in regressions
    assert "+12." in regressions  # change vs torch
    code, out, _ = cli(capsys, "compare", *paths[::-1])
    assert code == 0 and section(out, "Speed improvements").count("| softmax") == len(SHAPES)


def test_a_small_change_stays_within_the_threshold(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", *pair(tmp_path, kernel_factor={"softmax": 1.03}))
    assert code == 0 and "No regressions" in out
    assert cli(capsys, "compare", *pair(tmp_path, kernel_factor={"softmax": 1.03}), "--threshold", "0.02")[0] == 1


def test_machine_drift_that_moves_kernel_and_torch_alike_is_one_platform_shift(tmp_path, capsys):
    """Every kernel and every torch baseline 4% faster (clocks, temperature): no per-kernel verdict, one line."""
    paths = pair(tmp_path, kernel_all=0.96, torch_factor=0.96)
    code, out, _ = cli(capsys, "compare", *paths)
    assert code == 0 and "No regressions" in out
    assert "Platform: no platform-wide shift: torch baselines -4.0%" in out
    assert "0 inconclusive" in out and "Speed improvements\n\n_none_" in out


def test_a_platform_wide_slowdown_is_reported_once_and_fails(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", *pair(tmp_path, kernel_all=1.10, torch_factor=1.10))
    verdict = section(out, "Verdict")
    assert code == 1 and "REGRESSION: platform-wide slowdown +10.0%" in verdict
    assert "PLATFORM-WIDE SLOWDOWN of +10.0%" in verdict
    assert "_none_" in section(out, "Speed regressions")  # not one line per kernel
    code, out, _ = cli(capsys, "compare", *pair(tmp_path, kernel_all=1.10, torch_factor=1.10)[::-1])
    assert code == 0 and "platform-wide speed-up of -9.1%" in out


def test_a_kernel_slower_than_the_platform_shift_is_named_beside_it(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", *pair(tmp_path, kernel_all=1.10, torch_factor=1.10,
                                                  kernel_factor={"gelu": 1.15}))
    assert code == 1 and "platform-wide slowdown" in out and "speed regression(s) (gelu)" in out


def test_kernel_and_torch_moving_together_is_shown_not_failed(tmp_path, capsys):
    """matmul and torch.matmul both 12% slower (a shared cause, e.g. clocks under power capping), nothing else."""
    base = perf_run(A, 1)
    cand = perf_run(B, 2)
    for b in cand["benchmarks"]:
        if b["kernel"] == "matmul":
            b["rounds"]["kernel_ms"] = [t * 1.12 for t in b["rounds"]["kernel_ms"]]
            b["rounds"]["baseline_ms"] = [t * 1.12 for t in b["rounds"]["baseline_ms"]]
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert code == 0 and "No regressions" in out
    assert section(out, "Moved with the torch baseline").count("| matmul") == len(SHAPES)


def test_a_torch_baseline_that_moved_alone_is_not_the_kernels_change(tmp_path, capsys):
    cand = perf_run(B, 2)
    for b in cand["benchmarks"]:
        if b["kernel"] == "gelu":
            b["rounds"]["baseline_ms"] = [t * 0.8 for t in b["rounds"]["baseline_ms"]]
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", perf_run(A, 1)), write(tmp_path / "c.json", cand))
    assert code == 0 and "its torch baseline moved, the kernel did not" in out


def test_a_disturbed_measurement_is_inconclusive_not_a_regression(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", *pair(tmp_path, kernel_factor={"layernorm": 3.5}, disturbed={"layernorm"}))
    inconclusive = section(out, "Inconclusive")
    assert code == 0 and "No regressions" in out and f"{len(SHAPES)} inconclusive" in out
    assert inconclusive.count("| layernorm") == len(SHAPES) and "candidate run: kernel round medians spread" in out


def test_rounds_that_overlap_are_inconclusive(tmp_path, capsys):
    """One slow round in six: the median moved, but the rounds do not separate the runs."""
    factors = [1.0, 1.0, 1.0, 1.3, 1.3, 1.3]
    code, out, _ = cli(capsys, "compare", *pair(tmp_path, round_factors=None, kernel_factor={"dropout": 1.0}))
    assert code == 0
    cand = perf_run(B, 2)
    for b in cand["benchmarks"]:
        if b["kernel"] == "dropout":
            b["rounds"]["kernel_ms"] = [t * f for t, f in zip(b["rounds"]["kernel_ms"], factors, strict=True)]
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", perf_run(A, 1)), write(tmp_path / "c.json", cand))
    assert code == 0 and "the runs' rounds overlap" in section(out, "Inconclusive")


def with_floor(run: dict, floors: dict[str, float], platform: float | None = None) -> dict:
    for b in run["benchmarks"]:
        b["noise_floor"] = floors.get(b["kernel"])
    run["ceilings"]["noise_floor"] = {"file": "reports/noise/sm_90.json", "platform": platform, "default": None}
    return run


def test_a_recorded_noise_floor_raises_the_limit_of_its_benchmark(tmp_path, capsys):
    base, cand = with_floor(perf_run(A, 1), {"dropout": 0.15}), with_floor(perf_run(B, 2, kernel_factor={
        "dropout": 1.10, "gelu": 1.10}), {"dropout": 0.15})
    paths = [write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand)]
    code, out, _ = cli(capsys, "compare", *paths)
    assert code == 1 and "speed regression(s) (gelu)" in out and "dropout" not in section(out, "Speed regressions")
    assert "recorded in the run files (from reports/noise/sm_90.json)" in out
    code, out, _ = cli(capsys, "compare", *paths, "--no-noise-floor")
    assert code == 1 and "4 speed regression(s) (" in out and "dropout" in section(out, "Speed regressions")


def test_noise_floor_learned_from_aa_runs_and_used_from_a_file(tmp_path, capsys):
    """Four A/A runs in which dropout wanders by 8% between runs (its samples tight within each): the learned floor
    covers dropout, and a fifth run's 8% dropout change is then within it while a real 12% gelu change is not."""
    runs = [write(tmp_path / f"aa{i}.json", perf_run(f"2026112{i}T000000Z-cuda-sm_90-a{i}", i,
                                                      kernel_factor={"dropout": 1.08 if i % 2 else 1.0}))
            for i in range(1, 5)]
    floor_file = tmp_path / "sm_90.json"
    code, out, err = cli(capsys, "noise-floor", *runs, "--out", floor_file)
    assert code == 0, err
    learned = json.loads(floor_file.read_text())
    assert learned["format"] == noise.FORMAT and learned["pairs"] == 6 and len(learned["learned_from"]) == 4
    dropout = [v for k, v in learned["benchmarks"].items() if k.startswith("dropout|")]
    others = [v for k, v in learned["benchmarks"].items() if not k.startswith("dropout|")]
    assert all(0.08 * 1.5 * 0.9 < d["floor"] < 0.08 * 1.5 * 1.3 for d in dropout), dropout
    assert all(o["floor"] < 0.03 for o in others)
    assert learned["platform"] is not None and learned["platform"] < 0.02
    new = write(tmp_path / "new.json", perf_run(B, 9, kernel_factor={"dropout": 1.08, "gelu": 1.12}))
    code, out, _ = cli(capsys, "compare", runs[1], new)
    assert code == 1 and "speed regression(s) (gelu, dropout)" in out
    code, out, _ = cli(capsys, "compare", runs[1], new, "--noise-floor", floor_file)
    assert code == 1 and "speed regression(s) (gelu)" in out and str(floor_file) in out


def test_noise_floor_refuses_runs_of_different_software(tmp_path, capsys):
    a, b = perf_run(A, 1), perf_run(B, 2)
    b["environment"]["driver"] = "590.1"
    code, _, err = cli(capsys, "noise-floor", write(tmp_path / "a.json", a), write(tmp_path / "b.json", b),
                       "--out", tmp_path / "f.json")
    assert code == 2 and "not an A/A run" in err and "driver" in err and not (tmp_path / "f.json").exists()


def test_files_without_rounds_fall_back_and_say_so(tmp_path, capsys):
    base = make_run(run_id=A, benchmarks=[bench("softmax", "fp16", {"M": 1}, 1.0, 0.5, 0.4, seed=1)])
    cand = make_run(run_id=B, benchmarks=[bench("softmax", "fp16", {"M": 1}, 1.0, 0.5, 0.4, seed=2)])
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert code == 0 and "Method for 1 benchmark(s): Mann-Whitney U on the do_bench samples (fallback" in out


def test_json_output_for_scripts(tmp_path, capsys):
    paths = pair(tmp_path, kernel_factor={"softmax": 1.2})
    code, out, _ = cli(capsys, "compare", *paths, "--json", "--out", tmp_path / "cmp.md")
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1 and data["failed"] is True
    assert data["format"] == "run-comparison/1" and data["verdict"].startswith("REGRESSION")
    assert {r["kernel"] for r in data["speed_regressions"]} == {"softmax"}
    assert data["compared"]["benchmarks"] == len(KERNELS) * len(SHAPES) and data["methods"] == {"rounds": 16}
    assert data["platform"]["verdict"] is None and (tmp_path / "cmp.md").read_text().startswith("# Run comparison")


def test_a_planted_run_is_named_in_the_warnings(tmp_path, capsys):
    cand = perf_run(B, 2, kernel_factor={"softmax": 1.2})
    for b in cand["benchmarks"]:
        if b["kernel"] == "softmax":
            b["planted"] = {"hook": "SUITE_BENCH_PLANT", "fraction": 0.2, "delay_ms": 0.01}
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", perf_run(A, 1)), write(tmp_path / "c.json", cand))
    assert code == 1 and "planted slowdown (test hook SUITE_BENCH_PLANT): softmax (+20% delay)" in out


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_compare_is_symmetric(tmp_path, direction):
    """A -> B and B -> A give mirror-image verdicts (log changes), whatever the sizes."""
    from reports.compare import compare

    paths = pair(tmp_path, kernel_factor={"softmax": 1.3, "gelu": 0.8})
    base, cand = load_runs(paths if direction == "forward" else paths[::-1], by_start=False)
    cmp = compare(base, cand)
    slower, faster = ({"softmax"}, {"gelu"}) if direction == "forward" else ({"gelu"}, {"softmax"})
    assert {r["kernel"] for r in cmp.regressions} == slower and {r["kernel"] for r in cmp.improvements} == faster


@pytest.mark.parametrize(("n", "m"), [(6, 6), (3, 5), (7, 4), (1, 1), (20, 20)])
def test_exact_mann_whitney_matches_scipy(n, m):
    import random

    from scipy.stats import mannwhitneyu

    from reports.changes import mann_whitney

    rng = random.Random(n * 100 + m)
    for _ in range(20):
        a = [rng.random() for _ in range(n)]
        b = [rng.random() + rng.choice([0.0, 0.4]) for _ in range(m)]
        assert mann_whitney(a, b) == pytest.approx(mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
