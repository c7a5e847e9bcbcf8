"""The run's verdict at a glance: the last lines a run prints, after pytest's own short summary (the summary's lines
and tables are fitted to the terminal's width by suite/plugin/fit.py).

The verdict reads from the run file's tests alone (each test's outcome, its skip reason, its known issue), so it
says the same whatever printed the details above it:

    VERDICT: FAILED: 2 of 13 tests failed; 1 known issue; 8 not run
      failed   test_matches_reference: leaky_relu[bf16,fp32]
               each failure is above with its message and 'reproduce with:' line
      passed   11 tests: every test of leaky_relu[fp16]
      known    interpreter-bf16-truncating-cast: dropout[bf16] (test_properties)
      not run  8 tests, the dtype is not supported on interpreter (interpreter profile): fp8_codes[fp8e4b8,...]
    result file (complete): runs/run-....json

What ran but could not be checked has a part of its own, ``unchecked`` (never counted as passed): kernels whose memory
accesses no checker saw and why (on a GPU without --memcheck, every kernel), the checks outputs a launcher allocates
itself cannot have, an autotuned kernel that ran one config.
"""

from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports import nodeids
from suite.plugin.fit import MIN_WIDTH
from suite.workers.gpu_share import TOO_LARGE_LISTED

# Tests parametrized with one kernel and one dtype (``kernel_dtype``, suite/plugin/hooks.py).
KERNEL_DTYPE_TESTS = ("test_matches_reference", "test_properties", "test_benchmark")
LABEL = 9  # "not run  "
# The verdict's lines at most: with its title and pytest's last line, the last 15 lines of a run.
MAX_TOTAL = 13


def _split(nodeid: str) -> tuple[str, str | None, str | None]:
    """(test function, kernel, the rest of its id: dtype or target) for a suite test id; parts merged."""
    test = nodeids.parse(nodeid)
    return test.function, test.kernel, test.variant


def subjects(tests: list[dict], kernels: set[str] | None = None, under: str | None = None) -> str:
    """'k1[a,b], k2, test_x' for these tests: per kernel, the dtypes or targets they ran with. With ``kernels`` (the
    run's kernel names), a test whose parameter is none of them is named by its function (``test_x[normal]``)."""
    by_kernel: dict[str, list[str]] = {}
    for t in tests:
        func, kernel, rest = _split(t["nodeid"])
        key = kernel or func
        if kernels is not None and kernel and kernel not in kernels:
            key, rest = func, kernel if rest is None else f"{kernel}-{rest}"
        seen = by_kernel.setdefault(key, [])
        if rest and rest not in seen:
            seen.append(rest)
    return ", ".join((f"[{','.join(sorted(v))}]" if k == under else f"{k}[{','.join(sorted(v))}]") if v else k
                     for k, v in sorted(by_kernel.items()) if v or k != under)


def _per_function(tests: list[dict], kernels: set[str] | None) -> list[str]:
    """'test_function: its subjects' per test function (the function alone where it has no parameter)."""
    by_func: dict[str, list[dict]] = defaultdict(list)
    for t in tests:
        by_func[_split(t["nodeid"])[0]].append(t)
    return [f"{func}: {named}" if (named := subjects(ts, kernels, func)) else func for func, ts in sorted(by_func.items())]


def known_issues_of(tests: list[dict]) -> dict[tuple[str, str | None, str | None], str]:
    """(test function, kernel, dtype or target) -> the known issue its test failed as expected by."""
    return {_split(t["nodeid"]): t["known_issue"] for t in tests if t.get("known_issue") and t["outcome"] == "xfailed"}


def grouped_reason(test: dict) -> str:
    """A skip's reason (reports/nodeids.py skip_reason: its first line) with the test's own kernel, dtype or target
    taken out, so that alike reasons group; never inside a test id or a case's name ('[attention-fp32]' stays
    whole)."""
    reason = nodeids.skip_reason(test)
    _, kernel, rest = _split(test["nodeid"])
    if kernel:
        reason = re.sub(rf"^{re.escape(kernel)}: ", "", reason)
    if rest:
        reason = re.sub(rf"(?<![\w.\[-]){re.escape(rest)}(?![\w.\]])",
                        "the dtype" if nodeids.is_dtype(rest) else "the target", reason)
    reason = re.sub(r" \([^()]*,[^()]*\)", "", reason)  # a list that differs per kernel: (fp8e4nv, fp8e5)
    return reason[0].lower() + reason[1:] if reason else reason


def not_run_lines(tests: list[dict], function: str) -> list[str]:
    """'not run: <subjects>: <why>' per reason, for the skipped tests of ``function``."""
    by_reason: dict[str, list[dict]] = defaultdict(list)
    for t in tests:
        if t["outcome"] == "skipped" and _split(t["nodeid"])[0] == function:
            by_reason[grouped_reason(t)].append(t)
    return [f"not run: {subjects(ts)}: {reason}" for reason, ts in sorted(by_reason.items())]


def _natural(entries: list[str], width: int, label: int = LABEL) -> int:
    """How many lines ``entries`` take whole under a label ``label`` wide."""
    return sum(len(textwrap.wrap(e, width - 2 - label, break_long_words=False, break_on_hyphens=False) or [""])
               for e in entries)


def _entries(label: str, entries: list[str], width: int, most: int, label_width: int = LABEL) -> list[str]:
    """``entries`` under ``label``, each starting a line and wrapped, in at most ``most`` lines. Where they do not all
    fit whole, each takes at most two lines (cut at a word: ' ...'), and a last line counts those left out."""
    room = width - 2 - label_width
    wrapped = [textwrap.wrap(e, room, break_long_words=False, break_on_hyphens=False) or [""] for e in entries]
    if sum(len(w) for w in wrapped) <= most:
        lines = [line for w in wrapped for line in w]
    else:
        lines = []
        reserve = 1 if most > 1 else 0  # the line that counts the entries left out
        for i, w in enumerate(wrapped):
            take = min(len(w), 2 if len(wrapped) > 1 else most, most - reserve - len(lines))
            if i == len(wrapped) - 1:
                take = min(len(w), most - len(lines))  # the last entry may use the counting line
            if take < 1:
                left = entries[i:]
                counts = [int(m.group(1)) for e in left if (m := re.match(r"(\d+) tests?\b", e))]
                tests = f" ({_tests(sum(counts))})" if len(counts) == len(left) else ""  # the counts still add up
                lines.append(f"... and {len(left)} more{tests}: the result file has them")
                break
            lines += w[:take - 1] + [_cut(w[take - 1], room) if take < len(w) else w[take - 1]]
    return [f"  {(label if i == 0 else ''):<{label_width}}{line}" for i, line in enumerate(lines)]


def _cut(line: str, room: int) -> str:
    """``line`` with ' ...' at its end, words dropped to make room."""
    words = line.split(" ")
    while len(words) > 1 and len(" ".join(words)) + 4 > room:
        words.pop()
    return " ".join(words) + " ..."


def _tests(n: int) -> str:
    return f"{n} test" + ("" if n == 1 else "s")


def _module(nodeid: str) -> str:
    return Path(nodeids.parse(nodeid).module or nodeid).stem.removeprefix("test_").replace("_", " ")


def unchecked_entries(data: dict) -> list[str]:
    """What the run ran but could not check, from the run file: kernels whose memory accesses no checker saw (and
    why), checks that cannot apply to outputs a launcher allocates itself, autotuned kernels that ran one config.
    Never counted as passed: the verdict names them under ``unchecked``."""
    out = []
    memory = data.get("memcheck") or {}
    by_why: dict[str, list[str]] = defaultdict(list)
    for kernel, why in sorted((memory.get("unchecked") or {}).items()):
        by_why[why].append(kernel)
    for why, kernels in sorted(by_why.items()):
        every = len(kernels) > 3
        names = f"{len(kernels)} kernels" if every else ", ".join(kernels)
        hint = "; --memcheck checks them" if memory.get("mode") == "off" else ""
        out.append(f"memory accesses of {names}: {why}{hint}")
    by_checks: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for case in data.get("cases") or []:
        if isinstance(case, dict) and case.get("unchecked"):
            by_checks[tuple(c.split(" (")[0] for c in case["unchecked"])].add(case.get("kernel", "?"))
    for checks, kernels in sorted(by_checks.items()):
        out.append(f"{' and '.join(checks)} of {', '.join(sorted(kernels))}: outputs the launcher allocates")
    for c in data.get("coverage") or []:
        for name, count in sorted((c.get("untuned") or {}).items()):
            out.append(f"autotuning of {c.get('kernel')}[{c.get('dtype')}]: {name} ran the first of its {count} "
                       f"configs only")
    return out


def _numerics(data: dict) -> dict | None:
    """What a --numerics run modelled (the run file's environment.numerics: its profile, ...); None for any other run."""
    numerics = (data.get("environment") or {}).get("numerics")
    return numerics if isinstance(numerics, dict) else None


def vendor_sensitive_entries(data: dict) -> list[str]:
    """Under --numerics, the cases whose verdict flips inside the modelled GPU's approximate instructions' error
    bounds (suite/checks/numerics_envelope.py), by kernel x dtype: never a failure by themselves, but what a person
    reading the verdict must know, since on that GPU the outcome is the instruction's. A run that said it only in a
    warning, far above the verdict, read as a plain pass."""
    by_pair: dict[str, int] = defaultdict(int)
    for case in data.get("cases") or []:
        if isinstance(case, dict) and case.get("vendor_sensitive"):
            by_pair[f"{case.get('kernel', '?')}[{case.get('dtype', '?')}]"] += 1
    if not by_pair:
        return []
    profile = (_numerics(data) or {}).get("profile")
    n = sum(by_pair.values())
    pairs = ", ".join(f"{pair} {count}" for pair, count in sorted(by_pair.items()))
    return [f"{n} case{'s' if n > 1 else ''} whose verdict flips within {profile or 'the modelled GPU'}'s approximate "
            f"instructions' error bounds: {pairs}; on that GPU the outcome is the instruction's as much as the "
            f"kernel's (each case in the result file; docs/checks.md)"]


# The outcomes that fail a run (pytest's exit code 1), as the reports read them too: a strict known issue's test that
# passed (XPASS(strict)) too. A known issue's test that passed without --strict-known-issues (``xpassed``) is an issue
# this run did not meet.
FAILING = nodeids.FAILING
# The verdict's first word, and the exit codes it goes with (pytest.ExitCode: 0 OK, 1 TESTS_FAILED, 2 INTERRUPTED,
# 5 NO_TESTS_COLLECTED).
# UNCHECKED: nothing failed, but a kernel x dtype's every value test was not checkable here for a reason its author
# can remove (a construct the interpreter evaluates otherwise): exit 6, a code pytest never gives, so that a gate on
# the exit code does not let a kernel through that was never checked.
EXIT_CODES = {"PASSED": (0,), "NOTHING RAN": (0, 5), "FAILED": (1,), "INTERRUPTED": (2,), "UNCHECKED": (6,)}
UNCHECKED_EXIT = 6
# The skip reasons of a test its author can make checkable (suite/checks/interpreter.py: SemanticGap), as against a
# platform that cannot run it (a dtype the GPU lacks, a test for another backend).
AUTHOR_CAN_FIX = ("not checkable on the interpreter",)


def never_checked(data: dict) -> list[str]:
    """The kernel x dtype pairs whose value test (test_matches_reference, or any part of a split one: a part skipped so
    left its cases, and where it was the last to finish the test's end, unjudged) was skipped as not checkable for a
    reason its author can remove, and none of whose parts failed. Each as 'kernel[dtype]: reason'."""
    by_pair: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for t in data.get("tests") or []:
        node = nodeids.parse(str(t.get("nodeid", "")))
        if node.function == "test_matches_reference" and node.kernel and node.dtype:
            by_pair[(node.kernel, node.dtype)].append(t)
    out = []
    for (kernel, dtype), tests in sorted(by_pair.items()):
        reasons = [r for t in tests if t.get("outcome") == "skipped"
                   for r in [nodeids.skip_reason(t)] if any(fix in r for fix in AUTHOR_CAN_FIX)]
        if reasons and not any(nodeids.failing(t) for t in tests):
            reason = next(fix for fix in AUTHOR_CAN_FIX if fix in reasons[0])
            out.append(f"{kernel}[{dtype}]: {reason}{reasons[0].split(reason, 1)[1]}")
    return out


def verdict_state(data: dict, exitstatus: int | None = None) -> str:
    """The verdict's first word: INTERRUPTED where the run was stopped (pytest's exit code 2; without one, a run file
    "interrupted" with no failure), FAILED where a test failed or pytest counted a failure, else PASSED where a test
    passed or failed as a known issue says, else NOTHING RAN. It agrees with exit_status's code (EXIT_CODES)."""
    tests = data.get("tests") or []
    bad = any(nodeids.failing(t) for t in tests)
    if exitstatus == 2 or (exitstatus is None and data.get("status") == "interrupted" and not bad):
        return "INTERRUPTED"
    if bad or exitstatus == 1:
        return "FAILED"
    if exitstatus == UNCHECKED_EXIT or (exitstatus is None and never_checked(data)):
        return "UNCHECKED"
    if any(t["outcome"] == "passed" or (t["outcome"] in ("xfailed", "xpassed") and t.get("known_issue"))
           for t in tests):
        return "PASSED"
    return "NOTHING RAN"


def exit_status(data: dict, exitstatus: int) -> int:
    """The run's exit code, given pytest's: a test the run file records as failed fails the run (1) whatever pytest
    counted; an interrupted run stays 2; a run where nothing failed but a kernel x dtype was never checked, for a
    reason its author can remove (never_checked), exits 6. The verdict's first word (verdict_state) agrees with it."""
    if exitstatus in (0, 5) and any(nodeids.failing(t) for t in data.get("tests") or []):
        return 1
    if exitstatus in (0, 5) and never_checked(data):  # nothing failed, and a kernel x dtype was never checked
        return UNCHECKED_EXIT
    return exitstatus


def unrun_case_entries(data: dict) -> list[str]:
    """The cases the suite left unrun in tests that ran (suite/workers/gpu_share.py): too large for the GPU, each
    named by kernel and dtype with its shape where the run file lists it; out of memory although they fit (other
    processes held the GPU's memory). Each entry starts with its count."""
    share = data.get("gpu_share") or {}
    out = []
    if too_large := _distinct(int(share.get("too_large") or 0), share.get("too_large_cases")):
        out.append(f"{too_large} case{'s' if too_large > 1 else ''}, too large for this GPU (out of memory with the "
                   f"GPU to itself; each with a reproduction line in the result file): "
                   f"{_named(share.get('too_large_cases'), needs=True)}")
    if held := _distinct(int(share.get("oom_held") or 0), share.get("held_cases")):
        named = _named(share.get("held_cases"))
        out.append(f"{held} case{'s' if held > 1 else ''}, out of memory although {'they fit' if held > 1 else 'it fits'}"
                   f" the GPU: other processes held its memory (rerun {'them' if held > 1 else 'it'} on a GPU to "
                   f"{'themselves' if held > 1 else 'itself'}: each with a reproduction line in the result file and "
                   f"the summary)" + (f": {named}" if named else ""))
    return out


def _distinct(count: int, listed: Any) -> int:
    """How many cases a count of cases not run stands for: the count is of each time a test met one (a properties
    test meets a case once per property, and the reference test may meet it too); the run file lists each case once,
    up to gpu_share.TOO_LARGE_LISTED. The listed cases where the list is whole, else the count."""
    listed = [c for c in listed or [] if isinstance(c, dict)]
    return len(listed) if count and 0 < len(listed) < TOO_LARGE_LISTED else count


def _named(listed: Any, needs: bool = False) -> str:
    """The first three cases of a run file's list of cases not run, by kernel, dtype and shape (and ``needs``: the
    footprint), and how many more it lists."""
    listed = [c for c in listed or [] if isinstance(c, dict)]
    named = "; ".join(f"{c.get('kernel')}[{c.get('dtype')}] {_shape_of(c.get('case', ''))}".rstrip()
                      + (f" needs {c['footprint_gib']} GiB" if needs and c.get("footprint_gib") else "")
                      for c in listed[:3])
    return named + (f"; {len(listed) - 3} more listed in the result file" if len(listed) > 3 else "")


def _shape_of(case: str) -> str:
    """The shape in a case's text ('attention[fp32] {"B": 8, ...} contiguous normal seed=3': '{"B": 8, ...}')."""
    found = re.search(r"\{[^{}]*\}", case)
    return found.group(0) if found else ""


@dataclass
class _Sorted:
    """A run's tests by what the verdict says of them."""

    tests: list[dict]
    failed: list[dict] = field(default_factory=list)
    passed: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    known: list[dict] = field(default_factory=list)  # failed as a known issue says they do
    unmet: list[dict] = field(default_factory=list)  # a known issue's tests that passed (not met in this run)
    others: list[dict] = field(default_factory=list)  # xfailed or xpassed with no known issue


def _sorted(tests: list[dict]) -> _Sorted:
    by_outcome: dict[str, list[dict]] = defaultdict(list)
    for t in tests:
        by_outcome[t["outcome"]].append(t)
    xfailed, xpassed = by_outcome["xfailed"], by_outcome["xpassed"]
    return _Sorted(tests, failed=[t for outcome in FAILING for t in by_outcome[outcome]], passed=by_outcome["passed"],
                   skipped=by_outcome["skipped"], known=[t for t in xfailed if t.get("known_issue")],
                   unmet=[t for t in xpassed if t.get("known_issue")],
                   others=[t for t in xfailed + xpassed if not t.get("known_issue")])


def _run_kernels(data: dict, tests: list[dict]) -> set[str] | None:
    """The run's kernels: where a test's parameter is none of them (a hazard's), the test is named by its function."""
    kernels = {r["kernel"] for key in ("cases", "findings", "compiles", "coverage", "known_issues")
               for r in data.get(key) or [] if isinstance(r, dict) and r.get("kernel")}
    kernels |= {k for t in tests for f, k, r in [_split(t["nodeid"])] if k and (r or f in KERNEL_DTYPE_TESTS)}
    return kernels or None


def _shard(data: dict) -> str:
    """'shard 1/2 of run ID: ' for a shard's run file, else ''."""
    sh = data.get("shard") if isinstance(data.get("shard"), dict) else {}
    return f"shard {sh['index']}/{sh['count']} of run {sh['run_id']}: " if sh.get("count", 1) > 1 else ""


def _head(data: dict, state: str, s: _Sorted, unfinished: list[dict], not_started: int, unrun: list[str],
          width: int) -> list[str]:
    """The verdict's first line (wrapped): its word, then the counts."""
    tests, failed, passed = s.tests, s.failed, s.passed
    counts = [f"{len(failed)} of {_tests(len(tests))} failed" if failed else f"{len(passed)} of {_tests(len(tests))} passed"]
    if state == "INTERRUPTED":
        left = len(unfinished) + not_started
        counts = ["the run did not finish" + (f" ({_tests(left)} unfinished or never started)" if left else ""),
                  f"{len(failed) if failed else len(passed)} of the {_tests(len(tests))} that ended "
                  f"{'failed' if failed else 'passed'}"]
    elif state == "FAILED" and not failed:  # pytest counted a failure the tests' records do not hold
        counts = [f"pytest counted a failure outside the tests' results (an error in a fixture's setup or teardown, "
                  f"or a test outside the suite): see above; {counts[0]}"]
    if s.known:
        ids = {t["known_issue"] for t in s.known}
        counts.append(f"{len(ids)} known issue{'s' if len(ids) > 1 else ''}")
    if state == "UNCHECKED":
        pairs = len(never_checked(data))
        counts.append(f"{pairs} kernel x dtype pair{'s' if pairs > 1 else ''} never checked")
    if s.skipped:
        counts.append(f"{len(s.skipped)} not run")
    if unrun:
        n = sum(int(e.split(" ", 1)[0]) for e in unrun)
        counts.append(f"{n} case{'s' if n > 1 else ''} not run")
    if data.get("status") not in (None, "complete") and state != "INTERRUPTED":
        counts.append(f"the run did not finish ({data.get('status')})")
    numerics = _numerics(data)
    modelled = f"modelled as {numerics.get('profile')}; " if numerics is not None else ""
    return textwrap.wrap(f"VERDICT: {state}: {_shard(data)}{modelled}" + "; ".join(counts), width,
                         subsequent_indent="  ")


def _unfinished_entries(unfinished: list[dict], not_started: int, kernels: set[str] | None) -> list[str]:
    entries = []
    if unfinished:
        entries.append(f"{_tests(len(unfinished))} running when it stopped: {subjects(unfinished, kernels)}")
    if not_started:
        entries.append(f"{_tests(not_started)} never started")
    return entries


def _passed_entry(s: _Sorted, kernels: set[str] | None, every: str, width: int) -> tuple[str, str]:
    """What passed: the kernel x dtype pairs every test of which passed, then the other passed tests by function
    (by test file where they are too many to name); and the same where room is short, the pairs counted."""
    passed = s.passed
    bad = {(k, r) for t in s.tests if t["outcome"] != "passed"
           for f, k, r in [_split(t["nodeid"])] if f in KERNEL_DTYPE_TESTS}
    clean = [t for t in passed if _split(t["nodeid"])[0] in KERNEL_DTYPE_TESTS
             and _split(t["nodeid"])[1:] not in bad]
    text = _tests(len(passed)) + (f": {every} {subjects(clean, kernels)}" if clean else "")
    modules: dict[str, int] = defaultdict(int)  # the other passed tests, how many per test file
    rest = [t for t in passed if t not in clean]
    for t in rest:
        modules[_module(t["nodeid"])] += 1
    per_module = ", ".join(f"{m} {n}" for m, n in sorted(modules.items(), key=lambda kv: (-kv[1], kv[0])))
    if rest:
        named = "; ".join(_per_function(rest, kernels))
        if len(named) > 2 * (width - 2 - LABEL):  # too many to name: how many per test file
            named = per_module
        text += (f"; {len(rest)} more: " if clean else ": ") + named
    pairs = {_split(t["nodeid"])[1:] for t in clean}
    # The count alone, where room is short: still says which passed tests are not the kernel x dtype pairs'.
    compact = _tests(len(passed)) + (f": {every} {len(pairs)} kernel x dtype pairs of "
                                      f"{len({k for k, _ in pairs})} kernels" if clean else "")
    if rest:
        compact += (f"; {len(rest)} more: " if clean else ": ") + per_module
    return text, compact


def _known_entries(s: _Sorted, kernels: set[str] | None) -> list[str]:
    """Per known issue, the tests that failed as it says (then those of issues this run did not meet)."""
    entries = []
    for tests, how in ((s.known, ""), (s.unmet, ": not met in this run (no case failed as it describes; "
                                                "--strict-known-issues fails a test it does not meet)")):
        by_issue: dict[str, list[dict]] = defaultdict(list)
        for t in tests:
            by_issue[t["known_issue"]].append(t)
        entries += [f"{issue}: {subjects(ts, kernels)} ({', '.join(sorted({_split(t['nodeid'])[0] for t in ts}))})"
                    f"{how}" for issue, ts in sorted(by_issue.items())]
    return entries


def _skipped_entries(skipped: list[dict], kernels: set[str] | None) -> list[str]:
    """The skipped tests per reason, the most first."""
    by_reason: dict[str, list[dict]] = defaultdict(list)
    for t in skipped:
        by_reason[grouped_reason(t)].append(t)
    return [f"{_tests(len(ts))}, {reason}: {subjects(ts, kernels)}"
            for reason, ts in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def _body(parts: list[tuple[str, list[str]]], compact: str | None, width: int, room: int) -> list[str]:
    """The parts under their labels in at most ``room`` lines: each as long as it needs until the whole fits; what
    passed gives way first (to ``compact``, a count), then the longest part."""
    # The labels' column: wider only where a label needs it ("unchecked").
    label_width = max(LABEL, *(len(label) + 2 for label, _ in parts)) if parts else LABEL
    budget = [_natural(entries, width, label_width) for _, entries in parts]
    labels = [label for label, _ in parts]
    if sum(budget) > room and "passed" in labels:
        i = labels.index("passed")
        parts[i] = ("passed", [compact])
        budget[i] = _natural([compact], width, label_width)
    while sum(budget) > room and max(budget) > 1:
        budget[budget.index(max(budget))] -= 1
    return [line for (label, entries), most in zip(parts, budget, strict=True)
            for line in _entries(label, entries, width, most, label_width)]


def verdict_lines(data: dict, path: Path | str, width: int = MIN_WIDTH, unwritten: str | None = None,
                  exitstatus: int | None = None, not_started: int = 0) -> list[str]:
    """The verdict: one line that says it, then what failed and where to look, what passed, the known issues by
    name, what was not run and why, and the result file (or ``unwritten``, the line that says it could not be
    written). At most MAX_TOTAL lines, none wider than ``width`` but the last (the result file's path, whole).
    ``exitstatus``: the run's exit code (exit_status), which its first word agrees with; ``not_started``: tests of an
    interrupted run that never started."""
    s = _sorted(data.get("tests") or [])
    kernels = _run_kernels(data, s.tests)
    state = verdict_state(data, exitstatus)
    unfinished = [u for u in data.get("unfinished") or [] if isinstance(u, dict) and u.get("nodeid")]
    unrun = unrun_case_entries(data)
    head = _head(data, state, s, unfinished, not_started, unrun, width)
    every = "this shard's tests of" if _shard(data) else "every test of"  # a shard ran only its part of each pair
    # One line, never wrapped: a path to copy (the terminal folds it where it is longer).
    tail = [unwritten or f"result file ({data.get('status', '?')}): {path}"]

    parts: list[tuple[str, list[str]]] = []  # (label, entries), in the order printed
    if unfinished or (state == "INTERRUPTED" and not_started):
        parts.append(("unfinished", _unfinished_entries(unfinished, not_started, kernels)))
    if s.failed:
        parts.append(("failed", _per_function(s.failed, kernels)))
        parts.append(("", ["each failure is above with its message and 'reproduce with:' line"]))
    compact = None
    if s.passed:
        text, compact = _passed_entry(s, kernels, every, width)
        parts.append(("passed", [text]))
    if s.known or s.unmet:
        parts.append(("known", _known_entries(s, kernels)))
    if s.others:
        parts.append(("xfailed", [f"{_tests(len(s.others))}: {subjects(s.others, kernels)}"]))
    if state == "UNCHECKED":
        parts.append(("never checked", never_checked(data)[:3] + [
            "make each checkable (docs/checks.md, 'Constructs the interpreter evaluates differently'), or check it on "
            "a GPU"]))
    if s.skipped or unrun:
        parts.append(("not run", unrun + _skipped_entries(s.skipped, kernels)))
    if unchecked := unchecked_entries(data):
        parts.append(("unchecked", unchecked))
    if sensitive := vendor_sensitive_entries(data):
        parts.append(("sensitive", sensitive))
    return head + _body(parts, compact, width, MAX_TOTAL - len(head) - len(tail)) + tail
