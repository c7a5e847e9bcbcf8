"""Where PYTHONDONTWRITEBYTECODE is set, the harness's runs write bytecode, and the ``__pycache__`` directories the
harness run created in the checkout are removed at its end (tests/conftest.py, _share_bytecode)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import conftest as harness


class _Config:
    def __init__(self) -> None:
        self.cleanups = []

    def add_cleanup(self, func) -> None:
        self.cleanups.append(func)


@pytest.mark.skipif(bool(os.environ.get("PYTHONPYCACHEPREFIX")), reason="bytecode goes to PYTHONPYCACHEPREFIX here")
def test_runs_write_bytecode_and_the_directories_they_created_are_removed(tmp_path, monkeypatch):
    (tmp_path / "kept" / "__pycache__").mkdir(parents=True)  # there before the run: stays
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    monkeypatch.setattr(harness, "ROOT", tmp_path)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    config = _Config()
    harness._share_bytecode(config)
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ
    # A process the harness starts from now on writes the bytecode of what it imports.
    subprocess.run([sys.executable, "-c", "import pkg.mod"], cwd=tmp_path, check=True, env=dict(os.environ))
    assert list((tmp_path / "pkg" / "__pycache__").glob("mod.*.pyc"))
    (tmp_path / ".venv" / "lib" / "__pycache__").mkdir(parents=True)  # a virtual environment's: not the tree's
    assert len(config.cleanups) == 1
    config.cleanups[0]()
    assert not (tmp_path / "pkg" / "__pycache__").exists()
    assert (tmp_path / "kept" / "__pycache__").is_dir()
    assert (tmp_path / ".venv" / "lib" / "__pycache__").is_dir()


def test_without_the_variable_nothing_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "ROOT", tmp_path)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    config = _Config()
    harness._share_bytecode(config)
    assert config.cleanups == [] and "PYTHONDONTWRITEBYTECODE" not in os.environ


def test_a_harness_run_gives_its_runs_bytecode(tmp_path):
    """The harness's configure step does it: a test run under tests/conftest.py no longer sees the variable."""
    probe = tmp_path / "test_probe.py"
    probe.write_text("import os\n\n\ndef test_probe():\n    assert 'PYTHONDONTWRITEBYTECODE' not in os.environ\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest", "-q",
                           str(probe)], cwd=harness.ROOT, env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
