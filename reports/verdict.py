"""The report's first screen: what is broken or slower where, per kernel and platform, in one glance."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from reports.correctness import kernel_dtype_of
from reports.loading import Run, RunFileError, platform_label
from reports.perf import Cell, efficiency_cells
from reports.render import Section, Table, pct

Platform = tuple[str, str]
SHOWN = 6  # items per verdict line before "and N more"


@dataclass
class Spot:
    """One kernel (all its dtypes) on one platform."""
    state: str = "not run"  # "broken", "known issue", "ok", "not run"
    problems: Counter = field(default_factory=Counter)  # what is wrong: failed cases, wrong outputs, ...
    known: int = 0  # xfailed cases and tests (known issues)
    efficiency: float | None = None  # the worst dtype's, against the measured ceilings
    speedup: float | None = None  # the worst dtype's, over the torch baseline
    invalid: int = 0  # benchmarks with an invalid timing

    def text(self) -> str:
        """The heatmap cell and the Markdown table cell."""
        if self.state == "not run":
            return "-"
        if self.state == "broken":
            return "BROKEN " + ", ".join(f"{n} {what}" for what, n in self.problems.most_common(2))
        parts = [f"{self.known} xfail"] if self.state == "known issue" else ["ok"]
        if self.efficiency is not None:
            parts.append(f"{100 * self.efficiency:.0f}%")
        if self.speedup is not None:
            parts.append(f"{self.speedup:.2g}x")
        if self.invalid:
            parts.append(f"{self.invalid} INVALID timing")
        return " ".join(parts)


def spots(runs: list[Run]) -> tuple[list[Platform], list[str], dict[tuple[str, Platform], Spot]]:
    plats = list(dict.fromkeys(r.platform for r in runs))
    table: dict[tuple[str, Platform], Spot] = defaultdict(Spot)
    for run in runs:
        for c in run.data["cases"]:
            s = table[(c["kernel"], run.platform)]
            flaky = c.get("failure") == "intermittent"  # wrong in some runs only: named so, it is still broken
            s.problems["intermittent cases" if flaky else "failed cases"] += c["outcome"] == "failed"
            s.known += c["outcome"] == "xfailed"
        for t in run.data["tests"]:
            kd = kernel_dtype_of(t["nodeid"])
            if kd is None:
                continue
            s = table[(kd[0], run.platform)]
            s.problems["failed tests"] += t["outcome"] in ("failed", "xpassed-strict")
            s.known += t["outcome"] == "xfailed"
        for f in run.data["findings"]:
            s = table[(f["kernel"], run.platform)]
            s.problems["broken properties"] += bool(f["claimed"]) and not f["holds"]
        for b in run.data["benchmarks"]:
            table[(b["kernel"], run.platform)].problems["wrong benchmark outputs"] += b.get("correct") is False
    _, cells = efficiency_cells(runs)
    for (kernel, _), per in cells.items():
        for p, cell in per.items():
            _worst(table[(kernel, p)], cell)
    for s in table.values():
        s.problems = +s.problems  # drop zero counts
        s.state = "broken" if s.problems else "known issue" if s.known else "ok"
    kernels = sorted({k for k, _ in table})
    return plats, kernels, table


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


def verdict_section(runs: list[Run], bad: list[RunFileError],
                    with_plots: bool = True) -> tuple[Section, dict[str, Any]]:
    plats, kernels, table = spots(runs)
    labels = [platform_label(p) for p in plats]
    broken = [(k, p, s) for (k, p), s in sorted(table.items()) if s.state == "broken"]
    ran = [(k, p, s) for (k, p), s in table.items() if s.state != "not run"]
    slower = sorted(((s.speedup, k, p) for k, p, s in ran if s.speedup is not None and s.speedup < 1.0),
                    key=lambda x: x[0])
    lowest = sorted(((s.efficiency, k, p) for k, p, s in ran if s.efficiency is not None), key=lambda x: x[0])[:3]
    notes = []
    if broken:
        notes.append(f"**Broken: {len({k for k, _, _ in broken})} kernel(s)** - " + _listed(
            [f"{k} on {platform_label(p)} ({', '.join(f'{n} {w}' for w, n in s.problems.most_common())})"
             for k, p, s in broken]))
    else:
        notes.append(f"**Correct: every case run passed** ({len(kernels)} kernel(s) on {', '.join(labels) or 'no platform'}; "
                     "known issues aside).")
    if slower:
        notes.append(f"**Slower than torch: {len(slower)}** - " + _listed(
            [f"{k} on {platform_label(p)} {x:.2g}x" for x, k, p in slower]))
    elif any(s.speedup is not None for _, _, s in ran):
        notes.append("**Slower than torch: none** (at each kernel's largest benchmark shape, worst dtype).")
    if lowest:
        notes.append("Lowest efficiency against the measured ceilings: " +
                     "; ".join(f"{k} on {platform_label(p)} {pct(e)}" for e, k, p in lowest) + ".")
    known = sum(s.known for _, _, s in ran)
    if known:
        notes.append(f"Known issues: {known} xfailed case(s) and test(s), listed under Known issues.")
    incomplete = [r for r in runs if r.incomplete]
    if incomplete:
        notes.append(f"**{len(incomplete)} run(s) INCOMPLETE**: their results are partial (see the warnings).")
    if bad:
        notes.append(f"**{len(bad)} run file(s) could not be read and are left out** - " +
                     _listed([str(e) for e in bad]))
    notes.append("Per kernel and platform, the worst of its dtypes: BROKEN (failed cases or tests, a wrong benchmark "
                 "output, a claimed property that does not hold), xfail (known issues only), else ok with the "
                 "efficiency against the measured ceilings and the speed-up over torch at the largest benchmark "
                 "shape; '-' not run.")
    rows = [[k, *(table[(k, p)].text() if (k, p) in table else "-" for p in plats)] for k in kernels]
    section = Section("Verdict", notes, [Table(["kernel", *labels], rows, "Kernel x platform", folded=True)], lead=True)
    if with_plots and kernels and plats:
        from reports.plots import heatmap

        section.figures.append(heatmap(kernels, labels, [[table.get((k, p), Spot()) for p in plats] for k in kernels]))
    summary = {"broken": [{"kernel": k, "platform": platform_label(p), "problems": dict(s.problems)}
                          for k, p, s in broken],
               "slower_than_torch": [{"kernel": k, "platform": platform_label(p), "speedup": x} for x, k, p in slower],
               "cells": {k: {platform_label(p): table[(k, p)].text() for p in plats if (k, p) in table}
                         for k in kernels},
               "unreadable_files": [str(e) for e in bad]}
    return section, summary
