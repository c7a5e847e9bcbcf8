"""The portability summary printed at the end of a run: kernel x dtype outcomes and worst error ratios,
property findings, the compile matrix, autotune lookups, incidents and the failing cases'
reproduction lines."""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

from reports import nodeids
from reports.failure_kinds import FailureKind
from suite.checks import returned
from suite.checks.launches import untuned_lines
from suite.plugin import fit, glance


def write_summary(tr, data: dict, path: Path, width: int = fit.MIN_WIDTH) -> None:
    """The portability summary at the end of a run, from the run file's data; its tables fitted to ``width`` (the
    run's verdict follows at the very end, with the result file's path, or the line that says the file could not be
    written: suite/plugin/glance.py)."""
    tabulate = fit.fit_table

    rows = case_summary_rows(data["cases"], data["tests"])
    tr.section("portability summary")
    env = data["environment"]
    tr.write_line(f"{env['backend']} on {env['device_name']} ({env['arch']}), torch {env['torch']}, "
                  f"triton {env['triton']}, hypothesis profile {env['hypothesis_profile']}")
    if rows:
        tr.write_line(tabulate(rows, ["kernel", "dtype", "passed", "failed", "xfailed", "worst error/bound"], width))
        for line in glance.not_run_lines(data["tests"], "test_matches_reference"):
            tr.write_line(line)
    if data["findings"]:
        tr.write_line("")
        tr.write_line(tabulate(findings_rows(data["findings"], data["tests"]), ["kernel", "dtype", "property findings"],
                               width))
    if data["compiles"]:
        from suite.tools import compile_matrix

        headers, rows = compile_matrix.compile_summary_rows(data["compiles"])
        tr.write_line("")
        headers, rows = fit.spills_with_registers(headers, rows)
        tr.write_line(tabulate(rows, headers, width))
        for line in textwrap.wrap(compile_matrix.selection_line(), width, subsequent_indent="  "):
            tr.write_line(line)
        if any("(spills)" in str(r[headers.index("max regs")]) for r in rows):
            tr.write_line("(spills): a config needs more registers than the target has, and keeps some in local memory "
                          "there: slower, not wrong (the run file's compiles say which config)")
    if data.get("coverage"):
        tr.write_line("")
        tr.write_line(tabulate(reach_rows(data["coverage"]), ["kernel", "dtypes", "configs run", "paths taken",
                                                              "found by search", "not taken", "configs not fitting"],
                               width))
    auto = data.get("autotune")
    if auto:
        tr.write_line("")
        tr.write_line(f"autotune: cache {auto['cache']} ({auto['cache_status']}, {auto['cache_entries']} entries); "
                      f"lookups: {auto['hits']} hits, {auto['nearest']} nearest-bucket, {auto['misses']} misses "
                      f"(default config), {auto['stale']} stale (default config); tuning benchmarks run: "
                      f"{auto['tuning_benchmarks']}")
        if auto.get("fallback_cache"):
            tr.write_line(f"autotune: {auto['fallback']} of the hits and nearest hits from the arch's cache "
                          f"{auto['fallback_cache']} ({auto['fallback_status']}, {auto['fallback_entries']} entries), "
                          f"for kernels this device's own cache holds no valid entry for")
        if auto["cache_error"]:
            tr.write_line(f"autotune: {auto['cache_error']}")
        for kernel, why in sorted(auto["stale_kernels"].items()):
            tr.write_line(f"autotune: stale entries for {kernel} ({why}): rerun with --retune={kernel}")
    mem = data.get("memcheck")
    if mem and mem["mode"] != "off":
        launches = sum(k["launches"] for k in mem["kernels"].values())
        ops = sum(k["memory_ops"] for k in mem["kernels"].values())
        counted = f": {launches} launches, {ops} loads/stores/atomics checked" if mem["mode"] == "interpreter" else ""
        tr.write_line("")
        tr.write_line(f"memory check ({mem['mode']}): {len(mem['kernels'])} kernel(s){counted}; unchecked: "
                      + (", ".join(f"{k} ({why})" for k, why in mem["unchecked"].items()) or "none"))
        if "reports" in mem:
            tr.write_line(f"memory check: {len(mem['reports'])} report(s) in the checker's logs ({mem['log_dir']})"
                          + "".join(f"\n  {r[:300]}" for r in mem["reports"][:5]))
    for line in share_lines(data):
        tr.write_line(line)
    if left := data.get("unfinished"):
        tr.write_line(f"stopped while running {len(left)} test(s): "
                      + ", ".join(f"{t['nodeid']} (for {t['running_s']:.0f} s on {t['worker']})" for t in left[:8])
                      + (f", and {len(left) - 8} more" if len(left) > 8 else ""))
        for line in stopped_lines(left):
            tr.write_line(line)
    for inc in data.get("incidents", []):
        tr.write_line(f"INCIDENT {inc['kind']} in {inc['nodeid']} (worker {inc['worker']}): "
                      f"{inc['message'].splitlines()[0][:300]}")
    broken = {(c["kernel"], c["dtype"]): c for c in data["cases"] if c.get("failure") == FailureKind.SPEC}
    for (kernel, dtype), c in sorted(broken.items()):
        tr.write_line(f"BROKEN SPEC {kernel}[{dtype}]: {(c['message'] or '').splitlines()[0][:300]}")
    for line in (returned.summary_lines(data["cases"]) + untuned_lines(data.get("coverage") or [])
                 + intermittent_lines(data)):
        tr.write_line(line)
    failing = [c for c in data["cases"] if c["outcome"] in ("failed", "xfailed")]
    for c in failing[:20]:
        tr.write_line(f"{c['outcome'].upper()} case {c['kernel']}[{c['dtype']}]{rate_note(c)}: reproduce with: "
                      f"{c['repro']}")
    if len(failing) > 20:
        tr.write_line(f"... and {len(failing) - 20} more failing cases in the result file")
    properties = failing_properties(data)
    for outcome, f in properties[:20]:
        tr.write_line(f"{outcome.upper()} property {f['kernel']}[{f['dtype']}] {f['property']}{rate_note(f)}: "
                      f"reproduce with: {f['repro']}")
    if len(properties) > 20:
        tr.write_line(f"... and {len(properties) - 20} more failing properties in the result file")
    if line := timing_lines(data):
        tr.write_line(line)



def share_lines(data: dict) -> list[str]:
    """The GPU-sharing lines: cases that ran again alone after running out of memory (and how long they waited for
    the GPU and ran alone, where workers shared one), those not run, too large or with memory held by others."""
    share = data.get("gpu_share")
    too_large = share.get("too_large", 0) if share else 0
    if not share or not (share["oom_retried"] or too_large):
        return []
    held = share.get("oom_held", 0)
    waits = ""
    if share.get("alone_s", 0) + share.get("alone_wait_s", 0) >= 0.05:  # workers shared a GPU (not the interpreter)
        gate = (data.get("timing") or {}).get("gpu_wait_s")
        waits = (f" (waiting {share.get('alone_wait_s', 0):.1f} s for the cases running on their GPU to end and "
                 f"for its memory, then "
                 f"{share.get('alone_s', 0):.1f} s alone" + (f"; all workers waited {gate:.1f} s at their GPU's gate"
                                                             if gate else "") + ")")
    if (data.get("environment") or {}).get("backend") == "interpret" and not (too_large or held):  # no GPU
        return [f"out of memory: {share['oom_retried']} case(s) ran again after an out-of-memory error, "
                f"{share['oom_retried_passed']} then passed; out of memory again, a case fails as the kernel's own "
                f"(no GPU memory is shared here)"]
    lines = [f"GPU sharing ({share['workers']} workers): {share['oom_retried']} out-of-memory case(s) ran again "
             f"alone{waits}, {share['oom_retried_passed']} then passed; {too_large} not run, too large for this GPU"
             + (f"; {held} not run (out of memory although they fit the GPU: other processes held its memory; not the "
                f"kernels')" if held else "")]
    lines += [f"  too large: {c['case'][:160]} (footprint at least {c['footprint_gib']} GiB)"
              for c in share.get("too_large_cases", [])[:5]]
    lines += [f"  memory held: {c['case'][:160]} (footprint {c['footprint_gib']} GiB)"
              + (f"; rerun: {c['repro']}" if c.get("repro") else "")
              for c in share.get("held_cases") or [] if isinstance(c, dict)][:5]
    alone = sorted((c for c in share.get("alone_cases") or [] if isinstance(c, dict)),
                   key=lambda c: -(c.get("alone_s") or 0))
    lines += [f"  alone {c.get('alone_s', 0):.1f} s (after waiting {c.get('waited_s', 0):.1f} s): "
              f"{c.get('kernel')}[{c.get('dtype')}] {str(c.get('case'))[:140]}" for c in alone[:3]]
    return lines


def stopped_lines(left: list[dict]) -> list[str]:
    """Where the unfinished tests stood on their GPUs' locks (suite/workers/gpu_share.py), where any waited there:
    a worker per line, GPU by GPU; a worker that waited for nothing was in its case (holding its GPU's lock, or
    working on the host), which the waiting ones wait for."""
    if not any(t.get("gpu_state") for t in left):
        return []
    lines = ["where the unfinished tests stood on their GPUs at the stop:"]
    for t in sorted(left, key=lambda t: (str(t.get("gpu", "")), t["worker"]))[:32]:
        case = f"case {t['case']}, for {t.get('case_running_s', 0):.0f} s" if t.get("case") else "no case"
        state = (f"{t['gpu_state']}, for {t.get('gpu_state_s', 0):.0f} s" if t.get("gpu_state")
                 else "waiting for nothing on its GPU")
        lines.append(f"  {t['worker']}" + (f" (GPU {t['gpu']})" if t.get("gpu") else "") + f": {state}; {case}")
    return lines

def failing_properties(data: dict) -> list[tuple[str, dict]]:
    """(its test's outcome, finding) for each property that failed the run or its known issue's test: claimed and
    wrong, or stopped by an error while checking it, with a reproduction line."""
    outcomes = {}
    for t in data.get("tests") or []:
        test = nodeids.parse(t["nodeid"])
        if test.function == "test_properties" and t["outcome"] in ("failed", "xfailed"):
            outcomes[(test.kernel, test.variant)] = t["outcome"]
    return [(outcomes[(f["kernel"], f["dtype"])], f) for f in data.get("findings") or []
            if (f["kernel"], f["dtype"]) in outcomes and f.get("repro")
            and (f.get("stopped") or (f.get("claimed") and not f.get("holds")))]


def rate_note(record: dict) -> str:
    """' (intermittent: wrong in K of N runs)' for a case or finding that was wrong in some runs only, else ''."""
    counts = record.get("intermittent")
    return f" (intermittent: wrong in {counts['wrong']} of {counts['runs']} runs)" if counts else ""


def intermittent_lines(data: dict) -> list[str]:
    """A line per intermittent case (kernel, dtype, rate, config) and per intermittent property finding."""
    lines = [f"INTERMITTENT {c['kernel']}[{c['dtype']}]: wrong in {c['intermittent']['wrong']} of "
             f"{c['intermittent']['runs']} runs of case {json.dumps(c['shape'], sort_keys=True)} {c['layout']} "
             f"{c['values']} seed={c['seed']} under config {json.dumps(c.get('config') or {}, sort_keys=True)}"
             for c in data["cases"] if c.get("failure") == FailureKind.INTERMITTENT and c.get("intermittent")]
    lines += [f"INTERMITTENT {f['kernel']}[{f['dtype']}]: property {f['property']!r} wrong in "
              f"{f['intermittent']['wrong']} of {f['intermittent']['runs']} runs; reproduce with: {f['repro']}"
              for f in data["findings"] if f.get("intermittent")]
    return lines


def write_error_line(run_file: Any) -> str | None:
    """The summary's last line where the run file could not be written at the end: what it holds instead."""
    if run_file.write_error is None:
        return None
    if not run_file.started:
        return f"result file NOT written: {run_file.write_error}"
    return (f"result file NOT up to date: {run_file.write_error}; it holds {run_file.tests_written} of the "
            f"{len(run_file.data['tests'])} tests that ran, as written before")




def case_summary_rows(cases: list[dict], tests: list[dict]) -> list[list]:
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
    known = glance.known_issues_of(tests)
    for (kernel, dtype), row in sorted(table.items()):
        worst = "-" if row["worst"] is None else f"{row['worst']:.3g}"
        if row["xfailed"] and ("test_matches_reference", kernel, dtype) in known:
            worst += " (known issue)"  # named in the verdict
        rows.append([kernel, dtype, row["passed"], row["failed"], row["xfailed"], worst])
    for t in tests:
        test = nodeids.parse(t["nodeid"])
        if t["outcome"] == "skipped" and test.function == "test_matches_reference" and test.param is not None:
            kernel, dtype = test.kernel or "", test.variant or ""
            if (kernel, dtype) not in table and not any(r[:2] == [kernel, dtype] for r in rows):  # parts: one row
                rows.append([kernel, dtype, "-", "-", "-", "not run"])  # why: the lines below the table
    return sorted(rows, key=lambda r: (r[0], r[1]))


def findings_rows(findings: list[dict], tests: list[dict] = ()) -> list[list]:
    """Kernel x dtype: each property as 'name' (holds), 'name: NO' (broken claim), 'name: no' (finding),
    'name: stopped' (a case broke while checking it: an out-of-bounds access, a construct the interpreter cannot
    run) or 'name: unchecked' (the test ended before any case was checked); a property whose test is a known issue's
    expected failure names it. A lint (the compile matrix's, per target) appears once, with the targets it warns
    for."""
    table: dict[tuple[str, str], list[str]] = defaultdict(list)
    known = glance.known_issues_of(tests)
    lints: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for f in findings:
        if f.get("kind") == "lint":
            targets = lints[(f["kernel"], f["dtype"], f["property"])]
            if not targets:
                table[(f["kernel"], f["dtype"])].append(f["property"])  # its place; the targets are added below
            targets.append(f.get("target") or f.get("arch") or "?")
            continue
        if f.get("stopped"):
            text = f"{f['property']}: stopped"
        elif not f.get("cases_checked"):
            text = f"{f['property']}: unchecked"
        elif f["holds"]:
            text = f["property"]
        else:
            text = f"{f['property']}: {'NO' if f['claimed'] else 'no'}"
            if issue := known.get(("test_properties", f["kernel"], f["dtype"])):
                text += f" (known issue {issue})"
        table[(f["kernel"], f["dtype"])].append(text)
    for (kernel, dtype, prop), targets in lints.items():
        texts = table[(kernel, dtype)]
        texts[texts.index(prop)] = f"{prop} on {' '.join(sorted(set(targets)))}"
    return [[k, d, ", ".join(v)] for (k, d), v in sorted(table.items())]


def stopped_label(stopped_by: str) -> str:
    return "known issue" if stopped_by.startswith("known issue") else "failed"


def reach_rows(coverage: list[dict]) -> list[list]:
    """Per kernel (its dtypes merged): distinct configs run, declared paths taken in every dtype, the paths that
    needed a searched case, those no case took, and sampled configs the device could not launch. A dtype whose test
    stopped at its first failing case (a failure, or a known issue's) is named but not counted: its cases never got
    to the paths, so no path counts as not taken there."""
    by_kernel: dict[str, list[dict]] = defaultdict(list)
    for c in coverage:
        by_kernel[c["kernel"]].append(c)
    rows = []
    for kernel, recs in sorted(by_kernel.items()):
        counted = [r for r in recs if not r.get("stopped_by")]
        configs = set().union(*(r["configs"] for r in recs))
        declared = sorted(set().union(*(r["paths"] for r in counted)))
        taken = [p for p in declared if all(r["paths"].get(p, 0) > 0 for r in counted)]
        searched = sorted(set().union(*(r.get("covered_by_search", []) for r in counted)))
        missing = sorted(set().union(*(r["unexercised"] for r in counted)))
        unfit = sum(sum(r.get("configs_not_fitting", {}).values()) for r in recs)
        dtypes = [r["dtype"] + (f" (stopped: {stopped_label(r['stopped_by'])})" if r.get("stopped_by") else "")
                  for r in recs]
        rows.append([kernel, ",".join(dtypes), len(configs),
                     f"{len(taken)}/{len(declared)}" if declared else "-", ", ".join(searched) or "-",
                     ", ".join(missing) or "-", unfit or "-"])
    return rows


def property_seconds(data: dict, nodeid: str) -> str:
    """A properties test's time per property (its findings' ``seconds``), longest first: 'shift_invariant 20.1 s,
    ...'; '' for another test or a run file without them."""
    test = nodeids.parse(nodeid)
    if test.function != "test_properties" or test.param is None:
        return ""
    kd = test.param
    own = sorted(((f.get("seconds"), f["property"]) for f in data.get("findings") or []
                  if isinstance(f.get("seconds"), (int, float)) and f"{f['kernel']}-{f['dtype']}" == kd), reverse=True)
    return ", ".join(f"{name} {s:.1f} s" for s, name in own)


def timing_lines(data: dict, slowest: int = 3) -> str:
    """Where the tests' time went, and the slowest tests with their own breakdown (a run is as long as its
    longest test once the workers are many)."""
    from suite.workers import timing

    total = data.get("timing") or timing.summed(data["tests"])  # stored at session finish
    line = timing.breakdown_line(total)
    if not line:
        return ""
    tests = sorted(data["tests"], key=lambda t: -t["duration_s"])[:slowest]
    for t in tests:
        parts = [f"{k[:-2].replace('_', ' ')} {v:.1f}" for k, v in (t.get("timing") or {}).items()
                 if k.endswith("_s") and v >= 0.05]
        line += f"\n  slow: {t['nodeid']} {t['duration_s']:.1f} s" + (f" ({', '.join(parts)})" if parts else "")
        if own := property_seconds(data, t["nodeid"]):  # a properties test: which property took the time
            line += f"; by property: {own}"
    if when := timing.timeline_line(total.get("workers")):
        line += "\n" + when
    return line
