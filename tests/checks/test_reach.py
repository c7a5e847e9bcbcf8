"""Layouts users pass, drawn without the spec listing them; the launcher's contract found; subnormals by default.

Fixtures: tests/fixtures/reach_wide.py (a declared "wide" path that ignores the row stride: the layout-blind suite
passed it, on contiguous inputs alone) and tests/fixtures/reach_contract.py (launchers on layouts their specs did not
declare; a kernel that flushes subnormals its spec never listed). Each run is the ci profile on the interpreter.
"""

from __future__ import annotations

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
