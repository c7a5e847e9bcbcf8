"""A device's own autotune cache: an H200 (sm_90, like the H100 the arch's file is tuned on) reads and tunes
``sm_90.h200_sxm.json`` and falls back to ``sm_90.json``; the H100 reads the arch's file alone."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import hardware_profiles
from suite.checks import autotune

pytest.importorskip("torch")
from kernels.gelu import SPEC as GELU  # noqa: E402
from kernels.vector_add import SPEC as VECTOR_ADD  # noqa: E402
from tests.checks.test_autotune import entry  # noqa: E402


def device(key: str = "h200_sxm", name: str = "cuda"):
    profile = hardware_profiles.get(key) if key != "detected" else SimpleNamespace(key="detected-sm_90", detected=True)
    return SimpleNamespace(name=name, arch="sm_90", sm_count=132, family="nvidia", device_name=key, details={},
                           profile=profile, supports=lambda dtype: dtype == "fp32")


def write(path, profile, *entries):
    cache = autotune.Cache(path, "sm_90", profile)
    for e in entries:
        cache.entries[autotune.entry_key(e["kernel"], e["dtype"], e["bucket"])] = e
    cache.tuning_runs["r1"] = {"device_name": profile or "h100_sxm"}
    autotune.write(cache)


H100_CFG, H200_CFG = {"BLOCK_SIZE": 1024, "num_warps": 4}, {"BLOCK_SIZE": 4096, "num_warps": 8}


@pytest.fixture
def both(tmp_path):
    """sm_90.json with vector_add and gelu entries; sm_90.h200_sxm.json with vector_add's alone."""
    write(tmp_path / "sm_90.json", None, entry(config=H100_CFG),
          entry(GELU, shape={"M": 4096, "N": 4096}, config={"BLOCK_M": 1, "BLOCK_N": 1024, "num_warps": 4}))
    write(tmp_path / "sm_90.h200_sxm.json", "h200_sxm", entry(config=H200_CFG))
    return tmp_path


def test_only_a_shipped_non_representative_device_has_its_own_file():
    assert autotune.device_profile(device("h200_sxm")) == "h200_sxm"
    assert autotune.device_profile(device("h100_sxm")) is None  # the arch's representative
    assert autotune.device_profile(device("detected")) is None  # no shipped profile matched
    assert autotune.device_profile(device("h200_sxm", name="interpret")) is None
    assert autotune.cache_path("sm_90", "/x", "h200_sxm").name == "sm_90.h200_sxm.json"


def test_h200_reads_its_own_entry_and_falls_back_to_the_arch_file(both):
    cache, fallback = autotune.open_caches(device(), both)
    assert (cache.path.name, cache.status, fallback.path.name, fallback.status) == (
        "sm_90.h200_sxm.json", "ok", "sm_90.json", "ok")
    lookup = autotune.Lookup(device(), cache, fallback)
    assert lookup.resolve(VECTOR_ADD, "fp32", {"N": 1 << 20})[:2] == (H200_CFG, "hit")
    assert lookup.resolve(GELU, "fp32", {"M": 4096, "N": 4096})[:2] == (
        {"BLOCK_M": 1, "BLOCK_N": 1024, "num_warps": 4}, "hit")
    took = lookup.take()
    assert took["lookups"] == {"hit": 2} and took["fallback"] == 1
    # Without the arch's file behind it, gelu has no entry: the default config.
    assert autotune.Lookup(device(), cache).choose(GELU, "fp32", {"M": 4096, "N": 4096})[1] == "miss"


def test_a_stale_device_entry_falls_back_to_a_valid_arch_entry(both):
    write(both / "sm_90.h200_sxm.json", "h200_sxm", entry(config=H200_CFG, source_hash="old"))
    lookup = autotune.Lookup(device(), *autotune.open_caches(device(), both))
    assert lookup.resolve(VECTOR_ADD, "fp32", {"N": 1 << 20})[:2] == (H100_CFG, "hit")
    assert lookup.take()["fallback"] == 1


def test_h100_ignores_the_h200_file(both):
    cache, fallback = autotune.open_caches(device("h100_sxm"), both)
    assert cache.path.name == "sm_90.json" and fallback is None
    assert autotune.Lookup(device("h100_sxm"), cache).choose(VECTOR_ADD, "fp32", {"N": 1 << 20})[0] == H100_CFG


def test_retune_on_an_h200_writes_its_own_file_only(both):
    arch_bytes = (both / "sm_90.json").read_bytes()
    cache, _ = autotune.open_caches(device(), both)
    autotune.retune([GELU], device(), cache, time_config=lambda *a: [1.0, 1.1], progress=lambda m: None)
    assert (both / "sm_90.json").read_bytes() == arch_bytes
    data = json.loads((both / "sm_90.h200_sxm.json").read_text())
    assert data["profile"] == "h200_sxm"
    assert {e["kernel"] for e in data["entries"].values()} == {"vector_add", "gelu"}  # vector_add's entry kept
    # Without a device file yet, the first retune creates it.
    (both / "sm_90.h200_sxm.json").unlink()
    cache, _ = autotune.open_caches(device(), both)
    assert cache.status == "absent"
    autotune.retune([GELU], device(), cache, time_config=lambda *a: [1.0, 1.1], progress=lambda m: None)
    assert json.loads((both / "sm_90.h200_sxm.json").read_text())["profile"] == "h200_sxm"
    assert (both / "sm_90.json").read_bytes() == arch_bytes


def test_a_device_file_of_another_profile_is_refused(both):
    path = both / "sm_90.h200_sxm.json"
    data = json.loads(path.read_text())
    data["profile"] = "h100_sxm"
    path.write_text(json.dumps(data))
    cache, _ = autotune.open_caches(device(), both)
    assert cache.status == "unreadable"
    assert str(path) in cache.error and "h100_sxm" in cache.error and "h200_sxm" in cache.error
    # And an arch file that says it is a device's own is refused where the arch's file is read.
    (both / "sm_90.json").write_text(json.dumps(data))
    cache, _ = autotune.open_caches(device("h100_sxm"), both)
    assert cache.status == "unreadable" and "h100_sxm device's own cache" in cache.error
