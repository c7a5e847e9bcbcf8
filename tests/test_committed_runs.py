"""What the repository ships: the reference run files, the example report built from them, and the
per-arch autotune caches."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from suite.checks import autotune
from suite.session.results import SCHEMA_PATH
from tests.conftest import ROOT

RUNS = sorted((ROOT / "evidence").glob("*/run-*.json"))
CACHES = sorted((ROOT / "hardware_profiles" / "autotune").glob("*.json"))


@pytest.mark.parametrize("path", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_run_files_validate(path):
    data = json.loads(path.read_text())
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))
    assert data["status"] == "complete"


def test_example_report_is_built_from_the_reference_runs(tmp_path):
    reference = sorted((ROOT / "evidence" / "reference").glob("run-*.json"))
    proc = subprocess.run([sys.executable, "-m", "reports", "build", *map(str, reference), "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    built = json.loads((tmp_path / "summary.json").read_text())
    shipped = json.loads((ROOT / "reports" / "example" / "summary.json").read_text())
    assert built == shipped, ("reports/example is stale: rebuild it with "
                              "`python -m reports build evidence/reference/*.json --out reports/example`")


@pytest.mark.parametrize("path", CACHES, ids=lambda p: p.name)
def test_committed_autotune_caches_parse_and_name_real_kernels(path):
    from kernels import registry

    registry.load_builtin()
    arch, _, profile = path.stem.partition(".")  # sm_90.json, or a device's own sm_90.h200_sxm.json
    entries, runs = autotune.parse(path, arch, profile or None)
    assert entries, f"{path} has no entries"
    for key, entry in entries.items():
        spec = registry.get(entry["kernel"])
        assert entry["dtype"] in spec.dtypes, key
        assert entry["tuning_run"] in runs, key
        timed = [t for t in entry["tried"] if t["status"] == "ok"]
        assert entry["config"] == min(timed, key=lambda t: t["median_ms"])["config"], key
