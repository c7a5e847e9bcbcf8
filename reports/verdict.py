"""The report's first screen: what is broken or slower where, per kernel and platform, in one glance."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from reports import nodeids
from reports.failure_kinds import FailureKind
from reports.inventory import known_issue_use
from reports.loading import Run, RunFileError, platform_label
from reports.outcomes import (
    RAN,
    finding_known_issue,
    kernel_dtype_of,
    kernels_of,
    known_issue_of,
    not_run,
    not_run_text,
    tests_by_nodeid,
    unsupported,
)
from reports.perf import Cell, efficiency_cells
from reports.render import Section, Table, pct

Platform = tuple[str, str]
SHOWN = 6  # items per verdict line before "and N more"


STATES = ("broken", "known issue", "unchecked", "passed", "not run")  # worst first


@dataclass
class Spot:
    """One kernel (all its dtypes) on one platform."""
    state: str = "not run"  # one of STATES
    problems: Counter = field(default_factory=Counter)  # what is wrong: failed cases, wrong outputs, ...
    known_tests: int = 0  # tests xfailed under known issues (as pytest counts them)
    known_cases: int = 0  # of their cases, those that failed (xfailed)
    ran: bool = False  # a test of it ran (not skipped), or a case or benchmark of it was recorded
    not_run: dict[str, str] = field(default_factory=dict)  # dtype -> why it did not run (its tests were skipped)
    unchecked: str = ""  # why it ran unchecked: its cases launched no Triton kernel for the checker to see
    memory_off: bool = False  # it ran in a run with memory checking off (or not recorded)
    efficiency: float | None = None  # the worst dtype's, against the measured ceilings
    speedup: float | None = None  # the worst dtype's, over the torch baseline
    invalid: int = 0  # benchmarks with an invalid timing

    @property
    def unsupported(self) -> bool:
        """Not run at all, and only because the platform lacks its dtypes: it cannot run there."""
        return self.state == "not run" and bool(self.not_run) and all(map(unsupported, self.not_run.values()))

    def text(self) -> str:
        """The heatmap cell and the Markdown table cell."""
        if self.state == "not run":
            if not self.not_run:
                return "-"
            return "not run: unsupported" if self.unsupported else "not run: skipped"
        if self.state == "broken":
            return "BROKEN " + ", ".join(f"{n} {what}" for what, n in self.problems.most_common(2))
        if self.state == "unchecked":
            return "unchecked: no launch"
        parts = [f"known issue: {self.known_tests} xfailed" if self.state == "known issue" else "passed"]
        if self.efficiency is not None:
            parts.append(f"{100 * self.efficiency:.0f}%")
        if self.speedup is not None:
            parts.append(f"{self.speedup:.2g}x")
        if self.invalid:
            parts.append(f"{self.invalid} INVALID timing")
        return " ".join(parts)

    def record(self) -> dict[str, Any]:
        """The cell for summary.json."""
        out: dict[str, Any] = {"state": self.state, "text": self.text()}
        if self.problems:
            out["problems"] = dict(self.problems)
        if self.known_tests or self.known_cases:
            out["xfailed_tests"], out["xfailed_cases"] = self.known_tests, self.known_cases
        if self.not_run:
            out["not_run"] = dict(self.not_run)
            out["unsupported"] = self.unsupported
        if self.unchecked:
            out["unchecked"] = self.unchecked
        if self.ran:
            out["memory_checked"] = not self.memory_off
        return out


def spots(runs: list[Run]) -> tuple[list[Platform], list[str], dict[tuple[str, Platform], Spot], list[dict]]:
    """Per kernel and platform, what ran and how it ended; and the suite's own checks (findings that name no
    kernel, as 'inputs') that do not hold."""
    plats = list(dict.fromkeys(r.platform for r in runs))
    table: dict[tuple[str, Platform], Spot] = defaultdict(Spot)
    checks: list[dict] = []
    mem_checked: dict[Platform, set[str]] = defaultdict(set)  # kernels a memory checker saw on the platform
    # A finding names a kernel where any run tested one of that name: an older run whose tests of a kernel newer code
    # superseded (reports/current.py) keeps its findings the newer code never checked, and they are the kernel's.
    kernels = set().union(*map(kernels_of, runs))
    for run in runs:
        tests = tests_by_nodeid(run)
        for c in run.data["cases"]:
            s = table[(c["kernel"], run.platform)]
            s.ran = True
            flaky = c.get("failure") == FailureKind.INTERMITTENT  # wrong in some runs only: named so, it is still broken
            s.problems["intermittent cases" if flaky else "failed cases"] += c["outcome"] == "failed"
            s.known_cases += c["outcome"] == "xfailed"
        for t in run.data["tests"]:
            kd = kernel_dtype_of(t["nodeid"])
            if kd is None:
                continue
            s = table[(kd[0], run.platform)]
            s.ran = s.ran or t["outcome"] in RAN
            s.problems["failed tests"] += nodeids.failing(t)
            s.known_tests += t["outcome"] == "xfailed"
        for f in run.data["findings"]:
            broken = bool(f["claimed"]) and not f["holds"]
            if f["kernel"] not in kernels:  # a check of the suite itself, not of a kernel
                if broken:
                    checks.append({"check": f["property"], "of": f["kernel"], "platform": run.label,
                                   "message": f["message"]})
                continue
            s = table[(f["kernel"], run.platform)]
            s.problems["broken properties"] += broken and finding_known_issue(run, f, tests) is None
        for b in run.data["benchmarks"]:
            s = table[(b["kernel"], run.platform)]
            s.ran = True
            s.problems["wrong benchmark outputs"] += b.get("correct") is False
        mem = run.data.get("memcheck")
        if isinstance(mem, dict) and mem.get("mode") not in (None, "off"):
            unchecked = mem.get("unchecked") or {}
            mem_checked[run.platform] |= set(mem.get("kernels") or {}) - set(unchecked)
            for kernel, why in unchecked.items():
                if kernel in kernels:
                    table[(kernel, run.platform)].unchecked = str(why)
    for (kernel, dtype, p), why in not_run(runs).items():
        table[(kernel, p)].not_run[dtype] = why
    _, cells = efficiency_cells(runs)
    for (kernel, _), per in cells.items():
        for p, cell in per.items():
            if p in plats and (kernel, p) in table:
                _worst(table[(kernel, p)], cell)
    for (kernel, p), s in table.items():
        s.problems = +s.problems  # drop zero counts
        s.memory_off = s.ran and kernel not in mem_checked[p]
        if s.unchecked and kernel in mem_checked[p]:  # checked in another run of the platform
            s.unchecked = ""
        s.state = ("broken" if s.problems else "known issue" if s.known_tests or s.known_cases else
                   "not run" if not s.ran else "unchecked" if s.unchecked else "passed")
    kernels = sorted({k for k, _ in table})
    return plats, kernels, table, checks


def _worst(s: Spot, cell: Cell) -> None:
    if cell.status == "invalid":
        s.invalid += 1
    if cell.status != "ok":
        return
    if cell.measured is not None:
        s.efficiency = cell.measured if s.efficiency is None else min(s.efficiency, cell.measured)
    if cell.speedup is not None:
        s.speedup = cell.speedup if s.speedup is None else min(s.speedup, cell.speedup)


def _listed(items: list[str]) -> str:
    more = f", and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more


def _known_issues(runs: list[Run]) -> tuple[int, int, list[str], list[dict[str, Any]], int]:
    """Tests xfailed (all of them, as pytest counts), cases xfailed, per known issue that matched a phrase and a
    summary record, and how many of those the run did not meet."""
    xfailed_tests = sum(t["outcome"] == "xfailed" for r in runs for t in r.data["tests"])
    xfailed_cases = sum(c["outcome"] == "xfailed" for r in runs for c in r.data["cases"])
    what: dict[tuple[str, str], set[str]] = defaultdict(set)  # (issue, platform) -> the kernel x dtype under it
    for r in runs:
        for t in r.data["tests"]:
            if (issue := known_issue_of(r, t)) and (kd := kernel_dtype_of(t["nodeid"])):
                what[(issue, r.label)].add(" ".join(kd))
    phrases, records, unmet = [], [], 0

    def met(item: tuple[tuple[str, str], Counter]) -> bool:  # a test or case of the run failed as the issue says
        return any(o.startswith("xfailed ") for o in item[1])

    # The issues this run met first; one no test or case met (its tests skipped, say) after them, saying so.
    for (issue, label), c in sorted(known_issue_use(runs).items(), key=lambda item: (not met(item), item[0])):
        tests = {o[:-6]: n for o, n in c.items() if o.endswith(" tests")}
        cases = {o[:-6]: n for o, n in c.items() if o.endswith(" cases")}
        counts = ", ".join([f"{n} {o} test{'s' if n != 1 else ''}" for o, n in sorted(tests.items())] +
                           [f"{n} {o} case{'s' if n != 1 else ''}" for o, n in sorted(cases.items())])
        hit = met(((issue, label), c))
        unmet += not hit
        phrases.append(f"{issue} ({'' if hit else 'not met in this run: '}"
                       f"{', '.join(sorted(what[(issue, label)])) or '-'} on {label}: {counts})")
        records.append({"id": issue, "platform": label, "under": sorted(what[(issue, label)]), "tests": tests,
                        "cases": cases})
    return xfailed_tests, xfailed_cases, phrases, records, unmet


def verdict_section(runs: list[Run], bad: list[RunFileError], with_plots: bool = True,
                    superseded: list[Any] | None = None, kept: list[Any] | None = None) -> tuple[Section, dict[str, Any]]:
    """``superseded``: what older code of a changed kernel module ran that newer code covered again, left out;
    ``kept``: what older code ran that stays in, no newer code having covered it (reports/current.py)."""
    superseded, kept = superseded or [], kept or []
    plats, kernels, table, checks = spots(runs)
    labels = [platform_label(p) for p in plats]
    listed = sorted(table.items())
    broken = [(k, p, s) for (k, p), s in listed if s.state == "broken"]
    ran = [(k, p, s) for (k, p), s in table.items() if s.ran]
    not_run_spots = [(k, p, s) for (k, p), s in listed if s.state == "not run" and s.not_run]
    unchecked = [(k, p, s) for (k, p), s in listed if s.state == "unchecked"]
    slower = sorted(((s.speedup, k, p) for k, p, s in ran if s.speedup is not None and s.speedup < 1.0),
                    key=lambda x: x[0])
    lowest = sorted(((s.efficiency, k, p) for k, p, s in ran if s.efficiency is not None), key=lambda x: x[0])[:3]
    notes = []
    if broken:
        notes.append(f"**Broken: {len({k for k, _, _ in broken})} kernel(s)** - " + _listed(
            [f"{k} on {platform_label(p)} ({', '.join(f'{n} {w}' for w, n in s.problems.most_common())})"
             for k, p, s in broken]))
    elif not ran:  # nothing of any kernel ran: nothing is known to be correct
        notes.append(f"**Nothing ran: no kernel's test, case or benchmark ran** on {', '.join(labels) or 'no platform'}"
                     " (see Not run below): nothing here says a kernel is correct.")
    else:
        ran_kernels = len({k for k, _, _ in ran})
        notes.append(f"**Correct: every case run passed** ({ran_kernels} kernel(s) run on "
                     f"{', '.join(labels) or 'no platform'}; known issues aside).")
    if superseded:
        notes.append(f"**Superseded: {len({s.run for s in superseded})} run(s) of older code left out** (a kernel "
                     "module changed since; what its newer code ran again on the same platform is that code's, "
                     "`--keep-superseded` adds every version up) - " + _listed([s.text() for s in superseded]))
    if kept:
        notes.append(f"**Older code still counted: {len({k.run for k in kept})} run(s)** (a kernel module changed "
                     "since, but its newer code did not run these again on that platform, or checked less: their "
                     "results stay in the verdict) - " + _listed([k.text() for k in kept]))
    if checks:
        notes.append(f"**Broken checks of the suite itself: {len(checks)}** - " + _listed(
            [f"{c['check']} on {c['platform']}" for c in checks]))
    xfailed_tests, xfailed_cases, issue_phrases, issue_records, unmet = _known_issues(runs)
    if xfailed_tests or issue_phrases:
        cases = f" ({xfailed_cases} xfailed case(s) in them)" if xfailed_cases else ""
        if xfailed_tests or len(issue_records) > unmet:
            head = (f"**Known issues: {xfailed_tests} xfailed test(s)**{cases} under {len(issue_records) - unmet} "
                    "known issue(s)" + (f" ({unmet} more not met in this run)" if unmet else ""))
        else:  # every issue under these kernels went unmet (its tests skipped, say): none is a result of the run
            head = f"**Known issues: none met in this run** ({unmet} listed for these tests)"
        notes.append(head + " - " + _listed(issue_phrases) + ".")
    if not_run_spots:
        cannot = sum(s.unsupported for _, _, s in not_run_spots)
        notes.append(f"**Not run: {len({k for k, _, _ in not_run_spots})} kernel(s)**"
                     + (f" ({cannot} unsupported: the platform lacks their dtypes)" if cannot else "") + " - "
                     + _listed([f"{k} on {platform_label(p)} ({not_run_text(s.not_run)})"
                                for k, p, s in not_run_spots]))
    if unchecked:
        notes.append(f"**Unchecked: {len({k for k, _, _ in unchecked})} kernel(s)** (passed, but no Triton launch "
                     "of theirs was seen, so nothing of the kernel was checked) - " + _listed(
                         [f"{k} on {platform_label(p)} ({s.unchecked})" for k, p, s in unchecked]))
    off = defaultdict(list)
    for k, p, s in sorted(ran):
        if s.memory_off:
            off[p].append(k)
    if off:
        notes.append("**Memory not checked** (out-of-bounds accesses unseen; `--memcheck` on a GPU runner, the "
                     "interpreter checks unless `--no-memcheck`): " + "; ".join(
                         f"{'every kernel' if len(ks) == sum(1 for _, q, _ in ran if q == p) else ', '.join(ks)} "
                         f"on {platform_label(p)}" for p, ks in off.items()) + ".")
    if slower:
        notes.append(f"**Slower than torch: {len(slower)}** - " + _listed(
            [f"{k} on {platform_label(p)} {x:.2g}x" for x, k, p in slower]))
    elif any(s.speedup is not None for _, _, s in ran):
        notes.append("**Slower than torch: none** (at each kernel's largest benchmark shape, worst dtype).")
    if lowest:
        notes.append("Lowest efficiency against the measured ceilings: " +
                     "; ".join(f"{k} on {platform_label(p)} {pct(e)}" for e, k, p in lowest) + ".")
    incomplete = [r for r in runs if r.incomplete]
    if incomplete:
        notes.append(f"**{len(incomplete)} run(s) INCOMPLETE**: their results are partial (see the warnings).")
    if bad:
        notes.append(f"**{len(bad)} run file(s) could not be read and are left out** - " +
                     _listed([str(e) for e in bad]))
    notes.append("Per kernel and platform, the worst of its dtypes: BROKEN (failed cases or tests, a wrong benchmark "
                 "output, a claimed property that does not hold outside a known issue), known issue (xfailed tests "
                 "only), unchecked (passed without a Triton launch to check), else passed, with the efficiency "
                 "against the measured ceilings and the speed-up over torch at the largest benchmark shape; not run: "
                 "unsupported (the platform lacks its dtypes) or skipped; '-' not in these runs.")
    rows = [[k, *(table[(k, p)].text() if (k, p) in table else "-" for p in plats)] for k in kernels]
    section = Section("Verdict", notes, [Table(["kernel", *labels], rows, "Kernel x platform", folded=True)], lead=True)
    if with_plots and kernels and plats:
        from reports.plots import heatmap

        section.figures.append(heatmap(kernels, labels, [[table.get((k, p), Spot()) for p in plats] for k in kernels]))
    summary = {"broken": [{"kernel": k, "platform": platform_label(p), "problems": dict(s.problems)}
                          for k, p, s in broken],
               "broken_checks": checks,
               "known_issues": {"xfailed_tests": xfailed_tests, "xfailed_cases": xfailed_cases,
                                "issues": issue_records},
               "not_run": [{"kernel": k, "platform": platform_label(p), "unsupported": s.unsupported,
                            "why": not_run_text(s.not_run), "dtypes": dict(s.not_run)} for k, p, s in not_run_spots],
               "unchecked": [{"kernel": k, "platform": platform_label(p), "why": s.unchecked}
                             for k, p, s in unchecked],
               "memory_not_checked": {platform_label(p): ks for p, ks in off.items()},
               "slower_than_torch": [{"kernel": k, "platform": platform_label(p), "speedup": x} for x, k, p in slower],
               "cells": {k: {platform_label(p): table[(k, p)].text() for p in plats if (k, p) in table}
                         for k in kernels},
               "states": {k: {platform_label(p): table[(k, p)].record() for p in plats if (k, p) in table}
                          for k in kernels},
               "unreadable_files": [str(e) for e in bad],
               "superseded": [s.record() for s in superseded],
               "older_code_counted": [k.record() for k in kept]}
    return section, summary
