"""Driver validation: docs/validation.md's guide run as written (on the interpreter, one kernel); the evidence replay
(`python -m reports replay`) on synthetic evidence that meets and that breaks its expectations; the committed H100
evidence under evidence/driver-validation/ replayed; and the GPU evidence script in its dry-run mode."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile

import pytest

from reports.validation import discover, replay
from tests.conftest import ROOT
from tests.report_helpers import cli, evidence

EVIDENCE = ROOT / "evidence" / "driver-validation"


def guide_commands() -> list[list[str]]:
    text = (ROOT / "docs" / "validation.md").read_text()
    section = text.split("## Driver validation", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)[1]
    return [shlex.split(line) for line in block.splitlines() if line and not line.startswith("#")]


@pytest.mark.slow
def test_the_guide_commands_run_and_compare_clean(tmp_path):
    commands = guide_commands()
    assert [c[0] for c in commands] == ["pytest", "pytest", "python"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for argv in commands[:2]:
        assert "--hypothesis-profile=validation" in argv
        argv = [a.replace("validation/", f"{tmp_path}/") for a in argv if a != "--backend=cuda"]
        argv = [sys.executable, "-m", *argv, "--backend=interpret", "--kernels=vector_add", "-k", "fp32",
                "-p", "no:cacheprovider"]
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    compare = [a.replace("validation/", f"{tmp_path}/") for a in commands[2]]
    files = [glob.glob(a) if "*" in a else [a] for a in compare[3:]]
    argv = [sys.executable, *compare[1:3], *[f for group in files for f in group]]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "No regressions" in proc.stdout
    assert (tmp_path / "compare.md").exists()


def test_replay_of_evidence_that_meets_the_expectations(tmp_path, capsys):
    code, out, err = cli(capsys, "replay", evidence(tmp_path / "ev"), "--json", tmp_path / "replay.json")
    assert code == 0, out + err
    assert "**All expectations met**; 7 runs of 50-50 s each" in out
    assert "as recorded: 0 false alarm(s) in 6 A/A comparisons" in out
    assert "leave-one-out: 0 false alarm(s) in 6 A/A comparisons" in out
    result = json.loads((tmp_path / "replay.json").read_text())
    assert result["passed"] and result["figures"]["as recorded"]["planted_benchmarks_flagged"] == "2/2"
    assert {c["mode"] for c in result["checks"]} == {"as recorded", "leave-one-out"} and len(result["checks"]) == 16


@pytest.mark.parametrize(("aa", "planted", "failing"), [
    (({}, {"gelu": 1.15}, {}), None, "aa-2"),  # a false alarm: gelu moved 15% between identical runs
    (({}, {}, {}), {"softmax": 1.02}, "planted-1"),  # a planted slowdown too small to see: missed
    (({}, {}, {}), {"softmax": 1.25, "gelu": 0.8}, "planted-1"),  # gelu got faster beside the plant: not only it
])
def test_replay_fails_a_false_alarm_a_missed_plant_and_a_plant_not_alone(tmp_path, capsys, aa, planted, failing):
    directory = evidence(tmp_path / "ev", aa, planted)
    if "gelu" in (planted or {}):  # the run is marked as planting softmax only
        cand = next((directory / "planted-1").glob("run-20261130*.json"))
        data = json.loads(cand.read_text())
        for b in data["benchmarks"]:
            b.pop("planted", None) if b["kernel"] == "gelu" else None
        cand.write_text(json.dumps(data))
    code, out, _ = cli(capsys, "replay", directory)
    assert code == 1 and "**EXPECTATIONS FAILED**" in out
    failed = {line.split("|")[1].strip() for line in out.splitlines() if "NO (failed)" in line}
    assert failed == {failing}


def test_replay_refuses_a_pair_directory_without_two_runs(tmp_path, capsys):
    directory = evidence(tmp_path / "ev")
    next((directory / "aa-3").glob("run-*.json")).unlink()
    code, _, err = cli(capsys, "replay", directory)
    assert code == 2 and "aa-3: a pair directory holds exactly two run files" in err


def test_committed_h100_evidence_replays_as_recorded():
    """The A/A and planted pairs measured on an H100 (evidence/driver-validation/make.sh), compared as
    `python -m reports compare` does: A/A exit 0 both ways, planted exit 1 naming the planted kernel alone. (The
    leave-one-out figures are docs/validation.md's, from `python -m reports replay`.)"""
    pairs = discover(EVIDENCE)
    if not pairs:
        pytest.skip(f"no driver-validation evidence committed yet under {EVIDENCE.relative_to(ROOT)} (aa-N/, "
                    "planted-N/): produce it on a GPU with evidence/driver-validation/make.sh")
    assert {p.kind for p in pairs} == {"aa", "planted"} and sum(p.kind == "aa" for p in pairs) >= 3
    result = replay(EVIDENCE)
    recorded = [c for c in result.checks if c.mode == "as recorded"]
    failed = [f"{c.pair} {c.direction}: exit {c.exit_code}, expected {c.expected}" for c in recorded if not c.ok]
    assert len(recorded) == 2 * len(pairs) and not failed, "; ".join(failed)


def test_evidence_script_dry_run_lays_out_pairs_and_stops_at_its_budget(tmp_path):
    """On the interpreter (benchmarks skip): the first run lands in aa-1/ and is shared with planted-1/, every run
    that would overrun BUDGET_S (here 1 s, so all after the first) is skipped and logged, pairs left incomplete are
    not compared, and everything is packed into one file."""
    work, tarball = tmp_path / "dv", tmp_path / "dv.tar.gz"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHON=sys.executable, BUDGET_S="1", RESERVE_S="0")
    proc = subprocess.run(["bash", str(ROOT / "evidence" / "driver-validation" / "make.sh"), str(work), "--dry-run",
                           "--tar", str(tarball)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    aa1 = [p.name for p in (work / "aa-1").glob("run-*.json")]
    assert len(aa1) == 1 and [p.name for p in (work / "planted-1").glob("run-*.json")] == aa1
    timings = (work / "logs" / "timings.tsv").read_text().splitlines()
    assert timings[1].startswith("aa-1-a\t") and aa1[0] in timings[1]
    skipped = [line.split("\t")[0] for line in timings if "\tskipped: " in line]
    assert skipped == ["aa-1-b", "planted-1", "aa-2-a", "aa-2-b", "aa-3-a", "aa-3-b"] and "budget 1s" in timings[2]
    assert "aa-1: incomplete, not compared" in proc.stdout
    with tarfile.open(tarball) as tar:
        assert {"dv/logs/timings.tsv", f"dv/aa-1/{aa1[0]}"} <= set(tar.getnames())
