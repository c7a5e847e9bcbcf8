"""`python -m reports build`: one portability report (report.md, report.html, summary.json) from run files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reports.correctness import correctness_section, drift_section, findings_section
from reports.inventory import autotune_section, compile_section, known_issues_section, runs_section
from reports.loading import Run, json_safe, load_runs, platform_label, platforms
from reports.perf import perf_section
from reports.render import Section, html_page, markdown

SUMMARY_FORMAT = "portability-report/1"


def _warnings(runs: list[Run]) -> list[str]:
    warnings = [w for r in runs for w in r.warnings]
    for p in platforms(runs):
        same = [r for r in runs if r.platform == p]
        versions = {(r.env["triton"], r.env["torch"], r.env["driver"]) for r in same}
        if len(versions) > 1:
            warnings.append(f"{platform_label(p)} has {len(same)} runs with different software "
                            f"(triton, torch, driver: {sorted(versions, key=str)}); their results are added up")
    return warnings


def assemble(runs: list[Run], with_plots: bool = True) -> tuple[str, list[str], list[Section], dict[str, Any]]:
    plats = platforms(runs)
    run_sec, run_sum = runs_section(runs)
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
    warnings = _warnings(runs)
    title = f"Triton portability report: {len(runs)} run(s) on {', '.join(platform_label(p) for p in plats)}"
    sections = [run_sec, corr_sec, drift_sec, find_sec, comp_sec, perf_sec, tune_sec, known_sec]
    summary = {"format": SUMMARY_FORMAT, "title": title, "warnings": warnings,
               "platforms": [platform_label(p) for p in plats], "runs": run_sum, "correctness": corr_sum,
               "drift": drift_sum, "findings": find_sum, "compiles": comp_sum, "performance": perf_sum,
               "autotune": tune_sum, "known_issues": known_sum}
    return title, warnings, sections, summary


def build(paths: list[str], out_dir: str | Path) -> list[Path]:
    """Validate every run file first, then write the three files; returns their paths."""
    runs = load_runs(paths)
    title, warnings, sections, summary = assemble(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"report.md": markdown(title, warnings, sections), "report.html": html_page(title, warnings, sections),
             "summary.json": json.dumps(json_safe(summary), indent=1, allow_nan=False) + "\n"}
    written = []
    for name, text in files.items():
        path = out / name
        tmp = out / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
