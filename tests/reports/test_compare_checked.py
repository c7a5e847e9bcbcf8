"""compare judges what the candidate checked, not only how what it checked ended: a candidate run with its memory
check off, fewer configs, a profile of fewer examples or fewer kernel x dtype pairs than the base is a
regression, or (what --allow-different-tests lets through) said first in the verdict (reports/checked.py)."""

from __future__ import annotations

import json

from tests.report_helpers import cli, make_run, write

KERNELS = (("softmax", "fp16"), ("softmax", "fp32"), ("matmul", "bf16"))
CONFIGS = {'{"BLOCK":64}': 3, '{"BLOCK":128}': 2, '{"BLOCK":256}': 1}


def _run(run_id: str, started: str, **over) -> dict:
    run = make_run(run_id=run_id, started=started, kernels=KERNELS)
    run["memcheck"] = {"mode": "interpreter", "unchecked": {},
                       "kernels": {"softmax": {"launches": 9, "memory_ops": 90}, "matmul": {"launches": 3, "memory_ops": 30}}}
    run["coverage"] = [{"kernel": k, "dtype": d, "configs": dict(CONFIGS), "paths": {}, "unexercised": []}
                       for k, d in KERNELS]
    run.update(over)
    return run


def _compare(tmp_path, capsys, cand: dict, *flags: str):
    base = write(tmp_path / "base.json", _run("base-1", "2026-11-21T00:00:00+00:00"))
    cand_path = write(tmp_path / "cand.json", cand)
    code, out, err = cli(capsys, "compare", base, cand_path, "--json", *flags)
    return code, json.loads(out), err


def _cand(**over) -> dict:
    return _run("cand-1", "2026-11-21T01:00:00+00:00", **over)


def test_the_same_checks_are_no_regression(tmp_path, capsys):
    code, result, _ = _compare(tmp_path, capsys, _cand())
    assert (code, result["verdict"], result["checked_less"]) == (0, "No regressions", [])


def test_a_candidate_without_the_memory_check_is_a_regression(tmp_path, capsys):
    code, result, _ = _compare(tmp_path, capsys, _cand(memcheck={"mode": "off", "kernels": {}, "unchecked": {}}))
    assert code == 1, result["verdict"]
    assert result["verdict"].startswith("REGRESSION: the candidate checked less than the base (memory check: "
                                        "interpreter -> off"), result["verdict"]


def test_a_kernel_the_memory_check_no_longer_saw_is_a_regression(tmp_path, capsys):
    cand = _cand()
    cand["memcheck"]["unchecked"] = {"matmul": "no Triton launch seen"}
    code, result, _ = _compare(tmp_path, capsys, cand)
    assert code == 1 and "no launch of matmul seen" in result["verdict"], result["verdict"]


def test_fewer_configs_is_a_regression(tmp_path, capsys):
    cand = _cand()
    cand["coverage"][0]["configs"] = {'{"BLOCK":64}': 6, '{"BLOCK":256}': 0}
    code, result, _ = _compare(tmp_path, capsys, cand)
    assert code == 1, result["verdict"]
    assert 'configs of softmax fp16: 3 ran -> 1 of them ran; never: {"BLOCK":128}, {"BLOCK":256}' \
        in result["verdict"], result["verdict"]


def test_fewer_dtypes_or_examples_allowed_are_said_first(tmp_path, capsys):
    cand = _cand()
    cand["tests"] = [t for t in cand["tests"] if "fp32" not in t["nodeid"]]
    cand["cases"] = [c for c in cand["cases"] if c["dtype"] != "fp32"]
    cand["environment"]["hypothesis_profile"] = "ci"
    code, result, _ = _compare(tmp_path, capsys, cand, "--allow-different-tests")
    assert code == 0, result["verdict"]
    assert result["verdict"].startswith("CHECKED LESS (allowed by --allow-different-tests: Hypothesis profile: "
                                        "validation (40 examples a test) -> ci (20 examples a test); kernel x dtype: "
                                        "3 ran -> 1 did not run: softmax fp32); No regressions"), result["verdict"]


def test_the_markdown_lists_what_was_checked_less(tmp_path, capsys):
    base = write(tmp_path / "base.json", _run("base-1", "2026-11-21T00:00:00+00:00"))
    cand = write(tmp_path / "cand.json", _cand(memcheck={"mode": "off", "kernels": {}, "unchecked": {}}))
    code, out, _ = cli(capsys, "compare", base, cand)
    assert code == 1 and "## Checked less than the base" in out and "| memory check | interpreter |" in out, out


# Issue 61, item 12: each switch that turns a check off or down is recorded in the run file (`checks`) and compared.

CHECKS = {"races": "on", "intermittent_runs": 20, "compile_matrix": "defaults", "compile_targets": "all",
          "config": None, "repro": None}


def test_the_run_file_records_the_race_check_off_and_compare_says_checked_less(run_suite, tmp_path, capsys):
    run = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", "--hypothesis-profile=dev",
                    env={"SUITE_RACE_CHECK": "0", "SUITE_INTERMITTENT_RUNS": "3"})
    assert run.returncode == 0, run.output[-3000:]
    (cand_path,) = run.run_files()
    cand = json.loads(cand_path.read_text())
    assert cand["checks"] == {**CHECKS, "races": "off", "intermittent_runs": 3}
    base = json.loads(cand_path.read_text())
    base["run_id"], base["checks"]["races"] = "base-1", "on"
    code, out, _ = cli(capsys, "compare", write(tmp_path / "base.json", base), cand_path, "--json")
    result = json.loads(out)
    assert code == 1, result["verdict"]
    assert "race check: on -> off (SUITE_RACE_CHECK=0)" in result["verdict"], result["verdict"]


def _with_checks(run: dict, **over) -> dict:
    run["checks"] = {**CHECKS, **over}
    return run


def _compare_files(tmp_path, capsys, base: dict, cand: dict, *flags: str):
    code, out, err = cli(capsys, "compare", write(tmp_path / "base.json", base), write(tmp_path / "cand.json", cand),
                         "--json", *flags)
    return code, json.loads(out)


def test_a_base_that_records_no_check_state_is_read_as_not_recorded_never_a_silent_pass(tmp_path, capsys):
    base = _run("base-1", "2026-11-21T00:00:00+00:00")  # an older run file: no "checks"
    code, result = _compare_files(tmp_path, capsys, base, _with_checks(_cand(), races="off"))
    assert code == 1, result["verdict"]
    assert "race check: not recorded (the suite's default: on) -> off (SUITE_RACE_CHECK=0)" in result["verdict"]
    code, result = _compare_files(tmp_path, capsys, base, _with_checks(_cand()))
    assert (code, result["verdict"]) == (0, "No regressions")
    assert any("the base run file records no check states" in w and "'not recorded'" in w for w in result["warnings"])
    code, result = _compare_files(tmp_path, capsys, base, _cand())
    assert code == 0 and any("neither run file records its check states" in w for w in result["warnings"])


def test_a_candidate_that_records_no_check_state_checked_less(tmp_path, capsys):
    code, result = _compare_files(tmp_path, capsys, _with_checks(_run("base-1", "2026-11-21T00:00:00+00:00")), _cand())
    assert code == 1 and "check states: recorded (races on" in result["verdict"], result["verdict"]


def _failing(run: dict) -> dict:
    run["tests"][0]["outcome"] = "failed"
    run["cases"][0]["outcome"], run["cases"][0]["message"] = "failed", "out: 3 of 64 elements over the bound"
    return run


def test_fewer_intermittent_reruns_are_said_where_the_candidate_had_a_wrong_case(tmp_path, capsys):
    base = _with_checks(_failing(_run("base-1", "2026-11-21T00:00:00+00:00")))
    code, result = _compare_files(tmp_path, capsys, base, _with_checks(_failing(_cand()), intermittent_runs=1))
    assert code == 1 and "intermittent reruns: 20 more runs of a wrong case -> 1" in result["verdict"], result["verdict"]
    base = _with_checks(_run("base-1", "2026-11-21T00:00:00+00:00"))  # no wrong case: the reruns never ran
    code, result = _compare_files(tmp_path, capsys, base, _with_checks(_cand(), intermittent_runs=1))
    assert (code, result["checked_less"]) == (0, [])


def test_less_of_the_compile_matrix_is_checked_less(tmp_path, capsys):
    base = _with_checks(_run("base-1", "2026-11-21T00:00:00+00:00"))  # matmul bf16 on gfx942 and sm_90
    cand = _with_checks(_cand(), compile_targets="own")
    cand["compiles"] = [c for c in cand["compiles"] if c["target"] == "sm_90"]
    code, result = _compare_files(tmp_path, capsys, base, cand)
    assert code == 1, result["verdict"]
    assert ("compile matrix: 2 compile(s) (SUITE_COMPILE_MATRIX=defaults, --compile-targets=all) -> fewer compiled "
            "(SUITE_COMPILE_MATRIX=defaults, --compile-targets=own): matmul on gfx942 (0 of 1)") in result["verdict"]


def test_a_shard_that_checked_less_is_the_merged_run_s_state(tmp_path, capsys):
    """Shard 2 of the candidate ran with the race check off: the merged run has the least of each state."""
    base = write(tmp_path / "base.json", _with_checks(_run("base-1", "2026-11-21T00:00:00+00:00")))
    shards = []
    for index, races in ((1, "on"), (2, "off")):
        shard = _with_checks(_cand(), races=races)
        shard["run_id"] = f"cand-{index}"
        shard["shard"] = {"index": index, "count": 2, "run_id": "night-8"}
        keep = KERNELS[:2] if index == 1 else KERNELS[2:]
        shard["tests"] = [t for t in shard["tests"] if any(f"[{k}-{d}]" in t["nodeid"] for k, d in keep)]
        shard["cases"] = [c for c in shard["cases"] if (c["kernel"], c["dtype"]) in keep]
        shard["coverage"] = [c for c in shard["coverage"] if (c["kernel"], c["dtype"]) in keep]
        shard["findings"] = [f for f in shard["findings"] if (f["kernel"], f["dtype"]) in keep]
        shard["compiles"] = shard["compiles"] if index == 1 else []
        shards.append(write(tmp_path / f"cand-{index}.json", shard))
    code, out, _ = cli(capsys, "compare", base, *shards, "--json")
    result = json.loads(out)
    assert code == 1 and "race check: on -> off (SUITE_RACE_CHECK=0)" in result["verdict"], result["verdict"]
    assert any("its shards ran with other check states (races)" in w for w in result["warnings"]), result["warnings"]


def test_a_recorded_repro_case_is_checked_less(tmp_path, capsys):
    base = _with_checks(_run("base-1", "2026-11-21T00:00:00+00:00"))
    cand = _with_checks(_cand(), repro="M=4,N=8;layout=contiguous;values=normal;seed=1")  # the command not read
    code, result = _compare_files(tmp_path, capsys, base, cand)
    assert code == 1 and "cases: drawn by the profile -> one case (--repro=M=4,N=8" in result["verdict"], result


# Issue 61, item 17: compare leads with what broke, and says "checked less" only for what the base checked that
# the candidate could have: a test that stops at its first failure runs fewer configs, which is not a second finding.


def test_a_new_failure_leads_and_the_configs_its_test_never_reached_are_not_checked_less(tmp_path, capsys):
    cand = _failing(_cand())  # softmax fp16 fails at its first case: its coverage holds no config
    cand["coverage"][0]["configs"] = {}
    code, result, _ = _compare(tmp_path, capsys, cand)
    assert code == 1, result["verdict"]
    assert result["verdict"].startswith("REGRESSION: 2 correctness regression(s) (1 test, 1 case: "), result["verdict"]
    assert result["checked_less"] == [], result["checked_less"]


def test_what_broke_leads_and_checked_less_follows(tmp_path, capsys):
    cand = _failing(_cand(memcheck={"mode": "off", "kernels": {}, "unchecked": {}}))
    code, result, _ = _compare(tmp_path, capsys, cand)
    assert code == 1 and result["verdict"].startswith("REGRESSION: 2 correctness regression(s)"), result["verdict"]
    assert "; the candidate checked less than the base (memory check: interpreter -> off" in result["verdict"]


def test_a_forced_config_is_said_once_where_no_kernel_x_dtype_shows_it(tmp_path, capsys):
    """Every test of the candidate failed at its first case (the regression, said first): none shows the configs it
    left out, so its --config is said once, for the run."""
    base, cand = _with_checks(_run("base-1", "2026-11-21T00:00:00+00:00")), _with_checks(_cand(), config={"BLOCK": 64})
    for t in cand["tests"]:
        t["outcome"] = "failed"
    for c in cand["cases"]:
        c["outcome"], c["message"] = "failed", "out: 3 of 64 elements over the bound"
    for cov in cand["coverage"]:
        cov["configs"] = {}
    code, result = _compare_files(tmp_path, capsys, base, cand)
    assert code == 1 and result["verdict"].startswith("REGRESSION: 12 correctness regression(s)"), result["verdict"]
    assert [r["what"] for r in result["checked_less"]] == ["configs"], result["checked_less"]
    assert result["checked_less"][0]["candidate"] == 'one forced for every case (--config forced: {"BLOCK": 64})'
