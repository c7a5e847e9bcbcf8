"""Third-party libraries as they ship (suite/checks/libraries.py, docs/third-party.md): FlagGems 5.0.2 does not
import on the interpreter as it ships; with the suite's import hook it imports, its launchers run through Triton's
launch path, and every change made is named; a release that moved what a change replaces is refused by name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

MOVED = ROOT / "tests" / "fixtures" / "moved_flag_gems"


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT), **env}
    for name in ("GEMS_VENDOR", "FLAGGEMS_DB_URL"):
        if name not in env:
            environ.pop(name, None)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=environ)


def test_flag_gems_as_it_ships_does_not_import_on_the_interpreter():
    """Why the hook exists (should FlagGems fix this, drop the changes this test names)."""
    pytest.importorskip("flag_gems", reason="flag-gems is not installed: pip install --no-deps flag-gems==5.0.2")
    proc = _python("import flag_gems")
    assert proc.returncode == 1 and "No device were detected" in proc.stderr, proc.stderr[-2000:]


FLAG_GEMS_UNDER_THE_HOOK = """
import torch
from suite.checks import interpreter, launches, libraries
interpreter.install(); launches.install(); libraries.install()
import flag_gems
from flag_gems import ops
x = torch.randn(3, 70, generator=torch.Generator().manual_seed(0))
with launches.recording() as seen:
    y = ops.softmax(x, -1)
    ops.softmax(x, -1)  # the same key again: FlagGems' launch cache would launch past Triton's launch path
    ln = ops.layer_norm(x, [70], torch.ones(70), torch.zeros(70))[0]  # under @triton.autotune (libtuner's kind)
print("kernels", seen.kernels)
print("softmax", bool(torch.allclose(y, torch.softmax(x, -1), atol=1e-6)))
print("layer_norm", bool(torch.allclose(ln, torch.nn.functional.layer_norm(x, [70]), atol=1e-5)))
print("applied", [line.split(":")[0] for line in libraries.applied("flag_gems")])
print("header", libraries.describe()[0])
record = libraries.record([{"libraries": [{"module": "flag_gems"}, {"module": "yaml"}]}])
print("record", [sorted(lib) for lib in record[0]["libraries"]])
"""


def test_flag_gems_imports_and_runs_on_the_interpreter_with_each_change_named():
    pytest.importorskip("flag_gems", reason="flag-gems is not installed: pip install --no-deps flag-gems==5.0.2")
    proc = _python(FLAG_GEMS_UNDER_THE_HOOK)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["kernels"] == "['softmax_kernel_inner', 'softmax_kernel_inner', 'layer_norm_persistent_kernel_multiline']"
    assert lines["softmax"] == "True" and lines["layer_norm"] == "True"
    assert lines["applied"] == "['vendor', 'tuning-db', 'device-guard', 'libentry', 'libtuner', 'pointwise-dynamic']"
    assert lines["header"].startswith("flag_gems 5.0.2: runtime changed for the suite (docs/third-party.md; kernels "
                                      "and launchers as shipped): vendor: GEMS_VENDOR=nvidia where unset")
    assert lines["record"] == "[['module', 'runtime_changes'], ['module']]"


def test_a_release_that_moved_what_a_change_replaces_is_refused_by_name():
    proc = _python("from suite.checks import libraries\nlibraries.install()\nimport flag_gems",
                   PYTHONPATH=os.pathsep.join([str(MOVED), str(ROOT)]))
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("suite.checks.libraries.LibraryUnsupported: flag_gems (from ") and (
        "the suite's change 'libtuner' replaces flag_gems.utils.libentry.libtuner, which is not there (the changes "
        "are written for flag_gems 5.0.2): install flag-gems==5.0.2, or see docs/third-party.md") in last, last


def test_a_library_never_imported_is_left_alone():
    proc = _python("import sys\nfrom suite.checks import libraries\nlibraries.install()\nimport json\n"
                   "print(libraries.applied('flag_gems'), libraries.describe(), 'flag_gems' in sys.modules)")
    assert proc.returncode == 0 and proc.stdout.split() == ["[]", "[]", "False"], proc.stdout + proc.stderr
