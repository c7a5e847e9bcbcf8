"""suite/workers/schedule.py: GPU runs hand out the longest tests first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from suite.workers import parts, schedule
from tests.conftest import run_python


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
    proc = run_python("pytest", "suite", "--co", "-q", "-p", "no:cacheprovider", "--no-results", cwd=Path.cwd(),
                      timeout=300)
    collected = {line.strip() for line in proc.stdout.splitlines() if "::" in line}
    # A split test is whole where a known issue keeps it so (suite/workers/parts.py): here, the interpreter's bf16 ones.
    stale = sorted(n for n in costs if n not in collected and parts.base_id(n) not in collected
                   and "test_compiles_on_target" not in n)
    assert not stale, f"suite/test_costs.json names tests that no longer exist: {stale[:5]}"


def test_costs_from_a_run_file(tmp_path) -> None:
    run = {"environment": {"backend": "cuda", "arch": "sm_90"},
           "tests": [{"nodeid": "t1", "duration_s": 3.14159, "outcome": "passed"},
                     {"nodeid": "t2", "duration_s": 0.0, "outcome": "skipped"}]}
    assert schedule.costs_from_run(run) == {"t1": 3.14}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    proc = run_python("suite.workers.schedule", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "nope.json" in proc.stderr


class _Config:
    def __init__(self, workers: int) -> None:
        self.values = {"tx": [f"{workers}*popen"], "maxschedchunk": None}

    def getvalue(self, name):
        return self.values[name]

    getoption = getvalue


class _Node:
    def __init__(self, name: str) -> None:
        self.name, self.queue, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _simulate(scheduler, collection: list[str], costs: dict[str, float], workers: int,
              ready: list[float] | None = None) -> tuple[float, list[str]]:
    """Run the scheduler as xdist's controller would, each test taking its cost and worker i's collection reaching
    the controller at ready[i] (default: all at 0): (makespan, tests run)."""
    import heapq

    nodes = [_Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    ran, events, busy, now = [], [], set(), 0.0
    for i, node in enumerate(nodes):
        heapq.heappush(events, ((ready or [0.0] * workers)[i], 0, node.name, node))

    def start(node) -> None:  # a worker runs its first queued test once it knows the next one (or must stop)
        if node.name not in busy and node.queue and (len(node.queue) >= 2 or node.shutting_down):
            busy.add(node.name)
            heapq.heappush(events, (now + costs[collection[node.queue[0]]], 1, node.name, node))

    while events:
        now, kind, _, node = heapq.heappop(events)
        if kind == 0:  # its collection is in: xdist's controller calls schedule() once collection_is_completed
            scheduler.add_node_collection(node, collection)
            if scheduler.collection_is_completed:
                scheduler.schedule()
        else:
            index = node.queue.pop(0)
            ran.append(collection[index])
            busy.discard(node.name)
            scheduler.mark_test_complete(node, index, costs[collection[index]])
        for other in nodes:
            start(other)
    return now, ran


def test_no_long_test_waits_behind_another() -> None:
    """On the measured durations of a cold H100 run, xdist's own scheduler queues the second longest test behind
    the longest; the cost scheduler does not, and every test runs exactly once."""
    from xdist.scheduler import LoadScheduling

    costs = schedule.load()
    collection = sorted(costs, key=lambda n: -costs[n])  # what the workers collect: longest first
    ours, ran = _simulate(schedule.make_scheduler(_Config(16), None, costs), collection, costs, 16)
    theirs, ran_theirs = _simulate(LoadScheduling(_Config(16)), collection, costs, 16)
    assert sorted(ran) == sorted(collection) == sorted(ran_theirs)
    longest = max(costs.values())
    assert theirs >= longest + costs[collection[1]]  # the two longest, one after the other on one worker
    bound = max(longest, sum(costs.values()) / 16)  # no schedule beats the longest test, nor the even share
    assert ours < bound * 1.1, (ours, bound)


def test_few_tests_start_on_every_worker() -> None:
    costs = {f"t{i}": float(i + 1) for i in range(5)}
    collection = sorted(costs, key=lambda n: -costs[n])
    makespan, ran = _simulate(schedule.make_scheduler(_Config(8), None, costs), collection, costs, 8)
    # The first worker in starts at once, so it takes two (an xdist worker runs a test once it knows the next):
    # the longest and, behind it, the shortest; the others one each.
    assert sorted(ran) == sorted(collection) and makespan == 5.0 + 1.0


def test_workers_start_as_their_collection_comes_in() -> None:
    """Workers ready 8-10.5 s in (as on an H100, 16 importing torch at once): the first ones start at once, with the
    longest tests; xdist's scheduler waits for the last one. Every test runs once."""
    from xdist.scheduler import LoadScheduling

    costs = schedule.load()
    collection = sorted(costs, key=lambda n: -costs[n])
    ready = [8.0 + 2.5 * i / 15 for i in range(16)]
    ours, ran = _simulate(schedule.make_scheduler(_Config(16), None, costs), collection, costs, 16, ready)
    waiting, _ = _simulate(schedule.make_scheduler(_Config(16), None, costs), collection, costs, 16, [max(ready)] * 16)
    theirs, ran_theirs = _simulate(LoadScheduling(_Config(16)), collection, costs, 16, ready)
    assert sorted(ran) == sorted(collection) == sorted(ran_theirs)
    capacity = sum(max(ready) - r for r in ready) / 16  # what starting early adds, spread over the workers
    assert ours < waiting - capacity / 2, (ours, waiting, capacity)
    assert ours < theirs


def test_a_worker_that_collected_other_tests_stops_the_run() -> None:
    import pytest

    scheduler = schedule.make_scheduler(_Config(2), None, {"a": 2.0, "b": 1.0})
    first, second = _Node("gw0"), _Node("gw1")
    scheduler.add_node(first)
    scheduler.add_node(second)
    scheduler.add_node_collection(first, ["a", "b"])
    assert scheduler.collection_is_completed
    scheduler.schedule()
    assert first.queue == [0, 1] and second.queue == []  # gw1 still collecting: nothing is sent to it yet
    with pytest.raises(RuntimeError, match="gw1 collected other tests than gw0"):
        scheduler.add_node_collection(second, ["b", "a"])


def _xdist_session_with_costs(tmp_path, costs: dict[str, float]) -> subprocess.CompletedProcess:
    """Run tmp_path/test_x.py under pytest-xdist (2 workers) with the cost scheduler and these durations."""
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from suite.workers import schedule\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_xdist_make_scheduler(config, log):\n"
        f"    return schedule.make_scheduler(config, log, {costs!r})\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", "-p",
                           "no:randomly", "test_x.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(schedule.COSTS_PATH.parent.parent)})


def test_the_cost_scheduler_runs_a_real_xdist_session(tmp_path) -> None:
    """Under pytest-xdist itself: every test runs once, and the two long ones run on different workers."""
    (tmp_path / "test_x.py").write_text(
        "import os, time, pytest\n"
        "@pytest.mark.parametrize('n', range(8))\n"
        "def test_t(n):\n"
        "    time.sleep(1.0 if n < 2 else 0.05)\n"
        "    open(f'ran-{n}-' + os.environ['PYTEST_XDIST_WORKER'], 'w').close()\n")
    costs = {f"test_x.py::test_t[{n}]": (10.0 if n < 2 else 1.0) for n in range(8)}
    proc = _xdist_session_with_costs(tmp_path, costs)
    assert proc.returncode == 0 and "8 passed" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    ran = sorted(p.name for p in tmp_path.glob("ran-*"))
    assert [r.split("-")[1] for r in ran] == [str(n) for n in range(8)], ran
    assert {r.split("-")[2] for r in ran if r.split("-")[1] in "01"} == {"gw0", "gw1"}, ran


@pytest.mark.slow
def test_a_test_requeued_by_a_crash_near_the_end_runs_on_the_fresh_worker(tmp_path) -> None:
    """Planted: a worker dies (as a GPU fault ends its worker) with a test queued behind it, near the end of the run,
    while the other worker, already told to shut down, runs its last (long) test. The queued test must run on the
    worker that replaces the dead one: the one shutting down would drop it, and xdist ends with INTERNALERROR."""
    (tmp_path / "test_x.py").write_text(
        "import os, time, pytest\n"
        "@pytest.mark.parametrize('n', ['a', 'b', 'c', 'd'])\n"
        "def test_t(n):\n"
        "    if n == 'b':\n"
        "        open('started-b', 'w').close()\n"
        "        os._exit(3)  # the crash\n"
        "    if n == 'a':  # the first worker keeps it until the second has started: it cannot take b itself\n"
        "        deadline = time.time() + 60\n"
        "        while not os.path.exists('started-b') and time.time() < deadline:\n"
        "            time.sleep(0.05)\n"
        "    if n == 'd':\n"
        "        time.sleep(8)  # the other worker's last test, long enough for the replacement to start\n"
        "    open(f'ran-{n}', 'w').close()\n")
    # The first worker in gets a (longest) and, behind it, d (shortest); the second b and, behind it, c: nothing is
    # left to hand out, so both are told to shut down. b crashes: c goes back to be handed out.
    costs = {f"test_x.py::test_t[{n}]": cost for n, cost in (("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0))}
    proc = _xdist_session_with_costs(tmp_path, costs)
    out = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "INTERNALERROR" not in out, out
    assert proc.returncode == 1 and "1 failed, 3 passed" in proc.stdout, out
    assert sorted(p.name for p in tmp_path.glob("ran-*")) == ["ran-a", "ran-c", "ran-d"], out


def _nightly_run(tmp_path, name: str, tests: dict[str, float], profile: str = "nightly", unfinished=None):
    import gzip
    import json

    data = {"environment": {"backend": "cuda", "arch": "sm_90", "hypothesis_profile": profile},
            "tests": [{"nodeid": n, "duration_s": s, "outcome": "passed"} for n, s in tests.items()],
            "unfinished": [{"nodeid": n, "worker": "gw0", "began_s": 1.0, "running_s": s}
                           for n, s in (unfinished or {}).items()]}
    path = tmp_path / name
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return path


def test_nightly_durations_come_from_several_run_files_and_lower_bounds(tmp_path) -> None:
    """The nightly's durations file is written from several nightly run files (gzipped; a test's parts summed back,
    and a test in several takes its longest: b's 210 s in two parts, not the later run's 20 s whole) and --at-least
    floors for tests an interrupted run left running: those are split
    into parts of about NIGHTLY_TARGET_PART_S and start first; an interrupted run's unfinished tests count so too.
    A nightly run uses that file, a ci run the other."""
    import json
    import os

    ref = "suite/test_kernels.py::test_matches_reference"
    first = _nightly_run(tmp_path, "a.json.gz", {f"{ref}[a-fp32]": 50.0, f"{ref}[b-fp32-part1of2]": 100.0,
                                                 f"{ref}[b-fp32-part2of2]": 110.0})
    second = _nightly_run(tmp_path, "b.json.gz", {f"{ref}[a-fp32]": 70.0, f"{ref}[b-fp32]": 20.0},
                          unfinished={f"{ref}[d-fp32]": 250.0})
    out = tmp_path / "costs.json"
    env = {**os.environ, "SUITE_TEST_COSTS": str(out)}
    proc = run_python("suite.workers.schedule", "--at-least", f"{ref}[c-fp16]=300", str(first), str(second), env=env,
                      timeout=60, cwd=schedule.DEFAULT_COSTS_PATH.parent.parent)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert schedule.NIGHTLY_TARGET_PART_S == 60.0  # the parts below: a 70 s, b 210 s, c 300 s, d 250 s
    assert data["parts"] == {f"{ref}[a-fp32]": 2, f"{ref}[b-fp32]": 4, f"{ref}[c-fp16]": 5, f"{ref}[d-fp32]": 5}
    assert data["tests"][f"{ref}[a-fp32-part2of2]"] == 35.0 and data["tests"][f"{ref}[c-fp16-part1of5]"] == 60.0
    mixed = run_python("suite.workers.schedule", str(first),
                       str(_nightly_run(tmp_path, "ci.json.gz", {f"{ref}[a-fp32]": 1.0}, "ci")), env=env, timeout=60,
                       cwd=schedule.DEFAULT_COSTS_PATH.parent.parent)
    assert mixed.returncode == 2 and "different Hypothesis profiles" in mixed.stderr
    bad = run_python("suite.workers.schedule", "--at-least", "x=soon", str(first), env=env, timeout=60,
                     cwd=schedule.DEFAULT_COSTS_PATH.parent.parent)
    assert bad.returncode == 2 and "expected NODEID=SECONDS" in bad.stderr


def test_the_nightly_profile_reads_its_own_durations(monkeypatch) -> None:
    monkeypatch.delenv(schedule.COSTS_ENV, raising=False)
    assert schedule.NIGHTLY_COSTS_PATH.exists()
    assert schedule.costs_path("nightly") == schedule.NIGHTLY_COSTS_PATH
    assert schedule.costs_path("ci") == schedule.costs_path(None) == schedule.COSTS_PATH
    nightly, ci = schedule.load(profile="nightly"), schedule.load(profile="ci")
    assert nightly and ci and nightly != ci
    ref = "suite/test_kernels.py::test_matches_reference"
    assert schedule.load_parts(profile="nightly").get(f"{ref}[layernorm_backward-fp32]", 1) > 1


def test_on_the_interpreter_the_lints_run_after_the_compiles_they_repeat() -> None:
    """Handed out in collection order, a kernel's lint ran beside its target tests on the other worker and compiled the
    same configs at the same time; moved last, it reads Triton's cache. Every other test keeps its place."""
    names = ["test_compiles_on_target", "test_portability_lints", "test_compiles_on_target", "test_portability_lints",
             "test_matches_reference", "test_properties"]
    items = [SimpleNamespace(originalname=n, nodeid=f"{n}[{i}]") for i, n in enumerate(names)]
    schedule.compiles_first(items)
    assert [i.nodeid for i in items] == ["test_compiles_on_target[0]", "test_compiles_on_target[2]",
                                         "test_matches_reference[4]", "test_properties[5]",
                                         "test_portability_lints[1]", "test_portability_lints[3]"]
