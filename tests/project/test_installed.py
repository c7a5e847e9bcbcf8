"""The suite used from another repository: installed as README says, run from a directory outside the checkout on
a kernel module there, and inert for that project's own pytest runs; installed beside another distribution that owns
a top-level `kernels`, and uninstalled, it leaves that distribution's files alone."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from suite import __main__ as runner

ROOT = Path(__file__).resolve().parent.parent.parent


def _lines(value: str | list[str]) -> list[str]:
    return [v.strip() for v in (value if isinstance(value, list) else value.splitlines()) if v.strip()]


def test_the_installed_settings_are_the_checkouts():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(runner.SETTINGS)
    installed = dict(ini["pytest"])
    checkout = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert set(installed) == set(checkout) - {"testpaths"}
    for key, value in checkout.items():
        if key == "testpaths":
            continue
        expected = str(value).lower() if isinstance(value, bool) else value
        assert _lines(installed[key]) == _lines(expected), key


def test_the_runner_runs_the_suites_tests_unless_told_which(tmp_path):
    args = runner.pytest_args(["--kernels=leaky_relu", "-n", "2"], cwd=str(tmp_path))
    assert args[-1] == str(runner.SUITE_DIR) and args.count("-p") == len(runner.PLUGINS)
    assert f"cache_dir={tmp_path / '.pytest_cache'}" in args
    own = str(runner.SUITE_DIR / "test_kernels.py") + "::test_matches_reference"
    assert runner.pytest_args([own])[-1] == own


def _no_interpret_env(**extra: str) -> dict[str, str]:
    """This environment without what this process's own run set (the interpreter, its launcher), plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "SUITE_LAUNCHER")}, **extra}


def _reproduces_as_printed(run: subprocess.CompletedProcess, cwd: Path, env: dict[str, str], head: str) -> None:
    """The run failed with a reproduction line that starts as the run was started; pasted as printed (through a
    shell, in the same directory) it fails again with the same failure."""
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    line = next(ln.split("reproduce with: ", 1)[1] for ln in out.splitlines() if "reproduce with: " in ln)
    assert line.startswith(head), line
    message = next(ln for ln in out.splitlines() if "of the bound" in ln or "elements over" in ln)
    again = subprocess.run(line + " --no-results", shell=True, cwd=cwd, capture_output=True, text=True,
                           env=_no_interpret_env(**env))
    assert again.returncode == 1, (line, again.stdout[-3000:] + again.stderr[-3000:])
    assert message.strip() in again.stdout + again.stderr, (message, again.stdout[-3000:])


@pytest.mark.slow
@pytest.mark.parametrize("active", [True, False], ids=["environment-active", "as-readme-runs-it"])
def test_a_reproduction_line_from_a_checkout_runs_as_printed(tmp_path, active):
    """From a checkout the line starts as the run did, and reruns the failing case pasted as printed: with the
    environment active, ``python -m pytest``; as README's quick start runs it (``.venv/bin/python -m pytest``,
    nothing activated, where a bare ``pytest`` is another environment's or none), with that interpreter's path."""
    (tmp_path / "leaky_bug.py").write_text((ROOT / "examples" / "leaky_relu.py").read_text().replace(
        "y = tl.where(x >= 0, x, x * slope)", "y = tl.where(x > 0.5, x, x * slope)"))
    bin_dir = Path(sys.executable).parent
    others = [p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != bin_dir.resolve()]
    path = os.pathsep.join([str(bin_dir), *others] if active else others)
    bug = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suite/test_kernels.py",
                          f"--kernel-module={tmp_path / 'leaky_bug.py'}", "--kernels=leaky_relu", "-k", "fp32",
                          "--no-results"], cwd=ROOT, capture_output=True, text=True, env=_no_interpret_env(PATH=path))
    head = "python -m pytest " if active else f"{shlex.quote(_typed(sys.executable))} -m pytest "
    _reproduces_as_printed(bug, ROOT, {"PATH": path}, head)


def _path_without(*directories: Path) -> str:
    """This PATH less ``directories``: a shell where none of those environments is active."""
    gone = {d.resolve() for d in directories}
    return os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p).resolve() not in gone)


def _typed(path: str) -> str:
    """``path`` as the suite prints it from the repository root: relative where it is inside, else whole."""
    relative = os.path.relpath(os.path.abspath(path), ROOT)
    return os.path.abspath(path) if relative.startswith("..") else relative


def _venv_with_this_environments_packages(path: Path) -> Path:
    """A fresh virtual environment that sees this one's packages (torch, triton, pytest...) through a .pth file,
    as a user's project environment has its own torch and triton: installing the suite there installs the suite."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "outer-environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


def clone_checkout(src: Path) -> Path:
    """A clone of this checkout at ``src``: the committed tree plus what is not committed yet (a clean copy)."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(src)], check=True)
    for changed in subprocess.run(["git", "ls-files", "-m", "-o", "--exclude-standard"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout.split():
        (src / changed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / changed, src / changed)
    return src


SUITE_PACKAGES = ("suite", "kernels", "reports", "hardware_profiles")


def _install_a_distribution_owning_kernels(python: Path, where: Path) -> dict[Path, bytes]:
    """A stand-in for another distribution with a top-level ``kernels`` package (Hugging Face's ``kernels`` has one),
    written as a wheel by hand (no build backend, no index) and installed into ``python``'s environment; its installed
    files and their bytes."""
    info = "kernels_standin-1.0.dist-info"
    files = {"kernels/__init__.py": 'OWNER = "kernels-standin"\n',
             "kernels/layers.py": "def layer():\n    return 'the stand-in'\n",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: kernels-standin\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    where.mkdir(parents=True)
    wheel = where / "kernels_standin-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                              "--no-index", str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    return _installed_files(python, "kernels-standin")


# Both read the metadata from the venv's directory: ``python -c`` puts its working directory first on sys.path, and a
# checkout where ``pip wheel .`` or ``pip install -e .`` ran holds a triton_portability_suite.egg-info found first.
def _installed_files(python: Path, distribution: str) -> dict[Path, bytes]:
    """Every file a distribution installed (its dist-info RECORD), with its bytes."""
    listed = subprocess.run([str(python), "-c", "import sys; from importlib import metadata; d = metadata.distribution("
                             "sys.argv[1]); print('\\n'.join(str(d.locate_file(f)) for f in d.files))", distribution],
                            check=True, capture_output=True, text=True, cwd=python.parent).stdout.split("\n")
    return {Path(f): Path(f).read_bytes() for f in listed if f and Path(f).is_file()}


def _top_level_names(python: Path, distribution: str) -> set[str]:
    """The first part of every path in the distribution's RECORD that lies in site-packages (not its scripts)."""
    names = subprocess.run([str(python), "-c", "import sys; from importlib import metadata; print('\\n'.join("
                            "f.parts[0] for f in metadata.distribution(sys.argv[1]).files if f.parts[0] != '..'))",
                            distribution], check=True, capture_output=True, text=True, cwd=python.parent).stdout.split()
    return set(names)


def _imports_kernels_from(python: Path, cwd: Path) -> str:
    return subprocess.run([str(python), "-c", "import kernels; print(getattr(kernels, 'OWNER', kernels.__file__))"],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to copy the checkout")
def test_installed_from_the_readme_and_run_from_another_directory(tmp_path):
    python = _venv_with_this_environments_packages(tmp_path / "venv")
    # Another distribution that owns a top-level `kernels` is there first: installing the suite, running it and
    # uninstalling it leave its files as they were, and a plain `import kernels` gives it.
    standin = _install_a_distribution_owning_kernels(python, tmp_path / "standin")
    assert any(f.name == "layers.py" for f in standin), standin
    # README: `pip install <a clone>`, here a clean copy of the committed tree plus what is not committed yet.
    src = clone_checkout(tmp_path / "clone")
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(src)],
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    shutil.rmtree(src)  # nothing may read the source tree from here on

    project = tmp_path / "their_project"
    project.mkdir()
    shutil.copy(ROOT / "examples" / "leaky_relu.py", project / "leaky_relu.py")
    assert {f: f.read_bytes() for f in standin} == standin, "installing the suite changed the other distribution"
    # The suite installs under one name of its own: none of its four packages is a top-level name in site-packages.
    top_level = _top_level_names(python, "triton-portability-suite")
    assert not top_level & set(SUITE_PACKAGES), top_level
    assert top_level == {"triton_portability", "triton_portability_suite-0.1.0.dist-info"}, top_level
    site_packages = next(f for f in standin if f.name == "__init__.py").parent.parent
    assert [n for n in SUITE_PACKAGES if (site_packages / n).exists()] == ["kernels"]  # the stand-in's alone
    assert _imports_kernels_from(python, project) == "kernels-standin"
    # Through triton_portability, this process gets the suite's four packages and the public spec API; the one
    # imported from elsewhere first is refused naming both paths.
    where = subprocess.run([str(python), "-c", "from triton_portability import KernelSpec, register, inputs; "
                            "import suite, kernels, kernels.spec; assert KernelSpec is kernels.spec.KernelSpec; "
                            "print(suite.__file__, kernels.__file__)"],
                           cwd=project, check=True, capture_output=True, text=True).stdout
    assert str(ROOT) not in where and "site-packages" in where and "triton_portability" in where, where
    clash = subprocess.run([str(python), "-c", "import kernels, triton_portability"], cwd=project, capture_output=True,
                           text=True)
    assert clash.returncode == 1 and clash.stderr.strip().splitlines()[-1].startswith("ImportError: 'kernels' is "
                                                                                      "already imported from "), clash
    assert str(next(f for f in standin if f.name == "__init__.py")) in clash.stderr, clash.stderr
    assert str(Path(where.split()[1]).parent) in clash.stderr, clash.stderr
    assert not list((tmp_path / "venv").rglob("driver-validation"))  # the committed evidence stays out of the package

    run = subprocess.run([str(tmp_path / "venv" / "bin" / "triton-portability"), "--kernel-module=leaky_relu.py",
                          "--kernels=leaky_relu", "-n", "2"], cwd=project, capture_output=True, text=True)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert " passed" in out, out
    assert "| leaky_relu | fp32" in out, out  # the portability summary
    run_files = list((project / "runs").glob("run-*.json"))
    assert len(run_files) == 1, out
    assert not list(Path(where.split()[0]).parent.parent.glob(".pytest_cache")), "pytest's cache went into the package"
    # README: a report from the installed copy (its plots need the reports extra, matplotlib: here the outer
    # environment's).
    report = subprocess.run([str(python), "-m", "triton_portability.reports", "build", str(run_files[0]), "--out",
                             "report"], cwd=project, capture_output=True, text=True)
    assert report.returncode == 0, report.stdout + report.stderr
    assert (project / "report" / "report.html").exists() and "<img" in (project / "report" / "report.html").read_text()

    # A planted bug, run by path with each launcher from a shell whose PATH holds no environment of the suite's (a
    # fresh venv, not activated): its reproduction line starts with that path, and pasted as printed in such a shell
    # it runs from the installed copy and fails the same way.
    (project / "leaky_bug.py").write_text((ROOT / "examples" / "leaky_relu.py").read_text().replace(
        "y = tl.where(x >= 0, x, x * slope)", "y = tl.where(x > 0.5, x, x * slope)"))
    bare = {"PATH": _path_without(tmp_path / "venv" / "bin", Path(sys.executable).parent)}
    for launcher in ([str(tmp_path / "venv" / "bin" / "triton-portability")],
                     [str(python), "-m", "triton_portability"]):
        bug = subprocess.run([*launcher, "--kernel-module=leaky_bug.py", "--kernels=leaky_relu", "-k",
                              "test_matches_reference and fp32", "--no-results"],
                             cwd=project, capture_output=True, text=True, env=_no_interpret_env(**bare))
        _reproduces_as_printed(bug, project, bare, shlex.join(launcher) + " ")

    # Inert for the project's own tests: its plain `pytest` neither loads the suite nor collects its tests.
    (project / "test_theirs.py").write_text("def test_theirs():\n    assert True\n")
    theirs = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_theirs.py"],
                            cwd=project, capture_output=True, text=True)
    assert theirs.returncode == 0 and "1 passed" in theirs.stdout, theirs.stdout + theirs.stderr
    assert "portability:" not in theirs.stdout

    # `python -m triton_portability` is the command too, and names itself as started (here by the interpreter's
    # path); the help texts name the reports' command as this copy has it, never a checkout's `python -m reports`.
    usage = subprocess.run([str(python), "-m", "triton_portability", "--help"], cwd=project, capture_output=True,
                           text=True, env=_no_interpret_env(**bare))
    assert usage.returncode == 0 and usage.stdout.startswith(f"usage: {python} -m triton_portability "), usage
    assert "python -m triton_portability.reports compare" in " ".join(usage.stdout.split()), usage.stdout
    helps = subprocess.run([str(python), "-m", "triton_portability.reports", "--help"], cwd=project,
                           capture_output=True, text=True, env=_no_interpret_env(**bare))
    assert helps.returncode == 0 and helps.stdout.startswith(f"usage: {python} -m triton_portability.reports"), helps
    for text in (usage.stdout, helps.stdout):
        assert "python -m reports" not in " ".join(text.split()), text

    # Uninstalled, the suite takes only its own files: the other distribution is whole and still the `kernels`.
    assert {f: f.read_bytes() for f in standin} == standin, "running the suite changed the other distribution"
    uninstall = subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", "triton-portability-suite"],
                               capture_output=True, text=True)
    assert uninstall.returncode == 0, uninstall.stdout + uninstall.stderr
    assert all(f.is_file() and f.read_bytes() == content for f, content in standin.items()), \
        "uninstalling the suite removed or changed the other distribution's files"
    assert _imports_kernels_from(python, project) == "kernels-standin"
    assert not (tmp_path / "venv" / "bin" / "triton-portability").exists()


def test_the_launcher_is_what_a_person_would_type_from_the_run_s_directory(tmp_path, monkeypatch):
    """The pytest script or the interpreter: by its bare name where the shell finds that very file by it, else by its
    path relative to the working directory, else whole; a script that called pytest.main() is rerun as
    ``python -m pytest``, never as the script."""
    from suite.session import options

    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "pytest"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    main = str(tmp_path / "lib" / "pytest" / "__main__.py")
    assert options.detected_launcher(main, str(bin_dir / "python")) == "venv/bin/python -m pytest"
    assert options.detected_launcher(str(bin_dir / "pytest"), str(bin_dir / "python")) == "venv/bin/pytest"
    assert options.detected_launcher(str(tmp_path / "my_runner.py"), str(bin_dir / "python")) == \
        "venv/bin/python -m pytest"
    monkeypatch.setenv("PATH", str(bin_dir))
    assert options.detected_launcher(main, str(bin_dir / "python")) == "python -m pytest"
    assert options.detected_launcher(str(bin_dir / "pytest"), str(bin_dir / "python")) == "pytest"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the interpreter is not below it: its whole path
    monkeypatch.setenv("PATH", "/nonexistent")
    assert options.detected_launcher(main, str(bin_dir / "python")) == shlex.join([str(bin_dir / "python"), "-m",
                                                                                    "pytest"])
