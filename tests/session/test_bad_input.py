"""Bad values that a run would otherwise act on until it is killed, stop with an INTERNALERROR, or silently ignore:
each is one usage error (exit 4) naming the option or variable, the value and what would be right. And an installed
copy started from a directory that holds a ``kernels/`` package or a ``reports.py`` runs the suite's own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import suite.__main__ as suite_main
from suite.session import options


def test_a_shard_count_past_any_runner_count_is_refused():
    with pytest.raises(pytest.UsageError, match=r"--shard=1/99999999999999999999: the number of parts N must be at "
                                                r"most 4096"):
        options.parse_shard("1/99999999999999999999")
    assert options.parse_shard(f"2/{options.MOST_SHARDS}") == (2, options.MOST_SHARDS)


def test_a_repeat_count_past_any_use_is_refused(monkeypatch):
    with pytest.raises(pytest.UsageError, match=r"--repro-runs=100000000000000000000: must be a whole number from 1 "
                                                r"to 10000"):
        options._count("--repro-runs", "100000000000000000000", 1, "how many times", options.MOST_REPRO_RUNS)
    monkeypatch.setenv("SUITE_INTERMITTENT_RUNS", "1" + "0" * 20)
    with pytest.raises(pytest.UsageError, match=r"SUITE_INTERMITTENT_RUNS=.*from 1 to 1000"):
        options.intermittent_runs()
    monkeypatch.setenv("SUITE_INTERMITTENT_RUNS", "7")
    assert options.intermittent_runs() == 7


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--hypothesis-profile=CI"], {},
     "--hypothesis-profile=CI: no such profile: the suite's are ci, default, dev, nightly, validation; did you mean ci?"),
    (["--repro-runs=100000000000000000000"], {}, "--repro-runs=100000000000000000000: must be a whole number from 1"),
    ([], {"SUITE_AUTOTUNE_DIR": "/no/such/autotune-dir"},
     "SUITE_AUTOTUNE_DIR=/no/such/autotune-dir: no such directory (a typo would silently run every kernel"),
])
def test_a_bad_value_is_one_usage_error(run_suite, args, env, message):
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-n", "0", *args, env=env)
    assert res.returncode == 4, res.output[-3000:]
    assert "INTERNALERROR" not in res.output and message in res.output, res.output[-3000:]
    assert not res.run_files()


def test_the_current_directory_goes_behind_the_suites_own_and_every_installed_package(monkeypatch, tmp_path):
    """An installed console script's sys.path: the suite's home first (``import triton_portability`` put it there),
    then the script's directory. The current directory, added for a dotted --kernel-module, goes last: in front of
    the home, its ``kernels/`` package shadowed the suite's and the run stopped at its first import (exit 3); in front
    of site-packages, its ``triton.py`` or ``numpy.py`` was imported for Triton or numpy (an INTERNALERROR, issue 61
    item 21). ``python -m`` put it ('' or its path) first: it goes last too."""
    home = str(suite_main.SUITE_DIR.parent)
    monkeypatch.setattr(sys, "path", [home, "/venv/bin", "/venv/lib/site-packages"])
    suite_main.on_import_path(str(tmp_path))
    assert sys.path == [home, "/venv/bin", "/venv/lib/site-packages", str(tmp_path)]
    # A checkout's `python -m suite` has the current directory first, and it is the suite's home: left there.
    monkeypatch.setattr(sys, "path", [home, "/venv/lib/site-packages"])
    suite_main.on_import_path(home)
    assert sys.path == [home, "/venv/lib/site-packages"]
    # `python -m triton_portability` elsewhere: '' (or the directory's path) behind the home, then last.
    for first in ("", str(tmp_path)):
        monkeypatch.setattr(sys, "path", [home, first, "/venv/lib/site-packages"])
        suite_main.on_import_path(str(tmp_path))
        assert sys.path == [home, "/venv/lib/site-packages", str(tmp_path)], first


@pytest.mark.parametrize("shadow", ["triton", "numpy", "pytest", "json"])
def test_a_triton_py_or_numpy_py_in_the_current_directory_is_not_imported_for_the_real_one(tmp_path, shadow):
    """Issue 61, item 21: `python -m triton_portability` (and the `triton-portability` command) in a directory holding
    a triton.py or a numpy.py imported it for Triton or numpy: an INTERNALERROR. The run, its workers too, imports
    the installed ones; and `python -m`, which puts the directory first before the suite runs, no pytest.py or
    json.py of it either (with -n 0: a worker of pytest-xdist imports pytest and json in its own start-up, from the
    directory it starts in, before the suite runs there)."""
    (tmp_path / f"{shadow}.py").write_text(f'raise ImportError("the {shadow}.py of the current directory")\n')
    env = {**os.environ, "PYTHONPATH": str(suite_main.SUITE_DIR.parent)}
    env.pop("TRITON_INTERPRET", None)
    workers = "2" if shadow in ("triton", "numpy") else "0"
    run = subprocess.run([sys.executable, "-m", "triton_portability", "--kernels=vector_add", "-k", "fp32 and reference",
                          "--no-results", "-n", workers, "-p", "no:cacheprovider"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "INTERNALERROR" not in output, output[-3000:]
    assert f"the {shadow}.py of the current directory" not in output, output[-3000:]


# --- issue 61, item 23 ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", ["١/٢", " 1/2", "1/2 ", "1/2\n", "+1/2", "1 / 2", "1/２", "1/2/3", "0x1/2"])
def test_a_shard_written_otherwise_than_ascii_digits_i_slash_n_is_refused(raw):
    """'١/٢' (Arabic-Indic digits) and ' 1/2' were taken as 1/2: a shard is written I/N in ASCII digits, as a CI matrix
    writes it, and nothing else."""
    with pytest.raises(pytest.UsageError, match=r"(?s)^--shard=.*: not I/N"):
        options.parse_shard(raw)
    assert options.parse_shard("1/2") == (1, 2)


def test_an_export_directory_that_cannot_be_made_is_refused_before_any_test(run_suite, tmp_path):
    """An --export-failures directory that cannot be made was warned about once per failing case, at the end of each
    test: now a usage error before any test runs."""
    (tmp_path / "a-file").write_text("")
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32 and reference", "-n", "0",
                    f"--export-failures={tmp_path / 'a-file' / 'exports'}")
    assert res.returncode == 4, res.output[-3000:]
    assert (f"--export-failures={tmp_path / 'a-file' / 'exports'}: cannot make the directory there: "
            in res.output), res.output[-3000:]
    assert not res.run_files()


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_keyword_that_selects_no_test_is_a_usage_error(run_suite, workers):
    """-k matching nothing ended with pytest's exit 5, no verdict and no run file: a usage error naming -k."""
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "vector_ad and fp33", "-n", workers)
    assert res.returncode == 4, res.output[-3000:]
    assert ("-k=vector_ad and fp33: selects none of the tests --kernels=vector_add leaves (nor of those -m leaves); "
            "-k matches words of a test's id") in res.output, res.output[-3000:]
    assert "INTERNALERROR" not in res.output and not res.run_files(), res.output[-3000:]


def test_durations_from_a_device_are_named_and_not_read(tmp_path):
    """SUITE_TEST_COSTS=/dev/zero was read until the process was killed for memory (or an INTERNALERROR): a file of
    test durations is a regular file, and no larger than any the suite writes."""
    code = ("from suite.workers import schedule; print(schedule.read()[2])")
    env = {**os.environ, "SUITE_TEST_COSTS": "/dev/zero", "PYTHONPATH": str(suite_main.SUITE_DIR.parent)}

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))

    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         preexec_fn=limit)
    assert run.returncode == 0, run.stderr[-2000:]
    assert ("test durations SUITE_TEST_COSTS=/dev/zero: it is a device, not a file; not used (collection order, no "
            "test split)") in run.stdout, run.stdout


@pytest.mark.parametrize(("config", "problem"), [
    ('{"BLOCK_SIZE": true}', "BLOCK_SIZE is true; kernel 'vector_add' gives it whole numbers"),
    ('{"BLOCK_SIZE": 1.5}', "BLOCK_SIZE is 1.5; kernel 'vector_add' gives it whole numbers"),
    ('{"BLOCK_SIZE": 0}', "BLOCK_SIZE is 0; every config of kernel 'vector_add' gives it a power of two"),
    ('{"BLOCK_SIZE": 100}', "BLOCK_SIZE is 100; every config of kernel 'vector_add' gives it a power of two"),
    ('{"BLOCK_SIZE": "64"}', "BLOCK_SIZE is \"64\"; kernel 'vector_add' gives it whole numbers"),
    ('{"BLOCK_SIZE": 1099511627776}', "BLOCK_SIZE is 1099511627776; every config of kernel 'vector_add' gives it a "
                                      "power of two"),  # past Triton's largest block
    ('{"num_warps": 3}', "num_warps is 3; a launch's num_warps is a power of two from 1 to 32"),
    ('{"num_warps": 0}', "num_warps is 0; a launch's num_warps is a power of two from 1 to 32"),
    ('{"num_stages": -1}', "num_stages is -1; a launch's num_stages is a whole number from 0"),
])
def test_a_config_value_no_config_of_the_kernel_could_hold_is_refused(config, problem):
    """--config values true, 1.5, 0 and a num_warps of 3 were taken and failed the kernel's test (or passed it, a
    boolean being 1): each is a usage error naming the key, the value and what the kernel's configs hold."""
    from kernels.vector_add import SPEC

    assert problem in (options.config_problem(SPEC, options.parse_config(config)) or ""), config
    assert options.config_problem(SPEC, options.parse_config('{"BLOCK_SIZE": 256, "num_warps": 8}')) is None


def test_a_config_key_given_twice_is_refused():
    with pytest.raises(pytest.UsageError, match=r"--config=.*: 'BLOCK_SIZE' is given twice \(64, then 128\)"):
        options.parse_config('{"BLOCK_SIZE": 64, "BLOCK_SIZE": 128}')


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_bad_config_is_a_usage_error_not_the_kernels_failure(run_suite, workers):
    """Under xdist the workers collect: a --config no kernel of the run could take failed each kernel's test."""
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32 and reference", "-n", workers,
                    '--config={"BLOCK_SIZE": 0}')
    assert res.returncode == 4, res.output[-3000:]
    assert ('--config={"BLOCK_SIZE": 0}: BLOCK_SIZE is 0; every config of kernel \'vector_add\' gives it a power of two'
            in res.output), res.output[-3000:]
    assert not res.run_files()


def test_a_kernel_module_or_an_autotune_cache_that_is_a_named_pipe_is_named(tmp_path):
    """Found trying other files than the durations: a --kernel-module that is a FIFO was 'no such file; did you mean'
    itself, and an autotune cache that is one hung the run."""
    from suite.session import kernel_names

    os.mkfifo(tmp_path / "mod.py")
    with pytest.raises(pytest.UsageError, match=r"mod.py: it is a FIFO \(named pipe\), not a file of Python source"):
        kernel_names.locate(str(tmp_path / "mod.py"))
    os.mkfifo(tmp_path / "interpreter.json")
    code = ("from pathlib import Path; from suite.checks import autotune\n"
            f"print(autotune.load(Path({str(tmp_path / 'interpreter.json')!r}), 'interpreter').error)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(suite_main.SUITE_DIR.parent)})
    assert "interpreter.json: not an autotune cache: it is a FIFO (named pipe), not a file" in run.stdout, \
        run.stdout + run.stderr[-2000:]
