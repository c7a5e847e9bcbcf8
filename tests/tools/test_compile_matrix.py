"""Unit tests of the compile matrix (suite/tools/compile_matrix.py) and the portability lints (suite/checks/lints.py).

Parsing, classification, occupancy and lints run on synthetic inputs; the failure classes and hazards 4, 5, 6 and
the fp8 gating are shown on real compiles of kernels.matmul with deliberately bad configs (no GPU needed).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import triton
import triton.language as tl

import hardware_profiles
from kernels import matmul
from kernels.spec import Dim, KernelSpec
from suite.checks import lints
from suite.tools import compile_matrix as cm

ROOT = Path(__file__).resolve().parent.parent.parent
SM90, GFX90A, GFX942 = ("cuda", "sm_90", 32), ("hip", "gfx90a", 64), ("hip", "gfx942", 64)
NV_DEFAULT = dict(matmul.DEFAULTS["nvidia"])


@triton.jit
def dot_tf32_probe(a_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, a, input_precision="tf32"))


def _never(*args, **kwargs):
    raise AssertionError("a compile-only probe is never run")


# Not registered: the suite's kernel tests must not see them. The compile child finds them as globals of this file.
TF32_PROBE = KernelSpec(
    name="dot_tf32_probe", description="fp32 tl.dot with input_precision='tf32' (hazard 2)",
    dims=(Dim("BLOCK", interpret_max=32, gpu_max=32),), dtypes=("fp32",), outputs=("c",),
    make_inputs=_never, make_outputs=_never, run=_never, reference=_never, jit_fn=dot_tf32_probe,
    compile_signature=lambda dtype, meta: ({"a_ptr": f"*{dtype}", "c_ptr": f"*{dtype}", "BLOCK": "constexpr"},
                                           {"BLOCK": meta.get("BLOCK", 32)}))


def _unit_stride_signature(dtype: str, meta: dict) -> tuple[dict, dict]:
    """What the JIT compiles for contiguous A, B, C: the unit strides become constexpr 1."""
    signature, constexprs = matmul.SPEC.compile_signature(dtype, meta)
    for name in ("stride_ak", "stride_bn", "stride_cn"):
        signature[name], constexprs[name] = "constexpr", 1
    return signature, constexprs


UNIT_STRIDES = dataclasses.replace(matmul.SPEC, name="matmul_unit_strides", compile_signature=_unit_stride_signature)
# Tiny config spaces so plan() can be checked exactly.
SMALL = dataclasses.replace(
    matmul.SPEC, name="matmul_small_space", dtypes=("fp32", "fp16", "bf16", "fp8e4nv"),
    default_config={"nvidia": {**NV_DEFAULT}, "interpret": matmul.SPEC.default_config["interpret"]},
    configs={"nvidia": tuple({**NV_DEFAULT, "BLOCK_N": n} for n in (128, 16, 32, 64, 256))})


@pytest.mark.parametrize("text, expected", [
    ("KeyError: 'Keyword argument waves_per_eu was specified but unrecognised'", "invalid_option_for_vendor"),
    ("num_warps must be a power of 2", "invalid_option_for_vendor"),
    ("out of resource: shared memory, Required: 131072, Hardware limit: 65536. Reducing block sizes or `num_stages` "
     "may help.", "out_of_shared_memory"),
    ("ptxas error   : Entry function 'k' uses too much shared data (0x30000 bytes, 0xc000 max)", "out_of_shared_memory"),
    ("out of resource: threads, Required: 2048, Hardware limit: 1024.", "too_many_threads"),
    ("input_precision must be one of ('ieee', 'bf16x3', 'bf16x6'). Got tf32", "unsupported_dtype_or_op"),
    ("ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', "
     "'fp8e5')\")", "unsupported_dtype_or_op"),
    ("ptxas fatal   : (C7602) Insufficient registers (32) to compile instruction", "other"),
    ("something else entirely", "other"),
])
def test_classify_error_maps_triton_messages_to_classes(text: str, expected: str) -> None:
    assert cm.classify_error(text) == expected


def test_error_excerpt_keeps_the_message_not_the_repro_command() -> None:
    exc = RuntimeError("Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas fatal : bad\n\n"
                       "Repro command: /x/ptxas /tmp/t.ptx\nmore\nand more")
    text = cm.error_excerpt(exc)
    assert text.startswith("RuntimeError: Internal Triton PTX codegen error\n")
    assert "ptxas fatal : bad" in text and "Repro command" not in text and "and more" not in text


def test_parse_cuobjdump_reads_the_function_line() -> None:
    out = ("\nResource usage:\n Common:\n  GLOBAL:0\n Function matmul_kernel:\n"
           "  REG:32 STACK:4552 SHARED:0 LOCAL:8 CONSTANT[0]:432 TEXTURE:0 SURFACE:0 SAMPLER:0\n")
    assert cm.parse_cuobjdump(out) == {"reg": 32, "stack": 4552, "local": 8, "shared": 0}
    assert cm.parse_cuobjdump("no function here") == {}


def test_parse_amdgcn_reads_metadata_and_occupancy() -> None:
    asm = ("; ScratchSize: 236\n; Occupancy: 2\n    .agpr_count:     64\n    .sgpr_count:     104\n"
           "    .sgpr_spill_count: 0\n    .vgpr_count:     256\n    .vgpr_spill_count: 60\n")
    assert cm.parse_amdgcn(asm) == {"vgpr_count": 256, "sgpr_count": 104, "agpr_count": 64, "vgpr_spill_count": 60,
                                    "sgpr_spill_count": 0, "occupancy": 2}


H100 = SimpleNamespace(max_threads_per_sm=2048, warp_size=32, registers_per_sm=65536, shared_memory_per_block_bytes=232448)
MI300X = SimpleNamespace(vgprs_per_lane=512, shared_memory_per_block_bytes=65536)


@pytest.mark.parametrize("regs, warps, shared, expected", [
    (255, 8, 0, (8, 0.125)),  # registers: one 256-thread block
    (32, 4, 0, (64, 1.0)),  # threads and registers both allow 16 blocks
    (32, 4, 100_000, (8, 0.125)),  # shared memory: two blocks
    (None, 32, 0, (64, 1.0)),
])
def test_nvidia_occupancy(regs, warps, shared, expected) -> None:
    assert cm.nvidia_occupancy(regs, warps, shared, H100) == expected


def test_amd_occupancy_prefers_llvm_then_vgprs_then_lds() -> None:
    assert cm.amd_occupancy({"occupancy": 2, "vgpr_count": 100}, 8, 0, MI300X) == (2, 0.25)
    assert cm.amd_occupancy({"vgpr_count": 150}, 8, 0, MI300X) == (3, 0.375)
    assert cm.amd_occupancy({"vgpr_count": 40}, 4, 0, MI300X) == (8, 1.0)
    assert cm.amd_occupancy({"occupancy": 8}, 8, 32768, MI300X) == (4, 0.5)  # 2 workgroups x 8 waves / 4 SIMDs
    assert cm.amd_occupancy({}, 8, 0, MI300X) is None


def test_plan_ci_compiles_defaults_for_every_dtype_and_three_others_for_fp16() -> None:
    jobs = cm.plan(SMALL, SM90, "ci")
    assert [(d, c["BLOCK_N"], default) for d, c, default in jobs] == [
        ("fp32", 128, True), ("fp16", 128, True), ("bf16", 128, True), ("fp8e4nv", 128, True),
        ("fp16", 16, False), ("fp16", 32, False), ("fp16", 64, False)]
    assert cm.plan(SMALL, SM90, "defaults") == [(d, c, default) for d, c, default in jobs if default]
    full = cm.plan(SMALL, SM90, "full")
    assert len(full) == 4 + 4 * 4 and ("fp8e4nv", {**NV_DEFAULT, "BLOCK_N": 256}, False) in full
    # No amd configs declared: the default is {} (the launcher picks); no fp8 on gfx90a, so no extra fp8 jobs.
    assert cm.plan(SMALL, GFX90A, "full") == [(d, {}, True) for d in SMALL.dtypes]


def test_mode_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUITE_COMPILE_MATRIX", "full")
    assert cm.mode() == "full"
    monkeypatch.delenv("SUITE_COMPILE_MATRIX")
    assert cm.mode() == "defaults"
    assert cm.selection_line() == ("compile matrix: SUITE_COMPILE_MATRIX=defaults, each dtype's default config per "
                                   "kernel and target; =ci the defaults and up to 3 other configs, =full every config "
                                   "for every dtype (.ci/run runs =ci)")
    monkeypatch.setenv("SUITE_COMPILE_MATRIX", "ci")
    assert cm.mode() == "ci" and cm.selection_line().endswith("; =full every config for every dtype (.ci/run runs =ci)")
    monkeypatch.setenv("SUITE_COMPILE_MATRIX", "full")
    assert ";" not in cm.selection_line()
    monkeypatch.setenv("SUITE_COMPILE_MATRIX", "everything")
    with pytest.raises(ValueError, match="'defaults', 'ci' or 'full'"):
        cm.mode()


def _rec(target: str, family: str, status: str, cls: str | None = None, **extra) -> dict:
    return {"kernel": "k", "dtype": "fp16", "target": target, "family": family, "status": status,
            "failure_class": cls, "config": {"BLOCK": 64, "num_stages": 3 if family == "nvidia" else 2}, **extra}


def test_summary_rows_counts_classes_registers_spills_occupancy() -> None:
    records = [_rec("sm_90", "nvidia", "ok", registers=200, spills=False, occupancy=0.25),
               _rec("sm_90", "nvidia", "ok", registers=255, spills=True, occupancy=0.125),
               _rec("gfx942", "amd", "failed", "out_of_shared_memory"), _rec("gfx942", "amd", "skipped"),
               _rec("gfx942", "amd", "failed", "out_of_shared_memory", registers=100, occupancy=0.5)]
    headers, rows = cm.compile_summary_rows(records)
    assert headers[:5] == ["kernel", "target", "ok", "failed", "skipped"]
    assert rows == [["k", "gfx942", 0, "2 out_of_shared_memory", 1, 100, "no", "0.50"],
                    ["k", "sm_90", 2, "0", 0, 255, "yes", "0.12"]]


def test_config_lints_flag_vendor_option_leaks_and_too_many_warps() -> None:
    findings = lints.lint_config_space(
        "k", {"nvidia": {"num_warps": 8, "waves_per_eu": 2}, "amd": {"num_warps": 32}},
        {"nvidia": ({"num_warps": 32}, {"num_warps": 64, "kpack": 2}), "amd": ({"num_warps": 16, "maxnreg": 128},)})
    got = sorted((f["rule"], f["family"], json.dumps(f["config"], sort_keys=True)) for f in findings)
    assert got == [("too_many_warps", "amd", '{"num_warps": 32}'),
                   ("too_many_warps", "nvidia", '{"kpack": 2, "num_warps": 64}'),
                   ("vendor_option_leak", "amd", '{"maxnreg": 128, "num_warps": 16}'),
                   ("vendor_option_leak", "nvidia", '{"kpack": 2, "num_warps": 64}'),
                   ("vendor_option_leak", "nvidia", '{"num_warps": 8, "waves_per_eu": 2}')]
    assert all(f["severity"] == "error" for f in findings)
    assert lints.lint_config_space("k", matmul.DEFAULTS, matmul.SPEC.configs) == []
    assert lints.max_warps("amd") == 16 and lints.max_warps("nvidia") == 32


def test_fp8_lint_names_the_missing_flavour() -> None:

    profiles = [hardware_profiles.representative(a) for a in ("sm_80", "sm_90", "gfx942", "gfx950")]
    findings = lints.lint_dtypes("k", ("fp16", "fp8e4nv"), profiles)
    assert sorted(f["target"] for f in findings) == ["gfx942", "sm_80"]
    gfx942 = next(f for f in findings if f["target"] == "gfx942")
    assert gfx942["severity"] == "warning" and "FNUZ" in gfx942["message"] and gfx942["dtype"] == "fp8e4nv"
    assert lints.lint_dtypes("k", ("fp32", "fp16", "bf16"), profiles) == []


def test_shared_memory_divergence_needs_the_other_vendor_to_fit() -> None:
    fits = _rec("sm_90", "nvidia", "ok", shared_bytes=196608, shared_limit_bytes=232448)
    overflows = _rec("gfx942", "amd", "failed", "out_of_shared_memory", shared_bytes=131072, shared_limit_bytes=65536)
    [finding] = lints.lint_compile_records([fits, overflows])
    assert finding["rule"] == "shared_memory_divergence" and finding["target"] == "gfx942"
    assert finding["fits_on"] == ["sm_90"] and "131072 > 65536" in finding["message"]
    assert lints.lint_compile_records([overflows, {**fits, "target": "gfx950", "family": "amd"}]) == []
    assert lints.lint_compile_records([overflows, {**fits, "dtype": "fp32"}]) == []


# Real compiles: each failure class and hazard shown on kernels.matmul or the probe above.

def test_amd_only_option_in_an_nvidia_compile_is_invalid_option_for_vendor() -> None:  # hazard 4
    r = cm.compile_one(matmul.SPEC, "fp16", {**NV_DEFAULT, "waves_per_eu": 2}, SM90)
    assert (r["status"], r["failure_class"]) == ("failed", "invalid_option_for_vendor")
    assert "waves_per_eu was specified but unrecognised" in r["error"]
    r = cm.compile_one(matmul.SPEC, "fp16", {**matmul.DEFAULTS["amd"], "maxnreg": 128}, GFX942)
    assert r["failure_class"] == "invalid_option_for_vendor" and "maxnreg" in r["error"]


def test_32_warps_compile_on_sm_90_but_exceed_a_gfx942_workgroup() -> None:  # hazard 5
    config = {**NV_DEFAULT, "num_warps": 32}
    nvidia = cm.compile_one(matmul.SPEC, "fp16", config, SM90)
    amd = cm.compile_one(matmul.SPEC, "fp16", config, GFX942)
    assert nvidia["status"] == "ok", nvidia
    assert (amd["status"], amd["failure_class"]) == ("failed", "too_many_threads")
    assert "Required: 2048, Hardware limit: 1024" in amd["error"]


def test_nvidia_default_fits_227_kb_on_sm_90_and_overflows_64_kb_lds_on_gfx942() -> None:  # hazard 6
    nvidia = cm.compile_one(matmul.SPEC, "fp32", NV_DEFAULT, SM90)
    amd = cm.compile_one(matmul.SPEC, "fp32", NV_DEFAULT, GFX942)
    assert nvidia["status"] == "ok" and 65536 < nvidia["shared_bytes"] <= nvidia["shared_limit_bytes"] == 232448
    assert (amd["status"], amd["failure_class"]) == ("failed", "out_of_shared_memory")
    assert amd["shared_bytes"] > amd["shared_limit_bytes"] == 65536 and amd["shared_fraction"] > 1
    [finding] = lints.lint_compile_records([nvidia, amd])
    assert finding["target"] == "gfx942" and finding["fits_on"] == ["sm_90"]


def test_pipelined_fp16_tile_fits_sm_90_and_overflows_gfx942_with_contiguous_inputs() -> None:  # hazard 6
    config = {**NV_DEFAULT, "BLOCK_N": 256}  # 128x256x64, 8 warps, num_stages=3
    records = {t[1]: cm.compile_one(UNIT_STRIDES, "fp16", config, t) for t in (SM90, GFX942, ("hip", "gfx950", 64))}
    assert records["sm_90"]["status"] == "ok" and records["sm_90"]["shared_bytes"] > 65536
    assert records["gfx942"]["failure_class"] == "out_of_shared_memory"
    assert records["gfx950"]["status"] == "ok"  # 160 KB of LDS
    assert records["sm_90"]["wide_memory_ops"] > 0 and records["gfx942"]["wide_memory_ops"] > 0


def test_tf32_dot_is_unsupported_on_gfx90a_and_compiles_on_gfx942() -> None:  # hazard 2
    bad = cm.compile_one(TF32_PROBE, "fp32", {}, GFX90A)
    assert (bad["status"], bad["failure_class"]) == ("failed", "unsupported_dtype_or_op")
    assert "input_precision must be one of" in bad["error"]
    ok = cm.compile_one(TF32_PROBE, "fp32", {}, GFX942)
    assert ok["status"] == "ok" and ok["uses_dot"] and ok["tensor_cores"]


def test_fp8_is_gated_by_the_profile_without_compiling() -> None:
    r = cm.compile_one(SMALL, "fp8e4nv", NV_DEFAULT, ("cuda", "sm_80", 32))
    assert (r["status"], r["error"]) == ("skipped", "dtype unsupported on sm_80 (a100_80gb profile)")
    assert "compile_seconds" not in r
    assert cm.compile_one(SMALL, "fp8e4nv", {}, GFX942)["status"] == "skipped"  # gfx942 has only FNUZ fp8


def test_default_matmul_record_has_resources_and_tensor_cores() -> None:
    # Under the suite's plugin the interpreter is the backend here: this compiles through the child process.
    assert isinstance(matmul.SPEC.jit_fn, triton.runtime.JITFunction) == (os.environ.get("TRITON_INTERPRET") != "1")
    for target in (SM90, GFX942):
        r = cm.compile_one(matmul.SPEC, "fp16", matmul.DEFAULTS[cm.family_of(target)], target, default=True)
        assert r["status"] == "ok" and r["default"] is True and r["uses_dot"] and r["tensor_cores"], r
        assert 0 < r["shared_bytes"] <= r["shared_limit_bytes"] and 0 < r["registers"] and 0 < r["occupancy"] <= 1
        json.dumps(r, allow_nan=False)


def test_interpreted_and_plain_jit_compiles_agree() -> None:
    """TRITON_INTERPRET=1 turns @triton.jit into InterpretedFunction, which triton.compile rejects; the compile matrix
    then compiles in a child process without it. Both routes must give the same record."""
    script = ("import json; from kernels import vector_add as v; from suite.tools import compile_matrix as cm;"
              "print(json.dumps(cm.compile_one(v.SPEC, 'fp32', {'BLOCK_SIZE': 1024, 'num_warps': 4}, ('hip', 'gfx942', 64))))")
    out = {}
    for interpret in ("1", "0"):
        env = {**os.environ, "TRITON_INTERPRET": interpret, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out[interpret] = json.loads(proc.stdout.strip().splitlines()[-1])
    keys = ("status", "shared_bytes", "registers", "spills", "occupancy", "wide_memory_ops")
    assert {k: out["1"][k] for k in keys} == {k: out["0"][k] for k in keys}
    assert out["1"]["status"] == "ok" and out["1"]["wide_memory_ops"] > 0


def test_records_and_findings_fit_the_run_file_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "reports" / "schema" / "run.schema.json").read_text())
    record = cm.compile_one(matmul.SPEC, "fp16", {**NV_DEFAULT, "waves_per_eu": 2}, SM90)
    jsonschema.validate(record, schema["properties"]["compiles"]["items"])
    findings = (lints.lint_config_space("k", {"nvidia": {"kpack": 2}}, {})
                + lints.lint_dtypes("k", ("fp8e4nv",), [hardware_profiles.representative("gfx942")])
                + lints.lint_compile_records([
                    _rec("sm_90", "nvidia", "ok", shared_bytes=1, shared_limit_bytes=2),
                    _rec("gfx942", "amd", "failed", "out_of_shared_memory", shared_bytes=3, shared_limit_bytes=2)]))
    assert [f["rule"] for f in findings] == ["vendor_option_leak", "fp8_flavour_unsupported", "shared_memory_divergence"]
    for finding in findings:
        jsonschema.validate(json.loads(json.dumps(finding)), schema["properties"]["findings"]["items"])


def test_a_gpu_run_compiles_the_matrix_for_its_own_arch_only() -> None:
    """--compile-targets: every profiled target on the interpreter (or asked for), the runner's own on a GPU."""
    from suite.session.options import Options
    from suite.test_compile_matrix import matrix_targets

    every = hardware_profiles.targets()

    def ctx(name: str, arch: str, family: str, warp: int, targets: str | None = None) -> SimpleNamespace:
        options = Options(backend=name, results_dir=Path("."), write_results=False, repro=None, config=None,
                          kernel_modules=(), kernels=None, known_issues=Path("."), retune=None, autotune_dir=None,
                          case_timeout=0.0, case_timeout_given=False, hypothesis_db=None, compile_targets=targets)
        return SimpleNamespace(options=options, backend=SimpleNamespace(name=name, arch=arch, family=family,
                                                                        warp_size=warp))

    assert matrix_targets(ctx("interpret", "interpreter", "interpret", 32)) == every
    assert matrix_targets(ctx("cuda", "sm_90", "nvidia", 32)) == [t for t in every if t[1] == "sm_90"] != []
    assert matrix_targets(ctx("rocm", "gfx942", "amd", 64)) == [t for t in every if t[1] == "gfx942"] != []
    assert matrix_targets(ctx("cuda", "sm_89", "nvidia", 32)) == [("cuda", "sm_89", 32)]  # no profile: its own
    assert matrix_targets(ctx("cuda", "sm_90", "nvidia", 32, "all")) == every
