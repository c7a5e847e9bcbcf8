"""Issue 31 ("Trust, round two") for the reports, and issue 33 (toolchain validation): noise-floor files checked
before use (structure, plausibility, arch and device) by compare and by the suite; outputs written only as regular
files and never over a replay input; tests that no longer run are regressions; replay that compared nothing fails;
compare --json always prints JSON; and compare names toolchain and compile-matrix changes. Synthetic run files
(tests/report_helpers.py)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from reports import files, floor_file, noise
from reports.loading import load_runs
from tests.report_helpers import cli, evidence, make_run, perf_run, write

A, B = "20261121T010000Z-cuda-sm_90-aaaaaa", "20261121T020000Z-cuda-sm_90-bbbbbb"


def learned_floor(tmp_path: Path, **over) -> dict:
    """A noise-floor file's content learned from three A/A runs of the synthetic H100, with `over` applied."""
    runs = load_runs([write(tmp_path / f"aa{i}.json", perf_run(f"2026112{i}T000000Z-cuda-sm_90-a{i}", i))
                      for i in (1, 2, 3)])
    return {**noise.learn(runs), **over}


def slowdown_pair(tmp_path: Path, base: dict | None = None, cand: dict | None = None) -> list[Path]:
    """A real 25% softmax slowdown."""
    return [write(tmp_path / "base.json", base or perf_run(A, 1)),
            write(tmp_path / "cand.json", cand or perf_run(B, 2, kernel_factor={"softmax": 1.25}))]


# --- item 3 and 12: noise-floor files -----------------------------------------------------------------------------


def test_a_plausible_floor_file_of_the_same_hardware_still_finds_the_slowdown(tmp_path, capsys):
    floor = write(tmp_path / "sm_90.json", learned_floor(tmp_path))
    code, out, err = cli(capsys, "compare", *slowdown_pair(tmp_path), "--noise-floor", floor)
    assert code == 1 and "speed regression(s) (softmax)" in out, err


@pytest.mark.parametrize(("field", "value", "words"), [
    ("arch", "gfx942", "learned on arch 'gfx942', not 'sm_90'"),
    ("device_name", "NVIDIA H200", "learned on device_name 'NVIDIA H200', not 'NVIDIA H100 80GB HBM3'"),
])
def test_compare_refuses_a_floor_file_of_other_hardware(tmp_path, capsys, field, value, words):
    floor = write(tmp_path / "other.json", learned_floor(tmp_path, **{field: value}))
    code, out, err = cli(capsys, "compare", *slowdown_pair(tmp_path), "--noise-floor", floor)
    assert code == 2 and str(floor) in err and words in err and out == "", err


def _with_benchmark_floor(data: dict, value) -> tuple[dict, str]:
    key = next(k for k in data["benchmarks"] if k.startswith("softmax|"))
    data["benchmarks"][key]["floor"] = value
    return data, key


@pytest.mark.parametrize("value", [0.4, 1e300, -0.01, "0.03"])
def test_compare_refuses_implausible_floors_naming_file_and_benchmark(tmp_path, capsys, value):
    """With a 40% or 1e300 floor the 25% slowdown used to be 'No regressions'."""
    data, key = _with_benchmark_floor(learned_floor(tmp_path), value)
    floor = write(tmp_path / "sm_90.json", data)
    code, out, err = cli(capsys, "compare", *slowdown_pair(tmp_path), "--noise-floor", floor)
    assert code == 2 and "No regressions" not in out, out
    assert f"{floor}: unusable noise-floor file: benchmark {key!r} has floor {value!r}" in err


@pytest.mark.parametrize(("over", "words"), [
    ({"default": "0.03"}, "'default' floor is '0.03'"),
    ({"platform": 0.5}, "'platform' floor is 0.5"),
    ({"benchmarks": {"softmax|fp16|{\"M\": 1}": 0.03}}, "benchmark 'softmax|fp16|{\"M\": 1}' is 0.03, expected an object"),
    ({"benchmarks": [0.03]}, "'benchmarks' is list"),
    ({"learned_from": 6}, "'learned_from' is 6"),
    ({"arch": None}, "'arch' is None, expected a string"),
])
def test_malformed_floor_files_are_refused_naming_the_entry(tmp_path, capsys, over, words):
    floor = write(tmp_path / "sm_90.json", learned_floor(tmp_path, **over))
    code, _, err = cli(capsys, "compare", *slowdown_pair(tmp_path), "--noise-floor", floor)
    assert code == 2 and f"{floor}: unusable noise-floor file: {words}" in err, err


def test_implausible_floors_recorded_in_a_run_file_are_refused(tmp_path, capsys):
    cand = perf_run(B, 2, kernel_factor={"softmax": 1.25})
    for b in cand["benchmarks"]:
        b["noise_floor"] = 0.4 if b["kernel"] == "softmax" else 0.02
    paths = slowdown_pair(tmp_path, cand=cand)
    code, out, err = cli(capsys, "compare", *paths)
    assert code == 2 and f"{paths[1]}: refusing its recorded noise floors: benchmark 'softmax|fp16|" in err
    assert "has floor 0.4" in err and "--no-noise-floor" in err and "No regressions" not in out
    assert cli(capsys, "compare", *paths, "--no-noise-floor")[0] == 1


def test_floors_recorded_from_another_devices_file_are_refused(tmp_path, capsys):
    runs = [perf_run(A, 1), perf_run(B, 2, kernel_factor={"softmax": 1.25})]
    for run in runs:
        run["ceilings"]["noise_floor"] = {"file": "reports/noise/sm_90.json", "device_name": "NVIDIA H200",
                                          "platform": 0.002, "default": 0.03}
    code, _, err = cli(capsys, "compare", *slowdown_pair(tmp_path, *runs))
    assert code == 2 and "learned on 'NVIDIA H200', not 'NVIDIA H100 80GB HBM3'" in err


def test_noise_floor_refuses_to_write_floors_too_large_to_use(tmp_path, capsys):
    runs = [write(tmp_path / f"aa{i}.json", perf_run(f"2026112{i}T000000Z-cuda-sm_90-a{i}", i,
                                                      kernel_factor={"gelu": 1.3 if i % 2 else 1.0}))
            for i in (1, 2, 3)]
    out = tmp_path / "sm_90.json"
    code, _, err = cli(capsys, "noise-floor", *runs, "--out", out)
    assert code == 2 and f"refusing to write {out}: benchmark 'gelu|fp16|" in err and not out.exists()


@pytest.fixture
def suite_bench(monkeypatch, tmp_path):
    bench = pytest.importorskip("suite.tools.bench")
    monkeypatch.setattr(bench, "NOISE_DIR", tmp_path / "noise")
    monkeypatch.delenv(bench.FLOOR_VARIABLE, raising=False)
    return bench


@pytest.mark.parametrize(("over", "words"), [
    ({"default": "0.03"}, "'default' floor is '0.03'"),
    ({"benchmarks": {"softmax|fp16|{}": 0.4}}, "benchmark 'softmax|fp16|{}' is 0.4"),
    ({"benchmarks": {"softmax|fp16|{}": {"floor": 1e300}}}, "has floor 1e+300"),
    ({"device_name": "NVIDIA H200"}, "learned on device_name 'NVIDIA H200'"),
    ({"arch": "sm_80"}, "learned on arch 'sm_80'"),
])
def test_suite_refuses_a_chosen_floor_file_before_any_benchmark(suite_bench, monkeypatch, tmp_path, over, words):
    floor = write(tmp_path / "floor.json", learned_floor(tmp_path, **over))
    monkeypatch.setenv(suite_bench.FLOOR_VARIABLE, str(floor))
    with pytest.raises(ValueError) as info:
        suite_bench.noise_floor("sm_90", "NVIDIA H100 80GB HBM3")
    assert str(info.value).startswith(f"SUITE_NOISE_FLOOR: {floor}: ") and words in str(info.value)


def test_suite_leaves_out_the_arch_file_of_another_device_and_reads_its_own(suite_bench, tmp_path):
    (tmp_path / "noise").mkdir()
    write(tmp_path / "noise" / "sm_90.json", learned_floor(tmp_path))
    entries, note = suite_bench.noise_floor("sm_90", "NVIDIA H200")
    assert entries == {} and note["file"] is None and "learned on device_name 'NVIDIA H100 80GB HBM3'" in note["note"]
    entries, note = suite_bench.noise_floor("sm_90", "NVIDIA H100 80GB HBM3")
    assert entries["*"]["floor"] > 0 and note["device_name"] == "NVIDIA H100 80GB HBM3"


def test_suite_on_the_interpreter_checks_no_floor_file(suite_bench, monkeypatch, tmp_path):
    """Benchmarks skip on the interpreter: a floor file chosen for the GPU runs of the same script is no error."""
    monkeypatch.setenv(suite_bench.FLOOR_VARIABLE, str(write(tmp_path / "sm_90.json", learned_floor(tmp_path))))
    assert suite_bench.noise_floor("interpreter", "Triton CPU interpreter")[0] == {}


def test_suite_refuses_a_missing_chosen_file(suite_bench, monkeypatch, tmp_path):
    monkeypatch.setenv(suite_bench.FLOOR_VARIABLE, str(tmp_path / "absent.json"))
    with pytest.raises(ValueError, match="absent.json: cannot read the noise-floor file"):
        suite_bench.noise_floor("sm_90", "NVIDIA H100 80GB HBM3")


# --- items 4 and 5: outputs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--out", "--json"])
def test_replay_never_writes_over_a_run_file_it_reads(tmp_path, capsys, flag):
    directory = evidence(tmp_path / "ev")
    target = next((directory / "aa-2").glob("run-*.json"))
    before = target.read_bytes()
    code, out, err = cli(capsys, "replay", directory, flag, target)
    assert code == 2 and f"refusing to write {target}: it is the input file" in err and len(err.splitlines()) == 1
    assert target.read_bytes() == before and out == ""


def _special(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"out-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        (tmp_path / "elsewhere.md").write_text("keep me\n")
        path.symlink_to((tmp_path / "elsewhere.md").resolve())
    return path


def _unchanged(path: Path, kind: str) -> bool:
    return path.is_fifo() if kind == "fifo" else path.is_symlink() and path.read_text() == "keep me\n"


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
@pytest.mark.parametrize("command", ["build", "compare", "noise-floor", "replay --out", "replay --json"])
def test_outputs_are_only_regular_files(tmp_path, capsys, kind, command):
    runs = [write(tmp_path / f"aa{i}.json", perf_run(f"2026112{i}T000000Z-cuda-sm_90-a{i}", i)) for i in (1, 2)]
    if command == "build":
        (tmp_path / "report").mkdir()
        target = _special(tmp_path / "report", kind).rename(tmp_path / "report" / "report.md")
        argv = ["build", *runs, "--out", tmp_path / "report"]
    elif command.startswith("replay"):
        target = _special(tmp_path, kind)
        argv = ["replay", evidence(tmp_path / "ev"), command.split()[1], target]
    else:
        target = _special(tmp_path, kind)
        argv = [command, *runs, "--out", target]
    code, _, err = cli(capsys, *argv)
    what = "a FIFO" if kind == "fifo" else "a symbolic link"
    assert code == 2 and f"refusing to write {target}: it is {what}" in err, err
    assert _unchanged(target, kind)


def test_device_nodes_are_refused_without_writing():
    with pytest.raises(Exception, match="refusing to write /dev/null: it is a device"):
        files.refuse_special(Path("/dev/null"))


# --- item 11: what no longer runs, replay with nothing compared, exit codes, JSON on exit 2 ----------------------


def _correctness_pair(tmp_path: Path, change) -> list[Path]:
    base = make_run(run_id=A)
    cand = make_run(run_id=B)
    change(cand)
    return [write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand)]


def test_a_test_that_passed_and_is_skipped_now_is_a_regression(tmp_path, capsys):
    def skip(run):
        run["tests"][0].update(outcome="skipped", message="no GPU")
        run["cases"] = [c for c in run["cases"] if c["kernel"] != "softmax"]
    code, out, _ = cli(capsys, "compare", *_correctness_pair(tmp_path, skip))
    table = " ".join(out.split("## Correctness regressions")[1].split("\n## ")[0].split())
    assert code == 1 and "No regressions" not in out
    assert "test_matches_reference[softmax-fp16] | passed | skipped" in table
    assert "| case |" not in table  # its cases are the test's, not three more regressions


def test_a_case_that_passed_and_is_missing_now_is_a_regression(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", *_correctness_pair(tmp_path, lambda run: run["cases"].pop(1)))
    assert code == 1 and "1 correctness regression(s)" in out and "seed=1 | passed | missing" in " ".join(out.split())


def test_missing_tests_allowed_by_the_flag_are_listed_not_silent(tmp_path, capsys):
    paths = _correctness_pair(tmp_path, lambda run: run["tests"].pop(0))
    assert cli(capsys, "compare", *paths)[0] == 2  # a different test set is refused
    code, out, _ = cli(capsys, "compare", *paths, "--allow-different-tests", "--json")
    data = json.loads(out)
    assert code == 0 and [m["what"] for m in data["missing"]] == [
        "suite/test_kernels.py::test_matches_reference[softmax-fp16]"]
    assert any("1 test(s) or case(s) that passed in the base run are missing" in w for w in data["warnings"])


def test_replay_with_no_benchmark_compared_fails(tmp_path, capsys):
    directory = evidence(tmp_path / "ev")
    for path in directory.glob("aa-*/run-*.json"):
        data = json.loads(path.read_text())
        data["benchmarks"] = []
        path.write_text(json.dumps(data))
    code, out, _ = cli(capsys, "replay", directory)
    assert code == 1 and "EXPECTATIONS FAILED" in out and "no benchmark compared" in out


def test_replay_without_a_planted_pair_fails(tmp_path, capsys):
    directory = evidence(tmp_path / "ev")
    for path in (directory / "planted-1").iterdir():
        path.unlink()
    (directory / "planted-1").rmdir()
    code, out, _ = cli(capsys, "replay", directory)
    assert code == 1 and "no planted-N/ pair (detection untested)" in out


def test_replay_of_a_missing_directory_is_unusable_input(tmp_path, capsys):
    code, _, err = cli(capsys, "replay", tmp_path / "absent")
    assert code == 2 and f"{tmp_path / 'absent'}: no such directory" in err


@pytest.mark.parametrize("case", ["hardware", "missing file", "one file", "bad threshold", "bad floor"])
def test_compare_json_prints_json_on_every_exit_2(tmp_path, capsys, case):
    paths = slowdown_pair(tmp_path)
    if case == "hardware":
        cand = perf_run(B, 2)
        cand["environment"]["device_name"] = "NVIDIA H200"
        argv = [paths[0], write(tmp_path / "h200.json", cand)]
    elif case == "missing file":
        argv = [paths[0], tmp_path / "absent.json"]
    elif case == "one file":
        argv = [paths[0]]
    elif case == "bad threshold":
        argv = [*paths, "--threshold", "-1"]
    else:
        argv = [*paths, "--noise-floor", write(tmp_path / "f.json", learned_floor(tmp_path, default="x"))]
    code, out, err = cli(capsys, "compare", *argv, "--json")
    data = json.loads(out)
    assert code == 2 and data["exit_code"] == 2 and data["verdict"].startswith("CANNOT COMPARE: ") and data["unusable"]
    assert err.strip()


# --- issue 33: toolchain validation ------------------------------------------------------------------------------


def _compile(kernel: str, target: str, status: str = "ok", registers: int | None = 96, spills: bool = False,
             dtype: str = "fp16", config: dict | None = None) -> dict:
    rec = {"kind": "compile", "kernel": kernel, "function": f"{kernel}_kernel", "dtype": dtype, "target": target,
           "config": config or {"BLOCK": 128, "num_warps": 4}, "status": status,
           "failure_class": None if status == "ok" else "out_of_shared_memory"}
    if status == "ok":
        rec.update(registers=registers, spills=spills)
    return rec


def interpreter_run(run_id: str, triton: str, numpy: str | None, compiles: list[dict],
                    failing_seed: int | None = None) -> dict:
    run = make_run(run_id=run_id)
    run["environment"].update(backend="interpret", device_name="Triton CPU interpreter", arch="interpreter",
                              sm_count=1, profile="interpreter", driver=None, runtime=None, triton=triton,
                              hypothesis_profile="ci")
    if numpy is not None:
        run["environment"]["numpy"] = numpy
    run["compiles"] = compiles
    if failing_seed is not None:
        run["cases"][failing_seed].update(outcome="failed", error_ratio=8.0)
        run["tests"][0].update(outcome="failed", message="1 of 3 cases failed")
    return run


def test_a_triton_upgrade_on_one_machine_reports_every_kind_of_change(tmp_path, capsys):
    """Triton 3.6.0 -> 3.9.0 on the interpreter, with the compile matrix for six targets: never refused as other
    hardware; names the toolchain change, each compile change per kernel x target and the correctness changes."""
    base = interpreter_run(A, "3.6.0", "2.3.5", [
        _compile("matmul", "sm_90", registers=168), _compile("matmul", "gfx942", registers=128),
        _compile("matmul", "sm_80", registers=168), _compile("softmax", "gfx950", status="failed"),
        _compile("softmax", "sm_100", spills=True), _compile("rmsnorm", "gfx90a", spills=False),
        _compile("rmsnorm", "sm_80", registers=40)])
    cand = interpreter_run(B, "3.9.0", "2.4.6", [
        _compile("matmul", "sm_90", registers=200), _compile("matmul", "gfx942", status="failed"),
        _compile("matmul", "sm_80", registers=170), _compile("softmax", "gfx950", registers=64),
        _compile("softmax", "sm_100", spills=False), _compile("rmsnorm", "gfx90a", spills=True),
        _compile("rmsnorm", "sm_80", registers=41)], failing_seed=1)
    base["tests"][1].update(outcome="failed", message="was broken")
    paths = [write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand)]
    code, out, err = cli(capsys, "compare", *paths)
    assert code == 1, err
    verdict = out.split("## Verdict")[1].split("\n## ")[0]
    assert "Toolchain changed: triton 3.6.0 -> 3.9.0, numpy 2.3.5 -> 2.4.6." in verdict
    assert "1 compile regression(s) (matmul on gfx942)" in verdict and "2 correctness regression(s)" in verdict
    table = " ".join(out.split("## Compile changes")[1].split("\n## ")[0].split())
    for row in ("| matmul | gfx942 | compile failed | 1 |", "| matmul | sm_90 | registers | 1 |",
                "| softmax | gfx950 | compiles now | 1 |", "| softmax | sm_100 | spills gone | 1 |",
                "| rmsnorm | gfx90a | spills appeared | 1 |"):
        assert row in table, table
    assert "168 -> 200 (+32)" in table and "| matmul | sm_80 |" not in table and "| rmsnorm | sm_80 |" not in table
    fixed = " ".join(out.split("### Fixed")[1].split("###")[0].split())
    assert "test_matches_reference[matmul-bf16] | failed | passed" in fixed
    data = json.loads(cli(capsys, "compare", *paths, "--json")[1])
    assert data["toolchain"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.9.0"},
                                 {"name": "numpy", "base": "2.3.5", "candidate": "2.4.6"}]
    assert {(r["kernel"], r["target"], r["change"]) for r in data["compile_changes"]} == {
        ("matmul", "gfx942", "compile failed"), ("matmul", "sm_90", "registers"), ("softmax", "gfx950", "compiles now"),
        ("softmax", "sm_100", "spills gone"), ("rmsnorm", "gfx90a", "spills appeared")}
    assert data["compared"]["compiles"] == 7 and data["verdict"].startswith("REGRESSION")


def test_toolchain_line_tolerates_older_run_files(tmp_path, capsys):
    base = interpreter_run(A, "3.6.0", None, [])
    cand = interpreter_run(B, "3.6.0", "2.4.6", [])
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert code == 0 and "Toolchain changed: numpy (not recorded) -> 2.4.6." in out and "No regressions" in out
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", cand), write(tmp_path / "c.json", cand | {
        "run_id": B + "x"}))
    assert code == 0 and "Toolchain: unchanged" in out


def test_interpreter_runs_of_other_hardware_are_still_refused(tmp_path, capsys):
    base = interpreter_run(A, "3.6.0", None, [])
    cand = make_run(run_id=B)
    code, _, err = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert code == 2 and "different hardware" in err


def test_floor_file_checker_uses_the_standard_library_only():
    import ast

    tree = ast.parse(Path(floor_file.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
        (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__", "json", "math", "os", "pathlib", "stat", "typing"}, imported


# --- compare review: a failure in both runs hides nothing; a benchmark the candidate cannot time fails -------------


def _wrong(at: int, over: int = 100, n: int = 1000, failure: str | None = None, seed: int = 1, big: int = 0) -> dict:
    """A softmax case that failed (shrunk to N=8+seed+big), its message as suite/checks/tolerance.py words it, wrong
    from element ``at`` on."""
    from tests.report_helpers import case

    rec = case("softmax", "fp16", seed, outcome="failed", ratio=3.0)
    rec["shape"]["N"] += big
    rec["message"] = (f"softmax[fp16] {json.dumps(rec['shape'])} contiguous normal seed={seed}\nout: error 1.000e-01 "
                      f"at ({at},) is 3x the bound 3.3e-02 (got 0.4, reference 0.3); {over} of {n} elements over\n"
                      f"reproduce with: {rec['repro']}")
    if failure:
        rec["failure"] = failure
    return rec


def _failing_pair(tmp_path: Path, base_case: dict, cand_case: dict) -> list[Path]:
    """softmax's test failed in both runs: seed 0 passed, then the given case failed (the test's last record)."""
    runs = []
    for run_id, bad in ((A, base_case), (B, cand_case)):
        run = make_run(run_id=run_id)
        run["tests"][0].update(outcome="failed", message=bad["message"])
        run["cases"] = [c for c in run["cases"] if c["kernel"] != "softmax" or c["seed"] == 0] + [bad]
        runs.append(write(tmp_path / f"{run_id}.json", run))
    return runs


def _verdict(out: str) -> str:
    return " ".join(out.split("## Verdict")[1].split("\n## ")[0].split())


def test_a_new_failure_in_a_test_that_already_failed_is_a_regression(tmp_path, capsys):
    """The review's case: wrong past element 900 in the base, past element 20 in the candidate. Shrinking lands
    each on its smallest failing case, so the candidate's case is one the base has no record of."""
    paths = _failing_pair(tmp_path, _wrong(900, big=893), _wrong(20, over=980, big=13))
    code, out, _ = cli(capsys, "compare", *paths)
    verdict = _verdict(out)
    assert code == 1 and "No regressions" not in out and "1 correctness regression(s)" in verdict
    assert "softmax[fp16] M=4,N=22 contiguous normal seed=1" in verdict
    assert "out over the bound at (900,)" in verdict and "out over the bound at (20,)" in verdict
    assert "a new failure in a test that failed before" in out
    assert cli(capsys, "compare", *paths[::-1])[0] == 1  # and the other way round: 900 is new beside 20


@pytest.mark.parametrize(("cand", "words"), [
    (_wrong(20), "wrong value: out over the bound at (900,) -> failed: wrong value: out over the bound at (20,)"),
    (_wrong(900, failure="fault"), "-> failed: fault"),
    ({**_wrong(900), "outputs": {"out": {"error_ratio": 3.0, "max_abs_error": 0.1},
                                 "lse": {"error_ratio": "inf", "max_abs_error": 0.0}},
      "message": _wrong(900)["message"].replace("elements over\n", "elements over; lse: 1 NaN where the reference is "
                                                                  "not (first at (3,))\n")},
     "out over the bound at (900,); lse NaN where the reference is not at (3,)"),
])
def test_a_case_failing_in_both_runs_in_another_way_is_a_regression(tmp_path, capsys, cand, words):
    code, out, _ = cli(capsys, "compare", *_failing_pair(tmp_path, _wrong(900), cand))
    verdict = _verdict(out)
    assert code == 1 and ("1 correctness regression(s) (1 case: softmax[fp16] M=4,N=9 contiguous normal seed=1: "
                          "failed:") in verdict
    assert words in verdict and "failure changed" in out


def test_the_same_failure_in_both_runs_stays_silent(tmp_path, capsys):
    """Same case and kind, other counts and sizes; or, drawn or shrunk differently, another case failing the same
    way; or an intermittent NaN that lands elsewhere each run: no regression."""
    same = _wrong(900, over=57)
    same["message"] = same["message"].replace("error 1.000e-01", "error 2.000e-01")
    assert cli(capsys, "compare", *_failing_pair(tmp_path, _wrong(900), same))[0] == 0
    assert cli(capsys, "compare", *_failing_pair(tmp_path, _wrong(900), _wrong(900, seed=2)))[0] == 0

    def nan(at: int, seed: int) -> dict:
        rec = _wrong(0, seed=seed, failure="intermittent")
        rec["intermittent"] = {"wrong": 2, "runs": 21}
        rec["message"] = f"intermittent (wrong in 2 of 21 runs): out: 1 NaN where the reference is not (first at ({at},))"
        return rec
    code, out, _ = cli(capsys, "compare", *_failing_pair(tmp_path, nan(5, 1), nan(700, 2)))
    assert code == 0 and "No regressions" in out


def test_failure_kinds_read_from_the_suites_messages():
    from reports.failures import WRONG, failure

    rec = {"outputs": {"dx": {"error_ratio": "inf", "max_abs_error": 0.0}, "x": {"error_ratio": 0.1, "max_abs_error": 0}},
           "message": "with config {\"BLOCK\": 64}: dx: 3 of 64 elements never written (they still hold the poison; "
                      "first at (0, 7). A kernel ...); dx: 2 infinities differ (first at (1, 2): got inf, expected 1.0)"}
    f = failure(rec)
    assert f.kind == WRONG and f.outputs == ("dx",)
    assert f.checks == (("dx", "never written", "(0, 7)"), ("dx", "infinities differ", "(1, 2)"))
    assert failure({**rec, "failure": "timeout", "message": "timeout: pid 4711"}).text() == "timeout"
    oor = {"outputs": {}, "message": "with config {\"BLOCK\": 64}: OutOfResources: shared memory, Required: 426032"}
    assert failure(oor) == failure({**oor, "message": oor["message"].replace("426032", "9")})


def _bench_pair(tmp_path: Path, change) -> list[Path]:
    cand = perf_run(B, 2)
    change(cand)
    return [write(tmp_path / "base.json", perf_run(A, 1)), write(tmp_path / "cand.json", cand)]


def _timer(samples: list, median: object, kernels=("softmax",)):
    def change(run: dict) -> None:
        for b in run["benchmarks"]:
            if b["kernel"] in kernels:
                b["samples_ms"], b["median_ms"] = list(samples), median
                b["rounds"]["kernel_ms"] = [median] * len(b["rounds"]["kernel_ms"])
    return change


@pytest.mark.parametrize(("samples", "median", "words"), [
    ([0.0] * 6, 0.0, "invalid timing: median 0 ms"),
    ([-0.1] * 6, -0.1, "invalid timing: median -0.1 ms"),
    ([math.nan] * 6, math.nan, "invalid timing: median nan ms"),
    ([math.inf] * 6, math.inf, "invalid timing: median inf ms"),
    ([], math.nan, "invalid timing: median nan ms"),
    ([], 0.05, "no samples"),  # a median recorded, but nothing timed
])
def test_a_benchmark_the_candidate_cannot_time_is_a_regression(tmp_path, capsys, samples, median, words):
    code, out, _ = cli(capsys, "compare", *_bench_pair(tmp_path, _timer(samples, median)))
    verdict = _verdict(out)
    assert code == 1 and "No regressions" not in out and "2 benchmark(s) missing or untimable" in verdict
    assert "softmax fp16 M=4096,N=4096: untimable, base 0.05" in verdict and f"ms -> {words}" in verdict
    assert "Not compared" not in verdict  # a regression, not a benchmark set aside
    assert "inconclusive" not in " ".join(out.split("## Benchmarks missing or untimable")[1].split("\n## ")[0].split())


def test_a_timer_that_returns_zero_everywhere_fails_as_a_regression_not_as_unusable_input(tmp_path, capsys):
    from tests.report_helpers import KERNELS, SHAPES

    code, out, _ = cli(capsys, "compare", *_bench_pair(tmp_path, _timer([0.0] * 6, 0.0, KERNELS)), "--json")
    data = json.loads(out)
    assert code == 1 and data["unusable"] is None and len(data["unmeasured_benchmarks"]) == len(KERNELS) * len(SHAPES)
    assert data["verdict"].startswith(f"REGRESSION: {len(KERNELS) * len(SHAPES)} benchmark(s) missing or untimable")


def test_a_few_invalid_samples_or_a_broken_torch_timer_are_untimable(tmp_path, capsys):
    def some(run: dict) -> None:
        b = next(b for b in run["benchmarks"] if b["kernel"] == "gelu")
        b["samples_ms"][3] = 0.0
        t = next(b for b in run["benchmarks"] if b["kernel"] == "dropout")
        t["baseline"]["samples_ms"] = [0.0] * len(t["baseline"]["samples_ms"])
        t["baseline"]["median_ms"] = 0.0
    code, out, _ = cli(capsys, "compare", *_bench_pair(tmp_path, some))
    verdict = _verdict(out)
    assert code == 1 and "gelu fp16 M=4096,N=4096: untimable" in verdict and "1 of 120 samples invalid" in verdict
    assert "dropout fp16 M=4096,N=4096: untimable" in verdict and "torch baseline: no valid timing" in verdict


def test_a_benchmark_missing_from_the_candidate_is_a_regression(tmp_path, capsys):
    def drop(run: dict) -> None:
        run["benchmarks"] = [b for b in run["benchmarks"] if b["kernel"] != "matmul"]
    paths = _bench_pair(tmp_path, drop)
    code, out, _ = cli(capsys, "compare", *paths)
    verdict = _verdict(out)
    assert code == 1 and "2 benchmark(s) missing or untimable (matmul fp16 M=4096,N=4096: missing, base" in verdict
    assert "-> missing (not in the candidate run)" in verdict
    code, out, _ = cli(capsys, "compare", *paths, "--allow-different-tests", "--json")  # listed and warned, as tests
    data = json.loads(out)
    assert code == 0 and [m["kind"] for m in data["missing"]] == ["benchmark", "benchmark"]
    assert any("and 2 benchmark(s) it timed are missing" in w for w in data["warnings"])


def test_a_benchmark_the_base_could_not_time_is_still_only_not_compared(tmp_path, capsys):
    base = perf_run(A, 1)
    _timer([0.0] * 6, 0.0)(base)
    paths = [write(tmp_path / "base.json", base), write(tmp_path / "cand.json", perf_run(B, 2))]
    code, out, _ = cli(capsys, "compare", *paths)
    assert code == 0 and "Not compared: 2 benchmark(s) (2 invalid timing: median 0 ms in the base run)" in out


def test_compare_on_a_terminal_prints_test_ids_as_they_are_and_counts_tests_and_cases(tmp_path, capsys, monkeypatch):
    """A person reading compare in a terminal copies a test id from it: no Markdown escape in it (piped, the output
    stays Markdown a run file's strings cannot turn into links); the verdict says how many of the regressions are
    tests and how many their cases."""
    base = make_run(run_id=A)
    cand = make_run(run_id=B)
    wrong = _wrong(900)
    cand["tests"][0].update(outcome="failed", message=wrong["message"])
    cand["cases"] = [c for c in cand["cases"] if c["kernel"] != "softmax" or c["seed"] == 0] + [wrong]
    paths = [write(tmp_path / "base.json", base), write(tmp_path / "cand.json", cand)]
    code, piped, _ = cli(capsys, "compare", *paths)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    code_tty, tty, _ = cli(capsys, "compare", *paths)
    assert code == code_tty == 1
    flat = " ".join(tty.split())  # the terminal's lines are wrapped at its width
    assert flat.startswith("REGRESSION: 2 correctness regression(s) (1 test, 1 case: "), tty[:300]
    assert "suite/test_kernels.py::test_matches_reference[softmax-fp16]: passed -> failed" in flat, tty[:600]
    assert "\\]" not in tty, tty
    # piped: Markdown; "]:" mid-line opens nothing (a reference definition starts a line), so the id is as it is
    assert "test_matches_reference[softmax-fp16]: passed" in piped, _verdict(piped)
