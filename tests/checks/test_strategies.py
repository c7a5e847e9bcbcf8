"""Hypothesis strategies: edge-biased sizes within the backend's limits, reproducible CI draws."""

from __future__ import annotations

from hypothesis import find, given, settings
from hypothesis import strategies as st

from kernels.spec import Case, Dim
from suite.checks.strategies import PROFILES, case_strategy, dim_max, edge_values


def test_edges_sit_around_each_block_and_within_the_limit():
    dim = Dim("N", interpret_max=300, gpu_max=5000, blocks=(128,))
    edges = edge_values(dim, 300)
    assert {1, 127, 128, 129, 257, 2, 3, 251, 256} <= set(edges)
    assert max(edges) == 300 and min(edges) == 1


def test_interpreter_sizes_stay_small():
    dim = Dim("N", interpret_max=64, gpu_max=4096, nightly_max=65536)
    assert dim_max(dim, "interpret", large=True) == 64
    assert dim_max(dim, "cuda", large=False) == 4096
    assert dim_max(dim, "rocm", large=True) == 65536


def _spec():
    from kernels.registry import get, load_builtin

    load_builtin()
    return get("matmul")


@given(st.data())
@settings(max_examples=50, deadline=None, derandomize=True, database=None)
def test_drawn_cases_respect_dims_and_spec(data):
    spec = _spec()
    case = data.draw(case_strategy(spec, "fp16", "interpret"))
    assert isinstance(case, Case) and case.dtype == "fp16"
    for dim in spec.dims:
        assert 1 <= case.shape[dim.name] <= dim.interpret_max
    assert case.layout in spec.layouts and case.values in spec.value_classes


def test_block_boundaries_are_reachable():
    spec = _spec()
    strategy = case_strategy(spec, "fp32", "cuda")
    found = find(strategy, lambda c: c.shape["M"] == 129 and c.layout == "transposed_a",
                 settings=settings(max_examples=2000, database=None, derandomize=True))
    assert found.shape["M"] == 129


def test_ci_and_validation_profiles_do_not_depend_on_a_database():
    assert PROFILES["ci"].derandomize and PROFILES["ci"].database is None
    assert PROFILES["validation"].database is None
    assert PROFILES["nightly"].max_examples > PROFILES["ci"].max_examples


def test_repro_string_round_trips():
    case = Case("softmax", "bf16", {"M": 3, "N": 129}, "padded_rows", "negative", 12345)
    assert Case.parse("softmax", "bf16", case.spec_string()) == case


def test_repro_string_errors_name_the_bad_part():
    import pytest

    with pytest.raises(ValueError, match="N='x'"):
        Case.parse("softmax", "fp32", "M=1,N=x;seed=1")
    with pytest.raises(ValueError, match="unknown field"):
        Case.parse("softmax", "fp32", "M=1;colour=red")


def test_shared_example_database_saves_and_replays_failures(run_suite, tmp_path):
    """--hypothesis-db (env SUITE_HYPOTHESIS_DB): a failure found once is saved, and the next run
    replays it first; the derandomized ci profile keeps no examples and says so."""
    db = tmp_path / "db"
    # The dropped mask fails every size that is not a multiple of the block, so the dev profile's
    # 10 random examples find it in every run (the softmax max-identity bug needs an all-negative,
    # underflowing row, which 10 random examples miss in some runs).
    args = ("suite/test_kernels.py", "--kernel-module=tests/fixtures/planted_bugs.py",
            "--kernels=planted_vector_add_dropped_mask", "-k", "fp32", "--hypothesis-profile=dev")
    # Shrinking runs to the end (no deadline): on a loaded machine a deadline would stop the two runs at
    # different cases.
    full = {"SUITE_SHRINK_SECONDS": "600"}
    first = run_suite(*args, f"--hypothesis-db={db}", results_dir=tmp_path / "first", env=full)
    assert first.returncode == 1, first.output[-3000:]
    assert f"hypothesis database: {db}" in first.output
    saved = [p for p in db.rglob("*") if p.is_file()]
    assert saved, "no example saved"
    second = run_suite(*args, results_dir=tmp_path / "second", env={"SUITE_HYPOTHESIS_DB": str(db), **full})
    assert second.returncode == 1, second.output[-3000:]
    repro = [[c["repro"] for c in r.run_data()["cases"] if c["outcome"] == "failed"] for r in (first, second)]
    assert repro[0] == repro[1] and len(repro[0]) == 1
    ci = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", f"--hypothesis-db={db}",
                   results_dir=tmp_path / "ci")
    assert ci.returncode == 0 and "not used: the ci profile is derandomized" in ci.output


def _derandomized_draws() -> list[int]:
    drawn = []

    @settings(PROFILES["ci"], max_examples=300)
    @given(st.integers(0, 10**6))
    def draw(x):
        drawn.append(x)

    draw()
    return drawn


def test_draws_do_not_depend_on_the_modules_a_process_imported(tmp_path, monkeypatch):
    """A local module full of integer constants, imported between two derandomized runs of the same test, changes
    nothing (the session patched Hypothesis's local constants away: suite/compat.py, fixed_constants). Planted: with
    Hypothesis's own constant finder the second run draws other cases."""
    import importlib
    import sys

    from hypothesis.internal.conjecture import providers

    from suite import compat

    compat.fixed_constants()
    constants = [7919 * i + 13 for i in range(1, 400)]
    (tmp_path / "many_constants.py").write_text("VALUES = (" + ", ".join(map(str, constants)) + ")\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def with_module_imported(name):
        before = _derandomized_draws()
        (tmp_path / f"{name}.py").write_text((tmp_path / "many_constants.py").read_text())
        importlib.import_module(name)
        try:
            return before, _derandomized_draws()
        finally:
            sys.modules.pop(name, None)

    before, after = with_module_imported("many_constants_fixed")
    assert before == after

    monkeypatch.setattr(providers, "_get_local_constants", providers._get_local_constants.__wrapped__)
    monkeypatch.setattr(providers, "_sys_modules_len", None)
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        before, after = with_module_imported("many_constants_planted")
    finally:
        providers.CONSTANTS_CACHE.cache.clear()
    assert before != after
