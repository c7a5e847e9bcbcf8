"""Layouts users pass, drawn without the spec listing them; the launcher's contract found; subnormals by default.

Fixtures: tests/fixtures/reach_wide.py (a declared "wide" path that ignores the row stride: the layout-blind suite
passed it, on contiguous inputs alone) and tests/fixtures/reach_contract.py (launchers on layouts their specs did not
declare; a kernel that flushes subnormals its spec never listed). Each run is the ci profile on the interpreter.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from kernels.spec import Case
from tests.conftest import start_suite_run

FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}
CONTRACT = ("blind_double", "refusing_double", "flushing_double", "flushing_excused", "late_refusing_double",
            "skipping_double", "optout_double", "copying_double")


@pytest.fixture(scope="module")
def wide_run(tmp_path_factory):
    return start_suite_run("suite/test_kernels.py", "--kernel-module=tests/fixtures/reach_wide.py",
                           "--kernels=wide_double", "-n", "0", results_dir=tmp_path_factory.mktemp("wide"),
                           env=FAST_SHRINK)


@pytest.fixture(scope="module")
def padwrite_run(tmp_path_factory):
    return start_suite_run("suite/test_kernels.py", "--kernel-module=tests/fixtures/reach_wide.py",
                           "--kernels=padwrite_double", "--no-memcheck", "-n", "0",
                           results_dir=tmp_path_factory.mktemp("padwrite"), env=FAST_SHRINK)


@pytest.fixture(scope="module")
def contract_run(tmp_path_factory):
    return start_suite_run("suite/test_kernels.py", "--kernel-module=tests/fixtures/reach_contract.py",
                           f"--kernels={','.join(CONTRACT)}", "-n", "0",
                           results_dir=tmp_path_factory.mktemp("contract"), env=FAST_SHRINK)


@pytest.fixture(scope="module")
def width16_run(tmp_path_factory):
    return start_suite_run("suite/test_kernels.py", "--kernel-module=tests/fixtures/reach_wide.py",
                           "--kernels=wide16_double", "-n", "0", results_dir=tmp_path_factory.mktemp("width16"),
                           env=FAST_SHRINK)


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory):
    where = tmp_path_factory.mktemp("probe")
    run = start_suite_run("suite/test_kernels.py", "--kernel-module=tests/fixtures/reach_contract.py",
                          "--kernels=keyed_double", "-n", "0", results_dir=where,
                          env={**FAST_SHRINK, "SUITE_TEST_LAUNCH_LOG": str(where / "launches.jsonl")})
    return run, where / "launches.jsonl"


def _coverage(run) -> dict[str, dict]:
    return {c["kernel"]: c for c in run.run_data()["coverage"]}


def _failed(run, kernel: str) -> list[dict]:
    return [c for c in run.run_data()["cases"] if c["outcome"] == "failed" and c["kernel"] == kernel]


def test_a_path_that_ignores_the_row_stride_fails_on_a_layout_the_spec_never_listed(wide_run):
    assert wide_run.returncode == 1, wide_run.output[-3000:]
    [failed] = _failed(wide_run, "wide_double")
    assert failed["layout"] == "contiguous" and failed["restride"] == "aligned_slice", failed
    assert failed["shape"]["N"] > 16 and "restrided" in failed and failed["restrided"] == ["x"], failed
    assert "restride=aligned_slice" in failed["repro"], failed["repro"]
    assert "contiguous+aligned_slice" in wide_run.output


def test_a_kernel_that_writes_the_padding_between_its_output_rows_fails_without_the_memory_check(padwrite_run):
    assert padwrite_run.returncode == 1, padwrite_run.output[-3000:]
    [failed] = _failed(padwrite_run, "padwrite_double")
    assert failed["restride"] in ("aligned_slice", "unaligned_slice"), failed
    assert "written between the rows of output 'out'" in failed["message"], failed["message"]


def test_an_undeclared_layout_the_launcher_accepts_must_be_right(contract_run):
    assert contract_run.returncode == 1, contract_run.output[-3000:]
    [failed] = _failed(contract_run, "blind_double")
    assert failed["restride"] in ("broadcast", "unaligned_slice"), failed
    assert "the launcher accepted a layout the spec did not declare" in failed["message"], failed["message"]
    assert "no_contract_probe" in failed["message"] and "refuse" in failed["message"]
    contract = _coverage(contract_run)["blind_double"]["contract"]
    assert contract["outcome"] == "wrong" and contract["tensors"], contract  # which tensors it re-laid


def test_an_error_raised_after_a_kernel_ran_on_the_layout_is_no_refusal(contract_run):
    [failed] = _failed(contract_run, "late_refusing_double")
    assert "after its launch" in failed["message"] and "is wrong on it" in failed["message"], failed["message"]
    assert _coverage(contract_run)["late_refusing_double"]["contract"]["outcome"] == "wrong"


def test_a_launcher_that_takes_an_undeclared_layout_without_launching_a_kernel_fails(contract_run):
    [failed] = _failed(contract_run, "skipping_double")
    assert "the launcher accepted a layout" in failed["message"] and "got 0.0" in failed["message"], failed["message"]
    assert _coverage(contract_run)["skipping_double"]["contract"]["outcome"] == "wrong"


def test_a_launcher_that_takes_an_undeclared_layout_through_copies_of_its_own_is_judged_by_its_values(contract_run):
    [failed] = _failed(contract_run, "copying_double")
    assert "the launcher accepted a layout" in failed["message"] and "never written" in failed["message"], failed
    assert _coverage(contract_run)["copying_double"]["contract"]["outcome"] == "wrong"


def test_a_spec_that_opts_out_of_the_probe_passes_and_the_run_file_says_why(contract_run):
    assert not _failed(contract_run, "optout_double")
    contract = _coverage(contract_run)["optout_double"]["contract"]
    assert contract == {"tried": "none", "outcome": "not judged",
                        "detail": "no_contract_probe: reads x as contiguous; its users pass contiguous tensors"}


def test_a_launcher_that_refuses_an_undeclared_layout_passes_and_the_refusal_is_recorded(contract_run):
    assert not _failed(contract_run, "refusing_double")
    contract = _coverage(contract_run)["refusing_double"]["contract"]
    assert contract["outcome"] == "refused" and "takes a contiguous x" in contract["detail"], contract
    assert contract["tensors"], contract
    not_met = _coverage(contract_run)["refusing_double"]["not_met"]
    assert not_met["restride=aligned_slice"].startswith("refused by the spec"), not_met


def test_subnormals_are_drawn_where_the_spec_lists_none_unless_it_says_why(contract_run):
    [failed] = _failed(contract_run, "flushing_double")
    assert failed["values"] == "subnormal" and "flushed to zero" in failed["message"], failed
    assert not _failed(contract_run, "flushing_excused")
    assert _coverage(contract_run)["flushing_excused"]["not_met"]["values=subnormal"].startswith("no_subnormals")


def test_a_restride_travels_in_the_reproduction_line():
    case = Case("k", "fp32", {"M": 3}, restride="permuted")
    assert Case.parse("k", "fp32", case.spec_string()) == case
    assert Case.parse("k", "fp32", "M=3;seed=1").restride == ""
    assert "+permuted" in str(case)


def test_the_aligned_slice_keeps_the_widths_class_for_tritons_specialization():
    from suite.checks.restride import row_stride

    for size in (2, 4, 8):
        for width in range(1, 200):
            stride = row_stride(width, size)
            assert stride > width and stride * size % 16 == 0, (width, size, stride)
            if width > 1:
                assert (stride % 16 == 0) == (width % 16 == 0), (width, size, stride)
    assert all(row_stride(w, 1) % 16 == 0 and row_stride(w, 1) > w for w in range(1, 100))


def test_a_restride_that_would_change_nothing_is_not_drawn(wide_run):
    """A spec whose tensors are all 2-D draws no permuted case (it would be the case as built): its cases are
    aligned slices or as built, one each in turn; a 3-D tensor is permuted."""
    import torch

    from suite.checks import restride
    from tests.fixtures.reach_wide import SPEC

    assert restride.by_rank(SPEC, {"x": torch.zeros(3, 5)}, {"out": torch.zeros(3, 5)}) == ("aligned_slice",)
    assert restride.by_rank(SPEC, {"x": torch.zeros(2, 3, 5)}, None) == ("aligned_slice", "permuted")
    assert restride.by_rank(SPEC, {"x": torch.zeros(5)}, None) == ()
    meet = restride.Meet({"contiguous": ("aligned_slice",)}, {"contiguous": ["N"]})
    picked = [restride.pick(SPEC, Case("wide_double", "fp32", {"M": 3, "N": n}, seed=n), meet).restride
              for n in range(2, 42)]
    assert set(picked) == {"", "aligned_slice"} and 12 <= picked.count("aligned_slice") <= 28, picked
    # rows of width 1: a row stride above 1 is a kernel variant of its own, for a slice no stride is read across
    assert {restride.pick(SPEC, Case("wide_double", "fp32", {"M": m, "N": 1}, seed=m), meet).restride
            for m in range(1, 30)} == {""}
    assert restride.width_dims(SPEC, {"x": torch.zeros(3, 5)}, {"M": 3, "N": 5}) == ["N"]
    assert restride.width_dims(SPEC, {"x": torch.zeros(5, 5)}, {"M": 5, "N": 5}) == [None]
    assert {c.get("restride", "") for c in wide_run.run_data()["cases"]} <= {"", "aligned_slice"}


def test_an_aligned_slice_meets_rows_of_a_width_divisible_by_16_where_a_passed_case_has_them(width16_run):
    """The launcher takes a 16-divisible width for dense rows: only an aligned slice of such a width (its row stride
    width + 16) shows it. Its one drawn case of such a width with rows to stride over, which its hash's pick left as
    built (the test passed), is the test's aligned slice (reach.Steer); where no drawn case is, the search after the
    draws runs a passed one sliced."""
    assert width16_run.returncode == 1, width16_run.output[-3000:]
    [failed] = _failed(width16_run, "wide16_double")
    assert failed["restride"] == "aligned_slice" and failed["shape"]["N"] % 16 == 0 and failed["shape"]["M"] >= 2


def test_the_contract_probe_runs_on_a_kernel_variant_the_test_compiled(probe_run):
    """The probe's broadcast (row stride 0, which Triton specializes as divisible by 16) runs on a passed case whose
    row stride was of that class already (width 16), not on the largest (width 20): the launch it makes has the
    ints' classes of a launch before it, so a GPU compiles nothing for it."""
    run, log = probe_run
    assert run.returncode == 0, run.output[-3000:]
    assert _coverage(run)["keyed_double"]["contract"]["tried"] == "broadcast"
    launches = [json.loads(line)[1:] for line in log.read_text().splitlines()]

    def classes(ints):
        return ["1" if v == 1 else "D" if v % 16 == 0 else "" for v in ints]

    *before, probe = launches
    assert probe[1] == 0, probe  # the broadcast: every row is row 0
    assert classes(probe) in [classes(b) for b in before], (probe, before)
    assert any(b[0] == 20 for b in before), before  # a wider case passed, whose stride's class the probe changes


def test_crossings_and_what_the_draws_missed_ride_on_one_case_per_change():
    """A case taking both of vector_add's paths (a loop and a masked tail) met neither negative nor special values:
    the value class no case drew and both paths' crossings run on one case per class (they ran on five: the class
    on the smallest case, then each path's taker with each class it missed)."""
    from suite.checks import reach
    from tests.fixtures.split_kernels import SPLIT_ADD

    cfg = {"BLOCK_SIZE": 32}
    coverage = reach.Coverage(SPLIT_ADD, "fp32", "interpret")
    coverage.add(Case("split_add", "fp32", {"N": 100}, values="normal", seed=1), [cfg])
    wanted = ["layout=contiguous", "values=normal", "values=negative", "values=special"]
    needs, found, rows = reach.crossing_needs(None, coverage, wanted)
    assert {(n.path, n.value) for n in needs} == {(p, v) for p in ("n_loop", "n_tail")
                                                  for v in ("negative", "special")}
    planned, left = reach.plan(coverage, [reach.Need("values", "special"), *needs], reach.takers(coverage), rows)
    assert not left and [(case.values, configs) for _, case, configs in planned] == [("special", [cfg]),
                                                                                     ("negative", [cfg])]
    assert planned[0][0] == ["values=special", "n_loop:values=special", "n_tail:values=special"], planned
    assert [label for label, _, _ in reach.crossing_cases(None, coverage, wanted)] == [
        "n_loop:values=negative; n_tail:values=negative", "n_loop:values=special; n_tail:values=special"]


def test_a_crossing_keeps_a_path_off_a_layout_it_is_not_taken_in():
    """A change of layout under which a path's ``taken`` no longer holds meets none of that path's needs; a path
    no case can take in a layout is left over, not run."""
    from kernels.spec import CodePath, KernelSpec
    from suite.checks import reach
    from tests.fixtures.split_kernels import SPLIT_ADD

    spec = dataclasses.replace(SPLIT_ADD, layouts=("contiguous", "other"), paths=(
        CodePath("plain", "only as built", lambda case, cfg: case.layout == "contiguous"),
        CodePath("any", "any layout", lambda case, cfg: True)))
    assert isinstance(spec, KernelSpec)
    coverage = reach.Coverage(spec, "fp32", "interpret")
    coverage.add(Case("split_add", "fp32", {"N": 100}, seed=1), [{}])
    needs, _, rows = reach.crossing_needs(None, coverage, ["layout=contiguous", "layout=other", "values=normal"])
    planned, left = reach.plan(coverage, needs, reach.takers(coverage), rows)
    assert [(labels, case.layout) for labels, case, _ in planned] == [(["any:layout=other"], "other")]
    assert left == [reach.Need("layout", "other", "plain")]


def _steer(spec, classes, active=lambda: True, subnormal=None, rows16=lambda case: False, meet=()):
    from suite.checks import reach, restride

    meet = restride.Meet({"contiguous": meet}, {})

    return reach.Steer(spec, "fp32", "interpret", classes, meet, primary=lambda case: {"BLOCK_SIZE": 32},
                       rows16=rows16, subnormal=subnormal, active=active)


def test_the_drawn_cases_carry_the_value_classes_their_paths_lack():
    """A drawn case whose paths met its drawn class already carries one they lack: vector_add's loop and tail meet
    every class on the drawn cases (the search then crosses nothing), each case's choice hangs on the cases drawn
    before alone (a split test's parts, drawing the same cases, choose alike) and a case drawn again keeps its own."""
    from tests.fixtures.split_kernels import SPLIT_ADD

    classes = ("normal", "negative", "special")
    drawn = [Case("split_add", "fp32", {"N": 100}, values="normal", seed=s) for s in range(6)]
    steer = _steer(SPLIT_ADD, classes, meet=())
    got = [steer(c) for c in drawn]
    assert [c.values for c in got[:3]] == ["normal", "negative", "special"], got
    assert {f"values={v}" for v in classes} <= steer.met["n_loop"] and steer.met["n_loop"] == steer.met["n_tail"]
    assert [steer(c) for c in drawn] == got  # drawn again: the same
    again = _steer(SPLIT_ADD, classes, meet=())
    assert [again(c) for c in drawn] == got  # another part drawing the same cases
    off = _steer(SPLIT_ADD, classes, active=lambda: False, meet=())  # not drawing, or failed
    assert [off(c).values for c in drawn] == ["normal"] * 6


def test_a_drawn_case_carries_the_subnormal_values_and_the_16_divisible_slice_once():
    """Subnormal values (the spec lists none) ride on one drawn case with rows whose own class was drawn before;
    the first case with rows of a width divisible by 16 is an aligned slice, the second one as built."""
    from tests.fixtures.reach_wide import WIDTH16

    built = []
    steer = _steer(WIDTH16, ("normal",), subnormal=lambda case: built.append(case) or True,
                   rows16=lambda case: case.shape["N"] % 16 == 0, meet=("aligned_slice",))
    shapes = [(1, 5), (3, 5), (3, 7), (4, 32), (4, 16), (4, 48)]
    got = [steer(Case("wide16_double", "fp32", {"M": m, "N": n}, seed=i)) for i, (m, n) in enumerate(shapes)]
    assert [c.values for c in got] == ["normal", "subnormal", "normal", "normal", "normal", "normal"], got
    assert [c.restride for c in got[3:5]] == ["aligned_slice", ""] and len(built) == 1, got
