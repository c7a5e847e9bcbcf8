"""`python -m reports build`: one portability report (report.md, report.html, summary.json) from run files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reports.correctness import correctness_section, drift_section, findings_section
from reports.current import Kept, Superseded, current
from reports.files import refuse_inputs, write_atomic
from reports.inventory import autotune_section, compile_section, known_issues_section, runs_section
from reports.loading import Run, RunFileError, json_safe, load_some, platform_label, platforms
from reports.perf import perf_section
from reports.render import Section, Table, html_page, markdown
from reports.shards import merge_some
from reports.toolchain import module_key
from reports.verdict import verdict_section

SUMMARY_FORMAT = "portability-report/1"


def _warnings(runs: list[Run], added_up: bool = True) -> list[str]:
    warnings = [w for r in runs for w in r.warnings]
    for p in platforms(runs):
        same = [r for r in runs if r.platform == p]
        versions = {(r.env["triton"], r.env["torch"], r.env["driver"]) for r in same}
        if len(versions) > 1:
            warnings.append(f"{platform_label(p)} has {len(same)} runs with different software "
                            f"(triton, torch, driver: {sorted(versions, key=str)}); their results are added up")
        # One kernel module's code in some runs and other code in others: their kernels' results are added up too.
        hashes: dict[str, set[str]] = {}
        for r in same:
            for m in r.data.get("kernel_modules") or []:
                hashes.setdefault(module_key(m), set()).add(m.get("sha256") or "?")
        for key, seen in sorted(hashes.items()):
            if len(seen) > 1 and added_up:  # else the older versions' results were superseded (current.py)
                warnings.append(f"{platform_label(p)}: kernel module {key} differs between its runs ({len(seen)} "
                                f"versions, sha256 {', '.join(sorted(h[:12] for h in seen))}); the results of its "
                                f"kernels are added up across them")
    return warnings


MATPLOTLIB_MISSING = ("plots left out: matplotlib is not installed (the report's tables are whole): pip install "
                      "matplotlib, or install the suite with its reports extra (docs/installing.md)")


def plots_available() -> str | None:
    """None where matplotlib imports; else why the report has no plots (an optional library: a report without
    plots is still the whole report)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return MATPLOTLIB_MISSING
    return None


def assemble(runs: list[Run], with_plots: bool = True, bad: list[RunFileError] | None = None,
             superseded: list[Superseded] | None = None,
             kept: list[Kept] | None = None) -> tuple[str, list[str], list[Section], dict[str, Any]]:
    """The report of ``runs``; ``superseded``: None where every version of a changed kernel module is added up
    (--keep-superseded), else what current() left out of them; ``kept``: what of older code stays, the newer code
    never having covered it (both named in the verdict)."""
    bad = bad or []
    plats = platforms(runs)
    verdict_sec, verdict_sum = verdict_section(runs, bad, with_plots, superseded or [], kept or [])
    run_sec, run_sum = runs_section(runs)
    if bad:
        run_sec.tables.append(Table(["unreadable run file: why"], [[str(e)] for e in bad], "Left out"))
    corr_sec, corr_sum = correctness_section(runs, plats)
    drift_sec, drift_sum = drift_section(runs, plats)
    find_sec, find_sum = findings_section(runs, plats)
    comp_sec, comp_sum = compile_section(runs)
    perf_sec, perf_sum, plot_data = perf_section(runs)
    tune_sec, tune_sum = autotune_section(runs)
    known_sec, known_sum = known_issues_section(runs)
    if with_plots and plot_data:
        from reports.plots import cascade, efficiency_bars

        perf_sec.figures += [efficiency_bars(plot_data), cascade(plot_data)]
    warnings = _warnings(runs, added_up=superseded is None)
    title = f"Triton portability report: {len(runs)} run(s) on {', '.join(platform_label(p) for p in plats)}"
    sections = [verdict_sec, run_sec, corr_sec, drift_sec, find_sec, comp_sec, perf_sec, tune_sec, known_sec]
    summary = {"format": SUMMARY_FORMAT, "title": title, "warnings": warnings, "verdict": verdict_sum,
               "platforms": [platform_label(p) for p in plats], "runs": run_sum, "correctness": corr_sum,
               "drift": drift_sum, "findings": find_sum, "compiles": comp_sum, "performance": perf_sum,
               "autotune": tune_sum, "known_issues": known_sum}
    return title, warnings, sections, summary


def build(paths: list[str], out_dir: str | Path, history: list[str] | None = None,
          window: int = 30, keep_superseded: bool = False,
          merge_ids: bool = False) -> tuple[list[Path], list[RunFileError]]:
    """Build from every usable run file; returns the files written and the run files left out (with why). No
    file is written when none is usable, or when an output would replace an input. ``history``: earlier nights' run
    files (or directories of them), added as a history section (reports/history.py)."""
    out = Path(out_dir)
    names = ("report.md", "report.html", "summary.json")
    refuse_inputs([out / n for n in names], paths)
    if history:
        from reports import history as history_mod

        refuse_inputs([out / n for n in names], history_mod.run_files(history))
    runs, bad = load_some(paths)
    runs, bad_sets = merge_some(runs, merge_ids)  # the N shard files of a run are one run; a set a shard short is left out
    bad = bad + bad_sets
    if not runs:
        raise bad[0] if len(bad) == 1 else RunFileError(f"none of the {len(bad)} run files is usable: " +
                                                        "; ".join(str(e) for e in bad))
    superseded = kept = None
    if not keep_superseded:  # what newer code of a kernel module covered again: older code's results named, left out
        runs, superseded, kept = current(runs)
    plots = plots_available()
    title, warnings, sections, summary = assemble(runs, with_plots=plots is None, bad=bad, superseded=superseded,
                                                 kept=kept)
    if plots is not None:
        warnings.append(plots)
    if history:
        past = history_mod.history(history, window)
        sections.append(history_mod.section(past))
        summary["history"] = past.as_json()
        bad = bad + past.left_out
    texts = (markdown(title, warnings, sections), html_page(title, warnings, sections),
             json.dumps(json_safe(summary), indent=1, allow_nan=False) + "\n")
    for name, text in zip(names, texts, strict=True):
        write_atomic(out / name, text)
    return [out / n for n in names], bad
