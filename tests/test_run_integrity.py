"""Issue 39 (part A): the run's integrity. A run says which code it tested (each --kernel-module's sha256 and the
libraries its import brought in, and `compare` names a change); a kernel module that changes directory, exits or
imports a helper beside it at import time; mistakes in the surroundings that used to fail every test, give an
INTERNALERROR or a raw traceback, or exit 0 without a run file."""

from __future__ import annotations

import hashlib
import json
import os
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
    res = run_mine(run_suite, module, results)
    assert res.returncode == 0, res.output[-3000:]
    files = sorted((tmp_path / "runs").glob("run-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["status"] == "complete", res.output[-3000:]
    assert not (elsewhere / results).exists() and f"result file (complete): {files[0]}" in res.output
