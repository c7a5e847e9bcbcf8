"""A reproduction line runs where its run started (issue 49, item 21): a run started in a subdirectory of a checkout
printed the test's id as pytest keys it, relative to the checkout's root ('suite/test_kernels.py::...'), which pytest
run in that subdirectory cannot find ("file or directory not found", exit 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_python
from tests.project.test_installed import ROOT, _no_interpret_env, _reproduces_as_printed


@pytest.mark.slow
def test_a_reproduction_line_printed_in_a_subdirectory_runs_there(tmp_path):
    (tmp_path / "leaky_bug.py").write_text((ROOT / "examples" / "leaky_relu.py").read_text().replace(
        "y = tl.where(x >= 0, x, x * slope)", "y = tl.where(x > 0.5, x, x * slope)"))
    where = ROOT / "examples"
    bug = run_python("pytest", "-p", "no:cacheprovider", "../suite/test_kernels.py",
                     f"--kernel-module={tmp_path / 'leaky_bug.py'}", "--kernels=leaky_relu", "-k", "fp32", "--no-results",
                     "-n", "0", cwd=where, env=_no_interpret_env())
    out = bug.stdout + bug.stderr
    line = next(ln.split("reproduce with: ", 1)[1] for ln in out.splitlines() if "reproduce with: " in ln)
    assert "'../suite/test_kernels.py::test_matches_reference[leaky_relu-fp32]'" in line, line
    _reproduces_as_printed(bug, where, {}, "")


def test_a_test_id_is_printed_from_where_the_run_started():
    from suite.session.options import CHECKOUT_ROOT, runnable_id

    nodeid = "suite/test_kernels.py::test_matches_reference[softmax-fp32]"
    assert runnable_id(nodeid, ["pytest"], str(CHECKOUT_ROOT)) == nodeid
    assert runnable_id(nodeid, ["pytest"], str(CHECKOUT_ROOT / "examples")) == f"../{nodeid}"
    assert runnable_id(nodeid, ["python", "-m", "pytest"], str(CHECKOUT_ROOT / "docs" / "x")) == f"../../{nodeid}"
    # these find the suite's test file from the id as printed, from any directory
    for launcher in (["triton-portability"], ["python", "-m", "triton_portability"], [".venv/bin/python", "-m", "suite"]):
        assert runnable_id(nodeid, launcher, str(Path("/"))) == nodeid
