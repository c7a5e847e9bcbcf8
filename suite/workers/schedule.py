"""The order a GPU run hands tests to its workers: the longest first.

With many workers on a GPU, a run's wall time is the slowest worker's, and pytest-xdist hands tests out in
collection order. A long test collected last (a matmul compiling twenty configs) starts when the others are nearly
done, and the run waits for it alone. Sorting the tests by how long each took in a measured run (longest first) lets
the short ones fill in around the long ones. ``suite/test_costs.json`` holds those durations, taken from a run file;
a test it does not list (a new kernel, a ``--kernel-module``) counts as the median. Refresh it from a cold GPU run::

    python -m suite.workers.schedule reports/runs/reference/run-<...>.json

The nightly profile has its own, ``suite/test_costs.nightly.json``, written the same way from nightly run files
(several: the parts of a nightly run on one GPU, or whole runs: a test in several takes the longest of its durations,
since each nightly draws other cases and a test's time swings between runs: row_max fp16 ran 118 s in one two-GPU
nightly, 51-56 s in three others).

Every worker sorts its collection the same way (xdist requires one order). The interpreter keeps collection
order (these durations are a GPU's), but for the lints, moved after the compiles they repeat (``compiles_first``).

Sorting is not enough with xdist's own ``load`` scheduler: it hands each worker two consecutive tests to start
with, and keeps two queued on each (a worker runs a test only once it knows the next one). So the worker given the
longest test was also given the second longest, queued behind it: on an H100 a cold run took 82 s, its longest
test 45 s. :func:`make_scheduler` replaces it on GPU runs (``--dist load``, the ``-n`` default) with
``CostScheduling``: the same queues of two, but the test queued behind a long one is the shortest left, and behind
a short one the longest left. And a worker starts as soon as its own collection reaches the controller (xdist
waits for every worker's): 16 workers importing torch at once are ready up to 2-3 s apart. A worker whose
collection differs from the first one's stops the run with the difference (xdist would leave it idle).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from reports import nodeids  # a part's id read as the reports read it (standard library only)
from suite.session import reading

# SUITE_TEST_COSTS: another durations file (an empty value: none, so collection order and no test split).
COSTS_ENV = "SUITE_TEST_COSTS"
DEFAULT_COSTS_PATH = Path(__file__).resolve().parents[1] / "test_costs.json"
COSTS_PATH = Path(os.environ[COSTS_ENV]) if os.environ.get(COSTS_ENV, "").strip() else DEFAULT_COSTS_PATH
# The nightly profile's own durations (200 examples a test at large shapes: its tests take 10-50 times as long as the
# ci profile's, in another order). Used for runs with --hypothesis-profile=nightly when SUITE_TEST_COSTS is unset;
# written from nightly run files by the same command.
NIGHTLY_COSTS_PATH = DEFAULT_COSTS_PATH.with_name("test_costs.nightly.json")
NIGHTLY = "nightly"


def costs_path(profile: str | None = None) -> Path:
    """The durations file a run of ``profile`` uses: SUITE_TEST_COSTS, else the nightly's own (if shipped) for the
    nightly profile, else the shipped one."""
    if os.environ.get(COSTS_ENV, "").strip() or profile != NIGHTLY or not NIGHTLY_COSTS_PATH.exists():
        return COSTS_PATH
    return NIGHTLY_COSTS_PATH


# A test longer than this (summed over its parts, in the run the durations came from) is split into parts of
# about this length (suite/workers/parts.py), at most MAX_PARTS: with 32 workers on two GPUs a cold run's tests sum to
# about 17 s per worker, so no part should take much longer.
TARGET_PART_S = 12.0
MAX_PARTS = 4
# In the nightly: with 32 workers on two GPUs its tests sum to about 400 s per worker, and its longest test
# (layernorm_backward fp32 in the reference test, 469 s on an H100) held a whole run's end; parts of about this
# length fill in around each other. 60 s, not 120 s: the durations are a loaded run's, and in a two-GPU run parts of
# about 100 s (layernorm_backward bf16's four) ran 237-243 s, past the nightly's goal of no test over 120 s.
NIGHTLY_TARGET_PART_S = 60.0
# The nightly's longest tests (matmul's reference tests, 1100-1400 s summed over their parts) at four parts ran 300-440
# s each, past the 120 s target, and a whole run waited on them. Its parts may be finer: each draws its own share of
# the 200 examples, and a variant one part has compiled is a Triton cache hit for the others that need it later (the
# run's workers share the cache), so a part costs a cache load where it meets another's variant, not a compile.
# 16, not 12: on four GPUs (64 workers compiling at once) matmul fp32's twelve parts ran 115-136 s, nearly all compile;
# 24, not 16: its fifteen ran 61-121 s there (1319 s summed; evidence/nightly/whole/four-h200-f).
NIGHTLY_MAX_PARTS = 24


# The largest file of durations the suite reads (the nightly's is 20 KiB).
MOST_BYTES = 64 * 2**20


def read(path: Path | None = None, profile: str | None = None) -> tuple[dict[str, float], dict[str, int], str | None]:
    """(durations per test, parts per split test, what is wrong with the file or None). A file this module did not
    write (unreadable, not JSON, a duration not a finite number >= 0, parts not a whole number from 1 to NIGHTLY_MAX_PARTS)
    gives none of either, so collection order and no test split, and says why: the session header shows it. Every
    process reads the same file the same way, so xdist's workers still collect alike."""
    if path is None:
        if COSTS_ENV in os.environ and not os.environ[COSTS_ENV].strip():
            return {}, {}, f"test durations: none ({COSTS_ENV} is empty): collection order, no test split"
        path = costs_path(profile)
    where = f"{COSTS_ENV}={path}" if COSTS_ENV in os.environ else str(path)

    def bad(problem: str) -> tuple[dict, dict, str]:
        return {}, {}, f"test durations {where}: {problem}; not used (collection order, no test split)"

    try:
        data = json.loads(reading.read_regular(path, MOST_BYTES).decode("utf-8"))
    except reading.NotAFile as exc:  # a FIFO waited for ever, /dev/zero was read until the process was killed
        return bad(str(exc))
    except OSError as exc:
        return bad(f"cannot be read ({exc.strerror or exc})")
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested deeper than the parser goes
        return bad(f"not a JSON file of test durations ({'nested too deeply' if isinstance(exc, RecursionError) else exc})")
    if not isinstance(data, dict) or not isinstance(data.get("tests"), dict):
        return bad("expected an object with 'tests' (node id -> seconds), as python -m suite.workers.schedule writes")
    tests: dict[str, float] = {}
    for nodeid, seconds in data["tests"].items():
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
                or seconds < 0:
            return bad(f"tests[{nodeid!r}] is {json.dumps(seconds)[:40]}; a duration is a finite number of seconds >= 0")
        tests[nodeid] = float(seconds)
    split_into = data.get("parts", {})
    if not isinstance(split_into, dict):
        return bad("'parts' must be an object (node id -> number of parts)")
    parts: dict[str, int] = {}
    for nodeid, n in split_into.items():
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= NIGHTLY_MAX_PARTS:
            return bad(f"parts[{nodeid!r}] is {json.dumps(n)[:40]}; a test is split into a whole number of parts "
                       f"from 1 to {NIGHTLY_MAX_PARTS}")
        if n > 1:
            parts[nodeid] = n
    return tests, parts, None


def load(path: Path | None = None, profile: str | None = None) -> dict[str, float]:
    """Node id -> expected seconds; empty (collection order) where the file is missing or not usable (see read)."""
    return read(path, profile)[0]


def load_parts(path: Path | None = None, profile: str | None = None) -> dict[str, int]:
    """Whole test's node id -> the parts it is split into (suite/workers/parts.py); tests not listed run whole."""
    return read(path, profile)[1]


def split(costs: dict[str, float], target: float = TARGET_PART_S,
          max_parts: int = MAX_PARTS) -> tuple[dict[str, float], dict[str, int]]:
    """The durations of a run, with each splittable test's parts (however the run split it) summed back into the
    whole and split again by ``target`` seconds: (the durations per test as the next runs collect them, the parts)."""
    from suite.workers import parts

    whole: dict[str, float] = {}
    for nodeid, cost in costs.items():
        base = nodeids.parse(nodeid).whole
        whole[base] = whole.get(base, 0.0) + cost
    out: dict[str, float] = {}
    split_into: dict[str, int] = {}
    for nodeid, cost in whole.items():
        test = nodeids.parse(nodeid)
        splits = test.function in parts.SPLIT_FUNCTIONS and test.param is not None
        n = min(max_parts, max(1, math.ceil(cost / target))) if splits else 1
        if n == 1:
            out[nodeid] = round(cost, 2)
            continue
        split_into[nodeid] = n
        for part in nodeids.part_ids(nodeid, n):
            out[part] = round(cost / n, 2)
    return out, split_into


def _median(costs: dict[str, float]) -> float:
    """What a test the durations do not list is expected to take."""
    return statistics.median(costs.values()) if costs else 0.0


def order(items: list[Any], costs: dict[str, float]) -> None:
    """Sort ``items`` in place, longest expected first (stable: equal costs keep collection order)."""
    if not costs:
        return
    default = _median(costs)
    items.sort(key=lambda item: -costs.get(item.nodeid, default))


# Tests that compile only what other tests compiled already (``test_portability_lints``: the configs both vendor
# families declare, a subset of ``test_compiles_on_target``'s plan for every target). Run last, they read Triton's
# cache; handed out in collection order, the lint of a kernel ran beside that kernel's target tests on the other
# worker and compiled the same configs again at the same time (about 15 s of the interpreter run's 110 s of compiles).
AFTER_THEIR_COMPILES = ("test_portability_lints",)


def compiles_first(items: list[Any]) -> None:
    """Move the tests that repeat other tests' compiles to the end, in place (stable otherwise): for runs that keep
    collection order (the interpreter's)."""
    items.sort(key=lambda item: getattr(item, "originalname", getattr(item, "name", "")) in AFTER_THEIR_COMPILES)


def make_scheduler(config: Any, log: Any, costs: dict[str, float]) -> Any:
    """xdist's load scheduler, handing tests out by their expected durations (see the module docstring)."""
    from xdist.report import report_collection_diff
    from xdist.scheduler import LoadScheduling

    class CostScheduling(LoadScheduling):
        def __init__(self, config: Any, log: Any) -> None:
            super().__init__(config, log)
            self.median = _median(costs)  # a test longer than this is long: the one queued behind it is short

        @property
        def collection_is_completed(self) -> bool:
            # A worker starts as soon as its own collection is in, not once the last worker's is: 16 workers
            # importing torch at once finish collecting up to 2-3 s apart.
            return bool(self.node2collection)

        def add_node_collection(self, node: Any, collection: Any) -> None:
            if self.collection is not None and list(collection) != self.collection:
                first = next(iter(self.node2collection))
                raise RuntimeError(f"pytest-xdist worker {node.gateway.id} collected other tests than "
                                   f"{first.gateway.id}; every worker must collect the same tests in the same order:\n"
                                   + report_collection_diff(self.collection, list(collection), first.gateway.id,
                                                            node.gateway.id))
            self.node2collection[node] = list(collection)

        def cost(self, index: int) -> float:
            assert self.collection is not None
            return costs.get(self.collection[index], self.median)

        def schedule(self) -> None:
            assert self.collection_is_completed
            if self.collection is None:  # the first collection in: the others must match it (above)
                self.collection = next(iter(self.node2collection.values()))
                self.pending[:] = range(len(self.collection))  # _send_one picks from it by cost
            # Each call follows one worker's collection, so this fills that worker and any that had run dry. Through
            # check_schedule, which skips a worker told to shut down: a test a crash put back must not go to a worker
            # that will never run it (xdist then ends with INTERNALERROR).
            for node in self.nodes:
                self.check_schedule(node)

        def check_schedule(self, node: Any, duration: float = 0) -> None:
            if node.shutting_down or node not in self.node2collection:
                return
            if not self.pending:
                node.shutdown()
                return
            while len(self.node2pending[node]) < 2 and self.pending:
                self._send_one(node)

        def _send_one(self, node: Any) -> None:
            if not self.pending:
                return
            queue = self.node2pending[node]
            behind_long = bool(queue) and self.cost(queue[-1]) > self.median
            # By cost, not position: a crashed worker's tests go back at the end of pending, a retried one at the front.
            index = (min if behind_long else max)(self.pending, key=self.cost)
            self.pending.remove(index)
            queue.append(index)
            node.send_runtest_some([index])

    return CostScheduling(config, log)


def costs_from_run(run: dict) -> dict[str, float]:
    return {t["nodeid"]: round(float(t["duration_s"]), 2) for t in run.get("tests", [])
            if isinstance(t.get("duration_s"), (int, float)) and math.isfinite(t["duration_s"])
            and t["duration_s"] >= 0 and t.get("outcome") != "skipped"}


def _same_file(a: Path, b: Path) -> bool:
    """The same file, by path, link or hard link."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def main(argv: list[str]) -> int:
    # --at-least NODEID=SECONDS: a test an interrupted run stopped after it had run that long (its run file lists only
    # finished tests), counted as at least that.
    floors: dict[str, float] = {}
    while argv[:1] == ["--at-least"] and len(argv) >= 2:
        nodeid, _, seconds = argv[1].rpartition("=")
        try:
            floors[nodeid] = float(seconds)
        except ValueError:
            nodeid = ""
        if not nodeid or not math.isfinite(floors.get(nodeid, math.nan)) or floors[nodeid] < 0:
            print(f"--at-least {argv[1]!r}: expected NODEID=SECONDS (a finite number of seconds >= 0)", file=sys.stderr)
            return 2
        argv = argv[2:]
    if not argv:
        print("usage: python -m suite.workers.schedule [--at-least NODEID=SECONDS ...] RUN_FILE [RUN_FILE ...] (GPU run "
              "files of one Hypothesis profile: their tests' durations order later runs; a test in several takes the "
              "longest of its durations)", file=sys.stderr)
        return 2
    from suite.session import results

    costs: dict[str, float] = {}
    unfinished: dict[str, float] = {}
    profiles, env = set(), {}
    for name in argv:
        path = Path(name)
        try:
            raw = path.read_bytes()
            run = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        except (OSError, ValueError, EOFError) as exc:
            print(f"{path}: cannot read a run file: {exc}", file=sys.stderr)
            return 2
        env = run.get("environment", {}) if isinstance(run, dict) else {}
        profiles.add(env.get("hypothesis_profile"))
        found = costs_from_run(run) if isinstance(run, dict) else {}
        if not found:
            print(f"{path}: no test durations in it", file=sys.stderr)
            return 2
        whole: dict[str, float] = {}
        for nodeid, cost in found.items():  # a test's parts summed back (a later file may split it otherwise)
            base = nodeids.parse(nodeid).whole
            whole[base] = whole.get(base, 0.0) + cost
        for nodeid, cost in whole.items():  # the longest of its runs: the next nightly draws other cases
            costs[nodeid] = max(costs.get(nodeid, 0.0), cost)
        for t in run.get("unfinished") or []:  # left running by an interrupted run: at least that long
            if isinstance(t, dict) and isinstance(t.get("running_s"), (int, float)):
                base = nodeids.parse(str(t.get("nodeid"))).whole
                unfinished[base] = max(unfinished.get(base, 0.0), float(t["running_s"]))
    if len(profiles) != 1:
        print(f"the run files are of different Hypothesis profiles ({', '.join(sorted(map(str, profiles)))}); give "
              f"files of one profile", file=sys.stderr)
        return 2
    for nodeid, seconds in [*unfinished.items(), *floors.items()]:
        costs[nodeid] = max(costs.get(nodeid, 0.0), seconds)
    nightly = profiles == {NIGHTLY}
    costs, split_into = (split(costs, NIGHTLY_TARGET_PART_S, NIGHTLY_MAX_PARTS) if nightly
                         else split(costs, TARGET_PART_S, MAX_PARTS))
    if COSTS_ENV in os.environ and not os.environ[COSTS_ENV].strip():
        print(f"{COSTS_ENV} is empty (no durations): name the file to write, or unset it to write "
              f"{DEFAULT_COSTS_PATH}", file=sys.stderr)
        return 2
    target = COSTS_PATH if COSTS_ENV in os.environ or not nightly else NIGHTLY_COSTS_PATH
    if same := next((name for name in argv if _same_file(target, Path(name))), None):
        print(f"{target}: is the input run file {same}; refusing to write over it (set SUITE_TEST_COSTS to "
              f"another file, or leave it unset for {DEFAULT_COSTS_PATH})", file=sys.stderr)
        return 2
    text = json.dumps({"source": ", ".join(Path(a).name for a in argv), "backend": env.get("backend"),
                       "arch": env.get("arch"), "parts": dict(sorted(split_into.items())),
                       "tests": dict(sorted(costs.items(), key=lambda kv: -kv[1]))}, indent=1) + "\n"
    try:
        results.write_atomic(target, text)
    except OSError as exc:
        print(f"{target}: cannot write the durations: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{target}: {len(costs)} test durations from {len(argv)} run file(s); {len(split_into)} test(s) split "
          f"into parts of about {NIGHTLY_TARGET_PART_S if nightly else TARGET_PART_S:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
