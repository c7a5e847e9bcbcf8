"""suite/tools/bench.py on the CPU: interleaved rounds, disturbance and re-measuring (with scripted timers), the noise-floor
file, the SUITE_BENCH_PLANT hook, the fp8 ceiling's dtype, and one whole benchmark record on the interpreter that
the reports can read."""

from __future__ import annotations

import json
import statistics
import time
from types import SimpleNamespace

import pytest
import torch

from suite.tools import bench

pytest.importorskip("torch")


class ScriptedTimer:
    """Times nothing: returns the times a script gives per function and call, and logs the calls."""

    def __init__(self, script: dict, estimate_ms: float = 1.0) -> None:
        self.script, self.estimate_ms, self.calls = script, estimate_ms, []

    def estimate(self, fn) -> float:
        return self.estimate_ms

    def samples(self, fn, warmup: int, repeat: int) -> list[float]:
        name = fn.__name__
        self.calls.append((name, warmup, repeat))
        index = sum(1 for n, _, _ in self.calls if n == name) - 1
        return [self.script[name](index, i) for i in range(repeat)]


class CpuTimer:
    """Wall-clock times of real calls, for running a whole benchmark on the interpreter."""

    def estimate(self, fn) -> float:
        fn()
        start = time.perf_counter()
        fn()
        return max((time.perf_counter() - start) * 1e3, 1e-3)

    def samples(self, fn, warmup: int, repeat: int) -> list[float]:
        for _ in range(warmup):
            fn()
        out = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1e3)
        return out


def kernel():
    pass


def baseline():
    pass


def steady(ms: float, jitter: float = 0.002):
    return lambda call, i: ms * (1 + jitter * ((i * 7919 + call * 104729) % 11 - 5) / 5)


def test_rounds_alternate_kernel_and_baseline_and_warm_up_first():
    timer = ScriptedTimer({"kernel": steady(1.0), "baseline": steady(2.0)}, estimate_ms=0.5)
    k, b = bench.interleaved_rounds(kernel, baseline, timer)
    assert len(k) == len(b) == bench.ROUNDS
    order = [name for name, _, _ in timer.calls]
    assert order[:6] == ["kernel", "baseline", "baseline", "kernel", "kernel", "baseline"]
    first, later = timer.calls[0], timer.calls[2:]
    assert first[1] == int(bench.FIRST_WARMUP_MS / 0.5) and all(w == int(bench.ROUND_WARMUP_MS / 0.5)
                                                                 for _, w, _ in later)
    assert all(r == int(bench.ROUND_MS / 0.5) for _, _, r in timer.calls)
    slow = ScriptedTimer({"kernel": steady(50.0)}, estimate_ms=50.0)
    k, b = bench.interleaved_rounds(kernel, None, slow)
    assert b is None and all(len(r) == bench.MIN_SAMPLES for r in k)  # a long kernel still gets a median of 3


def rounds(ms: float, factors=(1, 1, 1, 1, 1, 1), n=20, tail: float = 0.0) -> list[list[float]]:
    """Rounds of n samples; tail: the slowest 80% of each round are that much slower than the fastest 20%."""
    return [[ms * f * (1 + (tail if i >= n // 5 else 0.0)) * (1 + 0.001 * i) for i in range(n)] for f in factors]


def test_disturbance_by_spread_by_tail_and_on_either_side():
    lim = bench.limits(None)
    assert bench.disturbance(rounds(1.0), rounds(2.0), lim) == (pytest.approx(0.08, abs=0.1), None)
    score, why = bench.disturbance(rounds(1.0, (1, 1, 1.5, 1, 1, 1)), rounds(2.0), lim)
    assert score > 1 and why.startswith("kernel round medians spread 50% (limit 25%)")
    score, why = bench.disturbance(rounds(1.0, tail=2.0), None, lim)
    assert score > 1 and why.startswith("kernel samples' median 20") and "above their 10th percentile (limit 50%)" in why
    score, why = bench.disturbance(rounds(1.0), rounds(2.0, (1, 1, 1, 1, 1, 2)), lim)
    assert score > 1 and why.startswith("torch baseline round medians spread 100%")


def test_limits_learned_from_the_usual_noise_with_a_minimum():
    assert bench.limits(None) == {**bench.DEFAULT_LIMITS, "source": "default"}
    tight = bench.limits({"spread": 0.01, "tail": 0.005})
    assert tight == {"spread": 0.10, "tail": 0.10, "source": "noise floor"}
    loose = bench.limits({"spread": 0.05, "tail": None})
    assert loose["spread"] == pytest.approx(0.20) and loose["tail"] == bench.DEFAULT_LIMITS["tail"]


def test_a_disturbed_measurement_is_measured_again():
    """The first attempt's third round ran at a third of the speed (the layernorm case); the second is clean."""
    per_round = int(bench.ROUND_MS / 1.0)

    def disturbed_then_clean(call, i):
        return 3.0 if call == 2 else 1.0 + 0.001 * i

    timer = ScriptedTimer({"kernel": disturbed_then_clean, "baseline": steady(2.0)})
    out = bench.measure(kernel, baseline, timer)
    r = out["rounds"]
    assert r["attempts"] == 2 and r["disturbed"] is False and r["disturbance"] is None
    assert max(r["kernel_ms"]) < 1.1 and r["samples_per_round"] == {"kernel": per_round, "baseline": per_round}
    assert len(timer.calls) == 2 * 2 * bench.ROUNDS


def test_a_measurement_still_disturbed_is_kept_least_disturbed_and_marked():
    severity = {0: 3.0, 1: 1.6, 2: 2.5}  # the slow round of attempts 1, 2 and 3

    def always(call, i):
        attempt, round_ = divmod(call, bench.ROUNDS)
        return severity[attempt] if round_ == 2 else 1.0

    out = bench.measure(kernel, None, ScriptedTimer({"kernel": always}))
    r = out["rounds"]
    assert r["attempts"] == bench.MAX_ATTEMPTS and r["disturbed"] is True
    assert max(r["kernel_ms"]) == pytest.approx(1.6) and "spread 60%" in r["disturbance"]


@pytest.mark.parametrize(("text", "error"), [
    ("softmax", "expected KERNEL=FRACTION"), ("softmax=fast", "expected KERNEL=FRACTION"),
    ("softmax=0", "0 < FRACTION <= 10"), ("softmax=nan", "0 < FRACTION"), ("nosuch=0.2", "no kernel 'nosuch'"),
])
def test_plant_hook_refuses_what_it_cannot_read(text, error):
    with pytest.raises(ValueError, match=error) as info:
        bench.parse_plant(text, ["softmax", "gelu"])
    assert str(info.value).startswith(f"SUITE_BENCH_PLANT={text!r}")


def test_plant_hook_reads_kernels_and_fractions():
    assert bench.parse_plant(None, ["softmax"]) == {}
    assert bench.parse_plant("softmax=0.25, gelu=1", ["softmax", "gelu"]) == {"softmax": 0.25, "gelu": 1.0}


def test_noise_floor_file_missing_refused_unreadable_and_read(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "NOISE_DIR", tmp_path)
    monkeypatch.delenv(bench.FLOOR_VARIABLE, raising=False)
    entries, note = bench.noise_floor("sm_90")
    assert entries == {} and "no noise floor for sm_90" in note["note"]
    monkeypatch.setenv(bench.FLOOR_VARIABLE, "none")
    assert bench.noise_floor("sm_90")[1]["note"] == "SUITE_NOISE_FLOOR=none: no noise floor"
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    monkeypatch.setenv(bench.FLOOR_VARIABLE, str(tmp_path / "bad.json"))
    with pytest.raises(ValueError, match="SUITE_NOISE_FLOOR: .*bad.json: unusable noise-floor file: format"):
        bench.noise_floor("sm_90")


def test_noise_floor_learned_by_reports_is_read_by_the_suite(tmp_path, monkeypatch):
    """The file `python -m reports noise-floor` writes is what the suite reads, with the same benchmark keys."""
    from reports import changes, noise
    from reports.loading import load_runs
    from tests.report_helpers import perf_run, write

    runs = load_runs([write(tmp_path / f"a{i}.json", perf_run(f"r{i}", i)) for i in (1, 2, 3)])
    (tmp_path / "sm_90.json").write_text(json.dumps(noise.learn(runs)))
    monkeypatch.delenv(bench.FLOOR_VARIABLE, raising=False)
    monkeypatch.setattr(bench, "NOISE_DIR", tmp_path)
    entries, note = bench.noise_floor("sm_90")
    record = runs[0].data["benchmarks"][0]
    key = bench.floor_key(record["kernel"], record["dtype"], record["shape"])
    assert key == changes.key(record) and entries[key]["floor"] > 0 and entries[key]["spread"] is not None
    assert note["runs"] == 3 and note["file"] == str(tmp_path / "sm_90.json") and entries["*"]["floor"] > 0
    assert bench.limits(entries[key])["source"] == "noise floor"


@pytest.mark.parametrize(("dtypes", "expected"), [(("fp32", "fp8e4nv", "fp8e5"), "float8_e4m3fn"),
                                                  (("fp16", "fp8e4b8"), "float8_e4m3fnuz"), (("fp32", "bf16"), None)])
def test_fp8_ceiling_uses_the_profiles_e4m3_flavour(dtypes, expected):
    dtype = bench.fp8_matmul_dtype(SimpleNamespace(dtypes=dtypes))
    assert (None if dtype is None else str(dtype).removeprefix("torch.")) == expected


def test_fp8_matmul_is_compute_bound_against_an_fp8_ceiling():
    from kernels.fp8 import MATMUL_SPEC
    from kernels.spec import Case

    shape = {"M": 8192, "N": 8192, "K": 8192}
    case = Case(MATMUL_SPEC.name, "fp8e4nv", shape, seed=0)
    ceilings = {"copy_gbps": 3000.0, "matmul_tflops": {"fp8": 1300.0}}
    assert bench.is_compute_bound(MATMUL_SPEC, case, "fp8e4nv", ceilings)
    assert not bench.is_compute_bound(MATMUL_SPEC, case, "fp8e4nv", {"copy_gbps": 3000.0, "matmul_tflops": {}})


def test_a_whole_benchmark_on_the_interpreter_gives_a_record_the_reports_read(request, monkeypatch):
    """vector_add timed by wall clock on the CPU interpreter, with a noise floor and the plant hook (its device-side
    spin replaced by nothing): the record matches the run-file schema and the reports read its rounds."""
    import jsonschema

    from kernels.vector_add import SPEC
    from reports import timing
    from reports.loading import REPORT_NEEDS, SCHEMA_PATH
    from suite.plugin.context import BACKEND

    backend = request.config.stash[BACKEND]
    if backend.name != "interpret":
        pytest.skip("runs on the CPU interpreter")
    monkeypatch.setattr(bench.torch.cuda, "_sleep", lambda cycles: None)
    shape = {"N": 1000}
    floors = {bench.floor_key("vector_add", "fp32", shape): {"floor": 0.04, "spread": 0.5, "tail": 0.5}}
    ceilings = {"copy_gbps": 3000.0, "matmul_tflops": {"fp32": 400.0},
                "datasheet": {"bandwidth_tbs": 3.35, "tflops": {"fp32": 494.7}}}
    record = bench.benchmark(SPEC, "fp32", shape, backend, ceilings, floors, plant=0.25, timer=CpuTimer())
    run_schema = json.loads(SCHEMA_PATH.read_text())
    item = {**run_schema["properties"]["benchmarks"]["items"], "$defs": run_schema["$defs"]}
    jsonschema.validate(json.loads(json.dumps(record)), item)
    jsonschema.validate({"benchmarks": [json.loads(json.dumps(record))]}, REPORT_NEEDS)
    r = timing.rounds(record)
    assert r is not None and len(r.kernel) == len(r.baseline) == bench.ROUNDS and record["correct"] is True
    assert record["noise_floor"] == 0.04 and record["rounds"]["limits"]["source"] == "noise floor"
    assert record["planted"]["hook"] == "SUITE_BENCH_PLANT" and record["planted"]["fraction"] == 0.25
    assert record["median_ms"] == statistics.median(record["rounds"]["kernel_ms"]) > 0


class WallClockEvent:
    """torch.cuda.Event's interface, timed by the host clock."""

    def __init__(self, enable_timing: bool = True) -> None:
        self.t = None

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: WallClockEvent) -> float:
        return (end.t - self.t) * 1e3


def test_the_gpu_timer_flushes_before_every_timed_call_and_times_between_events():
    """bench.Timer's loops, with the device's events and L2 flush replaced by the host clock and a counter."""
    flushes, calls = [], []
    timer = bench.Timer.__new__(bench.Timer)
    timer.driver = SimpleNamespace(clear_cache=lambda cache: flushes.append(len(calls)))
    timer.device = SimpleNamespace(Event=WallClockEvent, synchronize=lambda: None)
    timer.cache = object()

    def sleepy():
        calls.append(1)
        time.sleep(0.002)

    assert 1.5 < timer.estimate(sleepy) < 50 and len(calls) == 6 and len(flushes) == 5
    calls.clear()
    flushes.clear()
    out = timer.samples(sleepy, 2, 4)
    assert len(out) == 4 and all(1.5 < t < 50 for t in out)
    assert flushes == [2, 3, 4, 5]  # after the 2 warm-up calls, one flush before each timed call


def test_a_benchmark_refuses_scalar_inputs_that_would_sync_every_timed_call():
    """Benchmarks draw inputs under torch.device(<gpu>): a 0-d tensor made there is read by the launcher (float(p),
    bool(causal)) with a device sync inside every timed call, kernel and baseline alike. Dropout measured 0.79-1.03x
    torch that way on an H100, 1.16-1.17x with its scalars on the CPU. Planted: a spec that makes its scalar with no
    device, drawn under the meta device; nothing is timed."""
    import dataclasses

    from kernels.dropout import SPEC

    def make_inputs(case, device):
        return {"x": torch.empty(4, 4), "p": torch.tensor(0.5)}  # no device=: follows torch.device(...)

    planted = dataclasses.replace(SPEC, name="dropout_device_scalar", make_inputs=make_inputs)
    backend = SimpleNamespace(device="meta", family="nvidia")

    def never(*args, **kwargs):
        raise AssertionError("timed a benchmark whose inputs sync the device")

    with pytest.raises(bench.TimedSync, match=r"'p'.*0-d tensor\(s\) on meta.*device='cpu'"):
        bench.benchmark(planted, "fp32", {"M": 4, "N": 4, "P": 50}, backend, {}, timer=SimpleNamespace(samples=never))
    assert bench.device_scalars({"x": torch.empty(2, device="meta"), "p": torch.tensor(0.5, device="meta"),
                                 "seed": torch.tensor(3)}) == ["p"]


def test_no_shipped_kernel_makes_a_scalar_input_on_the_default_device():
    """Every built-in spec's benchmark inputs: no 0-d input is made without an explicit device (under drawn_on(<gpu>)
    it would land on the GPU). Seen on the CPU by watching the factory calls, so no GPU is needed."""
    from torch.overrides import TorchFunctionMode

    from kernels import registry
    from kernels.spec import Case

    class Undeviced(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.made: set[int] = set()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if (func in (torch.tensor, torch.as_tensor, torch.scalar_tensor) and kwargs.get("device") is None
                    and isinstance(out, torch.Tensor) and out.dim() == 0):
                self.made.add(id(out))
            return out

    registry.load_builtin()
    found, seen = {}, 0
    for spec in registry.all_specs():
        for shape in spec.benchmark_shapes[:1]:
            small = {k: (v if any(d.name == k and d.choices for d in spec.dims) else min(v, 64)) for k, v in shape.items()}
            with Undeviced() as mode:
                inputs = spec.make_inputs(Case(spec.name, spec.dtypes[0], small, seed=0), "cpu")
            seen += 1
            if names := [n for n, t in inputs.items() if id(t) in mode.made]:
                found[spec.name] = names
    assert seen >= 15, seen
    assert not found, f"0-d inputs that benchmarks would make on the GPU: {found}"
