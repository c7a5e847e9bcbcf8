"""Performance portability: roofline efficiency per kernel x dtype x platform, the Pennycook PP metric, speed-up
over the torch baseline, and the measured ceilings they rest on."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from reports import timing
from reports.loading import Run, num, platform_label
from reports.outcomes import not_run, unsupported
from reports.render import Section, Table, fmt, pct, shape_text

Platform = tuple[str, str]
CEILING_DTYPES = ("fp16", "bf16", "fp32", "fp8")
METHOD = ("Efficiency = the roofline floor time at the ceilings over the kernel's median time, at the largest "
          "benchmark shape of each kernel x dtype that every platform ran (largest = most elements). 'measured' uses "
          "the copy bandwidth and torch matmul throughput measured in the same run, 'datasheet' the hardware profile's "
          "peaks. PP (Pennycook et al. 2016) is the harmonic mean of a kernel x dtype's efficiencies over the "
          "platforms that have benchmarks in this report; it is 0 when the kernel is unsupported on one of them (the "
          "platform lacks the dtype, so its tests were skipped), missing there or wrong there (a wrong benchmark "
          "output, or a failed or xfailed case), and n/a when an efficiency is "
          "unknown. Efficiencies above 1 (a kernel beating the measured ceiling) count as 1 in PP. Where a platform "
          "has several runs, the latest run's benchmark of a shape is used. A timing that is not a positive number "
          "is invalid: shown as such and left out of every figure.")


@dataclass
class Cell:
    """One kernel x dtype on one platform, at the chosen shape."""
    status: str  # "ok", "missing", "unsupported" (the platform lacks the dtype), "wrong" or "invalid" (the timing
    # is not a positive number)
    measured: float | None = None
    datasheet: float | None = None
    shape: dict[str, int] | None = None
    reason: str = ""
    speedup: float | None = None


def shape_key(shape: dict[str, Any]) -> str:
    return json.dumps(shape, sort_keys=True)


def shape_size(shape: dict[str, Any]) -> tuple[int, str]:
    return (math.prod(int(v) for v in shape.values()), shape_key(shape))


def pennycook(efficiencies: list[float | None]) -> float | None:
    """|H| / sum(1/e_i); 0 if the kernel does not run (correctly) somewhere; None if an efficiency is unknown."""
    if not efficiencies or any(e is not None and e <= 0 for e in efficiencies):
        return 0.0
    if any(e is None for e in efficiencies):
        return None
    return len(efficiencies) / sum(1.0 / min(e, 1.0) for e in efficiencies)  # type: ignore[operator]


def latest_benchmarks(runs: list[Run]) -> dict[Platform, dict[tuple[str, str, str], dict[str, Any]]]:
    """Per platform, one record per (kernel, dtype, shape); runs are in start order, so later runs win."""
    out: dict[Platform, dict[tuple[str, str, str], dict[str, Any]]] = {}
    for run in runs:
        for b in run.data["benchmarks"]:
            out.setdefault(run.platform, {})[(b["kernel"], b["dtype"], shape_key(b["shape"]))] = b
    return out


def _efficiency(x: Any) -> float | None:
    """NaN is as unknown as null; an efficiency that is not positive comes from an invalid timing."""
    e = num(x)
    return None if e is None or math.isnan(e) or e <= 0 else e


def speedup(b: dict[str, Any]) -> float | None:
    """The torch baseline's median over the kernel's, from valid timings only."""
    k, t = timing.median_ms(b), timing.median_ms(b.get("baseline"))
    return t / k if k and t else None


def _case_failures(runs: list[Run]) -> Counter:
    return Counter((c["kernel"], c["dtype"], r.platform) for r in runs for c in r.data["cases"]
                   if c["outcome"] in ("failed", "xfailed"))


def efficiency_cells(runs: list[Run]) -> tuple[list[Platform], dict[tuple[str, str], dict[Platform, Cell]]]:
    bench = latest_benchmarks(runs)
    plats = [p for p in dict.fromkeys(r.platform for r in runs) if p in bench]
    failures = _case_failures(runs)
    skipped = not_run(runs)
    table: dict[tuple[str, str], dict[Platform, Cell]] = {}
    for kernel, dtype in sorted({(k, d) for recs in bench.values() for k, d, _ in recs}):
        per = {p: {s: b for (k, d, s), b in bench[p].items() if (k, d) == (kernel, dtype)} for p in plats}
        present = [p for p in plats if per[p]]
        common = set.intersection(*(set(per[p]) for p in present))
        cells: dict[Platform, Cell] = {}
        for p in plats:
            if not per[p]:
                why = skipped.get((kernel, dtype, p), "")
                cells[p] = (Cell("unsupported", reason=f"unsupported on {platform_label(p)}: {why}") if unsupported(why)
                            else Cell("missing", reason=f"no benchmark on {platform_label(p)}"))
                continue
            choices = common or set(per[p])
            chosen = per[p][max(choices, key=lambda s: shape_size(json.loads(s)))]
            wrong = [b for b in per[p].values() if b.get("correct") is False]
            cell = Cell("ok", _efficiency(chosen.get("efficiency_measured")),
                        _efficiency(chosen.get("efficiency_datasheet")), chosen["shape"], speedup=speedup(chosen))
            invalid = timing.invalid_reason(chosen)
            if invalid:
                cell = Cell("invalid", shape=chosen["shape"], reason=f"{invalid} on {platform_label(p)} at "
                                                                     f"{shape_text(chosen['shape'])}")
            if wrong:
                cell.status, cell.reason = "wrong", f"wrong output on {platform_label(p)} at {shape_text(wrong[0]['shape'])}"
            elif failures[(kernel, dtype, p)]:
                cell.status = "wrong"
                cell.reason = f"{failures[(kernel, dtype, p)]} failed/xfailed cases on {platform_label(p)}"
            cells[p] = cell
        table[(kernel, dtype)] = cells
    return plats, table


def pp_of(cells: dict[Platform, Cell], which: str) -> float | None:
    """An invalid timing makes PP unknown, not 0: the kernel ran, its time is what is not known."""
    return pennycook([getattr(c, which) if c.status == "ok" else None if c.status == "invalid" else 0.0
                      for c in cells.values()])


def _cell_text(c: Cell) -> str:
    if c.status in ("missing", "unsupported"):
        return c.status
    if c.status == "invalid":
        return f"INVALID: {c.reason.split(' on ')[0]}"
    text = f"{pct(c.measured)} / {pct(c.datasheet)}"
    return f"WRONG ({text})" if c.status == "wrong" else text


def _ceiling_rows(runs: list[Run], plats: list[Platform]) -> list[list[Any]]:
    latest: dict[Platform, dict[str, Any]] = {}
    for r in runs:
        if isinstance(r.data.get("ceilings"), dict):
            latest[r.platform] = r.data["ceilings"]
    rows = []
    for p in plats:
        c = latest.get(p)
        if c is None:
            rows.append([platform_label(p), "no data", "-", "-", "-", "-", "-"])
            continue
        mm, sheet = c.get("matmul_tflops") or {}, c.get("datasheet") or {}
        peaks = sheet.get("tflops") or {}
        rows.append([platform_label(p), fmt(num(c.get("copy_gbps")), 4),
                     " / ".join(fmt(num(mm.get(d)), 4) for d in CEILING_DTYPES),
                     fmt(num(sheet.get("bandwidth_tbs")), 4),
                     " / ".join(fmt(num(peaks.get(d)), 4) for d in CEILING_DTYPES)])
    return rows


def _speed_rows(runs: list[Run]) -> tuple[list[list[Any]], list[list[Any]], dict[str, Any]]:
    bench = latest_benchmarks(runs)
    rows: list[list[Any]] = []
    slow: list[tuple[float, list[Any]]] = []
    total: Counter = Counter()
    for p, recs in bench.items():
        c = Counter()
        for (kernel, dtype, _), b in sorted(recs.items()):
            c["cases"] += 1
            if timing.invalid_reason(b):
                c["invalid"] += 1
                continue
            ratio = speedup(b)
            if ratio is None:
                continue
            c["with baseline"] += 1
            c["correct"] += b.get("correct") is True
            good = b.get("correct") is True and ratio >= 1.0
            c["good"] += good
            if not good:
                slow.append((ratio, [platform_label(p), kernel, dtype, shape_text(b["shape"]), fmt(timing.median_ms(b)),
                                     fmt(timing.median_ms(b.get("baseline"))), fmt(ratio), fmt(b.get("correct"))]))
        total.update(c)
        share = c["good"] / c["with baseline"] if c["with baseline"] else None
        rows.append([platform_label(p), c["cases"], c["with baseline"], c["correct"], c["good"], pct(share),
                     c["invalid"]])
    share = total["good"] / total["with baseline"] if total["with baseline"] else None
    if len(bench) > 1:
        rows.append(["all platforms", total["cases"], total["with baseline"], total["correct"], total["good"], pct(share),
                     total["invalid"]])
    slow.sort(key=lambda item: item[0])
    return rows, [row for _, row in slow], {"cases": total["cases"], "with_baseline": total["with baseline"],
                                            "correct_and_not_slower": total["good"], "share": share,
                                            "invalid_timings": total["invalid"]}


def perf_section(runs: list[Run]) -> tuple[Section, dict[str, Any], dict[str, Any]]:
    """The section, its summary.json part, and what the plots need."""
    plats, cells = efficiency_cells(runs)
    if not plats:
        return Section("Performance portability", ["No benchmarks in these runs (run `pytest -m perf` on a GPU "
                                                   "runner): no data in these runs."]), {"platforms": []}, {}
    labels = [platform_label(p) for p in plats]
    eff_rows, pp_rows, summary_pp = [], [], []
    for (kernel, dtype), per in cells.items():
        shapes = {shape_key(c.shape): c.shape for c in per.values() if c.shape is not None}
        shape = shape_text(next(iter(shapes.values()))) if len(shapes) == 1 else \
            "differs: " + "; ".join(f"{platform_label(p)} {shape_text(c.shape)}" for p, c in per.items() if c.shape)
        eff_rows.append([kernel, dtype, shape, *(_cell_text(per[p]) for p in plats)])
        pm, pd = pp_of(per, "measured"), pp_of(per, "datasheet")
        ok = [(c.measured, p) for p, c in per.items() if c.status == "ok" and c.measured is not None]
        broken = [p for p, c in per.items() if c.status != "ok"]
        lowest = platform_label(broken[0]) if broken else platform_label(min(ok)[1]) if ok and len(plats) > 1 else "-"
        why = "; ".join(c.reason for c in per.values() if c.status != "ok") or "-"
        pp_rows.append([kernel, dtype, fmt(pm), fmt(pd), lowest, why])
        summary_pp.append({"kernel": kernel, "dtype": dtype, "pp_measured": pm, "pp_datasheet": pd,
                           "efficiency": {platform_label(p): {"status": c.status, "measured": c.measured,
                                                              "datasheet": c.datasheet, "shape": c.shape}
                                          for p, c in per.items()}, "reasons": why})
    order = sorted(range(len(pp_rows)), key=lambda i: (math.inf if summary_pp[i]["pp_measured"] is None
                                                       else summary_pp[i]["pp_measured"], pp_rows[i][0], pp_rows[i][1]))
    pp_rows = [pp_rows[i] for i in order]
    speed_rows, slow, share = _speed_rows(runs)
    notes = [METHOD, f"Platforms with benchmarks: {', '.join(labels)}."]
    if share["share"] is not None:
        notes.append(f"{share['correct_and_not_slower']} of {share['with_baseline']} benchmarked (kernel, dtype, shape) "
                     f"cases with a torch baseline ({pct(share['share'])}) are correct and at least as fast as the "
                     f"baseline; {share['cases'] - share['with_baseline'] - share['invalid_timings']} cases have no "
                     f"baseline" + (f", {share['invalid_timings']} an invalid timing." if share['invalid_timings']
                                    else "."))
    dtypes = " / ".join(CEILING_DTYPES)
    tables = [Table(["platform", "copy GB/s (measured)", f"matmul TFLOP/s {dtypes} (measured)",
                     "datasheet TB/s", f"datasheet TFLOP/s {dtypes}"], _ceiling_rows(runs, plats), "Ceilings"),
              Table(["kernel", "dtype", "shape", *(f"{lab}: measured / datasheet" for lab in labels)], eff_rows,
                    "Efficiency at the largest benchmark shape"),
              Table(["kernel", "dtype", "PP (measured ceilings)", "PP (datasheet)", "lowest platform", "why 0 / notes"],
                    pp_rows, "Performance portability, worst first"),
              Table(["platform", "cases", "with baseline", "correct", "correct and >= baseline", "share",
                     "invalid timings"], speed_rows,
                    "Correct and at least as fast as the torch baseline"),
              Table(["platform", "kernel", "dtype", "shape", "median ms", "baseline ms", "speedup", "correct"], slow[:100],
                    "Slower than the baseline, or wrong (slowest first)", "none")]
    plot_data = {"platforms": labels, "kernels": [f"{k} {d}" for k, d in cells],
                 "measured": [[per[p].measured if per[p].status == "ok" else 0.0 for p in plats] for per in cells.values()],
                 "datasheet": [[per[p].datasheet if per[p].status == "ok" else 0.0 for p in plats] for per in cells.values()]}
    summary = {"method": METHOD, "platforms": labels, "pp": [summary_pp[i] for i in order], "speedup_share": share}
    return Section("Performance portability", notes, tables), summary, plot_data
