"""suite/workers/bytecode.py: where the environment turns bytecode off, an xdist run's workers keep theirs in the
suite's own cache directory (PYTHONPYCACHEPREFIX), and the controller's environment is put back when the run ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from suite.session import stash
from suite.workers import bytecode
from tests.conftest import ROOT, _pycache_dirs


def test_the_cache_directory_only_where_bytecode_is_off(tmp_path) -> None:
    home = {"XDG_CACHE_HOME": str(tmp_path)}
    assert bytecode.cache_dir({**home}) is None  # bytecode on: Python writes it where it always does
    assert bytecode.cache_dir({**home, "PYTHONDONTWRITEBYTECODE": "1"}) == tmp_path / "triton-portability" / "bytecode"
    assert bytecode.cache_dir({**home, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/x"}) is None  # the caller's
    assert bytecode.cache_dir({"PYTHONDONTWRITEBYTECODE": "1", bytecode.DIR_ENV: " "}) is None  # set empty: off
    assert bytecode.cache_dir({"PYTHONDONTWRITEBYTECODE": "1", bytecode.DIR_ENV: str(tmp_path / "b")}) == tmp_path / "b"
    assert bytecode.cache_dir({"PYTHONDONTWRITEBYTECODE": "1", bytecode.DIR_ENV: "b"}) == Path.cwd() / "b"  # absolute


def test_the_controller_sets_it_for_its_workers_and_puts_its_environment_back(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setenv(bytecode.DIR_ENV, str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    config = SimpleNamespace(stash=pytest.Stash())
    bytecode.share_with_workers(config)
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ and os.environ["PYTHONPYCACHEPREFIX"] == str(tmp_path)
    assert sys.dont_write_bytecode is False and sys.pycache_prefix == str(tmp_path)  # the controller's own imports
    bytecode.share_with_workers(config)  # twice: the first environment is the one kept
    bytecode.restore(config)
    assert os.environ["PYTHONDONTWRITEBYTECODE"] == "1" and "PYTHONPYCACHEPREFIX" not in os.environ
    assert sys.dont_write_bytecode is True and sys.pycache_prefix is None
    assert stash.SAVED_ENV not in config.stash
    bytecode.restore(config)  # nothing to put back
    assert os.environ["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.slow
def test_an_xdist_runs_workers_write_their_bytecode_to_the_cache(tmp_path) -> None:
    """A suite run with one xdist worker where PYTHONDONTWRITEBYTECODE is set: the workers wrote the suite's modules' bytecode
    (and pytest's rewritten test modules) under SUITE_BYTECODE_DIR, and nothing into the checkout."""
    cache = tmp_path / "bytecode"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "TRITON_INTERPRET")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **{bytecode.DIR_ENV: str(cache)})
    # The checkout's own, outside virtual environments: .ci/run installs without bytecode (pip --no-compile), and
    # a module another test imports first meanwhile writes its bytecode into .venv.
    before = _pycache_dirs()
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--backend=interpret", "-n", "1",
                          "--kernels=vector_add", "--no-results", "-q", "-k", "test_portability_lints"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    mirrored = cache / Path(*ROOT.parts[1:])
    assert list((mirrored / "suite" / "checks").glob("harness.*.pyc")), sorted(cache.rglob("*.pyc"))[:5]
    assert list((mirrored / "suite").glob("test_compile_matrix.*-pytest-*.pyc"))  # pytest's rewritten test module
    assert _pycache_dirs() == before

