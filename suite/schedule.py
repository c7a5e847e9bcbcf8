"""The order a GPU run hands tests to its workers: the longest first.

With many workers on a GPU, a run's wall time is the slowest worker's, and pytest-xdist hands tests out in
collection order. A long test collected last (a matmul compiling twenty configs) starts when the others are nearly
done, and the run waits for it alone. Sorting the tests by how long each took in a measured run (longest first) lets
the short ones fill in around the long ones. ``suite/test_costs.json`` holds those durations, taken from a run file;
a test it does not list (a new kernel, a ``--kernel-module``) counts as the median. Refresh it from a cold GPU run::

    python -m suite.schedule reports/runs/reference/run-<...>.json

Every worker sorts its collection the same way (xdist requires one order). The interpreter keeps collection
order: these durations are a GPU's.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

COSTS_PATH = Path(__file__).with_name("test_costs.json")


def load(path: Path = COSTS_PATH) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
        return {str(k): float(v) for k, v in data["tests"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # no file, or not one this module wrote: collection order


def order(items: list[Any], costs: dict[str, float]) -> None:
    """Sort ``items`` in place, longest expected first (stable: equal costs keep collection order)."""
    if not costs:
        return
    default = statistics.median(costs.values())
    items.sort(key=lambda item: -costs.get(item.nodeid, default))


def costs_from_run(run: dict) -> dict[str, float]:
    return {t["nodeid"]: round(float(t["duration_s"]), 2) for t in run.get("tests", [])
            if t.get("duration_s") is not None and t.get("outcome") != "skipped"}


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
    COSTS_PATH.write_text(json.dumps({"source": path.name, "backend": env.get("backend"), "arch": env.get("arch"),
                                      "tests": dict(sorted(costs.items(), key=lambda kv: -kv[1]))}, indent=1) + "\n")
    print(f"{COSTS_PATH}: {len(costs)} test durations from {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
