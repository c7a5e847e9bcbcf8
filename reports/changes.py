"""How much each benchmark moved between two runs, and how much the whole platform moved.

Changes are natural logs of candidate over base (0.0953 is +10%), so that A -> B and B -> A are mirror images.
Two methods:

- rounds (run files that record timing rounds): the median over rounds of the kernel time, of the torch baseline
  time and of their per-round ratio; the Mann-Whitney U test compares the two runs' rounds (the ratios where the
  benchmark has a baseline), so one unusual round cannot make a change.
- samples (older run files): the medians of all do_bench samples and the Mann-Whitney U test on those samples. It
  sees only the noise within one run, not the larger noise between runs.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Any

from reports import timing
from reports.loading import Run
from reports.perf import shape_key
from reports.render import shape_text

MIN_PLATFORM = 5  # benchmarks needed to tell a platform-wide shift


def key(record: dict[str, Any]) -> str:
    """A benchmark's identity across runs (and in noise-floor files): kernel, dtype, shape."""
    return f"{record['kernel']}|{record['dtype']}|{shape_key(record['shape'])}"


EXACT_UP_TO = 20  # samples per side for the exact Mann-Whitney U distribution (rounds); beyond, scipy's


@functools.cache
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many orderings of n + m distinct values give each U = 0..n*m: the largest value is either one of the n
    (it beats all m: U grows by m) or one of the m."""
    if n == 0 or m == 0:
        return (1,)
    beat, lost = _u_counts(n - 1, m), _u_counts(n, m - 1)
    return tuple((beat[u - m] if 0 <= u - m < len(beat) else 0) + (lost[u] if u < len(lost) else 0)
                 for u in range(n * m + 1))


def mann_whitney(a: list[float], b: list[float]) -> float:
    """Two-sided Mann-Whitney U p-value: exact for a few samples without ties (rounds), else scipy's."""
    if len(a) <= EXACT_UP_TO and len(b) <= EXACT_UP_TO and len(set(a) | set(b)) == len(a) + len(b):
        counts = _u_counts(len(a), len(b))
        u = sum(1 for x in a for y in b if x > y)
        total = sum(counts)
        return min(1.0, 2 * min(sum(counts[: u + 1]), sum(counts[u:])) / total)
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def log_change(before: float | None, after: float | None) -> float | None:
    return math.log(after / before) if before and after else None


def pct(change: float | None) -> str:
    """A log change as a signed percentage."""
    return "-" if change is None else f"{100 * math.expm1(change):+.1f}%"


@dataclass
class Moved:
    """One benchmark present in both runs with usable timings."""
    key: str
    base: dict[str, Any]
    cand: dict[str, Any]
    method: str  # "rounds" or "samples"
    kernel: float  # log change of the kernel time
    torch: float | None  # of the torch baseline time
    ratio: float | None  # of kernel / torch (rounds only)
    p: float
    counts: str  # rounds (or samples) base/candidate
    disturbed: str | None  # why a run's measurement of it is not to be trusted

    @property
    def what(self) -> dict[str, Any]:
        return {"kernel": self.base["kernel"], "dtype": self.base["dtype"], "shape": shape_text(self.base["shape"])}


def _disturbed(b: timing.Rounds, c: timing.Rounds) -> str | None:
    why = [f"{side} run: {r.why or 'samples disturbed'} (measured {r.attempts} times)"
           for side, r in (("base", b), ("candidate", c)) if r.disturbed]
    return "; ".join(why) or None


def moved(b: dict[str, Any], c: dict[str, Any]) -> Moved | str:
    """The change of one benchmark, or why it cannot be compared."""
    for side, rec in (("base", b), ("candidate", c)):
        why = timing.invalid_reason(rec)
        if why:
            return f"{why} in the {side} run"
    rb, rc = timing.rounds(b), timing.rounds(c)
    k = log_change(timing.median_ms(b), timing.median_ms(c))
    assert k is not None  # both medians are valid here
    if rb and rc:
        kernel = log_change(statistics.median(rb.kernel), statistics.median(rc.kernel))
        torch = ratio = None
        if rb.baseline and rc.baseline:
            torch = log_change(statistics.median(rb.baseline), statistics.median(rc.baseline))
            ratio = log_change(statistics.median(rb.ratio), statistics.median(rc.ratio))
            p = mann_whitney(rb.ratio, rc.ratio)
        else:
            p = mann_whitney(rb.kernel, rc.kernel)
        return Moved(key(b), b, c, "rounds", kernel, torch, ratio, p, f"{len(rb.kernel)}/{len(rc.kernel)}",
                     _disturbed(rb, rc))
    bs, cs = timing.samples(b), timing.samples(c)
    torch = log_change(timing.median_ms(b.get("baseline")), timing.median_ms(c.get("baseline")))
    return Moved(key(b), b, c, "samples", k, torch, None, mann_whitney(bs, cs), f"{len(bs)}/{len(cs)}", None)


def pair(base: Run, cand: Run) -> tuple[list[Moved], list[tuple[dict[str, Any], str]], dict[str, Any]]:
    """Every benchmark of both runs: those that moved (measurably or not), those that could not be compared (with
    the reason), and the platform-wide shift."""
    b_bench = {key(b): b for b in base.data["benchmarks"]}
    c_bench = {key(b): b for b in cand.data["benchmarks"]}
    out: list[Moved] = []
    skipped: list[tuple[dict[str, Any], str]] = []
    for k in sorted(set(b_bench) | set(c_bench)):
        if k not in b_bench or k not in c_bench:
            skipped.append((b_bench.get(k) or c_bench[k], f"only in the {'base' if k in b_bench else 'candidate'} run"))
            continue
        m = moved(b_bench[k], c_bench[k])
        if isinstance(m, str):
            skipped.append((b_bench[k], m))
        else:
            out.append(m)
    return out, skipped, platform(out)


def platform(changes: list[Moved]) -> dict[str, Any]:
    """The median change of every kernel and of every torch baseline: what moved the platform as a whole."""
    kernels = [m.kernel for m in changes]
    torches = [m.torch for m in changes if m.torch is not None]
    return {"benchmarks": len(kernels), "baselines": len(torches),
            "kernel": statistics.median(kernels) if len(kernels) >= MIN_PLATFORM else None,
            "torch": statistics.median(torches) if len(torches) >= MIN_PLATFORM else None}
