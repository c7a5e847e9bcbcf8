"""Issue 31 (trust, round two): what used to pass vacuously now fails.

- A kernel that writes into an input fails, naming the input and the first changed element (the reference used to
  run after the launch, on the clobbered input, so an add that zeroes x and stores y matched x + y); a reference
  that writes into its inputs is a broken spec whose reproduction line reproduces it; a declared workspace
  (``mutable_inputs``) may change.
- A spec whose dims allow only empty tensors is refused when made; a test whose cases compared no element fails.
- A kernel under a subclass of Triton's Autotuner runs each of its configs; an autotuned kernel whose configs no
  case names is warned about.

The kernels are in tests/fixtures/input_writers.py, tests/fixtures/subclassed_autotuner.py and
tests/fixtures/bad_modules/empty_dims.py.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess

import pytest
import torch

from kernels.spec import Case, SpecError, autotune_configs, is_autotuned
from kernels.vector_add import SPEC as VECTOR_ADD
from suite.checks import launches
from suite.checks.harness import BrokenSpec, InputSnapshot
from tests.conftest import run_python

WRITERS = "--kernel-module=tests/fixtures/input_writers.py"
SUBCLASSED = "--kernel-module=tests/fixtures/subclassed_autotuner.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}


def _reproduce(repro: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    argv = shlex.split(repro)
    assert argv[0] == "pytest"
    return run_python(*argv, "-p", "no:cacheprovider", "--no-results", env=env, timeout=300)


@pytest.mark.slow
def test_input_writers_fail_and_a_declared_workspace_passes(run_suite):
    run = run_suite("suite/test_kernels.py", WRITERS, SUBCLASSED, "-n", "0",
                    "--kernels=clobber_add,mutating_reference_add,workspace_add,empty_outputs_add,"
                    "subclassed_autotune_add,unnamed_autotune_add", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    tests = {t["nodeid"].split("[")[1].split("-")[0]: t for t in data["tests"]}
    failed = {c["kernel"]: c for c in data["cases"] if c["outcome"] == "failed"}

    clobber = failed["clobber_add"]
    assert clobber["message"].startswith("the kernel changed its input: input 'x': "), clobber["message"]
    assert "elements changed (first at (" in clobber["message"] and "now 0.0)" in clobber["message"]
    assert "failure" not in clobber  # a wrong kernel, shrunk like a wrong value
    proc = _reproduce(clobber["repro"])
    assert proc.returncode == 1 and "the kernel changed its input: input 'x'" in proc.stdout, proc.stdout[-2000:]

    reference = failed["mutating_reference_add"]
    assert reference["failure"] == "spec", reference
    assert reference["message"].startswith("broken spec: the reference (or the tolerance's magnitude) changed its "
                                           "inputs: input 'x': "), reference["message"]
    assert "BROKEN SPEC mutating_reference_add[fp32]" in run.output
    proc = _reproduce(reference["repro"])
    assert proc.returncode == 1 and "broken spec: the reference (or the tolerance's magnitude) changed its inputs" \
        in proc.stdout, proc.stdout[-2000:]

    assert tests["workspace_add"]["outcome"] == "passed", tests["workspace_add"]
    empty = tests["empty_outputs_add"]
    ran = sum(1 for c in data["cases"] if c["kernel"] == "empty_outputs_add")  # the drawn 20, and any config's rerun
    assert empty["outcome"] == "failed" and ran >= 20 and (
        f"all {ran} case(s) had empty outputs (no element), so nothing was compared" in empty["message"]), empty

    # A subclass of Autotuner is autotuned: its three configs each run; a kernel the spec does not name is warned of.
    assert tests["subclassed_autotune_add"]["outcome"] == "passed", tests["subclassed_autotune_add"]
    coverage = {c["kernel"]: c for c in data["coverage"]}
    assert len(coverage["subclassed_autotune_add"]["configs"]) == 3, coverage["subclassed_autotune_add"]
    assert "unnamed_autotune_add[fp32]: autotuned kernel cached_add ran the first of its 3 configs in every case" \
        in run.output, run.output[-3000:]
    assert "subclassed_autotune_add[fp32]: autotuned kernel" not in run.output


def test_a_write_into_an_inputs_padding_fails_without_the_memory_checker(run_suite):
    """On a GPU (no interpreter memory check) the input's storage, padding included, is compared."""
    run = run_suite("suite/test_kernels.py", WRITERS, "--kernels=clobber_padding_add", "--no-memcheck", "-n", "0",
                    env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    failed = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert failed and "input(s) ['x']: " in failed[0]["message"], failed
    assert "byte(s) of their memory outside their elements changed" in failed[0]["message"]


def test_a_declared_output_empty_in_every_case_is_never_compared_and_fails(run_suite):
    run = run_suite("suite/test_kernels.py", WRITERS, "--kernels=one_empty_output_add", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    assert "one_empty_output_add[fp32]: output(s) ['rest'] had no element in any of the" in run.output, \
        run.output[-3000:]


def test_an_empty_case_alone_is_not_a_pass(run_suite):
    run = run_suite("suite/test_kernels.py", WRITERS, "--kernels=maybe_empty_add", "-n", "0",
                    "--repro=N=0;layout=contiguous;values=normal;seed=0")
    assert run.returncode == 1, run.output[-3000:]
    assert "maybe_empty_add[fp32]: all 1 case(s) had empty outputs (no element)" in run.output, run.output[-3000:]


def test_a_module_whose_dims_allow_only_empty_tensors_is_a_usage_error(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/bad_modules/empty_dims.py", "-k", "fp32")
    assert run.returncode == 4, run.output[-3000:]
    for words in ("bad_modules/empty_dims.py", "kernel spec 'empty_add'", "field 'dims'",
                  "dim 'N': interpret_max=0 allows only size 0"):
        assert words in run.output, run.output[-3000:]


@pytest.mark.parametrize("dim, words", [
    ({"min": 0, "interpret_max": 0, "gpu_max": 100}, "interpret_max=0 allows only size 0"),
    ({"min": 0, "interpret_max": 100, "gpu_max": 0}, "gpu_max=0 allows only size 0"),
    ({"min": 0, "interpret_max": 100, "gpu_max": 100, "nightly_max": 0}, "nightly_max=0 allows only size 0"),
    ({"choices": (0,)}, "choices=(0,) allow only size 0"),
])
def test_dims_that_allow_only_size_0_are_refused(dim, words):
    from kernels.spec import Dim

    with pytest.raises(SpecError) as err:
        dataclasses.replace(VECTOR_ADD, dims=(Dim("N", **dim),), benchmark_shapes=(), examples=())
    assert "tests/checks/test_input_writes.py: kernel spec 'vector_add': field 'dims': dim 'N': " + words in str(err.value)
    # min=0 among larger sizes is fine: empty tensors are then one case among others
    dataclasses.replace(VECTOR_ADD, dims=(Dim("N", min=0, interpret_max=10, gpu_max=10),), benchmark_shapes=(),
                        examples=())


def test_the_snapshot_compares_bits_and_restores_declared_inputs():
    x = torch.tensor([1.0, float("nan"), 3.0])
    buf = torch.full((2, 5), float("nan"))
    pad = buf[:, :3]
    spec = dataclasses.replace(VECTOR_ADD, mutable_inputs=("ws",))
    ws = torch.zeros(4)
    snap = InputSnapshot(spec, {"x": x, "pad": pad, "ws": ws, "scale": 2.0})
    assert snap.changes() == []  # NaN equals itself bit for bit
    x.view(torch.int32)[1] = 0x7FC00001  # another NaN: a change
    ws.fill_(5.0)
    buf[0, 4] = 1.0  # the padding after row 0
    found = snap.changes(allowed=("ws",))
    assert found[0].startswith("input 'x': 1 of 3 elements changed (first at (1,): was nan, now nan)"), found
    assert found[1].startswith("input(s) ['pad']: 2 byte(s) of their memory outside their elements changed "
                               "(first at byte 18"), found
    assert len(found) == 2
    assert any("input 'ws'" in f for f in snap.changes())
    snap.restore()
    assert torch.equal(ws, torch.zeros(4))
    with pytest.raises(BrokenSpec, match=r"mutable_inputs names \['ws'\], but make_inputs returned no such"):
        InputSnapshot(spec, {"x": x})


def test_a_subclass_of_autotuner_is_autotuned():
    from tests.fixtures import subclassed_autotuner as module

    assert is_autotuned(module.cached_add)
    assert autotune_configs(module.cached_add) == ({"BLOCK": 32, "num_warps": 1, "num_stages": 3},
                                                   {"BLOCK": 64, "num_warps": 2, "num_stages": 3},
                                                   {"BLOCK": 128, "num_warps": 4, "num_stages": 3})
    assert module.SPEC.configs["nvidia"] == autotune_configs(module.cached_add)
    # Chosen configs reach it through the subclass's run (which calls Triton's); an unnamed choice is noted.
    x = torch.arange(100, dtype=torch.float32)
    launches.take_untuned()
    for choice, block in (({"BLOCK": 64, "num_warps": 2}, 64), ({}, 32)):
        out = torch.full_like(x, float("nan"))
        with launches.chosen(choice):
            module.cached_add[lambda meta: (-(-100 // meta["BLOCK"]),)](x, x, out, 100)
        assert torch.equal(out, 2 * x) and module.cached_add.best_config.kwargs["BLOCK"] == block
    assert launches.take_untuned() == {"cached_add": 3}


def test_configs_that_differ_in_launch_options_alone_are_picked_by_them():
    import triton

    configs = [triton.Config({}, num_warps=w) for w in (1, 2, 4)]
    assert launches.pick(configs, {"num_warps": 2, "num_stages": 3}, "k") is configs[1]
    launches.take_untuned()
    assert launches.pick(configs, {}, "k") is configs[0] and launches.take_untuned() == {"k": 3}
    # options that match none of them (a choice meant for another kernel of the spec): the first, and noted
    assert launches.pick(configs, {"num_warps": 8}, "k") is configs[0] and launches.take_untuned() == {"k": 3}


def test_case_inputs_are_the_spec_s(tmp_path):
    """The fixture's clobbering kernel changes x for real (the end-to-end test above depends on it)."""
    from kernels.registry import get
    from tests.fixtures import input_writers  # noqa: F401 - registers the fixtures

    spec = get("clobber_add")
    case = Case("clobber_add", "fp32", {"N": 70})
    inp = spec.make_inputs(case, "cpu")
    out = spec.make_outputs(inp, case)
    before = inp["x"].clone()
    spec.run(inp, out, {})
    assert bool((inp["x"] == 0).all()) and not torch.equal(before, inp["x"])
    assert torch.equal(out["out"], inp["y"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a GPU check: needs CUDA (run on an NVIDIA runner)")
def test_on_a_gpu_input_writes_fail_and_padded_fp8_rows_catch_a_wrong_row_stride(run_suite):
    """On a GPU: inputs are copied and compared on the device, the padding write is seen without the interpreter's
    checker, and fp8 (which the interpreter's profile leaves out) draws A with padded rows, so the launcher passing
    A's width for its row stride fails through the suite itself, while the shipped one passes."""
    run = run_suite("suite/test_kernels.py", WRITERS, "--kernel-module=tests/fixtures/planted_fp8.py", "--backend=cuda",
                    "--kernels=clobber_add,clobber_padding_add,mutating_reference_add,workspace_add,"
                    "planted_fp8_a_row_stride,fp8_scaled_matmul", "-k", "not fp8e4b8", "-n", "0", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    tests = {t["nodeid"].split("[")[1].rstrip("]"): t for t in data["tests"]}
    failed = {c["kernel"]: c for c in data["cases"] if c["outcome"] == "failed"}
    assert "the kernel changed its input: input 'x'" in failed["clobber_add"]["message"]
    assert "outside their elements changed" in failed["clobber_padding_add"]["message"]
    assert failed["mutating_reference_add"]["failure"] == "spec"
    assert tests["workspace_add-fp32"]["outcome"] == "passed"
    assert failed["planted_fp8_a_row_stride"]["layout"] == "bf16_a_padded_rows", failed["planted_fp8_a_row_stride"]
    shipped = [t for name, t in tests.items() if name.startswith("fp8_scaled_matmul-fp8e4nv")]  # it may run in parts
    assert shipped and all(t["outcome"] == "passed" for t in shipped), shipped
