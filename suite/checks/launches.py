"""What happens at a kernel launch while the suite runs a spec: which tensors each launch received, and which config
an ``@triton.autotune`` kernel runs.

**Launch recording.** Every launch of a ``@triton.jit`` function (compiled or interpreted, through an autotuner or
not) inside :func:`recording` notes the storages of its tensor arguments. The harness uses it to refuse an output
that reached no launch: a launcher that allocates its own output and copies the result into the suite's tensor
writes every element of it, so the poison cannot show an element the kernel never wrote, and a store past the end
lands in the launcher's tensor instead of the guard regions.

**Autotuned kernels.** Under the suite an ``@triton.autotune`` kernel never times anything: it runs the config the
case runs (:func:`chosen`: the case's config is one of the autotuner's configs, see
``kernels.spec.autotune_configs``), or, where the case's config names none of its parameters, its first config. On
the interpreter there is nothing to time with (the autotuner would ask for a GPU driver); on a GPU, tuning inside a
test would make the run's timings depend on what ran before, and the suite's configs come from its own cache.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from suite.session import stash


@dataclass
class Launches:
    """The launches seen inside one :func:`recording`: kernel names and their tensor arguments' storages."""

    kernels: list[str] = field(default_factory=list)
    storages: set[int] = field(default_factory=set)

    def reached(self, tensor: Any) -> bool:
        """Whether ``tensor``'s memory was handed to a launch (itself, a view of it, or a view of its storage)."""
        return _storage(tensor) in self.storages


def _storage(value: Any) -> int | None:
    try:
        return int(value.untyped_storage().data_ptr())
    except (AttributeError, RuntimeError):
        return None


def _note(record: Launches, name: str, args: tuple, kwargs: Mapping[str, Any]) -> None:
    record.kernels.append(name)

    def add(value: Any) -> None:
        if isinstance(value, (tuple, list)):
            for v in value:
                add(v)
            return
        base = getattr(value, "base", None)  # a TensorWrapper (triton.reinterpret) or a TensorDescriptor
        if base is not None and hasattr(base, "data_ptr") and not hasattr(value, "untyped_storage"):
            value = base
        if hasattr(value, "untyped_storage"):
            ptr = _storage(value)
            if ptr is not None:
                record.storages.add(ptr)

    for value in args:
        add(value)
    for value in kwargs.values():
        add(value)


@contextlib.contextmanager
def recording() -> Iterator[Launches]:
    """Note every launch inside (this thread's)."""
    outer = getattr(stash.session().launches, "record", None)
    record = Launches()
    stash.session().launches.record = record
    try:
        yield record
    finally:
        stash.session().launches.record = outer


@contextlib.contextmanager
def chosen(config: Mapping[str, Any] | None) -> Iterator[None]:
    """Autotuned kernels launched inside run ``config`` (see the module docstring)."""
    outer = getattr(stash.session().launches, "config", None)
    stash.session().launches.config = dict(config or {})
    try:
        yield
    finally:
        stash.session().launches.config = outer


def config_dict(config: Any) -> dict[str, Any]:
    """A ``triton.Config`` as the suite writes configs (kernels.spec.autotune_configs does the same)."""
    out = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
    if getattr(config, "num_ctas", 1) not in (None, 1):
        out["num_ctas"] = config.num_ctas
    if getattr(config, "maxnreg", None) is not None:
        out["maxnreg"] = config.maxnreg
    return out


class NotAnAutotuneConfig(ValueError):
    """The case's config sets an autotuned kernel's parameters to values none of its configs has."""


_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def take_untuned() -> dict[str, int]:
    """The autotuned kernels launched since the last call whose configs the case's config did not name (each ran
    its first config only), with how many configs each has; and forget them."""
    found = dict(stash.session().untuned)
    stash.session().untuned.clear()
    return found


def pick(configs: list[Any], choice: Mapping[str, Any], kernel: str) -> Any:
    """The autotuner config ``choice`` selects: the one whose meta-parameters (and launch options, where ``choice``
    gives them) it equals; the first where ``choice`` names none of the meta-parameters (none of the launch
    options, for configs that differ in those alone), noted for :func:`take_untuned` where there were others."""
    if not configs:
        raise NotAnAutotuneConfig(f"{kernel}: @triton.autotune with no configs")
    params = {k for c in configs for k in c.kwargs}
    if not params & set(choice):
        # Configs that differ in launch options alone are told apart by them, where the choice's match one.
        if not params and (match := [c for c in configs if all(choice[k] == v for k, v in config_dict(c).items()
                                                               if k in choice)]) and set(_OPTIONS) & set(choice):
            return match[0]
        if len(configs) > 1:
            stash.session().untuned[kernel] = len(configs)
        return configs[0]
    for config in configs:
        wanted = config_dict(config)
        if all(choice[k] == v for k, v in wanted.items() if k in choice) and all(k in choice for k in config.kwargs):
            return config
    raise NotAnAutotuneConfig(
        f"config {dict(choice)} is none of {kernel}'s @triton.autotune configs "
        f"{[config_dict(c) for c in configs]}: declare the spec's configs with kernels.spec.autotune_configs(...)")


def install() -> None:
    """Hook launches (compiled and interpreted) and the autotuner, once per process."""
    from suite import compat

    if compat.applied("launch-interception"):
        return
    compat.require("launch-interception")  # a Triton that moved what this hooks: a usage error naming the patch
    from triton.runtime import autotuner as autotuner_mod
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, interpreter.InterpretedFunction):
        _wrap_run(cls)
    autotuner = autotuner_mod.Autotuner
    original = autotuner.run

    def run(self, *args, **kwargs):
        choice = getattr(stash.session().launches, "config", None) or {}
        name = getattr(getattr(self, "base_fn", None), "__name__", "kernel")
        if conflicts := sorted(set(kwargs) & {k for c in self.configs for k in c.kwargs}):
            raise NotAnAutotuneConfig(
                f"the launcher passes {conflicts} to {name}, which @triton.autotune tunes: leave tuned "
                f"meta-parameters to the autotuner (the suite makes it run the case's config)")
        config = pick(list(self.configs), choice, name)
        configs, self.configs = self.configs, [config]  # one config: the autotuner launches it, timing nothing
        try:
            return original(self, *args, **kwargs)
        finally:
            self.configs = configs

    autotuner.run = run
    compat.mark_applied("launch-interception")


def _wrap_run(cls: type) -> None:
    original = cls.run

    def run(self, *args, **kwargs):
        record = getattr(stash.session().launches, "record", None)
        if record is not None and not kwargs.get("warmup", False):
            name = getattr(getattr(self, "fn", None), "__name__", None) or getattr(self, "__name__", "kernel")
            _note(record, name, args, {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")})
        return original(self, *args, **kwargs)

    cls.run = run
