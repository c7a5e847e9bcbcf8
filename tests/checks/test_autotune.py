"""Per-arch autotune caches: buckets, hit / nearest / miss / stale lookups, unreadable and foreign
files, --retune's choice and its atomic write, and a normal run that times nothing."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import triton

from suite.checks import autotune

pytest.importorskip("torch")
from kernels.attention import SPEC as ATTENTION  # noqa: E402
from kernels.vector_add import SPEC as VECTOR_ADD  # noqa: E402


def gpu(arch="sm_90", sm_count=132, family="nvidia"):
    return SimpleNamespace(arch=arch, sm_count=sm_count, family=family, device_name="Test GPU", details={},
                           supports=lambda dtype: dtype != "bf16")


def entry(spec=VECTOR_ADD, dtype="fp32", shape=None, config=None, **over):
    shape = shape or {"N": 1 << 20}
    e = {"kernel": spec.name, "dtype": dtype, "bucket": autotune.bucket_of(spec, shape), "shape": shape,
         "source_hash": autotune.source_hash(spec), "arch": "sm_90", "sm_count": 132, "triton": triton.__version__,
         "config": config or {"BLOCK_SIZE": 4096, "num_warps": 8}, "default_config": spec.default_config_for("nvidia"),
         "tried": [], "tuning_run": "r1"}
    e.update(over)
    return e


def cache_with(tmp_path: Path, *entries, arch="sm_90") -> autotune.Cache:
    cache = autotune.Cache(tmp_path / f"{arch}.json", arch)
    for e in entries:
        cache.entries[autotune.entry_key(e["kernel"], e["dtype"], e["bucket"])] = e
    cache.tuning_runs["r1"] = {"device_name": "Test GPU"}
    autotune.write(cache)
    return autotune.load(cache.path, arch)


# --- buckets --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("n", "bucket"), [(1, 1), (2, 2), (3, 4), (1000, 1024), (1024, 1024), (1025, 2048)])
def test_bucket_rounds_up_to_a_power_of_two(n, bucket):
    assert autotune.bucket_of(VECTOR_ADD, {"N": n}) == {"N": bucket}


def test_bucket_keeps_dims_with_fixed_choices_exact():
    shape = {"B": 3, "H": 5, "S": 100, "D": 64, "CAUSAL": 1}
    assert autotune.bucket_of(ATTENTION, shape) == {"B": 4, "H": 8, "S": 128, "D": 64, "CAUSAL": 1}


def test_random_shapes_in_one_bucket_hit_one_entry(tmp_path):
    cache = cache_with(tmp_path, entry(shape={"N": 4096}))
    lookup = autotune.Lookup(gpu(), cache)
    for n in (2049, 3000, 4095, 4096):
        assert lookup.choose(VECTOR_ADD, "fp32", {"N": n})[1] == "hit"
    assert lookup.choose(VECTOR_ADD, "fp32", {"N": 4097})[1] == "nearest"


# --- lookups ----------------------------------------------------------------------------------------

def test_hit_uses_the_cached_config(tmp_path):
    cache = cache_with(tmp_path, entry(shape={"N": 1 << 20}, config={"BLOCK_SIZE": 2048, "num_warps": 8}))
    lookup = autotune.Lookup(gpu(), cache)
    assert lookup.resolve(VECTOR_ADD, "fp32", {"N": 1_000_000})[0] == {"BLOCK_SIZE": 2048, "num_warps": 8}
    assert lookup.take()["lookups"] == {"hit": 1}
    assert lookup.take() is None  # counts are handed over once


def test_nearest_bucket_when_the_exact_one_was_not_tuned(tmp_path):
    small = entry(shape={"N": 1 << 10}, config={"BLOCK_SIZE": 512, "num_warps": 4})
    large = entry(shape={"N": 1 << 24}, config={"BLOCK_SIZE": 4096, "num_warps": 8})
    lookup = autotune.Lookup(gpu(), cache_with(tmp_path, small, large))
    assert lookup.choose(VECTOR_ADD, "fp32", {"N": 3000}) [:2] == ({"BLOCK_SIZE": 512, "num_warps": 4}, "nearest")
    assert lookup.choose(VECTOR_ADD, "fp32", {"N": 1 << 22})[:2] == ({"BLOCK_SIZE": 4096, "num_warps": 8}, "nearest")


def test_nearest_never_crosses_a_fixed_choice(tmp_path):
    causal = entry(spec=ATTENTION, dtype="fp16", shape={"B": 4, "H": 32, "S": 4096, "D": 128, "CAUSAL": 1},
                   config={"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2})
    lookup = autotune.Lookup(gpu(), cache_with(tmp_path, causal))
    assert lookup.choose(ATTENTION, "fp16", {"B": 1, "H": 2, "S": 30, "D": 128, "CAUSAL": 1})[1] == "nearest"
    config, how, _ = lookup.choose(ATTENTION, "fp16", {"B": 1, "H": 2, "S": 30, "D": 64, "CAUSAL": 1})
    assert (config, how) == (ATTENTION.default_config_for("nvidia"), "miss")


def test_miss_falls_back_to_the_family_default(tmp_path):
    lookup = autotune.Lookup(gpu(), cache_with(tmp_path, entry(dtype="fp16")))
    assert lookup.resolve(VECTOR_ADD, "fp32", {"N": 10})[0] == VECTOR_ADD.default_config_for("nvidia")
    amd = autotune.Lookup(gpu(family="amd"), autotune.load(tmp_path / "none.json", "sm_90"))
    assert amd.resolve(VECTOR_ADD, "fp32", {"N": 10})[0] == VECTOR_ADD.default_config_for("amd")
    assert amd.take()["lookups"] == {"miss": 1}


@pytest.mark.parametrize(("change", "why"), [({"source_hash": "0" * 16}, "source changed"),
                                             ({"triton": "0.0.1"}, "Triton 0.0.1"),
                                             ({"sm_count": 114}, "114 SMs")])
def test_stale_entry_is_reported_and_not_used(tmp_path, change, why):
    cache = cache_with(tmp_path, entry(config={"BLOCK_SIZE": 4096, "num_warps": 8}, **change))
    lookup = autotune.Lookup(gpu(), cache)
    assert lookup.resolve(VECTOR_ADD, "fp32", {"N": 1 << 20})[0] == VECTOR_ADD.default_config_for("nvidia")
    counts = lookup.take()
    assert counts["lookups"] == {"stale": 1}
    assert why in counts["stale_kernels"]["vector_add"]


def test_a_fresh_entry_beats_a_stale_one(tmp_path):
    stale = entry(shape={"N": 1 << 20}, triton="0.0.1")
    fresh = entry(shape={"N": 1 << 10}, config={"BLOCK_SIZE": 512, "num_warps": 4})
    lookup = autotune.Lookup(gpu(), cache_with(tmp_path, stale, fresh))
    assert lookup.choose(VECTOR_ADD, "fp32", {"N": 1 << 20})[:2] == ({"BLOCK_SIZE": 512, "num_warps": 4}, "nearest")


# --- unreadable and foreign files ---------------------------------------------------------------------

@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "not valid JSON (line 1 column 2"),
    ("[]", "expected a JSON object"),
    ('{"schema": "other/9", "arch": "sm_90", "entries": {}}', "schema is 'other/9'"),
    ('{"schema": "autotune-cache/1", "arch": "gfx942", "entries": {}}', "foreign file"),
    ('{"schema": "autotune-cache/1", "arch": "sm_90", "entries": {"k": {"kernel": "x"}}}', "field 'dtype' missing"),
    (json.dumps({"schema": "autotune-cache/1", "arch": "sm_90",
                 "entries": {"vector_add/fp32/N=4096": entry(shape={"N": 4096}, bucket={"N": "4096"})}}),
     "bucket value(s) ['N'] are not integers"),
])
def test_unreadable_file_is_named_and_never_overwritten(tmp_path, text, says):
    path = tmp_path / "sm_90.json"
    path.write_text(text)
    cache = autotune.load(path, "sm_90")
    assert cache.status == "unreadable"
    assert str(path) in cache.error and says in cache.error
    lookup = autotune.Lookup(gpu(), cache)
    assert lookup.resolve(VECTOR_ADD, "fp32", {"N": 8})[0] == VECTOR_ADD.default_config_for("nvidia")
    with pytest.raises(autotune.CacheError, match="refusing to overwrite"):
        autotune.write(cache)
    with pytest.raises(autotune.CacheError, match="refusing to overwrite"):
        autotune.retune([VECTOR_ADD], gpu(), cache, time_config=lambda *a: [1.0])
    assert path.read_text() == text


def test_entry_whose_key_does_not_match_its_fields(tmp_path):
    e = entry()
    path = tmp_path / "sm_90.json"
    path.write_text(json.dumps({"schema": autotune.SCHEMA, "arch": "sm_90", "entries": {"vector_add/fp16/N=1": e}}))
    cache = autotune.load(path, "sm_90")
    assert cache.status == "unreadable" and "does not match its kernel/dtype/bucket" in cache.error


# --- retune -------------------------------------------------------------------------------------------

def fake_timer(ms_by_block):
    calls = []

    def time_config(spec, dtype, shape, config):
        calls.append((spec.name, dtype, dict(shape), dict(config)))
        if config["BLOCK_SIZE"] == 2048 and config["num_warps"] == 4:
            raise RuntimeError("out of resources")
        return [ms_by_block[config["BLOCK_SIZE"]] * (1 + 0.01 * i) for i in range(5)]

    return time_config, calls


def test_retune_times_every_valid_config_and_keeps_the_fastest(tmp_path):
    cache = autotune.load(tmp_path / "sm_90.json", "sm_90")
    time_config, calls = fake_timer({512: 3.0, 1024: 2.0, 2048: 1.5, 4096: 1.0})
    pruned = {"BLOCK_SIZE": 512, "num_warps": 8}
    messages = []
    new = autotune.retune([VECTOR_ADD], gpu(), cache, time_config=time_config,
                          compile_record=lambda s, d, c: {"status": "ok", "spills": c == pruned},
                          progress=messages.append)
    # fp32 and fp16 (bf16 unsupported by this GPU) x two benchmark shapes.
    assert [(e["dtype"], e["shape"]) for e in new] == [(d, dict(s)) for d in ("fp32", "fp16")
                                                       for s in VECTOR_ADD.benchmark_shapes]
    e = new[0]
    assert e["config"]["BLOCK_SIZE"] == 4096
    assert e["default_config"] == VECTOR_ADD.default_config_for("nvidia")
    assert e["speedup_vs_default"] == pytest.approx(2.0, rel=0.01)  # default BLOCK_SIZE 1024 at 2.0 ms
    status = {json.dumps(t["config"], sort_keys=True): t["status"] for t in e["tried"]}
    assert status[json.dumps(pruned, sort_keys=True)] == "pruned"
    assert status[json.dumps({"BLOCK_SIZE": 2048, "num_warps": 4}, sort_keys=True)] == "error"
    assert all(t["median_ms"] > 0 for t in e["tried"] if t["status"] == "ok")
    assert pruned not in [c[3] for c in calls]  # pruned configs are never timed
    assert any("[1/4] vector_add fp32" in m for m in messages)
    on_disk = json.loads((tmp_path / "sm_90.json").read_text())
    assert on_disk["schema"] == autotune.SCHEMA and len(on_disk["entries"]) == 4
    assert set(on_disk["tuning_runs"]) == {e["tuning_run"]}
    # The new cache serves lookups as hits, and a retune of one kernel keeps the others' entries.
    lookup = autotune.Lookup(gpu(), autotune.load(tmp_path / "sm_90.json", "sm_90"))
    assert lookup.choose(VECTOR_ADD, "fp32", dict(VECTOR_ADD.benchmark_shapes[0]))[1] == "hit"
    cache2 = autotune.load(tmp_path / "sm_90.json", "sm_90")
    from kernels.gelu import SPEC as GELU

    autotune.retune([GELU], gpu(), cache2, time_config=lambda *a: [1.0, 1.1], progress=lambda m: None)
    kernels = {e["kernel"] for e in json.loads((tmp_path / "sm_90.json").read_text())["entries"].values()}
    assert kernels == {"vector_add", "gelu"}


def test_candidates_refuse_the_other_vendors_options():
    import dataclasses

    bad = dataclasses.replace(VECTOR_ADD, configs={"nvidia": ({"BLOCK_SIZE": 256, "num_warps": 4, "waves_per_eu": 2},)})
    with pytest.raises(ValueError, match="amd-only option"):
        autotune.candidates(bad, "nvidia")
    assert autotune.candidates(VECTOR_ADD, "nvidia")[0] == VECTOR_ADD.default_config_for("nvidia")


def test_do_bench_calls_are_counted_outside_declared_benchmarks(monkeypatch):
    import triton.testing

    monkeypatch.setattr(triton.testing, "do_bench", lambda fn, **kw: [1.0])
    lookup = autotune.Lookup(gpu(), None)
    autotune.activate(lookup)
    try:
        autotune.count_do_bench()
        with autotune.purpose("benchmark"):
            triton.testing.do_bench(lambda: None)
        assert lookup.tuning_benchmarks == 0
        triton.testing.do_bench(lambda: None)
        assert lookup.tuning_benchmarks == 1
    finally:
        autotune.activate(None)


# --- through pytest, on the interpreter (which reads a cache only from an explicit --autotune-dir) ----------

def interpreter_entry(config):
    e = entry(shape={"N": 64}, config=config, arch="interpreter", sm_count=1)
    return e


def test_run_with_a_cache_counts_hits_and_times_nothing(run_suite, tmp_path):
    cache_dir = tmp_path / "cache"
    cache = autotune.Cache(cache_dir / "interpreter.json", "interpreter")
    for e in (interpreter_entry({"BLOCK_SIZE": 64, "num_warps": 4}),):
        cache.entries[autotune.entry_key(e["kernel"], e["dtype"], e["bucket"])] = e
    autotune.write(cache)
    before = cache.path.read_bytes()
    run = run_suite("suite/test_kernels.py", "--kernels=vector_add", f"--autotune-dir={cache_dir}",
                    "-k", "fp32 or fp16")
    assert run.returncode == 0, run.output[-3000:]
    a = run.run_data()["autotune"]
    assert a["cache_status"] == "ok" and a["cache_entries"] == 1
    assert a["hits"] + a["nearest"] > 0  # fp32 cases all land on the one fp32 entry
    assert a["misses"] > 0  # fp16 has no entry
    assert a["tuning_benchmarks"] == 0
    assert "tuning benchmarks run: 0" in run.output
    assert cache.path.read_bytes() == before


def test_run_with_an_unreadable_cache_goes_on_with_defaults(run_suite, tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    bad = cache_dir / "interpreter.json"
    bad.write_text('{"schema": "autotune-cache/1", "arch": "interpreter", "entries": [')
    run = run_suite("suite/test_kernels.py", "--kernels=vector_add", f"--autotune-dir={cache_dir}", "-k", "fp32")
    assert run.returncode == 0, run.output[-3000:]
    assert f"{bad}: not valid JSON" in run.output
    a = run.run_data()["autotune"]
    assert a["cache_status"] == "unreadable" and a["misses"] > 0 and a["hits"] == 0
    assert bad.read_text().endswith('"entries": [')


def test_retune_on_the_interpreter_is_refused(run_suite):
    run = run_suite("--retune", "--backend=interpret")
    assert run.returncode == 4
    assert "--retune times configs on a GPU" in run.output


def test_retune_saves_a_kernel_whose_last_shape_ran_no_config(tmp_path):
    from kernels.gelu import SPEC as GELU

    last = dict(GELU.benchmark_shapes[-1])

    def time_config(spec, dtype, shape, config):
        if spec is GELU and dict(shape) == last:
            raise RuntimeError("out of resources")
        return [1.0, 1.1]

    cache = autotune.load(tmp_path / "sm_90.json", "sm_90")
    new = autotune.retune([VECTOR_ADD, GELU], gpu(), cache, time_config=time_config, progress=lambda m: None)
    on_disk = json.loads((tmp_path / "sm_90.json").read_text())["entries"]
    assert len(new) == len(on_disk) and {e["kernel"] for e in new} == {"vector_add", "gelu"}


def test_retune_stops_at_a_faulting_config_and_keeps_finished_kernels(tmp_path):
    from kernels.gelu import SPEC as GELU

    def time_config(spec, dtype, shape, config):
        if spec is GELU:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return [1.0, 1.1]

    cache = autotune.load(tmp_path / "sm_90.json", "sm_90")
    with pytest.raises(autotune.CacheError, match="retune stopped: gelu .* faulted"):
        autotune.retune([VECTOR_ADD, GELU], gpu(), cache, time_config=time_config, progress=lambda m: None)
    on_disk = json.loads((tmp_path / "sm_90.json").read_text())["entries"]
    assert {e["kernel"] for e in on_disk.values()} == {"vector_add"}


def test_a_disturbed_timing_is_measured_again_before_it_counts(tmp_path):
    """The default config timed while something else ran (spread 25% of its median, the others 1%) made a tuned
    config look 3.5x faster on an H100; it is re-measured, and the steadier measurement is kept."""
    calls = []

    def time_config(spec, dtype, shape, config):
        calls.append(dict(config))
        if config == {"BLOCK_SIZE": 1024, "num_warps": 4} and calls.count(config) == 1:
            return [0.04, 0.04, 0.14, 0.14, 0.14, 0.2, 0.2, 0.2]  # disturbed
        return [0.039 * (1 + 0.002 * i) for i in range(8)]

    cache = autotune.load(tmp_path / "sm_90.json", "sm_90")
    messages = []
    new = autotune.retune([VECTOR_ADD], gpu(), cache, time_config=time_config, progress=messages.append)
    e = new[0]
    default = next(t for t in e["tried"] if t["config"] == {"BLOCK_SIZE": 1024, "num_warps": 4})
    assert default["remeasured"] and default["median_ms"] < 0.05
    assert e["speedup_vs_default"] == pytest.approx(1.0, abs=0.02)
    assert any("re-measured" in m for m in messages)
    steady = [t for t in e["tried"] if t["status"] == "ok" and t is not default]
    assert not any(t.get("remeasured") for t in steady)  # a steady timing is taken once
