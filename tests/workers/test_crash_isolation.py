"""A faulting, an out-of-memory and a hung kernel each cost one test, not the run: the case is
recorded with its reproduction line, the rest goes on, the run file stays whole. Plus worker
pinning (one GPU per xdist worker).

The broken kernels live in tests/fixtures/faulting_kernels.py. On the CPU the fault and the
OOM are raised as CUDA raises them (the interpreter cannot fault a GPU); the hang is real.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from suite.session.results import SCHEMA_PATH
from suite.workers import crash

FIXTURE = "--kernel-module=tests/fixtures/faulting_kernels.py"


def validate(data: dict) -> None:
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.slow
def test_fault_oom_and_hang_under_xdist(run_suite):
    run = run_suite("suite/test_kernels.py", "-n", "1", FIXTURE, "--kernels=zz_fault,zz_oom,zz_hang,vector_add",
                    "--case-timeout=5", "-p", "xdist", "-p", "tests.fixtures.gpu_memory_80gib", timeout=300)
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    validate(data)
    assert data["status"] == "complete"
    outcomes = {t["nodeid"].split("[")[1].rstrip("]"): t["outcome"] for t in data["tests"]}
    # Every vector_add test ran after, or beside, the broken ones and passed.
    assert {k: v for k, v in outcomes.items() if k.startswith("vector_add")} == {
        "vector_add-fp32": "passed", "vector_add-fp16": "passed", "vector_add-bf16": "passed"}
    failed = {c["kernel"]: c for c in data["cases"] if c["outcome"] == "failed"}
    assert set(failed) == {"zz_fault", "zz_hang"}
    # Out of memory even when run again alone (2^42 bytes): too large for the device (a GPU of 80 GiB, played), not
    # run, never a wrong result; every case of the test was, so it is skipped, saying so.
    oom = next(t for t in data["tests"] if "zz_oom" in t["nodeid"])
    assert oom["outcome"] == "skipped" and "too large for this GPU" in oom["message"], oom
    [large] = {c["kernel"]: c for c in data["gpu_share"]["too_large_cases"]}.values()
    assert large["kernel"] == "zz_oom" and "out of memory" in large["message"]
    assert failed["zz_fault"]["failure"] == "fault" and "GPU fault" in failed["zz_fault"]["message"]
    assert failed["zz_hang"]["failure"] == "timeout" and "--case-timeout=5" in failed["zz_hang"]["message"]
    for case in failed.values():
        assert case["repro"].startswith("pytest 'suite/test_kernels.py::test_matches_reference[zz_")
        assert "--repro=N=" in case["repro"]
    kinds = sorted(i["kind"] for i in data["incidents"])
    assert kinds == ["fault", "timeout"]  # an OOM does not end the worker
    fault_test = next(t for t in data["tests"] if "zz_fault" in t["nodeid"])
    assert "replaced after this test" in fault_test["message"]
    assert "INCIDENT timeout" in run.output


@pytest.mark.slow
def test_hang_in_a_single_process_run_is_recorded_before_the_process_ends(run_suite):
    run = run_suite("suite/test_kernels.py", FIXTURE, "--kernels=vector_add,zz_hang", "-k", "fp32",
                    "--case-timeout=5", timeout=300)
    assert run.returncode == crash.EXIT_TIMEOUT, run.output[-3000:]
    data = run.run_data()
    validate(data)
    assert data["status"] == "incomplete"
    hung = [c for c in data["cases"] if c.get("failure") == "timeout"]
    assert len(hung) == 1 and "--repro=" in hung[0]["repro"]


def test_fault_in_a_single_process_run_stops_it_with_advice(run_suite):
    run = run_suite("suite/test_kernels.py", FIXTURE, "--kernels=zz_fault,vector_add", "-k", "fp32")
    assert run.returncode == 2, run.output[-3000:]  # interrupted: later tests would run on a dead context
    assert "run with -n 1 (or -n auto)" in run.output
    data = run.run_data()
    validate(data)
    assert data["status"] == "incomplete"
    assert [c["failure"] for c in data["cases"] if c["outcome"] == "failed"] == ["fault"]


def test_workers_are_pinned_one_gpu_each():
    gpus = ["0", "1"]
    taken: list[str] = []
    for _ in range(5):  # gw0..gw4 as xdist starts them: in order, then round robin
        taken.append(crash.assign(gpus, taken))
    assert taken == ["0", "1", "0", "1", "0"]
    assert crash.assign([], []) is None
    # gw1 (GPU 1) died: its replacement (xdist gives it a new id, gw2) takes GPU 1, not GPU 0 again.
    assert crash.assign(gpus, ["0"]) == "1"
    # The parent's own list (ids or UUIDs) is what workers pick from.
    env = {"CUDA_VISIBLE_DEVICES": "2,3"}
    assert crash.visible_gpus(2, "CUDA_VISIBLE_DEVICES", env) == ["2", "3"]
    assert crash.visible_gpus(4, "CUDA_VISIBLE_DEVICES", {}) == ["0", "1", "2", "3"]
    assert crash.visibility_variable("nvidia", {}) == "CUDA_VISIBLE_DEVICES"
    assert crash.visibility_variable("amd", {}) == "HIP_VISIBLE_DEVICES"
    assert crash.visibility_variable("amd", {"CUDA_VISIBLE_DEVICES": "1"}) == "CUDA_VISIBLE_DEVICES"
    assert crash.visible_gpus(8, "HIP_VISIBLE_DEVICES", {"HIP_VISIBLE_DEVICES": "4,5,6,7"}) == ["4", "5", "6", "7"]


def test_auto_worker_count_shares_each_gpu_but_benchmarks_get_it_alone(monkeypatch):
    from types import SimpleNamespace

    from suite.plugin import hooks as plugin
    from suite.workers import gpu_share

    option = SimpleNamespace(markexpr="not perf")
    config = SimpleNamespace(getoption=lambda name: backend, option=option)
    monkeypatch.setattr(plugin.context, "gpu_count", lambda requested: 4)
    monkeypatch.setattr(plugin.os, "cpu_count", lambda: 128)
    backend = "cuda"
    assert plugin.pytest_xdist_auto_num_workers(config) == 4 * gpu_share.WORKERS_PER_GPU
    monkeypatch.setattr(plugin.os, "cpu_count", lambda: 16)  # at most one worker per core
    assert plugin.pytest_xdist_auto_num_workers(config) == 16
    for expr in ("perf", "perf or not perf"):  # timings: one worker per GPU
        option.markexpr = expr
        assert plugin.pytest_xdist_auto_num_workers(config) == 4
    backend = "interpret"  # xdist's own default: one per CPU
    assert plugin.pytest_xdist_auto_num_workers(config) is None
    monkeypatch.setattr(plugin.context, "gpu_count", lambda requested: 0)
    backend = "auto"
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert plugin.pytest_xdist_auto_num_workers(config) is None


def test_a_run_cut_short_by_xdist_is_marked_incomplete(run_suite):
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", "-n", "1", "--max-worker-restart=0", FIXTURE,
                    "--kernels=vector_add,zz_fault", "-k", "fp32", timeout=300)
    assert run.returncode != 0, run.output[-3000:]
    data = run.run_data()
    validate(data)
    assert data["status"] == "incomplete"
    assert any("never reported" in i["message"] for i in data["incidents"]), data["incidents"]


def test_sticky_errors_are_faults_and_oom_is_not():
    assert crash.classify(RuntimeError("CUDA error: an illegal memory access was encountered"), "cpu") == "fault"
    assert crash.classify(RuntimeError("HIP error: hipErrorIllegalAddress"), "cpu") == "fault"
    assert crash.classify(RuntimeError("CUDA out of memory. Tried to allocate 4.00 TiB"), "cpu") == "oom"
    assert crash.classify(ValueError("bad shape"), "cpu") is None


@pytest.mark.slow
def test_a_hung_reference_is_ended_by_the_case_timeout(run_suite):
    """--case-timeout bounds the float64 reference as it bounds the launch: a reference that never returns ends its
    case (recorded with its reproduction line), not the run."""
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/hung_reference.py",
                    "--kernels=zz_hung_reference", "--case-timeout=5", timeout=120)
    assert run.returncode == crash.EXIT_TIMEOUT, run.output[-3000:]
    data = run.run_data()
    validate(data)
    hung = [c for c in data["cases"] if c.get("failure") == "timeout"]
    assert len(hung) == 1 and "--repro=" in hung[0]["repro"], data["cases"]
    assert "(a hung float64 reference)" in hung[0]["message"], hung[0]["message"]
