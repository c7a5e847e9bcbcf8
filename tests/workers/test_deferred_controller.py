"""An xdist controller starts its workers before it imports torch (suite/plugin/context.py: deferred): the workers, which
import torch themselves, no longer wait 3-5 s for the controller's import. What it needs first, the GPUs to pin the
workers to, comes from torch's version.py and the CUDA driver (suite/session/backend.py: probe)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from suite.session import backend as backend_mod
from tests.conftest import ROOT

WATCH = """
import json, os, sys

def _note(key, value):
    path = os.path.join({out!r}, "controller.json")
    seen = json.load(open(path)) if os.path.exists(path) else {{}}
    seen[key] = value
    json.dump(seen, open(path, "w"))

if {plant!r}:
    from suite.plugin import context
    context.defers = lambda config: False  # planted: the controller builds (imports torch) before its workers

def pytest_configure_node(node):
    _note("torch_when_workers_start", "torch" in sys.modules)
    _note("gpu_" + node.gateway.id, node.workerinput.get("suite_gpu"))

def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        _note("torch_at_end", "torch" in sys.modules)
"""


def _watched_run(run_suite, tmp_path, *args, plant=False):
    (tmp_path / "controller_watch.py").write_text(WATCH.format(out=str(tmp_path), plant=plant))
    res = run_suite("suite/test_kernels.py", "-k", "vector_add and fp32", "-n", "2", "--backend=interpret",
                    "-p", "controller_watch", *args, env={"PYTHONPATH": str(tmp_path)}, timeout=300)
    seen_path = tmp_path / "controller.json"
    return res, (json.loads(seen_path.read_text()) if seen_path.exists() else {})


def test_the_plugin_loads_without_torch():
    """What pytest imports in every process (conftest's plugins) pulls in neither torch nor Triton."""
    code = "import sys, suite.plugin.hooks, suite.workers.crash; print(sorted({'torch', 'triton'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def test_workers_start_before_the_controller_imports_torch(run_suite, tmp_path):
    res, seen = _watched_run(run_suite, tmp_path)
    assert res.returncode == 0, res.output[-3000:]
    assert seen["torch_when_workers_start"] is False, seen
    assert seen["torch_at_end"] is True, seen  # the context was built: kernels, references and run file
    run = res.run_data()
    assert run["status"] == "complete" and run["tests"] and all(t["outcome"] == "passed" for t in run["tests"])
    assert run["environment"]["torch"] and run["environment"]["backend"] == "interpret"
    ready = run["timing"]["workers"]
    assert ready["count"] == 2, json.dumps(run["timing"])
    # The header comes once, after xdist's start-up line, and before the tests' progress.
    out = res.output
    assert out.count("portability: backend=interpret") == 1, out[:3000]
    assert out.index("created: 2/2 workers") < out.index("portability: backend=interpret") < out.index("passed")
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]


@pytest.mark.slow
def test_a_controller_that_imports_torch_first_is_seen(run_suite, tmp_path):
    """Planted: the deferral turned off; the watch sees torch loaded before the workers start."""
    res, seen = _watched_run(run_suite, tmp_path, plant=True)
    assert res.returncode == 0, res.output[-3000:]
    assert seen["torch_when_workers_start"] is True, seen


@pytest.mark.slow
def test_a_usage_error_found_after_the_workers_started_stops_them(run_suite, tmp_path):
    """A known-issue file is read in the deferred build: its error is still exit 4 with the file's name, and the
    workers started for the run are ended (the run does not hang on them)."""
    bad = tmp_path / "known.json"
    bad.write_text(json.dumps({"known_issues": [{"id": "x"}]}))
    res, seen = _watched_run(run_suite, tmp_path, f"--known-issues={bad}")
    assert res.returncode == 4, res.output[-3000:]
    assert f"--known-issues: {bad}" in res.output, res.output[-3000:]
    assert seen["torch_when_workers_start"] is False, seen
    assert "INTERNALERROR" not in res.output and "Traceback" not in res.output, res.output[-3000:]
    assert not res.run_files()


def test_an_option_error_comes_before_any_worker_starts(run_suite, tmp_path):
    res, seen = _watched_run(run_suite, tmp_path, "--case-timeout=-3")
    assert res.returncode == 4, res.output[-3000:]
    assert "--case-timeout" in res.output, res.output[-3000:]
    assert "torch_when_workers_start" not in seen, seen


# --- the probe ----------------------------------------------------------------------------------------------

def _probe(requested, build, count=None, env=None):
    return backend_mod.probe(requested, env or {}, driver_count=lambda: count, build=lambda: build)


CUDA, ROCM, CPU = ("2.11.0", "12.8", None), ("2.11.0+rocm6.4", None, "6.4.1"), ("2.13.0+cpu", None, None)


@pytest.mark.parametrize("requested, build, count, env, expected", [
    ("interpret", CUDA, 4, None, ("interpret", 0)),
    ("auto", CUDA, 4, {"TRITON_INTERPRET": "1"}, ("interpret", 0)),
    ("auto", CUDA, 2, None, ("nvidia", 2)),
    ("auto", CUDA, 0, None, ("interpret", 0)),  # a CUDA build on a machine with no GPU: the interpreter
    ("auto", CPU, None, None, ("interpret", 0)),
    ("cuda", CUDA, 8, None, ("nvidia", 8)),
    ("cuda", CPU, None, None, ("nvidia", 0)),  # refused later, by the backend, with torch's own words
    ("rocm", CUDA, 8, None, ("amd", 0)),  # likewise
    ("cuda", CUDA, None, None, None),  # the driver failed: torch is asked
    ("rocm", ROCM, None, None, None),  # ROCm: torch is asked
    ("auto", ROCM, None, None, None),
    ("cuda", None, None, None, None),  # no readable version.py
])
def test_probe(requested, build, count, env, expected):
    assert _probe(requested, build, count, env) == expected


def test_torch_build_read_without_import_is_torchs_own():
    import torch

    assert backend_mod.torch_build_unimported() == (torch.__version__, torch.version.cuda,
                                                    getattr(torch.version, "hip", None))


def test_no_driver_library_means_no_gpu():
    assert backend_mod.cuda_driver_device_count("libcuda-that-is-not-there.so.1") == 0


def test_auto_worker_count_asks_the_probe_first(monkeypatch):
    from suite.plugin import context

    monkeypatch.setattr(context.backend_mod, "probe", lambda requested: ("nvidia", 3))
    monkeypatch.setattr(context, "_gpu_count", lambda: pytest.fail("torch asked although the probe knew"))
    assert context.gpu_count("cuda") == 3
    monkeypatch.setattr(context.backend_mod, "probe", lambda requested: None)
    monkeypatch.setattr(context, "_gpu_count", lambda: 5)
    assert context.gpu_count("rocm") == 5
