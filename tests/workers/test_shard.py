"""--shard=I/N: one arch's run split over N runners, balanced by the tests' expected durations; the shards' run files
name their shard and a shared run id, and the reports read the N files of one run as one run."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reports.__main__ import main
from suite.session import options
from suite.workers import schedule, shard
from tests.conftest import made_once, run_python
from tests.report_helpers import make_run, write

ROOT = Path(__file__).resolve().parent.parent.parent
SMALL = "--kernels=vector_add,softmax"


def _collect(*args: str) -> list[str]:
    """Node ids the shipped suite collects on the interpreter (after -m's default deselection of benchmarks)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", schedule.COSTS_ENV)}
    proc = run_python("pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "--backend=interpret", "--collect-only",
                      "-q", *args, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


@pytest.fixture(scope="module")
def shipped_ids() -> list[str]:
    return _collect()


@pytest.fixture(scope="module")
def nightly_ids() -> list[str]:
    """The nightly profile collects its own parts (suite/test_costs.nightly.json)."""
    return _collect("--hypothesis-profile=nightly")


# ---- the split --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["ci", "nightly"])
@pytest.mark.parametrize("count", [2, 3, 4])
def test_the_shipped_suite_splits_into_balanced_disjoint_shards(request, profile, count):
    ids = request.getfixturevalue("nightly_ids" if profile == "nightly" else "shipped_ids")
    costs = schedule.load(profile=profile)
    assert costs and len(ids) > 100
    where = shard.assign(ids, costs, count)
    assert set(where) == set(ids) and set(where.values()) == set(range(count))
    loads = shard.loads(where, costs, count)
    mean = sum(loads) / count
    assert all(abs(load - mean) <= 0.15 * mean for load in loads), (count, loads)


def test_the_split_is_the_same_whatever_the_collection_order():
    costs = {f"t{i}": float(i % 7) for i in range(40)}
    ids = [f"t{i}" for i in range(45)]  # five unlisted: the median
    first = shard.assign(ids, costs, 3)
    assert shard.assign(list(reversed(ids)), costs, 3) == first
    assert shard.assign(ids, dict(reversed(list(costs.items()))), 3) == first
    assert shard.assign(ids, {}, 3) == {n: i % 3 for i, n in enumerate(sorted(ids))}  # no durations: by count


def test_greedy_longest_first_to_the_lightest_shard():
    costs = {"a": 10.0, "b": 6.0, "c": 5.0, "d": 4.0, "e": 1.0}
    # a -> 0; b -> 1 (6); c -> 1 (11); d -> 0 (14); e -> 1 (12)
    assert shard.assign(costs, costs, 2) == {"a": 0, "b": 1, "c": 1, "d": 0, "e": 1}


def test_the_plugin_deselects_what_is_not_in_the_shard(shipped_ids):
    halves = [_collect(f"--shard={i}/2") for i in (1, 2)]
    assert not set(halves[0]) & set(halves[1])
    assert sorted(halves[0] + halves[1]) == sorted(shipped_ids)
    where = shard.assign(shipped_ids, schedule.load(), 2)
    assert all(where[n] == 0 for n in halves[0]) and all(where[n] == 1 for n in halves[1])
    assert halves[0] == [n for n in shipped_ids if where[n] == 0]  # collection order kept


def test_the_nightly_profile_splits_by_its_own_durations(nightly_ids):
    first = _collect("--hypothesis-profile=nightly", "--shard=1/2")
    where = shard.assign(nightly_ids, schedule.load(profile="nightly"), 2)
    assert first == [n for n in nightly_ids if where[n] == 0]
    assert first != [n for n in nightly_ids if shard.assign(nightly_ids, schedule.load(), 2)[n] == 0]


# ---- the option ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "problem"), [
    ("0/2", "the part I must be from 1 to 2"), ("3/2", "the part I must be from 1 to 2"),
    ("x", "not I/N"), ("1/0", "the number of parts N must be at least 1"), ("2", "not I/N"), ("-1/2", "not I/N")])
def test_a_bad_shard_is_a_usage_error(raw, problem):
    with pytest.raises(pytest.UsageError, match=f"^--shard={raw}: {problem}"):
        options.parse_shard(raw)


def test_a_bad_shard_stops_the_run_with_exit_code_4(run_suite):
    for raw in ("3/2", "x"):
        res = run_suite("suite/test_kernels.py", "--kernels=vector_add", f"--shard={raw}")
        assert res.returncode == 4, res.output[-3000:]
        assert f"--shard={raw}: " in res.output and not res.run_files()
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "--shard=1/2", "--run-id=a b")
    assert res.returncode == 4 and "--run-id=a b: must be 1-128 letters" in res.output, res.output[-3000:]


def test_the_shared_run_id():
    assert options.shared_run_id("mine", {"GITHUB_RUN_ID": "77"}) == "mine"
    assert options.shared_run_id(None, {"GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "2"}) == "gh-77-2"
    assert options.shared_run_id(None, {"GITHUB_RUN_ID": "77"}) == "gh-77-1"
    fresh = {options.shared_run_id(None, {}) for _ in range(3)}
    assert len(fresh) == 3
    assert options.parse_run_id(" nightly-5.1_a ") == "nightly-5.1_a"
    for bad in ("-x", "a/b", "x" * 129, ""):
        with pytest.raises(pytest.UsageError, match="^--run-id="):
            options.parse_run_id(bad)


def test_suite_run_id_is_the_default_and_checked_as_strictly(monkeypatch):
    monkeypatch.delenv("SUITE_RUN_ID", raising=False)
    assert options.parse_run_id(None) is None
    monkeypatch.setenv("SUITE_RUN_ID", "night-9")
    assert options.parse_run_id(None) == "night-9" and options.parse_run_id("given") == "given"
    monkeypatch.setenv("SUITE_RUN_ID", "")
    assert options.parse_run_id(None) is None
    monkeypatch.setenv("SUITE_RUN_ID", "a b")
    with pytest.raises(pytest.UsageError, match="^SUITE_RUN_ID=a b: must be 1-128"):
        options.parse_run_id(None)


# ---- shard runs and the reports --------------------------------------------------------------------------


def _run_whole_and_shards(base: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "SUITE_RUN_ID", "GITHUB_RUN_ID")}
    procs = {}  # the three at once: independent runs, each in its own results directory
    for name, extra in (("whole", ["-n", "0"]), ("s1", ["-n", "2", "--shard=1/2", "--run-id=fleet-test"]),
                        ("s2", ["-n", "0", "--shard=2/2", "--run-id=fleet-test"])):
        procs[name] = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                                        "--backend=interpret", SMALL, f"--results-dir={base / name}", *extra], cwd=ROOT,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for proc in procs.values():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stdout[-3000:] + stderr[-2000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, list[Path]]:
    """A small kernel set run whole, and as two shards (the first under two xdist workers) of run 'fleet-test': run
    once for the three tests that read them, whichever workers run those (made_once)."""
    base = made_once(tmp_path_factory, "shard-runs", _run_whole_and_shards)
    out = {name: sorted((base / name).glob("run-*.json")) for name in ("whole", "s1", "s2")}
    assert all(len(files) == 1 for files in out.values()), out
    return out


def _data(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.slow
def test_shard_run_files_name_their_shard_and_together_hold_the_whole_run(runs):
    whole, s1, s2 = (_data(runs[k][0]) for k in ("whole", "s1", "s2"))
    assert "shard" not in whole
    assert {k: s1["shard"][k] for k in ("index", "count", "run_id")} == {"index": 1, "count": 2, "run_id": "fleet-test"}
    assert {k: s2["shard"][k] for k in ("index", "count", "run_id")} == {"index": 2, "count": 2, "run_id": "fleet-test"}
    # what they selected and what split them, alike on both (the reports refuse shards that differ)
    assert s1["shard"]["selection"] == s2["shard"]["selection"] == {
        "kernels": "vector_add,softmax", "keyword": None, "markexpr": "not perf",
        "hypothesis_profile": "ci", "kernel_modules": []}
    assert s1["shard"]["split_by"] == s2["shard"]["split_by"] and s1["shard"]["split_by"]["tests_listed"] > 100
    one, two = ({t["nodeid"] for t in d["tests"]} for d in (s1, s2))
    assert one and two and not one & two
    assert one | two == {t["nodeid"] for t in whole["tests"]}
    assert len(s1["tests"]) + len(s2["tests"]) == len(whole["tests"])


def _comparable(summary: dict) -> dict:
    """A report's summary less what differs between any two runs: the runs' ids, hosts, clocks and durations."""
    out = copy.deepcopy(summary)
    run_id = out.pop("runs")[0]["run_id"]
    for key in ("title", "warnings"):
        out.pop(key)
    return json.loads(json.dumps(out).replace(json.dumps(run_id), '"RUN"'))


@pytest.mark.slow
def test_a_report_from_two_shards_equals_the_one_from_the_whole_run(runs, tmp_path, capsys):
    assert main(["build", *map(str, runs["s1"] + runs["s2"]), "--out", str(tmp_path / "sharded")]) == 0
    assert main(["build", str(runs["whole"][0]), "--out", str(tmp_path / "whole")]) == 0
    capsys.readouterr()
    sharded, whole = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("sharded", "whole"))
    assert sharded["correctness"] and sharded["compiles"]
    assert _comparable(sharded) == _comparable(whole)
    assert len(sharded["runs"]) == len(whole["runs"]) == 1
    assert sharded["runs"][0]["run_id"] == "fleet-test"
    assert sharded["runs"][0]["file"] == f"{runs['s1'][0].name}, {runs['s2'][0].name}"
    sharded_md, whole_md = ((tmp_path / d / "report.md").read_text() for d in ("sharded", "whole"))
    assert "## Correctness" in sharded_md
    assert _without_runs(sharded_md, "fleet-test") == _without_runs(whole_md, whole["runs"][0]["run_id"])


def _without_runs(md: str, run_id: str) -> list[str]:
    """report.md's lines less its Runs section (ids, files, hosts, clocks), with the run id made neutral, sorted: a
    list of tests follows the run file's order, the order the tests ended in (the shards' one after the other), and
    a table's column widths follow its longest cell (the run id)."""
    head, _, rest = md.partition("\n## Runs\n")
    text = (head + rest[rest.index("\n## "):]).replace(run_id, "RUN")
    return sorted(re.sub(r"-{3,}", "---", re.sub(r" +", " ", line)) for line in text.splitlines())  # table widths


@pytest.mark.slow
def test_compare_reads_a_sharded_run_as_one_run(runs, capsys):
    code = main(["compare", *map(str, runs["s1"] + runs["s2"]), str(runs["whole"][0]), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out["verdict"]
    assert out["base"]["run_id"] == "fleet-test"


# ---- sets of shards the reports refuse -----------------------------------------------------------------------


def _shard(tmp_path: Path, name: str, index: int, count: int, run_id: str = "night-7", **over) -> Path:
    data = make_run(run_id=f"{name}-own", kernels=(("softmax", "fp16"),) if index == 1 else (("matmul", "bf16"),))
    data["shard"] = {"index": index, "count": count, "run_id": run_id}
    data["environment"].update(over)
    return write(tmp_path / f"{name}.json", data)


@pytest.mark.parametrize("command", ["build", "compare"])
def test_a_shard_missing_or_repeated_is_refused_naming_it(tmp_path, capsys, command):
    a, b, b_again = (_shard(tmp_path, "a", 1, 3), _shard(tmp_path, "b", 2, 3), _shard(tmp_path, "b2", 2, 3))
    out = ["--out", str(tmp_path / "report")] if command == "build" else []
    other = [str(write(tmp_path / "other.json", make_run(run_id="other")))] if command == "compare" else []
    assert main([command, str(a), str(b), *other, *out]) == 2
    err = capsys.readouterr().err
    assert "run night-7 (cuda sm_90): shard 3/3 missing (given: 1/3 (a.json), 2/3 (b.json))" in err
    assert main([command, str(a), str(b), str(b_again), *other, *out]) == 2
    err = capsys.readouterr().err
    assert f"run night-7 (cuda sm_90): shard 2/3 is given more than once ({b}, {b_again})" in err
    assert main([command, str(a), str(_shard(tmp_path, "c", 2, 2)), *other, *out]) == 2
    assert "disagree on the number of shards (a.json says 1/3, c.json says 2/2)" in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


SELECTION = {"kernels": None, "keyword": None, "markexpr": "not perf", "hypothesis_profile": "ci",
             "kernel_modules": []}
SPLIT_BY = {"durations": "sha256:0123456789abcdef", "tests_listed": 250}


@pytest.mark.parametrize("command", ["build", "compare"])
@pytest.mark.parametrize(("part", "field", "other", "said"), [
    ("selection", "kernels", "softmax", "--kernels differs: a.json (shard 1/2): none; b.json (shard 2/2): softmax"),
    ("split_by", "durations", None, "split by other test durations (a runner without the durations file, or another "
                                    "one, splits otherwise), so their parts are not one run (a test may have run on "
                                    "two shards or on none): test durations differs: a.json (shard 1/2): "
                                    "sha256:0123456789abcdef; b.json (shard 2/2): none")])
def test_shards_that_selected_or_split_otherwise_are_refused_naming_the_difference(tmp_path, capsys, command, part,
                                                                                  field, other, said):
    """Two shards of one --run-id with different --kernels, or one runner without the durations file: their parts
    are not one run's, and merged they made a complete, all-green report of tests that ran on no shard."""
    a, b = _shard(tmp_path, "a", 1, 2), _shard(tmp_path, "b", 2, 2)
    for path, changed in ((a, False), (b, True)):
        data = json.loads(path.read_text())
        data["shard"].update(selection=dict(SELECTION), split_by=dict(SPLIT_BY))
        if changed:
            data["shard"][part][field] = other
        write(path, data)
    out = ["--out", str(tmp_path / "report")] if command == "build" else []
    others = [str(write(tmp_path / "other.json", make_run(run_id="other")))] if command == "compare" else []
    assert main([command, str(a), str(b), *others, *out]) == 2
    err = capsys.readouterr().err
    assert "run night-7 (cuda sm_90): its shards " in err and said in err, err
    assert "rerun the shards with one selection and the same durations file" in err


def test_a_shard_records_its_selection_and_what_split_it():
    opts = options.Options(backend="interpret", results_dir=Path("runs"), write_results=True, repro=None, config=None,
                           kernel_modules=("my_rope.py",), kernels=("my_rope", "softmax"), known_issues=Path("k"),
                           retune=None, autotune_dir=None, case_timeout=1.0, case_timeout_given=False,
                           hypothesis_db=None)
    modules = [{"module": "/home/me/my_rope.py", "sha256": "ab" * 32, "file": None, "libraries": []}]
    assert shard.selection(opts, "fp16", "", "ci", modules) == {
        "kernels": "my_rope,softmax", "keyword": "fp16", "markexpr": None, "hypothesis_profile": "ci",
        "kernel_modules": [f"my_rope.py {'ab' * 32}"]}
    costs = {"t1": 1.0, "t2": 2.0}
    assert shard.split_by(costs) == shard.split_by(dict(reversed(costs.items())))
    assert shard.split_by(costs)["tests_listed"] == 2 and shard.split_by(costs)["durations"].startswith("sha256:")
    assert shard.split_by({}) == {"durations": None, "tests_listed": 0}


def test_build_leaves_a_run_a_shard_short_out_and_reports_the_others(tmp_path, capsys):
    """A runner that died before uploading must not cost the night its report: the incomplete run is left out and
    named (exit 2, as for an unreadable file), the other runs are reported."""
    other = write(tmp_path / "other.json", make_run(run_id="mi300x-night", platform=("AMD MI300X", "gfx942")))
    assert main(["build", str(_shard(tmp_path, "a", 1, 2)), str(other), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "error: run night-7 (cuda sm_90): shard 2/2 missing (given: 1/2 (a.json))" in err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert [r["run_id"] for r in summary["runs"]] == ["mi300x-night"]
    assert "shard 2/2 missing" in (tmp_path / "r" / "report.md").read_text()


def test_shards_of_other_archs_with_the_same_run_id_are_other_runs(tmp_path, capsys):
    files = [_shard(tmp_path, "h1", 1, 2), _shard(tmp_path, "h2", 2, 2),
             _shard(tmp_path, "m1", 1, 1, backend="rocm", arch="gfx942", device_name="MI300X")]
    assert main(["build", *map(str, files), "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert len(summary["runs"]) == 2


def test_a_split_tests_coverage_from_two_shards_is_one_record(tmp_path, capsys):
    """matmul's parts on different shards each record their own cases' coverage: the merged run holds one record."""
    from reports.loading import load_runs
    from reports.shards import merge_shards

    files = []
    for index, (paths, unexercised) in enumerate((({"tail": 3, "full": 0}, ["full", "split_k"]),
                                                  ({"tail": 1, "full": 2}, ["split_k"])), start=1):
        data = json.loads(_shard(tmp_path, f"p{index}", index, 2).read_text())
        data["coverage"] = [{"kernel": "matmul", "dtype": "bf16", "configs": {"{}": 2}, "paths": paths,
                             "unexercised": unexercised, "covered_by_search": ["edge"] if index == 2 else []}]
        files.append(write(tmp_path / f"p{index}.json", data))
    (run,) = merge_shards(load_runs(files))
    assert run.data["coverage"] == [{"kernel": "matmul", "dtype": "bf16", "configs": {"{}": 4},
                                     "paths": {"tail": 4, "full": 2}, "unexercised": ["split_k"],
                                     "covered_by_search": ["edge"]}]
    assert [t["nodeid"].split("[")[1] for t in run.data["tests"]] == ["softmax-fp16]", "matmul-bf16]"]


def test_a_shard_dealt_no_test_leaves_an_empty_run_file_and_exits_0(run_suite, tmp_path, capsys):
    """vector_add's three reference tests over four shards: the fourth gets none. Its run file still completes the
    set (the reports would refuse the run without it), and a runner with nothing to do has not failed."""
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "--shard=4/4", "--run-id=r4", "-p", "no:randomly")
    assert res.returncode == 0, res.output[-3000:]
    data = res.run_data()
    assert data["tests"] == [] and data["status"] == "complete"
    assert {k: data["shard"][k] for k in ("index", "count", "run_id")} == {"index": 4, "count": 4, "run_id": "r4"}
    others = [_shard(tmp_path, f"o{i}", i, 4, run_id="r4", backend="interpret", arch="interpreter") for i in (1, 2, 3)]
    for path in others:  # the other runners selected alike, split by the same durations and started with it
        other = json.loads(path.read_text())
        other["shard"].update(selection=data["shard"]["selection"], split_by=data["shard"]["split_by"])
        other["started"] = data["started"]
        write(path, other)
    assert main(["build", *map(str, others), str(res.run_files()[0]), "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "nothing_matches", "--run-id=r5",
                    results_dir=tmp_path / "unsharded")
    # unsharded: a -k that selects nothing is the run's mistake, a usage error (it was pytest's 'no tests ran')
    assert res.returncode == 4 and not res.run_files(), res.output[-3000:]


def test_the_merged_run_sums_the_shards_counts(tmp_path):
    from reports.loading import load_runs
    from reports.shards import merge_shards

    files = []
    for index in (1, 2):
        data = json.loads(_shard(tmp_path, f"c{index}", index, 2).read_text())
        data["gpu_share"] = {"workers": 16, "oom_retried": index, "oom_retried_passed": 1, "oom_held": 0,
                             "too_large": 1, "too_large_cases": [{"kernel": f"k{index}", "dtype": "fp32", "case": "c",
                                                                  "footprint_gib": 90.0, "message": "m", "repro": ""}]}
        data["memcheck"] = {"mode": "interpreter", "unchecked": {},
                            "kernels": {f"k{index}": {"launches": 2, "memory_ops": 5},
                                        "both": {"launches": 1, "memory_ops": 3}}}
        files.append(write(tmp_path / f"c{index}.json", data))
    (run,) = merge_shards(load_runs(files))
    share = run.data["gpu_share"]
    assert (share["workers"], share["oom_retried"], share["too_large"]) == (32, 3, 2)
    assert [c["kernel"] for c in share["too_large_cases"]] == ["k1", "k2"]
    assert run.data["memcheck"]["kernels"] == {"k1": {"launches": 2, "memory_ops": 5},
                                               "k2": {"launches": 2, "memory_ops": 5},
                                               "both": {"launches": 2, "memory_ops": 6}}
    assert run.data["autotune"]["hits"] == 10 and len(run.data["autotune"]["entries"]) == 2


# ---- shards outside CI: run by hand, without --run-id -------------------------------------------------------


@pytest.mark.parametrize("command", ["build", "compare"])
def test_shards_under_different_run_ids_say_so_and_merge_on_request(tmp_path, capsys, command):
    """--shard=1/2 and --shard=2/2 without --run-id each get a random run id: both files named, the reports said
    'shard 2/2 missing ... name every shard's run file'. They say what is wrong and how to fix it, and
    --merge-shards merges them."""
    a, b = _shard(tmp_path, "a", 1, 2, run_id="5f0c"), _shard(tmp_path, "b", 2, 2, run_id="9e1d")
    out = ["--out", str(tmp_path / "report")] if command == "build" else []
    other = [str(write(tmp_path / "other.json", make_run(run_id="other")))] if command == "compare" else []
    assert main([command, str(a), str(b), *other, *out]) == 2
    err = capsys.readouterr().err
    assert ("cuda sm_90: the shard files given have 2 different run ids (1/2 (a.json) run id 5f0c, 2/2 (b.json) run "
            "id 9e1d): shards run without --run-id each get a random one, so they are not one run; rerun every shard "
            "with the same --run-id=ID (or SUITE_RUN_ID), or merge these files as one run with --merge-shards") in err
    assert "missing" not in err and err.count("different run ids") == 1, err
    code = main([command, str(a), str(b), *other, *out, "--merge-shards"])
    captured = capsys.readouterr()
    if command == "build":
        assert code == 0, captured.err
        summary = json.loads((tmp_path / "report" / "summary.json").read_text())
        assert [r["run_id"] for r in summary["runs"]] == ["5f0c+9e1d"]
        assert any("merged as one run on request (--merge-shards)" in w for w in summary["warnings"])
    else:
        assert code in (0, 1) and "5f0c+9e1d" in captured.out, captured.err


def test_a_shard_s_own_verdict_names_the_shard_and_claims_only_what_it_ran():
    from suite.plugin import glance

    data = make_run(kernels=(("my_rope", "fp16"),))
    data["shard"] = {"index": 1, "count": 2, "run_id": "5f0c"}
    text = "\n".join(glance.verdict_lines(data, "runs/run.json", width=120))
    assert "VERDICT: PASSED: shard 1/2 of run 5f0c: 1 of 1 test passed" in text, text
    assert "this shard's tests of my_rope[fp16]" in text and "every test of" not in text, text
    del data["shard"]
    assert "every test of my_rope[fp16]" in "\n".join(glance.verdict_lines(data, "runs/run.json", width=120))


def test_a_shard_with_a_random_run_id_says_how_to_merge_it():
    assert "give every shard the same --run-id=ID" in shard.run_id_note(None, {})
    assert shard.run_id_note("night-7", {}) == "" and shard.run_id_note(None, {"GITHUB_RUN_ID": "123"}) == ""


# Issue 61, item 18: a shard of another night under the same run id (a --run-id given by hand and reused) is not one
# run's: its set is refused, naming what tells them apart, not merged into a night that lost that shard.


def _night_shard(tmp_path: Path, name: str, index: int, started: str, broken: bool = False, **shard) -> Path:
    data = make_run(run_id=f"{name}-own", started=started,
                    kernels=(("softmax", "fp16"),) if index == 1 else (("matmul", "bf16"),))
    data["shard"] = {"index": index, "count": 2, "run_id": "nightly", **shard}
    if broken:
        data["tests"][0]["outcome"] = "failed"
    return write(tmp_path / f"{name}.json", data)


def test_a_shard_from_another_night_under_the_same_run_id_is_refused(tmp_path, capsys):
    yesterday = _night_shard(tmp_path, "yesterday-1", 1, "2026-11-21T02:00:00+00:00")
    tonight = _night_shard(tmp_path, "tonight-2", 2, "2026-11-22T02:05:00+00:00")
    assert main(["build", str(yesterday), str(tonight), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert ("run nightly (cuda sm_90): its shards started 24.1 h apart (1/2 yesterday-1.json at 2026-11-21T02:00:00+00:00, "
            "2/2 tonight-2.json at 2026-11-22T02:05:00+00:00; the shards of one run start within 12 h)") in err, err
    assert not (tmp_path / "report").exists()
    assert main(["build", str(yesterday), str(tonight), "--out", str(tmp_path / "report"), "--merge-shards"]) == 0
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert any("started 24.1 h apart" in w and "merged as one run on request" in w for w in summary["warnings"])


def test_shards_of_other_ci_runs_under_the_same_run_id_are_refused(tmp_path, capsys):
    one = _night_shard(tmp_path, "a", 1, "2026-11-22T02:00:00+00:00", ci_run="github 9001 attempt 1")
    two = _night_shard(tmp_path, "b", 2, "2026-11-22T02:10:00+00:00", ci_run="github 9002 attempt 1")
    assert main(["compare", str(one), str(two), str(write(tmp_path / "other.json", make_run(run_id="other")))]) == 2
    err = capsys.readouterr().err
    assert ("run nightly (cuda sm_90): its shards come from different CI runs (1/2 a.json: github 9001 attempt 1, "
            "2/2 b.json: github 9002 attempt 1)") in err, err


def test_a_shard_records_the_ci_run_it_came_from():
    assert shard.ci_run({"GITHUB_RUN_ID": "9001", "GITHUB_RUN_ATTEMPT": "2"}) == "github 9001 attempt 2"
    assert shard.ci_run({"CI_PIPELINE_ID": "77"}) == "gitlab 77"
    assert shard.ci_run({}) is None


def test_the_run_file_names_the_ci_run_of_its_shard(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", "--hypothesis-profile=dev",
                    "--run-id=nightly", env={"GITHUB_RUN_ID": "9001", "GITHUB_RUN_ATTEMPT": "1"})
    assert run.returncode == 0, run.output[-3000:]
    assert run.run_data()["shard"]["ci_run"] == "github 9001 attempt 1"


def test_shards_of_other_suite_versions_under_the_same_run_id_are_refused(tmp_path, capsys):
    paths = [_night_shard(tmp_path, "a", 1, "2026-11-22T02:00:00+00:00"),
             _night_shard(tmp_path, "b", 2, "2026-11-22T02:10:00+00:00")]
    for path, version in zip(paths, ("0.3.0", "0.4.0"), strict=True):
        data = json.loads(path.read_text())
        data["environment"]["suite"] = version
        write(path, data)
    assert main(["build", *map(str, paths), "--out", str(tmp_path / "report")]) == 2
    assert "its shards ran different versions of the suite (1/2 a.json: 0.3.0, 2/2 b.json: 0.4.0)" \
        in capsys.readouterr().err
