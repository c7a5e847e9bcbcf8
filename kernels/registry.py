"""The kernel registry: every kernel module registers one spec (or more) here.

Generic tests iterate the registry, so adding a kernel is adding one module.
A user's own kernels register the same way from a module named with
``--kernel-module`` on the pytest command line.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

from kernels.spec import KernelSpec

_REGISTRY: dict[str, KernelSpec] = {}

# Modules of the package that define no kernel.
_NOT_KERNELS = {"spec", "registry"}


def register(spec: KernelSpec) -> KernelSpec:
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing is not spec:
        raise ValueError(f"kernel spec {spec.name!r} is registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def builtin_modules() -> list[str]:
    """Every module in kernels/ but the plumbing; names starting with '_' are helpers."""
    package_dir = Path(__file__).resolve().parent
    return sorted(f"kernels.{m.name}" for m in pkgutil.iter_modules([str(package_dir)])
                  if not m.name.startswith("_") and m.name not in _NOT_KERNELS)


def load_builtin() -> None:
    for name in builtin_modules():
        importlib.import_module(name)


def load_module(target: str) -> None:
    """Import a user's kernel module by dotted name or by path to a ``.py`` file."""
    path = Path(target)
    if target.endswith(".py"):
        if not path.is_file():
            raise ValueError(f"--kernel-module: no such file {target!r}")
        mod_name = f"user_kernels_{path.stem}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ValueError(f"--kernel-module: cannot import {target!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        spec.loader.exec_module(module)
        return
    try:
        importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise ValueError(f"--kernel-module: cannot import {target!r}: {exc}") from None


def all_specs() -> list[KernelSpec]:
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def get(name: str) -> KernelSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no kernel named {name!r}; registered: {', '.join(sorted(_REGISTRY))}") from None
