"""README's report command over runs/ after a bug was fixed: a buggy run then a fixed run of one --kernel-module. The
report shows the module as its newest run tested it: the verdict is the fixed code's, and the older run of other
code is named as superseded, never counted (reports/current.py); --keep-superseded adds every version up."""

from __future__ import annotations

import json

from tests.report_helpers import cli, make_run, write

BUGGY, FIXED = "a" * 64, "b" * 64


def _run(run_id: str, started: str, sha: str, broken: bool, kernels_listed: bool = True) -> dict:
    run = make_run(run_id=run_id, started=started, kernels=(("my_rope", "fp16"), ("softmax", "fp16")))
    module = {"module": "my_rope.py", "file": "/home/me/rope/my_rope.py", "sha256": sha, "libraries": []}
    if kernels_listed:
        module["kernels"] = ["my_rope"]
    run["kernel_modules"] = [module]
    if broken:
        for c in run["cases"]:
            if c["kernel"] == "my_rope":
                c["outcome"], c["error_ratio"], c["message"] = "failed", 30.0, "out: 12 of 64 elements wrong"
        for t in run["tests"]:
            if "my_rope" in t["nodeid"]:
                t["outcome"], t["message"] = "failed", "out: 12 of 64 elements wrong"
    return run


def _runs_dir(tmp_path, kernels_listed: bool = True):
    runs = tmp_path / "runs"
    runs.mkdir()
    write(runs / "run-20261121T090000Z-cuda-sm_90-aaaaaa.json",
          _run("20261121T090000Z-cuda-sm_90-aaaaaa", "2026-11-21T09:00:00+00:00", BUGGY, True, kernels_listed))
    write(runs / "run-20261121T091500Z-cuda-sm_90-bbbbbb.json",
          _run("20261121T091500Z-cuda-sm_90-bbbbbb", "2026-11-21T09:15:00+00:00", FIXED, False, kernels_listed))
    return runs


def _verdict(out):
    return json.loads((out / "summary.json").read_text())["verdict"], (out / "report.md").read_text()


def test_the_fixed_module_s_verdict_and_the_superseded_run_named(tmp_path, capsys):
    runs = _runs_dir(tmp_path)
    code, _, err = cli(capsys, "build", *sorted(runs.glob("run-*.json")), "--out", tmp_path / "report")
    assert code == 0, err
    verdict, md = _verdict(tmp_path / "report")
    assert verdict["broken"] == []
    assert [(s["run"], s["module"], s["kernels"], s["whole_run"]) for s in verdict["superseded"]] == [
        ("20261121T090000Z-cuda-sm_90-aaaaaa", "my_rope.py", ["my_rope"], False)]
    head = md.split("## ", 2)[1]  # the first screen: the verdict
    assert "Correct: every case run passed" in head
    assert "Superseded: 1 run(s) of older code left out" in head and "aaaaaaaaaaaa" in head
    # softmax's results of the older run are still counted: its code did not change
    assert verdict["states"]["softmax"]


def test_keep_superseded_adds_every_version_up(tmp_path, capsys):
    runs = _runs_dir(tmp_path)
    code, _, err = cli(capsys, "build", *sorted(runs.glob("run-*.json")), "--out", tmp_path / "report",
                       "--keep-superseded")
    assert code == 0, err
    verdict, md = _verdict(tmp_path / "report")
    assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"]
    assert verdict["superseded"] == [] and "differs between its runs (2 versions" in md


def test_a_run_file_that_does_not_list_its_module_s_kernels_is_superseded_whole(tmp_path, capsys):
    runs = _runs_dir(tmp_path, kernels_listed=False)
    code, _, err = cli(capsys, "build", *sorted(runs.glob("run-*.json")), "--out", tmp_path / "report")
    assert code == 0, err
    verdict, _ = _verdict(tmp_path / "report")
    assert verdict["broken"] == [] and [s["whole_run"] for s in verdict["superseded"]] == [True]


def test_the_same_code_in_every_run_is_added_up(tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    for i, broken in enumerate((True, False)):
        rid = f"20261121T09{i}000Z-cuda-sm_90-cccccc"
        write(runs / f"run-{rid}.json", _run(rid, f"2026-11-21T09:{i}0:00+00:00", BUGGY, broken))
    code, _, err = cli(capsys, "build", *sorted(runs.glob("run-*.json")), "--out", tmp_path / "report")
    assert code == 0, err
    verdict, _ = _verdict(tmp_path / "report")
    assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"] and verdict["superseded"] == []
