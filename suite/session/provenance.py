"""Which code a run tested: each ``--kernel-module`` by the sha256 of its file, and the libraries its import brought
in (a planted copy of a library and the installed one are then told apart in the run file and by ``compare``).

A library is a top-level module that was not in ``sys.modules`` before the kernel module's import and is not part of
the standard library or of the suite; it is named by the distribution that provides it
(``importlib.metadata.packages_distributions``), with that distribution's version, and the path it was imported
from. A module no installed distribution provides (a helper beside the kernel module, a copy on PYTHONPATH) is
recorded with no distribution and no version: its path says where it came from.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Top-level modules of this repository (triton_portability: the package of an installed copy, and its spec API): never
# a kernel module's library.
OWN_PACKAGES = frozenset({"kernels", "suite", "hardware_profiles", "reports", "triton_portability", "tests", "examples"})


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def module_file(target: str, base: str | None = None) -> Path | None:
    """The file of a ``--kernel-module`` value: the path given (a relative one from ``base``), or where the dotted
    name was imported from."""
    if target.endswith(".py"):
        return Path(base or "", target).resolve()
    module = sys.modules.get(target)
    origin = getattr(module, "__file__", None)
    if origin is None:
        found = importlib.util.find_spec(target)
        origin = found.origin if found is not None else None
    return Path(origin).resolve() if origin and Path(origin).is_file() else None


def _module_path(name: str) -> str | None:
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if file:
        return str(Path(file).resolve().parent if hasattr(module, "__path__") else Path(file).resolve())
    paths = list(getattr(module, "__path__", None) or [])  # a namespace package
    return str(Path(paths[0]).resolve()) if paths else None


def _own(name: str) -> bool:
    return (name in sys.stdlib_module_names or name in sys.builtin_module_names or name in OWN_PACKAGES
            or name.startswith(("_", "user_kernels_")))  # private C parts, the kernel modules themselves


def libraries(new_modules: set[str]) -> list[dict[str, Any]]:
    """The records of the libraries among ``new_modules`` (names that appeared in ``sys.modules``)."""
    tops = [t for t in sorted({n.partition(".")[0] for n in new_modules}) if not _own(t) and t in sys.modules]
    if not tops:
        return []
    providers = importlib.metadata.packages_distributions()
    out = []
    for top in tops:
        dists = sorted(set(providers.get(top, [])))
        name = dists[0] if dists else None
        try:
            version = importlib.metadata.version(name) if name else None
        except importlib.metadata.PackageNotFoundError:
            version = None
        path = _module_path(top)
        if name is None and path is None:  # a module made at run time (Cython's cython_runtime): no code to name
            continue
        out.append({"module": top, "distribution": name, "version": version, "path": path})
    return out


def record_import(target: str, load: Callable[[], None], base: str | None = None) -> dict[str, Any]:
    """Run ``load`` (the import of kernel module ``target``, a relative path from ``base``) and say what it was: its
    file's sha256 and the libraries its import brought in."""
    before = set(sys.modules)
    file = module_file(target, base) if target.endswith(".py") else None
    load()
    file = file or module_file(target)
    return {"module": target, "file": str(file) if file else None, "sha256": sha256(file) if file else None,
            "libraries": libraries(set(sys.modules) - before)}


def describe(record: dict[str, Any]) -> str:
    """One session-header line: the kernel module's hash and the libraries it imported."""
    libs = ", ".join(f"{lib['distribution'] or lib['module']} {lib['version'] or '(no distribution)'} from "
                     f"{lib['path']}" for lib in record["libraries"])
    return (f"kernel module {record['module']}: sha256 {(record['sha256'] or 'unknown')[:16]}; "
            f"imported {libs or 'no library beyond those already loaded'}")
