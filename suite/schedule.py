"""The order a GPU run hands tests to its workers: the longest first.

With many workers on a GPU, a run's wall time is the slowest worker's, and pytest-xdist hands tests out in
collection order. A long test collected last (a matmul compiling twenty configs) starts when the others are nearly
done, and the run waits for it alone. Sorting the tests by how long each took in a measured run (longest first) lets
the short ones fill in around the long ones.
``suite/test_costs.json`` holds those durations, taken from a run file; a test it does not list (a new kernel, a
``--kernel-module``) counts as the median. Refresh it from a cold GPU run::

    python -m suite.schedule runs/run-<...>.json

Every worker sorts its collection the same way (xdist requires one order). The interpreter keeps collection
order: these durations are a GPU's.

Sorting is not enough with xdist's own ``load`` scheduler: it hands each worker two consecutive tests to start
with, and keeps two queued on each (a worker runs a test only once it knows the next one). So the worker given the
longest test was also given the second longest, queued behind it. :func:`make_scheduler` replaces it on GPU runs
(``--dist load``, the ``-n`` default) with ``CostScheduling``: the same queues of two, but the test queued behind a
long one is the shortest left, and behind a short one the longest left. And a worker starts as soon as its own
collection reaches the controller (xdist waits for every worker's). A worker whose collection differs from the first
one's stops the run with the difference (xdist would leave it idle).

What each piece buys was measured on an H100 (evidence/gpu-speed/xdist-ab/README.md): the order, about 30 s of a
cold run; this scheduler, the order's worth once no test is split.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Any

# SUITE_TEST_COSTS: another durations file (an empty value: none, so collection order).
COSTS_ENV = "SUITE_TEST_COSTS"
DEFAULT_COSTS_PATH = Path(__file__).with_name("test_costs.json")
COSTS_PATH = Path(os.environ[COSTS_ENV]) if os.environ.get(COSTS_ENV, "").strip() else DEFAULT_COSTS_PATH


def read(path: Path | None = None) -> tuple[dict[str, float], str | None]:
    """(durations per test, what is wrong with the file or None). A file this module did not write (unreadable, not
    JSON, a duration not a finite number >= 0) gives none, so collection order, and says why: the session header
    shows it. Every process reads the same file the same way, so xdist's workers still collect alike."""
    if path is None:
        if COSTS_ENV in os.environ and not os.environ[COSTS_ENV].strip():
            return {}, f"test durations: none ({COSTS_ENV} is empty): collection order"
        path = COSTS_PATH
    where = f"{COSTS_ENV}={path}" if COSTS_ENV in os.environ else str(path)

    def bad(problem: str) -> tuple[dict, str]:
        return {}, f"test durations {where}: {problem}; not used (collection order)"

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return bad(f"cannot be read ({exc.strerror or exc})")
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested deeper than the parser goes
        return bad(f"not a JSON file of test durations ({'nested too deeply' if isinstance(exc, RecursionError) else exc})")
    if not isinstance(data, dict) or not isinstance(data.get("tests"), dict):
        return bad("expected an object with 'tests' (node id -> seconds), as python -m suite.schedule writes")
    tests: dict[str, float] = {}
    for nodeid, seconds in data["tests"].items():
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
                or seconds < 0:
            return bad(f"tests[{nodeid!r}] is {json.dumps(seconds)[:40]}; a duration is a finite number of seconds >= 0")
        tests[nodeid] = float(seconds)
    return tests, None


def load(path: Path | None = None) -> dict[str, float]:
    """Node id -> expected seconds; empty (collection order) where the file is missing or not usable (see read)."""
    return read(path)[0]


PART_ID = re.compile(r"-part\d+of\d+\]$")  # a test split into parts by earlier versions of the suite


def _median(costs: dict[str, float]) -> float:
    """What a test the durations do not list is expected to take."""
    return statistics.median(costs.values()) if costs else 0.0


def order(items: list[Any], costs: dict[str, float]) -> None:
    """Sort ``items`` in place, longest expected first (stable: equal costs keep collection order)."""
    if not costs:
        return
    default = _median(costs)
    items.sort(key=lambda item: -costs.get(item.nodeid, default))


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
    """Each test's duration in a run file (the parts of a test an older run split, added up into the whole)."""
    costs: dict[str, float] = {}
    for t in run.get("tests", []):
        d = t.get("duration_s")
        if isinstance(d, (int, float)) and math.isfinite(d) and d >= 0 and t.get("outcome") != "skipped":
            nodeid = PART_ID.sub("]", t["nodeid"])
            costs[nodeid] = round(costs.get(nodeid, 0.0) + float(d), 2)
    return costs


def _same_file(a: Path, b: Path) -> bool:
    """The same file, by path, link or hard link."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m suite.schedule RUN_FILE (a GPU run file: its tests' durations order later runs)",
              file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        run = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"{path}: cannot read a run file: {exc}", file=sys.stderr)
        return 2
    env = run.get("environment", {})
    costs = costs_from_run(run)
    if not costs:
        print(f"{path}: no test durations in it", file=sys.stderr)
        return 2
    if COSTS_ENV in os.environ and not os.environ[COSTS_ENV].strip():
        print(f"{COSTS_ENV} is empty (no durations): name the file to write, or unset it to write "
              f"{DEFAULT_COSTS_PATH}", file=sys.stderr)
        return 2
    if _same_file(COSTS_PATH, path):
        print(f"{COSTS_PATH}: is the input run file {path}; refusing to write over it (set SUITE_TEST_COSTS to "
              f"another file, or leave it unset for {Path(__file__).with_name('test_costs.json')})", file=sys.stderr)
        return 2
    from suite import results

    text = json.dumps({"source": path.name, "backend": env.get("backend"), "arch": env.get("arch"),
                       "tests": dict(sorted(costs.items(), key=lambda kv: -kv[1]))}, indent=1) + "\n"
    try:
        results.write_atomic(COSTS_PATH, text)
    except OSError as exc:
        print(f"{COSTS_PATH}: cannot write the durations: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{COSTS_PATH}: {len(costs)} test durations from {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
