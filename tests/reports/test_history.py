"""`python -m reports history`: per kernel x dtype x platform over a series of nightly run files: the state and since
which night, flips, each failing streak's first night with its toolchain change, intermittent failures apart; and
the history as a section of `reports build --history`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from reports import history
from reports.__main__ import main
from tests.report_helpers import H200, case, make_run, write

KERNELS = (("softmax", "fp16"), ("matmul", "bf16"))
# Per night: softmax fp16's state and matmul bf16's (P passed, F failed, I intermittent, - not run).
SERIES = [("P", "P"), ("P", "I"), ("F", "P"), ("F", "I"), ("P", "P"), ("F", "-")]


def night(i: int, softmax: str, matmul: str, triton: str = "3.6.0", platform=None) -> dict:
    kernels = KERNELS if matmul != "-" else KERNELS[:1]
    data = make_run(run_id=f"night-{i}", started=f"2026-11-{10 + i:02d}T02:17:00+00:00", kernels=kernels,
                    **({"platform": platform} if platform else {}))
    data["environment"]["triton"] = triton
    for state, (kernel, dtype) in zip((softmax, matmul), kernels, strict=False):  # matmul not run: one kernel
        if state in ("F", "I"):
            test = next(t for t in data["tests"] if f"[{kernel}-{dtype}]" in t["nodeid"])
            test["outcome"] = "failed"
            bad = case(kernel, dtype, 9, outcome="failed", ratio=5.0)
            if state == "I":
                bad["failure"] = "intermittent"
            data["cases"].append(bad)
    return data


def series_dir(tmp_path: Path) -> Path:
    d = tmp_path / "nights"
    d.mkdir()
    for i, (s, m) in enumerate(SERIES, start=1):
        data = night(i, s, m, triton="3.7.0" if i >= 3 else "3.6.0")  # Triton moved on night 3: the first failure
        if i == 4:  # night 4 ran on two runners
            one, two = json.loads(json.dumps(data)), json.loads(json.dumps(data))
            for part, idx in ((one, 0), (two, 1)):
                part["run_id"] = f"night-4-shard{idx + 1}"
                part["tests"] = [part["tests"][idx]]
                part["cases"] = [c for c in part["cases"] if KERNELS[idx][0] == c["kernel"]]
                part["shard"] = {"index": idx + 1, "count": 2, "run_id": "gh-4-1"}
                write(d / f"run-night-4-{idx + 1}.json", part)
            continue
        (d / f"run-night-{i}.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    (d / "run-corrupt.json").write_text("{not json")
    return d


def by_kernel(platform: dict) -> dict[tuple[str, str], dict]:
    return {(k["kernel"], k["dtype"]): k for k in platform["kernels"]}


def test_history_of_a_series(tmp_path):
    h = history.history([series_dir(tmp_path)])
    (p,) = h.platforms
    assert [n["run_id"] for n in p["nights"]] == ["night-1", "night-2", "night-3", "gh-4-1", "night-5", "night-6"]
    assert p["nights"][3]["files"] == ["run-night-4-1.json", "run-night-4-2.json"]
    assert p["nights"][2]["toolchain_changes"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.7.0"}]
    rows = by_kernel(p)
    softmax = rows[("softmax", "fp16")]
    assert softmax["timeline"] == "PPFFPF" and softmax["state"] == "failed"
    assert softmax["since"]["run_id"] == "night-6" and softmax["flips"] == 3
    assert softmax["failed"] == 3 and softmax["intermittent"] == 0
    first, second = softmax["streaks"]
    assert (first["first_bad"]["run_id"], first["last_bad"]["run_id"], first["nights"], first["ongoing"]) == \
        ("night-3", "gh-4-1", 2, False)
    assert first["night_before"]["run_id"] == "night-2"
    assert first["toolchain_changes"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.7.0"}]
    assert (second["first_bad"]["run_id"], second["nights"], second["ongoing"], second["toolchain_changes"]) == \
        ("night-6", 1, True, [])
    matmul = rows[("matmul", "bf16")]
    assert matmul["timeline"] == "PIPIP-" and matmul["state"] == "not run"
    assert matmul["since"]["run_id"] == "night-6"
    assert (matmul["intermittent"], matmul["failed"], matmul["flips"], matmul["streaks"]) == (2, 0, 0, [])
    assert len(h.left_out) == 1 and "run-corrupt.json: malformed JSON" in str(h.left_out[0])


def test_the_window_keeps_the_last_nights(tmp_path):
    d = series_dir(tmp_path)
    h = history.history([d], window=3)
    (p,) = h.platforms
    assert [n["night"] for n in p["nights"]] == [1, 2, 3]
    assert [n["run_id"] for n in p["nights"]] == ["gh-4-1", "night-5", "night-6"]
    softmax = by_kernel(p)[("softmax", "fp16")]
    assert softmax["timeline"] == "FPF" and softmax["flips"] == 2
    # the streak running into the window's first night is compared with the last night before it that passed (night
    # 3, before the window, failed already: the Triton change came that night)
    assert softmax["streaks"][0]["night_before"]["run_id"] == "night-2"
    assert softmax["streaks"][0]["toolchain_changes"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.7.0"}]
    last = by_kernel(history.history([d], window=1).platforms[0])[("softmax", "fp16")]
    assert last["since_window_start"] is True and last["timeline"] == "F"


def test_platforms_are_separate_series(tmp_path):
    files = [write(tmp_path / "run-a.json", night(1, "P", "P")), write(tmp_path / "run-b.json", night(2, "F", "P")),
             write(tmp_path / "run-c.json", night(3, "P", "P", platform=H200))]
    h = history.history(files)
    assert [len(p["nights"]) for p in h.platforms] == [2, 1]
    assert by_kernel(h.platforms[1])[("softmax", "fp16")]["timeline"] == "P"


def test_each_hypothesis_profile_is_its_own_series(tmp_path):
    """The nightly workflow's three runs a night (correctness, benchmarks, memory check: nightly, ci and dev
    profiles) are three series of one run a night, not one series of three runs a night."""
    files = []
    for i in (1, 2):
        for profile, softmax in (("nightly", "F"), ("ci", "P"), ("dev", "P")):
            data = night(i, softmax, "P")
            data["run_id"] = f"night-{i}-{profile}"
            data["environment"]["hypothesis_profile"] = profile
            files.append(write(tmp_path / f"run-{i}-{profile}.json", data))
    h = history.history(files)
    series = {p["hypothesis_profile"]: p for p in h.platforms}
    assert sorted(series) == ["ci", "dev", "nightly"] and all(len(p["nights"]) == 2 for p in h.platforms)
    timelines = {k: by_kernel(p)[("softmax", "fp16")]["timeline"] for k, p in series.items()}
    assert timelines == {"nightly": "FF", "ci": "PP", "dev": "PP"}
    assert all(by_kernel(p)[("softmax", "fp16")]["flips"] == 0 for p in h.platforms)
    titles = [t.title for t in history.section(h).tables]
    assert "Kernels on NVIDIA H100 80GB HBM3 (sm_90), nightly profile" in titles


def test_a_sharded_night_missing_a_shard_is_left_out_with_why(tmp_path):
    d = series_dir(tmp_path)
    (d / "run-night-4-2.json").unlink()
    h = history.history([d])
    assert "gh-4-1" not in [n["run_id"] for n in h.platforms[0]["nights"]]
    assert any("run gh-4-1 (cuda sm_90): shard 2/2 missing" in str(e) for e in h.left_out)


def test_the_command_line(tmp_path, capsys):
    d = series_dir(tmp_path)
    assert main(["history", str(d), "--json"]) == 2  # a corrupt file was left out: exit 2, as build
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["format"] == history.FORMAT and data["window"] == 30
    assert "run-corrupt.json: malformed JSON" in err and "left out of the history" in err
    (d / "run-corrupt.json").unlink()
    assert main(["history", str(d), "--out", str(tmp_path / "h")]) == 0
    md = capsys.readouterr().out
    assert "| softmax  | fp16    | failed  | #6 2026-11-16 02:17" in md
    assert "first bad #3 2026-11-13 02:17 (2 nights; changed since it last passed (2026-11-12 02:17): triton 3.6.0 -> 3.7.0)" \
        in md
    assert {p.name for p in (tmp_path / "h").iterdir()} == {"history.md", "history.html", "history.json"}
    html = (tmp_path / "h" / "history.html").read_text()
    assert '<section id="nightly-history">' in html and "PPFFPF" in html
    for bad in (["--window", "0"], ["--window", "x"]):
        assert main(["history", str(d), *bad]) == 2
        assert "--window" in capsys.readouterr().err
    assert main(["history", str(tmp_path / "nowhere")]) == 2
    assert f"none of the 1 run files is usable: {tmp_path / 'nowhere'}: no such file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["history", str(tmp_path / "empty")]) == 2
    assert f"no run files in {tmp_path / 'empty'}" in capsys.readouterr().err


def test_build_adds_the_history_section(tmp_path, capsys):
    d = series_dir(tmp_path)
    (d / "run-corrupt.json").unlink()
    today = write(tmp_path / "today.json", night(7, "P", "P"))
    assert main(["build", str(today), "--history", str(d), "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    html = (tmp_path / "r" / "report.html").read_text()
    assert '<section id="nightly-history">' in html and "Kernels on NVIDIA H100 80GB HBM3 (sm_90)" in html
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["history"]["platforms"][0]["kernels"][0]["kernel"] == "softmax"
    assert "## Nightly history" in (tmp_path / "r" / "report.md").read_text()


@pytest.mark.parametrize("outcome", ["xfailed", "skipped", "xpassed-strict"])
def test_night_states_read_each_outcome(outcome):
    data = make_run(kernels=KERNELS[:1])
    data["tests"][0]["outcome"] = outcome
    from reports.loading import Run

    states = history.night_states(Run(Path("x.json"), data))
    assert states == {"xfailed": {("softmax", "fp16"): "known issue"}, "skipped": {},
                      "xpassed-strict": {("softmax", "fp16"): "failed"}}[outcome]


def test_an_intermittent_property_is_an_intermittent_night():
    from reports.loading import Run

    data = make_run(kernels=KERNELS[:1])
    nodeid = "suite/test_properties.py::test_properties[softmax-fp16]"
    data["tests"].append({"nodeid": nodeid, "outcome": "failed", "duration_s": 0.1, "message": "m", "known_issue": None})
    finding = next(f for f in data["findings"] if f["property"] == "deterministic")
    finding.update(holds=False, message="differs", repro=f"pytest '{nodeid}' --backend=cuda '--repro=seed=0'")
    assert history.night_states(Run(Path("x.json"), data)) == {("softmax", "fp16"): "failed"}
    finding["intermittent"] = {"wrong": 3, "runs": 21}
    assert history.night_states(Run(Path("x.json"), data)) == {("softmax", "fp16"): "intermittent"}


EXAMPLE = Path(__file__).resolve().parent.parent.parent / "evidence" / "history"


def test_the_worked_example_names_the_planted_regression_and_the_toolchain_change():
    h = history.history([EXAMPLE / "nights"])
    assert not h.left_out
    (p,) = h.platforms
    assert len(p["nights"]) == 6 and p["nights"][4]["run_id"] == "worked-night-5" and len(p["nights"][4]["files"]) == 2
    rows = by_kernel(p)
    planted = rows[("zz_nightly_add", "fp32")]
    assert planted["state"] == "failed" and planted["since"]["night"] == 4 and planted["timeline"] == "PPPFFF"
    (streak,) = planted["streaks"]
    assert streak["first_bad"]["night"] == 4 and streak["nights"] == 3 and streak["ongoing"]
    assert streak["toolchain_changes"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.7.0"}]
    flaky = rows[("zz_intermittent", "fp32")]
    assert (flaky["timeline"], flaky["intermittent"], flaky["failed"], flaky["streaks"]) == ("PIPPPI", 2, 0, [])
    assert all(rows[("vector_add", d)]["timeline"] == "PPPPPP" for d in ("fp32", "fp16", "bf16"))
    assert h.as_json() == json.loads((EXAMPLE / "history.json").read_text()), \
        "evidence/history/history.json is stale: python evidence/history/make.py"
    md = (EXAMPLE / "history.md").read_text()
    assert "first bad #4" in md and "triton 3.6.0 -> 3.7.0" in md


def _blame(tmp_path, nights: list[dict]) -> dict:
    d = tmp_path / "blame"
    d.mkdir()
    for data in nights:
        write(d / f"run-{data['run_id']}.json", data)
    [p] = history.history([d]).as_json()["platforms"]
    return by_kernel(p)[("softmax", "fp16")]


def test_a_streak_is_blamed_on_what_changed_since_the_kernel_last_ran(tmp_path):
    """Triton moved on a night softmax did not run: the history said 'toolchain: none' for its first bad night."""
    nights = [night(1, "P", "P"), night(2, "P", "P", triton="3.7.0"), night(3, "F", "P", triton="3.7.0")]
    nights[1]["tests"] = [t for t in nights[1]["tests"] if "softmax" not in t["nodeid"]]  # not run on night 2
    nights[1]["cases"] = [c for c in nights[1]["cases"] if c["kernel"] != "softmax"]
    row = _blame(tmp_path, nights)
    assert row["timeline"] == "P-F"
    (streak,) = row["streaks"]
    assert streak["night_before"]["run_id"] == "night-1"
    assert streak["toolchain_changes"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.7.0"}]


def test_a_streak_names_the_kernel_module_and_suite_that_changed(tmp_path):
    nights = [night(1, "P", "P"), night(2, "F", "P")]
    for data, sha, suite in ((nights[0], "a" * 64, "0.1.0"), (nights[1], "b" * 64, "0.2.0")):
        data["kernel_modules"] = [{"module": "rope/softmax_mine.py", "file": None, "sha256": sha, "libraries": [],
                                   "kernels": ["softmax"]},
                                  {"module": "other.py", "file": None, "sha256": sha, "libraries": [],
                                   "kernels": ["matmul"]}]  # another kernel's module: not this streak's cause
        data["environment"]["suite"] = suite
    (streak,) = _blame(tmp_path, nights)["streaks"]
    assert streak["code_changes"] == ["kernel module softmax_mine.py changed: sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb"]
    assert streak["toolchain_changes"] == [{"name": "suite", "base": "0.1.0", "candidate": "0.2.0"}]
    text = history._streak_text(streak)
    assert "suite 0.1.0 -> 0.2.0, kernel module softmax_mine.py changed" in text, text


def test_the_run_file_records_the_suite_s_version():
    import re

    from suite.session.results import suite_version

    pyproject = (Path(__file__).resolve().parent.parent.parent / "pyproject.toml").read_text()
    assert suite_version() == re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.MULTILINE).group(1)


# Issue 61, item 14: an intermittent night is blamed on what changed, as a failing streak is; a streak is blamed on
# what changed since the kernel x dtype last passed, not since an intermittent night.


def test_an_intermittent_night_after_a_toolchain_change_is_blamed_on_it(tmp_path):
    nights = [night(1, "P", "P"), night(2, "I", "P", triton="3.7.0"), night(3, "P", "P", triton="3.7.0")]
    row = _blame(tmp_path, nights)
    assert row["timeline"] == "PIP" and row["streaks"] == []
    (stretch,) = row["intermittent_streaks"]
    assert (stretch["first_bad"]["run_id"], stretch["nights"], stretch["ongoing"]) == ("night-2", 1, False)
    assert stretch["night_before"]["run_id"] == "night-1"
    assert stretch["toolchain_changes"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.7.0"}]
    h = history.history([tmp_path / "blame"])
    md = "\n".join(" | ".join(map(str, r)) for t in history.section(h).tables for r in t.rows)
    assert "first intermittent #2" in md and "triton 3.6.0 -> 3.7.0" in md, md


def test_a_failing_streak_after_an_intermittent_night_is_blamed_since_it_last_passed(tmp_path):
    nights = [night(1, "P", "P"), night(2, "I", "P", triton="3.7.0"), night(3, "F", "P", triton="3.7.0")]
    (streak,) = _blame(tmp_path, nights)["streaks"]
    assert streak["night_before"]["run_id"] == "night-1"
    assert streak["toolchain_changes"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.7.0"}]
