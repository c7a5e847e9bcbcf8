"""Synthetic run files for the reports' tests: made here, so the tests never depend on a runner's files."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

from reports.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
H100 = ("NVIDIA H100 80GB HBM3", "sm_90")
H200 = ("NVIDIA H200", "sm_90")
XSS = "<script>alert(1)</script>"


def samples(median: float, seed: int, n: int = 60, noise: float = 0.01) -> list[float]:
    rng = random.Random(seed)
    return [median * (1 + rng.gauss(0, noise)) for _ in range(n)]


def bench(kernel: str, dtype: str, shape: dict, median: float, measured: float | None, datasheet: float | None,
          speedup: float | None = 1.2, correct: bool = True, seed: int = 0, n: int = 60, noise: float = 0.01) -> dict:
    s = samples(median, seed, n, noise)
    base = None if speedup is None else {"name": "torch", "samples_ms": samples(median * speedup, seed + 1000, n, noise),
                                         "median_ms": median * speedup}
    return {"kernel": kernel, "dtype": dtype, "shape": shape, "config": {"num_warps": 4}, "samples_ms": s,
            "median_ms": median, "iqr_ms": 0.01, "bytes": 1e9, "flops": 0.0, "gbps": 1000.0, "tflops": 0.0,
            "bound": "memory", "efficiency_measured": measured, "efficiency_datasheet": datasheet,
            "baseline": base, "speedup": speedup, "correct": correct, "error_ratio": 0.1, "message": None}


def case(kernel: str, dtype: str, seed: int, outcome: str = "passed", ratio: float = 0.1) -> dict:
    nodeid = f"suite/test_kernels.py::test_matches_reference[{kernel}-{dtype}]"
    return {"kernel": kernel, "dtype": dtype, "shape": {"M": 4, "N": 8 + seed}, "layout": "contiguous",
            "values": "normal", "seed": seed, "outcome": outcome, "error_ratio": ratio,
            "outputs": {"out": {"error_ratio": ratio, "max_abs_error": 1e-6}}, "message": None, "duration_s": 0.01,
            "nodeid": nodeid, "repro": f"pytest '{nodeid}' --repro=seed={seed}"}


def make_run(platform: tuple[str, str] = H100, run_id: str = "20261121T000000Z-cuda-sm_90-aaaaaa",
             started: str = "2026-11-21T00:00:00+00:00", kernels=(("softmax", "fp16"), ("matmul", "bf16")),
             benchmarks: list | None = None, ceilings: bool = True) -> dict:
    device, arch = platform
    tests, cases, findings = [], [], []
    for k, d in kernels:
        tests.append({"nodeid": f"suite/test_kernels.py::test_matches_reference[{k}-{d}]", "outcome": "passed",
                      "duration_s": 0.1, "message": None, "known_issue": None})
        cases += [case(k, d, seed, ratio=0.1 * (seed + 1)) for seed in range(3)]
        findings += [{"kernel": k, "dtype": d, "backend": "cuda", "arch": arch, "property": p, "claimed": True,
                      "holds": True, "cases_checked": 5, "message": None, "repro": None}
                     for p in ("deterministic", "batch_invariant")]
    run = {"schema_version": 1, "run_id": run_id, "status": "complete", "started": started,
           "finished": started, "command": ["pytest", "--backend=cuda"],
           "environment": {"backend": "cuda", "device_name": device, "arch": arch, "sm_count": 132, "warp_size": 32,
                           "profile": "h100_sxm", "profile_note": None, "driver": "580.1", "runtime": "CUDA 13.0",
                           "torch": "2.11.0", "triton": "3.6.0", "hypothesis": "6.170", "python": "3.12",
                           "platform": "Linux", "hostname": "runner", "hypothesis_profile": "validation",
                           "hypothesis_seed": 0},
           "tests": tests, "cases": cases, "findings": findings,
           "compiles": [{"kernel": "matmul", "dtype": "bf16", "target": "gfx942", "status": "failed",
                         "failure_class": "out_of_shared_memory", "config": {"num_stages": 3}},
                        {"kernel": "matmul", "dtype": "bf16", "target": "sm_90", "status": "ok", "registers": 168,
                         "spills": False, "occupancy": 0.5, "shared_bytes": 98304}],
           "benchmarks": benchmarks if benchmarks is not None else [], "known_issues": []}
    if ceilings:
        run["ceilings"] = {"copy_gbps": 3000.0, "matmul_tflops": {"fp16": 670.0, "bf16": 710.0, "fp32": 400.0},
                           "datasheet": {"bandwidth_tbs": 3.35, "tflops": {"fp16": 989.4, "bf16": 989.4, "fp32": 494.7}}}
        run["autotune"] = {"hits": 5, "misses": 1, "stale": 0, "tuning_benchmarks": 0,
                           "entries": [{"kernel": "matmul", "dtype": "bf16", "status": "hit"}]}
    return run


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rounds_bench(kernel: str, dtype: str, shape: dict, kernel_ms: float, torch_ms: float | None = None, seed: int = 0,
                 n_rounds: int = 6, noise: float = 0.004, per_round: int = 20, disturbed: str | None = None,
                 round_factors: list[float] | None = None, **over) -> dict:
    """A benchmark record as suite/tools/bench.py writes it: interleaved rounds of kernel and torch baseline samples.
    round_factors multiplies each round's times (a drift or a disturbance within the run)."""
    rng = random.Random(seed)
    factors = round_factors or [1.0] * n_rounds
    k_rounds = [[kernel_ms * f * (1 + rng.gauss(0, noise)) for _ in range(per_round)] for f in factors]
    b_rounds = None if torch_ms is None else [[torch_ms * f * (1 + rng.gauss(0, noise)) for _ in range(per_round)]
                                              for f in factors]
    med = statistics.median(statistics.median(r) for r in k_rounds)
    rec = bench(kernel, dtype, shape, med, 0.5, 0.4, speedup=None if torch_ms is None else torch_ms / kernel_ms)
    rec["samples_ms"] = [t for r in k_rounds for t in r]
    rec["median_ms"] = med
    if b_rounds:
        rec["baseline"] = {"name": "torch", "samples_ms": [t for r in b_rounds for t in r],
                           "median_ms": statistics.median(statistics.median(r) for r in b_rounds)}
    rec["rounds"] = {"kernel_ms": [statistics.median(r) for r in k_rounds],
                     "baseline_ms": None if b_rounds is None else [statistics.median(r) for r in b_rounds],
                     "kernel_tail": [0.01] * n_rounds, "baseline_tail": None if b_rounds is None else [0.01] * n_rounds,
                     "samples_per_round": {"kernel": per_round, "baseline": per_round if b_rounds else None},
                     "attempts": 3 if disturbed else 1, "disturbed": bool(disturbed), "disturbance": disturbed,
                     "limits": {"spread": 0.25, "tail": 0.5, "source": "default"}}
    rec.update(over)
    return rec


KERNELS = ("softmax", "rmsnorm", "gelu", "swiglu", "layernorm", "dropout", "matmul", "row_sum")
SHAPES = ({"M": 4096, "N": 4096}, {"M": 8192, "N": 8192})


def perf_run(run_id: str, seed: int, kernel_factor: dict | None = None, torch_factor: float = 1.0,
             kernel_all: float = 1.0, started: str | None = None, disturbed: set | None = None,
             drop: set | None = None, **bench_over) -> dict:
    """A -m perf run of KERNELS x SHAPES (fp16) with timing rounds: kernel_factor slows named kernels alone,
    torch_factor every torch baseline, kernel_all every kernel (a platform shift moves both)."""
    kernel_factor, disturbed, drop = kernel_factor or {}, disturbed or set(), drop or set()
    benches = []
    for i, k in enumerate(KERNELS):
        for j, shape in enumerate(SHAPES):
            if k in drop:
                continue
            base = 0.05 * (i + 1) * (j + 1)
            benches.append(rounds_bench(k, "fp16", shape, base * kernel_factor.get(k, 1.0) * kernel_all,
                                        1.2 * base * torch_factor, seed=seed * 1000 + 10 * i + j,
                                        disturbed="kernel round medians spread 60% (limit 25%)" if k in disturbed
                                        else None, **bench_over))
    run = make_run(run_id=run_id, started=started or f"2026-11-21T0{seed % 10}:00:00+00:00", benchmarks=benches,
                   kernels=())
    run["tests"] = [{"nodeid": f"suite/test_benchmarks.py::test_benchmark[{k}-fp16]", "outcome": "passed",
                     "duration_s": 1.0, "message": None, "known_issue": None} for k in KERNELS]
    run["finished"] = run["started"][:17] + "50" + run["started"][19:]  # 50 s after the start
    return run


def evidence(directory: Path, aa: tuple = ({}, {}, {}), planted: dict | None = None) -> Path:
    """A driver-validation evidence directory: aa-N/ with two perf runs each (aa[N-1] gives the second run's
    kernel_factor), planted-1/ with aa-1's second run and a run whose `planted` kernels are slower by their factor
    and marked as SUITE_BENCH_PLANT does."""
    planted = {"softmax": 1.25} if planted is None else planted
    runs = []
    for n, change in enumerate(aa, 1):
        d = directory / f"aa-{n}"
        d.mkdir(parents=True)
        for i, factor in enumerate(({}, change)):
            seed = 10 * n + i
            run = perf_run(f"202611{n:02d}T00{i}000Z-cuda-sm_90-a{n}{i}", seed, kernel_factor=factor,
                           started=f"2026-11-21T0{n}:{i}0:00+00:00")
            runs.append(write(d / f"run-{run['run_id']}.json", run))
    d = directory / "planted-1"
    d.mkdir()
    (d / runs[1].name).write_bytes(runs[1].read_bytes())
    cand = perf_run("20261130T000000Z-cuda-sm_90-p1", 99, kernel_factor=planted, started="2026-11-21T09:00:00+00:00")
    for b in cand["benchmarks"]:
        if b["kernel"] in planted:
            b["planted"] = {"hook": "SUITE_BENCH_PLANT", "fraction": planted[b["kernel"]] - 1, "delay_ms": 0.01}
    write(d / f"run-{cand['run_id']}.json", cand)
    return directory


def retune_check(tmp_path, timer):
    """hooks._retune's --retune-check of vector_add against a copy of the shipped H100 cache in ``tmp_path``, the
    GPU's timer replaced by ``timer(dtype, config) -> samples`` (raising: a config that fails to launch). What it
    left: the run file's check, vector_add's shipped entries, the copy's path and bytes before, the results dir."""
    from types import SimpleNamespace

    from suite.checks import autotune
    from suite.plugin import hooks
    from suite.tools import bench, compile_matrix

    shipped_path = tmp_path / "sm_90.json"
    shipped_path.write_bytes((ROOT / "hardware_profiles" / "autotune" / "sm_90.json").read_bytes())
    before = shipped_path.read_bytes()
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
    return SimpleNamespace(check=run_file.data["autotune"]["check"], shipped_path=shipped_path, before=before,
                           results_dir=results_dir,
                           ours=[e for e in shipped.entries.values() if e["kernel"] == "vector_add"])
