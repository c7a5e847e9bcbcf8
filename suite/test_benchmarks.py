"""Benchmarks (`pytest -m perf --backend=cuda`): every kernel's benchmark shapes and dtypes,
timed against ceilings measured in the same run. Figures go into the run file; nothing
here asserts a speed (timed tests flake), only that the benchmarked output is correct."""

from __future__ import annotations

import pytest

from suite import autotune, results
from suite.bench import benchmark, measure_ceilings
from suite.plugin import BACKEND

pytestmark = pytest.mark.perf


@pytest.fixture(scope="session")
def ceilings(request: pytest.FixtureRequest) -> dict:
    backend = request.config.stash[BACKEND]
    if backend.device == "cpu":
        pytest.skip("benchmarks need a GPU backend; the interpreter's timings mean nothing")
    with autotune.purpose("benchmark"):
        return measure_ceilings(backend.device, backend.profile)


def test_benchmark(kernel_dtype, ceilings: dict, request: pytest.FixtureRequest) -> None:
    spec, dtype, _ = kernel_dtype
    backend = request.config.stash[BACKEND]
    if not spec.benchmark_shapes:
        pytest.skip(f"{spec.name} declares no benchmark shapes")
    records = []
    request.node.user_properties.append((results.CEILINGS_PROPERTY, ceilings))
    request.node.user_properties.append(("suite_benchmark_records", records))
    for shape in spec.benchmark_shapes:
        records.append(benchmark(spec, dtype, shape, backend, ceilings))
    wrong = [r for r in records if not r["correct"]]
    assert not wrong, "; ".join(f"{r['shape']}: {r['message']}" for r in wrong)
