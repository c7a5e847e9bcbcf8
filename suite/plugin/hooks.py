"""The suite's pytest plugin: wires the layers together (docs/design.md, "The house"). Each concern lives in a
module of its own:

- ``suite.session.options``: the command-line options and their validation;
- ``suite.plugin.context``: the session context (backend, kernels, known issues, cache, run file), in the stash;
- ``suite.session.stash``: the stash's keys and the Session, everything a process keeps while it runs;
- ``suite.workers.crash``: crash isolation (GPU pinning, faults, OOM, hangs), its hooks included (a plugin of its own,
  named in conftest.py);
- ``suite.plugin.recorder``: test reports into the run file;
- ``suite.plugin.summary``: the portability summary at the end.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from suite import compat
from suite.checks import autotune, memcheck
from suite.checks.strategies import register_profiles
from suite.plugin import context, fit, glance, summary
from suite.plugin.context import BACKEND, CONTEXT
from suite.plugin.recorder import AUTOTUNE_PROPERTY, KNOWN_PROPERTY, MEMCHECK_PROPERTY, RunRecorder
from suite.session import options, terminal
from suite.workers import bytecode, crash, gpu_share, parts, schedule, shard, timing, warmup

__all__ = ["BACKEND", "CONTEXT", "KNOWN_PROPERTY", "repro_prefix"]

# Registered at import, before Hypothesis's own plugin loads --hypothesis-profile.
register_profiles()
repro_prefix = options.repro_prefix


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not (config.option.help or config.option.version):
        options.check_hypothesis_profile(config)  # before Hypothesis's plugin loads it (an INTERNALERROR there)


def pytest_configure(config: pytest.Config) -> None:
    if config.option.help or config.option.version:
        return
    compat.fixed_constants()  # the same draws whatever this process imported before a test (suite/compat.py)
    if not context.is_worker(config):
        options.note_launcher()  # before any worker starts: they inherit it for their reproduction lines
        if context.xdist_on(config):
            bytecode.share_with_workers(config)  # where bytecode is off: the workers' kept between runs
        crash.process().announce = crash.announce_past_capture(config)
        stop_on_sigterm()
    if not context.is_worker(config):
        config.pluginmanager.register(TerminalText(), "suite-terminal-text")
        if context.xdist_on(config):
            config.pluginmanager.register(WorkersSelection(config), "suite-workers-selection")
    if context.defers(config):  # an xdist controller: its workers start first (suite/plugin/context.py)
        context.begin_deferred(config)
        return
    install(config, _build(config))


def _build(config: pytest.Config) -> context.SuiteContext:
    """context.build; a usage error's text as the terminal shows it (a path or a known issue's id holding an escape
    sequence)."""
    try:
        return context.build(config)
    except pytest.UsageError as exc:
        raise pytest.UsageError(terminal.visible(str(exc))) from None


class WorkersSelection:
    """xdist controller: what a run without xdist refuses when it collects (pytest_collection_modifyitems), refused
    from the test ids the first worker collected, before any test runs: a ``-k`` that left none (with --shard an
    empty part may be the shard's: left to pytest), a ``--config`` or ``--repro`` that does not fit a kernel a test
    runs (it failed that kernel's test instead)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.checked = False

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        config = self.config
        if self.checked:
            return
        self.checked = True
        if not ids and config.option.keyword and not config.getoption("--shard", None):
            _stop_workers(config)
            raise pytest.UsageError(keyword_selects_none(config))
        ctx = config.stash.get(CONTEXT, None)
        if ctx is None or (ctx.options.config is None and ctx.options.repro is None):
            return
        from kernels import registry

        specs = {s.name: s for s in registry.all_specs()}
        for nodeid in ids:
            if "::test_matches_reference[" not in nodeid and "::test_properties[" not in nodeid:
                continue  # the tests of a kernel and dtype (kernel_dtype), as without xdist
            param = nodeid.partition("[")[2].rstrip("]")
            name = max((n for n in specs if param.startswith(f"{n}-")), key=len, default=None)
            if name is not None and (problem := _selection_problem(ctx, specs[name], param[len(name) + 1:], nodeid)):
                _stop_workers(config)
                raise pytest.UsageError(terminal.visible(problem))


class TerminalText:
    """Controller only: a test's failure, skip or expected-failure text as the terminal shows it, its control
    characters escaped (suite/session/terminal.py). After every other plugin has the report (trylast): the run file
    records the text exact; pytest's terminal reporter prints these reports at the end of the run."""

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3 and isinstance(longrepr[2], str):  # a skip
            report.longrepr = (longrepr[0], longrepr[1], terminal.visible(longrepr[2]))
        elif longrepr is not None and terminal.CONTROL.search(text := str(longrepr)):
            report.longrepr = terminal.visible(text)  # only then a plain string: pytest's own otherwise
        if isinstance(getattr(report, "wasxfail", None), str):
            report.wasxfail = terminal.visible(report.wasxfail)
        report.sections = [(title, terminal.visible(text)) for title, text in report.sections]  # captured output

    @pytest.hookimpl(tryfirst=True)
    def pytest_warning_recorded(self, warning_message: Any) -> None:
        """A warning's text (a case not run for memory, with its reproduction line) before the terminal keeps it."""
        text = str(warning_message.message)
        if terminal.CONTROL.search(text):
            warning_message.message = UserWarning(terminal.visible(text))


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, `kill`, `timeout`): the run ends as Ctrl-C ends it, its run file "interrupted"
    with what finished, instead of dying with the file "incomplete"."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated(f"stopped by signal {signal.Signals(signum).name}")


def stop_on_sigterm() -> None:
    """The controller's SIGTERM handler (the main thread only can set one; a process that set its own keeps it)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)


def pytest_unconfigure(config: pytest.Config) -> None:
    """SIGTERM's default back, for a process that goes on after pytest.main (the handler is this run's)."""
    bytecode.restore(config)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is _terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def install(config: pytest.Config, ctx: context.SuiteContext) -> None:
    """The built context into the stash, and what hangs on it: the run-file recorder, the summary, the process's
    GPU sharing and the compile hooks."""
    config.stash[CONTEXT] = ctx
    timing.install()
    if context.is_worker(config) or not context.xdist_on(config):  # the processes that run cases
        gpu_share.share().setup(ctx.backend.device)
    if context.is_worker(config):
        share_cpu_threads(int(config.workerinput.get("workercount", 1)))
        warmup.kernels_loaded()  # the GPU start-up (begun in context.build) may draw with the input generator now
        config.pluginmanager.register(WorkerExit(), "suite-worker-exit")
    if ctx.run_file is not None:
        ctx.run_file.data["autotune"] = autotune_record(ctx)
        ctx.run_file.data["memcheck"] = {"mode": ctx.memcheck, "kernels": {}, "unchecked": {}}
        ctx.run_file.data["checks"] = checks_record(ctx)
        if ctx.options.shard is not None or ctx.options.run_id is not None:  # one of N runners' files (shard.py)
            index, count = ctx.options.shard or (1, 1)
            ctx.run_file.data["shard"] = {"index": index, "count": count,
                                          "run_id": options.shared_run_id(ctx.options.run_id),
                                          "selection": shard.selection(ctx.options, config.option.keyword,
                                                                       config.option.markexpr, ctx.profile,
                                                                       ctx.run_file.data.get("kernel_modules") or []),
                                          "split_by": shard.split_by(schedule.load(profile=ctx.profile)),
                                          "ci_run": shard.ci_run()}
        ctx.run_file.data["gpu_share"] = {"workers": _workers(config), "oom_retried": 0, "oom_retried_passed": 0,
                                            "oom_held": 0, "too_large": 0, "too_large_cases": [],
                                            "held_cases": [], "alone_cases": []}
        recorder = RunRecorder(ctx.run_file, ctx)
        config.pluginmanager.register(recorder, "suite-run-recorder")
        config.pluginmanager.register(SummaryPrinter(ctx), "suite-summary")
        config.pluginmanager.register(VerdictPrinter(ctx), "suite-verdict")
        if not context.is_worker(config) and not context.xdist_on(config):
            crash.process().on_timeout = recorder.record_timeout


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session: pytest.Session):
    """Before every other plugin's sessionstart (so before xdist starts workers, and they read the new cache):
    ``--retune``. After them, a deferred controller builds its context, once xdist has started the workers: they
    import torch and the kernels while this process does the same. Its header lines, which pytest printed before
    (without them), follow; the run's timeline still starts at the session's start."""
    config = session.config
    started = time.time()
    ctx = config.stash.get(CONTEXT, None)
    if ctx is not None:
        ctx.session = session
        if not context.is_worker(config) and (ctx.options.retune or ctx.options.retune_check):
            _retune(config, ctx)
    result = yield
    if config.stash.get(context.DEFERRED, False) and CONTEXT not in config.stash:
        try:
            install(config, _build(config))
        except BaseException:  # a usage error most often: no worker is left waiting for tests
            _stop_workers(config)
            raise
        ctx = config.stash[CONTEXT]
        ctx.session = session
        recorder = config.pluginmanager.get_plugin("suite-run-recorder")
        if recorder is not None:
            recorder.t0, recorder.config = started, config  # its own sessionstart was before it was registered
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and tr.verbosity >= 0 and not config.option.no_header:
            for line in header_lines(config, ctx):
                tr.write_line(line)
    return result


def _stop_workers(config: pytest.Config) -> None:
    """The workers a deferred controller started, ended before its usage error (they would wait for tests)."""
    dsession = config.pluginmanager.get_plugin("dsession")
    manager = getattr(dsession, "nodemanager", None)
    if manager is not None:
        manager.teardown_nodes()


class WorkerExit:
    """xdist worker only: once its session is over (the controller has its results and the ``workerfinished``
    event), the process ends at once instead of running Python's finalization: tearing down torch, its CUDA caching
    allocator and the GPU context took 1.7-1.9 s per worker on an H100, and the controller waits for the slowest
    worker before the run can end. Registered last, so its ``pytest_unconfigure`` runs after the suite's own."""

    exit = staticmethod(crash.REAL_EXIT)
    session_over = False

    def pytest_sessionfinish(self) -> None:
        self.session_over = True

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if not self.session_over:
            # It failed before its session (a plugin's or the suite's own configure raised): the error must travel to
            # the controller as the worker's own (suite/workers/crash.py: a worker that dies at start-up stops the run).
            return
        import logging

        logging.shutdown()
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        self.exit(0)


def share_cpu_threads(workers: int) -> int | None:
    """Each of ``workers`` xdist workers gets its share of the CPU cores for torch's own threads (the float64
    checks some properties make on the CPU): with torch's default of one thread per core in every worker, sixteen
    workers ran 256 threads on 16 cores. A thread count the user set (OMP_NUM_THREADS) is kept."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // max(1, workers))
    torch.set_num_threads(threads)
    return threads


def _workers(config: pytest.Config) -> int:
    n = getattr(config.option, "numprocesses", None)
    return n if isinstance(n, int) and n > 0 else 1


def _uses_gpu(choice: str) -> bool:
    return choice in ("cuda", "rocm") or (choice == "auto" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` on a GPU backend: WORKERS_PER_GPU workers on each visible GPU, at most one per CPU core (the
    interpreter: one per CPU). They share each GPU's memory through suite/workers/gpu_share.py. A run that selects the
    benchmarks (``-m perf``) gets one worker per GPU, and each benchmark takes its GPU alone."""
    if not _uses_gpu(config.getoption("--backend")):
        return None
    gpus = context.gpu_count(config.getoption("--backend"))  # without torch where it can (suite/session/backend.py: probe)
    if not gpus:
        return None
    expr = (config.option.markexpr or "").strip()
    if "perf" in expr and expr != "not perf":  # benchmarks: one worker per GPU, as the noise floors were learned
        return gpus
    return max(gpus, min(os.cpu_count() or 1, gpu_share.WORKERS_PER_GPU * gpus))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """GPU runs with xdist's default distribution: tests handed out by their expected durations (suite/workers/schedule.py),
    so that no long test waits behind another. ``--dist`` other than ``load``, and the interpreter, keep xdist's."""
    ctx = config.stash.get(CONTEXT, None)
    if ctx is None or ctx.backend.name == "interpret" or config.getvalue("dist") != "load":
        return None
    costs = schedule.load(profile=ctx.profile)
    return schedule.make_scheduler(config, log, costs) if costs else None


def autotune_record(ctx: context.SuiteContext) -> dict | None:
    cache = ctx.cache
    if cache is None:
        return None
    fallback = ctx.fallback_cache
    return {"cache": str(cache.path), "cache_status": cache.status, "cache_error": cache.error,
            "cache_entries": len(cache.entries), "hits": 0, "nearest": 0, "misses": 0, "stale": 0,
            "stale_kernels": {}, "tuning_benchmarks": 0, "entries": [],
            **({"fallback_cache": str(fallback.path), "fallback_status": fallback.status,
                "fallback_entries": len(fallback.entries), "fallback": 0} if fallback is not None else {})}


def checks_record(ctx: context.SuiteContext) -> dict[str, Any]:
    """How this run had each switch that turns a check off or down (docs/options.md): `reports compare` says where a
    candidate checked less than its base. The memory check's mode and the Hypothesis profile are recorded apart."""
    from suite.tools import compile_matrix

    races = "not run" if ctx.memcheck != "interpreter" else (
        "off" if os.environ.get(memcheck.RACE_ENV, "1") == "0" else "on")  # anything else: a usage error at install
    return {"races": races, "intermittent_runs": options.intermittent_runs(), "compile_matrix": compile_matrix.mode(),
            "compile_targets": ctx.options.compile_targets_for(ctx.backend.name), "config": ctx.options.config,
            "repro": ctx.options.repro}


def _retune(config: pytest.Config, ctx: context.SuiteContext) -> None:
    from tabulate import tabulate

    from kernels import registry
    from reports import gate
    from suite.tools import bench, compile_matrix

    backend = ctx.backend
    check = not ctx.options.retune  # --retune-check: time into a scratch copy, judge the shipped winners
    names = ctx.options.retune or ctx.options.retune_check
    specs = [s for s in registry.all_specs() if names == ("*",) or s.name in names]
    tr = config.pluginmanager.get_plugin("terminalreporter")
    write = tr.write_line if tr else print
    target = ("cuda" if backend.family == "nvidia" else "hip", backend.arch, backend.warp_size)

    def compile_record(spec, dtype, cfg):
        """The record that decides pruning: the first function that fails, else the first that spills."""
        try:
            records = compile_matrix.compile_all(spec, dtype, cfg, target)
        except Exception as exc:  # noqa: BLE001 - no profile for this arch, say: no pruning
            return {"status": "skipped", "error": str(exc)}
        return next((r for r in records if r["status"] == "failed"), None) or next(
            (r for r in records if r.get("spills")), records[0])

    into = ctx.cache
    if check:  # a copy in the results directory (or a temporary one): the shipped cache is never written
        where = ctx.options.results_dir if ctx.run_file is not None else Path(tempfile.mkdtemp(prefix="retune-check-"))
        into = autotune.Cache(Path(where) / f"retune-check-{ctx.cache.path.name}", ctx.cache.arch, ctx.cache.profile,
                              dict(ctx.cache.entries), dict(ctx.cache.tuning_runs), "ok")
    write(f"autotune: {'checking the cached winners of' if check else 'retuning'} {len(specs)} kernel(s) for "
          f"{backend.arch} ({backend.sm_count} SMs/CUs) " + (f"against {ctx.cache.path} (timings in {into.path}; "
                                                              f"nothing written into the cache)" if check
                                                              else f"into {ctx.cache.path}"))
    failed: list[dict] = []  # kernel x dtype x shapes of which no config ran: the gate flags their cached winners
    ctx.retuned = autotune.retune(specs, backend, into, time_config=bench.ConfigTimer(backend),
                                  compile_record=compile_record, progress=write, failed=failed)
    write(tabulate(autotune.retune_rows(ctx.retuned), headers=autotune.RETUNE_HEADERS, tablefmt="github"))
    if check:
        records = autotune.gate_records(ctx.cache, ctx.retuned, failed)
        losing = [g for g in records if g["loses"]]
        write(f"autotune check: {len(records)} cached winner(s) timed against every config; {len(losing)} now lose"
              + "".join(f"\n  {gate.text(g)}" for g in losing))
        if ctx.run_file is not None:
            ctx.run_file.data["autotune"]["check"] = {"cache": str(ctx.cache.path), "margin": gate.MARGIN,
                                                       "entries": records}
        return
    if ctx.run_file is not None:
        record = ctx.run_file.data["autotune"]
        record["cache_entries"] = len(ctx.cache.entries)
        record["cache_status"] = ctx.cache.status
        lookup = autotune.active()
        record["tuning_benchmarks"] += lookup.tuning_benchmarks if lookup else 0
        if lookup:
            lookup.tuning_benchmarks = 0
        record["entries"] = [dict(zip(["kernel", "dtype", "shape", "default_ms", "tuned_ms", "speedup_vs_default",
                                       "pruned"], row, strict=True)) for row in autotune.retune_rows(ctx.retuned)]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if (startup := warmup.wait()) is not None:  # the worker's GPU start-up (suite/workers/warmup.py) is no test's time
        item.user_properties.append((warmup.STARTUP_PROPERTY, startup))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Worker side: hand this test's time breakdown, autotune and memory-check counts to the controller."""
    if call.when == "setup":
        timing.clock().take()  # what ran before this test is not its time
    if call.when == "call":
        item.user_properties.append((timing.TIMING_PROPERTY, timing.clock().take()))
        lookup = autotune.active()
        delta = lookup.take() if lookup else None
        if delta:
            item.user_properties.append((AUTOTUNE_PROPERTY, delta))
        counts = memcheck.take_counts()
        if counts:
            item.user_properties.append((MEMCHECK_PROPERTY, counts))
        if retried := gpu_share.share().take_counts():
            item.user_properties.append((gpu_share.SHARE_PROPERTY, retried))
        if (ctx := item.config.stash.get(CONTEXT, None)) is not None:
            gpu_share.end_of_test(ctx.backend.device)  # what it cached goes back to the GPU's other workers
    runs_kernels = {"kernel_dtype", "kernel_spec"} & set(getattr(item, "fixturenames", ()))  # kernel modules' code
    if call.when == "call" and runs_kernels and call.excinfo is not None:
        _drop_drawn_case(call.excinfo.value)
    report = yield
    snapshot = item.config.stash.get(context.CHECKS_SNAPSHOT, None)
    if call.when == "call" and runs_kernels and snapshot is not None and (changed := snapshot.changes()):
        report.outcome = "failed"  # whatever the test saw, it was judged by code a kernel module changed
        if hasattr(report, "wasxfail"):  # not an expected failure either
            del report.wasxfail
        report.longrepr = (f"the suite's own checking code was changed while the run went on: {', '.join(changed)}; "
                           f"no verdict of this run can be trusted: find the kernel module that assigns it")
    _fail_unless_known(item, call, report)
    return report


def _drop_drawn_case(exc: BaseException) -> None:
    """A failure whose message names its case and its reproduction line loses Hypothesis's note of the case it
    drew ("Failing test case: drawn(case=...)"): the same case a second time in every failure and in pytest's short
    summary (whole, where CI is set), and not always the case that ran (a test may raise a dim, as the batch
    properties do)."""
    notes = getattr(exc, "__notes__", None)
    if notes and "reproduce with:" in str(exc):
        exc.__notes__ = [note for note in notes if not note.startswith("Failing test case:")]
    for inner in getattr(exc, "exceptions", ()):  # Hypothesis's group of distinct failures
        _drop_drawn_case(inner)


def _fail_unless_known(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> None:
    """An expected failure (xfail under a known issue) stays one only where the failure is what the issue describes
    (its failure_pattern); any other failure of its kernel and dtype fails the run."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    kernel_dtype = params.get("kernel_dtype")
    issue = kernel_dtype[2] if isinstance(kernel_dtype, tuple) and len(kernel_dtype) > 2 else None
    if call.when != "call" or not hasattr(report, "wasxfail") or issue is None or call.excinfo is None:
        return
    from suite.checks import ordinary
    from suite.session.known_issues import KnownIssueFailure, problems_of

    text = str(call.excinfo.value)
    if getattr(item, "originalname", "") == "test_matches_reference":
        # The reference loop judges each case's problems one by one against the issue and ends a test its issue
        # explains with KnownIssueFailure: any other failure (an undescribed problem beside a described one, an
        # end-of-test rule) fails, whatever text of the issue's the message also holds.
        if isinstance(call.excinfo.value, KnownIssueFailure):
            return
    elif issue.covers_all(problems_of(call.excinfo.value), ordinary.beside):
        # Elsewhere (properties, benchmarks) each failure's problems, each on its own: a pattern found only in a
        # reproduction line or a note, or describing one of two distinct failures, describes neither.
        return
    del report.wasxfail
    report.outcome = "failed"
    report.longrepr = (f"{text}\n(not the failure known issue {issue.id} describes: its failure_pattern "
                       f"{issue.failure_pattern!r} does not describe every problem here (each output's each problem, "
                       f"and each end-of-test rule, is matched on its own), so it fails the run)")


def pytest_report_header(config: pytest.Config) -> list[str]:
    ctx = config.stash.get(CONTEXT, None)
    return [] if ctx is None else header_lines(config, ctx)  # a deferred controller prints them after its build


def header_lines(config: pytest.Config, ctx: context.SuiteContext) -> list[str]:
    b = ctx.backend
    import torch
    import triton

    lines = [f"portability: backend={b.name} device={b.device_name!r} arch={b.arch} "
             f"{'CUs' if b.family == 'amd' else 'SMs'}={b.sm_count} warp={b.warp_size} profile={b.profile.key}",
             f"portability: torch {torch.__version__}, triton {triton.__version__}, hypothesis profile "
             f"{ctx.profile!r}{' (large shapes)' if ctx.large_shapes else ''}"]
    if ctx.cache is not None:
        c = ctx.cache
        lines.append(f"portability: autotune cache {c.path} ({c.status}, {len(c.entries)} entries)")
    if ctx.options.config is not None:
        lines.append(f"portability: every case runs --config={ctx.options.config}")
    lines.append("portability: memory check: " + {
        "interpreter": "every load, store and atomic of every launch, against the launch's tensors (interpreter)",
        "compute-sanitizer": "compute-sanitizer memcheck (PYTORCH_NO_CUDA_MEMORY_CACHING=1)",
        "asan": "Triton's AddressSanitizer build (TRITON_ENABLE_ASAN=1, xnack+)",
        "off": "off" + (" (--no-memcheck)" if b.name == "interpret" else " (--memcheck runs under the vendor's checker)"),
    }[ctx.memcheck])
    pin = ctx.pinning
    if pin.gpus and context.xdist_on(config):
        workers = int(config.option.numprocesses)
        lines.append(f"portability: {workers} xdist worker(s), each pinned ({pin.gpu_variable}) to one of "
                     f"{len(pin.gpus)} visible GPU(s): {', '.join(pin.gpus)}")
    lines += [f"portability: {n}" for n in ctx.notes]
    if ctx.run_file and (sh := ctx.run_file.data.get("shard")):
        lines.append(f"portability: shard {sh['index']}/{sh['count']} of run {sh['run_id']} (the others deselected"
                     f"{shard.run_id_note(ctx.options.run_id)})" if sh["count"] > 1 else f"portability: run id {sh['run_id']}")
    if ctx.run_file:
        # Written when the first of the suite's own tests reports: a run of none (the harness's tests) writes none.
        lines.append(f"portability: results -> {ctx.run_file.path} (written once a suite test reports)")
    return [terminal.visible(line) for line in lines]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``kernel_dtype``: every selected kernel x dtype, skipped where the backend lacks the dtype, strict-xfail where
    a known issue matches. ``kernel_spec``: every selected kernel."""
    if "kernel_dtype" not in metafunc.fixturenames:
        return
    import triton

    from kernels import registry

    ctx = metafunc.config.stash[CONTEXT]
    b = ctx.backend
    params = []
    split_into = schedule.load_parts(profile=ctx.profile) if metafunc.function.__name__ in parts.SPLIT_FUNCTIONS else {}
    for spec in registry.all_specs():
        if not ctx.options.selects(spec.name):
            continue
        for dtype in spec.dtypes:
            marks = [pytest.mark.kernel_dtype]
            if not b.supports(dtype):
                marks.append(pytest.mark.skip(reason=f"{dtype} is not supported on {b.arch} ({b.profile.key} profile)"))
            elif ctx.options.numerics and dtype.startswith("fp8") and (why := _modelled_fp8_not_run(spec.name)):
                marks.append(pytest.mark.skip(reason=f"{spec.name} {why}"))
            from suite.session import known_issues as known_mod

            issue = known_mod.find(ctx.known, b.name, b.arch, triton.__version__, spec.name, dtype,
                                   metafunc.function.__name__)
            if issue:
                # Not strict unless asked: a run whose draw meets no case of the issue says so (xpassed, "not met"),
                # never a failure that depends on the draw (docs/checks.md, "Known issues").
                strict = bool(metafunc.config.getoption("--strict-known-issues", False))
                marks.append(pytest.mark.xfail(strict=strict, reason=f"known issue {issue.id}: {issue.link}"))
            # A long test is split into parts (suite/workers/parts.py), except where a known issue's strict xfail needs
            # it whole.
            base = f"{spec.name}-{dtype}"
            split = 1 if issue else split_into.get(f"{metafunc.definition.nodeid}[{base}]", 1)
            params += [pytest.param(parts.KernelDtype((spec, dtype, issue), i, split), id=parts.part_id(base, i, split),
                                    marks=marks) for i in range(split)]
    metafunc.parametrize("kernel_dtype", params)


@pytest.hookimpl(trylast=True)  # after -k and -m deselection: only the tests that will run
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--repro`` must be a case, and ``--config`` a config, of every kernel they will run with (a line copied
    from another kernel's failure would otherwise run a case the kernel does not define): checked before any test
    runs. (Under xdist the workers collect; there the test itself fails with the same message.)"""
    ctx = config.stash.get(CONTEXT, None)
    if ctx is None:
        return
    if ctx.options.kernels:
        _deselect_other_kernels(config, ctx, items)
    if not items and config.option.keyword:  # pytest would end with exit 5, no verdict and no run file
        _refuse(config, keyword_selects_none(config))
    if ctx.options.shard is not None:  # after every other selection: the shards split what the whole run would run
        kept, dropped = shard.split(items, *ctx.options.shard, schedule.load(profile=ctx.profile))
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    parts.note_selection(config, items)
    if ctx.backend.name != "interpret":
        schedule.order(items, schedule.load(profile=ctx.profile))  # longest first, so that no long test starts last (xdist)
    else:
        schedule.compiles_first(items)  # collection order, but the lints after the compiles they repeat
    if ctx.options.repro is None and ctx.options.config is None:
        return
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "kernel_dtype" not in callspec.params:
            continue
        spec, dtype, _ = callspec.params["kernel_dtype"]
        if problem := _selection_problem(ctx, spec, dtype, item.nodeid):
            _refuse(config, problem)


def _selection_problem(ctx: context.SuiteContext, spec: Any, dtype: str, nodeid: str) -> str | None:
    """Why --config or --repro does not fit a test of ``spec`` on ``dtype`` (a split test's dtype carries its part:
    '-part1of3'), or None."""
    from kernels.spec import Case

    if ctx.options.config is not None and (problem := options.config_problem(spec, ctx.options.config)):
        return f"--config={json.dumps(ctx.options.config)}: {problem} (test {nodeid})"
    if ctx.options.repro is not None:
        try:
            spec.check_case(Case.parse(spec.name, dtype.split("-part")[0], ctx.options.repro))
        except ValueError as exc:
            return f"--repro={ctx.options.repro}: {exc} (test {nodeid})"
    return None


def keyword_selects_none(config: pytest.Config) -> str:
    """The usage error of a ``-k`` that leaves no test."""
    ctx = config.stash.get(CONTEXT, None)
    kernels = ctx.options.kernels if ctx is not None else None
    among = f"the tests --kernels={','.join(kernels)} leaves" if kernels else "the tests collected"
    return terminal.visible(f"-k={config.option.keyword}: selects none of {among} (nor of those -m leaves); -k "
                            f"matches words of a test's id, such as a kernel, a dtype or a test function (e.g. -k "
                            f"'vector_add and fp32'): --collect-only -q lists the ids")


def _deselect_other_kernels(config: pytest.Config, ctx: context.SuiteContext, items: list[pytest.Item]) -> None:
    """``--kernels`` filters every test: one marked ``kernels(...)`` runs only where a pattern selects one of its
    kernels (``kernels()``, probe kernels of its own, runs only without --kernels)."""
    kept, dropped = [], []
    for item in items:
        mark = item.get_closest_marker("kernels")
        params = item.callspec.params if hasattr(item, "callspec") else {}
        names = None if mark is None else [params["kernel"]] if "kernel" in params else list(mark.args)
        if names is not None and not any(ctx.options.selects(n) for n in names):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _refuse(config: pytest.Config, message: str) -> None:
    if not context.is_worker(config):
        raise pytest.UsageError(message)


class SummaryPrinter:
    """Controller only: the portability summary, from the run file."""

    def __init__(self, ctx: context.SuiteContext) -> None:
        self.ctx = ctx

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        run_file = self.ctx.run_file
        if run_file is not None and run_file.started:
            width = fit.width_of(config)
            summary.write_summary(VisibleLines(fit.FittedWriter(terminalreporter, width)), run_file.data,
                                  run_file.path, width)


def _visible_data(value: Any) -> Any:
    """A copy of a run file's data with every string's control characters escaped, for what the terminal shows of
    it (the verdict); the run file keeps its own."""
    if isinstance(value, str):
        return terminal.visible(value)
    if isinstance(value, dict):
        return {_visible_data(k): _visible_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible_data(v) for v in value]
    return value


class VisibleLines:
    """A writer's ``write_line`` and ``section``, each line's control characters escaped before it is fitted."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def section(self, title: str, *args: Any, **kwargs: Any) -> None:
        self.writer.section(terminal.visible(title), *args, **kwargs)

    def write_line(self, text: str, **markup: Any) -> None:
        self.writer.write_line(terminal.visible(str(text)), **markup)


class VerdictPrinter:
    """Controller only: the run's verdict, the last lines before pytest's own count (suite/plugin/glance.py): after
    pytest's short test summary, which its terminal reporter writes once every other terminal summary is done. It
    ends with the result file's path, or the line that says the file could not be written."""

    def __init__(self, ctx: context.SuiteContext) -> None:
        self.ctx = ctx

    @pytest.hookimpl(trylast=True)  # after the recorder finished the run file
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The run's exit code agrees with its verdict (glance.exit_status): a test the run file records as failed
        fails the run."""
        run_file = self.ctx.run_file
        if run_file is not None and run_file.started:
            session.exitstatus = glance.exit_status(run_file.data, int(session.exitstatus))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config):
        result = yield
        run_file = self.ctx.run_file
        unwritten = summary.write_error_line(run_file) if run_file is not None else None
        if run_file is not None and run_file.started:
            width = fit.width_of(config)
            terminalreporter.section("verdict", bold=True)
            session = self.ctx.session  # its exit status as exit_status set it (pytest passes the one before)
            status = session.exitstatus if session is not None else exitstatus
            recorder = config.pluginmanager.get_plugin("suite-run-recorder")
            not_started = len(recorder.never_started()) if recorder is not None else 0
            # Escaped before they are fitted to the width (a carriage return would be wrapped away as a space).
            lines = glance.verdict_lines(_visible_data(run_file.data), terminal.visible(str(run_file.path)), width,
                                         unwritten and terminal.visible(unwritten), exitstatus=int(status),
                                         not_started=not_started)
            failed = glance.verdict_state(run_file.data, int(status)) in ("FAILED", "INTERRUPTED", "UNCHECKED")
            for i, line in enumerate(lines):
                markup = {"red" if failed else "green": True, "bold": True} if i == 0 else {}
                if unwritten and i == len(lines) - 1:
                    markup = {"red": True}
                terminalreporter.write_line(line, **markup)
        elif unwritten:
            terminalreporter.write_line(terminal.visible(unwritten), red=True)
        return result


def _modelled_fp8_not_run(kernel: str) -> str | None:
    """Why a shipped fp8 kernel is not run under --numerics (suite/checks/numerics_fp8.py's NOT_RUN), or None."""
    from suite.checks import numerics_fp8

    return numerics_fp8.NOT_RUN.get(kernel)
