"""`python -m reports history`: what a series of nightly runs says per kernel x dtype x platform over time.

A night is one run (the shard files of a sharded run merged: reports/shards.py), ordered by the run's start time;
each platform (device and arch) and Hypothesis profile has its own series, of which the last ``window`` nights are
read: the nightly workflow's three runs a night (correctness in the nightly profile, benchmarks in ci, the memory
check in dev) are three series, each with one run a night, never one series with three runs a night. Per kernel x dtype,
each night it ran is one state, from its tests (suite/test_*.py's ``[kernel-dtype]`` tests):

- ``failed``: a test failed, other than intermittently (or a known issue's strict xfail passed);
- ``intermittent``: the only failures were intermittent (their wrong cases say ``"failure": "intermittent"``, their
  broken properties carry ``"intermittent"`` counts: wrong in some runs of the case, right in others), counted apart
  from plain failures;
- ``known issue``: a test failed as a known issue says it does; ``passed``: every test that ran passed.

A night where no test of it ran (every one skipped, or absent) is not observed and breaks nothing. Flips count the
nights where it went from passing (passed, known issue) to failed or back; intermittent nights are left out of
flips. A streak is consecutive nights of ``failed`` (nights not run, and intermittent ones, neither extend nor end
it), an intermittent streak consecutive ``intermittent`` nights (nights not run neither extend nor end it); the first
night of either comes with what changed against the last night the kernel x dtype passed before it (not the night
before, on which it may not have run, nor a night it failed on, even intermittently: the change may have come that
night): the toolchain (reports/toolchain.py: Triton, torch, numpy, Python, runtime, driver, the suite) and the
kernel's --kernel-module (its sha256).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from reports import nodeids
from reports.failure_kinds import FailureKind
from reports.loading import Run, RunFileError, load_some, run_files
from reports.outcomes import kernel_dtype_of
from reports.render import Section, Table
from reports.shards import merge_some
from reports.toolchain import TOOLCHAIN, module_key, toolchain_changes

FORMAT = "portability-history/1"
DEFAULT_WINDOW = 30
# One letter a night in a kernel's timeline, oldest first.
LETTER = {"passed": "P", "failed": "F", "intermittent": "I", "known issue": "K", None: "-"}
RANK = {"passed": 0, "known issue": 1, "intermittent": 2, "failed": 3}  # a night's state: its worst test's
LEGEND = ("Timeline, oldest night first: P passed, F failed, I intermittent failure only, K known issue, "
          "- not run that night.")


@dataclass
class Night:
    index: int  # 1-based within the window
    run: Run
    before: Run | None  # the series' night before it (even one before the window)

    def ref(self) -> dict[str, Any]:
        return {"night": self.index, "run_id": self.run.run_id, "started": self.run.data["started"]}


@dataclass
class Row:
    kernel: str
    dtype: str
    states: list[str | None]  # per night of the window
    streaks: list[dict[str, Any]] = field(default_factory=list)
    intermittent_streaks: list[dict[str, Any]] = field(default_factory=list)  # consecutive intermittent nights


def night_states(run: Run) -> dict[tuple[str, str], str]:
    """(kernel, dtype) -> its state that night (see the module's docstring), for those with a test that ran."""
    failure_kinds: dict[str, list[Any]] = {}  # test -> what each of its wrong cases and broken properties was
    for c in run.data["cases"]:
        if c.get("outcome") == "failed":
            failure_kinds.setdefault(str(c.get("nodeid")), []).append(c.get("failure"))
    for f in run.data["findings"]:  # a property that does not hold: intermittent where it held in some runs
        if f.get("holds") is False and (nodeid := nodeids.repro_test_id(f.get("repro"))):
            failure_kinds.setdefault(nodeid, []).append(FailureKind.INTERMITTENT if f.get("intermittent") else None)
    out: dict[tuple[str, str], str] = {}
    for t in run.data["tests"]:
        kd = kernel_dtype_of(t["nodeid"])
        outcome = t["outcome"]
        if kd is None or outcome == "skipped":
            continue
        if outcome in nodeids.FAILING:
            kinds = failure_kinds.get(t["nodeid"])
            state = "intermittent" if outcome == "failed" and kinds and all(k == FailureKind.INTERMITTENT for k in kinds) \
                else "failed"
        else:
            state = "known issue" if outcome == "xfailed" else "passed"
        if kd not in out or RANK[state] > RANK[out[kd]]:
            out[kd] = state
    return out


def _ok(state: str | None) -> bool | None:
    """Passing (True), failing (False), or neither for flips (not run, intermittent)."""
    return None if state in (None, "intermittent") else state != "failed"


def _module_changes(before: Run, after: Run, kernel: str) -> list[str]:
    """How the code of ``kernel``'s --kernel-module changed between two runs: its sha256 (a module whose record
    lists its kernels counts for those only), or the module in one run only."""
    def mine(run: Run) -> dict[str, dict[str, Any]]:
        return {module_key(m): m for m in run.data.get("kernel_modules") or []
                if not isinstance(m.get("kernels"), list) or kernel in m["kernels"]}

    b, a = mine(before), mine(after)
    out = []
    for key in sorted(b.keys() | a.keys()):
        if key not in b or key not in a:
            out.append(f"kernel module {key} {'new' if key in a else 'gone'}")
        elif b[key].get("sha256") != a[key].get("sha256"):
            out.append(f"kernel module {key} changed: sha256 {(b[key].get('sha256') or '?')[:12]} -> "
                       f"{(a[key].get('sha256') or '?')[:12]}")
    return out


def _last_passed(kd: tuple[str, str], earlier: list[Run]) -> Run | None:
    """The latest of ``earlier`` (oldest first) on which the kernel x dtype ran and passed (a known issue counts as
    passing), else None."""
    return next((r for r in reversed(earlier) if _ok(night_states(r).get(kd)) is True), None)


def _streaks(kd: tuple[str, str], kernel: str, states: list[str | None], nights: list[Night], earlier: list[Run],
             kind: str) -> list[dict[str, Any]]:
    """The streaks of ``kind`` nights (failed, or intermittent): consecutive nights of it, which nights not run
    neither extend nor end (nor, for failed streaks, intermittent nights); each with what changed since the kernel x
    dtype last passed before its first night."""
    skipped = (None, "intermittent") if kind == "failed" else (None,)
    observed = [(i, s) for i, s in enumerate(states) if s not in skipped]
    out, streak = [], []
    for pos, (i, s) in enumerate(observed):
        if s == kind:
            streak.append(i)
        if streak and (s != kind or pos == len(observed) - 1):
            first, last = nights[streak[0]], nights[streak[-1]]
            # What changed since the last night it passed, not since the night before (it may not have run then: a
            # Triton change on a night it did not run is still the cause; nor since a night it failed on, or failed
            # only intermittently: the change may have come that night).
            before = _last_passed(kd, earlier + [n.run for n in nights[:streak[0]]])
            out.append({"first_bad": first.ref(), "last_bad": last.ref(), "nights": len(streak),
                        "ongoing": s == kind and pos == len(observed) - 1,
                        "night_before": None if before is None else
                        {"run_id": before.run_id, "started": before.data["started"]},
                        "toolchain_changes": [] if before is None else toolchain_changes(before, first.run),
                        "code_changes": [] if before is None else _module_changes(before, first.run, kernel)})
            streak = []
    return out


def rows_of(nights: list[Night], earlier: list[Run] | None = None) -> list[Row]:
    """``earlier``: the series' runs before the window (oldest first): a streak's changes are counted from the last
    night the kernel x dtype passed, which may be one of them."""
    earlier = earlier or []
    per_night = [night_states(n.run) for n in nights]
    keys = sorted({kd for states in per_night for kd in states})
    rows = []
    for kd in keys:
        row = Row(*kd, [states.get(kd) for states in per_night])
        row.streaks = _streaks(kd, row.kernel, row.states, nights, earlier, "failed")
        row.intermittent_streaks = _streaks(kd, row.kernel, row.states, nights, earlier, "intermittent")
        rows.append(row)
    return rows


def _row_json(row: Row, nights: list[Night]) -> dict[str, Any]:
    observed = [(i, s) for i, s in enumerate(row.states) if s is not None]
    last_i, last_s = observed[-1]
    if last_i != len(nights) - 1:  # not run on the latest night
        state, since = "not run", nights[last_i + 1]
    else:
        state, start = last_s, last_i
        for i, s in reversed(observed):
            if s != last_s:
                break
            start = i
        since = nights[start]
    flips_seen = [ok for _, s in observed if (ok := _ok(s)) is not None]
    counts = {k: sum(s == k for s in row.states) for k in ("passed", "failed", "intermittent", "known issue")}
    return {"kernel": row.kernel, "dtype": row.dtype, "state": state, "since": since.ref(),
            "since_window_start": since.index == 1 and state != "not run",
            "timeline": "".join(LETTER[s] for s in row.states), "nights_run": len(observed),
            "passed": counts["passed"], "failed": counts["failed"], "intermittent": counts["intermittent"],
            "known_issue": counts["known issue"],
            "flips": sum(a != b for a, b in pairwise(flips_seen)), "streaks": row.streaks,
            "intermittent_streaks": row.intermittent_streaks}


def _run_toolchain(run: Run) -> dict[str, Any]:
    return {k: run.env.get(k) for k in TOOLCHAIN}


@dataclass
class History:
    window: int
    platforms: list[dict[str, Any]]  # per series (platform and profile): label, profile, nights, kernels
    left_out: list[RunFileError]
    nights_seen: int  # all nights read, before the window

    def as_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "window": self.window, "nights_read": self.nights_seen,
                "platforms": self.platforms, "left_out": [str(e) for e in self.left_out]}


def history(paths: list[str | Path], window: int = DEFAULT_WINDOW) -> History:
    files = run_files(paths)
    if not files:
        raise RunFileError(f"no run files in {', '.join(map(str, paths)) or 'no paths'}: history reads run-*.json "
                           f"and run-*.json.gz files (a directory's, recursively) or the files named")
    runs, bad = load_some(files)
    runs, bad_sets = merge_some(runs)
    if not runs:
        raise RunFileError(f"none of the {len(files)} run files is usable: " + "; ".join(map(str, bad + bad_sets)))
    runs = sorted(runs, key=lambda r: (r.data["started"], r.run_id))
    platforms = []
    for key in dict.fromkeys(_series_key(r) for r in runs):
        series = [r for r in runs if _series_key(r) == key]
        first = max(0, len(series) - window)
        nights = [Night(i - first + 1, r, series[i - 1] if i > 0 else None) for i, r in enumerate(series) if i >= first]
        rows = rows_of(nights, series[:first])
        night_json = [{**n.ref(), "files": n.run.data.get("shard", {}).get("merged_from") or [n.run.path.name],
                       "status": n.run.data["status"], "toolchain": _run_toolchain(n.run),
                       "toolchain_changes": [] if n.before is None else toolchain_changes(n.before, n.run)}
                      for n in nights]
        kernels = sorted((_row_json(r, nights) for r in rows),
                         key=lambda k: (-RANK.get(k["state"], -1), -k["flips"], k["kernel"], k["dtype"]))
        platforms.append({"platform": series[0].label, "hypothesis_profile": key[1], "nights": night_json,
                          "kernels": kernels})
    return History(window, platforms, bad + bad_sets, len(runs))


def _series_key(run: Run) -> tuple[tuple[str, str], str]:
    return run.platform, str(run.env.get("hypothesis_profile"))


def _series_text(p: dict[str, Any]) -> str:
    return f"{p['platform']}, {p['hypothesis_profile']} profile"


def _changes_text(changes: list[dict[str, str]]) -> str:
    return ", ".join(f"{c['name']} {c['base']} -> {c['candidate']}" for c in changes) or "none"


def _night_text(ref: dict[str, Any]) -> str:
    return f"#{ref['night']} {ref['started'][:16].replace('T', ' ')}"


def _streak_text(s: dict[str, Any], kind: str = "bad") -> str:
    length = f"{s['nights']} night{'s' if s['nights'] > 1 else ''}{', ongoing' if s['ongoing'] else ''}"
    changes = [f"{c['name']} {c['base']} -> {c['candidate']}" for c in s["toolchain_changes"]]
    changes += s.get("code_changes") or []
    before = ("no earlier night it passed" if s["night_before"] is None else
              f"changed since it last passed ({s['night_before']['started'][:16].replace('T', ' ')}): "
              f"{', '.join(changes) or 'nothing recorded (toolchain, driver, suite, kernel modules)'}")
    return f"first {kind} {_night_text(s['first_bad'])} ({length}; {before})"


def _streaks_text(k: dict[str, Any]) -> str:
    texts = [_streak_text(s) for s in k["streaks"]]
    texts += [_streak_text(s, "intermittent") for s in k.get("intermittent_streaks") or []]
    return "; ".join(texts) or "-"


def section(h: History) -> Section:
    """The history as one report section (reports build --history, and history's own Markdown and HTML)."""
    nights = sum(len(p["nights"]) for p in h.platforms)
    notes = [f"{nights} night(s) in {len(h.platforms)} series (a platform and Hypothesis profile each), the last "
             f"{h.window} of each; a night is one run (a sharded run's files merged), in the order the runs started. "
             + LEGEND,
             "A streak is consecutive nights that failed (nights not run or failing only intermittently neither extend "
             "nor end it; intermittent failures are counted apart, in intermittent streaks of their own); a flip is a "
             "change between passing and failing. A streak's cause, either kind's: what changed (toolchain, driver, "
             "suite, the kernel's module) since the last night it passed."]
    tables = []
    for p in h.platforms:
        tables.append(Table(["kernel", "dtype", "state", "since", "timeline", "flips", "failed", "intermittent",
                             "streaks (first bad or intermittent night)"],
                            [[k["kernel"], k["dtype"], k["state"],
                              ("window start " if k["since_window_start"] else "") + _night_text(k["since"]),
                              k["timeline"], k["flips"], k["failed"], k["intermittent"],
                              _streaks_text(k)] for k in p["kernels"]],
                            f"Kernels on {_series_text(p)}", "no kernel x dtype test ran"))
        tables.append(Table(["night", "run", "files", "status", "triton", "torch", "driver", "runtime",
                             "toolchain change vs the night before"],
                            [[_night_text(n), n["run_id"], ", ".join(n["files"]), n["status"],
                              n["toolchain"]["triton"], n["toolchain"]["torch"], n["toolchain"]["driver"] or "-",
                              n["toolchain"]["runtime"] or "-", _changes_text(n["toolchain_changes"])]
                             for n in p["nights"]], f"Nights on {_series_text(p)}", folded=True))
    if h.left_out:
        tables.append(Table(["run file left out: why"], [[str(e)] for e in h.left_out], "Left out"))
    return Section("Nightly history", notes, tables)


def title(h: History) -> str:
    return f"Nightly history: {'; '.join(map(_series_text, h.platforms)) or 'no platform'} (window {h.window})"


def write(h: History, out_dir: str | Path) -> list[Path]:
    from reports.files import write_atomic
    from reports.render import html_page, markdown

    out = Path(out_dir)
    sec = [section(h)]
    texts = {"history.md": markdown(title(h), [], sec), "history.html": html_page(title(h), [], sec),
             "history.json": json.dumps(h.as_json(), indent=1) + "\n"}
    for name, text in texts.items():
        write_atomic(out / name, text)
    return [out / n for n in texts]
