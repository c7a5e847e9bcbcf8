""".ci/run's order of work, run on stand-in tools (no install, no test run): the newest stack's environment is built
in the background while the CPU-bound steps run, and a failed build fails CI with its log printed.

The stand-ins are shell scripts first on PATH (python3, python3.12, chromium) and the environments they make
(.venv/bin/python, .venv/bin/ruff, .venv-newest/bin/python): each writes what it was asked to do to a shared log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

WAIT = 10  # seconds the main command's stand-in waits for the background install to have started

# The CPU-bound steps' python: the main command (`pytest -n auto` alone) waits until the newest stack's install has
# started, which it can only do if that install runs at the same time.
MAIN_PYTHON = f"""#!/bin/bash
echo "main: ${{SUITE_COMPILE_MATRIX:+SUITE_COMPILE_MATRIX=$SUITE_COMPILE_MATRIX }}$*" >>"$CI_LOG"
if [[ "$*" == "-m pytest -n auto" ]]; then
  for _ in $(seq {WAIT * 10}); do [[ -e "$CI_MARKS/newest-started" ]] && exit 0; sleep 0.1; done
  echo "the newest stack's install had not started while the main command ran" >&2; exit 1
fi
"""
NEWEST_PYTHON = """#!/bin/bash
echo "newest: $*" >>"$CI_LOG"
if [[ "$*" == *"pip install"* ]]; then
  touch "$CI_MARKS/newest-started"
  if [[ -n "${NEWEST_FAILS:-}" ]]; then echo "ERROR: No matching distribution found for torch==2.13.0"; exit 1; fi
fi
"""
PYTHON3 = f"""#!/bin/bash
if [[ "$1 $2" == "-m venv" ]]; then
  mkdir -p "$3/bin"
  cat >"$3/bin/python" <<'EOF'
{MAIN_PYTHON}EOF
  printf '#!/bin/bash\\necho "main: ruff $*" >>"$CI_LOG"\\n' >"$3/bin/ruff"
  chmod +x "$3/bin/python" "$3/bin/ruff"
fi
"""
PYTHON312 = f"""#!/bin/bash
if [[ "$1 $2" == "-m venv" ]]; then
  mkdir -p "$3/bin"
  cat >"$3/bin/python" <<'EOF'
{NEWEST_PYTHON}EOF
  chmod +x "$3/bin/python"
fi
"""


def _stub(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def ci(tmp_path):
    """Run a copy of .ci/run in an empty repository with the stand-ins first on PATH."""
    repo, tools, marks = tmp_path / "repo", tmp_path / "bin", tmp_path / "marks"
    for d in (repo / ".ci", tools, marks):
        d.mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "run", repo / ".ci" / "run")
    _stub(tools / "python3", PYTHON3)
    _stub(tools / "python3.12", PYTHON312)
    _stub(tools / "chromium", "#!/bin/bash\n")
    log = tmp_path / "steps.log"

    def run(**env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
        proc = subprocess.run(["bash", str(repo / ".ci" / "run")], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
                                   "CI_LOG": str(log), "CI_MARKS": str(marks), **env})
        return proc, log.read_text().splitlines() if log.exists() else []

    return run


def test_the_newest_stack_installs_while_the_cpu_bound_steps_run(ci):
    proc, steps = ci()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    main_run = steps.index("main: -m pytest -n auto")
    first_install = next(i for i, s in enumerate(steps) if s.startswith("newest: -m pip install"))
    newest_tests = next(i for i, s in enumerate(steps) if s.startswith("newest: -m pytest"))
    assert newest_tests > max(main_run, first_install), steps
    assert [s for s in steps if s.startswith("newest:")] == [
        "newest: -m pip install -q --disable-pip-version-check --no-cache-dir --no-compile -r requirements/ci-newest.txt",
        "newest: -m pip install -q --disable-pip-version-check --no-cache-dir --no-compile --no-deps triton==3.9.0",
        "newest: -m pytest -n auto suite/test_kernels.py suite/test_compile_matrix.py suite/test_hazards.py",
        "newest: -m pytest -n auto tests/test_compat.py tests/test_interpreter.py"], steps


def test_a_failed_background_install_fails_ci_with_its_log(ci):
    proc, steps = ci(NEWEST_FAILS="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ci: FAILED: building the newest stack's environment (.venv-newest) failed" in proc.stderr, proc.stderr
    assert "ERROR: No matching distribution found for torch==2.13.0" in proc.stderr, proc.stderr
    assert not [s for s in steps if s.startswith("newest: -m pytest")], steps
    assert "ci: done" not in proc.stdout


def test_what_readmes_commands_leave_out_runs_in_ci_after_them(ci):
    """The compile matrix's other configs (off the first command) and the harness's slow tests (off the second)."""
    proc, steps = ci()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    main = [s.removeprefix("main: ") for s in steps if s.startswith("main: -m pytest") or "SUITE_COMPILE" in s]
    assert main[:4] == ["-m pytest -n auto", "SUITE_COMPILE_MATRIX=ci -m pytest -n auto suite/test_compile_matrix.py",
                        "-m pytest tests -n auto", "-m pytest tests -n auto -m slow"], main
