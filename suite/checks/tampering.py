"""Whether a kernel module changed the suite's own checking code.

A kernel module runs in the suite's process, so it can replace what judges it: assigning
``suite.checks.harness.check_output = lambda *a, **k: ...`` made its own wrong kernel and every other module's
planted bug pass. :class:`Snapshot` imports every module of ``suite.checks`` and notes, before any kernel module
is imported, what every loaded module of ``suite`` (its tests aside) holds: each function and class (a function's
code too, a class's own attributes) and each ALL_CAPS constant (a container's contents too:
``harness.GUARD_ELEMENTS``, ``tolerance.UNIT_ROUNDOFF``). :meth:`Snapshot.changes` names what differs since; the
plugin refuses a module whose import changed any of it (a usage error naming the module and the attribute), and
fails a test during which something changed it. Names of the process's own state (lowercase values, such as the
session object) are not looked at.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
import sys
import types
from pathlib import Path
from typing import Any

_PACKAGE = "suite"


def _watched(value: Any, name: str) -> bool:
    return isinstance(value, (types.FunctionType, type, types.ModuleType)) or name.lstrip("_").isupper()


def _contents(value: Any) -> Any:
    """What a constant holds, where it can change in place (a dict, list or set)."""
    if isinstance(value, (dict, list, set)):
        try:
            return copy.copy(value)
        except Exception:  # noqa: BLE001 - a value that cannot be copied is compared by identity alone
            return None
    return None


def _same(was: Any, now: Any) -> bool:
    try:
        return bool(was == now)
    except Exception:  # noqa: BLE001 - values whose == is not a bool (tensors): not comparable, so not judged
        return True


def _fingerprint(value: Any) -> tuple:
    code = getattr(value, "__code__", None)
    defaults = getattr(value, "__defaults__", None)
    members = ()
    if isinstance(value, type) and value.__module__.startswith(f"{_PACKAGE}."):
        members = tuple(sorted((k, id(v), id(getattr(v, "__code__", None))) for k, v in vars(value).items()
                               if not k.startswith("__")))
    return id(value), id(code), id(defaults), members


def _defined_in(value: Any, module_name: str) -> str:
    """Where a replacement function was defined, when not in the module it replaced one of: its file."""
    by = getattr(value, "__module__", None) if isinstance(value, types.FunctionType) else None
    if not by or by == module_name:
        return ""
    path = getattr(sys.modules.get(by), "__file__", None) or by
    try:
        path = str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        pass
    return f", by a function of {path}"


class Snapshot:
    """What the loaded modules of ``suite`` hold now (see the module docstring)."""

    def __init__(self) -> None:
        import suite.checks

        for found in pkgutil.iter_modules(suite.checks.__path__, "suite.checks."):  # loaded later by the tests
            importlib.import_module(found.name)
        self.seen: dict[tuple[str, str], tuple[tuple, Any]] = {}
        for module_name, module in sorted(self._modules().items()):
            for name, value in list(vars(module).items()):
                if name.startswith("__") or not _watched(value, name):
                    continue
                self.seen[(module_name, name)] = (_fingerprint(value), _contents(value))

    @staticmethod
    def _modules() -> dict[str, types.ModuleType]:
        return {name: module for name, module in list(sys.modules.items())
                if module is not None and (name == _PACKAGE or name.startswith(f"{_PACKAGE}."))
                and not name.split(".")[-1].startswith("test_")}

    def changes(self) -> list[str]:
        """What differs from the snapshot: ``module.attribute`` and how (replaced, removed, changed in place),
        naming the module that defined a replacement where it says."""
        found = []
        for (module_name, name), (fingerprint, contents) in self.seen.items():
            module = sys.modules.get(module_name)
            where = f"{module_name}.{name}"
            if module is None or name not in vars(module):
                found.append(f"{where} (removed)")
                continue
            value = vars(module)[name]
            if _fingerprint(value) != fingerprint:
                found.append(f"{where} (replaced{_defined_in(value, module_name)})")
            elif contents is not None and not _same(contents, _contents(value)):
                found.append(f"{where} (its contents changed)")
        return found
