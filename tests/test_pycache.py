"""suite/pycache.py: where the environment writes no bytecode, the suite's processes cache it in their own
directory, never next to the sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import sys
sys.path[:0] = [{root!r}, {src!r}]
from suite import pycache
print("enabled", pycache.enable())
import probe_module
print("cached", probe_module.__cached__)
"""


def _run(tmp_path: Path, **env: str) -> str:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "probe_module.py").write_text("VALUE = 1\n")
    base = {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPYCACHEPREFIX", "SUITE_PYCACHE", "PYTHONDONTWRITEBYTECODE")}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(root=str(ROOT), src=str(src))], capture_output=True,
                          text=True, env={**base, **env}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bytecode_goes_to_the_suites_cache_when_the_environment_writes_none(tmp_path):
    cache = tmp_path / "pyc"
    out = _run(tmp_path, PYTHONDONTWRITEBYTECODE="1", SUITE_PYCACHE=str(cache))
    assert f"enabled {cache}" in out
    written = list(cache.rglob("probe_module*.pyc"))
    assert len(written) == 1 and not (tmp_path / "src" / "__pycache__").exists()
    assert f"cached {written[0]}" in out  # the next process reads it from there


def test_the_environments_choice_is_kept_when_asked_or_when_it_writes_bytecode(tmp_path):
    cache = tmp_path / "pyc"
    assert "enabled None" in _run(tmp_path, PYTHONDONTWRITEBYTECODE="1", SUITE_PYCACHE="0")
    assert not cache.exists() and not (tmp_path / "src" / "__pycache__").exists()
    assert "enabled None" in _run(tmp_path, SUITE_PYCACHE=str(cache))  # Python writes __pycache__ itself
    assert not cache.exists()
