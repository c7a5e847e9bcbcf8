"""What the repository ships: the reference run files, the example report built from them, and the
per-arch autotune caches."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import jsonschema
import pytest

from suite.checks import autotune
from suite.session.results import SCHEMA_PATH
from tests.conftest import ROOT

RUNS = sorted((ROOT / "evidence").glob("*/run-*.json*"))
CACHES = sorted((ROOT / "hardware_profiles" / "autotune").glob("*.json"))


def read_run(path):
    """A committed run file's text, gzipped or not."""
    return (gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()).decode()


@pytest.mark.parametrize("path", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_run_files_validate(path):
    data = json.loads(read_run(path))
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))
    assert data["status"] == "complete"


@pytest.mark.slow
def test_example_report_is_built_from_the_reference_runs(tmp_path):
    reference = sorted((ROOT / "evidence" / "reference").glob("run-*.json*"))
    proc = subprocess.run([sys.executable, "-m", "reports", "build", *map(str, reference), "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    built = json.loads((tmp_path / "summary.json").read_text())
    shipped = json.loads((ROOT / "reports" / "example" / "summary.json").read_text())
    assert built == shipped, ("reports/example is stale: rebuild it with "
                              "`python -m reports build evidence/reference/run-*.json* --out reports/example`")


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


def stale_entries(path, hash_of=autotune.source_hash) -> dict[str, list[str]]:
    """kernel -> why each of its entries in the shipped cache ``path`` no longer matches the kernel as it is: its
    source changed since tuning, the kernel is gone, or its config is no longer among the kernel's configs."""
    from kernels import registry

    registry.load_builtin()
    arch, _, profile = path.stem.partition(".")
    entries, _ = autotune.parse(path, arch, profile or None)
    family = "amd" if arch.startswith("gfx") else "nvidia"
    names = {spec.name: spec for spec in registry.all_specs()}
    found: dict[str, list[str]] = {}
    for key, entry in entries.items():
        spec = names.get(entry["kernel"])
        if spec is None:
            why = "no such kernel any more"
        elif entry["source_hash"] != hash_of(spec):
            why = "kernel source changed since tuning"
        elif entry["config"] != spec.default_config_for(family) and entry["config"] not in spec.configs.get(family, ()):
            why = f"config {json.dumps(entry['config'], sort_keys=True)} is not among the kernel's {family} configs"
        else:
            continue
        found.setdefault(entry["kernel"], []).append(f"{key}: {why}")
    return found


def retune_advice(path, stale: dict[str, list[str]]) -> str:
    arch, _, profile = path.stem.partition(".")
    from hardware_profiles.loader import REPRESENTATIVES

    where = f"a {profile or REPRESENTATIVES.get(arch, arch)} GPU ({arch})"
    backend = "rocm" if arch.startswith("gfx") else "cuda"
    return (f"{path.name}: stale entries for {', '.join(sorted(stale))}; on {where} run: pytest --backend={backend} "
            f"--retune={','.join(sorted(stale))} --co -q, and commit {path.relative_to(ROOT)}\n"
            + "\n".join(f"  {line}" for lines in stale.values() for line in lines[:3]))


@pytest.mark.parametrize("path", CACHES, ids=lambda p: p.name)
def test_every_shipped_cache_entry_matches_its_kernel(path):
    """A kernel changed without retuning runs its default config on every GPU, and nothing else fails: matmul fell
    to 0.71x torch when kernels/_tiles.py changed and five kernels' entries went stale unnoticed."""
    stale = stale_entries(path)
    assert not stale, retune_advice(path, stale)


def test_a_one_character_change_to_a_jit_body_makes_its_entries_stale(monkeypatch):
    """Planted: kernels/_tiles.py (matmul's @triton.jit function) read with one character of its body changed: the
    real source hash of matmul changes, and the check above names matmul's entries and the retune command."""
    from pathlib import Path

    tiles = ROOT / "kernels" / "_tiles.py"
    source = tiles.read_bytes()
    planted = source.replace(b"acc = tl.dot(a, b, acc)", b"acc = tl.dot(a, b, acc )", 1)
    assert planted != source

    class PlantedPath(type(Path())):
        def read_bytes(self):
            return planted if self.resolve() == tiles.resolve() else super().read_bytes()

    path = next(p for p in CACHES if p.name == "sm_90.json")
    assert stale_entries(path) == {}
    monkeypatch.setattr(autotune, "Path", PlantedPath)
    stale = stale_entries(path)
    assert "matmul" in stale and all("kernel source changed since tuning" in why for why in stale["matmul"]), stale
    assert not {"attention", "softmax", "vector_add"} & set(stale)  # kernels outside the file are untouched
    assert "--retune=" in retune_advice(path, stale) and "matmul" in retune_advice(path, stale)
