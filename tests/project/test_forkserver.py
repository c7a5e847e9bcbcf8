"""The harness's fork server (tests/forkserver.py): a forked run is what a fresh ``python -m`` gives (exit status,
stdout and stderr apart, working directory, environment, argv, sys.path[0]), a run past its timeout is killed and
raises as subprocess.run does, and a run whose environment the server cannot give starts a fresh process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import forkserver

PROBE = """import json, os, sys, time
if sys.argv[1:2] == ["sleep"]:
    time.sleep(60)
print(json.dumps({"cwd": os.getcwd(), "argv": sys.argv[1:], "path0": sys.path[0], "x": os.environ.get("SUITE_PROBE"),
                  "torch_before": "torch" in sys.modules}))
print("to stderr", file=sys.stderr)
sys.exit(3)
"""


@pytest.fixture
def probe_dir(tmp_path):
    """A directory holding the probe module; the server has served a run in another one first (it starts in the
    directory of its first run: a child that did not change directory would pass unseen)."""
    for name in ("first", "probe"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "fs_probe.py").write_text(PROBE)
    forkserver.run_python_module("fs_probe", [], tmp_path / "first", _env(), timeout=60)
    return tmp_path / "probe"


def _env(**extra: str) -> dict[str, str]:
    return {**forkserver.child_env(), **extra}


def test_a_forked_run_is_what_a_fresh_process_gives(probe_dir):
    env = _env(SUITE_PROBE="forked")
    assert forkserver.SERVER.fits(env)
    forked = forkserver.run_python_module("fs_probe", ["a", "b c"], probe_dir, env, timeout=60)
    fresh = subprocess.run([sys.executable, "-m", "fs_probe", "a", "b c"], cwd=probe_dir, env=env, capture_output=True,
                           text=True, timeout=60)
    assert forked.returncode == fresh.returncode == 3
    assert forked.stderr == fresh.stderr == "to stderr\n"
    assert forked.stdout.replace('"torch_before": true', '"torch_before": false') == fresh.stdout, (forked, fresh)
    assert '"torch_before": true' in forked.stdout  # it was forked: torch came with the server
    assert forked.args == [sys.executable, "-m", "fs_probe", "a", "b c"]



def test_a_forked_script_is_what_python_script_gives(probe_dir):
    """``python fs_probe.py ARGS`` (repro.py's reruns): the script's folder first on the path, the same exit status,
    streams, working directory and argv as a fresh process; sys.argv[0] names the script."""
    env = _env(SUITE_PROBE="script")
    forked = forkserver.run_python_script("fs_probe.py", ["a", "b c"], probe_dir, env, timeout=60)
    fresh = subprocess.run([sys.executable, "fs_probe.py", "a", "b c"], cwd=probe_dir, env=env, capture_output=True,
                           text=True, timeout=60)
    assert forked.returncode == fresh.returncode == 3
    assert forked.stderr == fresh.stderr == "to stderr\n"
    assert forked.stdout.replace('"torch_before": true', '"torch_before": false') == fresh.stdout, (forked, fresh)
    assert '"torch_before": true' in forked.stdout and f'"path0": "{probe_dir}"' in forked.stdout
    assert forked.args == [sys.executable, str(probe_dir / "fs_probe.py"), "a", "b c"]

def test_a_run_past_its_timeout_is_killed_and_the_server_serves_the_next(probe_dir):
    env = _env()
    with pytest.raises(subprocess.TimeoutExpired):
        forkserver.run_python_module("fs_probe", ["sleep"], probe_dir, env, timeout=2)
    again = forkserver.run_python_module("fs_probe", [], probe_dir, env, timeout=60)
    assert again.returncode == 3 and '"torch_before": true' in again.stdout


def test_an_environment_the_server_cannot_give_starts_a_fresh_process(probe_dir, monkeypatch):
    env = _env(PYTHONPATH=str(probe_dir))
    assert not forkserver.SERVER.fits(env)
    fresh = forkserver.run_python_module("fs_probe", [], probe_dir, env, timeout=60)
    assert fresh.returncode == 3 and '"torch_before": false' in fresh.stdout
    monkeypatch.setenv(forkserver.ENV, "0")
    assert not forkserver.SERVER.fits(_env())
