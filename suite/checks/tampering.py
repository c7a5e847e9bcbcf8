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

What the checks depend on outside ``suite`` is watched alike, since a kernel module that changes it makes every other
module's planted bug pass as surely:

- the spec API's modules (``kernels.inputs``, ``kernels.spec``, ``kernels.registry``, ``kernels.paths`` and the
  private helpers they import): zeroing ``kernels.inputs``' draws (``Stream.normal``, ``values``, ``_NORMAL_SCALE``)
  gives every other module's kernel inputs of zeros; the names that hold the process's state (the registry's
  tables, the draw device) are left out;
- every spec registered by another module: a spec already registered when a module is imported (and each one
  registered later, from the next look on) must stay the object it was, with the same fields (a function's code, a
  tolerance's safety): a module that replaces another's spec in the registry or rewrites its fields (its reference,
  its tolerance) is refused;
- the torch and math functions the checks call (``torch.isfinite``, ``torch.Tensor.__eq__``, ``math.isfinite``): every
  callable of ``torch``, of ``torch.Tensor`` and its C base, and of ``math`` must stay the object it was, or become
  the library's own function of the same name (torch rebinds a few as its submodules load).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pkgutil
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_PACKAGE = "suite"
# The spec API's modules and the private helpers of ``kernels``, watched as ``suite``'s are (kernel modules are not:
# their specs are watched through the registry).
_KERNEL_API = ("kernels.inputs", "kernels.spec", "kernels.registry", "kernels.paths", "kernels._types",
               "kernels._validation", "kernels._tiles")
# Names of those modules that hold the process's state, changed by the suite itself as it runs.
_STATE = {("kernels.registry", "_REGISTRY"), ("kernels.registry", "_WHERE"), ("kernels.registry", "_LOADED"),
          ("kernels.registry", "_LOADED_BY"),
          ("kernels.inputs", "_DRAW_DEVICE"), ("kernels.inputs", "_STREAM_DEVICE")}


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
    if isinstance(value, type) and value.__module__.startswith((f"{_PACKAGE}.", "kernels.")):
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


def _deep(value: Any, depth: int = 0) -> Any:
    """A spec field as compared: a function by its object, code and defaults; a dataclass (a Tolerance, a Dim, a
    CodePath), a tuple or a mapping by its parts; a number or string by its value; anything else by its object."""
    if isinstance(value, (bool, int, float, str, bytes, type(None))):
        return value
    if depth > 4:
        return id(value)
    if isinstance(value, types.FunctionType):
        return id(value), id(value.__code__), id(value.__defaults__), id(value.__kwdefaults__)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return id(value), tuple((f.name, _deep(getattr(value, f.name, None), depth + 1))
                                for f in dataclasses.fields(value))
    if isinstance(value, (tuple, list)):
        return id(value), tuple(_deep(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        try:
            return id(value), tuple((repr(k), _deep(v, depth + 1)) for k, v in value.items())
        except Exception:  # noqa: BLE001 - a mapping that cannot be read through: compared by identity
            return id(value)
    return id(value)


def _registered() -> dict[str, Any]:
    registry = sys.modules.get("kernels.registry")
    return dict(getattr(registry, "_REGISTRY", {}) or {})


def _foreign() -> dict[str, Any]:
    """The torch and math callables the checks depend on, by name: ``torch.isfinite``, ``torch.Tensor.__eq__``, ..."""
    import math

    import torch

    found: dict[str, Any] = {}
    for prefix, namespace in (("torch", vars(torch)), ("torch.Tensor", vars(torch._C.TensorBase)),
                              ("torch.Tensor", vars(torch.Tensor)), ("math", vars(math))):
        for name, value in list(namespace.items()):
            if not name.startswith("__") or name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
                                                     "__abs__", "__sub__", "__getitem__", "__bool__", "__float__"):
                if callable(value):
                    found[f"{prefix}.{name}"] = value
    return found


def _rebound_by_library(name: str, value: Any) -> bool:
    """Whether ``value``, now at ``name`` (``torch.manual_seed``), is the library's own function of that name: torch
    rebinds some of its names as its submodules load (importing liger-kernel rebinds ``torch.manual_seed`` to
    ``torch.random.manual_seed``'s wrapper). A function of another name or of another module is a replacement."""
    library = name.split(".")[0]
    module = getattr(value, "__module__", None) or ""
    return getattr(value, "__name__", None) == name.rsplit(".", 1)[-1] and (module == library
                                                                          or module.startswith(f"{library}."))


class Snapshot:
    """What the loaded modules of ``suite`` hold now (see the module docstring)."""

    def __init__(self) -> None:
        import suite.checks

        for found in pkgutil.iter_modules(suite.checks.__path__, "suite.checks."):  # loaded later by the tests
            importlib.import_module(found.name)
        for name in _KERNEL_API:
            importlib.import_module(name)
        self.seen: dict[tuple[str, str], tuple[tuple, Any]] = {}
        for module_name, module in sorted(self._modules().items()):
            for name, value in list(vars(module).items()):
                if name.startswith("__") or not _watched(value, name) or (module_name, name) in _STATE:
                    continue
                self.seen[(module_name, name)] = (_fingerprint(value), _contents(value))
        self.specs: dict[str, tuple[Any, Any]] = {}  # registered spec name -> (the spec, its fields as compared)
        self._note_specs()
        self.foreign = {name: id(value) for name, value in _foreign().items()}

    def _note_specs(self) -> None:
        """Note the specs registered since the last look, as they are now."""
        for name, spec in _registered().items():
            if name not in self.specs:
                self.specs[name] = (spec, _deep(spec))

    @staticmethod
    def _modules() -> dict[str, types.ModuleType]:
        return {name: module for name, module in list(sys.modules.items())
                if module is not None and (name == _PACKAGE or name.startswith(f"{_PACKAGE}.") or name in _KERNEL_API)
                and not name.split(".")[-1].startswith("test_")}

    def _spec_changes(self) -> list[str]:
        registered = _registered()
        found = []
        registry = sys.modules.get("kernels.registry")
        for name, (spec, fields) in self.specs.items():
            where = f"kernel spec {name!r} (registered by {registry.where(name) if registry else '?'})"
            now = registered.get(name)
            if now is None:
                found.append(f"{where} (removed from the registry)")
            elif now is not spec:
                found.append(f"{where} (replaced in the registry)")
            elif _deep(now) != fields:
                changed = [f.name for f in dataclasses.fields(spec)
                           if _deep(getattr(spec, f.name, None)) != dict(fields[1]).get(f.name)]
                found.append(f"{where} (its field(s) {', '.join(changed) or '?'} changed)")
        return found

    def _foreign_changes(self) -> list[str]:
        now = _foreign()
        found = []
        for name, was in list(self.foreign.items()):
            value = now.get(name)
            if value is None:
                found.append(f"{name} (removed)")
            elif id(value) != was:
                if _rebound_by_library(name, value):
                    self.foreign[name] = id(value)  # the library's own function of that name, as it loads
                    continue
                found.append(f"{name} (replaced{_defined_in(value, '')})")
        return found

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
        found += self._spec_changes() + self._foreign_changes()
        self._note_specs()  # specs registered since (by the module just imported) are watched from now on
        return found
