"""The suite's pytest plugin: backend choice, kernel registry, known issues, result file, summary."""

from __future__ import annotations

import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

from suite import autotune, crash, results
from suite import backend as backend_mod
from suite import known_issues as known_mod
from suite.strategies import LARGE_SHAPE_PROFILES, register_profiles

# Registered at import, before Hypothesis's own plugin loads --hypothesis-profile.
register_profiles()
DEFAULT_PROFILE = "ci"
BACKEND = pytest.StashKey()
STATE = pytest.StashKey()
KNOWN_PROPERTY = "suite_known_issue"
AUTOTUNE_PROPERTY = "suite_autotune"
REPLACED_PROPERTY = "suite_worker_replaced"
DEFAULT_CASE_TIMEOUT_S = 300.0


class SuiteState:
    def __init__(self, profile: str, known: list, run_file: results.RunFile | None) -> None:
        self.profile = profile
        self.known = known
        self.run_file = run_file
        self.large_shapes = profile in LARGE_SHAPE_PROFILES
        self.gpus: list[str] = []  # device ids workers are pinned to (controller)
        self.assigned: dict[str, str] = {}  # live worker id -> its GPU (controller)
        self.gpu_variable = ""
        self.journal_dir: str | None = None
        self.cache: autotune.Cache | None = None
        self.retuned: list[dict] = []
        self.session: pytest.Session | None = None
        self.notes: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("portability", "Triton portability suite")
    group.addoption("--backend", default="auto", choices=backend_mod.BACKENDS,
                    help="where kernels run: auto (default: a GPU if torch sees one, else the CPU interpreter), "
                         "interpret, cuda, rocm")
    group.addoption("--results-dir", default=os.environ.get("SUITE_RESULTS_DIR", "reports/runs"),
                    help="directory for the run's result file (default reports/runs; env SUITE_RESULTS_DIR)")
    group.addoption("--no-results", action="store_true", help="write no result file")
    group.addoption("--repro", default=None, metavar="CASE",
                    help="run exactly one case instead of Hypothesis examples, as printed in a failure's "
                         "reproduction line (e.g. 'M=3,N=17;layout=contiguous;values=normal;seed=1')")
    group.addoption("--kernel-module", action="append", default=[], metavar="MODULE",
                    help="also register kernels from this module (dotted name or path to a .py file); repeatable")
    group.addoption("--kernels", default=None, metavar="NAMES",
                    help="run only these registered kernels (comma-separated names)")
    group.addoption("--known-issues", default=str(known_mod.DEFAULT_PATH), metavar="FILE",
                    help="known-issue registry (JSON)")
    group.addoption("--retune", nargs="?", const="*", default=None, metavar="KERNELS",
                    help="before the tests, time every valid config of these kernels (comma-separated; all when "
                         "no value is given) on the benchmark shapes and rewrite this arch's autotune cache")
    group.addoption("--autotune-dir", default=None, metavar="DIR",
                    help="directory of the per-arch autotune caches (default hardware_profiles/autotune; "
                         "env SUITE_AUTOTUNE_DIR)")
    group.addoption("--case-timeout", type=float, metavar="SECONDS",
                    default=float(os.environ.get("SUITE_CASE_TIMEOUT", DEFAULT_CASE_TIMEOUT_S)),
                    help=f"end a case (and its worker process) that runs longer than this: a hung kernel "
                         f"(default {DEFAULT_CASE_TIMEOUT_S:g}; 0: no limit; env SUITE_CASE_TIMEOUT)")
    group.addoption("--hypothesis-db", default=os.environ.get("SUITE_HYPOTHESIS_DB"), metavar="DIR",
                    help="Hypothesis example database shared across runs (env SUITE_HYPOTHESIS_DB): failing "
                         "examples are saved there and replayed first; used by the dev and nightly profiles")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _uses_gpu(choice: str) -> bool:
    return choice in ("cuda", "rocm") or (choice == "auto" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0"))


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no usable GPU runtime: no GPU workers
        return 0


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` on a GPU backend: one worker per visible GPU (the interpreter: one per CPU)."""
    if not _uses_gpu(config.getoption("--backend")):
        return None
    return _gpu_count() or None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Controller: pin each worker to one GPU and tell it where to keep its in-flight journal."""
    state = node.config.stash.get(STATE, None)
    if state is None:
        return
    gpu = crash.assign(state.gpus, list(state.assigned.values()))
    if gpu is not None:
        state.assigned[node.gateway.id] = gpu
    node.workerinput["suite_gpu"] = gpu
    node.workerinput["suite_gpu_variable"] = state.gpu_variable
    node.workerinput["suite_journal_dir"] = state.journal_dir


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """Controller: a worker ended (or died): its GPU is free for the worker that replaces it."""
    state = node.config.stash.get(STATE, None)
    if state is not None:
        state.assigned.pop(node.gateway.id, None)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """A GPU fault ends its worker by design, and xdist stops replacing workers after 4 crashes per worker:
    unless --max-worker-restart is given, allow many (a run cut short is marked incomplete anyway)."""
    if hasattr(config.option, "maxworkerrestart") and config.option.maxworkerrestart is None:
        config.option.maxworkerrestart = "1000"


def repro_prefix(config: pytest.Config, nodeid: str) -> list[str]:
    """The command that reruns one test alone; ``--repro=CASE`` completes it."""
    parts = ["pytest", nodeid, f"--backend={config.stash[BACKEND].name}"]
    return parts + [f"--kernel-module={m}" for m in config.getoption("--kernel-module")]


def _pin_worker(config: pytest.Config) -> None:
    """Worker: see only the GPU the controller gave it, before the GPU runtime starts."""
    gpu = config.workerinput.get("suite_gpu")
    if gpu is not None:
        os.environ[config.workerinput["suite_gpu_variable"]] = gpu
    crash.journal = crash.Journal(config.workerinput.get("suite_journal_dir"), config.workerinput["workerid"])


def _hypothesis_database(config: pytest.Config, profile: str) -> str | None:
    from hypothesis import settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    path = config.getoption("--hypothesis-db")
    if not path:
        return None
    if settings.get_profile(profile).database is None and profile in ("ci", "validation"):
        return f"hypothesis database {path} not used: the {profile} profile is derandomized and keeps no examples"
    settings.register_profile(profile, settings.get_profile(profile), database=DirectoryBasedExampleDatabase(path))
    return f"hypothesis database: {path} (failing examples are saved there and replayed first)"


def pytest_configure(config: pytest.Config) -> None:
    if config.option.help or config.option.version:
        return
    from hypothesis import settings

    profile = config.getoption("--hypothesis-profile", default=None) or DEFAULT_PROFILE
    db_note = _hypothesis_database(config, profile)
    settings.load_profile(profile)
    if _is_worker(config):
        _pin_worker(config)
    try:
        backend = backend_mod.resolve(config.getoption("--backend"))
    except backend_mod.BackendUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[BACKEND] = backend
    crash_config[:] = [config]
    # Kernel modules import only now: after TRITON_INTERPRET is settled.
    from kernels import registry

    try:
        registry.load_builtin()
        for target in config.getoption("--kernel-module"):
            registry.load_module(target)
        known = known_mod.load(config.getoption("--known-issues"))
        selected = config.getoption("--kernels")
        if selected:
            for name in selected.split(","):
                registry.get(name.strip())  # KeyError lists the registered kernels
    except KeyError as exc:
        raise pytest.UsageError(f"--kernels: {exc.args[0]}") from None
    except (ValueError, known_mod.KnownIssueError) as exc:
        raise pytest.UsageError(str(exc)) from None
    retune = config.getoption("--retune")
    crash.timeout_s = max(0.0, config.getoption("--case-timeout"))
    cache = None
    # The interpreter reads a cache only from an explicit --autotune-dir (the harness's own tests of the cache).
    if backend.name != "interpret" or config.getoption("--autotune-dir"):
        cache = autotune.load(autotune.cache_path(backend.arch, config.getoption("--autotune-dir")), backend.arch)
        autotune.activate(autotune.Lookup(backend, cache))
        autotune.count_do_bench()
    if retune and not _is_worker(config):
        if backend.name == "interpret":
            raise pytest.UsageError("--retune times configs on a GPU; the CPU interpreter's timings mean nothing "
                                    "(use --backend=cuda or --backend=rocm on a GPU runner)")
        if cache.status == "unreadable":
            raise pytest.UsageError(f"--retune: {cache.error}. The file is left as it is: move it away (or fix it), "
                                    f"then retune")
        if retune != "*":
            for name in retune.split(","):
                try:
                    registry.get(name.strip())
                except KeyError as exc:
                    raise pytest.UsageError(f"--retune: {exc.args[0]}") from None
    run_file = None
    if not _is_worker(config) and not config.getoption("--no-results") and not config.option.collectonly:
        seed = "derandomized" if settings.default.derandomize else config.getoption("--hypothesis-seed", None)
        if profile == "validation":
            from suite.strategies import VALIDATION_SEED

            seed = VALIDATION_SEED
        env = results.fingerprint(backend, profile, seed)
        run_id = results.new_run_id(backend.name, backend.arch)
        run_file = results.RunFile(Path(config.getoption("--results-dir")), run_id, env, results.command_line())
        run_file.data["known_issues"] = [k.as_record() for k in known]
    state = SuiteState(profile, known, run_file)
    state.cache = cache
    if db_note:
        state.notes.append(db_note)
    if cache is not None and cache.status == "unreadable":
        state.notes.append(f"autotune: {cache.error}; running with the default configs (the file is left as it is)")
    config.stash[STATE] = state
    if not _is_worker(config) and backend.name != "interpret":
        state.gpu_variable = crash.visibility_variable(backend.family)
        state.gpus = crash.visible_gpus(_gpu_count(), state.gpu_variable)
    if not _is_worker(config):
        state.journal_dir = tempfile.mkdtemp(prefix="suite-inflight-")
    if run_file is not None:
        run_file.data["autotune"] = autotune_record(state)
        recorder = RunRecorder(run_file, state)
        config.pluginmanager.register(recorder, "suite-run-recorder")
        if not hasattr(config, "workerinput") and not _xdist_on(config):
            crash.on_timeout = recorder.record_timeout


def _xdist_on(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and config.getoption("dist", "no") != "no"


def autotune_record(state: SuiteState) -> dict | None:
    cache = state.cache
    if cache is None:
        return None
    return {"cache": str(cache.path), "cache_status": cache.status, "cache_error": cache.error,
            "cache_entries": len(cache.entries), "hits": 0, "nearest": 0, "misses": 0, "stale": 0,
            "stale_kernels": {}, "tuning_benchmarks": 0, "entries": []}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Controller (before xdist starts workers, so they read the new cache): ``--retune``."""
    config = session.config
    if STATE not in config.stash:
        return
    state = config.stash[STATE]
    state.session = session
    if _is_worker(config) or not config.getoption("--retune"):
        return
    from kernels import registry
    from suite import bench, compile_matrix

    backend = config.stash[BACKEND]
    names = config.getoption("--retune")
    specs = [s for s in registry.all_specs() if names == "*" or s.name in {n.strip() for n in names.split(",")}]
    tr = config.pluginmanager.get_plugin("terminalreporter")
    write = tr.write_line if tr else print
    target = ("cuda" if backend.family == "nvidia" else "hip", backend.arch, backend.warp_size)

    def compile_record(spec, dtype, cfg):
        try:
            return compile_matrix.compile_one(spec, dtype, cfg, target)
        except Exception as exc:  # noqa: BLE001 - no profile for this arch, say: no pruning
            return {"status": "skipped", "error": str(exc)}

    write(f"autotune: retuning {len(specs)} kernel(s) for {backend.arch} ({backend.sm_count} SMs/CUs) "
          f"into {state.cache.path}")
    state.retuned = autotune.retune(specs, backend, state.cache, time_config=bench.ConfigTimer(backend),
                                    compile_record=compile_record, progress=write)
    from tabulate import tabulate

    write(tabulate(autotune.retune_rows(state.retuned), headers=autotune.RETUNE_HEADERS, tablefmt="github"))
    if state.run_file is not None:
        record = state.run_file.data["autotune"]
        record["cache_entries"] = len(state.cache.entries)
        record["cache_status"] = state.cache.status
        lookup = autotune.active()
        record["tuning_benchmarks"] += lookup.tuning_benchmarks if lookup else 0
        if lookup:
            lookup.tuning_benchmarks = 0
        record["entries"] = [dict(zip(["kernel", "dtype", "shape", "default_ms", "tuned_ms", "speedup_vs_default",
                                       "pruned"], row, strict=True)) for row in autotune.retune_rows(state.retuned)]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Worker side: hand this test's autotune counts, and a poisoned GPU context, to the controller."""
    if call.when == "call":
        lookup = autotune.active()
        delta = lookup.take() if lookup else None
        if delta:
            item.user_properties.append((AUTOTUNE_PROPERTY, delta))
        if crash.poisoned:
            item.user_properties.append((REPLACED_PROPERTY, crash.poisoned))
    return (yield)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if BACKEND in item.config.stash:
        crash.journal.start_test(item.nodeid, repro_prefix(item.config, item.nodeid))


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    """After a test's reports went out: a worker whose GPU context is poisoned ends itself (xdist starts a
    fresh one for the rest); a single process stops the run, since every later test would fail."""
    crash.journal.end_test()
    if not crash.poisoned:
        return
    config = crash_config[0] if crash_config else None
    if config is not None and _is_worker(config):
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(crash.EXIT_POISONED)
    if config is not None and STATE in config.stash and config.stash[STATE].session is not None:
        config.stash[STATE].session.shouldstop = (f"GPU context poisoned by {crash.poisoned}; every later test "
                                                  f"would fail: run with -n 1 (or -n auto) so a fresh worker "
                                                  f"process takes over")


crash_config: list[pytest.Config] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    """Controller: the workers' in-flight journals are read; remove their directory."""
    state = config.stash.get(STATE, None)
    if state is not None and state.journal_dir and not _is_worker(config):
        import shutil

        shutil.rmtree(state.journal_dir, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str]:
    if BACKEND not in config.stash:
        return []
    b = config.stash[BACKEND]
    state = config.stash[STATE]
    import torch
    import triton

    lines = [f"portability: backend={b.name} device={b.device_name!r} arch={b.arch} "
             f"{'CUs' if b.family == 'amd' else 'SMs'}={b.sm_count} warp={b.warp_size} profile={b.profile.key}",
             f"portability: torch {torch.__version__}, triton {triton.__version__}, hypothesis profile "
             f"{state.profile!r}{' (large shapes)' if state.large_shapes else ''}"]
    if b.profile_note:
        lines.append(f"portability: {b.profile_note}")
    if state.cache is not None:
        c = state.cache
        lines.append(f"portability: autotune cache {c.path} ({c.status}, {len(c.entries)} entries)")
    if state.gpus and _xdist_on(config):
        workers = int(config.option.numprocesses)
        lines.append(f"portability: {workers} xdist worker(s), each pinned ({state.gpu_variable}) to one of "
                     f"{len(state.gpus)} visible GPU(s): {', '.join(state.gpus)}")
    lines += [f"portability: {n}" for n in state.notes]
    if state.run_file:
        lines.append(f"portability: results -> {state.run_file.path}")
    return lines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kernel_dtype" not in metafunc.fixturenames:
        return
    import triton

    from kernels import registry

    config = metafunc.config
    b = config.stash[BACKEND]
    state = config.stash[STATE]
    params = []
    selected = config.getoption("--kernels")
    names = {n.strip() for n in selected.split(",")} if selected else None
    for spec in registry.all_specs():
        if names is not None and spec.name not in names:
            continue
        for dtype in spec.dtypes:
            marks = [pytest.mark.kernel_dtype]
            if not b.supports(dtype):
                marks.append(pytest.mark.skip(reason=f"{dtype} is not supported on {b.arch} ({b.profile.key} profile)"))
            issue = known_mod.find(state.known, b.name, b.arch, triton.__version__, spec.name, dtype,
                                   metafunc.function.__name__)
            if issue:
                marks.append(pytest.mark.xfail(strict=True, reason=f"known issue {issue.id}: {issue.link}"))
            params.append(pytest.param((spec, dtype, issue), id=f"{spec.name}-{dtype}", marks=marks))
    metafunc.parametrize("kernel_dtype", params)


class RunRecorder:
    """Registered on the controller only: turns test reports (with the case records that
    workers attach as user_properties) into the run file, and prints the summary."""

    def __init__(self, run_file: results.RunFile, state: SuiteState | None = None) -> None:
        self.run_file = run_file
        self.state = state
        self.expected: set[str] = set()  # the suite's tests this run should record

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.expected |= {item.nodeid for item in session.items if item.nodeid.startswith("suite/")}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        self.expected |= {i for i in ids if i.startswith("suite/")}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "???":  # xdist: the worker process died during this test
            if report.nodeid.startswith("suite/"):
                self._worker_died(report)
            return
        if not (report.when == "call" or (report.when == "setup" and report.outcome != "passed")):
            return
        if not report.nodeid.startswith("suite/"):
            return
        props = dict(report.user_properties)
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        elif report.failed and "XPASS(strict)" in str(report.longrepr):
            outcome = "xpassed-strict"
        message = None
        if report.failed:
            message = str(report.longrepr)[-2000:]
        elif report.skipped and isinstance(report.longrepr, tuple):
            message = str(report.longrepr[2])
        extra = {key: props[prop] for prop, key in results.RECORD_PROPERTIES.items() if prop in props}
        self._count_autotune(props.get(AUTOTUNE_PROPERTY))
        if props.get(REPLACED_PROPERTY):
            self.run_file.data.setdefault("incidents", []).append(
                {"kind": "fault", "nodeid": report.nodeid, "worker": _worker_id(report),
                 "message": f"GPU context poisoned by {props[REPLACED_PROPERTY]}"[:2000]})
        self.run_file.add_report(report.nodeid, outcome, report.duration, message,
                                 props.get(results.CASES_PROPERTY, []), props.get(KNOWN_PROPERTY), extra)

    def _count_autotune(self, delta: dict | None) -> None:
        record = self.run_file.data.get("autotune")
        if not delta or record is None:
            return
        names = {"hit": "hits", "nearest": "nearest", "miss": "misses", "stale": "stale"}
        for how, n in delta["lookups"].items():
            record[names[how]] += n
        record["stale_kernels"].update(delta["stale_kernels"])
        record["tuning_benchmarks"] += delta["tuning_benchmarks"]

    def _worker_died(self, report: pytest.TestReport) -> None:
        """A worker ended during a test: a fault it announced (the test is already recorded), a hung case
        its watchdog ended, or a hard crash. The journal says which case was running."""
        worker = _worker_id(report)
        data = self.run_file.data
        seen = next((t for t in data["tests"] if t["nodeid"] == report.nodeid), None)
        if seen is not None:  # the fault path: recorded, then the worker replaced itself
            seen["message"] = ((seen["message"] or "") + f"\n[worker {worker} replaced after this test]")[-2000:]
            self.run_file.flush()
            return
        entry = crash.read_journal(self.state.journal_dir if self.state else None, worker) or {}
        failure = entry.get("failure") or (f"worker {worker} died during this test with no report (a segfault, "
                                           f"an abort, or killed); see the worker's output above")
        kind = "timeout" if failure.startswith("timeout") else "crash"
        self._record_lost(report.nodeid, kind, failure, entry.get("case"), worker)

    def _record_lost(self, nodeid: str, kind: str, failure: str, case: dict | None, worker: str | None) -> None:
        data = self.run_file.data
        data.setdefault("incidents", []).append({"kind": kind, "nodeid": nodeid, "worker": worker,
                                                 "message": failure[:2000]})
        records = []
        if case:
            repro = case.get("repro")
            failure_text = f"{failure}\nreproduce with: {repro}" if repro else failure
            records.append({**{k: case[k] for k in ("kernel", "dtype", "shape", "layout", "values", "seed")},
                            "outcome": "failed", "error_ratio": "inf", "outputs": {}, "message": failure_text[:2000],
                            "duration_s": round(max(0.0, time.time() - case.get("started", time.time())), 4),
                            "nodeid": nodeid, "repro": repro, "failure": kind})
        self.run_file.add_report(nodeid, "failed", 0.0, failure[:2000], records, None)

    def record_timeout(self, message: str) -> None:
        """Single-process run, from the watchdog thread just before the process ends."""
        j = crash.journal
        if j.nodeid:
            self._record_lost(j.nodeid, "timeout", message, j.case, None)
        self.run_file.finish("incomplete")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.run_file.started:
            return
        done = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
        missing = sorted(self.expected - {t["nodeid"] for t in self.run_file.data["tests"]})
        if missing:  # e.g. xdist gave up replacing crashed workers
            done = False
            self.run_file.data.setdefault("incidents", []).append(
                {"kind": "crash", "nodeid": missing[0], "worker": None,
                 "message": f"{len(missing)} test(s) never reported (first: {missing[0]}); the run was cut short"})
        self.run_file.finish("complete" if done else "incomplete")

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        from tabulate import tabulate

        if not self.run_file.started:
            return
        data = self.run_file.data
        rows = summary_rows(data["cases"], data["tests"])
        tr = terminalreporter
        tr.section("portability summary")
        env = data["environment"]
        tr.write_line(f"{env['backend']} on {env['device_name']} ({env['arch']}), torch {env['torch']}, "
                      f"triton {env['triton']}, hypothesis profile {env['hypothesis_profile']}")
        if rows:
            tr.write_line(tabulate(rows, headers=["kernel", "dtype", "passed", "failed", "xfailed",
                                                  "worst error/bound"], tablefmt="github"))
        if data["findings"]:
            tr.write_line("")
            tr.write_line(tabulate(findings_rows(data["findings"]), headers=["kernel", "dtype", "property findings"],
                                   tablefmt="github"))
        if data["compiles"]:
            from suite.compile_matrix import summary_rows as compile_rows

            headers, rows = compile_rows(data["compiles"])
            tr.write_line("")
            tr.write_line(tabulate(rows, headers=headers, tablefmt="github"))
        auto = data.get("autotune")
        if auto:
            tr.write_line("")
            tr.write_line(f"autotune: cache {auto['cache']} ({auto['cache_status']}, {auto['cache_entries']} entries); "
                          f"lookups: {auto['hits']} hits, {auto['nearest']} nearest-bucket, {auto['misses']} misses "
                          f"(default config), {auto['stale']} stale (default config); tuning benchmarks run: "
                          f"{auto['tuning_benchmarks']}")
            if auto["cache_error"]:
                tr.write_line(f"autotune: {auto['cache_error']}")
            for kernel, why in sorted(auto["stale_kernels"].items()):
                tr.write_line(f"autotune: stale entries for {kernel} ({why}): rerun with --retune={kernel}")
        for inc in data.get("incidents", []):
            tr.write_line(f"INCIDENT {inc['kind']} in {inc['nodeid']} (worker {inc['worker']}): "
                          f"{inc['message'].splitlines()[0][:300]}")
        failing = [c for c in data["cases"] if c["outcome"] in ("failed", "xfailed")]
        for c in failing[:20]:
            tr.write_line(f"{c['outcome'].upper()} case {c['kernel']}[{c['dtype']}]: reproduce with: {c['repro']}")
        if len(failing) > 20:
            tr.write_line(f"... and {len(failing) - 20} more failing cases in the result file")
        tr.write_line(f"result file ({data['status']}): {self.run_file.path}")


def _worker_id(report: pytest.TestReport) -> str | None:
    node = getattr(report, "node", None)
    gateway = getattr(node, "gateway", None)
    if gateway is not None:
        return gateway.id
    return getattr(report, "worker_id", None) or (node.workerinput.get("workerid") if hasattr(node, "workerinput")
                                                  else None)


def summary_rows(cases: list[dict], tests: list[dict]) -> list[list]:
    """Kernel x dtype: case counts by outcome and the worst error ratio; skipped tests too."""
    table: dict[tuple[str, str], dict] = defaultdict(lambda: {"passed": 0, "failed": 0, "xfailed": 0, "worst": None})
    for c in cases:
        row = table[(c["kernel"], c["dtype"])]
        row[c["outcome"]] = row.get(c["outcome"], 0) + 1
        r = c["error_ratio"]
        r = float(r) if r is not None else None
        if r is not None and (row["worst"] is None or r > row["worst"]):
            row["worst"] = r
    rows = []
    for (kernel, dtype), row in sorted(table.items()):
        worst = "-" if row["worst"] is None else f"{row['worst']:.3g}"
        rows.append([kernel, dtype, row["passed"], row["failed"], row["xfailed"], worst])
    for t in tests:
        if t["outcome"] == "skipped" and "::test_matches_reference[" in t["nodeid"]:
            kernel, _, dtype = t["nodeid"].rsplit("[", 1)[1].rstrip("]").rpartition("-")
            if (kernel, dtype) not in table:
                rows.append([kernel, dtype, "-", "-", "-", f"skipped: {t['message'] or ''}"[:60]])
    return sorted(rows, key=lambda r: (r[0], r[1]))


def findings_rows(findings: list[dict]) -> list[list]:
    """Kernel x dtype: each property as 'name' (holds), 'name: NO' (broken claim), 'name: no' (finding) or
    'name: unchecked' (the test ended before any case was checked)."""
    table: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f in findings:
        if not f.get("cases_checked"):
            text = f"{f['property']}: unchecked"
        elif f["holds"]:
            text = f["property"]
        else:
            text = f"{f['property']}: {'NO' if f['claimed'] else 'no'}"
        table[(f["kernel"], f["dtype"])].append(text)
    return [[k, d, ", ".join(v)] for (k, d), v in sorted(table.items())]
