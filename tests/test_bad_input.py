"""Bad values that a run would otherwise act on until it is killed, stop with an INTERNALERROR, or silently ignore:
each is one usage error (exit 4) naming the option or variable, the value and what would be right. And an installed
copy started from a directory that holds a ``kernels/`` package or a ``reports.py`` runs the suite's own."""

from __future__ import annotations

import os
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


def test_the_current_directory_goes_behind_the_suites_own(monkeypatch, tmp_path):
    """An installed console script's sys.path: the suite's home first (``import triton_portability`` put it there),
    then the script's directory. The current directory, added for a dotted --kernel-module, goes behind the home:
    in front, its ``kernels/`` package shadowed the suite's and the run stopped at its first import (exit 3)."""
    home = str(suite_main.SUITE_DIR.parent)
    monkeypatch.setattr(sys, "path", [home, "/venv/bin", "/venv/lib/site-packages"])
    suite_main.on_import_path(str(tmp_path))
    assert sys.path == [home, str(tmp_path), "/venv/bin", "/venv/lib/site-packages"]
    # A checkout's `python -m suite` has the current directory first already: nothing added.
    monkeypatch.setattr(sys, "path", [os.getcwd(), home])
    suite_main.on_import_path(os.getcwd())
    assert sys.path == [os.getcwd(), home]
    # Any other first entry: the current directory goes first, as `python -m` has it.
    monkeypatch.setattr(sys, "path", ["/venv/bin", "/venv/lib/site-packages"])
    suite_main.on_import_path(str(tmp_path))
    assert sys.path[0] == str(tmp_path)
