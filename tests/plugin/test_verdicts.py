"""Verdicts that can be trusted: a mistaken spec never passes a broken kernel, a mistake by the person running
the suite is one clear line (a usage error, exit 4, before work starts), and nothing written is lost.

Each test here plants one mistake (fixtures in tests/fixtures/mistaken_specs.py and tests/fixtures/bad_modules/)
and checks the suite's answer.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from suite.session import results
from tests.conftest import ROOT, run_python

MISTAKEN = "--kernel-module=tests/fixtures/mistaken_specs.py"


def no_internal_error(run) -> None:
    assert "INTERNALERROR" not in run.output and "Traceback" not in run.output, run.output[-3000:]


# --- specs ------------------------------------------------------------------------------------------------------

def test_mistaken_specs_fail_as_broken_specs_naming_the_mistake(run_suite):
    run = run_suite("suite/test_kernels.py", MISTAKEN, "--kernels=mistaken_*")
    assert run.returncode == 1, run.output[-3000:]
    no_internal_error(run)
    data = run.run_data()
    cases = {c["kernel"]: c for c in data["cases"]}
    assert set(cases) == {"mistaken_no_reference_outputs", "mistaken_reference_omits_output",
                          "mistaken_nan_reference", "mistaken_raising_reference"}
    assert all(c["outcome"] == "failed" and c["failure"] == "spec" for c in cases.values()), cases
    expected = {
        "mistaken_no_reference_outputs": "the reference returned outputs [], the spec declares ['out']",
        "mistaken_reference_omits_output": "missing ['extra']",
        "mistaken_nan_reference": "NaN/inf",
        "mistaken_raising_reference": "the reference raised NameError",
    }
    for kernel, words in expected.items():
        assert cases[kernel]["message"].startswith("broken spec: "), cases[kernel]["message"]
        assert words in cases[kernel]["message"], cases[kernel]["message"]
        assert f"BROKEN SPEC {kernel}[fp32]" in run.output


@pytest.mark.parametrize("module, words", [
    ("import_error.py", ["bad_modules/import_error.py", "ModuleNotFoundError", "kernels.no_such_helper",
                         "import_error.py:3"]),
    ("duplicate_name.py", ["bad_modules/duplicate_name.py", "'softmax' is already registered by kernels/softmax.py"]),
    ("bad_spec.py", ["bad_modules/bad_spec.py", "kernel spec 'my_add'", "field 'dtypes'", "write ('fp32',)"]),
    ("no_outputs.py", ["bad_modules/no_outputs.py", "field 'outputs'", "is empty"]),
])
def test_a_broken_kernel_module_is_a_usage_error_naming_it(run_suite, module, words):
    run = run_suite("suite/test_kernels.py", f"--kernel-module=tests/fixtures/bad_modules/{module}", "-k", "fp32")
    assert run.returncode == 4, run.output[-3000:]
    no_internal_error(run)
    for word in words:
        assert word in run.output, run.output[-3000:]
    assert not run.run_files()


def test_poison_left_in_an_output_fails_even_where_the_reference_is_nan(run_suite):
    """A kernel that writes nothing passes against a NaN reference unless the poison itself is recognised: the
    special value class puts NaN in the reference, and the planted no-write kernel must still fail."""
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/planted_bugs.py",
                    "--kernels=planted_vector_add_skips_nan_lanes")
    assert run.returncode == 1, run.output[-3000:]
    failed = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    assert failed and "never written" in failed[0]["message"], failed


# --- options ----------------------------------------------------------------------------------------------------

DEFAULTS = {"--backend": "auto", "--results-dir": "runs", "--no-results": False, "--repro": None, "--repro-runs": None,
            "--config": None, "--kernel-module": [], "--kernels": None, "--known-issues": "suite/known_issues.json",
            "--retune": None, "--retune-check": None, "--autotune-dir": None, "--case-timeout": None, "--hypothesis-db": None,
            "--memcheck": False, "--no-memcheck": False, "--compile-targets": None, "--shard": None, "--run-id": None,
            "--export-failures": None, "--numerics": None}


def read_options(monkeypatch, controller=False, **given):
    """suite.session.options.read on a stand-in config holding these option values (no subprocess: fast)."""
    from types import SimpleNamespace

    from suite.session import options

    values = {**DEFAULTS, **{"--" + k.replace("_", "-"): v for k, v in given.items()}}
    config = SimpleNamespace(getoption=values.__getitem__, option=SimpleNamespace(collectonly=False))
    monkeypatch.delenv("SUITE_CASE_TIMEOUT", raising=False)
    monkeypatch.delenv("SUITE_INTERMITTENT_RUNS", raising=False)
    return options.read(config, controller=controller)


@pytest.mark.parametrize("given, words", [
    ({"case_timeout": "-1"}, ["--case-timeout=-1", "finite number of seconds >= 0"]),
    ({"case_timeout": "nan"}, ["--case-timeout=nan", "finite"]),
    ({"case_timeout": "inf"}, ["--case-timeout=inf", "finite"]),
    ({"case_timeout": "soon"}, ["--case-timeout=soon", "not a number"]),
    ({"kernels": ""}, ["--kernels=", "empty value"]),
    ({"kernels": "softmax,"}, ["--kernels=softmax,", "empty name"]),
    ({"kernel_module": [""]}, ["--kernel-module=", "empty value"]),
    ({"results_dir": " "}, ["--results-dir=", "empty value"]),
    ({"repro": ""}, ["--repro=", "empty value"]),
    ({"repro": "N=7;colour=red"}, ["unknown field(s) ['colour']"]),
    ({"repro": "N=seven"}, ["dimension N='seven' is not an integer"]),
    ({"repro": "N=7;seed=x"}, ["seed='x' is not an integer"]),
    ({"repro": "N=-3"}, ["N=-3 is negative"]),
    ({"repro": "N=3,N=4"}, ["'N' is given twice"]),
    ({"config": "{BLOCK"}, ["--config={BLOCK", "not JSON"]),
    ({"config": "[1]"}, ["non-empty JSON object"]),
    ({"autotune_dir": "no/such/dir"}, ["--autotune-dir=no/such/dir", "no such directory"]),
    ({"retune": ""}, ["--retune=", "empty value"]),
    ({"known_issues": ""}, ["--known-issues=", "empty value"]),
    ({"compile_targets": "some"}, ["SUITE_COMPILE_TARGETS=some", "all, own"]),
    ({"repro": "N=7", "repro_runs": "0"}, ["--repro-runs=0", "whole number from 1 to 10000"]),
    ({"repro": "N=7", "repro_runs": "many"}, ["--repro-runs=many", "whole number from 1 to 10000"]),
    ({"repro_runs": "5"}, ["--repro-runs=5", "needs --repro"]),
])
def test_bad_option_values_are_refused(monkeypatch, given, words):
    with pytest.raises(pytest.UsageError) as err:
        read_options(monkeypatch, **given)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_good_option_values_are_read(monkeypatch):
    opts = read_options(monkeypatch, case_timeout="0", kernels="soft*, matmul", config='{"BLOCK_SIZE": 64}',
                        repro="N=7;seed=3")
    assert (opts.case_timeout, opts.case_timeout_given) == (0.0, True)
    assert opts.selects("softmax_online") and opts.selects("matmul") and not opts.selects("vector_add")
    assert opts.config == {"BLOCK_SIZE": 64}
    assert opts.repro_runs == 1
    assert read_options(monkeypatch, repro="N=7;seed=3", repro_runs="40").repro_runs == 40


def test_a_bad_intermittent_run_count_is_refused(monkeypatch):
    monkeypatch.setenv("SUITE_INTERMITTENT_RUNS", "0")
    from types import SimpleNamespace

    from suite.session import options

    config = SimpleNamespace(getoption=DEFAULTS.__getitem__, option=SimpleNamespace(collectonly=False))
    with pytest.raises(pytest.UsageError, match="SUITE_INTERMITTENT_RUNS=0: must be a whole number from 1 to 1000"):
        options.read(config, controller=False)


@pytest.mark.parametrize("value", ["abc", "-1", "nan"])
def test_a_bad_drain_wait_is_refused(monkeypatch, value):
    monkeypatch.setenv("SUITE_DRAIN_WAIT_S", value)
    from types import SimpleNamespace

    from suite.session import options

    config = SimpleNamespace(getoption=DEFAULTS.__getitem__, option=SimpleNamespace(collectonly=False))
    with pytest.raises(pytest.UsageError, match=f"SUITE_DRAIN_WAIT_S={value}: must be a finite number of seconds"):
        options.read(config, controller=False)


@pytest.mark.parametrize("args, words", [
    (["--case-timeout=-1"], ["--case-timeout=-1", "finite number of seconds >= 0"]),
    (["--kernels=sofmax"], ["'sofmax' matches no registered kernel", "softmax"]),
    (["--config={\"BLOCK_M\": 32}"], ["kernel 'vector_add' has no parameter(s) ['BLOCK_M']"]),
    (["--retune=sofmax"], ["no kernel named 'sofmax'"]),
    # JSON's reader takes these; the run then ended in an internal error with an incomplete run file
    (["--config={\"BLOCK_SIZE\": NaN}"], ["--config=", "['BLOCK_SIZE'] are not finite numbers"]),
    (["--config={\"BLOCK_SIZE\": 1e400}"], ["['BLOCK_SIZE'] are not finite numbers"]),
    # a module that registered nothing left the shipped kernels to run and pass
    (["--kernel-module=tests/fixtures/registers_nothing.py"], ["registers_nothing.py: the module registered no "
                                                               "kernel"]),
    (["--kernel-module=tests.fixtures.registers_nothing"], ["tests.fixtures.registers_nothing: the module "
                                                            "registered no kernel"]),
])
def test_bad_option_values_are_usage_errors(run_suite, args, words):
    """End to end: exit 4, one clear line, no traceback, no run file."""
    run = run_suite("suite/test_kernels.py", "-k", "vector_add-fp32", *args)
    assert run.returncode == 4, run.output[-3000:]
    no_internal_error(run)
    for word in words:
        assert word in run.output, run.output[-3000:]
    assert not run.run_files()


def test_bad_environment_timeout_is_a_usage_error(run_suite):
    run = run_suite("suite/test_kernels.py", "-k", "vector_add-fp32", env={"SUITE_CASE_TIMEOUT": "forever"})
    assert run.returncode == 4 and "SUITE_CASE_TIMEOUT=forever" in run.output, run.output[-3000:]


def test_a_repro_of_another_kernel_is_refused_before_it_runs(run_suite):
    run = run_suite("suite/test_kernels.py::test_matches_reference[softmax-fp32]", "--repro=N=7;seed=1")
    assert run.returncode == 4, run.output[-3000:]
    assert "not a case of kernel 'softmax'" in run.output and "missing ['M']" in run.output


def test_unwritable_results_and_bad_database_paths_are_found_at_the_start(monkeypatch, tmp_path):
    a_file = tmp_path / "plain-file"
    a_file.write_text("x")
    for given, words in (({"results_dir": str(a_file / "runs")}, ["--results-dir", "cannot write there"]),
                         ({"results_dir": str(a_file)}, ["exists and is not a directory"]),
                         ({"hypothesis_db": str(a_file)}, ["--hypothesis-db", "is not a directory"]),
                         ({"autotune_dir": str(a_file)}, ["--autotune-dir", "is not a directory"])):
        with pytest.raises(pytest.UsageError) as err:
            read_options(monkeypatch, controller=True, **{"results_dir": str(tmp_path / "runs"), **given})
        for word in words:
            assert word in str(err.value), (given, str(err.value))


# --- known issues -----------------------------------------------------------------------------------------------

ENTRY = {"id": "x", "backend": "interpret", "arch": "*", "triton": ">=3.0", "kernel": "matmul", "dtype": "bf16",
         "reason": "r", "link": "https://example.invalid/1",
         "failure_pattern": "NaN where the reference is not"}


@pytest.mark.parametrize("change, words", [
    ({"kernel": "sofmax"}, ["'sofmax' matches no registered kernel"]),
    ({"dtype": "float32"}, ["'float32' matches no dtype"]),
    ({"triton": "three"}, ["not a version specifier", ">=3.0,<4"]),
    ({"backend": "metal"}, ["'metal' matches none of interpret, cuda, rocm"]),
])
def test_known_issue_mistakes_name_the_entry(tmp_path, change, words):
    from kernels.spec import DTYPES
    from suite.session import known_issues

    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_issues": [{**ENTRY, **change}]}))
    with pytest.raises(known_issues.KnownIssueError) as err:
        known_issues.check_kernels(known_issues.load(path), ["matmul", "softmax"], list(DTYPES), path)
    for word in [str(path), "known_issues[0]", *words]:
        assert word in str(err.value), str(err.value)


def test_known_issue_mistakes_are_usage_errors(run_suite, tmp_path):
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known_issues": [ENTRY, ENTRY]}))
    run = run_suite("suite/test_kernels.py", "-k", "vector_add-fp32", f"--known-issues={path}")
    assert run.returncode == 4 and "duplicate id 'x' (also known_issues[0])" in run.output, run.output[-3000:]


# --- reproduction lines -----------------------------------------------------------------------------------------

def test_reproduction_lines_carry_every_option_that_changes_the_case(run_suite, tmp_path):
    cache_dir = tmp_path / "autotune"
    cache_dir.mkdir()
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/planted_bugs.py",
                    "--kernels=planted_vector_add_dropped_mask", f"--autotune-dir={cache_dir}", "--case-timeout=77",
                    '--config={"BLOCK_SIZE": 64}')
    assert run.returncode == 1, run.output[-3000:]
    [case] = [c for c in run.run_data()["cases"] if c["outcome"] == "failed"]
    argv = shlex.split(case["repro"])
    for word in (f"--autotune-dir={cache_dir}", "--case-timeout=77", "--kernel-module=tests/fixtures/planted_bugs.py",
                 '--config={"BLOCK_SIZE":64}'):
        assert word in argv, argv
    proc = run_python(*argv, "-p", "no:cacheprovider", "--no-results", timeout=300,
                      env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout[-3000:]


# --- nothing lost -----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_single_process_timeout_says_why_it_ended(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/faulting_kernels.py", "--kernels=zz_hang",
                    "-k", "fp32", "--case-timeout=5")
    assert run.returncode == 76, run.output[-3000:]
    assert "ran longer than --case-timeout=5 s" in run.output and "exit code 76" in run.output
    assert run.run_data()["status"] == "incomplete"


def test_run_files_are_readable_by_others_and_claimed_exclusively(tmp_path):
    env = {"backend": "interpret"}
    first = results.RunFile(tmp_path, "same-id-000000", env, ["pytest"])
    second = results.RunFile(tmp_path, "same-id-000000", env, ["pytest"])  # both made before either wrote
    first.start()
    second.start()
    assert first.path != second.path and first.path.exists() and second.path.exists()
    assert json.loads(first.path.read_text())["run_id"] == "same-id-000000"
    assert json.loads(second.path.read_text())["run_id"] != "same-id-000000"
    mask = os.umask(0)
    os.umask(mask)
    assert first.path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_no_temporary_files_are_left_behind(run_suite, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = run_suite("suite/test_kernels.py", "-n", "1", "-p", "xdist", "-k", "vector_add-fp32",
                    "--basetemp", str(tmp_path / "basetemp"), env={"TMPDIR": str(scratch)})
    assert run.returncode == 0, run.output[-3000:]
    assert list(scratch.iterdir()) == []


def _ctrl_c_as_in_a_terminal() -> None:
    """The child takes SIGINT as a shell's child does, whatever this process inherited: an xdist worker of a full
    `pytest tests -n auto` run had SIGINT ignored, its children inherited that, and the Ctrl-C never arrived."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_leaves_an_interrupted_run_with_what_finished(tmp_path):
    """SIGINT while the second test runs: the first test's record stays and the status says 'interrupted'."""
    runs = tmp_path / "runs"
    # On the interpreter wherever it runs: on a GPU zz_hang spins in a kernel, where no Ctrl-C reaches Python.
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--results-dir={runs}", "suite/test_kernels.py",
           "--backend=interpret", "--kernel-module=tests/fixtures/faulting_kernels.py", "--kernels=vector_add,zz_hang",
           "-k", "fp32", "--case-timeout=60"]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_ctrl_c_as_in_a_terminal)
    deadline = time.time() + 120
    while time.time() < deadline:  # the file appears after the first (vector_add) test reported
        files = list(runs.glob("run-*.json"))
        if files and files[0].stat().st_size and json.loads(files[0].read_text())["tests"]:  # empty: name claimed
            break
        time.sleep(0.5)
    time.sleep(2)  # zz_hang is spinning now
    # Ctrl-C until the run ends: on a loaded machine (two CI runs at once) one and then two SIGINTs were seen to be
    # lost, and the case's 60 s watchdog ended the run first. Pressed every 14 s, four times within that minute.
    output = None
    for _ in range(4):
        proc.send_signal(signal.SIGINT)
        try:
            output, _ = proc.communicate(timeout=14)
            break
        except subprocess.TimeoutExpired:
            continue
    if output is None:
        output, _ = proc.communicate(timeout=120)
    [path] = runs.glob("run-*.json")
    data = json.loads(path.read_text())
    assert data["status"] == "interrupted", output[-3000:]
    assert [t["outcome"] for t in data["tests"]] == ["passed"]
    assert data["tests"][0]["nodeid"].endswith("[vector_add-fp32]")
    # The test it stopped is named, with how long it had run: a nightly stopped by its time limit says what it
    # could not finish (and the durations command takes that as a lower bound).
    [left] = data["unfinished"]
    assert left["nodeid"].endswith("[zz_hang-fp32]") and left["running_s"] >= 2, left
    assert "stopped while running 1 test(s): suite/test_kernels.py::test_matches_reference[zz_hang-fp32]" in output


def test_ctrl_c_inside_the_controller_loop_ends_as_an_interrupted_run_not_an_internal_error(tmp_path):
    """A time limit's SIGINT on an H100 landed inside pytest-xdist's controller loop: INTERNALERROR ("release unlocked
    lock" while handling the KeyboardInterrupt), no summary, no verdict, and a run file left "incomplete". Played by a
    plugin: the run ends interrupted, with what finished, its summary and verdict, and exit status 2."""
    runs = tmp_path / "runs"
    proc = run_python("pytest", "-p", "no:cacheprovider", "-p", "tests.fixtures.ctrl_c_in_controller",
                      f"--results-dir={runs}", "suite/test_kernels.py", "--kernels=vector_add,row_sum", "-k", "fp32",
                      timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-3000:]
    assert "INTERNALERROR" not in output and "VERDICT: INTERRUPTED: the run did not finish" in output, output[-3000:]
    [path] = runs.glob("run-*.json")
    data = json.loads(path.read_text())
    assert data["status"] == "interrupted", data["status"]
    assert [t["outcome"] for t in data["tests"]] == ["passed"]

