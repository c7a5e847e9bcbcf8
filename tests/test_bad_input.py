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
