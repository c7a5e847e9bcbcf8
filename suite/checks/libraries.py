"""Third-party kernel libraries as they ship, run under the suite: the few, named changes to a library's runtime
(never its kernels, never its launchers) without which it cannot be imported or checked here, applied when the
library is imported and said in the session header and the run file.

A kernel module imports the library as its users do (``import flag_gems``); :func:`install` (at session start,
before any kernel module, and in the compile matrix's process) puts an import hook in front of ``sys.meta_path``
that applies a library's changes as its modules are imported: some before its first module runs (environment
variables the library itself reads), the others just after the module that defines what they replace has run, before
any other module of the library uses it. Nothing is changed for a library that is never imported.

**FlagGems** (``flag_gems``, checked with 5.0.2). As it ships it cannot be imported without a GPU, and its launch cache
and tuner would take launches out of the suite's hands on any backend:

- ``vendor`` (no GPU visible to torch): FlagGems detects the vendor by running each vendor's device-query command
  and raises "No device were detected" where none answers. ``GEMS_VENDOR=nvidia``, FlagGems' own variable for
  naming the vendor, is set where unset: its NVIDIA configs and heuristics, as on an NVIDIA GPU (no arch-specific
  ops: those need a GPU to detect).
- ``tuning-db`` (no GPU visible to torch): FlagGems' tuning database is named after the GPU
  (``torch.cuda.get_device_name``, which a CPU build of torch refuses). ``FLAGGEMS_DB_URL=sqlite://`` (FlagGems' own
  variable: an in-memory database, nothing written to the user's cache) is set where unset.
- ``device-guard`` (no GPU visible to torch): every launcher enters ``torch_device_fn.device(x.device)``
  (``torch.cuda.device``), which refuses a CPU tensor. ``flag_gems.runtime.torch_device_fn`` becomes a view of
  ``torch.cuda`` whose ``device()`` is a no-op for a CPU device (the interpreter's tensors); the rest is torch.cuda's.
- ``libentry`` (every backend): ``@libentry()`` wraps a kernel in a launch cache that, after a key's first launch,
  launches the compiled kernel directly: past Triton's own launch path, where the suite records which tensors a
  launch received (an output no launch reached fails the case) and which config an autotuned kernel runs (the cache
  would run the first case's config for every later case). On the interpreter it cannot even be built (it looks for
  a compiled ``JITFunction``). ``libentry()`` returns the kernel as decorated below it: every launch goes through
  Triton's path, as a key's first launch through the cache does.
- ``libtuner`` (every backend): ``@libtuner(configs, key, ...)``, FlagGems' autotuner, times configs on a GPU (and
  asks a CPU build of torch for one), outside the suite's ``@triton.autotune`` hook that runs the case's config
  (suite/checks/launches.py). ``libtuner(...)`` returns ``triton.autotune`` with the same configs, key, pruning,
  reset/restore and hooks; its ``strategy`` (how keys are bucketed for its database) and ``policy`` (how timings
  pick a winner) decide only what to time, which the suite never does inside a test.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FLAG_GEMS = "flag_gems"
FLAG_GEMS_CHECKED = "5.0.2"


@dataclass(frozen=True)
class Change:
    """One change to a library's runtime: its name, the module it applies to (``None``: before the library's first
    module runs), when it applies, and what it does, in a line."""

    library: str
    name: str
    module: str | None
    when: str  # "always"; "no-gpu": torch sees no GPU (or Triton interprets); "interpret": Triton interprets
    what: str


CHANGES: tuple[Change, ...] = (
    Change(FLAG_GEMS, "vendor", None, "no-gpu",
           "GEMS_VENDOR=nvidia where unset (its vendor detection needs a GPU)"),
    Change(FLAG_GEMS, "tuning-db", None, "no-gpu",
           "FLAGGEMS_DB_URL=sqlite:// where unset (its tuning database is named after the GPU)"),
    Change(FLAG_GEMS, "device-guard", "flag_gems.runtime", "no-gpu",
           "runtime.torch_device_fn.device() a no-op for a CPU device (torch.cuda.device refuses one)"),
    Change(FLAG_GEMS, "libentry", "flag_gems.utils.libentry", "always",
           "libentry() returns the kernel unwrapped (its launch cache bypasses Triton's launch path)"),
    Change(FLAG_GEMS, "pointwise-dynamic", "flag_gems.utils.pointwise_dynamic", "interpret",
           "@pointwise_dynamic takes an interpreted scalar function (it asserts a JITFunction and reads its src, "
           "cache_key, __globals__ and __module__, which it is then given)"),
    Change(FLAG_GEMS, "libtuner", "flag_gems.utils.libentry", "always",
           "libtuner(...) is triton.autotune with its configs, key and pruning (strategy and policy only decide "
           "what to time)"),
)


class LibraryUnsupported(ImportError):
    """A library's runtime is not as the change expects (another version moved it): the change cannot be made."""


def gpu_visible() -> bool:
    """Whether torch sees a GPU (CUDA or ROCm) and Triton is not interpreting."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return False
    import torch

    return bool(torch.cuda.is_available())


class _DeviceFunctions:
    """``torch.cuda`` (or the vendor's module) as FlagGems uses it, but ``device(d)`` enters nothing for a CPU
    device."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def device(self, device: Any) -> Any:
        kind = getattr(device, "type", device)
        if kind == "cpu" or (isinstance(kind, str) and kind.startswith("cpu")):
            return contextlib.nullcontext()
        return self._inner.device(device)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _require(module: Any, name: str, change: Change) -> Any:
    if not hasattr(module, name):
        raise LibraryUnsupported(
            f"{change.library} (from {getattr(module, '__file__', None)}): the suite's change {change.name!r} "
            f"replaces {module.__name__}.{name}, which is not there (the changes are written for {change.library} "
            f"{FLAG_GEMS_CHECKED}): install {change.library.replace('_', '-')}=={FLAG_GEMS_CHECKED}, or see "
            f"docs/third-party.md")
    return getattr(module, name)


def _version(library: str) -> str:
    try:
        return importlib.metadata.version(library.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return "(no distribution)"


def _flag_gems_before(change: Change) -> None:
    variable, value = {"vendor": ("GEMS_VENDOR", "nvidia"), "tuning-db": ("FLAGGEMS_DB_URL", "sqlite://")}[change.name]
    os.environ.setdefault(variable, value)


def _flag_gems_after(change: Change, module: Any) -> None:
    if change.name == "device-guard":
        _require(module, "torch_device_fn", change)
        module.torch_device_fn = _DeviceFunctions(module.torch_device_fn)
    elif change.name == "libentry":
        _require(module, "libentry", change)

        def libentry() -> Callable[[Any], Any]:
            """FlagGems' @libentry() under the suite: the kernel as decorated below it (suite/checks/libraries.py)."""
            return lambda fn: fn

        module.libentry = libentry
    elif change.name == "pointwise-dynamic":
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        init = _require(module, "PointwiseDynamicFunction", change).__init__
        _require(module, "JITFunction", change)
        module.JITFunction = (JITFunction, InterpretedFunction)  # the class its constructor asserts

        def __init__(self, op_desc, scalar_fn, config=None):
            if isinstance(scalar_fn, InterpretedFunction):
                _as_jit_function(scalar_fn)
            init(self, op_desc, scalar_fn, config)

        module.PointwiseDynamicFunction.__init__ = __init__
    elif change.name == "libtuner":
        _require(module, "libtuner", change)
        import triton

        def libtuner(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
                     post_hook=None, warmup=25, rep=100, use_cuda_graph=False, do_bench=None, strategy="default",
                     policy="default"):
            """FlagGems' @libtuner(...) under the suite: triton.autotune with the same configs, key and pruning
            (suite/checks/libraries.py)."""
            # warmup, rep, use_cuda_graph, strategy and policy say only how to time (Triton 3.6 warns that the first
            # three are deprecated): nothing is timed under the suite.
            del warmup, rep, use_cuda_graph, strategy, policy
            return triton.autotune(configs, key, prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero,
                                   restore_value=restore_value, pre_hook=pre_hook, post_hook=post_hook,
                                   do_bench=do_bench)

        module.libtuner = libtuner


def _as_jit_function(fn: Any) -> None:
    """An interpreted function given what FlagGems' code generator reads of a JITFunction: its source from ``def``
    on, a key naming that source, its globals and module."""
    import hashlib
    import inspect
    import textwrap

    if hasattr(fn, "src"):
        return
    src = textwrap.dedent(inspect.getsource(fn.fn))
    src = src[src.index("def "):]
    fn.src = src
    fn.cache_key = hashlib.sha256(src.encode()).hexdigest()
    fn.__globals__ = fn.fn.__globals__
    fn.__module__ = fn.fn.__module__


class _Loader(importlib.abc.Loader):
    """The library module's own loader, then the changes that apply to that module."""

    def __init__(self, inner: importlib.abc.Loader, after: Callable[[Any], None]) -> None:
        self._inner, self._after = inner, after

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        self._inner.exec_module(module)
        self._after(module)


class LibraryHook(importlib.abc.MetaPathFinder):
    """The import hook: for a library's module with changes, the spec the other finders give, its loader wrapped.
    Keeps the changes it applied in this process (:attr:`applied`)."""

    def __init__(self, changes: tuple[Change, ...] = CHANGES) -> None:
        self.changes = changes
        self.applied: list[Change] = []
        self.no_gpu: bool | None = None

    def _active(self, change: Change) -> bool:
        if change.when == "interpret":
            return os.environ.get("TRITON_INTERPRET") == "1"
        if self.no_gpu is None:
            self.no_gpu = not gpu_visible()
        return self.no_gpu or change.when == "always"

    def find_spec(self, fullname, path, target=None):
        library = fullname.partition(".")[0]
        before = [c for c in self.changes if c.library == library and c.module is None and fullname == library]
        after = [c for c in self.changes if c.module == fullname]
        if not before and not after:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        for change in before:
            if self._active(change):
                _flag_gems_before(change)
                self.applied.append(change)
        changes = [c for c in after if self._active(c)]
        if changes:
            def run_after(module: Any) -> None:
                for change in changes:
                    _flag_gems_after(change, module)
                    self.applied.append(change)

            spec.loader = _Loader(spec.loader, run_after)
        return spec


def hook() -> LibraryHook | None:
    """This process's hook, where :func:`install` put one."""
    return next((f for f in sys.meta_path if isinstance(f, LibraryHook)), None)


def install() -> LibraryHook:
    """The hook at the front of ``sys.meta_path``, once per process. A library imported before it stays as it is."""
    found = hook()
    if found is None:
        found = LibraryHook()
        sys.meta_path.insert(0, found)
    return found


def applied(library: str) -> list[str]:
    """The changes made to ``library``'s runtime in this process, one line each (name: what)."""
    found = hook()
    return [f"{c.name}: {c.what}" for c in (found.applied if found else []) if c.library == library]


def describe() -> list[str]:
    """Session-header lines: each library this process changed, and how."""
    found = hook()
    libraries = sorted({c.library for c in (found.applied if found else [])})
    return [f"{lib} {_version(lib)}: runtime changed for the suite (docs/third-party.md; kernels and launchers as "
            f"shipped): " + "; ".join(applied(lib)) for lib in libraries]


def record(kernel_modules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run file's kernel-module records (suite/session/provenance.py), each library this process changed given
    its ``runtime_changes`` (the lines of :func:`applied`)."""
    for module in kernel_modules:
        for library in module.get("libraries", ()):
            if changes := applied(library["module"]):
                library["runtime_changes"] = changes
    return kernel_modules
