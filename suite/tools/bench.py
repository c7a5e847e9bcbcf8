"""Benchmarks: interleaved timing rounds of the kernel and its torch baseline, roofline efficiency against ceilings
measured in the same run and against the profile's datasheet peaks, and speed-up over torch.

Timing (see docs/performance.md): each benchmark is timed in ROUNDS rounds; a round times the kernel and
then its torch baseline (the order alternates between rounds), each call preceded by an L2 flush and timed with
device events as triton.testing.do_bench does. The per-round kernel/torch ratio cancels drift of the machine's state
(clocks, temperature) that moves both. A measurement whose rounds disagree, or whose samples have a long slow tail,
beyond the limits is disturbed: it is measured again, up to MAX_ATTEMPTS times in all, and the least disturbed
attempt is kept and marked disturbed if it still is, so that a comparison calls it inconclusive.

The limits come from the arch's noise-floor file, reports/noise/<arch>.json (learned from A/A runs by
`python -m reports noise-floor`), whose floors this writes into each record for `python -m reports compare`;
without one, fixed defaults. Test hook: SUITE_BENCH_PLANT=KERNEL=FRACTION[,...] makes a kernel slower on purpose
(a device-side spin of FRACTION times its own time after each launch), recorded in the run file as "planted"."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernels.inputs import drawn_on
from kernels.spec import DTYPES, Case, KernelSpec
from reports import floor_file  # the reports' check of noise-floor files (standard library only)
from suite.checks import autotune
from suite.checks.harness import prepare_outputs, run_case, run_spec, synchronize
from suite.session import stash
from suite.session.results import json_number
from suite.workers import crash

COPY_BYTES = 2 * 2**30  # large enough to defeat every L2 and Infinity Cache in the profiles
MATMUL_N = 8192
ROUNDS = 6
ROUND_MS = 12.0  # timed per round, kernel and baseline each
FIRST_WARMUP_MS = 10.0  # before the first round; later rounds warm up for ROUND_WARMUP_MS
ROUND_WARMUP_MS = 1.0
MIN_SAMPLES = 3  # per round and side, however long a call takes
MAX_ATTEMPTS = 3
# Disturbance limits: the round-to-round spread (largest round median over smallest, minus 1) and the sample tail
# (a round's median over its 10th percentile, minus 1, median over rounds). Without a learned usual value: fixed
# defaults, lenient enough for short kernels; with one: LEARNED_FACTOR times it, at least LEARNED_MINIMUM.
DEFAULT_LIMITS = {"spread": 0.25, "tail": 0.5}
LEARNED_FACTOR = 4.0
LEARNED_MINIMUM = {"spread": 0.10, "tail": 0.10}
NOISE_DIR = Path(__file__).resolve().parents[2] / "reports" / "noise"
FLOOR_VARIABLE = "SUITE_NOISE_FLOOR"  # another noise-floor file, or "none"
PLANT_VARIABLE = "SUITE_BENCH_PLANT"
NOISE_FORMAT = floor_file.FORMAT
INTERPRETER_ARCH = "interpreter"


def samples_ms(fn, warmup_ms: int = 25, rep_ms: int = 100) -> list[float]:
    """Every sample of triton.testing.do_bench (it flushes L2 between runs)."""
    import triton.testing

    return [float(t) for t in triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")]


class Timer:
    """Times calls as triton.testing.do_bench does (device events around each call, L2 flushed before each), for
    given numbers of warm-up and timed calls, so that rounds can alternate between two functions."""

    def __init__(self) -> None:
        from triton import runtime

        self.driver = runtime.driver.active
        self.device = self.driver.get_device_interface()
        self.cache = self.driver.get_empty_cache_for_benchmark()

    def estimate(self, fn: Callable[[], Any]) -> float:
        """Milliseconds per flush and call, over 5 calls after a first one."""
        fn()
        self.device.synchronize()
        start, end = self.device.Event(enable_timing=True), self.device.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            self.driver.clear_cache(self.cache)
            fn()
        end.record()
        self.device.synchronize()
        return max(start.elapsed_time(end) / 5, 1e-6)

    def samples(self, fn: Callable[[], Any], warmup: int, repeat: int) -> list[float]:
        for _ in range(warmup):
            fn()
        starts = [self.device.Event(enable_timing=True) for _ in range(repeat)]
        ends = [self.device.Event(enable_timing=True) for _ in range(repeat)]
        for start, end in zip(starts, ends, strict=True):
            self.driver.clear_cache(self.cache)
            start.record()
            fn()
            end.record()
        self.device.synchronize()
        return [float(s.elapsed_time(e)) for s, e in zip(starts, ends, strict=True)]


def shared_timer() -> Timer:
    """One Timer per process (its L2-flush buffer is allocated once)."""
    state = stash.session()
    if state.timer is None:
        state.timer = Timer()
    return state.timer


def interleaved_rounds(kernel: Callable[[], Any], baseline: Callable[[], Any] | None, timer: Any,
                       rounds: int = ROUNDS) -> tuple[list[list[float]], list[list[float]] | None]:
    """The samples of each round, kernel and baseline; the order within a round alternates."""
    sides = [("kernel", kernel)] + ([("baseline", baseline)] if baseline is not None else [])
    estimate = {name: timer.estimate(fn) for name, fn in sides}
    out: dict[str, list[list[float]]] = {name: [] for name, _ in sides}
    for i in range(rounds):
        for name, fn in sides if i % 2 == 0 else sides[::-1]:
            warmup = max(1, int(FIRST_WARMUP_MS / estimate[name])) if i == 0 else int(ROUND_WARMUP_MS / estimate[name])
            out[name].append(timer.samples(fn, warmup, max(MIN_SAMPLES, int(ROUND_MS / estimate[name]))))
    return out["kernel"], out.get("baseline")


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


TINY_MS = 1e-9  # below any event timer's resolution: keeps the ratios finite should a time read 0


def tail(samples: list[float]) -> float:
    """How far a round's median sits above its fast samples: median / 10th percentile - 1."""
    return statistics.median(samples) / max(quantile(samples, 0.1), TINY_MS) - 1.0


def spread(medians: list[float]) -> float:
    return max(medians) / max(min(medians), TINY_MS) - 1.0


def limits(usual: dict[str, Any] | None) -> dict[str, Any]:
    """The disturbance limits of one benchmark, from its usual spread and tail in the noise-floor file if known."""
    out: dict[str, Any] = {**DEFAULT_LIMITS, "source": "default"}
    for k in ("spread", "tail"):
        value = (usual or {}).get(k)
        if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
            out[k], out["source"] = max(LEARNED_MINIMUM[k], LEARNED_FACTOR * value), "noise floor"
    return out


def disturbance(kernel: list[list[float]], baseline: list[list[float]] | None,
                lim: dict[str, Any]) -> tuple[float, str | None]:
    """(score, why): score above 1 means disturbed, why says by what."""
    worst, why = 0.0, None
    for side, rounds in (("kernel", kernel), ("torch baseline", baseline)):
        if not rounds:
            continue
        for what, value in (("spread", spread([statistics.median(r) for r in rounds])),
                            ("tail", statistics.median(tail(r) for r in rounds))):
            score = value / lim[what]
            if score > worst:
                worst = score
                why = (f"{side} round medians spread {100 * value:.0f}% (limit {100 * lim[what]:.0f}%)"
                       if what == "spread" else
                       f"{side} samples' median {100 * value:.0f}% above their 10th percentile "
                       f"(limit {100 * lim[what]:.0f}%)")
    return worst, why if worst > 1.0 else None


def measure(kernel: Callable[[], Any], baseline: Callable[[], Any] | None, timer: Any,
            usual: dict[str, Any] | None = None, rounds: int = ROUNDS) -> dict[str, Any]:
    """Rounds of kernel and baseline, measured again while disturbed (up to MAX_ATTEMPTS); the least disturbed
    attempt is kept. Returns the samples per round and the run file's "rounds" record."""
    lim = limits(usual)
    best: tuple | None = None
    attempts = 0
    while attempts < MAX_ATTEMPTS and (best is None or best[0] > 1.0):
        attempts += 1
        k, b = interleaved_rounds(kernel, baseline, timer, rounds)
        score, why = disturbance(k, b, lim)
        if best is None or score < best[0]:
            best = (score, why, k, b)
    score, why, k, b = best
    record = {"kernel_ms": [statistics.median(r) for r in k], "baseline_ms": [statistics.median(r) for r in b] if b else None,
              "kernel_tail": [tail(r) for r in k], "baseline_tail": [tail(r) for r in b] if b else None,
              "samples_per_round": {"kernel": len(k[0]), "baseline": len(b[0]) if b else None},
              "attempts": attempts, "disturbed": score > 1.0, "disturbance": why,
              "limits": {key: round(v, 4) if isinstance(v, float) else v for key, v in lim.items()}}
    return {"kernel": k, "baseline": b, "rounds": record}


def floor_key(kernel: str, dtype: str, shape: dict[str, int]) -> str:
    """A benchmark's key in noise-floor files (as reports.changes.key)."""
    return f"{kernel}|{dtype}|{json.dumps(shape, sort_keys=True)}"


def _device_name() -> str | None:
    return torch.cuda.get_device_name() if torch.cuda.is_available() else None


def noise_floor(arch: str, device_name: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(per-benchmark entries with the file's default under "*", the run file's note) from the arch's noise-floor
    file, checked as compare checks one (reports/floor_file.py). A file named by SUITE_NOISE_FLOOR that is missing,
    malformed, implausible or of another arch or device raises FloorFileError (a ValueError) before any benchmark
    runs; the arch's own file is left out, with the reason in the note, when it was learned on another device of the
    arch, and raises when it is unusable. device_name: the GPU's (default: torch's current device)."""
    chosen = os.environ.get(FLOOR_VARIABLE)
    if chosen == "none":
        return {}, {"file": None, "note": f"{FLOOR_VARIABLE}=none: no noise floor"}
    if arch == INTERPRETER_ARCH:  # nothing is timed there (the benchmarks skip): no file to check
        return {}, {"file": None, "note": "the CPU interpreter times nothing: no noise floor"}
    path = Path(chosen) if chosen else NOISE_DIR / f"{arch}.json"
    if not path.exists() and not chosen:
        return {}, {"file": None, "note": f"no noise floor for {arch} ({path} does not exist): default "
                                          "disturbance limits, and compare uses its threshold alone"}
    try:
        data = floor_file.read(path, arch, device_name or _device_name())
    except floor_file.FloorFileError as exc:
        if chosen:
            raise floor_file.FloorFileError(f"{FLOOR_VARIABLE}: {exc}") from None
        if not isinstance(exc, floor_file.OtherHardware):
            raise
        return {}, {"file": None, "note": f"{exc}: default disturbance limits, and compare uses its threshold alone"}
    note = {"file": str(path), "device_name": data.get("device_name"), "runs": len(data.get("learned_from") or []),
            "platform": data.get("platform"), "default": data.get("default")}
    return {**data["benchmarks"], "*": {"floor": data.get("default")}}, note


def parse_plant(text: str | None, known: list[str]) -> dict[str, float]:
    """SUITE_BENCH_PLANT: 'softmax=0.25,matmul=0.1' -> {kernel: fraction of its own time added as a delay}."""
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        name, sep, value = item.strip().partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = math.nan
        if not sep or not math.isfinite(fraction) or not 0 < fraction <= 10:
            raise ValueError(f"{PLANT_VARIABLE}={text!r}: expected KERNEL=FRACTION[,...] with 0 < FRACTION <= 10, "
                             f"e.g. softmax=0.25; got {item.strip()!r}")
        if name not in known:
            raise ValueError(f"{PLANT_VARIABLE}={text!r}: no kernel {name!r}; registered: {', '.join(sorted(known))}")
        out[name] = fraction
    return out


def planted(fn: Callable[[], Any], fraction: float, timer: Timer) -> tuple[Callable[[], Any], dict[str, Any]]:
    """fn followed by a device-side spin (torch.cuda._sleep) of `fraction` times fn's own median time."""
    state = stash.session()
    if state.cycles_per_ms is None:
        cycles = 1 << 22
        state.cycles_per_ms = cycles / statistics.median(timer.samples(lambda: torch.cuda._sleep(cycles), 2, 10))
    own = statistics.median(timer.samples(fn, 3, 10))
    spin = max(1, int(fraction * own * state.cycles_per_ms))

    def slowed() -> None:
        fn()
        torch.cuda._sleep(spin)

    return slowed, {"hook": PLANT_VARIABLE, "fraction": fraction, "delay_ms": fraction * own, "cycles": spin}


class ConfigTimer:
    """Times configs for ``--retune``: inputs drawn once per kernel, dtype and shape, on the device."""

    def __init__(self, backend: Any, warmup_ms: int = 10, rep_ms: int = 40) -> None:
        self.backend, self.warmup_ms, self.rep_ms = backend, warmup_ms, rep_ms
        self._key: tuple | None = None
        self._buffers: tuple[dict, dict] | None = None

    def __call__(self, spec: KernelSpec, dtype: str, shape: dict[str, int], config: dict) -> list[float]:
        key = (spec.name, dtype, tuple(shape.items()))
        if key != self._key:
            self._buffers = None
            torch.cuda.empty_cache()
            case = Case(spec.name, dtype, dict(shape), seed=0)
            with drawn_on(self.backend.device):
                inputs = spec.make_inputs(case, self.backend.device)
                outputs, _ = prepare_outputs(spec, inputs, case)
            self._key, self._buffers = key, (inputs, outputs)
        inputs, outputs = self._buffers
        run_spec(spec, inputs, outputs, config)  # compile (and fail) outside the timing
        synchronize(self.backend.device)
        return samples_ms(lambda: run_spec(spec, inputs, outputs, config), self.warmup_ms, self.rep_ms)


def iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


def measure_ceilings(device: str, profile: Any) -> dict[str, Any]:
    """A large device-to-device copy (bytes read + written), a large torch matmul per dtype, and an fp8 one
    (torch._scaled_mm) where the profile has an fp8 e4m3 flavour, on random data; plus the datasheet peaks of the
    hardware profile and the noise-floor file's summary."""
    copy_ms = _copy_ms(device)
    matmul = {name: _matmul_tflops(device, name) for name in ("fp16", "bf16", "fp32")}
    fp8 = _fp8_tflops(device, profile)
    if fp8 is not None:
        matmul["fp8"] = fp8
    torch.cuda.empty_cache()
    peaks = getattr(profile, "peak_tflops", {}) or {}
    return {
        "copy_gbps": 2 * COPY_BYTES / (copy_ms * 1e-3) / 1e9,
        "matmul_tflops": matmul,
        "datasheet": {"bandwidth_tbs": getattr(profile, "peak_bandwidth_tbs", None),
                      "tflops": {"fp16": peaks.get("fp16"), "bf16": peaks.get("bf16"),
                                 "fp32": peaks.get("tf32") or peaks.get("fp32"),
                                 "fp8": peaks.get("fp8")}},
    }


def _copy_ms(device: str) -> float:
    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    return statistics.median(samples_ms(lambda: dst.copy_(src)))


def _matmul_tflops(device: str, name: str) -> float:
    a = torch.randn(MATMUL_N, MATMUL_N, device=device, dtype=DTYPES[name])
    b = torch.randn(MATMUL_N, MATMUL_N, device=device, dtype=DTYPES[name])
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True  # fp32 tl.dot runs as TF32/XF32 by default too
    try:
        ms = statistics.median(samples_ms(lambda: torch.matmul(a, b)))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return 2 * MATMUL_N**3 / (ms * 1e-3) / 1e12


def fp8_matmul_dtype(profile: Any) -> torch.dtype | None:
    """The profile's fp8 e4m3 flavour (e4m3fn on NVIDIA and gfx950, e4m3fnuz on gfx942), if it has one."""
    names = [d for d in getattr(profile, "dtypes", ()) if d.startswith("fp8e4")]
    return DTYPES[names[0]] if names and names[0] in DTYPES else None


def _fp8_tflops(device: str, profile: Any) -> float | None:
    """torch._scaled_mm at MATMUL_N^3 with per-tensor scales and a bf16 output: the fp8 compute ceiling; None where
    the profile has no fp8 or torch cannot run it on this device."""
    dtype = fp8_matmul_dtype(profile)
    if dtype is None or not hasattr(torch, "_scaled_mm"):
        return None
    a = torch.randn(MATMUL_N, MATMUL_N, device=device).to(dtype)
    b = torch.randn(MATMUL_N, MATMUL_N, device=device).to(dtype).t()  # column-major, as _scaled_mm wants
    one = torch.ones((), device=device, dtype=torch.float32)

    def fn() -> torch.Tensor:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    try:
        fn()
    except (RuntimeError, TypeError, ValueError):
        return None
    return 2 * MATMUL_N**3 / (statistics.median(samples_ms(fn)) * 1e-3) / 1e12


def floor_ms(bytes_moved: float, flops: float, bandwidth_gbps: float | None, tflops: float | None) -> float | None:
    """The roofline floor: the larger of moving the bytes and doing the arithmetic."""
    if not bandwidth_gbps:
        return None
    t = bytes_moved / (bandwidth_gbps * 1e9)
    if flops and tflops:
        t = max(t, flops / (tflops * 1e12))
    return t * 1e3


def _compute_dtype(dtype: str) -> str:
    return "fp8" if dtype.startswith("fp8") else dtype if dtype in ("fp16", "bf16") else "fp32"


def is_compute_bound(spec: KernelSpec, case: Case, dtype: str, ceilings: dict[str, Any]) -> bool:
    """A tl.dot kernel whose FLOPs at the measured matmul ceiling of its dtype take longer than its bytes at the
    measured copy ceiling (fp8: the torch._scaled_mm ceiling)."""
    tflops = ceilings["matmul_tflops"].get(_compute_dtype(dtype))
    return bool(spec.tolerance.uses_dot and tflops
                and spec.flops(case) / (tflops * 1e12) > spec.min_bytes(case) / (ceilings["copy_gbps"] * 1e9))


class TimedSync(Exception):
    """A benchmark whose timed calls would synchronize the device (a spec error; nothing is timed)."""


def device_scalars(inputs: dict[str, Any]) -> list[str]:
    """The inputs that are 0-d tensors off the CPU: reading one (``float(t)``, ``bool(t)``) synchronizes."""
    return [name for name, t in inputs.items()
            if isinstance(t, torch.Tensor) and t.dim() == 0 and t.device.type != "cpu"]


def benchmark(spec: KernelSpec, dtype: str, shape: dict[str, int], backend: Any, ceilings: dict[str, Any],
              floors: dict[str, Any] | None = None, plant: float | None = None, timer: Timer | None = None) -> dict:
    """One benchmark record. floors: the noise-floor file's entries (noise_floor); plant: SUITE_BENCH_PLANT's
    fraction for this kernel."""
    case = Case(spec.name, dtype, dict(shape), seed=0)
    lookup = autotune.active()
    if lookup is not None:
        config, how, entry = lookup.resolve(spec, dtype, shape)
    else:
        config, how, entry = spec.default_config_for(backend.family), "miss", None
    # Inputs are drawn once, on the device, for the check and the timing.
    with drawn_on(backend.device):
        inputs = spec.make_inputs(case, backend.device)
    if scalars := device_scalars(inputs):
        raise TimedSync(f"broken spec: {spec.name}'s make_inputs returns {', '.join(map(repr, scalars))} as 0-d "
                        f"tensor(s) on {backend.device} when drawn there: the launcher and the torch baseline read "
                        f"them, so every timed call would wait for the device; make them with device='cpu'")
    correct = run_case(spec, case, backend, config, inputs)
    outputs, _ = prepare_outputs(spec, inputs, case)
    floors = floors or {}
    usual = floors.get(floor_key(spec.name, dtype, dict(shape)))
    timer = timer or shared_timer()
    with autotune.purpose("benchmark"), crash.watchdog(case):
        kernel_fn, plant_record = lambda: run_spec(spec, inputs, outputs, config), None
        if plant:
            kernel_fn, plant_record = planted(kernel_fn, plant, timer)
        baseline_fn = (lambda: spec.torch_baseline(inputs)) if spec.torch_baseline else None
        timed = measure(kernel_fn, baseline_fn, timer, usual)
    synchronize(backend.device)
    rounds = timed["rounds"]
    kernel = [t for r in timed["kernel"] for t in r]
    med = statistics.median(rounds["kernel_ms"])
    base_med = statistics.median(rounds["baseline_ms"]) if rounds["baseline_ms"] else None
    nbytes, flops = spec.min_bytes(case), spec.flops(case)
    cd = _compute_dtype(dtype)
    measured = floor_ms(nbytes, flops if spec.tolerance.uses_dot else 0.0, ceilings["copy_gbps"],
                        ceilings["matmul_tflops"].get(cd))
    sheet = ceilings["datasheet"]
    datasheet = floor_ms(nbytes, flops if spec.tolerance.uses_dot else 0.0,
                         sheet["bandwidth_tbs"] * 1e3 if sheet["bandwidth_tbs"] else None, sheet["tflops"].get(cd))
    record = {
        "kernel": spec.name, "dtype": dtype, "shape": dict(shape), "config": config, "config_source": how,
        "autotune_entry": entry,
        "samples_ms": kernel, "median_ms": med, "iqr_ms": iqr(kernel),
        "bytes": nbytes, "flops": flops,
        "gbps": nbytes / (med * 1e-3) / 1e9 if med > 0 else None, "tflops": flops / (med * 1e-3) / 1e12 if med > 0 else None,
        "bound": "compute" if is_compute_bound(spec, case, dtype, ceilings) else "memory",
        "efficiency_measured": measured / med if measured and med > 0 else None,
        "efficiency_datasheet": datasheet / med if datasheet and med > 0 else None,
        "baseline": {"name": "torch", "samples_ms": [t for r in timed["baseline"] for t in r], "median_ms": base_med}
        if base_med else None,
        "speedup": base_med / med if base_med and med > 0 else None,
        "correct": correct.passed,
        "error_ratio": json_number(correct.error_ratio),
        "message": None if correct.passed else correct.message()[:500],
        "rounds": rounds,
        "noise_floor": (usual or floors.get("*") or {}).get("floor"),
    }
    if plant_record:
        record["planted"] = plant_record
    return record
