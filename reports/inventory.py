"""The runs and their fingerprints, the compile matrix, autotune coverage and known issues."""

from __future__ import annotations

import fnmatch
import json
import re
from collections import Counter, defaultdict
from typing import Any

from reports.correctness import MAX_ROWS, first_line, one_line
from reports.loading import Run, num
from reports.outcomes import REFERENCE_TEST, kernels_of, known_issue_of
from reports.render import Section, Table, fmt


def runs_section(runs: list[Run]) -> tuple[Section, list[dict[str, Any]]]:
    rows, details, summary = [], [], []
    for r in runs:
        e = r.env
        status = "INCOMPLETE" if r.incomplete else r.data["status"]
        rows.append([r.run_id, r.label, status, r.data["started"], e["driver"] or "-", e["torch"], e["triton"],
                     f"{e['hypothesis_profile']} (seed {fmt(e['hypothesis_seed'])})"])
        files = ", ".join((r.data.get("shard") or {}).get("merged_from") or [r.path.name])  # a sharded run's files
        details.append([r.run_id, files, e["backend"], e["device_name"], e["arch"], e["sm_count"],
                        e["driver"] or "-", e["runtime"] or "-", e["torch"], e["triton"], e["profile"] or "-",
                        e.get("python") or "-", e.get("hostname") or "-", r.data["finished"] or "-"])
        summary.append({"run_id": r.run_id, "file": files, "platform": r.label, "status": r.data["status"],
                        "started": r.data["started"], "finished": r.data["finished"],
                        **{k: e.get(k) for k in ("backend", "device_name", "arch", "sm_count", "driver", "runtime",
                                                 "torch", "triton", "profile", "hypothesis_profile", "hypothesis_seed")}})
    notes = ["A platform is a device and arch: two runs on the same device and arch add up; an H100 and an H200 "
             "(both sm_90) are different platforms."]
    tables = [Table(["run", "platform", "status", "started", "driver", "torch", "triton", "hypothesis profile"], rows),
              Table(["run", "file", "backend", "device", "arch", "SMs/CUs", "driver", "runtime", "torch", "triton",
                     "hardware profile", "python", "host", "finished"], details, "Fingerprints", folded=True)]
    return Section("Runs", notes, tables), summary


def _target_order(target: str) -> tuple[int, int, str]:
    m = re.fullmatch(r"sm_(\d+)[a-z]?", target)
    return (0, int(m.group(1)), target) if m else (1, 0, target)


def _config_text(config: Any) -> str:
    if isinstance(config, dict):
        return ",".join(f"{k}={v}" for k, v in config.items()) or "default"
    return "-" if config is None else str(config)


def _compile_cell(records: list[dict[str, Any]]) -> str:
    n = len(records)
    ok = [r for r in records if r["status"] == "ok"]
    failed = [r for r in records if r["status"] == "failed"]
    parts = []
    if ok:
        parts.append("ok" if len(ok) == n else f"ok {len(ok)}/{n}")
        regs = [v for v in (num(r.get("registers")) for r in ok) if v is not None]
        if regs:
            parts.append(f"{max(regs):g} regs" if len(ok) == 1 else f"<= {max(regs):g} regs")
        if any(r.get("spills") or (num(r.get("spill_count")) or 0) > 0 for r in ok):
            parts.append("spills")
        occ = [v for v in (num(r.get("occupancy")) for r in ok) if v is not None]
        if occ:
            parts.append(f"occ {min(occ):.2f}" if len(ok) == 1 else f"occ >= {min(occ):.2f}")
    if failed:
        classes = ", ".join(sorted({str(r.get("failure_class") or "other") for r in failed}))
        parts.append(f"failed {len(failed)}/{n}: {classes}")
    skipped = n - len(ok) - len(failed)
    if skipped:
        parts.append("skipped" if skipped == n else f"skipped {skipped}/{n}")
    return ", ".join(parts)


def compile_section(runs: list[Run]) -> tuple[Section, dict[str, Any]]:
    seen: dict[tuple, dict[str, Any]] = {}
    for run in runs:
        for r in run.data["compiles"]:
            key = (r["kernel"], r["dtype"], r["target"], json.dumps(r.get("config"), sort_keys=True, default=str),
                   str(r.get("triton")))
            seen.setdefault(key, r)
    records = list(seen.values())
    notes = ["Every kernel x dtype x config cross-compiled for each target, GPU present or not. Records that "
             "several runs share (same config and Triton version) count once."]
    if not records:
        return Section("Compile matrix", notes, [Table(["kernel", "dtype"], [])]), {"records": 0}
    targets = sorted({r["target"] for r in records}, key=_target_order)
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["kernel"], r["dtype"], r["target"])].append(r)
    rows = [[k, d, *(_compile_cell(groups[(k, d, t)]) if (k, d, t) in groups else "-" for t in targets)]
            for k, d in sorted({(k, d) for k, d, _ in groups})]
    spilled = [r for r in records if r["status"] != "ok" or r.get("spills") or (num(r.get("spill_count")) or 0) > 0]
    details = sorted(spilled, key=lambda r: (r["status"], r["kernel"], r["dtype"], _target_order(r["target"])))
    detail_rows = [[r["kernel"], r["dtype"], r["target"], _config_text(r.get("config")), r["status"],
                    r.get("failure_class") or "-", fmt(num(r.get("registers"))), fmt(r.get("spills")),
                    fmt(num(r.get("occupancy"))), fmt(num(r.get("shared_bytes"))), str(r.get("triton") or "-"),
                    first_line(r.get("error"), 120) or "-"] for r in details]
    if len(detail_rows) > MAX_ROWS:
        notes.append(f"Failures, skips and spills: the first {MAX_ROWS} of {len(detail_rows)} records.")
    status = Counter(r["status"] for r in records)
    classes = Counter(str(r.get("failure_class") or "other") for r in records if r["status"] == "failed")
    tables = [Table(["kernel", "dtype", *targets], rows, "Kernel x target"),
              Table(["kernel", "dtype", "target", "config", "status", "failure class", "registers", "spills",
                     "occupancy", "shared bytes", "triton", "error"], detail_rows[:MAX_ROWS],
                    "Failures, skips and spills", "none")]
    return Section("Compile matrix", notes, tables), {"records": len(records), "status": dict(status),
                                                      "failure_classes": dict(classes)}


def autotune_section(runs: list[Run]) -> tuple[Section, list[dict[str, Any]]]:
    rows, summary, entries = [], [], []
    for r in runs:
        a = r.data.get("autotune")
        if not isinstance(a, dict):
            rows.append([r.run_id, r.label, "no data", "-", "-", "-", "-", "-"])
            summary.append({"run_id": r.run_id, "autotune": None})
            continue
        found = a.get("entries") or []
        keys = ("hits", "nearest", "misses", "stale", "tuning_benchmarks")
        rows.append([r.run_id, r.label, *(fmt(a.get(k)) for k in keys), len(found)])
        summary.append({"run_id": r.run_id, **{k: a.get(k) for k in keys}, "entries": len(found)})
        entries += [(r.label, e) for e in found if isinstance(e, dict)]
    notes = ["Per-arch autotune cache use: a hit ran the cached config of the case's shape bucket, a nearest hit the "
             "config of the nearest tuned bucket, a miss or a stale entry fell back to the arch family's default "
             "config; tuning benchmarks are configs timed during the run (--retune); entries are those a --retune "
             "in the run wrote."]
    tables = [Table(["run", "platform", "hits", "nearest", "misses", "stale", "tuning benchmarks", "entries"], rows)]
    if entries:
        keys = list(dict.fromkeys(k for _, e in entries for k, v in e.items() if not isinstance(v, (dict, list))))[:8]
        entry_rows = [[label, *(fmt(e.get(k)) for k in keys)] for label, e in entries[:MAX_ROWS]]
        if len(entries) > MAX_ROWS:
            notes.append(f"Entries: the first {MAX_ROWS} of {len(entries)}.")
        tables.append(Table(["platform", *keys], entry_rows, "Autotune entries"))
    return Section("Autotune coverage", notes, tables), summary


def known_issue_use(runs: list[Run]) -> dict[tuple[str, str], Counter]:
    """(known issue, platform label) -> '<outcome> tests' and '<outcome> cases' under it."""
    used: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in runs:
        for c in r.data["cases"]:
            if c.get("known_issue"):
                used[(str(c["known_issue"]), r.label)][f"{c['outcome']} cases"] += 1
        for t in r.data["tests"]:
            if issue := known_issue_of(r, t):
                used[(issue, r.label)][f"{t['outcome']} tests"] += 1
    return used


def _use_text(c: Counter) -> str:
    """Tests first, then cases: '1 xfailed test, 1 xfailed case'."""
    order = sorted(c.items(), key=lambda item: (not item[0].endswith(" tests"), item[0]))
    return ", ".join(f"{n} {what[:-1] if n == 1 else what}" for what, n in order)


def known_issues_section(runs: list[Run]) -> tuple[Section, list[dict[str, Any]]]:
    registry: dict[str, dict[str, Any]] = {}
    # A run file records the whole registry, the shipped kernels' entries included: the report lists those of the
    # kernels in it (an entry's kernel may be a pattern), and says how many others it left out.
    kernels = set().union(*(kernels_of(r) for r in runs)) if runs else set()
    others = set()
    for r in runs:
        for k in r.data["known_issues"]:
            if any(fnmatch.fnmatchcase(name, str(k.get("kernel") or "*")) for name in kernels):
                registry.setdefault(str(k["id"]), k)
            else:
                others.add(str(k["id"]))
    others -= set(registry)
    used = known_issue_use(runs)
    rows = [[i, k["backend"], k["arch"], k["triton"], k["kernel"], k["dtype"], k.get("test") or REFERENCE_TEST,
             one_line(k["reason"], 200), k["link"]] for i, k in sorted(registry.items())]
    use_rows = [[i, label, _use_text(c)] for (i, label), c in sorted(used.items())]
    notes = ["Known issues are strict expected failures: a test that fails under one is xfailed, and one that "
             "passes (xpassed-strict) fails the run until the entry is removed. Tests are counted as pytest counts "
             "them; the cases are those of the reference test that failed under the issue (a test stops at its "
             "first failing case)."]
    if others:
        notes.append(f"{len(others)} registry entr{'ies' if len(others) > 1 else 'y'} for kernels not in these runs "
                     "left out.")
    tables = [Table(["id", "backend", "arch", "triton", "kernel", "dtype", "test", "reason", "link"], rows, "Registry",
                    "none in these runs"),
              Table(["known issue", "platform", "under it"], use_rows, "Tests and cases under known issues", "none")]
    summary = [{"id": i, "platforms": {label: dict(c) for (j, label), c in used.items() if j == i}} for i in registry]
    return Section("Known issues", notes, tables), summary
