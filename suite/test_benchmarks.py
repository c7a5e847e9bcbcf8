"""Benchmarks (`pytest -m perf --backend=cuda`): every kernel's benchmark shapes and dtypes,
timed in interleaved rounds against ceilings measured in the same run (suite/tools/bench.py). Figures
go into the run file; nothing here asserts a speed (timed tests flake), only that the
benchmarked output is correct."""

from __future__ import annotations

import os

import pytest

from suite.checks import autotune
from suite.plugin.context import BACKEND
from suite.plugin.recorder import KNOWN_PROPERTY
from suite.session import results
from suite.tools import bench
from suite.workers import gpu_share

pytestmark = pytest.mark.perf


@pytest.fixture(scope="session")
def plant() -> dict[str, float]:
    """Test hook SUITE_BENCH_PLANT (KERNEL=FRACTION,...): kernels made slower on purpose, to prove that
    `python -m reports compare` catches a slowdown. Checked before anything is timed, on every backend."""
    from kernels import registry

    try:
        return bench.parse_plant(os.environ.get(bench.PLANT_VARIABLE), [s.name for s in registry.all_specs()])
    except ValueError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def noise_floor(request: pytest.FixtureRequest) -> tuple[dict, dict]:
    """The arch's noise-floor entries and the run file's note about them."""
    backend = request.config.stash[BACKEND]
    return bench.noise_floor(backend.arch, backend.device_name)


@pytest.fixture(scope="session")
def ceilings(request: pytest.FixtureRequest, plant: dict, noise_floor: tuple[dict, dict]) -> dict:
    backend = request.config.stash[BACKEND]
    if backend.device == "cpu":
        pytest.skip("benchmarks need a GPU backend; the interpreter's timings mean nothing")
    # A timing takes the GPU alone: no other worker's case runs on it meanwhile (suite/workers/gpu_share.py).
    with autotune.purpose("benchmark"), gpu_share.share().alone(backend.device):
        measured = bench.measure_ceilings(backend.device, backend.profile)
    return {**measured, "noise_floor": noise_floor[1]}


def test_benchmark(kernel_dtype, ceilings: dict, plant: dict, noise_floor: tuple[dict, dict],
                   request: pytest.FixtureRequest) -> None:
    spec, dtype, known_issue = kernel_dtype
    if known_issue:  # named in the run file, as the reference test's is
        request.node.user_properties.append((KNOWN_PROPERTY, known_issue.as_record()))
    backend = request.config.stash[BACKEND]
    if not spec.benchmark_shapes:
        pytest.skip(f"{spec.name} declares no benchmark shapes")
    records = []
    request.node.user_properties.append((results.CEILINGS_PROPERTY, ceilings))
    request.node.user_properties.append(("suite_benchmark_records", records))
    for shape in spec.benchmark_shapes:
        with gpu_share.share().alone(backend.device):
            try:
                records.append(bench.benchmark(spec, dtype, shape, backend, ceilings, noise_floor[0],
                                               plant.get(spec.name)))
            except bench.TimedSync as exc:
                pytest.fail(f"{shape}: {exc}", pytrace=False)
    wrong = [r for r in records if not r["correct"]]
    assert not wrong, "; ".join(f"{r['shape']}: {r['message']}" for r in wrong)
