"""evidence/numerics/: what gpu_check.py recorded on a GPU, held to the model here.

A format-2 record names each case's operand seed and the sha256 of the GPU's fp32 output; the replay draws the same
operands on the CPU and requires the model's output to hash the same. The H200 record committed first (format 1)
holds differing-element counts only: its claims are checked for consistency, and its replay waits on a rerun.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from suite.checks import numerics
from suite.session import numerics_table

EVIDENCE = Path("evidence/numerics")
RECORDS = sorted(EVIDENCE.glob("*/gpu_check.json"))


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", EVIDENCE / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replay(gpu_check, case: dict, arch: str) -> str:
    bm, bn, bk = case["tile"]
    a, b = gpu_check.operands(case["seed"], case["dtype"], bm, bn, case["K"])
    active = numerics.Numerics(arch, numerics_table.MODELS[arch])
    return gpu_check.digest(gpu_check.model_output(active, case["dtype"], a, b, bk))


def test_there_is_a_record():
    assert RECORDS, "no evidence/numerics/*/gpu_check.json"


@pytest.mark.parametrize("record", RECORDS, ids=[p.parent.name for p in RECORDS])
def test_a_records_summary_is_its_cases(record):
    data = json.loads(record.read_text())
    same, total = map(int, re.match(r"(\d+) of (\d+) cases bit-identical", data["summary"]).groups())
    assert total == len(data["cases"]) and same == sum(c["differing"] == 0 for c in data["cases"])
    assert {c["dtype"] for c in data["cases"]} == {"fp16", "bf16", "fp32"}


@pytest.mark.parametrize("record", RECORDS, ids=[p.parent.name for p in RECORDS])
def test_a_records_gpu_output_is_the_models(record):
    data = json.loads(record.read_text())
    if data.get("format", 1) < 2:
        pytest.skip(f"{record}: recorded before per-case seeds and hashes; rerun evidence/numerics/gpu_check.py")
    gpu_check = _gpu_check()
    small = sorted(data["cases"], key=lambda c: c["K"] * c["tile"][0] * c["tile"][1])
    picked = [next(c for c in small if c["dtype"] == d) for d in ("fp16", "bf16", "fp32")]
    for case in picked:
        assert _replay(gpu_check, case, data["arch"]) == case["gpu_sha256"], case


def test_the_replay_tells_the_model_from_the_interpreters_own_dot():
    gpu_check = _gpu_check()
    case = {"dtype": "fp16", "tile": [16, 16, 16], "K": 256, "seed": 7}
    a, b = gpu_check.operands(7, "fp16", 16, 16, 256)
    plain = gpu_check.digest(a.float().numpy() @ b.float().numpy())
    assert _replay(gpu_check, case, "sm_90") != plain
    assert _replay(gpu_check, case, "sm_90") == _replay(gpu_check, case, "sm_90")
    assert _replay(gpu_check, case, "sm_90") != _replay(gpu_check, {**case, "seed": 8}, "sm_90")


REDUCE_RECORDS = sorted(EVIDENCE.glob("*/gpu_check_reduce.json"))


def _gpu_check_reduce():
    spec = importlib.util.spec_from_file_location("gpu_check_reduce", EVIDENCE / "gpu_check_reduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reduce_replay(script, case: dict, vendor: str):
    """The case's model output and the plain interpreter's, recomputed on the CPU, as the record's bits."""
    import hashlib

    if case["what"] == "tl.sum":
        bm, bn = case["shape"]
        x, model, plain = script.sum_case(case["seed"], bm, bn, case["dtype"], vendor, case["num_warps"])
        like = script._bits(x)
    else:
        (a, _, _), model, plain = script.fma_case(case["dtype"], vendor)
        like = script._bits(a)
    want, interp = script._flat_bits(model, like), script._flat_bits(plain, like)
    return hashlib.sha256(want.tobytes()).hexdigest(), int((want != interp).sum())


@pytest.mark.parametrize("record", REDUCE_RECORDS, ids=[p.parent.name for p in REDUCE_RECORDS])
def test_a_reduce_records_model_outputs_replay(record):
    data = json.loads(record.read_text())
    same, total = map(int, re.match(r"(\d+) of (\d+) cases bit-identical", data["summary"]).groups())
    assert total == len(data["cases"]) and same == sum(c["differing"] == 0 for c in data["cases"])
    vendor = data.get("vendor") or re.search(r"\((nvidia|amd)\)", data["summary"]).group(1)
    script = _gpu_check_reduce()
    for case in data["cases"]:
        digest, interpreter_differing = _reduce_replay(script, case, vendor)
        assert digest == case["model_sha256"], case
        if data.get("format", 1) >= 2 and case["differing"] == 0:  # the GPU's output is the model's: counted here
            assert interpreter_differing == case["interpreter_differing"], case


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_the_reduce_checks_cases_tell_the_model_from_the_plain_interpreter(vendor):
    script = _gpu_check_reduce()
    cases = [{"what": "tl.sum", "dtype": d, "shape": [bm, bn], "num_warps": w, "seed": seed}
             for d in script.DTYPES for seed, (bm, bn, w) in enumerate(script.SUMS)]
    cases += [{"what": "tl.fma", "dtype": d} for d in script.DTYPES]
    told = [c for c in cases if _reduce_replay(script, c, vendor)[1]]
    assert len(told) >= len(cases) - 3, [c for c in cases if c not in told]


APPROX_RECORD = EVIDENCE / "h200" / "approx_ulps.json"  # evidence/numerics/approx_ulps.py, run on an H200
_MEASURED_AS = {"exp2": "create_exp2", "exp": "create_exp", "sqrt": "create_sqrt", "rsqrt": "create_rsqrt",
                "div": "create_fdiv"}


def test_nvidia_envelopes_hold_every_error_measured_on_a_gpu():
    """The NVIDIA envelopes of --numerics are at least as wide as the worst error an H200 gave (exhaustive over the
    unary operations' fp32 inputs, 805 million division pairs): an envelope narrowed below it, or an operation that
    compiles to another instruction than the table names, fails here."""
    record = json.loads(APPROX_RECORD.read_text())
    assert record["triton"] == "3.6.0" and "H200" in record["device"]
    for op, name in _MEASURED_AS.items():
        measured, approx = record["ops"][op], numerics_table.APPROX["nvidia"][name]
        assert measured["compared"] > 5e8, (op, measured["compared"])
        assert sum(measured["histogram_0_1_2_3_4_more"]) == measured["compared"], op
        assert measured["max_ulps"] == max(i for i, n in enumerate(measured["histogram_0_1_2_3_4_more"]) if n), op
        assert approx.ulps >= measured["max_ulps"], (op, approx.ulps, measured["max_ulps"])
        assert record["instructions"][op] == [approx.instruction.split()[0]], (op, record["instructions"][op])
    # the centre of tl.exp's envelope is 2^fl(x * log2 e): within ex2.approx's 2 ulp of it over every input
    assert record["ops"]["exp"]["max_ulps"] <= numerics_table.APPROX["nvidia"]["create_exp2"].ulps
