"""The suite under a name of its own: ``import triton_portability`` (or its commands) makes the suite's four packages,
``suite``, ``kernels``, ``reports`` and ``hardware_profiles``, importable under those names for this process, and
gives the public spec API for a kernel module of one's own, the same from a checkout and from an installed copy:

    from triton_portability import KernelSpec, Case, Dim, Tolerance, register, inputs, paths

An installed copy holds those four under ``triton_portability/_root/`` (no ``__init__.py`` there: pytest imports the
suite's test files as ``suite.test_kernels`` as in a checkout), so it owns no generic top-level name in
site-packages and leaves another distribution's ``kernels`` alone; in a checkout they are the repository's own
top-level folders. ``HOME`` (that directory) goes first on ``sys.path``: inside this process ``import kernels`` is the
suite's. A suite package already imported from elsewhere (another distribution's ``kernels``) is an ImportError
naming both paths, before anything of the suite is imported.
"""

from __future__ import annotations

import os
import sys

# `python -m triton_portability` put the current directory first on sys.path: a pytest.py, json.py or triton.py there
# would be imported for the real one before the suite could put the directory last (suite/__main__.py,
# on_import_path). It goes last now, before this package imports anything (sys.argv[0] is '-m' until __main__ runs).
if sys.argv[:1] == ["-m"] and sys.path[:1] == [os.getcwd()]:
    sys.path.append(sys.path.pop(0))

from pathlib import Path  # noqa: E402 - after the current directory has gone last

_HERE = Path(__file__).resolve().parent
# Installed: site-packages/triton_portability/_root; in a checkout: the repository root, this folder's parent.
HOME = _HERE / "_root" if (_HERE / "_root" / "suite").is_dir() else _HERE.parent
PACKAGES = ("suite", "kernels", "reports", "hardware_profiles")


def foreign_imports() -> list[str]:
    """One line per suite package already imported from somewhere other than ``HOME``."""
    found = []
    for name in PACKAGES:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or []), None)
        if module is not None and (where is None or not Path(where).resolve().is_relative_to(HOME / name)):
            found.append(f"'{name}' is already imported from {where or 'a namespace package'}, not the suite's "
                         f"{HOME / name} (import triton_portability before anything imports another '{name}', or "
                         f"give the suite an environment of its own)")
    return found


def _claim_path() -> None:
    problems = foreign_imports()
    if problems:
        raise ImportError("; ".join(problems))
    home = str(HOME)
    if sys.path[:1] != [home]:
        sys.path[:] = [home, *(p for p in sys.path if p != home)]


_claim_path()

# The public spec API (kernels.spec, kernels.registry.register, kernels.inputs, kernels.paths), imported when first
# used: `import triton_portability` alone (the commands) does not import torch.
_SPEC_NAMES = (
    "AMD_ONLY_OPTIONS", "BACKENDS", "DTYPES", "DTYPE_NAMES", "FAMILIES", "INTEGER_DTYPES", "KNOWN_ISSUE_TESTS",
    "LAUNCH_OPTIONS", "VENDOR_ONLY_OPTIONS", "Case", "CodePath", "Dim", "IndexOutput", "JitKernel", "KernelSpec",
    "KnownIssue", "MissingArgument", "Property", "SpecError", "Tolerance", "amd_options", "autotune_config_space",
    "autotune_configs", "cdiv", "constexpr_names", "is_autotuned", "is_autotuner", "jit_name", "next_power_of_2",
    "row_chunks", "scoped_config", "signature", "split_config", "unwrap_jit",
)
__all__ = [*_SPEC_NAMES, "register", "inputs", "paths", "HOME"]


def __getattr__(name: str):
    import importlib

    if name in _SPEC_NAMES:
        return getattr(importlib.import_module("kernels.spec"), name)
    if name == "register":
        return importlib.import_module("kernels.registry").register
    if name in ("inputs", "paths"):
        return importlib.import_module(f"kernels.{name}")
    raise AttributeError(f"module 'triton_portability' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
