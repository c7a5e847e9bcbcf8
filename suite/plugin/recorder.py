"""The result recorder: the controller turns test reports into the run file.

Workers attach their case records, findings, compile and benchmark records to each test report as
``user_properties``; the recorder (registered on the controller only) adds them to the run file,
which it rewrites after every test. Tests whose worker died are recorded from the worker's in-flight
journal (:func:`suite.workers.crash.lost_case`); a run cut short is ``incomplete``, one stopped with Ctrl-C
``interrupted``.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import Any

import pytest

from reports.failure_kinds import FailureKind
from suite.checks import memcheck
from suite.plugin.context import SuiteContext
from suite.session import results
from suite.workers import crash, gpu_share, timing, warmup

KNOWN_PROPERTY = "suite_known_issue"
AUTOTUNE_PROPERTY = "suite_autotune"
MEMCHECK_PROPERTY = "suite_memcheck"


class RunRecorder:
    """Registered on the controller only: turns test reports (with the case records that
    workers attach as user_properties) into the run file."""

    def __init__(self, run_file: results.RunFile, ctx: SuiteContext | None = None) -> None:
        self.run_file = run_file
        self.ctx = ctx
        self.expected: set[str] = set()  # the suite's tests this run should record
        self.interrupted = False
        self.t0 = time.time()  # the session's start: the timeline's zero (reset at pytest_sessionstart)
        self.ready: dict[str, float] = {}  # xdist worker -> when its collection reached the controller
        self.began: dict[str, float] = {}  # nodeid -> when its setup began (epoch)
        self.began_on: dict[str, str] = {}  # nodeid -> the worker it runs on
        self.records: dict[str, dict] = {}  # nodeid -> its test record (teardown's end is added to it)
        self.startup: dict[str, dict] = {}  # worker -> its GPU start-up's times (suite/workers/warmup.py)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.t0 = time.time()
        self.config = session.config

    config: pytest.Config | None = None
    said_write_error = False

    def _say_write_error(self) -> None:
        """One line, the first time the run file cannot be written (a full or read-only disk): the tests go on,
        and the file keeps what was written before."""
        error = self.run_file.write_error
        if error is None or self.said_write_error:
            return
        self.said_write_error = True
        tr = self.config.pluginmanager.get_plugin("terminalreporter") if self.config is not None else None
        line = (f"portability: {error}; it keeps the {self.run_file.tests_written} test(s) written before; the tests "
                f"go on, and the run ends as an error")
        if tr is not None:
            tr.write_line("")
            tr.write_line(line, red=True)
        else:
            crash.process().announce(line)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.expected |= {item.nodeid for item in session.items if item.nodeid.startswith("suite/")}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        self.expected |= {i for i in ids if i.startswith("suite/")}
        gateway = getattr(node, "gateway", None)
        self.ready[getattr(gateway, "id", f"gw{len(self.ready)}")] = round(time.time() - self.t0, 3)

    def never_started(self) -> list[str]:
        """The suite's tests collected that never began (an interrupted run's, or one cut short)."""
        ended = {t["nodeid"] for t in self.run_file.data["tests"]}
        return sorted(self.expected - ended - set(self.began))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "???":  # xdist: the worker process died during this test
            if report.nodeid.startswith("suite/"):
                self._worker_died(report)
            return
        if not report.nodeid.startswith("suite/"):
            return
        if report.when == "setup":
            self.began[report.nodeid] = report.start or time.time()
            self.began_on[report.nodeid] = _worker_id(report) or "main"
        if report.when == "teardown":
            if (rec := self.records.get(report.nodeid)) is not None:
                rec["ended_s"] = round((report.stop or time.time()) - self.t0, 3)
            return
        if not (report.when == "call" or (report.when == "setup" and report.outcome != "passed")):
            return
        props = dict(report.user_properties)
        outcome = outcome_of(report)
        message = None
        if report.failed:
            message = str(report.longrepr)[-2000:]
        elif report.skipped and isinstance(report.longrepr, tuple):
            message = str(report.longrepr[2])
        extra = {key: props[prop] for prop, key in results.RECORD_PROPERTIES.items() if prop in props}
        self._count_autotune(props.get(AUTOTUNE_PROPERTY))
        self._count_memcheck(props.get(MEMCHECK_PROPERTY))
        self._count_share(props.get(gpu_share.SHARE_PROPERTY))
        if props.get(crash.POISONED_PROPERTY):
            self.run_file.data.setdefault("incidents", []).append(
                {"kind": FailureKind.FAULT.value, "nodeid": report.nodeid, "worker": _worker_id(report),
                 "message": f"GPU context poisoned by {props[crash.POISONED_PROPERTY]}"[:2000]})
        if (startup := props.get(warmup.STARTUP_PROPERTY)) is not None:
            self.startup[_worker_id(report) or "main"] = startup
        began = self.began.pop(report.nodeid, report.start or time.time())
        place = {"worker": _worker_id(report) or "main", "began_s": round(began - self.t0, 3),
                 "ended_s": round((report.stop or time.time()) - self.t0, 3)}
        self.records[report.nodeid] = self.run_file.add_report(
            report.nodeid, outcome, report.duration, message, props.get(results.CASES_PROPERTY, []),
            props.get(KNOWN_PROPERTY), extra, timing=props.get(timing.TIMING_PROPERTY), place=place)
        self._say_write_error()

    def _count_autotune(self, delta: dict | None) -> None:
        record = self.run_file.data.get("autotune")
        if not delta or record is None:
            return
        names = {"hit": "hits", "nearest": "nearest", "miss": "misses", "stale": "stale"}
        for how, n in delta["lookups"].items():
            record[names[how]] += n
        record["stale_kernels"].update(delta["stale_kernels"])
        record["tuning_benchmarks"] += delta["tuning_benchmarks"]
        if "fallback" in record:
            record["fallback"] += delta.get("fallback", 0)

    def _count_share(self, counts: dict | None) -> None:
        record = self.run_file.data.get("gpu_share")
        if not counts or record is None:
            return
        for key, n in counts.items():
            if key == gpu_share.ALONE_CASES:  # every case run alone, in the order they ended, up to a cap
                listed = record.setdefault(key, [])
                listed.extend(n[:max(0, gpu_share.ALONE_LISTED - len(listed))])
            elif isinstance(n, list):  # the too-large cases, each listed once, up to a cap (the count covers them all)
                listed = record.setdefault(key, [])
                seen = {(c["kernel"], c["dtype"], c["case"]) for c in listed}
                for c in n:
                    if (c["kernel"], c["dtype"], c["case"]) not in seen and len(listed) < gpu_share.TOO_LARGE_LISTED:
                        seen.add((c["kernel"], c["dtype"], c["case"]))
                        listed.append(c)
            else:
                record[key] = record.get(key, 0) + n

    def _count_memcheck(self, counts: dict | None) -> None:
        record = self.run_file.data.get("memcheck")
        if not counts or record is None:
            return
        for kernel, n in counts.items():
            mine = record["kernels"].setdefault(kernel, {"launches": 0, "memory_ops": 0})
            mine["launches"] += n["launches"]
            mine["memory_ops"] += n["memory_ops"]

    def _mark_unchecked(self) -> None:
        """Kernels whose cases ran but that no memory checker checked: never counted as checked."""
        record = self.run_file.data.get("memcheck")
        if record is None:
            return
        ran = {c["kernel"] for c in self.run_file.data["cases"]}
        if record["mode"] in ("compute-sanitizer", "asan"):
            for c in self.run_file.data["cases"]:  # every launch runs under the checker; launches are not counted
                record["kernels"].setdefault(c["kernel"], {"launches": 0, "memory_ops": 0})
            log_dir = os.environ.get(memcheck.SANITIZER_ENV)
            if record["mode"] == "compute-sanitizer" and log_dir:
                record["log_dir"] = log_dir
                record["reports"] = memcheck.all_reports(log_dir)[:100]
                where = sorted({r.split(" at ", 1)[1].split("+")[0] for r in record["reports"] if " at " in r})
                for case in self.run_file.data["cases"]:  # the checker stopped these kernels: say which it saw
                    if case.get("failure") == FailureKind.FAULT and where:
                        case["failure"] = FailureKind.MEMORY.value
                        case["message"] = (f"compute-sanitizer reported invalid accesses (in {', '.join(where)}) and "
                                           f"stopped the launch; {case['message']}")[:2000]
                self.run_file.flush()
        why = {"interpreter": "its cases launched no kernel through the interpreter",
               "off": "memory checking is off in this run"}.get(record["mode"], "no case of it ran under the checker")
        record["unchecked"] = {k: why for k in sorted(ran)
                               if record["mode"] == "off" or k not in record["kernels"]}

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
        kind, failure, case = crash.lost_case(self.ctx.pinning.journal_dir if self.ctx else None, worker)
        self._record_lost(report.nodeid, kind, failure, case, worker)

    def _record_lost(self, nodeid: str, kind: FailureKind, failure: str, case: dict | None,
                     worker: str | None) -> None:
        data = self.run_file.data
        data.setdefault("incidents", []).append({"kind": kind.value, "nodeid": nodeid, "worker": worker,
                                                 "message": failure[:2000]})
        records = []
        if case:
            repro = case.get("repro")
            failure_text = f"{failure}\nreproduce with: {repro}" if repro else failure
            records.append({**{k: case[k] for k in ("kernel", "dtype", "shape", "layout", "values", "seed")},
                            "outcome": "failed", "error_ratio": "inf", "outputs": {}, "message": failure_text[:2000],
                            "duration_s": round(max(0.0, time.time() - case.get("started", time.time())), 4),
                            "nodeid": nodeid, "repro": repro, "failure": kind.value})
        self.run_file.add_report(nodeid, "failed", 0.0, failure[:2000], records, None)
        self._say_write_error()

    def record_timeout(self, message: str) -> None:
        """Single-process run, from the watchdog thread just before the process ends."""
        j = crash.process().journal
        if j.nodeid:
            self._record_lost(j.nodeid, FailureKind.TIMEOUT, message, j.case, None)
        self.run_file.finish("incomplete")

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        # Ctrl-C, or xdist stopping the run as asked (-x, --maxfail: its own Interrupted); not the harness stopping
        # the session itself (Session.Interrupted after a GPU fault), nor pytest.exit (a worker dead at start-up).
        self.interrupted = (isinstance(excinfo.value, KeyboardInterrupt)
                            and not isinstance(excinfo.value, pytest.Session.Interrupted))

    @pytest.hookimpl(tryfirst=True)  # before the terminal prints the INTERNALERROR lines
    def pytest_internalerror(self, excrepr: Any, excinfo: Any) -> None:
        """Ctrl-C (or SIGTERM) that lands inside pytest-xdist's controller loop surfaces as an internal error: its queue's
        lock raises "release unlocked lock" while the KeyboardInterrupt is handled (seen on an H100 when a time limit
        stopped a nightly run). The run was stopped, not broken: it ends as an interrupted one (its summary, its verdict
        and a run file "interrupted" with what finished), never "incomplete" under an INTERNALERROR dump."""
        exc, seen = getattr(excinfo, "value", None), 0
        while exc is not None and seen < 20 and not isinstance(exc, KeyboardInterrupt):
            exc, seen = exc.__context__, seen + 1
        if isinstance(exc, KeyboardInterrupt):
            # The error itself, in case it was more than the race (one line each, not pytest's INTERNALERROR dump).
            sys.stderr.write(f"interrupted; the error pytest-xdist raised while stopping:\n{excrepr}\n")
            if self.config is not None:  # as pytest tells its plugins of a Ctrl-C (the terminal's summary reads it)
                self.config.hook.pytest_keyboard_interrupt(excinfo=pytest.ExceptionInfo.from_exception(exc))
            self.interrupted = True
            pytest.exit(f"interrupted ({type(exc).__name__} inside pytest-xdist's controller loop)",
                        returncode=pytest.ExitCode.INTERRUPTED)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            self._finish(session, exitstatus)
        finally:
            if self.run_file.write_error is not None:  # the file lacks tests that ran: an error of the run
                self._say_write_error()
                if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _where_it_stood(self, nodeid: str, worker: str | None, now: float) -> dict:
        """An unfinished test's worker, from its in-flight journal: the GPU it was pinned to, the case it ran and
        since when, and what it waited for on its GPU (or that it ran alone there), since when."""
        pinning = self.ctx.pinning if self.ctx else None
        if worker is None or pinning is None:
            return {}
        out: dict = {}
        if (gpu := pinning.assigned.get(worker)) is not None:
            out["gpu"] = str(gpu)
        entry = crash.read_journal(pinning.journal_dir, worker) or {}
        case = entry.get("case") if entry.get("nodeid") == nodeid else None
        if isinstance(case, dict) and isinstance(case.get("repro"), str):
            try:
                words = shlex.split(case["repro"])
            except ValueError:
                words = []
            out["case"] = next((w.split("=", 1)[1] for w in reversed(words) if w.startswith("--repro=")),
                               case["repro"])
            if isinstance(case.get("started"), (int, float)):
                out["case_running_s"] = round(max(0.0, now - case["started"]), 3)
        state = crash.read_gpu_state(pinning.journal_dir, worker) or {}
        if state.get("nodeid") == nodeid and isinstance(state.get("what"), str):
            out["gpu_state"] = state["what"]
            if isinstance(state.get("since"), (int, float)):
                out["gpu_state_s"] = round(max(0.0, now - state["since"]), 3)
        return out

    def _finish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.run_file.started:
            shards = (self.run_file.data.get("shard") or {}).get("count", 1)
            if shards == 1 or exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED:
                return
            # A shard dealt no test (more shards than tests): its empty file still completes the run's set of shards
            # for the reports, and a runner with nothing to do has not failed.
            self.run_file.start()
            session.exitstatus = exitstatus = pytest.ExitCode.OK
        self._mark_unchecked()
        self.run_file.data["timing"] = timing.summed(self.run_file.data["tests"])
        if workers := timing.timeline(self.run_file.data["tests"], self.ready, time.time() - self.t0,
                                      timing.startup_times(self.startup, self.t0)):
            self.run_file.data["timing"]["workers"] = workers
        # Ctrl-C, or -x/--maxfail (pytest's shouldfail: the tests not run were never due): what finished is kept, and
        # the file says the run was stopped on purpose, not that it lost tests.
        if self.interrupted or session.shouldfail:
            # The tests still running when it stopped, and for how long: what a run stopped by a time limit (the
            # nightly workflow's, a lent machine's) could not finish. Their durations are at least that.
            now = time.time()
            self.run_file.data["unfinished"] = [
                {"nodeid": n, "worker": self.began_on.get(n, "main"), "began_s": round(b - self.t0, 3),
                 "running_s": round(now - b, 3), **self._where_it_stood(n, self.began_on.get(n), now)}
                for n, b in sorted(self.began.items(), key=lambda kv: kv[1]) if n not in self.records]
            self.run_file.finish("interrupted")
            return
        done = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
        missing = sorted(self.expected - {t["nodeid"] for t in self.run_file.data["tests"]})
        if missing:  # e.g. xdist gave up replacing crashed workers
            done = False
            self.run_file.data.setdefault("incidents", []).append(
                {"kind": FailureKind.CRASH.value, "nodeid": missing[0], "worker": None,
                 "message": f"{len(missing)} test(s) never reported (first: {missing[0]}); the run was cut short"})
        self.run_file.finish("complete" if done else "incomplete")

def outcome_of(report: pytest.TestReport) -> str:
    """A test's outcome as the run file records it: pytest's, with expected failures told apart (xfailed; xpassed,
    a known issue the run did not meet; xpassed-strict, one that fails the run)."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.failed and "XPASS(strict)" in str(report.longrepr):
        return "xpassed-strict"
    return report.outcome


def _worker_id(report: pytest.TestReport) -> str | None:
    node = getattr(report, "node", None)
    gateway = getattr(node, "gateway", None)
    if gateway is not None:
        return gateway.id
    return getattr(report, "worker_id", None) or (node.workerinput.get("workerid") if hasattr(node, "workerinput")
                                                  else None)


