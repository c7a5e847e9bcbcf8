"""Benchmarks: do_bench samples, roofline efficiency against ceilings measured in the
same run and against the profile's datasheet peaks, and speed-up over torch."""

from __future__ import annotations

import statistics
from typing import Any

import torch

from kernels import _inputs
from kernels.spec import DTYPES, Case, KernelSpec
from suite import autotune, crash
from suite.harness import poison, run_case, synchronize
from suite.results import json_number

COPY_BYTES = 2 * 2**30  # large enough to defeat every L2 and Infinity Cache in the profiles
MATMUL_N = 8192


def samples_ms(fn, warmup_ms: int = 25, rep_ms: int = 100) -> list[float]:
    """Every sample of triton.testing.do_bench (it flushes L2 between runs)."""
    import triton.testing

    return [float(t) for t in triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")]


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
            with _inputs.drawn_on(self.backend.device):
                inputs = spec.make_inputs(case, self.backend.device)
                outputs = spec.make_outputs(inputs, case)
            self._key, self._buffers = key, (inputs, outputs)
        inputs, outputs = self._buffers
        spec.run(inputs, outputs, config)  # compile (and fail) outside the timing
        synchronize(self.backend.device)
        return samples_ms(lambda: spec.run(inputs, outputs, config), self.warmup_ms, self.rep_ms)


def iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


def measure_ceilings(device: str, profile: Any) -> dict[str, Any]:
    """A large device-to-device copy (bytes read + written) and a large torch matmul per dtype,
    on random data; plus the datasheet peaks of the hardware profile."""
    copy_ms = _copy_ms(device)
    matmul = {name: _matmul_tflops(device, name) for name in ("fp16", "bf16", "fp32")}
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


def benchmark(spec: KernelSpec, dtype: str, shape: dict[str, int], backend: Any, ceilings: dict[str, Any]) -> dict:
    case = Case(spec.name, dtype, dict(shape), seed=0)
    lookup = autotune.active()
    if lookup is not None:
        config, how, entry = lookup.resolve(spec, dtype, shape)
    else:
        config, how, entry = spec.config_for(backend.family), "miss", None
    # Inputs are drawn once, on the device, for the check and the timing.
    with _inputs.drawn_on(backend.device):
        inputs = spec.make_inputs(case, backend.device)
    correct = run_case(spec, case, backend, config, inputs)
    outputs = spec.make_outputs(inputs, case)
    poison(outputs)
    with autotune.purpose("benchmark"), crash.watchdog(case):
        kernel = samples_ms(lambda: spec.run(inputs, outputs, config))
        baseline = samples_ms(lambda: spec.torch_baseline(inputs)) if spec.torch_baseline else None
    synchronize(backend.device)
    med = statistics.median(kernel)
    nbytes, flops = spec.min_bytes(case), spec.flops(case)
    cd = _compute_dtype(dtype)
    measured = floor_ms(nbytes, flops if spec.tolerance.uses_dot else 0.0, ceilings["copy_gbps"],
                        ceilings["matmul_tflops"].get(cd))
    sheet = ceilings["datasheet"]
    datasheet = floor_ms(nbytes, flops if spec.tolerance.uses_dot else 0.0,
                         sheet["bandwidth_tbs"] * 1e3 if sheet["bandwidth_tbs"] else None, sheet["tflops"].get(cd))
    compute_bound = bool(spec.tolerance.uses_dot and ceilings["matmul_tflops"].get(cd)
                         and flops / (ceilings["matmul_tflops"][cd] * 1e12) > nbytes / (ceilings["copy_gbps"] * 1e9))
    return {
        "kernel": spec.name, "dtype": dtype, "shape": dict(shape), "config": config, "config_source": how,
        "autotune_entry": entry,
        "samples_ms": kernel, "median_ms": med, "iqr_ms": iqr(kernel),
        "bytes": nbytes, "flops": flops,
        "gbps": nbytes / (med * 1e-3) / 1e9, "tflops": flops / (med * 1e-3) / 1e12,
        "bound": "compute" if compute_bound else "memory",
        "efficiency_measured": measured / med if measured else None,
        "efficiency_datasheet": datasheet / med if datasheet else None,
        "baseline": {"name": "torch", "samples_ms": baseline, "median_ms": statistics.median(baseline)} if baseline else None,
        "speedup": statistics.median(baseline) / med if baseline else None,
        "correct": correct.passed,
        "error_ratio": json_number(correct.error_ratio),
        "message": None if correct.passed else correct.message()[:500],
    }
