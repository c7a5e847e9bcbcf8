"""What ran where, read the same way by every section: the known issue a test was expected to fail under, the
kernels a run tested, and the kernel x dtype pairs that did not run on a platform, with why."""

from __future__ import annotations

import fnmatch
import re
from collections import defaultdict
from typing import Any

from reports import nodeids
from reports.loading import Run
from reports.nodeids import RAN

Platform = tuple[str, str]
UNSUPPORTED = re.compile(r"^(\S+) is not supported on (\S+)")  # the suite's skip of a dtype the arch lacks
REFERENCE_TEST = "test_matches_reference"  # what a known issue without a 'test' applies to (suite/session/known_issues.py)


def kernel_dtype_of(nodeid: str) -> tuple[str, str] | None:
    """The [kernel-dtype] parameter of a generated test, as the suite's plugin names them ([kernel-sm_90] is not),
    a part's ([kernel-dtype-part1of3]) included (reports/nodeids.py)."""
    return nodeids.parse(nodeid).kernel_dtype


def test_function(nodeid: str) -> str:
    return nodeids.parse(nodeid).function


def known_issue_of(run: Run, test: dict[str, Any]) -> str | None:
    """The known issue a test ran under: its record's, else, for an expected failure in a run file written before
    every test recorded its issue (property tests did not), the one registry entry of the run that matches it."""
    if test.get("known_issue"):
        return str(test["known_issue"])
    kd = kernel_dtype_of(test["nodeid"])
    if test["outcome"] not in ("xfailed", "xpassed-strict") or kd is None:
        return None
    env = run.env
    wanted = ((str(env.get("backend")), "backend"), (str(env.get("arch")), "arch"), (kd[0], "kernel"),
              (kd[1], "dtype"), (test_function(test["nodeid"]), "test"))
    found = [str(k["id"]) for k in run.data["known_issues"]
             if all(fnmatch.fnmatchcase(value, str(k.get(key) or (REFERENCE_TEST if key == "test" else "*")))
                    for value, key in wanted)]
    return found[0] if len(found) == 1 else None


def tests_by_nodeid(run: Run) -> dict[str, dict[str, Any]]:
    return {t["nodeid"]: t for t in run.data["tests"]}


def finding_known_issue(run: Run, finding: dict[str, Any], tests: dict[str, dict[str, Any]] | None = None) -> str | None:
    """The known issue a finding that does not hold was expected under: its test (the one its reproduction line
    names, else the kernel x dtype's property test) was xfailed under one."""
    tests = tests_by_nodeid(run) if tests is None else tests
    nodeid = (nodeids.repro_test_id(finding.get("repro"))
              or f"suite/test_properties.py::test_properties[{finding['kernel']}-{finding['dtype']}]")
    test = tests.get(nodeid)
    if test is None or test["outcome"] != "xfailed":
        return None
    return known_issue_of(run, test)


def kernels_of(run: Run) -> set[str]:
    """The kernels a run tested: those of its cases, its kernel x dtype tests, benchmarks and memory check. A
    finding names what it checked, which may be no kernel (the suite's own check that inputs are drawn alike on
    every device names 'inputs')."""
    names = {c["kernel"] for c in run.data["cases"]} | {b["kernel"] for b in run.data["benchmarks"]}
    names |= {kd[0] for t in run.data["tests"] if (kd := kernel_dtype_of(t["nodeid"]))}
    mem = run.data.get("memcheck")
    if isinstance(mem, dict):
        names |= set(mem.get("kernels") or {}) | set(mem.get("unchecked") or {})
    return names


def not_run(runs: list[Run]) -> dict[tuple[str, str, Platform], str]:
    """(kernel, dtype, platform) -> why it did not run: every test of it on the platform was skipped and no case or
    benchmark of it was recorded there. The reason is the first skip's ('fp8e4nv is not supported on interpreter
    (interpreter profile)')."""
    skipped: dict[tuple[str, str, Platform], str] = {}
    ran: set[tuple[str, str, Platform]] = set()
    for run in runs:
        for t in run.data["tests"]:
            kd = kernel_dtype_of(t["nodeid"])
            if kd is None:
                continue
            if t["outcome"] == "skipped":
                skipped.setdefault((*kd, run.platform), nodeids.skip_reason(t))
            elif t["outcome"] in RAN:
                ran.add((*kd, run.platform))
        ran |= {(r["kernel"], r["dtype"], run.platform) for r in run.data["cases"] + run.data["benchmarks"]}
    return {key: why for key, why in skipped.items() if key not in ran}


def unsupported(reason: str) -> bool:
    """A skip because the platform lacks the dtype (as an arch without fp8): the kernel cannot run there."""
    return bool(UNSUPPORTED.match(reason))


def not_run_text(reasons: dict[str, str]) -> str:
    """dtype -> skip reason, as one phrase: 'unsupported on interpreter: fp8e4nv, fp8e5' and/or 'skipped: why'."""
    parts, unsup, other = [], defaultdict(list), defaultdict(list)
    for dtype, why in sorted(reasons.items()):
        m = UNSUPPORTED.match(why)
        (unsup[m.group(2)] if m else other[why]).append(dtype)
    parts += [f"unsupported dtype on {arch}: {', '.join(dtypes)}" for arch, dtypes in unsup.items()]
    parts += [f"skipped ({', '.join(dtypes)}): {why}" for why, dtypes in other.items()]
    return "; ".join(parts)
