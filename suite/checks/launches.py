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
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from suite.checks import memcheck
from suite.session import stash


@dataclass
class Launches:
    """The launches seen inside one :func:`recording`: kernel names and their tensor arguments' storages."""

    kernels: list[str] = field(default_factory=list)
    storages: set[int] = field(default_factory=set)
    # What each kernel's @triton.heuristics computed at its last launch: kernel -> {parameter: value}.
    heuristics: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The config each @triton.autotune kernel ran at its last launch: kernel -> config (as config_dict writes it).
    autotuned: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The storages each kernel's launches received: kernel (kernel_key) -> storages.
    by_kernel: dict[str, set[int]] = field(default_factory=dict)
    # Who changed each output element last, where the case watches its outputs (suite/checks/last_writer.py).
    watch: Any = None
    # What the spec's own kernels' launches received, where the case's value class is judged by it
    # (suite/checks/spec_code.py: Received; its ``note(key, tensors)`` is called at each launch, before it runs).
    received: Any = None

    def reached(self, tensor: Any) -> bool:
        """Whether ``tensor``'s memory was handed to a launch (itself, a view of it, or a view of its storage)."""
        return _storage(tensor) in self.storages

    def reached_by(self, names: set[str], tensor: Any) -> bool:
        """Whether ``tensor``'s memory was handed to a launch of one of the kernels ``names`` (kernel_key's)."""
        return any(_storage(tensor) in self.by_kernel.get(name, ()) for name in names)


def _storage(value: Any) -> int | None:
    try:
        return int(value.untyped_storage().data_ptr())
    except (AttributeError, RuntimeError):
        return None


def _note(record: Launches, name: str, args: tuple, kwargs: Mapping[str, Any], key: str | None = None) -> list[Any]:
    """Note one launch; the tensors it received."""
    record.kernels.append(name)
    tensors: list[Any] = []

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
                record.by_kernel.setdefault(key or name, set()).add(ptr)
                tensors.append(value)

    for value in args:
        add(value)
    for value in kwargs.values():
        add(value)
    if record.received is not None:
        record.received.note(key or name, tensors)
    return tensors


@contextlib.contextmanager
def recording(watch: Any = None, received: Any = None) -> Iterator[Launches]:
    """Note every launch inside (this thread's); with ``watch`` (a last_writer.Watch), who changes each output
    element, at every launch of the spec's own kernels; with ``received`` (a spec_code.Received), what those launches
    received."""
    outer = getattr(stash.session().launches, "record", None)
    record = Launches(watch=watch, received=received)
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


def take_launched() -> dict[str, int]:
    """The @triton.jit functions cases launched (inside :func:`recording`) since the last call, each with its count;
    and forget them. A test none of whose cases launched the spec's own kernels tested something else: torch's
    fallback, or another kernel whose output the launcher handed on (suite/checks/reference_loop.py)."""
    state = stash.session().launches
    found, state.launched = dict(getattr(state, "launched", None) or {}), {}
    return found


def kernel_key(fn: Any) -> str:
    """A @triton.jit function (or the Python function under it) as the launch counts name it: its module and
    qualified name, so that a helper of another module with the same name is never taken for the spec's own."""
    inner = getattr(fn, "fn", fn)
    while hasattr(getattr(inner, "fn", None), "__code__") or hasattr(getattr(inner, "fn", None), "arg_names"):
        inner = inner.fn
    name = getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or type(fn).__name__
    return f"{getattr(inner, '__module__', '?')}.{name}"


def never_launched_own(spec_name: str, dtype: str, cases: int, own: list[str], launched: dict[str, int]) -> str:
    """The failure of a test whose cases launched kernels, none of them the spec's own (``own``)."""
    others = ", ".join(f"{name} x{count}" for name, count in sorted(launched.items()))
    return (f"{spec_name}[{dtype}]: none of the {cases} case(s) launched the spec's own kernel(s) {own}: the launches "
            f"were {others}, so the outputs came from elsewhere (another kernel, or torch with a kernel beside it) "
            f"and the spec's kernel was never tested here. Launch it from run, or declare the kernel that runs as "
            f"the spec's jit_fn / jit_fns (docs/checks.md)")


def never_launched(spec_name: str, dtype: str, cases: int) -> str:
    """The failure of a test whose ``cases`` passed cases with output elements made no launch."""
    return (f"{spec_name}[{dtype}]: none of the {cases} case(s) launched a @triton.jit function: its torch_fallback "
            f"covered every one, so the kernel was never tested here and the test proves nothing about it. Let the "
            f"dims draw cases the launcher runs the kernel on, narrow torch_fallback to the cases it covers, or leave "
            f"{dtype} out of the spec's dtypes where the kernel never runs it; a spec that tests a torch path on purpose says "
            f"why in KernelSpec(untested_reason=...), and the test is then not tested (docs/checks.md)")


def _programs(fn: Any, args: tuple, kwargs: Mapping[str, Any]) -> int | None:
    """How many programs a launch's grid runs (its grid, or the grid function of the launch's arguments), or None
    where that cannot be told."""
    grid = kwargs.get("grid")
    try:
        if callable(grid):
            meta = dict(zip(getattr(fn, "arg_names", ()), args, strict=False))
            meta.update({k: v for k, v in kwargs.items() if k not in ("grid", "warmup")})
            grid = grid(meta)
        sizes = [grid] if isinstance(grid, int) else list(grid)
        count = 1
        for size in sizes:
            count *= int(size)
        return count
    except Exception:  # noqa: BLE001 - a grid the suite cannot evaluate is not judged; the launch reports its own error
        return None


def _note_programs(state: Any, fn: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    name = getattr(getattr(fn, "fn", None), "__name__", None) or getattr(fn, "__name__", "kernel")
    count = _programs(fn, args, kwargs)
    widest = getattr(state, "widest", None)
    if widest is None:
        widest = state.widest = {}
    if count is not None:
        widest[name] = max(widest.get(name, 0), count)


def take_widest() -> dict[str, int]:
    """Each kernel launched by cases since the last call, with the most programs one of its launches ran (launches
    whose grid could not be told are left out); and forget them."""
    state = stash.session().launches
    found, state.widest = dict(getattr(state, "widest", None) or {}), {}
    return found


def one_program_grids(spec: Any, dtype: str, widest: Mapping[str, int], cases: int) -> str | None:
    """Why a test in which every launch ran a grid of one program proves nothing about the kernels' program index (a
    pid never scaled by the block passes with one program), naming the kernels; None where some launch ran several
    programs, or the spec says one block along every dim is the design (``Dim.one_block``, or fixed ``choices``).
    Judged over the test's kernels together: a library that picks a kernel by size (Liger's RMSNorm launches its
    row-block kernel only for rows that one program holds) may run one of them as a single program throughout."""
    if not widest or all(d.choices or d.one_block is not None for d in spec.dims):
        return None
    if any(count > 1 for count in widest.values()):
        return None
    return (f"{spec.name}[{dtype}]: every launch of {', '.join(sorted(widest))} in the {cases} case(s) ran a grid of "
            f"one program, so a program index never scaled by the block (or a grid one program short) passes unseen. "
            f"The config's block covers the largest size the dims draw (a plain BLOCK key is matched to no dim, so the "
            f"spec-time check of Dim blocks cannot see it): raise the dims' interpret_max/gpu_max past the block, "
            f"draw smaller blocks in the configs, or give Dim(one_block='why') where one program is the design "
            f"(docs/checks.md)")


def take_untuned() -> dict[str, int]:
    """The autotuned kernels launched since the last call whose configs the case's config did not name (each ran
    its first config only), with how many configs each has; and forget them."""
    found = dict(stash.session().untuned)
    stash.session().untuned.clear()
    return found


def pick(configs: list[Any], choice: Mapping[str, Any], kernel: str) -> Any:
    """The autotuner config ``choice`` selects: the one whose meta-parameters (and launch options, where ``choice``
    gives them) it equals; the first where ``choice`` names none of the meta-parameters (none of the launch
    options, for configs that differ in those alone), noted for :func:`take_untuned` where there were others.
    Settings ``choice`` scopes to the kernel (``'<kernel>.<name>'``, kernels.spec.autotune_config_space) are its
    own; another kernel's scoped settings are not."""
    from kernels.spec import scoped_config

    choice = scoped_config(choice, kernel)
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
        if (record := getattr(stash.session().launches, "record", None)) is not None:
            record.autotuned[name] = config_dict(config)  # what ran, beside the config the case asked for
        configs, self.configs = self.configs, [config]  # one config: the autotuner launches it, timing nothing
        try:
            return original(self, *args, **kwargs)
        finally:
            self.configs = configs

    autotuner.run = run
    heuristics_run = autotuner_mod.Heuristics.run

    def run_heuristics(self, *args, **kwargs):
        state = stash.session().launches
        outer, state.heuristic_keys = getattr(state, "heuristic_keys", None), tuple(self.values)
        try:
            return heuristics_run(self, *args, **kwargs)
        finally:
            state.heuristic_keys = outer

    autotuner_mod.Heuristics.run = run_heuristics
    compat.mark_applied("launch-interception")


def _plain(value: Any) -> Any:
    """A heuristic's value as the run file can hold it."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def untuned_lines(coverage: list[dict]) -> list[str]:
    """The summary's line for each kernel x dtype test in which an autotuned kernel ran only its first config."""
    return [f"UNTUNED {c['kernel']}[{c['dtype']}]: autotuned kernel {name} ran the first of its {count} configs in every "
            f"case (the spec's configs name none of its parameters): {untuned_advice(name)}"
            for c in coverage for name, count in sorted((c.get("untuned") or {}).items())]


def may_autotune(spec: Any, config: Mapping[str, Any]) -> bool:
    """Whether a case's record says which autotuned kernels ran (Launches.autotuned), also where none did: the spec
    lists an autotuned kernel, or it sets a config and lists no jitted function (a library's launcher, whose
    autotuned kernels the suite meets only at launch)."""
    from kernels.spec import is_autotuned

    kernels = spec.jit_kernels()
    return any(is_autotuned(k.fn) for k in kernels) or (bool(config) and not kernels)


def untuned_advice(name: str) -> str:
    """What to do about an autotuned kernel whose configs no case named (listing it in jit_fns alone does not: where
    the launcher runs several autotuned kernels, the spec took the first one's configs)."""
    return (f"give configs=autotune_configs({name}), or, where the launcher also runs other autotuned kernels, "
            f"configs=autotune_config_space({name}, <the others>), which names each one's settings "
            f"('{name}.<parameter>'); a spec listing them all in jit_fn/jit_fns gets that by default")


def heuristics_line(found: Mapping[str, Mapping[str, Any]]) -> str:
    """The values @triton.heuristics computed, for a failing case's message ("" where none did)."""
    if not found:
        return ""
    return "\n@triton.heuristics computed: " + "; ".join(
        f"{kernel}: " + ", ".join(f"{k}={v!r}" for k, v in values.items()) for kernel, values in sorted(found.items()))


def _wrap_run(cls: type) -> None:
    original = cls.run

    def run(self, *args, **kwargs):
        state = stash.session().launches
        record = getattr(state, "record", None)
        watched = False
        if record is not None and not kwargs.get("warmup", False):
            _note_programs(state, self, args, kwargs)
            name = getattr(getattr(self, "fn", None), "__name__", None) or getattr(self, "__name__", "kernel")
            state.launched = getattr(state, "launched", None) or {}
            key = kernel_key(getattr(self, "fn", None) or self)
            state.launched[key] = state.launched.get(key, 0) + 1
            tensors = _note(record, name, args, {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}, key)
            if keys := getattr(stash.session().launches, "heuristic_keys", None):  # what a @triton.heuristics computed
                record.heuristics[name] = {k: _plain(kwargs[k]) for k in keys if k in kwargs}
            watched = record.watch is not None and record.watch.before(key, tensors)
        own = record is not None and not kwargs.get("warmup", False) and (
            watched or (record.received is not None and record.received.is_own(key)))
        with contextlib.ExitStack() as observe:
            # What an own launch loads and stores, where the interpreter's hooks see it (None on a GPU, and inside
            # an outer launch, which sees it all).
            seen = observe.enter_context(memcheck.observing()) if own else None
            try:
                return original(self, *args, **kwargs)
            finally:
                observe.close()
                if watched:
                    record.watch.after(seen)
                if record is not None and record.received is not None and not kwargs.get("warmup", False):
                    record.received.after(key, tensors, seen)

    cls.run = run


_MISSING = re.compile(r"(\w+)\(\) missing \d+ required (?:positional |keyword-only )?arguments?: (.+)|missing a required "
                      r"argument: ('\w+')")


def unpassed_constexpr(spec: Any, exc: BaseException) -> str | None:
    """Why a launch failed where it passed no value for a ``tl.constexpr`` of one of the spec's jitted functions (the
    interpreter's or the JIT's ``missing ... required argument``), naming the function, the constexpr and the spec;
    None for any other error."""
    from kernels.spec import constexpr_names

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, TypeError) and (match := _MISSING.search(str(exc))):
            called, names = match.group(1), re.findall(r"'(\w+)'", match.group(2) or match.group(3))
            for kernel in spec.jit_kernels():
                if called not in (None, kernel.name):
                    continue
                if missing := [n for n in names if n in constexpr_names(kernel.fn)]:
                    return (f"kernel spec {spec.name!r}: its run launches {kernel.name} with no value for its "
                            f"tl.constexpr {missing[0]!r} ({exc}): pass {missing[0]}=... at that launch, give the "
                            f"parameter a default, or compute it with @triton.heuristics")
        exc = exc.__cause__ or exc.__context__
    return None
