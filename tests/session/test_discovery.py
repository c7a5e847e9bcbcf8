"""Finding one's way in: ``--help`` leads with the suite's own options, a dotted ``--kernel-module`` works from the
``triton-portability`` command as from ``python -m suite``, and a --kernels or --kernel-module name that is not
there is a usage error before any worker starts, naming where it looked and the nearest name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _run(args: list[str], cwd, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)  # the suite importable, as installed; the current directory is not on the path
    env["COLUMNS"] = "100"
    # the environment active (its interpreter first on PATH): the commands the suite prints name it `python`
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_help_leads_with_the_suites_options(tmp_path):
    proc = _run(["-m", "suite", "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("usage: python -m suite [suite options]"), lines[:3]
    assert lines[2].startswith("Triton portability suite"), lines[:3]
    for option in ("--backend", "--kernel-module", "--kernels", "--repro", "--no-memcheck", "-n auto"):
        assert option in proc.stdout, option
    assert "--basetemp" not in proc.stdout  # pytest's own: under --help-pytest
    assert lines[-1] == "pytest's whole help (its own options and every plugin's): python -m suite --help-pytest"
    assert len(lines) < 80, len(lines)
    full = _run(["-m", "suite", "--help-pytest"], tmp_path)
    assert full.returncode == 0 and "--basetemp" in full.stdout and "Triton portability suite" in full.stdout


LEAKY = ROOT / "examples" / "leaky_relu.py"


def test_a_dotted_kernel_module_works_from_the_console_script(tmp_path):
    """The console script's sys.path starts with its own directory, not the current one (as python -m has it)."""
    project = tmp_path / "project"
    (project / "mykernels").mkdir(parents=True)
    (project / "mykernels" / "__init__.py").write_text("")
    shutil.copy(LEAKY, project / "mykernels" / "leaky.py")
    script = tmp_path / "bin" / "triton-portability"  # what pip writes for [project.scripts]
    script.parent.mkdir()
    script.write_text("import sys\nfrom suite.__main__ import main\nsys.exit(main())\n")
    proc = _run([str(script), "--kernel-module=mykernels.leaky", "--kernels=leaky_relu", "--collect-only", "-q",
                 "-p", "no:cacheprovider", "--backend=interpret"], project)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "suite/test_kernels.py::test_matches_reference[leaky_relu-fp32]" in proc.stdout


@pytest.mark.parametrize("args, words", [
    (["--kernels=softmx"], ["--kernels=softmx: 'softmx' matches no registered kernel (searched ",
                            "did you mean 'softmax' (or 'softmax_online')?"]),
    (["--kernel-module=examples/leaky_rel.py"], [f"no such file in {ROOT / 'examples'}",
                                                 "did you mean examples/leaky_relu.py?"]),
    (["--kernel-module=examples.leaky_rel"], [f"no module of that name (searched {ROOT / 'examples'})",
                                              "did you mean examples.leaky_relu?"]),
    (["--kernel-module=exampls.leaky_relu"], ["no package 'exampls' importable from the current directory"]),
])
def test_a_name_that_is_not_there_is_refused_before_the_workers_start(args, words):
    proc = _run(["-m", "pytest", "-p", "no:cacheprovider", "--no-results", "--backend=interpret", "-n", "2", *args],
                ROOT)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 4, output[-3000:]
    for word in words:
        assert word in output, output[-3000:]
    assert "created: " not in output and "workers" not in output, output[-3000:]  # no worker was started


def test_a_kernel_a_module_names_in_a_literal_passes_the_early_check():
    from suite.session import kernel_names

    files = [*kernel_names.builtin_files(), ROOT / "tests" / "fixtures" / "planted_bugs.py"]
    names = kernel_names.literal_names(files)
    assert {"softmax", "vector_add", "planted_matmul_group_start"} <= names
    assert kernel_names.unmatched(("softmax", "planted_*", "softmx"), names) == ["softmx"]
    assert kernel_names.did_you_mean("sofmax", names).startswith("; did you mean 'softmax'")


def test_a_kernel_module_without_kernels_says_the_shipped_kernels_run_too():
    """--kernel-module without --kernels runs every shipped kernel as well: the run's first lines say so, naming the
    option that runs one's own alone; with --kernels, no such line."""
    from kernels import registry

    args = ["-m", "pytest", "--collect-only", "-p", "no:cacheprovider", "--backend=interpret", "suite/test_kernels.py",
            f"--kernel-module={LEAKY}"]
    whole = _run(args, ROOT)
    assert whole.returncode == 0, (whole.stdout + whole.stderr)[-3000:]
    shipped = len(registry.builtin_modules())
    line = next((ln for ln in whole.stdout.splitlines() if "no --kernels" in ln), None)
    assert line is not None, whole.stdout[:3000]
    assert line.startswith("portability: no --kernels: the ") and int(line.split()[4]) >= shipped, line
    assert line.endswith(" shipped kernels run too; --kernels=leaky_relu runs yours alone"), line
    from types import SimpleNamespace

    from suite.plugin.context import whole_selection_note

    for modules, kernels in (((), None), (("m.py",), ("leaky_relu",)), (("m.py",), ("*",))):
        assert whole_selection_note(SimpleNamespace(kernel_modules=modules, kernels=kernels), ["leaky_relu"], 19) \
            is None


def test_a_run_from_another_directory_prints_the_suites_test_ids(tmp_path):
    """Started from another directory (one's own repository), the progress lines and pytest's short summary name the
    suite's tests as the reproduction lines do (``suite/test_kernels.py::...``), not by a path up into the suite's
    installed directory (``../.venv/lib/.../_root/suite/...``)."""
    shutil.copy(LEAKY, tmp_path / "leaky.py")
    proc = _run(["-m", "suite", "suite/test_kernels.py::test_matches_reference[leaky_relu-fp32]", "--kernel-module=leaky.py",
                 "--backend=interpret", "--no-results", "-p", "no:cacheprovider", "-rA", "-n", "0",
                 "--repro=N=1;layout=contiguous;values=normal;seed=0"], tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "PASSED suite/test_kernels.py::test_matches_reference[leaky_relu-fp32]" in out, out[-3000:]
    assert any(line.startswith("suite/test_kernels.py .") for line in out.splitlines()), out[-3000:]
    assert "../" not in out.split("short test summary info", 1)[1], out[-3000:]
