"""The code as it is now: a report shows each ``--kernel-module`` as it was in its newest run. A module is known by
its key (toolchain.module_key: a file by its name, a dotted name as given) and its code by the sha256 the run file
records (``kernel_modules``). Where an older run tested other code of the module than the newest run that records
it, that older run's results for the module's kernels are superseded: left out of every section and the verdict,
and named. The kernels a module registered are those its record lists (``kernels``); a run file that does not list
them (written before the field) is superseded whole. ``build --keep-superseded`` adds every version up instead."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from reports.loading import Run
from reports.outcomes import kernel_dtype_of, kernels_of
from reports.toolchain import module_key

# The run-file lists whose records name a kernel; a test names it in its [kernel-dtype] parameter.
KERNEL_LISTS = ("cases", "findings", "benchmarks", "compiles", "coverage", "incidents")


@dataclass
class Superseded:
    run: str  # the older run's id
    file: str  # its run file's name
    module: str
    sha256: str
    newest_run: str
    newest_sha256: str
    kernels: list[str]  # what of the older run is left out
    whole: bool  # the whole run left out

    def text(self) -> str:
        what = "the whole run" if self.whole else ", ".join(self.kernels)
        return (f"run {self.run} ({self.file}): {self.module} sha256 {self.sha256[:12]}, superseded by run "
                f"{self.newest_run} (sha256 {self.newest_sha256[:12]}); left out: {what}")

    def record(self) -> dict[str, Any]:
        return {"run": self.run, "file": self.file, "module": self.module, "sha256": self.sha256,
                "newest_run": self.newest_run, "newest_sha256": self.newest_sha256, "kernels": self.kernels,
                "whole_run": self.whole}


def _sha(record: dict[str, Any]) -> str:
    return str(record.get("sha256") or "?")


def _without(run: Run, kernels: set[str]) -> Run:
    data = copy.deepcopy(run.data)
    data["tests"] = [t for t in data["tests"] if (kd := kernel_dtype_of(t["nodeid"])) is None or kd[0] not in kernels]
    for name in KERNEL_LISTS:
        if isinstance(data.get(name), list):
            data[name] = [x for x in data[name] if not (isinstance(x, dict) and x.get("kernel") in kernels)]
    mem = data.get("memcheck")
    if isinstance(mem, dict):
        for part in ("kernels", "unchecked"):
            if isinstance(mem.get(part), dict):
                mem[part] = {k: v for k, v in mem[part].items() if k not in kernels}
    return Run(run.path, data, list(run.warnings))


def current(runs: list[Run]) -> tuple[list[Run], list[Superseded]]:
    """``runs`` (in start order) with what older code of a changed kernel module ran left out, and what was."""
    newest: dict[str, tuple[str, Run]] = {}  # module key -> (sha256, the newest run recording it)
    for r in runs:
        for m in r.data.get("kernel_modules") or []:
            newest[module_key(m)] = (_sha(m), r)
    out: list[Run] = []
    gone: list[Superseded] = []
    for r in runs:
        drop: set[str] = set()
        whole = False
        found: list[tuple[dict[str, Any], set[str], bool]] = []
        for m in r.data.get("kernel_modules") or []:
            sha, latest = newest[module_key(m)]
            if latest is r or _sha(m) == sha:
                continue
            listed = m.get("kernels")
            kernels = set(listed) if isinstance(listed, list) else kernels_of(r)
            whole = whole or not isinstance(listed, list)
            drop |= kernels
            found.append((m, kernels, not isinstance(listed, list)))
        if not found:
            out.append(r)
            continue
        ran = kernels_of(r)
        whole = whole or not (ran - drop)
        for m, kernels, all_of_it in found:
            sha, latest = newest[module_key(m)]
            gone.append(Superseded(r.run_id, r.path.name, module_key(m), _sha(m), latest.run_id, sha,
                                   sorted(ran if all_of_it or whole else kernels & ran or kernels), whole))
        if not whole:
            out.append(_without(r, drop))
    return out, gone
