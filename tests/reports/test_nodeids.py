"""The one reader of test ids and test records (reports/nodeids.py), which the verdict, the summary, the split tests,
the schedule and the reports all use: every form of id the suite writes, ids in reproduction lines, and ids it
does not write, which read as a test with no kernel and never raise."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports import nodeids

REF = "suite/test_kernels.py::test_matches_reference"


@pytest.mark.parametrize("nodeid, expected", [
    # module, function, param, whole_param, kernel, variant, dtype, part, parts
    (f"{REF}[matmul-fp32]",
     ("suite/test_kernels.py", "test_matches_reference", "matmul-fp32", "matmul-fp32", "matmul", "fp32", "fp32", 1, 1)),
    (f"{REF}[matmul-fp32-part2of5]",
     ("suite/test_kernels.py", "test_matches_reference", "matmul-fp32-part2of5", "matmul-fp32", "matmul", "fp32",
      "fp32", 2, 5)),
    (f"{REF}[fp8_scaled_matmul-fp8e4nv-part12of16]",
     ("suite/test_kernels.py", "test_matches_reference", "fp8_scaled_matmul-fp8e4nv-part12of16",
      "fp8_scaled_matmul-fp8e4nv", "fp8_scaled_matmul", "fp8e4nv", "fp8e4nv", 12, 16)),
    ("suite/test_properties.py::test_properties[layernorm_backward-bf16]",
     ("suite/test_properties.py", "test_properties", "layernorm_backward-bf16", "layernorm_backward-bf16",
      "layernorm_backward", "bf16", "bf16", 1, 1)),
    ("suite/test_benchmarks.py::test_benchmark[attention-fp16]",
     ("suite/test_benchmarks.py", "test_benchmark", "attention-fp16", "attention-fp16", "attention", "fp16", "fp16",
      1, 1)),
    # the compile matrix: a target, no dtype; or the kernel alone
    ("suite/test_compile_matrix.py::test_compiles_on_target[row_sum-sm_90]",
     ("suite/test_compile_matrix.py", "test_compiles_on_target", "row_sum-sm_90", "row_sum-sm_90", "row_sum", "sm_90",
      None, 1, 1)),
    ("suite/test_compile_matrix.py::test_compiles_on_target[matmul-gfx942]",
     ("suite/test_compile_matrix.py", "test_compiles_on_target", "matmul-gfx942", "matmul-gfx942", "matmul", "gfx942",
      None, 1, 1)),
    ("suite/test_compile_matrix.py::test_portability_lints[fp8_scaled_matmul]",
     ("suite/test_compile_matrix.py", "test_portability_lints", "fp8_scaled_matmul", "fp8_scaled_matmul",
      "fp8_scaled_matmul", None, None, 1, 1)),
    # the hazards: a kind, or no parameter
    ("suite/test_hazards.py::test_inputs_are_the_same_on_every_device[normal]",
     ("suite/test_hazards.py", "test_inputs_are_the_same_on_every_device", "normal", "normal", "normal", None, None,
      1, 1)),
    ("suite/test_hazards.py::test_a_grid_past_65535_on_axis_1_is_refused_or_right",
     ("suite/test_hazards.py", "test_a_grid_past_65535_on_axis_1_is_refused_or_right", None, None, None, None, None,
      1, 1)),
    # a test in a class: the function is the last name
    ("tests/test_x.py::TestA::test_b[k-int8]",
     ("tests/test_x.py", "test_b", "k-int8", "k-int8", "k", "int8", "int8", 1, 1)),
])
def test_every_id_the_suite_writes_reads_whole(nodeid, expected):
    n = nodeids.parse(nodeid)
    assert (n.module, n.function, n.param, n.whole_param, n.kernel, n.variant, n.dtype, n.part, n.parts) == expected
    assert n.nodeid == nodeid
    assert n.is_part == (expected[7:] != (1, 1))
    assert n.whole == (nodeid.replace(f"-part{n.part}of{n.parts}]", "]") if n.is_part else nodeid)
    assert n.kernel_dtype == ((n.kernel, n.dtype) if n.dtype else None)


def test_a_part_reads_as_its_whole_test_and_round_trips():
    whole = f"{REF}[matmul-fp32]"
    ids = nodeids.part_ids(whole, 3)
    assert ids == [f"{REF}[matmul-fp32-part{i}of3]" for i in (1, 2, 3)]
    assert [nodeids.parse(i).part for i in ids] == [1, 2, 3]
    assert {nodeids.parse(i).whole for i in ids} == {whole}
    assert {nodeids.parse(i).kernel_dtype for i in ids} == {("matmul", "fp32")}
    assert nodeids.part_ids(whole, 1) == [whole]
    assert nodeids.part_ids("suite/test_hazards.py::test_a", 3) == ["suite/test_hazards.py::test_a"]  # nothing to split
    assert nodeids.part_param("matmul-fp32", 0, 3) == "matmul-fp32-part1of3"
    assert nodeids.part_param("matmul-fp32", 0, 1) == "matmul-fp32"


@pytest.mark.parametrize("nodeid, function, param, kernel, variant", [
    ("", "", None, None, None),
    ("suite/test_kernels.py", "suite/test_kernels.py", None, None, None),  # no function: the id names it whole
    (f"{REF}[matmul-fp32", "test_matches_reference", None, None, None),  # no closing bracket
    (f"{REF}matmul-fp32]", "test_matches_referencematmul-fp32]", None, None, None),  # no opening bracket
    (f"{REF}[]", "test_matches_reference", "", None, None),
    (f"{REF}[-fp32]", "test_matches_reference", "-fp32", None, "fp32"),  # no kernel: no kernel x dtype
    (f"{REF}[matmul-]", "test_matches_reference", "matmul-", "matmul", None),
    (f"{REF}[a[b]-fp32]", "test_matches_reference", "a[b]-fp32", "a[b]", "fp32"),  # brackets inside: the outer ones
    ("test_x[k-fp16]", "test_x", "k-fp16", "k", "fp16"),  # no module
    (f"{REF}[matmul-fp32-partXof3]", "test_matches_reference", "matmul-fp32-partXof3", "matmul-fp32", "partXof3"),
])
def test_an_id_the_suite_does_not_write_reads_without_raising(nodeid, function, param, kernel, variant):
    n = nodeids.parse(nodeid)
    assert (n.function, n.param, n.kernel, n.variant) == (function, param, kernel, variant)
    assert (n.part, n.parts) == (1, 1) and n.whole == nodeid
    if kernel is None or variant is None:
        assert n.kernel_dtype is None


def test_a_part_suffix_alone_is_no_dtype():
    n = nodeids.parse(f"{REF}[normal-part1of2]")
    assert (n.kernel, n.variant, n.dtype, n.part, n.parts, n.whole) == ("normal", None, None, 1, 2, f"{REF}[normal]")


@pytest.mark.parametrize("name, dtype", [("fp32", True), ("bf16", True), ("fp8e4nv", True), ("fp8e5b16", True),
                                         ("int8", True), ("uint8", True), ("sm_90", False), ("gfx90a", False),
                                         ("normal", False), ("", False)])
def test_dtype_names_are_told_from_targets(name, dtype):
    assert nodeids.is_dtype(name) is dtype


def test_the_suite_s_dtypes_all_read_as_dtypes():
    from kernels._types import DTYPE_NAMES

    assert all(nodeids.is_dtype(d) for d in DTYPE_NAMES)


@pytest.mark.parametrize("line, nodeid", [
    (f"pytest '{REF}[leaky_relu-fp32]' --backend=interpret --kernel-module=examples/leaky_relu.py "
     "'--repro=N=1;layout=contiguous;values=normal;seed=0'", f"{REF}[leaky_relu-fp32]"),
    (f"python -m pytest '{REF}[matmul-fp32-part2of5]' --backend=cuda '--repro=M=1,N=3,K=2;layout=contiguous;"
     "values=negative;seed=0' '--config={\"BLOCK_M\":64}'", f"{REF}[matmul-fp32-part2of5]"),
    (f"triton-portability '{REF}[my_silu-fp32]' --backend=interpret --kernel-module=my_silu.py "
     "'--repro=N=1;layout=contiguous;values=normal;seed=0' --repro-runs=14", f"{REF}[my_silu-fp32]"),
    ("pytest 'suite/test_hazards.py::test_inputs_are_the_same_on_every_device[normal]' --backend=cuda",
     "suite/test_hazards.py::test_inputs_are_the_same_on_every_device[normal]"),
    ("pytest suite/test_large_tensors.py::test_vector_add_past_2_to_the_31 --backend=cuda",
     "suite/test_large_tensors.py::test_vector_add_past_2_to_the_31"),
    ("", None), (None, None), ("pytest --backend=cuda", None),
    (f"pytest '{REF}[matmul-fp32", None),  # cut short inside its quotes
])
def test_a_reproduction_line_names_its_test(line, nodeid):
    assert nodeids.repro_test_id(line) == nodeid
    if nodeid:
        assert nodeids.parse(nodeid).function in nodeid


@pytest.mark.parametrize("message, reason", [
    ("Skipped: fp8e4nv is not supported on interpreter (interpreter profile)",
     "fp8e4nv is not supported on interpreter (interpreter profile)"),
    ("fp8e4nv is not supported on sm_80 (a100 profile)", "fp8e4nv is not supported on sm_80 (a100 profile)"),
    ("Skipped: too large for this GPU\ncase matmul[fp32] {...}\nreproduce with: pytest '...'", "too large for this GPU"),
    ("  Skipped: why  \n", "why"),
    ("Skipped:\nwhy", "why"),
    ("Skipped: ", nodeids.NO_REASON),
    ("   ", nodeids.NO_REASON),
    ("", nodeids.NO_REASON),
    (None, nodeids.NO_REASON),
])
def test_a_skip_reads_as_its_first_line(message, reason):
    assert nodeids.skip_reason({"nodeid": f"{REF}[k-fp32]", "outcome": "skipped", "message": message}) == reason


def test_outcomes_read_from_the_record():
    assert [nodeids.failing({"outcome": o}) for o in nodeids.OUTCOMES] == [False, True, False, False, False, True]
    assert [o in nodeids.RAN for o in nodeids.OUTCOMES] == [True, True, False, True, True, True]
    assert nodeids.failing({"outcome": "error"}) and nodeids.outcome({}) == "" and not nodeids.failing({})


@pytest.mark.parametrize("message, report, verdict", [
    ("Skipped: fp8e5 is not supported on interpreter (interpreter profile)\ncase ...",
     "fp8e5 is not supported on interpreter (interpreter profile)",
     "the dtype is not supported on interpreter (interpreter profile)"),
    ("  Skipped: fp8e5 is not supported on sm_80 (a100 profile)", "fp8e5 is not supported on sm_80 (a100 profile)",
     "the dtype is not supported on sm_80 (a100 profile)"),  # the verdict kept 'Skipped: ' where blanks came before it
    ("Skipped:\nwhy", "why", "why"),  # the reports read 'Skipped:'
    ("   ", nodeids.NO_REASON, nodeids.NO_REASON),  # the verdict read an empty reason: 'not run: k[fp8e5]: '
])
def test_the_verdict_and_the_reports_read_one_skip_reason(message, report, verdict):
    from reports.loading import Run
    from reports.outcomes import not_run
    from suite.plugin import glance
    from tests.report_helpers import make_run

    data = make_run(kernels=())
    data["tests"] = [{"nodeid": f"{REF}[fp8_codes-fp8e5]", "outcome": "skipped", "duration_s": 0.0,
                      "message": message, "known_issue": None}]
    run = Run(Path("run.json"), data)
    assert not_run([run]) == {("fp8_codes", "fp8e5", run.platform): report}
    assert glance.not_run_lines(data["tests"], "test_matches_reference") == [f"not run: fp8_codes[fp8e5]: {verdict}"]


@pytest.mark.parametrize("launcher", ["pytest", "python -m pytest", "triton-portability"])
def test_the_history_reads_a_finding_s_test_however_the_run_was_started(launcher):
    """A property wrong in some runs only is an intermittent night, whatever command the reproduction line starts
    with (the reports read only 'pytest ...' lines before: a run started by python -m pytest had failed nights)."""
    from reports.history import night_states
    from reports.loading import Run
    from tests.report_helpers import make_run

    data = make_run(kernels=(("softmax", "fp16"),))
    nodeid = "suite/test_properties.py::test_properties[softmax-fp16]"
    data["tests"].append({"nodeid": nodeid, "outcome": "failed", "duration_s": 1.0, "message": "wrong",
                          "known_issue": None})
    data["findings"][0].update(holds=False, intermittent={"wrong": 2, "runs": 5},
                               repro=f"{launcher} '{nodeid}' --backend=cuda '--repro=N=1;seed=0' --repro-runs=5")
    assert night_states(Run(Path("run.json"), data)) == {("softmax", "fp16"): "intermittent"}
