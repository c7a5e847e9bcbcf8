"""Benchmark timings as the reports read them: the valid samples, the interleaved timing rounds, and what is invalid.

A timing is valid when it is a finite number above zero; anything else (a negative or zero time, inf, nan) is left
out of every statistic and shown as invalid. Rounds (suite/tools/bench.py) time the kernel and its torch baseline
alternately, several times per benchmark; the kernel/torch ratio of each round cancels the machine's drift."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from reports.loading import num

MIN_ROUNDS = 3  # fewer rounds than this cannot tell a change from the round-to-round noise


def valid(x: Any) -> float | None:
    v = num(x)
    return v if v is not None and math.isfinite(v) and v > 0 else None


_seen: dict[int, tuple[Any, list[float]]] = {}  # id(samples list) -> (the list, its valid samples): read once


def samples(record: dict[str, Any] | None) -> list[float]:
    """The valid samples of a benchmark or baseline record."""
    raw = (record or {}).get("samples_ms") or []
    hit = _seen.get(id(raw))
    if hit is None or hit[0] is not raw:
        hit = (raw, [v for v in (valid(x) for x in raw) if v is not None])
        _seen[id(raw)] = hit
    return hit[1]


def invalid_samples(record: dict[str, Any] | None) -> int:
    return len((record or {}).get("samples_ms") or []) - len(samples(record))


def median_ms(record: dict[str, Any] | None) -> float | None:
    """The recorded median when it is valid and no sample was invalid; else the median of the valid samples;
    None when nothing valid is left."""
    if not record:
        return None
    m = valid(record.get("median_ms"))
    if m is not None and not invalid_samples(record):
        return m
    s = samples(record)
    return statistics.median(s) if s else None


def invalid_reason(record: dict[str, Any]) -> str | None:
    """Why a benchmark's own timing cannot be used, or None."""
    recorded = num(record.get("median_ms"))
    if recorded is not None and not (math.isfinite(recorded) and recorded > 0):
        return f"invalid timing: median {recorded:g} ms"
    if median_ms(record) is None:
        return "no valid samples"
    return None


@dataclass
class Rounds:
    kernel: list[float]
    baseline: list[float] | None
    disturbed: bool
    why: str | None
    attempts: int

    @property
    def ratio(self) -> list[float] | None:
        if self.baseline is None:
            return None
        return [k / b for k, b in zip(self.kernel, self.baseline, strict=True)]

    @property
    def spread(self) -> float:
        """Round-to-round spread: largest over smallest round median, minus one (kernel and baseline)."""
        sides = [self.kernel] + ([self.baseline] if self.baseline else [])
        return max(max(s) / min(s) - 1.0 for s in sides)


def rounds(record: dict[str, Any]) -> Rounds | None:
    """The record's timing rounds, or None where it has none (a run file from before rounds were recorded) or
    too few valid ones."""
    r = record.get("rounds")
    if not isinstance(r, dict):
        return None
    kernel = [valid(x) for x in r.get("kernel_ms") or []]
    base_raw = r.get("baseline_ms")
    baseline = [valid(x) for x in base_raw] if isinstance(base_raw, list) else None
    if baseline is not None and len(baseline) != len(kernel):
        return None
    keep = [i for i, k in enumerate(kernel) if k is not None and (baseline is None or baseline[i] is not None)]
    if len(keep) < MIN_ROUNDS:
        return None
    return Rounds([kernel[i] for i in keep], None if baseline is None else [baseline[i] for i in keep],
                  bool(r.get("disturbed")), r.get("disturbance"), int(r.get("attempts") or 1))


def tail(record: dict[str, Any], side: str = "kernel") -> float | None:
    """The median over rounds of (round median / its 10th percentile - 1), as the suite recorded it."""
    r = record.get("rounds")
    raw = [num(x) for x in r.get(f"{side}_tail") or []] if isinstance(r, dict) else []
    values = [v for v in raw if v is not None and math.isfinite(v) and v >= 0]
    return statistics.median(values) if values else None
