"""``python -m suite [pytest options]`` from a checkout (``triton-portability`` or ``python -m triton_portability``
from an installed copy, triton_portability/__main__.py): the suite run from any directory, your own repository
included.

It runs pytest on the suite's own tests (this package's directory) with the suite's plugins and the suite's
pytest settings (``suite/pytest-suite.ini``), whatever the current directory holds: a project's own pytest
configuration (its ``addopts``, ``testpaths``, conftest files) never reaches the suite's run, and the suite's
plugins never reach the project's own ``pytest`` runs (nothing is registered as an entry point). Relative paths
(``--kernel-module=my_kernels.py``, ``--results-dir``) are read from the current directory.

    pip install <a clone or the repository's git URL>
    triton-portability --kernel-module=my_kernels.py --kernels=my_kernel -n auto

``--help`` lists the suite's own options first; ``--help-pytest`` gives pytest's whole help.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
SETTINGS = SUITE_DIR / "pytest-suite.ini"
PLUGINS = ("suite.workers.crash", "suite.plugin.hooks", "suite.plugin.ids")


def pytest_args(argv: list[str], cwd: str | None = None) -> list[str]:
    """The pytest command line for ``argv``: the suite's plugins and settings, and the suite's tests unless the
    caller names tests of its own (a path under the suite's directory). The rootdir is the suite's parent, so
    test ids read ``suite/test_kernels.py::...`` as in a checkout (run files and reports key on them); pytest's
    cache goes to the current directory, never into the installed package."""
    args = [arg for plugin in PLUGINS for arg in ("-p", plugin)]
    args += ["-c", str(SETTINGS), "--rootdir", str(SUITE_DIR.parent),
             "-o", f"cache_dir={Path(cwd or os.getcwd()) / '.pytest_cache'}"]
    argv = [_suite_test_id(a, cwd) for a in argv]
    names_tests = any(not a.startswith("-") and Path(a.split("::")[0]).resolve().is_relative_to(SUITE_DIR)
                      for a in argv if "::" in a or a.endswith(".py"))
    return args + list(argv) + ([] if names_tests else [str(SUITE_DIR)])


def _suite_test_id(arg: str, cwd: str | None) -> str:
    """A test id as the suite prints it (``suite/test_kernels.py::...``, relative to a checkout's root), made to name
    the suite's own file wherever it is installed: a reproduction line pasted as printed runs from any directory.
    An id of a file that exists where it is given is left as it is."""
    if arg.startswith("-") or not arg.startswith(f"{SUITE_DIR.name}/"):
        return arg
    path, sep, rest = arg.partition("::")
    if (Path(cwd or os.getcwd()) / path).exists() or not (SUITE_DIR.parent / path).exists():
        return arg
    return str(SUITE_DIR.parent / path) + sep + rest


# How this run was started, so that a reproduction line starts the same way (suite/session/options.py,
# repro_prefix): a plain pytest in another project does not load the suite's plugin (it is inert there).
LAUNCHER_ENV = "SUITE_LAUNCHER"


HELP_PYTEST = "--help-pytest"


def suite_help(prog: str = "triton-portability") -> str:
    """The suite's own options (its option group, as pytest would list them 200 lines down its help), then the
    pytest options a run most often takes, and how to see pytest's whole help."""
    import argparse

    from suite.session import options

    parser = argparse.ArgumentParser(prog=prog, add_help=False,
                                     usage=f"{prog} [suite options] [pytest options] [test ids]")

    class Group:  # what options.add_options calls on pytest's parser, onto argparse
        def getgroup(self, name: str, description: str = "") -> Group:
            self.group = parser.add_argument_group(f"{description} (the suite's options)")
            return self

        def addoption(self, *names: str, **kwargs) -> None:
            self.group.add_argument(*names, **kwargs)

    options.add_options(Group())
    return parser.format_help() + (
        "\npytest options a run often takes:\n"
        "  -n auto               run on workers (16 per GPU, or one per CPU on the interpreter)\n"
        "  -k EXPRESSION         only the tests whose ids match, e.g. -k 'softmax and fp16'\n"
        "  -x                    stop at the first failure\n"
        "  --hypothesis-profile=dev|ci|nightly|validation\n"
        "                        how many cases, and drawn how (default ci)\n"
        "  -m perf               the benchmarks (a GPU backend)\n"
        f"\npytest's whole help (its own options and every plugin's): {prog} {HELP_PYTEST}\n")


def on_import_path(cwd: str | None = None) -> None:
    """The current directory importable, as ``python -m suite`` has it: a dotted ``--kernel-module`` names a module
    there. (A console script's sys.path starts with the script's own directory instead.) Last, behind the suite's own
    directory and every installed package: a ``kernels/`` package or a ``reports.py`` in the current directory must
    not shadow the suite's, nor a ``triton.py`` or ``numpy.py`` the installed Triton or numpy (an INTERNALERROR).
    Where ``python -m`` put it first ('' or its path), it moves there too; the suite's own directory stays where it
    is (a checkout's ``python -m suite``)."""
    cwd = cwd or os.getcwd()
    here = Path(cwd).resolve()
    if here == SUITE_DIR.parent.resolve():
        if not any(p in ("", cwd) or (p and Path(p).resolve() == here) for p in sys.path):
            sys.path.insert(0, cwd)
        return
    sys.path[:] = [p for p in sys.path if not (p in ("", cwd) or (p and _resolved(p) == here))] + [cwd]


def _resolved(path: str) -> Path | None:
    try:
        return Path(path).resolve()
    except OSError:  # a path entry that cannot be resolved (too long, a loop): not the current directory
        return None


USAGE_ERROR = 4  # pytest's exit code for a usage error


def main(argv: list[str] | None = None, launcher: str | None = None) -> int:
    """``launcher``: how the run was started, for its help and reproduction lines (triton_portability/__main__.py
    passes its own); by default ``python -m suite`` or the ``triton-portability`` command, as typed (the
    interpreter's or the script's path where it was started by path: options.started_as)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not launcher:
        from suite.session.options import started_as

        launcher = started_as("suite", "triton-portability")
    if HELP_PYTEST in argv:
        argv = ["--help" if a == HELP_PYTEST else a for a in argv]
    elif "-h" in argv or "--help" in argv:
        print(suite_help(launcher), end="")
        return 0
    try:
        cwd = os.getcwd()
    except FileNotFoundError:  # pytest would end in a traceback from its own start-up
        print("error: the current directory no longer exists (it was deleted or moved after the shell entered it); "
              "cd to a directory that exists and run again", file=sys.stderr)
        return USAGE_ERROR
    on_import_path(cwd)
    before = os.environ.get(LAUNCHER_ENV)
    os.environ[LAUNCHER_ENV] = launcher
    import pytest

    try:
        return int(pytest.main(pytest_args(argv, cwd)))
    finally:  # called in-process (a test of the runner): what follows sees the environment as it was
        if before is None:
            os.environ.pop(LAUNCHER_ENV, None)
        else:
            os.environ[LAUNCHER_ENV] = before


if __name__ == "__main__":
    sys.exit(main())
