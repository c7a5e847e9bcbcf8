"""`python -m reports compare BASE CAND`: correctness regressions and statistically real speed changes between
two runs of the same test set on the same hardware (e.g. before and after a driver update)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import mannwhitneyu

from reports.correctness import one_line
from reports.loading import Run, num
from reports.perf import shape_key
from reports.render import Table, fmt, shape_text

HARDWARE_FIELDS = ("device_name", "arch", "sm_count")
ENV_FIELDS = ("backend", "device_name", "arch", "sm_count", "driver", "runtime", "torch", "triton", "hypothesis",
              "python", "platform", "hostname", "profile", "hypothesis_profile", "hypothesis_seed")
BAD = ("failed", "xfailed")


class CompareRefused(Exception):
    """The two runs should not be compared (different hardware or test set) unless the user says so."""


@dataclass
class Comparison:
    warnings: list[str] = field(default_factory=list)
    correctness: list[list[Any]] = field(default_factory=list)
    fixed: list[list[Any]] = field(default_factory=list)
    skipped: list[list[Any]] = field(default_factory=list)
    regressions: list[list[Any]] = field(default_factory=list)
    improvements: list[list[Any]] = field(default_factory=list)
    unchanged: Counter = field(default_factory=Counter)
    unmatched: list[list[Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.correctness or self.regressions)


def check_comparable(base: Run, cand: Run, allow_hardware: bool, allow_tests: bool) -> list[str]:
    """Refuse different hardware or test sets unless allowed; return warnings for what was allowed."""
    warnings = []
    hw = [f"{k}: {base.env[k]!r} in {base.path} vs {cand.env[k]!r} in {cand.path}"
          for k in HARDWARE_FIELDS if base.env[k] != cand.env[k]]
    if hw and not allow_hardware:
        raise CompareRefused("refusing to compare runs on different hardware (" + "; ".join(hw) +
                             "); pass --allow-different-hardware to compare anyway")
    if hw:
        warnings.append("different hardware, compared on request: " + "; ".join(hw))
    problems = []
    for k in ("hypothesis_profile", "hypothesis_seed"):
        if base.env[k] != cand.env[k]:
            problems.append(f"{k}: {base.env[k]!r} in {base.path} vs {cand.env[k]!r} in {cand.path}")
    b_ids, c_ids = {t["nodeid"] for t in base.data["tests"]}, {t["nodeid"] for t in cand.data["tests"]}
    for ids, other, path in ((b_ids, c_ids, base.path), (c_ids, b_ids, cand.path)):
        only = sorted(ids - other)
        if only:
            problems.append(f"{len(only)} test(s) only in {path}, e.g. {only[0]}")
    if problems and not allow_tests:
        raise CompareRefused("refusing to compare runs of different test sets (" + "; ".join(problems) +
                             "); pass --allow-different-tests to compare anyway")
    if problems:
        warnings.append("different test sets, compared on request: " + "; ".join(problems))
    if base.env["hypothesis_seed"] is None:
        warnings.append(f"hypothesis profile {base.env['hypothesis_profile']!r} draws random examples: cases "
                        "match only by chance; use the validation profile for driver validation")
    warnings += [w for r in (base, cand) for w in r.warnings]
    return warnings


def _case_key(c: dict[str, Any]) -> tuple:
    return (c["kernel"], c["dtype"], shape_key(c["shape"]), c["layout"], c["values"], c["seed"])


def _cases(run: Run) -> dict[tuple, dict[str, Any]]:
    """One entry per case key; a key is bad if any of its records failed or xfailed."""
    out: dict[tuple, dict[str, Any]] = {}
    for c in run.data["cases"]:
        key = _case_key(c)
        if key not in out or c["outcome"] in BAD:
            out[key] = c
    return out


def _correctness(base: Run, cand: Run, cmp: Comparison) -> None:
    b_tests = {t["nodeid"]: t for t in base.data["tests"]}
    for t in cand.data["tests"]:
        b = b_tests.get(t["nodeid"])
        if b is None:
            continue
        row = ["test", t["nodeid"], b["outcome"], t["outcome"], one_line(t["message"])]
        if b["outcome"] == "passed" and t["outcome"] in BAD:
            cmp.correctness.append(row)
        elif b["outcome"] in BAD and t["outcome"] in ("passed", "xpassed-strict"):
            cmp.fixed.append(row)
        elif b["outcome"] == "passed" and t["outcome"] == "skipped":
            cmp.skipped.append(row)
    b_cases = _cases(base)
    for key, c in _cases(cand).items():
        b = b_cases.get(key)
        if b is None:
            continue
        what = f"{c['kernel']}[{c['dtype']}] {shape_text(c['shape'])} {c['layout']} {c['values']} seed={c['seed']}"
        if b["outcome"] == "passed" and c["outcome"] in BAD:
            cmp.correctness.append(["case", what, b["outcome"], c["outcome"],
                                    f"error/bound {fmt(num(c['error_ratio']))}; reproduce with: {c['repro']}"])
        elif b["outcome"] in BAD and c["outcome"] == "passed":
            cmp.fixed.append(["case", what, b["outcome"], c["outcome"], ""])


def _samples(b: dict[str, Any]) -> list[float]:
    return [v for v in (num(x) for x in b.get("samples_ms") or []) if v is not None and math.isfinite(v)]


def _median(b: dict[str, Any] | None) -> float | None:
    if not b:
        return None
    m = num(b.get("median_ms"))
    if m is None or not math.isfinite(m):
        s = _samples(b)
        m = statistics.median(s) if s else None
    return m


def _speed(base: Run, cand: Run, cmp: Comparison, p_value: float, threshold: float) -> None:
    b_bench = {(b["kernel"], b["dtype"], shape_key(b["shape"])): b for b in base.data["benchmarks"]}
    c_bench = {(b["kernel"], b["dtype"], shape_key(b["shape"])): b for b in cand.data["benchmarks"]}
    for key in sorted(set(b_bench) ^ set(c_bench)):
        where = "base" if key in b_bench else "candidate"
        rec = b_bench.get(key) or c_bench[key]
        cmp.unmatched.append([rec["kernel"], rec["dtype"], shape_text(rec["shape"]), f"only in {where}"])
    for key in sorted(set(b_bench) & set(c_bench)):
        b, c = b_bench[key], c_bench[key]
        what = [b["kernel"], b["dtype"], shape_text(b["shape"])]
        if b.get("correct") is True and c.get("correct") is False:
            cmp.correctness.append(["benchmark", " ".join(what), "correct", "WRONG output", "benchmarked output"])
        bs, cs = _samples(b), _samples(c)
        bm, cm = _median(b), _median(c)
        if not bs or not cs or not bm or cm is None:
            cmp.unmatched.append([*what, "no samples to test"])
            continue
        p = float(mannwhitneyu(bs, cs, alternative="two-sided").pvalue)
        p = 1.0 if math.isnan(p) else p
        change = cm / bm - 1.0
        bb, cb = _median(b.get("baseline")), _median(c.get("baseline"))
        torch_change = f"{100 * (cb / bb - 1):+.1f}%" if bb and cb else "-"
        config = "changed" if b.get("config") != c.get("config") else "same"
        row = [*what, fmt(bm, 4), fmt(cm, 4), f"{100 * change:+.1f}%", f"{p:.2g}", f"{len(bs)}/{len(cs)}",
               torch_change, config]
        if p < p_value and abs(change) > threshold:
            (cmp.regressions if change > 0 else cmp.improvements).append(row)
        elif p < p_value:
            cmp.unchanged["statistically real but within the threshold"] += 1
        elif abs(change) > threshold:
            cmp.unchanged["beyond the threshold but not statistically real"] += 1
        else:
            cmp.unchanged["neither"] += 1
    cmp.regressions.sort(key=lambda r: -float(r[5].rstrip("%")))
    cmp.improvements.sort(key=lambda r: float(r[5].rstrip("%")))


def compare(base: Run, cand: Run, p_value: float = 0.01, threshold: float = 0.05, allow_hardware: bool = False,
            allow_tests: bool = False) -> Comparison:
    cmp = Comparison(warnings=check_comparable(base, cand, allow_hardware, allow_tests))
    _correctness(base, cand, cmp)
    _speed(base, cand, cmp, p_value, threshold)
    return cmp


def compare_markdown(base: Run, cand: Run, cmp: Comparison, p_value: float, threshold: float) -> str:
    from reports.render import Section, markdown

    env_rows = [[k, fmt(base.env.get(k)), fmt(cand.env.get(k))] for k in ENV_FIELDS if base.env.get(k) != cand.env.get(k)]
    verdict = (f"REGRESSION: {len(cmp.correctness)} correctness regression(s), {len(cmp.regressions)} speed "
               "regression(s)" if cmp.failed else "No regressions")
    speed_headers = ["kernel", "dtype", "shape", "base median ms", "candidate median ms", "change", "p",
                     "samples base/cand", "torch baseline change", "config"]
    unchanged = sum(cmp.unchanged.values())
    if not base.data["benchmarks"] and not cand.data["benchmarks"]:
        cmp.warnings.append("neither run has benchmarks (run `pytest -m perf` on the GPU): speed was not compared")
    outcome_headers = ["kind", "what", "base", "candidate", "detail"]
    sections = [
        Section("Verdict", [f"**{verdict}**; {len(cmp.improvements)} speed improvement(s), {unchanged} benchmark(s) "
                            f"unchanged, {len(cmp.fixed)} fixed.",
                            f"A speed change counts when the Mann-Whitney U test (two-sided, on the do_bench samples) "
                            f"gives p < {p_value:g} and the medians differ by more than {100 * threshold:g}%."],
                [Table(["", "base", "candidate"], [["run", base.run_id, cand.run_id], ["file", str(base.path),
                                                   str(cand.path)]]),
                 Table(["environment field", "base", "candidate"], env_rows, "Environment differences", "none")]),
        Section("Correctness regressions", [], [Table(outcome_headers, cmp.correctness, empty="none")]),
        Section("Speed regressions", [], [Table(speed_headers, cmp.regressions, empty="none")]),
        Section("Speed improvements", [], [Table(speed_headers, cmp.improvements, empty="none")]),
        Section("Unchanged and not compared", [f"{unchanged} benchmark(s) unchanged: " +
                                               (", ".join(f"{n} {why}" for why, n in sorted(cmp.unchanged.items()))
                                                or "none")],
                [Table(outcome_headers, cmp.fixed, "Fixed", "none"),
                 Table(outcome_headers, cmp.skipped, "Passed before, skipped now", "none"),
                 Table(["kernel", "dtype", "shape", "why"], cmp.unmatched, "Benchmarks not compared", "none")]),
    ]
    return markdown(f"Run comparison: {base.run_id} -> {cand.run_id}", cmp.warnings, sections)
