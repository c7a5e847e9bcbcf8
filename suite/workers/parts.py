"""Long reference tests split into parts that run on different workers, covering exactly the cases of the whole.

With many workers on a GPU, a run lasts as long as its longest test: matmul's and fp8 matmul's reference tests
compile a kernel variant for nearly every case, one after another (30-35 s on an H100 from a cold cache, while the
run's other tests take a few seconds each). ``suite/test_costs.json`` says how many parts such a test is split into
(``parts``, computed from measured durations by ``python -m suite.workers.schedule``); the plugin then collects
``test_matches_reference[matmul-fp32-part1of3]`` ... ``part3of3`` in place of ``test_matches_reference[matmul-fp32]``.
The same parts are collected on every backend, so that runs on different machines name the same tests.

**The same cases.** Every part runs the test's Hypothesis search with the same settings and digest. In the
derandomized profiles (``ci``, ``validation``) that search draws the same cases in the same order in every part,
and part *i* of *k* runs the drawn cases whose position is *i* modulo *k* (the others pass untested): the parts
together run exactly the cases the whole test would. A part that finds a failing case runs every case from then
on, so that Hypothesis can shrink it. In the random profiles (``dev``, ``nightly``) each part draws its own cases
with a *k*-th of the example budget (its own seed when ``--hypothesis-seed`` is given), and the explicit examples
are dealt out by position.

**One coverage.** Which declared code paths the cases took is known only when every part has run. Each part
leaves its coverage in a directory shared by the run's workers; the part that finishes last (the one that finds
the others' files present) adds them up, searches for the paths no case took exactly as the whole test would, and
is the one that records the test's coverage. Each part leaves its paths' takers too (the case each path's crossings
rerun: suite/checks/reach.py), and the last part keeps, of every part's, the one the whole test keeps: every path any
part took is crossed, from the same case as in the whole test. A part whose siblings are not selected (``-k``) is its
own last part.

A test with a known issue on the backend is not split (its strict xfail needs every case in one test).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reports import nodeids  # how a part's id is read, by the reports too (standard library only)
from suite.session import stash

SPLIT_FUNCTIONS = ("test_matches_reference",)  # the tests that know how to run a part


class KernelDtype(tuple):
    """The ``kernel_dtype`` parameter, (spec, dtype, known_issue), and which part of the test this is."""

    part: int = 0  # zero-based
    parts: int = 1

    def __new__(cls, value: tuple, part: int = 0, parts: int = 1) -> KernelDtype:
        self = super().__new__(cls, value)
        self.part, self.parts = part, parts
        return self


def part_id(base: str, part: int, parts: int) -> str:
    """The test id of part ``part`` (zero-based) of ``parts``: ``matmul-fp32-part1of3`` (reports/nodeids.py reads it)."""
    return nodeids.part_param(base, part, parts)


def base_id(nodeid: str) -> str:
    """The whole test's node id of a part's (``...[matmul-fp32-part1of3]`` -> ``...[matmul-fp32]``)."""
    return nodeids.parse(nodeid).whole


def owns(position: int, part: int, parts: int) -> bool:
    return parts <= 1 or position % parts == part


def shared_dir(config: Any) -> Path:
    """Where the parts of this run leave their coverage: the run's in-flight journal directory under xdist (the
    controller made it and removes it), else a directory of this process."""
    journal = getattr(config, "workerinput", {}).get("suite_journal_dir")
    if journal:
        path = Path(journal) / "parts"
    else:
        state = stash.session()  # a directory of this process, kept in the session's state
        if state.parts_dir is None:
            import atexit
            import shutil

            state.parts_dir = tempfile.mkdtemp(prefix="suite-parts-")
            atexit.register(shutil.rmtree, state.parts_dir, True)
        path = Path(state.parts_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


_SELECTED_KEY = pytest.StashKey[dict]()  # base node id -> the parts this session runs


def selected_parts(config: Any, base: str) -> set[int]:
    """Which parts of the test ``base`` this session runs (after -k and -m): every worker collects the same."""
    return config.stash.get(_SELECTED_KEY, {}).get(base, set())


def note_selection(config: Any, items: list[Any]) -> None:
    """After deselection: the parts of each split test that this session runs."""
    selected: dict[str, set[int]] = {}
    for item in items:
        value = getattr(getattr(item, "callspec", None), "params", {}).get("kernel_dtype")
        if isinstance(value, KernelDtype) and value.parts > 1:
            selected.setdefault(base_id(item.nodeid), set()).add(value.part)
    config.stash[_SELECTED_KEY] = selected


@contextmanager
def _locked(path: Path):
    import fcntl

    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _file_stem(base: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", base)


def finish_part(directory: Path, base: str, part: int, selected: set[int], state: dict[str, Any]) -> list[dict] | None:
    """Leave this part's ``state``; if every selected part's is there now, return them all (this part is the last
    one to finish), else None. Each part's state is written once, under a lock, so exactly one part sees them all."""
    stem = directory / _file_stem(base)
    with _locked(stem.with_suffix(".lock")):
        mine = Path(f"{stem}.part{part}.json")
        mine.write_text(json.dumps(state))
        states = []
        for other in sorted(selected | {part}):
            path = Path(f"{stem}.part{other}.json")
            if not path.exists():
                return None
            states.append(json.loads(path.read_text()))
        for other in sorted(selected | {part}):  # the last part consumed them: a rerun in this run starts afresh
            Path(f"{stem}.part{other}.json").unlink(missing_ok=True)
        return states


def coverage_state(coverage: Any, part: int, failed: bool, tallies: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"part": part, "configs": dict(coverage.configs), "paths": dict(coverage.paths),
            "not_fitting": dict(coverage.not_fitting), "values": dict(coverage.values),
            "layouts": dict(coverage.layouts), "restrides": dict(coverage.restrides),
            "sliced16": coverage.sliced16, "plain16": coverage.plain16,
            "crossed": {p: sorted(c) for p, c in coverage.crossed.items()}, "taker": coverage.taker_state(),
            "failed": failed, "tallies": tallies or {}}


def finish(config: Any, nodeid: str, part: int, coverage: Any, failed: bool,
           tallies: dict[str, Any] | None = None) -> tuple[bool, bool, list[dict[str, Any]]]:
    """Part ``part`` of the test ``nodeid`` has run its cases: leave its coverage and ``tallies`` (what the end of
    the test judges: suite/checks/reference_loop.py's Passed); if it is the last part to finish, add the others'
    coverage into ``coverage``. (whether it is the last, whether any part that finished failed, the other parts'
    tallies where it is the last)."""
    base = base_id(nodeid)
    states = finish_part(shared_dir(config), base, part, selected_parts(config, base),
                         coverage_state(coverage, part, failed, tallies))
    if states is None:
        return False, failed, []
    return True, merge_into(coverage, states, part), [s.get("tallies") or {} for s in states if s["part"] != part]


def merge_into(coverage: Any, states: list[dict[str, Any]], part: int) -> bool:
    """Add the other parts' coverage to ``coverage`` (part ``part``'s own); whether any part failed."""
    failed = False
    for state in states:
        failed |= bool(state["failed"])
        if state["part"] == part:
            continue
        coverage.configs.update(Counter(state["configs"]))
        coverage.paths.update(Counter(state["paths"]))
        coverage.not_fitting.update(Counter(state["not_fitting"]))
        coverage.values.update(Counter(state.get("values") or {}))
        coverage.layouts.update(Counter(state.get("layouts") or {}))
        coverage.restrides.update(Counter(state.get("restrides") or {}))
        coverage.sliced16 += int(state.get("sliced16") or 0)
        coverage.plain16 += int(state.get("plain16") or 0)
        for path, crossed in (state.get("crossed") or {}).items():
            coverage.crossed.setdefault(path, set()).update(crossed)
        coverage.merge_takers(state.get("taker") or {})  # each path crossed from the whole test's taker
    return failed


