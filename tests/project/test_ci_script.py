""".ci/run's order of work, run on stand-in tools (no install, no test run): the newest stack's environment is built,
and its suite tests run, in the background while the CPU-bound steps run; a failed build, or a failed test there,
fails CI with its log printed; chromium's install runs while pip installs the environment.

The stand-ins are shell scripts first on PATH (python3, python3.12, chromium or apt-get) and the environments they
make (.venv/bin/python, .venv/bin/ruff, .venv-newest/bin/python): each writes what it was asked to do to a shared log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

WAIT = 10  # seconds a stand-in waits for a background step to have started

# The CPU-bound steps' python: the main command (`pytest -n auto` alone) waits until the newest stack's install has
# started, which it can only do if that install runs at the same time. The slow tests' step waits until the newest
# stack's suite tests have started (where its install succeeds): they run beside the CPU-bound steps, not after them.
# The first pip install waits for chromium's install to have started (where apt-get stands in).
MAIN_PYTHON = f"""#!/bin/bash
echo "main: ${{SUITE_COMPILE_MATRIX:+SUITE_COMPILE_MATRIX=$SUITE_COMPILE_MATRIX }}$*" >>"$CI_LOG"
wait_for() {{
  for _ in $(seq {WAIT * 10}); do [[ -e "$CI_MARKS/$1" ]] && return 0; sleep 0.1; done
  echo "$2" >&2; exit 1
}}
if [[ "$*" == *"--kernel-module=examples/liger_kernel.py"* ]]; then
  echo "${{PYTHONPYCACHEPREFIX:-none}} ${{PYTHONDONTWRITEBYTECODE:-unset}}" >"$CI_MARKS/examples-bytecode"
  touch "$CI_MARKS/examples-started"
  if [[ -n "${{EXAMPLES_FAIL:-}}" ]]; then echo "FAILED suite/test_kernels.py::test_matches_reference[liger_x-fp32]"; exit 1; fi
  echo "the examples: 1 passed"
elif [[ "$*" == "-m pytest tests -n auto" ]]; then
  wait_for examples-started "the examples' run had not started while the harness's tests ran"
elif [[ "$*" == "-m pytest -n auto" ]]; then
  wait_for newest-started "the newest stack's install had not started while the main command ran"
elif [[ "$*" == "-m pytest tests -n auto -m slow" && -z "${{NEWEST_FAILS:-}}" ]]; then
  wait_for newest-tests-started "the newest stack's suite tests had not started while the slow tests ran"
elif [[ "$*" == *"-r requirements/ci.txt" && -n "${{APT_STANDS_IN:-}}" ]]; then
  wait_for apt-started "chromium's install had not started while pip installed the environment"
fi
"""
NEWEST_PYTHON = """#!/bin/bash
echo "newest: $*" >>"$CI_LOG"
if [[ "$*" == *"pip install"* ]]; then
  touch "$CI_MARKS/newest-started"
  if [[ -n "${NEWEST_FAILS:-}" ]]; then echo "ERROR: No matching distribution found for torch==2.13.0"; exit 1; fi
elif [[ "$*" == *"suite/test_kernels.py"* ]]; then
  echo "${PYTHONPYCACHEPREFIX:-none} ${PYTHONDONTWRITEBYTECODE:-unset}" >"$CI_MARKS/newest-bytecode"
  touch "$CI_MARKS/newest-tests-started"
  if [[ -n "${NEWEST_TESTS_FAIL:-}" ]]; then echo "FAILED suite/test_kernels.py::test_planted"; exit 1; fi
  echo "the newest stack's suite tests: 1 passed"
fi
"""
APT_GET = """#!/bin/bash
echo "apt: $*" >>"$CI_LOG"
touch "$CI_MARKS/apt-started"
sleep 1
echo "apt: done" >>"$CI_LOG"
"""
# df -Pk PATH: the free space the test gives (DF_FREE_KB; DF_TMP_FREE_KB and DF_TMP_MOUNT for TMPDIR where it is set),
# plenty where it gives none.
DF = """#!/bin/bash
free=${DF_FREE_KB:-104857600} mount=/
if [[ $2 == "${TMPDIR:-/tmp}" && -n "${DF_TMP_MOUNT:-}" ]]; then free=${DF_TMP_FREE_KB:-104857600} mount=$DF_TMP_MOUNT; fi
echo "Filesystem 1024-blocks Used Available Capacity Mounted on"
echo "/dev/standin 262144000 1 $free 1% $mount"
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
    _stub(tools / "df", DF)
    log = tmp_path / "steps.log"

    def run(apt: bool = False, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
        """``apt``: no chromium, and apt-get to install it, on a PATH of the stand-ins and the system's own tools."""
        if apt:
            _stub(tools / "apt-get", APT_GET)
            _stub(tools / "sudo", '#!/bin/bash\n[[ $1 == -n ]] && shift\nexec "$@"\n')  # where CI is not root
            path = os.pathsep.join([str(tools), "/usr/bin", "/bin"])
            env = {"APT_STANDS_IN": "1", **env}
        else:
            _stub(tools / "chromium", "#!/bin/bash\n")
            path = f"{tools}{os.pathsep}{os.environ['PATH']}"
        proc = subprocess.run(["bash", str(repo / ".ci" / "run")], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PATH": path, "CI_LOG": str(log), "CI_MARKS": str(marks), **env})
        return proc, log.read_text().splitlines() if log.exists() else []

    run.marks, run.repo = marks, repo
    return run


NEWEST = [
    "newest: -m pip install -q --disable-pip-version-check --no-cache-dir --no-compile -r requirements/ci-newest.txt",
    "newest: -m pip install -q --disable-pip-version-check --no-cache-dir --no-compile --no-deps triton==3.9.0",
    "newest: -m pytest -n auto suite/test_kernels.py suite/test_compile_matrix.py suite/test_hazards.py",
    "newest: -m pytest -n auto tests/session/test_compat.py tests/checks/test_interpreter.py"]


def test_the_newest_stack_installs_and_runs_its_suite_tests_while_the_cpu_bound_steps_run(ci):
    """Its install beside the main command, its suite tests beside the slow tests (the stand-ins wait for each), its
    output printed at the end; its harness tests (the patch checks) after every step of the pinned stack."""
    proc, steps = ci(PYTHONDONTWRITEBYTECODE="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [s for s in steps if s.startswith("newest:")] == NEWEST, steps
    last_main = max(i for i, s in enumerate(steps) if s.startswith("main:"))
    assert steps.index(NEWEST[-1]) > last_main, steps
    assert "the newest stack's suite tests: 1 passed" in proc.stdout, proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("ci: done in ")
    # Its bytecode under a prefix (tests/workers/test_bytecode.py compares the checkout's __pycache__ directories),
    # inside its environment, which goes with the clone.
    prefix, dont_write = (ci.marks / "newest-bytecode").read_text().split()
    assert Path(prefix) == ci.repo / ".venv-newest" / "bytecode" and dont_write == "unset", (prefix, dont_write)


def test_failed_newest_suite_tests_fail_ci_with_their_output(ci):
    proc, steps = ci(NEWEST_TESTS_FAIL="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ci: FAILED: the newest stack's tests (.venv-newest) failed" in proc.stderr, proc.stderr
    assert "FAILED suite/test_kernels.py::test_planted" in proc.stderr, proc.stderr
    assert NEWEST[-1] not in steps and "ci: done" not in proc.stdout


def test_chromium_installs_while_pip_installs_and_before_the_harness(ci):
    if any(Path(d, name).exists() for d in ("/usr/bin", "/bin") for name in ("chromium", "chromium-browser",
                                                                             "google-chrome")):
        pytest.skip("this machine has a chromium: .ci/run installs none")
    proc, steps = ci(apt=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert steps[steps.index("apt: install -y -qq --no-install-recommends chromium") + 1:].count("apt: done") == 1
    assert steps.index("apt: done") < steps.index("main: -m pytest tests -n auto"), steps


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
    main = [s.removeprefix("main: ") for s in steps if (s.startswith("main: -m pytest") or "SUITE_COMPILE" in s)
            and "--kernel-module" not in s]
    assert main[:4] == ["-m pytest -n auto", "SUITE_COMPILE_MATRIX=ci -m pytest -n auto suite/test_compile_matrix.py",
                        "-m pytest tests -n auto", "-m pytest tests -n auto -m slow"], main


def test_the_examples_run_in_the_background_beside_the_harness_and_their_failure_fails_ci(ci):
    """Liger-Kernel's, FlagGems' and the guide's kernels run beside the harness's tests (whose stand-in waits for them
    to have started), with bytecode off for Python and no prefix (the suite's own cache, never __pycache__ in the
    checkout); a failure there fails CI with their output printed."""
    proc, steps = ci()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (ci.marks / "examples-bytecode").read_text().split() == ["none", "1"]
    assert "the examples: 1 passed" in proc.stdout, proc.stdout
    proc, steps = ci(EXAMPLES_FAIL="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED suite/test_kernels.py::test_matches_reference[liger_x-fp32]" in proc.stdout, proc.stdout
    assert "ci: FAILED: Liger-Kernel's, FlagGems' and the guide's kernels (exit 1)" in proc.stderr, proc.stderr
    assert "ci: done" not in proc.stdout


@pytest.mark.parametrize("where", ["checkout", "tmpdir"])
def test_too_little_disk_fails_ci_at_once_naming_what_is_free_and_needed(ci, where):
    """A machine whose disk is nearly full (the checkout's, or TMPDIR's where it is another) stops before any install,
    saying how much is free where and how much CI needs, not minutes later in pip's "No space left on device"."""
    scratch = ci.repo.parent / "scratch"  # a TMPDIR that exists, on another disk as the stand-in df says
    scratch.mkdir(exist_ok=True)
    env = {"DF_FREE_KB": str(9 * 2**20)} if where == "checkout" else \
        {"DF_TMP_MOUNT": "/scratch", "DF_TMP_FREE_KB": str(3 * 2**20), "TMPDIR": str(scratch)}
    proc, steps = ci(**env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = proc.stderr.strip().splitlines()[-1]
    if where == "checkout":
        assert said.startswith("ci: FAILED: 9.0 GB free on the disk of ") and "CI needs about 10 GB there" in said, said
    else:
        assert said.startswith(f"ci: FAILED: 3.0 GB free in TMPDIR ({scratch}); pip's downloads need about 4 GB"), said
    assert steps == [] and "ci: at" not in proc.stdout, (steps, proc.stdout)
    # 10 GB free runs on (and TMPDIR on the checkout's own disk is judged with it, however little it has alone);
    # 1 KB less does not.
    proc, steps = ci(DF_FREE_KB=str(10 * 2**20), DF_TMP_FREE_KB=str(2**20))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc, steps = ci(DF_FREE_KB=str(10 * 2**20 - 1))
    assert proc.returncode == 1 and "9.9 GB free" in proc.stderr, proc.stderr


def test_a_tmpdir_that_does_not_exist_fails_ci_at_once(ci, tmp_path):
    proc, steps = ci(TMPDIR=str(tmp_path / "no-such-dir"))
    assert proc.returncode == 1 and "is not a directory" in proc.stderr and steps == [], proc.stderr
