"""Issue 41, item 10: a real third-party library tested from docs/adding-a-kernel.md alone.

- (a) Launchers that allocate their own outputs (``c = torch.empty(...); kernel[grid](...); return c``) are tested
  as they are: ``make_outputs=None`` and ``run`` returns the outputs (a tensor, a tuple in the order of ``outputs``,
  or a dict). The checks that cannot apply to memory the launcher allocated (guard regions, never-written elements)
  are recorded and printed as unchecked, never passed; an out-of-bounds store is still stopped by the interpreter's
  memory checker; a return that does not match the declared outputs is a broken spec.
- (b) Integer case dtypes (int8, uint8): inputs drawn as integers in the dtype's range, in every layout; outputs
  compared exactly; the compile matrix compiles them (with a library file beside the spec module, which the compile
  process could not import).

The library is tests/fixtures/tinyquant.py, its specs tests/fixtures/tinyquant_specs.py.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import pytest
import torch

from kernels import inputs
from kernels.spec import Case, SpecError
from kernels.vector_add import SPEC as VECTOR_ADD
from suite.checks import returned
from tests.conftest import ROOT

TINYQUANT = "--kernel-module=tests/fixtures/tinyquant_specs.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}


@pytest.mark.slow
def test_a_library_whose_launchers_return_their_outputs(run_suite, tmp_path):
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", "suite/test_compile_matrix.py", TINYQUANT,
                    "--kernels=tq_int8_mm,tq_int8_mm_dict,tq_int8_mm_rowsum,tq_int8_mm_unmasked,tq_int8_mm_three",
                    "-n", "2", env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    outcomes: dict[str, set[str]] = {}
    for t in data["tests"]:
        kernel = t["nodeid"].split("[")[1].split("-")[0]
        outcomes.setdefault(kernel, set()).add(t["outcome"])
    for kernel in ("tq_int8_mm", "tq_int8_mm_dict", "tq_int8_mm_rowsum"):
        assert outcomes[kernel] == {"passed"}, (kernel, [t for t in data["tests"] if kernel in t["nodeid"]])
    cases = [c for c in data["cases"] if c["kernel"] == "tq_int8_mm_rowsum"]
    # 20 drawn cases, and one more for each value class or layout they missed (suite/checks/reach.py)
    forced = [s for rec in data["coverage"] if rec["kernel"] == "tq_int8_mm_rowsum"
              for s in rec.get("covered_by_search") or [] if s.startswith(("values=", "layout="))]
    assert len(cases) == 20 + len(forced) and all(c["outcome"] == "passed" for c in cases), (len(cases), forced)
    assert {c["layout"] for c in cases} == {"contiguous", "transposed", "padded_rows"}
    assert all(c["unchecked"] == list(returned.UNCHECKED) for c in cases), cases[0]
    # the verdict names what could not be checked, never counting it as passed
    verdict = " ".join(" ".join(run.output.rstrip("\n").splitlines()[-15:]).split())
    assert ("unchecked guard regions and never-written elements of tq_int8_mm, tq_int8_mm_dict, tq_int8_mm_rowsum, "
            "tq_int8_mm_three, tq_int8_mm_unmasked: outputs the launcher allocates") in verdict, verdict

    failed = {c["kernel"]: c for c in data["cases"] if c["outcome"] == "failed"}
    assert set(failed) == {"tq_int8_mm_unmasked", "tq_int8_mm_three"}, failed
    # No guard region around the launcher's c, but the interpreter's memory checker stops the store past its end.
    assert failed["tq_int8_mm_unmasked"]["failure"] == "memory", failed["tq_int8_mm_unmasked"]
    assert "out-of-bounds store in kernel int8_mm_kernel" in failed["tq_int8_mm_unmasked"]["message"]
    assert "writes argument 'c_ptr'" in failed["tq_int8_mm_unmasked"]["message"]
    assert failed["tq_int8_mm_three"]["failure"] == "spec"
    assert failed["tq_int8_mm_three"]["message"] == (
        "broken spec: run returned 1 value(s), the spec declares 2 output(s) ['c', 'rowsum'] (with make_outputs=None, "
        "run returns the outputs: a dict of ['c', 'rowsum'], or a tuple of 2 tensors in that order)")

    out = " ".join(run.output.split())
    assert ("UNCHECKED for outputs the launcher allocates and run returns (make_outputs=None) in tq_int8_mm, "
            "tq_int8_mm_dict, tq_int8_mm_rowsum, tq_int8_mm_three, tq_int8_mm_unmasked: guard regions") in out, out[-3000:]
    # The compile process imports the library beside the spec module, as the run's own process does.
    compiles = [c for c in data["compiles"] if c["kernel"] in ("tq_int8_mm", "tq_int8_mm_rowsum")]
    assert len(compiles) == 18 and {c["status"] for c in compiles} == {"ok"}, [c.get("error") for c in compiles]
    # The run file (int8 cases, unchecked checks) matches the schema and builds a report.
    report = subprocess.run([sys.executable, "-m", "reports", "build", str(run.run_files()[0]), "--out",
                             str(tmp_path / "report")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "tq_int8_mm_rowsum" in (tmp_path / "report" / "report.md").read_text()


def test_returned_outputs_are_matched_to_the_declared_ones():
    spec = dataclasses.replace(VECTOR_ADD, make_outputs=None, outputs=("c", "s"), output_tolerances={},
                               batch_outputs=(), batch_dim=None, batch_inputs=(), initial_outputs={})
    c, s = torch.zeros(2), torch.ones(3)
    assert returned.collect(spec, (c, s)) == ({"c": c, "s": s}, None)
    assert returned.collect(spec, {"s": s, "c": c}) == ({"s": s, "c": c}, None)
    assert returned.collect(spec, c)[1].startswith("run returned 1 value(s), the spec declares 2 output(s)")
    assert returned.collect(spec, {"c": c})[1].startswith("run returned outputs ['c'], the spec declares ['c', 's']")
    assert returned.collect(spec, None)[1].startswith("run returned NoneType (with make_outputs=None")
    assert returned.collect(spec, (c, 1.0))[1].startswith("run returned non-tensor output(s) ['s']")
    one = dataclasses.replace(VECTOR_ADD, make_outputs=None)
    assert returned.collect(one, c) == ({"out": c}, None)
    assert returned.unchecked(one) == list(returned.UNCHECKED) and returned.unchecked(VECTOR_ADD) == []


def test_returned_outputs_cannot_start_from_a_value():
    with pytest.raises(SpecError, match=r"kernel spec 'vector_add': field 'initial_outputs': \['out'\]: make_outputs "
                                        r"is None \(run returns the outputs its launcher allocates\)"):
        dataclasses.replace(VECTOR_ADD, make_outputs=None, initial_outputs={"out": 0.0})
    with pytest.raises(SpecError, match="field 'make_outputs': must be callable, or None where run returns"):
        dataclasses.replace(VECTOR_ADD, make_outputs="out")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "padded_rows"])
def test_integer_inputs_span_the_dtype_in_every_layout(dtype, layout):
    info = torch.iinfo(inputs.DTYPES[dtype])
    case = Case("k", dtype, {"M": 40, "N": 50}, layout=layout, seed=7)
    x = inputs.rows(case, "cpu", inputs.generator(case))
    assert x.dtype == inputs.DTYPES[dtype] and x.shape == (40, 50)
    assert x.is_contiguous() == (layout == "contiguous")
    # Drawn over the whole range, not a float normal cast to an integer (which gives -3..3).
    assert int(x.min()) < info.min + (info.max - info.min) // 8 and int(x.max()) > info.max - (info.max - info.min) // 8
    assert torch.equal(x, inputs.rows(case, "cpu", inputs.generator(case)))  # seeded by the case
    large = inputs.rows(dataclasses.replace(case, values="large"), "cpu", inputs.generator(case)).long()
    assert bool(((large - info.min < 8) | (info.max - large < 8)).all())
    plain = inputs.values((40, 50), case, torch.Generator().manual_seed(1))  # a plain torch.Generator too
    assert plain.dtype == torch.int64 and int(plain.min()) >= info.min and int(plain.max()) <= info.max
    scale = inputs.place(inputs.generator(case).normal((40, 50)), case, "cpu", layout, dtype="fp32")
    assert scale.dtype == torch.float32 and scale.stride() == x.stride()


def test_integer_value_classes_that_do_not_exist_say_so():
    case = Case("k", "uint8", {"N": 5}, values="negative")
    with pytest.raises(ValueError, match="value class 'negative' has no uint8 values"):
        inputs.values((5,), case, inputs.generator(case))
    with pytest.raises(ValueError, match="value class 'special' .* has no int8 values"):
        inputs.values((5,), dataclasses.replace(case, dtype="int8", values="special"), inputs.generator(case))
    with pytest.raises(SpecError, match=r"field 'value_classes': 'special' \(inf, -inf, NaN\) has no values in the "
                                        r"integer dtypes \['int8'\]"):
        dataclasses.replace(VECTOR_ADD, dtypes=("int8",), value_classes=("normal", "special"))


def test_a_launcher_that_reuses_its_output_buffer_is_compared_run_against_run():
    """Determinism reruns the launcher: where it returns the same buffer twice, the first run's outputs are kept as
    they were, so two different results are not one tensor compared with itself."""
    from kernels import registry
    from suite.checks import interpreter, launches
    from suite.checks.property_loop import check_determinism
    from suite.session.backend import resolve

    registry.load_module("tests/fixtures/tinyquant_specs.py", str(ROOT))
    interpreter.install()
    launches.install()
    spec = registry.get("tq_int8_mm_cached")
    case = Case.parse(spec.name, "int8", "M=5,N=6,K=7;seed=1")
    assert check_determinism(spec, case, resolve("interpret")) == "outputs ['c'] differ bitwise between two runs on " \
                                                                  "the same inputs"
    assert check_determinism(registry.get("tq_int8_mm"), case, resolve("interpret")) is None


def test_an_fp8_output_the_interpreter_rounds_wrongly_names_the_interpreter(run_suite):
    """(c) An fp32 -> fp8 conversion on Triton 3.6's interpreter drops the carry into the exponent (126.5 becomes 64):
    a right kernel fails there, and the failure says so and what to do (a GPU backend, or the known issue), where it
    used to read as the kernel's rounding."""
    from suite.checks import interpreter

    wrong = interpreter.fp8_conversion_error()
    if wrong is None:
        pytest.skip("this Triton's interpreter converts fp32 to fp8 as torch does")
    assert wrong == "fp32 126.5 becomes 64 in fp8e4nv, not 128"
    run = run_suite("suite/test_kernels.py", TINYQUANT, "--kernels=tq_to_fp8,tq_to_fp8_known", "-n", "0",
                    env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    [failed] = [c for c in data["cases"] if c["kernel"] == "tq_to_fp8" and c["outcome"] == "failed"]
    assert failed["message"].startswith("q: error "), failed["message"]
    assert ("\nnote: on the interpreter this kernel converted floats to fp8 (fp32->fp8e4nv x" in failed["message"]
            and "the interpreter converted fp32 to fp8 wrongly: its conversion drops the carry into the exponent (fp32 "
                "126.5 becomes 64 in fp8e4nv, not 128; docs/hazards.md, hazard 14)" in failed["message"]
            and "Run this case on a GPU (--backend=cuda or --backend=rocm), or declare a KnownIssue(backend='interpret'"
                in failed["message"]), failed["message"]
    assert "Tolerance(magnitude=" not in failed["message"]
    known = [t for t in data["tests"] if "tq_to_fp8_known" in t["nodeid"]]
    assert [t["outcome"] for t in known] == ["xfailed"] and known[0]["known_issue"] == "interpreter-fp8-cast", known


def test_constexprs_heuristics_and_untuned_autotuners_are_said(run_suite):
    """(d) A tl.constexpr the launch never passes is a broken spec naming the kernel, the constexpr and the spec; what
    a @triton.heuristics computed is recorded per case; an autotuned kernel that ran one config is a summary line."""
    run = run_suite("suite/test_kernels.py", TINYQUANT, "--kernel-module=tests/fixtures/subclassed_autotuner.py",
                    "--kernels=tq_double,tq_double_forgetful,tq_double_rows,unnamed_autotune_add", "-n", "0",
                    env=FAST_SHRINK)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    forgetful = [c for c in data["cases"] if c["kernel"] == "tq_double_forgetful"]
    assert forgetful and all(c["failure"] == "spec" for c in forgetful), forgetful
    assert forgetful[0]["message"].startswith(
        "broken spec: kernel spec 'tq_double_forgetful': its run launches double_kernel with no value for its "
        "tl.constexpr 'BLOCK' (double_kernel() missing 1 required positional argument: 'BLOCK'): pass BLOCK=... at "
        "that launch"), forgetful[0]["message"]
    ran = {c["shape"]["N"]: c.get("heuristics") for c in data["cases"] if c["kernel"] == "tq_double"}
    assert ran[128] == {"double_kernel": {"EVEN": True}} and ran[100] == {"double_kernel": {"EVEN": False}}, ran
    out = " ".join(run.output.split())
    assert ("UNTUNED unnamed_autotune_add[fp32]: autotuned kernel cached_add ran the first of its 3 configs in every "
            "case (the spec's configs name none of its parameters): give configs=autotune_configs(cached_add), or, "
            "where the launcher also runs other autotuned kernels, configs=autotune_config_space(cached_add, <the "
            "others>)") in out, out[-3000:]
    [coverage] = [c for c in data["coverage"] if c["kernel"] == "unnamed_autotune_add"]
    assert coverage["untuned"] == {"cached_add": 3}, coverage
    # (e) The loop and tail over the flattened B * S elements count as taken.
    [rows] = [c for c in data["coverage"] if c["kernel"] == "tq_double_rows"]
    assert rows["paths"]["bs_loop"] > 0 and rows["paths"]["bs_tail"] > 0 and rows["unexercised"] == [], rows


def test_a_constexpr_the_compile_signature_leaves_out_is_refused_when_the_spec_is_made():
    from kernels import registry
    from kernels.spec import signature

    registry.load_module("tests/fixtures/tinyquant_specs.py", str(ROOT))
    double = registry.get("tq_double")
    kernel = double.jit_fn

    def without_even(dtype, meta):
        return signature(kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"BLOCK": 64})

    with pytest.raises(SpecError, match=re.escape(
            "kernel spec 'tq_double': field 'compile_signature': double_kernel's tl.constexpr 'EVEN' gets no value from "
            "the signature (dtype 'fp32', the nvidia default config {}), so the compile matrix would fail on every "
            "target: give it in the signature's constexprs")):
        dataclasses.replace(double, name="tq_double", compile_signature=without_even)
    # A signature that raises anything else is the compile matrix's to report, not the spec's.
    dataclasses.replace(double, compile_signature=lambda dtype, meta: (_ for _ in ()).throw(RuntimeError("later")))


def test_a_path_over_a_product_of_dims():
    """(e) A loop/tail path over a size that is no dim (the flattened B * S rows) raised KeyError in every case, so it
    never counted as taken and the run said "widen the dims". It is refused when the spec is made, naming the size
    and the fix; with ``size=`` it counts."""
    from kernels import paths, registry
    from suite.checks import reach

    registry.load_module("tests/fixtures/tinyquant_specs.py", str(ROOT))
    rows = registry.get("tq_double_rows")
    with pytest.raises(SpecError, match=re.escape(
            "field 'paths': path 'bs_loop': taken(case, config) reads 'BS', which is no dim of the spec (dims: ['B', "
            "'S']) and no config key, so no case would ever take it. A size that is a product of dims (M = B * S) is "
            "no dim of a case: compute it from them, e.g. paths.block_loop('BS', block_of, size=lambda case: "
            "case.shape['B'] * case.shape['S'])")):
        dataclasses.replace(rows, paths=paths.block_loop("BS", lambda case, cfg: 64))
    loop, tail = rows.paths
    assert reach.taken(loop, Case(rows.name, "fp32", {"B": 3, "S": 30}), {})  # 90 elements: two blocks of 64
    assert reach.taken(tail, Case(rows.name, "fp32", {"B": 3, "S": 30}), {})
    assert not reach.taken(tail, Case(rows.name, "fp32", {"B": 2, "S": 32}), {})  # 64: one full block


def test_a_library_that_needs_a_gpu_at_import(run_suite):
    """(f) A library that asks CUDA about the device as it imports: the spec imports it inside run and skips with the
    library's own reason where it refuses; the compile matrix still compiles its kernel for every target. The
    library beside the spec module imports inside run (its directory used to leave sys.path after the import)."""
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", "suite/test_compile_matrix.py",
                    "--kernel-module=tests/fixtures/needs_gpu_specs.py", "--kernels=gpu_lib_double", "-n", "0")
    assert run.returncode == 0, run.output[-3000:]
    tests = {t["nodeid"].split("::")[1].split("[")[0] + "-" + t["nodeid"].split("[")[1]: t
             for t in run.run_data()["tests"]}
    for name in ("test_matches_reference-gpu_lib_double-fp32]", "test_properties-gpu_lib_double-fp32]"):
        if torch.cuda.is_available():  # the library imports on a GPU machine, and its cases run
            assert tests[name]["outcome"] == "passed", tests[name]
            continue
        assert tests[name]["outcome"] == "skipped", tests[name]
        assert "needs_gpu_lib refuses to import here: needs_gpu_lib: torch.cuda.get_device_capability() needs a CUDA " \
               "device, and there is none" in tests[name]["message"], tests[name]
    compiled = [c for c in run.run_data()["compiles"] if c["kernel"] == "gpu_lib_double"]
    assert len(compiled) == 6 and {c["status"] for c in compiled} == {"ok"}, compiled


def test_a_tolerance_hint_gives_way_to_the_interpreters_fp8_limit():
    """Where a failing case converted floats to fp8 on an interpreter that rounds them wrongly, the magnitude hint
    (give Tolerance(magnitude=...)) is left out: the note names the interpreter's limit instead. Here the values are
    tiny (fp8's subnormals, where the interpreter's errors are small) but for one outlier near fp8e4nv's largest
    value, and the tolerance allows a reduction over a block of 128, as a blockwise quantizer's might: every error is
    within the bound at the output's largest |reference|, which is when the hint used to be given."""
    from kernels import registry
    from kernels.spec import Tolerance
    from suite.checks import interpreter, launches
    from suite.checks.harness import run_case
    from suite.checks.tolerance import _MAGNITUDE_HINT
    from suite.session.backend import resolve

    if interpreter.fp8_conversion_error() is None:
        pytest.skip("this Triton's interpreter converts fp32 to fp8 as torch does")
    registry.load_module("tests/fixtures/tinyquant_specs.py", str(ROOT))
    interpreter.install()
    launches.install()

    def tiny(case, device):
        x = inputs.generator(case).uniform((case.shape["N"],)) * 0.031 - 0.0155  # just below fp8e4nv's 2**-6
        x[:1] = 440.0
        return {"x": inputs.place(x, case, device)}

    spec = dataclasses.replace(registry.get("tq_to_fp8"), name="tq_to_fp8_tiny", make_inputs=tiny, examples=(),
                               tolerance=Tolerance(reduction=lambda case: 4096))
    result = run_case(spec, Case.parse(spec.name, "fp32", "N=300;seed=3"), resolve("interpret"), {})
    message = result.message()
    assert not result.passed and message.startswith("q: error "), message
    assert "note: on the interpreter this kernel converted floats to fp8 (fp32->fp8e4nv x" in message, message
    assert _MAGNITUDE_HINT not in message and "Tolerance(magnitude=" not in message, message
