"""Issue 39 (part A): the run's integrity. A run says which code it tested (each --kernel-module's sha256 and the
libraries its import brought in, and `compare` names a change); a kernel module that changes directory, exits or
imports a helper beside it at import time; mistakes in the surroundings that used to fail every test, give an
INTERNALERROR or a raw traceback, or exit 0 without a run file."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.report_helpers import cli

KERNEL = '''
import dataclasses
{imports}
from kernels.registry import register
from kernels.vector_add import SPEC
register(dataclasses.replace(SPEC, name="zz_{name}"))
'''


def kernel_module(directory: Path, name: str = "mine", imports: str = "", stem: str = "my_kernels") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.py"
    path.write_text(KERNEL.format(imports=imports, name=name))
    return path


def fake_distribution(site: Path, version: str, body: str = "") -> Path:
    """An installed distribution `fakelib` of this version in its own site directory (dist-info and package)."""
    (site / "fakelib").mkdir(parents=True)
    (site / "fakelib" / "__init__.py").write_text(f"VERSION = {version!r}\n{body}")
    info = site / f"fakelib-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakelib\nVersion: {version}\n")
    (info / "top_level.txt").write_text("fakelib\n")
    return site


def run_mine(run_suite, module: Path, results: Path, *args: str, env: dict | None = None):
    return run_suite("suite/test_kernels.py", f"--kernel-module={module}", "--kernels=zz_mine", "-k", "fp32", *args,
                     results_dir=results, env=env)


# --- item 16: which code a run tested ----------------------------------------------------------------------------


def test_the_run_file_records_the_kernel_modules_hash_and_libraries(run_suite, tmp_path):
    module = kernel_module(tmp_path / "src", imports="import colorsys\nimport fakelib\nimport helper_beside")
    (tmp_path / "src" / "helper_beside.py").write_text("X = 1\n")
    site = fake_distribution(tmp_path / "site", "1.2.3")
    res = run_mine(run_suite, module, tmp_path / "runs", env={"PYTHONPATH": str(site)})
    assert res.returncode == 0, res.output[-3000:]
    [record] = res.run_data()["kernel_modules"]
    assert record["module"] == str(module) and record["file"] == str(module.resolve())
    assert record["sha256"] == hashlib.sha256(module.read_bytes()).hexdigest()
    libraries = {lib["module"]: lib for lib in record["libraries"]}
    assert libraries["fakelib"] == {"module": "fakelib", "distribution": "fakelib", "version": "1.2.3",
                                    "path": str((site / "fakelib").resolve())}
    assert libraries["helper_beside"] == {"module": "helper_beside", "distribution": None, "version": None,
                                          "path": str((tmp_path / "src" / "helper_beside.py").resolve())}
    assert "colorsys" not in libraries and "kernels" not in libraries  # the standard library's, the suite's
    assert f"kernel module {module}: sha256 {record['sha256'][:16]}; imported fakelib 1.2.3 from" in res.output


def test_compare_names_a_changed_kernel_module_and_library(run_suite, tmp_path, capsys):
    """A run against a planted copy of the module and a newer library used to look like the same run."""
    base_mod = kernel_module(tmp_path / "base", imports="import fakelib")
    cand_mod = kernel_module(tmp_path / "cand", imports="import fakelib  # planted")
    base_site, cand_site = fake_distribution(tmp_path / "s1", "0.18.0"), fake_distribution(tmp_path / "s2", "0.19.0")
    base = run_mine(run_suite, base_mod, tmp_path / "r1", env={"PYTHONPATH": str(base_site)})
    cand = run_mine(run_suite, cand_mod, tmp_path / "r2", env={"PYTHONPATH": str(cand_site)})
    assert base.returncode == 0 and cand.returncode == 0, base.output[-2000:] + cand.output[-2000:]
    b_sha, c_sha = (hashlib.sha256(m.read_bytes()).hexdigest()[:12] for m in (base_mod, cand_mod))
    code, out, err = cli(capsys, "compare", base.run_files()[0], cand.run_files()[0], "--json")
    warnings = " ".join(json.loads(out)["warnings"])
    assert f"kernel module my_kernels.py changed: sha256 {b_sha} -> {c_sha}" in warnings, warnings
    assert (f"distribution fakelib 0.18.0 -> 0.19.0, path {(base_site / 'fakelib').resolve()} -> "
            f"{(cand_site / 'fakelib').resolve()} (imported by my_kernels.py)") in warnings, warnings


def test_a_library_only_moved_is_named(tmp_path, capsys):
    from tests.report_helpers import make_run, write

    record = {"module": "k.py", "file": "/a/k.py", "sha256": "ab" * 32, "libraries": [
        {"module": "torchao", "distribution": "torchao", "version": "0.18.0", "path": "/venv/torchao"}]}
    base = make_run(run_id="20261121T000000Z-cuda-sm_90-aaaaaa")
    cand = make_run(run_id="20261121T010000Z-cuda-sm_90-bbbbbb")
    base["kernel_modules"] = cand["kernel_modules"] = [record]
    code, out, err = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert code == 0 and "tested different code" not in out, out  # the same code: nothing to say
    cand["kernel_modules"] = [{**record, "libraries": [{**record["libraries"][0], "path": "/tmp/planted/torchao"}]}]
    code, out, err = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert ("the runs tested different code: distribution torchao path /venv/torchao -> /tmp/planted/torchao "
            "(imported by k.py)") in out, out
    del base["kernel_modules"]
    code, out, err = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert "kernel module k.py in the candidate run only (the other run file does not record its kernel modules)" in out


# --- item 12 and a helper beside the module: what a kernel module does as it imports -----------------------------


def test_a_helper_file_beside_the_module_imports(run_suite, tmp_path):
    module = kernel_module(tmp_path / "src", imports="from my_helpers import SCALE")
    (tmp_path / "src" / "my_helpers.py").write_text("SCALE = 2\n")
    res = run_mine(run_suite, module, tmp_path / "runs")
    assert res.returncode == 0 and "1 passed" in res.output, res.output[-3000:]


@pytest.mark.parametrize(("exit_call", "shown"), [
    ("import os; os._exit(0)", "os._exit(0)"),
    ("import os; os._exit(3)", "os._exit(3)"),
    ("import sys; sys.exit(0)", "sys.exit(0)"),
    ("raise SystemExit('bye')", "sys.exit('bye')"),
])
def test_a_module_that_exits_at_import_is_a_usage_error(run_suite, tmp_path, exit_call, shown):
    """os._exit(0) at import used to end the run with exit 0, no output and no run file; sys.exit, an INTERNALERROR."""
    module = kernel_module(tmp_path / "src", imports=exit_call)
    res = run_mine(run_suite, module, tmp_path / "runs")
    assert res.returncode == 4 and "INTERNALERROR" not in res.output, res.output[-3000:]
    assert f"--kernel-module={module}: the module exits at import ({shown}, at {module}:3)" in res.output, res.output


# --- item 19: a kernel module that changes directory ------------------------------------------------------------


def test_a_module_that_changes_directory_keeps_the_run_file_where_asked(run_suite, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    module = kernel_module(tmp_path / "src", imports=f"import os; os.chdir({str(elsewhere)!r})")
    results = Path(os.path.relpath(tmp_path / "runs", ROOT))  # relative to where the suite runs
    second = kernel_module(tmp_path / "src", name="two", stem="second")  # named after the one that moves
    res = run_mine(run_suite, Path(os.path.relpath(module, ROOT)), results,
                   f"--kernel-module={os.path.relpath(second, ROOT)}")
    assert res.returncode == 0, res.output[-3000:]
    files = sorted((tmp_path / "runs").glob("run-*.json"))
    data = json.loads(files[0].read_text()) if len(files) == 1 else {}
    assert data.get("status") == "complete", res.output[-3000:]
    assert not (elsewhere / results).exists() and f"result file (complete): {files[0]}" in res.output
    first, other = data["kernel_modules"]  # the modules' own files, not ones of that name in the directory it moved to
    assert first["file"] == str(module) and first["sha256"] == hashlib.sha256(module.read_bytes()).hexdigest()
    assert other["file"] == str(second) and other["sha256"] == hashlib.sha256(second.read_bytes()).hexdigest()


# --- the trailing items: mistakes in the surroundings ------------------------------------------------------------

SLOW_SECOND = """
import dataclasses
import time
from kernels.registry import register
from kernels.vector_add import SPEC
register(dataclasses.replace(SPEC, name="zz_a"))
def slow_reference(inp, case):
    time.sleep(120)
    return SPEC.reference(inp, case)
register(dataclasses.replace(SPEC, name="zz_b", reference=slow_reference))
"""


def test_sigterm_ends_the_run_as_interrupted(tmp_path):
    """SIGTERM used to leave the run file "incomplete", as if the run had died."""
    (tmp_path / "slow.py").write_text(SLOW_SECOND)
    results = tmp_path / "runs"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--backend=interpret",
                             "suite/test_kernels.py", f"--kernel-module={tmp_path / 'slow.py'}", "--kernels=zz_a,zz_b",
                             "-k", "fp32", f"--results-dir={results}"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # zz_a's test is in the file: zz_b's slow reference is running
            files = list(results.glob("run-*.json"))
            if files and json.loads(files[0].read_text() or "{}").get("tests"):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the first test never reached the run file")
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    data = json.loads(files[0].read_text())
    assert data["status"] == "interrupted" and proc.returncode == 2, output[-3000:]
    assert [t["outcome"] for t in data["tests"]] == ["passed"], data["tests"]
    assert "result file (interrupted)" in output, output[-3000:]


@pytest.mark.parametrize(("variable", "value", "words"), [
    ("SUITE_COMPILE_MATRIX", "fulll", "SUITE_COMPILE_MATRIX must be 'defaults', 'ci' or 'full', got 'fulll'"),
    ("SUITE_BENCH_PLANT", "softmax=lots", "SUITE_BENCH_PLANT='softmax=lots': expected KERNEL=FRACTION"),
    ("SUITE_BENCH_PLANT", "sofmax=0.25", "no kernel 'sofmax'"),
    ("SUITE_WORKERS_PER_GPU", "abc", "SUITE_WORKERS_PER_GPU=abc: must be a whole number >= 1"),
])
def test_a_typo_in_a_suite_variable_stops_the_run_with_exit_4(run_suite, variable, value, words):
    """A typo in SUITE_COMPILE_MATRIX or SUITE_BENCH_PLANT used to fail every test that read it (the run went on);
    SUITE_WORKERS_PER_GPU=abc gave an INTERNALERROR."""
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", env={variable: value})
    assert res.returncode == 4 and "INTERNALERROR" not in res.output, res.output[-3000:]
    assert words in res.output and "passed" not in res.output and not res.run_files(), res.output[-3000:]


def test_a_repro_case_larger_than_the_spec_draws_is_a_usage_error(run_suite):
    """Used to run, and record the memory error of a 10^10-element tensor as a wrong result."""
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32",
                    "--repro=N=10000000000;layout=contiguous;values=normal;seed=0")
    assert res.returncode == 4, res.output[-3000:]
    assert ("N=10000000000 is above the largest size the spec draws, 67108864 (the largest of its interpret_max, "
            "gpu_max and nightly_max)") in res.output, res.output[-3000:]
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32",
                    "--repro=N=6000;layout=contiguous;values=normal;seed=0")  # past interpret_max: a GPU's case
    assert res.returncode == 0 and "1 passed" in res.output, res.output[-3000:]


def test_a_deleted_working_directory_is_one_line(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{sys.executable}" -m suite --no-results'],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 4 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert res.stderr.strip().splitlines() == [
        "error: the current directory no longer exists (it was deleted or moved after the shell entered it); cd to a "
        "directory that exists and run again"]


def test_a_full_disk_says_the_run_file_was_not_written_and_fails(run_suite, tmp_path):
    """It used to print "result file (complete)" and then that the file was not up to date."""
    from tests.session.test_results_writes import FULL_DISK

    (tmp_path / "full_disk.py").write_text(FULL_DISK)
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-p", "full_disk",
                    env={"PYTHONPATH": str(tmp_path)})
    assert res.returncode == 1 and "3 passed" in res.output, res.output[-3000:]
    assert "result file (complete)" not in res.output and "result file (" not in res.output, res.output[-3000:]
    last = [line for line in res.output.splitlines() if line.startswith("result file")]
    assert len(last) == 1 and last[0].startswith("result file NOT up to date: cannot write the run file "), last
    assert "No space left on device; it holds 1 of the 3 tests that ran" in last[0]


def test_a_dangling_link_as_results_dir_is_named(run_suite, tmp_path):
    """It used to say "File exists"."""
    link = tmp_path / "runs-link"
    link.symlink_to(tmp_path / "no-such-dir")
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", results_dir=link)
    assert res.returncode == 4 and "File exists" not in res.output, res.output[-3000:]
    assert (f"--results-dir={link}: it is a dangling symbolic link (to {tmp_path / 'no-such-dir'}, which does not "
            "exist): create the directory it names, or give another") in res.output, res.output[-3000:]
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", results_dir=link / "sub")
    assert res.returncode == 4 and f"--results-dir={link / 'sub'}: {link} is a dangling symbolic link" in res.output


def test_a_module_made_at_run_time_is_not_listed_as_a_library(monkeypatch):
    """Cython's cython_runtime has no file and no distribution: the header said 'imported cython_runtime (no
    distribution) from None'."""
    import types

    from suite.session import provenance

    monkeypatch.setitem(sys.modules, "zz_made_at_run_time", types.ModuleType("zz_made_at_run_time"))
    assert provenance.libraries({"zz_made_at_run_time"}) == []
