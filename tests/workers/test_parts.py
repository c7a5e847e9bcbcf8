"""Split reference tests (suite/workers/parts.py): the parts together run exactly the whole test's cases, record one
coverage (the paths searched as the whole test would), and a bug in any part's cases fails that part."""

from __future__ import annotations

import json
import multiprocessing
import sys
from pathlib import Path

import pytest

from reports.correctness import kernel_dtype_of
from suite.workers import parts, schedule, timing
from tests.conftest import SuiteRun, start_suite_run

FIXTURE = "--kernel-module=tests/fixtures/split_kernels.py"
REF = "suite/test_kernels.py::test_matches_reference"


def _costs(tmp_path: Path, split: dict[str, int]) -> dict[str, str]:
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"parts": {f"{REF}[{k}]": n for k, n in split.items()}, "tests": {}}))
    return {"SUITE_TEST_COSTS": str(path)}


def _cases(data: dict) -> list[tuple]:
    return sorted((c["kernel"], c["dtype"], json.dumps(c["shape"], sort_keys=True), c["layout"], c["values"], c["seed"])
                  for c in data["cases"])


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> SuiteRun:
    """split_add's test run whole (no durations file, so no parts): what the two tests below compare their parts
    with, run once for both."""
    return start_suite_run("suite/test_kernels.py", FIXTURE, "--kernels=split_add", env={"SUITE_TEST_COSTS": ""},
                           results_dir=tmp_path_factory.mktemp("whole"))


def test_parts_run_the_whole_tests_cases_and_search_its_paths_once(run_suite, tmp_path, whole):
    assert whole.returncode == 0, whole.output[-3000:]
    split = run_suite("suite/test_kernels.py", FIXTURE, "--kernels=split_add", "-n", "2",
                      env=_costs(tmp_path, {"split_add-fp32": 3}), results_dir=tmp_path / "split")
    assert split.returncode == 0, split.output[-3000:]
    w, s = whole.run_data(), split.run_data()
    assert [t["nodeid"] for t in w["tests"]] == [f"{REF}[split_add-fp32]"]
    assert sorted(t["nodeid"] for t in s["tests"]) == [f"{REF}[split_add-fp32-part{i}of3]" for i in (1, 2, 3)]
    assert len(_cases(w)) >= 20 and _cases(s) == _cases(w)  # the same cases, each once
    # Every part ran some, on both workers' share of them; one coverage record, the whole test's.
    per_part = {t["nodeid"]: sum(1 for c in s["cases"] if c["nodeid"] == t["nodeid"]) for t in s["tests"]}
    assert all(n > 0 for n in per_part.values()), per_part
    searched = w["coverage"][0]["covered_by_search"]  # the search had work to do: the missed path, then crossings
    assert searched[0] == "tail_of_one" and "tail_of_one" not in searched[1:], searched
    assert all(":" in label for label in searched[1:] if not label.startswith(("values=", "layout=", "restride=")))
    assert s["coverage"] == w["coverage"]
    # The timeline: each test says which worker ran it and when.
    assert {t["worker"] for t in s["tests"]} <= {"gw0", "gw1"}
    assert all(0 <= t["began_s"] <= t["ended_s"] for t in s["tests"])
    assert s["timing"]["workers"]["count"] == 2 and "timeline: 2 worker(s) ready" in split.output


def test_a_part_that_ran_other_parts_cases_is_caught(run_suite, tmp_path, whole):
    """Planted: every part runs every case (the position test always true). The comparison above sees it."""
    plant = tmp_path / "plant_parts.py"
    plant.write_text("import suite.workers.parts\nsuite.workers.parts.owns = lambda position, part, parts: True\n")
    planted = run_suite("-p", "plant_parts", "suite/test_kernels.py", FIXTURE, "--kernels=split_add",
                        env={**_costs(tmp_path, {"split_add-fp32": 3}), "PYTHONPATH": str(tmp_path)},
                        results_dir=tmp_path / "planted")
    assert whole.returncode == 0 and planted.returncode == 0, planted.output[-3000:]
    assert _cases(planted.run_data()) != _cases(whole.run_data())
    # Each drawn case three times; once each, what the search ran (the missed path, its crossings: each a label of
    # covered_by_search: a case meeting several needs carries a label for each) and, where some config of the family
    # no drawn case ran, the largest case run again under those (only the last part searches and completes the
    # configs: suite/checks/reach.py; the contract probe is no case of the run). So planted = 3 * drawn + extra and
    # whole = drawn + extra, 1 <= extra <= searched + 1.
    searched = len(whole.run_data()["coverage"][0]["covered_by_search"])
    whole_n, planted_n = len(_cases(whole.run_data())), len(_cases(planted.run_data()))
    drawn = (planted_n - whole_n) // 2
    assert (planted_n - whole_n) % 2 == 0 and 1 <= whole_n - drawn <= searched + 1, (whole_n, planted_n, searched)
    assert planted.run_data()["coverage"] == [{**whole.run_data()["coverage"][0], **{
        k: v for k, v in planted.run_data()["coverage"][0].items() if k in ("configs", "paths", "value_classes",
                                                                           "layouts", "restrides")}}]  # searched once


def test_a_path_taken_only_outside_the_last_part_is_crossed():
    """The crossings (suite/checks/reach.py crossing_cases) run in the last part only: a path only another part's
    case took is crossed there, from the case the whole test would cross it from, whatever order the parts came in."""
    from kernels.spec import Case
    from suite.checks import reach
    from tests.fixtures import split_kernels

    spec = split_kernels.SPLIT_ADD
    wanted = ["layout=contiguous", "values=normal", "values=negative", "values=special"]
    far = Case("split_add", "fp32", {"N": 225}, values="special", seed=5)  # takes tail_of_one under 32
    farther = Case("split_add", "fp32", {"N": 225}, values="large", seed=9)  # the same, of the same order
    near = Case("split_add", "fp32", {"N": 300}, values="normal", seed=1)  # takes the other paths only
    cfg = {"BLOCK_SIZE": 32}
    wide = {"BLOCK_SIZE": 128, "num_warps": 4}

    def coverage(*cases):
        c = reach.Coverage(spec, "fp32", "interpret")
        for case in cases:
            c.add(case, [cfg, wide])
        return c

    whole = reach.crossing_cases(None, coverage(near, far, farther), wanted)
    assert any(label.startswith("tail_of_one:") for label, _, _ in whole), whole
    for order in ((0, 1, 2), (2, 1, 0), (1, 0, 2)):  # the last part's own case first, then the others' states
        by_part = [coverage(near), coverage(far), coverage(farther)]
        last = by_part[order[0]]
        states = [parts.coverage_state(by_part[i], i, False) for i in order]
        assert parts.merge_into(last, json.loads(json.dumps(states)), order[0]) is False
        assert reach.crossing_cases(None, last, wanted) == whole, order  # the same cases, from the same bases


def test_a_bug_fails_the_parts_whose_cases_hit_it(run_suite, tmp_path):
    whole = run_suite("suite/test_kernels.py", FIXTURE, "--kernels=split_add_wrong_tail",
                      env={"SUITE_TEST_COSTS": ""}, results_dir=tmp_path / "whole")
    split = run_suite("suite/test_kernels.py", FIXTURE, "--kernels=split_add_wrong_tail",
                      env=_costs(tmp_path, {"split_add_wrong_tail-fp32": 2}), results_dir=tmp_path / "split")
    assert whole.returncode == 1 and split.returncode == 1, split.output[-3000:]
    outcomes = {t["nodeid"]: t["outcome"] for t in split.run_data()["tests"]}
    assert "failed" in outcomes.values(), outcomes
    for t in split.run_data()["tests"]:
        if t["outcome"] == "failed":  # shrunk within the part, and its reproduction line names the part
            assert "reproduce with:" in t["message"] and "part" in t["message"], t["message"]
    failing = [c for c in split.run_data()["cases"] if c["outcome"] == "failed"]
    assert failing and all(json.loads(json.dumps(c["shape"]))["N"] % 2 == 1 for c in failing)
    assert len(split.run_data()["coverage"]) == 1  # recorded once, by the last part


def test_the_last_part_to_finish_adds_them_up(tmp_path):
    base = f"{REF}[x-fp32]"
    assert parts.finish_part(tmp_path, base, 0, {0, 1, 2}, {"part": 0}) is None
    assert parts.finish_part(tmp_path, base, 2, {0, 1, 2}, {"part": 2}) is None
    states = parts.finish_part(tmp_path, base, 1, {0, 1, 2}, {"part": 1})
    assert [s["part"] for s in states] == [0, 1, 2]
    assert parts.finish_part(tmp_path, base, 0, {0}, {"part": 0}) == [{"part": 0}]  # -k selected this part alone


def _finish(args):
    directory, part = args
    return parts.finish_part(Path(directory), "t[x-fp32]", part, set(range(8)), {"part": part}) is not None


def test_exactly_one_of_parts_finishing_at_once_is_the_last(tmp_path):
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        lasts = pool.map(_finish, [(str(tmp_path), i) for i in range(8)])
    assert sum(lasts) == 1


def test_durations_decide_the_parts():
    costs = {f"{REF}[a-fp32]": 35.0, f"{REF}[b-fp32-part1of2]": 7.0, f"{REF}[b-fp32-part2of2]": 6.0,
             f"{REF}[c-fp32]": 3.0, "suite/test_properties.py::test_properties[a-fp32]": 40.0}
    out, split = schedule.split(costs)
    assert split == {f"{REF}[a-fp32]": 3, f"{REF}[b-fp32]": 2}
    assert out[f"{REF}[a-fp32-part3of3]"] == pytest.approx(35 / 3, abs=0.01)
    assert out[f"{REF}[b-fp32-part1of2]"] == 6.5 and out[f"{REF}[c-fp32]"] == 3.0
    assert out["suite/test_properties.py::test_properties[a-fp32]"] == 40.0  # only reference tests are split
    assert schedule.split({f"{REF}[a-fp32]": 500.0})[1][f"{REF}[a-fp32]"] == schedule.MAX_PARTS


def test_the_nightly_splits_its_longest_tests_finer():
    """The nightly's matmul reference tests (1100-1400 s summed) at four parts ran 300-440 s each: its parts go to
    NIGHTLY_MAX_PARTS, and the shipped nightly durations split every test so that no part is expected past the target,
    but for those at NIGHTLY_MAX_PARTS."""
    nightly = schedule.split({f"{REF}[a-fp32]": 7 * schedule.NIGHTLY_TARGET_PART_S - 1, f"{REF}[b-fp32]": 5000.0},
                             schedule.NIGHTLY_TARGET_PART_S, schedule.NIGHTLY_MAX_PARTS)[1]
    assert nightly == {f"{REF}[a-fp32]": 7, f"{REF}[b-fp32]": schedule.NIGHTLY_MAX_PARTS}
    tests, split_into, problem = schedule.read(schedule.NIGHTLY_COSTS_PATH)
    assert problem is None and split_into[f"{REF}[matmul-fp16]"] >= 12, split_into
    over = {k: v for k, v in tests.items() if REF in k and "-part" in k and v > schedule.NIGHTLY_TARGET_PART_S
            and not k.endswith(f"of{schedule.NIGHTLY_MAX_PARTS}]")}
    assert not over, over
    whole_over = {k: v for k, v in tests.items() if REF in k and "-part" not in k and v > schedule.NIGHTLY_TARGET_PART_S}
    assert not whole_over, whole_over


def test_a_durations_file_past_the_nightly_parts_is_refused(tmp_path):
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"tests": {f"{REF}[a-fp32]": 1.0},
                                "parts": {f"{REF}[a-fp32]": schedule.NIGHTLY_MAX_PARTS + 1}}))
    tests, split_into, problem = schedule.read(path)
    assert (tests, split_into) == ({}, {}) and f"from 1 to {schedule.NIGHTLY_MAX_PARTS}" in problem, problem


def test_part_ids_name_the_kernel_and_dtype():
    assert parts.part_id("matmul-fp32", 0, 3) == "matmul-fp32-part1of3" and parts.part_id("matmul-fp32", 0, 1) == \
        "matmul-fp32"
    assert parts.base_id(f"{REF}[matmul-fp32-part2of3]") == f"{REF}[matmul-fp32]"
    assert kernel_dtype_of(f"{REF}[matmul-fp32-part2of3]") == ("matmul", "fp32")
    assert kernel_dtype_of(f"{REF}[fp8_scaled_matmul-fp8e4nv]") == ("fp8_scaled_matmul", "fp8e4nv")


def test_the_committed_durations_split_the_longest_reference_tests():
    split = schedule.load_parts()
    assert split.get(f"{REF}[matmul-fp32]", 1) > 1, split
    costs = schedule.load()
    assert f"{REF}[matmul-fp32-part1of{split[f'{REF}[matmul-fp32]']}]" in costs


def test_timeline_of_a_run():
    tests = [{"worker": "gw0", "began_s": 5.0, "ended_s": 15.0}, {"worker": "gw0", "began_s": 15.0, "ended_s": 20.0},
             {"worker": "gw1", "began_s": 6.0, "ended_s": 10.0}]
    line = timing.timeline(tests, {"gw0": 4.0, "gw1": 6.0}, 20.0)
    assert line == {"count": 2, "session_s": 20.0, "ready_s": {"first": 4.0, "median": 6.0, "last": 6.0},
                    "first_test_s": 5.0, "last_test_ended_s": 20.0, "busy": round(19 / 30, 4)}
    assert "2 worker(s) ready 4.0-6.0 s" in timing.timeline_line(line)
    assert timing.timeline([{"nodeid": "x"}], {}, 3.0) is None


def test_the_timeline_gives_the_workers_gpu_start_up():
    """What each worker's first test reported of its GPU start-up (seconds since the epoch), as seconds from the
    session's start, in the run file's timeline and on its line; checked against the run file's schema."""
    from reports import schema_check

    t0 = 1000.0
    reported = {"gw0": {"began": 1003.0, "context": 1005.5, "ended": 1007.0, "waited_s": 1.5},
                "gw1": {"began": 1003.5, "context": 1006.0, "ended": 1009.25, "waited_s": 2.0},
                "gw2": {"began": 1004.0, "ended": 1004.5, "waited_s": 0.0}}  # no context: its torch raised
    startup = timing.startup_times(reported, t0)
    assert startup == {"began_s": {"first": 3.0, "median": 3.5, "last": 4.0},
                       "context_s": {"first": 5.5, "median": 6.0, "last": 6.0},
                       "ended_s": {"first": 4.5, "median": 7.0, "last": 9.25}, "first_test_waited_s": 3.5}
    tests = [{"worker": "gw0", "began_s": 5.0, "ended_s": 15.0}]
    line = timing.timeline(tests, {"gw0": 4.0}, 20.0, startup)
    assert line["startup"] == startup
    assert "(median 4.0 s), their GPU start-up done 4.5-9.2 s, in tests" in timing.timeline_line(line)
    assert timing.startup_times({}, t0) is None and "start-up" not in timing.timeline_line(timing.timeline(tests, {}, 9.0))
    schema = json.loads((Path(__file__).parents[2] / "reports" / "schema" / "run.schema.json").read_text())
    workers = schema["properties"]["timing"]["properties"]["workers"]
    assert list(schema_check.problems(line, workers, schema)) == []
    assert list(schema_check.problems({**line, "startup": {**startup, "ended_s": 9.25}}, workers, schema))  # not a spread


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
