"""The worked example of toolchain validation (docs/validation.md#toolchain-validation, evidence/toolchain/): `python -m
reports compare` of the committed baseline (Triton 3.6.0) and candidate (Triton 3.9.0) runs names the upgrade and the
compile-matrix changes it found, and exits 0; an A/A pair on one toolchain names neither, so the example's check
fails on it. The run files are committed gzipped (compare reads plain JSON), so they are validated here too."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

from suite.session.results import SCHEMA_PATH
from tests.conftest import ROOT, run_python

EVIDENCE = ROOT / "evidence" / "toolchain"
FOLDERS = {"base": "triton-3.6.0", "cand": "triton-3.9.0", "again": "triton-3.6.0-again"}
TARGETS = {"sm_80", "sm_90", "sm_100", "gfx90a", "gfx942", "gfx950"}
TOOLCHAIN = "Toolchain changed: triton 3.6.0 -> 3.9.0, numpy 2.3.5 -> 2.4.6."
COMPILES = "Compile matrix: 766 compile(s) in both runs; 165 registers, 7 spills appeared, 2 spills gone."
EXIT_CODE = 0  # as observed: register and spill changes are findings; only a compile that now fails is a regression


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Plain copies of the committed run files, in folders named as in evidence/toolchain/."""
    out = tmp_path_factory.mktemp("toolchain")
    paths = {}
    for name, folder in FOLDERS.items():
        [gz] = sorted((EVIDENCE / folder).glob("run-*.json.gz"))
        path = out / folder / gz.name.removesuffix(".gz")
        path.parent.mkdir()
        path.write_bytes(gzip.decompress(gz.read_bytes()))
        paths[name] = path
    return paths


def compare(*args: object) -> subprocess.CompletedProcess:
    return run_python("reports", "compare", *map(str, args), cwd=ROOT, timeout=300)


def verdict_block(markdown: str) -> str:
    """From the verdict to the noise-floor line: what compare concluded, without the files' paths."""
    return markdown.split("## Verdict", 1)[1].split("Noise floor:", 1)[0]


def compile_rows(markdown: str) -> list[list[str]]:
    section = markdown.split("## Compile changes", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    return rows[1:]  # without the header


def check_upgrade_comparison(proc: subprocess.CompletedProcess) -> None:
    """What the example shows: the upgrade named, its compile-matrix changes on all six targets, the exit code."""
    assert proc.returncode == EXIT_CODE, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "**No regressions**" in proc.stdout
    assert TOOLCHAIN in proc.stdout
    assert COMPILES in proc.stdout
    rows = compile_rows(proc.stdout)
    assert {r[1] for r in rows} == TARGETS
    assert {r[2] for r in rows} == {"registers", "spills appeared", "spills gone"}
    assert sum(int(r[3]) for r in rows if r[2] == "registers") == 165


@pytest.mark.parametrize("name", FOLDERS)
def test_committed_runs_validate_and_record_their_toolchain(runs, name):
    data = json.loads(runs[name].read_text())
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))
    assert data["status"] == "complete"
    assert data["environment"]["backend"] == "interpret"
    assert data["environment"]["triton"] == FOLDERS[name].split("-")[1]
    assert {r["target"] for r in data["compiles"]} == TARGETS


def test_compare_names_the_upgrade_and_its_compile_changes(runs):
    proc = compare(runs["base"], runs["cand"])
    check_upgrade_comparison(proc)
    committed = (EVIDENCE / "compare.txt").read_text()
    assert verdict_block(committed) == verdict_block(proc.stdout), "evidence/toolchain/compare.txt is stale"
    assert compile_rows(committed) == compile_rows(proc.stdout)
    result = json.loads(compare(runs["base"], runs["cand"], "--json").stdout)
    assert result["exit_code"] == EXIT_CODE and result["verdict"] == "No regressions"
    assert result["toolchain"] == [{"name": "triton", "base": "3.6.0", "candidate": "3.9.0"},
                                   {"name": "numpy", "base": "2.3.5", "candidate": "2.4.6"}]
    assert result["compared"] == {"compiles": 766, "tests": 205, "cases": 981, "benchmarks": 0}
    assert result["compile_changes"] == json.loads((EVIDENCE / "compare.json").read_text())["compile_changes"]


def test_a_same_toolchain_pair_fails_the_example_check(runs):
    """Two runs of Triton 3.6.0, the same command: no toolchain line, no compile change; the check above rejects it."""
    proc = compare(runs["base"], runs["again"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Toolchain changed" not in proc.stdout
    assert "Toolchain: unchanged" in proc.stdout
    assert "Compile matrix: 766 compile(s) in both runs; no change." in proc.stdout
    assert not re.search(r"^\| \S+ +\| (sm|gfx)\w+ ", proc.stdout, re.M)
    with pytest.raises(AssertionError):
        check_upgrade_comparison(proc)


def test_compare_reads_gzipped_run_files_as_committed(tmp_path):
    """The committed evidence is gzipped: compare reads it as it lies; a truncated gzip is named, not a traceback."""
    from reports.loading import RunFileError, load_run

    runs = sorted((ROOT / "evidence" / "toolchain").glob("triton-*/run-*.json.gz"))
    assert len(runs) >= 2, runs
    plain = tmp_path / "run.json"
    plain.write_bytes(gzip.decompress(runs[0].read_bytes()))
    assert load_run(runs[0]).data == load_run(plain).data
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(runs[0].read_bytes()[:200])
    with pytest.raises(RunFileError, match="not a run file: corrupt or truncated gzip data"):
        load_run(cut)
