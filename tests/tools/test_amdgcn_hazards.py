"""The hazards read from AMD targets' compiled code (suite/checks/amdgcn_hazards.py, lints.lint_amd_hazards).

Planted in tests/fixtures/amd_hazards.py and compiled for real (Triton's HIP backend, no GPU): each bad kernel is
flagged with its instruction, type or scan and its source line, each clean twin is not. The AMDGCN excerpts below are
copied from what Triton 3.6 emitted for gfx942 (fp32), trimmed to the instructions the rule reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from suite.checks import amdgcn_hazards as hz
from suite.checks import lints
from suite.tools import compile_matrix as cm
from tests.fixtures import amd_hazards as fx

ROOT = Path(__file__).resolve().parent.parent.parent
GFX90A, GFX942, GFX950 = ("hip", "gfx90a", 64), ("hip", "gfx942", 64), ("hip", "gfx950", 64)
SM90 = ("cuda", "sm_90", 32)
_FIXTURE_LINES = Path(fx.__file__).read_text().splitlines()


def _line_of(text: str) -> int:
    """The fixture's line holding ``text`` (1-based), where the finding must point."""
    return next(i for i, line in enumerate(_FIXTURE_LINES, 1) if text in line)

_LOG2 = """\t.file\t1 "/k" "k.py"
\t.loc\t1 9 16
\tv_cmp_gt_f32_e64 s[2:3], s2, v7
\tv_cndmask_b32_e64 v9, 0, 32, s[2:3]
\tv_ldexp_f32 v7, v7, v9
\tv_log_f32_e32 v7, v7
\tv_sub_f32_e32 v7, v7, v8
"""
_EXP = """\tv_mul_f32_e32 v8, 0x3fb8aa3b, v7
\tv_cndmask_b32_e64 v9, 0, v9, s[2:3]
\tv_fmac_f32_e32 v9, 0x3fb8aa3b, v7
\tv_exp_f32_e32 v7, v9
\tv_ldexp_f32 v7, v7, v8
"""
_DIV = """\tv_div_scale_f32 v4, s[4:5], v13, v13, v9
\tv_rcp_f32_e32 v5, v4
\tv_div_scale_f32 v14, vcc, v9, v13, v9
"""
_INT_DIV = """\tv_cvt_f32_u32_e32 v1, s24
\tv_cvt_f32_u32_e32 v4, s25
\tv_fmamk_f32 v1, v4, 0x4f800000, v1
\tv_rcp_f32_e32 v1, v1
\tv_mul_f32_e32 v1, 0x5f7ffffc, v1
"""
_OCML_RSQ = """\tv_mul_f32_e32 v3, 0x4b800000, v2
\tv_rsq_f32_e32 v3, v3
\tv_mul_f32_e32 v3, 0x45800000, v3
"""
_DEBUG_LABEL = "\tv_ldexp_f32 v7, v7, v9\n.Ltmp3:\n\tv_log_f32_e32 v7, v7\n"  # .Ltmp: debug info, no new block
_BARE = {  # each bare in Triton 3.6's gfx942 code
    "exp2": "\t.loc\t1 9 16\n\tv_exp_f32_e32 v4, v7\n\tglobal_store_dword v[0:1], v4, off\n",
    "sqrt then 1 / it": "\tv_sqrt_f32_e32 v6, v6\n\tv_div_scale_f32 v8, s[8:9], v6, v6, 1.0\n",
    "sqrt_rn": "\tv_rsq_f32_e32 v8, v7\n\tv_mul_f32_e32 v10, v7, v8\n\tv_mul_f32_e32 v8, 0.5, v8\n",
    "scaled in another block": "\tv_ldexp_f32 v7, v7, v9\n.LBB0_3:\n\tv_log_f32_e32 v7, v7\n",
    "scale of another register": "\tv_ldexp_f32 v8, v8, v9\n\tv_log_f32_e32 v7, v7\n",
    "scale overwritten": "\tv_ldexp_f32 v7, v7, v9\n\tv_add_f32_e32 v7, v7, v2\n\tv_log_f32_e32 v7, v7\n",
    "times 2^-1, not a scale": "\tv_mul_f32_e32 v7, 0.5, v7\n\tv_sqrt_f32_e32 v7, v7\n",
    "div_scale before a log": "\tv_div_scale_f32 v7, s[4:5], v3, v3, v2\n\tv_log_f32_e32 v7, v7\n",
    "float, not integer": "\tv_cvt_f32_u32_e32 v1, s24\n\tv_mul_f32_e32 v1, v1, v9\n\tv_rcp_f32_e32 v1, v1\n",
}


@pytest.mark.parametrize("asm", [_LOG2, _EXP, _DIV, _INT_DIV, _OCML_RSQ, _DEBUG_LABEL],
                         ids=["log2", "exp", "div", "int_div", "ocml", "debug_label"])
def test_scaled_sequences_are_not_bare(asm: str) -> None:
    assert hz.bare_transcendentals(asm) == []


@pytest.mark.parametrize("name", sorted(_BARE))
def test_bare_instructions_are_found(name: str) -> None:
    found = hz.bare_transcendentals(_BARE[name])
    assert len(found) == 1 and found[0]["count"] == 1, found


def test_a_bare_instruction_is_placed_by_its_debug_line_and_a_line_0_one_is_unplaced() -> None:
    asm = '\t.file\t1 "/nowhere" "k.py"\n\t.loc\t1 9 16\n\tv_exp_f32_e32 v4, v7\n\t.loc\t1 0 3\n\tv_exp_f32_e32 v5, v6\n'
    found = {f["line"]: f for f in hz.bare_transcendentals(asm)}
    assert sorted(found, key=str) == [9, None] and found[9]["file"] == "/nowhere/k.py"


def test_a_place_in_a_removed_checkout_is_read_from_this_one() -> None:
    """Triton's cache is keyed by the source, not its path: a kernel compiled first from a checkout since removed names
    that checkout's file. The place is read from this checkout's file of the same tail; a file that exists is kept."""
    line = _line_of("tl.math.sqrt_rn(y)")
    gone = '\t.file\t1 "/nowhere/clone/tests/fixtures" "amd_hazards.py"\n'
    found = hz.bare_transcendentals(f"{gone}\t.loc\t1 {line} 5\n\tv_sqrt_f32_e32 v4, v7\n")
    assert found[0]["file"] == str(Path(fx.__file__).resolve()), found
    assert "tl.math.sqrt_rn(y)" in found[0]["source"], found
    assert hz.here(__file__) == __file__ and hz.here("/nowhere/no-such-file.py") == "/nowhere/no-such-file.py"


def _findings(spec, target) -> list[dict]:
    records = cm.compile_kernel(spec, target, "defaults")
    assert all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    return lints.lint_amd_hazards(records)


def test_bare_math_is_flagged_per_instruction_and_dtype_with_its_source_line() -> None:
    findings = _findings(fx.BARE_MATH, GFX942)
    assert {(f["instruction"], f["dtype"]) for f in findings} == {
        (i, d) for i in ("v_sqrt_f32", "v_rsq_f32", "v_exp_f32") for d in ("fp32", "bf16")}
    line = _line_of("tl.math.sqrt_rn(y)")
    assert all(f["rule"] == "amd_bare_transcendental" and f["severity"] == "warning" and f["line"] == line
               and "tl.math.sqrt_rn(y)" in f["message"] and f["target"] == "gfx942" for f in findings)


def test_scaled_math_and_integer_division_are_clean() -> None:
    assert _findings(fx.SCALED_MATH, GFX942) == []


def test_fp8_of_a_flavour_the_target_lacks_is_flagged() -> None:
    ocp = {t[1]: _findings(fx.FP8_OCP, t) for t in (GFX90A, GFX942, GFX950)}
    assert [f["fp8_type"] for f in ocp["gfx942"]] == ["f8E4M3FN"] and "only FNUZ" in ocp["gfx942"][0]["message"]
    assert [f["fp8_type"] for f in ocp["gfx90a"]] == ["f8E4M3FN"] and "no fp8" in ocp["gfx90a"][0]["message"]
    assert ocp["gfx950"] == []
    fnuz = {t[1]: _findings(fx.FP8_FNUZ, t) for t in (GFX90A, GFX942)}
    assert [f["fp8_type"] for f in fnuz["gfx90a"]] == ["f8E4M3FNUZ"] and fnuz["gfx942"] == []


def test_the_software_conversion_is_what_the_assembly_shows() -> None:
    """The rule's premise, seen: gfx942 converts FNUZ with v_cvt_*fp8* and OCP with none."""
    fnuz = cm.compile_one(fx.FP8_FNUZ, "fp16", {}, GFX942)["amd_hazards"]
    ocp = cm.compile_one(fx.FP8_OCP, "fp16", {}, GFX942)["amd_hazards"]
    assert fnuz["fp8_software"] == []
    assert ocp["fp8_software"][0]["hardware_conversions"] == 0 and ocp["fp8_software"][0]["byte_operations"] > 0


def test_a_scan_longer_than_a_wavefront_is_flagged_and_one_of_64_is_not() -> None:
    findings = _findings(fx.LONG_SCAN, GFX942)
    assert {(f["dtype"], f["scan_length"], f["line"]) for f in findings} == {("fp32", 128, _line_of("tl.cumsum(x")),
                                                                               ("int32", 128, _line_of("tl.cumsum(x"))}
    assert all("ROCm/triton #947" in f["message"] for f in findings)
    assert _findings(fx.SHORT_SCAN, GFX942) == []


def test_nvidia_records_are_not_read() -> None:
    records = cm.compile_kernel(fx.LONG_SCAN, SM90, "defaults")
    assert all("amd_hazards" not in r for r in records) and lints.lint_amd_hazards(records) == []


def test_findings_fit_the_run_file_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "reports" / "schema" / "run.schema.json").read_text())
    findings = _findings(fx.BARE_MATH, GFX942) + _findings(fx.FP8_OCP, GFX942) + _findings(fx.LONG_SCAN, GFX942)
    assert {f["rule"] for f in findings} == {"amd_bare_transcendental", "amd_fp8_software_conversion",
                                             "amd_scan_past_wavefront"}
    for finding in findings:
        jsonschema.validate(json.loads(json.dumps(finding)), schema["properties"]["findings"]["items"])


def test_the_compile_matrix_test_records_them_as_warnings_in_the_run_file(tmp_path: Path) -> None:
    """suite/test_compile_matrix.py's test_compiles_on_target passes, and its findings reach the run file."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "suite/test_compile_matrix.py", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-q", "-k", "test_compiles_on_target and gfx942", "--kernel-module=tests/fixtures/amd_hazards_registered.py",
         "--kernels=zz_long_scan,zz_short_scan", f"--results-dir={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = json.loads(next(tmp_path.rglob("*.json")).read_text())
    rules = sorted((f["kernel"], f["rule"], f["dtype"]) for f in run["findings"] if f.get("kind") == "lint"
                   and f["rule"].startswith("amd_"))
    assert rules == [("zz_long_scan", "amd_scan_past_wavefront", "fp32"),
                     ("zz_long_scan", "amd_scan_past_wavefront", "int32")]


# Adversarial readings (docs/checks.md): each the number of bare instructions the rule must count.
_TRIES_ASM = {
 "e64 abs modifier": ("\tv_sqrt_f32_e64 v1, |v2|\n", 1),
 "omod": ("\tv_exp_f32_e64 v1, v2 mul:2\n", 1),
 "sgpr source": ("\tv_sqrt_f32_e32 v1, s4\n", 1),
 "dpp": ("\tv_exp_f32_dpp v1, v2 row_shr:1\n", 1),
 "sdwa": ("\tv_log_f32_sdwa v1, v2 dst_sel:DWORD\n", 1),
 "ldexp of other reg after": ("\tv_exp_f32_e32 v1, v2\n\tv_ldexp_f32 v3, v4, v5\n", 1),
 "result redefined before unscale": ("\tv_exp_f32_e32 v1, v2\n\tv_mov_b32 v1, v9\n\tv_ldexp_f32 v1, v1, v5\n", 1),
 "mul by 16 only": ("\tv_mul_f32_e32 v2, 0x41800000, v2\n\tv_sqrt_f32_e32 v1, v2\n", 1),
 "mul by 2^32": ("\tv_mul_f32_e32 v2, 0x4f800000, v2\n\tv_sqrt_f32_e32 v1, v2\n", 0),
 "mul by non-pow2 big": ("\tv_mul_f32_e32 v2, 0x4f800001, v2\n\tv_sqrt_f32_e32 v1, v2\n", 1),
 "unscale after a branch": ("\tv_exp_f32_e32 v1, v2\n\ts_cbranch_execz .LBB0_2\n\tv_ldexp_f32 v1, v1, v5\n", 1),
 "pair register source": ("\tv_ldexp_f32 v2, v2, v9\n\tv_rsq_f32_e32 v1, v2\n", 0),
 "scale into s pair overlap": ("\tv_ldexp_f32 v3, v3, v9\n\tv_rsq_f32_e32 v1, v2\n", 1),
 "comment with instruction": ("\ts_nop 0 ; v_ldexp_f32 v2, v2, v9\n\tv_sqrt_f32_e32 v1, v2\n", 1),
 "int via i32 into rcp": ("\tv_cvt_f32_i32_e32 v2, s3\n\tv_rcp_f32_e32 v1, v2\n", 0),
 "int then tiny literal mul": ("\tv_cvt_f32_i32_e32 v2, s3\n\tv_mul_f32_e32 v2, v2, v7\n\tv_rcp_f32_e32 v1, v2\n", 1),
 "rcp_iflag not counted": ("\tv_rcp_iflag_f32_e32 v1, v2\n", 0),
 "f16 out of scope": ("\tv_sqrt_f16_e32 v1, v2\n", 0),
}


@pytest.mark.parametrize("name", sorted(_TRIES_ASM))
def test_adversarial_assembly(name: str) -> None:
    asm, bare = _TRIES_ASM[name]
    assert sum(f["count"] for f in hz.bare_transcendentals(asm)) == bare


_DOT = "tensor<16x16xf8E4M3FNUZ>"
_TRIES_FP8 = {  # name: (TTIR, the target's flavour, how many fp8 types the rule must flag)
    "bitcast only": ("%1 = tt.bitcast %0 : tensor<256xi8> -> tensor<256xf8E4M3FN>", "fnuz", 0),
    "e5m2fnuz on gfx942": ("%1 = tt.fp_to_fp %0 : tensor<256xf8E5M2FNUZ> -> tensor<256xf32>", "fnuz", 0),
    "e5m2 on gfx942": ("%1 = tt.fp_to_fp %0 : tensor<256xf8E5M2> -> tensor<256xf32>", "fnuz", 1),
    "scalar": ("%1 = tt.fp_to_fp %0 : f32 -> f8E4M3FN", "fnuz", 1),
    "dot on gfx950 fnuz": (f"%2 = tt.dot %0, %1, %c : {_DOT} * {_DOT} -> tensor<16x16xf32>", "ocp", 1),
    "gfx90a any": ("%1 = tt.fp_to_fp %0 : tensor<4xf8E4M3FNUZ> -> tensor<4xf32>", None, 1),
    "extf": ("%1 = arith.extf %0 : tensor<4xf8E5M2> to tensor<4xf32>", "fnuz", 1),
    "both flavours": ("%1 = tt.fp_to_fp %0 : tensor<4xf8E4M3FNUZ> -> tensor<4xf8E4M3FN>", "fnuz", 1),
}


@pytest.mark.parametrize("name", sorted(_TRIES_FP8))
def test_adversarial_fp8(name: str) -> None:
    ttir, flavour, flagged = _TRIES_FP8[name]
    assert len(hz.fp8_software(ttir, "", flavour)) == flagged


def _scan(shape: str, axis: int, rev: str = "false", operands: str = "") -> str:
    """A tt.scan as Triton 3.6 prints it, located through a callsite at /k.py:7."""
    return (f'%8 = "tt.scan"(%x) <{{axis = {axis} : i32, reverse = {rev}}}> ({{\n'
            "^bb0(%a: f32, %b: f32):\n %9 = arith.addf %a, %b : f32\n tt.scan.return %9 : f32\n"
            f"}}) : (tensor<{shape}xf32>{operands}) -> tensor<{shape}xf32> loc(#loc3)\n"
            '#loc1 = loc("/k.py":7:3)\n#loc2 = loc("/std.py":300:1)\n#loc3 = loc(callsite(#loc2 at #loc1))\n')


_TRIES_SCAN = {"axis 0 of 128x2": (_scan("128x2", 0), 1), "axis 1 of 128x2": (_scan("128x2", 1), 0),
               "reverse": (_scan("2x256", 1, "true"), 1), "3-D": (_scan("2x4x512", 2), 1),
               "64": (_scan("1x64", 1), 0), "two operands": (_scan("256", 0, operands=", tensor<256xi32>"), 1)}


@pytest.mark.parametrize("name", sorted(_TRIES_SCAN))
def test_adversarial_scans(name: str) -> None:
    ttir, flagged = _TRIES_SCAN[name]
    found = hz.long_scans(ttir, 64)
    assert len(found) == flagged and all(f["line"] == 7 for f in found)
