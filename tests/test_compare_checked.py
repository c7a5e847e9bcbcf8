"""compare judges what the candidate checked, not only how what it checked ended: a candidate run with its memory
check off, fewer autotune configs, a profile of fewer examples or fewer kernel x dtype pairs than the base is a
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


def test_fewer_autotune_configs_is_a_regression(tmp_path, capsys):
    cand = _cand()
    cand["coverage"][0]["configs"] = {'{"BLOCK":64}': 6, '{"BLOCK":256}': 0}
    code, result, _ = _compare(tmp_path, capsys, cand)
    assert code == 1, result["verdict"]
    assert 'autotune configs of softmax fp16: 3 ran -> 1 of them ran; never: {"BLOCK":128}, {"BLOCK":256}' \
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
