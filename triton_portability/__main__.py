"""``python -m triton_portability [pytest options]`` and the ``triton-portability`` command: the suite run from any
directory (suite/__main__.py), from an installed copy or a checkout alike."""

from __future__ import annotations

import os
import sys

import triton_portability


def main(argv: list[str] | None = None) -> int:
    # pytest-xdist's workers start a fresh interpreter that imports the suite's plugins by name: HOME on their path too.
    home = str(triton_portability.HOME)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([home, *(p for p in paths if p != home)])
    from suite.__main__ import main as run
    from suite.session.options import started_as

    # As typed: `.venv/bin/triton-portability ...` started by path prints its reproduction lines with that path.
    return run(argv, launcher=started_as("triton_portability", "triton-portability"))


if __name__ == "__main__":
    sys.exit(main())
