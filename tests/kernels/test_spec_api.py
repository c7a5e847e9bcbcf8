"""The spec API for kernels that are not ours: per-output and per-dtype tolerances, outputs that start from a value
(in place, accumulating), several jitted functions, ``@triton.autotune``, known issues shipped with the module, and
outputs that no launch received. Mistakes in a spec are one line naming the field; mistakes a spec makes at run time
fail the case and say what to change. The kernels are in tests/fixtures/bring_your_own.py.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
import triton
import triton.language as tl

from kernels.spec import Dim, JitKernel, KnownIssue, SpecError, Tolerance, autotune_configs, is_autotuned
from kernels.vector_add import SPEC as VECTOR_ADD
from kernels.vector_add import vector_add_kernel
from suite.checks import launches

BYO = "--kernel-module=tests/fixtures/bring_your_own.py"


# --- fields checked when the spec is made ----------------------------------------------------------------------

def _sig(dtype, meta):
    return VECTOR_ADD.compile_signature(dtype, meta)


@pytest.mark.parametrize("change, words", [
    ({"output_tolerances": {"nope": Tolerance()}}, ["'output_tolerances'", "'nope' is not a declared output"]),
    ({"output_tolerances": {"out": 3}}, ["output_tolerances['out']", "must be a Tolerance"]),
    ({"output_tolerances": [("out", Tolerance())]}, ["'output_tolerances'", "must be a mapping"]),
    ({"tolerance": Tolerance(dtype_safety={"fp64": 2.0})}, ["'tolerance'", "dtype_safety names 'fp64'",
                                                            "['fp32', 'fp16', 'bf16']"]),
    ({"tolerance": Tolerance(dtype_safety={"fp16": -1})}, ["dtype_safety['fp16'] must be a finite number >= 0"]),
    ({"initial_outputs": {"nope": "x"}}, ["'initial_outputs'", "'nope' is not a declared output"]),
    ({"initial_outputs": {"out": "no such"}}, ["['out'] = 'no such' is not an input name"]),
    ({"initial_outputs": {"out": None}}, ["['out'] = None", "a finite number"]),
    ({"initial_outputs": {"out": float("nan")}}, ["['out'] = nan"]),
    ({"host_epilogue": {"out": "torch sums"}}, ["'host_epilogue'", "make_outputs is given", "make_outputs=None"]),
    ({"host_epilogue": {"nope": "why"}, "make_outputs": None}, ["'host_epilogue'", "'nope' is not a declared output"]),
    ({"host_epilogue": {"out": " "}, "make_outputs": None}, ["host_epilogue", "['out'] = ' '", "say why torch"]),
    ({"host_epilogue": ["out"], "make_outputs": None}, ["'host_epilogue'", "must be a mapping"]),
    ({"jit_fns": (vector_add_kernel,)}, ["'jit_fns'", "[0] must be JitKernel(fn, signature)"]),
    ({"jit_fns": (JitKernel(vector_add_kernel, _sig),)}, ["['vector_add_kernel'] appear more than once"]),
    ({"jit_fns": (JitKernel(len, _sig),)}, ["[0] fn must be a @triton.jit function"]),
    ({"jit_fns": (JitKernel(vector_add_kernel, None),)}, ["signature must be callable"]),
    ({"known_issues": (KnownIssue(id="k", reason="r", link="", backend="metal"),)},
     ["'known_issues'", "backend 'metal' matches none of interpret, cuda, rocm"]),
    ({"known_issues": (KnownIssue(id="k", reason="r", link="", dtype="fp64"),)},
     ["dtype 'fp64' matches none of the spec's dtypes"]),
    ({"known_issues": (KnownIssue(id="k", reason="r", link="", triton="three"),)}, ["not a version specifier"]),
    ({"known_issues": (KnownIssue(id="k", reason="", link=""),)}, ["reason is empty"]),
    ({"known_issues": (KnownIssue(id="k", reason="r", link="", failure_pattern="NaN"),) * 2},
     ["ids ['k'] appear more than once"]),
    ({"known_issues": ({"id": "k"},)}, ["[0] must be KnownIssue(id=..., reason=..., link=...)"]),
    ({"known_issues": (KnownIssue(id="k", reason="r", link="", test="test_compiles_on_target"),)},
     ["test 'test_compiles_on_target' matches none of the tests", "test_matches_reference, test_properties"]),
    ({"dims": (Dim("N"),)}, ["dim 'N': interpret_max is required", "unless the dim has fixed choices"]),
])
def test_spec_mistakes_name_the_module_spec_and_field(change, words):
    with pytest.raises(SpecError) as err:
        dataclasses.replace(VECTOR_ADD, **change)
    message = str(err.value)
    assert "tests/kernels/test_spec_api.py: kernel spec 'vector_add': field" in message, message
    for word in words:
        assert word in message, message
    assert "\n" not in message


def test_a_dim_with_choices_needs_no_maxima():
    spec = dataclasses.replace(VECTOR_ADD, dims=(Dim("N", choices=(64, 128)),), benchmark_shapes=({"N": 128},))
    assert spec.dims[0].interpret_max is None
    KnownIssue(id="k", reason="r", link="", test="test_*")  # a glob over the per-kernel tests is fine
    dataclasses.replace(VECTOR_ADD, known_issues=(KnownIssue(id="k", reason="r", link="", test="test_prop*",
                                                             failure_pattern="NaN"),))


def test_each_output_and_dtype_takes_its_own_rule():
    loose = Tolerance(safety=16.0, dtype_safety={"bf16": 64.0})
    spec = dataclasses.replace(VECTOR_ADD, outputs=("out", "extra"), output_tolerances={"extra": loose},
                               make_outputs=lambda inp, case: {"out": inp["x"], "extra": inp["x"]})
    assert spec.tolerance_for("out") is spec.tolerance and spec.tolerance_for("extra") is loose
    assert (loose.safety_for("bf16"), loose.safety_for("fp16"), spec.tolerance.safety_for("bf16")) == (64.0, 16.0, 4.0)


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 32}, num_warps=1),
                          triton.Config({"BLOCK_SIZE": 128}, num_warps=4, num_stages=2)], key=["n_elements"])
@triton.jit
def autotuned_copy(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_an_autotuned_kernel_brings_its_configs_to_every_family():
    assert is_autotuned(autotuned_copy) and not is_autotuned(vector_add_kernel)
    configs = autotune_configs(autotuned_copy)
    assert configs == ({"BLOCK_SIZE": 32, "num_warps": 1, "num_stages": 3},
                       {"BLOCK_SIZE": 128, "num_warps": 4, "num_stages": 2})
    spec = dataclasses.replace(VECTOR_ADD, name="copy_autotuned", jit_fn=autotuned_copy, configs={}, default_config={})
    assert spec.configs == {family: configs for family in ("nvidia", "amd", "interpret")}
    assert spec.default_config_for("amd") == configs[0]
    assert spec.compile_signature("fp16", {"BLOCK_SIZE": 32})[0]["out_ptr"] == "*fp16"  # unwraps the autotuner


# --- autotuned kernels run a chosen config and time nothing -----------------------------------------------------

def test_an_autotuned_kernel_runs_the_chosen_config_and_never_benchmarks(monkeypatch):
    import triton.testing

    def no_timing(*args, **kwargs):
        raise AssertionError("the autotuner timed configs")

    monkeypatch.setattr(triton.testing, "do_bench", no_timing)
    x = torch.arange(100, dtype=torch.float32)
    for choice, block in (({"BLOCK_SIZE": 128, "num_warps": 4}, 128), ({"BLOCK_SIZE": 32}, 32), ({}, 32),
                          ({"OTHER": 1}, 32)):
        out = torch.full_like(x, float("nan"))
        with launches.chosen(choice):
            autotuned_copy[lambda meta: (triton.cdiv(100, meta["BLOCK_SIZE"]),)](x, x, out, 100)
        assert torch.equal(out, x) and autotuned_copy.best_config.kwargs["BLOCK_SIZE"] == block, choice
    assert len(autotuned_copy.configs) == 2  # the autotuner's own list is left as it was
    with pytest.raises(launches.NotAnAutotuneConfig, match=r"config \{'BLOCK_SIZE': 64\} is none of autotuned_copy"):
        with launches.chosen({"BLOCK_SIZE": 64}):
            autotuned_copy[(1,)](x, x, x, 100)
    # A launcher that passes a tuned meta-parameter itself: named, not "got multiple values for keyword argument".
    with pytest.raises(launches.NotAnAutotuneConfig, match=r"passes \['BLOCK_SIZE'\] to autotuned_copy, which "):
        with launches.chosen({}):
            autotuned_copy[(1,)](x, x, x, 100, BLOCK_SIZE=32)


def test_launches_record_the_storages_they_received():
    x = torch.zeros(300)
    view = torch.empty(600)[100:400]
    with launches.recording() as seen:
        vector_add_kernel[(3,)](x, x, view, 300, BLOCK_SIZE=128)
    assert seen.kernels == ["vector_add_kernel"]
    assert seen.reached(x) and seen.reached(view) and not seen.reached(torch.zeros(3))


# --- end to end -------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_byo_kernels_pass_and_each_mistake_is_named(run_suite):
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", BYO, "--kernels=byo_*,broken_*", "-n", "2")
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    tests = {t["nodeid"].split("[")[1].rstrip("]") + ("/props" if "test_properties" in t["nodeid"] else ""): t
             for t in data["tests"]}
    for name in ("byo_in_place-fp32", "byo_accumulate-fp32", "byo_two_kernels-fp32", "byo_autotuned-fp32",
                 "byo_libdevice-fp32", "byo_libdevice-fp16", "byo_libdevice-bf16"):
        assert tests[name]["outcome"] == "passed", (name, tests[name].get("message"))
        assert tests[name + "/props"]["outcome"] == "passed", (name, tests[name + "/props"].get("message"))
    assert tests["byo_known_issue-fp32"]["outcome"] == "xfailed"
    assert tests["byo_fixed_known_issue-fp32"]["outcome"] == "xpassed"  # not met: said, not failed
    assert {k["id"]: k["source"] for k in data["known_issues"]}["byo-off-by-one"] == "tests/fixtures/bring_your_own.py"
    coverage = {c["kernel"]: c for c in data["coverage"]}
    assert len(coverage["byo_autotuned"]["configs"]) == 3, coverage["byo_autotuned"]  # each @triton.autotune config

    failed = {c["kernel"]: c for c in data["cases"] if c["outcome"] == "failed"}
    assert failed["broken_launcher_allocates"]["failure"] == "spec"
    assert "output(s) ['out'] reached none of the run's 1 kernel launch(es) (add_kernel)" in \
        failed["broken_launcher_allocates"]["message"]
    assert failed["broken_libdevice_gap"]["failure"] == "interpreter"
    assert "libdevice.j0 has no interpreter version" in failed["broken_libdevice_gap"]["message"]
    assert tests["byo_bf16_arithmetic-bf16"]["outcome"] == "passed", tests["byo_bf16_arithmetic-bf16"].get("message")
    assert "out-of-bounds load in kernel add_kernel" in tests["broken_store_past_sliced_output-fp32/props"]["message"]
    assert tests["broken_store_past_sliced_output-fp32"]["outcome"] == "passed"  # only the sliced run goes past
    assert "broken_in_place_overwrites" in failed


def test_property_runs_have_guard_regions(run_suite):
    """With the memory checker off, the store past the end of a sliced batch lands in the output's guard region."""
    run = run_suite("suite/test_properties.py", BYO, "--kernels=broken_store_past_sliced_output", "--no-memcheck")
    assert run.returncode == 1, run.output[-3000:]
    assert "(checking 'batch_invariant'): " in run.output
    assert "elements written past the end of output 'out' (out-of-bounds store)" in run.output, run.output[-3000:]
    # The summary and the run file never say that a property the run could not check holds.
    assert "batch_invariant: stopped" in run.output, run.output[-3000:]
    stopped = [f for f in run.run_data()["findings"] if f["property"] == "batch_invariant"]
    assert stopped and all(f.get("stopped") and "out-of-bounds store" in f["stopped"] for f in stopped)


def test_every_jitted_function_is_compiled_for_the_targets(run_suite):
    # SUITE_COMPILE_MATRIX=ci: the autotuned kernel's other configs too (the default selection compiles its default)
    run = run_suite("suite/test_compile_matrix.py::test_compiles_on_target", BYO,
                    "--kernels=byo_two_kernels,byo_autotuned", "-k", "sm_90 or gfx942", env={"SUITE_COMPILE_MATRIX": "ci"})
    assert run.returncode == 0, run.output[-3000:]
    records = run.run_data()["compiles"]
    functions = {(r["kernel"], r["function"], r["target"], r["status"]) for r in records}
    for target in ("sm_90", "gfx942"):
        assert {("byo_two_kernels", f, target, "ok") for f in ("square_forward", "square_backward")} <= functions
    tuned = {json.dumps(r["config"], sort_keys=True) for r in records if r["kernel"] == "byo_autotuned"}
    assert len(tuned) == 3, tuned


def test_a_known_issue_id_declared_in_a_module_and_the_file_is_a_usage_error(run_suite, tmp_path):
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_issues": [
        {"id": "byo-off-by-one", "backend": "interpret", "arch": "*", "triton": "", "kernel": "vector_add",
         "dtype": "fp32", "reason": "r", "link": "l", "failure_pattern": "NaN"}]}))
    run = run_suite("suite/test_kernels.py", BYO, "--kernels=byo_in_place", f"--known-issues={path}")
    assert run.returncode == 4, run.output[-3000:]
    assert (f"known issue id 'byo-off-by-one' is declared twice: in {path} and in tests/fixtures/bring_your_own.py"
            in run.output), run.output[-3000:]
