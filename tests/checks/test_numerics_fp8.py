"""``--numerics``' fp8 part: float -> OCP fp8 conversions as each target's compiled code converts
(suite/checks/numerics_fp8.py), held to an H200's stored bytes, to the AMD code's own LLVM IR executed on the CPU, and
proven on tests/fixtures/numerics_fp8.py's fake quantizers: right under sm_90, NaN under gfx942 for fp16 values
between 464 and 480, one e5m2 step off at ties under sm_80."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import triton

from suite.checks import numerics_fp8
from tests.conftest import ROOT, SuiteRun, run_python, start_suite_run

EVIDENCE = ROOT / "evidence" / "numerics"
sys.path.insert(0, str(EVIDENCE))
import amd_fp8_ir  # noqa: E402

RECORD = json.loads((EVIDENCE / "h200" / "fp8_conversions.json").read_text())
SOURCE_BITS = {"fp32": (np.uint32, np.float32), "fp16": (np.uint16, np.float16), "bf16": (np.uint16, np.uint16)}


def _as_source(bits: list[int], src: str) -> np.ndarray:
    raw, held = SOURCE_BITS[src]
    return np.array(bits, dtype=np.uint64).astype(raw).view(held)


def test_the_h200_stored_what_the_model_computes_on_every_input():
    """The record: every fp32, fp16 and bf16 input converted on the GPU (sm_90's cvt; sm_80's instruction text) with
    no byte differing from the model; and its sample of stored bytes is what the model computes here, on the CPU."""
    assert {k: v for k, v in RECORD["sm_90_instructions"].items()} == {
        f"sm_90 {s}->{d}": [f"cvt.rn.satfinite.{'e4m3x2' if d == 'fp8e4nv' else 'e5m2x2'}."
                            f"{'f16x2' if s == 'fp16' else 'f32'}"] for s in ("fp32", "fp16", "bf16")
        for d in ("fp8e4nv", "fp8e5")}
    results = {(r["arch"], r["src"], r["dst"]): r for r in RECORD["results"]}
    assert set(results) == {*(("sm_90", s, d) for s in ("fp32", "fp16", "bf16") for d in ("fp8e4nv", "fp8e5")),
                            *(("sm_80", s, "fp8e5") for s in ("fp32", "fp16", "bf16"))}
    for (arch, src, dst), r in results.items():
        assert r["differ"] == 0 and r["inputs"] == 1 << (32 if src == "fp32" else 16), (arch, src, dst, r["differ"])
        bits = [int(b, 16) for b, _ in r["sample"]]
        stored = np.array([int(g, 16) for _, g in r["sample"]], dtype=np.uint8)
        got = numerics_fp8.convert(_as_source(bits, src), src, dst, arch, "nvidia")
        assert np.array_equal(got, stored), (arch, src, dst, np.nonzero(got != stored)[0][:5])


@pytest.mark.parametrize("arch", amd_fp8_ir.ARCHS)
@pytest.mark.parametrize("src", amd_fp8_ir.SOURCES)
def test_amds_compiled_conversion_executed_is_what_the_model_computes(arch, src):
    """Every fp16 and bf16 input, and for fp32 every sign and exponent with the mantissas at and around each rounding
    boundary of both formats (and random ones): the IR executed, operation by operation, against the model."""
    if src == "fp32":
        top = np.arange(1 << 9, dtype=np.int64) << 23  # every sign and exponent
        low = np.array([0, 1, 2, (1 << 23) - 1, (1 << 23) - 2, *range(0, 1 << 23, 1 << 15)], dtype=np.int64)
        ties = np.array([(k << 19) + d for k in range(16) for d in (-1, 0, 1)]
                        + [(k << 18) + d for k in range(32) for d in (-1, 0, 1)], dtype=np.int64)
        mant = np.unique(np.concatenate([low, ties, np.random.default_rng(0).integers(0, 1 << 23, 2000)]))
        mant = mant[(mant >= 0) & (mant < 1 << 23)]
        bits = (top[:, None] | mant[None, :]).ravel()
    else:
        bits = np.arange(1 << 16, dtype=np.int64)
    for dst in amd_fp8_ir.DESTS:
        differ, first = amd_fp8_ir.compare(arch, src, dst, bits)
        assert differ == 0, (arch, src, dst, first)


@pytest.mark.parametrize("arch", amd_fp8_ir.ARCHS)
def test_amds_compiled_decoding_is_exact(arch):
    """fp8 -> fp32 on AMD (through fp16, in the IR) gives every one of the 256 codes its exact value, as the model."""
    for src in amd_fp8_ir.DECODED:
        assert amd_fp8_ir.compare_decode(arch, src) == (0, []), (arch, src)


def test_amds_fp16_to_e4m3_nan_window_is_the_compiled_codes():
    """The one place AMD's conversion leaves nearest-even saturation: fp16 464.25 .. 479.75 become NaN (0x7F and the
    sign), in the IR itself; 464 (a tie, to even) and 480 (past the threshold) saturate to 448."""
    bits = np.array([0x5F40, 0x5F41, 0x5F7F, 0x5F80, 0xDF41], dtype=np.int64)
    got = amd_fp8_ir.run(amd_fp8_ir.ir_file("gfx942", "fp16", "fp8e4nv").read_text(), bits)
    assert [hex(int(b)) for b in got] == ["0x7e", "0x7f", "0x7f", "0x7e", "0xff"]


@pytest.mark.slow
@pytest.mark.skipif(triton.__version__ != "3.6.0", reason="the committed code is Triton 3.6.0's")
def test_the_committed_code_is_what_the_installed_triton_compiles():
    """The AMD IR files and sm_80's instruction text the evidence runs are what Triton compiles now, on this CPU (in a
    process of its own: this one runs the interpreter)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, str(EVIDENCE / "amd_fp8_ir.py"), "same"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "the committed code is what Triton compiles" in out.stdout


def test_what_the_model_has_no_conversion_for_is_named():
    assert "fp8e4nv on sm_80" in numerics_fp8.convert(np.zeros(2, np.float32), "fp32", "fp8e4nv", "sm_80", "nvidia")
    assert "fp64 -> fp8e5" in numerics_fp8.convert(np.zeros(2, np.float64), "fp64", "fp8e5", "sm_90", "nvidia")
    assert "not modelled" in numerics_fp8.convert(np.zeros(2, np.float32), "fp32", "fp8e5", "gfx950", "amd")


def test_sm80s_bf16_routine_overflows_into_the_sign():
    """sm_80's bf16 -> fp8e5 keeps one exponent bit too many: 57344 is kept, 65536 becomes inf, 131072 -0.0."""
    bits = torch.tensor([0x4760, 0x4780, 0x4800, 0xC760], dtype=torch.int32)
    assert [hex(v) for v in numerics_fp8.sm80_e5_from_bf16_bits(bits).tolist()] == ["0x7b", "0x7c", "0x80", "0xfb"]


FIXTURE = ("suite/test_kernels.py", "--kernel-module=tests/fixtures/numerics_fp8.py",
           "--kernels=e4m3_fake_quant,e5m2_fake_quant,e4m3_decode,e4m3_tensor_copy", "-n", "0")


def _run(tmp_path: Path, profile: str) -> SuiteRun:
    return start_suite_run(*FIXTURE, f"--numerics={profile}", results_dir=tmp_path / "runs",
                           env={"SUITE_SHRINK_SECONDS": "3"})


def _outcomes(run: SuiteRun) -> dict[str, str]:
    return {t["nodeid"].split("[")[1].rsplit("-", 1)[0]: t["outcome"] for t in run.run_data()["tests"]}


def test_fake_quantizers_pass_modelled_as_sm_90(tmp_path):
    run = _run(tmp_path, "h100_sxm")
    assert run.returncode == 0, run.output[-3000:]
    assert _outcomes(run) == {"e4m3_fake_quant": "passed", "e5m2_fake_quant": "passed", "e4m3_decode": "passed",
                              "e4m3_tensor_copy": "passed"}
    assert "fp8 conversion" in run.run_data()["environment"]["numerics"]["parts"]


@pytest.mark.parametrize("profile, arch, failing, cause", [
    ("mi300x", "gfx942", "e4m3_fake_quant", "fp16 values between 464 and 480 converted to fp8e4nv as NaN by gfx942's "
                                            "conversion"),
    ("a100_80gb", "sm_80", "e5m2_fake_quant", "fp32 -> fp8e5 as sm_80 converts (cvt.rz.f16.f32, then half away from "
                                              "zero on fp16's bits"),
])
def test_a_fake_quantizer_fails_where_the_target_converts_otherwise_naming_how(tmp_path, profile, arch, failing, cause):
    run = _run(tmp_path, profile)
    assert run.returncode == 1, run.output[-3000:]
    outcomes = _outcomes(run)
    assert outcomes[failing] == "failed", outcomes
    if profile == "mi300x":
        assert outcomes["e5m2_fake_quant"] == "passed" and outcomes["e4m3_decode"] == "passed", outcomes
    else:  # sm_80: fp8e4nv refused, a decode of it and a tensor of it too (Triton 3.6.0 refuses the type there)
        for kernel in ("e4m3_decode", "e4m3_tensor_copy"):
            cases = [c for c in run.run_data()["cases"] if c["kernel"] == kernel and c["outcome"] == "failed"]
            assert cases and "refuses fp8e4nv on sm_80" in cases[0]["message"], (kernel, outcomes)
    failed = [c for c in run.run_data()["cases"] if c["kernel"] == failing and c["outcome"] == "failed"]
    assert failed and cause in failed[0]["message"], failed[0]["message"] if failed else run.output[-3000:]
    assert f"modelled as {profile} ({arch})" in failed[0]["message"]
    # Its reproduction line reruns it modelled as the same GPU (without --numerics it would be the plain interpreter's
    # arithmetic), and fails again for the same cause.
    line = shlex.split(failed[0]["repro"])
    assert f"--numerics={profile}" in line, line
    args = line[line.index(next(a for a in line if a.startswith("suite/test_kernels.py"))):]
    again = run_python("pytest", "-p", "no:cacheprovider", "--no-results", *args,
                       env={k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "SUITE_LAUNCHER")})
    assert again.returncode == 1 and cause in again.stdout, again.stdout[-3000:] + again.stderr[-2000:]


def test_a_conversion_the_model_has_none_for_fails_naming_it(tmp_path):
    """fp8e4b15 and fp8 -> fp8 under sm_90's model: refused by name, never the interpreter's own fp8 rounding (which
    drops the carry into the exponent) passed off as the GPU's."""
    run = start_suite_run("suite/test_kernels.py", "--kernel-module=tests/fixtures/numerics_fp8.py",
                          "--kernels=e4b15_round_trip,e4m3_to_e5m2", "-n", "0", "--numerics=h100_sxm",
                          results_dir=tmp_path / "runs", env={"SUITE_SHRINK_SECONDS": "3"})
    assert run.returncode == 1, run.output[-3000:]
    assert _outcomes(run) == {"e4b15_round_trip": "failed", "e4m3_to_e5m2": "failed"}
    messages = {c["kernel"]: c["message"] for c in run.run_data()["cases"] if c["outcome"] == "failed"}
    assert "fp32 -> fp8e4b15 on sm_90 is not modelled" in messages["e4b15_round_trip"], messages
    assert "fp8e4nv -> fp8e5 on sm_90 is not modelled" in messages["e4m3_to_e5m2"], messages


def test_a_conversion_keeps_its_operands_shape():
    """The interpreter's values of any shape, a 0-d scalar included, come back in that shape (126.5 rounds up into the
    next power of two, 128, which the interpreter's own conversion gets wrong)."""
    assert numerics_fp8.convert(np.float32(126.5), "fp32", "fp8e4nv", "sm_90", "nvidia").shape == ()
    assert numerics_fp8.decode(numerics_fp8.convert(np.float32(126.5), "fp32", "fp8e4nv", "sm_90", "nvidia"),
                               "fp8e4nv") == np.float32(128.0)
    assert numerics_fp8.convert(np.ones((2, 3), np.float16), "fp16", "fp8e5", "gfx942", "amd").shape == (2, 3)
