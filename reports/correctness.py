"""Correctness matrix, test outcomes, numeric drift and property findings, per platform (device + arch)."""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from typing import Any

from reports.failure_kinds import FailureKind
from reports.loading import Run, num, platform_label
from reports.nodeids import FAILING, OUTCOMES
from reports.outcomes import (
    finding_known_issue,
    kernel_dtype_of,  # noqa: F401 - where it was first defined (tests/workers/test_parts.py)
    known_issue_of,
    not_run,
    tests_by_nodeid,
)
from reports.render import Section, Table, fmt, shape_text

MAX_ROWS = 100
Platform = tuple[str, str]


def first_line(text: Any, limit: int = 160) -> str:
    if not text:
        return ""
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def one_line(text: Any, limit: int = 240) -> str:
    """A multi-line message on one line (lines joined by ' / '), shortened."""
    line = " / ".join(part.strip() for part in str(text or "").strip().splitlines() if part.strip())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def outcome_text(record: dict[str, Any]) -> str:
    """A case's outcome, with the rate where it was wrong in some of its runs only ('failed (intermittent: wrong in
    3 of 21 runs)')."""
    counts = record.get("intermittent")
    if record.get("failure") != FailureKind.INTERMITTENT or not isinstance(counts, dict):
        return str(record["outcome"])
    return f"{record['outcome']} (intermittent: wrong in {counts.get('wrong')} of {counts.get('runs')} runs)"


def _limited(rows: list[list[Any]], notes: list[str], what: str) -> list[list[Any]]:
    if len(rows) > MAX_ROWS:
        notes.append(f"Showing the first {MAX_ROWS} of {len(rows)} {what}; summary.json and the run files have all.")
    return rows[:MAX_ROWS]


def correctness_section(runs: list[Run], plats: list[Platform]) -> tuple[Section, list[dict[str, Any]]]:
    labels = [platform_label(p) for p in plats]
    counts: dict[tuple[str, str, Platform], Counter] = defaultdict(Counter)
    skipped = not_run(runs)
    test_counts: dict[Platform, Counter] = defaultdict(Counter)
    not_passed: list[list[Any]] = []
    failing_cases: list[list[Any]] = []
    # Tests of a kernel x dtype that failed: one may fail with every case passed (an end-of-test check: a declared path
    # no case took, a kernel never launched) or before any case, and its cell must not read as all right.
    failed_tests: Counter = Counter()
    for run in runs:
        for t in run.data["tests"]:
            if t["outcome"] in FAILING and (kd := kernel_dtype_of(t["nodeid"])):
                failed_tests[(*kd, run.platform)] += 1
        for c in run.data["cases"]:
            counts[(c["kernel"], c["dtype"], run.platform)][c["outcome"]] += 1
            if c["outcome"] != "passed":
                failing_cases.append([run.label, c["kernel"], c["dtype"], shape_text(c["shape"]), c["layout"],
                                      c["values"], c["seed"], outcome_text(c), c.get("known_issue") or "-",
                                      fmt(num(c["error_ratio"])), c["repro"]])
        for t in run.data["tests"]:
            test_counts[run.platform][t["outcome"]] += 1
            if t["outcome"] != "passed":
                not_passed.append([run.label, t["nodeid"], t["outcome"], known_issue_of(run, t) or "-",
                                   one_line(t["message"])])
    keys = sorted({(k, d) for k, d, _ in counts} | {(k, d) for k, d, _ in skipped} | {(k, d) for k, d, _ in failed_tests})
    rows, summary = [], []
    for kernel, dtype in keys:
        row: list[Any] = [kernel, dtype]
        for p in plats:
            c = counts.get((kernel, dtype, p))
            bad = failed_tests.get((kernel, dtype, p), 0)
            if c or bad:
                c = c or Counter()
                tests = f"; {bad} test{'s' if bad > 1 else ''} failed" if bad else ""
                row.append(f"{c['passed']}/{c['failed']}/{c['xfailed']}{tests}")
                summary.append({"kernel": kernel, "dtype": dtype, "platform": platform_label(p), **dict(c),
                                **({"failed_tests": bad} if bad else {})})
            elif (kernel, dtype, p) in skipped:
                row.append(f"not run: {first_line(skipped[(kernel, dtype, p)], 80)}")
                summary.append({"kernel": kernel, "dtype": dtype, "platform": platform_label(p),
                                "skipped": skipped[(kernel, dtype, p)]})
            else:
                row.append("-")
        rows.append(row)
    notes = ["Cases checked against the float64 reference, per kernel x dtype and platform (device and arch): "
             "passed/failed/xfailed, and the tests of it that failed (one may fail with every case passed, at an "
             "end-of-test check: a declared path no case took, a kernel never launched; or before any case). Several "
             "runs of one platform are added up. 'not run' gives the reason its tests were skipped there (a dtype the "
             "arch lacks is unsupported there); '-' means not in these runs."]
    outcome_rows = [[platform_label(p), sum(1 for r in runs if r.platform == p), *(test_counts[p][o] for o in OUTCOMES)]
                    for p in plats]
    tables = [Table(["kernel", "dtype", *labels], rows, "Cases (passed/failed/xfailed)"),
              Table(["platform", "runs", *OUTCOMES], outcome_rows, "Test outcomes"),
              Table(["platform", "test", "outcome", "known issue", "message or skip reason"],
                    _limited(not_passed, notes, "tests that did not pass"), "Tests that did not pass", "none"),
              Table(["platform", "kernel", "dtype", "shape", "layout", "values", "seed", "outcome", "known issue",
                     "error/bound", "reproduce with"], _limited(failing_cases, notes, "failed or xfailed cases"),
                    "Failed and xfailed cases", "none")]
    return Section("Correctness matrix", notes, tables), summary


def _ratio_stats(values: list[float]) -> tuple[float | None, float | None, int]:
    finite = [v for v in values if not math.isnan(v)]
    nans = len(values) - len(finite)
    if not finite:
        return (math.nan if nans else None), None, nans
    return max(finite), statistics.median(finite), nans


def drift_section(runs: list[Run], plats: list[Platform]) -> tuple[Section, list[dict[str, Any]]]:
    ratios: dict[tuple[str, str, Platform], list[float]] = defaultdict(list)
    for run in runs:
        for c in run.data["cases"]:
            r = num(c["error_ratio"])
            if r is not None:
                ratios[(c["kernel"], c["dtype"], run.platform)].append(r)
    rows, summary = [], []
    for kernel, dtype in sorted({(k, d) for k, d, _ in ratios}):
        row: list[Any] = [kernel, dtype]
        medians = []
        for p in plats:
            values = ratios.get((kernel, dtype, p))
            if not values:
                row.append("-")
                continue
            worst, median, nans = _ratio_stats(values)
            if median is not None:
                medians.append(median)
            row.append(f"worst {fmt(worst)}, median {fmt(median)} (n={len(values)}"
                       + (f", {nans} nan)" if nans else ")"))
            summary.append({"kernel": kernel, "dtype": dtype, "platform": platform_label(p), "worst": worst,
                            "median": median, "cases": len(values), "nan_cases": nans})
        spread = max(medians) / min(medians) if len(medians) > 1 and min(medians) > 0 else None
        rows.append([*row, fmt(spread)])
    notes = ["Error ratio = the case's largest error divided by its tolerance bound (<= 1 passes), over all cases "
             "of the kernel x dtype on each platform. The last column divides the largest median by the smallest: "
             "how far the platforms drift apart numerically even when every case passes."]
    headers = ["kernel", "dtype", *(platform_label(p) for p in plats), "median spread (max/min)"]
    return Section("Numeric drift", notes, [Table(headers, rows)]), summary


def findings_section(runs: list[Run], plats: list[Platform]) -> tuple[Section, list[dict[str, Any]]]:
    merged: dict[tuple[str, str, str, Platform], dict[str, Any]] = {}
    details: list[list[Any]] = []
    for run in runs:
        tests = tests_by_nodeid(run)
        for f in run.data["findings"]:
            key = (f["kernel"], f["dtype"], f["property"], run.platform)
            m = merged.setdefault(key, {"holds": True, "claimed": False, "cases": 0, "stopped": False,
                                        "known_issue": None, "unexpected": False})
            issue = None if f["holds"] else finding_known_issue(run, f, tests)  # expected to fail under it
            if not f["holds"]:
                m["known_issue"] = m["known_issue"] or issue
                m["unexpected"] = m["unexpected"] or issue is None
            m["holds"] = m["holds"] and bool(f["holds"])
            m["stopped"] = m["stopped"] or bool(f.get("stopped"))
            m["claimed"] = m["claimed"] or bool(f["claimed"])
            m["cases"] += f["cases_checked"] if isinstance(f["cases_checked"], int) else 0
            if f.get("stopped") and f["holds"]:
                details.append([run.label, f["kernel"], f["dtype"], f["property"], fmt(bool(f["claimed"])),
                                "stopped: " + one_line(f["stopped"]), f["repro"] or "-"])
            if not f["holds"]:
                details.append([run.label, f["kernel"], f["dtype"], f["property"], fmt(bool(f["claimed"])),
                                (f"known issue {issue}: " if issue else "") + one_line(f["message"]),
                                f["repro"] or "-"])
    rows, summary = [], []
    for kernel, dtype, prop in sorted({k[:3] for k in merged}):
        row: list[Any] = [kernel, dtype, prop]
        for p in plats:
            m = merged.get((kernel, dtype, prop, p))
            if m is None:
                row.append("-")
                continue
            if m["holds"] and m["stopped"]:  # a case broke while checking it: no verdict either way
                row.append(f"stopped after {m['cases']} cases")
            elif m["holds"]:
                row.append(f"holds ({m['cases']} cases)")
            elif m["claimed"] and not m["unexpected"]:  # every failing run of it was expected to fail
                row.append(f"known issue {m['known_issue']}: claimed, does not hold")
            else:
                row.append("BROKEN: claimed but does not hold" if m["claimed"] else "does not hold (not claimed)")
            summary.append({"kernel": kernel, "dtype": dtype, "property": prop, "platform": platform_label(p), **m})
        rows.append(row)
    notes = ["Properties checked per kernel x dtype: determinism, batch invariance and the kernel's own invariants. "
             "'BROKEN' is a property the kernel's spec claims that did not hold on that platform; 'known issue' one that "
             "did not hold in a test expected to fail under a declared known issue."]
    tables = [Table(["kernel", "dtype", "property", *(platform_label(p) for p in plats)], rows),
              Table(["platform", "kernel", "dtype", "property", "claimed", "message", "reproduce with"],
                    _limited(details, notes, "findings that do not hold"), "Properties that do not hold",
                    "none")]
    return Section("Property findings", notes, tables), summary
