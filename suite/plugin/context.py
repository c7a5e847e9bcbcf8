"""The session context: what the plugin's hooks and the tests share, built once in ``pytest_configure``
and kept in pytest's stash (``config.stash[CONTEXT]``), never in module globals. What a process keeps while it runs
(the test's clock, the GPU's lock, the autotune lookup, the memory checker, ...) is the stash's other object,
``suite.session.stash.Session``.

Building it is where a run starts or refuses to: the options are validated, the backend is chosen
(before any kernel module is imported, since Triton reads TRITON_INTERPRET when ``@triton.jit``
runs), kernel modules and the known-issue registry are loaded and checked against each other, the
autotune cache is read and the run file is prepared. Every mistake is a usage error (exit 4) naming
what is wrong, raised before the first test.

An xdist controller builds it after its workers have started (``deferred``): building imports torch, the kernels
and Triton (3-5 s on an H100 host), and the workers, which import the same, would otherwise wait for it. Before
they start it needs only what pins them to GPUs (``Pinning``), found without torch (``suite.session.backend.probe``); its
options are checked then too. A mistake found later (a kernel module that does not load, a bad known-issue file,
a backend the machine lacks) stops the workers and is the same usage error.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pytest

from suite import compat
from suite.checks import autotune, interpreter, launches, libraries
from suite.checks.strategies import LARGE_SHAPE_PROFILES, VALIDATION_SEED
from suite.session import backend as backend_mod
from suite.session import kernel_names, options, provenance, results, stash
from suite.session import known_issues as known_mod
from suite.session.stash import BACKEND, CHECKS_SNAPSHOT, CONTEXT, DEFERRED, PINNING
from suite.workers import crash, warmup

__all__ = ["BACKEND", "CHECKS_SNAPSHOT", "CONTEXT", "DEFERRED", "PINNING"]  # the stash's keys, also importable from here

DEFAULT_PROFILE = "ci"


@dataclass
class Pinning:
    """Controller only: the GPUs workers are pinned to, which worker has which, and where workers keep their
    in-flight journals (crash isolation). Made before the workers start."""

    gpus: list[str] = field(default_factory=list)
    assigned: dict[str, str] = field(default_factory=dict)
    gpu_variable: str = ""
    journal_dir: str | None = None
    reported: set[str] = field(default_factory=set)  # workers a test report came from: past their start-up


@dataclass
class SuiteContext:
    options: options.Options
    backend: Any  # suite.session.backend.Backend
    profile: str  # the Hypothesis profile
    known: list[known_mod.KnownIssue]
    run_file: results.RunFile | None
    cache: autotune.Cache | None = None
    fallback_cache: autotune.Cache | None = None  # the arch's file behind a device's own
    notes: list[str] = field(default_factory=list)  # extra session-header lines
    retuned: list[dict] = field(default_factory=list)
    session: pytest.Session | None = None
    pinning: Pinning = field(default_factory=Pinning)  # controller only
    memcheck: str = "off"  # interpreter | compute-sanitizer | asan | off

    @property
    def large_shapes(self) -> bool:
        return self.profile in LARGE_SHAPE_PROFILES


def get(config: pytest.Config) -> SuiteContext:
    return config.stash[CONTEXT]


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def xdist_on(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and config.getoption("dist", "no") != "no"


def defers(config: pytest.Config) -> bool:
    """This process is an xdist controller that can start its workers before it builds its context: it knows
    without torch which GPUs to pin them to. ``--retune`` (it tunes before the workers start, and they read the
    new cache) and ``--memcheck`` (the controller re-executes itself under the vendor's checker) build first."""
    if is_worker(config) or not xdist_on(config) or config.getoption("--retune") or config.getoption("--memcheck") \
            or config.getoption("--retune-check"):
        return False
    if backend_mod.probe(config.getoption("--backend")) is None:
        return False
    # A --kernel-module that is not there is a usage error now; a --kernels name no kernel module spells out is
    # judged by the registry, loaded before the workers start (suite/session/kernel_names.py).
    modules = tuple(m for m in config.getoption("--kernel-module") if m.strip())
    patterns = options._names("--kernels", config.getoption("--kernels"), "comma-separated kernel names or patterns")
    return kernel_names.check_before_workers(modules, patterns)


def begin_deferred(config: pytest.Config) -> None:
    """An xdist controller, before its workers start: the options are checked and the workers' GPUs chosen."""
    options.read(config, controller=True)
    family, count = backend_mod.probe(config.getoption("--backend"))
    make_pinning(config, family, count)
    config.stash[DEFERRED] = True


def make_pinning(config: pytest.Config, family: str, count: int) -> Pinning:
    pinning = Pinning()
    if family != "interpret":
        pinning.gpu_variable = crash.visibility_variable(family)
        pinning.gpus = crash.visible_gpus(count, pinning.gpu_variable)
    if xdist_on(config):
        pinning.journal_dir = tempfile.mkdtemp(prefix="suite-inflight-")
    config.stash[PINNING] = pinning
    return pinning


def _hypothesis_database(opts: options.Options, profile: str) -> str | None:
    from hypothesis import settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    if opts.hypothesis_db is None:
        return None
    path = opts.hypothesis_db
    if settings.get_profile(profile).database is None and profile in ("ci", "validation"):
        return f"hypothesis database {path} not used: the {profile} profile is derandomized and keeps no examples"
    settings.register_profile(profile, settings.get_profile(profile), database=DirectoryBasedExampleDatabase(path))
    return f"hypothesis database: {path} (failing examples are saved there and replayed first)"


def _load_kernels(opts: options.Options, config: pytest.Config) -> tuple[list, list[dict], str | None]:
    """The registered specs, what each --kernel-module was (its file's hash, the libraries it imported), and the
    line that says the shipped kernels run too where --kernel-module came without --kernels."""
    from kernels import registry
    from suite.checks import tampering

    modules = []
    start = opts.started_in  # a module that changes directory as it imports moves no other module's path
    before = tampering.Snapshot()  # a kernel module that changes the suite's checks is refused (tampering.py)
    try:
        registry.load_builtin()
        shipped = {s.name for s in registry.all_specs()}
        _refuse_tampering(before, "a kernel module under kernels/")
        for target in opts.kernel_modules:
            kernel_names.locate(target, start)  # not there: where it looked, and the nearest names
            load = lambda target=target: registry.load_module(target, start)  # noqa: E731
            names = {s.name for s in registry.all_specs()}
            modules.append(provenance.record_import(target, load, start))
            # The kernels it registered: a report supersedes them in older runs of other code (reports/current.py).
            modules[-1]["kernels"] = sorted({s.name for s in registry.all_specs()} - names)
            _refuse_tampering(before, f"--kernel-module={target}")
    except registry.KernelModuleError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[CHECKS_SNAPSHOT] = before
    specs = registry.all_specs()
    options.check_against_registry(opts, specs)
    _check_tool_variables(specs)
    return specs, modules, whole_selection_note(opts, sorted(s.name for s in specs if s.name not in shipped),
                                                len(shipped))


def whole_selection_note(opts: options.Options, own: list[str], shipped: int) -> str | None:
    """With --kernel-module and no --kernels every registered kernel runs, the shipped ones too (several times as
    long as one's own alone): said at the start of the run, with the option that runs only one's own."""
    if not opts.kernel_modules or opts.kernels is not None or not own or not shipped:
        return None
    return f"no --kernels: the {shipped} shipped kernels run too; --kernels={','.join(own)} runs yours alone"


def _check_tool_variables(specs: list) -> None:
    """SUITE_COMPILE_MATRIX and SUITE_BENCH_PLANT, read by the compile matrix and the benchmarks: a typo is a usage
    error now (it used to fail every test that read it)."""
    import os

    from suite.tools import bench, compile_matrix

    try:
        compile_matrix.mode()
        bench.parse_plant(os.environ.get(bench.PLANT_VARIABLE), [s.name for s in specs])
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _refuse_tampering(before, module: str) -> None:
    if changed := before.changes():
        raise pytest.UsageError(f"{module}: importing it changed the suite's own checking code: {', '.join(changed)}. "
                                f"A kernel module must not replace or change what checks it (every verdict of the run "
                                f"would be the module's); remove the assignment")


def build(config: pytest.Config) -> SuiteContext:
    """Validate, choose the backend, load kernels and known issues, prepare the cache and run file."""
    from hypothesis import settings

    controller = not is_worker(config)
    opts = options.read(config, controller)
    profile = config.getoption("--hypothesis-profile", default=None) or DEFAULT_PROFILE
    db_note = _hypothesis_database(opts, profile)
    settings.load_profile(profile)
    if not controller:
        crash.pin_worker(config.workerinput)
        if config.workerinput.get("suite_gpu_variable") == crash.visibility_variable("nvidia"):
            warmup.start("cuda", driver=True)  # its CUDA context while it imports torch (suite/workers/warmup.py)
    try:
        backend = backend_mod.resolve(opts.backend, driver=controller)
    except backend_mod.BackendUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[BACKEND] = backend
    if not controller:
        warmup.start(backend.device)  # begun above on an NVIDIA GPU; elsewhere its context while it loads its kernels
    if backend.name == "interpret" and opts.compile_targets == "own":
        raise options.usage("--compile-targets", "own", "the CPU interpreter has no GPU arch of its own to compile "
                                                        "for (the matrix would build nothing); use all, the "
                                                        "interpreter's default, or run own on a GPU backend")
    compat.verify(backend.name)  # every patch of Triton's internals this run applies: its targets are there
    if backend.name == "interpret":
        interpreter.install()
    numerics_note = _numerics(backend, opts.numerics)
    launches.install()
    libraries.install()  # before any kernel module: a library it imports gets its runtime changes (libraries.py)
    memcheck_mode = _memcheck(config, opts, backend, controller)
    specs, kernel_modules, selection_note = _load_kernels(opts, config)  # only now: after TRITON_INTERPRET is settled
    from kernels import inputs

    inputs.set_draw_device(backend.device)  # cases' inputs are drawn where they run (the same numbers everywhere)
    try:
        known = known_mod.load(opts.known_issues)
        from kernels import registry
        from kernels.spec import DTYPES
        from suite.checks import ordinary  # imports torch: never at the plugin's import (the workers start first)

        modules = {s.name: registry.where(s.name) for s in specs}
        known_mod.check_kernels(known, [s.name for s in specs], list(DTYPES), opts.known_issues)
        if controller:  # the workers read what the controller let through
            ordinary.check_file(known, opts.known_issues, specs, opts, modules)
    except known_mod.KnownIssueError as exc:
        raise pytest.UsageError(f"--known-issues: {exc}") from None
    try:  # a module's entry: its error names the module
        if controller:
            ordinary.check_modules(specs, opts, modules)
        known += known_mod.from_specs(specs, modules)
        known_mod.check_unique(known)
    except known_mod.KnownIssueError as exc:
        raise pytest.UsageError(str(exc)) from None
    crash.process().timeout_s = opts.case_timeout
    cache = fallback = None
    # The interpreter reads a cache only from an explicit --autotune-dir (the harness's own tests of the cache).
    if backend.name != "interpret" or opts.autotune_dir:
        # A device with its own file (an H200 on sm_90) reads it first, then the arch's; --retune writes its own.
        cache, fallback = autotune.open_caches(backend, opts.autotune_dir)
        autotune.activate(autotune.Lookup(backend, cache, fallback))
        autotune.count_do_bench()
    if (opts.retune or opts.retune_check) and controller:
        flag = "--retune" if opts.retune else "--retune-check"
        if backend.name == "interpret":
            raise pytest.UsageError(f"{flag} times configs on a GPU; the CPU interpreter's timings mean nothing "
                                    "(use --backend=cuda or --backend=rocm on a GPU runner)")
        if cache.status == "unreadable":
            raise pytest.UsageError(f"{flag}: {cache.error}. The file is left as it is: move it away (or fix it), "
                                    f"then retune")
    run_file = None
    if controller and opts.write_results:
        seed = "derandomized" if settings.default.derandomize else config.getoption("--hypothesis-seed", None)
        if profile == "validation":
            seed = VALIDATION_SEED
        env = results.environment_fingerprint(backend, profile, seed)
        if (active := stash.session().numerics) is not None:
            env["numerics"] = active.record()
        run_file = results.RunFile(opts.results_dir, results.new_run_id(backend.name, backend.arch), env,
                                   results.command_line())
        run_file.data["known_issues"] = [k.as_record() for k in known]
        run_file.data["kernel_modules"] = libraries.record(kernel_modules)
    ctx = SuiteContext(options=opts, backend=backend, profile=profile, known=known, run_file=run_file, cache=cache,
                       memcheck=memcheck_mode, fallback_cache=fallback)
    ctx.notes += [provenance.describe(m) for m in kernel_modules]
    if selection_note:
        ctx.notes.append(selection_note)
    if db_note:
        ctx.notes.append(db_note)
    ctx.notes += libraries.describe()  # a library's runtime changed for the suite: said once, in the header
    if cache is not None and cache.status == "unreadable":
        ctx.notes.append(f"autotune: {cache.error}; running with the default configs (the file is left as it is)")
    if fallback is not None and fallback.status == "unreadable":
        ctx.notes.append(f"autotune: {fallback.error}; no fallback to the arch's configs (the file is left as it is)")
    if backend.profile_note:
        ctx.notes.insert(0, backend.profile_note)
    if numerics_note:
        ctx.notes.insert(0, numerics_note)
    from suite.workers import schedule

    if problem := schedule.read(profile=profile)[2]:  # the durations file not usable: say so, run without it
        ctx.notes.append(problem)
    import hardware_profiles

    for why in hardware_profiles.skipped().values():
        ctx.notes.append(f"hardware profile file left out: {why}")
    if controller:  # a deferred build keeps the pinning its workers started with
        ctx.pinning = config.stash.get(PINNING, None) or make_pinning(
            config, backend.family, _gpu_count() if backend.name != "interpret" else 0)
    return ctx


def _numerics(backend: Any, profile: str | None) -> str | None:
    """``--numerics=PROFILE``: the interpreter's tl.dot routed through the profile's model (suite/checks/numerics.py)
    and the run's dtypes and fp32 dot precision the profile's, so the cases and tolerances are that GPU's; the
    header's line. A GPU backend is a usage error: its own GPU computes there."""
    if profile is None:
        return None
    if backend.name != "interpret":
        raise options.usage("--numerics", profile, f"models a GPU's arithmetic on Triton's CPU interpreter only; this "
                                                   f"run's backend is {backend.name}, whose GPU computes for itself: "
                                                   f"drop --numerics, or add --backend=interpret")
    import hardware_profiles
    from suite.checks import numerics
    from suite.session import numerics_table

    target = hardware_profiles.get(profile)
    model = numerics_table.model_for(target.arch)
    compat.require("interpreter-numerics-dot")
    active = numerics.Numerics(profile, model)
    if not compat.applied("interpreter-numerics-dot"):
        numerics.install(active)
        compat.mark_applied("interpreter-numerics-dot")
    # OCP fp8 runs where the model converts to it as the target does (suite/checks/numerics_fp8.py: sm_90's cvt,
    # gfx90a's and gfx942's integer code, sm_80's fp8e5 routines); the FNUZ types do not (Triton 3.6's interpreter
    # has no IR type for them), nor fp8 on a target the model has no conversion for.
    from suite.checks import numerics_fp8

    dtypes = tuple(d for d in target.dtypes if not d.startswith("fp8") or d in backend.profile.dtypes
                   or (target.arch, d) in numerics_fp8.HOW)
    unrun = [d for d in target.dtypes if d not in dtypes]
    backend.profile = dataclasses.replace(
        backend.profile, dtypes=dtypes, fp8_flavour=target.fp8_flavour, fp32_dot_precision=target.fp32_dot_precision,
        notes=f"{backend.profile.notes} Modelled as {profile} ({target.arch}): its dtypes and fp32 dot precision"
              + (f"; not {', '.join(unrun)}: the interpreter has no such type, or the model no conversion to it"
                 if unrun else "") + ".")
    return (f"numerics: modelled as {profile} ({target.arch}), not run on it: tl.dot through mmasim 2.1.1's "
            f"{model.mmasim_arch} model ({model.family}), fp32 dots {model.default_fp32} by default "
            f"(suite/session/numerics_table.py); float -> fp8 as its compiled code converts"
            + (f"; {', '.join(unrun)} not run: the interpreter has no such type, or the model no conversion to it"
               if unrun else ""))


def _memcheck(config: pytest.Config, opts: options.Options, backend: Any, controller: bool) -> str:
    """Which memory checker watches this run; a GPU run with --memcheck re-executes itself under the vendor's."""
    import os

    from suite.checks import memcheck

    if backend.name == "interpret":
        if opts.no_memcheck:
            return "off"
        memcheck.install()
        return "interpreter"
    if os.environ.get(memcheck.SANITIZER_ENV):
        return "compute-sanitizer" if backend.family == "nvidia" else "asan"
    if opts.memcheck and controller:
        try:
            memcheck.reexec(backend.family, list(config.invocation_params.args))
        except FileNotFoundError as exc:
            raise pytest.UsageError(str(exc)) from None
    return "off"


def gpu_count(requested: str) -> int:
    """The GPUs the backend ``requested`` sees: without torch where the driver can tell (suite.session.backend.probe)."""
    found = backend_mod.probe(requested)
    return found[1] if found is not None else _gpu_count()


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no usable GPU runtime: no GPU workers
        return 0
