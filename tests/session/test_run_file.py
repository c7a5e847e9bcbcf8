"""Result files: schema-valid, one per run, merged across xdist workers, whole after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from suite.session.results import SCHEMA_PATH, write_json_atomic

SCHEMA = json.loads(Path(SCHEMA_PATH).read_text())


def validate(data: dict) -> None:
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_schema_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_run_file_validates_and_records_cases(run_suite):
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", "-k", "vector_add-fp32 or softmax-fp16")
    assert run.returncode == 0, run.output[-3000:]
    data = run.run_data()
    validate(data)
    assert data["status"] == "complete"
    kernels = {c["kernel"] for c in data["cases"]}
    assert kernels == {"vector_add", "softmax"}
    assert all(c["outcome"] == "passed" and float(c["error_ratio"]) <= 1.0 for c in data["cases"])
    assert all(c["repro"].startswith("pytest ") and "--repro=" in c["repro"] for c in data["cases"])
    assert {f["property"] for f in data["findings"]} >= {"deterministic", "batch_invariant"}
    assert data["environment"]["hypothesis_profile"] == "ci"
    assert "portability summary" in run.output and str(run.run_files()[0].name) in run.output


def test_xdist_workers_merge_into_one_file(run_suite):
    run = run_suite("suite/test_kernels.py", "-n", "2", "--kernels=vector_add")
    assert run.returncode == 0, run.output[-3000:]
    data = run.run_data()
    validate(data)
    assert {c["dtype"] for c in data["cases"]} == {"fp32", "fp16", "bf16"}
    assert len(data["tests"]) == 3


def test_runs_never_overwrite_each_other(run_suite, tmp_path):
    for _ in range(2):
        run = run_suite("suite/test_kernels.py", "-k", "vector_add-fp32", results_dir=tmp_path / "same")
        assert run.returncode == 0
    assert len(list((tmp_path / "same").glob("run-*.json"))) == 2


def test_a_run_that_dies_leaves_a_valid_incomplete_file(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/crashing_kernel.py",
                    "-k", "vector_add-fp32 or zz_killed")
    assert run.returncode == -9, run.output[-3000:]
    data = run.run_data()
    validate(data)
    assert data["status"] == "incomplete"
    assert [t["nodeid"].rsplit("[", 1)[1] for t in data["tests"]] == ["vector_add-fp32]"]
    assert data["cases"], "cases of the test that finished are kept"


def test_a_session_without_suite_tests_writes_no_file(run_suite):
    run = run_suite("tests/kernels/test_profiles.py", "-q")
    assert run.returncode == 0, run.output[-2000:]
    assert run.run_files() == []


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "run.json"
    write_json_atomic(target, {"a": 1})
    with pytest.raises(ValueError):
        write_json_atomic(target, {"a": float("nan")})  # JSON has no NaN: refused, old file kept
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_the_environment_records_the_whole_toolchain(tmp_path, monkeypatch):
    """numpy beside torch, triton and hypothesis; on a GPU backend the runtime, and the driver even where the
    vendor's tool is missing (read from the driver's kernel module, as in a container)."""
    from types import SimpleNamespace

    import numpy
    import torch

    from suite.session import backend as backend_mod
    from suite.session import results

    interp = backend_mod.resolve("interpret")
    env = results.environment_fingerprint(interp, "ci", None)
    assert env["numpy"] == numpy.__version__ and env["driver"] is None and env["runtime"] is None
    schema = json.loads(results.SCHEMA_PATH.read_text())["properties"]["environment"]
    jsonschema.validate(env, schema)

    nvrm = tmp_path / "version"
    nvrm.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:53 UTC 2024\n"
                    "GCC version:  gcc version 12.3.0\n")
    amd = tmp_path / "amdgpu"
    amd.write_text("6.8.5\n")
    monkeypatch.setattr(results, "DRIVER_VERSION_FILES", {"nvidia": nvrm, "amd": amd})
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    gpu = SimpleNamespace(**{**interp.__dict__, "name": "cuda", "family": "nvidia", "details": {"driver": None}})
    env = results.environment_fingerprint(gpu, "ci", None)
    assert (env["driver"], env["runtime"]) == ("550.54.15", "CUDA 12.8")
    rocm = SimpleNamespace(**{**gpu.__dict__, "name": "rocm", "family": "amd", "details": {"runtime": "HIP 6.4"}})
    assert results.environment_fingerprint(rocm, "ci", None)["driver"] == "6.8.5"
    gpu.details = {"driver": "560.1", "runtime": "CUDA 12.9"}  # what the backend found comes first
    env = results.environment_fingerprint(gpu, "ci", None)
    assert (env["driver"], env["runtime"]) == ("560.1", "CUDA 12.9")
    jsonschema.validate(env, schema)


def test_rocm_smi_driver_line_is_the_version(monkeypatch):
    import subprocess

    from suite.session import backend as backend_mod

    banner = ("============================ ROCm System Management Interface ============================\n"
              "========================== Version of System Component ===========================\n"
              "Driver version: 6.8.5\n"
              "==========================================================================================\n")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, banner, ""))
    assert backend_mod._driver_version(hip=True) == "6.8.5"


def test_a_run_of_no_suite_test_announces_no_file_as_written(tmp_path):
    """The harness's own tests announced 'results -> runs/run-....json', a file they never write: the header says
    the file is written once a suite test reports, and a run of none leaves no file."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    runs = tmp_path / "runs"
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "suite.workers.crash", "-p", "suite.plugin.hooks",
                           "-p", "no:cacheprovider", f"--results-dir={runs}", "test_plain.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    announced = [ln for ln in proc.stdout.splitlines() if "results -> " in ln]
    assert announced and all(ln.endswith("(written once a suite test reports)") for ln in announced), announced
    assert not list(runs.glob("run-*.json"))
