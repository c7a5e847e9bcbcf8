"""``python -m suite [pytest options]`` (or the ``triton-portability`` command): the suite from an installed
copy, run from any directory, your own repository included.

It runs pytest on the suite's own tests (this package's directory) with the suite's plugins and the suite's
pytest settings (``suite/pytest-suite.ini``), whatever the current directory holds: a project's own pytest
configuration (its ``addopts``, ``testpaths``, conftest files) never reaches the suite's run, and the suite's
plugins never reach the project's own ``pytest`` runs (nothing is registered as an entry point). Relative paths
(``--kernel-module=my_kernels.py``, ``--results-dir``) are read from the current directory.

    pip install <a clone or the repository's git URL>
    python -m suite --kernel-module=my_kernels.py --kernels=my_kernel -n auto
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
SETTINGS = SUITE_DIR / "pytest-suite.ini"
PLUGINS = ("suite.workers.crash", "suite.plugin.hooks")


def pytest_args(argv: list[str], cwd: str | None = None) -> list[str]:
    """The pytest command line for ``argv``: the suite's plugins and settings, and the suite's tests unless the
    caller names tests of its own (a path under the suite's directory). The rootdir is the suite's parent, so
    test ids read ``suite/test_kernels.py::...`` as in a checkout (run files and reports key on them); pytest's
    cache goes to the current directory, never into the installed package."""
    args = [arg for plugin in PLUGINS for arg in ("-p", plugin)]
    args += ["-c", str(SETTINGS), "--rootdir", str(SUITE_DIR.parent),
             "-o", f"cache_dir={Path(cwd or os.getcwd()) / '.pytest_cache'}"]
    names_tests = any(not a.startswith("-") and Path(a.split("::")[0]).resolve().is_relative_to(SUITE_DIR)
                      for a in argv if "::" in a or a.endswith(".py"))
    return args + list(argv) + ([] if names_tests else [str(SUITE_DIR)])


USAGE_ERROR = 4  # pytest's exit code for a usage error


def main(argv: list[str] | None = None) -> int:
    try:
        cwd = os.getcwd()
    except FileNotFoundError:  # pytest would end in a traceback from its own start-up
        print("error: the current directory no longer exists (it was deleted or moved after the shell entered it); "
              "cd to a directory that exists and run again", file=sys.stderr)
        return USAGE_ERROR
    import pytest

    return int(pytest.main(pytest_args(sys.argv[1:] if argv is None else argv, cwd)))


if __name__ == "__main__":
    sys.exit(main())
