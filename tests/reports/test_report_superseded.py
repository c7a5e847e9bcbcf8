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


def test_a_run_file_that_does_not_list_its_module_s_kernels_supersedes_nothing_and_says_so(tmp_path, capsys):
    """Which of its results are the module's, such a file cannot say (a shipped kernel's failure would go too): its
    results stay, named as older code still counted."""
    runs = _runs_dir(tmp_path, kernels_listed=False)
    code, _, err = cli(capsys, "build", *sorted(runs.glob("run-*.json")), "--out", tmp_path / "report")
    assert code == 0, err
    verdict, md = _verdict(tmp_path / "report")
    assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"] and verdict["superseded"] == []
    (kept,) = verdict["older_code_counted"]
    assert kept["run"] == "20261121T090000Z-cuda-sm_90-aaaaaa"
    assert "my_rope fp16 test_matches_reference: this run file does not list the kernels of my_rope.py" in kept["kept"]
    assert "Older code still counted: 1 run(s)" in md.split("## ", 2)[1]


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


# Issue 61, item 10: a newer run supersedes only what its code covered: the same test of the same kernel x dtype on
# the same platform. What it never ran stays in the report, broken where it broke.

MI300 = ("AMD Instinct MI300X", "gfx942")


def _pair(tmp_path, newer: dict, older: dict | None = None) -> list:
    runs = tmp_path / "runs"
    runs.mkdir()
    older = older or _run("20261121T090000Z-cuda-sm_90-aaaaaa", "2026-11-21T09:00:00+00:00", BUGGY, True)
    write(runs / f"run-{older['run_id']}.json", older)
    write(runs / f"run-{newer['run_id']}.json", newer)
    return sorted(runs.glob("run-*.json"))


def _build(tmp_path, capsys, files) -> tuple[dict, str]:
    code, _, err = cli(capsys, "build", *files, "--out", tmp_path / "report")
    assert code == 0, err
    return _verdict(tmp_path / "report")


def _newer(**over) -> dict:
    run = _run("20261121T091500Z-cuda-sm_90-bbbbbb", "2026-11-21T09:15:00+00:00", FIXED, False)
    run.update(over)
    return run


def _drop_tests(run: dict, words: str) -> dict:
    run["tests"] = [t for t in run["tests"] if words not in t["nodeid"]]
    run["cases"] = [c for c in run["cases"] if words not in c["nodeid"]]
    run["findings"] = [f for f in run["findings"] if f"{f['kernel']}-{f['dtype']}" not in words]
    return run


def test_a_newer_run_that_never_tested_the_kernel_supersedes_nothing_of_it(tmp_path, capsys):
    newer = _drop_tests(_newer(), "[my_rope-fp16]")  # --kernels=softmax: the module loaded, my_rope not run
    verdict, md = _build(tmp_path, capsys, _pair(tmp_path, newer))
    assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"], md
    assert verdict["superseded"] == []
    assert "Correct" not in md.split("## ", 2)[1]


def test_a_newer_run_on_another_platform_supersedes_nothing_here(tmp_path, capsys):
    newer = make_run(platform=MI300, run_id="20261121T091500Z-rocm-gfx942-bbbbbb", started="2026-11-21T09:15:00+00:00",
                     kernels=(("my_rope", "fp16"), ("softmax", "fp16")))
    newer["environment"]["backend"] = "rocm"
    newer["kernel_modules"] = [{"module": "my_rope.py", "file": "/home/me/rope/my_rope.py", "sha256": FIXED,
                                "libraries": [], "kernels": ["my_rope"]}]
    verdict, _ = _build(tmp_path, capsys, _pair(tmp_path, newer))
    assert [(b["kernel"], b["platform"]) for b in verdict["broken"]] == [("my_rope", "NVIDIA H100 80GB HBM3 (sm_90)")]
    assert verdict["superseded"] == []


def test_a_newer_run_of_another_dtype_supersedes_only_that_dtype(tmp_path, capsys):
    older = _run("20261121T090000Z-cuda-sm_90-aaaaaa", "2026-11-21T09:00:00+00:00", BUGGY, True)
    for run in (older,):
        extra = make_run(kernels=(("my_rope", "fp32"),))
        run["tests"] += extra["tests"]
        run["cases"] += extra["cases"]
    newer = _newer()  # my_rope fp16 only: its fp32 failure in the older run was never tested again
    for c in older["cases"]:
        if c["kernel"] == "my_rope" and c["dtype"] == "fp32":
            c["outcome"], c["error_ratio"], c["message"] = "failed", 30.0, "out: wrong"
    for t in older["tests"]:
        if "[my_rope-fp32]" in t["nodeid"]:
            t["outcome"], t["message"] = "failed", "out: wrong"
    verdict, _ = _build(tmp_path, capsys, _pair(tmp_path, newer, older))
    assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"]
    assert verdict["broken"][0]["problems"] == {"failed cases": 3, "failed tests": 1}
    (s,) = verdict["superseded"]
    assert s["left_out"] == ["my_rope fp16 property batch_invariant", "my_rope fp16 property deterministic",
                             "my_rope fp16 test_matches_reference"]
    assert s["kept"] == ["my_rope fp32 test_matches_reference: no newer run of my_rope.py covered it on NVIDIA H100 "
                         "80GB HBM3 (sm_90)"]


def test_a_newer_run_that_checked_less_supersedes_nothing(tmp_path, capsys):
    older = _run("20261121T090000Z-cuda-sm_90-aaaaaa", "2026-11-21T09:00:00+00:00", BUGGY, True)
    older["memcheck"] = {"mode": "compute-sanitizer", "kernels": {"my_rope": {"launches": 3, "memory_ops": 0}},
                         "unchecked": {}}
    for newer, words in ((_newer(memcheck={"mode": "off", "kernels": {}, "unchecked": {}}), "memory check"),
                         (_newer(command=["pytest", "--backend=cuda", "--repro=M=4,N=8;seed=0"]), "one case")):
        d = tmp_path / words.replace(" ", "-")
        d.mkdir()
        verdict, _ = _build(d, capsys, _pair(d, newer, older))
        assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"] and verdict["superseded"] == [], words
        (kept,) = verdict["older_code_counted"]
        assert any("the newer code's runs checked less" in k and words in k for k in kept["kept"]), kept


def test_one_part_of_a_split_test_does_not_cover_the_whole_test(tmp_path, capsys):
    newer = _newer()
    for t in newer["tests"]:
        if "[my_rope-fp16]" in t["nodeid"]:
            t["nodeid"] = t["nodeid"].replace("[my_rope-fp16]", "[my_rope-fp16-part1of3]")  # -k part1of3
    verdict, _ = _build(tmp_path, capsys, _pair(tmp_path, newer))
    assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"]
    assert "my_rope fp16 test_matches_reference" not in verdict["superseded"][0]["left_out"]


def test_another_host_s_module_of_the_same_file_name_supersedes_only_its_own_kernels(tmp_path, capsys):
    newer = _newer()  # /home/you/other/my_rope.py registers another kernel; this run also tested my_rope, shipped
    newer["kernel_modules"] = [{"module": "my_rope.py", "file": "/home/you/other/my_rope.py", "sha256": FIXED,
                                "libraries": [], "kernels": ["their_rope"]}]
    verdict, _ = _build(tmp_path, capsys, _pair(tmp_path, newer))
    assert [b["kernel"] for b in verdict["broken"]] == ["my_rope"] and verdict["superseded"] == []


def test_a_broken_property_the_newer_code_never_checked_stays_the_kernel_s(tmp_path, capsys):
    """The older run's reference test is superseded, its property finding is not: still my_rope's broken property,
    not a check of the suite itself."""
    older = _run("20261121T090000Z-cuda-sm_90-aaaaaa", "2026-11-21T09:00:00+00:00", BUGGY, False)
    finding = next(f for f in older["findings"] if f["kernel"] == "my_rope")
    finding["holds"], finding["message"] = False, "two launches on the same inputs differ"
    newer = _newer()
    newer["findings"] = [f for f in newer["findings"] if f["kernel"] != "my_rope"]  # -k test_matches_reference
    verdict, _ = _build(tmp_path, capsys, _pair(tmp_path, newer, older))
    assert verdict["broken"] == [{"kernel": "my_rope", "platform": "NVIDIA H100 80GB HBM3 (sm_90)",
                                  "problems": {"broken properties": 1}}]
    assert verdict["broken_checks"] == []
