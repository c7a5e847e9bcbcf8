"""docs/tutorial.md run as a newcomer runs it: every block it marks `<!-- tutorial: run -->` (exit 0) or
`<!-- tutorial: fails -->` (exit 1) runs in order, through bash, in a fresh project directory beside a clone of this
checkout, in an activated fresh environment that holds torch and triton (this one's, through a .pth file) and
nothing of the suite until the tutorial's own `pip install` puts it there. A reproduction line the tutorial pastes
is one the run before it printed, and a block marked `<!-- tutorial: output -->` quotes lines the run before it
printed (the case, its message, its reproduction line, the verdict)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.project.test_installed import _venv_with_this_environments_packages, clone_checkout

TUTORIAL = ROOT / "docs" / "tutorial.md"
MARKED = re.compile(r"^<!-- tutorial: (run|fails|output) -->\n```\w*\n(.*?)^```", re.S | re.M)
EXIT = {"run": 0, "fails": 1}


def marked_blocks(text: str) -> list[tuple[str, str]]:
    return MARKED.findall(text)


def quoted_lines(block: str) -> list[str]:
    """The lines of a quoted output that say what the run found: not pytest's rules (their width is the terminal's),
    not the result file's name (a run's own), not the wrapped continuations of the verdict."""
    return [line for line in block.splitlines()
            if line.strip() and line != "..." and not line.startswith(("_", "=", " ", "result file"))]


def test_the_tutorial_marks_what_it_runs():
    blocks = marked_blocks(TUTORIAL.read_text())
    kinds = [kind for kind, _ in blocks]
    assert kinds.count("run") >= 4 and kinds.count("fails") >= 2 and kinds.count("output") >= 2, kinds
    assert any("pip install" in body for kind, body in blocks if kind == "run")
    assert all(quoted_lines(body) for kind, body in blocks if kind == "output")
    # The one bash block not run is the clone from the address a reader has (the test clones this checkout).
    bash = re.findall(r"```bash\n(.*?)^```", TUTORIAL.read_text(), re.S | re.M)
    unmarked = [b for b in bash if b not in {body for kind, body in blocks}]
    assert unmarked == ["git clone URL ../triton-portability-suite\n"], unmarked


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to copy the checkout")
def test_the_tutorial_runs_as_written(tmp_path):
    venv = tmp_path / "venv"
    _venv_with_this_environments_packages(venv)
    clone_checkout(tmp_path / "triton-portability-suite")
    project = tmp_path / "my_project"
    project.mkdir()
    here = Path(sys.executable).parent.resolve()
    path = [str(venv / "bin"), *(p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p).resolve() != here)]
    env = {**{k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "SUITE_LAUNCHER")},
           "PATH": os.pathsep.join(path), "VIRTUAL_ENV": str(venv), "COLUMNS": "100"}
    printed = ""
    for i, (kind, body) in enumerate(marked_blocks(TUTORIAL.read_text())):
        if kind == "output":
            missing = [line for line in quoted_lines(body) if line not in printed.splitlines()]
            assert not missing, f"block {i} quotes lines the run before it did not print: {missing}"
            continue
        for line in body.splitlines():
            if line.startswith("triton-portability 'suite/"):  # a reproduction line, pasted as printed
                assert f"reproduce with: {line}" in printed, f"block {i}: {line} is not what the run printed"
        proc = subprocess.run(["bash", "-e", "-c", body], cwd=project, env=env, capture_output=True, text=True,
                              timeout=600)
        out = proc.stdout + proc.stderr
        assert proc.returncode == EXIT[kind], f"block {i} exited {proc.returncode}:\n{body}\n{out[-4000:]}"
        if "triton-portability" in body:
            printed = out
    assert (project / "report" / "report.md").is_file()
