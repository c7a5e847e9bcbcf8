"""suite/schedule.py: GPU runs hand out the longest tests first."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

from suite import schedule


def test_longest_first_unknown_as_the_median() -> None:
    items = [SimpleNamespace(nodeid=n) for n in ("a", "b", "new", "c", "d")]
    schedule.order(items, {"a": 1.0, "b": 40.0, "c": 5.0, "d": 5.0})
    assert [i.nodeid for i in items] == ["b", "new", "c", "d", "a"]  # "new" costs the median, 5 s; ties keep order


def test_no_costs_keeps_collection_order(tmp_path) -> None:
    items = [SimpleNamespace(nodeid=n) for n in "xyz"]
    schedule.order(items, schedule.load(tmp_path / "missing.json"))
    assert [i.nodeid for i in items] == list("xyz")
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert schedule.load(tmp_path / "bad.json") == {}


def test_the_shipped_costs_name_collected_tests() -> None:
    """The committed durations belong to tests that exist (a renamed test would silently count as the median)."""
    costs = schedule.load()
    assert costs, "suite/test_costs.json is missing or unreadable"
    proc = subprocess.run([sys.executable, "-m", "pytest", "suite", "--co", "-q", "-p", "no:cacheprovider",
                           "--no-results"], capture_output=True, text=True, timeout=300)
    collected = {line.strip() for line in proc.stdout.splitlines() if "::" in line}
    stale = sorted(n for n in costs if n not in collected and "test_compiles_on_target" not in n)
    assert not stale, f"suite/test_costs.json names tests that no longer exist: {stale[:5]}"


def test_costs_from_a_run_file(tmp_path) -> None:
    run = {"environment": {"backend": "cuda", "arch": "sm_90"},
           "tests": [{"nodeid": "t1", "duration_s": 3.14159, "outcome": "passed"},
                     {"nodeid": "t2", "duration_s": 0.0, "outcome": "skipped"}]}
    assert schedule.costs_from_run(run) == {"t1": 3.14}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    proc = subprocess.run([sys.executable, "-m", "suite.schedule", str(tmp_path / "nope.json")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "nope.json" in proc.stderr
