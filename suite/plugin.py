"""The suite's pytest plugin: backend choice, kernel registry, known issues, result file, summary."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

from suite import backend as backend_mod
from suite import known_issues as known_mod
from suite import results
from suite.strategies import LARGE_SHAPE_PROFILES, register_profiles

# Registered at import, before Hypothesis's own plugin loads --hypothesis-profile.
register_profiles()
DEFAULT_PROFILE = "ci"
BACKEND = pytest.StashKey()
STATE = pytest.StashKey()
KNOWN_PROPERTY = "suite_known_issue"


class SuiteState:
    def __init__(self, profile: str, known: list, run_file: results.RunFile | None) -> None:
        self.profile = profile
        self.known = known
        self.run_file = run_file
        self.large_shapes = profile in LARGE_SHAPE_PROFILES


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


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if config.option.help or config.option.version:
        return
    from hypothesis import settings

    profile = config.getoption("--hypothesis-profile", default=None) or DEFAULT_PROFILE
    settings.load_profile(profile)
    try:
        backend = backend_mod.resolve(config.getoption("--backend"))
    except backend_mod.BackendUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[BACKEND] = backend
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
    config.stash[STATE] = SuiteState(profile, known, run_file)
    if run_file is not None:
        config.pluginmanager.register(RunRecorder(run_file), "suite-run-recorder")


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

    def __init__(self, run_file: results.RunFile) -> None:
        self.run_file = run_file

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
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
        self.run_file.add_report(report.nodeid, outcome, report.duration, message,
                                 props.get(results.CASES_PROPERTY, []), props.get(KNOWN_PROPERTY), extra)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.run_file.started:
            return
        done = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
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
        failing = [c for c in data["cases"] if c["outcome"] in ("failed", "xfailed")]
        for c in failing[:20]:
            tr.write_line(f"{c['outcome'].upper()} case {c['kernel']}[{c['dtype']}]: reproduce with: {c['repro']}")
        if len(failing) > 20:
            tr.write_line(f"... and {len(failing) - 20} more failing cases in the result file")
        tr.write_line(f"result file ({data['status']}): {self.run_file.path}")


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
    """Kernel x dtype: each property as 'name' (holds), 'name: NO' (broken claim) or 'name: no' (finding)."""
    table: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f in findings:
        if f["holds"]:
            text = f["property"]
        else:
            text = f"{f['property']}: {'NO' if f['claimed'] else 'no'}"
        table[(f["kernel"], f["dtype"])].append(text)
    return [[k, d, ", ".join(v)] for (k, d), v in sorted(table.items())]
