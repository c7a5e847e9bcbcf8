"""The code as it is now: a report shows each ``--kernel-module`` as it was in its newest run. A module is known by
its key (toolchain.module_key: a file by its name, a dotted name as given) and its code by the sha256 the run file
records (``kernel_modules``), with the kernels it registered (``kernels``).

An older run's result is superseded only by a newer run that covered the same thing on the same platform with other
code of the same module: the same test of the same kernel x dtype (every part of a split test, or the whole test),
the same property of it, the same compile target. It is left out of every section and of the verdict, and named.
What the newer code never ran there (another kernel, dtype, test or platform: ``--kernels``, ``-k``, a skip, another
runner) stays, counted as it ended, and is named as older code still counted. A newer run that checked less than the
older one (its memory check off, a profile of fewer examples, a single ``--repro`` case, a check turned off:
reports/checked.py ``switched_off``) supersedes nothing of it. A run file whose module record lists no kernels
(written before the field), or no sha256, cannot say which results are the module's: nothing of it is superseded,
and it is named. ``build --keep-superseded`` adds every version up instead."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from reports import checked
from reports.loading import Run
from reports.outcomes import RAN, REFERENCE_TEST, kernel_dtype_of, test_function
from reports.toolchain import module_key

# A unit is what one run's code covered and a newer run's can supersede: ("test", function, kernel, dtype),
# ("finding", kernel, dtype, property) or ("compile", kernel, dtype, target).
Unit = tuple[str, str, str, str]
SHOWN = 4
PART = re.compile(r"-part(\d+)of(\d+)\]$")  # a split test's part (suite/workers/parts.py): [matmul-fp32-part1of3]
UNKNOWN = "unknown"  # a run file whose module record lists no kernels: which results are the module's, it cannot say


@dataclass
class Superseded:
    run: str  # the older run's id
    file: str  # its run file's name
    module: str
    sha256: str
    newest_run: str
    newest_sha256: str
    kernels: list[str]  # the kernels of the older run something of which is left out
    whole: bool  # nothing of the older run is left
    platform: str = ""
    left_out: list[str] = field(default_factory=list)  # what of the older run is left out ("my_rope fp16 test_...")
    kept: list[str] = field(default_factory=list)  # what of the module's kernels in it stays, and why

    def text(self) -> str:
        what = "the whole run" if self.whole else _few(self.left_out)
        kept = f"; still counted: {_few(self.kept)}" if self.kept else ""
        return (f"run {self.run} ({self.file}) on {self.platform}: {self.module} sha256 {self.sha256[:12]}, superseded "
                f"by run {self.newest_run} (sha256 {self.newest_sha256[:12]}); left out: {what}{kept}")

    def record(self) -> dict[str, Any]:
        return {"run": self.run, "file": self.file, "module": self.module, "sha256": self.sha256,
                "newest_run": self.newest_run, "newest_sha256": self.newest_sha256, "kernels": self.kernels,
                "whole_run": self.whole, "platform": self.platform, "left_out": self.left_out, "kept": self.kept}


@dataclass
class Kept:
    """Older code of a module whose newer code ran elsewhere or otherwise: its results stay in the report."""
    run: str
    file: str
    module: str
    sha256: str
    platform: str
    kept: list[str]  # "my_rope fp32 test_matches_reference: why"

    def text(self) -> str:
        return (f"run {self.run} ({self.file}) on {self.platform}: {self.module} sha256 {self.sha256[:12]}: "
                f"{_few(self.kept)}")

    def record(self) -> dict[str, Any]:
        return {"run": self.run, "file": self.file, "module": self.module, "sha256": self.sha256,
                "platform": self.platform, "kept": self.kept}


def _few(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more


def unit_text(u: Unit) -> str:
    kind, a, b, c = u
    if kind == "test":
        return f"{b} {c} {a}"
    return f"{a} {b} property {c}" if kind == "finding" else f"{a} {b} compile for {c}"


def _test_unit(nodeid: Any) -> Unit | None:
    kd = kernel_dtype_of(str(nodeid or ""))
    return ("test", test_function(str(nodeid)), *kd) if kd else None


def record_units(run: Run) -> dict[str, list[tuple[Any, Unit | None]]]:
    """Per run-file list, each record with the unit it belongs to (None: no kernel's, never superseded)."""
    data = run.data
    out: dict[str, list[tuple[Any, Unit | None]]] = {}
    out["tests"] = [(t, _test_unit(t.get("nodeid"))) for t in data["tests"]]
    out["cases"] = [(c, _test_unit(c.get("nodeid")) or ("test", REFERENCE_TEST, c["kernel"], c["dtype"]))
                    for c in data["cases"]]
    out["findings"] = [(f, ("finding", str(f["kernel"]), str(f["dtype"]), str(f["property"])))
                       for f in data["findings"]]
    out["benchmarks"] = [(b, ("test", "test_benchmark", b["kernel"], b["dtype"])) for b in data["benchmarks"]]
    out["compiles"] = [(c, ("compile", str(c["kernel"]), str(c["dtype"]), str(c["target"])))
                       for c in data["compiles"]]
    out["coverage"] = [(c, ("test", REFERENCE_TEST, str(c.get("kernel")), str(c.get("dtype"))) if isinstance(c, dict)
                        else None) for c in data.get("coverage") or []]
    out["incidents"] = [(i, _test_unit(i.get("nodeid")) if isinstance(i, dict) else None)
                        for i in data.get("incidents") or []]
    return out


def covered(run: Run) -> set[Unit]:
    """What a run's code covered: each test of a kernel x dtype it ran (not skipped; a split test: every part, or the
    whole), each property it recorded, each compile target it built."""
    parts: dict[Unit, set[str]] = {}
    counts: dict[Unit, int] = {}
    out: set[Unit] = set()
    for t in run.data["tests"]:
        u = _test_unit(t["nodeid"])
        if u is None or t["outcome"] not in RAN:
            continue
        m = PART.search(t["nodeid"])
        if m is None:
            out.add(u)
            continue
        parts.setdefault(u, set()).add(m.group(1))
        counts[u] = int(m.group(2))
    out |= {u for u, seen in parts.items() if len(seen) >= counts[u]}
    out |= {("finding", str(f["kernel"]), str(f["dtype"]), str(f["property"])) for f in run.data["findings"]}
    out |= {("compile", str(c["kernel"]), str(c["dtype"]), str(c["target"])) for c in run.data["compiles"]
            if c.get("status") != "skipped"}
    return out


def owner(run: Run, kernel: str) -> tuple[str, str | None] | str | None:
    """The module whose code ``kernel`` was in ``run``: (key, sha256), UNKNOWN where a module record lists no kernels
    (it may be any of them), None where no module registered it (a shipped kernel)."""
    unknown = False
    for m in run.data.get("kernel_modules") or []:
        listed = m.get("kernels")
        if not isinstance(listed, list):
            unknown = True
        elif kernel in listed:
            sha = m.get("sha256")
            return module_key(m), sha if isinstance(sha, str) and sha else None
    return UNKNOWN if unknown else None


def _without(run: Run, drop: set[Unit], kernels: set[str]) -> Run:
    """``run`` without the records of the units in ``drop``; the memory check's entries of ``kernels`` (those none
    of whose units stay) too."""
    data = copy.deepcopy(run.data)
    for name, records in record_units(run).items():
        if name in data:
            data[name] = [copy.deepcopy(r) for r, u in records if u not in drop]
    mem = data.get("memcheck")
    if isinstance(mem, dict):
        for part in ("kernels", "unchecked"):
            if isinstance(mem.get(part), dict):
                mem[part] = {k: v for k, v in mem[part].items() if k not in kernels}
    return Run(run.path, data, list(run.warnings))


def _units(run: Run) -> set[Unit]:
    return {u for records in record_units(run).values() for _, u in records if u is not None}


def current(runs: list[Run]) -> tuple[list[Run], list[Superseded], list[Kept]]:
    """``runs`` (in start order) with what newer code of a kernel module covered again left out of the older runs;
    what was left out, and what of an older run's module stays for the newer code never covered it."""
    cover = [covered(r) for r in runs]
    less = {}  # (older index, newer index) -> what the newer run checked less, cached

    def checked_less(i: int, j: int) -> list[str]:
        if (i, j) not in less:
            less[(i, j)] = checked.switched_off(runs[i], runs[j])
        return less[(i, j)]

    out: list[Run] = []
    gone: list[Superseded] = []
    kept_all: list[Kept] = []
    for i, r in enumerate(runs):
        later = [j for j in range(i + 1, len(runs)) if runs[j].platform == r.platform]
        mine_shas = {module_key(m): str(m.get("sha256") or "?") for m in r.data.get("kernel_modules") or []}

        # Per module: whether a later run, on any platform, recorded other code of it (else nothing to say).
        changed = {key: any(module_key(m) == key and str(m.get("sha256") or "?") != sha
                            for r2 in runs[i + 1:] for m in r2.data.get("kernel_modules") or [])
                   for key, sha in mine_shas.items()}
        drop: dict[Unit, tuple[str, Run, str]] = {}  # unit -> (module key, newer run, its sha256)
        kept: dict[tuple[str, str], list[str]] = {}  # (module key, sha256) -> what stays and why
        units = _units(r)
        for u in sorted(units):
            kernel = u[2] if u[0] == "test" else u[1]
            mine = owner(r, kernel)
            if mine is None:
                continue
            if mine == UNKNOWN:
                keys = [module_key(m) for m in r.data.get("kernel_modules") or [] if not isinstance(m.get("kernels"), list)]
                if any(changed[k] for k in keys):
                    for k in keys:
                        kept.setdefault((k, mine_shas[k]), []).append(f"{unit_text(u)}: this run file does not list the "
                                                             f"kernels of {k}")
                continue
            key, sha = mine
            if not changed[key]:
                continue  # no later run recorded other code of the module: added up
            newer = [j for j in later if u in cover[j]]
            if not newer:
                kept.setdefault((key, sha or "?"), []).append(f"{unit_text(u)}: no newer run of {key} covered it on "
                                                              f"{r.label}")
                continue
            latest = owner(runs[newer[-1]], kernel)
            if latest == UNKNOWN or latest is None or latest[0] != key:
                why = ("the newer run file does not list the kernels of its modules" if latest == UNKNOWN else
                       f"the newest run that covered it did not take {kernel} from {key}")
                kept.setdefault((key, sha or "?"), []).append(f"{unit_text(u)}: {why}")
                continue
            new_sha = latest[1]
            if new_sha == sha and sha is not None:
                continue  # the code as it is now
            if sha is None or new_sha is None:
                kept.setdefault((key, sha or "?"), []).append(f"{unit_text(u)}: a sha256 of {key} not recorded")
                continue
            same = [j for j in newer if owner(runs[j], kernel) == latest]
            full = [j for j in same if not checked_less(i, j)]
            if not full:
                kept.setdefault((key, sha), []).append(f"{unit_text(u)}: the newer code's runs checked less "
                                                       f"({'; '.join(checked_less(i, same[-1]))})")
                continue
            drop[u] = (key, runs[full[-1]], new_sha)
        for (key, sha), what in kept.items():
            if not any(d[0] == key for d in drop.values()):
                kept_all.append(Kept(r.run_id, r.path.name, key, sha, r.label, what))
        if not drop:
            out.append(r)
            continue
        left = units - set(drop)
        gone_kernels = {(u[2] if u[0] == "test" else u[1]) for u in drop}
        whole_kernels = {k for k in gone_kernels if not any((u[2] if u[0] == "test" else u[1]) == k for u in left)}
        whole = not left
        by_module: dict[tuple[str, str, str], list[Unit]] = {}
        for u, (key, newer_run, new_sha) in drop.items():
            by_module.setdefault((key, newer_run.run_id, new_sha), []).append(u)
        for (key, newer_id, new_sha), us in by_module.items():
            sha = next(str(o[1]) for u in us if isinstance(o := owner(r, u[2] if u[0] == "test" else u[1]), tuple))
            gone.append(Superseded(r.run_id, r.path.name, key, sha, newer_id, new_sha,
                                   sorted({u[2] if u[0] == "test" else u[1] for u in us}), whole, r.label,
                                   sorted(map(unit_text, us)), kept.get((key, sha), [])))
        if not whole:
            out.append(_without(r, set(drop), whole_kernels))
    return out, gone, kept_all

