"""The kernel registry: every kernel module registers one spec (or more) here.

Generic tests iterate the registry, so adding a kernel is adding one module.
A user's own kernels register the same way from a module named with
``--kernel-module`` on the pytest command line.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import pkgutil
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

from kernels._validation import SpecError, defining_module
from kernels.spec import KernelSpec

_REGISTRY: dict[str, KernelSpec] = {}
_WHERE: dict[str, str] = {}  # kernel name -> the module that registered it
_LOADED: set[str] = set()  # resolved paths of user modules already imported
# kernel name -> (module name, file) of the user module whose import registered it (--kernel-module), which may be
# another than the one that defines its ``run`` or calls register() (a helper beside it): what --export-failures copies
_LOADED_BY: dict[str, tuple[str, str]] = {}


class KernelModuleError(ValueError):
    """A kernel module that cannot be used: it does not import, or a spec in it is wrong or a duplicate."""

# The public spec API (kernel modules import it); every other module of the package whose name does not start with
# "_" (a private helper) is a kernel module: tests/project/test_layout.py holds discovery to that.
API_MODULES = frozenset({"spec", "registry", "inputs", "paths"})


def register(spec: KernelSpec) -> KernelSpec:
    if not isinstance(spec, KernelSpec):
        raise SpecError(f"{defining_module()}: register() takes a KernelSpec, got {type(spec).__name__}")
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing is not spec:
        raise SpecError(f"{defining_module()}: kernel spec {spec.name!r} is already registered by {_WHERE[spec.name]}; "
                        f"kernel names must be unique (rename one)")
    _REGISTRY[spec.name] = spec
    _WHERE.setdefault(spec.name, defining_module())
    return spec


def builtin_modules() -> list[str]:
    """Every module in kernels/ but the public spec API (API_MODULES) and private helpers (names starting with '_')."""
    package_dir = Path(__file__).resolve().parent
    return sorted(f"kernels.{m.name}" for m in pkgutil.iter_modules([str(package_dir)])
                  if not m.name.startswith("_") and m.name not in API_MODULES)


def load_builtin() -> None:
    for name in builtin_modules():
        _guarded(name, lambda name=name: importlib.import_module(name))


def load_module(target: str, base: str | None = None) -> None:
    """Import a user's kernel module by dotted name or by path to a ``.py`` file (a relative one from ``base``, else
    from the current directory). KernelModuleError (one line, naming the module and what is wrong) when it does not
    import or a spec in it is wrong."""
    option = f"--kernel-module={target}"
    path = Path(base or "", target)
    if target.endswith(".py"):
        if not path.is_file():
            raise KernelModuleError(f"{option}: no such file")
        key = str(path.resolve())
        if key in _LOADED:  # named twice: its specs are registered already
            return
        mod_name = f"user_kernels_{path.stem}_{len(_LOADED)}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise KernelModuleError(f"{option}: cannot import it (not a Python source file?)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        before = set(_REGISTRY)
        with beside(path, keep=True):  # kept: a library beside it may be imported lazily, inside run
            _guarded(option, lambda: spec.loader.exec_module(module))
        _require_registered(option, before)
        _LOADED.add(key)
        _note_loaded(before, mod_name, key)
        return
    try:
        found = importlib.util.find_spec(target)
    except (ImportError, ValueError) as exc:
        raise KernelModuleError(f"{option}: cannot import it: {exc}") from None
    if found is None:
        raise KernelModuleError(f"{option}: no module of that name (give a dotted module name importable from the "
                                f"repository root, or a path ending in .py)")
    before = set(_REGISTRY)
    already = target in sys.modules  # imported before (by another module naming it): its kernels are registered
    _guarded(option, lambda: importlib.import_module(target))
    if not already:
        _require_registered(option, before)
        _note_loaded(before, target, str(Path(getattr(sys.modules[target], "__file__", "") or "").resolve()))


def _note_loaded(before: set[str], module: str, file: str) -> None:
    for name in set(_REGISTRY) - before:
        _LOADED_BY.setdefault(name, (module, file))


def _require_registered(option: str, before: set[str]) -> None:
    """A kernel module that registered nothing would leave the run testing only the shipped kernels, and passing."""
    if set(_REGISTRY) == before:
        raise KernelModuleError(f"{option}: the module registered no kernel: call kernels.registry.register(KernelSpec("
                                f"...)) at its top level (docs/adding-a-kernel.md)")


@contextlib.contextmanager
def beside(path: Path, keep: bool = False) -> Iterator[None]:
    """The module's directory on sys.path while it imports, as Python does for a script, so that a helper file beside
    it imports; last, not first as for a script: a module named after the library it wraps (examples/liger_kernel.py
    imports liger_kernel) would otherwise import itself. ``keep``: it stays there after the import, as a script's
    directory does (a spec that imports a library beside it inside ``run``, because the library needs a GPU at
    import, finds it there)."""
    directory = str(path.resolve().parent)
    if directory in sys.path:
        yield
        return
    sys.path.append(directory)
    try:
        yield
    finally:
        if not keep:
            with contextlib.suppress(ValueError):
                sys.path.remove(directory)


class _ExitAtImport(BaseException):
    """os._exit called by a module while it imports: raised instead, so that the run does not end there."""

    def __init__(self, status: object) -> None:
        super().__init__(status)
        self.status = status


@contextlib.contextmanager
def _no_exit() -> Iterator[None]:
    """os._exit would end the process at once (no run file, and the exit status the module chose, 0 included):
    while a module imports, it raises _ExitAtImport instead."""
    real = os._exit

    def refuse(status: object) -> None:
        raise _ExitAtImport(status)

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = real


def _guarded(what: str, load) -> None:
    try:
        with _no_exit():
            load()
    except (SystemExit, _ExitAtImport) as exc:
        how = f"os._exit({exc.status!r})" if isinstance(exc, _ExitAtImport) else f"sys.exit({exc.code!r})"
        raise KernelModuleError(f"{what}: the module exits at import ({how}{_where(exc)}); a kernel module defines and "
                                f"registers kernels, it must not end the process") from None
    except SpecError as exc:
        raise KernelModuleError(f"{what}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any error while importing a module is the module's to fix
        at = _where(exc)
        raise KernelModuleError(f"{what}: importing it raised {type(exc).__name__}: {exc}{at and f' ({at[2:]})'}") from None


def _where(exc: BaseException) -> str:
    """', at FILE:LINE': the last frame of the module's own code (not importlib's, nor this module's) in the traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if "importlib" not in f.filename and "<frozen" not in f.filename
            and f.filename != __file__]
    return f", at {user[-1].filename}:{user[-1].lineno}" if user else ""


def all_specs() -> list[KernelSpec]:
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def where(name: str) -> str:
    """The module that registered kernel ``name``."""
    return _WHERE.get(name, "<unknown module>")


def loaded_by(name: str) -> tuple[str, str] | None:
    """(module name, file) of the --kernel-module whose import registered kernel ``name``; None for a built-in
    kernel (its module is kernels.<the file where() names>) or one registered otherwise."""
    return _LOADED_BY.get(name)


def get(name: str) -> KernelSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no kernel named {name!r}; registered: {', '.join(sorted(_REGISTRY))}") from None
